"""The in-process reference target: the discrete-event model behind the ``Target`` interface."""
from __future__ import annotations

from typing import Callable, Sequence

from history.events import Event
from history.profiles import (
    BROKER_PROFILES,
    GRPC_5X,
    KAFKA_RETRY,
    REFERENCE_PROFILES,
    REMOTING_4X,
)
from history.values import LocalTransactionState
from history.views import Listener, MessageView
from reference_impl import VERSION
from reference_impl.model.broker import Message
from reference_impl.model.simulation import Simulation
from spec import versions

from .base import DEFAULT_TIMING, SETTLE_LIMIT_MS, BrokerTiming, NotApplicable, Target, wait_by_steps
from .targets import Probe

_COMMON = {"clock.virtual", "send.sync", "send.async", "send.oneway", "send.batch", "delay.level",
           "transactions", "inspect.broker", "fault.send_back", "fault.retry_republish", "fault.send",
           "topic.multi_broker", "consumer.filter.tag", "consumer.filter.sql", "consumer.crash",
           "observe.queue_id", "observe.offset", "observe.client_offsets",
           "observe.stored", "observe.properties", "observe.query"}
CAPABILITIES_BY_PROFILE = {
    REMOTING_4X: _COMMON | {"consumer.push4x.concurrent", "consumer.push4x.orderly", "consumer.push4x.broadcast",
                            "consumer.suspend_time"},
    GRPC_5X: _COMMON | {"delay.timer", "consumer.simple5x", "consumer.push5x", "consumer.push5x.fifo",
                           "sdk.java", "sdk.python", "sdk.nodejs"},
}


class ReferenceTarget(Target):
    """Runs on a virtual clock: ``advance`` is instant, and a seed fixes every id and timestamp."""

    def __init__(self, profile: str = REMOTING_4X, *, run_id: str = "run", seed: int = 0,
                 release: str = versions.LATEST, broker_timing: BrokerTiming = DEFAULT_TIMING) -> None:
        """``broker_timing``: another target's configured delay table and default retry ladder, for a prediction
        of that target (the differential suites)."""
        if profile not in BROKER_PROFILES:
            raise NotApplicable(f"the reference implements {', '.join(BROKER_PROFILES)}; profile {profile!r} is not modelled")
        self.name = "reference"
        self.version = VERSION
        self.profile = profile
        self.capabilities = frozenset(CAPABILITIES_BY_PROFILE[profile])
        self.broker_timing = broker_timing
        levels = {} if broker_timing.delay_levels_ms is None else \
            {"message_delay_level": " ".join(f"{ms // 1000}s" for ms in broker_timing.delay_levels_ms)}
        self.sim = Simulation(profile, run_id=run_id, target=self.name, seed=seed, release=release, **levels)
        if broker_timing.revive_lag_ms is not None:
            self.sim.broker.revive_lag_ms = broker_timing.revive_lag_ms

    def create_topic(self, name: str, *, read_queues: int = 4, write_queues: int = 4, perm: int = 6,
                     message_type: str = "NORMAL", brokers: int = 1) -> None:
        if brokers > 1:
            self.require("topic.multi_broker")
        self.sim.broker.create_topic(name, read_queues, write_queues, perm, message_type, brokers)

    def configure_group(self, name: str, *, retry_max_times: int = 16, fifo: bool = False,
                        retry_policy: str = "CUSTOMIZED", retry_queue_nums: int = 1,
                        retry_ladder_ms: Sequence[int] | None = None) -> None:
        group = self.sim.broker.group(name)
        group.retry_max_times, group.fifo = retry_max_times, fifo
        group.retry_policy, group.retry_queue_nums = retry_policy, retry_queue_nums
        ladder = retry_ladder_ms or self.broker_timing.customized_next_ms
        if ladder:
            group.customized_next_ms = tuple(int(ms) for ms in ladder)

    def _ensure_group(self, group: str) -> None:
        """With a configured default ladder, a group gets it before its first consumer, as the target predicted
        sets every group up (``BrokerTiming``)."""
        if self.broker_timing.customized_next_ms and group not in self.sim.broker.groups:
            self.configure_group(group)

    def producer(self, group: str = "P", **options: object):
        return self.sim.producer(group, **options)

    def transaction_producer(self, group: str, check: Callable[[str | None, int], LocalTransactionState | None],
                             topics: Sequence[str] = ()):
        self.require("transactions")
        return self.sim.transaction_producer(group, check, topics)

    def push_consumer_4x(self, group: str, topic: str, listener: Listener, *, orderly: bool = False,
                         broadcasting: bool = False, max_reconsume_times: int = -1, suspend_ms: int = 1000,
                         expression: str = "*", expression_type: str = "TAG",
                         consume_from_where: str = "CONSUME_FROM_LAST_OFFSET", consume_timestamp_ms: int | None = None,
                         sdk: str = "java"):
        self.require("consumer.push4x.orderly" if orderly else "consumer.push4x.concurrent")
        if broadcasting:
            self.require("consumer.push4x.broadcast")
        if expression_type == "SQL92":
            self.require("consumer.filter.sql")
        return self.sim.push_consumer_4x(group, topic, listener, orderly=orderly, broadcasting=broadcasting,
                                         max_reconsume_times=max_reconsume_times, suspend_ms=suspend_ms,
                                         expression=expression, expression_type=expression_type,
                                         consume_from_where=consume_from_where,
                                         consume_timestamp_ms=consume_timestamp_ms, sdk=sdk)

    def simple_consumer_5x(self, group: str, topic: str, *, expression: str = "*"):
        self.require("consumer.simple5x")
        self._ensure_group(group)
        return self.sim.simple_consumer_5x(group, topic, expression)

    def push_consumer_5x(self, group: str, topic: str, listener: Listener, *, sdk: str = "java",
                         expression: str = "*"):
        self.require("consumer.push5x", f"sdk.{sdk}")
        self._ensure_group(group)
        if self.sim.broker.group(group).fifo:
            self.require("consumer.push5x.fifo")
        return self.sim.push_consumer_5x(group, topic, listener, sdk, expression)  # type: ignore[arg-type]

    def update_topic(self, name: str, *, read_queues: int, write_queues: int) -> None:
        self.sim.update_topic(name, read_queues, write_queues)

    def configure_broker(self, **settings: object) -> None:
        for name, value in settings.items():
            if name not in ("enable_property_filter", "messages_in_memory"):
                raise NotApplicable(f"the reference broker has no setting {name!r}")
            setattr(self.sim.broker, name, bool(value))

    def inject_fault(self, name: str, count: int = 1) -> None:
        self.require(f"fault.{name}")
        attribute = {"send_back": "send_back_failures", "retry_republish": "retry_republish_failures"}[name]
        setattr(self.sim.broker.faults, attribute, count)

    def inject_send_fault(self, broker: str, outcome: str, count: int = 1) -> None:
        self.require("fault.send")
        self.sim.broker.faults.add_send_fault(broker, outcome, count)

    def committed_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        return self.sim.broker.offsets.get((group, topic, queue_id))

    def stored_messages(self, topic: str) -> list[dict[str, object]]:
        return [_as_record(m) for m in self._stored(topic)]

    def read_stored(self, topic: str) -> list[MessageView]:
        return [_as_read(m) for m in self._stored(topic)]

    def query_messages(self, topic: str, *, key: str | None = None, msg_id: str | None = None) -> list[MessageView]:
        return [_as_read(m) for m in self._stored(topic)
                if (key is not None and key in (m.properties.get("KEYS") or "").split(" "))
                or (msg_id is not None and m.msg_id == msg_id)]

    def _stored(self, topic: str) -> list[Message]:
        return [m for (stored_topic, _), queue in sorted(self.sim.broker.queues.items()) if stored_topic == topic
                for m in queue]

    def now_ms(self) -> int:
        return self.sim.clock.now_ms

    def advance(self, delta_ms: int) -> None:
        self.sim.advance(delta_ms)

    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        return wait_by_steps(predicate, timeout_ms, self.sim.clock.now_ms, self.sim.clock.step_until)

    def settle(self, max_ms: int = SETTLE_LIMIT_MS) -> None:
        self.sim.run_until_idle(max_ms)

    def mark_settled(self) -> None:
        self.sim.emit("SETTLED")

    def events(self) -> list[Event]:
        return self.sim.recorder.events


def _as_record(m: Message) -> dict[str, object]:
    return {"msg_id": m.msg_id, "topic": m.topic, "queue_id": m.queue_id, "queue_offset": m.queue_offset,
            "reconsume_times": m.reconsume_times, "properties": dict(m.properties), "store_ms": m.store_ms}


def _as_read(m: Message) -> MessageView:
    """A stored message as a consumer of another group pulls it: its stored topic, every property."""
    return MessageView(m.msg_id, m.topic, m.key, m.tags, m.body, m.reconsume_times, m.reconsume_times + 1,
                       m.queue_id, m.queue_offset, m.topic, m.message_group, dict(m.properties))


def build(address: str, profile: str, **options: object) -> Target:
    """The in-process reference of the ``reference`` kind (``adapters.targets``); the Kafka pattern's
    model for ``kafka-retry``."""
    from .kafka_pattern import KafkaPatternTarget

    return (KafkaPatternTarget if profile == KAFKA_RETRY else ReferenceTarget)(profile, **options)  # type: ignore[arg-type]


def probe(address: str) -> Probe:
    """Nothing to reach: the reference runs every profile it models, on a virtual clock."""
    return Probe(REFERENCE_PROFILES, "virtual", VERSION, runs_reference=True, release=None)
