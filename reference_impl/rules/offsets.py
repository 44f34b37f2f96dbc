"""Consumer offsets: where to start, where offsets live, when they are committed, pull statuses (OFFSET-01..05)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from spec import versions

from . import codes

CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"
DEPRECATED_AS_LAST = ("CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST", "CONSUME_FROM_MIN_OFFSET",
                      "CONSUME_FROM_MAX_OFFSET")
PERSIST_CONSUMER_OFFSET_INTERVAL_MS = 5000
PERSIST_INITIAL_DELAY_MS = 10_000
DEFAULT_CONSUME_TIMESTAMP_AGO_MS = 30 * 60_000
BROKER_CHANNEL_EXPIRED_MS = 120_000


def crash_detected_at(crash_ms: int) -> int:
    """A consumer that dies without unregistering is dropped 120 s later; its queues pause till then (OFFSET-04)."""
    return crash_ms + BROKER_CHANNEL_EXPIRED_MS


def persisted_offset(updates: list[tuple[int, int]], start_ms: int, at_ms: int, before: int) -> int:
    """The offset the broker holds at ``at_ms`` for a consumer that persists on the OFFSET-04 cadence:
    the last in-memory value at or before the last persist tick, else ``before`` (OFFSET-04)."""
    tick = last_persist_before(at_ms, start_ms)
    if tick is None:
        return before
    value = before
    for t, offset in updates:
        if t <= tick:
            value = max(value, offset)
    return value


def compute_pull_from_where(stored: int, consume_from_where: str, retry_topic: bool, max_offset: int,
                            search_offset: Callable[[], int]) -> int:
    """``computePullFromWhereWithException`` (OFFSET-01).

    ``stored``: the broker's offset (>= 0), -1 for QUERY_NOT_FOUND, -2 for another error.
    """
    if stored >= 0:
        return stored
    if stored == -2:
        return -1
    if consume_from_where in (CONSUME_FROM_LAST_OFFSET, *DEPRECATED_AS_LAST):
        return 0 if retry_topic else max_offset
    if consume_from_where == CONSUME_FROM_FIRST_OFFSET:
        return 0
    if consume_from_where == CONSUME_FROM_TIMESTAMP:
        return max_offset if retry_topic else search_offset()
    raise ValueError(f"unknown ConsumeFromWhere {consume_from_where}")


EMPTY_QUEUE_NOT_FOUND_SINCE = "5.1.0"


def broker_query_offset(stored: int | None, min_offset: int, offset_zero_in_memory: bool,
                        queue_empty: bool = False, release: str = versions.LATEST) -> tuple[int, int]:
    """``queryConsumerOffset``: (response code, offset); a young queue starts a new group at 0 (OFFSET-02).

    ``queue_empty``: the queue has no message at offset 0 yet. Until 5.0.0 the broker asks whether that message
    is on disk (``checkInDiskByConsumeOffset``: no message is not on disk), so an empty queue answers 0; from
    5.1.0 whether it is in memory (``checkInMemByConsumeOffset``: no message is not in memory), so an empty queue
    answers QUERY_NOT_FOUND and a CONSUME_FROM_LAST_OFFSET client asks for the max offset next (OFFSET-01)."""
    if stored is not None and stored >= 0:
        return codes.R_SUCCESS, stored
    if queue_empty:
        offset_zero_in_memory = not versions.holds(release, since=EMPTY_QUEUE_NOT_FOUND_SINCE)
    if min_offset <= 0 and offset_zero_in_memory:
        return codes.R_SUCCESS, 0
    return codes.R_QUERY_NOT_FOUND, -1


def broker_offset_key(topic: str, group: str) -> str:
    """Clustering offsets live on the broker under ``topic@group`` (OFFSET-03)."""
    return f"{topic}@{group}"


def local_offset_path(client_id: str, group: str, base: str = "~/.rocketmq_offsets") -> str:
    """Broadcasting offsets live on the client (OFFSET-03)."""
    return f"{base}/{client_id}/{group}/offsets.json"


def persist_times_ms(start_ms: int, until_ms: int) -> list[int]:
    """When ``MQClientInstance`` persists offsets: 10 s after start, then every 5 s (OFFSET-04)."""
    t, out = start_ms + PERSIST_INITIAL_DELAY_MS, []
    while t <= until_ms:
        out.append(t)
        t += PERSIST_CONSUMER_OFFSET_INTERVAL_MS
    return out


def last_persist_before(crash_ms: int, start_ms: int = 0) -> int | None:
    """The last persisted moment before a crash; progress after it is consumed again (OFFSET-04)."""
    times = persist_times_ms(start_ms, crash_ms)
    return times[-1] if times else None


@dataclass(frozen=True)
class PullResult:
    status: str
    next_begin_offset: int
    response_code: int


def get_message_status(offset: int, min_offset: int, max_offset: int, queue_exists: bool = True,
                       scanned_units: int = 0, found: int = 0, removing: bool = False) -> PullResult:
    """``DefaultMessageStore.getMessage`` status and ``nextBeginOffset``, with the broker's code (OFFSET-05)."""
    if not queue_exists:
        status, nxt = "NO_MATCHED_LOGIC_QUEUE", 0
    elif max_offset == 0:
        status, nxt = "NO_MESSAGE_IN_QUEUE", 0
    elif offset < min_offset:
        status, nxt = "OFFSET_TOO_SMALL", min_offset
    elif offset == max_offset:
        status, nxt = "OFFSET_OVERFLOW_ONE", offset
    elif offset > max_offset:
        status, nxt = "OFFSET_OVERFLOW_BADLY", max_offset
    else:
        nxt = offset + scanned_units
        status = "FOUND" if found else ("MESSAGE_WAS_REMOVING" if removing else "NO_MATCHED_MESSAGE")
    return PullResult(status, nxt, pull_response_code(status, offset))


def pull_response_code(status: str, requested_offset: int) -> int:
    """Broker response code for a store status (OFFSET-05)."""
    if status == "FOUND":
        return codes.R_SUCCESS
    if status in ("MESSAGE_WAS_REMOVING", "NO_MATCHED_MESSAGE"):
        return codes.R_PULL_RETRY_IMMEDIATELY
    if status in ("NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"):
        return codes.R_PULL_OFFSET_MOVED if requested_offset != 0 else codes.R_PULL_NOT_FOUND
    if status in ("OFFSET_FOUND_NULL", "OFFSET_OVERFLOW_ONE"):
        return codes.R_PULL_NOT_FOUND
    return codes.R_PULL_OFFSET_MOVED
