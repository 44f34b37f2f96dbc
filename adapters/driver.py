"""The driver target: any SDK behind the driver protocol (``--target driver:COMMAND``).

``COMMAND`` is started once per test process; it speaks JSON lines on its stdin and stdout
(``spec/schemas/driver-protocol.schema.json``, codec in ``adapters.driver_codec``). Each ``Target``
the suites create is one ``open``ed session in it. Listeners and transaction checks stay on the
harness side: the driver asks, the harness answers; events arrive as event-log rows.
"""
from __future__ import annotations

import atexit
import itertools
import json
import os
import queue
import shlex
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Mapping, Sequence

from history.events import Event
from history.values import ListenerOutcome, LocalTransactionState
from history.views import Listener, MessageView, SendResult
from spec import versions

from .base import (
    SETTLE_LIMIT_MS,
    Target,
    TargetError,
    budget_cut,
    require_wall_budget,
    wait_by_steps,
    wall_budget_s,
    wall_wait_s,
)
from .driver_codec import (
    PROTOCOL_VERSION,
    DriverError,
    body_to_json,
    error_from_json,
    event_from_json,
    result_from_json,
    view_from_json,
    view_to_json,
)
from .targets import DRIVER, Probe

HELLO_TIMEOUT_S = 30.0
TIMEOUT_ENV = "RMQC_DRIVER_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 90.0
"""How long a driver may stay silent while the harness waits for a reply: past it the driver is hung."""
VALIDATE_ENV = "RMQC_DRIVER_VALIDATE"
"""Set to 1 to check every line both ways against the driver-protocol schema (a test mode)."""


def driver_timeout_s() -> float:
    return float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT_S)


class DriverBroken(TargetError):
    """The driver hung or wrote something that is not the protocol: it was stopped, and every later call of
    the same test fails at once with the reason (the next test starts a new one: ``forget_broken_drivers``)."""


class ProtocolValidator:
    """Every line against ``spec/schemas/driver-protocol.schema.json`` (events against the event-log schema)."""

    def __init__(self) -> None:
        import jsonschema
        from referencing import Registry, Resource

        from spec.loader import SCHEMAS_DIR

        schemas = {name: json.loads((SCHEMAS_DIR / name).read_text())
                   for name in ("driver-protocol.schema.json", "event-log.schema.json")}
        registry = Registry().with_resources(
            (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())
        base = schemas["driver-protocol.schema.json"]["$id"]
        self._validators = {kind: jsonschema.Draft202012Validator({"$ref": f"{base}#/$defs/{kind}"}, registry=registry)
                            for kind in ("command", "answer", "reply", "event", "ask")}
        self.checked = 0

    @staticmethod
    def kind_of(message: Any) -> str:
        """Which line of the protocol ``message`` means to be (the schema's ``oneOf`` branch)."""
        if not isinstance(message, dict):
            return "command"
        if "event" in message:
            return "event"
        if "ask" in message:
            return "ask"
        if "reply" in message:
            return "reply"
        return "answer" if message.get("cmd") == "answer" else "command"

    def problem(self, message: Any) -> str | None:
        """``None`` when ``message`` is a line of the protocol, else the schema's first complaint."""
        self.checked += 1
        kind = self.kind_of(message)
        error = min(self._validators[kind].iter_errors(message), key=lambda e: len(e.path), default=None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "the line"
        return f"{kind} {where}: {error.message}"[:300]


_VALIDATED: dict[str, int] = {}
"""Lines checked against the schema per driver command in this process (``RMQC_DRIVER_VALIDATE=1``)."""


def _report_validated() -> None:
    """Under ``RMQC_DRIVER_VALIDATE=1``, say on stderr at exit how many lines each driver exchanged, all checked
    (a line that is not the protocol has already failed its test with the schema's complaint)."""
    for command, count in sorted(_VALIDATED.items()):
        print(f"rmqc: driver protocol: {count} lines checked against the schema with {DRIVER.text(command)}",
              file=sys.stderr)


if os.environ.get(VALIDATE_ENV) == "1":
    atexit.register(_report_validated)


class DriverProcess:
    """One running driver: commands out, replies in; events and asks handled while waiting."""

    def __init__(self, command: str, cwd: str | None = None, timeout_s: float | None = None,
                 validate: bool | None = None) -> None:
        self.command = command
        self.name = DRIVER.text(command)
        self.timeout_s = timeout_s or driver_timeout_s()
        argv = shlex.split(command)
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable  # the harness's own interpreter, with this project importable
        try:
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, bufsize=1, cwd=cwd)
        except OSError as exc:
            raise TargetError(f"{self.name}: cannot start: {exc.strerror or exc}") from None
        self.validator = ProtocolValidator() if (os.environ.get(VALIDATE_ENV) == "1" if validate is None
                                                 else validate) else None
        self._ids = itertools.count(1)
        self.sessions: dict[str, "DriverTarget"] = {}
        self._stderr: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._early: dict[int, dict[str, Any]] = {}  # replies to outer calls that came while an inner one waited
        self.broken: str | None = None
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self.hello = self._hello()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line.rstrip())
            del self._stderr[:-20]

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _hello(self) -> dict[str, Any]:
        hello = self.call({"cmd": "hello", "protocol": PROTOCOL_VERSION}, timeout_s=HELLO_TIMEOUT_S)
        if hello.get("protocol") != PROTOCOL_VERSION:
            raise TargetError(f"{self.name}: speaks protocol {hello.get('protocol')!r}, "
                              f"this harness {PROTOCOL_VERSION}")
        return hello

    def _died(self) -> TargetError:
        try:
            self.process.wait(timeout=2)  # its stdout closed: it is exiting
        except subprocess.TimeoutExpired:
            self.process.kill()
        time.sleep(0.05)  # let the stderr reader take the last lines
        tail = " | ".join(self._stderr[-3:]) or "no output on stderr"
        return TargetError(f"{self.name}: the driver exited (code {self.process.returncode}): {tail}")

    def _break(self, reason: str) -> DriverBroken:
        """Stop a driver that no longer speaks the protocol; every later call fails at once with ``reason``."""
        self.broken = reason
        self.process.kill()
        return DriverBroken(f"{self.name}: {reason}")

    def _validate(self, message: Any, direction: str) -> None:
        if self.validator is None:
            return
        problem = self.validator.problem(message)
        _VALIDATED[self.command] = _VALIDATED.get(self.command, 0) + 1
        if problem is not None:
            raise self._break(f"{direction} a line that is not the driver protocol ({problem}): "
                              f"{json.dumps(message)[:200]}")

    def call(self, command: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send one command; serve events and asks until its reply; raise the driver's error. A driver that
        stays silent ``timeout_s`` (default ``RMQC_DRIVER_TIMEOUT_S``) while a reply is due is hung."""
        if self.broken is not None:
            raise DriverBroken(f"{self.name}: {self.broken} (earlier; the driver was stopped)")
        command = {"id": next(self._ids), **command}
        self._validate(command, "the harness wrote")
        self._send(command)
        silence = timeout_s or self.timeout_s
        while True:
            if command["id"] in self._early:
                return self._replied(self._early.pop(command["id"]))
            try:
                line = self._lines.get(timeout=silence)
            except queue.Empty:
                raise self._break(f"no answer to {command['cmd']!r} within {silence:g} s (hung)") from None
            if line is None:
                self._lines.put(None)  # every later read sees the end too
                raise self._died()
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                raise self._break(f"wrote a line that is not JSON: {line.strip()[:200]!r}") from None
            self._validate(message, "the driver wrote")
            if not isinstance(message, dict):
                raise self._break(f"wrote a JSON line that is not an object: {line.strip()[:200]!r}")
            if "event" in message:
                session = self.sessions.get(message.get("target", ""))
                if session is not None:
                    session.received(message["event"])
            elif "ask" in message:
                self._answer(message)
            elif message.get("reply") == command["id"]:
                return self._replied(message)
            elif isinstance(message.get("reply"), int):
                self._early[message["reply"]] = message

    @staticmethod
    def _replied(message: dict[str, Any]) -> dict[str, Any]:
        if not message.get("ok"):
            raise error_from_json(message.get("error") or {})
        return message

    def _answer(self, ask: dict[str, Any]) -> None:
        """The harness's listener or check answers; when the harness side fails, the driver still gets an answer
        (an EXCEPTION outcome, an UNKNOW state) so that its SDK is not left waiting, and the failure goes on."""
        answer: dict[str, Any] = {"cmd": "answer", "ask_id": ask.get("ask_id")}
        try:
            session = self.sessions[ask["target"]]
            if ask["ask"] == "consume":
                outcome = session.listeners[ask["consumer"]](view_from_json(session.incoming(ask["view"])))
                answer["outcome"] = ListenerOutcome(outcome).name
            elif ask["ask"] == "check":
                state = session.checks[ask["producer"]](ask.get("key"), int(ask["n"]))
                answer["state"] = None if state is None else LocalTransactionState(state).name
            else:
                raise DriverError(f"{self.name}: unknown ask {ask['ask']!r}")
        except BaseException:
            if ask.get("ask") == "consume":
                answer["outcome"] = ListenerOutcome.EXCEPTION.name
            self._send(answer)
            raise
        self._validate(answer, "the harness wrote")
        self._send(answer)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message, separators=(",", ":")) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def stop(self) -> None:
        if self.process.poll() is None:
            if self.broken is None:
                try:
                    self.call({"cmd": "bye"}, timeout_s=10)
                except Exception:
                    pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()


_PROCESSES: dict[str, DriverProcess] = {}


def forget_broken_drivers() -> None:
    """Start afresh, at the next session, every driver that hung or broke the protocol (called at each test's
    start: a broken driver fails the rest of its own test at once, and the next test gets a new one)."""
    for command in [c for c, p in _PROCESSES.items() if p.broken is not None]:
        del _PROCESSES[command]


def driver_process(command: str) -> DriverProcess:
    """One process per command for the whole test process; stopped when it exits. A driver that exited is
    started again; one that hung or broke the protocol is not (every call says why, at once)."""
    known = _PROCESSES.get(command)
    if known is not None and known.broken is not None:
        return known
    if known is None or known.process.poll() is not None:
        _PROCESSES[command] = DriverProcess(command)
        atexit.register(_PROCESSES[command].stop)
    return _PROCESSES[command]


class DriverTarget(Target):
    """One session in a driver process, behind the ``Target`` interface."""

    _sessions = itertools.count(1)

    def __init__(self, command: str, profile: str, *, run_id: str = "run", seed: int = 0,
                 release: str = versions.LATEST, process: DriverProcess | None = None) -> None:
        """``process``: a driver process of this session's own (stopped by ``close``); by default the one
        process of ``command`` every session of the test process shares."""
        self.own_process = process is not None
        self.process = process or driver_process(command)
        hello = self.process.hello
        self.name = DRIVER.text(command)
        self.profile = profile
        self.session = f"s{next(self._sessions)}"
        self.time_scale = float(hello.get("time_scale", 1.0))
        self.listeners: dict[str, Listener] = {}
        self.checks: dict[str, Callable[[str | None, int], LocalTransactionState | None]] = {}
        self._events: list[Event] = []
        self._handles = itertools.count(1)
        self.process.sessions[self.session] = self
        opened = self.call("open", profile=profile, run_id=run_id, seed=seed, release=release)
        self.capabilities = frozenset(opened.get("capabilities", ()))
        self.version = opened.get("version") or hello.get("version")
        self.client_library = (str(hello.get("driver", command)), hello.get("version"))

    def call(self, cmd: str, **fields: Any) -> dict[str, Any]:
        return self.process.call({"cmd": cmd, "target": self.session, **self.outgoing(fields)})

    def outgoing(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A command's fields as the driver gets them (a target may rename topics and groups)."""
        return fields

    def incoming(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """An event row or a message view from the driver, as the suites see it."""
        return row

    def received(self, row: Mapping[str, Any]) -> None:
        self._events.append(event_from_json(self.incoming(row), target=self.name))

    def _handle(self, kind: str) -> str:
        return f"{self.session}-{kind}{next(self._handles)}"

    # topics, groups, broker
    def create_topic(self, name: str, **options: Any) -> None:
        self.call("create_topic", name=name, options=options)

    def update_topic(self, name: str, **options: Any) -> None:
        self.call("update_topic", name=name, options=options)

    def configure_group(self, name: str, **options: Any) -> None:
        self.call("configure_group", name=name, options=options)

    def configure_broker(self, **settings: object) -> None:
        self.call("configure_broker", settings=settings)

    def inject_fault(self, name: str, count: int = 1) -> None:
        self.call("inject_fault", name=name, count=count)

    def inject_send_fault(self, broker: str, outcome: str, count: int = 1) -> None:
        self.call("inject_send_fault", broker=broker, outcome=outcome, count=count)

    def stored_messages(self, topic: str) -> list[dict[str, object]]:
        return list(self.call("stored_messages", topic=topic)["messages"])

    def read_stored(self, topic: str) -> list[MessageView]:
        self.require("observe.stored")
        return [view_from_json(v) for v in self.call("read_stored", topic=topic)["messages"]]

    def query_messages(self, topic: str, *, key: str | None = None, msg_id: str | None = None) -> list[MessageView]:
        self.require("observe.query")
        found = self.call("query_messages", topic=topic, key=key, msg_id=msg_id)["messages"]
        return [view_from_json(v) for v in found]

    def committed_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        self.require("observe.offset")
        offset = self.call("committed_offset", group=group, topic=topic, queue_id=queue_id)["offset"]
        return None if offset is None else int(offset)

    # clients
    def producer(self, group: str = "P", **options: object) -> "DriverProducer":
        handle = self._handle("p")
        self.call("producer", handle=handle, group=group, options=options)
        return DriverProducer(self, handle)

    def transaction_producer(self, group: str, check: Callable[[str | None, int], LocalTransactionState | None],
                             topics: Sequence[str] = ()) -> "DriverProducer":
        handle = self._handle("tp")
        self.checks[handle] = check
        self.call("transaction_producer", handle=handle, group=group, topics=list(topics))
        return DriverProducer(self, handle)

    def push_consumer_4x(self, group: str, topic: str, listener: Listener, **options: Any) -> "DriverConsumer":
        return self._push("push_consumer_4x", group, topic, listener, options)

    def push_consumer_5x(self, group: str, topic: str, listener: Listener, **options: Any) -> "DriverConsumer":
        return self._push("push_consumer_5x", group, topic, listener, options)

    def _push(self, cmd: str, group: str, topic: str, listener: Listener, options: dict[str, Any]) -> "DriverConsumer":
        handle = self._handle("c")
        self.listeners[handle] = listener
        self._note_unsettled(self.call(cmd, handle=handle, group=group, topic=topic, listener="ask", options=options))
        return DriverConsumer(self, handle)

    def _note_unsettled(self, answer: dict[str, Any]) -> None:
        """A 4.x driver answers a consumer's start or stop once its group has rebalanced, or says what it had not
        done when it stopped waiting (``unsettled``): kept for the failure that may follow (``Target.notes``)."""
        if answer.get("unsettled"):
            self.note(f"{self.name}: {answer['unsettled']}")

    def simple_consumer_5x(self, group: str, topic: str, **options: Any) -> "DriverSimpleConsumer":
        handle = self._handle("s")
        self.call("simple_consumer_5x", handle=handle, group=group, topic=topic, options=options)
        return DriverSimpleConsumer(self, handle)

    # time
    def now_ms(self) -> int:
        return int(self.call("now")["now_ms"])

    @property
    def wall_clock(self) -> bool:
        """The driver's clock is the wall's (its hello says so, or says nothing): every wait costs real time."""
        return str(self.process.hello.get("clock", "wall")) != "virtual"

    def _budget_s(self) -> float:
        return float(getattr(self, "budget_s", None) or wall_budget_s())

    def require_duration(self, spec_ms: float) -> None:
        if self.wall_clock:
            require_wall_budget(self.name, spec_ms, self.time_scale, self._budget_s())

    def advance(self, delta_ms: int) -> None:
        self.require_duration(delta_ms)  # on a wall clock: not applicable at once past the budget (issue 55)
        self.call("advance", ms=delta_ms)

    def settle(self, max_ms: int = SETTLE_LIMIT_MS) -> None:
        if self.wall_clock:  # bounded by what is left of the test's budget
            max_ms = min(max_ms, int(wall_wait_s(max_ms * self.time_scale / 1000, self._budget_s()) * 1000
                                     / self.time_scale))
        self.call("settle", max_ms=max_ms)

    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        wanted_s = timeout_ms * self.time_scale / 1000
        timeout = int(timeout_ms)
        if self.wall_clock:
            timeout = min(timeout, int(wall_wait_s(wanted_s, self._budget_s()) * 1000 / self.time_scale))
        held = wait_by_steps(predicate, timeout, self.now_ms(),  # the protocol's deadlines are whole ms
                             lambda deadline: bool(self.call("step", deadline_ms=deadline)["ran"]))
        if not held and timeout < int(timeout_ms):
            raise budget_cut(self.name, wanted_s, self.time_scale, self._budget_s())
        return held

    def events(self) -> list[Event]:
        return self._events

    def close(self) -> None:
        if self.process.process.poll() is None:
            self.call("close")
        self.process.sessions.pop(self.session, None)
        if self.own_process:
            self.process.stop()


class DriverProducer:
    def __init__(self, target: DriverTarget, handle: str) -> None:
        self.target, self.handle = target, handle

    def send(self, topic: str, body: bytes = b"", **options: Any) -> SendResult:
        answer = self.target.call("send", handle=self.handle, topic=topic, body=body_to_json(body), options=options)
        return result_from_json(answer["result"])

    def send_batch(self, messages: Any) -> list[SendResult]:
        wire = [{**m, "body": body_to_json(bytes(m["body"]))} if "body" in m else dict(m) for m in messages]
        return [result_from_json(r) for r in self.target.call("send_batch", handle=self.handle, messages=wire)["results"]]

    def send_in_transaction(self, topic: str, body: bytes = b"", *, local_state: LocalTransactionState | None = None,
                            **options: Any) -> None:
        self.target.call("send_in_transaction", handle=self.handle, topic=topic, body=body_to_json(body),
                         options={**options, "local_state": None if local_state is None else local_state.name})


class DriverConsumer:
    """A push consumer; a 4.x one also shows its rebalance state (client id, queues, offsets)."""

    def __init__(self, target: DriverTarget, handle: str) -> None:
        self.target, self.handle = target, handle

    def shutdown(self) -> None:
        self.target._note_unsettled(self.target.call("shutdown", handle=self.handle))

    def crash(self) -> None:
        self.target._note_unsettled(self.target.call("crash", handle=self.handle))

    def _state(self) -> dict[str, Any]:
        return self.target.call("consumer_state", handle=self.handle)

    @property
    def client_id(self) -> str:
        return str(self._state()["client_id"])

    @property
    def assigned(self) -> set[tuple[str, int]]:
        return {(t, q) for t, q in self._state()["assigned"]}

    @property
    def offsets(self) -> dict[tuple[str, int], int]:
        return {(t, q): o for t, q, o in self._state()["offsets"]}

    @property
    def locks(self) -> dict[tuple[str, int], tuple[bool, int | None]]:
        """An orderly 4.x consumer's broker locks as its client keeps them: (topic, queue id) -> (locked, the spec
        ms of the last lock the broker granted); empty where the driver does not tell (``consumer.broker_locks``)."""
        return {(t, q): (bool(locked), at) for t, q, locked, at in self._state().get("locks", ())}

    @property
    def allocation(self) -> tuple[set[tuple[str, str, int]], set[tuple[str, str, int]]]:
        """The client's own view of its allocation: (the queues it holds, the queues it allocated over), each as
        (topic, broker name, queue id) in the names the client uses; empty where the driver does not tell."""
        state = self._state()
        return ({(t, b, q) for t, b, q in state.get("queues", ())},
                {(t, b, q) for t, b, q in state.get("subscribed", ())})


class DriverSimpleConsumer:
    def __init__(self, target: DriverTarget, handle: str) -> None:
        self.target, self.handle = target, handle

    def receive(self, max_messages: int = 16, invisible_ms: int = 30_000) -> list[MessageView]:
        answer = self.target.call("receive", handle=self.handle, max_messages=max_messages, invisible_ms=invisible_ms)
        return [view_from_json(self.target.incoming(v)) for v in answer["views"]]

    def ack(self, view: MessageView) -> int:
        return int(self.target.call("ack", handle=self.handle, view=view_to_json(view))["code"])

    def change_invisible_duration(self, view: MessageView, invisible_ms: int) -> tuple[int, str | None]:
        answer = self.target.call("change_invisible_duration", handle=self.handle, view=view_to_json(view),
                                  invisible_ms=invisible_ms)
        return int(answer["code"]), answer.get("receipt_handle")


REFERENCE_IMPLEMENTATION = "rocketmq-conformance reference"
"""What the reference driver's hello calls its implementation."""


def build(address: str, profile: str, **options: object) -> DriverTarget:
    """A session in the driver process of the ``driver:CMD`` kind (``adapters.targets``)."""
    return DriverTarget(address, profile, **options)  # type: ignore[arg-type]


def probe(address: str) -> Probe:
    """Start the driver (one process per command) and read its hello: its profiles, clock and version,
    and whether it wraps this very version of the reference."""
    from reference_impl import VERSION

    hello = driver_process(address).hello
    wraps_reference = hello.get("implementation") == REFERENCE_IMPLEMENTATION and hello.get("version") == VERSION
    return Probe(tuple(hello.get("profiles", ())), str(hello.get("clock", "wall")), hello.get("version"),
                 wraps_reference, hello.get("release"))
