"""The mutation run's verdict: the score per area and in all, the survivors with their diffs, the equivalent
mutants as the hand-kept file says (``mutation/equivalent.yaml``). Pure: outcomes in, tables and text out."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

from .runner import Outcome

EQUIVALENT_FILE = Path(__file__).resolve().parent / "equivalent.yaml"


class EquivalentFileError(ValueError):
    """The equivalents file (or an earlier report given to ``--again``) is malformed: the message names the
    file, the entry and what is wrong."""


def load_equivalents(path: Path = EQUIVALENT_FILE) -> dict[str, str]:
    """``{mutant key: reason}`` from the hand-kept file; every entry needs a key and a reason."""
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or []
    except yaml.YAMLError as exc:
        raise EquivalentFileError(f"{path}: not YAML: {exc}") from None
    out: dict[str, str] = {}
    for number, entry in enumerate(data, 1):
        if not isinstance(entry, dict) or not entry.get("mutant") or not str(entry.get("reason") or "").strip():
            raise EquivalentFileError(f"{path}: entry {number} needs 'mutant' (a key as the report prints it) "
                                      f"and 'reason' (why no test can tell it from the reference): {entry!r}")
        out[str(entry["mutant"])] = str(entry["reason"]).strip()
    return out


def load_report(path: Path) -> dict[str, Any]:
    """An earlier run's ``mutation.json`` (for ``--again`` and ``--rescore``), its outcomes checked for the
    fields they are read by."""
    try:
        report = json.loads(path.read_text())
        if not all(isinstance(o, dict) and {"mutant", "area", "verdict"} <= set(o) for o in report["outcomes"]):
            raise ValueError("an outcome lacks its mutant, area or verdict")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EquivalentFileError(f"{path}: not a mutation.json written by rmqc mutate: {exc}") from None
    return report


def merged_reports(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Several earlier reports as one for ``split_by_earlier``: a mutant any of them counted killed is killed."""
    merged: dict[str, dict[str, Any]] = {}
    for earlier in reports:
        for outcome in earlier["outcomes"]:
            if outcome["mutant"] not in merged or outcome["verdict"] == "killed":
                merged[outcome["mutant"]] = outcome
    return {"outcomes": list(merged.values())}


def layered_reports(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Several earlier reports as one for ``split_by_module``: each module's outcomes from the last report
    that judged it."""
    by_module: dict[str, list[dict[str, Any]]] = {}
    for earlier in reports:
        modules: dict[str, list[dict[str, Any]]] = {}
        for outcome in earlier["outcomes"]:
            modules.setdefault(outcome["mutant"].split(":", 1)[0], []).append(outcome)
        by_module.update(modules)
    return {"outcomes": [o for outcomes in by_module.values() for o in outcomes]}


def split_by_earlier(jobs: list[Any], earlier: dict[str, Any]) -> tuple[list[Any], list[Outcome]]:
    """(the jobs to judge, the outcomes carried over) against an earlier run's report (``load_report``): a
    mutant it counted killed stays killed (``killed_by`` says "earlier run"), every other one is judged again,
    and so is every mutant it does not know (a mutant's key carries its place in the module's syntax tree, so
    an edited module's mutants are all new). Carrying kills over assumes the suites lost no test since that run."""
    earlier_outcomes = {o["mutant"]: o for o in earlier["outcomes"]}
    judge, carried = [], []
    for job in jobs:
        old = earlier_outcomes.get(job.key)
        if old is not None and old["verdict"] == "killed":
            carried.append(Outcome(job, "killed", f"earlier run: {old.get('killed_by', '')}", 0.0,
                                   int(old.get("tests", 0))))
        else:
            judge.append(job)
    return judge, carried


def split_by_module(jobs: list[Any], earlier: dict[str, Any]) -> tuple[list[Any], list[Outcome]]:
    """(the jobs to judge, the outcomes carried over) for ``--resume``: every verdict of an earlier run is kept
    for a module whose mutants are exactly the ones that run judged (no edit moved, added or removed one);
    a module with any new or missing mutant is judged whole. Equivalence is applied again from the file.
    Carrying a survivor assumes the suites lost no test since; a test they gained may kill it, which only
    ``--again`` finds out."""
    earlier_keys: dict[str, dict[str, dict[str, Any]]] = {}
    for outcome in earlier["outcomes"]:
        earlier_keys.setdefault(outcome["mutant"].split(":", 1)[0], {})[outcome["mutant"]] = outcome
    by_path: dict[str, list[Any]] = {}
    for job in jobs:
        by_path.setdefault(job.path, []).append(job)
    judge, carried = [], []
    for path, module_jobs in by_path.items():
        old = earlier_keys.get(path, {})
        if {job.key for job in module_jobs} != set(old):
            judge += module_jobs
            continue
        for job in module_jobs:
            o = old[job.key]
            verdict = "survived" if o["verdict"] == "equivalent" else o["verdict"]
            carried.append(Outcome(job, verdict, f"earlier run: {o.get('killed_by', '')}" if verdict == "killed"
                                   else "", 0.0, int(o.get("tests", 0)), o.get("diff", "")))
    return judge, carried


def mark_equivalents(outcomes: list[Outcome], equivalents: dict[str, str]) -> None:
    for outcome in outcomes:
        reason = equivalents.get(outcome.job.key)
        if reason is not None and outcome.verdict != "killed":
            outcome.verdict, outcome.reason = "equivalent", reason


@dataclass
class AreaScore:
    area: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    uncovered: int = 0
    equivalent: int = 0
    harness_errors: int = 0
    """Mutants whose run did not write a complete summary (issue 55): not killed, not survived; counted as not killed."""

    @property
    def score(self) -> float | None:
        """Killed over the mutants that are not equivalent (uncovered ones count as not killed)."""
        judged = self.mutants - self.equivalent
        return self.killed / judged if judged else None


VERDICT_FIELDS = {"harness error": "harness_errors"}
"""A verdict whose count has another name."""


def tally(verdicts: Iterable[tuple[str, str]]) -> tuple[AreaScore, list[AreaScore]]:
    """The score in all and per area of (area, verdict) pairs."""
    areas: dict[str, AreaScore] = {}
    total = AreaScore("all")
    for area, verdict in verdicts:
        for score in (areas.setdefault(area, AreaScore(area)), total):
            score.mutants += 1
            name = VERDICT_FIELDS.get(verdict, verdict)
            setattr(score, name, getattr(score, name) + 1)
    return total, [areas[a] for a in sorted(areas)]


def scores(outcomes: list[Outcome]) -> tuple[AreaScore, list[AreaScore]]:
    return tally((o.job.area, o.verdict) for o in outcomes)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def as_json(outcomes: list[Outcome], wall_s: float, workers: int, not_run: int,
            left_out: Sequence[str] = ()) -> dict[str, Any]:
    total, areas = scores(outcomes)
    return {
        "score": total.score, "mutants": total.mutants, "killed": total.killed, "survived": total.survived,
        "uncovered": total.uncovered, "equivalent": total.equivalent, "harness_errors": total.harness_errors,
        "not_run": not_run,
        "wall_s": round(wall_s, 1), "workers": workers, "left_out_tests": list(left_out),
        "areas": [{**asdict(a), "score": a.score} for a in areas],
        "outcomes": [{"mutant": o.job.key, "area": o.job.area, "operator": o.job.mutant.operator,
                      "line": o.job.mutant.line, "verdict": o.verdict, "killed_by": o.killed_by,
                      "tests": o.tests, "seconds": round(o.seconds, 2), "reason": o.reason, "diff": o.diff}
                     for o in sorted(outcomes, key=lambda o: o.job.key)],
    }


def rescored(report: dict[str, Any], equivalents: dict[str, str]) -> dict[str, Any]:
    """An earlier report with the equivalents file applied again (no mutant is run): a survivor or uncovered
    mutant the file names becomes equivalent, an equivalent one it no longer names a survivor."""
    outcomes = []
    for o in report["outcomes"]:
        o = dict(o)
        if o["verdict"] in ("survived", "uncovered", "equivalent"):
            if o["mutant"] in equivalents:
                o["verdict"], o["reason"] = "equivalent", equivalents[o["mutant"]]
            elif o["verdict"] == "equivalent":
                o["verdict"], o["reason"] = "survived", ""
        outcomes.append(o)
    total, areas = tally((o["area"], o["verdict"]) for o in outcomes)
    return {**report, "score": total.score, "killed": total.killed, "survived": total.survived,
            "uncovered": total.uncovered, "equivalent": total.equivalent, "harness_errors": total.harness_errors,
            "areas": [{**asdict(a), "score": a.score} for a in areas], "outcomes": outcomes}


def as_markdown(report: dict[str, Any]) -> str:
    lines = [f"# Mutation run: score {_pct(report['score'])}",
             "",
             f"{report['mutants']} mutants judged ({report['killed']} killed, {report['survived']} survived, "
             f"{report['uncovered']} with no suite test citing their code, {report['equivalent']} equivalent), "
             f"{report['not_run']} not run (time or count limit); {report['wall_s']} s wall on "
             f"{report['workers']} workers.",
             "",
             "Score = killed / (mutants - equivalent); a mutant no suite test selects counts as not killed.",
             "",
             "| area | mutants | killed | survived | uncovered | equivalent | score |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for a in report["areas"]:
        lines.append(f"| {a['area']} | {a['mutants']} | {a['killed']} | {a['survived']} | {a['uncovered']} | "
                     f"{a['equivalent']} | {_pct(a['score'])} |")
    if report.get("left_out_tests"):
        lines += ["", "Left out, as they fail against the unmutated reference: "
                  + ", ".join(f"`{t}`" for t in report["left_out_tests"]) + "."]
    left = [o for o in report["outcomes"] if o["verdict"] in ("survived", "uncovered")]
    lines += ["", f"## Surviving mutants ({len(left)})", ""]
    for o in left:
        lines += [f"### `{o['mutant']}` ({o['verdict']}, {o['tests']} tests selected)", "", "```diff", o["diff"],
                  "```", ""]
    broken = [o for o in report["outcomes"] if o["verdict"] == "harness error"]
    if broken:
        lines += [f"## Harness errors ({len(broken)}: the run did not write a complete summary; not counted killed)", ""]
        lines += [f"- `{o['mutant']}`: {o['killed_by']}" for o in broken]
        lines += [""]
    equivalent = [o for o in report["outcomes"] if o["verdict"] == "equivalent"]
    if equivalent:
        lines += [f"## Equivalent mutants ({len(equivalent)}, from mutation/equivalent.yaml)", ""]
        lines += [f"- `{o['mutant']}`: {o['reason']}" for o in equivalent]
    return "\n".join(lines) + "\n"


def write(out: Path, report: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutation.json").write_text(json.dumps(report, indent=1))
    (out / "mutation.md").write_text(as_markdown(report))
