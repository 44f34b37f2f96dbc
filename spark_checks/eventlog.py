"""Event log v1: the record every target emits, and its Parquet reader/writer.

The JSON Schema ``spec/schemas/event-log.schema.json`` is authoritative; ``EVENT_KINDS`` and
``COLUMNS`` here must match it (a test checks they do).
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping

EVENT_KINDS = (
    "SEND_INVOKE", "SEND_OK", "SEND_FAIL", "SEND_UNKNOWN", "DELIVER", "CONSUME_OK", "CONSUME_FAIL",
    "ACK", "RETRY_SCHEDULED", "DLQ", "APPLY", "OFFSET_COMMIT", "REBALANCE",
    "TX_HALF", "TX_END", "TX_CHECK", "TX_DISCARD",
)


@dataclass(frozen=True)
class Event:
    """One observable transition (event log v1)."""

    kind: str
    ts_ms: int
    seq: int = 0
    run_id: str = ""
    target: str = ""
    profile: str = ""
    topic: str | None = None
    group: str | None = None
    client_id: str | None = None
    queue_id: int | None = None
    queue_offset: int | None = None
    msg_id: str | None = None
    key: str | None = None
    message_group: str | None = None
    producer_seq: int | None = None
    attempt: int | None = None
    delay_level: int | None = None
    expected_delay_ms: int | None = None
    detail: Mapping[str, str] = field(default_factory=dict)


COLUMNS = tuple(f.name for f in dataclasses.fields(Event))


class EventRecorder:
    """Collects events for one target, numbering them in observation order."""

    def __init__(self, run_id: str, target: str, profile: str) -> None:
        self.run_id, self.target, self.profile = run_id, target, profile
        self.events: list[Event] = []
        self._seq = itertools.count()

    def emit(self, kind: str, ts_ms: int, **fields: object) -> Event:
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; known: {', '.join(EVENT_KINDS)}")
        detail = {k: str(v) for k, v in dict(fields.pop("detail", {}) or {}).items()}  # type: ignore[arg-type]
        event = Event(kind=kind, ts_ms=ts_ms, seq=next(self._seq), run_id=self.run_id, target=self.target,
                      profile=self.profile, detail=detail, **fields)  # type: ignore[arg-type]
        self.events.append(event)
        return event


def arrow_schema():  # -> pyarrow.Schema
    import pyarrow as pa

    return pa.schema([
        ("run_id", pa.string()), ("target", pa.string()), ("profile", pa.string()),
        ("seq", pa.int64()), ("ts_ms", pa.int64()), ("kind", pa.string()),
        ("topic", pa.string()), ("group", pa.string()), ("client_id", pa.string()),
        ("queue_id", pa.int32()), ("queue_offset", pa.int64()), ("msg_id", pa.string()),
        ("key", pa.string()), ("message_group", pa.string()), ("producer_seq", pa.int64()),
        ("attempt", pa.int32()), ("delay_level", pa.int32()), ("expected_delay_ms", pa.int64()),
        ("detail", pa.map_(pa.string(), pa.string())),
    ])


def write_parquet(events: Iterable[Event], path: Path) -> int:
    """Write events as one Parquet file; returns the number of rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema()
    rows = list(events)
    columns = {name: [getattr(e, name) for e in rows] for name in schema.names}
    columns["detail"] = [list(e.detail.items()) for e in rows]
    table = pa.table(columns, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return len(rows)


def read_parquet(path: Path) -> Iterator[Event]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for row in table.to_pylist():
        row["detail"] = dict(row["detail"] or [])
        yield Event(**row)
