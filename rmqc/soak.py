"""``rmqc soak``: drive a target for a long time with a stated workload and log what its real clients saw.

First cut (issue 23, in progress): producers (normal, FIFO with message groups, timed) at a rate each, 5.x
push consumer groups whose listener fails with a stated probability (seeded), idempotent consumers that
log an ``APPLY`` the first time they apply a key. Every event goes to a rolling Parquet log as it
happens; a progress line shows rates, messages in flight and time left; Ctrl-C stops cleanly. It works
through the same targets as ``rmqc run`` (``parse_target(...).build``), so the events are the clients'.
"""
from __future__ import annotations

import itertools
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from adapters.base import Target
from history.events import Event
from history.profiles import GRPC_5X
from history.rolling import RollingParquetWriter
from history.values import ListenerOutcome
from history.views import MessageView


@dataclass(frozen=True)
class ProducerPlan:
    kind: str = "normal"  # normal | fifo | timed
    count: int = 1
    rate_per_s: float = 10.0
    message_groups: int = 4
    delay_ms: int = 5_000


@dataclass(frozen=True)
class GroupPlan:
    group: str = "SoakG"
    instances: int = 1
    failure_probability: float = 0.0
    """Each delivery fails with this probability (the listener answers RECONSUME_LATER)."""
    idempotent: bool = True
    retry_max_times: int = 3


@dataclass(frozen=True)
class Workload:
    topic: str = "SoakT"
    producers: tuple[ProducerPlan, ...] = (ProducerPlan(),)
    groups: tuple[GroupPlan, ...] = (GroupPlan(),)
    seed: int = 0
    tick_ms: int = 1_000
    """Spec ms between two rounds of sends (and one step of the target's clock)."""


@dataclass
class SoakStats:
    sent: int = 0
    send_failed: int = 0
    finished: dict[str, int] = field(default_factory=dict)  # group -> consumed or dead-lettered


class Soak:
    """One soak: the target, its clients, the log and the counters."""

    def __init__(self, target: Target, workload: Workload, log: RollingParquetWriter) -> None:
        self.target, self.workload, self.log = target, workload, log
        self.random = random.Random(workload.seed)
        self.stats = SoakStats()
        self._written: set[tuple[Any, ...]] = set()
        self._applied: dict[str, set[str]] = {g.group: set() for g in workload.groups}
        self._keys = itertools.count()
        self._producers: list[tuple[ProducerPlan, Any]] = []
        self._credit: list[float] = []
        self.stopping = False

    # ---- set-up -------------------------------------------------------------------------------

    def start(self) -> None:
        w = self.workload
        fifo = any(p.kind == "fifo" for p in w.producers)
        self.target.create_topic(w.topic, message_type="FIFO" if fifo else "NORMAL")
        for plan in w.groups:
            self.target.configure_group(plan.group, retry_max_times=plan.retry_max_times, fifo=fifo)
            for _ in range(plan.instances):
                self.target.push_consumer_5x(plan.group, w.topic, self._listener(plan))
        for plan in w.producers:
            for _ in range(plan.count):
                self._producers.append((plan, self.target.producer()))
                self._credit.append(0.0)

    def _listener(self, plan: GroupPlan) -> Callable[[MessageView], ListenerOutcome]:
        def consume(view: MessageView) -> ListenerOutcome:
            if self.random.random() < plan.failure_probability:
                return ListenerOutcome.RECONSUME_LATER
            if plan.idempotent and view.key and view.key not in self._applied[plan.group]:
                self._applied[plan.group].add(view.key)
                self.log.append(Event(kind="APPLY", ts_ms=self.target.now_ms(), run_id="soak", target=self.target.name,
                                      profile=GRPC_5X, topic=view.topic, group=plan.group, msg_id=view.msg_id,
                                      key=view.key, message_group=view.message_group,
                                      attempt=view.delivery_attempt))
            return ListenerOutcome.SUCCESS

        return consume

    # ---- running ------------------------------------------------------------------------------

    def send_round(self) -> None:
        """One tick's sends: each producer its rate's share (fractions carried over)."""
        w = self.workload
        for i, (plan, producer) in enumerate(self._producers):
            self._credit[i] += plan.rate_per_s * w.tick_ms / 1000
            while self._credit[i] >= 1:
                self._credit[i] -= 1
                n = next(self._keys)
                options: dict[str, Any] = {"key": f"k{n}"}
                if plan.kind == "fifo":
                    options["message_group"] = f"g{n % plan.message_groups}"
                elif plan.kind == "timed":
                    options["delivery_timestamp_ms"] = self.target.now_ms() + plan.delay_ms
                try:
                    producer.send(w.topic, f"soak {n}".encode(), **options)
                    self.stats.sent += 1
                except Exception:
                    self.stats.send_failed += 1

    def collect(self) -> int:
        """Move the target's new events into the log; the number moved."""
        moved = 0
        for event in self.target.events():
            marker = (event.seq, event.kind, event.ts_ms, event.msg_id, event.group)
            if marker in self._written:
                continue
            self._written.add(marker)
            self.log.append(event)
            moved += 1
            if event.kind in ("ACK", "DLQ") and event.group:
                self.stats.finished[event.group] = self.stats.finished.get(event.group, 0) + 1
        self.log.maybe_roll()
        return moved

    def in_flight(self) -> int:
        done = min(self.stats.finished.values(), default=0) if self.stats.finished else 0
        return max(0, self.stats.sent - done)

    def run(self, duration_s: float, max_messages: int | None, progress: TextIO | None,
            clock: Callable[[], float] = time.monotonic) -> SoakStats:
        """Send and step until ``duration_s`` of wall time or ``max_messages`` sends, then let what is in
        flight finish (bounded by the target's settle), log everything and close."""
        started = clock()
        last_line = 0.0
        while not self.stopping and clock() - started < duration_s and \
                (max_messages is None or self.stats.sent < max_messages):
            self.send_round()
            self.target.advance(self.workload.tick_ms)
            self.collect()
            if progress is not None and clock() - last_line >= 1.0:
                last_line = clock()
                elapsed = max(1e-6, clock() - started)
                progress.write(f"\rrmqc soak: {elapsed:5.0f} s, sent {self.stats.sent} ({self.stats.sent / elapsed:.1f}/s), "
                               f"in flight {self.in_flight()}, {self.log.written} events logged, "
                               f"{max(0.0, duration_s - elapsed):.0f} s left   ")
                progress.flush()
        if not self.stopping:
            self.target.settle()
        self.collect()
        self.log.close()
        if progress is not None:
            progress.write(f"\nrmqc soak: sent {self.stats.sent} ({self.stats.send_failed} failed), "
                           f"{self.log.written} events in {self.log.parts} parts\n")
        return self.stats


def run_soak(target: Target, workload: Workload, out: Path, duration_s: float, max_messages: int | None = None,
             roll_s: float = 2.0, progress: TextIO | None = sys.stderr) -> SoakStats:
    """A whole soak; Ctrl-C (SIGINT) stops the sends, logs what was seen and closes the target."""
    soak = Soak(target, workload, RollingParquetWriter(out, roll_s))

    def stop(*_: Any) -> None:
        soak.stopping = True

    previous = signal.signal(signal.SIGINT, stop)
    try:
        soak.start()
        return soak.run(duration_s, max_messages, progress)
    finally:
        signal.signal(signal.SIGINT, previous)
        target.close()
