"""Offsets, ConsumeFromWhere, queue-number changes and rebalance under churn, through the target."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

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
    target.create_topic("T", read_queues=1, write_queues=1)
    producer = target.producer()
    for i in range(3):
        producer.send("T", b"x", key=f"old{i}")
        target.advance(60_000)
    target.configure_broker(messages_in_memory=in_memory)
    target.push_consumer_4x("G", "T", OK, consume_from_where=where, consume_timestamp_ms=120_000)
    producer.send("T", b"x", key="new")
    target.settle()
    require(_delivered(target) == expected, "OFFSET-01" if not in_memory else "OFFSET-02",
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


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("TOPIC-03")
@given(before=st.integers(0, 30), after=st.integers(0, 30), queues=st.integers(2, 8), data=st.data())
def test_scale_down_write_first_loses_nothing(make_target, before, after, queues, data):
    """Course text: shrink the write queues, let consumers drain every read queue, then shrink the read
    queues -- nothing is lost. Shrinking the read queues first strands whatever sits in the dropped ones."""
    keep = data.draw(st.integers(1, queues - 1))
    safe = data.draw(st.booleans())
    target = make_target()
    target.create_topic("T", read_queues=queues, write_queues=queues)
    producer = target.producer()
    for i in range(before):
        producer.send("T", b"x", key=f"a{i}")
    if safe:
        target.update_topic("T", read_queues=queues, write_queues=keep)
    else:
        target.update_topic("T", read_queues=keep, write_queues=keep)
    for i in range(after):
        producer.send("T", b"x", key=f"b{i}")
    target.push_consumer_4x("G", "T", OK, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    target.settle()
    if safe:
        target.update_topic("T", read_queues=keep, write_queues=keep)
        target.settle()
    stored = {m["msg_id"]: m["queue_id"] for m in target.stored_messages("T")}
    seen = {e.msg_id for e in target.events() if e.kind == "DELIVER"}
    lost = {msg for msg, qid in stored.items() if msg not in seen}
    if safe:
        require(not lost, "TOPIC-03", f"write-first scale-down {queues}->{keep} lost {len(lost)} messages")
    else:
        stranded = {msg for msg, qid in stored.items() if qid >= keep}
        require(lost == stranded, "TOPIC-03", f"read-first scale-down: lost {len(lost)}, stranded {len(stranded)}")


class RebalanceMachine(RuleBasedStateMachine):
    """Clustering consumers join, leave and crash while messages flow (ALLOC-00/01, OFFSET-04).

    Invariants: once no crash is pending, every queue is owned by exactly one live consumer; at the end
    no message is lost, and a message is delivered twice only if it lies in a crashed consumer's
    window between its last persisted offset and what it had consumed.
    """

    target_factory = None

    @initialize()
    def start(self) -> None:
        self.target = type(self).target_factory("remoting-4.x")
        self.target.create_topic("T", read_queues=4, write_queues=4)
        self.live: list = []
        self.pending_crashes: list[int] = []
        self.windows: set[tuple[int, int]] = set()  # (queue id, offset) that may be redelivered
        self.sent = 0
        self.join()

    @rule()
    def join(self) -> None:
        if len(self.live) < 4:
            self.live.append(self.target.push_consumer_4x("G", "T", OK))

    @precondition(lambda self: len(self.live) > 1)
    @rule(index=st.integers(0, 3))
    def leave(self, index: int) -> None:
        self.live.pop(index % len(self.live)).shutdown()

    @precondition(lambda self: len(self.live) > 1)
    @rule(index=st.integers(0, 3))
    def crash(self, index: int) -> None:
        consumer = self.live.pop(index % len(self.live))
        before = {key: consumer.offsets.get(key) for key in consumer.assigned}
        consumer.crash()
        for key, consumed in before.items():
            persisted = consumer._stored(key) or 0
            if key[0] == "T" and consumed is not None:
                self.windows.update((key[1], off) for off in range(persisted, consumed))
        self.pending_crashes.append(self.target.now_ms() + 120_000)

    @rule(count=st.integers(1, 5))
    def send(self, count: int) -> None:
        for _ in range(count):
            self.target.producer().send("T", b"x", key=f"m{self.sent}")
            self.sent += 1

    @rule(ms=st.sampled_from([1_000, 5_000, 30_000, 130_000]))
    def advance(self, ms: int) -> None:
        self.target.advance(ms)
        self.pending_crashes = [t for t in self.pending_crashes if t > self.target.now_ms()]

    @invariant()
    def queues_owned_once(self) -> None:
        if not hasattr(self, "target") or self.pending_crashes:
            return
        owners: dict = {}
        for c in self.live:
            for q in c.assigned:
                owners.setdefault(q, []).append(c.client_id)
        for qid in range(4):
            require(len(owners.get(("T", qid), [])) == 1, "ALLOC-01",
                    f"queue T:{qid} owned by {owners.get(('T', qid))} with no crash pending")

    def teardown(self) -> None:
        if not hasattr(self, "target"):
            return
        self.target.settle()
        delivered = [e for e in self.target.events() if e.kind == "DELIVER" and e.topic == "T"]
        keys = [e.key for e in delivered]
        missing = {f"m{i}" for i in range(self.sent)} - set(keys)
        require(not missing, "OFFSET-04", f"lost {sorted(missing)}")
        seen: set = set()
        for e in delivered:
            if e.key in seen:
                require((e.queue_id, e.queue_offset) in self.windows, "OFFSET-04",
                        f"{e.key} (T:{e.queue_id}@{e.queue_offset}) delivered twice outside any crash window")
            seen.add(e.key)


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ALLOC-00", "ALLOC-01", "OFFSET-03", "OFFSET-04")
def test_rebalance_under_churn(make_target) -> None:
    RebalanceMachine.target_factory = staticmethod(make_target)
    runner = RebalanceMachine.TestCase()
    runner.settings = settings(runner.settings, stateful_step_count=30)
    runner.runTest()
