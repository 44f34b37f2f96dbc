"""Ranges, clamps and defaults through the target (issue 37): a value below, at and above each bound a client or
the proxy applies, driven through the target, not only through the rule.

* ORDER-4X-02: the orderly consumer's suspend time, clamped to [10 ms, 30 s] (``suspendCurrentQueueTimeMillis``,
  default 1 s): the gap between a failed orderly delivery and its local retry.
* RETRY-5X-09: a simple consumer's receive takes an invisible time in [10 s, 12 h] and a change of invisible
  duration one in [0, 12 h]; outside, ``ILLEGAL_INVISIBLE_TIME`` (40011) and nothing changes.

Other bounds are driven through the target by the suites that state them: the 4.x ``maxReconsumeTimes``
default and small values (RETRY-CONC-06, ORDER-4X-03: ``test_retry_4x``'s scenarios draw -1 and 0..5), a 5.x
group's retry count (RETRY-5X-07: ``retry_max_times`` 0..3 and the default in the 5.x scenarios and programs),
delay levels one past the table (DELAY-04: level 19 in every delayed scenario), a delivery time too far ahead
(DELAY-08, ``test_delay``), a producer's send retries (SEND-4X-01, ``test_send``), body and batch limits
(LIMIT-03, LIMIT-05, ``test_limits``). A target that cannot set a value (the C++ client has no suspend time;
no SDK sets the proxy's long-polling time per call) is not applicable, with that reason.
"""
from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from history.outcomes import NotApplicable, Outcome
from history.values import ListenerOutcome
from reference_impl.rules import orderly4x, retry5x
from suites.checks import require
from suites.reach import out_of_reach
from suites.receiving import receive_soon
from suites.tolerance import tolerance_for

SUSPEND_BOUNDS = (orderly4x.SUSPEND_MIN_MS, orderly4x.SUSPEND_MAX_MS)
"""ORDER-4X-02: ``Math.max(10, Math.min(30000, suspend))``."""


class _FailOnce:
    """An orderly listener that asks to suspend the queue on the first delivery of each key, then succeeds."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, view) -> ListenerOutcome:
        self.seen[view.key] = self.seen.get(view.key, 0) + 1
        return ListenerOutcome.SUSPEND if self.seen[view.key] == 1 else ListenerOutcome.SUCCESS


def _suspend_values() -> st.SearchStrategy[int]:
    low, high = SUSPEND_BOUNDS
    return st.sampled_from([0, 1, low - 1, low, low + 1, 1000, 5000, high - 1, high, high + 1, 4 * high])


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ORDER-4X-02")
@given(suspend_ms=_suspend_values())
@example(suspend_ms=0).via("below the lower bound")
@example(suspend_ms=SUSPEND_BOUNDS[1] + 1).via("above the upper bound")
def test_the_orderly_suspend_time_is_clamped_through_the_target(make_target, suspend_ms: int) -> None:
    """An orderly consumer given ``suspend_ms`` retries a suspended queue after ``clamp(suspend_ms, 10, 30000)``:
    its second delivery of the message comes that long after the first."""
    target = make_target("remoting-4.x")
    target.require("consumer.push4x.orderly", "consumer.suspend_time")
    want = max(SUSPEND_BOUNDS[0], min(SUSPEND_BOUNDS[1], suspend_ms))
    # the suspend is the client's own timer: ms of its clock last client_timer_scale spec ms each (a wall-clock
    # client meeting a server on a time scale); the wait, the budget and the tolerance are in spec ms
    want_spec = want * target.client_timer_scale
    tolerance = tolerance_for(target)
    span = int(want_spec + tolerance.allowed(want_spec)) + 5_000
    try:
        target.require_duration(span)
    except NotApplicable as exc:
        out_of_reach(exc)
    target.create_topic("T", read_queues=1, write_queues=1)
    target.push_consumer_4x("G", "T", _FailOnce(), orderly=True, suspend_ms=suspend_ms)
    target.producer().send("T", b"x", key="o")
    target.wait_until(lambda: len([e for e in target.events() if e.kind == "DELIVER" and e.key == "o"]) >= 2, span)
    times = [e.ts_ms for e in target.events() if e.kind == "DELIVER" and e.key == "o"]
    require(len(times) >= 2, "ORDER-4X-02", f"suspend {suspend_ms} ms: {len(times)} deliveries, want a local retry")
    gap = times[1] - times[0]
    require(abs(gap - want_spec) <= tolerance.allowed(want_spec), "ORDER-4X-02",
            f"suspend {suspend_ms} ms: the retry came {gap / target.client_timer_scale:.0f} ms of the client's clock "
            f"after the first delivery; the clamp to [{SUSPEND_BOUNDS[0]}, {SUSPEND_BOUNDS[1]}] ms gives {want} ms")


RECEIVE_BOUNDS = (retry5x.MIN_INVISIBLE_FOR_RECEIVE_MS, retry5x.MAX_INVISIBLE_MS)
"""RETRY-5X-09: ``minInvisibleTimeMillsForRecv`` (10 s) and ``maxInvisibleTimeMills`` (12 h)."""
STEP = 5_000
"""How far past a bound the values lie: whole seconds of wire time at the time scales the suites run at (0.2 for a
real release), which is all the Python SDK can send; a duration a client cannot send is not applicable."""


def _legal_receive(invisible_ms: int) -> bool:
    return RECEIVE_BOUNDS[0] <= invisible_ms <= RECEIVE_BOUNDS[1]


def _code(error: BaseException) -> object:
    return getattr(error, "code", None)


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-09")
@given(invisible_ms=st.sampled_from([STEP, RECEIVE_BOUNDS[0] - STEP, RECEIVE_BOUNDS[0], RECEIVE_BOUNDS[0] + STEP,
                                     3_600_000, RECEIVE_BOUNDS[1] - STEP, RECEIVE_BOUNDS[1],
                                     RECEIVE_BOUNDS[1] + STEP, 2 * RECEIVE_BOUNDS[1]]))
@example(invisible_ms=RECEIVE_BOUNDS[0] - STEP).via("just below the lower bound")
@example(invisible_ms=RECEIVE_BOUNDS[1] + STEP).via("just above the upper bound")
def test_a_receive_takes_only_an_invisible_time_within_its_bounds(make_target, invisible_ms: int) -> None:
    """A simple consumer's receive with ``invisible_ms`` below 10 s or above 12 h is refused with 40011 and takes
    nothing; within the bounds it takes the message."""
    target = make_target("grpc-5.x")  # a fresh one per example: an earlier example's message stays in flight
    target.require("consumer.simple5x")
    target.create_topic("T")
    consumer = target.simple_consumer_5x("G", "T")
    target.producer().send("T", b"x", key="r")
    try:
        outcome: object = [v.key for v in receive_soon(target, consumer, 16, invisible_ms)]
    except Outcome:
        raise  # a duration this client cannot send: not applicable, not a refusal
    except Exception as error:  # the SDK raises the proxy's refusal with its code
        outcome = _code(error)
    want = ["r"] if _legal_receive(invisible_ms) else 40011
    require(outcome == want, "RETRY-5X-09",
            f"receive with an invisible time of {invisible_ms} ms gave {outcome!r}; the bounds "
            f"[{RECEIVE_BOUNDS[0]}, {RECEIVE_BOUNDS[1]}] ms say {want!r}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-09")
@given(invisible_ms=st.sampled_from([0, STEP, 10_000, RECEIVE_BOUNDS[1] - STEP, RECEIVE_BOUNDS[1],
                                     RECEIVE_BOUNDS[1] + STEP, 2 * RECEIVE_BOUNDS[1]]))
@example(invisible_ms=RECEIVE_BOUNDS[1] + STEP).via("just above the upper bound")
@example(invisible_ms=0).via("at the lower bound")
def test_a_change_of_invisible_duration_takes_only_a_time_within_its_bounds(make_target, invisible_ms: int) -> None:
    """A change of invisible duration to ``invisible_ms`` within [0, 12 h] is OK and gives a new handle; above
    12 h it is refused with 40011, and the handle received stays the one to ack with."""
    target = make_target("grpc-5.x")
    target.require("consumer.simple5x")
    target.create_topic("T")
    consumer = target.simple_consumer_5x("G", "T")
    target.producer().send("T", b"x", key="c")
    views = receive_soon(target, consumer, 16, 60_000)
    require(len(views) == 1, "RETRY-5X-09", f"the message to change was not received: {views}")
    try:
        code, handle = consumer.change_invisible_duration(views[0], invisible_ms)
    except Outcome:
        raise
    except Exception as error:
        code, handle = _code(error), None
    legal = 0 <= invisible_ms <= RECEIVE_BOUNDS[1]
    require((code == 20000 and bool(handle)) if legal else code == 40011, "RETRY-5X-09",
            f"a change to {invisible_ms} ms answered {code!r}; the bounds [0, {RECEIVE_BOUNDS[1]}] ms say "
            f"{'OK with a new handle' if legal else 40011}")
    if not legal:
        require(consumer.ack(views[0]) == 20000, "RETRY-5X-09",
                "after a refused change the handle received must still ack the message")
