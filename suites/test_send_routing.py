"""Producer sends through the target: retries and where they go, flow control, group routing, bad input."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.profiles import BROKER_PROFILES
from reference_impl.rules.codes import RocketMQError
from suites.checks import require

FAULTS = ["unreachable", "timeout", "timeout_after_store", "system_busy", "system_error", "flush_disk_timeout",
          "message_illegal"]
RETRIED_4X = {"unreachable", "system_error", "timeout"}  # timeouts are retried but exhaust the 3 s budget


def _attempts(result_or_error) -> list[tuple[str, str]]:
    return [tuple(a.split(":", 1)) for a in result_or_error]


def _send_events(target, key):
    return [e for e in target.events() if e.key == key and e.kind in ("SEND_OK", "SEND_FAIL", "SEND_UNKNOWN")]


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-01", "SEND-4X-02", "SEND-4X-03", "SEND-4X-04", "QSEL-02", "QSEL-03", "CLAIM-05")
@given(faults=st.lists(st.tuples(st.sampled_from(["broker-a", "broker-b"]), st.sampled_from(FAULTS),
                                 st.integers(1, 3)), max_size=4),
       sends=st.integers(1, 4))
def test_sync_send_retry_goes_to_another_broker(make_target, faults, sends):
    """Sync: at most 3 attempts in a 3 s budget, each to the other broker, retried only as the spec says."""
    target = make_target()
    target.create_topic("T", read_queues=2, write_queues=2, brokers=2)
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
        for i_, o in enumerate(outcomes[:-1]):
            require(o in ("remoting", "1", "timeout"), "SEND-4X-02",
                    f"attempt {i_ + 1} ended {o} but the loop went on: {attempts}")
        last = outcomes[-1]
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
    require(len(stored) == 1, "SEND-4X-02", f"{len(stored)} copies stored; one attempt then the budget is gone")
    event = _send_events(target, "d")[0]
    require(event.kind == "SEND_UNKNOWN", "SEND-4X-02", "a stored-but-timed-out send is indeterminate")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("SEND-4X-05", "SEND-4X-01", "CLAIM-10")
def test_async_and_oneway(make_target):
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


@pytest.mark.spec("FIFO-01", "FIFO-03", "QSEL-04")
@pytest.mark.parametrize("profile", BROKER_PROFILES)
@given(groups=st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20),
                       min_size=1, max_size=5), per_group=st.integers(1, 4))
def test_message_group_routing(make_target, profile, groups, per_group):
    """Every message of a group lands on one queue. Which queue is pinned by the catalog vectors below and
    by the JVM cross-check of the hash functions (suites/test_java_primitives.py)."""
    target = make_target(profile)
    target.require("observe.queue_id")
    target.create_topic("T", read_queues=8, write_queues=8)
    producer = target.producer()
    for g in groups:
        for _ in range(per_group):
            producer.send("T", b"x", key=g, message_group=g)
    for g in groups:
        queues = {e.queue_id for e in target.events() if e.kind == "SEND_OK" and e.message_group == g}
        require(len(queues) == 1, "FIFO-01" if profile == "grpc-5.x" else "FIFO-03", f"group {g!r} spread over {queues}")


CATALOG_ROUTES = [("grpc-5.x", "order-1", 4, 3), ("grpc-5.x", "order-2", 16, 11), ("grpc-5.x", "user-42", 2, 1),
                  ("grpc-5.x", "order-2", 4, 2), ("remoting-4.x", "order-1", 8, 6), ("remoting-4.x", "order-2", 8, 5),
                  ("remoting-4.x", "Aa", 8, 0)]


@pytest.mark.spec("FIFO-01", "FIFO-03")
@pytest.mark.parametrize("profile,group,queues,want", CATALOG_ROUTES)
def test_catalog_group_routing_through_the_target(make_target, profile, group, queues, want):
    target = make_target(profile)
    target.require("observe.queue_id")
    target.create_topic("T", read_queues=queues, write_queues=queues)
    result = target.producer().send("T", b"x", key=group, message_group=group)
    require(result.queue_id == want, "FIFO-01" if profile == "grpc-5.x" else "FIFO-03",
            f"{group} on {queues} queues went to {result.queue_id}, the catalog says {want}")


BAD_INPUT = [
    ("remoting-4.x", dict(topic="a.b"), -1, "illegal characters", "LIMIT-01"),
    ("remoting-4.x", dict(topic="t" * 128), -1, "longer than topic max length 127", "LIMIT-01"),
    ("remoting-4.x", dict(topic="SCHEDULE_TOPIC_XXXX"), -1, "is forbidden", "LIMIT-01"),
    ("remoting-4.x", dict(body=b"x" * 4194305), 13, "the message body size over max value", "LIMIT-03"),
    ("remoting-4.x", dict(body=b""), 13, "the message body length is zero", "LIMIT-03"),
    ("remoting-4.x", dict(properties={"p": "v" * 40000}), 13, "msg properties length limit 32KB", "LIMIT-04"),
    ("grpc-5.x", dict(topic="rmq_sys_x"), 40002, "cannot access system topic", "LIMIT-01"),
    ("grpc-5.x", dict(body=b"x" * 4194305), 41301, "cannot exceed", "LIMIT-03"),
    ("grpc-5.x", dict(body=b"", sdk="python"), -1, "body should not be blank.", "LIMIT-03"),
    ("grpc-5.x", dict(properties={"DELAY": "3"}, sdk="python"), 40007, "not allowed", "LIMIT-04"),
    ("grpc-5.x", dict(properties={"p": "v" * 16385}, sdk="python"), 43101, "exceeds", "LIMIT-04"),
    ("grpc-5.x", dict(tags="a|b", sdk="python"), -1, 'tag should not contain "|"', "LIMIT-04"),
    ("grpc-5.x", dict(message_group="g", delivery_timestamp_ms=5, sdk="python"), -1, "should not be set at same time",
     "LIMIT-06"),
    ("grpc-5.x", dict(message_group="g" * 64), 40006, "is illegal", "FIFO-07"),
    ("grpc-5.x", dict(message_group="g", delivery_timestamp_ms=5), -1, "should not be set at same time", "LIMIT-06"),
    ("grpc-5.x", dict(topic="Unknown"), 40402, "not found", "TOPIC-02"),
]


@pytest.mark.spec("LIMIT-01", "LIMIT-03", "LIMIT-04", "LIMIT-06", "FIFO-07", "TOPIC-02")
@pytest.mark.parametrize("profile,overrides,code,message,spec_id", BAD_INPUT,
                         ids=[f"{p}-{s}-{i}" for i, (p, _, _, _, s) in enumerate(BAD_INPUT)])
def test_bad_input_gets_rocketmq_code_and_message(make_target, profile, overrides, code, message, spec_id):
    target = make_target(profile)
    target.create_topic("T")
    args = {"topic": "T", "body": b"x"}
    args.update(overrides)
    sdk = args.pop("sdk", "java")
    producer = target.producer(sdk=sdk) if profile == "grpc-5.x" else target.producer()
    topic, body = args.pop("topic"), args.pop("body")
    with pytest.raises(RocketMQError) as err:
        producer.send(topic, body, key="bad", **args)
    require(err.value.code == code and message in err.value.message, spec_id,
            f"{overrides}: got ({err.value.code}, {err.value.message!r}), want ({code}, {message!r})")
    if "inspect.broker" in target.capabilities:
        require(not target.stored_messages(topic), spec_id, "a rejected message was stored")


@pytest.mark.spec("LIMIT-02")
@pytest.mark.parametrize("profile,group,code,message", [
    ("remoting-4.x", "g.x", -1, "contains illegal characters"),
    ("remoting-4.x", "g" * 256, -1, "longer than group max length 255"),
    ("grpc-5.x", "g" * 121, 40003, "longer than group max length 120"),
    ("grpc-5.x", "CID_RMQ_SYS_TRANS", 40003, "cannot use system consumer group"),
])
def test_bad_group_names(make_target, profile, group, code, message):
    from history.values import ListenerOutcome

    target = make_target(profile)
    target.create_topic("T")
    with pytest.raises(RocketMQError) as err:
        if profile == "remoting-4.x":
            target.push_consumer_4x(group, "T", lambda v: ListenerOutcome.SUCCESS)
        else:  # a proxy answers a bad group at the first request that names it
            target.simple_consumer_5x(group, "T").receive(16, 30_000)
    require(err.value.code == code and message in err.value.message, "LIMIT-02",
            f"group {group[:20]!r}: got ({err.value.code}, {err.value.message!r})")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("DELAY-07", "LIMIT-05")
def test_bad_batches_get_the_client_error(target):
    from reference_impl.rules.delay import BatchRejected

    target.create_topic("T")
    for batch, text in ([{"topic": "T"}, {"topic": "T", "delay_level": 2}], "TimeDelayLevel is not supported"), \
                       ([{"topic": "T"}, {"topic": "U"}], "should be the same"):
        with pytest.raises(BatchRejected) as err:
            target.producer().send_batch(batch)
        require(err.value.code == -1 and err.value.message.startswith("Failed to initiate the MessageBatch") and
                text in err.value.message, "DELAY-07", f"{err.value.message}")
    with pytest.raises(RocketMQError) as big:
        target.producer().send_batch([{"topic": "T", "body": b"x" * 5000}] * 1000)
    require(big.value.code == 13, "LIMIT-05", f"oversized batch: {big.value}")
    require(not target.stored_messages("T"), "LIMIT-05", "a rejected batch stored messages")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("TOPIC-02")
def test_unknown_topic_is_auto_created_with_four_queues(target):
    target.create_topic("TBW102", read_queues=8, write_queues=8, perm=7)
    result = target.producer().send("Fresh", b"x", key="k")
    require(result.status == "SEND_OK", "TOPIC-02", f"send to a new topic: {result}")
    queues = {m["queue_id"] for m in target.stored_messages("Fresh")}
    require(queues <= set(range(4)), "TOPIC-02", f"new topic got queues {queues}, the spec says 4")
