"""``rmqc expectations update RUN_DIR`` and ``rmqc expectations check FILE``: keep a target's
expectation file in step with its runs."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adapters.base import TargetError
from adapters.targets import parse_target
from reports.expectations import load_expectations, render, updated_entries
from reports.summary import RunSummary, SummaryError
from spec.loader import SpecError, default_spec


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("expectations", help="write or check a target's expectation file")
    verbs = parser.add_subparsers(dest="verb", required=True)
    update = verbs.add_parser("update", help="write the expectation file from a run: failures added, stale entries "
                                             "(behaviours that pass now) removed, the rest kept")
    update.add_argument("run_dir", help="a run folder (with summary.json)")
    update.add_argument("--file", default=None,
                        help="the expectation file (default: the run's --expectations file, else "
                             "expectations/<target kind>.yaml)")
    update.add_argument("--target-name", default=None, help="the file's target: line (default: the run's target)")
    update.set_defaults(handler=update_command)
    check = verbs.add_parser("check", help="check an expectation file (IDs, statuses, conditions)")
    check.add_argument("file")
    check.set_defaults(handler=check_command)


def _default_file(summary: RunSummary) -> Path:
    gate = summary.gate
    if gate and gate.get("expectations", "").endswith(".yaml"):
        return Path(gate["expectations"])
    try:
        kind = parse_target(summary.target).kind.name
    except TargetError:
        kind = "target"
    return Path("expectations") / f"{kind}.yaml"


def update_command(args: argparse.Namespace) -> int:
    summary_path = Path(args.run_dir) / "summary.json"
    try:
        summary = RunSummary.read(summary_path)
    except SummaryError as exc:
        print(f"rmqc expectations: error: {exc}", file=sys.stderr)
        return 2
    path = Path(args.file) if args.file else _default_file(summary)
    existing = None
    if path.exists():
        try:
            existing = load_expectations(path, default_spec())
        except SpecError as exc:
            print(f"rmqc expectations: error: {exc}", file=sys.stderr)
            return 2
    entries, changes = updated_entries(summary, existing)
    target = args.target_name or (existing.target if existing else summary.target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(target, entries))
    for line in changes:
        print(f"  {line}")
    print(f"wrote {path}: {len(entries)} expectations ({len(changes)} changed) from run {summary.run_id}")
    return 0


def check_command(args: argparse.Namespace) -> int:
    try:
        loaded = load_expectations(Path(args.file), default_spec())
    except SpecError as exc:
        print(f"rmqc expectations: error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.file}: {len(loaded.entries)} expectations for {loaded.target}, all well-formed")
    return 0
