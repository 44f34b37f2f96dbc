"""Producer queue selection (QSEL-01..04) and latency fault tolerance (SEND-4X-06, SEND-4X-07)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Callable, Iterable, Sequence

from spec import versions

from .allocation import MessageQueue
from .java_semantics import java_split
from .primitives import INT_MAX, INT_MIN, java_parse_long, java_string_compare, to_int32
from .validation import PERM_READ, PERM_WRITE


class ThreadLocalIndex:
    """``ThreadLocalIndex`` (QSEL-01); ``variant`` 4.9.8 returns ``abs(i & MAX)``, develop ``i & MAX``."""

    def __init__(self, seed: int, variant: str = "4.9.8") -> None:
        self.index = abs(seed) if variant == "4.9.8" else seed

    def increment_and_get(self) -> int:
        self.index = to_int32(self.index + 1)
        return self.index & INT_MAX


def select_one(queues: Sequence[MessageQueue], index: ThreadLocalIndex,
               last_broker: str | None = None) -> MessageQueue:
    """``TopicPublishInfo.selectOneMessageQueue(lastBrokerName)`` without latency faults (QSEL-02)."""
    if last_broker is None:
        return queues[index.increment_and_get() % len(queues)]
    for _ in range(len(queues)):
        pos = abs(index.increment_and_get()) % len(queues)
        if queues[pos].broker_name != last_broker:
            return queues[pos]
    return queues[index.increment_and_get() % len(queues)]


@dataclass(frozen=True)
class QueueData:
    """One broker's entry in a topic route."""

    broker_name: str
    read_queues: int
    write_queues: int
    perm: int
    has_master: bool = True


def publish_queues(topic: str, route: Iterable[QueueData], order_topic_conf: str | None = None) -> list[MessageQueue]:
    """``topicRouteData2TopicPublishInfo`` (QSEL-03). An order-topic configuration is cut with ``String.split``
    (trailing empty parts dropped: ``"a:4;"`` is one broker); each ``broker:count`` item's second part is
    ``Integer.parseInt``-ed (``ValueError`` / ``IndexError`` where Java throws)."""
    if order_topic_conf:
        out = []
        for part in java_split(order_topic_conf, ";"):
            item = java_split(part, ":")
            broker, count = item[0], java_parse_long(item[1], INT_MIN, INT_MAX)
            out += [MessageQueue(topic, broker, q) for q in range(count)]
        return out
    out = []
    # QueueData.compareTo is String.compareTo of the broker names, UTF-16 units (not code points: a name
    # outside the BMP sorts before U+E000..U+FFFF), Collections.sort stable
    # (client/.../impl/factory/MQClientInstance.java#topicRouteData2TopicPublishInfo@rocketmq-all-5.3.3 L251-252)
    for qd in sorted(route, key=cmp_to_key(lambda a, b: java_string_compare(a.broker_name, b.broker_name))):
        if qd.perm & PERM_WRITE and qd.has_master:
            out += [MessageQueue(topic, qd.broker_name, q) for q in range(qd.write_queues)]
    return out


def subscribe_queues(topic: str, route: Iterable[QueueData]) -> list[MessageQueue]:
    """Consumers use readable queue data and ``readQueueNums`` (QSEL-03)."""
    return [MessageQueue(topic, qd.broker_name, q) for qd in route if qd.perm & PERM_READ
            for q in range(qd.read_queues)]


def new_topic_queue_nums(default_topic_queue_nums: int, tbw102_read_queues: int) -> int:
    """Unknown topic: ``min(defaultTopicQueueNums, TBW102.readQueueNums)`` (QSEL-03)."""
    return min(default_topic_queue_nums, tbw102_read_queues)


class PythonQueueSelector:
    """Python 5.x SDK ``QueueSelector``: ``queues[index++ % len]`` (QSEL-04)."""

    def __init__(self, queues: Sequence[MessageQueue], seed_index: int) -> None:
        self.queues, self.index = list(queues), seed_index

    def select_next_queue(self) -> MessageQueue:
        queue = self.queues[self.index % len(self.queues)]
        self.index += 1
        return queue


def java_take_message_queues(queues: Sequence[MessageQueue], start_index: int, excluded_brokers: set[str],
                             count: int) -> list[MessageQueue]:
    """Java 5.x ``PublishingLoadBalancer.takeMessageQueues``: up to ``count`` queues on distinct brokers,
    round robin, skipping isolated endpoints unless all are isolated (SEND-5X-01, QSEL-04)."""
    def take(skip: set[str]) -> list[MessageQueue]:
        picked: list[MessageQueue] = []
        brokers: set[str] = set()
        for k in range(len(queues)):
            mq = queues[(start_index + k) % len(queues)]
            if mq.broker_name in brokers or mq.broker_name in skip:
                continue
            picked.append(mq)
            brokers.add(mq.broker_name)
            if len(picked) >= count:
                break
        return picked

    return take(excluded_brokers) or take(set())


# ---- latency fault tolerance (SEND-4X-06, SEND-4X-07) -------------------------------------------

LATENCY_TABLES = {
    "4.9.8": ((50, 100, 550, 1000, 2000, 3000, 15000), (0, 0, 30000, 60000, 120000, 180000, 600000), 30000),
    "5.1.4": ((50, 100, 550, 1800, 3000, 5000, 15000), (0, 0, 2000, 5000, 6000, 10000, 30000), 10000),
}


def not_available_duration(latency_ms: int, version: str = "4.9.8", isolation: bool = False) -> int:
    """``computeNotAvailableDuration`` for the release's tables (4.9.8's up to 5.1.3, 5.1.4's from 5.1.4: any
    release, client/.../latency/MQFaultStrategy.java@rocketmq-all-5.3.3 L29-30, @rocketmq-all-5.0.0 L31-32);
    isolation uses the fixed X (SEND-4X-06)."""
    latency_max, durations, isolation_latency = LATENCY_TABLES["5.1.4" if versions.holds(version, since="5.1.4")
                                                               else "4.9.8"]
    if isolation:
        latency_ms = isolation_latency
    for i in range(len(latency_max) - 1, -1, -1):
        if latency_ms >= latency_max[i]:
            return durations[i]
    return 0


@dataclass
class FaultTable:
    """Broker -> unavailable-until time (SEND-4X-06)."""

    version: str = "4.9.8"
    until: dict[str, int] = field(default_factory=dict)

    def update(self, broker: str, latency_ms: int, now_ms: int, isolation: bool = False) -> None:
        self.until[broker] = now_ms + not_available_duration(latency_ms, self.version, isolation)

    def available(self, broker: str, now_ms: int) -> bool:
        return now_ms >= self.until.get(broker, 0)


def select_with_latency_fault(queues: Sequence[MessageQueue], index: ThreadLocalIndex,
                              available: Callable[[str], bool]) -> MessageQueue | None:
    """4.9.8 ``MQFaultStrategy.selectOneMessageQueue`` first pass: the first queue on an available broker
    scanning from the next index; None when every broker is unavailable (SEND-4X-07)."""
    start = index.increment_and_get()
    for k in range(len(queues)):
        pos = abs(to_int32(start + k)) % len(queues)
        if available(queues[pos].broker_name):
            return queues[pos]
    return None
