"""5.x topic message types (TOPIC-05): what a topic accepts, what type a message is, and who refuses a
mismatch.

A topic's type is its ``message.type`` attribute; a topic without one is NORMAL
(``TopicConfig.getTopicMessageType``). The route lists what each queue accepts; the SDK refuses a message
its queue does not accept before any request; the proxy refuses it again (``ProducerProcessor.sendMessage``
with ``DefaultTopicMessageTypeValidator``) unless the topic is a retry or DLQ topic. MIXED, accepting every
type, exists from 5.1.4.
"""
from __future__ import annotations

from collections.abc import Mapping

from spec import versions

from . import node5x
from .codes import RocketMQError
from .primitives import java_boolean_value_of

MESSAGE_PROPERTY_CONFLICT_WITH_TYPE = 40014
TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION")
MIXED_SINCE = "5.1.4"
PRIORITY_LITE_SINCE = "5.5.0"
"""PRIORITY and LITE join ``TopicMessageType`` (common/.../attribute/TopicMessageType.java@rocketmq-all-5.5.0 L31-32)."""
_RETRY_PREFIX, _DLQ_PREFIX = "%RETRY%", "%DLQ%"


def topic_types(release: str = versions.LATEST) -> tuple[str, ...]:
    """The values ``TopicMessageType`` has in the release, UNSPECIFIED included (TOPIC-05); PRIORITY and LITE
    from 5.5.0."""
    mixed = ("MIXED",) if versions.holds(release, since=MIXED_SINCE) else ()
    later = ("PRIORITY", "LITE") if versions.holds(release, since=PRIORITY_LITE_SINCE) else ()
    return ("UNSPECIFIED",) + TYPES + later + mixed


def topic_message_type(attribute: str | None, release: str = versions.LATEST) -> str:
    """``TopicConfig.getTopicMessageType``: no attribute is NORMAL; otherwise ``TopicMessageType.valueOf``,
    which refuses a name the release does not have (TOPIC-05)."""
    if attribute is None:
        return "NORMAL"
    if attribute not in topic_types(release):
        raise ValueError(f"No enum constant org.apache.rocketmq.common.attribute.TopicMessageType.{attribute}")
    return attribute


def route_accept_types(topic_type: str, release: str = versions.LATEST) -> tuple[str, ...]:
    """``RouteActivity.parseTopicMessageType``: a typed topic's queues accept that type (PRIORITY and LITE too,
    from 5.5.0); MIXED (5.1.4+) the four of ``TYPES`` only; anything else MESSAGE_TYPE_UNSPECIFIED (TOPIC-05;
    proxy/.../grpc/v2/route/RouteActivity.java#RouteActivity.parseTopicMessageType@rocketmq-all-5.5.0)."""
    if topic_type in TYPES or (topic_type in ("PRIORITY", "LITE") and versions.holds(release, since="5.5.0")):
        return (topic_type,)
    if topic_type == "MIXED" and versions.holds(release, since=MIXED_SINCE):
        return TYPES
    return ("UNSPECIFIED",)


def message_type_of(properties: Mapping[str, str], release: str = versions.LATEST) -> str:
    """The proxy's reading of a message's type from its properties (``ProducerProcessor.parseFromMessageExt``
    in 5.0.0, ``TopicMessageType.parseFromMessageProperty`` later): TRANSACTION when TRAN_MSG is "true",
    DELAY with a delay level or timer property, FIFO with a sharding key, else NORMAL (TOPIC-05). From 5.5.0
    TRAN_MSG is read by ``Boolean.parseBoolean`` ("TRUE" is true too), and a priority or a lite topic makes
    PRIORITY or LITE (common/.../attribute/TopicMessageType.java#TopicMessageType.parseFromMessageProperty
    @rocketmq-all-5.5.0 L52-69; @rocketmq-all-5.3.3 L44-59 compares with "true")."""
    later = versions.holds(release, since=PRIORITY_LITE_SINCE)
    timers = ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC") + (
        ("TIMER_DELAY_MS",) if versions.holds(release, since="5.3.3") else ())
    transaction = properties.get("TRAN_MSG")
    if java_boolean_value_of(transaction or "") if later else transaction == "true":
        return "TRANSACTION"
    if any(properties.get(name) is not None for name in timers):
        return "DELAY"
    if properties.get("__SHARDINGKEY") is not None:
        return "FIFO"
    if later and properties.get("_SYS_MSG_PRIORITY_") is not None:
        return "PRIORITY"
    if later and properties.get("__LITE_TOPIC") is not None:
        return "LITE"
    return "NORMAL"


def proxy_check(topic: str, topic_type: str, message_type: str, release: str = versions.LATEST,
                enabled: bool = True) -> None:
    """``DefaultTopicMessageTypeValidator.validate`` as the proxy calls it (``enableTopicMessageTypeCheck``,
    default true; retry and DLQ topics skipped): an UNSPECIFIED message type or one unlike the topic's
    (a MIXED topic takes any, 5.1.4+) is MESSAGE_PROPERTY_CONFLICT_WITH_TYPE (TOPIC-05)."""
    if not enabled or topic.startswith((_RETRY_PREFIX, _DLQ_PREFIX)):
        return
    mixed = topic_type == "MIXED" and versions.holds(release, since=MIXED_SINCE)
    if message_type == "UNSPECIFIED" or (message_type != topic_type and not mixed):
        if versions.holds(release, since=MIXED_SINCE):
            text = f"TopicMessageType validate failed, the expected type is {topic_type}, but actual type is {message_type}"
        else:
            text = f"TopicMessageType validate failed, topic type is {topic_type}, message type is {message_type}"
        raise RocketMQError(MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, text)


def sdk_check(topic: str, message_type: str, accepted: tuple[str, ...], sdk: str = "python") -> None:
    """The 5.x SDK's own check before a send when the settings say ``validate_message_type`` (the proxy
    says true): a type the queue does not accept is an argument error (code -1), worded per SDK
    (Python 5.1.2 ``Producer``, Java ``ProducerImpl.send0``) (TOPIC-05)."""
    if message_type in accepted:
        return
    if sdk == node5x.SDK:
        raise RocketMQError(-1, node5x.message_type_mismatch(topic, message_type, accepted))
    if sdk == "python":
        shown = ",".join(accepted)
        raise RocketMQError(-1, f"current message type not match with queue accept message types, topic:{topic}, "
                                f"message_type:{message_type}, queue access type:{shown}")
    raise RocketMQError(-1, f"Current message type not match with topic accept message types, topic={topic}, "
                            f"actualMessageType={message_type}, acceptMessageTypes=[{', '.join(accepted)}]")
