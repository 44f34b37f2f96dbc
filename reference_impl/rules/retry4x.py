"""4.x remoting consumer retry, concurrent consumption (RETRY-CONC-01..11). Pure functions.

The functions are looked up through this module at call time (``retry4x.retry_level_for``), so a
test can replace one rule and watch the suites catch it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from history.values import ListenerOutcome
from spec import versions

from . import delay as delay_rules
from .primitives import INT_MAX, java_is_blank

RETRY_TOPIC_PREFIX = "%RETRY%"
DLQ_TOPIC_PREFIX = "%DLQ%"
DLQ_NUMS_PER_GROUP = 1
PERM_READ_WRITE = 6
DEFAULT_RETRY_QUEUE_NUMS = 1
DEFAULT_RETRY_MAX_TIMES = 16
DEFAULT_ACK_INDEX = INT_MAX
LOCAL_RESUBMIT_DELAY_MS = 5000
CONSUME_TIMEOUT_MINUTES = 15
REAPER_DELAY_LEVEL = 3

# Response codes used by the send-back path.
SUCCESS = 0
SYSTEM_ERROR = 1
NO_PERMISSION = 16
SUBSCRIPTION_GROUP_NOT_EXIST = 26


class ConsumeStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


def retry_topic(group: str) -> str:
    """``MixAll.getRetryTopic`` (RETRY-CONC-05)."""
    return RETRY_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``MixAll.getDLQTopic`` (RETRY-CONC-05)."""
    return DLQ_TOPIC_PREFIX + group


def pop_retry_topic_v1(group: str, topic: str) -> str:
    """5.x pop retry topic, v1 form ``%RETRY%group_topic`` (RETRY-CONC-05, RETRY-5X-10)."""
    return f"{RETRY_TOPIC_PREFIX}{group}_{topic}"


def pop_retry_topic_v2(group: str, topic: str) -> str:
    """5.x pop retry topic, v2 form ``%RETRY%group+topic`` (RETRY-CONC-05)."""
    return f"{RETRY_TOPIC_PREFIX}{group}+{topic}"


def concurrent_status(outcome: ListenerOutcome) -> ConsumeStatus:
    """Exception or null -> RECONSUME_LATER (RETRY-CONC-01)."""
    if outcome is ListenerOutcome.SUCCESS:
        return ConsumeStatus.CONSUME_SUCCESS
    return ConsumeStatus.RECONSUME_LATER


def failed_indexes(batch_size: int, status: ConsumeStatus, ack_index: int = DEFAULT_ACK_INDEX) -> list[int]:
    """Indexes of a batch treated as failed (RETRY-CONC-01)."""
    if status is ConsumeStatus.RECONSUME_LATER:
        ack = -1
    else:
        ack = batch_size - 1 if ack_index >= batch_size else ack_index
    return list(range(ack + 1, batch_size))


def retry_level_for(reconsume_times: int) -> int:
    """Broker's level for a send-back with requested level 0: ``3 + reconsumeTimes`` (RETRY-CONC-04)."""
    return 3 + reconsume_times


def effective_max_reconsume_times(max_reconsume_times: int, orderly: bool) -> int:
    """-1 means 16 for concurrent and Integer.MAX_VALUE for orderly (RETRY-CONC-06)."""
    if max_reconsume_times == -1:
        return INT_MAX if orderly else DEFAULT_RETRY_MAX_TIMES
    return max_reconsume_times


@dataclass(frozen=True)
class SendBackResult:
    """What ``CONSUMER_SEND_MSG_BACK`` does with a message (RETRY-CONC-04)."""

    code: int
    stored: bool
    topic: str | None = None          # None, and the fields below, when nothing is stored
    queue_id: int | None = None
    delay_level: int | None = None
    reconsume_times: int | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


def consumer_send_msg_back(group: str, origin_topic: str, reconsume_times: int,
                           properties: Mapping[str, str], msg_id: str, delay_level: int,
                           max_reconsume_times: int | None, *,
                           retry_queue_nums: int = DEFAULT_RETRY_QUEUE_NUMS,
                           group_retry_max_times: int = DEFAULT_RETRY_MAX_TIMES,
                           group_exists: bool = True, broker_writable: bool = True,
                           random_value: int = 0) -> SendBackResult:
    """The broker's send-back algorithm (RETRY-CONC-04); ``max_reconsume_times`` None = header absent."""
    if not group_exists:
        return SendBackResult(SUBSCRIPTION_GROUP_NOT_EXIST, stored=False)
    if not broker_writable:
        return SendBackResult(NO_PERMISSION, stored=False)
    if retry_queue_nums <= 0:
        return SendBackResult(SUCCESS, stored=False)
    props = dict(properties)
    if "RETRY_TOPIC" not in props:
        props["RETRY_TOPIC"] = origin_topic
    max_times = group_retry_max_times if max_reconsume_times is None else max_reconsume_times
    if reconsume_times >= max_times or delay_level < 0:
        topic, queue_id, level = dlq_topic(group), random_value % DLQ_NUMS_PER_GROUP, 0
        props.pop("DELAY", None)
    else:
        topic, queue_id = retry_topic(group), random_value % retry_queue_nums
        level = retry_level_for(reconsume_times) if delay_level == 0 else delay_level
        props["DELAY"] = str(level)
    if java_is_blank(props.get("ORIGIN_MESSAGE_ID")):
        props["ORIGIN_MESSAGE_ID"] = msg_id
    return SendBackResult(SUCCESS, True, topic, queue_id, level, reconsume_times + 1, props)


def fallback_republish_properties(properties: Mapping[str, str], origin_topic: str, reconsume_times: int,
                                  max_reconsume_times: int, msg_id: str = "",
                                  version: str = versions.LATEST) -> dict[str, str]:
    """The message the client republishes when send-back fails (RETRY-CONC-08): the consumed message's
    properties and the retry ones. Up to 5.3.3 ``sendMessageBackAsNormalMessage`` sets ORIGIN_MESSAGE_ID on
    the new message and then replaces its whole property map with the consumed message's
    (``MessageAccessor.setProperties``), so the copy has ORIGIN_MESSAGE_ID only when the consumed message had
    one; from 5.5.0 the properties are copied first, so the copy always carries it: the consumed message's
    ORIGIN_MESSAGE_ID, or when that is blank ``msg_id`` (client/.../impl/consumer/DefaultMQPushConsumerImpl.java
    #DefaultMQPushConsumerImpl.sendMessageBackAsNormalMessage@rocketmq-all-5.5.0)."""
    props = dict(properties)
    if versions.holds(version, since="5.5.0") and java_is_blank(props.get("ORIGIN_MESSAGE_ID")):
        props["ORIGIN_MESSAGE_ID"] = msg_id
    props["RETRY_TOPIC"] = origin_topic
    props["RECONSUME_TIME"] = str(reconsume_times + 1)
    props["MAX_RECONSUME_TIMES"] = str(max_reconsume_times)
    props.pop("TRAN_MSG", None)
    props["DELAY"] = str(retry_level_for(reconsume_times))
    return props


@dataclass(frozen=True)
class RetryTopicSendDecision:
    """Routing of a plain SEND to a ``%RETRY%`` topic (RETRY-CONC-11)."""

    code: int
    topic: str | None
    queue_id: int | None
    delay_level: int | None


def handle_retry_and_dlq(topic: str, queue_id: int, header_reconsume_times: int | None,
                         header_max_reconsume_times: int | None, delay_level: int, *,
                         group_exists: bool = True,
                         group_retry_max_times: int = DEFAULT_RETRY_MAX_TIMES) -> RetryTopicSendDecision:
    """``handleRetryAndDLQ`` (RETRY-CONC-11)."""
    if not topic.startswith(RETRY_TOPIC_PREFIX):
        return RetryTopicSendDecision(SUCCESS, topic, queue_id, delay_level)
    if not group_exists:
        return RetryTopicSendDecision(SUBSCRIPTION_GROUP_NOT_EXIST, None, None, None)
    group = topic[len(RETRY_TOPIC_PREFIX):]
    max_times = group_retry_max_times if header_max_reconsume_times is None else header_max_reconsume_times
    rt = 0 if header_reconsume_times is None else header_reconsume_times
    if rt >= max_times:
        return RetryTopicSendDecision(SUCCESS, dlq_topic(group), 0, 0)
    return RetryTopicSendDecision(SUCCESS, topic, queue_id, delay_level)


def topic_seen_by_listener(topic: str, properties: Mapping[str, str], group: str) -> str:
    """``resetRetryAndNamespace``: a ``%RETRY%group`` message shows its RETRY_TOPIC (RETRY-CONC-09)."""
    original = properties.get("RETRY_TOPIC")
    if original is not None and topic == retry_topic(group):
        return original
    return topic


def push_subscriptions(group: str, topic: str, expression: str, broadcasting: bool) -> dict[str, str]:
    """Clustering adds ``%RETRY%group: *`` automatically; broadcasting does not (RETRY-CONC-10)."""
    subs = {topic: expression}
    if not broadcasting:
        subs[retry_topic(group)] = "*"
    return subs


def offset_after_remove(cached_offsets: Iterable[int], removed: Iterable[int], queue_offset_max: int) -> int:
    """``ProcessQueue.removeMessage``: the offset the consumer may commit (RETRY-CONC-03).

    -1 if nothing was cached; otherwise the smallest remaining offset, or max + 1 when empty.
    """
    cached = set(cached_offsets)
    if not cached:
        return -1
    remaining = cached - set(removed)
    return min(remaining) if remaining else queue_offset_max + 1


def retry_delays_ms(max_reconsume_times: int = DEFAULT_RETRY_MAX_TIMES,
                    table: delay_rules.DelayTable = delay_rules.DEFAULT_DELAY_TABLE) -> list[int]:
    """The wait before each retry k = 1..max with default settings (RETRY-CONC-07)."""
    return [delay_rules.delay_ms_for_level(retry_level_for(rt), table) for rt in range(max_reconsume_times)]


def broadcasting_drops_failures() -> bool:
    """Broadcasting never retries: failed messages are dropped and the offset advances (RETRY-CONC-02)."""
    return True


def reaper_expired(consume_start_ms: int, now_ms: int, consume_timeout_minutes: int = CONSUME_TIMEOUT_MINUTES) -> bool:
    """A cached message consumed longer than consumeTimeout is sent back at level 3 (RETRY-CONC-10)."""
    return now_ms - consume_start_ms > consume_timeout_minutes * 60_000


def reaper_send_back_level(consume_start_ms: int, now_ms: int,
                           consume_timeout_minutes: int = CONSUME_TIMEOUT_MINUTES) -> int | None:
    """The consume-timeout reaper sends an expired message back at fixed level 3, else None (RETRY-CONC-10)."""
    return REAPER_DELAY_LEVEL if reaper_expired(consume_start_ms, now_ms, consume_timeout_minutes) else None

