"""Queue allocation among the consumers of a clustering group (ALLOC-00, ALLOC-01)."""
from __future__ import annotations

from typing import Sequence, TypeVar

Q = TypeVar("Q")


def allocate_averagely(queues: Sequence[Q], consumer_ids: Sequence[str], current: str) -> list[Q]:
    """``AllocateMessageQueueAveragely`` over sorted inputs (ALLOC-00, ALLOC-01).

    The caller passes queues sorted by (topic, brokerName, queueId); consumer ids are sorted here.
    An unknown current id gets nothing; empty inputs are an error, as in ``check()``.
    """
    if not current or not queues or not consumer_ids:
        raise ValueError("currentCID, mqAll and cidAll must not be empty")
    cids = sorted(consumer_ids)
    if current not in cids:
        return []
    i, n, c = cids.index(current), len(queues), len(cids)
    mod = n % c
    if n <= c:
        avg = 1
    else:
        avg = n // c + 1 if (mod > 0 and i < mod) else n // c
    start = i * avg if (mod > 0 and i < mod) else i * avg + mod
    span = min(avg, n - start)
    return [queues[start + k] for k in range(max(0, span))]
