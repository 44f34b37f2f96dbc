"""Delay levels and timed delivery through the target: when a delayed or timed message arrives, and what is rejected."""
from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from history.outcomes import Inconclusive, NotApplicable
from history.profiles import BROKER_PROFILES
from reference_impl.rules import delay as delay_rules
from suites.checks import require
from suites.oracle import oracle_for, release_of
from suites.reach import out_of_reach
from suites.tolerance import close_enough, tolerance_for

BOTH = pytest.mark.parametrize("profile", BROKER_PROFILES)


def _first_delivery_after_send(target, key):
    events = target.events()
    sent = next(e for e in events if e.kind in ("SEND_OK", "SEND_UNKNOWN") and e.key == key)
    delivered = [e for e in events if e.kind == "DELIVER" and e.key == key]
    return sent, delivered


def _sent_and_delivered_once(target, sid, *, delay_level=0, delivery_ahead_ms=None):
    """A DELAY topic ``T`` consumed by ``G``, one message sent with a delay level or a delivery time that many ms
    ahead, everything settled: its send and its one delivery (``sid`` fails when it is not delivered once)."""
    target.create_topic("T", message_type="DELAY")
    _consume_all(target)
    at = None if delivery_ahead_ms is None else target.delivery_time_sent_ms(target.now_ms() + delivery_ahead_ms)
    target.producer().send("T", b"x", key="d", delay_level=delay_level, delivery_timestamp_ms=at)
    target.settle()
    sent, delivered = _first_delivery_after_send(target, "d")
    require(len(delivered) == 1, sid, f"the delayed message was delivered {len(delivered)} times")
    return sent, delivered[0]


def _consume_all(target, topic="T", group="G"):
    from history.values import ListenerOutcome

    if target.profile == "remoting-4.x":
        return target.push_consumer_4x(group, topic, lambda v: ListenerOutcome.SUCCESS)
    return target.push_consumer_5x(group, topic, lambda v: ListenerOutcome.SUCCESS)


def _timer_reached_through_the_proxy(target) -> None:
    """DELAY-08's timer wheel is reached from a gRPC client only where the proxy does not turn a delivery time
    into a delay level (DELAY-09: its ``useDelayLevel`` is on by default until 5.1.1)."""
    if delay_rules.proxy_uses_delay_level(release_of(target)):
        raise NotApplicable(f"at {release_of(target)} the proxy turns a delivery time into a delay level by default "
                            "(DELAY-09): the timer wheel is not reached from a gRPC client")


@BOTH
@pytest.mark.spec("DELAY-01", "DELAY-03", "DELAY-04", "DELAY-05", "DELAY-06")
@given(level=st.integers(1, 30))
@example(level=1)  # the shortest: within any budget
def test_delayed_message_arrives_after_its_level(make_target, profile, level):
    """A message with DELAY = level is delivered exactly min(level, 18)'s delay after the send."""
    target = make_target(profile)
    target.require("delay.level")
    want = oracle_for(target).level_delay_ms(level)
    try:
        target.require_duration(want)
    except NotApplicable as exc:  # a wall clock: this level only; a shorter one may be within reach
        out_of_reach(exc)
    sent, delivered = _sent_and_delivered_once(target, "DELAY-06", delay_level=level)
    took, allowed = delivered.ts_ms - sent.ts_ms, tolerance_for(target).allowed(want)
    if "clock.virtual" not in target.capabilities and want + allowed < took <= want + 2 * allowed:
        # late by no more than the tolerance again: on a loaded wall clock the consumer's process cannot be told
        # from the broker (a CI run: 5807 ms for 5000 ± 750 on a real 5.5.0, make test's jobs beside it)
        raise Inconclusive(f"DELAY-01: level {level}: delivered after {took} ms, {took - want - allowed:.0f} ms past "
                           f"the tolerance of {allowed:.0f} ms, within it again")
    require(close_enough(target, took, want), "DELAY-01",
            f"level {level}: delivered after {delivered.ts_ms - sent.ts_ms} ms, the spec says {want} ms "
            f"(tolerance {tolerance_for(target).allowed(want):.0f} ms)")
    require(delivered.topic == "T", "DELAY-06", f"delivered from {delivered.topic}, not the real topic")
    if "inspect.broker" in target.capabilities:
        scheduled = target.stored_messages("SCHEDULE_TOPIC_XXXX")
        require(len(scheduled) == 1 and scheduled[0]["queue_id"] == min(level, 18) - 1, "DELAY-03",
                f"schedule queue {[m['queue_id'] for m in scheduled]} for level {level}")
        props = scheduled[0]["properties"]
        require(props.get("REAL_TOPIC") == "T" and props.get("DELAY") == str(min(level, 18)), "DELAY-04",
                f"schedule-topic properties {props}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("DELAY-08")
def test_timed_message_is_delivered_at_its_rounded_time(target):
    target.require("delay.timer")
    _timer_reached_through_the_proxy(target)
    target.create_topic("T", message_type="DELAY")
    _consume_all(target)
    target.advance(123)
    at = target.delivery_time_sent_ms(target.now_ms() + 60_500)  # what the client can send (whole seconds)
    target.producer().send("T", b"x", key="t", delivery_timestamp_ms=at)
    target.settle()
    _, delivered = _first_delivery_after_send(target, "t")
    want = at // 1000 * 1000  # the timer wheel's 1 s precision rounds down
    require(len(delivered) == 1 and close_enough(target, delivered[0].ts_ms, want), "DELAY-08",
            f"delivered at {[e.ts_ms for e in delivered]}, the spec says once at {want}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("DELAY-08")
@pytest.mark.parametrize("past_tick", [0, 1, 999])
def test_timed_message_on_a_tick_edge_is_rounded_as_the_wheel_rounds(target, past_tick):
    """A delivery time an exact multiple of the timer's precision (1000 ms) is moved one tick earlier; one
    just past a tick is floored to it (``deliverMs % p == 0 ? deliverMs - p : floor``)."""
    target.require("delay.timer")
    _timer_reached_through_the_proxy(target)
    target.create_topic("T", message_type="DELAY")
    _consume_all(target)
    target.advance(250)
    at = (target.now_ms() // 1000 + 30) * 1000 + past_tick
    if target.delivery_time_sent_ms(at) != at:
        raise NotApplicable(f"{target.name}'s client sends delivery times in whole seconds of its own clock: "
                            f"{at} ms, {past_tick} ms past a tick of the wheel's 1000 ms, cannot be sent")
    target.producer().send("T", b"x", key="t", delivery_timestamp_ms=at)
    target.settle()
    _, delivered = _first_delivery_after_send(target, "t")
    want = at - 1000 if at % 1000 == 0 else at // 1000 * 1000
    require(len(delivered) == 1 and close_enough(target, delivered[0].ts_ms, want), "DELAY-08",
            f"delivery time {at} delivered at {[e.ts_ms for e in delivered]}, the spec says once at {want}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("DELAY-09")
@pytest.mark.parametrize("ahead_ms", [20_000, 40_000])
def test_a_delivery_time_becomes_the_first_longer_delay_level_where_the_proxy_maps_it(target, ahead_ms):
    """Until 5.1.1 the proxy's ``useDelayLevel`` is on by default: a delivery time ``ahead_ms`` away is sent as
    the first delay level whose delay is longer (``computeDelayLevel``), and the level wins at the broker: the
    message comes that level's delay after the send, not at its delivery time. The times lie between two
    levels, away from either (a wall clock and an SDK that sends whole seconds move them a little)."""
    target.require("delay.timer")
    if not delay_rules.proxy_uses_delay_level(release_of(target)):
        raise NotApplicable(f"from 5.1.1 the proxy leaves a delivery time to the timer wheel (DELAY-08); "
                            f"the target is {release_of(target)}")
    oracle = oracle_for(target)
    levels = [oracle.level_delay_ms(level) for level in range(1, 19)]
    level = next((i for i, delay in enumerate(levels, start=1) if delay > ahead_ms), len(levels))
    want = levels[level - 1]
    target.require_duration(want + 20_000)
    sent, delivered = _sent_and_delivered_once(target, "DELAY-09", delivery_ahead_ms=ahead_ms)
    require(close_enough(target, delivered.ts_ms - sent.ts_ms, want), "DELAY-09",
            f"a delivery time {ahead_ms} ms ahead came {delivered.ts_ms - sent.ts_ms} ms after the send; as "
            f"delay level {level} it comes {want} ms after (levels {levels[:6]}...)")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("DELAY-08")
def test_delivery_more_than_a_day_ahead_is_rejected(target):
    target.require("delay.timer")
    target.create_topic("T", message_type="DELAY")
    # a wall clock moves on before the proxy looks, and an SDK may send whole protocol seconds only
    margin = 1 + tolerance_for(target).absolute_ms + getattr(target, "timestamp_step_ms", 0)
    with pytest.raises(Exception) as rejected:
        target.producer().send("T", b"x", key="t", delivery_timestamp_ms=target.now_ms() + 86_400_000 + margin)
    require(getattr(rejected.value, "code", None) == 40012, "DELAY-08",
            f"send raised {rejected.value!r}, not ILLEGAL_DELIVERY_TIME (40012)")
