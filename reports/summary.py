"""The run summary: one verdict per spec behaviour with the tests behind it, per-area counts, the run's
timing model, and what later steps add (the gate, the event count, Spark verdicts).

``summary.json`` is this record as JSON, validated against ``spec/schemas/run-summary.schema.json`` when
it is written and when it is read, so every reader (the matrix, JUnit, expectation files, ``rmqc run``)
sees the same fields.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema

from history.outcomes import FAIL, VERDICTS
from spec.loader import Spec, schema

NOT_TESTED = "not tested"
SPEC_ID = re.compile(r"[A-Z][A-Z0-9-]*-[0-9]{2}")
SCHEMA = "run-summary.schema.json"


class SummaryError(ValueError):
    """A summary.json cannot be read or does not validate; the message names the file and the field."""


@dataclass
class TestResult:
    """One test's verdict on the behaviours it cites."""

    __test__ = False  # a record, not a pytest test class
    test: str
    verdict: str
    reason: str = ""
    detail: str | None = None
    """The evidence of a failure: assertion, trace excerpt, Hypothesis's shrunk example."""

    def as_json(self) -> dict[str, str]:
        out = {"test": self.test, "verdict": self.verdict, "reason": self.reason}
        if self.detail is not None:
            out["detail"] = self.detail
        return out


@dataclass
class BehaviourResult:
    area: str
    verdict: str
    tests: list[TestResult]

    def first_failure(self) -> TestResult | None:
        """The first failing test, the one messages and new expectations quote."""
        return next((t for t in self.tests if t.verdict == FAIL), None)


@dataclass
class RunSummary:
    run_id: str
    target: str
    version: str | None
    profiles: list[str]
    elapsed_s: float
    timing: dict[str, Any]
    areas: dict[str, dict[str, int]]
    behaviours: dict[str, BehaviourResult]
    failed: list[str]
    gate: dict[str, Any] | None = None
    events: int | None = None
    spark: dict[str, Any] | None = None
    release: str | None = None
    """The RocketMQ release the target was held to."""
    sdk: dict[str, Any] | None = None
    """The client library the run's targets drive: ``{"name", "version"}``."""
    harness: list[dict[str, str]] | None = None
    """Harness errors (issue 55): a verdict on an ID the spec does not have, a step of the run's end that raised;
    each names the test, the ID and what happened. A run with any exits 2."""

    @classmethod
    def build(cls, results: Mapping[str, Iterable[TestResult]], spec: Spec, *, run_id: str, target: str,
              version: str | None, profiles: Iterable[str], elapsed_s: float,
              timing: Mapping[str, Any]) -> "RunSummary":
        """A behaviour's verdict is the first of ``VERDICTS`` any of its tests has. Total (issue 55): a test's
        verdict on an ID the spec does not have (malformed, or a behaviour that was never written) is not a
        behaviour's; it is kept under ``harness``, naming the ID and the test, and the rest is summarised."""
        behaviours: dict[str, BehaviourResult] = {}
        harness: list[dict[str, str]] = []
        for sid, tests in sorted(results.items(), key=lambda item: str(item[0])):
            tests = list(tests)
            if not isinstance(sid, str) or sid not in spec.behaviours:
                harness += [unknown_id(sid, t) for t in tests] or [unknown_id(sid, None)]
                continue
            verdicts = {t.verdict for t in tests}
            verdict = next((v for v in VERDICTS if v in verdicts), None)
            if verdict is None:  # a verdict no summary knows: the harness's error, not the behaviour's
                harness += [{"test": t.test, "spec_id": sid, "verdict": str(t.verdict),
                             "reason": f"unknown verdict {t.verdict!r}: {t.reason}"[:500]} for t in tests]
                continue
            behaviours[sid] = BehaviourResult(spec.behaviours[sid].area, verdict, tests)
        areas: dict[str, dict[str, int]] = {}
        for area, items in sorted(spec.by_area().items()):
            counts = {v: 0 for v in VERDICTS}
            counts[NOT_TESTED] = 0
            for b in items:
                counts[behaviours[b.id].verdict if b.id in behaviours else NOT_TESTED] += 1
            areas[area] = counts
        return cls(run_id, target, version, list(profiles), round(elapsed_s, 2), dict(timing), areas, behaviours,
                   sorted(s for s, b in behaviours.items() if b.verdict == FAIL), harness=harness or None)

    # ---- JSON ------------------------------------------------------------------------------------

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run_id": self.run_id, "target": self.target, "version": self.version, "profiles": self.profiles,
            "elapsed_s": self.elapsed_s, "timing": self.timing, "areas": self.areas,
            "behaviours": {sid: {"area": b.area, "verdict": b.verdict, "tests": [t.as_json() for t in b.tests]}
                           for sid, b in self.behaviours.items()},
            "failed": self.failed}
        for name in ("gate", "events", "spark", "release", "sdk", "harness"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "summary") -> "RunSummary":
        _validate(data, where)
        behaviours = {sid: BehaviourResult(b["area"], b["verdict"], [TestResult(**t) for t in b["tests"]])
                      for sid, b in data["behaviours"].items()}
        return cls(data["run_id"], data["target"], data.get("version"), list(data["profiles"]), data["elapsed_s"],
                   dict(data.get("timing") or {}), {a: dict(c) for a, c in data["areas"].items()}, behaviours,
                   list(data["failed"]), data.get("gate"), data.get("events"), data.get("spark"), data.get("release"),
                   data.get("sdk"), data.get("harness"))

    def write(self, path: Path) -> None:
        data = self.as_json()
        _validate(data, str(path))
        path.write_text(json.dumps(data, indent=2))

    @classmethod
    def read(cls, path: Path) -> "RunSummary":
        return cls.from_json(_load(path), str(path))


    # ---- reading -----------------------------------------------------------------------------------

    def lines(self) -> list[str]:
        """The terminal summary: per-area counts, IDs by verdict, every failure with its spec ID."""
        wall = self.timing.get("clock") == "wall"
        release = f" as RocketMQ {self.release}" if self.release else ""
        lines = [f"rocketmq-conformance run {self.run_id} against {self.target}{release} "
                 f"({', '.join(self.profiles)}), {self.elapsed_s} s" + (
                     f"; wall clock at time scale {self.timing['time_scale']:g}, timing tolerance "
                     f"{self.timing['tolerance_absolute_ms']} ms + {self.timing['tolerance_relative']:.0%}"
                     + (f", 5.x redeliveries {self.timing['redelivery_late_ms'][0]}-"
                        f"{self.timing['redelivery_late_ms'][1]} ms late (RETRY-5X-11)"
                        if self.timing.get("redelivery_late_ms") else "")
                     if wall else ""),
                 f"{'area':<12} {'pass':>5} {'fail':>5} {'incon':>6} {'n/a':>5} {'untested':>9}"]
        for area, c in self.areas.items():
            lines.append(f"{area:<12} {c['pass']:>5} {c['fail']:>5} {c['inconclusive']:>6} "
                         f"{c['not applicable']:>5} {c[NOT_TESTED]:>9}")
        for area in self.areas:
            by_verdict: dict[str, dict[str, list[str]]] = {}
            for sid, b in self.behaviours.items():
                if b.area == area:
                    family, number = sid.rsplit("-", 1)
                    by_verdict.setdefault(b.verdict, {}).setdefault(family, []).append(number)
            if by_verdict:
                lines.append(f"  {area}: " + "; ".join(
                    f"{v} " + " ".join(_ranges(n) if fam == area else f"{fam} {_ranges(n)}" for fam, n in fams.items())
                    for v, fams in by_verdict.items()))
        for sid in self.failed:
            first = self.behaviours[sid].first_failure()
            assert first is not None  # a failed behaviour has a failing test
            lines.append(f"FAIL {sid}: {first.test}: {first.reason}")
        for error in self.harness or []:
            lines.append(f"HARNESS ERROR {error.get('spec_id', '-')!s}: {error['test']}: {error['reason']}")
        return lines


def unknown_id(sid: object, test: TestResult | None) -> dict[str, str]:
    """A harness entry for a verdict cited on ``sid``, which the spec does not have."""
    what = "a malformed spec ID" if not isinstance(sid, str) or not SPEC_ID.fullmatch(sid) else "an unknown spec ID"
    entry = {"test": test.test if test is not None else "(no test)", "spec_id": repr(sid) if not isinstance(sid, str)
             else sid, "reason": f"the test's verdict names {what}, {sid!r}: the harness's error, not the target's"}
    if test is not None:
        entry["verdict"] = test.verdict
        entry["reason"] += f" (its verdict: {test.verdict}{': ' + test.reason if test.reason else ''})"[:400]
    return entry


def read_json(path: Path) -> dict[str, Any]:
    """A summary.json as JSON, validated (for readers that keep it as data, like the matrix)."""
    data = _load(path)
    _validate(data, str(path))
    return data


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise SummaryError(f"{path.parent}: not a run folder (no summary.json; write one with rmqc run --out)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise SummaryError(f"{path}: cannot read the run summary: {exc}") from None


def _validate(data: Any, where: str) -> None:
    errors = sorted(jsonschema.Draft202012Validator(schema(SCHEMA)).iter_errors(data),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        at = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
        raise SummaryError(f"{where}: not an rmqc run summary: at {at}: {errors[0].message}")


def _ranges(numbers: list[str]) -> str:
    """``['01', '02', '03', '05']`` -> ``'01-03 05'``."""
    values = sorted(int(n) for n in numbers)
    parts: list[str] = []
    start = prev = values[0]
    for v in values[1:] + [None]:  # type: ignore[list-item]
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(f"{start:02d}" if start == prev else f"{start:02d}-{prev:02d}")
        if v is not None:
            start = prev = v
    return " ".join(parts)
