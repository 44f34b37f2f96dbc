"""How long a cluster took to recover from each fault of a soak (issue 50), as OpenChaos reports it: from the end
of a fault until sends succeed again. Pure: the faults' times and the sends' outcomes in, figures out.

A fault's recovery is measured in the stretch from its start to the next fault's start: from the fault's end to the
first send that succeeds after it and after the sends that were under way at its end, that is the first success
after the last send that failed, or whose outcome is unknown, within ``SETTLING_MS`` of the end. A fault during
which sends never failed (the other master took them) recovers at once (0 ms); one after which no send succeeded
before the next fault did not recover (``None``, counted apart). Failures later than that are counted
(``failures_after``), not taken for the fault's: a cluster of two masters meets sporadic ones (a proxy's cache
refreshed from the broker that was down)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class FaultSpan:
    number: int
    kind: str
    process: str
    start_ms: int
    end_ms: int


def spans(nemesis_events: Iterable[dict[str, str | int]]) -> list[FaultSpan]:
    """The faults from NEMESIS events (``ts_ms`` and the detail's ``number``, ``fault``, ``process``, ``phase``);
    a fault with a start and no end (the run stopped it) ends at its start."""
    starts: dict[str, tuple[int, str, str]] = {}
    ends: dict[str, int] = {}
    for e in nemesis_events:
        number = str(e["number"])
        if e["phase"] == "start":
            starts[number] = (int(e["ts_ms"]), str(e["fault"]), str(e["process"]))
        else:
            ends[number] = int(e["ts_ms"])
    return sorted((FaultSpan(int(n), kind, process, at, ends.get(n, at)) for n, (at, kind, process) in starts.items()),
                  key=lambda s: s.start_ms)


SETTLING_MS = 1000
"""Sends that fail within this long (in the sends' time unit) of a fault's end were under way at its end."""


def _stretches(faults: Sequence[FaultSpan], sends: Sequence[tuple[int, bool]]) -> list[list[tuple[int, bool]]]:
    ordered = sorted(sends)
    out = []
    for i, fault in enumerate(faults):
        until = faults[i + 1].start_ms if i + 1 < len(faults) else None
        out.append([(t, ok) for t, ok in ordered if t >= fault.start_ms and (until is None or t < until)])
    return out


def recovery_ms(faults: Sequence[FaultSpan], sends: Sequence[tuple[int, bool]],
                settling_ms: int = SETTLING_MS) -> list[int | None]:
    """Each fault's recovery in the sends' time unit; ``sends`` are (time, succeeded), in any order."""
    out: list[int | None] = []
    for fault, stretch in zip(faults, _stretches(faults, sends)):
        failed = [t for t, ok in stretch if not ok and t <= fault.end_ms + settling_ms]
        after = max([fault.end_ms, *failed])
        first_ok = next((t for t, ok in stretch if ok and t >= after), None)
        out.append(None if first_ok is None else max(0, first_ok - fault.end_ms))
    return out


def failures_after(faults: Sequence[FaultSpan], sends: Sequence[tuple[int, bool]],
                   settling_ms: int = SETTLING_MS) -> list[int]:
    """Each fault's failed or unknown sends later than its settling, before the next fault."""
    return [sum(1 for t, ok in stretch if not ok and t > fault.end_ms + settling_ms)
            for fault, stretch in zip(faults, _stretches(faults, sends))]


def percentile(values: Sequence[int], q: float) -> int:
    """The nearest-rank percentile (``q`` in [0, 1])."""
    ordered = sorted(values)
    rank = max(1, -(-int(round(q * 1000)) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]


def summary(faults: Sequence[FaultSpan], sends: Sequence[tuple[int, bool]], time_scale: float) -> dict[str, object]:
    """p50, p99 and max of the recoveries in wall ms (spec ms times the time scale), each fault's own, and how
    many never recovered before the next."""
    settling = int(round(SETTLING_MS / time_scale))  # a wall second, in the sends' spec ms
    per = recovery_ms(faults, sends, settling)
    later = failures_after(faults, sends, settling)
    wall = [int(round(r * time_scale)) for r in per if r is not None]
    return {
        "faults": len(faults), "recovered": len(wall), "not_recovered": sum(r is None for r in per),
        "p50_ms": percentile(wall, 0.5) if wall else None, "p99_ms": percentile(wall, 0.99) if wall else None,
        "max_ms": max(wall) if wall else None,
        "per_fault": [{"number": f.number, "kind": f.kind, "process": f.process,
                       "down_ms": int(round((f.end_ms - f.start_ms) * time_scale)),
                       "recovery_ms": None if r is None else int(round(r * time_scale)), "failures_after": n}
                      for f, r, n in zip(faults, per, later)],
        "why": "from the end of a fault until sends succeed again (the first SEND_OK after both the fault's end and "
               "the failed or unknown sends under way at its end, within a wall second of it), wall ms; "
               "failures_after: failed or unknown sends later than that, before the next fault",
    }


__all__ = ["FaultSpan", "spans", "recovery_ms", "summary", "percentile"]
