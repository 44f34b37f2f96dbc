"""The shape of a release cluster the suite starts (issue 50): how many masters, a slave per master or none, how
the masters replicate and flush. Pure: text in, broker nodes out; ``ReleasePlan`` turns each node into the
release's own configuration keys.

``--cluster`` takes ``<N>m[<S>s][,sync|,async][,sync-flush|,async-flush]``:

- ``1m`` (the default): one master, the proxy in local mode inside it (5.x);
- ``2m``: two masters ``broker-a`` and ``broker-b``; a topic the suites create on two brokers is on both, so a
  client can retry a send on the other (SEND-4X-02, SEND-4X-06); 5.x clients reach them through one proxy in
  cluster mode (``ProxyStartup -pm cluster``), which routes through the name server;
- ``1m1s``, ``2m2s``: each master with a slave (``brokerId`` 1, ``brokerRole`` SLAVE) that replicates from it
  over its HA port; ``sync`` makes the masters SYNC_MASTER (a send is answered once the slave has it, else
  SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT: SEND-4X-04), ``async`` (the default) ASYNC_MASTER;
- ``sync-flush`` sets ``flushDiskType`` SYNC_FLUSH (a send is answered once flushed, else FLUSH_DISK_TIMEOUT),
  the soak's setting for "no acknowledged send lost"; ``async-flush`` (the default) ASYNC_FLUSH.

Where each release reads the keys: ``brokerRole`` and ``flushDiskType`` in ``MessageStoreConfig``, ``brokerId`` and
``brokerName`` in ``BrokerConfig``; ``haListenPort`` is ``listenPort + 1`` at 5.0.0 whatever is set
(``BrokerStartup.createBrokerController@rocketmq-all-5.0.0`` L178) and read from the key when above 0 at 5.3.3
(``BrokerStartup.buildBrokerController@rocketmq-all-5.3.3`` L175): the plan sets it to ``listenPort + 1``, which
both read alike.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MASTER_ID = 0
SLAVE_ID = 1
SYNC, ASYNC = "sync", "async"
SHAPE = re.compile(r"^(?P<masters>[1-9])m(?:(?P<slaves>[0-9])s)?$")


class TopologyError(ValueError):
    """A ``--cluster`` text that names no topology: the message says what is accepted."""


@dataclass(frozen=True)
class BrokerNode:
    """One broker process of a topology."""

    name: str
    """``brokerName``: ``broker-a``, ``broker-b``, ... (a master and its slave share it)."""
    broker_id: int
    role: str
    """``brokerRole``: ASYNC_MASTER, SYNC_MASTER or SLAVE."""
    index: int
    """Its place among the topology's nodes (its ports and its store folder follow it)."""

    @property
    def is_master(self) -> bool:
        return self.broker_id == MASTER_ID

    @property
    def label(self) -> str:
        """How the run summary, the nemeses and the logs name it: ``broker-a-0``, ``broker-a-1``."""
        return f"{self.name}-{self.broker_id}"


@dataclass(frozen=True)
class Topology:
    masters: int = 1
    slaves_per_master: int = 0
    replication: str = ASYNC
    flush: str = ASYNC

    @classmethod
    def parse(cls, text: str | None) -> "Topology":
        if not text:
            return cls()
        shape, *options = [part.strip().lower() for part in text.split(",")]
        match = SHAPE.match(shape)
        if match is not None and int(match.group("slaves") or 0) not in (0, int(match.group("masters"))):
            match = None  # a slave for every master, or none
        if match is None:
            raise TopologyError(f"--cluster {text!r}: expected <N>m[<S>s] (1m, 2m, 1m1s, 2m2s: up to 9 masters, "
                                f"and a slave for each or none), then ',sync' or ',async' and ',sync-flush' or ',async-flush'")
        replication, flush = ASYNC, ASYNC
        for option in options:
            if option in (SYNC, ASYNC):
                replication = option
            elif option in ("sync-flush", "async-flush"):
                flush = option.removesuffix("-flush")
            else:
                raise TopologyError(f"--cluster {text!r}: unknown option {option!r} (sync, async, sync-flush, "
                                    f"async-flush)")
        slaves = 1 if int(match.group("slaves") or 0) else 0  # per master
        if replication == SYNC and not slaves:
            raise TopologyError(f"--cluster {text!r}: 'sync' replicates to a slave, and this shape has none "
                                f"(1m1s,sync)")
        return cls(int(match.group("masters")), slaves, replication, flush)

    @property
    def single(self) -> bool:
        """One master and nothing else: the cluster the suite has always started (proxy in local mode)."""
        return self.masters == 1 and not self.slaves_per_master

    @property
    def text(self) -> str:
        shape = f"{self.masters}m" + (f"{self.masters}s" if self.slaves_per_master else "")
        return ",".join([shape] + ([self.replication] if self.slaves_per_master else []) +
                        ([f"{self.flush}-flush"] if self.flush == SYNC else []))

    def nodes(self) -> list[BrokerNode]:
        """Masters first (``broker-a-0``, ``broker-b-0``, ...), then their slaves, each with its index."""
        master_role = "SYNC_MASTER" if self.replication == SYNC else "ASYNC_MASTER"
        names = [f"broker-{chr(ord('a') + i)}" for i in range(self.masters)]
        nodes = [BrokerNode(name, MASTER_ID, master_role, i) for i, name in enumerate(names)]
        if self.slaves_per_master:
            nodes += [BrokerNode(name, SLAVE_ID, "SLAVE", self.masters + i) for i, name in enumerate(names)]
        return nodes

    def as_json(self) -> dict[str, object]:
        return {"text": self.text, "masters": self.masters, "slaves_per_master": self.slaves_per_master,
                "replication": self.replication, "flush": self.flush,
                "brokers": [{"label": n.label, "brokerName": n.name, "brokerId": n.broker_id, "brokerRole": n.role}
                            for n in self.nodes()]}


__all__ = ["Topology", "BrokerNode", "TopologyError"]
