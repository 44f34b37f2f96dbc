"""The discrete-event model on a real clock: spec time runs ``1 / time_scale`` times faster than wall time.

Every duration and timestamp that crosses the protocol is spec time: an invisible duration of 10 s
at ``time_scale`` 0.01 keeps a message hidden for 100 ms of wall time. One lock guards the model;
a ticker thread runs what falls due and wakes the handlers waiting in long polls.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

from reference_impl.model.simulation import Simulation

MAX_TICK_WAIT_S = 0.25


class RealTimeModel:
    """A ``Simulation`` whose virtual clock follows the wall clock, scaled."""

    def __init__(self, sim: Simulation, time_scale: float = 1.0) -> None:
        if not time_scale > 0:
            raise ValueError(f"--time-scale must be > 0, got {time_scale}")
        self.sim = sim
        self.time_scale = time_scale
        self.changed = threading.Condition(threading.RLock())
        self._t0 = time.monotonic()
        self.wall_epoch_ms = int(time.time() * 1000)
        self._stopping = threading.Event()
        self._ticker: threading.Thread | None = None

    # ---- time -------------------------------------------------------------------------------

    def spec_now_ms(self) -> int:
        """Spec time since the server started."""
        return int((time.monotonic() - self._t0) * 1000 / self.time_scale)

    def spec_wall_ms(self, spec_ms: int | None = None) -> int:
        """A spec instant as an epoch timestamp (what the protocol's timestamps carry)."""
        return self.wall_epoch_ms + (self.spec_now_ms() if spec_ms is None else spec_ms)

    def spec_ms_of_wall(self, wall_ms: int) -> int:
        return wall_ms - self.wall_epoch_ms

    def wall_seconds(self, spec_ms: int) -> float:
        """How long ``spec_ms`` of spec time takes on the wall clock."""
        return max(0.0, spec_ms * self.time_scale / 1000)

    def _sync(self) -> bool:
        """Run every model action due by now; True when any ran."""
        clock = self.sim.clock
        now = self.spec_now_ms()
        due = clock.next_due_ms()
        clock.run_until(now)
        clock.now_ms = max(clock.now_ms, now)
        return due is not None and due <= now

    @contextmanager
    def locked(self) -> Iterator[Simulation]:
        """Hold the model at the current spec time; waiters are woken on the way out."""
        with self.changed:
            self._sync()
            yield self.sim
            self.changed.notify_all()

    def wait(self, deadline_spec_ms: int, max_wall_s: float) -> None:
        """Inside ``locked``: release the model until something changes, the next action falls due,
        or the deadline passes (``max_wall_s`` bounds it on the wall clock)."""
        now = self.spec_now_ms()
        due = self.sim.clock.next_due_ms()
        until = deadline_spec_ms if due is None else min(deadline_spec_ms, due)
        self.changed.wait(min(max_wall_s, self.wall_seconds(until - now) + 0.0005))
        if self._sync():
            self.changed.notify_all()

    # ---- the ticker -------------------------------------------------------------------------

    def start(self) -> None:
        self._ticker = threading.Thread(target=self._tick, name="rmqc-ticker", daemon=True)
        self._ticker.start()

    def stop(self) -> None:
        self._stopping.set()
        with self.changed:
            self.changed.notify_all()
        if self._ticker is not None:
            self._ticker.join(timeout=2)

    def _tick(self) -> None:
        with self.changed:
            while not self._stopping.is_set():
                if self._sync():
                    self.changed.notify_all()
                due = self.sim.clock.next_due_ms()
                wait = MAX_TICK_WAIT_S if due is None else min(
                    MAX_TICK_WAIT_S, self.wall_seconds(due - self.spec_now_ms()))
                if wait > 0:
                    self.changed.wait(wait)
