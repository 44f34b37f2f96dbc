"""At the end of a run: the summary (``reports.summary.RunSummary``), the gate against the expectation
file (with expectations the session's exit status is the gate's), the run folder (``summary.json``,
``events.parquet``) and the terminal summary."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest

from reports.summary import RunSummary
from spec.loader import default_spec

from .state import has_run_state, run_state


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not has_run_state(session.config):
        return
    state = run_state(session.config)
    if not state.results:
        return
    summary = RunSummary.build(state.results, default_spec(), run_id=state.run_id, target=state.target.text,
                               version=state.version, profiles=state.profiles,
                               elapsed_s=time.perf_counter() - state.started, timing=state.timing)
    summary.release = state.release
    if state.sdk is not None:
        summary.sdk = {"name": state.sdk[0], "version": state.sdk[1]}
    if state.expectations is not None:
        from reports.expectations import gate

        state.gate = gate(summary, state.expectations)
        summary.gate = state.gate.as_json()
        if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK if state.gate.passed else pytest.ExitCode.TESTS_FAILED
    out = session.config.getoption("--rmq-out")
    if out:
        from history.parquet import write_parquet

        out_dir = Path(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        events = [dataclasses.replace(e, seq=i) for i, e in enumerate(state.events)]
        summary.events = write_parquet(events, out_dir / "events.parquet")
        summary.write(out_dir / "summary.json")
    state.summary = summary


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
