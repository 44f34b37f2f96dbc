"""Client programs: a short list of steps a user's code takes against a broker (start consumers and shut
them down, send, let time pass, receive, ack and change invisible times by hand, fail the broker's
send-backs), run step by step on any target, and what the run shows: each step's result, each message's
transcript (``history.transcripts``), what the broker stores in every topic the messages went through and
the offsets the group committed.

The same program runs on the target and on the reference; ``test_differential`` compares the two. Programs
are data (``Program``), drawn by ``suites.strategies.programs``; the interpreter here does the I/O.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from adapters.base import Target
from history.profiles import GRPC_5X
from history.transcripts import (
    Placement,
    Step,
    id_names,
    placements,
    properties_text,
    transcripts,
)
from history.values import ListenerOutcome, LocalTransactionState
from history.views import MessageView
from reference_impl.rules.codes import RocketMQError

TOPIC, GROUP = "T", "G"
HALF_TOPIC, OP_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"
"""Where a broker keeps transaction halves and their op messages (TX-01, TX-05)."""
SETTLE_MS = 24 * 3_600_000
"""Spec time a program's last step is given to play out: a 4.x ladder of 16 retries ends within 5 h."""


@dataclass(frozen=True)
class Program:
    """One profile's set-up and steps. ``topic_type`` is a 5.x topic's message type (NORMAL, FIFO, DELAY,
    TRANSACTION);
    ``failures`` says how many deliveries of a key its listener fails, and with which outcome."""

    profile: str
    queues: int
    steps: tuple[tuple[Any, ...], ...]
    topic_type: str = "NORMAL"
    retry_max_times: int | None = None
    failures: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    checks: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Key -> how many of the broker's checks of its transaction answer UNKNOWN, then the answer."""


@dataclass
class Run:
    """What a program showed: each step's result in order, the transcripts, the stored copies of every
    topic a message was stored in or dead-lettered to (when the target can read them, ``observe.stored``),
    the group's committed offset of each queue of the topic (``observe.offset``), after the consumers
    shut down, and where each key was placed (``history.transcripts.placements``)."""

    results: list[str]
    stories: dict[str, list[Step]]
    stored: dict[str, list[str]]
    offsets: dict[str, int | None] = field(default_factory=dict)
    placed: dict[str, Placement] = field(default_factory=dict)


class _Script:
    """A listener that fails a key's first deliveries as the program says (shared by a group's consumers)."""

    def __init__(self, failures: Mapping[str, tuple[int, str]]) -> None:
        self.failures = failures
        self.seen: dict[str, int] = {}

    def __call__(self, view: MessageView) -> ListenerOutcome:
        key = view.key or ""
        self.seen[key] = self.seen.get(key, 0) + 1
        count, outcome = self.failures.get(key, (0, "SUCCESS"))
        return ListenerOutcome[outcome] if self.seen[key] <= count else ListenerOutcome.SUCCESS


def _view_result(views: list[MessageView]) -> str:
    return ",".join(f"{v.key}#{v.delivery_attempt}/{v.reconsume_times}@{v.topic}" for v in views)


class _Interpreter:
    def __init__(self, target: Target, program: Program) -> None:
        self.target, self.program = target, program
        self.listener = _Script(program.failures)
        self.consumers: list[Any] = []
        self.received: list[MessageView] = []
        self.producer: Any = None
        self.tx_producer: Any = None

    def set_up(self) -> None:
        p = self.program
        self.target.create_topic(TOPIC, read_queues=p.queues, write_queues=p.queues,
                                 message_type=p.topic_type if p.profile == GRPC_5X else "NORMAL")
        if p.profile == GRPC_5X:
            self.target.configure_group(GROUP, fifo=p.topic_type == "FIFO",
                                        **({} if p.retry_max_times is None else {"retry_max_times": p.retry_max_times}))
        self.producer = self.target.producer()

    def step(self, step: tuple[Any, ...]) -> str:
        op, *args = step
        try:
            return getattr(self, f"do_{op}")(*args)
        except (RocketMQError, ValueError) as exc:  # a client's refusal (a coded error, a value it rejects)
            return f"{op}: error {getattr(exc, 'code', None) or type(exc).__name__}"

    def do_send(self, key: str, options: Mapping[str, Any]) -> str:
        options = dict(options)
        if "delay_ms" in options:
            options["delivery_timestamp_ms"] = self.target.now_ms() + options.pop("delay_ms")
        result = self.producer.send(TOPIC, key.encode(), key=key, **options)
        return f"send {key}: {result.status}"

    def do_batch(self, keys: tuple[str, ...]) -> str:
        results = self.producer.send_batch([{"topic": TOPIC, "body": k.encode(), "key": k} for k in keys])
        return "batch: " + ",".join(r.status for r in results)

    def do_tx(self, key: str, local_state: str | None) -> str:
        if self.tx_producer is None:
            self.tx_producer = self.target.transaction_producer("TP", self._check, topics=[TOPIC])
        self.tx_producer.send_in_transaction(TOPIC, key.encode(), key=key, local_state=(
            None if local_state is None else LocalTransactionState[local_state]))
        return f"tx {key}"

    def _check(self, key: str | None, n: int) -> LocalTransactionState | None:
        unknown, answer = self.program.checks.get(key or "", (0, "COMMIT_MESSAGE"))
        return None if n <= unknown else LocalTransactionState[answer]

    def _push_consumers(self) -> list[Any]:
        """The running consumers that are not simple consumers (those receive)."""
        return [c for c in self.consumers if not hasattr(c, "receive")]

    def _take(self, candidates: list[Any], index: int) -> Any:
        """The ``index``-th of ``candidates`` (cyclically), no longer counted among the running consumers."""
        consumer = candidates[index % len(candidates)]
        self.consumers.remove(consumer)
        return consumer

    def do_crash(self, index: int) -> str:
        pushed = [c for c in self._push_consumers() if hasattr(c, "crash")]
        if not pushed:
            return "crash: no push consumer"
        self._take(pushed, index).crash()
        return "crash"

    def do_send_fault(self, outcome: str, count: int) -> str:
        self.target.inject_send_fault("broker-a", outcome, count)
        return f"send fault {outcome}"

    def do_push4x(self, orderly: bool, broadcasting: bool, max_rt: int, sdk: str) -> str:
        self.consumers.append(self.target.push_consumer_4x(
            GROUP, TOPIC, self.listener, orderly=orderly, broadcasting=broadcasting, max_reconsume_times=max_rt,
            **({"sdk": sdk} if sdk != "java" else {})))
        return "push4x"

    def do_push5x(self, sdk: str) -> str:
        self.consumers.append(self.target.push_consumer_5x(GROUP, TOPIC, self.listener, sdk=sdk))
        return "push5x"

    def do_simple(self) -> str:
        self.consumers.append(self.target.simple_consumer_5x(GROUP, TOPIC))
        return "simple"

    def _simple(self, index: int) -> Any:
        simple = [c for c in self.consumers if hasattr(c, "receive")]
        return simple[index % len(simple)] if simple else None

    def do_receive(self, index: int, max_messages: int, invisible_ms: int) -> str:
        consumer = self._simple(index)
        if consumer is None:
            return "receive: no simple consumer"
        views = consumer.receive(max_messages, invisible_ms)
        self.received.extend(views)
        return f"receive: {_view_result(views)}"

    def do_ack(self, index: int) -> str:
        if not self.received:
            return "ack: nothing received"
        view = self.received[index % len(self.received)]
        return f"ack {view.key}#{view.delivery_attempt}: {self._simple(0).ack(view)}"

    def do_change(self, index: int, invisible_ms: int) -> str:
        if not self.received:
            return "change: nothing received"
        view = self.received[index % len(self.received)]
        code, handle = self._simple(0).change_invisible_duration(view, invisible_ms)
        if handle is not None:  # the new handle is the one to ack with from now on
            self.received[index % len(self.received)] = _with_handle(view, handle)
        return f"change {view.key}#{view.delivery_attempt}: {code}"

    def do_shutdown(self, index: int) -> str:
        pushed = self._push_consumers()
        if not pushed:
            return "shutdown: no push consumer"
        self._take(pushed, index).shutdown()
        return "shutdown"

    def do_advance(self, ms: int) -> str:
        self.target.advance(ms)
        return f"advance {ms}"

    def do_fault(self, name: str, count: int) -> str:
        self.target.inject_fault(name, count)
        return f"fault {name}"


def _with_handle(view: MessageView, handle: str) -> MessageView:
    return dataclasses.replace(view, receipt_handle=handle)


def _stored(target: Target, stories: dict[str, list[Step]], ids: Mapping[str, str]) -> dict[str, list[str]]:
    """Each topic a transcript names as stored-in or dead-lettered-to, read through ``read_stored``: every
    copy's key, reconsume times and properties (deployment ones left out, ids named as in the transcripts);
    empty when the target cannot read stored messages."""
    if "observe.stored" not in target.capabilities:
        return {}
    topics = sorted({value for steps in stories.values() for s in steps for name, value in s.fields
                     if name == "stored_topic" or (s.kind == "DLQ" and name == "topic")}
                    | ({HALF_TOPIC, OP_TOPIC} if any(s.kind == "TX_HALF" for steps in stories.values() for s in steps)
                       else set()))
    return {topic: sorted(f"{view.key} rt={view.reconsume_times} {properties_text(view.properties, ids)}"
                          for view in target.read_stored(topic)) for topic in topics}


def run_program(target: Target, program: Program) -> Run:
    """Run every step, let the target settle, shut the consumers down; results, transcripts, stored copies."""
    interpreter = _Interpreter(target, program)
    interpreter.set_up()
    results = [interpreter.step(step) for step in program.steps]
    target.settle(SETTLE_MS)
    target.mark_settled()
    for consumer in interpreter.consumers:
        if not hasattr(consumer, "receive"):
            consumer.shutdown()
    events = target.events()
    stories = transcripts(events)
    offsets = {f"{TOPIC}:{q}": target.committed_offset(GROUP, TOPIC, q) for q in range(program.queues)} \
        if "observe.offset" in target.capabilities else {}
    return Run(results, stories, _stored(target, stories, id_names(events)), offsets, placements(events))


def program_duration_ms(program: Program) -> int:
    """Spec time a run of ``program`` takes at most: its steps' waits and the settle after them."""
    return sum(step[1] for step in program.steps if step[0] == "advance") + SETTLE_MS
