"""Consume offsets through the target: where a new group starts, what a crash loses."""
from __future__ import annotations

import pytest

from history.values import ListenerOutcome
from suites.checks import require

OK = lambda v: ListenerOutcome.SUCCESS  # noqa: E731


def _delivered(target, group="G"):
    return [e.key for e in target.events() if e.kind == "DELIVER" and e.group == group]


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("OFFSET-01", "OFFSET-02")
@pytest.mark.parametrize("in_memory,where,expected", [
    (True, "CONSUME_FROM_LAST_OFFSET", ["old0", "old1", "old2", "new"]),   # young queue: a new group starts at 0
    (False, "CONSUME_FROM_LAST_OFFSET", ["new"]),
    (False, "CONSUME_FROM_FIRST_OFFSET", ["old0", "old1", "old2", "new"]),
    (False, "CONSUME_FROM_TIMESTAMP", ["old2", "new"]),
])
def test_consume_from_where_for_a_new_group(target, in_memory, where, expected):
    target.configure_broker(messages_in_memory=in_memory)  # first: a broker without the setting is not applicable at once
    target.create_topic("T", read_queues=1, write_queues=1)
    producer = target.producer()
    for i in range(3):
        producer.send("T", b"x", key=f"old{i}")
        target.advance(60_000)
    target.push_consumer_4x("G", "T", OK, consume_from_where=where, consume_timestamp_ms=120_000)
    producer.send("T", b"x", key="new")
    target.settle()
    # which messages, not in what order: a concurrent listener may see one pull's messages in any order (the Java
    # client hands each to its pool of consume threads, ConsumeMessageConcurrentlyService.submitConsumeRequest)
    require(sorted(_delivered(target)) == sorted(expected), "OFFSET-01" if not in_memory else "OFFSET-02",
            f"{where} (offset 0 in memory: {in_memory}): delivered {_delivered(target)}, spec {expected}")


SEND_TIMES = [1_000, 3_000, 11_000, 13_000, 16_000]


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("OFFSET-03", "OFFSET-04")
@pytest.mark.parametrize("crash_at,duplicates", [
    (4_000, 2),    # no persist yet: m0, m1 come again
    (12_000, 1),   # persisted at 10 s after m0, m1: m2 comes again
    (17_000, 1),   # persisted at 15 s after m0..m3: m4 comes again
])
def test_a_crash_loses_progress_since_the_last_persist(target, crash_at, duplicates):
    """Offsets are persisted 10 s after start, then every 5 s; a crashed consumer's queue pauses until the
    broker drops it (120 s), then its successor starts from the last persisted offset."""
    target.require("consumer.crash")
    target.create_topic("T", read_queues=1, write_queues=1)
    first = target.push_consumer_4x("G", "T", OK)
    producer = target.producer()
    crashed = False
    for i, t in enumerate(SEND_TIMES + [10**9]):
        if not crashed and crash_at <= t:
            target.advance(crash_at - target.now_ms())
            first.crash()
            target.push_consumer_4x("G", "T", OK)
            crashed = True
        if t == 10**9:
            break
        target.advance(t - target.now_ms())
        producer.send("T", b"x", key=f"m{i}")
    paused_until = crash_at + 120_000
    target.settle()
    deliveries = [e for e in target.events() if e.kind == "DELIVER"]
    keys = [e.key for e in deliveries]
    require(set(keys) == {f"m{i}" for i in range(5)}, "OFFSET-04", f"lost messages: {keys}")
    require(len(keys) - 5 == duplicates, "OFFSET-04",
            f"crash at {crash_at} ms: {len(keys) - 5} duplicates, the persist cadence gives {duplicates}")
    require(not [e for e in deliveries if crash_at < e.ts_ms < paused_until], "OFFSET-04",
            "the crashed consumer's queue was consumed before the broker dropped it")
