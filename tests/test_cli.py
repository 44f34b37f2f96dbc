"""``rmqc spec`` and ``rmqc run`` as a user runs them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from reports.summary import RunSummary, SummaryError
from spec.coverage import compute_coverage
from spec.loader import default_spec, schema

RMQC = [sys.executable, "-m", "rmqc.cli"]
ISSUE_AREAS = ["DELAY", "RETRY-CONC", "ORDER-4X", "RETRY-5X", "FIFO", "TX"]


def _rmqc(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(RMQC + list(args), capture_output=True, text=True, timeout=timeout)


def test_spec_list_has_every_catalog_entry_and_the_claims() -> None:
    result = _rmqc("spec", "list")
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and len(lines) >= 105 + 6
    ids = {line.split()[0] for line in lines}
    assert {"DELAY-01", "PRIM-04", "ALLOC-00", "TX-06", "CLAIM-01", "CLAIM-06"} <= ids


def test_spec_show_prints_profiles_sources_and_divergences() -> None:
    out = _rmqc("spec", "show", "RETRY-5X-06").stdout
    assert "grpc-5.x: as stated" in out and "remoting-4.x: not applicable" in out
    assert "divergence CLAIM-01" in out and "upstream:" in out and "vectors:" in out


def test_coverage_strict_has_no_gap_in_this_issues_areas() -> None:
    args = ["spec", "coverage", "--strict"] + [a for area in ISSUE_AREAS for a in ("--area", area)]
    result = _rmqc(*args)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "0 gaps; 0 unknown citations" in result.stdout


def test_coverage_strict_names_a_behaviour_without_rule_or_test(tmp_path: Path) -> None:
    import shutil

    from spec.loader import BEHAVIOURS_DIR

    spec_dir = tmp_path / "behaviours"
    shutil.copytree(BEHAVIOURS_DIR, spec_dir)
    text = (spec_dir / "delay.yaml").read_text()
    block = text[text.index("- id: DELAY-09"):]
    block = block[:block.index("  cases:")]  # a behaviour with no vectors as data: no test runs it
    (spec_dir / "zz_new.yaml").write_text("area: ZZ\ntitle: new\nbehaviours:\n" + block.replace("DELAY-09", "ZZ-01"))
    result = _rmqc("spec", "--spec-dir", str(spec_dir), "coverage", "--strict", "--gaps")
    assert result.returncode == 1
    assert "GAP ZZ-01" in result.stdout and "(no rule and no model and no test)" in result.stdout
    assert _rmqc("spec", "coverage", "--strict").returncode == 0


def test_run_writes_a_run_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _rmqc("run", "--target", "reference", "--out", str(out), "-k", "rule_vectors and DELAY or scenario")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    jsonschema.Draft202012Validator(schema("run-summary.schema.json")).validate(summary)
    assert RunSummary.read(out / "summary.json").as_json() == summary
    assert summary["target"] == "reference" and not summary["failed"]
    assert summary["behaviours"]["DELAY-02"]["verdict"] == "pass"
    assert (out / "events.parquet").stat().st_size > 0
    assert any((out / "allure-results").glob("*-result.json"))
    labels = [json.loads(p.read_text()).get("labels", []) for p in (out / "allure-results").glob("*-result.json")]
    assert any(label["name"] == "spec_id" for group in labels for label in group)
    assert "DELAY" in result.stdout and "pass" in result.stdout


def test_coverage_strict_needs_model_code_unless_not_modelled(tmp_path: Path) -> None:
    import shutil

    from spec.loader import BEHAVIOURS_DIR

    spec_dir = tmp_path / "behaviours"
    shutil.copytree(BEHAVIOURS_DIR, spec_dir)
    text = (spec_dir / "delay.yaml").read_text()
    block = text[text.index("- id: DELAY-09"):]
    block = block[:block.index("  cases:")]  # no vectors as data: no test runs it
    block = "\n".join(line for line in block.splitlines() if not line.startswith("  not_modelled:")) + "\n"
    (spec_dir / "zz_new.yaml").write_text("area: ZZ\ntitle: new\nbehaviours:\n" + block.replace("DELAY-09", "ZZ-01"))
    result = _rmqc("spec", "--spec-dir", str(spec_dir), "coverage", "--strict", "--gaps")
    assert result.returncode == 1
    assert "GAP ZZ-01" in result.stdout and "(no rule and no model and no test)" in result.stdout


def test_coverage_reports_a_range_the_model_cites(tmp_path: Path) -> None:
    model = tmp_path / "reference_impl" / "model"
    model.mkdir(parents=True)
    (model / "broker.py").write_text("def pop():\n    # FIFO-04..06 and FIFO-07\n    pass\n")
    coverage = compute_coverage(default_spec(), root=tmp_path)
    assert coverage.range_citations == ["reference_impl/model/broker.py:2: FIFO-04..06"]
    assert coverage.model == {"FIFO-07": ["reference_impl.model.broker.pop"]}


def test_spec_show_lists_what_cites_a_behaviour() -> None:
    result = _rmqc("spec", "show", "FIFO-05")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for expected in ("reference rule (", "reference_impl.rules.fifo.need_block", "model code (",
                     "reference_impl.model.broker.Broker", "tests (", "::test_", "scenarios (",
                     "spec/scenarios/fifo-renew-limit.yaml"):
        assert expected in out, out


def test_a_summary_that_does_not_validate_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"run_id": "r", "behaviours": {}}))
    with pytest.raises(SummaryError, match=r"summary.json: not an rmqc run summary: at \(top level\): 'target'"):
        RunSummary.read(tmp_path / "summary.json")


def _make_run_command() -> list[str]:
    """The arguments `make run` gives `rmqc` (the Makefile's `run:` recipe), so the test below cannot drift."""
    recipe = (Path(__file__).resolve().parent.parent / "Makefile").read_text().split("\nrun:", 1)[1].splitlines()[1]
    words = recipe.split()
    return words[words.index("$(BIN)/rmqc") + 1:]


@pytest.mark.spec("DELAY-01", "DELAY-06", "CLAIM-05", "RETRY-5X-07")
def test_what_make_run_runs_exits_0_at_a_reduced_size(tmp_path: Path) -> None:
    """`make run` on a fresh clone ended with exit 1 (issue 36): the Spark check of the run's own log judged a
    delayed message delivered late by a busy consumer as a broker fault. The same command, with the
    generated-program and delay suites only and 20,000 simulated events, exits 0 with every Spark part passed."""
    args = _make_run_command()
    assert args[:3] == ["run", "--target", "reference"] and "--spark-check" in args
    args[args.index("--simulate-events") + 1] = "20000"
    out = tmp_path / "run"
    result = _rmqc(*args, "--out", str(out), "-k", "generated_programs or delay", timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["spark"]) == {"conformance_log", "simulated"}
    assert all(part["passed"] for part in summary["spark"].values()), summary["spark"]
    assert summary["spark"]["conformance_log"]["checks"]["delay_accuracy"]["delayed_deliveries"] > 0
