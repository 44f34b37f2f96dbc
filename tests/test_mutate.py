"""``rmqc mutate`` (issue 22): mutants are judged by the unmodified suites, through the driver target or, for
rules with no protocol surface, through their vectors; a 5-mutant smoke of the command; the report's
arithmetic; errors that name what is wrong."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from serving import ROOT

from mutation.operators import Mutant
from mutation.report import (
    AreaScore,
    EquivalentFileError,
    as_json,
    layered_reports,
    load_equivalents,
    load_report,
    mark_equivalents,
    merged_reports,
    rescored,
    scores,
    split_by_earlier,
    split_by_module,
    tally,
)
from mutation.runner import Job, Outcome, Runner, Scratch, jobs_for, summary_problem


def _job(path: str, line: int, operator: str) -> Job:
    (job,) = [j for j in jobs_for([path]) if j.mutant.line == line and j.mutant.operator == operator]
    return job


def _judged(job: Job) -> Outcome:
    """``job`` judged by a fresh runner in a scratch copy of its own, removed afterwards."""
    scratch = Scratch()
    try:
        return Runner().judge(job, scratch)
    finally:
        scratch.remove()


def _line_of(path: str, text: str) -> int:
    return next(i for i, line in enumerate((ROOT / "reference_impl" / path).read_text().splitlines(), 1) if text in line)


class _TargetOnly(Runner):
    """A runner without the model's own properties (``EVERY_MODEL_MUTANT``), which would judge a model mutant
    first, in its own process: what is left is the suites through the driver target."""

    def rule_tests(self, job):  # type: ignore[no-untyped-def]
        return []


def test_a_model_mutant_is_killed_through_the_driver_target() -> None:
    """The broker stores a dead letter without saying so (``emit_dlq`` dropped): the suites, run against the
    mutant served as a driver target, fail; the checkout's own reference is untouched."""
    job = _job("model/broker.py", _line_of("model/broker.py", "self.sim.emit_dlq(group, message)"), "drop-statement")
    scratch = Scratch()
    try:
        outcome = _TargetOnly().judge(job, scratch)
        restored = (scratch.dir / "reference_impl" / job.path).read_text()
    finally:
        scratch.remove()
    assert outcome.verdict == "killed" and outcome.killed_by == "target: exit 1", (outcome.killed_by, outcome.output)
    assert outcome.tests > 0
    assert restored == (ROOT / "reference_impl" / job.path).read_text()  # the scratch copy is put back


class _SummaryLost(_TargetOnly):
    """The suites' run through the driver target ends without its summary (as a run whose gate crashed at its
    end did, issue 55): what it wrote is taken away after it exits."""

    def _run(self, channel, tests, scratch, stop_at_first=True, timeout_s=None):  # type: ignore[no-untyped-def]
        code, output = super()._run(channel, tests, scratch, stop_at_first, timeout_s)
        (scratch.run_dir(channel) / "summary.json").unlink(missing_ok=True)
        return code, output


def test_a_mutant_whose_run_wrote_no_summary_is_a_harness_error_not_killed() -> None:
    job = _job("model/broker.py", _line_of("model/broker.py", "self.sim.emit_dlq(group, message)"), "drop-statement")
    scratch = Scratch()
    try:
        lost = _SummaryLost().judge(job, scratch)
        kept = _TargetOnly().judge(job, scratch)
        (scratch.run_dir("target") / "summary.json").write_text(json.dumps(
            {**json.loads((scratch.run_dir("target") / "summary.json").read_text()),
             "harness": [{"test": "t::x", "spec_id": "-", "reason": "a malformed spec ID"}]}))
        named = summary_problem(scratch, "target", 1)
    finally:
        scratch.remove()
    assert lost.verdict == "harness error" and lost.killed_by == "target: exit 1, no summary.json written", lost
    assert kept.verdict == "killed", kept.killed_by  # the same mutant, its summary written: killed
    assert named is not None and "1 harness errors in summary.json, the first: t::x" in named
    total, _ = tally([("rules.x", "harness error"), ("rules.x", "killed")])
    assert total.harness_errors == 1 and total.killed == 1 and total.score == 0.5


def test_a_mutant_of_an_earlier_release_is_killed_as_that_release() -> None:
    """A long poll's timeout wakes the consumer only when it is stale (``==`` made ``!=``): only a release
    whose revived messages do not wake a long poll (5.0.0, RETRY-5X-11) takes that path, so the suites at the
    latest release pass and the differential suite run as 5.0.0 fails."""
    job = _job("model/consumer5x.py", _line_of("model/consumer5x.py", "if poll == self._poll:"), "compare[0]")
    outcome = _judged(job)
    assert outcome.verdict == "killed" and outcome.killed_by == "release: exit 1", (outcome.killed_by, outcome.output)


def test_a_rule_mutant_is_killed_by_its_vectors_first() -> None:
    """``reconsumeTimes + 1`` of a revive made ``- 1``: the spec's vectors (the rule imported from the scratch
    copy; RETRY-5X-10's row says 2 -> 3) fail before any target runs."""
    job = _job("rules/retry5x.py", _line_of("rules/retry5x.py", "return reconsume_times + 1"), "arithmetic")
    outcome = _judged(job)
    assert outcome.verdict == "killed" and outcome.killed_by == "vectors: exit 1", (outcome.killed_by, outcome.output)


def test_a_five_mutant_smoke_run_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "mutation"
    done = subprocess.run([sys.executable, "-m", "rmqc.cli", "mutate", "--areas", "rules.retry4x", "--max", "5",
                           "--seed", "3", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rmqc mutate: 5/5 judged" in done.stderr  # the progress line
    report = json.loads((out / "mutation.json").read_text())
    assert report["mutants"] == 5 == len(report["outcomes"])
    assert report["killed"] + report["survived"] + report["uncovered"] + report["equivalent"] == 5
    assert report["workers"] == 2 and report["wall_s"] > 0
    for outcome in report["outcomes"]:
        assert outcome["area"] == "rules.retry4x" and outcome["verdict"] in ("killed", "survived", "uncovered")
        if outcome["verdict"] != "killed":  # a survivor is shown with its change
            assert "\n-" in outcome["diff"] and "\n+" in outcome["diff"], outcome
    page = (out / "mutation.md").read_text()
    assert "| rules.retry4x | 5 |" in page and f"Surviving mutants ({report['survived'] + report['uncovered']})" in page
    assert "rmqc mutate: score" in done.stdout


def _outcome(area: str, verdict: str, n: int) -> Outcome:
    return Outcome(Job(f"{area.replace('.', '/')}.py", Mutant("constant", n, 0, "1", "2", n)), verdict)


def test_equivalent_mutants_leave_the_score_and_uncovered_ones_count_against_it(tmp_path: Path) -> None:
    outcomes = [_outcome("rules.a", "killed", 1), _outcome("rules.a", "survived", 2), _outcome("rules.a", "survived", 3),
                _outcome("model.b", "uncovered", 4), _outcome("model.b", "killed", 5)]
    mark_equivalents(outcomes, {outcomes[1].job.key: "only a default never used"})
    total, areas = scores(outcomes)
    assert (total.mutants, total.killed, total.survived, total.uncovered, total.equivalent) == (5, 2, 1, 1, 1)
    assert total.score == 2 / 4
    assert [(a.area, a.score) for a in areas] == [("model.b", 0.5), ("rules.a", 0.5)]
    assert AreaScore("empty").score is None
    assert outcomes[1].verdict == "equivalent" and outcomes[1].reason == "only a default never used"


def test_a_malformed_equivalents_file_is_named_with_its_entry(tmp_path: Path) -> None:
    bad = tmp_path / "equivalent.yaml"
    bad.write_text("- mutant: rules/retry4x.py:1:1:constant:1->2#3\n")
    try:
        load_equivalents(bad)
    except EquivalentFileError as exc:
        assert str(bad) in str(exc) and "entry 1" in str(exc) and "reason" in str(exc)
    else:
        raise AssertionError("an entry without a reason was taken")
    done = subprocess.run([sys.executable, "-m", "rmqc.cli", "mutate", "--areas", "rules.retry4x", "--max", "1",
                           "--equivalents", str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "entry 1" in done.stderr, done.stderr
    unknown = subprocess.run([sys.executable, "-m", "rmqc.cli", "mutate", "--areas", "rules.nothing"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "names no module" in unknown.stderr, unknown.stderr


def test_resume_keeps_the_verdicts_of_unchanged_modules_and_judges_edited_ones_whole(tmp_path: Path) -> None:
    """``--resume``: a module whose mutants are the earlier run's keeps every verdict (an equivalent one goes
    back to survived for the equivalents file to decide again); one with a mutant more is judged whole."""
    kept = [_outcome("rules.a", "killed", 1), _outcome("rules.a", "survived", 2), _outcome("rules.a", "equivalent", 3)]
    edited = [_outcome("model.b", "killed", 5)]
    earlier = tmp_path / "mutation.json"
    earlier.write_text(json.dumps(as_json(kept + edited, 1.0, 2, 0)))
    added = _outcome("model.b", "survived", 6).job
    judge, carried = split_by_module([o.job for o in kept + edited] + [added], load_report(earlier))
    assert [j.key for j in judge] == [edited[0].job.key, added.key]
    assert [(c.job.key, c.verdict) for c in carried] == [(kept[0].job.key, "killed"), (kept[1].job.key, "survived"),
                                                         (kept[2].job.key, "survived")]
    assert carried[0].killed_by.startswith("earlier run") and carried[1].killed_by == ""
    later = as_json([_outcome("model.b", "survived", 5), _outcome("model.b", "killed", 6)], 1.0, 2, 0)
    layered = layered_reports([load_report(earlier), later])  # model.b from the later run, rules.a as before
    judge, carried = split_by_module([o.job for o in kept + edited] + [added], layered)
    assert judge == [] and [c.verdict for c in carried if c.job.path == "model/b.py"] == ["survived", "killed"]


def test_again_carries_earlier_kills_and_rescore_applies_the_equivalents_file(tmp_path: Path) -> None:
    """``--again`` judges only what an earlier report did not count killed (and mutants it does not know);
    ``--rescore`` marks equivalents in an earlier report without running anything."""
    outcomes = [_outcome("rules.a", "killed", 1), _outcome("rules.a", "survived", 2), _outcome("model.b", "killed", 3)]
    earlier = tmp_path / "mutation.json"
    earlier.write_text(json.dumps(as_json(outcomes, 1.0, 2, 0)))
    unknown = _outcome("rules.a", "survived", 9).job
    judge, carried = split_by_earlier([o.job for o in outcomes] + [unknown], load_report(earlier))
    assert [j.key for j in judge] == [outcomes[1].job.key, unknown.key]
    assert [(c.job.key, c.verdict) for c in carried] == [(outcomes[0].job.key, "killed"),
                                                         (outcomes[2].job.key, "killed")]
    assert all(c.killed_by.startswith("earlier run") for c in carried)
    later = tmp_path / "later.json"  # a second run that killed the first one's survivor: both carry over
    later.write_text(json.dumps(as_json([_outcome("rules.a", "killed", 2), _outcome("rules.a", "survived", 1)], 1.0,
                                        2, 0)))
    judge, carried = split_by_earlier([o.job for o in outcomes], merged_reports([load_report(earlier),
                                                                                 load_report(later)]))
    assert judge == [] and len(carried) == 3

    again = rescored(load_report(earlier), {outcomes[1].job.key: "a default no caller uses"})
    assert (again["killed"], again["survived"], again["equivalent"], again["score"]) == (2, 0, 1, 1.0)
    assert rescored(again, {})["survived"] == 1  # an entry taken out of the file counts against the score again
    garbage = tmp_path / "garbage.json"
    garbage.write_text("[1, 2]")
    try:
        load_report(garbage)
    except EquivalentFileError as exc:
        assert str(garbage) in str(exc)
    else:
        raise AssertionError("a file that is not a report was taken")


def test_every_equivalent_mutant_is_one_of_the_current_source() -> None:
    """An entry of ``mutation/equivalent.yaml`` goes stale when its module is edited (a key holds the mutant's
    place in the syntax tree): it must then be marked again, or its mutant counts as a survivor unseen."""
    entries = load_equivalents()
    current = {j.key for j in jobs_for(sorted({key.split(":")[0] for key in entries}))}
    assert sorted(set(entries) - current) == [], "stale entries: mark these mutants again under their new keys"


def test_a_clock_mutant_is_killed_by_the_models_own_properties_first() -> None:
    """``advance`` made to stop short of its end (``<=`` made ``<``): the clock's own properties (issue 37), the
    model imported from the scratch copy, fail before any target runs."""
    job = _job("model/clock.py", _line_of("model/clock.py", "while self._queue and self._queue[0][0] <= target:"),
               "compare[0]")
    outcome = _judged(job)
    assert outcome.verdict == "killed" and outcome.killed_by == "vectors: exit 1", (outcome.killed_by, outcome.output)


def test_a_model_mutant_meets_the_tests_that_ran_its_statement() -> None:
    """Selection by coverage (issue 37): a test that never names the IDs a broker line cites, but ran the line
    (here the coverage map says so), judges its mutants too; a multi-line statement is found by its first line."""
    from mutation.coverage_map import CoverageMap, statement_line

    source = (ROOT / "reference_impl" / "model" / "broker.py").read_text()
    line = _line_of("model/broker.py", "self.sim.emit_dlq(group, message)")
    job = _job("model/broker.py", line, "drop-statement")
    runner = Runner()
    outsider = next(t for t in runner.tests if not t.rule and t not in set(runner.selected(job))
                    and t.file != "test_differential.py")
    assert outsider not in runner.target_tests(job)
    runner.coverage = CoverageMap({"model/broker.py": {line: frozenset({outsider.name})}}, "d")
    assert outsider in runner.target_tests(job)
    call = "def f(x):\n    y = g(1,\n          2)\n    if (x and\n            y):\n        return y\n"
    assert [statement_line(call, n) for n in (2, 3, 4, 5, 6)] == [2, 2, 4, 4, 6]
    assert CoverageMap.from_json(json.loads(json.dumps(runner.coverage.to_json()))) == runner.coverage
