"""What a real RocketMQ release is started with, derived from the release, the time scale and the ports: pure.

Timing is compressed **only through the release's own configuration keys**, each one cited where the release
reads it; the run summary records every key and value set (``ReleasePlan.keys_set``). A duration the release
reads from no key (a constant in its code) is not compressed: ``ReleasePlan.wall_fixed_ms`` names those, and
the suites widen their windows by them (``suites.tolerance``) or find the test out of budget.

Keys and where each release reads them (``path#Class.field@tag``):

- broker ``messageDelayLevel``: ``store/.../config/MessageStoreConfig.java#MessageStoreConfig.messageDelayLevel``
  (DELAY-01/02), parsed in whole seconds at least, so a level shorter than one second after scaling is one second
  (``effective_delay_levels_ms`` says what the broker will use);
- broker ``transactionCheckInterval``, ``transactionTimeOut``:
  ``common/.../BrokerConfig.java#BrokerConfig.transactionCheckInterval`` (TX-03), read by
  ``TransactionalMessageCheckService.onWaitEnd`` at every release;
- broker ``transactionOpBatchInterval`` (from 5.1.0): ``BrokerConfig.transactionOpBatchInterval``, read by
  ``TransactionalOpBatchService.run@rocketmq-all-5.3.3``: how often commit and rollback records are written;
- broker ``reviveInterval``: ``BrokerConfig.reviveInterval`` (RETRY-5X-11), the revive scan's period;
- broker ``timerPrecisionMs``: ``MessageStoreConfig.timerPrecisionMs`` (DELAY-08), the timer wheel's tick (the
  wheel has a fixed number of slots whatever the tick, ``TimerMessageStore.<init>@rocketmq-all-5.0.0``);
- broker ``timerMaxDelaySec`` and proxy ``maxDelayTimeMills`` (DELAY-08): how far ahead a timed message may be;
- broker ``enableMixedMessageType`` (from 5.1.4, TOPIC-05): true, so that the suites can create MIXED topics;
- proxy ``minInvisibleTimeMillsForRecv``, ``maxInvisibleTimeMills`` (RETRY-5X-09's bounds),
  ``defaultInvisibleTimeMills`` (from 5.1.0), the long-polling bounds
  (``grpcClientConsumerLongPollingTimeoutMillis`` at 5.0.0; ``grpcClientConsumerMinLongPollingTimeoutMillis`` and
  ``...MaxLongPollingTimeoutMillis`` from 5.1.0): ``proxy/.../config/ProxyConfig.java``;
- per consumer group (not here: at set-up, as ``mqadmin updateSubGroup -p``): the CUSTOMIZED retry policy's
  ``next`` steps, scaled (RETRY-5X-01).

Not compressible (constants, RETRY-5X-11): ``PopAckConstants.ackTimeInterval`` (1 s) and the second the revive
adds after it, so a revived message comes 2 wall seconds after its invisible time whatever the scale.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from adapters.base import BrokerTiming
from adapters.release_topology import BrokerNode, Topology
from reference_impl.rules import retry5x
from reference_impl.rules import transaction as tx_rules
from reference_impl.rules.delay import DEFAULT_DELAY_TABLE, parse_delay_levels
from spec import versions
from spec.loader import default_spec

DEFAULT_TIME_SCALE = 0.2
"""Spec seconds run five times faster: the durations the suites use (5 s, 10 s, 30 s, ...) are whole wall seconds
then, which is all the Python SDK can send (invisible times, backoff steps, delivery timestamps)."""
CLUSTER = "DefaultCluster"
BROKER_NAME = "broker-a"
NAMESRV_HEAP = "-Xms128m -Xmx256m"
BROKER_HEAP = "-Xms512m -Xmx1g"
COMMITLOG_FILE_BYTES = 128 * 1024 * 1024
"""``mappedFileSizeCommitLog``: 128 MiB files instead of 1 GiB (nothing in the suites stores that much)."""

TIMER_MAX_DELAY_S = 3 * 86_400
"""``MessageStoreConfig.timerMaxDelaySec`` (3 days, 5.0.0 to 5.5.0)."""
PROXY_MAX_DELAY_MS = 86_400_000
"""``ProxyConfig.maxDelayTimeMills`` (1 day, DELAY-08)."""
WALL_FIXED = ("RETRY-5X-11", ("reviveLagMs", "reviveScanSlackMs"))
"""Spec durations no key scales, taken at their wall length from the spec's own defaults at the release. The revive
lag is ``PopAckConstants.ackTimeInterval`` + 1 s, a constant. The scan slack: a revive round polls a quiet revive
topic for a little over 4 s (``PopReviveService.consumeReviveMessage``: 41 sleeps of 100 ms, each after a pull)
and then merges and writes what it revives (``mergeAndRevive``); on 5.5.0 at ``reviveInterval`` 200 ms a revival
came up to 2.2 s of wall time past the lag, on 5.3.3 at the end of a soak's sending up to 4.35 s."""


TRANSACTION_OP_BATCH_INTERVAL_MS = 3000
"""``BrokerConfig.transactionOpBatchInterval``'s default (5.1.0 L273, 5.3.3 L297): 3 s."""

@dataclass(frozen=True)
class Ports:
    namesrv: int
    broker: int
    """The broker's ``listenPort``; the release also listens on ``broker - 2`` (the fast/VIP channel) and
    ``broker + 1`` (HA), both derived from it in ``BrokerStartup``."""
    grpc: int = 0
    remoting_proxy: int = 0
    brokers: tuple[int, ...] = ()
    """The ``listenPort`` of every further broker of a topology (``Topology.nodes`` after the first), each with its
    two neighbours free as the first's."""

    def all(self) -> tuple[int, ...]:
        listens = (self.broker, *self.brokers)
        return tuple(p for p in (self.namesrv, *(q for b in listens for q in (b - 2, b, b + 1)), self.grpc,
                                 self.remoting_proxy) if p)


def seconds_text(ms: int) -> str:
    """A delay as ``messageDelayLevel`` writes it: whole seconds, minutes or hours."""
    seconds = ms // 1000
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def scaled_delay_levels_ms(time_scale: float) -> list[int]:
    """The 18 default levels compressed by ``time_scale``, in whole seconds (none shorter than 1 s)."""
    table = DEFAULT_DELAY_TABLE
    return [max(1000, int(math.ceil(table.delay_ms(level) * time_scale / 1000 - 1e-9)) * 1000)
            for level in range(1, table.max_level + 1)]


def scaled_ms(ms: float, time_scale: float, floor_ms: int = 1) -> int:
    return max(floor_ms, int(round(ms * time_scale)))


def wire_ladder_ms(time_scale: float, ladder_ms: Sequence[int] | None = None) -> list[int] | None:
    """A group's CUSTOMIZED ``next`` steps as set on the broker (protocol ms): each step scaled, and every step
    a whole number of seconds, since the Python SDK reads ``Duration.seconds`` only (RETRY-5X-01's Python
    habit). The default ladder (``ladder_ms`` None) is rounded up to whole seconds (``effective_ladder_ms``
    says what the suites then expect); an explicit ladder that does not scale to whole seconds is None."""
    if ladder_ms is None:
        return [max(1000, math.ceil(ms * time_scale / 1000 - 1e-9) * 1000) for ms in retry5x.DEFAULT_CUSTOMIZED_NEXT_MS]
    steps = [ms * time_scale for ms in ladder_ms]
    if any(abs(s - round(s / 1000) * 1000) > 1e-6 or s < 1000 for s in steps):
        return None
    return [int(round(s)) for s in steps]


@dataclass(frozen=True)
class ReleasePlan:
    """Everything a release is started with."""

    release: str
    ports: Ports
    time_scale: float = DEFAULT_TIME_SCALE
    home: Path = Path(".")
    """The run's folder for this cluster: configuration, store and logs (``user.home`` and ``ROCKETMQ_HOME``)."""
    with_proxy: bool = True
    broker_overrides: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """Keys set after the plan's own, as a user's broker.conf would (a test breaks a behaviour with one)."""
    topology: Topology = field(default_factory=Topology)
    """How many brokers and how they replicate and flush (``adapters.release_topology``, issue 50): one master by
    default, the proxy in local mode inside it; with more, each broker a process of its own and the proxy in
    cluster mode."""

    @property
    def at_least_5(self) -> bool:
        return versions.key(self.release) >= versions.key("5.0.0")

    @property
    def namesrv_address(self) -> str:
        return f"127.0.0.1:{self.ports.namesrv}"

    @property
    def broker_address(self) -> str:
        return f"127.0.0.1:{self.ports.broker}"

    @property
    def grpc_address(self) -> str:
        return f"127.0.0.1:{self.ports.grpc}"

    @property
    def store(self) -> Path:
        return self.home / "store"

    def delay_level_line(self) -> str:
        return " ".join(seconds_text(ms) for ms in scaled_delay_levels_ms(self.time_scale))

    def namesrv_properties(self) -> dict[str, Any]:
        return {"listenPort": self.ports.namesrv, "bindAddress": "127.0.0.1"}

    def timing_keys(self) -> dict[str, Any]:
        """The broker keys that compress time, at this release and scale."""
        keys: dict[str, Any] = {
            "messageDelayLevel": self.delay_level_line(),
            "transactionCheckInterval": scaled_ms(tx_rules.check_interval_ms(self.release), self.time_scale),
            "transactionTimeOut": scaled_ms(tx_rules.TRANSACTION_TIMEOUT_MS, self.time_scale),
        }
        if versions.key(self.release) >= versions.key("5.1.0"):
            # commit and rollback records are written in batches this often: a check of a half committed within
            # the last batch finds it unresolved and commits it again, so it is compressed with the timeout
            keys["transactionOpBatchInterval"] = scaled_ms(TRANSACTION_OP_BATCH_INTERVAL_MS, self.time_scale, floor_ms=10)
        if self.at_least_5:
            keys["reviveInterval"] = scaled_ms(1000, self.time_scale, floor_ms=10)
            keys["timerPrecisionMs"] = scaled_ms(1000, self.time_scale, floor_ms=10)
            keys["timerMaxDelaySec"] = scaled_ms(TIMER_MAX_DELAY_S, self.time_scale)
        return keys

    def nodes(self) -> list[BrokerNode]:
        return self.topology.nodes()

    def node_port(self, node: BrokerNode) -> int:
        """A broker node's ``listenPort``: the first node's is ``ports.broker``."""
        return self.ports.broker if node.index == 0 else self.ports.brokers[node.index - 1]

    def node_address(self, node: BrokerNode) -> str:
        return f"127.0.0.1:{self.node_port(node)}"

    def node_store(self, node: BrokerNode) -> Path:
        """A node's store folder: ``store/`` for a single broker (as always), ``store/<label>/`` in a topology."""
        return self.store if self.topology.single else self.store / node.label

    def broker_conf(self, node: BrokerNode | None = None) -> dict[str, Any]:
        """The keys of one broker node (the first master by default)."""
        node = node or self.nodes()[0]
        store = self.node_store(node)
        port = self.node_port(node)
        keys: dict[str, Any] = {
            "brokerClusterName": CLUSTER, "brokerName": node.name if not self.topology.single else BROKER_NAME,
            "brokerId": node.broker_id, "brokerRole": node.role,
            "flushDiskType": "SYNC_FLUSH" if self.topology.flush == "sync" else "ASYNC_FLUSH",
            "brokerIP1": "127.0.0.1", "bindAddress": "127.0.0.1",
            "listenPort": port, "namesrvAddr": self.namesrv_address,
            "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
            "mappedFileSizeCommitLog": COMMITLOG_FILE_BYTES, "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true", "enablePropertyFilter": "true",
            **self.timing_keys(),
        }
        if not self.topology.single:
            # the HA port of each broker: listenPort + 1, which 5.0.0 sets whatever the key says and 5.3.3 reads
            # from the key (adapters.release_topology); the brokerIP2 a slave's master is reached at
            keys.update({"haListenPort": port + 1, "brokerIP2": "127.0.0.1"})
        if versions.key(self.release) >= versions.key("5.1.4"):
            # TOPIC-05: a MIXED topic is refused at creation unless the broker allows it
            # (AdminBrokerProcessor.updateAndCreateTopic@rocketmq-all-5.1.4); the suites create MIXED topics
            keys["enableMixedMessageType"] = "true"
        keys.update(dict(self.broker_overrides))
        return keys

    def proxy_json(self) -> dict[str, Any]:
        keys: dict[str, Any] = {
            "rocketMQClusterName": CLUSTER, "namesrvAddr": self.namesrv_address, "grpcServerPort": self.ports.grpc,
            "minInvisibleTimeMillsForRecv": scaled_ms(retry5x.MIN_INVISIBLE_FOR_RECEIVE_MS, self.time_scale),
            "maxInvisibleTimeMills": scaled_ms(retry5x.MAX_INVISIBLE_MS, self.time_scale),
            "maxDelayTimeMills": scaled_ms(PROXY_MAX_DELAY_MS, self.time_scale),
        }
        if versions.key(self.release) >= versions.key("5.1.0"):
            keys.update({
                "remotingListenPort": self.ports.remoting_proxy,
                "defaultInvisibleTimeMills": scaled_ms(retry5x.DEFAULT_INVISIBLE_MS, self.time_scale),
                "grpcClientConsumerMinLongPollingTimeoutMillis": scaled_ms(5000, self.time_scale),
                "grpcClientConsumerMaxLongPollingTimeoutMillis": scaled_ms(retry5x.LONG_POLLING_TIMEOUT_MS,
                                                                           self.time_scale),
            })
        else:
            keys["grpcClientConsumerLongPollingTimeoutMillis"] = scaled_ms(retry5x.PROXY_LONG_POLLING_MS_5_0,
                                                                           self.time_scale)
            # 5.0.x serves gRPC over TLS only, a self-signed certificate in its default test mode, which no SDK
            # verifies; with the test mode off and no key at the paths named, it sets no SSL context and serves
            # plaintext (GrpcServerBuilder.configSslContext@rocketmq-all-5.0.0 logs the missing files). From 5.1.0
            # one port takes both (OptionalSSLProtocolNegotiator, then ProxyAndTlsProtocolNegotiator).
            keys["messageDelayLevel"] = self.delay_level_line()  # its own table for DELAY-09, as the broker's
            keys.update({"grpcTlsTestModeEnable": False, "grpcTlsKeyPath": str(self.home / "conf" / "no-tls.key"),
                         "grpcTlsCertPath": str(self.home / "conf" / "no-tls.crt")})
        return keys

    def keys_set(self) -> dict[str, dict[str, Any]]:
        """Every key this plan sets, per component (per broker node of a topology: ``broker-a-0``, ...): the run
        summary's record."""
        out: dict[str, dict[str, Any]] = {"namesrv": self.namesrv_properties()}
        if self.topology.single:
            out["broker"] = self.broker_conf()
        else:
            out.update({node.label: self.broker_conf(node) for node in self.nodes()})
        if self.with_proxy:
            out["proxy"] = self.proxy_json()
        return out

    def effective_delay_levels_ms(self) -> list[int]:
        """The levels in spec time as the broker will parse the generated line (DELAY-02): a level that
        could not be scaled exactly (shorter than a second) is longer than the default's."""
        table = parse_delay_levels(self.delay_level_line())  # what the suite set, whatever a user's keys override
        return [int(round(table.delay_ms(level) / self.time_scale)) for level in range(1, table.max_level + 1)]

    def effective_ladder_ms(self) -> list[int]:
        """The default retry ladder the harness gives every 5.x group of this release, in spec ms."""
        return [int(round(ms / self.time_scale)) for ms in wire_ladder_ms(self.time_scale) or []]

    def wall_fixed_ms(self) -> dict[str, int]:
        """Spec durations this release reads from no key: their wall length, the same at any scale."""
        if not self.at_least_5:
            return {}
        behaviour, keys = WALL_FIXED
        stated = default_spec().get(behaviour).defaults_at(self.release)
        return {key: int(stated[key]) for key in keys}

    def broker_timing(self) -> BrokerTiming:
        """What the suites judge this release by where it differs from the spec's defaults."""
        fixed = self.wall_fixed_ms()
        return BrokerTiming(tuple(self.effective_delay_levels_ms()),
                            tuple(self.effective_ladder_ms()) if self.with_proxy else None,
                            int(round(fixed["reviveLagMs"] / self.time_scale)) if "reviveLagMs" in fixed else None,
                            int(round(fixed["reviveScanSlackMs"] / self.time_scale)) if "reviveScanSlackMs" in fixed
                            else None)


def properties_text(keys: dict[str, Any]) -> str:
    """A ``.properties`` / ``broker.conf`` body."""
    return "".join(f"{k}={v}\n" for k, v in keys.items())


__all__ = ["ReleasePlan", "Ports", "properties_text", "wire_ladder_ms", "scaled_delay_levels_ms", "seconds_text",
           "DEFAULT_TIME_SCALE"]
