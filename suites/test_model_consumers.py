"""The model's consumers by their own properties (issue 37), over the differential suite's generated programs
run on the reference, and the proxy's checks of a 5.x consumer's group.

- A 4.x push consumer consumes only the queues allocated to it: every delivery comes from a queue of its latest
  assignment (ALLOC-00, ALLOC-01). A queue the rebalance takes away is dropped with what it still holds
  (OFFSET-04, ``RebalanceImpl#removeUnnecessaryMessageQueue``; ``ConsumeMessageConcurrentlyService.ConsumeRequest``
  consumes nothing of a dropped process queue), and a client that crashed consumes nothing more.
- A consumer that shut down holds no queue: its last assignment is empty (OFFSET-04: it unregisters and the
  group rebalances at once); a crashed one is given none.
- A 4.x consumer's committed offset never passes a message it is still to consume: a message is not delivered
  again from its own queue to the client that committed past it while that client keeps the queue
  (OFFSET-03: the offset is the first message the process queue still holds, RETRY-CONC-03: a message whose
  send-back failed stays in it and is consumed again locally).
- An orderly message whose publish towards the DLQ fails is consumed again with its reconsume times one higher
  (ORDER-4X-03); at a maximum of -2 the Java client dead-letters at once, the C++ client retries (RETRY-CONC-06,
  SDK-CPP-01).
- Each delivery's ``since_previous_ms`` is the time since the previous delivery of that message to the group.
- A 5.x consumer of a group the proxy refuses is refused, simple and push alike (LIMIT-02); a simple consumer's
  ack is logged when the proxy takes it, not when it refuses an expired handle (RETRY-5X-09); a handle that
  was acked, forwarded to the DLQ or never given is refused and changes nothing, and an acked one is refused from
  the very millisecond its time ends (RETRY-5X-07, RETRY-5X-09); a receive takes at most the messages it asks
  for (RETRY-5X-06); a live push consumer that holds nothing leaves the model's clock idle (RETRY-5X-09: only a
  client holding renewed handles is watched for going offline).

The mutation run imports the model from its scratch copy (``reference_rule``)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.targets import reference_target
from history.outcomes import NotApplicable
from history.profiles import GRPC_5X, REMOTING_4X
from history.values import ListenerOutcome
from reference_impl.model.simulation import Simulation
from reference_impl.rules import codes, cpp4x, retry4x
from reference_impl.rules.codes import RocketMQError
from spec.versions import LATEST
from suites import strategies
from suites.programs import run_program

pytestmark = [pytest.mark.reference_rule,
              pytest.mark.spec("ALLOC-00", "ALLOC-01", "OFFSET-03", "OFFSET-04", "RETRY-5X-06", "RETRY-5X-07",
                               "RETRY-5X-09", "RETRY-CONC-03", "RETRY-CONC-06", "ORDER-4X-03", "SDK-CPP-01",
                               "LIMIT-02")]

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def _events(profile: str, program) -> list:
    target = reference_target(profile, run_id="model-consumers", release=LATEST)
    try:
        run_program(target, program)
    except NotApplicable:
        pass
    return target.events()


def _queues(detail: dict) -> set[tuple[str, int]]:
    text = detail.get("queues", "")
    return {(t, int(q)) for t, q in (item.rsplit(":", 1) for item in text.split(",") if item)}


@SETTINGS
@given(data=st.data())
def test_a_4x_consumer_consumes_only_its_queues_and_never_below_its_committed_offset(data: st.DataObject) -> None:
    events = _events(REMOTING_4X, data.draw(strategies.programs(REMOTING_4X), label="program"))
    assigned: dict[str, set[tuple[str, int]]] = {}
    committed: dict[tuple[str, str, int], int] = {}
    for e in events:
        if e.kind == "REBALANCE":
            queues = set() if e.detail.get("crashed") == "true" else _queues(e.detail)
            for gone in assigned.get(e.client_id, set()) - queues:
                committed.pop((e.client_id, *gone), None)
            assigned[e.client_id] = queues
        elif e.kind == "OFFSET_COMMIT":
            committed[(e.client_id, e.topic, e.queue_id)] = e.queue_offset
        elif e.kind == "DELIVER":
            queue = (e.detail["stored_topic"], e.queue_id)
            assert queue in assigned.get(e.client_id, set()), \
                f"{e.client_id} was given {sorted(assigned.get(e.client_id, set()))}, consumed {queue}: {e}"
            mark = committed.get((e.client_id, *queue))
            assert mark is None or e.queue_offset >= mark, \
                f"{e.client_id} committed {queue} up to {mark}, then consumed offset {e.queue_offset} again: {e}"
    last: dict[str, object] = {}
    for e in events:
        if e.kind == "REBALANCE":
            last[e.client_id] = e
    for client, e in last.items():
        assert e.detail.get("crashed") == "true" or not _queues(e.detail), \
            f"{client} ended the program (shut down) still holding {e.detail.get('queues')}"


@SETTINGS
@given(data=st.data(), profile=st.sampled_from([REMOTING_4X, GRPC_5X]))
def test_since_previous_is_the_time_since_the_groups_previous_delivery(data: st.DataObject, profile: str) -> None:
    events = _events(profile, data.draw(strategies.programs(profile), label="program"))
    previous: dict[tuple[str, str], int] = {}
    for e in events:
        if e.kind != "DELIVER":
            continue
        key = (e.group, e.msg_id)
        want = "" if key not in previous else str(e.ts_ms - previous[key])
        assert e.detail["since_previous_ms"] == want, (e, previous.get(key))
        previous[key] = e.ts_ms


@pytest.mark.parametrize("group", ["", "CID_RMQ_SYS_ANY", "a b", "g" * 256])
def test_the_proxy_refuses_a_5x_consumer_of_a_bad_group(group: str) -> None:
    sim = Simulation(GRPC_5X, release=LATEST)
    sim.broker.create_topic("T", 1, 1)
    with pytest.raises(RocketMQError):
        sim.simple_consumer_5x(group, "T")
    with pytest.raises(RocketMQError):
        sim.push_consumer_5x(group, "T", lambda view: ListenerOutcome.SUCCESS)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(messages=st.integers(1, 4), failing=st.integers(0, 3), failures=st.integers(1, 3),
       faults=st.sampled_from([-1, 1, 2]), stop_after_ms=st.none() | st.integers(0, 12_000))
def test_a_message_consumed_again_locally_holds_the_committed_offset(
        messages: int, failing: int, failures: int, faults: int, stop_after_ms: int | None) -> None:
    """RETRY-CONC-03: when the send-back and the inner-producer fallback both fail, the client consumes the
    message again 5 s later with its reconsume times one higher, and it stays in the process queue, so the
    committed offset stays at it (OFFSET-03) until it is consumed; a consumer that shut down consumes nothing
    more (OFFSET-04)."""
    failing = min(failing, messages - 1)
    sim = Simulation(REMOTING_4X, release=LATEST)
    sim.broker.create_topic("T", 1, 1)
    sim.broker.faults.send_back_failures = faults
    sim.broker.faults.retry_republish_failures = faults
    seen: list = []

    def listener(view):
        seen.append((sim.clock.now_ms, view))
        tries = sum(1 for _, v in seen if v.msg_id == view.msg_id)
        return ListenerOutcome.RECONSUME_LATER if view.key == "bad" and tries <= failures else ListenerOutcome.SUCCESS

    consumer = sim.push_consumer_4x("G", "T", listener)
    producer = sim.producer("P")
    for i in range(messages):
        producer.send("T", b"x", key="bad" if i == failing else f"k{i}")
    if stop_after_ms is not None:
        sim.clock.advance(stop_after_ms)
        consumer.shutdown()
        stopped = sim.clock.now_ms
        assert not [v for t, v in seen if t > stopped]
    sim.clock.advance(600_000)
    events = sim.recorder.events
    if stop_after_ms is not None:
        assert not [e for e in events if e.kind == "DELIVER" and e.ts_ms > stopped], "consumed after shutdown"
        return
    local = [e for e in events if e.kind == "DELIVER" and e.key == "bad" and e.detail["stored_topic"] == "T"]
    for e0, e1 in zip(local, local[1:]):  # consumed again locally: the offset waits for it
        assert e1.ts_ms - e0.ts_ms == retry4x.LOCAL_RESUBMIT_DELAY_MS, (e0, e1)
        assert int(e1.detail["reconsume_times"]) == int(e0.detail["reconsume_times"]) + 1, (e0, e1)
        held = [c for c in events if c.kind == "OFFSET_COMMIT" and c.topic == "T" and e0.seq < c.seq < e1.seq]
        assert all(c.queue_offset <= failing for c in held), \
            f"committed past offset {failing}, still to be consumed locally: {held}"
    commits = [e.queue_offset for e in events if e.kind == "OFFSET_COMMIT" and e.topic == "T"]
    assert commits == sorted(set(commits)), f"the offset store only increases: each commit is a new offset {commits}"
    if len(local) > 1:  # the first offset the process queue holds: the message waiting to be consumed again
        held = [e.queue_offset for e in events if e.kind == "OFFSET_COMMIT" and e.topic == "T" and e.seq < local[1].seq]
        assert held and held[-1] == failing, f"before it is consumed again the offset is {failing}: {held}"
    assert commits and commits[-1] == messages, \
        f"every message consumed: the process queue is empty and the offset is the last one's + 1 (RETRY-CONC-03, " \
        f"``ProcessQueue#removeMessage``); committed {commits}"


def _one_received(sim: Simulation):
    """A simple consumer of a new group on a one-queue topic, and the view of the one message it then receives."""
    sim.broker.create_topic("T", 1, 1)
    consumer = sim.simple_consumer_5x("G", "T")
    consumer.receive(16, 10_000)  # a new group's first receive fixes where it starts (RETRY-5X-10)
    sim.producer("P").send("T", b"x", key="k")
    (view,) = consumer.receive(16, 10_000)
    return consumer, view


def test_a_simple_consumers_ack_is_logged_only_when_the_proxy_takes_it() -> None:
    """RETRY-5X-09: an ack with a live handle is OK and logged as an ACK; once the handle's invisible time has
    ended the proxy refuses it (INVALID_RECEIPT_HANDLE) and nothing is logged."""
    sim = Simulation(GRPC_5X, release=LATEST)
    consumer, view = _one_received(sim)
    acks = lambda: [e for e in sim.recorder.events if e.kind == "ACK"]  # noqa: E731
    assert consumer.ack(view) == codes.OK and len(acks()) == 1
    sim.clock.advance(20_000)
    assert consumer.ack(view) == codes.INVALID_RECEIPT_HANDLE and len(acks()) == 1


def test_a_handle_that_was_forwarded_or_acked_is_refused_and_changes_nothing() -> None:
    """RETRY-5X-07, RETRY-5X-09: forwarding a received message to the DLQ stores one dead-letter copy and takes the
    handle; forwarding or changing with it again, or with a handle never given, is INVALID_RECEIPT_HANDLE and
    stores nothing; a change gives a new handle, the ack with it takes the message."""
    sim = Simulation(GRPC_5X, release=LATEST)
    sim.broker.create_topic("T", 1, 1)
    consumer = sim.simple_consumer_5x("G", "T")
    consumer.receive(16, 10_000)  # a new group's first receive fixes where it starts (RETRY-5X-10)
    producer = sim.producer("P")
    producer.send("T", b"x", key="k1")
    producer.send("T", b"y", key="k2")
    first, second = consumer.receive(16, 10_000)
    broker = sim.broker
    dead = lambda: sum(len(q) for (t, _), q in broker.queues.items() if t == "%DLQ%G")  # noqa: E731
    assert broker.forward_in_flight_to_dlq(first.receipt_handle) == codes.OK and dead() == 1
    assert broker.forward_in_flight_to_dlq(first.receipt_handle) == codes.INVALID_RECEIPT_HANDLE and dead() == 1
    assert broker.forward_in_flight_to_dlq("rh-never-given") == codes.INVALID_RECEIPT_HANDLE and dead() == 1
    assert broker.change_invisible_duration("rh-never-given", 5_000) == (codes.INVALID_RECEIPT_HANDLE, None)
    code, handle = broker.change_invisible_duration(second.receipt_handle, 5_000)
    assert code == codes.OK and handle not in (None, second.receipt_handle)
    assert broker.ack(handle) == codes.OK and not broker.in_flight
    assert broker.change_invisible_duration(handle, 5_000) == (codes.INVALID_RECEIPT_HANDLE, None)
    sim.clock.advance(60_000)
    assert consumer.receive(16, 10_000) == [] and dead() == 1, "nothing comes back after the ack and the forward"


@pytest.mark.parametrize("fifo", [False, True])
def test_a_running_push_consumer_with_nothing_to_do_leaves_the_clock_idle(fifo: bool) -> None:
    """RETRY-5X-09: the proxy watches a client for going offline while it holds renewed handles; once a live push
    consumer has consumed everything it holds nothing, so nothing more is due on the model's clock (its settle
    and ``run_until_idle`` end there), however long the consumer stays."""
    sim = Simulation(GRPC_5X, release=LATEST)
    sim.broker.create_topic("T", 1, 1, 6, "FIFO" if fifo else "NORMAL", 1)
    sim.broker.group("G").fifo = fifo
    consumer = sim.push_consumer_5x("G", "T", lambda view: ListenerOutcome.SUCCESS)
    sim.producer("P").send("T", b"x", key="k", message_group="g" if fifo else None)
    sim.clock.advance(24 * 3_600_000)
    assert [e.key for e in sim.recorder.events if e.kind == "ACK"] == ["k"] and consumer.running
    assert sim.clock.next_due_ms() is None, f"an idle model still ticks at {sim.clock.next_due_ms()}"


def _failing_4x(sim: Simulation, **options: object) -> list:
    seen: list = []
    sim.broker.create_topic("T", 1, 1)
    sim.push_consumer_4x("G", "T", lambda view: seen.append(view) or ListenerOutcome.RECONSUME_LATER, **options)
    sim.producer("P").send("T", b"x", key="k")
    return seen


@pytest.mark.parametrize("republish_failures", [0, 1, 2])
def test_an_orderly_message_whose_dlq_publish_fails_is_consumed_again_one_higher(republish_failures: int) -> None:
    """ORDER-4X-03: at the maximum the orderly client publishes the message towards the DLQ; when that publish
    fails it suspends the queue and consumes the message again with its local reconsume times one higher,
    until a publish goes through; then the message is in %DLQ%group and the queue moves on."""
    sim = Simulation(REMOTING_4X, release=LATEST)
    sim.broker.faults.retry_republish_failures = republish_failures
    seen = _failing_4x(sim, orderly=True, max_reconsume_times=1)
    sim.clock.advance(600_000)
    assert [v.reconsume_times for v in seen] == list(range(2 + republish_failures))
    assert [e.kind for e in sim.recorder.events if e.kind == "DLQ"] == ["DLQ"]


@pytest.mark.parametrize("sdk, deliveries", [("java", 1), (cpp4x.SDK, None)])
def test_a_negative_maximum_other_than_minus_one(sdk: str, deliveries: int | None) -> None:
    """RETRY-CONC-06: the Java client takes -1 as 16 and any other value as it is, so at -2 the first send-back
    already has reconsume times at the maximum and the broker dead-letters the message; the C++ client takes
    every negative value as 16 (SDK-CPP-01) and retries."""
    sim = Simulation(REMOTING_4X, release=LATEST)
    seen = _failing_4x(sim, max_reconsume_times=-2, sdk=sdk)
    sim.clock.advance(60_000)
    dead = [e for e in sim.recorder.events if e.kind == "DLQ"]
    if deliveries is None:
        assert not dead and len(seen) >= 2, "the C++ client retries at -2 as at -1"
    else:
        assert len(seen) == deliveries and len(dead) == 1


def test_an_acked_handle_is_refused_from_the_moment_its_invisible_time_ends() -> None:
    """RETRY-5X-09: the proxy refuses a handle once it is expired, ``ReceiptHandle#isExpired`` being
    ``nextVisibleTime <= now`` (common/.../consumer/ReceiptHandle.java@rocketmq-all-5.0.0): a repeated ack is OK
    one millisecond before the handle's time ends and refused at that very millisecond."""
    sim = Simulation(GRPC_5X, release=LATEST)
    consumer, view = _one_received(sim)
    ends = sim.clock.now_ms + 10_000
    assert consumer.ack(view) == codes.OK
    sim.clock.advance(ends - 1 - sim.clock.now_ms)
    assert consumer.ack(view) == codes.OK
    sim.clock.advance(1)
    assert consumer.ack(view) == codes.INVALID_RECEIPT_HANDLE


@pytest.mark.parametrize("fifo", [False, True])
@pytest.mark.parametrize("max_messages", [1, 2, 3])
def test_a_receive_takes_at_most_the_messages_it_asks_for(fifo: bool, max_messages: int) -> None:
    """RETRY-5X-06: a receive names how many messages it takes at most (``maxMessageNum``); with more visible,
    it gets exactly that many, and the next receive the next ones, in queue order."""
    sim = Simulation(GRPC_5X, release=LATEST)
    sim.broker.create_topic("T", 1, 1, 6, "FIFO" if fifo else "NORMAL", 1)
    sim.broker.group("G").fifo = fifo
    consumer = sim.simple_consumer_5x("G", "T")
    consumer.receive(16, 10_000)  # a new group's first receive fixes where it starts (RETRY-5X-10)
    for i in range(4):
        sim.producer("P").send("T", b"x", key=f"k{i}", message_group="g" if fifo else None)
    first = consumer.receive(max_messages, 10_000)
    assert [v.key for v in first] == [f"k{i}" for i in range(max_messages)]
    if not fifo:  # a FIFO group's next receive waits for these to be acked
        second = consumer.receive(max_messages, 10_000)
        assert [v.key for v in second] == [f"k{i}" for i in range(max_messages, min(4, 2 * max_messages))]
