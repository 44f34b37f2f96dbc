"""Client-agnostic scenarios: a set-up, messages with failure scripts, and what must happen.

The same ``Scenario`` comes from a YAML file in ``spec/scenarios/`` or from a Hypothesis strategy,
runs on any target through the ``Target`` interface, and projects its event trace onto per-message
lives that the oracle and the reference prediction are compared with.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from adapters.base import SETTLE_LIMIT_MS, Target
from history.events import Event
from history.profiles import GRPC_5X, KAFKA_RETRY, REMOTING_4X
from history.values import CPP_4X_SDK as CPP_SDK
from history.values import ListenerOutcome
from history.views import MessageView
from spec.loader import SCENARIOS_DIR, load_yaml_validated

PROFILE_OF = {"push4x-concurrent": REMOTING_4X, "push4x-orderly": REMOTING_4X,
              "push4x-broadcast": REMOTING_4X, "push5x": GRPC_5X, "push5x-fifo": GRPC_5X,
              KAFKA_RETRY: KAFKA_RETRY}
"""Consumer kind -> the profile it belongs to (the Kafka pattern's consumer kind is named as its profile)."""


@dataclass(frozen=True)
class MessagePlan:
    key: str
    failures: int = 0
    outcome: str = "RECONSUME_LATER"
    message_group: str | None = None
    delay_level: int = 0


@dataclass(frozen=True)
class Scenario:
    consumer: str
    messages: tuple[MessagePlan, ...]
    id: str = "SCN-generated"
    topic: str = "T"
    group: str = "G"
    queues: int = 4
    retry_max_times: int | None = None
    instances: int = 1
    max_reconsume_times: int = -1
    sdk: str = "java"
    consumers_start: str = "before_send"
    faults: Mapping[str, int] = field(default_factory=dict)
    spec: tuple[str, ...] = ()
    expect: tuple[Mapping[str, Any], ...] = ()

    @property
    def profile(self) -> str:
        return PROFILE_OF[self.consumer]


def load_scenario(path: Path) -> Scenario:
    data, _ = load_yaml_validated(path, "scenario.schema.json")
    setup = data["setup"]
    if data["profile"] != PROFILE_OF[setup["consumer"]]:
        from spec.loader import SpecError

        raise SpecError(f"{path}:1: {data['id']}: consumer {setup['consumer']} belongs to profile "
                        f"{PROFILE_OF[setup['consumer']]}, not {data['profile']}")
    messages = tuple(MessagePlan(**m) for m in data["messages"])
    return Scenario(consumer=setup["consumer"], messages=messages, id=data["id"], topic=setup["topic"],
                    group=setup["group"], queues=setup.get("queues", 4), retry_max_times=setup.get("retry_max_times"),
                    instances=setup.get("instances", 1), max_reconsume_times=setup.get("max_reconsume_times", -1),
                    sdk=setup.get("sdk", "java"),
                    consumers_start=setup.get("consumers_start", "before_send"), faults=setup.get("faults", {}), spec=tuple(data["spec"]),
                    expect=tuple(data["expect"]))


def scenario_files(directory: Path = SCENARIOS_DIR) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


class ScriptedListener:
    """Fails each message's first ``failures`` deliveries with its outcome, then succeeds."""

    def __init__(self, plans: Iterable[MessagePlan]) -> None:
        self.plans = {p.key: p for p in plans}
        self.seen: Counter[str] = Counter()

    def __call__(self, view: MessageView) -> ListenerOutcome:
        key = view.key or ""
        self.seen[key] += 1
        plan = self.plans.get(key)
        if plan is None or self.seen[key] > plan.failures:
            return ListenerOutcome.SUCCESS
        return ListenerOutcome[plan.outcome]


def run_scenario(target: Target, scenario: Scenario, settle_ms: int = SETTLE_LIMIT_MS) -> list[Event]:
    """Set up, send every message, let every retry and DLQ happen; return the target's events."""
    # a 5.x topic takes the one message type of the scenario's messages, MIXED when they differ (TOPIC-05); a
    # remoting client's sends are not checked against a type, and MIXED does not exist before 5.1.0
    kinds = {"FIFO" if m.message_group else "DELAY" if m.delay_level else "NORMAL" for m in scenario.messages}
    message_type = (kinds.pop() if len(kinds) == 1 else "MIXED") if scenario.profile == GRPC_5X else "NORMAL"
    target.create_topic(scenario.topic, read_queues=scenario.queues, write_queues=scenario.queues,
                        message_type=message_type)
    if scenario.retry_max_times is not None or scenario.consumer == "push5x-fifo":
        target.configure_group(scenario.group, fifo=scenario.consumer == "push5x-fifo",
                               **({} if scenario.retry_max_times is None else {"retry_max_times": scenario.retry_max_times}))
    for name, count in scenario.faults.items():
        target.inject_fault(name.removesuffix("_failures"), count)
    if scenario.consumers_start == "after_send":
        _send_all(target, scenario)
    consumers = _start_consumers(target, scenario)
    if scenario.consumers_start == "before_send":
        _send_all(target, scenario)
    target.settle(settle_ms)
    for consumer in consumers:
        consumer.shutdown()
    return target.events()


def _start_consumers(target: Target, scenario: Scenario) -> list[Any]:
    shared = ScriptedListener(scenario.messages)
    consumers = []
    for _ in range(scenario.instances):
        # a clustering group fails a message's first deliveries wherever they land; each broadcasting
        # instance gets every message and runs its own script
        listener = ScriptedListener(scenario.messages) if scenario.consumer == "push4x-broadcast" else shared
        if scenario.consumer.startswith("push4x") or scenario.consumer == KAFKA_RETRY:
            consumers.append(target.push_consumer_4x(
                scenario.group, scenario.topic, listener, orderly=scenario.consumer == "push4x-orderly",
                broadcasting=scenario.consumer == "push4x-broadcast",
                max_reconsume_times=scenario.max_reconsume_times,
                **({"sdk": scenario.sdk} if scenario.sdk == CPP_SDK else {})))
        else:
            consumers.append(target.push_consumer_5x(scenario.group, scenario.topic, listener, sdk=scenario.sdk))
    return consumers


def _send_all(target: Target, scenario: Scenario) -> None:
    producer = target.producer()
    for plan in scenario.messages:
        producer.send(scenario.topic, plan.key.encode(), key=plan.key, message_group=plan.message_group,
                      delay_level=plan.delay_level)

