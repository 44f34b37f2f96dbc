"""At the end of a run: the summary (``reports.summary.RunSummary``), the gate against the expectation
file (with expectations the session's exit status is the gate's), the run folder (``summary.json``,
``events.parquet``) and the terminal summary."""
from __future__ import annotations

import dataclasses
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from reports.summary import RunSummary, TestResult
from spec.loader import default_spec

from .state import has_run_state, run_state


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Total (issue 55): whatever the tests raised and whatever blame produced, ``summary.json`` is written; a step
    of this hook that raises is itself a harness error in it, and a run with harness errors exits 2."""
    if not has_run_state(session.config):
        return
    state = run_state(session.config)
    if not state.results:
        return
    harness: list[dict[str, str]] = []
    summary = _summary(state, harness)
    summary.release = state.release
    if state.sdk is not None:
        summary.sdk = {"name": state.sdk[0], "version": state.sdk[1]}
    if state.expectations is not None:
        try:
            from reports.expectations import gate

            state.gate = gate(summary, state.expectations)
            summary.gate = state.gate.as_json()
            if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                session.exitstatus = pytest.ExitCode.OK if state.gate.passed else pytest.ExitCode.TESTS_FAILED
        except Exception as exc:  # noqa: BLE001 - the gate's own error is reported in the summary, not raised
            harness.append(_raised("the gate against the expectation file", exc))
    out = session.config.getoption("--rmq-out")
    if out:
        out_dir = Path(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            from history.parquet import write_parquet

            events = [dataclasses.replace(e, seq=i) for i, e in enumerate(state.events)]
            summary.events = write_parquet(events, out_dir / "events.parquet")
        except Exception as exc:  # noqa: BLE001
            harness.append(_raised("writing the event log", exc))
        summary.harness = (summary.harness or []) + harness or None
        summary.write(out_dir / "summary.json")
    else:
        summary.harness = (summary.harness or []) + harness or None
    if summary.harness and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        session.exitstatus = HARNESS_ERROR
    state.summary = summary


HARNESS_ERROR = 2
"""The exit status of a run whose summary has harness errors (``rmqc run`` says so), never a traceback."""


def _summary(state: Any, harness: list[dict[str, str]]) -> RunSummary:
    common = dict(run_id=state.run_id, target=state.target.text, version=state.version, profiles=state.profiles,
                  elapsed_s=time.perf_counter() - state.started, timing=state.timing)
    try:
        return RunSummary.build(state.results, default_spec(), **common)
    except Exception as exc:  # noqa: BLE001 - the verdicts that can be summarised still are
        harness.append(_raised("summarising the verdicts", exc))
        kept = {sid: tests for sid, tests in state.results.items() if isinstance(sid, str)
                and sid in default_spec().behaviours and all(isinstance(t, TestResult) for t in tests)}
        try:
            return RunSummary.build(kept, default_spec(), **common)
        except Exception as again:  # noqa: BLE001
            harness.append(_raised("summarising the verdicts a second time", again))
            return RunSummary.build({}, default_spec(), **common)


def _raised(step: str, exc: BaseException) -> dict[str, str]:
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" at {Path(where.filename).name}:{where.lineno}" if where else ""
    return {"test": "(the run's end)", "reason": f"{step} raised {type(exc).__name__}: {exc}{at}"[:500]}


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not has_run_state(config) or run_state(config).summary is None:
        return
    state = run_state(config)
    summary = state.summary
    assert summary is not None
    terminalreporter.section("rocketmq-conformance")
    for line in summary.lines():
        terminalreporter.write_line(line)
    if state.gate is not None:
        for line in state.gate.lines():
            terminalreporter.write_line(line)
    out = config.getoption("--rmq-out")
    if out:
        terminalreporter.write_line(f"wrote {Path(out) / 'summary.json'} and {summary.events} events to "
                                    f"{Path(out) / 'events.parquet'}")
