"""Event log v1: the record every target emits (one row per observable transition).

The JSON Schema ``spec/schemas/event-log.schema.json`` is authoritative; the columns, their order and
their storage types are this dataclass's fields (a test checks they match the schema). Nothing else in
the project writes the list of columns: ``COLUMNS`` and ``COLUMN_TYPES`` are derived from here.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

EVENT_KINDS = (
    "SEND_INVOKE", "SEND_OK", "SEND_FAIL", "SEND_UNKNOWN", "DELIVER", "CONSUME_OK", "CONSUME_FAIL",
    "ACK", "RETRY_SCHEDULED", "DLQ", "APPLY", "OFFSET_COMMIT", "REBALANCE",
    "TX_HALF", "TX_END", "TX_CHECK", "TX_DISCARD", "CONSUMER_START", "CONSUMER_STOP",
    "SETTLED", "NEMESIS",
)


def _column(storage: str, default: object = dataclasses.MISSING) -> Any:
    """A column with its storage type (``string``, ``int32``, ``int64``, ``map``); required unless a
    default is given."""
    if storage == "map":
        return field(default_factory=dict, metadata={"storage": storage})
    return field(default=default, metadata={"storage": storage})


@dataclass(frozen=True, kw_only=True)
class Event:
    """One observable transition (event log v1), its fields in the log's column order."""

    run_id: str = _column("string", "")
    target: str = _column("string", "")
    profile: str = _column("string", "")
    seq: int = _column("int64", 0)
    ts_ms: int = _column("int64")
    kind: str = _column("string")
    topic: str | None = _column("string", None)
    group: str | None = _column("string", None)
    client_id: str | None = _column("string", None)
    queue_id: int | None = _column("int32", None)
    queue_offset: int | None = _column("int64", None)
    msg_id: str | None = _column("string", None)
    key: str | None = _column("string", None)
    message_group: str | None = _column("string", None)
    producer_seq: int | None = _column("int64", None)
    attempt: int | None = _column("int32", None)
    delay_level: int | None = _column("int32", None)
    expected_delay_ms: int | None = _column("int64", None)
    tx_state: str | None = _column("string", None)
    """TX_END: the state the transaction ended in (``detail.state``: COMMIT_MESSAGE, ROLLBACK_MESSAGE), in a
    column of its own so that a reader of millions of rows need not read the detail map (issue 36)."""
    detail: Mapping[str, str] = _column("map")

    def __post_init__(self) -> None:
        if self.kind == "TX_END" and self.tx_state is None and self.detail.get("state"):
            object.__setattr__(self, "tx_state", self.detail["state"])


COLUMN_TYPES: dict[str, str] = {f.name: f.metadata["storage"] for f in dataclasses.fields(Event)}
"""Column name -> storage type, in the log's column order."""
COLUMNS: tuple[str, ...] = tuple(COLUMN_TYPES)


class EventRecorder:
    """Collects events for one target, numbering them in observation order."""

    def __init__(self, run_id: str, target: str, profile: str) -> None:
        self.run_id, self.target, self.profile = run_id, target, profile
        self.events: list[Event] = []
        self._seq = itertools.count()
        self.listeners: list[Callable[[Event], None]] = []
        """Called with each event as it is recorded (a soak worker streams them to its parent)."""

    def emit(self, kind: str, ts_ms: int, **fields: object) -> Event:
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; known: {', '.join(EVENT_KINDS)}")
        detail = {k: str(v) for k, v in dict(fields.pop("detail", {}) or {}).items()}  # type: ignore[arg-type]
        event = Event(kind=kind, ts_ms=ts_ms, seq=next(self._seq), run_id=self.run_id, target=self.target,
                      profile=self.profile, detail=detail, **fields)  # type: ignore[arg-type]
        self.events.append(event)
        for listener in self.listeners:
            listener(event)
        return event

    def drain(self) -> list[Event]:
        """The events recorded since the last drain, forgotten here."""
        taken, self.events = self.events, []
        return taken
