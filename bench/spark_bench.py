"""Spark checks against the same checks in DuckDB, over the same simulated Parquet log.

Prints rows per second for both engines, the ratio Spark / DuckDB (target on this 2-core machine:
at most 3), whether verdicts and counts are identical, and the Spark driver JVM's peak resident
memory. Usage: ``python bench/spark_bench.py [--events N] [--driver-memory 2g] [--keep PATH]``.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from duckdb_checks import run_duckdb_checks  # noqa: E402

from spark_checks.checks import run_checks  # noqa: E402
from spark_checks.session import spark_session  # noqa: E402
from spark_checks.simulate import simulate  # noqa: E402

FAULTS = {"lost": 7, "duplicate-delivery": 5, "duplicate-apply": 3, "reorder": 4, "late-retry": 6, "dlq-missing": 2,
          "delivered-after-dlq": 2}


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--keep", default=None, help="use (or create) the log here instead of a temporary folder")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--skip-duckdb", action="store_true", help="only time Spark (for logs DuckDB would need too much memory for)")
    args = parser.parse_args()
    import duckdb

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="rmqc-bench-"))
    if not any(folder.rglob("*.parquet")):
        sim = simulate(args.events, folder, seed=3, faults=FAULTS)
        print(f"simulated {sim['events']:,} events in {sim['seconds']} s ({sim['events'] / sim['seconds']:,.0f} events/s)")
    spark = spark_session(args.master, args.driver_memory)
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    started = time.perf_counter()
    spark_result = run_checks(spark, str(folder))
    spark_s = time.perf_counter() - started
    rows = spark_result["rows"]
    if args.skip_duckdb:
        print(f"rows {rows:,}: spark {spark_s:.1f} s = {rows / spark_s:,.0f} rows/s; verdicts "
              f"{ {c['name']: c['verdict'] for c in spark_result['checks']} }; Spark driver peak RSS "
              f"{peak_rss_mb(jvm_pid):,.0f} MB (spark.driver.memory {args.driver_memory})")
        return 0
    con = duckdb.connect()
    con.execute("SET threads = 2")
    started = time.perf_counter()
    duck = run_duckdb_checks(con, str(folder), spark_result["profile"])
    duck_s = time.perf_counter() - started
    same = True
    for c in spark_result["checks"]:
        peer = duck[c["name"]]
        mine = {k: v for k, v in c["counts"].items() if k != "allowed"}
        theirs = {k: v for k, v in peer.items() if k not in ("verdict",)}
        agree = mine == theirs and c["verdict"] == peer["verdict"]
        same &= agree
        print(f"  {c['name']:<18} spark {c['verdict']:<5} {mine}  duckdb {peer['verdict']:<5} {theirs}"
              f"{'' if agree else '   <-- DIFFERENT'}")
    print(f"\nrows {rows:,}: spark {spark_s:.1f} s = {rows / spark_s:,.0f} rows/s; duckdb {duck_s:.1f} s = "
          f"{rows / duck_s:,.0f} rows/s; ratio spark/duckdb {spark_s / duck_s:.2f} (target <= 3)")
    print(f"verdicts and counts identical: {same}; Spark driver peak RSS {peak_rss_mb(jvm_pid):,.0f} MB "
          f"(spark.driver.memory {args.driver_memory})")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
