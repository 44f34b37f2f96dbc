"""``remoting://NAMESRV``: the official 4.x SDK ``rocketmq-client-python`` against any name server, through
``drivers/remoting4x_driver.py`` in its own environment (``.venv-4x``; each SDK client in a worker process
of its own). The harness does what a user does with ``mqadmin`` and an ordinary consumer: it sets topics and
groups up with the remoting admin codes, reads the dead letters from ``%DLQ%group`` with pulls, and learns
``rmqc serve``'s time scale from the broker's runtime info (a real broker runs at 1). A target kind of
``adapters.targets``.
"""
from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

from frontends.remoting import handlers as codes
from frontends.remoting import send_faults
from history.outcomes import NotApplicable
from history.profiles import REMOTING_4X
from history.values import SEND_OUTCOMES
from history.views import Listener
from reference_impl.rules import cpp4x
from spec import versions

from .base import TargetError
from .cluster_faults import ReleaseSendFaults
from .driver import DriverConsumer, DriverProcess
from .remoting_client import RemotingAdmin, RemotingClient, RemotingClientError
from .targets import REMOTING, Probe
from .wall_driver import WallDriverTarget

ROOT = Path(__file__).resolve().parent.parent
VENV_4X_PYTHON = ROOT / ".venv-4x" / "bin" / "python"
DRIVER = ROOT / "drivers" / "remoting4x_driver.py"


def driver_command(namesrv: str, time_scale: float = 1.0, wire_scale: float = 1.0) -> str:
    """The 4.x driver's command line for one name server, the server's time scale and what its clients write
    in the server's seconds (``wire_scale``: 1 for ``rmqc serve``; the time scale for a compressed release)."""
    if not VENV_4X_PYTHON.exists():
        raise NotApplicable(f"{REMOTING.text(namesrv)}: the 4.x environment is missing ({VENV_4X_PYTHON}); "
                            "make driver-4x installs it")
    return " ".join(shlex.quote(part) for part in (str(VENV_4X_PYTHON), str(DRIVER), "--namesrv", namesrv,
                                                     "--time-scale", repr(time_scale), "--wire-scale", repr(wire_scale)))


class RemotingTarget(WallDriverTarget):
    """A 4.x SDK session; topics and groups are set up through the name server's brokers. A kind of target that
    drives another 4.x client through the same set-up (``adapters.java_remoting``) names its ``KIND`` and its
    driver's ``command_for``."""

    KIND = REMOTING
    SHARED = False
    """One driver process for every session of the test process (``WallDriverTarget``'s ``shared``), or one each."""

    @classmethod
    def command_for(cls, namesrv: str, time_scale: float, wire_scale: float) -> str:
        """The driver's command line for a name server, the server's time scale and its wire scale."""
        return driver_command(namesrv, time_scale, wire_scale)

    def __init__(self, namesrv: str, profile: str = REMOTING_4X, *, run_id: str = "run", seed: int = 0,
                 release: str = versions.LATEST, budget_s: float | None = None,
                 time_scale: float | None = None) -> None:
        """``time_scale``: the broker's, when the harness compressed a real release's clocks through its keys
        (``release:V``); by default read from ``rmqc serve``'s runtime info (1 for a real broker)."""
        kind = self.KIND
        if profile != REMOTING_4X:
            raise NotApplicable(f"{kind.text(namesrv)} runs a 4.x SDK: profile {profile} needs another target")
        try:
            scale = time_scale or RemotingAdmin(namesrv).time_scale()
        except RemotingClientError as exc:
            raise TargetError(f"{kind.text(namesrv)}: unreachable: {exc}") from None
        wire_scale = time_scale or 1.0  # a release's own keys compressed its clocks: it reads wall seconds
        super().__init__(kind.text(namesrv), namesrv, self.command_for(namesrv, scale, wire_scale), profile,
                         run_id=run_id, seed=seed, release=release, budget_s=budget_s, shared=self.SHARED)
        self.client_timer_scale = 1.0 / self.time_scale  # the C++ client's timers run on the wall clock

    def create_topic(self, name: str, **options: Any) -> None:
        """On the first ``brokers`` brokers by name, as ``mqadmin updateTopic -b`` on each (``rmqc serve`` runs
        two); a server with fewer brokers makes the test not applicable."""
        brokers = int(options.get("brokers", 1))
        if brokers > 1:
            known = self._broker_table()
            if len(known) < brokers:
                raise NotApplicable(f"{self.name}: a topic on {brokers} brokers, and the name server knows "
                                    f"{len(known)} ({', '.join(n for n, _ in known)})")
        self._set_up(f"create topic {name}", lambda: self.admin.create_topic(
            self.names.real(name), int(options.get("read_queues", 4)), int(options.get("write_queues", 4)),
            int(options.get("perm", 6)), None, brokers))

    def _broker_table(self) -> list[tuple[str, str]]:
        try:
            return self.admin.broker_table()
        except RemotingClientError as exc:
            raise TargetError(f"{self.name}: the name server's brokers: {exc}") from None

    # ---- send faults and send attempts, where the broker is rmqc serve's (frontends.remoting.send_faults) ----

    def inject_send_fault(self, broker: str, outcome: str, count: int = 1) -> None:
        """The next ``count`` send attempts on ``broker`` for this session's topics meet ``outcome`` (-1: all): asked
        of ``rmqc serve``'s broker of that name; a real broker takes no injected fault (not applicable)."""
        if self.SEND_LOOP_UNCHECKED:
            raise NotApplicable(f"{self.name}: {self.SEND_LOOP_UNCHECKED}")
        release_faults = ReleaseSendFaults.of(self)
        if release_faults is not None and not self._logs_attempts():  # a real cluster: a nemesis on the broker
            release_faults.cause(broker, outcome, count)
            return
        address = dict(self._broker_table()).get(broker)
        if address is None:
            raise NotApplicable(f"{self.name}: the name server knows no broker {broker}")
        self._serve_fault(broker, address, outcome, count)

    def _serve_fault(self, broker: str, address: str, outcome: str, count: int) -> None:
        """``rmqc serve``'s INJECT_SEND_FAULT on the broker at ``address``, for this session's names; a broker that
        does not take it makes the test not applicable."""
        try:
            with RemotingClient(address, 5) as client:
                answer = client.inject_send_fault(outcome, count, self._fault_scope)
        except RemotingClientError as exc:
            raise TargetError(f"{self.name}: injecting {outcome} into {broker}: {exc}") from None
        if answer.code == codes.REQUEST_CODE_NOT_SUPPORTED:
            raise NotApplicable(f"{self.name}: {broker} takes no injected fault (only rmqc serve's brokers do)")
        if answer.code != codes.SUCCESS:
            raise NotApplicable(f"{self.name}: {broker} refused the {outcome} fault: {answer.remark}")
        self._faulted = {*getattr(self, "_faulted", ()), address}

    @property
    def _fault_scope(self) -> str:
        """The end of every topic name of this session (``SessionNames``): its faults reach its own sends only."""
        return f"-{self.names.tag}"

    def close(self) -> None:
        release_faults = getattr(self, "_release_faults", None)
        if release_faults is not None:  # the brokers the test killed or stalled answer again
            release_faults.heal()
        for address in getattr(self, "_faulted", ()):
            try:
                with RemotingClient(address, 5) as client:
                    client.inject_send_fault("", 0, self._fault_scope, clear=True)
            except RemotingClientError:
                pass
        self._faulted = set()
        super().close()

    def send_fault_outcomes(self) -> tuple[str, ...]:
        """What ``rmqc serve``'s brokers can make a send attempt meet; none on a real broker."""
        if self.SEND_LOOP_UNCHECKED:
            return ()
        if not self._logs_attempts():
            release_faults = ReleaseSendFaults.of(self)
            return release_faults.outcomes() if release_faults is not None else ()
        return tuple(o for o in SEND_OUTCOMES if o not in send_faults.NOT_SERVED)

    def send_fault_counts(self) -> tuple[int, ...]:
        """How many attempts an injected fault may last: 1 to 3 on ``rmqc serve``; every attempt (-1) on a real
        broker, whose faults last until cleared (``adapters.cluster_faults``)."""
        return (1, 2, 3) if self._logs_attempts() else (-1,)

    SEND_KINDS = ("SEND_OK", "SEND_FAIL", "SEND_UNKNOWN")
    SEND_LOOP_UNCHECKED = ("the C++ client's send retries (rocketmq-client-cpp's DefaultMQProducerImpl) are its own, "
                           "and not yet written down as SDK-CPP habits: no send faults are injected under it")
    """Why this client's sends take no injected faults (None: they do). The catalog's send loop (SEND-4X) is the
    Java client's."""

    def _logs_attempts(self) -> bool:
        """Whether the brokers are ``rmqc serve``'s, which log each send attempt (asked once)."""
        if not hasattr(self, "_attempts_logged"):
            try:
                self._attempts_address = self._broker_table()[0][1]
                with RemotingClient(self._attempts_address, 5) as client:
                    self._attempts_logged = client.send_attempts("", "rmqc-probe") is not None
            except (RemotingClientError, TargetError):
                self._attempts_logged = False
        return self._attempts_logged

    def received(self, row: Any) -> None:
        """A send's event with the attempts ``rmqc serve``'s brokers took for it, as the reference's producer
        writes them (``broker:code``, ``broker:timeout``; SEND-4X-02): what a real client's loop did, seen from
        the brokers. A failed send one of whose attempts the broker stored is indeterminate (SEND_UNKNOWN)."""
        if isinstance(row, dict) and row.get("kind") in self.SEND_KINDS and self._logs_attempts():
            attempts = self._attempts_of(row)
            if attempts:
                detail = dict(row.get("detail") or {})
                detail["attempts"] = ",".join(f"{a['broker']}:{a['outcome']}" for a in attempts)
                kind = row["kind"]
                if kind == "SEND_FAIL" and any(a.get("stored") for a in attempts):
                    kind = "SEND_UNKNOWN"
                row = {**row, "kind": kind, "detail": detail}
        elif isinstance(row, dict) and row.get("kind") in self.SEND_KINDS and (row.get("detail") or {}).get(
                "client_attempts"):
            row = client_attempts(row)
        super().received(row)

    ATTEMPTS_WAIT_S = 1.0
    """How long a one-way send's attempt may take to reach the broker after the client let it go."""

    def _attempts_of(self, row: dict[str, Any]) -> list[dict[str, Any]]:
        """By the message's client id only: keys repeat across sessions and sends, and a send the client refused
        before any attempt has no id (and no attempt)."""
        uniq_id = row.get("msg_id") or None
        if uniq_id is None:
            return []
        deadline = time.monotonic() + (self.ATTEMPTS_WAIT_S if row.get("kind") == "SEND_UNKNOWN" else 0)
        while True:
            try:
                with RemotingClient(self._attempts_address, 5) as client:
                    attempts = client.send_attempts(uniq_id, None) or []
            except RemotingClientError:
                return []
            if attempts or time.monotonic() >= deadline:
                return attempts
            time.sleep(0.02)

    def configure_group(self, name: str, **options: Any) -> None:
        if options.get("retry_ladder_ms"):
            raise NotApplicable(f"{self.name}: a 4.x group's waits come from the broker's messageDelayLevel, "
                                "not a 5.x retry ladder")
        self._set_up(f"configure group {name}", lambda: self.admin.create_group(
            self.names.real(name), int(options.get("retry_max_times", 16)), bool(options.get("fifo", False)), None,
            retry_queue_nums=int(options.get("retry_queue_nums", 1))))

    def transaction_producer(self, group: str, check: Any, topics: Any = ()) -> Any:
        """SDK-CPP-10: the broker learns of a C++ producer only at its heartbeat after its first send, up to 30 s of
        the client's clock later; ``settle`` waits for that heartbeat's checks too."""
        self._producer_started = time.monotonic()
        return super().transaction_producer(group, check, topics)

    def _checks_may_come(self) -> bool:
        started = getattr(self, "_producer_started", None)
        heartbeat_s = cpp4x.PRODUCER_HEARTBEAT_MS / 1000
        if self._open_halves and started is not None and time.monotonic() < started + heartbeat_s + 1:
            return True
        return super()._checks_may_come()

    def push_consumer_4x(self, group: str, topic: str, listener: Listener, **options: Any) -> DriverConsumer:
        self.subscribe(group, topic, str(options.get("expression", "*")), bool(options.get("broadcasting")))
        if not options.get("broadcasting"):
            # the broker makes %RETRY%group at the first heart beat, after the client has asked for its route:
            # the client would pull from it only at a later route update. Made first, as mqadmin can.
            retry = self.names.real(f"%RETRY%{group}")
            self._set_up(f"create topic {retry}", lambda: self.admin.create_topic(retry, 1, 1, 6, None), courtesy=True)
        return super().push_consumer_4x(group, topic, listener, **options)


def client_attempts(row: dict[str, Any]) -> dict[str, Any]:
    """A send's event with the attempts the client's own send hooks saw (the Java 4.x client,
    ``client_attempts``), where no broker logs them (a real release): a failed send one of whose attempts timed out
    or was answered as stored but not flushed or replicated may be stored, so it is indeterminate (SEND_UNKNOWN)."""
    detail = dict(row.get("detail") or {})
    detail["attempts"] = detail["client_attempts"]
    outcomes = [a.rsplit(":", 1)[-1] for a in detail["attempts"].split(",")]
    kind = row["kind"]
    if kind == "SEND_FAIL" and any(o in ("timeout", "10", "11", "12") for o in outcomes):
        kind = "SEND_UNKNOWN"
    return {**row, "kind": kind, "detail": detail}


def build(address: str, profile: str, **options: object) -> RemotingTarget:
    """A target of the ``remoting://NAMESRV`` kind (``adapters.targets``). Its address is the name server, so a
    ``--namesrv`` may only repeat it (``adapters.targets.check_namesrv`` refuses another before any test)."""
    options.pop("namesrv", None)
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
