"""Send faults on a real release cluster, caused by nemeses on its brokers (issue 50): what ``inject_send_fault``
means where the brokers are a real release's of several masters, not ``rmqc serve``'s.

A real broker cannot be told to fail the next N attempts; it can be made to fail every one: ``unreachable`` kills
its process (the client's connection is refused: ``remoting``), ``timeout`` stops it with SIGSTOP (the client's
request times out). Such a fault lasts until the test clears it (a count of 0) or ends (``heal`` at the target's
close), at most the test's budget; a count above 0 is not applicable. Outcomes a broker gives only under load or
through keys that need a restart (SYSTEM_BUSY, FLUSH_DISK_TIMEOUT, a system error) are not applicable either.
The attempts themselves are the client's own, reported by its send hooks (``client_attempts``)."""
from __future__ import annotations

import itertools
from typing import Any, Callable

from history.events import Event
from history.outcomes import NotApplicable

from .base import wall_budget_s
from .nemesis import MAX_DOWN_S, Fault, Nemesis

OUTCOMES = {"unreachable": "kill", "timeout": "pause"}
"""An injected outcome -> the nemesis that causes it on a real broker."""


class ReleaseSendFaults:
    """The nemesis of one target's session on the release cluster it drives."""

    def __init__(self, cluster: Any, name: str, record: Callable[[Event], None], now_ms: Callable[[], int]) -> None:
        self.cluster, self.name = cluster, name
        self.nemesis = Nemesis(cluster, record, now_ms, target=name)
        self._numbers = itertools.count()

    @staticmethod
    def of(target: Any) -> "ReleaseSendFaults | None":
        """The faults of ``target`` when it drives a release cluster of several masters, else None."""
        cluster = getattr(target, "cluster", None)
        if cluster is None or cluster.plan.topology.masters < 2:
            return None
        faults = getattr(target, "_release_faults", None)
        if faults is None:
            faults = target._release_faults = ReleaseSendFaults(cluster, target.name, target._events.append,
                                                                target.now_ms)
            cluster_faults(cluster).append(faults)
        return faults

    def outcomes(self) -> tuple[str, ...]:
        return tuple(OUTCOMES)

    def cause(self, broker: str, outcome: str, count: int) -> None:
        process = next((n.label for n in self.cluster.plan.nodes() if n.name == broker and n.is_master), None)
        if process is None:
            raise NotApplicable(f"{self.name}: the cluster has no master {broker}")
        if count == 0:
            self.nemesis.end(process)
            return
        if outcome not in OUTCOMES:
            raise NotApplicable(f"{self.name}: a real broker cannot be made to answer {outcome} on demand; "
                                f"{' and '.join(OUTCOMES)} can (a broker killed, a broker stalled)")
        if count > 0:
            raise NotApplicable(f"{self.name}: a real broker's fault lasts; it cannot end after {count} attempts")
        if process in self.nemesis.active:
            self.nemesis.end(process)
        down = min(MAX_DOWN_S, wall_budget_s())
        self.nemesis.cause(Fault(OUTCOMES[outcome], process, 0.0, down, next(self._numbers)))

    def heal(self) -> None:
        self.nemesis.heal()


def cluster_faults(cluster: Any) -> list[ReleaseSendFaults]:
    """Every session's faults on ``cluster`` (kept on it)."""
    if not hasattr(cluster, "send_faults"):
        cluster.send_faults = []
    return cluster.send_faults  # type: ignore[no-any-return]


def heal_cluster(cluster: Any) -> None:
    """Before a new session of a test drives ``cluster`` (a property's next example, the next test), the faults an
    earlier session caused end: the brokers it killed or stalled answer again."""
    for faults in cluster_faults(cluster):
        faults.heal()
    cluster_faults(cluster).clear()


__all__ = ["ReleaseSendFaults", "OUTCOMES", "heal_cluster"]
