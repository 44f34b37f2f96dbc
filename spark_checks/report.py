"""The HTML page of a ``rmqc check`` run: verdicts, counts, counterexamples and retry-interval plots
(observed p50 / p99 against the documented wait), self-contained SVG, works offline."""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

COLORS = {"pass": "#1a7f37", "fail": "#cf222e", "inconclusive": "#9a6700"}


def _svg_intervals(per_attempt: list[dict[str, Any]]) -> str:
    if not per_attempt:
        return "<p>No redeliveries in this log.</p>"
    width, height, pad = 760, 280, 50
    values = [max(1, p[k] or 1) for p in per_attempt for k in ("expected_ms", "p50_ms", "p99_ms")]
    lo, hi = math.log10(min(values)), math.log10(max(values)) + 0.1
    step = (width - 2 * pad) / max(1, len(per_attempt))

    def y(ms: float) -> float:
        return height - pad - (math.log10(max(1, ms)) - lo) / max(1e-9, hi - lo) * (height - 2 * pad)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="retry intervals per attempt">',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#888"/>']
    for i, p in enumerate(per_attempt):
        x = pad + step * (i + 0.5)
        parts.append(f'<rect x="{x - step * 0.3:.1f}" y="{y(p["expected_ms"]):.1f}" width="{step * 0.6:.1f}" '
                     f'height="{height - pad - y(p["expected_ms"]):.1f}" fill="#d0d7de"><title>attempt {p["attempt"]}: '
                     f'documented {p["expected_ms"]} ms</title></rect>')
        parts.append(f'<circle cx="{x:.1f}" cy="{y(p["p50_ms"]):.1f}" r="4" fill="#0969da"><title>p50 {p["p50_ms"]} ms'
                     f'</title></circle>')
        parts.append(f'<circle cx="{x:.1f}" cy="{y(p["p99_ms"]):.1f}" r="3" fill="none" stroke="#cf222e"><title>p99 '
                     f'{p["p99_ms"]} ms</title></circle>')
        parts.append(f'<text x="{x:.1f}" y="{height - pad + 15}" font-size="10" text-anchor="middle">{p["attempt"]}</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 10}" font-size="11" text-anchor="middle">delivery attempt '
                 f'(bar: documented wait, dot: observed p50, ring: p99; log scale)</text></svg>')
    return "".join(parts)


def write_html(result: dict[str, Any], path: Path) -> None:
    rows = []
    for c in result["checks"]:
        counts = ", ".join(f"{k}={v}" for k, v in c["counts"].items())
        rows.append(f'<tr><td>{html.escape(c["name"])}</td><td style="color:{COLORS.get(c["verdict"], "#000")}">'
                    f'<b>{c["verdict"]}</b></td><td>{html.escape(counts)}</td><td>{", ".join(c["spec"])}</td></tr>')
    examples = []
    for c in result["checks"]:
        if c["counterexamples"]:
            head = list(c["counterexamples"][0])
            body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(h)))}</td>" for h in head) + "</tr>"
                           for r in c["counterexamples"])
            examples.append(f'<h3>{html.escape(c["name"])}: first {len(c["counterexamples"])} counterexamples</h3>'
                            f'<table><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{body}</table>')
    intervals = next((c for c in result["checks"] if c["name"] == "retry_intervals"), None)
    per_attempt = intervals["detail"]["per_attempt"] if intervals else []
    table = "".join(f'<tr><td>{p["attempt"]}</td><td>{p["count"]}</td><td>{p["expected_ms"]}</td><td>{p["p50_ms"]}</td>'
                    f'<td>{p["p99_ms"]}</td><td>{p["ks"]}</td><td>{p["outside"]}</td></tr>' for p in per_attempt)
    tol = intervals["detail"]["tolerance"] if intervals else {}
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>rmqc check</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px}}</style>
</head><body><h1>rmqc check: {"passed" if result["passed"] else "FAILED"}</h1>
<p>{html.escape(result["input"])} &middot; profile {result["profile"]} &middot; {result["rows"]} rows, {result["quarantined"]} quarantined</p>
<table><tr><th>check</th><th>verdict</th><th>counts</th><th>spec</th></tr>{"".join(rows)}</table>
<h2>Retry intervals (tolerance {tol.get("absolute_ms")} ms + {tol.get("relative")} &times; documented)</h2>
{_svg_intervals(per_attempt)}
<table><tr><th>attempt</th><th>count</th><th>documented ms</th><th>p50 ms</th><th>p99 ms</th><th>KS</th><th>outside</th></tr>{table}</table>
{"".join(examples)}</body></html>"""
    path.write_text(page)
