"""Expectation files: the known failures of one target, with the reason beside each, and the gate.

``expectations/<name>.yaml`` lists behaviours expected to fail (``status: fail``) or to flip
(``status: intermittent``) on a target, optionally only for some profiles or versions, and optionally
only in one way (``matches``: a regular expression every excused failure's ``test: reason`` must match, so that
a known flake does not hide another bug of the same behaviour). The gate passes a run when only expected
failures fail; an unexpected failure fails it, and so does an unexpected pass (the expectation is stale and must
go). ``rmqc expectations update`` writes the file from a run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from spec.loader import Spec, SpecError, display_path, load_yaml_validated, node_at

from .summary import BehaviourResult, RunSummary

STATUSES = ("fail", "intermittent")


@dataclass(frozen=True)
class Expectation:
    """One known failure: which behaviour, how it is expected to end, why, and when it applies."""

    id: str
    status: str
    reason: str
    link: str | None = None
    profiles: tuple[str, ...] | None = None
    version: str | None = None
    file: str = ""
    line: int = 0
    matches: str | None = None
    """A regular expression (``re.search``) each failing test's ``test: reason`` must match to be excused."""

    def applies(self, profiles: Sequence[str], version: str | None) -> bool:
        """Whether this entry holds for a run of these profiles and this target version."""
        if self.profiles is not None and not set(self.profiles) & set(profiles):
            return False
        if self.version is not None:
            if version is None:
                return False
            try:
                return Version(version) in SpecifierSet(self.version)
            except InvalidVersion:
                return False
        return True

    def unexcused(self, tests: Iterable[Any]) -> list[Any]:
        """The failing tests this entry does not excuse: none without ``matches``."""
        if self.matches is None:
            return []
        return [t for t in tests if t.verdict == "fail" and not re.search(self.matches, f"{t.test}: {t.reason}")]

    def as_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "status": self.status, "reason": self.reason}
        if self.link:
            out["link"] = self.link
        if self.matches is not None:
            out["matches"] = self.matches
        when: dict[str, Any] = {}
        if self.profiles is not None:
            when["profile"] = self.profiles[0] if len(self.profiles) == 1 else list(self.profiles)
        if self.version is not None:
            when["version"] = self.version
        if when:
            out["when"] = when
        return out


@dataclass(frozen=True)
class ExpectationFile:
    target: str
    entries: tuple[Expectation, ...]
    path: str = ""

    def applicable(self, profiles: Sequence[str], version: str | None) -> dict[str, Expectation]:
        """The entries that hold for this run, by behaviour ID."""
        return {e.id: e for e in self.entries if e.applies(profiles, version)}


def load_expectations(path: Path, spec: Spec) -> ExpectationFile:
    """Read and check an expectation file; any bad entry is a ``SpecError`` naming file, line and ID."""
    data, root = load_yaml_validated(path, "expectations.schema.json")
    shown = display_path(path)
    entries: list[Expectation] = []
    seen: dict[tuple[str, str], int] = {}
    for index, raw in enumerate(data["expectations"]):
        line = node_at(root, ["expectations", index]).start_mark.line + 1
        bid = raw["id"]
        if bid not in spec.behaviours:
            raise SpecError(f"{shown}:{line}: {bid}: unknown behaviour ID (see spec/behaviours/)")
        when = raw.get("when") or {}
        profile = when.get("profile")
        profiles = None if profile is None else (tuple(profile) if isinstance(profile, list) else (profile,))
        if profiles is not None:
            specified = [p for p, e in spec.behaviours[bid].profiles.items() if e.get("applies")]
            foreign = [p for p in profiles if p not in specified]
            if foreign:
                raise SpecError(f"{shown}:{line}: {bid}: when.profile {', '.join(foreign)}: the behaviour is "
                                f"specified for {', '.join(specified)} only")
        version = when.get("version")
        if version is not None:
            try:
                SpecifierSet(version)
            except InvalidSpecifier:
                raise SpecError(f"{shown}:{line}: {bid}: when.version {version!r} is not a version "
                                f"specifier (write e.g. \">=5.2,<5.4\")") from None
        matches = raw.get("matches")
        if matches is not None:
            try:
                re.compile(matches)
            except re.error as exc:
                raise SpecError(f"{shown}:{line}: {bid}: matches {matches!r} is not a regular expression: {exc}") from None
        key = (bid, repr(sorted(when.items())))
        if key in seen:
            raise SpecError(f"{shown}:{line}: {bid}: listed twice with the same condition (first at line {seen[key]})")
        seen[key] = line
        entries.append(Expectation(bid, raw["status"], raw["reason"].strip(), raw.get("link"), profiles, version,
                                   shown, line, matches))
    return ExpectationFile(data["target"], tuple(entries), shown)


# ---- the gate ---------------------------------------------------------------------------------

@dataclass
class GateResult:
    """What a run did against its expectations. ``passed`` only with no unexpected result."""

    expectations: str
    expected_failures: list[dict[str, str]] = field(default_factory=list)
    unexpected_failures: list[dict[str, str]] = field(default_factory=list)
    unexpected_passes: list[dict[str, str]] = field(default_factory=list)
    intermittent: list[dict[str, str]] = field(default_factory=list)
    not_observed: list[dict[str, str]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.unexpected_failures and not self.unexpected_passes

    def as_json(self) -> dict[str, Any]:
        return {"expectations": self.expectations, "passed": self.passed,
                "expected_failures": self.expected_failures, "unexpected_failures": self.unexpected_failures,
                "unexpected_passes": self.unexpected_passes, "intermittent": self.intermittent,
                "not_observed": self.not_observed}

    def lines(self) -> list[str]:
        out = [f"gate against {self.expectations}: {'PASS' if self.passed else 'FAIL'} "
               f"({len(self.expected_failures)} expected failures, {len(self.unexpected_failures)} unexpected "
               f"failures, {len(self.unexpected_passes)} unexpected passes)"]
        out += [f"  unexpected failure {u['id']}: {u['reason']}" for u in self.unexpected_failures]
        out += [f"  unexpected pass {u['id']}: expected to fail ({u['reason']}); the expectation is stale, "
                f"remove it or run 'rmqc expectations update'" for u in self.unexpected_passes]
        out += [f"  expected failure not observed {u['id']}: {u['verdict']}" for u in self.not_observed]
        return out


def first_failing(tests: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first failing test of a behaviour's results, or None."""
    return next((t for t in tests if t["verdict"] == "fail"), None)


def _first_failure(behaviour: BehaviourResult) -> str:
    """The first failing test's reason, for messages and new expectations."""
    failing = behaviour.first_failure()
    return f"{failing.test}: {failing.reason}" if failing else ""


def gate(summary: RunSummary, expectations: ExpectationFile) -> GateResult:
    """Compare a run's verdicts with its expectation file (WPT-style: unexpected results fail it)."""
    held = expectations.applicable(summary.profiles, summary.release or summary.version)
    result = GateResult(expectations.path or expectations.target)
    behaviours = summary.behaviours
    for bid, b in sorted(behaviours.items()):
        verdict, expected = b.verdict, held.get(bid)
        if expected is None:
            if verdict == "fail":
                result.unexpected_failures.append({"id": bid, "reason": _first_failure(b)})
            continue
        where = f"{expected.file}:{expected.line}"
        other = expected.unexcused(b.tests) if verdict == "fail" else []
        if other:  # failed, but not in the way the entry knows
            result.unexpected_failures.append({"id": bid, "reason": f"{other[0].test}: {other[0].reason} (the "
                                               f"expectation at {where} excuses only failures matching "
                                               f"{expected.matches!r})"})
            continue
        entry = {"id": bid, "reason": expected.reason, "verdict": verdict, "where": where}
        if expected.status == "intermittent":
            result.intermittent.append(entry)
        elif verdict == "fail":
            result.expected_failures.append(entry)
        elif verdict == "pass":
            result.unexpected_passes.append(entry)
        else:
            result.not_observed.append(entry)
    for bid in sorted(set(held) - set(behaviours)):
        result.not_observed.append({"id": bid, "reason": held[bid].reason, "verdict": "not tested",
                                    "where": f"{held[bid].file}:{held[bid].line}"})
    return result


# ---- writing a file from a run ----------------------------------------------------------------

def updated_entries(summary: RunSummary, existing: ExpectationFile | None) -> tuple[list[Expectation], list[str]]:
    """Entries after a run: failures kept or added, stale ones dropped, others left as they were.
    Returns the entries and one line per change."""
    profiles, version = summary.profiles, summary.release or summary.version
    behaviours = summary.behaviours
    kept: list[Expectation] = []
    changes: list[str] = []
    covered: set[str] = set()
    for e in existing.entries if existing else ():
        holds = e.applies(profiles, version)
        verdict = behaviours[e.id].verdict if e.id in behaviours else None
        if holds and e.status == "fail" and verdict == "pass":
            changes.append(f"removed {e.id}: passes now (was expected to fail: {e.reason})")
            continue
        kept.append(e)  # still failing, intermittent, not run this time, or for other profiles / versions
        if holds:
            covered.add(e.id)
            other = e.unexcused(behaviours[e.id].tests) if verdict == "fail" else []
            if other:
                changes.append(f"kept {e.id}, but it failed in a way its entry does not excuse (matches "
                               f"{e.matches!r}): {other[0].test}: {other[0].reason}; edit the entry by hand")
    for bid, b in sorted(behaviours.items()):
        if b.verdict == "fail" and bid not in covered:
            reason = _first_failure(b) or "fails"
            kept.append(Expectation(bid, "fail", f"run {summary.run_id}: {reason}"))
            changes.append(f"added {bid}: {reason}")
    return kept, changes


def render(target: str, entries: Iterable[Expectation]) -> str:
    header = ("# Known failures of this target, with the reason beside each. Checked by `rmqc run --expectations`;\n"
              "# written by `rmqc expectations update RUN_DIR`. status: fail | intermittent; when: profile, version;\n"
              "# matches: a regular expression each excused failure's 'test: reason' must match.\n")
    body = {"target": target, "expectations": [e.as_yaml() for e in entries]}
    return header + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=110)
