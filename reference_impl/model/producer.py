"""Producers of the model: 4.x remoting and 5.x gRPC sends, batches and transactions."""
from __future__ import annotations

import itertools
from collections import defaultdict
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from ..rules import codes, delay as delay_rules, fifo as fifo_rules, transaction as tx_rules
from ..rules.primitives import java_string_hash
from .views import SendResult

if TYPE_CHECKING:
    from .broker import HalfMessage
    from .simulation import Simulation

TransactionCheck = Callable[[str | None, int], tx_rules.LocalTransactionState | None]
"""Given the message key and the check number (1-based), the producer's answer."""


class Producer:
    """A producer; ``grpc`` picks the 5.x proxy's queue choice for message groups (FIFO-01 vs FIFO-03)."""

    def __init__(self, sim: "Simulation", group: str, client_id: str, grpc: bool) -> None:
        self.sim, self.group, self.client_id, self.grpc = sim, group, client_id, grpc
        self._round_robin = itertools.count()
        self._producer_seq: dict[str | None, itertools.count] = defaultdict(itertools.count)

    def _choose_queue(self, topic: str, message_group: str | None) -> int:
        config = self.sim.broker.topics[topic]
        if message_group:
            if self.grpc:
                return fifo_rules.proxy_queue_for_group(message_group, config.write_queues)
            return fifo_rules.select_queue_by_hash_4x(java_string_hash(message_group), config.write_queues)
        return next(self._round_robin) % config.write_queues

    def _properties(self, msg_id: str, key: str | None, tags: str | None, message_group: str | None,
                    delay_level: int, delivery_timestamp_ms: int | None,
                    properties: Mapping[str, str] | None) -> dict[str, str]:
        props = dict(properties or {})
        props["UNIQ_KEY"] = msg_id
        if key:
            props["KEYS"] = key
        if tags:
            props["TAGS"] = tags
        if message_group:
            props["__SHARDINGKEY"] = message_group
        if delay_level:
            props["DELAY"] = str(delay_level)
        if delivery_timestamp_ms is not None:
            props["TIMER_DELIVER_MS"] = str(delivery_timestamp_ms)
        return props

    def send(self, topic: str, body: bytes = b"", *, key: str | None = None, tags: str | None = None,
             message_group: str | None = None, delay_level: int = 0, delivery_timestamp_ms: int | None = None,
             properties: Mapping[str, str] | None = None, mode: str = "sync") -> SendResult:
        sim = self.sim
        msg_id = sim.new_msg_id()
        seq = next(self._producer_seq[message_group])
        common = dict(topic=topic, client_id=self.client_id, msg_id=msg_id, key=key, message_group=message_group,
                      producer_seq=seq, delay_level=delay_level or None)
        sim.emit("SEND_INVOKE", **common, detail={"mode": mode})
        if topic not in sim.broker.topics:
            sim.broker.create_topic(topic)  # autoCreateTopicEnable (TOPIC-02) with 4 queues
        if self.grpc and delivery_timestamp_ms is not None and not delay_rules.proxy_delivery_time_legal(
                delivery_timestamp_ms, sim.clock.now_ms):
            sim.emit("SEND_FAIL", **common, detail={"code": codes.ILLEGAL_DELIVERY_TIME})
            return SendResult("ILLEGAL_DELIVERY_TIME", msg_id, topic, code=codes.ILLEGAL_DELIVERY_TIME)
        queue_id = self._choose_queue(topic, message_group)
        props = self._properties(msg_id, key, tags, message_group, delay_level, delivery_timestamp_ms, properties)
        put = sim.broker.put(topic, queue_id, body, props, msg_id, born_ms=sim.clock.now_ms)
        if put.code != codes.R_SUCCESS or put.message is None:
            sim.emit("SEND_FAIL", **common, queue_id=queue_id, detail={"code": put.code, "remark": put.remark})
            return SendResult("FAIL", msg_id, topic, queue_id, code=put.code, remark=put.remark)
        stored = put.message
        kind = "SEND_UNKNOWN" if mode == "oneway" else "SEND_OK"
        sim.emit(kind, **{**common, "topic": topic}, queue_id=queue_id,
                 queue_offset=stored.queue_offset if stored.topic == topic else None,
                 detail={"mode": mode, "stored_topic": stored.topic, "stored_queue_id": stored.queue_id})
        return SendResult("SEND_OK", msg_id, topic, queue_id, stored.queue_offset)

    def send_batch(self, messages: Sequence[Mapping[str, object]]) -> list[SendResult]:
        """Batch send; delayed, retry-topic or mixed-topic batches are rejected by the client (DELAY-07)."""
        delay_rules.check_batch(messages)
        return [self.send(str(m["topic"]), bytes(m.get("body", b"")), key=m.get("key"),  # type: ignore[arg-type]
                          tags=m.get("tags")) for m in messages]  # type: ignore[arg-type]


class TransactionProducer(Producer):
    """Half message, local transaction, end transaction, answers to checks (TX-01..04)."""

    def __init__(self, sim: "Simulation", group: str, client_id: str, grpc: bool,
                 check: TransactionCheck | None = None) -> None:
        super().__init__(sim, group, client_id, grpc)
        self._keys: dict[str, str | None] = {}
        if check is not None:
            sim.broker.tx_checkers[group] = lambda message, n: check(self._keys.get(message.msg_id), n)

    def send_in_transaction(self, topic: str, body: bytes = b"", *, key: str | None = None,
                            local_state: tx_rules.LocalTransactionState | None = None,
                            immunity_seconds: int | None = None) -> "HalfMessage":
        sim = self.sim
        if topic not in sim.broker.topics:
            sim.broker.create_topic(topic)
        msg_id = sim.new_msg_id()
        self._keys[msg_id] = key
        queue_id = self._choose_queue(topic, None)
        props = self._properties(msg_id, key, None, None, 0, None, None)
        half = sim.broker.put_half(topic, queue_id, body, props, msg_id, self.group, immunity_seconds)
        sim.emit_tx("TX_HALF", half, {"real_topic": topic, "stored_topic": half.message.topic})
        state = tx_rules.local_state_after_send("SEND_OK", local_state)
        if state is not tx_rules.LocalTransactionState.UNKNOW:
            sim.broker.end_transaction(half, state, self.group)
            sim.emit_tx("TX_END", half, {"state": state.value, "source": "CLIENT"})
        return half
