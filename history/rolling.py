"""An event log written as it happens: a folder of Parquet part files, one rolled every few seconds.

Each part is written to a hidden temporary name and renamed into place, so the folder holds only whole
files at every instant: a process killed at any moment leaves a log that ``rmqc check`` reads (Spark and
pyarrow read the folder and skip hidden files), losing at most the events of the interval not yet rolled.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from .events import Event
from .parquet import write_parquet

PART = "part-{:06d}.parquet"
COMPACTED = "compacted-{:06d}.parquet"
COMPACTED_ROWS = 1_000_000
"""Rows a compacted file holds at most: the size of a simulated log's files, so a compacted soak log reads in
as many splits as a simulated log of its size (issue 36)."""


class RollingParquetWriter:
    """``append`` events from any thread; ``roll`` writes what came since the last part (``maybe_roll`` once
    ``roll_s`` has passed); ``close`` writes the rest. Sequence numbers run on over the parts."""

    def __init__(self, folder: Path, roll_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        existing = sorted([*self.folder.glob("part-*.parquet"), *self.folder.glob("compacted-*.parquet")])
        if existing:
            raise FileExistsError(f"{self.folder} already holds an event log ({len(existing)} parts); "
                                  "give another --out or remove it")
        self.roll_s, self.clock = roll_s, clock
        self._pending: list[Event] = []
        self._lock = threading.Lock()
        self._parts = 0
        self._seq = 0
        self._last_roll = clock()
        self.written = 0

    def append(self, event: Event) -> None:
        with self._lock:
            self._pending.append(event)

    def maybe_roll(self) -> int:
        """Roll when ``roll_s`` has passed since the last part; the number of events written."""
        if self.clock() - self._last_roll < self.roll_s:
            return 0
        return self.roll()

    def roll(self) -> int:
        with self._lock:
            batch, self._pending = self._pending, []
            self._last_roll = self.clock()
            if not batch:
                return 0
            numbered = [Event(**{**_fields(e), "seq": self._seq + i}) for i, e in enumerate(batch)]
            self._seq += len(batch)
            self._parts += 1
            final = self.folder / PART.format(self._parts)
            temporary = self.folder / f".{final.name}.tmp"
            write_parquet(numbered, temporary)
            os.replace(temporary, final)  # atomic: a reader sees the whole part or none of it
            self.written += len(batch)
            return len(batch)

    def close(self) -> int:
        return self.roll()

    def compact(self) -> int:
        """Merge the parts into files of at most ``COMPACTED_ROWS`` rows, in order, then remove the parts; the
        number of files written. A soak rolls a part every few seconds: a long one leaves thousands of small
        files, each a task and a footer for every check (issue 36: a soak log is to check no slower than a
        simulated log of its size). Each file is written under a hidden name and renamed into place, and the parts
        are removed after the last: a reader in those few milliseconds sees an event twice, never misses one."""
        import pyarrow.parquet as pq

        with self._lock:
            parts = [self.folder / PART.format(n) for n in range(1, self._parts + 1)]
            parts = [p for p in parts if p.exists()]
            if len(parts) <= 1:
                return 0
            written: list[Path] = []
            writer, rows, temporary = None, 0, None

            def finish() -> None:
                nonlocal writer, temporary
                if writer is not None and temporary is not None:
                    writer.close()
                    final = self.folder / COMPACTED.format(len(written) + 1)
                    os.replace(temporary, final)
                    written.append(final)
                writer, temporary = None, None

            for part in parts:
                table = pq.read_table(part)
                start = 0
                while start < table.num_rows:
                    if writer is None:
                        temporary = self.folder / f".{COMPACTED.format(len(written) + 1)}.tmp"
                        writer, rows = pq.ParquetWriter(temporary, table.schema), 0
                    take = min(COMPACTED_ROWS - rows, table.num_rows - start)
                    writer.write_table(table.slice(start, take))
                    rows, start = rows + take, start + take
                    if rows >= COMPACTED_ROWS:
                        finish()
            finish()
            for part in parts:
                part.unlink()
            return len(written)

    @property
    def parts(self) -> int:
        return self._parts


def _fields(event: Event) -> dict[str, object]:
    return {name: getattr(event, name) for name in event.__dataclass_fields__}
