"""The model's broker by its own properties (issue 37): what a story through the target reaches rarely or not at
all, driven on the model directly.

- A topic on two brokers: each message is stored in the queue of the broker its send names (QSEL-02: the
  producer's queue is a broker's queue; the route lists each broker's queues).
- The broker's configuration refuses what it does not know: a message type the release lacks (TOPIC-05,
  ``TopicMessageType.valueOf``), and the model's own fault injection names what it takes.
- Sends: the 5.x SDK refuses a message type its route does not accept before the proxy sees it (TOPIC-05); a
  read-only topic leaves no route to send to (QSEL-02); every stored copy of a send is an attempt that reached
  the store, and the result names its last copy (SEND-4X-02, SEND-5X-01).
- The log names a message by the first of its keys; a pop of a topic the broker does not have takes nothing.
- Clients (RETRY-5X-09): a poll that outlived its client is cleared at the next renew scan; a client heard from
  again is online, its renewed handles cleared only once it has been silent for the channel expiry.
- Transactions (TX-01, TX-02, TX-03, TX-05): a half with an unknown local state stays unresolved and is checked;
  an end of transaction from another producer group is refused (``The producer group wrong``) and changes
  nothing; a second end of a resolved half changes nothing; a commit stores the message once in its real topic
  and writes one op message; a committed message that fails is retried like any other and delivered again.

The mutation run imports the model from its scratch copy (``reference_rule``)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from history.profiles import GRPC_5X, REMOTING_4X
from history.values import ListenerOutcome
from reference_impl.model.broker import SEND_OUTCOMES, BrokerFaults
from reference_impl.model.simulation import Simulation
from reference_impl.rules import retry5x
from reference_impl.rules import transaction as tx_rules
from reference_impl.rules.codes import RocketMQError
from spec.versions import LATEST

pytestmark = [pytest.mark.reference_rule, pytest.mark.spec("QSEL-02", "SEND-4X-02", "SEND-5X-01", "TOPIC-05",
                                                           "TX-01", "TX-02", "TX-03", "TX-05")]

State = tx_rules.LocalTransactionState


@settings(max_examples=20, deadline=None, derandomize=True)
@given(brokers=st.integers(2, 3), queues=st.integers(1, 4), sends=st.integers(1, 8))
def test_a_message_sent_to_a_brokers_queue_is_stored_in_that_brokers_queue(brokers: int, queues: int,
                                                                          sends: int) -> None:
    sim = Simulation(REMOTING_4X, release=LATEST)
    config = sim.broker.create_topic("T", queues, queues, 6, "NORMAL", brokers)
    producer = sim.producer("P")
    for i in range(sends):
        producer.send("T", b"x", key=f"k{i}")
    oks = [e for e in sim.recorder.events if e.kind == "SEND_OK"]
    assert len(oks) == sends
    for e in oks:
        assert e.queue_id in config.read_queue_ids()
        owner = config.broker_names()[config.read_queue_ids().index(e.queue_id) // queues]
        assert e.detail["broker"] == owner, f"sent to {e.detail['broker']}, stored in {owner}'s queue {e.queue_id}"
        assert sim.broker.queues[("T", e.queue_id)][e.queue_offset].msg_id == e.msg_id
    if sends >= brokers * queues:  # the producer goes round the route's queues, every broker's
        assert {e.detail["broker"] for e in oks} == set(config.broker_names())


def test_a_message_type_the_release_lacks_and_an_unknown_fault_are_refused() -> None:
    sim = Simulation(REMOTING_4X, release="5.0.0")
    with pytest.raises(ValueError, match="TopicMessageType.PRIORITY"):
        sim.broker.create_topic("T", 1, 1, 6, "PRIORITY", 1)  # PRIORITY is a 5.5.0 type (TOPIC-05)
    assert "T" not in sim.broker.topics
    with pytest.raises(ValueError, match="unknown send fault 'bogus'"):
        BrokerFaults().add_send_fault("broker-a", "bogus", 1)


def _transaction(local: State) -> tuple[Simulation, object, list]:
    sim = Simulation(REMOTING_4X, release=LATEST)
    sim.broker.create_topic("T", 1, 1, 6, "NORMAL", 1)
    seen: list = []

    def listener(view):
        seen.append(view)
        return ListenerOutcome.RECONSUME_LATER if len(seen) == 1 else ListenerOutcome.SUCCESS

    sim.push_consumer_4x("G", "T", listener)
    producer = sim.transaction_producer("TP")
    half = producer.send_in_transaction("T", b"x", key="k", local_state=local)
    return sim, half, seen


def _stored(sim: Simulation, topic: str) -> list:
    return [m for (t, _), queue in sim.broker.queues.items() if t == topic for m in queue]


def test_an_unknown_half_waits_for_its_check_and_a_wrong_group_changes_nothing() -> None:
    sim, half, seen = _transaction(State.UNKNOW)
    assert not half.resolved and not _stored(sim, tx_rules.OP_HALF_TOPIC) and not _stored(sim, "T")
    assert sim.broker.end_transaction(half, State.COMMIT_MESSAGE, "another-group") == "The producer group wrong"
    assert not half.resolved and not _stored(sim, tx_rules.OP_HALF_TOPIC) and not _stored(sim, "T")
    sim.clock.advance(tx_rules.check_interval_ms() * 2)
    assert [e for e in sim.recorder.events if e.kind == "TX_CHECK"], "an unresolved half is checked (TX-03)"
    assert not seen


@pytest.mark.parametrize("local", [State.COMMIT_MESSAGE, State.ROLLBACK_MESSAGE])
def test_a_resolved_half_is_resolved_once(local: State) -> None:
    sim, half, seen = _transaction(local)
    assert half.resolved
    assert sim.broker.end_transaction(half, State.COMMIT_MESSAGE, half.producer_group) is None
    assert len(_stored(sim, tx_rules.OP_HALF_TOPIC)) == 1, "one op message per resolved half (TX-05)"
    assert len(_stored(sim, "T")) == (1 if local is State.COMMIT_MESSAGE else 0)
    sim.clock.advance(120_000)
    assert not [e for e in sim.recorder.events if e.kind == "TX_CHECK"], "a resolved half is not checked"
    if local is State.COMMIT_MESSAGE:
        assert [v.stored_topic for v in seen] == ["T", "%RETRY%G"], \
            "a committed message that fails is retried and delivered again (not stored as a half again)"


STORING_FAULTS = {"timeout_after_store", "flush_disk_timeout"}
"""The injected faults met after the broker stored the message (the reply is lost, or the flush timed out);
the others are met before it stores anything (unreachable, a timeout on the way, busy, error, illegal)."""


@settings(max_examples=40, deadline=None, derandomize=True)
@given(fault=st.sampled_from(sorted(SEND_OUTCOMES)), count=st.integers(1, 2), brokers=st.integers(1, 2),
       grpc=st.booleans())
def test_every_stored_copy_of_a_send_is_an_attempt_that_reached_the_store(fault: str, count: int, brokers: int,
                                                                          grpc: bool) -> None:
    """SEND-4X-02, SEND-5X-01: a send is tried again after a failed attempt; an attempt that failed before the
    store leaves no copy, one that failed after it (or succeeded) leaves one. The send's result names its attempts,
    the broker and queue of its last stored copy, and how many copies it stored besides that one."""
    sim = Simulation(GRPC_5X if grpc else REMOTING_4X, release=LATEST)
    sim.broker.create_topic("T", 2, 2, 6, "NORMAL", brokers)
    sim.broker.faults.add_send_fault("broker-a", fault, count)
    try:
        sim.producer("P").send("T", b"x", key="k")
    except RocketMQError:
        pass
    end = [e for e in sim.recorder.events if e.kind in ("SEND_OK", "SEND_FAIL", "SEND_UNKNOWN")]
    assert len(end) == 1
    copies = _stored(sim, "T")
    attempts = end[0].detail["attempts"].split(",")
    faulted = [a for a in attempts if a.split(":", 1)[1] != "0"]  # the others succeeded (code 0)
    assert all(a.startswith("broker-a:") for a in faulted) and len(faulted) <= count, attempts
    reached = [a for a in attempts if a not in faulted or fault in STORING_FAULTS]
    assert len(copies) == len(reached), f"{attempts}: {len(copies)} stored copies"
    if end[0].kind == "SEND_OK":
        assert int(end[0].detail["duplicates"]) == len(copies) - 1
        last = max(copies, key=lambda m: m.commit_offset)
        assert (end[0].queue_id, end[0].queue_offset) == (last.queue_id, last.queue_offset)
        assert end[0].attempt == len(attempts)


@pytest.mark.parametrize("sdk, text", [("java", "Current message type not match"),
                                       ("python", "current message type not match")])
def test_the_sdk_refuses_a_message_type_its_route_does_not_accept_before_the_proxy(sdk: str, text: str) -> None:
    """TOPIC-05: the 5.x SDK checks the message's type against the route's accepted types before it sends (an
    error of its own, code -1); only what passes it meets the proxy's check. A transactional send is checked
    the same way."""
    sim = Simulation(GRPC_5X, release=LATEST)
    sim.broker.create_topic("F", 1, 1, 6, "FIFO", 1)
    sim.broker.create_topic("N", 1, 1, 6, "NORMAL", 1)
    with pytest.raises(RocketMQError) as normal_to_fifo:
        sim.producer("P", sdk=sdk).send("F", b"x", key="k")
    with pytest.raises(RocketMQError) as transaction_to_normal:
        sim.transaction_producer("TP").send_in_transaction("N", b"x", key="k", local_state=State.COMMIT_MESSAGE)
    assert normal_to_fifo.value.code == -1 and normal_to_fifo.value.message.startswith(text), normal_to_fifo.value
    assert transaction_to_normal.value.code == -1, transaction_to_normal.value
    assert not [m for (t, _), q in sim.broker.queues.items() for m in q], "nothing refused is stored"


def test_a_topic_no_queue_of_which_takes_writes_has_no_route_to_send_to() -> None:
    """QSEL-02: the producer's route keeps only the writable queues; a read-only topic leaves none, and the send
    fails with ``No route info of this topic`` before any attempt."""
    sim = Simulation(REMOTING_4X, release=LATEST)
    sim.broker.create_topic("RO", 2, 2, 4, "NORMAL", 1)  # perm 4: read only
    with pytest.raises(RocketMQError, match="No route info of this topic"):
        sim.producer("P").send("RO", b"x", key="k")
    (fail,) = [e for e in sim.recorder.events if e.kind == "SEND_FAIL"]
    assert "No route info" in fail.detail["remark"] and not sim.broker.queues.get(("RO", 0))


def test_a_message_is_named_by_the_first_of_its_keys_and_a_missing_topic_pops_nothing() -> None:
    """KEYS holds a message's keys separated by a space (``MessageConst.KEY_SEPARATOR``); the log names a message
    by the first. A pop of a topic the broker does not have, ordered or not, takes nothing."""
    sim = Simulation(GRPC_5X, release=LATEST)
    sim.broker.create_topic("T", 1, 1)
    consumer = sim.simple_consumer_5x("G", "T")
    consumer.receive(16, 10_000)
    sim.producer("P").send("T", b"x", key="first second")
    (view,) = consumer.receive(16, 10_000)
    assert view.key == "first" and [e.key for e in sim.recorder.events if e.kind == "DELIVER"] == ["first"]
    for fifo in (False, True):
        assert sim.broker.pop("G", "no-such-topic", 10_000, 16, "a", fifo=fifo) == []


def _popped_by(sim: Simulation, client: str) -> object:
    sim.broker.create_topic("T", 1, 1)
    sim.broker.pop("G", "T", 30_000, 16, "first", fifo=False)  # a new group's first pop fixes its start (RETRY-5X-10)
    sim.producer("P").send("T", b"x", key="k")
    (flight,) = sim.broker.pop("G", "T", 30_000, 16, "second", fifo=False, auto_renew=True, client_id=client)
    return flight


def test_a_poll_that_outlived_its_client_is_cleared_at_the_next_renew_scan() -> None:
    """RETRY-5X-09: a client that unregistered (``NotifyClientTermination``) has its renewed handles cleared; a
    long poll of it that still takes a message has that handle cleared at the proxy's next renew scan
    (``renewSchedulePeriodMillis`` later): visible again ``invisibleTimeMillisWhenClear`` after."""
    sim = Simulation(GRPC_5X, release=LATEST)
    sim.broker.client_gone("c1")
    flight = _popped_by(sim, "c1")
    assert flight.auto_renew
    sim.clock.advance(retry5x.RENEW_SCHEDULE_PERIOD_MS - 1)
    assert flight.auto_renew, "cleared before the renew scan"
    sim.clock.advance(1)
    assert not flight.auto_renew and flight.visible_at == retry5x.cleared_visible_at_ms(sim.clock.now_ms)


def test_a_client_heard_from_again_is_online_and_watched_only_while_it_holds_renewed_handles() -> None:
    """RETRY-5X-09: any call of a client is a sign of life, so a client heard from after it unregistered is
    online again: its renewed handle is kept past the next renew scan, and cleared only once the client has
    been silent for the channel expiry. A pop that is not renewed (a simple consumer's) is not watched."""
    sim = Simulation(GRPC_5X, release=LATEST)
    sim.broker.client_gone("c1")
    sim.broker.client_seen("c1")
    seen_at = sim.clock.now_ms
    flight = _popped_by(sim, "c1")
    sim.clock.advance(retry5x.RENEW_SCHEDULE_PERIOD_MS + 1)
    assert flight.auto_renew, "an online client's renewed handle was cleared"
    offline = retry5x.offline_since_ms(seen_at)
    sim.clock.advance(offline - 1 - sim.clock.now_ms)
    assert flight.auto_renew
    sim.clock.advance(1)
    assert not flight.auto_renew and flight.visible_at == retry5x.cleared_visible_at_ms(offline)
    plain = Simulation(GRPC_5X, release=LATEST)
    plain.broker.create_topic("T", 1, 1)
    plain.broker.pop("G", "T", 30_000, 16, "first", fifo=False, client_id="c2")
    assert "c2" not in plain.broker._watched_clients and plain.clock.next_due_ms() is None


def test_a_half_checked_the_most_times_is_discarded_to_the_check_max_time_topic() -> None:
    """TX-04: a half still unknown after ``transactionCheckMax`` (15) checks is moved to
    ``TRANS_CHECK_MAX_TIME_TOPIC`` (1 queue, read and write) and never delivered; the copy keeps the half's
    properties and reconsume times (``DefaultTransactionalMessageCheckListener#toMessageExtBrokerInner``
    @rocketmq-all-4.9.8)."""
    sim, half, seen = _transaction(State.UNKNOW)
    sim.clock.advance(tx_rules.check_interval_ms() * (tx_rules.TRANSACTION_CHECK_MAX + 3))
    assert [e.kind for e in sim.recorder.events if e.kind == "TX_DISCARD"] == ["TX_DISCARD"] and half.resolved
    config = sim.broker.topics[tx_rules.CHECK_MAX_TIME_TOPIC]
    assert (config.read_queues, config.write_queues, config.perm) == (1, 1, 6)
    (discarded,) = sim.broker.queues[(tx_rules.CHECK_MAX_TIME_TOPIC, 0)]
    assert discarded.msg_id == half.message.msg_id and discarded.properties == half.message.properties
    assert discarded.reconsume_times == half.message.reconsume_times == 0
    assert not seen
