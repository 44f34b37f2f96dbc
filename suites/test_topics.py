"""Topics through the target: auto-creation, and changing queue numbers without losing messages."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.base import TargetError
from history.outcomes import NotApplicable
from history.values import ListenerOutcome
from reference_impl.rules.codes import RocketMQError
from spec import versions
from suites.checks import require


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("TOPIC-02")
def test_unknown_topic_is_auto_created_with_four_queues(target):
    try:
        target.create_topic("TBW102", read_queues=8, write_queues=8, perm=7)
    except TargetError as exc:  # a real broker makes its own TBW102 at start and refuses to redefine a system topic
        if "system topic" not in str(exc):
            raise
    result = target.producer().send("Fresh", b"x", key="k")
    require(result.status == "SEND_OK", "TOPIC-02", f"send to a new topic: {result}")
    queues = {m["queue_id"] for m in target.stored_messages("Fresh")}
    require(queues <= set(range(4)), "TOPIC-02", f"new topic got queues {queues}, the spec says 4")


OK = lambda v: ListenerOutcome.SUCCESS  # noqa: E731


def _delivered(target, group="G"):
    return [e.key for e in target.events() if e.kind == "DELIVER" and e.group == group]


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


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("TOPIC-05")
@pytest.mark.parametrize("topic_type, kind, accepted", [
    (None, "NORMAL", True), (None, "FIFO", False), ("FIFO", "FIFO", True), ("FIFO", "NORMAL", False),
    ("DELAY", "DELAY", True), ("NORMAL", "DELAY", False), ("MIXED", "FIFO", True), ("MIXED", "NORMAL", True)])
def test_a_topic_takes_its_own_message_type(make_target, rmq_release, topic_type, kind, accepted):
    """A topic without a type is NORMAL: it takes neither FIFO nor delayed messages; a typed topic takes
    only its type; MIXED (5.1.4+) takes every type. The SDK refuses the others before sending (code -1)."""
    if topic_type == "MIXED" and not versions.holds(rmq_release, since="5.1.4"):
        raise NotApplicable(f"RocketMQ {rmq_release} has no MIXED topics")
    target = make_target()
    if topic_type is None:
        target.create_topic("T")
    else:
        target.create_topic("T", message_type=topic_type)
    extra = {"message_group": "g"} if kind == "FIFO" else (
        {"delivery_timestamp_ms": target.now_ms() + 5_000} if kind == "DELAY" else {})
    try:
        target.producer().send("T", b"x", key="m", **extra)
        refused = None
    except RocketMQError as exc:
        refused = exc
    if accepted:
        require(refused is None, "TOPIC-05", f"a {kind} message on a {topic_type or 'untyped'} topic: {refused}")
    else:
        require(refused is not None and refused.code in (-1, 40014), "TOPIC-05",
                f"a {kind} message on a {topic_type or 'untyped'} topic was {refused or 'accepted'}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("QSEL-03", "TOPIC-01")
@pytest.mark.parametrize("perm", [6, 4, 2])
def test_a_client_sends_to_writable_queues_and_consumes_readable_ones(make_target, perm):
    """A topic of 4 write and 2 read queues: a producer picks among the writable queue data's write queues only
    (queue ids 0..3); a consumer pulls the readable queue data's read queues only (0 and 1), so what sits in
    queues 2 and 3 is never consumed. Read-only (perm 4): no writable queue, the send fails without a route
    (``No route info of this topic``). Write-only (perm 2): sends succeed, the consumer has no queue."""
    target = make_target("remoting-4.x")
    target.require("observe.queue_id")
    target.create_topic("T", read_queues=2, write_queues=4, perm=perm)
    target.push_consumer_4x("G", "T", OK)
    producer = target.producer()
    if not perm & 2:
        with pytest.raises(RocketMQError) as refused:
            producer.send("T", b"x", key="w")
        require("No route info of this topic" in refused.value.message, "QSEL-03",
                f"a send to a read-only topic: {refused.value}")
        return
    results = [producer.send("T", b"x", key=f"m{i}") for i in range(8)]
    queues = sorted({r.queue_id for r in results})
    require(set(queues) <= {0, 1, 2, 3}, "QSEL-03", f"sent to queues {queues}; the topic writes to 0..3")
    target.settle(60_000)  # what sits in an unread queue is never consumed: a bounded settle
    want = sorted(f"m{i}" for i, r in enumerate(results) if r.queue_id is not None and r.queue_id < 2) \
        if perm & 4 else []
    require(sorted(_delivered(target)) == want, "TOPIC-01" if not perm & 4 else "QSEL-03",
            f"perm {perm}, queues {[r.queue_id for r in results]}: delivered {sorted(_delivered(target))}, want {want}")
