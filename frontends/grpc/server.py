"""Start and stop ``rmqc serve``: a grpcio server of the reference model on 127.0.0.1 by default."""
from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import yaml
from rocketmq.grpc_protocol import service_pb2_grpc

from history.profiles import GRPC_5X
from reference_impl import VERSION
from reference_impl.model.simulation import Simulation
from spec import versions

from ..limits import ServeLimits
from ..model_service import RealTimeModel
from ..remoting.server import RemotingServer
from .admin import MESSAGE_TYPES, AdminService
from .service import MessagingService, ServeOptions

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # bodies over the proxy's 4 MiB must reach the handler to be refused
log = logging.getLogger("rmqc.serve")


class ServeConfigError(ValueError):
    """A bad ``--config`` file: the message names the file and the entry."""


@dataclass
class ServeConfig:
    topics: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    auto_create: bool = True


def load_config(path: Path) -> ServeConfig:
    """``topics: [{name, queues, message_type}]``, ``groups: [{name, retry_max_times, fifo}]``, ``auto_create``."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ServeConfigError(f"{path}: {exc}".replace("\n", " ")) from None
    if not isinstance(data, dict) or set(data) - {"topics", "groups", "auto_create"}:
        raise ServeConfigError(f"{path}: expected a mapping with topics, groups and auto_create")
    config = ServeConfig(list(data.get("topics") or []), list(data.get("groups") or []),
                         bool(data.get("auto_create", True)))
    for i, topic in enumerate(config.topics):
        if not isinstance(topic, dict) or not topic.get("name"):
            raise ServeConfigError(f"{path}: topics[{i}]: needs a name")
        if topic.get("message_type", "NORMAL") not in MESSAGE_TYPES:
            raise ServeConfigError(f"{path}: topics[{i}] {topic['name']}: message_type must be one of {MESSAGE_TYPES}")
    for i, group in enumerate(config.groups):
        if not isinstance(group, dict) or not group.get("name"):
            raise ServeConfigError(f"{path}: groups[{i}]: needs a name")
    return config


class ReferenceServer:
    """The model, its event loop and the ``grpc.aio`` server (and the remoting sockets) on that loop."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 8081, time_scale: float = 1.0,
                 profile: str = GRPC_5X, config: ServeConfig | None = None, seed: int = 0,
                 release: str = versions.LATEST, remoting_ports: tuple[int, int] | None = None,
                 limits: ServeLimits | None = None, brokers: int = 2) -> None:
        """``brokers``: the remoting front end's (``RemotingServer``)."""
        if profile != GRPC_5X:
            raise ValueError(f"rmqc serve speaks the 5.x protocol; profile {profile!r} is not served")
        config = config or ServeConfig()
        versions.key(release)  # a malformed release is a ValueError before anything starts
        self.sim = Simulation(profile, run_id="serve", target="rmqc-serve", seed=seed, release=release)
        self.model = RealTimeModel(self.sim, time_scale)
        for topic in config.topics:
            queues = int(topic.get("queues", 4))
            self.sim.broker.create_topic(str(topic["name"]), queues, queues,
                                         message_type=str(topic.get("message_type", "NORMAL")))
        for group in config.groups:
            g = self.sim.broker.group(str(group["name"]))
            g.retry_max_times = int(group.get("retry_max_times", g.retry_max_times))
            g.fifo = bool(group.get("fifo", False))
        self.limits = limits or ServeLimits()
        self.options = ServeOptions(host=host, port=port, auto_create=config.auto_create, limits=self.limits)
        self.service = MessagingService(self.model, self.options)
        self.remoting = None if remoting_ports is None else RemotingServer(self.model, host, *remoting_ports,
                                                                           limits=self.limits, brokers=brokers)
        """The remoting front end (name server and broker ports) over the same model, when asked for."""
        self.host = host
        self.port = port
        self.server: grpc.aio.Server | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def _start_grpc(self) -> None:
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                                          ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                                          ("grpc.so_reuseport", 0)])
        service_pb2_grpc.add_MessagingServiceServicer_to_server(self.service, server)
        namesrv = (lambda: self.remoting.namesrv_address) if self.remoting is not None else (lambda: None)
        server.add_generic_rpc_handlers((AdminService(self.model, VERSION, namesrv).handler(),))
        bound = server.add_insecure_port(f"{self.host}:{self.port}")
        if bound == 0:
            raise OSError(f"cannot bind {self.host}:{self.port}")
        self.options.port = self.port = bound
        await server.start()
        self.server = server

    def start(self) -> "ReferenceServer":
        self.model.start()
        try:
            self.model.run(self._start_grpc())
            if self.remoting is not None:
                self.remoting.start()
        except BaseException:
            self.model.stop()
            raise
        return self

    def stop(self, grace_s: float = 1.0) -> None:
        if self.remoting is not None:
            self.remoting.stop()
        if self.server is not None:
            try:
                self.model.run(self.server.stop(grace_s), timeout_s=grace_s + 5)
            except Exception as exc:  # stopping anyway
                log.info("gRPC server stop: %s", exc)
        self.model.stop()

    def serve_until_signalled(self) -> None:
        """Block until SIGINT or SIGTERM, then shut down cleanly."""
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
        self.stop()
