"""Bad input through the target: names, bodies, properties, batches and groups get RocketMQ's code and message."""
from __future__ import annotations

import pytest

from history.outcomes import NotApplicable
from reference_impl.rules import java5x
from reference_impl.rules.codes import RocketMQError
from spec import versions
from suites.checks import require
from suites.harness import drives_java_client_only

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
    ("grpc-5.x", dict(properties={"DELAY": "3"}, sdk="python"), 40007, "property is used by system: DELAY", "LIMIT-04"),
    ("grpc-5.x", dict(properties={"p": "v" * 16385}, sdk="python"), 43101,
     "the total size of user property is too large, max is 16384", "LIMIT-04"),
    ("grpc-5.x", dict(properties={"p": "a\x01"}, sdk="python"), 40007,
     "the value of property cannot contain control character", "LIMIT-04"),
    ("grpc-5.x", dict(tags="a|b", sdk="python"), -1, 'tag should not contain "|"', "LIMIT-04"),
    ("grpc-5.x", dict(message_group="g", delivery_timestamp_ms=5, sdk="python"), -1, "should not be set at same time",
     "LIMIT-06"),
    ("grpc-5.x", dict(message_group="g" * 64), 40006, "message group exceed the max size 64", "FIFO-07"),
    ("grpc-5.x", dict(message_group="g", delivery_timestamp_ms=5), -1, "should not be set at same time", "LIMIT-06"),
    # the proxy's route query answers with the name server's words, "No topic route info in name server for the
    # topic" (proxy/src/main/java/org/apache/rocketmq/proxy/service/route/TopicRouteService.java#TopicRouteService
    # @rocketmq-all-5.3.3), which a client passes on as they are (the Java 5.x client) or as the code's name
    ("grpc-5.x", dict(topic="Unknown"), 40402, ("not found", "No topic route info"), "TOPIC-02"),
    # the Node.js client checks little itself (SDK-NODE-05): the proxy answers what the other clients refuse
    ("grpc-5.x", dict(body=b"", sdk="nodejs"), 41302, "message body cannot be empty", "SDK-NODE-05"),
    ("grpc-5.x", dict(body=b"x" * 4194305, sdk="nodejs"), -1,
     "Message body size exceeds the threshold, max size=4194304 bytes", "SDK-NODE-05"),
    ("grpc-5.x", dict(tags="a|b", sdk="nodejs"), 40004, "tag cannot contain '|'", "SDK-NODE-05"),
    ("grpc-5.x", dict(message_group="g", delivery_timestamp_ms=5, sdk="nodejs"), -1,
     "delay/deliveryTimestamp is mutually exclusive with messageGroup", "SDK-NODE-05"),
    ("grpc-5.x", dict(properties={"DELAY": "3"}, sdk="nodejs"), 40007, "property is used by system: DELAY", "LIMIT-04"),
]


CPP_CLIENT = {  # SDK-CPP-08: what the C++ client under rocketmq-client-python 2.0.0 answers instead
    "a.b": (-1, "No route info of this topic", "SDK-CPP-08"),        # its character check is a stub
    "t" * 128: (-1, "No route info of this topic", "SDK-CPP-08"),    # its limit is 255
    b"": (-1, "the message body is empty", "SDK-CPP-08"),
    b"x" * 4194305: (-1, "the message body size over max value, MAX: 131072", "SDK-CPP-08"),
}
"""The rows the C++ client decides itself (or, with no check of its own, fails at the route); other 4.x
rows are the broker's and hold as they are."""


def cpp_client_expectation(overrides: dict, code: int, message: str, spec_id: str) -> tuple[int, str, str]:
    """A 4.x row as the C++ client meets it (SDK-CPP-08); the SDK reports every error as code -1 with the
    broker's or its own text."""
    for field in ("topic", "body"):
        if field in overrides and overrides[field] in CPP_CLIENT:
            return CPP_CLIENT[overrides[field]]
    if "properties" in overrides:  # the broker refuses each attempt; the client reports only the route (SDK-CPP-05)
        return -1, "No route info of this topic", "SDK-CPP-05"
    if overrides.get("topic") == "SCHEDULE_TOPIC_XXXX":
        raise NotApplicable("the C++ client has no forbidden-topic check of its own (SDK-CPP-08): the broker "
                            "decides, and this row checks the client's refusal")
    return -1, message, spec_id


def java_client_expectation(overrides: dict, code: int, message: str, spec_id: str) -> tuple[int, str, str]:
    """A Java 5.x row as the official Java client meets it (SDK-JAVA5-02, ``java5x.client_refusal``): it refuses a
    body over the settings' maximum, and a message type the topic ("T", NORMAL) does not accept, itself, before the
    proxy could answer."""
    body = overrides.get("body")
    fifo = overrides.get("message_group") is not None and overrides.get("delivery_timestamp_ms") is None
    refused = java5x.client_refusal(len(body) if isinstance(body, bytes) else 1, "FIFO" if fifo else "NORMAL",
                                    ["NORMAL"])
    return (*refused, "SDK-JAVA5-02") if refused else (code, message, spec_id)


def _alternatives(message: str | tuple[str, ...]) -> tuple[str, ...]:
    """The words an error may carry: one text, or a row's alternatives (the server's own, a client's)."""
    return message if isinstance(message, tuple) else (message,)


@pytest.mark.spec("LIMIT-01", "LIMIT-03", "LIMIT-04", "LIMIT-06", "FIFO-07", "TOPIC-02", "SDK-CPP-05", "SDK-CPP-08",
                  "SDK-NODE-05", "SDK-JAVA5-02")
@pytest.mark.parametrize("profile,overrides,code,message,spec_id", BAD_INPUT,
                         ids=[f"{p}-{s}-{i}" for i, (p, _, _, _, s) in enumerate(BAD_INPUT)])
def test_bad_input_gets_rocketmq_code_and_message(make_target, profile, overrides, code, message, spec_id):
    target = make_target(profile)
    if profile == "remoting-4.x" and "sdk.cpp4x" in target.capabilities:
        code, message, spec_id = cpp_client_expectation(overrides, code, message, spec_id)
    if profile == "grpc-5.x" and overrides.get("sdk", "java") == "java" and drives_java_client_only(target):
        code, message, spec_id = java_client_expectation(overrides, code, message, spec_id)
    target.create_topic("T")
    args = {"topic": "T", "body": b"x"}
    args.update(overrides)
    sdk = args.pop("sdk", "java")
    producer = target.producer(sdk=sdk) if profile == "grpc-5.x" else target.producer()
    topic, body = args.pop("topic"), args.pop("body")
    with pytest.raises(RocketMQError) as err:
        producer.send(topic, body, key="bad", **args)
    require(err.value.code == code and any(m in err.value.message for m in _alternatives(message)), spec_id,
            f"{overrides}: got ({err.value.code}, {err.value.message!r}), want ({code}, {message!r})")
    if "inspect.broker" in target.capabilities:
        require(not target.stored_messages(topic), spec_id, "a rejected message was stored")


@pytest.mark.spec("LIMIT-02")  # not SDK-CPP-08 too: a client habit holds in every release, LIMIT-02 from 4.9.8
@pytest.mark.parametrize("profile,group,code,message", [
    ("remoting-4.x", "g.x", -1, "contains illegal characters"),
    ("remoting-4.x", "g" * 256, -1, "longer than group max length 255"),
    ("grpc-5.x", "g" * 256, 40003, None),  # 255 until 5.3.3, 120 from 5.5.0
    ("grpc-5.x", "CID_RMQ_SYS_TRANS", 40003, "cannot use system consumer group"),
    ("grpc-5.x", "CID_RMQ_SYS_" + "x" * 250, 40003, None),  # which check answers depends on the release
])
def test_bad_group_names(make_target, profile, group, code, message, rmq_release):
    if message is None:  # 5.0.0's proxy checks for a system group first; from 5.1.0 checkGroup comes first
        too_long = ("longer than group max length: 120." if versions.holds(rmq_release, since="5.5.0")
                    else "longer than group max length 255.")
        message = ("cannot use system consumer group"
                   if group.startswith("CID_RMQ_SYS_") and versions.holds(rmq_release, until="5.0.0") else too_long)
    from history.values import ListenerOutcome

    target = make_target(profile)
    target.create_topic("T")
    if profile == "remoting-4.x" and "sdk.cpp4x" in target.capabilities and group == "g.x":
        # SDK-CPP-08: the C++ client's character check is a stub, and a 4.x broker checks no group name
        target.push_consumer_4x(group, "T", lambda v: ListenerOutcome.SUCCESS)
        return
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
