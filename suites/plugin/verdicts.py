"""Each test's verdict on the behaviours it checks.

A test passes or fails as pytest says, except that an ``Outcome`` (``NotApplicable``, ``Inconclusive``,
or an exception group made only of them, as Hypothesis raises when examples end in several ways) ends
it with that verdict, shown by pytest as a skip with the reason. A failure whose ``SpecViolation`` names a
behaviour fails that behaviour, cited or not, and leaves the test's other behaviours inconclusive (one bug, one
red behaviour); a failure that names none fails every behaviour the test cites."""
from __future__ import annotations

from typing import Iterator

import pytest

from adapters.base import start_test_clock, stop_test_clock
from adapters.driver import forget_broken_drivers
from history.outcomes import FAIL, INCONCLUSIVE, NOT_APPLICABLE, PASS, NotApplicable, Outcome, outcome_of
from reports.summary import TestResult
from spec.loader import default_spec

from .. import reach
from .markers import spec_ids
from .state import TARGET_SDKS, TARGETS, has_run_state, run_state

DETAIL_CHARS = 4000
_VERDICT = pytest.StashKey[tuple[str, str]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    ended = outcome_of(call.excinfo.value) if call.excinfo is not None else None
    if call.excinfo is not None and type(call.excinfo.value).__name__ == "Unsatisfiable":
        ended = NotApplicable(f"no example within the target's reach: {reach.reasons()}")
    if ended is not None and report.failed:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"{ended.verdict}: {ended}")
        item.stash[_VERDICT] = (ended.verdict, f"{ended.verdict}: {ended}")
    if not has_run_state(item.config):
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        verdict, reason = _verdict(item, report, call.excinfo.value if call.excinfo is not None else None)
        if verdict == FAIL:
            reason = _with_target_notes(item, reason)
        cited = spec_ids(item)
        violated = violated_ids(call.excinfo.value) if call.excinfo is not None else set()
        cited += sorted(violated - set(cited))  # the behaviours the failure names fail, cited or not
        result = TestResult(item.nodeid, verdict, reason,
                            str(report.longrepr)[-DETAIL_CHARS:] if verdict == FAIL else None)
        sdks = item.stash.get(TARGET_SDKS, None)
        for sid in cited:
            run_state(item.config).results[sid].append(_for_habit(sid, _blamed(sid, violated, result), sdks))


def violated_ids(error: BaseException) -> set[str]:
    """The behaviours a failure names: a ``SpecViolation``'s IDs, or every ID of an exception group (Hypothesis
    raises one when examples fail in different ways) when each of its failures names one; else none."""
    if isinstance(error, BaseExceptionGroup):  # the outcomes among its examples (out of reach, noise) blame nothing
        named = [violated_ids(e) for e in error.exceptions if not isinstance(e, Outcome)]
        return set().union(*named) if named and all(named) else set()
    ids = getattr(error, "spec_ids", None)
    if isinstance(ids, tuple) and ids and all(isinstance(i, str) for i in ids):
        return set(ids)
    sid = getattr(error, "spec_id", None)
    return {sid} if isinstance(sid, str) else set()


def _blamed(sid: str, violated: set[str], result: TestResult) -> TestResult:
    """One bug, one red behaviour: a failure that names the behaviour it broke (a ``SpecViolation``) fails that
    behaviour only; the test's other behaviours are inconclusive, since it stopped before it could show them."""
    if result.verdict != FAIL or not violated or sid in violated:
        return result
    return TestResult(result.test, INCONCLUSIVE, f"not shown: the test stopped at a failure of "
                                                 f"{', '.join(sorted(violated))}: "
                                                 f"{result.reason}"[:500])


HABIT_CAPABILITY = {"java": "sdk.java", "python": "sdk.python", "nodejs": "sdk.nodejs", "go": "sdk.go",
                    "cpp-4x": "sdk.cpp4x"}
"""The capability of a target that drives (or models) the client an SDK habit is of (``sdk.client``)."""


def _for_habit(sid: str, result: TestResult, sdks: frozenset[str] | None) -> TestResult:
    """A test's verdict on one behaviour it cites; on an SDK habit of a client the test's target does not
    drive (it drives others), not applicable: that client's habit was not shown by this run."""
    behaviour = default_spec().behaviours.get(sid)
    habit = behaviour.sdk if behaviour is not None else None
    if not habit or not sdks or HABIT_CAPABILITY.get(habit["client"]) in sdks or result.verdict == FAIL:
        return result
    return TestResult(result.test, NOT_APPLICABLE, f"{sid} is a habit of the {habit['client']} client; this target "
                                                   f"drives {', '.join(sorted(s.removeprefix('sdk.') for s in sdks))}")


def _with_target_notes(item: pytest.Item, reason: str) -> str:
    """A failure's reason and what its targets noted of their clients (``Target.notes``): a consumer that had not
    taken its queues when the story began is evidence beside the behaviour the failure names."""
    notes = list(dict.fromkeys(n for target in item.stash.get(TARGETS, []) for n in target.notes()))[:3]
    return reason if not notes else f"{reason} (the target noted: {'; '.join(notes)})"


def _leaf_line(error: BaseException) -> str:
    """An exception group's first failure that is not an outcome, as pytest's ``E`` line would show it alone:
    a Hypothesis run whose examples failed in several ways is reported by its first real failure, not by the
    group's frame (issue 55: a reason of dashes says nothing)."""
    while isinstance(error, BaseExceptionGroup):
        leaves = [e for e in error.exceptions if not isinstance(e, Outcome)] or list(error.exceptions)
        error = leaves[0]
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    text = str(error).splitlines()[0] if str(error) else ""
    return f"E       {name}: {text}" if text else f"E       {name}"


def _verdict(item: pytest.Item, report: pytest.TestReport, error: BaseException | None = None) -> tuple[str, str]:
    if report.passed:
        return PASS, ""
    if report.skipped:
        if _VERDICT in item.stash:
            return item.stash[_VERDICT]
        # a plain pytest.skip (a missing tool, say): the test could not run here
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return NOT_APPLICABLE, reason.removeprefix("Skipped: ")
    if isinstance(error, BaseExceptionGroup):
        return FAIL, _leaf_line(error)[:500]
    text = str(report.longrepr)
    first = next((line for line in text.splitlines() if line.startswith("E ")), text.splitlines()[-1] if text else "")
    return FAIL, first[:500]


def pytest_runtest_setup(item: pytest.Item) -> None:
    reach.start_test()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """The test's wall budget counts from its call, once its fixtures are set up: a release the run starts
    once is not one test's time (issue 55)."""
    start_test_clock()


def pytest_runtest_teardown(item: pytest.Item) -> None:
    stop_test_clock()
    forget_broken_drivers()
