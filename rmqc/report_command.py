"""``rmqc report RUN_DIR ... --out DIR``: the conformance matrix of one or more runs as HTML, JSON and
JUnit XML, with the run-to-run diff."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reports.html_report import render_html
from reports.junit import render_junit
from reports.matrix import ReportInputError, build_matrix, diff, load_run, matrix_json
from spec.loader import default_spec


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("report", help="conformance matrix of run folders: HTML, JSON, JUnit XML, and the diff")
    parser.add_argument("runs", nargs="+", help="run folders written by rmqc run (oldest first: the diff reads left to right)")
    parser.add_argument("--out", required=True, help="folder for matrix.html, matrix.json and junit.xml")
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    try:
        runs = [load_run(Path(folder)) for folder in args.runs]
    except ReportInputError as exc:
        print(f"rmqc report: error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    matrix = build_matrix(runs, default_spec())
    (out / "matrix.html").write_text(render_html(matrix, out), encoding="utf-8")
    (out / "matrix.json").write_text(json.dumps(matrix_json(matrix), indent=2, default=str))
    (out / "junit.xml").write_text(render_junit(matrix), encoding="utf-8")
    for i, (run, counts) in enumerate(zip(runs, matrix.run_counts())):
        print(f"run {i + 1}: {run.label}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    for i in range(len(runs) - 1):
        changes = diff(matrix, i, i + 1)
        print(f"run {i + 1} -> run {i + 2}: {len(changes)} changed" + "".join(
            f"\n  {c.kind}: {c.id} {c.before} -> {c.after}" for c in changes[:20])
              + (f"\n  ... {len(changes) - 20} more in matrix.html" if len(changes) > 20 else ""))
    print(f"wrote {out / 'matrix.html'}, {out / 'matrix.json'}, {out / 'junit.xml'} ({len(matrix.rows)} behaviours)")
    return 0
