"""The model's stored state and offsets by their own properties (issue 37), over the differential suite's
generated programs of both profiles run on the reference.

The differential stories compare what a listener sees and where each copy is stored; these pin the bookkeeping
under them that a story shows only in part:

- every stored message sits at its place: in a queue its topic has (the timer's ``rmq_sys_wheel_timer`` has
  queue 0 and, before 5.3.1, no topic config: ``TopicConfigManager`` registers it from 5.3.1), at its offset
  in that queue and at its offset in the commit log (the offset message id names it, MSGID-01), and every
  event that names a stored place (a send, a delivery, a dead letter) names the place of a copy of it;
- the system topics have the shape the broker creates them with: a dead-letter topic one queue, read and
  write (RETRY-CONC-05, ``DLQ_NUMS_PER_GROUP``); a 5.x pop retry topic one queue, read and write (RETRY-5X-10,
  ``PopReviveService#addRetryTopicIfNoExit@rocketmq-all-5.0.0``: ``PopAckConstants.retryQueueNum``); the half,
  op and check-max-time topics of transactions one queue, read and write (TX-01, TX-04, TX-05:
  ``TransactionalMessageBridge#selectTopicConfig@rocketmq-all-4.9.8`` creates a missing one so); a 4.x retry
  topic its group's ``retryQueueNums``, read and write (RETRY-CONC-05);
- every stored message is announced to the broker's observers once, in the order of the commit log (the
  front ends of ``rmqc serve`` wake their long polls by it);
- a 4.x consumer's committed offsets only grow, name a queue of the topic and never pass its end (OFFSET-03),
  and neither do the offsets the broker keeps for a clustering group (OFFSET-04).

The mutation run imports the model from its scratch copy (``reference_rule``)."""
from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.targets import reference_target
from history.outcomes import NotApplicable
from history.profiles import GRPC_5X, REMOTING_4X
from reference_impl.rules import delay as delay_rules
from reference_impl.rules import retry4x
from reference_impl.rules import transaction as tx_rules
from spec.versions import LATEST
from suites import strategies
from suites.programs import run_program

pytestmark = [pytest.mark.reference_rule, pytest.mark.spec("MSGID-01", "RETRY-CONC-05", "RETRY-5X-10", "TX-01", "TX-04",
                                                           "TX-05", "OFFSET-03", "OFFSET-04")]

ONE_QUEUE_SYSTEM_TOPICS = (tx_rules.HALF_TOPIC, tx_rules.OP_HALF_TOPIC, tx_rules.CHECK_MAX_TIME_TOPIC)


def _run(profile: str, program, release: str = LATEST):
    """The reference after ``program``; ``target.announced`` lists the (topic, queue) of every stored message as
    the broker told its ``on_append`` observers (the real-time front end wakes its long polls by them)."""
    target = reference_target(profile, run_id="model-state", release=release)
    target.announced = []
    target.sim.broker.on_append.append(lambda topic, qid: target.announced.append((topic, qid)))
    try:
        run_program(target, program)
    except NotApplicable:
        pass
    return target


def _check_stored_places(broker) -> None:
    total = 0
    for (topic, qid), queue in broker.queues.items():
        if not queue:
            continue
        config = broker.topics.get(topic)
        if topic == delay_rules.TIMER_TOPIC:  # no topic config before 5.3.1: its one queue is the store's own
            assert qid == 0, f"a timed message stored in queue {qid} of {topic}"
        else:
            assert config is not None, f"messages stored in {topic}:{qid}, a topic the broker does not have"
            assert qid in config.read_queue_ids(), \
                f"{topic} has queues {config.read_queue_ids()}, a message is in {qid}"
        for offset, message in enumerate(queue):
            assert (message.topic, message.queue_id, message.queue_offset) == (topic, qid, offset), message
            assert broker.commit_log[message.commit_offset] is message, f"{message} is not at its commit offset"
        total += len(queue)
    assert len(broker.commit_log) == total, "the commit log holds exactly the stored messages"
    for name in broker.topics:
        assert broker.stored_count(name) == sum(len(broker.queues.get((name, q), ()))
                                                for q in broker.topics[name].read_queue_ids())
    assert broker.stored_count("no-such-topic") == 0
    for name, config in broker.topics.items():
        shape = (config.read_queues, config.write_queues, config.perm)
        group = broker.groups.get(name[len(retry4x.RETRY_TOPIC_PREFIX):])
        if name.startswith(retry4x.RETRY_TOPIC_PREFIX) and group is not None:  # a 4.x retry topic
            assert shape == (group.retry_queue_nums, group.retry_queue_nums, retry4x.PERM_READ_WRITE), (name, config)
        elif name.startswith((retry4x.DLQ_TOPIC_PREFIX, retry4x.RETRY_TOPIC_PREFIX)) or name in ONE_QUEUE_SYSTEM_TOPICS:
            assert shape == (1, 1, retry4x.PERM_READ_WRITE), f"{name}: {config}"


def _check_event_places(target) -> None:
    broker = target.sim.broker
    copies: dict[str, set[tuple[str, int, int]]] = defaultdict(set)
    for (topic, qid), queue in broker.queues.items():
        for message in queue:
            copies[message.msg_id].add((topic, qid, message.queue_offset))
    for e in target.events():
        if e.kind in ("SEND_OK", "DELIVER", "DLQ") and e.queue_offset is not None:
            stored_topic = e.topic if e.kind == "DLQ" else e.detail["stored_topic"]
            assert (stored_topic, e.queue_id, e.queue_offset) in copies[e.msg_id], \
                f"{e.kind} of {e.msg_id} names {stored_topic}:{e.queue_id}@{e.queue_offset}; copies: {copies[e.msg_id]}"


def _check_offsets(target) -> None:
    broker = target.sim.broker
    last: dict[tuple[str, str, int], int] = {}
    for e in target.events():
        if e.kind != "OFFSET_COMMIT":
            continue
        config = broker.topics.get(e.topic)
        assert config is not None and isinstance(e.queue_id, int) and e.queue_id in config.read_queue_ids(), e
        key = (e.client_id, e.topic, e.queue_id)
        assert e.queue_offset > last.get(key, -1), f"committed offsets only grow: {last.get(key)} then {e}"
        assert 0 <= e.queue_offset <= len(broker.queues.get((e.topic, e.queue_id), ())), e
        last[key] = e.queue_offset
    for (group, topic, qid), offset in broker.offsets.items():
        assert 0 <= offset <= len(broker.queues.get((topic, qid), ())), (group, topic, qid, offset)


SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(data=st.data(), profile=st.sampled_from([REMOTING_4X, GRPC_5X]))
def test_every_stored_message_and_every_event_is_at_its_place(data: st.DataObject, profile: str) -> None:
    program = data.draw(strategies.programs(profile), label="program")
    target = _run(profile, program)
    _check_stored_places(target.sim.broker)
    _check_event_places(target)
    assert target.announced == [(m.topic, m.queue_id) for m in target.sim.broker.commit_log], \
        "every stored message is announced once, in the order it was stored"


@SETTINGS
@given(data=st.data())
def test_committed_offsets_only_grow_within_their_queue(data: st.DataObject) -> None:
    program = data.draw(strategies.programs(REMOTING_4X), label="program")
    target = _run(REMOTING_4X, program)
    _check_offsets(target)


@SETTINGS
@given(data=st.data())
def test_once_every_handle_has_expired_nothing_awaits_redelivery(data: st.DataObject) -> None:
    """RETRY-5X-10, RETRY-5X-11: a standard message received and not acked is revived into the pop retry topic
    once its handle expires (a push consumer's renewed handle once its client is gone); a day later nothing of
    a group is in flight or being revived (the 5.0.0 long poll waits for exactly that, ``awaiting_redelivery``),
    and the model has nothing left to do: no client is watched once it holds nothing, no check or revive is due."""
    program = data.draw(strategies.programs(GRPC_5X), label="program")
    target = _run(GRPC_5X, program)
    broker = target.sim.broker  # the program shut its push consumers down or they crashed; simple ones stay
    target.sim.clock.advance(24 * 3_600_000)
    assert not [f for f in broker.in_flight.values() if not f.fifo], "a standard handle outlived a day"
    assert all(n == 0 for n in broker.reviving.values()), f"revives counted but never done: {broker.reviving}"
    assert not [g for g in broker.groups if broker.awaiting_redelivery(g)]
    due = target.sim.clock.next_due_ms()
    assert due is None, f"an idle model still ticks at {due}: nothing is held, revived, checked or watched"
    _check_stored_places(broker)
