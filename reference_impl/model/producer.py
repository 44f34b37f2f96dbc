"""Producers of the model: 4.x remoting and 5.x gRPC sends, batches and transactions.

Validation, queue choice and the retry loops are the rules'; this module chooses brokers attempt by
attempt, applies injected broker faults, stores what a broker would store, and logs the send.
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from history.views import SendResult

from ..rules import codes, node5x, storage, topic_types, validation
from ..rules import delay as delay_rules
from ..rules import fifo as fifo_rules
from ..rules import queue_selection as qsel
from ..rules import send as send_rules
from ..rules import transaction as tx_rules
from ..rules.allocation import MessageQueue
from ..rules.codes import RocketMQError
from ..rules.primitives import java_string_hash

if TYPE_CHECKING:
    from .broker import HalfMessage, TopicConfig
    from .simulation import Simulation

TransactionCheck = Callable[[str | None, int], tx_rules.LocalTransactionState | None]
"""Given the message key and the check number (1-based), the producer's answer."""

_FAULT_ATTEMPTS = {
    None: (codes.R_SUCCESS, None, True),
    "unreachable": (None, "remoting", False),
    "timeout": (None, "timeout", False),
    "timeout_after_store": (None, "timeout", True),
    "system_busy": (codes.R_SYSTEM_BUSY, None, False),
    "system_error": (codes.R_SYSTEM_ERROR, None, False),
    "flush_disk_timeout": (codes.R_FLUSH_DISK_TIMEOUT, None, True),
    "message_illegal": (codes.R_MESSAGE_ILLEGAL, None, False),
}
"""fault -> (response code, transport failure, whether the broker stored the message)."""


class Producer:
    """A producer; ``grpc`` switches to the 5.x proxy + SDK behaviour, ``sdk`` picks Java or Python habits."""

    def __init__(self, sim: "Simulation", group: str, client_id: str, grpc: bool, sdk: str = "java",
                 version: str = "4.9.8", retry_times: int = send_rules.RETRY_TIMES_WHEN_SEND_FAILED,
                 retry_another_broker_when_not_store_ok: bool = False) -> None:
        self.sim, self.group, self.client_id, self.grpc, self.sdk = sim, group, client_id, grpc, sdk
        self.version = version
        self.retry_times = retry_times
        self.retry_another_broker = retry_another_broker_when_not_store_ok
        self._index = qsel.ThreadLocalIndex(sim.seed * 7919 + 17)
        self._round_robin = itertools.count(sim.seed % 997 + 1)
        self._producer_seq: dict[str | None, itertools.count] = defaultdict(itertools.count)

    # ---- validation and routing -------------------------------------------------------------

    def _validate(self, topic: str, body: bytes, tags: str | None, key: str | None, message_group: str | None,
                  properties: Mapping[str, str] | None, delivery_timestamp_ms: int | None) -> None:
        """Client and broker/proxy checks in the order a real send meets them (LIMIT-01, LIMIT-02, LIMIT-03,
        LIMIT-04, FIFO-07, DELAY-08)."""
        # implements LIMIT-06, SDK-NODE-05 through the rules it calls
        if not self.grpc:
            validation.check_topic_client_4x(topic, self.version)
            validation.check_body_client(body)
            return
        if self.sdk == "python":
            validation.check_body_python_5x(body)
            validation.check_message_python_5x(tags, message_group, delivery_timestamp_ms)
        elif self.sdk == node5x.SDK:
            node5x.check_message(body, message_group, delivery_timestamp_ms)
        else:
            validation.check_java_message_builder(topic, body, tags, [key] if key else [], properties, message_group,
                                                  delivery_timestamp_ms)
        validation.check_topic_proxy(topic, self.sim.release)
        validation.check_body_proxy(body)
        validation.check_properties_proxy(dict(properties or {}), tags, [key] if key else [], self.sim.release)
        group_error = None if message_group is None else fifo_rules.message_group_error(message_group)
        if group_error:
            raise RocketMQError(codes.ILLEGAL_MESSAGE_GROUP, group_error)
        if delivery_timestamp_ms is not None and not delay_rules.proxy_delivery_time_legal(
                delivery_timestamp_ms, self.sim.clock.now_ms):
            raise RocketMQError(codes.ILLEGAL_DELIVERY_TIME, "delivery timestamp is more than a day ahead")

    def _check_message_type(self, config: "TopicConfig", props: Mapping[str, str]) -> None:
        """5.x: the SDK against the route's accepted types, then the proxy's validator (TOPIC-05)."""
        if not self.grpc:
            return
        release = self.sim.release
        message_type = topic_types.message_type_of(props, release)
        topic_types.sdk_check(config.name, message_type, topic_types.route_accept_types(config.message_type, release),
                              self.sdk)
        topic_types.proxy_check(config.name, config.message_type, message_type, release)

    def _topic(self, topic: str) -> "TopicConfig":
        broker = self.sim.broker
        if topic in broker.topics:
            return broker.topics[topic]
        if self.grpc:
            raise RocketMQError(codes.TOPIC_NOT_FOUND, f"topic {topic} not found")
        tbw102 = broker.topics.get(validation.TBW102)
        default = validation.TopicConfig(validation.TBW102, tbw102.read_queues, tbw102.write_queues, tbw102.perm) \
            if tbw102 else None
        created = validation.auto_create_topic(topic, default)  # TOPIC-02
        return broker.create_topic(topic, created.read_queues, created.write_queues, created.perm)

    def publish_queues(self, topic: "TopicConfig") -> list[MessageQueue]:
        # implements QSEL-01, QSEL-03 through the rules it calls
        route = [qsel.QueueData(name, topic.read_queues, topic.write_queues, topic.perm) for name in topic.broker_names()]
        return qsel.publish_queues(topic.name, route)

    def _group_queue(self, config: "TopicConfig", queues: list[MessageQueue], message_group: str) -> MessageQueue:
        """5.x: the proxy's consistent hash (FIFO-01); 4.x: SelectMessageQueueByHash (FIFO-03)."""
        # implements PRIM-01 through the rules it calls
        if self.grpc:
            return queues[fifo_rules.proxy_queue_for_group(message_group, len(queues))]
        return queues[fifo_rules.select_queue_by_hash_4x(java_string_hash(message_group), len(queues))]

    # ---- sending ----------------------------------------------------------------------------

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
            if self.grpc and delay_rules.proxy_uses_delay_level(self.sim.release):  # DELAY-09: the level wins
                props["DELAY"] = str(delay_rules.delay_level_for_timestamp(
                    delivery_timestamp_ms, self.sim.clock.now_ms, self.sim.broker.delay_table))
            props["TIMER_DELIVER_MS"] = str(delivery_timestamp_ms)
        return props

    def _attempt(self, mq: MessageQueue, config: "TopicConfig", body: bytes, props: dict[str, str], msg_id: str,
                 stored: list) -> send_rules.Attempt:
        """One attempt on one broker: apply an injected fault, store when the broker would (SEND-4X-02)."""
        # implements STORE-04 through the rules it calls
        fault = self.sim.broker.faults.take_send(mq.broker_name)
        code, failure, stores = _FAULT_ATTEMPTS[fault]
        if stores:
            validation.check_properties_store(storage.properties_to_string(props))
            put = self.sim.broker.put(config.name, config.global_queue_id(mq.broker_name, mq.queue_id), body, props,
                                      msg_id, born_ms=self.sim.clock.now_ms)
            if put.code != codes.R_SUCCESS:
                return send_rules.Attempt(put.code, None, 1, mq.broker_name)
            stored.append((mq, put.message))
        return send_rules.Attempt(code, failure, 1 if failure == "timeout" else 0, mq.broker_name)

    def send(self, topic: str, body: bytes = b"", *, key: str | None = None, tags: str | None = None,
             message_group: str | None = None, delay_level: int = 0, delivery_timestamp_ms: int | None = None,
             properties: Mapping[str, str] | None = None, mode: str = "sync") -> SendResult:
        sim = self.sim
        msg_id = sim.new_msg_id()
        seq = next(self._producer_seq[message_group])
        common = dict(topic=topic, client_id=self.client_id, msg_id=msg_id, key=key, message_group=message_group,
                      producer_seq=seq, delay_level=delay_level or None)
        sim.emit("SEND_INVOKE", **common, detail={"mode": mode, "sdk": self.sdk if self.grpc else "remoting"})
        props = self._properties(msg_id, key, tags, message_group, delay_level, delivery_timestamp_ms, properties)
        try:
            self._validate(topic, body, tags, key, message_group, properties, delivery_timestamp_ms)
            config = self._topic(topic)
            self._check_message_type(config, props)
        except RocketMQError as exc:
            sim.emit("SEND_FAIL", **common, detail={"code": exc.code, "remark": exc.message})
            raise
        queues = self.publish_queues(config)
        if not queues:
            error = RocketMQError(codes.C_NOT_FOUND_TOPIC_EXCEPTION, f"No route info of this topic: {topic}")
            sim.emit("SEND_FAIL", **common, detail={"code": error.code, "remark": error.message})
            raise error
        stored: list = []
        trace = self._grpc_send(config, queues, body, props, msg_id, message_group, stored) if self.grpc else \
            self._remoting_send(config, queues, body, props, msg_id, message_group, mode, stored)
        attempts = tuple(f"{a.broker}:{a.failure or a.code}" for a in trace.attempts)
        elapsed = 0 if self.grpc else send_rules.elapsed_ms(trace)
        if elapsed > 0:
            sim.clock.advance(elapsed)
        last = stored[-1][1] if stored else None
        detail = {"mode": mode, "attempts": ",".join(attempts)}
        if mode == "oneway":
            sim.emit("SEND_UNKNOWN", **common, detail=detail)
            return SendResult("UNKNOWN", msg_id, topic, attempts=attempts)
        if trace.status is None:
            code = trace.error_code if trace.error_code is not None else -1
            message = trace.error or f"send failed after {len(attempts)} attempts"
            kind = "SEND_UNKNOWN" if stored else "SEND_FAIL"
            sim.emit(kind, **common, attempt=len(attempts), detail={**detail, "code": code, "remark": message})
            raise RocketMQError(code, message)
        status = trace.status
        assert last is not None
        # a timed message's SEND_OK carries the wait its client asked for (DELAY-08): what the checks judge it by
        timed = None if delivery_timestamp_ms is None else max(0, delivery_timestamp_ms - sim.clock.now_ms) or None
        sim.emit("SEND_OK", **common, attempt=len(attempts), queue_id=last.queue_id, expected_delay_ms=timed,
                 queue_offset=last.queue_offset if last.topic == topic else None,
                 detail={**detail, "status": status, "stored_topic": last.topic, "broker": stored[-1][0].broker_name,
                         "duplicates": len(stored) - 1})
        return SendResult(status, msg_id, topic, last.queue_id, last.queue_offset, attempts=attempts)

    def _remoting_send(self, config, queues, body, props, msg_id, message_group, mode, stored):
        """4.x: QSEL-02 with the last broker avoided, then the sync / async / oneway loop (SEND-4X-01,
        SEND-4X-02, SEND-4X-03, SEND-4X-04, SEND-4X-05)."""
        last_broker: list[str | None] = [None]

        def step(i: int, budget: int) -> send_rules.Attempt:
            if message_group:
                mq = self._group_queue(config, queues, message_group)
            else:
                mq = qsel.select_one(queues, self._index, last_broker[0])
            last_broker[0] = mq.broker_name
            return self._attempt(mq, config, body, props, msg_id, stored)

        if mode == "oneway":
            return send_rules.oneway_send(step)
        if mode == "async":
            return send_rules.async_send(step, self.retry_times)
        return send_rules.sync_send(step, self.retry_times, retry_another_broker_when_not_store_ok=self.retry_another_broker,
                                    version=self.version)

    def _grpc_send(self, config, queues, body, props, msg_id, message_group, stored) -> send_rules.SendTrace:
        """5.x: Java candidates on distinct brokers or the Python round robin; flow control per SDK (SEND-5X-01,
        SEND-5X-02, SEND-5X-03)."""
        # implements QSEL-04 through the rules it calls
        if message_group:
            candidates = [self._group_queue(config, queues, message_group)]
        elif self.sdk == "java":
            candidates = qsel.java_take_message_queues(queues, next(self._round_robin), set(),
                                                       send_rules.MAX_ATTEMPTS_5X)
        elif self.sdk == node5x.SDK:  # SDK-NODE-03: queue id 0 of each broker only
            candidates = qsel.java_take_message_queues(node5x.writable_queues(queues), next(self._round_robin),
                                                       set(), node5x.PRODUCER_MAX_ATTEMPTS)
        else:
            selector = qsel.PythonQueueSelector(queues, next(self._round_robin))
            candidates = [selector.select_next_queue() for _ in range(send_rules.MAX_ATTEMPTS_5X)]
        made: list[send_rules.Attempt] = []

        def step(n: int) -> send_rules.GrpcAttempt:
            attempt = self._attempt(candidates[(n - 1) % len(candidates)], config, body, props, msg_id, stored)
            made.append(attempt)
            if attempt.failure is not None:
                return send_rules.GrpcAttempt(network_error=True)
            return send_rules.GrpcAttempt(send_rules.grpc_code_for_remoting(attempt.code, self.sim.release))

        trace = send_rules.send_5x(step, self.sdk, sleep=lambda ms: self.sim.clock.advance(int(ms)))
        return send_rules.SendTrace(attempts=made, status="SEND_OK" if trace.ok else None,
                                    error_code=None if trace.ok else (trace.error_code or -1),
                                    error="" if trace.ok else f"send failed after {len(made)} attempts")

    def send_batch(self, messages: Sequence[Mapping[str, object]]) -> list[SendResult]:
        """Batch send; delayed, retry-topic or mixed-topic batches are rejected by the client (DELAY-07, LIMIT-05)."""
        # implements STORE-04 through the rules it calls
        delay_rules.check_batch(messages, self.version)  # the 4.x client's own generateFromList
        bodies = [bytes(m.get("body", b"x")) for m in messages]  # type: ignore[arg-type]
        validation.check_batch_size(bodies, [storage.properties_to_string({"UNIQ_KEY": "0" * 32, "WAIT": "true"})] * len(bodies))
        return [self.send(str(m["topic"]), body, key=m.get("key"), tags=m.get("tags"))  # type: ignore[arg-type]
                for m, body in zip(messages, bodies)]


class TransactionProducer(Producer):
    """Half message, local transaction, end transaction, answers to checks (TX-01, TX-02, TX-03, TX-04)."""

    def __init__(self, sim: "Simulation", group: str, client_id: str, grpc: bool,
                 check: TransactionCheck | None = None, topics: Sequence[str] = ()) -> None:
        super().__init__(sim, group, client_id, grpc)
        self._keys: dict[str, str | None] = {}
        if check is not None:
            answer = lambda message, n: check(self._keys.get(message.msg_id), n)  # noqa: E731
            # 4.x: checks go to the producer group; 5.x: the proxy sends them to a producer that declared the
            # half's topic, the topic standing for the producer group (TX-07)
            for checked_as in tx_rules.checked_under(topics, group, grpc):
                sim.broker.tx_checkers[checked_as] = answer

    def _producer_group(self, topic: str) -> str:
        """The half's PGROUP: the producer group in 4.x, the topic through a 5.x proxy (TX-07)."""
        return tx_rules.half_producer_group(topic, self.group, self.grpc)

    def send_in_transaction(self, topic: str, body: bytes = b"", *, key: str | None = None,
                            local_state: tx_rules.LocalTransactionState | None = None,
                            immunity_seconds: int | None = None) -> "HalfMessage":
        sim = self.sim
        config = self._topic(topic)
        msg_id = sim.new_msg_id()
        self._keys[msg_id] = key
        queue_id = next(self._round_robin) % config.write_queues
        props = self._properties(msg_id, key, None, None, 0, None, None)
        self._check_message_type(config, {**props, "TRAN_MSG": "true"})
        half = sim.broker.put_half(topic, queue_id, body, props, msg_id, self._producer_group(topic), immunity_seconds)
        sim.emit_tx("TX_HALF", half, {"real_topic": topic, "stored_topic": half.message.topic})
        state = tx_rules.local_state_after_send("SEND_OK", local_state)
        if state is not tx_rules.LocalTransactionState.UNKNOW:
            sim.broker.end_transaction(half, state, self._producer_group(topic))
            sim.emit_tx("TX_END", half, {"state": state.value, "source": "CLIENT"})
        return half

