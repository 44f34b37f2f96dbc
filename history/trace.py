"""Views on a trace: a message's life in one consumer group (deliveries, the waits between them, how it
ended), projected from the events any target emits. Interleaving across messages is ignored."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from .events import Event


@dataclass(frozen=True)
class Life:
    """The observed life of one message in the group: deliveries, waits between them, final state."""

    deliveries: int
    waits_ms: tuple[int, ...]
    final: str
    attempts: tuple[int, ...] = ()


def lives(events: Iterable[Event], group: str) -> dict[str, Life]:
    """Project a trace onto per-key lives in one group (interleaving across keys is ignored)."""
    by_key: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.key is not None and (e.group == group or e.kind.startswith("SEND")):
            by_key[e.key].append(e)
    out: dict[str, Life] = {}
    for key, evs in by_key.items():
        delivered = [e for e in evs if e.kind == "DELIVER"]
        times = [e.ts_ms for e in delivered]
        waits = tuple(b - a for a, b in zip(times, times[1:]))
        if any(e.kind == "DLQ" for e in evs):
            final = "DLQ"
        elif delivered and _last_outcome(evs) == "CONSUME_OK":
            final = "CONSUMED"
        elif delivered:
            final = "DROPPED"
        else:
            final = "NOT_DELIVERED"
        out[key] = Life(len(delivered), waits, final, tuple(e.attempt or 0 for e in delivered))
    return out


def _last_outcome(events: list[Event]) -> str | None:
    outcomes = [e.kind for e in events if e.kind in ("CONSUME_OK", "CONSUME_FAIL")]
    return outcomes[-1] if outcomes else None

