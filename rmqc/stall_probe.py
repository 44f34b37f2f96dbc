"""The soak process's own stalls, measured: a thread that sleeps a short tick and notes how late it woke.

A soak logs each delivery when its listener runs in this process, so a stretch in which the process could not run
(the machine's cores busy with other jobs, a collector holding the interpreter) makes a timestamp late by that
stretch without any broker or SDK being late. The checks judge a wait against the timing model only where no
stall the probe saw could have moved its ends (``spark_checks.timing_checks``; RETRY-5X-06, RETRY-5X-08,
RETRY-CONC-07): a sound checker, as Jepsen's are, never blames the target for the harness's own machine.

The spans are on the target's clock (its milliseconds), like every event of the log, and go into the soak's
manifest (``stalls``)."""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

TICK_S = 0.02
"""How long the probe sleeps between looks."""
STALL_MS = 60
"""A wake this much later than asked (wall milliseconds) is a stall; shorter ones are the scheduler's ordinary
jitter, inside the timing model's noise band."""
MAX_SPANS = 500
"""At most this many spans are kept; past it the last one grows to cover every later stall (a wider span
only judges less: still sound)."""


@dataclass
class StallSpan:
    """The process could not run from ``from_ms`` to ``to_ms`` (target clock)."""

    from_ms: int
    to_ms: int


class StallProbe:
    """Measures this process's stalls until stopped; ``spans`` merges those that touch."""

    def __init__(self, now_ms: Callable[[], int], stall_ms: int = STALL_MS, tick_s: float = TICK_S) -> None:
        self.now_ms, self.stall_ms, self.tick_s = now_ms, stall_ms, tick_s
        self._spans: list[StallSpan] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-stall-probe", daemon=True)
        self.longest_ms = 0

    def start(self) -> "StallProbe":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)

    def _run(self) -> None:
        while not self._stop.is_set():
            asked = time.monotonic()
            before = self.now_ms()
            time.sleep(self.tick_s)
            late_ms = (time.monotonic() - asked - self.tick_s) * 1000
            if late_ms >= self.stall_ms:
                self.note(before, self.now_ms())

    def note(self, from_ms: int, to_ms: int) -> None:
        """One stall: merged into the last span when they touch, or into it anyway past ``MAX_SPANS``."""
        with self._lock:
            self.longest_ms = max(self.longest_ms, to_ms - from_ms)
            last = self._spans[-1] if self._spans else None
            if last is not None and (from_ms <= last.to_ms or len(self._spans) >= MAX_SPANS):
                last.to_ms = max(last.to_ms, to_ms)
            else:
                self._spans.append(StallSpan(from_ms, to_ms))

    def statement(self) -> dict[str, Any]:
        """For the manifest: the spans, and what a stall is."""
        with self._lock:
            spans = [asdict(s) for s in self._spans]
        return {"spans": spans, "threshold_wall_ms": self.stall_ms, "tick_wall_ms": round(self.tick_s * 1000),
                "longest_ms": self.longest_ms,
                "why": "a span in which the soak's own process could not run: a timestamp logged in it or just "
                       "after it may be late by its length, so a wait with an end there is not judged on that side"}
