"""The HTML page of a ``rmqc check`` run: verdicts, counts, counterexamples and retry-interval plots
(per attempt, a histogram of the observed waits against the documented wait and the timing model's
window, with labelled axes), self-contained SVG, works offline. What could not be read is shown first
(issue 55): the input errors, the damaged parts set aside, why a check is inconclusive."""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

COLORS = {"pass": "#1a7f37", "fail": "#cf222e", "inconclusive": "#9a6700"}


def _nominals(p: dict[str, Any]) -> list[float]:
    expected = p["expected_ms"]
    return [float(v) for v in (expected if isinstance(expected, list) else [expected])]


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values between ``lo`` and ``hi``."""
    span = max(1e-9, hi - lo)
    step = 10 ** math.floor(math.log10(span / count))
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= count:
            step *= factor
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _svg_attempt(p: dict[str, Any], width: int = 360, height: int = 220) -> str:
    """One attempt's waits: a histogram of the observed intervals, the model's window shaded, the
    documented (nominal) wait as a dashed line; x axis the wait in ms, y axis the redeliveries per bin."""
    hist = p["histogram"]
    counts, lo, hi = hist["counts"], float(hist["from_ms"]), float(hist["to_ms"])
    if hi <= lo:
        hi = lo + 1
    left, right, top, bottom = 52, 12, 26, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(counts or [1]) or 1

    def x(ms: float) -> float:
        return left + (ms - lo) / (hi - lo) * plot_w

    def y(n: float) -> float:
        return top + plot_h - n / peak * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="attempt-plot" width="{width}" height="{height}" '
             f'role="img" aria-label="attempt {p["attempt"]}: observed waits against the documented wait">',
             f'<text x="{width / 2}" y="16" font-size="12" text-anchor="middle" font-weight="bold">attempt {p["attempt"]}'
             f' ({p["count"]} redeliveries)</text>']
    w_lo, w_hi = (float(v) for v in p["window_ms"])
    parts.append(f'<rect class="window" x="{x(max(lo, w_lo)):.1f}" y="{top}" width="{max(0.0, x(min(hi, w_hi)) - x(max(lo, w_lo))):.1f}" '
                 f'height="{plot_h}" fill="#dafbe1"><title>model window {w_lo:g}–{w_hi:g} ms</title></rect>')
    bar_w = plot_w / max(1, len(counts))
    for i, n in enumerate(counts):
        if n:
            parts.append(f'<rect class="bar" x="{left + i * bar_w:.1f}" y="{y(n):.1f}" width="{max(1.0, bar_w - 1):.1f}" '
                         f'height="{top + plot_h - y(n):.1f}" fill="#0969da"><title>{n}</title></rect>')
    for nominal in _nominals(p):
        if lo <= nominal <= hi:
            parts.append(f'<line class="documented" x1="{x(nominal):.1f}" y1="{top}" x2="{x(nominal):.1f}" '
                         f'y2="{top + plot_h}" stroke="#cf222e" stroke-dasharray="4 3" stroke-width="2">'
                         f'<title>documented wait {nominal:g} ms</title></line>')
    # axes, ticks and their labels
    parts.append(f'<line class="x-axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>')
    parts.append(f'<line class="y-axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333"/>')
    for tick in _ticks(lo, hi):
        parts.append(f'<line x1="{x(tick):.1f}" y1="{top + plot_h}" x2="{x(tick):.1f}" y2="{top + plot_h + 4}" stroke="#333"/>'
                     f'<text x="{x(tick):.1f}" y="{top + plot_h + 15}" font-size="9" text-anchor="middle">{tick:g}</text>')
    for tick in _ticks(0, peak, 4):
        parts.append(f'<line x1="{left - 4}" y1="{y(tick):.1f}" x2="{left}" y2="{y(tick):.1f}" stroke="#333"/>'
                     f'<text x="{left - 6}" y="{y(tick) + 3:.1f}" font-size="9" text-anchor="end">{tick:g}</text>')
    parts.append(f'<text class="x-label" x="{left + plot_w / 2}" y="{height - 8}" font-size="10" text-anchor="middle">'
                 f'wait before this delivery (ms)</text>')
    parts.append(f'<text class="y-label" x="12" y="{top + plot_h / 2}" font-size="10" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + plot_h / 2})">redeliveries</text></svg>')
    return "".join(parts)


def _svg_intervals(per_attempt: list[dict[str, Any]]) -> str:
    if not per_attempt:
        return "<p>No redeliveries in this log.</p>"
    legend = ('<p class="legend"><span style="color:#0969da">&#9632;</span> observed waits &nbsp; '
              '<span style="color:#1a7f37">&#9632;</span> model window (pass) &nbsp; '
              '<span style="color:#cf222e">- -</span> documented wait</p>')
    return legend + '<div class="plots">' + "".join(_svg_attempt(p) for p in per_attempt if p.get("histogram")) + "</div>"


def _rows(result: dict[str, Any]) -> str:
    if result.get("rows") is None:
        return "not checked"
    return f'{result["rows"]} rows, {result["quarantined"]} quarantined'


def _damage(result: dict[str, Any]) -> str:
    """What could not be read (issue 55): the input errors, and the parts set aside with their errors."""
    out = [f'<p class="input-error" style="color:{COLORS["fail"]}"><b>Not checked:</b> {html.escape(e["error"])}</p>'
           for e in result.get("input_errors", [])]
    damaged = result.get("damaged_parts", [])
    if damaged:
        body = "".join(f'<tr><td>{html.escape(d["path"])}</td><td>{d["bytes"]}</td><td>{d["rows"]}</td>'
                       f'<td>{html.escape(d["error"])}</td></tr>' for d in damaged)
        out.append(f'<h2>Damaged parts set aside: {len(damaged)}</h2><table class="damaged"><tr><th>part</th>'
                   f'<th>bytes</th><th>rows (footer)</th><th>error</th></tr>{body}</table>')
    if result.get("naming_error"):
        out.append(f'<p>Counterexamples not named: {html.escape(result["naming_error"])}</p>')
    return "".join(out)


def write_html(result: dict[str, Any], path: Path) -> None:
    rows = []
    for c in result["checks"]:
        counts = ", ".join(f"{k}={v}" for k, v in c["counts"].items())
        why = c["detail"].get("inconclusive") or c["detail"].get("damage")
        rows.append(f'<tr><td>{html.escape(c["name"])}</td><td style="color:{COLORS.get(c["verdict"], "#000")}">'
                    f'<b>{c["verdict"]}</b>{f"<br><small>{html.escape(why)}</small>" if why else ""}</td>'
                    f'<td>{html.escape(counts)}</td><td>{", ".join(c["spec"])}</td></tr>')
    examples = []
    for c in result["checks"]:
        if c["counterexamples"]:
            head = list(c["counterexamples"][0])
            body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(h)))}</td>" for h in head) + "</tr>"
                           for r in c["counterexamples"])
            examples.append(f'<h3>{html.escape(c["name"])}: first {len(c["counterexamples"])} counterexamples</h3>'
                            f'<table><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{body}</table>')
    intervals = next((c for c in result["checks"] if c["name"] == "retry_intervals"), None)
    per_attempt = intervals["detail"].get("per_attempt", []) if intervals else []
    table = "".join(f'<tr><td>{p["attempt"]}</td><td>{p["count"]}</td><td>{p["expected_ms"]}</td>'
                    f'<td>{p["window_ms"][0]:g}–{p["window_ms"][1]:g}</td><td>{p["p50_ms"]}</td><td>{p["p90_ms"]}</td>'
                    f'<td>{p["p99_ms"]}</td><td>{p["ks"]}</td><td>{p["noisy"]}</td><td>{p["outside"]}</td></tr>'
                    for p in per_attempt)
    model = intervals["detail"].get("model", {}) if intervals else {}
    stated = "".join(f'<li><b>{html.escape(m["name"])}</b> ({html.escape(m["applies_to"])}): earliest = '
                     f'{html.escape(m["earliest"])}; latest = {html.escape(m["latest"])}</li>'
                     for m in (model.get("standard"), model.get("fifo")) if m)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>rmqc check</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px}}</style>
</head><body><h1>rmqc check: {"passed" if result["passed"] else "FAILED"}</h1>
<p>{html.escape(result["input"])} &middot; profile {result["profile"]} &middot; {_rows(result)}</p>
{_damage(result)}<table><tr><th>check</th><th>verdict</th><th>counts</th><th>spec</th></tr>{"".join(rows)}</table>
<h2>Retry intervals</h2>
<p>Timing model ({html.escape(model.get("file", "spec/timing_model.yaml"))}): a wait inside its window passes; outside by at
most the noise band ({html.escape(model.get("noise_band", ""))}) is inconclusive; farther fails.</p><ul>{stated}</ul>
{_svg_intervals(per_attempt)}
<table><tr><th>attempt</th><th>count</th><th>documented ms</th><th>window ms</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th>
<th>KS (window)</th><th>in noise band</th><th>outside</th></tr>{table}</table>
{"".join(examples)}</body></html>"""
    path.write_text(page)
