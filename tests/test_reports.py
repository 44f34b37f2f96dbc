"""``rmqc report``: the matrix of runs against the reference and ``rmqc serve`` as HTML (rendered in
headless Chromium), JSON and JUnit XML, and the run-to-run diff with new failures first."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from serving import ROOT, start_serve, stop_serve

from reports.matrix import Run, build_matrix, diff
from spec.loader import default_spec

SUBSET = "scenarios or transaction"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def rmqc(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rmqc.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT), "RMQC_REALTIME_EXAMPLES": "2"})


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("not applicable: headless Chromium is not installed (make test installs Debian's chromium "
                    "where apt-get can; see the Makefile's browser step)")
    return found


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("runs")
    reference = rmqc("run", "--target", "reference", "--out", str(base / "reference"), "-k", SUBSET)
    assert reference.returncode == 0, reference.stdout[-2000:] + reference.stderr[-2000:]
    process, address = start_serve(0.001)
    try:
        served = rmqc("run", "--target", f"grpc://{address}", "--out", str(base / "serve"), "-k", SUBSET)
    finally:
        stop_serve(process)
    assert served.returncode == 0, served.stdout[-2000:] + served.stderr[-2000:]
    return base / "reference", base / "serve"


def test_report_over_reference_and_serve_runs_renders_in_chromium(two_runs, tmp_path):
    out = tmp_path / "report"
    made = rmqc("report", *map(str, two_runs), "--out", str(out))
    assert made.returncode == 0, made.stderr
    behaviours = default_spec().behaviours

    matrix = json.loads((out / "matrix.json").read_text())
    assert [r["target"] for r in matrix["runs"]][0] == "reference"
    assert matrix["runs"][1]["target"].startswith("grpc://127.0.0.1:")
    assert [row["id"] for row in matrix["behaviours"]] == sorted(behaviours, key=lambda b: (behaviours[b].area, b))
    assert {c["state"] for row in matrix["behaviours"] for c in row["cells"]} <= {
        "pass", "not applicable", "not tested", "inconclusive"}
    tx02 = next(row for row in matrix["behaviours"] if row["id"] == "TX-02")
    assert [c["state"] for c in tx02["cells"]] == ["pass", "pass"]  # through the SDK as on the reference

    suites_xml = ET.parse(out / "junit.xml").getroot()
    assert [int(s.get("tests")) for s in suites_xml] == [len(behaviours)] * 2
    assert all(int(s.get("failures")) == 0 for s in suites_xml)

    browser = chromium()
    shot = tmp_path / "matrix.png"
    page = (out / "matrix.html").resolve().as_uri()
    subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile-a'}", "--window-size=1400,2000",
                    f"--screenshot={shot}", page], capture_output=True, timeout=60, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    dom = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile-b'}", "--dump-dom", page],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert dom.count('<tr class="behaviour"') == len(behaviours), "the rendered matrix has one row per behaviour"
    assert "RocketMQ conformance matrix" in dom and "TX-02" in dom


def _run(folder: Path, verdicts: dict[str, str], gate: dict | None = None) -> Run:
    summary = {"run_id": folder.name, "target": "t", "profiles": ["grpc-5.x"],
               "behaviours": {b: {"area": b.rsplit("-", 1)[0], "verdict": v,
                                  "tests": [{"test": f"t::{b}", "verdict": v, "reason": f"why {b}"}]}
                              for b, v in verdicts.items()}}
    if gate:
        summary["gate"] = gate
    return Run(folder, summary)


def test_diff_lists_new_failures_first(tmp_path):
    before = _run(tmp_path / "a", {"TX-01": "pass", "TX-02": "fail", "TX-03": "pass", "FIFO-01": "pass"})
    after = _run(tmp_path / "b", {"TX-01": "fail", "TX-02": "pass", "TX-03": "not applicable", "FIFO-05": "pass"})
    changes = diff(build_matrix([before, after], default_spec()), 0, 1)
    assert [(c.id, c.kind) for c in changes] == [
        ("TX-01", "new failure"), ("TX-03", "changed"), ("TX-02", "fixed"), ("FIFO-05", "newly tested"),
        ("FIFO-01", "no longer tested")]


def test_expected_failures_and_stale_expectations_show_in_the_cells(tmp_path):
    gate = {"expectations": "e.yaml", "passed": False,
            "expected_failures": [{"id": "TX-01", "reason": "known", "verdict": "fail", "where": "e.yaml:3"}],
            "unexpected_passes": [{"id": "TX-02", "reason": "stale", "verdict": "pass", "where": "e.yaml:6"}],
            "unexpected_failures": [], "intermittent": [], "not_observed": []}
    run = _run(tmp_path / "a", {"TX-01": "fail", "TX-02": "pass"}, gate)
    cells = {b.id: c[0] for b, c in build_matrix([run], default_spec()).rows}
    assert cells["TX-01"].state == "expected failure" and cells["TX-01"].expectation["reason"] == "known"
    assert cells["TX-02"].state == "pass" and cells["TX-02"].stale
    assert cells["TX-03"].state == "not tested"


def test_a_folder_without_a_summary_is_a_clear_error(tmp_path):
    made = rmqc("report", str(tmp_path), "--out", str(tmp_path / "out"), timeout=60)
    assert made.returncode == 2
    assert f"{tmp_path}: not a run folder (no summary.json" in made.stderr


def test_a_failing_run_links_its_evidence(tmp_path):
    """A deliberately broken reference: the cell fails and its evidence holds the trace of the failing
    test, Hypothesis's shrunk example, and a JUnit <failure>."""
    (tmp_path / "breakrule.py").write_text("from reference_impl.rules import retry4x\n"
                                           "retry4x.retry_level_for = lambda reconsume_times: 2 + reconsume_times\n")
    run = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", "reference", "--out", str(tmp_path / "run"),
                          "-k", "concurrent_4x_retry_ladder", "--pytest-arg=-p", "--pytest-arg=breakrule"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])})
    assert run.returncode == 1, run.stdout[-2000:]
    made = rmqc("report", str(tmp_path / "run"), "--out", str(tmp_path / "report"), timeout=120)
    assert made.returncode == 0, made.stderr
    page = (tmp_path / "report" / "matrix.html").read_text()
    assert 'id="ev-0-RETRY-CONC-07"' in page and "the failing test's trace" in page
    assert "MessagePlan(key=" in page and "reproduce_failure" in page  # the shrunk example Hypothesis printed
    cases = {c.get("name").split()[0]: c for c in ET.parse(tmp_path / "report" / "junit.xml").getroot().iter("testcase")}
    assert cases["RETRY-CONC-07"].find("failure") is not None and cases["TX-02"].find("skipped") is not None
