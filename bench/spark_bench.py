"""Spark checks against the same checks in DuckDB, over the same simulated Parquet log.

Runs both engines --runs times (the first run in a new JVM is cold: the JIT compiles Spark and the
generated code as it goes; the later ones warm) and prints rows per second for both, the ratio
Spark / DuckDB per run and for the cold run against the median warm one (issue 36's target on this
2-core machine: the cold run at most ``COLD_TARGET``), whether verdicts and counts are identical, and
the Spark driver JVM's peak resident memory.
DuckDB takes what memory it likes unless ``--duckdb-memory`` caps it (``memory_limit``; it then spills to a
temporary folder), for a comparison at the same memory as the Spark driver.
Usage: ``python bench/spark_bench.py [--events N] [--driver-memory 2g] [--duckdb-memory 2GB] [--keep PATH]``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from duckdb_checks import run_duckdb_checks  # noqa: E402

from spark_checks.checks import run_checks  # noqa: E402
from spark_checks.session import spark_session  # noqa: E402
from spark_checks.simulate import simulate  # noqa: E402

COLD_TARGET = 2.0
TARGET_EVENTS = 10_000_000
"""Issue 36: at TARGET_EVENTS, the first run in a new JVM at most COLD_TARGET times DuckDB's first run."""
FAULTS = {"lost": 7, "duplicate-delivery": 5, "duplicate-apply": 3, "reorder": 4, "late-retry": 6, "dlq-missing": 2,
          "delivered-after-dlq": 2}


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def shuffle_and_spill(event_log_dir: Path) -> dict[str, int]:
    """Bytes the application's tasks wrote to shuffles and spilled (memory and disk), summed over the Spark
    event log's task-end records (``spark.eventLog.enabled``): what a cluster's network and disks would carry."""
    import json

    totals = {"shuffle_write_bytes": 0, "shuffle_read_bytes": 0, "memory_spilled_bytes": 0, "disk_spilled_bytes": 0}
    for file in (f for f in event_log_dir.rglob("*") if f.is_file()):  # Spark 4 rolls it in a folder of its own
        for line in file.read_text(errors="replace").splitlines():
            if '"SparkListenerTaskEnd"' not in line:
                continue
            metrics = json.loads(line).get("Task Metrics") or {}
            write, read = metrics.get("Shuffle Write Metrics") or {}, metrics.get("Shuffle Read Metrics") or {}
            totals["shuffle_write_bytes"] += int(write.get("Shuffle Bytes Written", 0))
            totals["shuffle_read_bytes"] += int(read.get("Remote Bytes Read", 0)) + int(read.get("Local Bytes Read", 0))
            totals["memory_spilled_bytes"] += int(metrics.get("Memory Bytes Spilled", 0))
            totals["disk_spilled_bytes"] += int(metrics.get("Disk Bytes Spilled", 0))
    return totals


def _agree(spark_check: dict, peer: dict) -> tuple[bool, str]:
    """Whether DuckDB's outputs for a check equal Spark's: verdict, counts, how many counterexamples, and the
    per-attempt retry statistics (percentiles to 1e-9 relative: both interpolate in floating point)."""
    mine = {k: v for k, v in spark_check["counts"].items() if k != "allowed"}
    theirs = {k: v for k, v in peer.items() if k not in ("verdict", "counterexamples", "per_attempt")}
    if mine != theirs or spark_check["verdict"] != peer["verdict"]:
        return False, f"counts {theirs}, verdict {peer['verdict']}"
    if len(spark_check["counterexamples"]) != peer["counterexamples"]:
        return False, f"{peer['counterexamples']} counterexamples"
    if "per_attempt" in peer:
        ours = [(p["attempt"], p["count"], p["p50_ms"], p["p99_ms"]) for p in spark_check["detail"]["per_attempt"]]
        peers = [(p["attempt"], p["count"], p["p50_ms"], p["p99_ms"]) for p in peer["per_attempt"]]
        close = len(ours) == len(peers) and all(
            a[:2] == b[:2] and all(abs(x - y) <= 1e-9 * max(1.0, abs(x)) for x, y in zip(a[2:], b[2:]))
            for a, b in zip(ours, peers))
        if not close:
            return False, "per-attempt statistics"
    return True, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--keep", default=None, help="use (or create) the log here instead of a temporary folder")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--runs", type=int, default=3, help="runs of both engines; the first is cold, the rest warm")
    parser.add_argument("--skip-duckdb", action="store_true", help="only time Spark")
    parser.add_argument("--duckdb-memory", default=None,
                        help="DuckDB's memory_limit (for example 2GB; default: DuckDB's own, 80%% of the machine's memory)")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the figures here (with shuffle and spill bytes from Spark's event log)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="rmqc-bench-"))
    if not any(folder.rglob("*.parquet")):
        sim = simulate(args.events, folder, seed=3, faults=FAULTS)
        print(f"simulated {sim['events']:,} events in {sim['seconds']} s ({sim['events'] / sim['seconds']:,.0f} events/s)")
    started = time.perf_counter()
    event_log = Path(tempfile.mkdtemp(prefix="rmqc-spark-events-")) if args.json else None
    spark = spark_session(args.master, args.driver_memory, conf={"spark.eventLog.enabled": "true",
                                                                 "spark.eventLog.compress": "false",  # on from Spark 4
                                                                 "spark.eventLog.dir": f"file://{event_log}"}
                          if event_log else None)
    # A new JVM's first query loads the SQL engine's own classes (about 3 s here, whatever the input); it is
    # counted with the session's start, which is not timed, like DuckDB's connect.
    spark.range(4).selectExpr("id % 2 AS x").groupBy("x").count().collect()
    print(f"Spark session started in {time.perf_counter() - started:.1f} s, with its first query "
          f"(not counted below, nor DuckDB's connect)")
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    con, spill = None, None
    if not args.skip_duckdb:
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 2")
        if args.duckdb_memory:
            spill = Path(tempfile.mkdtemp(prefix="rmqc-duckdb-spill-"))
            con.execute(f"SET memory_limit = '{args.duckdb_memory}'")
            con.execute(f"SET temp_directory = '{spill}'")
    spark_s, duck_s = [], []
    for run in range(args.runs):  # run 0 is cold (a new JVM compiles as it goes); later runs are warm
        started = time.perf_counter()
        spark_result = run_checks(spark, str(folder), progress=lambda line: print(f"  spark run {run}: {line}", flush=True))
        spark_s.append(time.perf_counter() - started)
        if con is not None:
            started = time.perf_counter()
            duck = run_duckdb_checks(con, str(folder), spark_result["profile"])
            duck_s.append(time.perf_counter() - started)
    rows = spark_result["rows"]
    for run, seconds in enumerate(spark_s):
        label = "cold" if run == 0 else "warm"
        line = f"run {run} ({label}): rows {rows:,}: spark {seconds:.1f} s = {rows / seconds:,.0f} rows/s"
        if duck_s:
            line += (f"; duckdb {duck_s[run]:.1f} s = {rows / duck_s[run]:,.0f} rows/s; "
                     f"ratio spark/duckdb {seconds / duck_s[run]:.2f}")
        print(line)
    if duck_s and len(spark_s) > 1:
        warm = statistics.median(s / d for s, d in zip(spark_s[1:], duck_s[1:]))
        cold = spark_s[0] / duck_s[0]
        judged = (f": {'met' if cold <= COLD_TARGET else 'NOT met'}" if rows >= TARGET_EVENTS else
                  f", judged at {TARGET_EVENTS:,} events")
        print(f"ratio spark/duckdb: cold {cold:.2f} (target <= {COLD_TARGET:g}{judged}), "
              f"warm (median of {len(spark_s) - 1}) {warm:.2f}")
    same = True
    for c in spark_result["checks"]:
        mine = {k: v for k, v in c["counts"].items() if k != "allowed"}
        line = f"  {c['name']:<18} spark {c['verdict']:<5} {mine} ({len(c['counterexamples'])} examples)"
        if con is not None:
            peer = dict(duck[c["name"]])
            agree, why = _agree(c, peer)
            same &= agree
            line += (f"  duckdb {peer['verdict']:<5} ({peer['counterexamples']} examples)"
                     f"{'' if agree else '   <-- DIFFERENT: ' + why}")
        print(line)
    if con is not None:
        print(f"verdicts, counts, counterexamples and per-attempt count / p50 / p99 identical: {same}")
    peak = peak_rss_mb(jvm_pid)
    print(f"Spark driver peak RSS {peak:,.0f} MB (spark.driver.memory {args.driver_memory})")
    duck_peak = peak_rss_mb(os.getpid()) if con is not None else None  # this process: Python and DuckDB
    if duck_peak is not None:
        print(f"DuckDB's process peak RSS {duck_peak:,.0f} MB (memory_limit {args.duckdb_memory or 'DuckDB default'})")
    if args.json:
        import json

        spark.stop()  # the event log is complete once the application ends
        figures = {"rows": rows, "spark_s": spark_s, "duckdb_s": duck_s, "peak_rss_mb": round(peak),
                   "driver_memory": args.driver_memory, "duckdb_memory": args.duckdb_memory,
                   "duckdb_peak_rss_mb": None if duck_peak is None else round(duck_peak),
                   **shuffle_and_spill(event_log)}
        args.json.write_text(json.dumps(figures, indent=2))
        print(f"shuffle written {figures['shuffle_write_bytes']:,} B, spilled {figures['disk_spilled_bytes']:,} B to disk")
        shutil.rmtree(event_log, ignore_errors=True)
    if spill is not None:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
