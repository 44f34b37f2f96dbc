"""Queue allocation among the consumers of a clustering group (ALLOC-00..06). Pure functions."""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from .java_semantics import java_split
from .primitives import md5_ring_hash

DEFAULT_VIRTUAL_NODES = 10


@dataclass(frozen=True, order=True)
class MessageQueue:
    """``MessageQueue``; ordering is (topic, brokerName, queueId) as ``compareTo`` (ALLOC-00)."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"


Strategy = Callable[[Sequence[MessageQueue], Sequence[str], str], list[MessageQueue]]


def prepare(queues: Iterable[MessageQueue], consumer_ids: Iterable[str]) -> tuple[list[MessageQueue], list[str]]:
    """``rebalanceByTopic`` sorts mqAll and cidAll before allocating (ALLOC-00)."""
    return sorted(queues), sorted(consumer_ids)


def _check(queues: Sequence[object], consumer_ids: Sequence[str], current: str) -> bool:
    """``check()``: empty inputs raise; a current id outside cidAll gets nothing (ALLOC-00)."""
    if not current or not queues or not consumer_ids:
        raise ValueError("currentCID, mqAll and cidAll must not be empty")
    return current in consumer_ids


def allocate_averagely(queues: Sequence, consumer_ids: Sequence[str], current: str) -> list:
    """``AllocateMessageQueueAveragely`` over sorted inputs (ALLOC-01)."""
    if not _check(queues, consumer_ids, current):
        return []
    i, n, c = list(consumer_ids).index(current), len(queues), len(consumer_ids)
    mod = n % c
    if n <= c:
        avg = 1
    else:
        avg = n // c + 1 if (mod > 0 and i < mod) else n // c
    start = i * avg if (mod > 0 and i < mod) else i * avg + mod
    span = min(avg, n - start)
    return [queues[start + k] for k in range(max(0, span))]


def allocate_by_circle(queues: Sequence, consumer_ids: Sequence[str], current: str) -> list:
    """``AllocateMessageQueueAveragelyByCircle``: every c-th queue from the consumer's index (ALLOC-02)."""
    if not _check(queues, consumer_ids, current):
        return []
    i, c = list(consumer_ids).index(current), len(consumer_ids)
    return [queues[j] for j in range(i, len(queues)) if j % c == i]


def allocate_consistent_hash(queues: Sequence[MessageQueue], consumer_ids: Sequence[str], current: str,
                             virtual_nodes: int = DEFAULT_VIRTUAL_NODES,
                             hash_function: Callable[[str], int] = md5_ring_hash) -> list[MessageQueue]:
    """``AllocateMessageQueueConsistentHash``: MD5 ring of ``cid-k`` virtual nodes (ALLOC-03).

    Each queue goes to the first ring node at or after ``hash(str(mq))``, wrapping around; a later
    consumer's virtual node with the same hash replaces an earlier one.
    """
    if virtual_nodes < 0:
        raise ValueError(f"illegal virtualNodeCnt: {virtual_nodes}")
    if not _check(queues, consumer_ids, current):
        return []
    ring: dict[int, str] = {}
    for cid in consumer_ids:
        for k in range(virtual_nodes):
            ring[hash_function(f"{cid}-{k}")] = cid
    keys = sorted(ring)
    if not keys:  # routeNode on an empty ring (no virtual nodes): null, no queue for anyone
        return []
    out = []
    for mq in queues:
        h = hash_function(str(mq))
        pos = bisect.bisect_left(keys, h)
        owner = ring[keys[pos % len(keys)]]
        if owner == current:
            out.append(mq)
    return out


def allocate_machine_room_nearby(queues: Sequence[MessageQueue], consumer_ids: Sequence[str], current: str,
                                 inner: Strategy, broker_room: Callable[[MessageQueue], str],
                                 consumer_room: Callable[[str], str]) -> list[MessageQueue]:
    """``AllocateMachineRoomNearby`` (ALLOC-04): own room first, then rooms without consumers for everyone."""
    if not _check(queues, consumer_ids, current):
        return []
    mq_by_room: dict[str, list[MessageQueue]] = {}
    for mq in queues:
        room = broker_room(mq)
        if not room:
            raise ValueError(f"broker room of {mq} is empty")
        mq_by_room.setdefault(room, []).append(mq)
    cid_by_room: dict[str, list[str]] = {}
    for cid in consumer_ids:
        room = consumer_room(cid)
        if not room:
            raise ValueError(f"consumer room of {cid} is empty")
        cid_by_room.setdefault(room, []).append(cid)
    mine = consumer_room(current)
    out: list[MessageQueue] = []
    if mine in mq_by_room:
        out += inner(mq_by_room[mine], cid_by_room[mine], current)
    for room in sorted(mq_by_room):
        if room not in cid_by_room:
            out += inner(mq_by_room[room], list(consumer_ids), current)
    return out


def allocate_by_config(configured: Sequence[MessageQueue]) -> Strategy:
    """``AllocateMessageQueueByConfig``: the configured list for everyone, no check, no split (ALLOC-05)."""
    return lambda queues, consumer_ids, current: list(configured)


def allocate_by_machine_room(queues: Sequence[MessageQueue], consumer_ids: Sequence[str], current: str,
                             consume_idcs: Iterable[str]) -> list[MessageQueue]:
    """``AllocateMessageQueueByMachineRoom`` over brokers named ``IDC@name`` (ALLOC-06); the name is cut with
    ``String.split("@")``, which drops trailing empty parts (``"a@"`` is one part, not two)
    (client/.../rebalance/AllocateMessageQueueByMachineRoom.java#AllocateMessageQueueByMachineRoom.allocate)."""
    if not _check(queues, consumer_ids, current):
        return []
    idcs = set(consume_idcs)
    premq = [mq for mq in queues
             if len(parts := java_split(mq.broker_name, "@")) == 2 and parts[0] in idcs]
    i, c = list(consumer_ids).index(current), len(consumer_ids)
    mod, rem = len(premq) // c, len(premq) % c
    out = premq[mod * i: mod * i + mod]
    if rem > i:
        out.append(premq[i + mod * c])
    return out


STRATEGIES: Mapping[str, Strategy] = {
    "AVG": allocate_averagely,
    "AVG_BY_CIRCLE": allocate_by_circle,
    "CONSISTENT_HASH": allocate_consistent_hash,
}
