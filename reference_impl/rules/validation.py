"""Topic configuration, names and limits (TOPIC-01..04, LIMIT-01..06). Pure checks that raise
``RocketMQError`` with RocketMQ's code and message."""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Mapping, Sequence

from spec import versions

from . import codes
from .codes import RocketMQError
from .java_semantics import NAME_TABLE, java_chars_in_table, java_is_blank, java_length

PERM_PRIORITY, PERM_READ, PERM_WRITE, PERM_INHERIT = 8, 4, 2, 1
TBW102 = "TBW102"
MAX_TOPIC_LENGTH = 127
MAX_RETRY_TOPIC_LENGTH = 255
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
MAX_PROPERTIES_LENGTH = 32767
USER_PROPERTY_MAX_NUM = 128
MAX_USER_PROPERTY_SIZE = 16 * 1024
SYSTEM_TOPICS = frozenset({"TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC",
                           "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC",
                           "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"})
"""``TopicValidator.SYSTEM_TOPIC_SET`` as every covered release up to 5.1.4 has it; later releases add the
topics of ``LATER_SYSTEM_TOPICS`` (``system_topics``)."""
NOT_ALLOWED_SEND_TOPICS = frozenset({"SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
                                     "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"})
"""``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`` up to 5.3.3; 5.5.0 adds the RocksDB transaction topics
(``not_allowed_send_topics``)."""
ROCKSDB_TRANS_TOPICS = ("RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC")
LATER_SYSTEM_TOPICS = (("CHECKPOINT_TOPIC", "5.2.0"),) + tuple((t, "5.5.0") for t in ROCKSDB_TRANS_TOPICS)
"""System topics a release added, with the first release that has them (``TopicValidator``'s static block:
``RMQ_SYS_ROCKSDB_OFFSET_TOPIC`` from 5.2.0, the two RocksDB transaction topics from 5.5.0) (LIMIT-01)."""
LATER_NOT_ALLOWED_SEND_TOPICS = tuple((t, "5.5.0") for t in ROCKSDB_TRANS_TOPICS)
SYSTEM_PROPERTY_KEYS = frozenset({
    "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "TRAN_MSG",
    "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG",
    "MQ2_FLAG", "RECONSUME_TIME", "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "POP_CK",
    "POP_CK_OFFSET", "1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO", "EXTEND_UNIQ_INFO", "INSTANCE_ID",
    "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE",
    "INNER_MULTI_QUEUE_OFFSET", "TIMER_DELAY_MS", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS", "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY", "TIMER_DELAY_LEVEL", "__BORNHOST",
    "BORN_TIMESTAMP"})
"""``MessageConst.STRING_HASH_SET`` at rocketmq-all-5.0.0 (48 keys), the keys a gRPC user property may not use;
later releases add ``LATER_SYSTEM_PROPERTY_KEYS`` (``system_property_keys``). In it at no covered release, so
free for a user property: ``__SHARDINGKEY``, ``INNER_NUM``, ``INNER_BASE``, ``TRACE_CONTEXT``,
``TRANSACTION_CHECK_TIMES``, ``CHECK_IMMUNITY_TIME_IN_SECONDS``, ``__STARTDELIVERTIME``."""
LATER_SYSTEM_PROPERTY_KEYS = (("DLQ_ORIGIN_TOPIC", "5.1.0"), ("DLQ_ORIGIN_MESSAGE_ID", "5.1.0"), ("__CRC32#", "5.2.0"),
                              ("ORIGIN_GROUP", "5.5.0"), ("_SYS_MSG_PRIORITY_", "5.5.0"), ("__LITE_TOPIC", "5.5.0"))
"""Keys ``STRING_HASH_SET`` gained after 5.0.0, each with the first release that has it (LIMIT-04;
common/.../message/MessageConst.java@rocketmq-all-5.5.0 adds the last three)."""
INVALID_PARAMETER = 29
"""Remoting ``ResponseCode.INVALID_PARAMETER``."""
_NAME_PATTERN = "^[%|a-zA-Z0-9_-]+$"  # as the messages quote it; checked on NAME_TABLE, not by re
_JAVA_5X_TOPIC_PATTERN = "^[%a-zA-Z0-9_-]+$"  # Matcher.matches(): the whole name, a trailing "\n" refused
_JAVA_5X_TOPIC_TABLE = NAME_TABLE - {"|"}


def _legal_name(name: str) -> bool:
    """Not ``TopicValidator.isTopicOrGroupIllegal``: non-empty and every UTF-16 unit in the table."""
    return bool(name) and java_chars_in_table(name)


# ---- TOPIC-01..04 -----------------------------------------------------------------------------

def perm_to_string(perm: int) -> str:
    """``PermName.perm2String``: R, W, X positions (TOPIC-01)."""
    return ("R" if perm & PERM_READ else "-") + ("W" if perm & PERM_WRITE else "-") + ("X" if perm & PERM_INHERIT else "-")


def perm_valid(perm: int, version: str = versions.LATEST) -> bool:
    """``PermName.isValid`` (TOPIC-01), from 5.0.0: ``PERM_INHERIT <= perm < PERM_PRIORITY`` up to 5.1.3, then
    ``0 <= perm < PERM_PRIORITY`` (common/.../constant/PermName.java#PermName.isValid@rocketmq-all-5.1.4 L64)."""
    low = 0 if versions.holds(version, since="5.1.4") else PERM_INHERIT
    return low <= perm < PERM_PRIORITY


def writable(perm: int) -> bool:
    """Producers use writable queue data only; a non-writable broker answers NO_PERMISSION (TOPIC-01)."""
    return bool(perm & PERM_WRITE)


def readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


@dataclass(frozen=True)
class TopicConfig:
    name: str
    read_queues: int
    write_queues: int
    perm: int = PERM_READ | PERM_WRITE


def auto_create_topic(topic: str, default_topic: TopicConfig | None, client_default_queue_nums: int = 4) -> TopicConfig:
    """``createTopicInSendMessageMethod`` (TOPIC-02): copy TBW102 when it has PERM_INHERIT."""
    if topic.startswith("%RETRY%"):
        return TopicConfig(topic, 1, 1, PERM_READ | PERM_WRITE)
    if default_topic is None or not default_topic.perm & PERM_INHERIT:
        raise RocketMQError(codes.R_TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
    nums = max(0, min(client_default_queue_nums, default_topic.write_queues))
    return TopicConfig(topic, nums, nums, default_topic.perm & ~PERM_INHERIT)


def broker_tbw102(default_topic_queue_nums: int = 8) -> TopicConfig:
    """``TBW102`` as a broker with autoCreateTopicEnable creates it: 8/8, perm 7 (TOPIC-02)."""
    return TopicConfig(TBW102, default_topic_queue_nums, default_topic_queue_nums, 7)


def check_send_queue_id(queue_id: int, config: TopicConfig, random_value: int = 0) -> int:
    """``msgCheck``: queueId < max(write, read) or SYSTEM_ERROR; negative -> random % write (TOPIC-03)."""
    if queue_id < 0:
        return random_value % 99999999 % config.write_queues
    if queue_id >= max(config.write_queues, config.read_queues):
        raise RocketMQError(codes.R_SYSTEM_ERROR, f"request queueId[{queue_id}] is illegal, {config} Producer: ")
    return queue_id


def precreated_topics(cluster: str = "DefaultCluster", broker: str = "broker-a", auto_create: bool = True,
                      trace_enabled: bool = False) -> dict[str, tuple[int, int]]:
    """Topics a 4.x broker creates at start, name -> (read, write) queues (TOPIC-04)."""
    topics = {"SELF_TEST_TOPIC": (1, 1), "BenchmarkTest": (1024, 1024), cluster: (16, 16), broker: (1, 1),
              "OFFSET_MOVED_EVENT": (1, 1), "SCHEDULE_TOPIC_XXXX": (18, 18), f"{cluster}_REPLY_TOPIC": (1, 1)}
    if auto_create:
        topics[TBW102] = (8, 8)
    if trace_enabled:
        topics["RMQ_SYS_TRACE_TOPIC"] = (1, 1)
    return topics


# ---- LIMIT-01, LIMIT-02 -------------------------------------------------------------------------

def system_topics(version: str = versions.LATEST) -> frozenset[str]:
    """``TopicValidator.SYSTEM_TOPIC_SET`` of a release, before a broker adds its own (LIMIT-01)."""
    return SYSTEM_TOPICS | {t for t, since in LATER_SYSTEM_TOPICS if versions.holds(version, since=since)}


def not_allowed_send_topics(version: str = versions.LATEST) -> frozenset[str]:
    """``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`` of a release (LIMIT-01)."""
    return NOT_ALLOWED_SEND_TOPICS | {t for t, since in LATER_NOT_ALLOWED_SEND_TOPICS
                                      if versions.holds(version, since=since)}


def is_system_topic(topic: str, version: str = versions.LATEST) -> bool:
    """The release's system topic set, or a name starting with ``rmq_sys_`` (LIMIT-01)."""
    return topic in system_topics(version) or topic.startswith("rmq_sys_")


def check_topic_client_4x(topic: str, version: str = versions.LATEST) -> None:
    """Remoting client ``Validators.checkTopic``, then ``isNotAllowedSendTopic`` on the release's set (LIMIT-01):
    MQClientException, code -1."""
    if java_is_blank(topic):
        raise RocketMQError(-1, "The specified topic is blank")
    if java_length(topic) > MAX_TOPIC_LENGTH:
        raise RocketMQError(-1, f"The specified topic is longer than topic max length {MAX_TOPIC_LENGTH}.")
    if not _legal_name(topic):
        raise RocketMQError(-1, f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
    if topic in not_allowed_send_topics(version):
        raise RocketMQError(-1, f"Sending message to topic[{topic}] is forbidden.")


def check_topic_broker_4x(topic: str) -> None:
    """Broker 4.9.8 ``validateTopic``: SYSTEM_ERROR for the name, NO_PERMISSION for forbidden topics (LIMIT-01),
    with ``TopicValidator``'s remarks: blank, then illegal characters, then too long
    (common/.../topic/TopicValidator.java#TopicValidator.validateTopic@rocketmq-all-4.9.8 L103-121,
    #TopicValidator.isNotAllowedSendTopic L143-150)."""
    if java_is_blank(topic):
        raise RocketMQError(codes.R_SYSTEM_ERROR, "The specified topic is blank.")
    if not _legal_name(topic):
        raise RocketMQError(codes.R_SYSTEM_ERROR,
                            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
    if java_length(topic) > MAX_TOPIC_LENGTH:
        raise RocketMQError(codes.R_SYSTEM_ERROR, "The specified topic is longer than topic max length.")
    if topic in NOT_ALLOWED_SEND_TOPICS:
        raise RocketMQError(codes.R_NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")


def check_topic_broker(topic: str, version: str = versions.LATEST) -> None:
    """The broker's ``AbstractSendMessageProcessor.msgCheck`` on a SEND's topic at a release (LIMIT-01):
    ``TopicValidator.validateTopic`` (blank, then characters, then length), then the release's not-allowed set
    (NO_PERMISSION). A bad name is SYSTEM_ERROR (1) up to 5.3.1 and INVALID_PARAMETER (29) from 5.3.2; from
    5.5.0 a ``%RETRY%`` or ``%DLQ%`` topic may be 255 long (others 127) and the remarks name the topic
    (common/.../topic/TopicValidator.java#TopicValidator.validateTopic@rocketmq-all-5.5.0 L116-140)."""
    code = INVALID_PARAMETER if versions.holds(version, since="5.3.2") else codes.R_SYSTEM_ERROR
    named = versions.holds(version, since="5.5.0")
    if java_is_blank(topic):
        raise RocketMQError(code, "The specified topic is blank.")
    if not _legal_name(topic):
        raise RocketMQError(code, (f"The specified topic: {topic}, contains" if named else "The specified topic contains")
                            + " illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
    if named and topic.startswith(("%RETRY%", "%DLQ%")):
        if java_length(topic) > MAX_RETRY_TOPIC_LENGTH:
            raise RocketMQError(code, f"The specified topic is DLQ or Retry topic: {topic}, and it's longer than "
                                      f"topic max length: {MAX_RETRY_TOPIC_LENGTH}")
    elif java_length(topic) > MAX_TOPIC_LENGTH:
        raise RocketMQError(code, f"The specified topic: {topic}, is longer than topic max length: {MAX_TOPIC_LENGTH}"
                            if named else "The specified topic is longer than topic max length.")
    if topic in not_allowed_send_topics(version):
        raise RocketMQError(codes.R_NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")


def check_topic_proxy(topic: str, version: str = versions.LATEST) -> None:
    """gRPC proxy: the client rules plus no system topic of the release -> ILLEGAL_TOPIC (40002) (LIMIT-01)."""
    if java_is_blank(topic) or java_length(topic) > MAX_TOPIC_LENGTH or not _legal_name(topic):
        raise RocketMQError(codes.ILLEGAL_TOPIC, f"topic name {topic!r} is illegal")
    if is_system_topic(topic, version):
        raise RocketMQError(codes.ILLEGAL_TOPIC, f"cannot access system topic {topic}")


def java_5x_topic_valid(topic: str) -> bool:
    """Java 5.x client topic regex ``^[%a-zA-Z0-9_-]+$`` (no ``|``) (LIMIT-01, LIMIT-06)."""
    return bool(topic) and java_chars_in_table(topic, _JAVA_5X_TOPIC_TABLE)


GROUP_MAX_120_SINCE = "5.5.0"
"""``Validators.GROUP_MAX_LENGTH = 120`` (the retry and DLQ topics made of a group must fit a topic)."""


def check_group(group: str, version: str = versions.LATEST) -> None:
    """``Validators.checkGroup`` (LIMIT-02): not blank, at most 255 UTF-16 units up to 5.3.3, 120 from 5.5.0
    (and on the development branch), whose refusal names the group
    (client/.../Validators.java#Validators.checkGroup@rocketmq-all-5.5.0 L45, L55-56), only
    ``^[%|a-zA-Z0-9_-]+$``."""
    short = version == versions.DEVELOP or versions.holds(version, since=GROUP_MAX_120_SINCE)
    if java_is_blank(group):
        raise RocketMQError(-1, "the specified group is blank")
    if short and java_length(group) > 120:
        raise RocketMQError(-1, f"the specified group[{group}] is longer than group max length: 120.")
    if not short and java_length(group) > 255:
        raise RocketMQError(-1, "the specified group is longer than group max length 255.")
    if not _legal_name(group):
        raise RocketMQError(-1, f"the specified group[{group}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")


def check_group_proxy(group: str, version: str = versions.LATEST) -> None:
    """``GrpcValidator.validateConsumerGroup`` (LIMIT-02): ILLEGAL_CONSUMER_GROUP (40003) for a blank, bad
    or system (``CID_RMQ_SYS_``) group. 5.0.0 checks blank, then system, then ``checkGroup``; from 5.1.0
    ``checkGroup`` comes first, then the system group."""
    system = group.startswith("CID_RMQ_SYS_")
    if versions.holds(version, until="5.0.0"):
        if java_is_blank(group):
            raise RocketMQError(codes.ILLEGAL_CONSUMER_GROUP, "consumer group cannot be empty")
        if system:
            raise RocketMQError(codes.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")
    try:
        check_group(group, version)
    except RocketMQError as exc:
        raise RocketMQError(codes.ILLEGAL_CONSUMER_GROUP, exc.message) from None
    if system:
        raise RocketMQError(codes.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")


# ---- LIMIT-03..06 -------------------------------------------------------------------------------

def check_body_client(body: bytes | None, max_message_size: int = MAX_MESSAGE_SIZE) -> None:
    """Remoting client ``checkMessage`` (LIMIT-03): MQClientException with MESSAGE_ILLEGAL (13)."""
    if body is None:
        raise RocketMQError(codes.R_MESSAGE_ILLEGAL, "the message body is null")
    if len(body) == 0:
        raise RocketMQError(codes.R_MESSAGE_ILLEGAL, "the message body length is zero")
    if len(body) > max_message_size:
        raise RocketMQError(codes.R_MESSAGE_ILLEGAL, f"the message body size over max value, MAX: {max_message_size}")


def check_body_proxy(body: bytes, max_message_size: int = MAX_MESSAGE_SIZE) -> None:
    """gRPC proxy body checks: empty -> 41302, too large -> 41301; max <= 0 disables (LIMIT-03)."""
    if len(body) == 0:
        raise RocketMQError(codes.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if max_message_size > 0 and len(body) > max_message_size:
        raise RocketMQError(codes.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {max_message_size}")


def check_body_python_5x(body: bytes | None) -> None:
    """Python 5.x SDK 5.1.2: the ``Message.body`` setter refuses an empty body ("body should not be
    blank."); the send refuses more than 4 MiB, hard-coded (LIMIT-03, SEND-5X-02)."""
    if not body:
        raise RocketMQError(-1, "body should not be blank.")
    if len(body) > MAX_MESSAGE_SIZE:
        raise RocketMQError(-1, f"message body size {len(body)} exceeds {MAX_MESSAGE_SIZE}")


def check_message_python_5x(tag: str | None, message_group: str | None, delivery_timestamp_ms: int | None) -> None:
    """Python 5.x SDK 5.1.2 ``Message`` setters, met before any request (LIMIT-04, LIMIT-06): a tag may not
    be blank or hold ``|``; a message group and a delivery timestamp exclude each other."""
    if tag is not None and (not tag.strip() or "|" in tag):  # idiom-ok: the Python SDK's own str.strip
        raise RocketMQError(-1, 'tag should not contain "|".' if "|" in tag else "tag should not be blank.")
    if message_group is not None and delivery_timestamp_ms is not None:
        raise RocketMQError(-1, "delivery_timestamp and message_group should not be set at same time.")


def check_properties_store(serialized: str) -> None:
    """Store: serialized properties and their UTF-8 bytes <= 32767 (LIMIT-04)."""
    if len(serialized) > MAX_PROPERTIES_LENGTH or len(serialized.encode("utf-8")) > MAX_PROPERTIES_LENGTH:
        raise RocketMQError(codes.R_MESSAGE_ILLEGAL,
                            "the message is illegal, maybe msg body or properties length not matched. "
                            f"msg body length limit {MAX_MESSAGE_SIZE}B, msg properties length limit 32KB.")


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def system_property_keys(version: str = versions.LATEST) -> frozenset[str]:
    """``MessageConst.STRING_HASH_SET`` of a 5.x release (before 5.0.0 there is no proxy: 5.0.0's) (LIMIT-04)."""
    return SYSTEM_PROPERTY_KEYS | {k for k, since in LATER_SYSTEM_PROPERTY_KEYS if versions.holds(version, since=since)}


def check_properties_proxy(user_properties: Mapping[str, str], tag: str | None = None,
                           keys: Sequence[str] = (), version: str = versions.LATEST) -> None:
    """gRPC proxy property rules, in ``SendMessageActivity.buildMessageProperty``'s order and with its
    texts (the same from 5.0.0 to 5.5.0); a reserved key is one of the release's ``STRING_HASH_SET``
    (LIMIT-04)."""
    if len(user_properties) > USER_PROPERTY_MAX_NUM:
        raise RocketMQError(codes.MESSAGE_PROPERTIES_TOO_LARGE,
                            f"too many user properties, max is {USER_PROPERTY_MAX_NUM}")
    reserved = system_property_keys(version)
    size = 0
    for key, value in user_properties.items():
        if key in reserved:
            raise RocketMQError(codes.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}")
        if _has_control(key):
            raise RocketMQError(codes.ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot contain control character")
        if _has_control(value):
            raise RocketMQError(codes.ILLEGAL_MESSAGE_PROPERTY_KEY,
                                "the value of property cannot contain control character")
        size += len(key.encode()) + len(value.encode())
    if tag:  # GrpcValidator.validateTag checks a non-empty tag only
        if java_is_blank(tag):
            raise RocketMQError(codes.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
        if "|" in tag:
            raise RocketMQError(codes.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
        if _has_control(tag):
            raise RocketMQError(codes.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")
        size += len(tag.encode())
    for key in keys:
        size += len(key.encode())
    if size > MAX_USER_PROPERTY_SIZE:
        raise RocketMQError(codes.MESSAGE_PROPERTIES_TOO_LARGE,
                            f"the total size of user property is too large, max is {MAX_USER_PROPERTY_SIZE}")


def encoded_batch_size(bodies: Sequence[bytes], serialized_properties: Sequence[str]) -> int:
    """Client-to-broker batch wire size: 4+4+4+4+4 + body + 2 + props per message (LIMIT-05)."""
    return sum(22 + len(b) + len(p.encode()) for b, p in zip(bodies, serialized_properties))


def check_batch_size(bodies: Sequence[bytes], serialized_properties: Sequence[str],
                     max_message_size: int = MAX_MESSAGE_SIZE) -> None:
    """The encoded batch is checked like one body (LIMIT-03, LIMIT-05)."""
    size = encoded_batch_size(bodies, serialized_properties)
    if size > max_message_size:
        raise RocketMQError(codes.R_MESSAGE_ILLEGAL, f"the message body size over max value, MAX: {max_message_size}")


def check_java_message_builder(topic: str, body: bytes, tag: str | None = None, keys: Sequence[str] = (),
                               properties: Mapping[str, str] | None = None, message_group: str | None = None,
                               delivery_timestamp: int | None = None, lite_topic: str | None = None,
                               priority: int | None = None) -> None:
    """Java 5.x ``MessageBuilderImpl`` (LIMIT-06): IllegalArgumentException as code -1."""
    if not java_5x_topic_valid(topic):
        raise RocketMQError(-1, f"topic does not match the regex [regex={_JAVA_5X_TOPIC_PATTERN}]")
    if not body:
        raise RocketMQError(-1, "body should not be empty")
    if tag is not None and (java_is_blank(tag) or "|" in tag):
        raise RocketMQError(-1, "tag should not be blank" if java_is_blank(tag) else "tag should not contain \"|\"")
    for key in keys:
        if java_is_blank(key):
            raise RocketMQError(-1, "key should not be blank")
    for k, v in (properties or {}).items():
        if java_is_blank(k) or java_is_blank(v):
            raise RocketMQError(-1, "key and value should not be blank")
    if message_group is not None and delivery_timestamp is not None:
        raise RocketMQError(-1, "deliveryTimestamp and messageGroup should not be set at same time")
    chosen = [n for n, v in (("messageGroup", message_group), ("deliveryTimestamp", delivery_timestamp),
                             ("liteTopic", lite_topic), ("priority", priority if priority is not None and priority >= 0 else None))
              if v is not None]
    if len(chosen) > 1:
        raise RocketMQError(-1, f"{' and '.join(chosen)} should not be set at same time")
