"""What a soak runs: the workload as records (producers, consumer groups, faults), the idempotent
consumers' store and the listener every consumer of a group runs. No I/O beyond the store's file."""
from __future__ import annotations

import random
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from history.events import Event
from history.profiles import GRPC_5X
from history.values import ListenerOutcome
from history.views import MessageView

TOPIC_OF_KIND = {"normal": "SoakT", "fifo": "SoakFifoT", "timed": "SoakTimedT", "transactional": "SoakTxT"}
MESSAGE_TYPE_OF_KIND = {"normal": "NORMAL", "fifo": "FIFO", "timed": "DELAY", "transactional": "TRANSACTION"}
"""A 5.x topic takes one message type (TOPIC-05): each kind of producer sends to a topic of its own."""


@dataclass(frozen=True)
class ProducerPlan:
    kind: str = "normal"  # normal | fifo | timed | transactional
    topic: str | None = None
    count: int = 1
    rate_per_s: float = 10.0
    message_groups: int = 4
    delay_ms: int = 5_000
    rollback_fraction: float = 0.1
    """Transactional: the share of halves the local transaction rolls back."""
    unknown_fraction: float = 0.1
    """Transactional: the share left UNKNOWN, committed when the server checks (TX-03)."""

    @property
    def topic_name(self) -> str:
        return self.topic or TOPIC_OF_KIND[self.kind]


@dataclass(frozen=True)
class GroupPlan:
    group: str = "SoakG"
    topic: str = "SoakT"
    instances: int = 1
    failure_probability: float = 0.0
    """Each delivery fails with this probability (the listener answers RECONSUME_LATER)."""
    idempotent: bool = True
    retry_max_times: int = 3
    retry_ladder_ms: tuple[int, ...] | None = None
    """The group's retry ladder, set through the broker's own configuration (``groupRetryPolicy``,
    RETRY-5X-01); None keeps the broker's default."""
    processing_ms: int = 0
    """Wall milliseconds the listener works on each message before it answers."""
    own_process: bool = False
    """Run each consumer in a process of its own (always so for a group with a restart fault)."""
    kind: str = "push"
    """``push`` (the SDK's push consumer) or ``simple`` (receive, then ack or change the invisible time to
    the ladder's wait, as an application with a simple consumer does; standard topics only)."""


@dataclass(frozen=True)
class FaultPlan:
    kind: str = "consumer_restart"
    """``consumer_restart``: one consumer process of the group killed (SIGKILL) at ``at_s`` and a new one
    started ``down_s`` later. ``consumer_scale``: ``count`` more consumer processes started at ``at_s`` and
    shut down (as a user does) ``for_s`` later."""
    group: str = "SoakG"
    at_s: float = 10.0
    down_s: float = 2.0
    count: int = 1
    for_s: float = 10.0


@dataclass(frozen=True)
class Workload:
    producers: tuple[ProducerPlan, ...] = (ProducerPlan(),)
    groups: tuple[GroupPlan, ...] = (GroupPlan(),)
    faults: tuple[FaultPlan, ...] = ()
    seed: int = 0
    tick_ms: int = 100
    """Spec ms between two rounds of sends."""

    def topics(self) -> dict[str, str]:
        """Every topic the soak uses, with its message type."""
        out = {p.topic_name: MESSAGE_TYPE_OF_KIND[p.kind] for p in self.producers}
        for g in self.groups:
            out.setdefault(g.topic, "NORMAL")
        return out

    def restarted_groups(self) -> set[str]:
        return {f.group for f in self.faults if f.kind == "consumer_restart"}

    def own_process_groups(self) -> set[str]:
        return self.restarted_groups() | {g.group for g in self.groups if g.own_process}

    def needs_processes(self) -> bool:
        """Whether some consumer runs in a process of its own (all of them then log on the soak's clock)."""
        return bool(self.own_process_groups()) or any(f.kind == "consumer_scale" for f in self.faults)


def default_workload() -> Workload:
    """What ``rmqc soak`` runs without a workload file: every check of ``rmqc check`` has something to judge
    (issue 36), at about 10,000 events a minute against ``rmqc serve`` on a 2-core machine.

    - normal messages (20/s) to two push groups and a simple one: ``SoakG`` fails 30 % of deliveries, so its
      messages are retried on a short ladder (1 s, 2 s, 3 s, set on the broker, RETRY-5X-01) up to the DLQ
      (4 deliveries); the simple consumer ``SoakS`` changes the invisible time to its own ladder;
    - FIFO messages (6/s, 4 message groups) to ``SoakF``, which fails 20 % and retries locally (RETRY-5X-08);
    - timed messages (3/s, 5 s ahead) to ``SoakD`` (DELAY-08);
    - transactions (4/s, 15 % rolled back, 15 % left to the server's check, TX-03) to ``SoakX``;
    - every group idempotent: each key applied once (``APPLY``, CLAIM-05)."""
    ladder = (1000, 2000, 3000)
    return Workload(
        seed=11, tick_ms=100,
        producers=(ProducerPlan("normal", rate_per_s=20), ProducerPlan("fifo", rate_per_s=6, message_groups=4),
                   ProducerPlan("timed", rate_per_s=3, delay_ms=5000),
                   ProducerPlan("transactional", rate_per_s=4, rollback_fraction=0.15, unknown_fraction=0.15)),
        groups=(GroupPlan("SoakG", "SoakT", failure_probability=0.3, retry_max_times=3, retry_ladder_ms=ladder),
                GroupPlan("SoakF", "SoakFifoT", failure_probability=0.2, retry_max_times=3,
                          retry_ladder_ms=(2000, 2000, 3000)),
                GroupPlan("SoakS", "SoakT", kind="simple", failure_probability=0.2, retry_max_times=2,
                          retry_ladder_ms=(1000, 2000)),
                GroupPlan("SoakD", "SoakTimedT", failure_probability=0.1, retry_max_times=2,
                          retry_ladder_ms=(1000, 2000)),
                GroupPlan("SoakX", "SoakTxT", failure_probability=0.1, retry_max_times=2,
                          retry_ladder_ms=(1000, 2000))))


class AppliedStore:
    """The idempotent consumers' record of what they applied: a SQLite file every consumer process of
    the soak shares, so a consumer restarted after a crash does not apply a key again (CLAIM-05)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")  # a killed process loses nothing the OS holds
        self._db.execute("CREATE TABLE IF NOT EXISTS applied (grp TEXT, key TEXT, PRIMARY KEY (grp, key))")

    def first_time(self, group: str, key: str) -> bool:
        """Record ``key`` as applied by ``group``; True only the first time."""
        with self._lock:
            return self._db.execute("INSERT OR IGNORE INTO applied VALUES (?, ?)", (group, key)).rowcount == 1

    def close(self) -> None:
        with self._lock:
            self._db.close()


def apply_event(view: MessageView, group: str, ts_ms: int, run_id: str, target: str) -> Event:
    """The ``APPLY`` an idempotent consumer of ``group`` logs the first time it applies ``view``'s key."""
    return Event(kind="APPLY", ts_ms=ts_ms, run_id=run_id, target=target, profile=GRPC_5X, topic=view.topic,
                 group=group, msg_id=view.msg_id, key=view.key, message_group=view.message_group,
                 attempt=view.delivery_attempt)


def soak_listener(plan: GroupPlan, rng: random.Random, store: AppliedStore,
                  applied: Callable[[MessageView], None]) -> Callable[[MessageView], ListenerOutcome]:
    """The listener of every consumer of ``plan``: fails with the stated probability, else applies the
    key once (``applied`` logs the APPLY) and succeeds."""
    def consume(view: MessageView) -> ListenerOutcome:
        if plan.processing_ms:
            time.sleep(plan.processing_ms / 1000)
        if rng.random() < plan.failure_probability:
            return ListenerOutcome.RECONSUME_LATER
        if plan.idempotent and view.key and store.first_time(plan.group, view.key):
            applied(view)
        return ListenerOutcome.SUCCESS

    return consume
