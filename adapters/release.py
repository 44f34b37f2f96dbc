"""``release:V``: a real Apache RocketMQ release, resolved from Maven Central and started by the suite on
127.0.0.1 (``adapters.release_jars``, ``adapters.release_plan``, ``adapters.release_cluster``), driven through
the official SDKs: the Python 5.x SDK through the proxy (profile grpc-5.x, from 5.0.0) and the 4.x SDK through
the name server (profile remoting-4.x). One cluster per release for the whole process; every target of a run
suffixes its topics and groups, so tests do not see each other's messages.

Configuration: the time scale is ``$RMQC_RELEASE_TIME_SCALE`` (default 0.1): the release's own keys compress
its clocks by it (``ReleasePlan.keys_set``, recorded in the run summary). ``$RMQC_RELEASE_BROKER_CONF`` names a
file of further broker keys (``key=value`` lines) set after the plan's, as a user's ``broker.conf`` would;
``$RMQC_RELEASE_HOME`` is the folder of the cluster's configuration, store and logs (``rmqc run`` puts it in
the run folder).
"""
from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from history.outcomes import NotApplicable
from history.profiles import GRPC_5X, REMOTING_4X
from spec import versions

from .base import TargetError
from .cluster_faults import heal_cluster
from .release_cluster import ReleaseCluster, ReleaseStartError, choose_ports, progress_to_stderr
from .release_jars import ReleaseJars, ReleaseUnavailable, resolve
from .release_plan import DEFAULT_TIME_SCALE, Ports, ReleasePlan, wire_ladder_ms
from .release_topology import Topology, TopologyError
from .targets import GO, JAVA, JAVA_REMOTING, NODEJS, RELEASE, REMOTING, Probe, TargetKind

SCALE_ENV = "RMQC_RELEASE_TIME_SCALE"
BROKER_CONF_ENV = "RMQC_RELEASE_BROKER_CONF"
HOME_ENV = "RMQC_RELEASE_HOME"
SDK_ENV = "RMQC_RELEASE_SDK"
"""The 5.x SDK the grpc-5.x profile of a ``release:V`` target drives: ``python`` (the default), ``nodejs``,
``java`` (rocketmq-client-java) or ``go`` (the Go 5.x client)."""
SDK_4X_ENV = "RMQC_RELEASE_SDK_4X"
"""The 4.x SDK the remoting-4.x profile drives: ``cpp`` (the default: rocketmq-client-python over the C++ client)
or ``java`` (the Java 4.x client, rocketmq-client)."""
SDKS_5X = ("python", "nodejs", "java", "go")
SDKS_4X = ("cpp", "java")
DRIVER_TARGETS = {"nodejs": (NODEJS, "NodeTarget"), "java": (JAVA, "JavaTarget"), "go": (GO, "GoTarget")}
"""A 5.x SDK behind a driver -> its kind in the target table and the class its module gives a session."""
REMOTING_TARGETS = {"cpp": (REMOTING, "RemotingTarget"), "java": (JAVA_REMOTING, "JavaRemotingTarget")}
"""A 4.x SDK -> its kind in the target table and its session's class."""
CLUSTER_ENV = "RMQC_RELEASE_CLUSTER"
"""The topology of a ``release:V`` target (``rmqc run --cluster``, ``adapters.release_topology``): ``1m`` by default;
``2m``, ``1m1s,sync``, ``2m,sync-flush``, ..."""
ATTACH_ENV = "RMQC_RELEASE_ATTACH"
"""A running cluster's plan (JSON), set by a process that started it for the processes it spawns (``rmqc soak``'s
consumers): a ``release:V`` target of the same release there drives that cluster instead of starting its own."""


def time_scale() -> float:
    text = os.environ.get(SCALE_ENV)
    try:
        scale = float(text) if text else DEFAULT_TIME_SCALE
    except ValueError:
        raise TargetError(f"{SCALE_ENV}={text!r} is not a number (the time scale, e.g. 0.1)") from None
    if not 0 < scale <= 1:
        raise TargetError(f"{SCALE_ENV}={text}: the time scale must be in (0, 1]")
    return scale


def broker_overrides() -> tuple[tuple[str, str], ...]:
    """The keys of ``$RMQC_RELEASE_BROKER_CONF``; a malformed line is an error naming the file and the line."""
    path = os.environ.get(BROKER_CONF_ENV)
    if not path:
        return ()
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise TargetError(f"{BROKER_CONF_ENV}: cannot read {path}: {exc.strerror}") from None
    keys = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise TargetError(f"{path}:{number}: expected key=value, got {line!r}")
        keys.append((key.strip(), value.strip()))
    return tuple(keys)


def topology() -> Topology:
    try:
        return Topology.parse(os.environ.get(CLUSTER_ENV))
    except TopologyError as exc:
        raise TargetError(f"{CLUSTER_ENV}: {exc}") from None


def _home(release: str) -> Path:
    root = os.environ.get(HOME_ENV)
    if root:
        folder = Path(root) / f"rocketmq-{release}"
        folder.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="run-", dir=folder))
    return Path(tempfile.mkdtemp(prefix=f"rmqc-rocketmq-{release}-"))


_CLUSTERS: dict[tuple[str, float, tuple[tuple[str, str], ...], Topology], ReleaseCluster] = {}


def jars_of(release: str) -> ReleaseJars:
    try:
        return resolve(release, progress_to_stderr)
    except (ReleaseUnavailable, ValueError) as exc:
        raise TargetError(f"{RELEASE.text(release)}: {exc}") from None


PORT_TRIES = 3
"""How many times a release is started on freshly chosen ports when one of them was taken before it bound it."""
PORT_TAKEN = "Address already in use"
"""The cause a component's log gives when a port it was told to bind is taken (java.net.BindException)."""


def start_cluster(release: str, home: Path, scale: float, overrides: tuple[tuple[str, str], ...] = (),
                  detached: bool = False, shape: Topology = Topology()) -> ReleaseCluster:
    """Resolve ``release`` and start it in ``home`` as ``shape``; a ``TargetError`` in one line when it cannot be
    had or does not start (the cause and its log's last lines)."""
    jars = jars_of(release)
    with_proxy = jars.has("proxy")
    if not shape.single and not jars.has("broker"):
        raise TargetError(f"{RELEASE.text(release)}: a {shape.text} cluster starts each broker alone, and "
                          f"{jars.missing.get('broker') or 'no broker jar could be had'}")
    for tries_left in reversed(range(PORT_TRIES)):
        plan = ReleasePlan(release, choose_ports(with_proxy, versions.key(release) >= versions.key("5.1.0"),
                                                 len(shape.nodes())),
                           scale, home, with_proxy, overrides, shape)
        try:
            return ReleaseCluster(plan, jars, progress_to_stderr, detached=detached).start()
        except ReleaseStartError as exc:
            if PORT_TAKEN in str(exc) and tries_left:
                # a port found free was bound by another process before the component bound it (the suite's other
                # jobs start servers too): the ports are chosen again, never the same component retried on them
                progress_to_stderr(f"RocketMQ {release}: a port chosen for it was taken meanwhile ({PORT_TAKEN}); "
                                   f"starting again on other ports ({tries_left} more tries)")
                continue
            raise TargetError(f"{RELEASE.text(release)}: {exc}") from None
    raise AssertionError("unreachable: the last try raises")


def shared_cluster(release: str) -> ReleaseCluster:
    """The one running cluster of ``release`` in this process (started on first use, stopped at exit)."""
    scale, overrides, shape = time_scale(), broker_overrides(), topology()
    key = (release, scale, overrides, shape)
    if key not in _CLUSTERS:
        _CLUSTERS[key] = _attached(release) or start_cluster(release, _home(release), scale, overrides, shape=shape)
    return _CLUSTERS[key]


def attach_environment(cluster: ReleaseCluster) -> dict[str, str]:
    """The environment a child process needs to drive ``cluster`` rather than start one of its own; the parent
    that started it stops it."""
    plan = cluster.plan
    return {ATTACH_ENV: json.dumps({"release": plan.release, "ports": dataclasses.asdict(plan.ports),
                                    "time_scale": plan.time_scale, "home": str(plan.home),
                                    "with_proxy": plan.with_proxy, "overrides": [list(o) for o in plan.broker_overrides],
                                    "topology": plan.topology.text})}


def _attached(release: str) -> ReleaseCluster | None:
    """The running cluster ``$RMQC_RELEASE_ATTACH`` describes when it is of ``release``; never started or
    stopped here."""
    text = os.environ.get(ATTACH_ENV)
    if not text:
        return None
    try:
        data = json.loads(text)
        if data["release"] != release:
            return None
        ports = dict(data["ports"])
        ports["brokers"] = tuple(ports.get("brokers") or ())
        plan = ReleasePlan(release, Ports(**ports), float(data["time_scale"]), Path(data["home"]),
                           bool(data["with_proxy"]), tuple((str(k), str(v)) for k, v in data["overrides"]),
                           Topology.parse(data.get("topology")))
    except (ValueError, KeyError, TypeError) as exc:
        raise TargetError(f"{ATTACH_ENV} does not describe a running cluster: {exc}") from None
    return ReleaseCluster(plan, jars_of(release))


def _as_release(target: Any, cluster: ReleaseCluster) -> Any:
    """Name ``target`` after the release, and give it what the run summary records (every key set, the levels
    and ladder the release then has, what no key compresses) and what the suites judge it by."""
    plan = cluster.plan
    target.name = RELEASE.text(plan.release)
    target.version = target.release = plan.release
    target.broker_timing = plan.broker_timing()
    target.release_record = {
        "release": plan.release, "keys": plan.keys_set(), "effective_delay_levels_ms": plan.effective_delay_levels_ms(),
        "effective_retry_ladder_ms": plan.effective_ladder_ms() if plan.with_proxy else [],
        "wall_fixed_ms": plan.wall_fixed_ms(), "home": str(plan.home), "start_s": round(cluster.started_s or 0, 1),
        "missing": dict(cluster.jars.missing), "built_from_source_release": dict(cluster.jars.built)}
    if not plan.topology.single:
        target.release_record["topology"] = plan.topology.as_json()
    target.cluster = cluster  # the processes a nemesis may act on (adapters.nemesis)
    return target


def _group_ladder(name: str, plan: ReleasePlan, retry_policy: str,
                  retry_ladder_ms: Sequence[int] | None) -> list[int] | None:
    """The CUSTOMIZED ladder a group of ``plan``'s release is given on the broker: the broker's clock runs
    time_scale times faster, so do the steps (``wire_ladder_ms``); one that scales to no whole seconds is not
    applicable, never the broker's unscaled default instead."""
    if retry_policy != "CUSTOMIZED":
        return None
    ladder = wire_ladder_ms(plan.time_scale, retry_ladder_ms)
    if ladder is None:
        raise NotApplicable(f"{name}: the retry ladder {list(retry_ladder_ms or ())} ms is no whole number of "
                            f"seconds at time scale {plan.time_scale:g}; the Python SDK reads whole seconds of it")
    return ladder


def release_grpc_target(cluster: ReleaseCluster, profile: str, **options: Any) -> Any:
    """The Python 5.x SDK against the release's proxy; groups get the scaled retry ladder."""
    from .grpc import GrpcTarget

    plan = cluster.plan

    class ReleaseGrpcTarget(GrpcTarget):
        def configure_group(self, name: str, *, retry_max_times: int = 16, fifo: bool = False,
                            retry_policy: str = "CUSTOMIZED", retry_queue_nums: int = 1,
                            retry_ladder_ms: Sequence[int] | None = None, courtesy: bool = False) -> None:
            ladder = _group_ladder(self.name, plan, retry_policy, retry_ladder_ms)
            super().configure_group(name, retry_max_times=retry_max_times, fifo=fifo, retry_policy=retry_policy,
                                    retry_queue_nums=retry_queue_nums, retry_ladder_ms=ladder, courtesy=courtesy)

        def _ensure_group(self, group: str) -> None:
            """Every group gets the scaled default ladder before its first client (``BrokerTiming``)."""
            if "retry_max_times" not in self._groups.get(group, {}):
                self.configure_group(group, courtesy=True)

    options.pop("namesrv", None)
    return _as_release(ReleaseGrpcTarget(plan.grpc_address, profile, time_scale=plan.time_scale,
                                         namesrv=plan.namesrv_address, **options), cluster)


def release_driver_target(cluster: ReleaseCluster, profile: str, sdk: str, **options: Any) -> Any:
    """A 5.x SDK behind a driver against the release's proxy (``$RMQC_RELEASE_SDK`` nodejs, java or go): its driver
    runs on the release's time scale, groups get the scaled retry ladder before their first client."""
    from .grpc import ServerInfo

    plan = cluster.plan
    base = _target_class(*DRIVER_TARGETS[sdk])

    class ReleaseDriverTarget(base):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kw: Any) -> None:
            self._configured: set[str] = set()
            super().__init__(*args, **kw)
            # the client's own waits (a FIFO consumer's local retries) are the retry policy the proxy's settings
            # give it, which the release's keys already compressed: they last the spec time they stand for
            self.client_timer_scale = 1.0

        def configure_group(self, name: str, *, retry_max_times: int = 16, fifo: bool = False,
                            retry_policy: str = "CUSTOMIZED", retry_queue_nums: int = 1,
                            retry_ladder_ms: Sequence[int] | None = None, courtesy: bool = False) -> None:
            ladder = _group_ladder(self.name, plan, retry_policy, retry_ladder_ms)
            self._configured.add(name)
            super().configure_group(name, retry_max_times=retry_max_times, fifo=fifo, retry_policy=retry_policy,
                                    retry_queue_nums=retry_queue_nums, retry_ladder_ms=ladder, courtesy=courtesy)

        def _ensure_group(self, group: str) -> None:
            """Every group gets the scaled default ladder before its first client (``BrokerTiming``); a group
            the broker refuses (an illegal name) is left for the client to meet, as for the Python target."""
            if group not in self._configured:
                self.configure_group(group, courtesy=True)

        def push_consumer_5x(self, group: str, topic: str, listener: Any, **kw: Any) -> Any:
            self._ensure_group(group)
            return super().push_consumer_5x(group, topic, listener, **kw)

        def simple_consumer_5x(self, group: str, topic: str, **kw: Any) -> Any:
            self._ensure_group(group)
            return super().simple_consumer_5x(group, topic, **kw)

    options.pop("namesrv", None)
    info = ServerInfo(plan.time_scale, time.time() * 1000, False, f"RocketMQ {plan.release}", plan.release,
                      release=plan.release)
    return _as_release(ReleaseDriverTarget(plan.grpc_address, profile, namesrv=plan.namesrv_address, info=info,
                                           **options), cluster)


def release_remoting_target(cluster: ReleaseCluster, profile: str, sdk: str = "cpp", **options: Any) -> Any:
    """A 4.x SDK against the release's name server: ``rocketmq-client-python`` (``cpp``) or the Java 4.x client
    (``java``, ``$RMQC_RELEASE_SDK_4X``)."""
    target_class = _target_class(*REMOTING_TARGETS[sdk])
    options.pop("namesrv", None)
    return _as_release(target_class(cluster.plan.namesrv_address, profile, time_scale=cluster.plan.time_scale,
                                    **options), cluster)


def _target_class(kind: TargetKind, name: str) -> type:
    """The session class ``name`` of the module a target kind names (imported on first use: each pulls its SDK)."""
    return getattr(kind.module(), name)


def _sdk(env: str, known: tuple[str, ...], default: str) -> str:
    sdk = os.environ.get(env) or default
    if sdk not in known:
        raise TargetError(f"{env}={sdk!r}: a release is driven through one of {', '.join(known)}")
    return sdk


def build(address: str, profile: str, **options: Any) -> Any:
    """A target of the ``release:V`` kind (``adapters.targets``)."""
    cluster = shared_cluster(address)
    heal_cluster(cluster)  # what an earlier session's faults did to the brokers is undone before this one
    if profile == GRPC_5X:
        if not cluster.plan.with_proxy:
            reason = cluster.jars.missing.get("proxy") or f"RocketMQ {address} has no proxy"
            raise NotApplicable(f"{RELEASE.text(address)}: no 5.x proxy: {reason}")
        sdk = _sdk(SDK_ENV, SDKS_5X, "python")
        if sdk == "python":
            return release_grpc_target(cluster, profile, **options)
        return release_driver_target(cluster, profile, sdk, **options)
    if profile == REMOTING_4X:
        return release_remoting_target(cluster, profile, _sdk(SDK_4X_ENV, SDKS_4X, "cpp"), **options)
    raise NotApplicable(f"{RELEASE.text(address)} runs {GRPC_5X} and {REMOTING_4X}, not {profile}")


def probe(address: str) -> Probe:
    """Resolve and start the release once: grpc-5.x through its proxy (when the registry serves one) and
    remoting-4.x through its name server, on a wall clock, as the release it is."""
    cluster = shared_cluster(address)
    profiles = (GRPC_5X, REMOTING_4X) if cluster.plan.with_proxy else (REMOTING_4X,)
    return Probe(profiles, "wall", address, release=address)


__all__ = ["build", "probe", "shared_cluster", "start_cluster", "attach_environment", "time_scale", "broker_overrides"]
