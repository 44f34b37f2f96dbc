"""Delay levels, scheduled and timer messages (DELAY-01..09). Pure functions."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from spec import versions

from .primitives import java_parse_long, java_split, to_int64, utf16_units

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
"""Broker default ``messageDelayLevel`` (DELAY-01)."""

UNIT_MS: Mapping[str, int] = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
SCHEDULE_TOPIC_QUEUE_NUM = 18  # fixed, independent of the level count (DELAY-03)
TIMER_TOPIC = "rmq_sys_wheel_timer"
DELAY_FOR_A_WHILE_MS = 100
DELAY_FOR_A_PERIOD_MS = 10_000
FIRST_DELIVERY_CHECK_MS = 1000

TRANSACTION_NOT_TYPE = 0
TRANSACTION_PREPARED_TYPE = 4
TRANSACTION_COMMIT_TYPE = 8
TRANSACTION_ROLLBACK_TYPE = 12


@dataclass(frozen=True)
class DelayTable:
    """The result of ``parseDelayLevel``: level -> delay in ms, the max level, and whether it parsed."""

    levels: Mapping[int, int]
    max_level: int
    ok: bool

    def delay_ms(self, level: int) -> int:
        return self.levels[level]


def parse_delay_levels(level_string: str) -> DelayTable:
    """``ScheduleMessageService.parseDelayLevel`` (DELAY-02), as Java runs it.

    ``levelString.split(" ")`` (trailing empty tokens dropped, repeated or leading spaces give empty
    tokens); per token: the last UTF-16 unit is the unit, ``maxDelayLevel`` is raised, the rest is
    ``Long.parseLong``-ed (a sign, digits of any script, nothing beyond a long), and the delay is
    ``unit * number`` in 64-bit arithmetic. The first token that throws (empty, bad number, unknown
    unit) stops parsing with ``ok=False``, keeping the levels parsed before it; an empty token throws
    before ``maxDelayLevel`` is raised, the others after.
    """
    levels: dict[int, int] = {}
    max_level = 0
    for i, token in enumerate(java_split(level_string, " ")):
        units = utf16_units(token)
        if not units:  # value.substring(-1): StringIndexOutOfBoundsException
            return DelayTable(levels, max_level, ok=False)
        unit = UNIT_MS.get(units[-1])
        level = i + 1
        if level > max_level:
            max_level = level
        try:
            number = java_parse_long("".join(units[:-1]))
        except ValueError:  # NumberFormatException
            return DelayTable(levels, max_level, ok=False)
        if unit is None:  # unboxing a null unit: NullPointerException
            return DelayTable(levels, max_level, ok=False)
        levels[level] = to_int64(unit * number)
    return DelayTable(levels, max_level, ok=True)


DEFAULT_DELAY_TABLE = parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL)


def delay_ms_for_level(level: int, table: DelayTable = DEFAULT_DELAY_TABLE) -> int:
    """The delay of a level (DELAY-01); the level is clamped to the table first (DELAY-04)."""
    return table.levels[clamp_delay_level(level, table.max_level)]


def delay_level_to_queue_id(level: int) -> int:
    """Schedule-topic queue id of a level: ``level - 1`` (DELAY-03)."""
    return level - 1


def queue_id_to_delay_level(queue_id: int) -> int:
    """Level of a schedule-topic queue id: ``qid + 1`` (DELAY-03)."""
    return queue_id + 1


def clamp_delay_level(level: int, max_level: int) -> int:
    """Levels above the max become the max (DELAY-04)."""
    return max_level if level > max_level else level


@dataclass(frozen=True)
class StoredPlacement:
    """Where the broker puts a message, and the properties it stores with it."""

    topic: str
    queue_id: int
    properties: Mapping[str, str] = field(default_factory=dict)


def route_delayed_message(topic: str, queue_id: int, properties: Mapping[str, str],
                          tran_type: int = TRANSACTION_NOT_TYPE,
                          max_level: int = DEFAULT_DELAY_TABLE.max_level) -> StoredPlacement:
    """Put-time routing of a delayed message (DELAY-04).

    Only non-transactional or committed messages with ``DELAY > 0`` are moved to the schedule
    topic; the level is clamped and the DELAY property rewritten, REAL_TOPIC and REAL_QID added.
    """
    props = dict(properties)
    level = int(props.get("DELAY", "0"))  # getDelayTimeLevel: Integer.parseInt of the property when set
    if tran_type not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE) or level <= 0:
        return StoredPlacement(topic, queue_id, props)
    level = clamp_delay_level(level, max_level)
    props["DELAY"] = str(level)
    props["REAL_TOPIC"] = topic
    props["REAL_QID"] = str(queue_id)
    return StoredPlacement(SCHEDULE_TOPIC, delay_level_to_queue_id(level), props)


def compute_deliver_timestamp(level: int, store_timestamp: int,
                              table: DelayTable = DEFAULT_DELAY_TABLE) -> int:
    """``computeDeliverTimestamp``: store time plus the level's delay, or +1000 if unknown, in 64-bit
    arithmetic (DELAY-05)."""
    delay = table.levels.get(level)
    return to_int64(store_timestamp + (delay if delay is not None else 1000))  # long addition wraps


def schedule_tags_code(delay_property: int, store_timestamp: int,
                       table: DelayTable = DEFAULT_DELAY_TABLE) -> int | None:
    """The ConsumeQueue tagsCode of a schedule-topic message, or None when DELAY <= 0 (DELAY-05)."""
    level = min(delay_property, table.max_level)
    if level <= 0:
        return None
    return compute_deliver_timestamp(level, store_timestamp, table)


def correct_deliver_timestamp(now: int, deliver_timestamp: int, level: int,
                              table: DelayTable = DEFAULT_DELAY_TABLE) -> int:
    """A deliver time further ahead than one full delay means "now" (DELAY-06)."""
    max_timestamp = to_int64(now + table.levels[level])  # long addition wraps
    return now if deliver_timestamp > max_timestamp else deliver_timestamp


def next_check_delay_ms(now: int, deliver_timestamp: int) -> int | None:
    """The delivery loop: None when the message is due, else re-check after 100 ms (DELAY-06)."""
    return None if to_int64(deliver_timestamp - now) <= 0 else DELAY_FOR_A_WHILE_MS  # countdown, a long


def restore_from_schedule(properties: Mapping[str, str]) -> StoredPlacement:
    """``messageTimeup``: back to REAL_TOPIC/REAL_QID with DELAY cleared; REAL_* kept (DELAY-06).

    ``None`` placement topic means discard (a half-message real topic).
    """
    props = dict(properties)
    props.pop("DELAY", None)
    return StoredPlacement(props["REAL_TOPIC"], int(props["REAL_QID"]), props)


class BatchRejected(ValueError):
    """``MQClientException("Failed to initiate the MessageBatch", UnsupportedOperationException)``: code -1."""

    code = -1

    @property
    def message(self) -> str:
        return f"Failed to initiate the MessageBatch: {self}"


BATCH_TIMERS_SINCE = "5.5.0"
"""From 5.5.0 ``generateFromList`` refuses a timer message too, and words the refusal for every delay."""


def check_batch(messages: Sequence[Mapping[str, object]], release: str = versions.LATEST) -> None:
    """``MessageBatch.generateFromList`` (DELAY-07): raises BatchRejected with the client's message.

    Each message is a mapping with ``topic``, optional ``delay_level``, ``wait_store_msg_ok`` and, read from
    5.5.0 on, the timer properties ``delay_ms``, ``delay_sec`` and ``deliver_ms``. Up to 5.3.3 only a delay
    level is refused ("TimeDelayLevel is not supported for batching"); from 5.5.0 any of the four above zero
    is ("Delayed messages are not supported for batching")
    (common/.../message/MessageBatch.java#MessageBatch.generateFromList@rocketmq-all-5.3.3 L48-50,
    @rocketmq-all-5.5.0 L48-50). An empty list has no first message: Java's ``first.getTopic()`` throws
    NullPointerException, which ``DefaultMQProducer.batch`` wraps like the others
    (@rocketmq-all-5.3.3 L68).
    """
    if not messages:
        raise BatchRejected("NullPointerException: an empty batch has no first message")
    timers = versions.holds(release, since=BATCH_TIMERS_SINCE)
    first = messages[0]
    for m in messages:
        if timers:
            if any(int(m.get(name, 0) or 0) > 0 for name in ("delay_level", "delay_ms", "delay_sec", "deliver_ms")):
                raise BatchRejected("Delayed messages are not supported for batching")
        elif int(m.get("delay_level", 0) or 0) > 0:
            raise BatchRejected("TimeDelayLevel is not supported for batching")
        if str(m["topic"]).startswith("%RETRY%"):
            raise BatchRejected("Retry Group is not supported for batching")
        if m["topic"] != first["topic"]:
            raise BatchRejected("The topic of the messages in one batch should be the same")
        if m.get("wait_store_msg_ok", True) != first.get("wait_store_msg_ok", True):
            raise BatchRejected("The waitStoreMsgOK of the messages in one batch should the same")


def store_rejects_batch(tran_type: int, delay_level: int) -> bool:
    """Store-side check: transactional or delayed batches are MESSAGE_ILLEGAL (13) (DELAY-07)."""
    return tran_type != TRANSACTION_NOT_TYPE or delay_level > 0


# ---- 5.x timer messages (DELAY-08) -------------------------------------------------------------

TIMER_PRECISION_MS = 1000
TIMER_MAX_DELAY_SEC = 259_200
PROXY_MAX_DELAY_TIME_MS = 86_400_000


class TimerMessageIllegal(ValueError):
    """WHEEL_TIMER_MSG_ILLEGAL (mapped to MESSAGE_ILLEGAL 13)."""


def timer_deliver_ms(properties: Mapping[str, str], now: int) -> int | None:
    """Deliver time from the timer properties, precedence DELAY_SEC, DELAY_MS, DELIVER_MS (DELAY-08)."""
    try:
        if "TIMER_DELAY_SEC" in properties:
            return now + int(properties["TIMER_DELAY_SEC"]) * 1000
        if "TIMER_DELAY_MS" in properties:
            return now + int(properties["TIMER_DELAY_MS"])
        if "TIMER_DELIVER_MS" in properties:
            return int(properties["TIMER_DELIVER_MS"])
    except ValueError as exc:
        raise TimerMessageIllegal(f"timer property is not a number: {exc}") from exc
    return None


def round_timer_deliver_ms(deliver_ms: int, precision_ms: int = TIMER_PRECISION_MS) -> int:
    """Timer rounding: an exact multiple moves one tick earlier, else floor (DELAY-08)."""
    if deliver_ms % precision_ms == 0:
        return deliver_ms - precision_ms
    return deliver_ms // precision_ms * precision_ms


def route_timer_message(topic: str, queue_id: int, properties: Mapping[str, str], now: int,
                        max_delay_sec: int = TIMER_MAX_DELAY_SEC,
                        precision_ms: int = TIMER_PRECISION_MS,
                        max_level: int = DEFAULT_DELAY_TABLE.max_level) -> StoredPlacement:
    """``handleScheduleMessage`` for a non-transactional message (DELAY-04 and DELAY-08).

    A delay level wins and clears the timer properties; otherwise a future timer deliver time
    sends the message to the timer topic with TIMER_OUT_MS; a past one stores it normally.
    """
    props = dict(properties)
    if int(props.get("DELAY", "0")) > 0:
        for key in ("TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS"):
            props.pop(key, None)
        return route_delayed_message(topic, queue_id, props, max_level=max_level)
    deliver = timer_deliver_ms(props, now)
    if deliver is None or deliver <= now:
        return StoredPlacement(topic, queue_id, props)
    if deliver - now > max_delay_sec * 1000:
        raise TimerMessageIllegal(f"timer delay {deliver - now} ms exceeds {max_delay_sec} s")
    props["TIMER_OUT_MS"] = str(round_timer_deliver_ms(deliver, precision_ms))
    props["REAL_TOPIC"] = topic
    props["REAL_QID"] = str(queue_id)
    return StoredPlacement(TIMER_TOPIC, 0, props)


def proxy_delivery_time_legal(delivery_timestamp: int, now: int,
                              max_delay_ms: int = PROXY_MAX_DELAY_TIME_MS) -> bool:
    """The gRPC proxy rejects a delivery more than 1 day ahead with ILLEGAL_DELIVERY_TIME (DELAY-08)."""
    return delivery_timestamp - now <= max_delay_ms


def proxy_uses_delay_level(release: str = versions.LATEST) -> bool:
    """The proxy's ``useDelayLevel`` default: on up to 5.1.0, off from 5.1.1 (DELAY-09)."""
    return versions.key(release) < versions.key("5.1.1")


def delay_level_for_timestamp(delivery_timestamp: int, now: int,
                              table: DelayTable = DEFAULT_DELAY_TABLE) -> int:
    """Proxy ``computeDelayLevel``: the first level whose delay exceeds the interval, else the last (DELAY-09)."""
    interval = delivery_timestamp - now
    ordered = sorted(table.levels.items(), key=lambda kv: kv[1])
    for level, delay in ordered:
        if delay > interval:
            return level
    return ordered[-1][0]
