"""The spring-kafka retry-topic pattern of seed 000, as rules (KAFKA-01..04)."""
from __future__ import annotations

from typing import Mapping

RETRY_HEADER = "__retry_dead_head__"
DEFAULT_MAX_RETRY_COUNT = 3
DEFAULT_RETRY_DELAY_MS = 10_000


def retry_topic_for(topic: str, group: str) -> str:
    """Each consumer's own retry topic (KAFKA-01)."""
    return f"{topic}-{group}-retry"


def dead_topic_for(topic: str, group: str) -> str:
    """Each consumer's own dead topic (KAFKA-01)."""
    return f"{topic}-{group}-dead"


def retry_count(headers: Mapping[str, str]) -> int:
    """The count read from the header, 0 when absent (KAFKA-01)."""
    return int(headers.get(RETRY_HEADER, "0"))


def on_failure(headers: Mapping[str, str], max_retry_count: int = DEFAULT_MAX_RETRY_COUNT) -> tuple[str, dict[str, str]]:
    """``handleError``: ("dead", headers) at the maximum, else ("retry", headers with count + 1) (KAFKA-01)."""
    count = retry_count(headers)
    if count >= max_retry_count:
        return "dead", dict(headers)
    return "retry", {**headers, RETRY_HEADER: str(count + 1)}


def retry_wait_ms(record_timestamp_ms: int, now_ms: int, delay_ms: int = DEFAULT_RETRY_DELAY_MS) -> int:
    """The retry listener sleeps until timestamp + delay (KAFKA-02)."""
    return max(0, record_timestamp_ms + delay_ms - now_ms)


def resend_target(headers: Mapping[str, str]) -> tuple[str, int]:
    """The original topic and partition saved in the header (KAFKA-03)."""
    return headers["origin_topic"], int(headers["origin_partition"])


def interceptor_keeps(headers: Mapping[str, str], group: str) -> bool:
    """Records re-sent for another group are dropped by the interceptor (KAFKA-04)."""
    return headers.get("origin_group", group) == group
