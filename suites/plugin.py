"""The rocketmq-conformance pytest plugin: options, fixtures, markers, verdicts and the run summary.

Options: ``--rmq-target``, ``--rmq-profile``, ``--rmq-expectations``, ``--rmq-out``, ``--rmq-run-id``.
Registered by the ``pytest11`` entry point ``rocketmq_conformance``: a user's own pytest run gets the
options, the ``target`` / ``make_target`` fixtures and the markers once the package is installed.
Markers: ``spec(*ids)`` names the behaviours a test checks; ``profile(name)`` the profile it runs
under; ``reference_rule`` marks a test of the reference's own pure rules (not applicable to other
targets). Verdicts per spec ID: pass, fail, inconclusive, not applicable.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import os
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

from adapters.base import NotApplicable, Target, TargetError
from adapters.registry import driver_hello, preflight, target_factory, target_profiles
from spec.loader import Spec, SpecError, default_spec

# ``make_target`` is a factory: every example gets fresh targets, so sharing it across examples is safe.
_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=_SUPPRESSED)
settings.register_profile("dev", max_examples=300, deadline=None, print_blob=True, suppress_health_check=_SUPPRESSED)
settings.register_profile("thorough", max_examples=2000, deadline=None, print_blob=True,
                          suppress_health_check=_SUPPRESSED)
settings.register_profile("realtime", max_examples=int(os.environ.get("RMQC_REALTIME_EXAMPLES", "3")), deadline=None,
                          derandomize=True, print_blob=True, suppress_health_check=_SUPPRESSED)
"""Targets on a wall clock run a few examples per property: each example's ladder takes real time."""
settings.load_profile(os.environ.get("RMQC_HYPOTHESIS_PROFILE", "ci"))

NOT_APPLICABLE = "not applicable"
INCONCLUSIVE = "inconclusive"
VERDICT_ORDER = ("fail", "inconclusive", "pass", "not applicable")
DETAIL_CHARS = 4000


def inconclusive(reason: str) -> None:
    """End a test as inconclusive (a timing property inside the noise band), with the reason."""
    pytest.skip(f"{INCONCLUSIVE}: {reason}")


def not_applicable(reason: str) -> None:
    pytest.skip(f"{NOT_APPLICABLE}: {reason}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocketmq-conformance")
    group.addoption("--rmq-target", default="reference", help="reference | grpc://HOST:PORT | container:IMAGE | driver:CMD")
    group.addoption("--rmq-profile", default=None, help="remoting-4.x | grpc-5.x (default: every profile the target runs)")
    group.addoption("--rmq-expectations", default=None, metavar="FILE",
                    help="expectation file (expectations/<name>.yaml): the run passes when only expected failures fail")
    group.addoption("--rmq-out", default=None, help="write summary.json and events.parquet of this run here")
    group.addoption("--rmq-run-id", default=None, help="run id recorded in the event log")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spec(*ids): spec behaviour IDs this test checks")
    config.addinivalue_line("markers", "profile(name): the profile this test runs under")
    config.addinivalue_line("markers", "reference_rule: checks the reference's own pure rules")
    try:
        kind, factory = target_factory(config.getoption("--rmq-target"))
    except TargetError as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        preflight(kind, config.getoption("--rmq-target"))
        profiles = target_profiles(kind, config.getoption("--rmq-target"))
    except TargetError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not _virtual_clock(kind, config.getoption("--rmq-target")) and "RMQC_HYPOTHESIS_PROFILE" not in os.environ:
        settings.load_profile("realtime")
    wanted = config.getoption("--rmq-profile")
    if wanted is not None:
        if wanted not in profiles:
            raise pytest.UsageError(f"--rmq-profile {wanted}: target {config.getoption('--rmq-target')} runs "
                                    f"{' and '.join(profiles)}")
        profiles = (wanted,)
    run_id = config.getoption("--rmq-run-id") or time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    expectations = None
    if config.getoption("--rmq-expectations"):
        from reports.expectations import load_expectations

        try:
            expectations = load_expectations(Path(config.getoption("--rmq-expectations")), default_spec())
        except SpecError as exc:
            raise pytest.UsageError(str(exc)) from None
    config._rmq = RunState(kind, config.getoption("--rmq-target"), factory, profiles, run_id,  # type: ignore[attr-defined]
                           expectations=expectations,
                           runs_reference=_runs_reference(kind, config.getoption("--rmq-target")))


def _virtual_clock(kind: str, spec: str) -> bool:
    """Targets on a virtual clock run the full Hypothesis profile; wall-clock ones a few examples."""
    return kind == "reference" or (kind == "driver" and driver_hello(spec).get("clock") == "virtual")


@dataclasses.dataclass
class RunState:
    kind: str
    target_spec: str
    factory: Callable[..., Target]
    profiles: tuple[str, ...]
    run_id: str
    events: list[Any] = dataclasses.field(default_factory=list)
    results: dict[str, list[dict[str, str]]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    started: float = dataclasses.field(default_factory=time.perf_counter)
    targets: Iterator[int] = dataclasses.field(default_factory=lambda: itertools.count(1))
    timing: dict[str, Any] = dataclasses.field(default_factory=dict)
    version: str | None = None
    expectations: Any = None  # reports.expectations.ExpectationFile
    runs_reference: bool = False
    summary: dict[str, Any] | None = None
    gate: Any = None  # reports.expectations.GateResult, when the run has expectations


def _state(config: pytest.Config) -> RunState:
    return config._rmq  # type: ignore[attr-defined,no-any-return]


def spec_ids(item: pytest.Item) -> list[str]:
    ids: list[str] = []
    for mark in item.iter_markers("spec"):
        ids.extend(str(a) for a in mark.args)
    return list(dict.fromkeys(ids))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        spec = default_spec()
    except SpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    unknown = [(item.nodeid, i) for item in items for i in spec_ids(item) if i not in spec.behaviours]
    if unknown:
        listing = "; ".join(f"{node} cites {i}" for node, i in unknown[:5])
        raise pytest.UsageError(f"tests cite unknown spec IDs: {listing}")
    try:
        import allure
    except ImportError:  # pragma: no cover - allure-pytest is a dependency
        return
    for item in items:
        ids = spec_ids(item)
        if not ids:
            continue
        item.add_marker(allure.label("spec_id", *ids))
        item.add_marker(allure.label("area", *sorted({spec.behaviours[i].area for i in ids})))
        callspec = getattr(item, "callspec", None)
        marker = item.get_closest_marker("profile")
        profile = callspec.params.get("profile") if callspec is not None else None
        profile = profile or (marker.args[0] if marker is not None else None)
        if profile is not None:
            item.add_marker(allure.label("profile", str(profile)))


# ---- fixtures ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def rmq_spec() -> Spec:
    return default_spec()


def _test_profile(request: pytest.FixtureRequest) -> str:
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "profile" in callspec.params:
        return str(callspec.params["profile"])
    marker = request.node.get_closest_marker("profile")
    if marker is None:
        raise pytest.UsageError(f"{request.node.nodeid} uses a target but has no profile marker")
    return str(marker.args[0])


@pytest.fixture
def make_target(request: pytest.FixtureRequest) -> Iterator[Callable[..., Target]]:
    """Create targets of the run's kind for a profile; events are kept for the run's event log."""
    state = _state(request.config)
    created: list[Target] = []

    def make(profile: str | None = None, seed: int = 0) -> Target:
        profile = profile or _test_profile(request)
        if profile not in state.profiles:
            not_applicable(f"target {state.target_spec} runs {', '.join(state.profiles)}, not {profile}")
        try:
            target = state.factory(profile=profile, run_id=state.run_id, seed=seed)
        except NotApplicable as exc:
            not_applicable(str(exc))
        created.append(target)
        state.version = state.version or target.version
        if not state.timing:
            from suites.checks import tolerance_for

            tolerance = tolerance_for(target)
            state.timing = {"time_scale": target.time_scale, "tolerance_absolute_ms": tolerance.absolute_ms,
                            "tolerance_relative": tolerance.relative,
                            "clock": "virtual" if "clock.virtual" in target.capabilities else "wall"}
        return target

    yield make
    for target in created:
        # every target numbers its own messages: prefix the ids so they stay unique in the run's log
        tag = f"t{next(state.targets)}:"
        state.events.extend(dataclasses.replace(e, msg_id=tag + e.msg_id if e.msg_id else None,
                                                detail={**e.detail, "test": request.node.nodeid})
                            for e in target.events())
        target.close()


@pytest.fixture
def target(make_target: Callable[..., Target]) -> Target:
    """A fresh target for this test's profile."""
    return make_target()


@pytest.fixture
def reference_for() -> Callable[..., Target]:
    """The in-process reference (the Kafka pattern's model for kafka-retry), the prediction in differential tests."""
    reference = target_factory("reference")[1]
    return lambda profile, seed=0: reference(profile=profile, run_id="prediction", seed=seed)


@pytest.fixture(autouse=True)
def _reference_rule_only(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("reference_rule") and not _state(request.config).runs_reference:
        not_applicable("checks the reference implementation's pure rules, not the target")


def _runs_reference(kind: str, spec: str) -> bool:
    """The target is this reference implementation: in process, or a driver wrapping this very version
    of it (its hello says so), so the tests of the reference's pure rules are about the target too."""
    if kind == "reference":
        return True
    if kind == "driver":
        from reference_impl import VERSION

        hello = driver_hello(spec)
        return hello.get("implementation") == "rocketmq-conformance reference" and hello.get("version") == VERSION
    return False


# ---- verdicts ---------------------------------------------------------------------------------

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and isinstance(call.excinfo.value, NotApplicable) and report.failed:
        # a capability the target lacks, found inside the test: not applicable, never a failure
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {NOT_APPLICABLE}: {call.excinfo.value}")
    if report.when == "call" or (report.when == "setup" and not report.passed):
        verdict, reason = _verdict(report)
        cited = spec_ids(item)
        violated = getattr(call.excinfo.value, "spec_id", None) if call.excinfo is not None else None
        if violated and violated not in cited:
            cited.append(violated)  # the behaviour the failure names fails, cited or not
        result = {"test": item.nodeid, "verdict": verdict, "reason": reason}
        if verdict == "fail":  # the evidence: assertion, trace excerpt, Hypothesis's shrunk example
            result["detail"] = str(report.longrepr)[-DETAIL_CHARS:]
        for sid in cited:
            _state(item.config).results[sid].append(result)


def _verdict(report: pytest.TestReport) -> tuple[str, str]:
    if report.passed:
        return "pass", ""
    if report.skipped:
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        return (INCONCLUSIVE if reason.startswith(INCONCLUSIVE) else NOT_APPLICABLE), reason
    text = str(report.longrepr)
    first = next((line for line in text.splitlines() if line.startswith("E ")), text.splitlines()[-1] if text else "")
    return "fail", first[:500]


def summarize(state: RunState, spec: Spec) -> dict[str, Any]:
    behaviours: dict[str, Any] = {}
    for sid, results in sorted(state.results.items()):
        verdicts = {r["verdict"] for r in results}
        verdict = next(v for v in VERDICT_ORDER if v in verdicts)
        behaviours[sid] = {"area": spec.behaviours[sid].area, "verdict": verdict,
                           "tests": results}
    areas: dict[str, dict[str, int]] = {}
    for area, items in sorted(spec.by_area().items()):
        counts = {v: 0 for v in VERDICT_ORDER}
        counts["not tested"] = 0
        for b in items:
            counts[behaviours[b.id]["verdict"] if b.id in behaviours else "not tested"] += 1
        areas[area] = counts
    return {"run_id": state.run_id, "target": state.target_spec, "version": state.version,
            "profiles": list(state.profiles),
            "elapsed_s": round(time.perf_counter() - state.started, 2), "timing": state.timing,
            "areas": areas, "behaviours": behaviours,
            "failed": sorted(s for s, b in behaviours.items() if b["verdict"] == "fail")}


def format_summary(summary: dict[str, Any]) -> list[str]:
    lines = [f"rocketmq-conformance run {summary['run_id']} against {summary['target']} "
             f"({', '.join(summary['profiles'])}), {summary['elapsed_s']} s" + (
                 f"; wall clock at time scale {summary['timing']['time_scale']:g}, timing tolerance "
                 f"{summary['timing']['tolerance_absolute_ms']} ms + {summary['timing']['tolerance_relative']:.0%}"
                 if summary.get("timing", {}).get("clock") == "wall" else ""),
             f"{'area':<12} {'pass':>5} {'fail':>5} {'incon':>6} {'n/a':>5} {'untested':>9}"]
    for area, c in summary["areas"].items():
        lines.append(f"{area:<12} {c['pass']:>5} {c['fail']:>5} {c['inconclusive']:>6} "
                     f"{c['not applicable']:>5} {c['not tested']:>9}")
    for area in summary["areas"]:
        by_verdict: dict[str, dict[str, list[str]]] = {}
        for sid, b in summary["behaviours"].items():
            if b["area"] == area:
                family, number = sid.rsplit("-", 1)
                by_verdict.setdefault(b["verdict"], {}).setdefault(family, []).append(number)
        if by_verdict:
            lines.append(f"  {area}: " + "; ".join(
                f"{v} " + " ".join(_ranges(n) if fam == area else f"{fam} {_ranges(n)}" for fam, n in fams.items())
                for v, fams in by_verdict.items()))
    for sid in summary["failed"]:
        first = next(r for r in summary["behaviours"][sid]["tests"] if r["verdict"] == "fail")
        lines.append(f"FAIL {sid}: {first['test']}: {first['reason']}")
    return lines


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


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Summarize, gate against the expectation file, write the run folder; with expectations the
    session's exit status is the gate's."""
    state = getattr(session.config, "_rmq", None)
    if state is None or not state.results:
        return
    summary = summarize(state, default_spec())
    if state.expectations is not None:
        from reports.expectations import gate

        state.gate = gate(summary, state.expectations)
        summary["gate"] = state.gate.as_json()
        if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK if state.gate.passed else pytest.ExitCode.TESTS_FAILED
    out = session.config.getoption("--rmq-out")
    if out:
        from history.parquet import write_parquet

        out_dir = Path(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        events = [dataclasses.replace(e, seq=i) for i, e in enumerate(state.events)]
        summary["events"] = write_parquet(events, out_dir / "events.parquet")
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    state.summary = summary


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = getattr(config, "_rmq", None)
    if state is None or state.summary is None:
        return
    summary = state.summary
    terminalreporter.section("rocketmq-conformance")
    for line in format_summary(summary):
        terminalreporter.write_line(line)
    if state.gate is not None:
        for line in state.gate.lines():
            terminalreporter.write_line(line)
    out = config.getoption("--rmq-out")
    if out:
        terminalreporter.write_line(f"wrote {Path(out) / 'summary.json'} and {summary['events']} events to "
                                    f"{Path(out) / 'events.parquet'}")
