"""The conformance matrix as one self-contained HTML page (inline CSS and script, no network)."""
from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from .matrix import CELL_STATES, Cell, Matrix, diff, disagreement

CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#1d232a}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
table{border-collapse:collapse}td,th{border:1px solid #d0d5db;padding:3px 7px;vertical-align:top}
th{background:#f2f4f6;text-align:left}tr.area th{background:#e4e8ec;font-size:15px}
td.cell{text-align:center;white-space:nowrap}td.cell a{color:inherit;text-decoration:none;display:block}
.s-pass{background:#d9f2dd}.s-fail{background:#f8d0cf;font-weight:600}.s-inconclusive{background:#fdf0c4}
.s-not-applicable{background:#eef0f2;color:#66707a}.s-expected-failure{background:#f6e2c8}
.s-not-tested{background:#fff;color:#98a1aa}.stale{outline:2px dashed #c33}
.muted{color:#66707a}pre{white-space:pre-wrap;background:#f6f7f8;padding:6px;max-height:320px;overflow:auto;font-size:12px}
details{margin:6px 0;border:1px solid #d0d5db;padding:4px 8px}summary{cursor:pointer;font-weight:600}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #d0d5db}
.controls{margin:8px 0}
"""

SCRIPT = """
function onlyProblems(box){
  document.querySelectorAll('tr.behaviour').forEach(function(row){
    var bad = row.querySelector('.s-fail,.s-inconclusive,.s-expected-failure,.stale');
    row.style.display = (box.checked && !bad) ? 'none' : '';
  });
}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cls(state: str) -> str:
    return "s-" + state.replace(" ", "-")


def _anchor(run_index: int, bid: str) -> str:
    return f"ev-{run_index}-{bid}"


def _runs_table(matrix: Matrix, out_dir: Path) -> str:
    rows = []
    for i, run in enumerate(matrix.runs):
        s = run.summary
        timing = s.get("timing") or {}
        clock = (f"wall, scale {timing['time_scale']:g}, ±{timing['tolerance_absolute_ms']} ms + "
                 f"{timing['tolerance_relative']:.0%}" if timing.get("clock") == "wall" else timing.get("clock", "virtual"))
        gate = s.get("gate")
        gate_cell = "—" if gate is None else ("pass" if gate["passed"] else "FAIL") + f" ({_e(gate['expectations'])})"
        folder = os.path.relpath(run.folder, out_dir)
        links = " ".join(f'<a href="{_e(folder)}/{name}">{name}</a>' for name in ("summary.json", "events.parquet")
                         if (run.folder / name).exists())
        rows.append(f"<tr><td>{i + 1}</td><td>{_e(s.get('target'))}</td><td>{_e(s.get('version') or '—')}</td>"
                    f"<td>{_e(run.sdk or '—')}</td>"
                    f"<td>{_e(', '.join(s.get('profiles', [])))}</td><td>{_e(s.get('run_id'))}</td>"
                    f"<td>{_e(clock)}</td><td>{gate_cell}</td><td>{links}</td></tr>")
    return ("<table><tr><th>#</th><th>target</th><th>version</th><th>SDK</th><th>profiles</th><th>run</th>"
            "<th>clock</th><th>gate</th><th>files</th></tr>" + "".join(rows) + "</table>")


def _totals_table(matrix: Matrix) -> str:
    head = "".join(f"<th>{_e(state)}</th>" for state in CELL_STATES)
    rows = []
    for area, per_run in sorted(matrix.totals().items()):
        for i, counts in enumerate(per_run):
            rows.append(f"<tr class=\"total\"><td>{_e(area)}</td><td>{i + 1}</td>" + "".join(
                f"<td class=\"{_cls(s) if counts[s] else ''}\">{counts[s]}</td>" for s in CELL_STATES) + "</tr>")
    return f"<table><tr><th>area</th><th>run</th>{head}</tr>{''.join(rows)}</table>"


def _diff_section(matrix: Matrix) -> str:
    parts = []
    for i in range(len(matrix.runs) - 1):
        changes = diff(matrix, i, i + 1)
        title = f"run {i + 1} → run {i + 2}: {len(changes)} behaviours changed"
        if not changes:
            parts.append(f"<p>{_e(title)}.</p>")
            continue
        rows = "".join(f"<tr><td>{_e(c.kind)}</td><td><a href=\"#row-{_e(c.id)}\">{_e(c.id)}</a></td>"
                       f"<td class=\"{_cls(c.before)}\">{_e(c.before)}</td><td class=\"{_cls(c.after)}\">"
                       f"{_e(c.after)}</td></tr>" for c in changes)
        parts.append(f"<p>{_e(title)}</p><table class=\"diff\"><tr><th>change</th><th>behaviour</th>"
                     f"<th>before</th><th>after</th></tr>{rows}</table>")
    return "".join(parts) or "<p class=\"muted\">One run: nothing to compare.</p>"


def _column_head(matrix: Matrix, i: int) -> str:
    run = matrix.runs[i]
    if matrix.by_sdk:  # the SDK × server matrix: a column is an SDK, its server under it
        return (f"<th class=\"sdk\" title=\"{_e(run.label)}\">{_e(run.sdk)}<br><span class=\"muted\">"
                f"{_e(run.summary.get('target'))} {_e(run.summary.get('version') or '')}</span></th>")
    return f"<th title=\"{_e(run.label)}\">run {i + 1}</th>"


def _matrix_table(matrix: Matrix) -> str:
    head = "".join(_column_head(matrix, i) for i in range(len(matrix.runs)))
    rows, area, section = [], None, None
    width = 2 + len(matrix.runs)
    for behaviour, cells in matrix.ordered_rows():
        level = disagreement(cells) if matrix.by_sdk else 2
        if matrix.by_sdk:
            if level != section:
                section = level
                rows.append(f"<tr class=\"area\"><th colspan=\"{width}\">{_e(DISAGREEMENT_TITLES[level])}</th></tr>")
        elif behaviour.area != area:
            area = behaviour.area
            rows.append(f"<tr class=\"area\"><th colspan=\"{width}\">{_e(area)} — "
                        f"{_e(matrix.areas.get(area, ''))}</th></tr>")
        tds = []
        for i, cell in enumerate(cells):
            stale = " stale" if cell.stale else ""
            text = cell.state + (" (stale expectation)" if cell.stale else "")
            body = f"<a href=\"#{_anchor(i, behaviour.id)}\">{_e(text)}</a>" if cell.tests or cell.spark else _e(text)
            tds.append(f"<td class=\"cell {_cls(cell.state)}{stale}\">{body}</td>")
        kind = " disagree" if level < 2 else ""
        rows.append(f"<tr class=\"behaviour{kind}\" id=\"row-{_e(behaviour.id)}\"><td><b>{_e(behaviour.id)}</b></td>"
                    f"<td>{_e(behaviour.title)}</td>{''.join(tds)}</tr>")
    return f"<table class=\"matrix\"><tr><th>ID</th><th>behaviour</th>{head}</tr>{''.join(rows)}</table>"


DISAGREEMENT_TITLES = {0: "SDKs disagree: one passes what another fails or cannot decide",
                       1: "SDKs differ: one ran what another could not", 2: "SDKs agree"}


def _trace_table(trace: list[dict[str, Any]]) -> str:
    if not trace:
        return ""
    cols = list(trace[0])
    rows = "".join("<tr>" + "".join(f"<td>{_e('' if r[c] is None else r[c])}</td>" for c in cols) + "</tr>"
                   for r in trace)
    return (f"<p>the failing test's trace (first {len(trace)} events):</p><table><tr>"
            + "".join(f"<th>{_e(c)}</th>" for c in cols) + f"</tr>{rows}</table>")


def _spark_block(checks: list[dict[str, Any]], run_folder: str) -> str:
    parts = []
    for c in checks:
        examples = c.get("counterexamples") or []
        table = ""
        if examples:
            cols = list(examples[0])
            table = "<table><tr>" + "".join(f"<th>{_e(k)}</th>" for k in cols) + "</tr>" + "".join(
                "<tr>" + "".join(f"<td>{_e(row.get(k))}</td>" for k in cols) + "</tr>" for row in examples) + "</table>"
        parts.append(f"<p>Spark check <b>{_e(c['name'])}</b> over <a href=\"{_e(run_folder)}/spark-{_e(c['log'])}/"
                     f"index.html\">{_e(c['log'])}</a>: <span class=\"{_cls(c['verdict'])}\">{_e(c['verdict'])}</span>"
                     f" {_e(c.get('counts', {}))}</p>{table}")
    return "".join(parts)


def _evidence(matrix: Matrix, out_dir: Path) -> str:
    blocks = []
    for behaviour, cells in matrix.rows:
        for i, cell in enumerate(cells):
            if not cell.tests and not cell.spark:
                continue
            blocks.append(_evidence_block(behaviour, i, cell, os.path.relpath(matrix.runs[i].folder, out_dir)))
    return "".join(blocks)


def _evidence_block(behaviour: Any, run_index: int, cell: Cell, run_folder: str) -> str:
    tests = "".join(
        f"<li><span class=\"{_cls(t['verdict'])}\">{_e(t['verdict'])}</span> <code>{_e(t['test'])}</code>"
        + (f" — {_e(t['reason'])}" if t.get("reason") else "")
        + (f"<pre>{_e(t['detail'])}</pre>" if t.get("detail") else "") + "</li>" for t in cell.tests)
    expectation = ""
    if cell.expectation:
        expectation = f"<p>expected to fail: {_e(cell.expectation['reason'])} ({_e(cell.expectation.get('where', ''))})</p>"
    if cell.stale:
        expectation += "<p><b>unexpected pass</b>: the expectation file says this fails; the entry is stale.</p>"
    return (f"<details id=\"{_anchor(run_index, behaviour.id)}\" {'open' if cell.state == 'fail' else ''}>"
            f"<summary>{_e(behaviour.id)} in run {run_index + 1}: {_e(cell.state)}</summary>"
            f"<p class=\"muted\">{_e(behaviour.statement)}</p>{expectation}<ul>{tests}</ul>"
            f"{_trace_table(cell.trace)}{_spark_block(cell.spark, run_folder)}</details>")


def render_html(matrix: Matrix, out_dir: Path) -> str:
    legend = "".join(f"<span class=\"{_cls(s)}\">{_e(s)}</span>" for s in CELL_STATES)
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>RocketMQ conformance matrix</title>"
        f"<style>{CSS}</style><script>{SCRIPT}</script></head><body>"
        f"<h1>{'SDK × server matrix' if matrix.by_sdk else 'RocketMQ conformance matrix'}</h1>"
        f"<p class=\"muted\">{len(matrix.rows)} behaviours × {len(matrix.runs)} "
        f"{'SDKs' if matrix.by_sdk else 'runs'}</p><h2>Runs</h2>{_runs_table(matrix, out_dir)}"
        f"<h2>What changed</h2>{_diff_section(matrix)}<h2>Totals per area</h2>{_totals_table(matrix)}"
        f"<h2>Matrix</h2><p class=\"legend\">{legend}</p><p class=\"controls\"><label><input type=\"checkbox\" "
        f"onchange=\"onlyProblems(this)\"> only rows with a failure, an inconclusive or expected failure, or a stale "
        f"expectation</label></p>{_matrix_table(matrix)}<h2>Evidence</h2>{_evidence(matrix, out_dir)}</body></html>")
