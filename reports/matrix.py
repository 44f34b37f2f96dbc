"""The conformance matrix: one row per spec behaviour, one column per run, and the run-to-run diff.

A run is a folder ``rmqc run`` wrote (``summary.json``, ``events.parquet``, ``spark-*/result.json``).
A cell holds the behaviour's verdict in that run -- pass, fail, inconclusive, not applicable,
expected failure (a failure the run's expectation file lists) or not tested -- and the evidence:
the tests with their reasons, the failing trace from the event log, the shrunk example Hypothesis
printed, and the Spark checks that cite the behaviour with their counterexamples.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec.loader import Spec

from .expectations import first_failing
from .summary import SummaryError, read_json

CELL_STATES = ("fail", "expected failure", "inconclusive", "pass", "not applicable", "not tested")
TRACE_EVENTS = 60
_RANK = {"fail": 0, "inconclusive": 1, "expected failure": 2, "not tested": 3, "not applicable": 4, "pass": 5}


class ReportInputError(ValueError):
    """A run folder cannot be read; the message names it and says why."""


@dataclass
class Run:
    """One run folder: its summary, where it is, and its Spark results."""

    folder: Path
    summary: dict[str, Any]
    spark: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        s = self.summary
        version = f" {s['version']}" if s.get("version") else ""
        return f"{s.get('target', '?')}{version} · {', '.join(s.get('profiles', []))} · {s.get('run_id', self.folder.name)}"

    @property
    def sdk(self) -> str | None:
        """The SDK the run drove, ``name version``, when its summary says (a column of the SDK × server matrix)."""
        sdk = self.summary.get("sdk")
        return f"{sdk['name']} {sdk.get('version') or ''}".strip() if sdk else None

    @property
    def expected(self) -> dict[str, dict[str, str]]:
        gate = self.summary.get("gate") or {}
        return {e["id"]: e for e in gate.get("expected_failures", []) + gate.get("intermittent", [])}

    @property
    def stale(self) -> dict[str, dict[str, str]]:
        return {e["id"]: e for e in (self.summary.get("gate") or {}).get("unexpected_passes", [])}


def load_run(folder: Path) -> Run:
    try:  # read through the typed record, so a summary that does not validate is one clear error
        summary = read_json(folder / "summary.json")
    except SummaryError as exc:
        raise ReportInputError(str(exc)) from None
    spark = {}
    for result in sorted(folder.glob("spark-*/result.json")):
        try:
            spark[result.parent.name.removeprefix("spark-")] = json.loads(result.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # the summary still carries the verdicts; only the counterexamples are lost
    return Run(folder, summary, spark)


@dataclass
class Cell:
    state: str
    tests: list[dict[str, Any]] = field(default_factory=list)
    expectation: dict[str, str] | None = None
    stale: bool = False
    trace: list[dict[str, Any]] = field(default_factory=list)
    spark: list[dict[str, Any]] = field(default_factory=list)


def cell_for(run: Run, bid: str, traces: dict[str, list[dict[str, Any]]]) -> Cell:
    b = run.summary["behaviours"].get(bid)
    spark = [dict(c, log=name) for name, result in run.spark.items() for c in result.get("checks", [])
             if bid in c.get("spec", ())]
    if b is None:
        return Cell("not tested", spark=spark)
    state = b["verdict"]
    expectation = run.expected.get(bid)
    if state == "fail" and expectation is not None:
        state = "expected failure"
    failing = first_failing(b["tests"])
    trace = traces.get(failing["test"], []) if failing else []
    return Cell(state, b["tests"], expectation, bid in run.stale, trace, spark)


def failing_traces(run: Run) -> dict[str, list[dict[str, Any]]]:
    """The events each failing test left in the run's log (the first ``TRACE_EVENTS`` of each)."""
    failing = {t["test"] for b in run.summary["behaviours"].values() for t in b["tests"] if t["verdict"] == "fail"}
    path = run.folder / "events.parquet"
    if not failing or not path.exists():
        return {}
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    columns = ["ts_ms", "kind", "topic", "group", "msg_id", "key", "attempt", "queue_id", "detail"]
    table = pq.read_table(path, columns=columns)
    detail = table.column("detail").to_pylist()
    tests = [dict(d or []).get("test") for d in detail]
    out: dict[str, list[dict[str, Any]]] = {}
    keep = [i for i, t in enumerate(tests) if t in failing]
    if not keep:
        return {}
    rows = table.take(pc.cast(keep, "int64")).drop_columns(["detail"]).to_pylist()
    for i, row in zip(keep, rows):
        bucket = out.setdefault(tests[i], [])
        if len(bucket) < TRACE_EVENTS:
            bucket.append(row)
    return out


@dataclass
class Matrix:
    runs: list[Run]
    rows: list[tuple[Any, list[Cell]]]          # (Behaviour, one cell per run)
    areas: dict[str, str]

    @property
    def by_sdk(self) -> bool:
        """Runs of several SDKs (each run names its SDK, and they differ): the SDK × server matrix, one column
        per SDK, the behaviours where they disagree first (as wpt.fyi puts browsers side by side)."""
        labels = [r.sdk for r in self.runs]
        return len(self.runs) > 1 and None not in labels and len(set(labels)) > 1

    def ordered_rows(self) -> list[tuple[Any, list[Cell]]]:
        """The rows as the matrix shows them: by area and ID; for an SDK matrix, disagreements first."""
        if not self.by_sdk:
            return self.rows
        return sorted(self.rows, key=lambda row: disagreement(row[1]))

    def run_counts(self) -> list[dict[str, int]]:
        """Per run: how many behaviours are in each state (the per-area totals added up)."""
        totals = self.totals().values()
        return [{state: sum(per_run[i][state] for per_run in totals) for state in CELL_STATES}
                for i in range(len(self.runs))]

    def totals(self) -> dict[str, list[dict[str, int]]]:
        """Per area, per run: how many behaviours in each state."""
        out: dict[str, list[dict[str, int]]] = {}
        for behaviour, cells in self.rows:
            per_run = out.setdefault(behaviour.area, [{s: 0 for s in CELL_STATES} for _ in self.runs])
            for counts, cell in zip(per_run, cells):
                counts[cell.state] += 1
        return out


TESTED = frozenset({"pass", "fail", "inconclusive", "expected failure"})


def disagreement(cells: list[Cell]) -> int:
    """How the columns of a row disagree: 0 one column passes what another fails or cannot decide, 1 their
    states differ otherwise (one ran it, another could not), 2 they agree."""
    states = {c.state for c in cells}
    if len(states) == 1:
        return 2
    return 0 if "pass" in states and states & (TESTED - {"pass"}) else 1


def build_matrix(runs: list[Run], spec: Spec) -> Matrix:
    traces = [failing_traces(run) for run in runs]
    by_area = spec.by_area()
    rows = []
    for area in sorted(by_area):
        for behaviour in sorted(by_area[area], key=lambda b: b.id):
            rows.append((behaviour, [cell_for(run, behaviour.id, t) for run, t in zip(runs, traces)]))
    return Matrix(runs, rows, dict(spec.areas))


@dataclass
class Change:
    id: str
    area: str
    before: str
    after: str

    @property
    def kind(self) -> str:
        if self.after == "fail":
            return "new failure"
        if self.after == "not tested":
            return "no longer tested"
        if self.before == "not tested":
            return "newly tested"
        if self.before == "fail" and self.after in ("pass", "expected failure"):
            return "fixed" if self.after == "pass" else "now expected"
        if self.after == "pass":
            return "new pass"
        return "changed"


DIFF_ORDER = ("new failure", "changed", "now expected", "fixed", "new pass", "newly tested", "no longer tested")


def diff(matrix: Matrix, before: int, after: int) -> list[Change]:
    """What changed from one run to another; new failures first, then by how much they matter."""
    changes = [Change(b.id, b.area, cells[before].state, cells[after].state) for b, cells in matrix.rows
               if cells[before].state != cells[after].state]
    return sorted(changes, key=lambda c: (DIFF_ORDER.index(c.kind), _RANK[c.after], c.id))


def matrix_json(matrix: Matrix) -> dict[str, Any]:
    """The machine-readable matrix: runs, one row per behaviour, totals, and the diffs between runs."""
    runs = [{"folder": str(r.folder), "run_id": r.summary.get("run_id"), "target": r.summary.get("target"),
             "version": r.summary.get("version"), "sdk": r.sdk, "profiles": r.summary.get("profiles", []),
             "timing": r.summary.get("timing"), "gate": (r.summary.get("gate") or {}).get("passed")}
            for r in matrix.runs]
    rows = [{"id": b.id, "area": b.area, "title": b.title,
             "cells": [{"state": c.state, "tests": len(c.tests), "stale_expectation": c.stale,
                        "reason": next((t["reason"] for t in c.tests if t["verdict"] == c.state.replace(
                            "expected failure", "fail")), "")} for c in cells]}
            for b, cells in matrix.rows]
    diffs = [{"from": matrix.runs[i].summary.get("run_id"), "to": matrix.runs[i + 1].summary.get("run_id"),
              "changes": [{"id": c.id, "area": c.area, "before": c.before, "after": c.after, "kind": c.kind}
                          for c in diff(matrix, i, i + 1)]}
             for i in range(len(matrix.runs) - 1)]
    out = {"runs": runs, "behaviours": rows, "totals": matrix.totals(), "diffs": diffs}
    if matrix.by_sdk:
        out["disagreements"] = [b.id for b, cells in matrix.ordered_rows() if disagreement(cells) < 2]
    return out
