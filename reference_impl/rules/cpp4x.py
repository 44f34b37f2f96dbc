"""The 4.x C++ client's own habits (rocketmq-client-cpp 2.1.0, the library under rocketmq-client-python
2.0.0), where it differs from the Java ``DefaultMQPushConsumer`` the catalog describes. Pure functions.

- SDK-CPP-01: ``getMaxReconsumeTimes`` is 16 when unset, for concurrent and orderly alike; the Python SDK
  has no setter, so 16 is what a send-back carries.
- SDK-CPP-02: a concurrent send-back that fails has no fallback republish to ``%RETRY%group``: the message is
  consumed again locally 1 s later with reconsume times + 1 (Java: republish, then 5 s).
- SDK-CPP-03: an orderly ``RECONSUME_LATER`` is retried locally, 1 s later while reconsume times is at most 15
  and 5 s later after that, for ever: the orderly path never checks a maximum and never dead-letters.
- SDK-CPP-09: a concurrent consumer's listener answers for the whole pull batch: the first failure sends every
  message of the batch back, the ones after it unseen.
- SDK-CPP-10: a producer is unknown to the broker until its first heartbeat after its first send, up to 30 s of
  the client's clock: transaction checks meant for it before then reach no one.
"""
from __future__ import annotations

from typing import Sequence

from history.values import CPP_4X_SDK

SDK = CPP_4X_SDK
"""The ``sdk`` value of a scenario or model consumer that follows these habits."""
DEFAULT_MAX_RECONSUME_TIMES = 16
LOCAL_RESUBMIT_DELAY_MS = 1000
ORDERLY_SHORT_RETRY_MS = 1000
ORDERLY_LONG_RETRY_MS = 5000
ORDERLY_SHORT_RETRIES_UP_TO_RT = 15


def max_reconsume_times(configured: int = -1) -> int:
    """SDK-CPP-01: ``DefaultMQPushConsumerImpl::getMaxReconsumeTimes``."""
    return configured if configured >= 0 else DEFAULT_MAX_RECONSUME_TIMES


def orderly_retry_delay_ms(reconsume_times: int) -> int:
    """SDK-CPP-03: the wait before an orderly message that failed with ``reconsume_times`` is consumed again
    (``ConsumeMessageOrderlyService::ConsumeRequest``, ``tryLockLaterAndReconsumeDelay``)."""
    return ORDERLY_SHORT_RETRY_MS if reconsume_times <= ORDERLY_SHORT_RETRIES_UP_TO_RT else ORDERLY_LONG_RETRY_MS


def after_failed_send_back(reconsume_times: int) -> tuple[int, int]:
    """SDK-CPP-02: a message whose send-back failed is consumed again locally: (wait ms, its reconsume times)."""
    return LOCAL_RESUBMIT_DELAY_MS, reconsume_times + 1


CONSUMER_DEFAULTS = {"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeMessageBatchMaxSize": 1,
                     "maxMsgCacheSize": 1000, "pullBatchSize": 32, "rebalanceLockIntervalMs": 20_000,
                     "rebalanceLockMaxLiveMs": 30_000}


def consumer_default(name: str) -> object:
    """SDK-CPP-04: a push consumer setting as ``DefaultMQPushConsumerImpl`` and ``PullRequest`` start it."""
    return CONSUMER_DEFAULTS[name]


DEFAULT_RETRY_TIMES, MAX_RETRY_TIMES = 5, 15


def send_attempts(retry_times: int | None = None) -> int:
    """SDK-CPP-05: how many times a sync send is tried (``setRetryTimes`` keeps 1..15, more is 15, 0 or less
    keeps the default 5)."""
    if retry_times is None or retry_times <= 0:
        return DEFAULT_RETRY_TIMES
    return min(retry_times, MAX_RETRY_TIMES)


def sync_send_retried(status: str) -> bool:
    """SDK-CPP-05: a sync send answered with any status but SEND_OK is tried again."""
    return status != "SEND_OK"


LISTENER_BYTES_FIELDS = frozenset({"topic", "tags", "keys", "body", "id"})


def listener_field_is_bytes(field: str) -> bool:
    """SDK-CPP-06: the ``ReceivedMessage`` properties rocketmq-client-python 2.0.0 hands over as bytes."""
    return field in LISTENER_BYTES_FIELDS


CRASHING_BUILD_SHA256 = "ed3fce39f2b926637637a2b8b9122799f207b0cdf98dbd9110505bf43170fa30"


def push_consumer_shutdown_crashes(library_sha256: str) -> bool:
    """SDK-CPP-07: the registry build (rocketmq-python-cvs 2.1.0.3) dies with SIGSEGV in ``shutdown``."""
    return library_sha256 == CRASHING_BUILD_SHA256


CHARACTER_MAX_LENGTH, MAX_MESSAGE_SIZE, DEFAULT_TOPIC = 255, 128 * 1024, "TBW102"


def check_topic(topic: str) -> str | None:
    """SDK-CPP-08: ``Validators::checkTopic``'s refusal, or None (the character check is a stub)."""
    if not topic.strip():  # idiom-ok: the C++ client, not Java; no JVM oracle checks it (issue 35)
        return "the specified topic is blank"
    if len(topic) > CHARACTER_MAX_LENGTH:
        return "the specified topic is longer than topic max length 255."
    if topic == DEFAULT_TOPIC:
        return f"the topic[{topic}] is conflict with default topic."
    return None


def check_group(group: str) -> str | None:
    """SDK-CPP-08: ``Validators::checkGroup``'s refusal, or None."""
    if not group.strip():  # idiom-ok: the C++ client, not Java; no JVM oracle checks it (issue 35)
        return "the specified group is blank"
    if len(group) > CHARACTER_MAX_LENGTH:
        return "the specified group is longer than group max length 255."
    return None


def check_body(body_length: int, max_message_size: int = MAX_MESSAGE_SIZE) -> str | None:
    """SDK-CPP-08: ``Validators::checkMessage``'s body refusal, or None."""
    if body_length == 0:
        return "the message body is empty"
    if body_length > max_message_size:
        return f"the message body size over max value, MAX: {max_message_size}"
    return None


def concurrent_batch(answers: Sequence[bool]) -> tuple[int, tuple[int, ...]]:
    """SDK-CPP-09: a concurrent push consumer consumes what one pull brought as one batch. The C API's listener
    (``MessageListenerInner::consumeMessage``) hands the callback one message at a time and stops at the first
    that fails; ``ConsumeMessageConcurrentlyService::ConsumeRequest`` then sends the whole batch back
    (``ackIndex`` -1). ``answers``: what the callback would answer for each message of the batch, in order.
    Returns how many messages the callback saw and the indexes sent back."""
    seen = next((i + 1 for i, ok in enumerate(answers) if not ok), len(answers))
    failed = seen < len(answers) or (bool(answers) and not answers[-1])
    return seen, tuple(range(len(answers))) if failed else ()


PRODUCER_HEARTBEAT_MS = 30_000
"""SDK-CPP-10: ``MQClientFactory`` heartbeats every 30 s of the client's (wall) clock; the first one, 10 ms after
start, finds no broker yet and sends nothing (``sendHeartbeatToAllBroker``)."""


def producer_known_at_ms(started_ms: int, first_route_ms: int, period_ms: int = PRODUCER_HEARTBEAT_MS) -> int:
    """SDK-CPP-10: when the broker first knows a producer (its first heartbeat after it learnt a broker's address,
    at its first send): heartbeats run 10 ms after start and every ``period_ms`` after that."""
    beat = started_ms + 10
    while beat < first_route_ms:
        beat += period_ms
    return beat
