"""A gate that always reports (issue 55): whatever the tests raise and whatever blame produces, the run ends
with a complete ``summary.json``; a verdict on an ID the spec does not have is a harness error naming the ID
and the test, and the run exits 2, never with a traceback.

The transaction bug a broker team met (any end state but UNKNOW commits, so a rolled-back message is stored
and delivered) is served behind the driver protocol and judged by the unchanged suites: its summary is
complete and marks TX-02, and nothing unrelated, failing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from serving import ROOT

from reports.summary import RunSummary, TestResult
from spec.loader import default_spec

BAD_ID_TEST = '''
import pytest
from suites.checks import SpecViolation


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("TX-02")
def test_blamed_on_one_character(target):
    raise SpecViolation(tuple("TX-02"), "a single ID split into characters")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("TOPIC-01")
def test_fine(target):
    pass
'''


def test_a_verdict_on_an_unknown_id_is_kept_as_a_harness_error_and_the_rest_summarised(tmp_path: Path) -> None:
    results = {"TX-02": [TestResult("t::a", "fail", "boom")], "-": [TestResult("t::b", "fail", "split")],
               "NOPE-99": [TestResult("t::c", "pass")], "TOPIC-01": [TestResult("t::d", "pass")]}
    summary = RunSummary.build(results, default_spec(), run_id="r", target="reference", version=None,
                               profiles=["remoting-4.x"], elapsed_s=1.0, timing={})
    assert summary.failed == ["TX-02"] and set(summary.behaviours) == {"TX-02", "TOPIC-01"}
    harness = {(e["spec_id"], e["test"]) for e in summary.harness or []}
    assert harness == {("-", "t::b"), ("NOPE-99", "t::c")}
    assert any("malformed spec ID, '-'" in e["reason"] for e in summary.harness or [])
    summary.write(tmp_path / "summary.json")  # valid against the schema, and read back whole
    again = RunSummary.read(tmp_path / "summary.json")
    assert again.harness == summary.harness
    assert any(line.startswith("HARNESS ERROR -: t::b") for line in again.lines())


def test_a_run_whose_blame_names_no_behaviour_writes_its_summary_and_exits_2(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=BAD_ID_TEST)
    out = pytester.path / "run"
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rmq-target", "reference",
                                         "--rmq-profile", "remoting-4.x", "--rmq-out", str(out))
    text = done.stdout.str() + done.stderr.str()
    assert done.ret == 2, text[-3000:]
    assert "Traceback" not in text and "KeyError" not in text, text[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["behaviours"]["TOPIC-01"]["verdict"] == "pass"
    assert summary["behaviours"]["TX-02"]["verdict"] == "inconclusive"  # stopped at a failure of other IDs
    bad = sorted(e["spec_id"] for e in summary["harness"])
    assert bad == sorted(set("TX-02")) and all("test_blamed_on_one_character" in e["test"] for e in summary["harness"])
    assert "HARNESS ERROR -:" in text


TX_SELECTION = "transaction or programs_tell_the_reference_story"
"""The transaction suite and the differential suite's generated programs (which send transactions and roll some
back): every test the rollback bug can show in."""


def test_a_rolled_back_transaction_delivered_marks_tx02_and_nothing_unrelated(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target",
                           "driver:python tests/drivers/patched_reference_driver.py rollback-commits",
                           "-k", TX_SELECTION, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    summary = RunSummary.read(out / "summary.json")  # complete: it validates against the schema
    assert not summary.harness, summary.harness
    assert summary.failed == ["TX-02"], {sid: summary.behaviours[sid].first_failure() for sid in summary.failed}
    reasons = " ".join(t.reason for t in summary.behaviours["TX-02"].tests if t.verdict == "fail")
    assert "TX-02" in reasons, reasons
    assert sum(c["pass"] for c in summary.areas.values()) >= 5
