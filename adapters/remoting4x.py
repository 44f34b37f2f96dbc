"""``remoting://NAMESRV``: the official 4.x SDK ``rocketmq-client-python`` against any name server, through
``drivers/remoting4x_driver.py`` in its own environment (``.venv-4x``), with the set-up (topics, groups)
sent by the harness as ``mqadmin`` sends it: the remoting admin codes to every broker the name server
knows. A target kind of ``adapters.targets``.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from history.outcomes import NotApplicable
from history.profiles import REMOTING_4X
from spec import versions

from .base import TargetError
from .driver import DriverTarget, driver_process
from .remoting_client import RemotingAdmin, RemotingClient, RemotingClientError
from .targets import REMOTING, Probe

ROOT = Path(__file__).resolve().parent.parent
VENV_4X_PYTHON = ROOT / ".venv-4x" / "bin" / "python"
DRIVER = ROOT / "drivers" / "remoting4x_driver.py"


def driver_command(namesrv: str) -> str:
    """The 4.x driver's command line for one name server."""
    if not VENV_4X_PYTHON.exists():
        raise NotApplicable(f"{REMOTING.text(namesrv)}: the 4.x environment is missing ({VENV_4X_PYTHON}); "
                            "make driver-4x installs it")
    return " ".join(shlex.quote(part) for part in (str(VENV_4X_PYTHON), str(DRIVER), "--namesrv", namesrv))


class RemotingTarget(DriverTarget):
    """A 4.x SDK session; topics and groups are set up through the name server's brokers."""

    def __init__(self, namesrv: str, profile: str = REMOTING_4X, *, run_id: str = "run", seed: int = 0,
                 release: str = versions.LATEST) -> None:
        if profile != REMOTING_4X:
            raise NotApplicable(f"{REMOTING.text(namesrv)} runs the 4.x SDK: profile {profile} needs another target")
        self.namesrv = namesrv
        self.admin = RemotingAdmin(namesrv)
        super().__init__(driver_command(namesrv), profile, run_id=run_id, seed=seed, release=release)
        self.name = REMOTING.text(namesrv)

    def _set_up(self, what: str, action: Any) -> None:
        try:
            action()
        except RemotingClientError as exc:
            raise TargetError(f"{self.name}: {what} through the name server failed: {exc}") from None

    def create_topic(self, name: str, **options: Any) -> None:
        if options.get("brokers", 1) > 1:
            raise NotApplicable(f"{self.name}: topics spanning several brokers are set up per broker with mqadmin")
        self._set_up(f"create topic {name}", lambda: self.admin.create_topic(
            name, int(options.get("read_queues", 4)), int(options.get("write_queues", 4)), int(options.get("perm", 6)),
            None))

    def configure_group(self, name: str, **options: Any) -> None:
        self._set_up(f"configure group {name}", lambda: self.admin.create_group(
            name, int(options.get("retry_max_times", 16)), bool(options.get("fifo", False)), None))


def build(address: str, profile: str, **options: object) -> RemotingTarget:
    """A target of the ``remoting://NAMESRV`` kind (``adapters.targets``)."""
    return RemotingTarget(address, profile, **options)  # type: ignore[arg-type]


def probe(address: str) -> Probe:
    """Reach the name server, then start the driver and read its hello (the 4.x SDK on a wall clock)."""
    try:
        with RemotingClient(address, timeout_s=5) as client:
            client.broker_addresses()
    except RemotingClientError as exc:
        raise TargetError(f"{REMOTING.text(address)}: unreachable: {exc}") from None
    hello = driver_process(driver_command(address)).hello
    return Probe(tuple(hello.get("profiles", ())), str(hello.get("clock", "wall")), hello.get("version"), False, None)


__all__ = ["RemotingTarget", "build", "probe", "driver_command"]

