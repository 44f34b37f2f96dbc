"""Client-agnostic scenarios: a set-up, messages with failure scripts, and what must happen.

The same ``Scenario`` comes from a YAML file in ``spec/scenarios/`` or from a Hypothesis strategy,
runs on any target through the ``Target`` interface, and projects its event trace onto per-message
lives that the oracle and the reference prediction are compared with.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from adapters.base import Target
from reference_impl.model.views import MessageView
from reference_impl.rules.retry4x import ListenerOutcome
from spark_checks.eventlog import Event
from spec.loader import SCENARIOS_DIR, load_yaml_validated

PROFILE_OF = {"push4x-concurrent": "remoting-4.x", "push4x-orderly": "remoting-4.x",
              "push4x-broadcast": "remoting-4.x", "push5x": "grpc-5.x", "push5x-fifo": "grpc-5.x",
              "kafka-retry": "kafka-retry"}


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


@dataclass(frozen=True)
class Life:
    """The observed life of one message in the group: deliveries, waits between them, final state."""

    deliveries: int
    waits_ms: tuple[int, ...]
    final: str
    attempts: tuple[int, ...] = ()


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


def run_scenario(target: Target, scenario: Scenario, settle_ms: int = 30 * 24 * 3_600_000) -> list[Event]:
    """Set up, send every message, let every retry and DLQ happen; return the target's events."""
    target.create_topic(scenario.topic, read_queues=scenario.queues, write_queues=scenario.queues)
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
        if scenario.consumer.startswith("push4x") or scenario.consumer == "kafka-retry":
            consumers.append(target.push_consumer_4x(
                scenario.group, scenario.topic, listener, orderly=scenario.consumer == "push4x-orderly",
                broadcasting=scenario.consumer == "push4x-broadcast",
                max_reconsume_times=scenario.max_reconsume_times))
        else:
            consumers.append(target.push_consumer_5x(scenario.group, scenario.topic, listener, sdk=scenario.sdk))
    return consumers


def _send_all(target: Target, scenario: Scenario) -> None:
    producer = target.producer()
    for plan in scenario.messages:
        producer.send(scenario.topic, plan.key.encode(), key=plan.key, message_group=plan.message_group,
                      delay_level=plan.delay_level)


def lives(events: Iterable[Event], group: str) -> dict[str, Life]:
    """Project a trace onto per-key lives in one group (interleaving across keys is ignored)."""
    by_key: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.key is not None and (e.group == group or e.kind.startswith("SEND")):
            by_key[e.key].append(e)
    out: dict[str, Life] = {}
    for key, evs in by_key.items():
        delivered = [e for e in evs if e.kind == "DELIVER"]
        times = [e.ts_ms for e in delivered]
        waits = tuple(b - a for a, b in zip(times, times[1:]))
        if any(e.kind == "DLQ" for e in evs):
            final = "DLQ"
        elif delivered and _last_outcome(evs) == "CONSUME_OK":
            final = "CONSUMED"
        elif delivered:
            final = "DROPPED"
        else:
            final = "NOT_DELIVERED"
        out[key] = Life(len(delivered), waits, final, tuple(e.attempt or 0 for e in delivered))
    return out


def _last_outcome(events: list[Event]) -> str | None:
    outcomes = [e.kind for e in events if e.kind in ("CONSUME_OK", "CONSUME_FAIL")]
    return outcomes[-1] if outcomes else None

