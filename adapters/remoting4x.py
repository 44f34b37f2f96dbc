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

from history.outcomes import NotApplicable
from history.profiles import REMOTING_4X
from history.views import Listener
from reference_impl.rules import cpp4x
from spec import versions

from .base import TargetError
from .driver import DriverConsumer, DriverProcess
from .remoting_client import RemotingAdmin, RemotingClientError
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
        if options.get("brokers", 1) > 1:
            raise NotApplicable(f"{self.name}: topics spanning several brokers are set up per broker with mqadmin")
        self._set_up(f"create topic {name}", lambda: self.admin.create_topic(
            self.names.real(name), int(options.get("read_queues", 4)), int(options.get("write_queues", 4)),
            int(options.get("perm", 6)), None))

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
