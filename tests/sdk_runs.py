"""What the tests of an SDK's run of the suites read from it: the verdicts (printed by verdict, for the log), the
failing behaviours with their first reason, and how many driver-protocol lines the schema check saw."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path


def verdicts_of(folder: Path, title: str) -> tuple[dict, dict[str, str]]:
    """The run's summary and its verdict per behaviour, printed by verdict under ``title``."""
    summary = json.loads((Path(folder) / "summary.json").read_text())
    verdicts = {sid: b["verdict"] for sid, b in summary["behaviours"].items()}
    print(f"{title}:")
    for verdict in sorted(set(verdicts.values())):
        ids = sorted(sid for sid, v in verdicts.items() if v == verdict)
        print(f"  {verdict} ({len(ids)}): {' '.join(ids)}")
    return summary, verdicts


def assert_no_failure(summary: dict, run: subprocess.CompletedProcess[str]) -> None:
    """No behaviour failed (each failure shown with its first reason) and the run exited 0."""
    failed = {sid: [t["reason"] for t in b.get("tests", []) if t.get("verdict") == "fail"][:1]
              for sid, b in summary["behaviours"].items() if b["verdict"] == "fail"}
    assert not failed, f"{failed}\n{run.stdout[-3000:]}{run.stderr[-2000:]}"
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def schema_checked_lines(run: subprocess.CompletedProcess[str], driver: str) -> int:
    """The protocol lines ``RMQC_DRIVER_VALIDATE=1`` checked against the schema for a driver whose command names
    ``driver``: every line both ways goes through it, and a line off the protocol fails its test."""
    pattern = re.compile(rf"rmqc: driver protocol: (\d+) lines checked against the schema with driver:\S*{driver}\S* ")
    checked = sum(int(n) for n in pattern.findall(run.stderr))
    print(f"driver-protocol lines checked against the schema: {checked}")
    return checked
