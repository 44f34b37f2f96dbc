"""A deterministic virtual clock with a timer queue. The model's only notion of time."""
from __future__ import annotations

import heapq
import itertools
from typing import Callable


class VirtualClock:
    """Events run in (time, insertion order); ``advance`` moves time and runs what falls due."""

    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._order = itertools.count()

    def call_at(self, at_ms: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (max(at_ms, self.now_ms), next(self._order), action))

    def call_later(self, delay_ms: int, action: Callable[[], None]) -> None:
        self.call_at(self.now_ms + max(0, delay_ms), action)

    def next_due_ms(self) -> int | None:
        return self._queue[0][0] if self._queue else None

    def step(self) -> bool:
        """Run the earliest pending action; False when nothing is pending."""
        if not self._queue:
            return False
        at, _, action = heapq.heappop(self._queue)
        self.now_ms = max(self.now_ms, at)
        action()
        return True

    def advance(self, delta_ms: int) -> None:
        """Run everything due within ``delta_ms`` and leave the clock at now + delta."""
        target = self.now_ms + delta_ms
        while self._queue and self._queue[0][0] <= target:
            self.step()
        self.now_ms = target

    def run_until(self, deadline_ms: int) -> None:
        """Run every action due by ``deadline_ms``; the clock stays at the last action run."""
        while self._queue and self._queue[0][0] <= deadline_ms:
            self.step()

    def step_until(self, deadline_ms: int) -> bool:
        """Run the earliest pending action if it falls due by ``deadline_ms`` (True); else move the clock to
        ``deadline_ms``, never back (False). A waiter's step (``adapters.base.wait_by_steps``)."""
        due = self.next_due_ms()
        if due is None or due > deadline_ms:
            self.now_ms = max(self.now_ms, deadline_ms)
            return False
        return self.step()
