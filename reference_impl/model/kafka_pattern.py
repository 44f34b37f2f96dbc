"""A model of the seed-000 Kafka retry-topic pattern on the virtual clock (KAFKA-01, KAFKA-02, KAFKA-03, KAFKA-04).

Partitions, one committed offset per (group, partition), an error handler that routes failures to
the group's retry or dead topic, and a retry listener that sleeps until timestamp + delay and then
re-sends to the original partition. Events use the same log as the RocketMQ model.
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from history.events import EventRecorder
from history.profiles import KAFKA_RETRY
from history.values import ListenerOutcome
from history.views import Listener, MessageView, SendResult

from ..rules import kafka_pattern as rules
from .clock import VirtualClock


@dataclass
class Record:
    msg_id: str
    key: str | None
    value: bytes
    timestamp_ms: int
    headers: dict[str, str] = field(default_factory=dict)


class KafkaPatternSimulation:
    def __init__(self, *, run_id: str = "run", seed: int = 0, max_retry_count: int = rules.DEFAULT_MAX_RETRY_COUNT,
                 retry_delay_ms: int = rules.DEFAULT_RETRY_DELAY_MS) -> None:
        self.clock = VirtualClock()
        self.recorder = EventRecorder(run_id, "reference", KAFKA_RETRY)
        self.partitions: dict[str, int] = {}
        self.logs: dict[tuple[str, int], list[Record]] = defaultdict(list)
        self.max_retry_count = max_retry_count
        self.retry_delay_ms = retry_delay_ms
        self._ids = itertools.count(1)
        self._seed = seed
        self._subscribers: dict[str, list["KafkaConsumer"]] = defaultdict(list)

    def emit(self, kind: str, **fields: object) -> None:
        self.recorder.emit(kind, self.clock.now_ms, **fields)

    def create_topic(self, topic: str, partitions: int) -> None:
        self.partitions[topic] = partitions

    def append(self, topic: str, partition: int, record: Record) -> int:
        log = self.logs[(topic, partition)]
        log.append(record)
        for consumer in self._subscribers[topic]:
            self.clock.call_later(0, consumer.pump)
        return len(log) - 1

    def send(self, topic: str, value: bytes, key: str | None, round_robin: itertools.count) -> SendResult:
        msg_id = f"K{self._seed:04d}{next(self._ids):012d}"
        if topic not in self.partitions:
            self.create_topic(topic, 1)
        partition = next(round_robin) % self.partitions[topic]
        self.emit("SEND_INVOKE", topic=topic, msg_id=msg_id, key=key)
        offset = self.append(topic, partition, Record(msg_id, key, value, self.clock.now_ms))
        self.emit("SEND_OK", topic=topic, msg_id=msg_id, key=key, queue_id=partition, queue_offset=offset)
        return SendResult("SEND_OK", msg_id, topic, partition, offset)

    def subscribe(self, consumer: "KafkaConsumer", topic: str) -> None:
        self._subscribers[topic].append(consumer)
        self.clock.call_later(0, consumer.pump)


class KafkaConsumer:
    """One consumer of a group on a topic, with the pattern's error handler and retry listener."""

    def __init__(self, sim: KafkaPatternSimulation, group: str, topic: str, listener: Listener, client_id: str) -> None:
        self.sim, self.group, self.topic, self.listener, self.client_id = sim, group, topic, listener, client_id
        self.retry_topic = rules.retry_topic_for(topic, group)
        self.dead_topic = rules.dead_topic_for(topic, group)
        self.offsets: dict[tuple[str, int], int] = defaultdict(int)
        self.running = True
        self._retry_busy_until = 0
        sim.create_topic(self.retry_topic, 1)
        sim.create_topic(self.dead_topic, 1)
        sim.subscribe(self, topic)
        sim.subscribe(self, self.retry_topic)

    def shutdown(self) -> None:
        self.running = False

    def pump(self) -> None:
        if not self.running:
            return
        for partition in range(self.sim.partitions[self.topic]):
            key = (self.topic, partition)
            log = self.sim.logs[key]
            while self.offsets[key] < len(log):
                offset = self.offsets[key]
                self._consume(partition, offset, log[offset])
                self.offsets[key] = offset + 1  # commitSync(offset + 1)
        self._pump_retry()

    def _consume(self, partition: int, offset: int, record: Record) -> None:
        if not rules.interceptor_keeps(record.headers, self.group):  # KAFKA-04
            return
        attempt = rules.retry_count(record.headers) + 1
        view = MessageView(record.msg_id, self.topic, record.key, None, record.value, attempt - 1, attempt,
                           partition, offset, self.topic, None, dict(record.headers))
        self.sim.emit("DELIVER", topic=self.topic, group=self.group, client_id=self.client_id, msg_id=record.msg_id,
                      key=record.key, queue_id=partition, queue_offset=offset, attempt=attempt)
        outcome = self.listener(view)
        ok = outcome is ListenerOutcome.SUCCESS
        self.sim.emit("CONSUME_OK" if ok else "CONSUME_FAIL", topic=self.topic, group=self.group,
                      client_id=self.client_id, msg_id=record.msg_id, key=record.key, attempt=attempt)
        if ok:
            return
        headers = {**record.headers, "origin_topic": self.topic, "origin_partition": str(partition),
                   "origin_group": self.group}
        where, headers = rules.on_failure(headers, self.sim.max_retry_count)  # KAFKA-01
        target = self.dead_topic if where == "dead" else self.retry_topic
        copy = Record(record.msg_id, record.key, record.value, self.sim.clock.now_ms, headers)
        stored_at = self.sim.append(target, 0, copy)
        if where == "dead":
            self.sim.emit("DLQ", topic=self.dead_topic, group=self.group, msg_id=record.msg_id, key=record.key,
                          queue_id=0, queue_offset=stored_at, attempt=attempt)
        else:
            self.sim.emit("RETRY_SCHEDULED", topic=self.topic, group=self.group, msg_id=record.msg_id, key=record.key,
                          attempt=attempt + 1, expected_delay_ms=self.sim.retry_delay_ms)

    def _pump_retry(self) -> None:
        """The retry listener handles one record at a time, sleeping until timestamp + delay (KAFKA-02, KAFKA-03)."""
        key = (self.retry_topic, 0)
        log = self.sim.logs[key]
        now = self.sim.clock.now_ms
        if self.offsets[key] >= len(log) or now < self._retry_busy_until:
            return
        record = log[self.offsets[key]]
        wait = rules.retry_wait_ms(record.timestamp_ms, now, self.sim.retry_delay_ms)
        if wait > 0:
            self._retry_busy_until = now + wait
            self.sim.clock.call_later(wait, self.pump)
            return
        topic, partition = rules.resend_target(record.headers)
        self.sim.append(topic, partition, Record(record.msg_id, record.key, record.value, now, dict(record.headers)))
        self.offsets[key] += 1  # ack
        self.sim.clock.call_later(0, self.pump)
