"""Delayed and timed delivery, the simple consumer's invisibility, and transactions, through the target."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.profiles import BROKER_PROFILES
from history.values import LocalTransactionState as S
from reference_impl.rules.transaction import TRANSACTION_TIMEOUT_MS
from suites.checks import require
from suites.oracle import default_oracle
from suites.tolerance import close_enough, tolerance_for

BOTH = pytest.mark.parametrize("profile", BROKER_PROFILES)


def _first_delivery_after_send(target, key):
    events = target.events()
    sent = next(e for e in events if e.kind in ("SEND_OK", "SEND_UNKNOWN") and e.key == key)
    delivered = [e for e in events if e.kind == "DELIVER" and e.key == key]
    return sent, delivered


def _consume_all(target, topic="T", group="G"):
    from history.values import ListenerOutcome

    if target.profile == "remoting-4.x":
        return target.push_consumer_4x(group, topic, lambda v: ListenerOutcome.SUCCESS)
    return target.push_consumer_5x(group, topic, lambda v: ListenerOutcome.SUCCESS)


@BOTH
@pytest.mark.spec("DELAY-01", "DELAY-03", "DELAY-04", "DELAY-05", "DELAY-06")
@given(level=st.integers(1, 30))
def test_delayed_message_arrives_after_its_level(make_target, profile, level):
    """A message with DELAY = level is delivered exactly min(level, 18)'s delay after the send."""
    target = make_target(profile)
    target.require("delay.level")
    target.create_topic("T")
    _consume_all(target)
    target.producer().send("T", b"x", key="d", delay_level=level)
    target.settle()
    sent, delivered = _first_delivery_after_send(target, "d")
    want = default_oracle().level_delay_ms(level)
    require(len(delivered) == 1, "DELAY-06", f"delayed message delivered {len(delivered)} times")
    require(delivered[0].ts_ms - sent.ts_ms == want, "DELAY-01",
            f"level {level}: delivered after {delivered[0].ts_ms - sent.ts_ms} ms, the spec says {want} ms")
    require(delivered[0].topic == "T", "DELAY-06", f"delivered from {delivered[0].topic}, not the real topic")
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
    target.create_topic("T")
    _consume_all(target)
    target.advance(123)
    at = target.now_ms() + 60_500
    target.producer().send("T", b"x", key="t", delivery_timestamp_ms=at)
    target.settle()
    _, delivered = _first_delivery_after_send(target, "t")
    want = at // 1000 * 1000  # the timer wheel's 1 s precision rounds down
    require(len(delivered) == 1 and close_enough(target, delivered[0].ts_ms, want), "DELAY-08",
            f"delivered at {[e.ts_ms for e in delivered]}, the spec says once at {want}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("DELAY-08")
def test_delivery_more_than_a_day_ahead_is_rejected(target):
    target.require("delay.timer")
    target.create_topic("T")
    with pytest.raises(Exception) as rejected:

        margin = 1 + tolerance_for(target).absolute_ms  # a wall clock moves on before the proxy looks
        target.producer().send("T", b"x", key="t", delivery_timestamp_ms=target.now_ms() + 86_400_000 + margin)
    require(getattr(rejected.value, "code", None) == 40012, "DELAY-08",
            f"send raised {rejected.value!r}, not ILLEGAL_DELIVERY_TIME (40012)")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-09", "RETRY-5X-10", "RETRY-5X-07")
def test_simple_consumer_never_acking_reaches_dlq(target):
    """Invisible 10 s, never acked, retryMaxTimes 2: attempts 1, 2, 3 at 0, 10, 20 s, then %DLQ%G."""
    target.create_topic("T")
    target.configure_group("G", retry_max_times=2)
    consumer = target.simple_consumer_5x("G", "T")
    with pytest.raises(Exception) as illegal:
        consumer.receive(16, invisible_ms=5000)
    require(getattr(illegal.value, "code", None) == 40011, "RETRY-5X-09", f"receive with 5 s: {illegal.value!r}")
    target.producer().send("T", b"x", key="s")
    seen = []
    for _ in range(4):
        seen += [(v.delivery_attempt, target.now_ms()) for v in consumer.receive(16, invisible_ms=10_000)]
        target.advance(10_000)
    require([a for a, _ in seen] == [1, 2, 3], "RETRY-5X-10", f"attempts {seen}")
    since_first = [t - seen[0][1] for _, t in seen]
    require(len(seen) == 3 and all(close_enough(target, t, w) for t, w in zip(since_first, [0, 10_000, 20_000])),
            "RETRY-5X-09", f"redelivery times {since_first} after the first, the spec says 0, 10000, 20000")
    dlq = [e for e in target.events() if e.kind == "DLQ" and e.key == "s"]
    require(len(dlq) == 1 and dlq[0].topic == "%DLQ%G", "RETRY-5X-07", f"DLQ events {dlq}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-06", "RETRY-5X-09")
def test_simple_consumer_ack_and_change_invisible(target):
    target.create_topic("T")
    consumer = target.simple_consumer_5x("G", "T")
    target.producer().send("T", b"x", key="a")
    (view,) = consumer.receive(16, invisible_ms=30_000)
    code, receipt = consumer.change_invisible_duration(view, 2000)
    require(code == 20000 and receipt, "RETRY-5X-06", f"change invisible duration answered {code}")
    target.advance(2000)
    (again,) = consumer.receive(16, invisible_ms=30_000)
    require(again.delivery_attempt == 2, "RETRY-5X-06", f"attempt {again.delivery_attempt} after a nack")
    require(consumer.ack(again) == 20000, "RETRY-5X-06", "ack refused")
    require(consumer.ack(again) == 40013, "RETRY-5X-09", "a second ack of the same handle must be INVALID_RECEIPT_HANDLE")
    target.advance(60_000)
    require(consumer.receive(16, invisible_ms=30_000) == [], "RETRY-5X-06", "acked message came back")


def _end_transaction(target, state):
    target.create_topic("T")
    _consume_all(target)
    target.transaction_producer("TP", check=lambda key, n: None).send_in_transaction("T", b"x", key="tx",
                                                                                    local_state=state)
    target.settle()


@BOTH
@pytest.mark.spec("TX-02")
@pytest.mark.parametrize("state,delivered", [(S.COMMIT_MESSAGE, 1), (S.ROLLBACK_MESSAGE, 0)])
def test_transaction_commit_and_rollback(make_target, profile, state, delivered):
    target = make_target(profile)
    _end_transaction(target, state)
    got = [e for e in target.events() if e.kind == "DELIVER" and e.key == "tx"]
    require(len(got) == delivered, "TX-02", f"{state.value}: delivered {len(got)} times, the spec says {delivered}")


@BOTH
@pytest.mark.spec("TX-01", "TX-05")
@pytest.mark.parametrize("state", [S.COMMIT_MESSAGE, S.ROLLBACK_MESSAGE])
def test_half_and_op_messages_are_stored(make_target, profile, state):
    """The half in RMQ_SYS_TRANS_HALF_TOPIC with its real topic; one op message tagged "d" per end."""
    target = make_target(profile)
    target.require("inspect.broker")
    _end_transaction(target, state)
    ops = target.stored_messages("RMQ_SYS_TRANS_OP_HALF_TOPIC")
    require(len(ops) == 1 and ops[0]["properties"].get("TAGS") == "d", "TX-05", f"op messages {ops}")
    half = target.stored_messages("RMQ_SYS_TRANS_HALF_TOPIC")
    require(half and half[0]["properties"].get("REAL_TOPIC") == "T", "TX-01", f"half messages {half}")


@BOTH
@pytest.mark.spec("TX-03", "TX-04", "CLAIM-09")
@pytest.mark.parametrize("commit_on_check", [None, 1, 3, 15])
def test_unknown_transaction_is_checked_then_resolved_or_discarded(make_target, profile, commit_on_check):
    """UNKNOW: checked once per interval (60 s in 4.x, 30 s from 5.2), at most 15 times, then discarded."""
    target = make_target(profile)
    target.create_topic("T")
    _consume_all(target)
    check = lambda key, n: S.COMMIT_MESSAGE if n == commit_on_check else S.UNKNOW  # noqa: E731
    target.transaction_producer("TP", check=check).send_in_transaction("T", b"x", key="tx", local_state=S.UNKNOW)
    target.settle()
    events = target.events()
    checks = [e.ts_ms for e in events if e.kind == "TX_CHECK"]
    interval = 60_000 if profile == "remoting-4.x" else 30_000
    expected_checks = commit_on_check or 15
    require(len(checks) == expected_checks, "TX-03", f"{len(checks)} checks at {checks}, the spec says {expected_checks}")
    if "clock.virtual" in target.capabilities:  # sent at 0: the scans fall on whole intervals
        require(checks == [interval * i for i in range(1, expected_checks + 1)], "TX-03",
                f"checks at {checks}, the spec says every {interval} ms")
    else:  # the scan's phase is the server's: the first check comes within one interval past the timeout
        half = next(e.ts_ms for e in events if e.kind == "TX_HALF")
        first = checks[0] - half
        require(TRANSACTION_TIMEOUT_MS - tolerance_for(target).allowed(interval) <= first
                and close_enough(target, min(first, interval + TRANSACTION_TIMEOUT_MS), first), "TX-03",
                f"first check {first} ms after the half, the spec says within {interval} ms past "
                f"the {TRANSACTION_TIMEOUT_MS} ms timeout")
        gaps = [b - a for a, b in zip(checks, checks[1:])]
        require(all(close_enough(target, gap, interval) for gap in gaps), "TX-03",
                f"gaps between checks {gaps}, the spec says {interval} ms")
    delivered = [e for e in events if e.kind == "DELIVER" and e.key == "tx"]
    if commit_on_check is None:
        require(not delivered, "TX-04", f"delivered {len(delivered)} times after {len(checks)} UNKNOW answers")
        if "inspect.broker" in target.capabilities:
            discarded = [e for e in events if e.kind == "TX_DISCARD"]
            require(len(discarded) == 1, "TX-04", f"discarded {len(discarded)} times")
            kept = target.stored_messages("TRANS_CHECK_MAX_TIME_TOPIC")
            require(len(kept) == 1 and kept[0]["queue_id"] == 0 and kept[0]["properties"].get("REAL_TOPIC") == "T",
                    "TX-04", f"TRANS_CHECK_MAX_TIME_TOPIC holds {kept}")
    else:
        require(len(delivered) == 1 and not [e for e in events if e.kind == "TX_DISCARD"], "TX-03",
                f"delivered {len(delivered)} times after a COMMIT answer to check {commit_on_check}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("TX-03")
def test_immunity_property_delays_the_first_check(target):
    target.create_topic("T")
    producer = target.transaction_producer("TP", check=lambda key, n: S.ROLLBACK_MESSAGE)
    producer.send_in_transaction("T", b"x", key="tx", local_state=S.UNKNOW, immunity_seconds=120)
    target.settle()
    checks = [e.ts_ms for e in target.events() if e.kind == "TX_CHECK"]
    require(checks == [180_000], "TX-03", f"checks at {checks}: with 120 s immunity the first check is the scan at 180 s")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-02")
def test_broadcasting_failure_advances_the_local_offset(target):
    """BROADCASTING, RECONSUME_LATER on the only cached message: dropped, offset = queueOffset + 1."""
    from history.values import ListenerOutcome

    target.create_topic("T", read_queues=1, write_queues=1)
    target.push_consumer_4x("G", "T", lambda v: ListenerOutcome.RECONSUME_LATER, broadcasting=True)
    target.producer().send("T", b"x", key="b")
    target.settle()
    commits = [e.queue_offset for e in target.events() if e.kind == "OFFSET_COMMIT" and e.topic == "T"]
    delivered = [e for e in target.events() if e.kind == "DELIVER"]
    require(commits == [1] and len(delivered) == 1, "RETRY-CONC-02", f"commits {commits}, deliveries {len(delivered)}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ORDER-4X-03", "ORDER-4X-02", "CLAIM-03")
def test_orderly_default_max_retries_forever_and_blocks_the_queue(target):
    """maxReconsumeTimes -1 (Integer.MAX_VALUE): m0 is retried every second for an hour; m1 behind it waits."""
    from history.values import ListenerOutcome

    target.create_topic("T", read_queues=1, write_queues=1)
    target.push_consumer_4x("G", "T", lambda v: ListenerOutcome.SUSPEND if v.key == "m0" else ListenerOutcome.SUCCESS,
                            orderly=True)
    producer = target.producer()
    producer.send("T", b"0", key="m0")
    producer.send("T", b"1", key="m1")
    target.advance(3_600_000)
    times = [e.ts_ms for e in target.events() if e.kind == "DELIVER" and e.key == "m0"]
    require(len(times) == 3601 and times[-1] == 3_600_000, "ORDER-4X-03", f"{len(times)} deliveries, last at {times[-1]}")
    require({b - a for a, b in zip(times, times[1:])} == {1000}, "ORDER-4X-02", "suspend time is not 1000 ms")
    require(not [e for e in target.events() if e.kind == "DELIVER" and e.key == "m1"], "ORDER-4X-03",
            "m1 was delivered while m0 blocked the queue")
    require(not [e for e in target.events() if e.kind == "DLQ"], "ORDER-4X-03", "a DLQ with an unlimited max")
