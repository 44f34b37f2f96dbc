"""Hypothesis strategies for scenarios. Strategies only: the tests and state machines live apart."""
from __future__ import annotations

from hypothesis import strategies as st

from .scenario import MessagePlan, Scenario

OUTCOMES_4X = ("RECONSUME_LATER", "EXCEPTION", "NULL")


@st.composite
def message_plans(draw: st.DrawFn, max_failures: int, outcomes: tuple[str, ...] = OUTCOMES_4X,
                  groups: bool = False, min_size: int = 1, max_size: int = 4,
                  boundaries: tuple[int, ...] = ()) -> tuple[MessagePlan, ...]:
    """Messages with failure counts; ``boundaries`` (values around a documented maximum) are drawn
    as often as the whole uniform range, so the ends of the ladders are always exercised."""
    count = draw(st.integers(min_size, max_size))
    failures = st.integers(0, max_failures)
    if boundaries:
        failures = failures | st.sampled_from(boundaries)
    plans = []
    for i in range(count):
        plans.append(MessagePlan(
            key=f"m{i}", failures=draw(failures), outcome=draw(st.sampled_from(outcomes)),
            message_group=draw(st.sampled_from(["g0", "g1"])) if groups else None))
    return tuple(plans)


def concurrent_4x() -> st.SearchStrategy[Scenario]:
    """4.x push consumers in clustering, with default or small maxReconsumeTimes."""
    return st.builds(
        lambda msgs, max_rt, instances, queues: Scenario("push4x-concurrent", msgs, max_reconsume_times=max_rt,
                                                         instances=instances, queues=queues),
        message_plans(18, boundaries=(15, 16, 17, 40)), st.sampled_from([-1, -1, 0, 1, 2, 3, 5]),
        st.integers(1, 3), st.integers(1, 4))


def orderly_4x() -> st.SearchStrategy[Scenario]:
    return st.builds(
        lambda msgs, max_rt: Scenario("push4x-orderly", msgs, max_reconsume_times=max_rt),
        message_plans(6, ("SUSPEND", "EXCEPTION", "NULL"), max_size=3, boundaries=(2, 3, 4)),
        st.sampled_from([-1, 0, 1, 2, 3]))


def broadcast_4x() -> st.SearchStrategy[Scenario]:
    return st.builds(lambda msgs, n: Scenario("push4x-broadcast", msgs, instances=n),
                     message_plans(3), st.integers(1, 3))


def push_5x() -> st.SearchStrategy[Scenario]:
    return st.builds(
        lambda msgs, rmt, sdk: Scenario("push5x", msgs, retry_max_times=rmt, sdk=sdk),
        message_plans(19, ("RECONSUME_LATER", "EXCEPTION"), boundaries=(16, 17, 18, 40)),
        st.sampled_from([None, None, 0, 1, 2, 3]),
        st.sampled_from(["java", "python"]))


def fifo_5x() -> st.SearchStrategy[Scenario]:
    return st.builds(
        lambda msgs, rmt, sdk: Scenario("push5x-fifo", msgs, retry_max_times=rmt, sdk=sdk),
        # at most 14 failures each keeps three messages of one group within the proxy's 3 h auto-renew
        # (RETRY-5X-09); beyond it see spec/scenarios/fifo-renew-limit.yaml
        message_plans(14, ("RECONSUME_LATER",), groups=True, max_size=3, boundaries=(1, 2, 3)),
        st.sampled_from([None, 1, 2, 3]),
        st.sampled_from(["java", "python"]))
