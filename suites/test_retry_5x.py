"""5.x consumer retry through the target: push consumers' nack ladders, simple consumers' invisibility, acks
and the DLQ."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, given

from reference_impl.rules import codes, retry5x
from suites import strategies
from suites.checks import require
from suites.harness import drives_nodejs_only, expired_ack, run_checked
from suites.oracle import release_of
from suites.receiving import receive_soon
from suites.scenario import MessagePlan, Scenario
from suites.tolerance import (
    lateness_of,
    redelivered_in_time,
    tolerance_for,
)


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-01", "RETRY-5X-03", "RETRY-5X-05", "RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-10",
                  "RETRY-5X-11")
@given(scenario=strategies.push_5x())
@example(scenario=Scenario("push5x", (MessagePlan("m0", 1),), retry_max_times=2))  # one nack, one redelivery
def test_push_5x_nack_ladder(make_target, reference_for, scenario: Scenario) -> None:
    """Attempt n fails -> invisible for durations[n-1]; the redelivery at max attempts goes to the DLQ."""
    run_checked(make_target, reference_for, scenario)


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-11", "CLAIM-01", "CLAIM-04", "SDK-NODE-01")
def test_full_17_attempt_ladder_5x(make_target, reference_for) -> None:
    """5.x clients: 1 s, 5 s, ... 30 m between 17 attempts (each late by the revive, RETRY-5X-11) -- not the
    docs' 10 s ... 2 h (CLAIM-01 false for gRPC)."""

    target_seen: list = []

    def make(profile):
        target_seen.append(make_target(profile))
        return target_seen[-1]

    life = run_checked(make, reference_for, Scenario("push5x", (MessagePlan("m0", failures=99),)))
    target = target_seen[0]
    assert life["m0"].deliveries == 17 and life["m0"].final == "DLQ"
    if drives_nodejs_only(target):
        # SDK-NODE-01: no policy from a customized backoff, every nack is 0 ms: each redelivery is only late
        require(all(redelivered_in_time(target, w, 0) for w in life["m0"].waits_ms), "SDK-NODE-01",
                f"the Node.js client's nacks of 0 ms: waits {life['m0'].waits_ms}")
        return
    assert redelivered_in_time(target, life["m0"].waits_ms[0], 1000), life["m0"].waits_ms
    assert redelivered_in_time(target, life["m0"].waits_ms[-1], 1_800_000), life["m0"].waits_ms
    assert not any(redelivered_in_time(target, w, 7_200_000) for w in life["m0"].waits_ms), life["m0"].waits_ms


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-09", "RETRY-5X-10", "RETRY-5X-07", "RETRY-5X-11")
def test_simple_consumer_never_acking_reaches_dlq(target):
    """Invisible 10 s, never acked, retryMaxTimes 2: attempts 1, 2, 3, each 10 s after the previous plus the
    revive's lateness (RETRY-5X-11), then %DLQ%G."""
    target.create_topic("T")
    target.configure_group("G", retry_max_times=2)
    consumer = target.simple_consumer_5x("G", "T")
    with pytest.raises(Exception) as illegal:
        consumer.receive(16, invisible_ms=5000)
    require(getattr(illegal.value, "code", None) == 40011, "RETRY-5X-09", f"receive with 5 s: {illegal.value!r}")
    target.producer().send("T", b"x", key="s")
    _, latest = lateness_of(target)
    seen = []
    for _ in range(3 * (10_000 + latest) // 1000 + 10):  # bounded: every attempt's window, receiving each second
        seen += [(v.delivery_attempt, target.now_ms()) for v in consumer.receive(16, invisible_ms=10_000)]
        if len(seen) >= 3 and any(e.kind == "DLQ" for e in target.events()):
            break
        target.advance(1000)
    require([a for a, _ in seen] == [1, 2, 3], "RETRY-5X-10", f"attempts {seen}")
    # receives come once a second: an observed gap may fall up to one step short of the true one
    gaps = [b - a for (_, a), (_, b) in zip(seen, seen[1:])]
    require(all(redelivered_in_time(target, gap + 1000, 10_000) or redelivered_in_time(target, gap, 10_000)
                for gap in gaps), "RETRY-5X-11",
            f"redeliveries {gaps} ms apart; the spec says 10000 ms plus the revive's lateness "
            f"{tolerance_for(target, redelivery=True).late_min_ms}-{tolerance_for(target, redelivery=True).late_max_ms} ms")
    dlq = [e for e in target.events() if e.kind == "DLQ" and e.key == "s"]
    require(len(dlq) == 1 and dlq[0].topic == "%DLQ%G", "RETRY-5X-07", f"DLQ events {dlq}")


def _back_after(target, consumer, wait_ms: int, invisible_ms: int) -> list:
    """Receive once ``wait_ms`` and the revive's earliest lateness have passed, then each second until the spec's
    window closes (RETRY-5X-11): what came back."""
    earliest, latest = lateness_of(target)
    target.advance(wait_ms + earliest)
    received = consumer.receive(16, invisible_ms=invisible_ms)
    for _ in range((latest - earliest) // 1000 + 1):  # bounded by the spec's window
        if received:
            break
        target.advance(1000)
        received = consumer.receive(16, invisible_ms=invisible_ms)
    return received


def _named(code: int) -> str:
    """An ack's answer as the messages name it."""
    return {codes.INVALID_RECEIPT_HANDLE: "INVALID_RECEIPT_HANDLE", 20000: "OK"}.get(code, str(code))


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-06", "RETRY-5X-09", "RETRY-5X-11", "SDK-GO-02")
def test_simple_consumer_ack_and_change_invisible(target):
    target.create_topic("T")
    consumer = target.simple_consumer_5x("G", "T")
    target.producer().send("T", b"x", key="a")
    (view,) = consumer.receive(16, invisible_ms=30_000)
    code, receipt = consumer.change_invisible_duration(view, 10_000)  # whole protocol seconds at a release's time scale
    require(code == 20000 and receipt, "RETRY-5X-06", f"change invisible duration answered {code}")
    received = _back_after(target, consumer, 10_000, 30_000)  # the nack's 10 s, then the revive's lateness
    require(len(received) == 1, "RETRY-5X-11", f"{len(received)} messages back within the revive window after a nack")
    (again,) = received
    require(again.delivery_attempt == 2, "RETRY-5X-06", f"attempt {again.delivery_attempt} after a nack")
    require(consumer.ack(again) == 20000, "RETRY-5X-06", "ack refused")
    require(consumer.ack(again) == 20000, "RETRY-5X-09", "a second ack of an unexpired handle is OK (no duplicate check)")
    target.advance(60_000)
    require(consumer.receive(16, invisible_ms=30_000) == [], "RETRY-5X-06", "acked message came back")
    expired, sid = expired_ack(target)  # 40013; OK through the Go client (SDK-GO-02)
    require(consumer.ack(again) == expired, sid, f"an ack of an expired handle must be {_named(expired)}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-09", "SDK-GO-02")
def test_the_handle_a_change_of_invisible_time_replaced(target):
    """After a change of invisible time the old handle is still taken until its own invisible time ends: an ack
    with it is OK and does nothing (the message comes back after the new time, and the new handle acks it);
    after the old time it is INVALID_RECEIPT_HANDLE."""
    target.create_topic("T")
    consumer = target.simple_consumer_5x("G", "T")
    target.producer().send("T", b"x", key="h")
    (view,) = consumer.receive(16, invisible_ms=60_000)
    old_until = target.now_ms() + 60_000
    code, new = consumer.change_invisible_duration(view, 10_000)
    require(code == 20000 and new and new != view.receipt_handle, "RETRY-5X-09", f"change answered {code}")
    require(consumer.ack(view) == 20000, "RETRY-5X-09",
            "an ack with the replaced handle before its own invisible time ends is OK")
    received = _back_after(target, consumer, 10_000, 60_000)
    require([v.delivery_attempt for v in received] == [2], "RETRY-5X-09",
            f"the old handle's ack must do nothing: the message comes back after the new time; got {received}")
    require(consumer.ack(received[0]) == 20000, "RETRY-5X-09", "the new delivery's ack refused")
    target.advance(max(0, old_until + 1000 - target.now_ms()))  # past the old handle's own invisible time
    expired, sid = expired_ack(target)  # 40013; OK through the Go client (SDK-GO-02)
    require(consumer.ack(view) == expired, sid, f"the replaced handle after its own time must be {_named(expired)}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-09", "SDK-GO-02")
def test_a_receipt_handle_through_two_changes_of_invisible_time(target):
    """A handle's whole life across two changes (RETRY-5X-09): received for 60 s (h0), changed to 40 s (h1), then
    to 20 s (h2). Each change acked the checkpoint the handle before it names, so h0 and h1 are each still
    taken until their own invisible time ends (their acks are OK and do nothing) and 40013 after; the message
    comes back once, after h2's 20 s; the new delivery's handle acks it, and h2, past its time, is 40013."""
    target.create_topic("T")
    consumer = target.simple_consumer_5x("G", "T")
    target.producer().send("T", b"x", key="h")
    (h0,) = consumer.receive(16, invisible_ms=60_000)
    start = target.now_ms()
    code, first = consumer.change_invisible_duration(h0, 40_000)
    require(code == 20000 and first and first != h0.receipt_handle, "RETRY-5X-09", f"the first change answered {code}")
    h1 = dataclasses.replace(h0, receipt_handle=first)
    code, second = consumer.change_invisible_duration(h1, 20_000)
    require(code == 20000 and second and second not in (first, h0.receipt_handle), "RETRY-5X-09",
            f"the second change, with the first change's handle, answered {code}")
    h2 = dataclasses.replace(h0, receipt_handle=second)
    require(consumer.ack(h0) == 20000, "RETRY-5X-09", "h0, replaced but within its 60 s, must be taken (OK)")
    require(consumer.ack(h1) == 20000, "RETRY-5X-09", "h1, replaced but within its 40 s, must be taken (OK)")
    received = _back_after(target, consumer, max(0, start + 20_000 - target.now_ms()), 60_000)
    require([v.key for v in received] == ["h"], "RETRY-5X-09",
            f"the acks of h0 and h1 must do nothing: the message comes back once after h2's 20 s; got {received}")
    expired, sid = expired_ack(target)  # 40013; OK through the Go client (SDK-GO-02)
    require(consumer.ack(h2) == expired, sid, f"h2, past its 20 s, must be {_named(expired)}")
    require(consumer.ack(received[0]) == 20000, "RETRY-5X-09", "the new delivery's handle must ack it")
    if target.now_ms() < start + 40_000 - 2_000:  # h1 is still within its time (a slow target may be past it)
        require(consumer.ack(h1) == 20000, "RETRY-5X-09", "h1 within its 40 s, asked again, must be OK")
    target.advance(max(0, start + 41_000 - target.now_ms()))
    require(consumer.ack(h1) == expired, sid, f"h1 past its 40 s must be {_named(expired)}")
    require(consumer.ack(h0) == 20000, "RETRY-5X-09", "h0 within its 60 s must still be taken (OK)")
    target.advance(max(0, start + 61_000 - target.now_ms()))
    require(consumer.ack(h0) == expired, sid, f"h0 past its 60 s must be {_named(expired)}")
    require(consumer.receive(16, invisible_ms=30_000) == [], "RETRY-5X-09", "an acked message came back")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-09", "FIFO-05", "RETRY-5X-10")
def test_a_replaced_fifo_handle_still_commits_its_message(target):
    """A FIFO message received alone (h0; a receive of one message), its invisible time changed (h1): an ack with h0,
    within its own time, commits the message as h1's would, so the group's next message is delivered at once; h1's
    ack after it is OK."""
    target.require("consumer.simple5x", "consumer.push5x.fifo")
    target.create_topic("T", read_queues=1, write_queues=1, message_type="FIFO")
    target.configure_group("G", fifo=True)
    consumer = target.simple_consumer_5x("G", "T")
    # a first receive fixes where the new group starts, before anything is sent: before 5.1.4 a new group's first
    # pop starts at the queue's last message (RETRY-5X-10), which would skip a
    require(consumer.receive(1, invisible_ms=60_000) == [], "RETRY-5X-10", "a receive from an empty topic")
    producer = target.producer()
    for key in ("a", "b"):
        producer.send("T", key.encode(), key=key, message_group="g")
    views = receive_soon(target, consumer, 1, 60_000)
    require([v.key for v in views] == ["a"], "FIFO-05", f"a FIFO group's first receive gave {views}, want a alone")
    code, new = consumer.change_invisible_duration(views[0], 30_000)
    require(code == 20000 and new, "RETRY-5X-09", f"the change answered {code}")
    require(consumer.ack(views[0]) == 20000, "RETRY-5X-09", "the replaced FIFO handle, within its time, must be taken")
    after = []
    for _ in range(5):  # well within the new handle's 30 s: only a commit lets b through
        target.advance(1000)
        after = consumer.receive(1, invisible_ms=60_000)
        if after:
            break
    require([v.key for v in after] == ["b"], "RETRY-5X-09",
            f"the replaced handle's ack must commit a, so b comes next at once; got {after}")
    require(consumer.ack(dataclasses.replace(views[0], receipt_handle=new)) == 20000, "RETRY-5X-09",
            "the new handle of a committed message, within its time, must be OK")
    require(consumer.ack(after[0]) == 20000, "RETRY-5X-09", "b's ack refused")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-10")
def test_a_new_groups_first_receive_starts_where_its_release_starts_it(target):
    """Two messages stored before a new group's first receive (``getInitOffset``, init mode MAX as the proxy
    sends it): from 5.1.4 the group starts at the queue's first message, offset 0 being still in memory; before
    5.1.4 at the last one, and the first is never delivered to that group."""
    target.require("consumer.simple5x")
    target.create_topic("T", read_queues=1, write_queues=1)
    producer = target.producer()
    for key in ("a", "b"):
        producer.send("T", key.encode(), key=key)
    consumer = target.simple_consumer_5x("G", "T")
    start = retry5x.pop_init_offset(0, 2, True, release=release_of(target))
    want, got = ["a", "b"][start:], []
    for _ in range(4):  # bounded: until a receive comes back empty after the expected ones
        views = consumer.receive(16, invisible_ms=30_000)
        for view in views:
            got.append(view.key)
            consumer.ack(view)
        if not views and len(got) >= len(want):
            break
    require(got == want, "RETRY-5X-10", f"a new group received {got} of ['a', 'b'] stored before its first receive; "
                                        f"at {release_of(target)} it starts at offset {start}: {want}")
