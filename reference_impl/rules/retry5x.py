"""5.x retry policies of the proxy and the rocketmq-clients SDKs (RETRY-5X-01..10). Pure functions.

Two index conventions live side by side here, and the difference is the point of several spec
entries: the server's ``nextDelayDuration(reconsumeTimes)`` reads ``next[rt + 2]`` while the SDKs'
``getNextAttemptDelay(attempt)`` read ``durations[attempt - 1]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Mapping, Sequence

from spec import versions

from . import codes, node5x
from .java_semantics import int32, int64
from .primitives import ieee_pow

Sdk = Literal["java", "python", "nodejs"]

DEFAULT_CUSTOMIZED_NEXT_MS: tuple[int, ...] = (
    1000, 5000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
    480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000)
"""``CustomizedRetryPolicy.next`` default, 18 entries (RETRY-5X-01)."""

DEFAULT_EXPONENTIAL_MS = (5000, 7_200_000, 2.0)
PRODUCER_EXPONENTIAL_MS = (10, 1000, 2.0)
PRODUCER_MAX_ATTEMPTS = 3
DEFAULT_RETRY_MAX_TIMES = 16
RECEIVE_BATCH_SIZE = 32
LONG_POLLING_TIMEOUT_MS = 20_000
MAX_BODY_SIZE = 4 * 1024 * 1024

DEFAULT_INVISIBLE_MS = 60_000
MIN_INVISIBLE_FOR_RECEIVE_MS = 10_000
MAX_INVISIBLE_MS = 12 * 3_600_000
RENEW_AHEAD_MS = 10_000
RENEW_MAX_TIME_MS = 3 * 3_600_000
RENEW_STEPS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
MAX_RENEW_RETRY_TIMES = 3
CHANNEL_EXPIRED_TIMEOUT_MS = 120_000
"""``ConsumerManager.CHANNEL_EXPIRED_TIMEOUT``: a client not heard from this long is offline (RETRY-5X-09)."""
RENEW_SCHEDULE_PERIOD_MS = 5_000
INVISIBLE_WHEN_CLEAR_MS = 1_000
"""``ProxyConfig.invisibleTimeMillisWhenClear``: what an offline client's renewed handles get (RETRY-5X-09)."""
PYTHON_DEFAULT_DELAY_S = 1
PUSH_CONSUMER_MAX_CACHE_MESSAGES = 4096
PUSH_CONSUMER_MAX_CACHE_BYTES = 64 * 1024 * 1024


def push_consumer_cache_limits() -> tuple[int, int]:
    """Java push consumer cache defaults: 4096 messages and 64 MiB, not the docs' 1024 (RETRY-5X-06, CLAIM-08)."""
    return PUSH_CONSUMER_MAX_CACHE_MESSAGES, PUSH_CONSUMER_MAX_CACHE_BYTES


@dataclass(frozen=True)
class BackoffPolicy:
    """``Settings.backoff_policy`` as the proxy sends it (RETRY-5X-01)."""

    max_attempts: int
    strategy: Literal["CUSTOMIZED", "EXPONENTIAL"]
    customized_ms: tuple[int, ...] = ()
    initial_ms: int = 0
    max_ms: int = 0
    multiplier: float = 0.0


@dataclass(frozen=True)
class ConsumerSettings:
    """Consumer part of the Settings a proxy answers with (RETRY-5X-01)."""

    backoff: BackoffPolicy
    fifo: bool = False
    receive_batch_size: int = RECEIVE_BATCH_SIZE
    long_polling_timeout_ms: int = LONG_POLLING_TIMEOUT_MS


@dataclass(frozen=True)
class ProducerSettings:
    backoff: BackoffPolicy
    max_body_size: int = MAX_BODY_SIZE
    validate_message_type: bool = True


def consumer_settings(retry_max_times: int = DEFAULT_RETRY_MAX_TIMES, policy: str = "CUSTOMIZED",
                      customized_ms: Sequence[int] = DEFAULT_CUSTOMIZED_NEXT_MS,
                      exponential_ms: tuple[int, int, float] = DEFAULT_EXPONENTIAL_MS,
                      fifo: bool = False) -> ConsumerSettings:
    """``mergeSubscriptionData``: max_attempts = retryMaxTimes + 1 (RETRY-5X-01)."""
    if policy == "CUSTOMIZED":
        backoff = BackoffPolicy(retry_max_times + 1, "CUSTOMIZED", tuple(customized_ms))
    else:
        initial, maximum, mult = exponential_ms
        backoff = BackoffPolicy(retry_max_times + 1, "EXPONENTIAL", (), initial, maximum, mult)
    return ConsumerSettings(backoff, fifo)


def group_retry_policy(config: dict) -> tuple[str, tuple[int, ...], tuple[int, int, float]]:
    """A ``SubscriptionGroupConfig.groupRetryPolicy`` as JSON (``mqadmin updateSubGroup -p``) read as
    ``mergeSubscriptionData`` reads it (RETRY-5X-01): the type (CUSTOMIZED when absent), the customized
    ``next`` ladder and the exponential ``{initial, max, multiplier}``, each the class's default when that
    part is absent. A ladder that is not a non-empty list of positive whole milliseconds is refused."""
    kind = config.get("type", "CUSTOMIZED")
    if kind not in ("CUSTOMIZED", "EXPONENTIAL"):
        raise ValueError(f"groupRetryPolicy.type {kind!r}: expected CUSTOMIZED or EXPONENTIAL")
    customized = config.get("customizedRetryPolicy") or {}
    ladder = customized.get("next", DEFAULT_CUSTOMIZED_NEXT_MS)
    if not isinstance(ladder, (list, tuple)) or not ladder or \
            not all(isinstance(ms, int) and not isinstance(ms, bool) and ms > 0 for ms in ladder):
        raise ValueError(f"customizedRetryPolicy.next {ladder!r}: expected a list of positive milliseconds")
    exponential = config.get("exponentialRetryPolicy") or {}
    initial, maximum, multiplier = DEFAULT_EXPONENTIAL_MS
    return kind, tuple(ladder), (int(exponential.get("initial", initial)), int(exponential.get("max", maximum)),
                                 float(exponential.get("multiplier", multiplier)))


SDK_HEARTBEAT_WALL_MS = 10_000
"""The Java, Python and Node.js 5.x SDKs heartbeat every 10 s of their own (wall) time."""


def offline_since_ms(last_seen_ms: int, expiry_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS) -> int:
    """When the broker takes a client last heard from at ``last_seen_ms`` for gone (RETRY-5X-09):
    ``scanNotActiveChannel`` drops a channel idle past ``CHANNEL_EXPIRED_TIMEOUT``; the proxy's renew task,
    every ``renewSchedulePeriodMillis``, then finds it offline and clears its handles."""
    return last_seen_ms + expiry_ms


def client_expiry_ms(time_scale: float) -> int:
    """The channel expiry of a server whose clock runs ``1 / time_scale`` times the clients' (``rmqc serve
    --time-scale``): 120 s of its time, or three of the clients' wall-clock heartbeats, whichever is longer,
    so that a live client never looks silent (at time scale 1, 120 s as the broker has it)."""
    return max(CHANNEL_EXPIRED_TIMEOUT_MS, int(3 * SDK_HEARTBEAT_WALL_MS / time_scale))


def cleared_visible_at_ms(cleared_at_ms: int) -> int:
    """An offline client's renewed handle is visible again ``invisibleTimeMillisWhenClear`` after the
    clear (``ReceiptHandleProcessor.clearGroup``, RETRY-5X-09); the revive follows (RETRY-5X-11)."""
    return cleared_at_ms + INVISIBLE_WHEN_CLEAR_MS


def producer_settings() -> ProducerSettings:
    """``mergeProducerData``: 3 attempts, exponential 10 ms / 1 s / x2 (RETRY-5X-01)."""
    initial, maximum, mult = PRODUCER_EXPONENTIAL_MS
    return ProducerSettings(BackoffPolicy(PRODUCER_MAX_ATTEMPTS, "EXPONENTIAL", (), initial, maximum, mult))


def server_customized_delay_ms(reconsume_times: int, next_ms: Sequence[int] = DEFAULT_CUSTOMIZED_NEXT_MS) -> int:
    """``CustomizedRetryPolicy.nextDelayDuration``: ``next[rt + 2]``, clamped (RETRY-5X-02). ``rt + 2`` is an
    ``int``: at ``Integer.MAX_VALUE - 1`` and above it wraps negative and Java throws
    ArrayIndexOutOfBoundsException (here ``IndexError``)
    (remoting/.../subscription/CustomizedRetryPolicy.java#CustomizedRetryPolicy.nextDelayDuration@rocketmq-all-5.3.3 L86)."""
    if reconsume_times < 0:
        reconsume_times = 0  # rt < 0 behaves as index 2 (vector rt=-1 -> 10000)
    index = min(int32(reconsume_times + 2), len(next_ms) - 1)
    if index < 0:
        raise IndexError(f"Index {index} out of bounds for length {len(next_ms)}")
    return next_ms[index]


def server_exponential_delay_ms(reconsume_times: int, initial_ms: int = DEFAULT_EXPONENTIAL_MS[0],
                                max_ms: int = DEFAULT_EXPONENTIAL_MS[1],
                                multiplier: float = DEFAULT_EXPONENTIAL_MS[2]) -> int:
    """``ExponentialRetryPolicy.nextDelayDuration``: rt clamped to [0, 32] (RETRY-5X-02), then
    ``Math.min(max, initial * (long) Math.pow(multiplier, rt))`` in Java's arithmetic: the power is a double
    cast to a long (beyond it the long's bounds) and the product is a ``long`` that wraps, so a large
    multiplier or initial delay can give a negative delay
    (remoting/.../subscription/ExponentialRetryPolicy.java#ExponentialRetryPolicy.nextDelayDuration@rocketmq-all-5.3.3
    L71-79; common/.../subscription/ExponentialRetryPolicy.java@rocketmq-all-5.0.0 L71-79)."""
    rt = max(0, min(32, reconsume_times))
    power = java_double_to_long(ieee_pow(float(multiplier), float(rt)))
    return min(max_ms, int64(initial_ms * power))


def server_next_delay_ms(policy: BackoffPolicy, reconsume_times: int) -> int:
    """The group policy's server-side delay, used on STOP_RENEW (RETRY-5X-02, RETRY-5X-09)."""
    if policy.strategy == "CUSTOMIZED":
        return server_customized_delay_ms(reconsume_times, policy.customized_ms)
    return server_exponential_delay_ms(reconsume_times, policy.initial_ms, policy.max_ms, policy.multiplier)


def java_customized_delay_ms(attempt: int, durations_ms: Sequence[int] = DEFAULT_CUSTOMIZED_NEXT_MS) -> int:
    """Java ``CustomizedBackoffRetryPolicy.getNextAttemptDelay`` (RETRY-5X-03): the attempt's duration, the
    last one past the end; a policy with no durations cannot be built (``checkArgument`` in the
    constructor) and a non-positive attempt is refused, both ``ValueError`` here."""
    if not durations_ms:
        raise ValueError("durations must not be empty")
    if attempt <= 0:
        raise ValueError(f"attempt must be positive, got {attempt}")
    return durations_ms[min(attempt, len(durations_ms)) - 1]


def java_exponential_delay_ms(attempt: int, initial_ms: float, max_ms: float, multiplier: float) -> float:
    """Java ``ExponentialBackoffRetryPolicy.getNextAttemptDelay`` (RETRY-5X-04), in Java's arithmetic:
    ``Math.min(initialNanos * Math.pow(multiplier, attempt - 1), maxNanos)`` in doubles, where
    ``Math.pow`` overflows to infinity (and ``0 * infinity`` is NaN), then zero when ``<= 0`` (NaN is
    not), else ``Duration.ofNanos((long) delay)`` (NaN casts to 0, beyond a long to the long's bounds).
    Returned in milliseconds."""
    if attempt <= 0:
        raise ValueError(f"attempt must be positive, got {attempt}")
    initial_ns, max_ns = round(initial_ms * 1_000_000), round(max_ms * 1_000_000)
    product = float(initial_ns) * ieee_pow(multiplier, float(attempt - 1))
    delay = product if math.isnan(product) or product <= max_ns else float(max_ns)  # Math.min keeps NaN
    if delay <= 0:
        return 0
    return java_double_to_long(delay) / 1_000_000


def java_double_to_long(value: float) -> int:
    """Java's ``(long) value``: NaN is 0, infinities and values beyond a long are its bounds, the rest
    truncated toward zero (RETRY-5X-04)."""
    if math.isnan(value):
        return 0
    if value >= 2.0 ** 63:
        return (1 << 63) - 1
    if value <= -(2.0 ** 63):
        return -(1 << 63)
    return int(value)


def python_customized_durations_s(durations_ms: Sequence[int]) -> list[int]:
    """The Python SDK keeps only whole seconds of each server duration (RETRY-5X-05)."""
    return [d // 1000 for d in durations_ms]


def python_customized_delay_s(attempt: int, durations_s: Sequence[int]) -> float:
    """Python ``CustomizedBackoffRetryPolicy.get_next_attempt_delay`` (RETRY-5X-05).

    Attempt 0 returns the last element (Java raises); an empty list gives 1 s.
    """
    if attempt < 0:
        raise ValueError(f"attempt must not be negative, got {attempt}")
    if not durations_s:
        return PYTHON_DEFAULT_DELAY_S
    return durations_s[-1] if attempt > len(durations_s) else durations_s[attempt - 1]


def python_exponential_delay_s(attempt: int, initial_s: float, max_s: float, multiplier: float) -> float:
    """Python ``ExponentialBackoffRetryPolicy.get_next_attempt_delay`` in seconds (RETRY-5X-05)."""
    if not initial_s or not max_s or not multiplier:
        return PYTHON_DEFAULT_DELAY_S
    return min(initial_s * multiplier ** (attempt - 1), max_s)


def delivery_attempt(reconsume_times: int) -> int:
    """The proxy sets ``deliveryAttempt = reconsumeTimes + 1`` (RETRY-5X-06)."""
    return reconsume_times + 1


@dataclass(frozen=True)
class SdkRetryPolicy:
    """The consumer retry policy an SDK actually runs with after the settings sync."""

    max_attempts: int
    delay_ms: tuple[int, ...] = field(default_factory=tuple)   # by attempt, 1-based via index attempt-1
    exponential: tuple[float, float, float] | None = None
    """(initial ms, max ms, multiplier) of an EXPONENTIAL policy; a customized one has none."""

    @property
    def strategy(self) -> str:
        return "CUSTOMIZED" if self.exponential is None else "EXPONENTIAL"

    def next_attempt_delay_ms(self, attempt: int) -> int:
        if self.exponential is not None:
            return int(java_exponential_delay_ms(attempt, *self.exponential))
        return java_customized_delay_ms(attempt, self.delay_ms)


def sdk_consumer_policy(sdk: Sdk, settings: ConsumerSettings) -> "SdkRetryPolicy | node5x.NodeRetryPolicy":
    """What each SDK derives from the server's backoff policy (RETRY-5X-03..06).

    Java keeps nanosecond durations and either strategy. Python keeps whole seconds of a customized
    list, and for an exponential group policy falls back to its own customized policy with no
    durations (1 s every time) and 17 attempts.
    """
    b = settings.backoff
    if sdk == node5x.SDK:  # SDK-NODE-01: no policy (customized) acts as one attempt and a nack of 0 ms
        return node5x.consumer_policy(b.strategy, b.max_attempts, b.initial_ms, b.max_ms, b.multiplier) or \
            SdkRetryPolicy(node5x.FIFO_MAX_ATTEMPTS_WITHOUT_POLICY, (node5x.NACK_WITHOUT_POLICY_MS,))
    if sdk == "java":
        if b.strategy == "CUSTOMIZED":
            return SdkRetryPolicy(b.max_attempts, tuple(b.customized_ms))
        return SdkRetryPolicy(b.max_attempts, (), (b.initial_ms, b.max_ms, b.multiplier))
    if b.strategy == "CUSTOMIZED":
        seconds = python_customized_durations_s(b.customized_ms)
        return SdkRetryPolicy(b.max_attempts, tuple(s * 1000 for s in seconds))
    return SdkRetryPolicy(17, (PYTHON_DEFAULT_DELAY_S * 1000,))


def nack_invisible_ms(policy: SdkRetryPolicy, attempt: int) -> int:
    """Invisible duration a push consumer asks for after a failed attempt (RETRY-5X-06)."""
    return policy.next_attempt_delay_ms(attempt)


def pop_filter(reconsume_times: int, max_attempts: int, tag_matches: bool = True) -> str:
    """``PopMessageResultFilterImpl``: NO_MATCH, TO_DLQ (rt >= maxAttempts), else DELIVER (RETRY-5X-07)."""
    if not tag_matches:
        return "NO_MATCH"
    if reconsume_times >= max_attempts:
        return "TO_DLQ"
    return "DELIVER"


def fifo_local_attempts(sdk: Sdk, server_delivery_attempt: int, max_attempts: int) -> list[int]:
    """The attempt numbers a FIFO push consumer runs locally on a message that keeps failing (RETRY-5X-08).

    Java and Node.js (SDK-NODE-04) start from the server's deliveryAttempt; Python always counts from 1.
    """
    first = server_delivery_attempt if counts_from_server_attempt(sdk) else 1
    return list(range(first, max(first, max_attempts) + 1))


def counts_from_server_attempt(sdk: str) -> bool:
    """Whether an SDK's FIFO consumer numbers its local attempts on from the server's delivery attempt."""
    return sdk in ("java", node5x.SDK)


def fifo_local_waits_ms(sdk: Sdk, server_delivery_attempt: int, policy: SdkRetryPolicy) -> list[int]:
    """Waits between consecutive local FIFO attempts: ``delay(attempt)`` after each failed attempt < max (RETRY-5X-08)."""
    attempts = fifo_local_attempts(sdk, server_delivery_attempt, policy.max_attempts)
    return [policy.next_attempt_delay_ms(a) for a in attempts[:-1]]


class IllegalInvisibleTime(ValueError):
    code = codes.ILLEGAL_INVISIBLE_TIME


def receive_invisible_ms(requested_ms: int, auto_renew: bool, proxy_auto_renew: bool = True) -> int:
    """``ReceiveMessage`` invisible time: 60 s under auto-renew, else validated [10 s, 12 h] (RETRY-5X-09)."""
    if auto_renew and proxy_auto_renew:
        return DEFAULT_INVISIBLE_MS
    if not MIN_INVISIBLE_FOR_RECEIVE_MS <= requested_ms <= MAX_INVISIBLE_MS:
        raise IllegalInvisibleTime(f"illegal invisible time {requested_ms} ms")
    return requested_ms


def change_invisible_ms(requested_ms: int) -> int:
    """``ChangeInvisibleDuration`` accepts 0..12 h (RETRY-5X-09)."""
    if not 0 <= requested_ms <= MAX_INVISIBLE_MS:
        raise IllegalInvisibleTime(f"illegal invisible time {requested_ms} ms")
    return requested_ms


def renew_invisible_ms(renew_times: int) -> int:
    """``RenewStrategyPolicy``: 1m, 3m, 5m, 10m, 30m, 1h by renew count (RETRY-5X-09)."""
    return RENEW_STEPS_MS[min(renew_times, len(RENEW_STEPS_MS) - 1)]


def renew_due(next_visible_ms: int, now_ms: int) -> bool:
    """A handle is renewed when it has 10 s or less left (RETRY-5X-09)."""
    return next_visible_ms - now_ms <= RENEW_AHEAD_MS


def renew_stopped(consume_start_ms: int, now_ms: int) -> bool:
    """After 3 h of consumption the proxy stops renewing (STOP_RENEW) (RETRY-5X-09)."""
    return now_ms - consume_start_ms >= RENEW_MAX_TIME_MS


def long_polling_ms(requested_ms: int | None, remaining_ms: int, request_timeout_ms: int) -> int:
    """Long-polling time clamped to [5 s, 20 s] and the deadline; < 5 s left -> ILLEGAL_POLLING_TIME (RETRY-5X-09)."""
    if remaining_ms < 5000:
        raise ValueError(codes.ILLEGAL_POLLING_TIME)
    value = requested_ms if requested_ms is not None else remaining_ms - request_timeout_ms // 2
    return min(max(5000, min(20_000, value)), remaining_ms)


REVIVE_LAG_MS = 2_000
"""``PopReviveService.mergeAndRevive`` revives a checkpoint only once the scan's end time is more than
``PopAckConstants.ackTimeInterval`` (1 s) + 1 s past its revive time (RETRY-5X-11)."""
RETRY_WAKES_LONG_POLL_SINCE = "5.2.0"
PROXY_LONG_POLLING_MS_5_0 = 30_000
"""``ProxyConfig.grpcClientConsumerLongPollingTimeoutMillis`` (RETRY-5X-11)."""


def revive_at_ms(visible_at_ms: int, lag_ms: int = REVIVE_LAG_MS) -> int:
    """The earliest time an expired checkpoint's message is in the retry topic (RETRY-5X-11); ``lag_ms``: the
    lag in the caller's time (a prediction of a release whose clocks run on a time scale: the 2 s are wall
    seconds there, longer in spec time)."""
    return visible_at_ms + lag_ms


def retry_arrival_wakes_long_poll(release: str) -> bool:
    """Whether a revived message wakes a waiting long-poll receive: only from 5.2.0
    (``PopLongPollingService.notifyMessageArrivingWithRetryTopic``); before, it waits for the poll to end
    (RETRY-5X-11)."""
    return versions.holds(release, since=RETRY_WAKES_LONG_POLL_SINCE)


FIRST_POP_TIME = "1ST_POP_TIME"


ORIGIN_GROUP = "ORIGIN_GROUP"
REVIVE_ORIGIN_GROUP_SINCE = "5.5.0"
"""From 5.5.0 the revive tags its copy with the checkpoint's group (``MessageConst.PROPERTY_ORIGIN_GROUP``)."""


def revived_properties(properties: Mapping[str, str], reconsume_times: int, pop_time_ms: int,
                       group: str | None = None, release: str = versions.LATEST) -> dict[str, str]:
    """``PopReviveService.reviveRetry``: the copy written to the pop retry topic carries the message's
    properties as they are (no RETRY_TOPIC, no ORIGIN_MESSAGE_ID is added), with ``1ST_POP_TIME`` set to the
    checkpoint's pop time on the first revive, or when it is missing; from 5.5.0 also ``ORIGIN_GROUP`` = the
    checkpoint's group (broker/.../processor/PopReviveService.java#PopReviveService.reviveRetry@rocketmq-all-5.5.0)
    (RETRY-5X-10)."""
    props = dict(properties)
    if reconsume_times == 0 or FIRST_POP_TIME not in props:
        props[FIRST_POP_TIME] = str(pop_time_ms)
    if group is not None and versions.holds(release, since=REVIVE_ORIGIN_GROUP_SINCE):
        props[ORIGIN_GROUP] = group
    return props


def revive_reconsume_times(reconsume_times: int, suspend: bool = False, release: str = versions.LATEST) -> int:
    """A revived pop message is written back with ``reconsumeTimes + 1``; from 5.5.0 a checkpoint written by a
    ChangeInvisibleDuration with ``suspend`` keeps ``reconsumeTimes`` (RETRY-5X-10)."""
    if suspend and versions.holds(release, since=REVIVE_ORIGIN_GROUP_SINCE):
        return reconsume_times
    return reconsume_times + 1


def pop_init_offset(min_offset: int, max_offset: int, offset_zero_in_memory: bool, init_mode_max: bool = True,
                    retry_topic: bool = False, release: str = versions.LATEST) -> int:
    """``PopMessageProcessor.getInitOffset`` for a new group (RETRY-5X-10): a retry topic starts at its min
    offset from 5.3.1; from 5.1.4 a queue whose offset 0 is still in memory starts at 0; else the last message
    (the proxy's init mode is MAX), so before 5.1.4 a group's first pop skips all but the last message."""
    if not init_mode_max or (retry_topic and versions.key(release) >= versions.key("5.3.1")):
        return min_offset
    if min_offset <= 0 and offset_zero_in_memory and versions.key(release) >= versions.key("5.1.4"):
        return 0
    return max(0, max_offset - 1)
