"""Producer sends through the target: retries and where they go, flow control per SDK."""
from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.outcomes import NotApplicable
from reference_impl.rules import queue_selection as qsel_rules
from reference_impl.rules import send as send_rules
from reference_impl.rules.codes import RocketMQError
from suites.checks import require

FAULTS = ["unreachable", "timeout", "timeout_after_store", "system_busy", "system_error", "flush_disk_timeout",
          "message_illegal"]


def _attempts(result_or_error) -> list[tuple[str, str]]:
    return [tuple(a.split(":", 1)) for a in result_or_error]


def _send_events(target, key):
    return [e for e in target.events() if e.key == key and e.kind in ("SEND_OK", "SEND_FAIL", "SEND_UNKNOWN")]


def _faults_here(target) -> list[str]:
    """The send faults this target can inject (``rmqc serve``'s brokers show a real client all but
    ``unreachable``); none: not applicable."""
    outcomes = [o for o in FAULTS if o in target.send_fault_outcomes()]
    if not outcomes:
        target.require("fault.send")
    return outcomes


def _attempts_at_the_budgets_edge(target, event, attempts: list[tuple[str, str]]) -> bool:
    """Whether attempts followed a timed-out one that used the budget to the millisecond: the 4.9.8 loop stops only
    when the cost is past the budget (``timeout < costTime``) and ``NettyRemotingClient.invokeSync`` still writes a
    request with 0 ms left (both strict at rocketmq-all-4.9.8), so each later attempt is written and not waited for,
    and the broker may store or refuse it after the client gave up (seen through the Java 4.x client against rmqc
    serve and a real 5.5.0 cluster, under load: ``[broker-b:timeout, broker-a:13]``, the send failed as timed out).
    SEND-4X-02 forbids a retry with a budget of its own: the send would last two budgets (the client's timer, in the
    target's milliseconds). A client that logs no invocation gets no such allowance."""
    if "timeout" not in [o for _, o in attempts[:-1]]:
        return False
    invoked = [e.ts_ms for e in target.events() if e.key == event.key and e.kind == "SEND_INVOKE"]
    return bool(invoked) and event.ts_ms - invoked[0] < 2 * send_rules.SEND_MSG_TIMEOUT_MS * target.client_timer_scale


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-01", "SEND-4X-02", "SEND-4X-03", "SEND-4X-04", "QSEL-02", "QSEL-03", "CLAIM-05")
@given(data=st.data(), sends=st.integers(1, 4))
def test_sync_send_retry_goes_to_another_broker(make_target, data, sends):
    """Sync: at most 3 attempts in a 3 s budget, each to the other broker, retried only as the spec says."""
    target = make_target()
    target.create_topic("T", read_queues=2, write_queues=2, brokers=2)
    counts = getattr(target, "send_fault_counts", lambda: (1, 2, 3))()  # a real broker's faults last: -1
    faults = data.draw(st.lists(st.tuples(st.sampled_from(["broker-a", "broker-b"]),
                                          st.sampled_from(_faults_here(target)), st.sampled_from(counts)),
                                max_size=4),
                       label="faults")
    for broker, outcome, count in faults:
        target.inject_send_fault(broker, outcome, count)
    producer = target.producer()
    for i in range(sends):
        key = f"k{i}"
        try:
            producer.send("T", b"x", key=key)
        except RocketMQError:
            pass
        (event,) = _send_events(target, key)
        attempts = [tuple(a.split(":", 1)) for a in event.detail["attempts"].split(",")]
        require(1 <= len(attempts) <= 3, "SEND-4X-01", f"{len(attempts)} attempts: {attempts}")
        for (b1, _), (b2, _) in zip(attempts, attempts[1:]):
            require(b1 != b2, "QSEL-02", f"a retry went to the broker that just failed: {attempts}")
        outcomes = [o for _, o in attempts]
        last = outcomes[-1]
        if _attempts_at_the_budgets_edge(target, event, attempts):
            # the client waited for none of the answers after its timed-out attempt: the send ends as timed out,
            # unless the last 0 ms attempt was answered stored before the client read its clock
            first_timeout = outcomes.index("timeout")
            require(all(o in ("remoting", "1") for o in outcomes[:first_timeout]), "SEND-4X-02",
                    f"an attempt before the timeout ended otherwise, yet the loop went on: {attempts}")
            require(event.kind in ("SEND_FAIL", "SEND_UNKNOWN") or (last == "0" and event.kind == "SEND_OK"),
                    "SEND-4X-02", f"attempts at the budget's edge {attempts} -> {event.kind}")
            continue
        for i_, o in enumerate(outcomes[:-1]):
            require(o in ("remoting", "1", "timeout"), "SEND-4X-02",
                    f"attempt {i_ + 1} ended {o} but the loop went on: {attempts}")
        if last == "0":
            require(event.kind == "SEND_OK", "SEND-4X-04", f"{attempts} -> {event.kind}")
        if last == "timeout":
            require(event.kind in ("SEND_FAIL", "SEND_UNKNOWN"), "SEND-4X-02", f"timeout then {event.kind}")
        if last in ("2", "13"):
            require(event.kind == "SEND_FAIL" and event.detail["code"] == last, "SEND-4X-03",
                    f"code {last} must be thrown at once in 4.9.8: {event.kind} {dict(event.detail)}")
        if last == "10":
            require(event.kind == "SEND_OK" and event.detail["status"] == "FLUSH_DISK_TIMEOUT", "SEND-4X-04",
                    f"FLUSH_DISK_TIMEOUT must be returned, not retried: {dict(event.detail)}")
        if "timeout" in outcomes[:-1]:
            raise AssertionError(f"[SEND-4X-02] a timeout used the whole budget, yet the loop went on: {attempts}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-02", "SEND-4X-03")
@pytest.mark.parametrize("version,attempts,ok", [("4.9.8", 1, False), ("5.3.0", 2, True)])
def test_system_busy_is_retried_from_530(make_target, version, attempts, ok):
    target = make_target()
    target.create_topic("T", brokers=2)
    target.inject_send_fault("broker-a", "system_busy", -1)
    target.inject_send_fault("broker-b", "system_busy", -1)
    target.inject_send_fault("broker-b", "system_busy", 0)
    producer = target.producer(version=version)
    sent = []
    for i in range(2):  # one of the first two sends starts on each broker
        try:
            sent.append(producer.send("T", b"x", key=f"k{i}"))
        except RocketMQError as exc:
            require(exc.code == 2, "SEND-4X-03", f"unexpected code {exc.code}")
    events = [e for e in target.events() if e.kind in ("SEND_OK", "SEND_FAIL")]
    counts = [len(e.detail["attempts"].split(",")) for e in events]
    require(max(counts) == (1 if version == "4.9.8" else 3), "SEND-4X-03", f"{version}: attempts {counts}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-02")
def test_timeout_after_store_duplicates(make_target):
    """A broker that stores and then times out: the producer sees an error, the message is stored (002 seed)."""
    target = make_target()
    target.create_topic("T", brokers=2)
    target.inject_send_fault("broker-a", "timeout_after_store", -1)
    target.inject_send_fault("broker-b", "timeout_after_store", -1)
    with pytest.raises(RocketMQError, match="sendDefaultImpl call timeout|still failed"):
        target.producer().send("T", b"x", key="d")
    stored = target.stored_messages("T")
    # the loop breaks only when the cost is past the budget (``timeout < costTime``) and a request with 0 ms left
    # is still written (``NettyRemotingClient.invokeSync``: ``timeoutMillis < costTime``, both strict at
    # rocketmq-all-4.9.8): a first attempt that timed out after exactly the budget, to the millisecond, is followed
    # by a second with 0 ms, which the broker may store too. Never a third.
    require(1 <= len(stored) <= 2, "SEND-4X-02", f"{len(stored)} copies stored; one attempt then the budget is gone")
    event = _send_events(target, "d")[0]
    require(event.kind == "SEND_UNKNOWN", "SEND-4X-02", "a stored-but-timed-out send is indeterminate")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-05", "CLAIM-10")
def test_async_send_retries_transport_failures_on_another_broker(make_target):
    target = make_target()
    target.create_topic("T", brokers=2)
    target.inject_send_fault("broker-a", "unreachable", 1)
    target.inject_send_fault("broker-b", "unreachable", 1)
    producer = target.producer()
    producer.send("T", b"x", key="a1", mode="async")
    attempts = _send_events(target, "a1")[0].detail["attempts"].split(",")
    require(len(attempts) == 3 and attempts[-1].endswith(":0"), "SEND-4X-05", f"async attempts {attempts}")
    require(attempts[0].split(":")[0] != attempts[1].split(":")[0], "CLAIM-10",
            f"async retry went to the same broker: {attempts}")


def _warm(producer, target, prefix: str = "w", tries: int = 8) -> None:
    """Sends until the client has sent to both brokers: its route names them both before a fault comes (a killed
    broker leaves the name server's routes at once; the client learns that only at its next poll)."""
    seen: set[str] = set()
    for i in range(tries):
        producer.send("T", b"w", key=f"{prefix}{i}")
        (event,) = _send_events(target, f"{prefix}{i}")
        seen |= {b for b, _ in _attempts(event.detail["attempts"].split(","))}
        if {"broker-a", "broker-b"} <= seen:
            return
    raise NotApplicable(f"{target.name}: {tries} sends reached only {sorted(seen)}")


def _first_attempt_on(producer, target, broker: str, prefix: str, mode: str = "sync", tries: int = 8):
    """Sends until one's first attempt went to ``broker`` (the client's queue round robin reaches it within a few):
    that send's attempts, and the keys sent before it."""
    for i in range(tries):
        key = f"{prefix}{i}"
        try:
            producer.send("T", b"x", key=key, mode=mode)
        except RocketMQError:
            pass
        (event,) = _send_events(target, key)
        attempts = _attempts(event.detail["attempts"].split(","))
        if attempts and attempts[0][0] == broker:
            return event, attempts
    raise NotApplicable(f"{tries} sends never began on {broker}: the client's route did not name it "
                        f"({[dict(e.detail).get('attempts') for e in target.events() if e.key and e.key.startswith(prefix)]})")


def _later_sends_avoid_broker_a(producer, target, since: float, sends: int, isolated_for_ms: int, how: str) -> None:
    """SEND-4X-06: ``sends`` more sends, each only on broker-b while broker-a is isolated; inconclusive when they
    outlasted the isolation."""
    for i in range(sends):
        producer.send("T", b"x", key=f"after{i}")
        (later,) = _send_events(target, f"after{i}")
        tried = _attempts(later.detail["attempts"].split(","))
        require(all(b == "broker-b" for b, _ in tried), "SEND-4X-06",
                f"send after{i}, {1000 * (time.monotonic() - since):.0f} ms after broker-a {how}: {tried}")
    elapsed_ms = 1000 * (time.monotonic() - since)
    require(elapsed_ms < isolated_for_ms, "SEND-4X-06",
            f"inconclusive: the sends took {elapsed_ms:.0f} ms, past the isolation of {isolated_for_ms} ms")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-05", "CLAIM-10")
def test_async_send_retries_a_lasting_transport_failure_on_another_broker(make_target):
    """A broker that takes no connection for the whole test (a real broker killed; ``unreachable`` on every
    attempt): an async send whose first attempt meets it is retried at once, on the other broker (CLAIM-10), and
    stored there (SEND-4X-05's transport-failure retry)."""
    target = make_target()
    target.create_topic("T", read_queues=2, write_queues=2, brokers=2)
    if "unreachable" not in _faults_here(target):
        raise NotApplicable(f"{target.name}: no broker can be made unreachable here")
    producer = target.producer()
    _warm(producer, target)
    target.inject_send_fault("broker-a", "unreachable", -1)
    event, attempts = _first_attempt_on(producer, target, "broker-a", "u", mode="async")
    # a client whose hooks see an async attempt only as dispatched (the Java client's: ``sent``) shows its failure
    # by the retry that follows it
    require(attempts[0][1] in ("remoting", "timeout", "sent"), "SEND-4X-05", f"the first attempt met {attempts[0]}")
    require(len(attempts) >= 2 and attempts[1][0] != "broker-a", "CLAIM-10",
            f"the async retry went to the same broker, or none came: {attempts}")
    require(attempts[-1][1] == "0" and event.kind == "SEND_OK", "SEND-4X-05",
            f"the retry on the other broker was not stored: {event.kind} {attempts}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-06", "SEND-4X-07", "QSEL-02")
def test_latency_fault_tolerance_keeps_sends_off_a_dead_broker(make_target):
    """With ``sendLatencyFaultEnable``, a broker that refused a connection (a real broker killed: ``unreachable``
    on every attempt) is isolated on the client's clock (SEND-4X-06): the failed attempt's retry (SEND-4X-07) and
    every later send within the isolation go to the other broker."""
    target = make_target()
    target.require("send.latency_fault")
    target.create_topic("T", read_queues=2, write_queues=2, brokers=2)
    if "unreachable" not in _faults_here(target):
        raise NotApplicable(f"{target.name}: no broker can be made unreachable here")
    producer = target.producer(send_latency_fault_enable=True)
    _warm(producer, target)
    target.inject_send_fault("broker-a", "unreachable", -1)
    event, attempts = _first_attempt_on(producer, target, "broker-a", "l")
    failed_at = time.monotonic()
    require(attempts[1:] and all(b == "broker-b" for b, _ in attempts[1:]), "SEND-4X-07",
            f"the retry after broker-a's failure went back to it: {attempts}")
    isolated_for_ms = min(qsel_rules.not_available_duration(0, v, isolation=True) for v in ("4.9.8", "5.1.4"))
    _later_sends_avoid_broker_a(producer, target, failed_at, 6, isolated_for_ms, "failed")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-06", "SEND-4X-02")
def test_latency_fault_tolerance_keeps_sends_off_a_stalled_broker(make_target):
    """A broker that answers nothing for the whole test (a real broker stalled with SIGSTOP; ``timeout`` on every
    attempt) stays in the name server's routes: a send whose attempt times out has used its budget and is not
    retried (SEND-4X-02), and with ``sendLatencyFaultEnable`` the latency it cost isolates the broker on the
    client's clock (SEND-4X-06), so the next sends go to the other one."""
    target = make_target()
    target.require("send.latency_fault")
    target.create_topic("T", read_queues=2, write_queues=2, brokers=2)
    if "timeout" not in _faults_here(target):
        raise NotApplicable(f"{target.name}: no broker can be made to time out here")
    producer = target.producer(send_latency_fault_enable=True)
    _warm(producer, target)
    target.inject_send_fault("broker-a", "timeout", -1)
    event, attempts = _first_attempt_on(producer, target, "broker-a", "s")
    stalled_at = time.monotonic()
    require(attempts[0] == ("broker-a", "timeout") and (
        attempts[1:] == [] and event.kind in ("SEND_FAIL", "SEND_UNKNOWN")
        or _attempts_at_the_budgets_edge(target, event, attempts)), "SEND-4X-02",
            f"a timed-out attempt used the budget, yet: {event.kind} {attempts}")
    isolated_for_ms = min(qsel_rules.not_available_duration(3000, v) for v in ("4.9.8", "5.1.4"))
    _later_sends_avoid_broker_a(producer, target, stalled_at, 4, isolated_for_ms, "timed out")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-05", "SEND-4X-01")
def test_async_send_does_not_retry_a_broker_error_and_oneway_sends_once(make_target):
    """A broker's error answer ends an async send at once; a one-way send is one attempt, never known."""
    target = make_target()
    target.create_topic("T", brokers=2)
    _faults_here(target)
    producer = target.producer()
    target.inject_send_fault("broker-a", "system_error", -1)
    target.inject_send_fault("broker-b", "system_error", -1)
    with pytest.raises(RocketMQError):
        producer.send("T", b"x", key="a2", mode="async")
    require(len(_send_events(target, "a2")[0].detail["attempts"].split(",")) == 1, "SEND-4X-05",
            "a broker error response is not retried by async sends")
    producer.send("T", b"x", key="o1", mode="oneway")
    (oneway,) = _send_events(target, "o1")
    require(oneway.kind == "SEND_UNKNOWN" and len(oneway.detail["attempts"].split(",")) == 1, "SEND-4X-01",
            f"oneway: {oneway.kind} {dict(oneway.detail)}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-06", "SEND-4X-07", "QSEL-02")
def test_latency_fault_tolerance_keeps_sends_off_a_failed_broker(make_target):
    """With ``sendLatencyFaultEnable`` a broker error isolates its broker for ``not_available_duration`` of an
    isolation (600 s up to 5.1.3, 10 s from 5.1.4, on the client's clock): while that lasts, the retry and every
    later send take the first queue of an available broker (SEND-4X-07), so none goes back to it. Without the
    setting, the round robin would come back to it within two sends (QSEL-01)."""
    target = make_target()
    target.require("send.latency_fault")
    target.create_topic("T", read_queues=2, write_queues=2, brokers=2)
    _faults_here(target)
    target.inject_send_fault("broker-a", "system_error", 1)
    producer = target.producer(send_latency_fault_enable=True)
    isolated_for_ms = min(qsel_rules.not_available_duration(0, v, isolation=True) for v in ("4.9.8", "5.1.4"))
    failed_at = None
    for i in range(8):  # the queue round robin reaches broker-a within 3 sends
        producer.send("T", b"x", key=f"l{i}")
        (event,) = _send_events(target, f"l{i}")
        attempts = _attempts(event.detail["attempts"].split(","))
        if failed_at is None:
            if attempts[0] == ("broker-a", "1"):
                failed_at = time.monotonic()
                require(attempts[1:] and all(b == "broker-b" for b, _ in attempts[1:]), "SEND-4X-07",
                        f"the retry after broker-a's error went back to it: {attempts}")
            continue
        require(all(b == "broker-b" for b, _ in attempts), "SEND-4X-06",
                f"send l{i}, {1000 * (time.monotonic() - failed_at):.0f} ms after broker-a's error: {attempts}")
    if failed_at is None:
        raise AssertionError(f"[SEND-4X-07] 8 sends never reached broker-a: {[e.detail for e in target.events()]}")
    elapsed_ms = 1000 * (time.monotonic() - failed_at)
    require(elapsed_ms < isolated_for_ms, "SEND-4X-06",
            f"inconclusive: the sends took {elapsed_ms:.0f} ms, past the isolation of {isolated_for_ms} ms")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("SEND-5X-01", "SEND-5X-02", "SEND-5X-03", "CLAIM-06")
@pytest.mark.parametrize("sdk,attempts,elapsed", [("java", 3, 60), ("python", 1, 0)])
def test_flow_control_per_sdk(make_target, sdk, attempts, elapsed):
    """42900 from every broker: Java waits 20 ms then 40 ms between 3 attempts; Python gives up at once."""
    target = make_target()
    target.create_topic("T", brokers=3)
    for broker in ("broker-a", "broker-b", "broker-c"):
        target.inject_send_fault(broker, "system_busy", -1)
    start = target.now_ms()
    with pytest.raises(RocketMQError) as err:
        target.producer(sdk=sdk).send("T", b"x", key="f")
    require(err.value.code == 42900, "SEND-5X-03", f"code {err.value.code}, not TOO_MANY_REQUESTS 42900")
    event = _send_events(target, "f")[0]
    tried = event.detail["attempts"].split(",")
    require(len(tried) == attempts, "SEND-5X-01" if sdk == "java" else "SEND-5X-02", f"{sdk}: attempts {tried}")
    require(target.now_ms() - start == elapsed, "SEND-5X-01", f"{sdk}: {target.now_ms() - start} ms of back-off")
    if sdk == "java":
        require(len({t.split(":")[0] for t in tried}) == 3, "SEND-5X-01", f"Java candidates on distinct brokers: {tried}")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("SEND-5X-01", "SEND-5X-02")
@pytest.mark.parametrize("sdk", ["java", "python"])
def test_network_errors_retry_immediately(make_target, sdk):
    target = make_target()
    target.create_topic("T", brokers=2)
    target.inject_send_fault("broker-a", "unreachable", -1)
    target.inject_send_fault("broker-b", "unreachable", -1)
    start = target.now_ms()
    with pytest.raises(RocketMQError):
        target.producer(sdk=sdk).send("T", b"x", key="n")
    require(len(_send_events(target, "n")[0].detail["attempts"].split(",")) == 3, "SEND-5X-01", "3 attempts")
    require(target.now_ms() == start, "SEND-5X-01", "network errors are retried without waiting")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-04", "MSGID-02")
def test_a_send_result_names_the_message_as_it_is_stored(make_target):
    """A SUCCESS answer is SEND_OK; the result's msgId is the client's unique id the message is stored with
    (UNIQ_KEY), one per message of a batch; its queue and offset are where the message was stored."""
    target = make_target()
    target.require("observe.stored", "observe.properties", "observe.queue_id", "send.batch")
    target.create_topic("T", read_queues=4, write_queues=4)
    producer = target.producer()
    single = producer.send("T", b"one", key="s")
    batch = producer.send_batch([{"topic": "T", "body": b"b0", "key": "b0"}, {"topic": "T", "body": b"b1", "key": "b1"}])
    stored = {m.key: m for m in target.read_stored("T")}
    for key, result in (("s", single), ("b0", batch[0]), ("b1", batch[1])):
        require(result.status == "SEND_OK", "SEND-4X-04", f"{key}: a stored send answered {result.status}")
        message = stored.get(key)
        require(message is not None, "SEND-4X-04", f"{key} was answered SEND_OK but is not stored")
        require(message.properties.get("UNIQ_KEY") == result.msg_id == message.msg_id, "SEND-4X-04",
                f"{key}: result id {result.msg_id}, stored UNIQ_KEY {message.properties.get('UNIQ_KEY')}")
        require((message.queue_id, message.queue_offset) == (result.queue_id, result.queue_offset), "SEND-4X-04",
                f"{key}: result says queue {result.queue_id} offset {result.queue_offset}, stored at "
                f"{message.queue_id}/{message.queue_offset}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("QSEL-01", "QSEL-03")
def test_one_thread_of_sends_takes_the_write_queues_in_turn(make_target):
    """Sends without a sharding key from one thread: each takes the next of the topic's write queues (the
    thread's index, seeded at random, incremented per send, modulo the queue count: QSEL-01, QSEL-03)."""
    target = make_target()
    target.require("observe.queue_id")
    if "sdk.cpp4x" in target.capabilities:
        raise NotApplicable(f"{target.name}: QSEL-01 is the Java client's per-thread index; the C++ client keeps "
                            "its own")
    target.create_topic("T", read_queues=4, write_queues=4)
    producer = target.producer()
    queues = [producer.send("T", b"x", key=f"m{i}").queue_id for i in range(9)]
    require(all(q is not None and 0 <= q < 4 for q in queues), "QSEL-03", f"queues {queues}")
    require(all((b - a) % 4 == 1 for a, b in zip(queues, queues[1:])), "QSEL-01",
            f"consecutive sends went to queues {queues}; each should take the next one")


def _offset_msg_id(text: str) -> tuple[str, int, int]:
    """MSGID-01 as the catalog states it, for an IPv4 store host: 32 upper-case hex characters, 4 address bytes, a
    port (int) and a commit-log offset (long), big-endian."""
    require(len(text) == 32 and text == text.upper() and all(c in "0123456789ABCDEF" for c in text), "MSGID-01",
            f"offset message id {text!r} is not 32 upper-case hex characters")
    raw = bytes.fromhex(text)
    return ".".join(str(b) for b in raw[:4]), int.from_bytes(raw[4:8], "big"), int.from_bytes(raw[8:], "big")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("MSGID-01")
def test_a_send_result_carries_the_brokers_offset_id(make_target):
    """A 4.x send's offsetMsgId is the broker's id of the stored message: store host, port and commit-log offset;
    a later message of the same broker lies further in its commit log, and a batch answers one id per message."""
    target = make_target()
    target.require("send.batch")
    target.create_topic("T", read_queues=1, write_queues=1)
    producer = target.producer()
    first = producer.send("T", b"one", key="a")
    if first.offset_msg_id is None:
        raise NotApplicable(f"{target.name}: its client does not show the broker's offset message id")
    batch = producer.send_batch([{"topic": "T", "body": b"b0", "key": "b0"}, {"topic": "T", "body": b"b1", "key": "b1"}])
    decoded = [_offset_msg_id(r.offset_msg_id or "") for r in (first, *batch)]
    require(len({(host, port) for host, port, _ in decoded}) == 1, "MSGID-01",
            f"one broker stored them all, yet the ids name {decoded}")
    offsets = [offset for _, _, offset in decoded]
    require(offsets == sorted(offsets) and len(set(offsets)) == 3, "MSGID-01",
            f"commit-log offsets {offsets} of messages stored one after another")
