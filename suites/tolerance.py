"""How far an observed wait may be from the documented one, in spec time: exact on a virtual clock,
a stated band on a wall clock (recorded in the run summary's ``timing``)."""
from __future__ import annotations

from dataclasses import dataclass

from adapters.base import Target


@dataclass(frozen=True)
class Tolerance:
    """How far an observed wait may be from the documented one, in spec time."""

    absolute_ms: int = 0
    relative: float = 0.0

    def allowed(self, expected_ms: int) -> float:
        return self.absolute_ms + self.relative * expected_ms


WALL_JITTER_MS = 40
"""Scheduling noise of a wall-clock target on this kind of machine (gRPC round trips, thread hand-offs)."""


def tolerance_for(target: Target) -> Tolerance:
    """Exact on a virtual clock. On a wall clock: 250 ms of spec time, or the wall jitter divided by the
    time scale when that is more, plus 5 % (recorded in the run summary)."""
    if "clock.virtual" in target.capabilities:
        return Tolerance()
    return Tolerance(max(250, int(WALL_JITTER_MS / target.time_scale)), 0.05)


def close_enough(target: Target, seen_ms: float, want_ms: float) -> bool:
    """Exactly equal on a virtual clock; within ``tolerance_for(target)`` on a wall clock."""
    return abs(seen_ms - want_ms) <= tolerance_for(target).allowed(want_ms)
