"""``nodejs://HOST:PORT``: the official Node.js 5.x SDK ``rocketmq-client-nodejs`` (pinned in
``drivers/nodejs/package-lock.json``, installed by ``make driver-node``) against any 5.x proxy endpoint,
through ``drivers/nodejs/driver.js``: the same target as ``--target "driver:node drivers/nodejs/driver.js
--endpoint HOST:PORT ..."`` plus what a user does around an SDK, done by the harness: topics and groups set
up with the remoting admin codes of the name server (``rmqc serve`` says where its own is; a real proxy's
is given with ``--rmq-namesrv``), dead letters read from ``%DLQ%group``, and the proxy's time scale learnt
from ``rmqc serve`` (a real proxy runs at 1). A target kind of ``adapters.targets``.
"""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any, Callable, Sequence

from history.outcomes import NotApplicable
from history.profiles import GRPC_5X
from history.views import Listener
from spec import versions

from .base import TargetError
from .driver import DriverConsumer, DriverProcess
from .grpc import ServerInfo, server_info
from .targets import NODEJS, Probe, TargetKind
from .wall_driver import WallDriverTarget

ROOT = Path(__file__).resolve().parent.parent
DRIVER_DIR = ROOT / "drivers" / "nodejs"
DRIVER = DRIVER_DIR / "driver.js"
SDK_PACKAGE = DRIVER_DIR / "node_modules" / "rocketmq-client-nodejs" / "package.json"


_COMMANDS: dict[tuple[str, str], str] = {}


def shared_command(endpoint: str, info: ServerInfo,
                   make: Callable[[str, ServerInfo], str] | None = None) -> str:
    """One driver process per endpoint serves every session of the test process (the protocol's sessions):
    its command is made from the first answer of the server, whose clock maps linearly onto the monotonic
    one, so every later session reads spec time on the same scale. ``make``: the command of another SDK's
    driver that takes the same options (``adapters.golang``); this one's by default."""
    make = make or driver_command
    key = (f"{make.__module__}.{make.__qualname__}", endpoint)
    if key not in _COMMANDS:
        _COMMANDS[key] = make(endpoint, info)
    return _COMMANDS[key]


def time_options(endpoint: str, info: ServerInfo) -> list[str]:
    """The options a wall-clock SDK driver takes: the endpoint, the server's time scale, the harness's clock
    epoch (both sides read CLOCK_MONOTONIC) and how a spec-time delivery timestamp maps onto the server's clock."""
    stamp_scale = 1.0 if info.admin else info.time_scale  # rmqc serve's clock runs in spec ms
    return ["--endpoint", endpoint, "--time-scale", repr(info.time_scale), "--epoch", repr(info.answered_at),
            "--timestamp-base-ms", repr(info.spec_wall_at_start_ms), "--timestamp-scale", repr(stamp_scale)]


def driver_command(endpoint: str, info: ServerInfo) -> str:
    """The Node driver's command line for one endpoint: the server's time scale, the harness's clock epoch
    (both sides read CLOCK_MONOTONIC) and how a spec-time delivery timestamp maps onto the server's clock."""
    node = shutil.which("node")
    if node is None:
        raise NotApplicable(f"{NODEJS.text(endpoint)}: Node.js is not installed (node is not on PATH)")
    if not SDK_PACKAGE.exists():
        raise NotApplicable(f"{NODEJS.text(endpoint)}: rocketmq-client-nodejs is not installed "
                            f"({SDK_PACKAGE.parent}); make driver-node installs it")
    return " ".join(shlex.quote(part) for part in (node, str(DRIVER), *time_options(endpoint, info)))


class NodeTarget(WallDriverTarget):
    """A Node.js SDK session; topics and groups are set up through the name server's brokers. Another 5.x SDK's
    driver of the same shape is a subclass with its own ``KIND``, ``SDK``, ``SDK_TITLE`` and ``command``."""

    FINISHED_KINDS = ("ACK", "DLQ")
    KIND = NODEJS
    SDK = "nodejs"
    """The ``sdk`` option value of the client this target drives."""
    SDK_TITLE = "Node.js"
    command = staticmethod(driver_command)
    """The driver's command line for an endpoint (``shared_command`` makes it once)."""

    def __init__(self, address: str, profile: str = GRPC_5X, *, run_id: str = "run", seed: int = 0,
                 release: str = versions.LATEST, budget_s: float | None = None, namesrv: str | None = None,
                 info: ServerInfo | None = None) -> None:
        """``info``: what the server is, when the caller knows better than asking it (a real release whose
        clocks the harness compressed through its keys, ``adapters.release``)."""
        if profile != GRPC_5X:
            raise NotApplicable(f"{self.KIND.text(address)} runs the {self.SDK_TITLE} 5.x SDK; profile {profile} "
                                "needs another target")
        info = info or server_info(address)
        namesrv = namesrv or info.namesrv
        if namesrv is None:
            raise NotApplicable(f"{self.KIND.text(address)}: no name server to set topics and groups up through "
                                "(give --rmq-namesrv)")
        super().__init__(self.KIND.text(address), namesrv, shared_command(address, info, self.command), profile,
                         run_id=run_id, seed=seed, release=release, budget_s=budget_s, shared=True)
        self.address = address
        self.version = info.version
        self.client_timer_scale = 1.0 / self.time_scale  # the SDK's own timers (FIFO local retries) run on the wall clock
        self._fifo_groups: set[str] = set()

    def create_topic(self, name: str, *, read_queues: int = 4, write_queues: int = 4, perm: int = 6,
                     message_type: str = "NORMAL", brokers: int = 1) -> None:
        if brokers > 1:
            raise NotApplicable(f"{self.name}: topics spanning several brokers are set up outside the SDK")
        real = self.names.real(name)
        self._set_up(f"create topic {real} ({read_queues}/{write_queues} queues, {message_type})",
                     lambda: self.admin.create_topic(real, read_queues, write_queues, perm, message_type))

    def configure_group(self, name: str, *, retry_max_times: int = 16, fifo: bool = False,
                        retry_policy: str = "CUSTOMIZED", retry_queue_nums: int = 1,
                        retry_ladder_ms: Sequence[int] | None = None, courtesy: bool = False) -> None:
        """``courtesy``: the harness's own set-up of a group a client is about to use; a broker's refusal (an
        illegal group name) is left for the client to meet (``WallDriverTarget._set_up``)."""
        real = self.names.real(name)
        self._set_up(f"configure group {real}", lambda: self.admin.create_group(
            real, retry_max_times, fifo, retry_policy, retry_ladder_ms, retry_queue_nums), courtesy)
        if fifo:
            self._fifo_groups.add(name)

    def producer(self, group: str = "P", **options: object) -> Any:
        sdk = options.pop("sdk", self.SDK)
        if sdk != self.SDK:
            raise NotApplicable(f"{self.name} drives the {self.SDK_TITLE} SDK, not the {sdk} one")
        return super().producer(group, **options)

    def push_consumer_4x(self, group: str, topic: str, listener: Listener, **options: Any) -> DriverConsumer:
        raise NotApplicable(f"{self.name} is a 5.x proxy; 4.x push consumers need the remoting protocol")

    def push_consumer_5x(self, group: str, topic: str, listener: Listener, *, sdk: str | None = None,
                         expression: str = "*") -> DriverConsumer:
        sdk = sdk or self.SDK
        if sdk != self.SDK:
            raise NotApplicable(f"{self.name} drives the {self.SDK_TITLE} SDK, not the {sdk} one")
        self.subscribe(group, topic, expression)
        return super().push_consumer_5x(group, topic, listener, expression=expression)


def build(address: str, profile: str, **options: object) -> NodeTarget:
    """A target of the ``nodejs://HOST:PORT`` kind (``adapters.targets``)."""
    return NodeTarget(address, profile, **options)  # type: ignore[arg-type]


def probe(address: str) -> Probe:
    """Reach the proxy once, then start the driver and read its hello."""
    return probe_driver(NODEJS, driver_command, address)


def probe_driver(kind: TargetKind, make: Callable[[str, ServerInfo], str], address: str) -> Probe:
    """Reach the proxy once, then start the driver ``make`` gives and read its hello (a 5.x SDK's)."""
    info = server_info(address)
    process = DriverProcess(make(address, info))  # each session starts its own: this one only says hello
    hello = process.hello
    process.stop()
    if GRPC_5X not in hello.get("profiles", ()):
        raise TargetError(f"{kind.text(address)}: the driver runs {hello.get('profiles')}, not {GRPC_5X}")
    return Probe((GRPC_5X,), "wall", info.version, False, info.release)


__all__ = ["NodeTarget", "build", "probe", "driver_command", "probe_driver", "shared_command", "time_options"]
