"""The event log's Parquet form: its Arrow schema (from ``history.events.COLUMN_TYPES``), a writer and a reader."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from .events import COLUMN_TYPES, Event

if TYPE_CHECKING:
    import pyarrow


def arrow_schema() -> "pyarrow.Schema":
    import pyarrow as pa

    storage = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(),
               "map": pa.map_(pa.string(), pa.string())}
    return pa.schema([(name, storage[kind]) for name, kind in COLUMN_TYPES.items()])


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
