"""The seed-000 Kafka retry-topic pattern behind the ``Target`` interface (profile ``kafka-retry``).

It runs the same client-agnostic scenarios as the RocketMQ profiles, so the suites can compare
delivery traces of the two retry designs on the same failure scripts.
"""
from __future__ import annotations

import itertools
from typing import Callable, Sequence

from history.events import Event
from history.profiles import KAFKA_RETRY
from history.views import Listener
from reference_impl.model.kafka_pattern import KafkaConsumer, KafkaPatternSimulation

from .base import SETTLE_LIMIT_MS, NotApplicable, Target, wait_by_steps

_WHY = "the Kafka retry-topic pattern has no such feature"


class KafkaPatternTarget(Target):
    def __init__(self, profile: str = KAFKA_RETRY, *, run_id: str = "run", seed: int = 0,
                 release: str | None = None) -> None:
        """``release`` is accepted like every target's; the Kafka pattern has no RocketMQ release."""
        self.name = "reference"
        self.profile = KAFKA_RETRY
        self.capabilities = frozenset({"clock.virtual", "send.sync", "consumer.kafka.retry"})
        self.sim = KafkaPatternSimulation(run_id=run_id, seed=seed)
        self._round_robin = itertools.count()
        self._clients = itertools.count(1)

    def create_topic(self, name: str, *, read_queues: int = 4, write_queues: int = 4, perm: int = 6,
                     message_type: str = "NORMAL", brokers: int = 1) -> None:
        self.sim.create_topic(name, write_queues)

    def configure_group(self, name: str, *, retry_max_times: int = 16, fifo: bool = False,
                        retry_policy: str = "CUSTOMIZED", retry_queue_nums: int = 1,
                        retry_ladder_ms: Sequence[int] | None = None) -> None:
        if retry_ladder_ms:
            raise NotApplicable(f"{self.name}: the Kafka-pattern model has no 5.x retry ladder to configure")
        self.sim.max_retry_count = retry_max_times

    def producer(self, group: str = "P", **options: object):
        target = self

        class _Producer:
            def send(self, topic: str, body: bytes = b"", *, key: str | None = None, **ignored: object):
                return target.sim.send(topic, body, key, target._round_robin)

        return _Producer()

    def transaction_producer(self, group, check, topics=()):
        raise NotApplicable(_WHY)

    def push_consumer_4x(self, group: str, topic: str, listener: Listener, **options: object):
        return KafkaConsumer(self.sim, group, topic, listener, f"kafka-consumer-{next(self._clients)}")

    def simple_consumer_5x(self, group: str, topic: str, *, expression: str = "*"):
        raise NotApplicable(_WHY)

    def push_consumer_5x(self, group, topic, listener, *, sdk="java", expression="*"):
        raise NotApplicable(_WHY)

    def now_ms(self) -> int:
        return self.sim.clock.now_ms

    def advance(self, delta_ms: int) -> None:
        self.sim.clock.advance(delta_ms)

    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        return wait_by_steps(predicate, timeout_ms, self.sim.clock.now_ms, self.sim.clock.step_until)

    def settle(self, max_ms: int = SETTLE_LIMIT_MS) -> None:
        self.sim.clock.run_until(self.sim.clock.now_ms + max_ms)

    def events(self) -> list[Event]:
        return self.sim.recorder.events
