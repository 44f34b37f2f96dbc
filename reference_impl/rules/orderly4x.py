"""4.x remoting orderly consumption (ORDER-4X-01..04). Pure functions."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from . import retry4x
from .primitives import INT_MAX, java_is_blank
from .retry4x import ListenerOutcome

DEFAULT_SUSPEND_MS = 1000
SUSPEND_MIN_MS = 10
SUSPEND_MAX_MS = 30_000
CLIENT_LOCK_MAX_LIVE_MS = 30_000
CLIENT_LOCK_INTERVAL_MS = 20_000
BROKER_LOCK_MAX_LIVE_MS = 60_000
PULL_MAX_IDLE_MS = 120_000


class OrderlyStatus(enum.Enum):
    SUCCESS = "SUCCESS"
    COMMIT = "COMMIT"
    ROLLBACK = "ROLLBACK"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


def orderly_status(outcome: ListenerOutcome) -> OrderlyStatus:
    """Exception or null -> SUSPEND_CURRENT_QUEUE_A_MOMENT (ORDER-4X-01)."""
    return {
        ListenerOutcome.SUCCESS: OrderlyStatus.SUCCESS,
        ListenerOutcome.COMMIT: OrderlyStatus.COMMIT,
        ListenerOutcome.ROLLBACK: OrderlyStatus.ROLLBACK,
    }.get(outcome, OrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT)


def suspend_time_ms(context_suspend_ms: int = -1, consumer_suspend_ms: int = DEFAULT_SUSPEND_MS) -> int:
    """Context value, else the consumer's, clamped to [10, 30000] ms (ORDER-4X-02)."""
    delay = consumer_suspend_ms if context_suspend_ms == -1 else context_suspend_ms
    return max(SUSPEND_MIN_MS, min(SUSPEND_MAX_MS, delay))


def orderly_max_reconsume_times(max_reconsume_times: int) -> int:
    """-1 means Integer.MAX_VALUE (ORDER-4X-03, RETRY-CONC-06)."""
    return INT_MAX if max_reconsume_times == -1 else max_reconsume_times


@dataclass(frozen=True)
class ReconsumeCheck:
    """Result of ``checkReconsumeTimes`` over a failed batch (ORDER-4X-03)."""

    suspend: bool
    to_dlq: tuple[int, ...]          # indexes published to %RETRY%group with rt >= max (-> DLQ)
    new_reconsume_times: tuple[int, ...]


def check_reconsume_times(reconsume_times: Sequence[int], max_reconsume_times: int,
                          send_back_ok: bool = True) -> ReconsumeCheck:
    """``checkReconsumeTimes`` (ORDER-4X-03): local retry below the max, DLQ publish at it."""
    limit = orderly_max_reconsume_times(max_reconsume_times)
    suspend = False
    to_dlq: list[int] = []
    new_rt: list[int] = []
    for i, rt in enumerate(reconsume_times):
        if rt >= limit:
            if send_back_ok:
                to_dlq.append(i)
                new_rt.append(rt)
            else:
                suspend = True
                new_rt.append(rt + 1)
        else:
            suspend = True
            new_rt.append(rt + 1)
    return ReconsumeCheck(suspend, tuple(to_dlq), tuple(new_rt))


def dlq_publish_properties(properties: dict[str, str], origin_topic: str, msg_id: str, reconsume_times: int,
                           max_reconsume_times: int, develop: bool = False) -> dict[str, str]:
    """The message the orderly service publishes to ``%RETRY%group`` at the max (ORDER-4X-03).

    RECONSUME_TIME is rt (4.9.8) or rt + 1 (develop); the broker's RETRY-CONC-11 check then stores it
    in ``%DLQ%group``.
    """
    props = dict(properties)
    if java_is_blank(props.get("ORIGIN_MESSAGE_ID")):  # set after the properties are copied: kept
        props["ORIGIN_MESSAGE_ID"] = msg_id
    props["RETRY_TOPIC"] = origin_topic
    props["RECONSUME_TIME"] = str(reconsume_times + 1 if develop else reconsume_times)
    props["MAX_RECONSUME_TIMES"] = str(max_reconsume_times)
    props.pop("TRAN_MSG", None)
    props["DELAY"] = str(retry4x.retry_level_for(reconsume_times))
    return props


@dataclass(frozen=True)
class OrderlyResult:
    """What ``processConsumeResult`` decides (ORDER-4X-01)."""

    commit_offset: int          # -1: nothing committed
    redeliver_after_ms: int | None  # None: go on consuming
    rollback: bool = False


def process_consume_result(in_flight_offsets: Sequence[int], status: OrderlyStatus, auto_commit: bool,
                           check: ReconsumeCheck | None, suspend_ms: int) -> OrderlyResult:
    """``ConsumeMessageOrderlyService.processConsumeResult`` (ORDER-4X-01).

    ``check`` is the result of ``check_reconsume_times`` when the status is SUSPEND.
    """
    commit = (max(in_flight_offsets) + 1) if in_flight_offsets else -1
    if status is OrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
        assert check is not None
        if check.suspend:
            return OrderlyResult(-1, suspend_ms)
        return OrderlyResult(commit if auto_commit else -1, None)
    if auto_commit:
        return OrderlyResult(commit, None)
    if status is OrderlyStatus.COMMIT:
        return OrderlyResult(commit, None)
    if status is OrderlyStatus.ROLLBACK:
        return OrderlyResult(-1, suspend_ms, rollback=True)
    return OrderlyResult(-1, None)


def lock_expired(last_lock_ms: int, now_ms: int, max_live_ms: int = CLIENT_LOCK_MAX_LIVE_MS) -> bool:
    """``ProcessQueue.isLockExpired`` (ORDER-4X-04)."""
    return now_ms - last_lock_ms > max_live_ms


def needs_lock(broadcasting: bool) -> bool:
    """Orderly consumption in broadcasting needs no broker lock (ORDER-4X-04)."""
    return not broadcasting
