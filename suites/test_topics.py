"""Topics through the target: auto-creation, and changing queue numbers without losing messages."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.values import ListenerOutcome
from suites.checks import require


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("TOPIC-02")
def test_unknown_topic_is_auto_created_with_four_queues(target):
    target.create_topic("TBW102", read_queues=8, write_queues=8, perm=7)
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
