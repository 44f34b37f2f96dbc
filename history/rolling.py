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


class RollingParquetWriter:
    """``append`` events from any thread; ``roll`` writes what came since the last part (``maybe_roll`` once
    ``roll_s`` has passed); ``close`` writes the rest. Sequence numbers run on over the parts."""

    def __init__(self, folder: Path, roll_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        existing = sorted(self.folder.glob("part-*.parquet"))
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

    @property
    def parts(self) -> int:
        return self._parts


def _fields(event: Event) -> dict[str, object]:
    return {name: getattr(event, name) for name in event.__dataclass_fields__}
