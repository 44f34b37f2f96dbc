"""The container target: real RocketMQ in Docker through testcontainers (``--target container:IMAGE``).

It starts a name server and a broker with the proxy enabled (local mode), from one image, with a
generated ``broker.conf`` that compresses the server-side clocks by the run's time scale: the delay
levels (whole seconds at least, as the broker parses them), the transaction check interval and
timeout, and, per consumer group, the retry policy set with ``mqadmin updateSubGroup -p``. It waits
until the three components say they are up, then runs the grpc adapter against the proxy's mapped
port, and removes the containers at the end. Without a Docker engine the target cannot exist: the
engine's own error, in one line, is the reason every container test is not applicable.
"""
from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from history.profiles import GRPC_5X
from reference_impl.rules import retry5x
from reference_impl.rules import transaction as tx_rules
from reference_impl.rules.delay import parse_delay_levels
from spec import versions

from .base import TargetError
from .release_plan import scaled_delay_levels_ms, seconds_text
from .targets import CONTAINER, Probe

DEFAULT_TIME_SCALE = float(os.environ.get("RMQC_CONTAINER_TIME_SCALE", "0.1"))
READY_TIMEOUT_S = 180.0
READY_MARKERS = {
    "namesrv": "The Name Server boot success",
    "broker": "boot success",
    "proxy": "rocketmq-proxy startup successfully",
}
"""What each component logs once it serves (NamesrvStartup, BrokerStartup, ProxyStartup)."""


def engine_error(image: str) -> str | None:
    """``None`` when a Docker engine answers; else the engine client's error, in one line."""
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - testcontainers (and docker) are dependencies
        return f"{CONTAINER.text(image)}: the docker client is not installed ({exc})"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:  # DockerException and friends: the message is the engine's cause
        cause = " ".join(str(exc).split())
        return f"{CONTAINER.text(image)}: no Docker engine: {cause}"
    return None


@dataclass(frozen=True)
class ContainerPlan:
    """What the containers are started with, all derived from the image and the time scale."""

    image: str
    time_scale: float = DEFAULT_TIME_SCALE
    grpc_port: int = 8081
    cluster: str = "DefaultCluster"
    broker_name: str = "broker-a"
    release: str = versions.LATEST
    """The RocketMQ release whose defaults are compressed (transactionCheckInterval, TX-03)."""

    def delay_levels_ms(self) -> list[int]:
        """The compressed 18 levels; the broker parses whole seconds, so none is shorter than 1 s."""
        return scaled_delay_levels_ms(self.time_scale)

    def broker_conf(self) -> str:
        lines = {
            "brokerClusterName": self.cluster, "brokerName": self.broker_name, "brokerId": 0,
            "brokerRole": "ASYNC_MASTER", "flushDiskType": "ASYNC_FLUSH", "deleteWhen": "04",
            "fileReservedTime": 48, "autoCreateTopicEnable": "true", "autoCreateSubscriptionGroup": "true",
            "enablePropertyFilter": "true", "timerWheelEnable": "true",
            "messageDelayLevel": " ".join(seconds_text(d) for d in self.delay_levels_ms()),
            "transactionCheckInterval": max(1, round(tx_rules.check_interval_ms(self.release) * self.time_scale)),
            "transactionTimeOut": max(1, round(tx_rules.TRANSACTION_TIMEOUT_MS * self.time_scale)),
        }
        return "".join(f"{k} = {v}\n" for k, v in lines.items())

    def proxy_conf(self) -> str:
        return json.dumps({"rocketMQClusterName": self.cluster, "grpcServerPort": self.grpc_port}, indent=2)

    def parsed_delay_levels(self) -> list[int]:
        """The levels as the broker will parse the generated line (DELAY-02), for the run's record."""
        line = next(l for l in self.broker_conf().splitlines() if l.startswith("messageDelayLevel"))
        table = parse_delay_levels(line.split(" = ", 1)[1])
        return [table.delay_ms(level) for level in range(1, table.max_level + 1)]

    def retry_policy_json(self, ladder_ms: Sequence[int] | None = None) -> str:
        """The group's CUSTOMIZED policy (``ladder_ms`` or the default) with every step scaled (``mqadmin
        updateSubGroup -p``)."""
        steps = [max(1, round(ms * self.time_scale)) for ms in (ladder_ms or retry5x.DEFAULT_CUSTOMIZED_NEXT_MS)]
        return json.dumps({"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": steps}}, separators=(",", ":"))

    def update_sub_group(self, group: str, retry_max_times: int, fifo: bool,
                         ladder_ms: Sequence[int] | None = None, retry_queue_nums: int = 1) -> list[str]:
        return ["sh", "mqadmin", "updateSubGroup", "-n", "namesrv:9876", "-c", self.cluster, "-g", group,
                "-r", str(retry_max_times), "-q", str(retry_queue_nums), "-o", str(fifo).lower(),
                "-p", self.retry_policy_json(ladder_ms)]

    def update_topic(self, topic: str, read_queues: int, write_queues: int, message_type: str) -> list[str]:
        return ["sh", "mqadmin", "updateTopic", "-n", "namesrv:9876", "-c", self.cluster, "-t", topic,
                "-r", str(read_queues), "-w", str(write_queues), "-a", f"+message.type={message_type}"]


def missing_markers(logs: dict[str, str]) -> list[str]:
    """The components whose log does not yet say they serve."""
    return [name for name, marker in READY_MARKERS.items() if marker not in logs.get(name, "")]


def wait_ready(read_logs: Callable[[], dict[str, str]], timeout_s: float = READY_TIMEOUT_S,
               sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
               exited: Callable[[], str | None] = lambda: None) -> None:
    """Poll the components' logs until each says it serves; a container that exits or a timeout is a
    ``TargetError`` naming what was still missing."""
    deadline = clock() + timeout_s
    while True:
        logs = read_logs()
        missing = missing_markers(logs)
        if not missing:
            return
        gone = exited()
        if gone:
            last = (logs.get(gone) or "").strip().splitlines()
            raise TargetError(f"{gone} exited before it was ready; its last log line: {last[-1] if last else '(none)'}")
        if clock() >= deadline:
            raise TargetError(f"RocketMQ containers not ready within {timeout_s:.0f} s: no "
                              f"{', '.join(repr(READY_MARKERS[m]) for m in missing)} in the logs of {', '.join(missing)}")
        sleep(1.0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RocketMQContainers:
    """Name server and broker with proxy, on one Docker network, removed by ``stop``."""

    def __init__(self, plan: ContainerPlan) -> None:
        self.plan = plan
        self._started: list[Any] = []
        self.network: Any = None

    def start(self) -> str:
        """Start both containers; return the proxy's gRPC address on 127.0.0.1."""
        import tempfile
        from pathlib import Path

        from testcontainers.core.container import DockerContainer
        from testcontainers.core.network import Network

        plan = self.plan
        conf_dir = Path(tempfile.mkdtemp(prefix="rmqc-container-"))
        (conf_dir / "broker.conf").write_text(plan.broker_conf())
        (conf_dir / "rmq-proxy.json").write_text(plan.proxy_conf())
        self.network = Network().create()
        namesrv = (DockerContainer(plan.image).with_command("sh mqnamesrv").with_network(self.network)
                   .with_network_aliases("namesrv"))
        self._started.append(namesrv.start())
        broker = (DockerContainer(plan.image).with_network(self.network).with_network_aliases("broker")
                  .with_env("NAMESRV_ADDR", "namesrv:9876")
                  .with_volume_mapping(str(conf_dir), "/home/rocketmq/rmqc-conf", "ro")
                  .with_bind_ports(plan.grpc_port, plan.grpc_port)
                  .with_command("sh mqbroker --enable-proxy -c /home/rocketmq/rmqc-conf/broker.conf "
                                "-pc /home/rocketmq/rmqc-conf/rmq-proxy.json"))
        self._started.append(broker.start())

        def logs() -> dict[str, str]:
            text = {}
            for name, container in (("namesrv", namesrv), ("broker", broker)):
                out, err = container.get_logs()
                text[name] = (out or b"").decode(errors="replace") + (err or b"").decode(errors="replace")
            text["proxy"] = text["broker"]
            return text

        def exited() -> str | None:
            for name, container in (("namesrv", namesrv), ("broker", broker)):
                container.get_wrapped_container().reload()
                if container.get_wrapped_container().status == "exited":
                    return name
            return None

        wait_ready(logs, exited=exited)
        self.broker = broker
        return f"127.0.0.1:{plan.grpc_port}"

    def admin(self, command: list[str]) -> str:
        code, output = self.broker.exec(command)
        text = (output or b"").decode(errors="replace")
        if code != 0:
            raise TargetError(f"{' '.join(command[:3])} failed in the broker container ({code}): {text.strip()[-300:]}")
        return text

    def stop(self) -> None:
        for container in reversed(self._started):
            try:
                container.stop()
            except Exception:
                pass
        if self.network is not None:
            try:
                self.network.remove()
            except Exception:
                pass


_RUNNING: dict[ContainerPlan, tuple[RocketMQContainers, str]] = {}


def _shared(plan: ContainerPlan) -> tuple[RocketMQContainers, str]:
    """One set of containers per image and time scale for the whole process (every target suffixes
    its names, so tests do not see each other's messages); removed when the process exits."""
    if plan not in _RUNNING:
        import atexit

        containers = RocketMQContainers(plan)
        try:
            address = containers.start()
        except BaseException:
            containers.stop()
            raise
        atexit.register(containers.stop)
        _RUNNING[plan] = (containers, address)
    return _RUNNING[plan]


def container_target(image: str, profile: str = GRPC_5X, **kw: Any) -> Any:
    """A grpc target over RocketMQ containers, with admin through ``mqadmin`` in the broker container."""
    from .grpc import GrpcTarget

    error = engine_error(image)
    if error:
        raise TargetError(error)
    plan = next((p for p in _RUNNING if p.image == image and p.time_scale == DEFAULT_TIME_SCALE), None) \
        or ContainerPlan(image, DEFAULT_TIME_SCALE, grpc_port=free_port(), release=str(kw.get("release", versions.LATEST)))
    containers, address = _shared(plan)

    class ContainerTarget(GrpcTarget):
        def create_topic(self, name: str, *, read_queues: int = 4, write_queues: int = 4, perm: int = 6,
                         message_type: str = "NORMAL", brokers: int = 1) -> None:
            if brokers > 1:
                super().create_topic(name, brokers=brokers)
            containers.admin(plan.update_topic(self.real(name), read_queues, write_queues, message_type))

        def configure_group(self, name: str, *, retry_max_times: int = 16, fifo: bool = False,
                            retry_policy: str = "CUSTOMIZED", retry_queue_nums: int = 1,
                            retry_ladder_ms: Sequence[int] | None = None) -> None:
            containers.admin(plan.update_sub_group(self.real(name), retry_max_times, fifo, retry_ladder_ms,
                                                   retry_queue_nums))
            self._groups.setdefault(name, {}).update(retry_max_times=retry_max_times, fifo=fifo)

    target = ContainerTarget(address, profile, time_scale=plan.time_scale, **kw)
    target.name = CONTAINER.text(image)
    target.version = image.rpartition(":")[2] if ":" in image else None
    return target


build = container_target
"""A target of the ``container:IMAGE`` kind (``adapters.targets``)."""


def probe(address: str) -> Probe:
    """A Docker engine must answer; the image's proxy runs the 5.x profile on a wall clock."""
    error = engine_error(address)
    if error:
        raise TargetError(error)
    return Probe((GRPC_5X,), "wall")
