"""Hypothesis strategies for scenarios. Strategies only: the tests and state machines live apart."""
from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st

from history.profiles import GRPC_5X, KAFKA_RETRY, REMOTING_4X
from history.values import CPP_4X_SDK

from .programs import Program
from .scenario import MessagePlan, Scenario

OUTCOMES_4X = ("RECONSUME_LATER", "EXCEPTION", "NULL")


@st.composite
def message_plans(draw: st.DrawFn, max_failures: int, outcomes: tuple[str, ...] = OUTCOMES_4X,
                  groups: bool = False, min_size: int = 1, max_size: int = 4,
                  boundaries: tuple[int, ...] = (), delays: bool = False) -> tuple[MessagePlan, ...]:
    """Messages with failure counts; ``boundaries`` (values around a documented maximum) are drawn
    as often as the whole uniform range, so the ends of the ladders are always exercised. With ``delays``
    some messages are sent with a delay level, one past the table's end among them (DELAY-01, DELAY-02)."""
    count = draw(st.integers(min_size, max_size))
    failures = st.integers(0, max_failures)
    if boundaries:
        failures = failures | st.sampled_from(boundaries)
    plans = []
    for i in range(count):
        plans.append(MessagePlan(
            key=f"m{i}", failures=draw(failures), outcome=draw(st.sampled_from(outcomes)),
            message_group=draw(st.sampled_from(["g0", "g1"])) if groups else None,
            delay_level=draw(st.sampled_from([0, 0, 0, 1, 3, 18, 19])) if delays else 0))
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


WORKLOAD_CLIENTS = {"push4x-concurrent": ("java", CPP_4X_SDK), "push4x-orderly": ("java", CPP_4X_SDK),
                    "push4x-broadcast": ("java", CPP_4X_SDK), "push5x": ("java", "python"),
                    "push5x-fifo": ("java", "python"), KAFKA_RETRY: ("java",)}
"""Consumer kind -> the clients whose habits the reference holds for it."""


def workloads(consumer: str, sdk: str) -> st.SearchStrategy[Scenario]:
    """Scenarios of one consumer kind and client with every set-up choice a scenario has: delay levels,
    consumers started before or after the sends, several instances and queues, failed send-backs and
    republishes (4.x concurrent)."""
    start = st.sampled_from(["before_send", "after_send"])
    if consumer == "push4x-concurrent":
        faults = st.dictionaries(st.sampled_from(["send_back_failures", "retry_republish_failures"]),
                                 st.sampled_from([1, 2, -1]), max_size=2)
        return st.builds(
            lambda msgs, max_rt, instances, queues, first, fault: Scenario(
                consumer, msgs, max_reconsume_times=max_rt, instances=instances, queues=queues, sdk=sdk,
                consumers_start=first, faults=fault),
            message_plans(18, boundaries=(1, 2, 16, 17), delays=True), st.sampled_from([-1, 0, 1, 2, 3]),
            st.integers(1, 3), st.integers(1, 4), start, faults)
    if consumer == "push4x-orderly":
        return st.builds(
            lambda msgs, max_rt, queues, first: Scenario(consumer, msgs, max_reconsume_times=max_rt, queues=queues,
                                                         sdk=sdk, consumers_start=first),
            message_plans(5, ("SUSPEND", "EXCEPTION", "NULL"), max_size=3, boundaries=(1, 2, 3)),
            st.sampled_from([-1, 0, 1, 2, 3]), st.integers(1, 4), start)
    if consumer == "push4x-broadcast":
        return st.builds(lambda msgs, n, first: Scenario(consumer, msgs, instances=n, sdk=sdk, consumers_start=first),
                         message_plans(3, delays=True), st.integers(1, 3), start)
    if consumer == "push5x":
        return st.builds(
            lambda msgs, rmt, instances, first: Scenario(consumer, msgs, retry_max_times=rmt, sdk=sdk,
                                                         instances=instances, consumers_start=first),
            message_plans(4, ("RECONSUME_LATER", "EXCEPTION"), boundaries=(1, 2, 3)),
            st.sampled_from([None, 0, 1, 2, 3]), st.integers(1, 2), start)
    if consumer == KAFKA_RETRY:
        return st.builds(
            lambda msgs, rmt, partitions, instances, first: Scenario(
                consumer, msgs, retry_max_times=rmt, queues=partitions, instances=instances, consumers_start=first),
            message_plans(5, boundaries=(2, 3, 4)), st.sampled_from([None, 0, 1, 3]), st.integers(1, 4),
            st.integers(1, 2), start)
    return st.builds(
        lambda msgs, rmt, first: Scenario(consumer, msgs, retry_max_times=rmt, sdk=sdk, consumers_start=first),
        message_plans(4, ("RECONSUME_LATER",), groups=True, max_size=3, boundaries=(1, 2, 3)),
        st.sampled_from([None, 1, 2, 3]), start)


KEYS = ("k0", "k1", "k2", "k3")


@st.composite
def programs(draw: st.DrawFn, profile: str) -> Program:
    """A user's program of one profile: consumers started, shut down and crashed between sends, time passing, and on
    5.x a simple consumer's receives, acks and changes of invisible time; each key's listener fails its first
    deliveries as drawn (the ends of the ladders among them)."""
    failures = draw(st.dictionaries(st.sampled_from(KEYS), st.tuples(
        st.integers(0, 4) | st.sampled_from([15, 16, 17]),
        st.sampled_from(["RECONSUME_LATER", "EXCEPTION"] + (["NULL", "SUSPEND"] if profile == REMOTING_4X else [])))))
    advance = st.tuples(st.just("advance"), st.sampled_from([0, 999, 1000, 5000, 10_000, 60_000, 600_000]))
    if profile == REMOTING_4X:
        kind = draw(st.sampled_from(["concurrent", "orderly", "broadcast"]))
        consumer = ("push4x", kind == "orderly", kind == "broadcast", draw(st.sampled_from([-1, 0, 1, 2, 16])),
                    draw(st.sampled_from(["java", CPP_4X_SDK])))
        send = st.tuples(st.just("send"), st.sampled_from(KEYS), st.fixed_dictionaries({}, optional={
            "delay_level": st.sampled_from([1, 3, 18, 19]), "tags": st.sampled_from(["a", "b"]),
            "mode": st.sampled_from(["async", "oneway"])}))
        others = [st.just(consumer), st.tuples(st.just("shutdown"), st.integers(0, 1)), *_producer_steps(),
                  st.tuples(st.just("crash"), st.integers(0, 1))]
        if kind == "concurrent":
            others.append(st.tuples(st.just("fault"), st.sampled_from(["send_back", "retry_republish"]),
                                    st.sampled_from([1, 2, -1])))
        steps = draw(st.lists(st.one_of(send, advance, *others), min_size=1, max_size=10))
        return Program(profile, draw(st.integers(1, 4)), (consumer, *steps), failures=failures, checks=draw(_checks()))
    topic_type = draw(st.sampled_from(["NORMAL", "FIFO", "DELAY", "TRANSACTION"]))
    optional: dict[str, st.SearchStrategy] = {}
    if topic_type == "FIFO":
        optional["message_group"] = st.sampled_from(["g0", "g1"])
    if topic_type == "DELAY":
        optional["delay_ms"] = st.sampled_from([0, 999, 1000, 1001, 5000])
    send = st.tuples(st.just("send"), st.sampled_from(KEYS), st.fixed_dictionaries(optional))
    push = st.tuples(st.just("push5x"), st.sampled_from(["java", "python"]))
    simple = [st.just(("simple",)),
              st.tuples(st.just("receive"), st.integers(0, 1), st.integers(1, 4),
                        st.sampled_from([1000, 10_000, 30_000])),
              st.tuples(st.just("ack"), st.integers(0, 3)),
              st.tuples(st.just("change"), st.integers(0, 3), st.sampled_from([0, 1000, 5000, 20_000]))]
    first = draw(st.one_of(push, st.just(("simple",))))
    extra = _producer_steps() if topic_type == "TRANSACTION" else _producer_steps()[1:] if topic_type == "NORMAL" \
        else []
    steps = draw(st.lists(st.one_of(send, advance, push, st.tuples(st.just("shutdown"), st.integers(0, 1)),
                                    st.tuples(st.just("crash"), st.integers(0, 1)), *simple, *extra),
                          min_size=1, max_size=12))
    return Program(profile, draw(st.integers(1, 4)), (first, *steps), topic_type=topic_type,
                   retry_max_times=draw(st.sampled_from([None, 0, 1, 2, 3])), failures=failures, checks=draw(_checks()))


@st.composite
def timed_sends(draw: st.DrawFn, profile: str) -> Program:
    """Timed messages and nothing else to distract: a push consumer, then sends at the timer's edges (5.x
    delivery times a tick before, on and after a second, and far out) or at 4.x delay levels (the first, the
    last, one past the table), time passing between them; each key fails as drawn (DELAY-01, DELAY-06,
    DELAY-08)."""
    failures = draw(st.dictionaries(st.sampled_from(KEYS), st.tuples(st.integers(0, 2), st.just("EXCEPTION"))))
    wait = st.tuples(st.just("advance"), st.sampled_from([0, 999, 1000, 7000]))
    if profile == REMOTING_4X:
        first = ("push4x", False, False, -1, draw(st.sampled_from(["java", CPP_4X_SDK])))
        option = st.fixed_dictionaries({"delay_level": st.sampled_from([1, 2, 3, 18, 19])})
    else:
        first = ("push5x", draw(st.sampled_from(["java", "python"])))
        option = st.fixed_dictionaries({"delay_ms": st.sampled_from([999, 1000, 1001, 5000, 3_600_000])})
    sends = st.tuples(st.just("send"), st.sampled_from(KEYS), option)
    steps = draw(st.lists(st.one_of(sends, wait), min_size=1, max_size=6))
    return Program(profile, draw(st.integers(1, 2)), (first, *steps),
                   topic_type="NORMAL" if profile == REMOTING_4X else "DELAY", failures=failures)


@st.composite
def handovers(draw: st.DrawFn) -> Program:
    """A 5.x FIFO story where a push consumer leaves while its messages wait for a local retry: it shuts down
    (``NotifyClientTermination``) or dies, early or late in the wait, and the others, or one started after,
    take what it held; a consumer is started last, so someone is there to take it (RETRY-5X-08, RETRY-5X-09)."""
    failures = draw(st.dictionaries(st.sampled_from(KEYS), st.tuples(st.integers(1, 3), st.just("EXCEPTION")),
                                    min_size=1))
    push = st.tuples(st.just("push5x"), st.sampled_from(["java", "python"]))
    sends = draw(st.lists(st.tuples(st.just("send"), st.sampled_from(KEYS),
                                    st.fixed_dictionaries({"message_group": st.sampled_from(["g0", "g1"])})),
                          min_size=1, max_size=4))
    early = st.tuples(st.just("advance"), st.sampled_from([0, 500, 999, 1000, 4000]))
    wait = st.tuples(st.just("advance"), st.sampled_from([0, 1000, 5000, 60_000, 119_000, 130_000]))
    leave = st.tuples(st.sampled_from(["shutdown", "crash"]), st.integers(0, 1))
    after = draw(st.lists(st.one_of(wait, push, leave), max_size=3))
    steps = (draw(push), *draw(st.lists(push, max_size=1)), *sends, draw(early), draw(leave), *after, draw(push))
    return Program(GRPC_5X, draw(st.integers(1, 2)), steps, topic_type="FIFO",
                   retry_max_times=draw(st.sampled_from([None, 2, 3])), failures=failures)


def _producer_steps() -> list[st.SearchStrategy]:
    """A transactional send (first: only on a topic that takes them), a batch, a broker failing sends."""
    return [st.tuples(st.just("tx"), st.sampled_from(KEYS),
                      st.sampled_from([None, "COMMIT_MESSAGE", "ROLLBACK_MESSAGE"])),
            st.tuples(st.just("batch"), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3).map(tuple)),
            st.tuples(st.just("send_fault"), st.sampled_from(["system_busy", "timeout", "system_error"]),
                      st.sampled_from([1, 2]))]


def _checks() -> st.SearchStrategy:
    return st.dictionaries(st.sampled_from(KEYS), st.tuples(st.integers(0, 3) | st.just(16),
                                                              st.sampled_from(["COMMIT_MESSAGE", "ROLLBACK_MESSAGE"])))


def at_most(examples: int) -> settings:
    """``settings(max_examples=examples)`` capped by the loaded profile: a property that asks for a few examples
    still runs no more than a wall-clock run's ``realtime`` profile allows (each example there is a real
    ladder)."""
    return settings(max_examples=min(examples, settings.default.max_examples))
