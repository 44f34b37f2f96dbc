"""``rmqc run``: the conformance suites against a target, written to a run folder."""
from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

import suites
from adapters.base import BUDGET_ENV, DEFAULT_BUDGET_S, TargetError
from adapters.targets import RELEASE, USAGE, namesrv_option, parse_target
from history.profiles import BROKER_PROFILES
from reports.summary import RunSummary
from spec import versions
from suites.plugin.hypothesis_profiles import ENV as HYPOTHESIS_ENV
from suites.plugin.options import NAMESRV_HELP, TARGET_VERSION_HELP


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="run the conformance suites against a target")
    parser.add_argument("--target", default="reference", help=USAGE)
    parser.add_argument("--profile", default=None, help=f"{' | '.join(BROKER_PROFILES)} (default: all the target runs)")
    parser.add_argument("--target-version", default=None, metavar="V", help=TARGET_VERSION_HELP)
    parser.add_argument("--namesrv", default=None, metavar="HOST:PORT", help=NAMESRV_HELP)
    parser.add_argument("--expectations", default=None, metavar="FILE",
                        help="expectation file of the target (expectations/<name>.yaml): the exit code is the gate's, "
                             "failing on an unexpected failure or an unexpected pass")
    parser.add_argument("-k", dest="keyword", default=None, help="only tests matching this pytest -k expression")
    parser.add_argument("--out", default=None, help="run folder (default reports/out/<run-id>)")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help=f"wall seconds one test may take on a wall-clock target; longer scenarios are not "
                             f"applicable (default {DEFAULT_BUDGET_S:g}; sets {BUDGET_ENV})")
    parser.add_argument("--cluster", default=None, metavar="SHAPE",
                        help="with --target release:V: start the release as a cluster of several brokers (2m, "
                             "1m1s,sync, 2m,sync-flush); the send suites then cause their faults with nemeses on its "
                             "brokers (docs/faults.md)")
    parser.add_argument("--pytest-arg", action="append", default=[], help="extra argument passed to pytest")
    parser.add_argument("--spark-check", action="store_true",
                        help="Spark-check this run's event log (the checks that hold under any consumer settings)")
    parser.add_argument("--simulate-events", type=int, default=0,
                        help="also simulate a log of about N events and Spark-check it with every check")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    out = Path(args.out or Path("reports") / "out" / run_id)
    try:  # an unknown or unreachable target is one line before any test runs; the plugin reuses this probe
        target = parse_target(args.target)
        if args.cluster:
            if target.kind is not RELEASE:
                raise TargetError(f"--cluster starts a release the suite runs (--target release:V), not {args.target}")
            from adapters.release import CLUSTER_ENV, topology

            os.environ[CLUSTER_ENV] = args.cluster
            topology()  # a malformed shape is one line here
        namesrv_option(target, args.namesrv)
        if target.kind is RELEASE:  # the release's configuration, store and logs go into the run folder
            from adapters.release import HOME_ENV

            os.environ.setdefault(HOME_ENV, str(out.resolve()))
        probe = target.probe()
        profiles = probe.profiles
    except TargetError as exc:
        print(f"rmqc run: error: {exc}", file=sys.stderr)
        return 2
    if args.target_version:
        try:
            versions.key(args.target_version)
        except ValueError as exc:
            print(f"rmqc run: error: --target-version: {exc}", file=sys.stderr)
            return 2
    if args.profile and args.profile not in profiles:
        print(f"rmqc run: error: --profile {args.profile}: target {args.target} runs "
              f"{' and '.join(profiles)}", file=sys.stderr)
        return 2
    import pytest

    out.mkdir(parents=True, exist_ok=True)
    suites_dir = Path(suites.__file__).resolve().parent
    argv = [str(suites_dir), "-p", "rocketmq_conformance", "-p", "no:cacheprovider", "-q", "--rootdir", str(suites_dir),
            "--rmq-target", args.target, "--rmq-out", str(out), "--rmq-run-id", run_id,
            "--alluredir", str(out / "allure-results")]
    if args.profile:
        argv += ["--rmq-profile", args.profile]
    if args.expectations:
        argv += ["--rmq-expectations", args.expectations]
    if args.target_version:
        argv += ["--rmq-target-version", args.target_version]
    if args.namesrv:
        argv += ["--rmq-namesrv", args.namesrv]
    if not os.environ.get(HYPOTHESIS_ENV):  # the suites' own settings: derandomized, or few examples on a wall clock
        argv += ["--rmq-hypothesis-profile", "ci" if probe.virtual_clock else "realtime"]
    if args.keyword:
        argv += ["-k", args.keyword]
    if args.budget is not None:
        os.environ[BUDGET_ENV] = repr(args.budget)
    argv += args.pytest_arg
    code = int(pytest.main(argv))
    summary_path = out / "summary.json"
    if code == 2 and summary_path.exists():  # harness errors: the summary was written and names them
        summary = RunSummary.read(summary_path)
        if summary.harness:
            for error in summary.harness:
                print(f"rmqc run: harness error: {error['test']}: {error['reason']}", file=sys.stderr)
            print(f"run folder: {out}  ({len(summary.behaviours)} behaviours checked, {len(summary.failed)} failing, "
                  f"{len(summary.harness)} harness errors)")
            return 2
    if code not in (0, 1):
        print(f"rmqc run: error: the suites did not run to completion (pytest exit {code}); see the output above",
              file=sys.stderr)
        return code
    if not summary_path.exists():
        print("rmqc run: error: no test ran, so no verdict was produced", file=sys.stderr)
        return 5
    summary = RunSummary.read(summary_path)
    spark_failed = False
    if args.spark_check or args.simulate_events:
        summary.spark = spark_verdicts(out, args.spark_check, args.simulate_events)
        summary.write(summary_path)
        spark_failed = not all(part["passed"] for part in summary.spark.values())
    print(f"run folder: {out}  ({len(summary.behaviours)} behaviours checked, "
          f"{len(summary.failed)} failing)")
    if summary.gate is not None:
        gate = summary.gate
        print(f"gate: {'pass' if gate['passed'] else 'FAIL'} against {gate['expectations']} "
              f"({len(gate['expected_failures'])} expected failures, {len(gate['unexpected_failures'])} unexpected "
              f"failures, {len(gate['unexpected_passes'])} unexpected passes)")
        return 0 if gate["passed"] and not spark_failed else 1
    return 1 if summary.failed or code == 1 or spark_failed else 0


def spark_verdicts(out: Path, own_log: bool, simulate_events: int) -> dict:
    """Spark checks of this run's log and of a simulated log, as summary entries."""
    from spark_checks.checks import CONFIGURATION_FREE, checked, write_result
    from spark_checks.session import spark_session
    from spark_checks.simulate import simulate

    spark = spark_session()
    parts = {}
    jobs = []
    if own_log:
        jobs.append(("conformance_log", out / "events.parquet", CONFIGURATION_FREE,
                     "this run's own log mixes consumer settings and injected faults on purpose, so only the "
                     "checks that hold under any settings apply; the suites judge the rest"))
    if simulate_events:
        sim = simulate(simulate_events, out / "simulated", seed=1)
        jobs.append(("simulated", Path(sim["path"]), None, f"{sim['events']} simulated events, every check"))
    print("\nSpark checks")
    for name, path, checks, note in jobs:
        started = time.perf_counter()
        result = checked(spark, str(path), out / f"spark-{name}", checks=checks)  # never raises (issue 55)
        result["seconds"] = round(time.perf_counter() - started, 2)
        write_result(result, out / f"spark-{name}")
        parts[name] = {"passed": result["passed"], "rows": result["rows"] or 0, "seconds": result["seconds"], "note": note,
                       "checks": {c["name"]: {"verdict": c["verdict"], **c["counts"]} for c in result["checks"]}}
        verdicts = ", ".join(f"{c['name']} {c['verdict']}" for c in result["checks"])
        print(f"  {name}: {'PASS' if result['passed'] else 'FAIL'} ({result['rows']:,} rows, {result['seconds']} s): "
              f"{verdicts}")
    return parts
