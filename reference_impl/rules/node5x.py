"""The Node.js 5.x client's own habits (rocketmq-client-nodejs 1.0.8, ``nodejs/src`` of the npm package),
where it differs from the Java and Python 5.x clients. Pure functions.

- SDK-NODE-01: a push consumer keeps a retry policy from the server's settings only when it is an exponential
  backoff; a customized backoff (every group whose retry policy is CUSTOMIZED) leaves it with none, so a
  failed message is nacked with an invisible duration of 0 and a FIFO consumer has one attempt only.
- SDK-NODE-02: backoff durations are read as whole seconds (``Duration.seconds``; the nanos are dropped)
  and the policy's arithmetic then treats them as milliseconds; so does the producer's flow-control wait.
- SDK-NODE-03: the publishing load balancer keeps the queues whose *queue id* is 0 (it compares the queue id
  with the master broker id): one queue per broker is ever written to by the client.
- SDK-NODE-04: a FIFO consumer counts local attempts on from the server's delivery attempt (as Java).
- SDK-NODE-05: the client's own checks of a message before a send.
- SDK-NODE-06: a producer declares every topic it has sent to (a route lookup adds the topic to the
  settings it sends), so a transactional producer is checked for its own halves without declaring topics.
- SDK-NODE-07: start-up awaits the server's first settings, with no time limit, when the client has topics.
- SDK-NODE-08: how it acks: a push consumer retries a failed ack (or nack) every second for ever, forgiving
  an invalid receipt handle; a simple consumer's ack reads only the top-level status.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Sequence, TypeVar

from history.values import NODE_5X_SDK

from . import codes
from .codes import RocketMQError
from .primitives import ieee_pow

SDK = NODE_5X_SDK
"""The ``sdk`` value of a scenario, producer or consumer that follows these habits."""
PRODUCER_MAX_ATTEMPTS = 3
MASTER_BROKER_ID = 0
NACK_WITHOUT_POLICY_MS = 0
FIFO_MAX_ATTEMPTS_WITHOUT_POLICY = 1
DEFAULT_MAX_BODY_SIZE = 4 * 1024 * 1024
MESSAGE_TYPE_NUMBERS = {"NORMAL": 1, "FIFO": 2, "DELAY": 3, "TRANSACTION": 4}
"""``MessageType`` of apache/rocketmq/v2/definition.proto: the Node client prints these numbers."""


@dataclass(frozen=True)
class NodeRetryPolicy:
    """``ExponentialBackoffRetryPolicy`` as the Node client builds it from the settings (SDK-NODE-02):
    durations in whole seconds, used as milliseconds."""

    max_attempts: int
    initial_s: int
    max_s: int
    multiplier: float

    def next_attempt_delay_ms(self, attempt: int) -> float:
        return exponential_delay_ms(attempt, self.initial_s, self.max_s, self.multiplier)


def duration_seconds(ms: float) -> int:
    """``Duration.seconds`` of a protobuf duration of ``ms`` milliseconds: the nanos are dropped."""
    return int(ms // 1000)


def exponential_delay_ms(attempt: int, initial: float, maximum: float, multiplier: float) -> float:
    """``ExponentialBackoffRetryPolicy.getNextAttemptDelay`` in JavaScript's arithmetic (SDK-NODE-02):
    ``Math.min(initial * Math.pow(multiplier, attempt - 1), max)``, 0 when ``<= 0``; no rounding, NaN kept."""
    if attempt <= 0:
        raise ValueError("attempt must be positive")
    product = initial * ieee_pow(multiplier, float(attempt - 1))  # 0 * Infinity is NaN, as in JavaScript
    delay = math.nan if math.isnan(product) or math.isnan(maximum) else min(product, maximum)
    if not math.isnan(delay) and delay <= 0:
        return 0
    return delay


def consumer_policy(strategy: str, max_attempts: int, initial_ms: float, max_ms: float,
                    multiplier: float) -> NodeRetryPolicy | None:
    """``PushSubscriptionSettings.sync`` (SDK-NODE-01, SDK-NODE-02): an exponential backoff becomes a policy
    with whole seconds; a customized one is ignored and the consumer has no policy at all."""
    if strategy != "EXPONENTIAL":
        return None
    return NodeRetryPolicy(max_attempts, duration_seconds(initial_ms), duration_seconds(max_ms), multiplier)


def nack_invisible_ms(policy: NodeRetryPolicy | None, delivery_attempt: int) -> float:
    """``ProcessQueue.#nackMessage`` (SDK-NODE-01): the policy's delay for the attempt, 0 without a policy."""
    return NACK_WITHOUT_POLICY_MS if policy is None else policy.next_attempt_delay_ms(delivery_attempt)


def fifo_max_attempts(policy: NodeRetryPolicy | None) -> int:
    """``ProcessQueue.eraseFifoMessage`` (SDK-NODE-01): ``retryPolicy?.getMaxAttempts() ?? 1``."""
    return FIFO_MAX_ATTEMPTS_WITHOUT_POLICY if policy is None else policy.max_attempts


def fifo_local_attempts(server_delivery_attempt: int, policy: NodeRetryPolicy | None) -> list[int]:
    """SDK-NODE-04: the attempt numbers a FIFO message that keeps failing is consumed with locally, from the
    server's delivery attempt (``incrementAndGetDeliveryAttempt``) while below the maximum."""
    last = max(server_delivery_attempt, fifo_max_attempts(policy))
    return list(range(server_delivery_attempt, last + 1))


def publishing_retry_delay_ms(next_attempt: int, backoff_ms: tuple[float, float, float]) -> float:
    """The producer's wait before retrying a TOO_MANY_REQUESTS send (SDK-NODE-02): the server's publishing
    backoff ``(initial ms, max ms, multiplier)`` inherited in whole seconds, used as milliseconds."""
    initial, maximum, multiplier = backoff_ms
    return exponential_delay_ms(next_attempt, duration_seconds(initial), duration_seconds(maximum), multiplier)


Queue = TypeVar("Queue")


def writable_queues(queues: Sequence[Queue]) -> list[Queue]:
    """``PublishingLoadBalancer``'s constructor (SDK-NODE-03): only queues whose queue id is the master broker
    id (0) stay; a route with none of them cannot be published to."""
    kept = [q for q in queues if getattr(q, "queue_id") == MASTER_BROKER_ID]
    if not kept:
        raise RocketMQError(-1, "No writable message queue found")
    return kept


def check_message(body: bytes, message_group: str | None, delivery_timestamp_ms: int | None,
                  max_body_size: int = DEFAULT_MAX_BODY_SIZE) -> None:
    """The client's checks before a send (SDK-NODE-05), in the order it meets them: ``Message``'s constructor
    (a delivery time and a message group exclude each other), then ``PublishingMessage`` (the body against
    the settings' maximum). Nothing else: tags, keys, topic names and empty bodies go to the server."""
    if delivery_timestamp_ms is not None and message_group is not None:
        raise RocketMQError(-1, "delay/deliveryTimestamp is mutually exclusive with messageGroup")
    if len(body) > max_body_size:
        raise RocketMQError(-1, f"Message body size exceeds the threshold, max size={max_body_size} bytes")


def message_type_mismatch(topic: str, message_type: str, accepted: Sequence[str]) -> str:
    """The text of ``Producer.#send0``'s message-type check (SDK-NODE-05): the proto enum numbers, the accepted
    ones as a JSON array."""
    numbers = json.dumps([MESSAGE_TYPE_NUMBERS[t] for t in accepted], separators=(",", ":"))
    return (f"Current message type not match with topic accept message types, topic={topic}, "
            f"actualMessageType={MESSAGE_TYPE_NUMBERS[message_type]}, acceptMessageTypes={numbers}")


def declared_topics(declared: Sequence[str], sent_to: Sequence[str]) -> frozenset[str]:
    """The topics a producer's settings name (SDK-NODE-06): those given at construction and every topic whose
    route it looked up to send (``BaseClient.getRouteData`` adds it to the set the settings are made from)."""
    return frozenset(declared) | frozenset(sent_to)


def startup_awaits_settings(topics: int) -> bool:
    """``BaseClient.#startup`` (SDK-NODE-07): a client with topics (every consumer, a producer that declares
    some) awaits the first Settings command, with no time limit; one without topics is running at once."""
    return topics > 0


MULTIPLE_RESULTS = 30000
"""``Code.MULTIPLE_RESULTS``: a batch answer whose entries differ."""
ACK_RETRY_DELAY_MS = 1000
"""``ACK_MESSAGE_FAILURE_BACKOFF_DELAY``, ``CHANGE_INVISIBLE_DURATION_FAILURE_BACKOFF_DELAY`` and
``FORWARD_MESSAGE_TO_DLQ_FAILURE_BACKOFF_DELAY`` of ``ProcessQueue``."""


def push_ack_retry_ms(code: int | None) -> int | None:
    """``ProcessQueue.#ackMessage`` / ``#changeInvisibleDuration`` (SDK-NODE-08): after an answer with ``code``
    (None: the call failed), the wait before the same request is sent again; None when it is not. OK ends it,
    INVALID_RECEIPT_HANDLE is forgiven, anything else is retried 1 s later, with no limit on the attempts."""
    if code in (codes.OK, codes.INVALID_RECEIPT_HANDLE):
        return None
    return ACK_RETRY_DELAY_MS


def simple_ack_raises(top_level_code: int, entry_codes: Sequence[int]) -> bool:
    """``Consumer.ackMessage`` (SDK-NODE-08): a simple consumer's ack looks at the response's top-level status
    only (OK and MULTIPLE_RESULTS pass); the entries' own codes are not read."""
    return top_level_code not in (codes.OK, MULTIPLE_RESULTS)
