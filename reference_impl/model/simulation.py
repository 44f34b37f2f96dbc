"""The discrete-event model: one broker, its clients, a virtual clock and the event log."""
from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from typing import Mapping, Sequence

from history.events import EventRecorder
from history.profiles import BROKER_PROFILES, GRPC_5X, REMOTING_4X
from history.views import Listener, MessageView
from spec import versions

from ..rules import allocation, retry5x, validation
from ..rules import delay as delay_rules
from ..rules import transaction as tx_rules
from .broker import Broker, HalfMessage, Message
from .clock import VirtualClock
from .consumer4x import PushConsumer4x
from .consumer5x import PushConsumer5x, SimpleConsumer5x
from .producer import Producer, TransactionCheck, TransactionProducer


class Simulation:
    """Deterministic for a seed: the same calls give the same events, timestamps and ids."""

    def __init__(self, profile: str = REMOTING_4X, *, run_id: str = "run", target: str = "reference",
                 seed: int = 0, message_delay_level: str = delay_rules.DEFAULT_MESSAGE_DELAY_LEVEL,
                 recorder: EventRecorder | None = None, release: str = versions.LATEST) -> None:
        if profile not in BROKER_PROFILES:
            raise ValueError(f"the reference model runs profiles {', '.join(BROKER_PROFILES)}; got {profile!r}")
        table = delay_rules.parse_delay_levels(message_delay_level)
        if not table.ok:
            raise ValueError(f"messageDelayLevel {message_delay_level!r} does not parse (DELAY-02)")
        self.profile = profile
        self.seed = seed
        self.clock = VirtualClock()
        self.recorder = recorder or EventRecorder(run_id, target, profile)
        self.release = release
        """The RocketMQ release the model behaves as, where the spec says releases differ."""
        self.broker = Broker(self, table, tx_rules.check_interval_ms(release))
        self._ids = itertools.count(1)
        self._clients = itertools.count(1)
        self._seed_tag = f"{seed & 0xFFFF:04X}"
        self.members: dict[str, list[PushConsumer4x]] = defaultdict(list)
        self.deliveries: Counter[tuple[str, str]] = Counter()
        self.last_delivery_ms: dict[tuple[str, str], int] = {}

    # ---- ids and events ---------------------------------------------------------------------

    def new_msg_id(self) -> str:
        return f"7F000001{self._seed_tag}0000{next(self._ids):016X}"

    def new_client_id(self, kind: str) -> str:
        return f"127.0.0.1@{kind}-{next(self._clients)}"

    def emit(self, kind: str, **fields: object) -> None:
        self.recorder.emit(kind, self.clock.now_ms, **fields)

    def delay_ms(self, level: int) -> int:
        # implements DELAY-01 through the rules it calls
        return delay_rules.delay_ms_for_level(level, self.broker.delay_table)

    def emit_deliver(self, group: str, client_id: str, view: MessageView) -> None:
        key = (group, view.msg_id)
        self.deliveries[key] += 1
        previous = self.last_delivery_ms.get(key)
        self.last_delivery_ms[key] = self.clock.now_ms
        self.emit("DELIVER", topic=view.topic, group=group, client_id=client_id, msg_id=view.msg_id, key=view.key,
                  message_group=view.message_group, queue_id=view.queue_id, queue_offset=view.queue_offset,
                  attempt=view.delivery_attempt,
                  detail={"stored_topic": view.stored_topic, "reconsume_times": view.reconsume_times,
                          "since_previous_ms": "" if previous is None else self.clock.now_ms - previous})

    def emit_dlq(self, group: str, message: Message) -> None:
        self.emit("DLQ", topic=message.topic, group=group, msg_id=message.msg_id, key=message.key,
                  message_group=message.message_group, queue_id=message.queue_id, queue_offset=message.queue_offset,
                  attempt=self.deliveries[(group, message.msg_id)],
                  detail={"reconsume_times": message.reconsume_times,
                          "properties": ";".join(f"{k}={v}" for k, v in sorted(message.properties.items()))})

    def emit_tx(self, kind: str, half: HalfMessage, detail: Mapping[str, object]) -> None:
        self.emit(kind, topic=half.message.properties.get("REAL_TOPIC"), msg_id=half.message.msg_id,
                  key=half.message.key, client_id=half.producer_group, detail=dict(detail))

    # ---- clients ----------------------------------------------------------------------------

    def producer(self, group: str = "P", *, grpc: bool | None = None, **options: object) -> Producer:
        grpc = self.profile == GRPC_5X if grpc is None else grpc
        return Producer(self, group, self.new_client_id("producer"), grpc, **options)  # type: ignore[arg-type]

    def transaction_producer(self, group: str = "TP", check: TransactionCheck | None = None,
                             topics: Sequence[str] = ()) -> TransactionProducer:
        return TransactionProducer(self, group, self.new_client_id("tx-producer"), self.profile == GRPC_5X, check,
                                   topics)

    def push_consumer_4x(self, group: str, topic: str, listener: Listener, **options: object) -> PushConsumer4x:
        validation.check_group(group, "4.9.8")  # LIMIT-02
        consumer = PushConsumer4x(self, group, topic, listener, self.new_client_id("consumer"), **options)  # type: ignore[arg-type]
        consumer.start()
        return consumer

    def simple_consumer_5x(self, group: str, topic: str, expression: str = "*") -> SimpleConsumer5x:
        validation.check_group_proxy(group, self.release)  # LIMIT-02
        return SimpleConsumer5x(self, group, topic, self.new_client_id("simple-consumer"), expression)

    def push_consumer_5x(self, group: str, topic: str, listener: Listener, sdk: retry5x.Sdk = "java",
                         expression: str = "*") -> PushConsumer5x:
        validation.check_group_proxy(group, self.release)  # LIMIT-02
        consumer = PushConsumer5x(self, group, topic, listener, self.new_client_id("push-consumer"), sdk, expression)
        consumer.start()
        return consumer

    # ---- clustering membership and rebalance (ALLOC-00, ALLOC-01) -----------------------------

    def join(self, consumer: PushConsumer4x) -> None:
        self.members[consumer.group].append(consumer)
        self.rebalance(consumer.group)

    def leave(self, consumer: PushConsumer4x) -> None:
        if consumer in self.members[consumer.group]:
            self.members[consumer.group].remove(consumer)
        if not consumer.crashed:
            consumer.assign(set())
        self.rebalance(consumer.group)

    def rebalance(self, group: str) -> None:
        members = self.members[group]
        if not members:
            return
        for consumer in members:
            if consumer.broadcasting:
                consumer.assign(set(consumer.all_queues()))
                continue
            ids = [m.client_id for m in members if not m.broadcasting]
            mine: set[tuple[str, int]] = set()
            by_topic: dict[str, list[tuple[str, int]]] = defaultdict(list)
            for q in consumer.all_queues():
                by_topic[q[0]].append(q)
            for queues in by_topic.values():
                mine.update(allocation.allocate_averagely(sorted(queues), ids, consumer.client_id))
            consumer.assign(mine)

    def update_topic(self, name: str, read_queues: int, write_queues: int) -> None:
        """Change queue numbers; subscribed groups rebalance over the new read queues (TOPIC-03).

        Stored messages keep their global queue ids, so a topic on one broker keeps them in place.
        """
        config = self.broker.topics[name]
        if config.brokers != 1:
            raise ValueError("queue-number changes are modelled for single-broker topics")
        config.read_queues, config.write_queues = read_queues, write_queues
        for group, members in list(self.members.items()):
            if any(name in m.subscriptions for m in members):
                self.rebalance(group)

    # ---- time -------------------------------------------------------------------------------

    def advance(self, delta_ms: int) -> None:
        self.clock.advance(delta_ms)

    def run_until_idle(self, limit_ms: int) -> None:
        """Run every pending action, stopping at ``limit_ms`` of virtual time (the caller's bound:
        ``history.values.SETTLE_LIMIT_MS`` for a settle)."""
        self.clock.run_until(self.clock.now_ms + limit_ms)
