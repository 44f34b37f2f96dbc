"""The rolling event log: parts appear whole, numbering runs on over them, and a writer killed with SIGKILL
leaves a folder every reader takes, short of the interval it had not rolled yet."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from serving import ROOT

from history.events import Event
from history.rolling import RollingParquetWriter


def _event(i: int) -> Event:
    return Event(kind="SEND_OK", ts_ms=i, run_id="soak", target="t", profile="grpc-5.x", msg_id=f"m{i}", key=f"k{i}")


def test_parts_roll_on_time_and_number_on(tmp_path: Path) -> None:
    now = [0.0]
    writer = RollingParquetWriter(tmp_path / "log", roll_s=2.0, clock=lambda: now[0])
    for i in range(5):
        writer.append(_event(i))
    assert writer.maybe_roll() == 0  # not yet two seconds
    now[0] = 2.5
    assert writer.maybe_roll() == 5
    for i in range(5, 8):
        writer.append(_event(i))
    assert writer.close() == 3 and writer.parts == 2
    table = pq.read_table(tmp_path / "log")
    assert sorted(table.column("seq").to_pylist()) == list(range(8))
    assert sorted(table.column("key").to_pylist(), key=lambda k: int(k[1:])) == [f"k{i}" for i in range(8)]
    with pytest.raises(FileExistsError, match="already holds an event log"):
        RollingParquetWriter(tmp_path / "log")


WRITER = """
import sys, time
from history.events import Event
from history.rolling import RollingParquetWriter
w = RollingParquetWriter(sys.argv[1], roll_s=0.1)
i = 0
while True:
    w.append(Event(kind="SEND_OK", ts_ms=i, run_id="soak", msg_id=f"m{i}"))
    i += 1
    if w.maybe_roll():
        print(w.written, flush=True)
    time.sleep(0.0005)
"""


def test_compaction_merges_the_parts_in_order_into_files_of_a_bounded_size(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A soak's many small parts become a few files of at most COMPACTED_ROWS rows, every event once and in order;
    nothing hidden is left behind, and the folder is still taken for a log."""
    import history.rolling as rolling

    monkeypatch.setattr(rolling, "COMPACTED_ROWS", 4)
    writer = RollingParquetWriter(tmp_path / "log", roll_s=0.0)
    for i in range(11):
        writer.append(_event(i))
        if i % 3 == 2:
            writer.roll()
    writer.close()
    assert writer.parts == 4
    assert writer.compact() == 3  # 11 rows: 4 + 4 + 3
    files = sorted((tmp_path / "log").iterdir())
    assert [f.name for f in files] == ["compacted-000001.parquet", "compacted-000002.parquet", "compacted-000003.parquet"]
    assert [pq.read_metadata(f).num_rows for f in files] == [4, 4, 3]
    keys = [k for f in files for k in pq.read_table(f).column("key").to_pylist()]
    assert keys == [f"k{i}" for i in range(11)]
    with pytest.raises(FileExistsError, match="already holds an event log"):
        RollingParquetWriter(tmp_path / "log")


def test_a_writer_killed_with_sigkill_leaves_a_readable_log(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(folder)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    rolled = 0
    deadline = time.monotonic() + 30
    while rolled < 2000 and time.monotonic() < deadline:
        rolled = int(child.stdout.readline())  # type: ignore[union-attr]
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    table = pq.read_table(folder)  # hidden temporaries of a part being written are skipped
    print(f"\nkilled after {rolled} events were rolled; the log holds {table.num_rows} in "
          f"{len(list(folder.glob('part-*.parquet')))} parts")
    assert table.num_rows >= rolled >= 2000
    assert sorted(table.column("seq").to_pylist()) == list(range(table.num_rows))
