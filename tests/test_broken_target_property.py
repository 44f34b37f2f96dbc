"""Broken targets as a property (issue 55): whatever a target answers through the driver protocol (wrong values,
missing fields, an error, a reply too late, a driver that dies mid-test or prints garbage), ``rmqc run`` ends
within its budget with a complete ``summary.json``; the tests a fault reached are failed or inconclusive, each
naming what it saw, and no fault is a traceback or a harness error.

Each example is one ``rmqc run`` of a few fast suites through ``tests/drivers/faulty_driver.py`` with a plan of
``FAULTS_PER_RUN`` drawn faults; ``EXAMPLES`` examples draw ``EXAMPLES * FAULTS_PER_RUN`` faults in all."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving import ROOT, verdicts_by_test

from reports.summary import RunSummary

EXAMPLES, FAULTS_PER_RUN = 10, 10
SELECTION = ("test_system_busy_is_retried_from_530 or test_unknown_topic_is_auto_created_with_four_queues or "
             "test_transaction_commit_and_rollback or test_orderly_default_max_retries or test_concurrent_retry")
"""Eight fast tests of the remoting-4.x profile that create topics, send, consume, retry, run transactions and
advance the clock: every command the faults are drawn on."""
COMMANDS = ("open", "create_topic", "producer", "transaction_producer", "push_consumer_4x", "send",
            "send_in_transaction", "advance", "settle", "now", "step", "inject_send_fault")
BUDGET_S, DRIVER_TIMEOUT_S, SLACK_S = 10, 2, 5
TESTS = 8
SEEN = {  # what a test that met the fault says of it
    "die": "the driver exited (code 7)",
    "garbage": "wrote a line that is not JSON",
    "late": "no answer to",
    "exception": "injected fault on",
}

faults = st.fixed_dictionaries({
    "cmd": st.sampled_from(COMMANDS), "nth": st.integers(1, 4),
    "fault": st.sampled_from(("wrong", "missing", "exception", "late", "die", "garbage")),
    "field": st.sampled_from(("now_ms", "status", "msg_id", "handle", "capabilities", "ran", "messages")),
})
FIRED: list[dict] = []


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(plan=st.lists(faults, min_size=FAULTS_PER_RUN, max_size=FAULTS_PER_RUN,
                     unique_by=lambda f: (f["cmd"], f["nth"])))
def test_whatever_a_broken_target_answers_the_run_ends_with_a_complete_summary(tmp_path_factory, plan) -> None:
    tmp = tmp_path_factory.mktemp("faulty")
    log, out = tmp / "fired.jsonl", tmp / "run"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target",
                           "driver:python tests/drivers/faulty_driver.py", "--profile", "remoting-4.x",
                           "-k", SELECTION, "--budget", str(BUDGET_S), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "RMQC_FAULT_PLAN": json.dumps(plan),
                               "RMQC_FAULT_LOG": str(log), "RMQC_DRIVER_TIMEOUT_S": str(DRIVER_TIMEOUT_S),
                               "RMQC_DRIVER_VALIDATE": "1"})
    elapsed = time.monotonic() - started
    shown = f"plan {plan}\nstdout {done.stdout[-3000:]}\nstderr {done.stderr[-3000:]}"
    assert done.returncode in (0, 1), shown
    assert "Traceback" not in done.stdout + done.stderr, shown
    assert elapsed < TESTS * (BUDGET_S + SLACK_S), (elapsed, shown)
    summary = RunSummary.read(out / "summary.json")  # complete: it validates against the schema
    assert not summary.harness, (summary.harness, shown)
    tests = verdicts_by_test(json.loads((out / "summary.json").read_text()))
    fired = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    FIRED.extend(fired)
    said = " | ".join(f"{t['reason']} {t.get('detail') or ''}" for t in tests.values()
                      if t["verdict"] in ("fail", "inconclusive"))
    for fault in fired:
        words = SEEN.get(fault["fault"])
        if words is not None:
            assert words in said, (fault, said[-3000:], shown)
    if not fired:
        assert done.returncode == 0 and all(t["verdict"] in ("pass", "not applicable") for t in tests.values()), shown


def test_the_property_drew_and_fired_faults_of_every_kind() -> None:
    """Run after the property (same module, in order): it drew ``EXAMPLES * FAULTS_PER_RUN`` faults, and enough of
    them met a command for every kind to have been seen."""
    assert EXAMPLES * FAULTS_PER_RUN >= 100
    assert {f["fault"] for f in FIRED} == {"wrong", "missing", "exception", "late", "die", "garbage"}, FIRED
    print(f"\n{len(FIRED)} of {EXAMPLES * FAULTS_PER_RUN} drawn faults met their command")
