"""``rmqc simulate`` and ``rmqc check``."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from history.profiles import GRPC_5X, REMOTING_4X
from spark_checks.simulate import FAULTS


def _fault(text: str) -> tuple[str, int]:
    name, _, count = text.partition("=")
    if name not in FAULTS:
        raise argparse.ArgumentTypeError(f"unknown fault {name!r}; known: {', '.join(FAULTS)}")
    try:
        return name, int(count) if count else 10
    except ValueError:
        raise argparse.ArgumentTypeError(f"--inject {text}: the count after '=' must be a whole number") from None


def add_parsers(sub: argparse._SubParsersAction) -> None:
    sim = sub.add_parser("simulate", help="write an event log at scale from the reference semantics")
    sim.add_argument("--events", type=int, required=True, help="about how many events to write")
    sim.add_argument("--out", required=True, help="folder; the log goes to OUT/run_id=<id>/part-*.parquet")
    sim.add_argument("--inject", type=_fault, action="append", default=[], metavar="FAULT[=N]",
                     help=f"a fault N times (default 10): {', '.join(FAULTS)}")
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("--profile", default=GRPC_5X, choices=[GRPC_5X, REMOTING_4X])
    sim.add_argument("--run-id", default=None)
    sim.set_defaults(handler=run_simulate)

    chk = sub.add_parser(
        "check", help="Spark checks over an event log; exit 0 only when every check passes",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Spark checks over an event log; result.json and index.html go to --out.",
        epilog="Exit codes: 0 every check passed; 1 a check failed or is inconclusive, including when damaged\n"
               "Parquet parts were set aside (listed under damaged_parts, with the checks that need every row\n"
               "inconclusive) or a check raised (its entry names the exception); 2 an input error: the log\n"
               "could not be checked at all (missing or mistyped columns, empty, every part damaged, ...),\n"
               "result.json then names it under input_errors with every check inconclusive. A PATH that does\n"
               "not exist is exit 2 with nothing written.")
    chk.add_argument("path", help="a Parquet event log (a file or a folder)")
    chk.add_argument("--master", default="local[2]", help="Spark master, e.g. local[2] or spark://127.0.0.1:7077")
    chk.add_argument("--out", default=None, help="where result.json, index.html and quarantine/ go (default: PATH-check)")
    chk.add_argument("--profile", default=None, choices=[GRPC_5X, REMOTING_4X], help="default: from the log")
    chk.add_argument("--tolerance-ms", type=int, default=None,
                     help="the noise band's absolute part around the timing model's windows "
                          "(default: spec/timing_model.yaml's, 100; plus 1 %% of the documented wait)")
    chk.add_argument("--allow-duplicates", type=int, default=0,
                     help="duplicate deliveries allowed before the duplicates check fails (at-least-once)")
    chk.add_argument("--driver-memory", default=None, help="e.g. 2g")
    chk.add_argument("--checks", default=None, help="comma-separated subset of the checks (default: all)")
    chk.set_defaults(handler=run_check)


def run_simulate(args: argparse.Namespace) -> int:
    from spark_checks.simulate import simulate

    if args.events <= 0:
        print("rmqc simulate: error: --events must be positive", file=sys.stderr)
        return 2
    try:
        summary = simulate(args.events, Path(args.out), seed=args.seed, profile=args.profile,
                           faults=dict(args.inject), run_id=args.run_id)
    except ValueError as exc:
        print(f"rmqc simulate: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


def run_check(args: argparse.Namespace) -> int:
    """``rmqc check``: result.json and index.html are written whatever the log holds (issue 55); the exit code
    is ``spark_checks.damage.exit_code``'s (0 passed, 1 not passed, 2 input error)."""
    from spark_checks.checks import Tolerance, checked, write_result
    from spark_checks.damage import exit_code
    from spark_checks.session import spark_session

    path = Path(args.path)
    if not path.exists():
        print(f"rmqc check: error: {path} does not exist", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else path.with_name(path.name + "-check")
    started = time.perf_counter()
    spark = spark_session(args.master, args.driver_memory)
    tolerance = Tolerance() if args.tolerance_ms is None else Tolerance(args.tolerance_ms)
    result = checked(spark, str(path), out, profile=args.profile, tolerance=tolerance,
                     allow_duplicates=args.allow_duplicates,
                     checks=tuple(args.checks.split(",")) if args.checks else None,
                     progress=lambda line: print(f"rmqc check: {line}", file=sys.stderr, flush=True))
    for error in result["input_errors"]:
        print(f"rmqc check: error: {error['error']}", file=sys.stderr)
    result["master"] = args.master
    result["seconds"] = round(time.perf_counter() - started, 2)
    write_result(result, out)
    for c in result["checks"]:
        counts = ", ".join(f"{k}={v}" for k, v in c["counts"].items())
        why = None if result["input_errors"] else c["detail"].get("inconclusive")  # an input error: said once above
        print(f"{c['verdict'].upper():<13} {c['name']:<16} {counts}" + (f"  ({why})" if why else ""))
    damaged = result["damaged_parts"]
    read = "not checked" if result["rows"] is None else f"{result['rows']} rows ({result['quarantined']} quarantined)"
    print(f"{read}" + (f", {len(damaged)} damaged part{'s' if len(damaged) > 1 else ''} set aside" if damaged else "")
          + f" in {result['seconds']} s; wrote {out / 'result.json'} and {out / 'index.html'}")
    return exit_code(result)
