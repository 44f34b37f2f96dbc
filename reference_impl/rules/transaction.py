"""Transaction messages: half messages, end transaction, the check loop, discard (TX-01..06)."""
from __future__ import annotations

import enum
from typing import Iterable, Mapping

from history.values import LocalTransactionState
from spec import versions

from . import codes
from .codes import RocketMQError
from .primitives import INT_MAX, INT_MIN, java_parse_long
from .delay import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
TRANSACTION_CHECK_MAX = 15
TRANSACTION_TIMEOUT_MS = 6000
FILE_RESERVED_TIME_MS = 72 * 3_600_000
MAX_TRANSACTION_RECOVERY_SECOND = 3600
OP_TAG = "d"


def check_interval_ms(release: str = versions.LATEST) -> int:
    """``BrokerConfig.transactionCheckInterval`` of a release (TX-03): 60 s up to 5.1.0, 30 s from 5.1.1."""
    return 60_000 if versions.holds(release, until="5.1.0") else 30_000


def checks_may_still_come(last_ms: Iterable[int], now_ms: int, release: str = versions.LATEST) -> bool:
    """Whether an open half may still be checked: it is checked every interval after the transaction timeout
    (TX-03, at most 15 times: TX-04), so once no check came for two intervals past that (``last_ms``: each
    open half's send or last check), the broker has given up on it."""
    window = 2 * check_interval_ms(release) + TRANSACTION_TIMEOUT_MS
    return any(now_ms - last < window for last in last_ms)


def half_message(topic: str, queue_id: int, properties: Mapping[str, str], producer_group: str) -> tuple[str, int, dict[str, str]]:
    """Where the broker stores a prepared message and with which properties (TX-01)."""
    props = dict(properties)
    props.pop("DELAY", None)
    props["TRAN_MSG"] = "true"
    props["PGROUP"] = producer_group
    props["REAL_TOPIC"] = topic
    props["REAL_QID"] = str(queue_id)
    return HALF_TOPIC, 0, props


TX_REFUSES_DELAY_SINCE = "5.5.0"
"""From 5.5.0 the 4.x transactional producer refuses a delayed message instead of clearing its delay level."""
_DELAY_PROPERTIES = ("DELAY", "TIMER_DELAY_MS", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS")


def transactional_send_properties(properties: Mapping[str, str], producer_group: str,
                                  version: str = versions.LATEST) -> dict[str, str]:
    """What ``DefaultMQProducerImpl.sendMessageInTransaction`` sends as the half message (TX-01): up to 5.3.3
    it clears ``DELAY`` when the level parses to anything but 0; from 5.5.0 ``ensureNotDelayedForTransactional``
    throws ``MQClientException("Transactional messages do not support delayed delivery")`` when ``DELAY`` or a
    timer property is present at all (``DELAY=0`` too) and nothing is sent
    (client/.../impl/producer/DefaultMQProducerImpl.java#DefaultMQProducerImpl.ensureNotDelayedForTransactional
    @rocketmq-all-5.5.0). Then ``TRAN_MSG = "true"`` and ``PGROUP`` = the producer group."""
    props = dict(properties)
    if versions.holds(version, since=TX_REFUSES_DELAY_SINCE):
        if any(props.get(name) is not None for name in _DELAY_PROPERTIES):
            raise RocketMQError(-1, "Transactional messages do not support delayed delivery")
    elif props.get("DELAY") is not None and java_parse_long(props["DELAY"], INT_MIN, INT_MAX) != 0:
        props.pop("DELAY")
    props["TRAN_MSG"] = "true"
    props["PGROUP"] = producer_group
    return props


def local_state_after_send(send_status: str, listener_state: LocalTransactionState | None) -> LocalTransactionState:
    """The local transaction runs only on SEND_OK; flush/slave failures roll back; null -> UNKNOW (TX-01)."""
    if send_status in ("FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"):
        return LocalTransactionState.ROLLBACK_MESSAGE
    if listener_state is None:
        return LocalTransactionState.UNKNOW
    return listener_state


def commit_or_rollback_flag(state: LocalTransactionState) -> int:
    """``endTransaction`` header: COMMIT 8, ROLLBACK 12, UNKNOW 0 (TX-02)."""
    return {LocalTransactionState.COMMIT_MESSAGE: TRANSACTION_COMMIT_TYPE,
            LocalTransactionState.ROLLBACK_MESSAGE: TRANSACTION_ROLLBACK_TYPE,
            LocalTransactionState.UNKNOW: TRANSACTION_NOT_TYPE}[state]


def committed_message(half_properties: Mapping[str, str]) -> tuple[str, int, dict[str, str]]:
    """A commit restores REAL_TOPIC/REAL_QID (removed from the properties) and clears TRAN_MSG (TX-02)."""
    props = dict(half_properties)
    topic = props.pop("REAL_TOPIC")
    queue_id = int(props.pop("REAL_QID"))
    props.pop("TRAN_MSG", None)
    return topic, queue_id, props


def end_transaction_error(half_properties: Mapping[str, str], producer_group: str) -> str | None:
    """The broker's producer-group check on END_TRANSACTION (TX-02)."""
    if half_properties.get("PGROUP") != producer_group:
        return "The producer group wrong"
    return None


class CheckDecision(enum.Enum):
    DONE = "DONE"          # resolved by an op message
    DISCARD = "DISCARD"    # check count reached, or too old
    WAIT = "WAIT"          # inside the immunity time: stop scanning this queue
    CHECK = "CHECK"        # send CHECK_TRANSACTION_STATE, re-append with the count + 1


def check_decision(now_ms: int, born_ms: int, check_times: int, resolved: bool,
                   immunity_seconds: int | None = None,
                   check_max: int = TRANSACTION_CHECK_MAX,
                   timeout_ms: int = TRANSACTION_TIMEOUT_MS) -> CheckDecision:
    """One step of the check loop for a half message (TX-03, TX-04)."""
    if resolved:
        return CheckDecision.DONE
    if check_times >= check_max or now_ms - born_ms > FILE_RESERVED_TIME_MS:
        return CheckDecision.DISCARD
    immunity = immunity_seconds * 1000 if immunity_seconds is not None else timeout_ms
    age = now_ms - born_ms
    if 0 <= age < immunity:
        return CheckDecision.WAIT
    if age > immunity or age < 0:
        return CheckDecision.CHECK
    return CheckDecision.WAIT


def escape_fail_sleep_ms(escape_fail_count: int) -> int:
    """develop's back-off after a failed escape: ``100L * (2 ^ escapeFailCnt)``, where ``^`` is XOR (TX-03, CLAIM-13)."""
    return 100 * (2 ^ escape_fail_count)


def op_message(half_queue_id: int, half_queue_offset: int) -> tuple[str, int, str, str]:
    """The op message written after commit or rollback: topic, queue, tag, body (TX-05)."""
    return OP_HALF_TOPIC, half_queue_id, OP_TAG, str(half_queue_offset)


def validate_recovery_seconds(seconds: int) -> int:
    """Proxy: orphaned_transaction_recovery_duration above 3600 s is BAD_REQUEST (TX-06)."""
    return codes.BAD_REQUEST if seconds > MAX_TRANSACTION_RECOVERY_SECOND else codes.OK


def half_producer_group(topic: str, producer_group: str, through_proxy: bool) -> str:
    """The PGROUP a half message carries: the producer's group over remoting; the topic through a 5.x
    proxy, which registers producers under the topics they declare (TX-07)."""
    return topic if through_proxy else producer_group


def checked_under(declared_topics: Iterable[str], producer_group: str, through_proxy: bool) -> tuple[str, ...]:
    """The producer groups whose halves a producer is asked to check: its group over remoting, the topics it
    declared through a 5.x proxy (none declared, never asked) (TX-07)."""
    return tuple(declared_topics) if through_proxy else (producer_group,)
