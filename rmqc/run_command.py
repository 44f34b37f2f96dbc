"""``rmqc run``: the conformance suites against a target, written to a run folder."""
from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

import suites
from adapters.base import TargetError
from adapters.registry import target_factory, target_profiles


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="run the conformance suites against a target")
    parser.add_argument("--target", default="reference", help="reference | grpc://HOST:PORT | container:IMAGE | driver:CMD")
    parser.add_argument("--profile", default=None, help="remoting-4.x | grpc-5.x (default: all the target runs)")
    parser.add_argument("-k", dest="keyword", default=None, help="only tests matching this pytest -k expression")
    parser.add_argument("--out", default=None, help="run folder (default reports/out/<run-id>)")
    parser.add_argument("--pytest-arg", action="append", default=[], help="extra argument passed to pytest")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        kind, _ = target_factory(args.target)
    except TargetError as exc:
        print(f"rmqc run: error: {exc}", file=sys.stderr)
        return 2
    if args.profile and args.profile not in target_profiles(kind):
        print(f"rmqc run: error: --profile {args.profile}: target {args.target} runs "
              f"{' and '.join(target_profiles(kind))}", file=sys.stderr)
        return 2
    import pytest

    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    out = Path(args.out or Path("reports") / "out" / run_id)
    out.mkdir(parents=True, exist_ok=True)
    suites_dir = Path(suites.__file__).resolve().parent
    argv = [str(suites_dir), "-p", "suites.plugin", "-p", "no:cacheprovider", "-q", "--rootdir", str(suites_dir),
            "--rmq-target", args.target, "--rmq-out", str(out), "--rmq-run-id", run_id,
            "--alluredir", str(out / "allure-results")]
    if args.profile:
        argv += ["--rmq-profile", args.profile]
    if args.keyword:
        argv += ["-k", args.keyword]
    argv += args.pytest_arg
    code = int(pytest.main(argv))
    summary_path = out / "summary.json"
    if code not in (0, 1):
        print(f"rmqc run: error: the suites did not run to completion (pytest exit {code}); see the output above",
              file=sys.stderr)
        return code
    if not summary_path.exists():
        print("rmqc run: error: no test ran, so no verdict was produced", file=sys.stderr)
        return 5
    summary = json.loads(summary_path.read_text())
    print(f"run folder: {out}  ({len(summary['behaviours'])} behaviours checked, "
          f"{len(summary['failed'])} failing)")
    return 1 if summary["failed"] or code == 1 else 0
