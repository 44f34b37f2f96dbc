"""The official Node.js 5.x SDK runs the grpc-5.x suites against ``rmqc serve`` (``--target nodejs://``), every
line its driver writes checked against the driver-protocol schema, and ``rmqc report`` over that run and the
Python SDK's run against the same server renders the SDK × server matrix: one column per SDK, the behaviours
where they disagree first (checked in headless Chromium)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from nodejs import require_node_sdk
from sdk_runs import assert_no_failure, schema_checked_lines, verdicts_of
from serving import ROOT, start_serve, stop_serve
from test_reports import CHROMIUM_FLAGS, chromium

from history.outcomes import NotApplicable

MUST_PASS = ("RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-09", "RETRY-5X-10", "FIFO-05", "TX-02", "TX-03", "TX-04",
             "FILTER-01", "DELAY-08", "SDK-NODE-01", "SDK-NODE-05", "SDK-NODE-06")
"""Behaviours the Node.js SDK runs end to end through rmqc serve; they pass, not only 'not failed'."""


def _run(target: str, out: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", target, "--profile", "grpc-5.x",
                           "--budget", "20", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "RMQC_REALTIME_EXAMPLES": "2", **extra_env})


@pytest.fixture(scope="module")
def sdk_runs(tmp_path_factory) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """One rmqc serve; the suites through the Node.js SDK (schema checks on), then through the Python SDK."""
    try:
        require_node_sdk()
    except NotApplicable as exc:
        pytest.skip(f"not applicable: {exc}")
    base = tmp_path_factory.mktemp("sdk-runs")
    process, address = start_serve(0.01)
    try:
        node = _run(f"nodejs://{address}", base / "nodejs", {"RMQC_DRIVER_VALIDATE": "1"})
        python = _run(f"grpc://{address}", base / "python", {})
    finally:
        stop_serve(process)
    return {"nodejs": (base / "nodejs", node), "python": (base / "python", python)}


@pytest.mark.spec("SDK-NODE-01", "SDK-NODE-05", "SDK-NODE-06", "RETRY-5X-06", "TX-03")
def test_the_grpc_suites_pass_through_the_nodejs_sdk(sdk_runs) -> None:
    folder, run = sdk_runs["nodejs"]
    summary, verdicts = verdicts_of(folder, "grpc-5.x verdicts through rocketmq-client-nodejs")
    assert_no_failure(summary, run)
    assert summary["sdk"] == {"name": "rocketmq-client-nodejs", "version": "1.0.8"}
    assert all(verdicts.get(sid) == "pass" for sid in MUST_PASS), {sid: verdicts.get(sid) for sid in MUST_PASS}
    checked = schema_checked_lines(run, "node")
    assert checked > 1000, run.stderr[-2000:]


def test_report_renders_one_column_per_sdk_with_disagreements_first(sdk_runs, tmp_path) -> None:
    (node, _), (python, run) = sdk_runs["nodejs"], sdk_runs["python"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    out = tmp_path / "report"
    made = subprocess.run([sys.executable, "-m", "rmqc.cli", "report", str(python), str(node), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert made.returncode == 0, made.stderr
    matrix = json.loads((out / "matrix.json").read_text())
    assert [r["sdk"] for r in matrix["runs"]] == ["rocketmq-python-client 5.1.2", "rocketmq-client-nodejs 1.0.8"]
    disagree = matrix["disagreements"]
    assert "SDK-NODE-01" in disagree and "TX-07" not in disagree  # a Node habit; both pass TX-07's test
    print(f"SDKs disagree on {len(disagree)} behaviours: {' '.join(disagree)}")

    browser = chromium()
    dom = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          (out / "matrix.html").resolve().as_uri()], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    table = dom[dom.index('<table class="matrix">'):]
    heads = re.findall(r'<th class="sdk"[^>]*>([^<]+)<br>', table)
    assert heads == ["rocketmq-python-client 5.1.2", "rocketmq-client-nodejs 1.0.8"], heads
    rows = re.findall(r'<tr class="behaviour( disagree)?" id="row-([^"]+)"', table)
    assert len(rows) == len(matrix["behaviours"])
    flags = [bool(flag) for flag, _ in rows]
    assert flags == sorted(flags, reverse=True), "every disagreement row comes before the agreeing ones"
    assert [bid for flag, bid in rows if flag] == disagree
