"""Each test's verdict on the behaviours it checks.

A test passes or fails as pytest says, except that an ``Outcome`` (``NotApplicable``, ``Inconclusive``,
or an exception group made only of them, as Hypothesis raises when examples end in several ways) ends
it with that verdict, shown by pytest as a skip with the reason. A failure also counts against the
behaviour its ``SpecViolation`` names, cited or not."""
from __future__ import annotations

from typing import Iterator

import pytest

from adapters.driver import forget_broken_drivers
from history.outcomes import FAIL, NOT_APPLICABLE, PASS, NotApplicable, outcome_of
from reports.summary import TestResult
from spec.loader import default_spec

from .. import reach
from .markers import spec_ids
from .state import TARGET_SDKS, has_run_state, run_state

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
        verdict, reason = _verdict(item, report)
        cited = spec_ids(item)
        violated = getattr(call.excinfo.value, "spec_id", None) if call.excinfo is not None else None
        if violated and violated not in cited:
            cited.append(violated)  # the behaviour the failure names fails, cited or not
        result = TestResult(item.nodeid, verdict, reason,
                            str(report.longrepr)[-DETAIL_CHARS:] if verdict == FAIL else None)
        sdks = item.stash.get(TARGET_SDKS, None)
        for sid in cited:
            run_state(item.config).results[sid].append(_for_habit(sid, result, sdks))


HABIT_CAPABILITY = {"java": "sdk.java", "python": "sdk.python", "nodejs": "sdk.nodejs", "cpp-4x": "sdk.cpp4x"}
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


def _verdict(item: pytest.Item, report: pytest.TestReport) -> tuple[str, str]:
    if report.passed:
        return PASS, ""
    if report.skipped:
        if _VERDICT in item.stash:
            return item.stash[_VERDICT]
        # a plain pytest.skip (a missing tool, say): the test could not run here
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return NOT_APPLICABLE, reason.removeprefix("Skipped: ")
    text = str(report.longrepr)
    first = next((line for line in text.splitlines() if line.startswith("E ")), text.splitlines()[-1] if text else "")
    return FAIL, first[:500]


def pytest_runtest_setup(item: pytest.Item) -> None:
    reach.start_test()
    forget_broken_drivers()
