"""Expectation files and the gate: known failures pass it, unexpected failures and unexpected passes fail it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports.expectations import (
    Expectation,
    ExpectationFile,
    gate,
    load_expectations,
    updated_entries,
)
from reports.summary import RunSummary, TestResult
from spec.loader import SpecError, default_spec

ROOT = Path(__file__).resolve().parent.parent
LADDER = "concurrent_4x_retry_ladder"  # one test, twelve behaviours, about two seconds on the reference
BREAK = ("from reference_impl.rules import retry4x\n"
         "retry4x.retry_level_for = lambda reconsume_times: 2 + reconsume_times  # one level too far\n")


def rmqc_run(out: Path, *extra: str, broken_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "rmqc.cli", "run", "--target", "reference", "--out", str(out), "-k", LADDER, *extra]
    path = os.pathsep.join(str(p) for p in ([broken_dir] if broken_dir else []) + [ROOT])
    if broken_dir:
        args += ["--pytest-arg=-p", "--pytest-arg=breakrule"]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": path})


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_expecting_a_passing_behaviour_to_fail_is_an_unexpected_pass(tmp_path):
    expectations = write(tmp_path / "reference.yaml", (
        "target: reference\n"
        "expectations:\n"
        "  - id: RETRY-CONC-07\n"
        "    status: fail\n"
        "    reason: a stale entry, for the test\n"))
    run = rmqc_run(tmp_path / "run", "--expectations", str(expectations))
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "unexpected pass RETRY-CONC-07" in run.stdout
    gate_json = json.loads((tmp_path / "run" / "summary.json").read_text())["gate"]
    assert [u["id"] for u in gate_json["unexpected_passes"]] == ["RETRY-CONC-07"]
    assert not gate_json["passed"] and not gate_json["unexpected_failures"]


def test_expected_failures_of_a_broken_reference_pass_the_gate_and_go_stale_when_fixed(tmp_path):
    """A deliberately broken reference fails; `rmqc expectations update` records its failures; the
    broken reference then passes the gate, and the fixed one fails it with unexpected passes."""
    broken = tmp_path / "broken"
    broken.mkdir()
    write(broken / "breakrule.py", BREAK)
    first = rmqc_run(tmp_path / "run1", broken_dir=broken)
    assert first.returncode == 1, first.stdout[-2000:]
    failed = json.loads((tmp_path / "run1" / "summary.json").read_text())["failed"]
    assert "RETRY-CONC-07" in failed

    expectations = tmp_path / "expectations" / "reference.yaml"
    update = subprocess.run([sys.executable, "-m", "rmqc.cli", "expectations", "update", str(tmp_path / "run1"),
                             "--file", str(expectations)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert update.returncode == 0, update.stderr
    assert "added RETRY-CONC-07" in update.stdout
    assert {e.id for e in load_expectations(expectations, default_spec()).entries} == set(failed)

    again = rmqc_run(tmp_path / "run2", "--expectations", str(expectations), broken_dir=broken)
    assert again.returncode == 0, again.stdout[-3000:]
    assert "gate: pass" in again.stdout
    gate_json = json.loads((tmp_path / "run2" / "summary.json").read_text())["gate"]
    assert sorted(e["id"] for e in gate_json["expected_failures"]) == sorted(failed)

    fixed = rmqc_run(tmp_path / "run3", "--expectations", str(expectations))
    assert fixed.returncode == 1
    assert "unexpected pass RETRY-CONC-07" in fixed.stdout


@pytest.mark.parametrize("entry,message", [
    ("  - {id: RETRY-CONC-99, status: fail, reason: r}\n", "RETRY-CONC-99: unknown behaviour ID"),
    ("  - {id: RETRY-CONC-07, status: fail, reason: r, when: {version: '>>5'}}\n",
     "RETRY-CONC-07: when.version '>>5' is not a version specifier"),
    ("  - {id: RETRY-CONC-07, status: broken, reason: r}\n", "RETRY-CONC-07: at expectations/1/status"),
    ("  - {id: RETRY-CONC-07, status: fail, reason: r, when: {profile: grpc-5.x}}\n",
     "RETRY-CONC-07: when.profile grpc-5.x: the behaviour is specified for"),
    ("  - {id: RETRY-CONC-07, status: fail, reason: r, when: {os: linux}}\n", "RETRY-CONC-07: at expectations/1/when"),
    ("  - {id: RETRY-CONC-07, status: intermittent, reason: r, matches: 'late ('}\n",
     "RETRY-CONC-07: matches 'late (' is not a regular expression"),
])
def test_bad_entries_name_file_line_and_id(tmp_path, entry, message):
    path = write(tmp_path / "x.yaml", "target: t\nexpectations:\n  - {id: TX-02, status: intermittent, reason: ok}\n" + entry)
    with pytest.raises(SpecError) as err:
        load_expectations(path, default_spec())
    assert f"x.yaml:4: {message}" in str(err.value)


def test_bad_file_is_a_usage_error_of_rmqc_run(tmp_path):
    path = write(tmp_path / "bad.yaml", "target: t\nexpectations:\n  - {id: NOPE-01, status: fail, reason: r}\n")
    run = rmqc_run(tmp_path / "run", "--expectations", str(path))
    assert run.returncode != 0 and "bad.yaml:3: NOPE-01: unknown behaviour ID" in run.stdout + run.stderr


def _summary(verdicts: dict[str, str], profiles=("grpc-5.x",), version="5.3.1") -> RunSummary:
    results = {b: [TestResult(f"t::{b}", v, f"why {b}")] for b, v in verdicts.items()}
    return RunSummary.build(results, default_spec(), run_id="r", target="reference", version=version,
                            profiles=profiles, elapsed_s=0.0, timing={})


def test_conditions_on_profile_and_version():
    entries = (Expectation("TX-02", "fail", "old proxies", profiles=("grpc-5.x",), version="<5.2"),
               Expectation("TX-03", "intermittent", "flaky timer"))
    file = ExpectationFile("vendor", entries, "vendor.yaml")
    old = gate(_summary({"TX-02": "fail", "TX-03": "pass"}, version="5.1.4"), file)
    assert old.passed and [e["id"] for e in old.expected_failures] == ["TX-02"]
    new = gate(_summary({"TX-02": "fail", "TX-03": "fail"}, version="5.3.1"), file)
    assert not new.passed and [e["id"] for e in new.unexpected_failures] == ["TX-02"]
    other_profile = gate(_summary({"TX-02": "pass"}, profiles=("remoting-4.x",), version="5.1.4"), file)
    assert other_profile.passed and not other_profile.unexpected_passes


def test_not_applicable_expected_failure_is_reported_not_failed():
    file = ExpectationFile("t", (Expectation("TX-01", "fail", "no half topic"),), "t.yaml")
    result = gate(_summary({"TX-01": "not applicable"}), file)
    assert result.passed and result.not_observed[0]["id"] == "TX-01"


def test_an_entry_with_matches_excuses_only_the_failure_it_names():
    """A known flake of a behaviour does not hide another bug of it: with ``matches``, a failure whose
    ``test: reason`` does not match is unexpected and names the entry; one that matches is excused."""
    flaky = Expectation("TX-03", "intermittent", "a scan slowed by the machine", file="v.yaml", line=7,
                        matches=r"checked \d+ ms after its half")
    known = Expectation("TX-02", "fail", "old proxies", file="v.yaml", line=3, matches="commit .* not delivered")
    file = ExpectationFile("vendor", (flaky, known), "v.yaml")

    def run(tx03: str, tx02: str) -> RunSummary:
        results = {"TX-03": [TestResult("t::check_timing", "fail", tx03)],
                   "TX-02": [TestResult("t::commit", "fail", tx02)]}
        return RunSummary.build(results, default_spec(), run_id="r", target="v", version="5.3.1",
                                profiles=("grpc-5.x",), elapsed_s=0.0, timing={})

    excused = gate(run("checked 1743 ms after its half", "commit m1 not delivered"), file)
    assert excused.passed and [e["id"] for e in excused.intermittent] == ["TX-03"]
    assert [e["id"] for e in excused.expected_failures] == ["TX-02"]
    other = gate(run("the half was never checked", "commit m1 delivered twice"), file)
    assert not other.passed and [u["id"] for u in other.unexpected_failures] == ["TX-02", "TX-03"]
    assert "t::check_timing: the half was never checked (the expectation at v.yaml:7 excuses only failures " \
           "matching" in other.unexpected_failures[1]["reason"]
    assert not other.intermittent and not other.expected_failures
    entries, changes = updated_entries(run("the half was never checked", "commit m1 not delivered"), file)
    assert entries == [flaky, known] and flaky.as_yaml()["matches"] == flaky.matches
    assert changes == ["kept TX-03, but it failed in a way its entry does not excuse (matches "
                       "'checked \\\\d+ ms after its half'): t::check_timing: the half was never checked; edit the "
                       "entry by hand"]


def test_update_keeps_other_conditions_and_drops_only_stale_entries():
    existing = ExpectationFile("t", (
        Expectation("TX-02", "fail", "fixed since"),
        Expectation("TX-03", "fail", "only old versions", version="<5.0"),
        Expectation("TX-04", "intermittent", "flaky"),
        Expectation("TX-05", "fail", "still broken")), "t.yaml")
    entries, changes = updated_entries(_summary({"TX-02": "pass", "TX-03": "pass", "TX-04": "pass",
                                                 "TX-05": "fail", "FIFO-01": "fail"}), existing)
    assert [e.id for e in entries] == ["TX-03", "TX-04", "TX-05", "FIFO-01"]
    assert changes[0].startswith("removed TX-02") and changes[1].startswith("added FIFO-01")
