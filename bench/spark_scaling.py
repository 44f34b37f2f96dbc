"""How the Spark checks' cost grows with the events: one cold ``rmqc check`` (a new JVM each) over simulated
logs of each size, with seconds, rows a second, shuffle bytes, bytes spilled and the driver's peak memory,
beside DuckDB's same checks over the same log at the same memory (its ``memory_limit`` set to the driver's).

    python bench/spark_scaling.py [--sizes 1000000 10000000 100000000] [--keep DIR] [--driver-memory 2g]
                                  [--skip-duckdb]

Prints a Markdown table (the one in ``docs/spark-scaling.md`` came from here). Each size runs
``bench/spark_bench.py --runs 1 --duckdb-memory <the driver's> --json`` in a process of its own; ``--keep DIR``
keeps the simulated logs there (``DIR/<size>``) so a second run does not simulate them again.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def duckdb_memory(driver_memory: str) -> str:
    """The Spark driver's memory (``2g``) as DuckDB's ``memory_limit`` (``2GiB``)."""
    units = {"k": "KiB", "m": "MiB", "g": "GiB", "t": "TiB"}
    number, unit = driver_memory[:-1], driver_memory[-1].lower()
    if unit not in units or not number.isdigit():
        raise SystemExit(f"--driver-memory {driver_memory!r}: expected a number and k, m, g or t (as 2g)")
    return number + units[unit]


def measure(size: int, log: Path, driver_memory: str, out: Path, with_duckdb: bool) -> dict:
    peer = ["--duckdb-memory", duckdb_memory(driver_memory)] if with_duckdb else ["--skip-duckdb"]
    done = subprocess.run([sys.executable, str(HERE / "spark_bench.py"), "--events", str(size), "--runs", "1",
                           *peer, "--keep", str(log), "--driver-memory", driver_memory, "--json", str(out)],
                          capture_output=True, text=True)
    if done.returncode not in (0, 1) or not out.exists():  # 1: the injected faults' verdicts, as meant
        raise SystemExit(f"spark_bench.py --events {size} failed:\n{done.stderr[-2000:]}")
    return json.loads(out.read_text())


def table(rows: list[dict]) -> str:
    lines = ["| events | check (cold) | rows/s | shuffle written | shuffle read | spilled to disk | driver peak RSS "
             "| DuckDB, same memory | Spark / DuckDB | DuckDB peak RSS |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        seconds = r["spark_s"][0]
        duck = (f"{r['duckdb_s'][0]:.1f} s | {seconds / r['duckdb_s'][0]:.2f} | {r['duckdb_peak_rss_mb']:,} MB"
                if r.get("duckdb_s") else "not run | | ")
        lines.append(f"| {r['rows']:,} | {seconds:.1f} s | {r['rows'] / seconds:,.0f} | "
                     f"{r['shuffle_write_bytes'] / 2**20:,.0f} MiB | {r['shuffle_read_bytes'] / 2**20:,.0f} MiB | "
                     f"{r['disk_spilled_bytes'] / 2**20:,.0f} MiB | {r['peak_rss_mb']:,} MB | {duck} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000, 100_000_000])
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--skip-duckdb", action="store_true", help="only time Spark")
    args = parser.parse_args()
    duckdb_memory(args.driver_memory)  # a malformed size fails here, before any log is simulated
    root = args.keep or Path(tempfile.mkdtemp(prefix="rmqc-scaling-"))
    rows = []
    for size in args.sizes:
        print(f"measuring {size:,} events ...", file=sys.stderr, flush=True)
        rows.append(measure(size, root / str(size), args.driver_memory, root / f"{size}.json",
                            not args.skip_duckdb))
        print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
