"""``remoting://NAMESRV``: the official 4.x SDK ``rocketmq-client-python`` against any name server, through
``drivers/remoting4x_driver.py`` in its own environment (``.venv-4x``; each SDK client in a worker process
of its own). The harness does what a user does with ``mqadmin`` and an ordinary consumer: it sets topics and
groups up with the remoting admin codes, reads the dead letters from ``%DLQ%group`` with pulls, and learns
``rmqc serve``'s time scale from the broker's runtime info (a real broker runs at 1). A target kind of
``adapters.targets``.
"""
from __future__ import annotations

import atexit
import itertools
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from history.outcomes import NotApplicable
from history.profiles import REMOTING_4X
from history.views import Listener
from reference_impl.rules import transaction as tx_rules
from spec import versions

from .base import TargetError, wall_budget_s
from .driver import DriverConsumer, DriverProcess, DriverTarget
from .names import SessionNames
from .remoting_client import RemotingAdmin, RemotingClient, RemotingClientError
from .targets import REMOTING, Probe

ROOT = Path(__file__).resolve().parent.parent
VENV_4X_PYTHON = ROOT / ".venv-4x" / "bin" / "python"
DRIVER = ROOT / "drivers" / "remoting4x_driver.py"
STEP_S = 0.02
"""Wall seconds of one wait in the driver while the harness waits (the listeners' questions come between)."""


def driver_command(namesrv: str, time_scale: float = 1.0) -> str:
    """The 4.x driver's command line for one name server and the server's time scale."""
    if not VENV_4X_PYTHON.exists():
        raise NotApplicable(f"{REMOTING.text(namesrv)}: the 4.x environment is missing ({VENV_4X_PYTHON}); "
                            "make driver-4x installs it")
    return " ".join(shlex.quote(part) for part in (str(VENV_4X_PYTHON), str(DRIVER), "--namesrv", namesrv,
                                                     "--time-scale", repr(time_scale)))


@dataclass
class Subscription:
    topic: str
    tags: frozenset[str]
    """empty: every tag"""
    broadcasting: bool
    instances: int = 1


class RemotingTarget(DriverTarget):
    """A 4.x SDK session; topics and groups are set up through the name server's brokers."""

    def __init__(self, namesrv: str, profile: str = REMOTING_4X, *, run_id: str = "run", seed: int = 0,
                 release: str = versions.LATEST, budget_s: float | None = None) -> None:
        if profile != REMOTING_4X:
            raise NotApplicable(f"{REMOTING.text(namesrv)} runs the 4.x SDK: profile {profile} needs another target")
        self.namesrv = namesrv
        self.admin = RemotingAdmin(namesrv)
        self.names = SessionNames()
        self.budget_s = budget_s or wall_budget_s()
        try:
            scale = self.admin.time_scale()
        except RemotingClientError as exc:
            raise TargetError(f"{REMOTING.text(namesrv)}: unreachable: {exc}") from None
        command = driver_command(namesrv, scale)
        process = DriverProcess(command)
        atexit.register(process.stop)  # a session the suites never closed
        super().__init__(command, profile, run_id=run_id, seed=seed, release=release, process=process)
        self.name = REMOTING.text(namesrv)
        self.release = release
        self.client_timer_scale = 1.0 / self.time_scale  # the C++ client's timers run on the wall clock
        self._subscriptions: dict[str, Subscription] = {}
        self._sent: list[tuple[str, str | None, str | None]] = []  # (topic, key, tag) of each sent message
        self._dlq_offsets: dict[tuple[str, str, int], int] = {}
        self._open_halves: dict[str | None, int] = {}  # key -> spec ms of the half or its last check, while open
        self._seq = itertools.count(10 ** 9)

    # ---- names: this session's own topics and groups on a shared server ----

    def outgoing(self, fields: dict[str, Any]) -> dict[str, Any]:
        return {k: self.names.real(v) if k in ("topic", "group", "name") and isinstance(v, str) else v
                for k, v in fields.items()}

    def incoming(self, row: Any) -> Any:
        return {k: self.names.logical(v) if k in ("topic", "group", "stored_topic") and isinstance(v, str) else v
                for k, v in row.items()}

    # ---- set-up through the admin codes ----

    def _set_up(self, what: str, action: Any) -> None:
        try:
            action()
        except RemotingClientError as exc:
            raise TargetError(f"{self.name}: {what} through the name server failed: {exc}") from None

    def create_topic(self, name: str, **options: Any) -> None:
        if options.get("brokers", 1) > 1:
            raise NotApplicable(f"{self.name}: topics spanning several brokers are set up per broker with mqadmin")
        self._set_up(f"create topic {name}", lambda: self.admin.create_topic(
            self.names.real(name), int(options.get("read_queues", 4)), int(options.get("write_queues", 4)), int(options.get("perm", 6)),
            None))

    def configure_group(self, name: str, **options: Any) -> None:
        self._set_up(f"configure group {name}", lambda: self.admin.create_group(
            self.names.real(name), int(options.get("retry_max_times", 16)), bool(options.get("fifo", False)), None))

    def inject_fault(self, name: str, count: int = 1) -> None:
        raise NotApplicable(f"{self.name}: a real SDK and broker take no injected {name} fault")

    # ---- what the harness watches ----

    def received(self, row: Any) -> None:
        super().received(row)
        event = self._events[-1]
        if event.kind == "SEND_OK" and event.topic:
            self._sent.append((event.topic, event.key, (event.detail or {}).get("tags")))
        elif event.kind == "TX_HALF":
            if (event.detail or {}).get("local_state", "UNKNOW") == "UNKNOW":
                # checks start after the half's immunity (CHECK_IMMUNITY_TIME_IN_SECONDS), if it has one
                self._open_halves[event.key] = event.ts_ms + 1000 * int((event.detail or {}).get("immunity_seconds", 0))
            elif (event.detail or {}).get("local_state") == "COMMIT_MESSAGE" and event.topic:
                self._sent.append((event.topic, event.key, None))
        elif event.kind == "TX_CHECK" and event.key in self._open_halves:
            self._open_halves[event.key] = event.ts_ms

    def transaction_producer(self, group: str, check: Any, topics: Any = ()) -> Any:
        """The checker's answers close a half (or make it deliverable) for ``settle``."""
        def watched(key: str | None, n: int) -> Any:
            state = check(key, n)
            if state is not None and state.name != "UNKNOW":
                self._open_halves.pop(key, None)
                if state.name == "COMMIT_MESSAGE":
                    topic = next((e.topic for e in self._events if e.kind == "TX_HALF" and e.key == key), None)
                    if topic:
                        self._sent.append((topic, key, None))
            return state

        return super().transaction_producer(group, watched, topics)

    def _checks_may_come(self) -> bool:
        """An open half is checked every interval after the transaction timeout, at most 15 times (TX-03, TX-04):
        once no check came for two intervals past that, the broker has given up on it."""
        window = 2 * tx_rules.check_interval_ms(self.release) + tx_rules.TRANSACTION_TIMEOUT_MS
        now = self.now_ms()
        return any(now - last < window for last in self._open_halves.values())

    def push_consumer_4x(self, group: str, topic: str, listener: Listener, **options: Any) -> DriverConsumer:
        expression = str(options.get("expression", "*"))
        tags = frozenset() if expression.strip() == "*" else frozenset(t.strip() for t in expression.split("||"))
        known = self._subscriptions.get(group)
        self._subscriptions[group] = Subscription(topic, tags, bool(options.get("broadcasting")),
                                                  known.instances + 1 if known else 1)
        if not options.get("broadcasting"):
            # the broker makes %RETRY%group at the first heart beat, after the client has asked for its route:
            # the client would pull from it only at a later route update. Made first, as mqadmin can.
            retry = self.names.real(f"%RETRY%{group}")
            self._set_up(f"create topic {retry}", lambda: self.admin.create_topic(retry, 1, 1, 6, None))
        return super().push_consumer_4x(group, topic, listener, **options)

    def _finished(self, group: str, key: str | None) -> bool:
        """A message is done for a group once consumed, dead-lettered, or (broadcasting, which never sends
        back: RETRY-CONC-02) answered by every instance."""
        sub = self._subscriptions[group]
        kinds = ("CONSUME_OK", "DLQ") + (("CONSUME_FAIL",) if sub.broadcasting else ())
        done = sum(1 for e in self._events if e.group == group and e.key == key and e.kind in kinds)
        return done >= (sub.instances if sub.broadcasting else 1)

    def _pending(self) -> list[tuple[str, str | None]]:
        return [(group, key) for group, sub in self._subscriptions.items() for topic, key, tag in self._sent
                if topic == sub.topic and (not sub.tags or tag in sub.tags) and not self._finished(group, key)]

    def _read_dead_letters(self) -> None:
        """Pull what reached ``%DLQ%group`` of each group, as an ordinary consumer of that topic would."""
        for group in self._subscriptions:
            topic = self.names.real(f"%DLQ%{group}")
            try:
                with RemotingClient(self.namesrv, 5) as ns:
                    route = ns.route(topic)
                if route is None:
                    continue
                for broker in route.get("brokerDatas", []):
                    address = broker["brokerAddrs"].get("0") or broker["brokerAddrs"].get(0)
                    queues = next((q["readQueueNums"] for q in route.get("queueDatas", [])
                                   if q["brokerName"] == broker["brokerName"]), 1)
                    with RemotingClient(address, 5) as client:
                        for queue_id in range(int(queues)):
                            self._read_dlq_queue(client, group, topic, queue_id)
            except RemotingClientError as exc:
                raise TargetError(f"{self.name}: reading {topic} failed: {exc}") from None

    def _read_dlq_queue(self, client: RemotingClient, group: str, topic: str, queue_id: int) -> None:
        where = (client.address, topic, queue_id)
        while True:
            offset = self._dlq_offsets.get(where, 0)
            _, messages, next_offset = client.pull(f"rmqc-dlq-reader-{group}", topic, queue_id, offset)
            if not messages:
                return
            self._dlq_offsets[where] = next_offset
            for m in messages:
                key = m.properties.get("KEYS")
                msg_id = m.properties.get("UNIQ_KEY")
                attempts = sum(1 for e in self._events if e.kind == "DELIVER" and e.group == group and e.key == key)
                self.received({"run_id": "run", "profile": self.profile, "seq": next(self._seq),
                                  "ts_ms": self.now_ms(), "kind": "DLQ", "topic": topic, "group": self.names.real(group),
                                  "msg_id": msg_id, "key": key, "attempt": attempts,
                                  "detail": {"reconsume_times": str(m.reconsume_times)}})

    # ---- time ----

    def require_duration(self, spec_ms: float) -> None:
        wall = spec_ms * self.time_scale / 1000
        if wall > self.budget_s:
            raise NotApplicable(f"{spec_ms / 1000:.0f} s of spec time takes {wall:.0f} s on {self.name} "
                                f"(time scale {self.time_scale:g}), over the {self.budget_s:.0f} s budget")

    def settle(self, max_ms: int = 30 * 24 * 3_600_000) -> None:
        """Until every sent message is consumed or dead-lettered by each subscribed group, then a quiet of 20
        spec seconds (at least 50 ms) for stray redeliveries; bounded by ``max_ms`` and the budget. The wait
        is a run of ``step`` calls, so the listeners' questions keep being answered."""
        start = time.monotonic()
        deadline = start + min(self.budget_s, max_ms * self.time_scale / 1000)
        while time.monotonic() < deadline:
            self._read_dead_letters()
            if not self._pending() and not self._checks_may_come():
                break
            self._step(STEP_S)
        quiet_end = min(deadline, time.monotonic() + max(0.05, 20 * self.time_scale))
        while time.monotonic() < quiet_end:
            self._step(STEP_S)
        self._read_dead_letters()

    def advance(self, delta_ms: int) -> None:
        """Let ``delta_ms`` of spec time pass while answering the listeners."""
        end = time.monotonic() + delta_ms * self.time_scale / 1000
        while time.monotonic() < end:
            self._step(min(end - time.monotonic(), STEP_S))

    def _step(self, wall_s: float) -> None:
        """Up to ``wall_s`` of waiting in the driver, answering the listeners' questions meanwhile."""
        self.call("step", deadline_ms=self.now_ms() + max(1, int(wall_s / self.time_scale * 1000)))


def build(address: str, profile: str, **options: object) -> RemotingTarget:
    """A target of the ``remoting://NAMESRV`` kind (``adapters.targets``)."""
    return RemotingTarget(address, profile, **options)  # type: ignore[arg-type]


def probe(address: str) -> Probe:
    """Reach the name server and a broker (its time scale), then start the driver and read its hello."""
    try:
        scale = RemotingAdmin(address).time_scale()
    except RemotingClientError as exc:
        raise TargetError(f"{REMOTING.text(address)}: unreachable: {exc}") from None
    process = DriverProcess(driver_command(address, scale))  # each session starts its own: this one only says hello
    hello = process.hello
    process.stop()
    return Probe(tuple(hello.get("profiles", ())), str(hello.get("clock", "wall")), hello.get("version"), False, None)


__all__ = ["RemotingTarget", "build", "probe", "driver_command"]
