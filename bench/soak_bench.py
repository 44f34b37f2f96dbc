"""A soak of ``rmqc serve`` through the official Python SDK until a million events are logged, then
``rmqc check`` over its log, side by side with the same checks over a log of the same size from
``rmqc simulate`` (the peer: same engine and session, a generated log with no jitter).

    python bench/soak_bench.py [--events 1000000] [--keep PATH] [--minutes 40]

The server runs at time scale 1; the 5.x ladder is compressed only through each group's own
configuration (``groupRetryPolicy.customizedRetryPolicy.next`` set through the admin codes, as
``mqadmin updateSubGroup -p`` does). Consumers run in processes of their own (``own_process``) so the
two cores are shared. Printed: events logged, sends, wall time and events per second of the soak; the
check's time and verdicts over the soak log with the timing model it states; the check's time over the
simulated log; and the ratio of the two check times. Bounded: ``--minutes`` of sends at most.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from serving import start_serve, stop_serve  # noqa: E402

from spark_checks.checks import run_checks  # noqa: E402
from spark_checks.session import spark_session  # noqa: E402
from spark_checks.simulate import simulate  # noqa: E402

WORKLOAD = """
seed: 23
tick_ms: 100
producers:
- {kind: normal, count: 3, rate_per_s: 70}
- {kind: fifo, rate_per_s: 30, message_groups: 16}
groups:
- {group: BenchA, topic: SoakT, instances: 2, failure_probability: 0.2, retry_max_times: 3,
   retry_ladder_ms: [1000, 2000, 3000], own_process: true}
- {group: BenchB, topic: SoakT, instances: 2, failure_probability: 0.05, retry_max_times: 2,
   retry_ladder_ms: [2000, 4000], own_process: true}
- {group: BenchF, topic: SoakFifoT, instances: 1, failure_probability: 0.1, retry_max_times: 3,
   retry_ladder_ms: [2000, 2000, 3000], own_process: true}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--minutes", type=float, default=40.0)
    parser.add_argument("--keep", type=Path, default=None, help="keep the soak log here")
    parser.add_argument("--log", type=Path, default=None, help="check this soak log (of an earlier run) only")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="soak-bench-"))
    if args.log is None:
        log = args.keep or work / "soak"
        if not soak_once(log, work, args):
            return 1
    else:
        log = args.log
    return check_side_by_side(log, work, args)


def soak_once(log: Path, work: Path, args: argparse.Namespace) -> bool:
    (work / "workload.yaml").write_text(WORKLOAD)
    process, address = start_serve(1.0)
    began = time.monotonic()
    try:
        soak = subprocess.run([sys.executable, "-m", "rmqc.cli", "soak", "--target", f"grpc://{address}",
                               "--duration", f"{args.minutes}m", "--max-events", str(args.events), "--out", str(log),
                               "--workload", str(work / "workload.yaml"), "--settle-s", "120"], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True)
    finally:
        stop_serve(process)
    wall = time.monotonic() - began
    last = soak.stderr.replace("\r", "\n").strip().splitlines()[-3:]
    print("\n".join(last))
    if soak.returncode != 0:
        print(soak.stderr[-3000:], file=sys.stderr)
        return False
    manifest = json.loads((log / "_soak.json").read_text())
    events, sent = manifest["stats"]["events"], manifest["stats"]["sent"]
    print(f"soak: {events:,} events logged, {sent:,} messages sent, {wall:.0f} s wall, "
          f"{events / wall:,.0f} events/s logged")
    return True


def timed(spark, path: Path) -> tuple[dict, float]:
    started = time.perf_counter()
    result = run_checks(spark, str(path))
    return result, time.perf_counter() - started


def same_size(rows: int, folder: Path) -> None:
    """A simulated log of exactly ``rows`` rows: ``rmqc simulate`` plans whole messages and writes somewhat
    more, so its first ``rows`` rows (send order) are kept; the lives cut at the end change its verdicts, not
    the work a row costs."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    simulate(rows, folder / "full", seed=3, profile="grpc-5.x", progress=False)
    table = ds.dataset(str(folder / "full"), format="parquet").to_table().slice(0, rows)
    (folder / "trimmed").mkdir(parents=True)
    pq.write_table(table, folder / "trimmed" / "part-0.parquet", row_group_size=1_000_000)
    shutil.rmtree(folder / "full")


def check_side_by_side(log: Path, work: Path, args: argparse.Namespace) -> int:
    """The soak log and a simulated log of its row count, checked alternately in one session: two runs each
    to warm the JVM, then the median of three each (a single warm run varies by a fifth on this machine)."""
    spark = spark_session()
    result, cold_s = timed(spark, log)
    same_size(result["rows"], work / "simulated")
    peer = work / "simulated" / "trimmed"
    simulated, _ = timed(spark, peer)
    soak_runs, peer_runs = [], []
    for _ in range(4):
        result, seconds = timed(spark, log)
        soak_runs.append(seconds)
        simulated, seconds = timed(spark, peer)
        peer_runs.append(seconds)
    soak_check_s, peer_s = statistics.median(soak_runs[1:]), statistics.median(peer_runs[1:])
    intervals = next(c for c in result["checks"] if c["name"] == "retry_intervals")
    print(f"rmqc check over the soak log: {soak_check_s:.1f} s warm ({cold_s:.1f} s the session's first), "
          f"{result['rows']:,} rows, {'PASSED' if result['passed'] else 'FAILED'}")
    for c in result["checks"]:
        print(f"  {c['verdict'].upper():13} {c['name']:18} {c['counts']}")
    model = intervals["detail"]["model"]
    print(f"  timing model ({model['file']}): {model['standard']['name']}: earliest = {model['standard']['earliest']}; "
          f"latest = {model['standard']['latest']}; {model['fifo']['name']}: earliest = {model['fifo']['earliest']}; "
          f"latest = {model['fifo']['latest']}; noise band {model['noise_band']}")
    for p in intervals["detail"]["per_attempt"]:
        print(f"  attempt {p['attempt']}: {p['count']:,} waits, documented {p['expected_ms']} ms, window {p['window_ms']}, "
              f"p50 {p['p50_ms']:.0f} / p90 {p['p90_ms']:.0f} / p99 {p['p99_ms']:.0f} ms, KS {p['ks']}")

    print(f"rmqc check over a simulated log of {simulated['rows']:,} rows: {peer_s:.1f} s "
          f"(its verdicts do not matter: its last messages' lives are cut)")
    print(f"check time (warm, median of 3), soak log / simulated log of the same rows: {soak_check_s / peer_s:.2f} "
          f"(target <= 1.2)")
    if args.keep is None and args.log is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
