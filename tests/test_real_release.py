"""A real Apache RocketMQ release in ``make test``: the newest covered 5.x release, started from Maven Central on
127.0.0.1 by the suite itself, held to its expectation file through the official Python 5.x SDK and the 4.x SDK
(one broker, both profiles); and the gate biting: the same release started with one of its own configuration
keys changed makes the gate red, naming the behaviour, with the first counterexample reported within the test's
budget (no shrinking on a wall clock).

Without Java, Maven or the registry these tests are not applicable, with the cause (never passed).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters import release_jars
from history.outcomes import NotApplicable
from history.profiles import GRPC_5X, REMOTING_4X

pytestmark = pytest.mark.real_release
"""Run by ``make test`` beside the project's other tests (which yield it the CPU), and alone by ``make real-gate``."""

ROOT = Path(__file__).resolve().parent.parent
NEWEST = "5.5.0"
"""The newest covered 5.x release whose name server, broker and proxy Maven Central serves."""
GATE_BUDGET_S = 30
"""Wall seconds one test may take in ``make test``'s gate: longer ladders are not applicable there (the nightly
``make real-matrix`` runs them too). Below about 30 s the 4.x SDK's consumers, which rebalance before their first
pull, have not always begun to consume within a test's settle."""


def _jars_or_not_applicable(release: str) -> None:
    try:
        release_jars.resolve(release)
    except release_jars.ReleaseUnavailable as exc:
        pytest.skip(f"not applicable: {exc}")


def _rmqc_run(out: Path, *args: str, env: dict[str, str] | None = None, timeout_s: float = 1500) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "rmqc.cli", "run", "--out", str(out), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=timeout_s,
                          env={**os.environ, "RMQC_REALTIME_EXAMPLES": "1", **(env or {})})


def test_the_newest_release_passes_its_gate_through_both_sdks(tmp_path):
    _jars_or_not_applicable(NEWEST)
    started = time.monotonic()
    run = _rmqc_run(tmp_path, "--target", f"release:{NEWEST}", "--expectations",
                    str(ROOT / "expectations" / f"rocketmq-{NEWEST}.yaml"), "--budget", str(GATE_BUDGET_S))
    elapsed = time.monotonic() - started
    assert (tmp_path / "summary.json").exists(), f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    gate = summary["gate"]
    counts: dict[str, int] = {}
    for behaviour in summary["behaviours"].values():
        counts[behaviour["verdict"]] = counts.get(behaviour["verdict"], 0) + 1
    print(f"release:{NEWEST} gate in {elapsed:.0f} s: {counts}; expected failures {gate['expected_failures']}")
    assert run.returncode == 0 and gate["passed"], (
        f"unexpected failures {gate['unexpected_failures']}, unexpected passes {gate['unexpected_passes']}\n"
        + run.stdout[-4000:] + run.stderr[-2000:])
    assert set(summary["profiles"]) == {GRPC_5X, REMOTING_4X}
    assert counts.get("pass", 0) >= 20  # a gate that checked next to nothing would pass too
    release = summary["timing"]["release"]
    assert release["release"] == NEWEST and release["keys"]["broker"]["transactionCheckInterval"] > 0


JAVA_4X_SUBSET = "(send or retry or filter or order) and not suspend_time"
"""What ``make test`` runs of the remoting-4.x suites through the Java 4.x client against the release: sends, the
retry ladder, filters and orderly consumption (about a third of the whole run, which takes 15 minutes of wall time
and belongs to ``make real-matrix``). Left to the gate's C++ run and to ``make real-matrix``, because beside the
project's own tests the Java client's own short waits came late: a level-1 delay once 1,031 spec ms late (103 wall
ms at the release's time scale, the order of the broker's 100 ms schedule tick, which no key compresses), and an
orderly retry after the 10 ms suspend clamp (ORDER-4X-02) once 150 ms after the first delivery. Neither is
explained yet; both passed when the run had the machine to itself."""


def test_the_newest_release_passes_its_gate_through_the_java_4x_client(tmp_path):
    """The same release and expectation file through the Java 4.x client (rocketmq-client, drivers/java), the client
    the spec's remoting-4.x behaviours were read from, over ``JAVA_4X_SUBSET``: the gate passes, and it checks more
    than a handful."""
    _jars_or_not_applicable(NEWEST)
    from adapters.java_driver import java_command

    try:
        java_command("java-remoting://", "remoting")
    except NotApplicable as exc:
        pytest.skip(f"not applicable: {exc}")
    started = time.monotonic()
    run = _rmqc_run(tmp_path, "--target", f"release:{NEWEST}", "--profile", REMOTING_4X, "-k", JAVA_4X_SUBSET,
                    "--expectations", str(ROOT / "expectations" / f"rocketmq-{NEWEST}.yaml"), "--budget",
                    str(GATE_BUDGET_S), env={"RMQC_RELEASE_SDK_4X": "java"}, timeout_s=900)
    elapsed = time.monotonic() - started
    assert (tmp_path / "summary.json").exists(), f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    counts: dict[str, int] = {}
    for behaviour in summary["behaviours"].values():
        counts[behaviour["verdict"]] = counts.get(behaviour["verdict"], 0) + 1
    gate = summary["gate"]
    print(f"release:{NEWEST} gate through the Java 4.x client in {elapsed:.0f} s: {counts}; "
          f"expected failures {[e['id'] for e in gate['expected_failures']]}")
    assert run.returncode == 0 and gate["passed"], (
        f"unexpected failures {gate['unexpected_failures']}, unexpected passes {gate['unexpected_passes']}\n"
        + run.stdout[-4000:] + run.stderr[-2000:])
    assert summary["sdk"] == {"name": "rocketmq-client", "version": "4.9.8"}, summary.get("sdk")
    assert counts.get("pass", 0) >= 10


def test_a_release_started_with_a_changed_key_turns_the_gate_red_naming_the_behaviour(tmp_path):
    """``messageDelayLevel`` (DELAY-01's table) set to 3 wall seconds at every level instead of the scaled table
    the suite set: the delay property fails at its first example (its explicit one, level 1: 5 s of spec time,
    one wall second, comes after 15), the gate names DELAY-01 among its unexpected failures, and the failure is
    reported well within the test's budget (nothing shrinks on a wall clock)."""
    _jars_or_not_applicable(NEWEST)
    conf = tmp_path / "broken.conf"
    conf.write_text("# a broker whose delay levels are not the ones the suite set\n"
                    "messageDelayLevel=" + " ".join(["3s"] * 18) + "\n")
    budget = 60
    started = time.monotonic()
    run = _rmqc_run(tmp_path / "run", "--target", f"release:{NEWEST}", "--profile", REMOTING_4X, "-k",
                    "test_delayed_message_arrives_after_its_level", "--expectations",
                    str(ROOT / "expectations" / f"rocketmq-{NEWEST}.yaml"), "--budget", str(budget),
                    "--pytest-arg=--durations=0", env={"RMQC_RELEASE_BROKER_CONF": str(conf)}, timeout_s=900)
    elapsed = time.monotonic() - started
    assert (tmp_path / "run" / "summary.json").exists(), f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert run.returncode == 1 and not summary["gate"]["passed"], run.stdout[-3000:]
    named = {failure["id"] for failure in summary["gate"]["unexpected_failures"]}
    assert named == {"DELAY-01"}, named  # the behaviour the key broke, and only it
    assert summary["timing"]["release"]["keys"]["broker"]["messageDelayLevel"].startswith("3s 3s")  # recorded as set
    assert re.search(r"(Falsifying|Failing) (explicit )?example|Failing test case", run.stdout), run.stdout[-3000:]
    assert "Trying example" not in run.stdout and "Shrinking" not in run.stdout
    # the property's own time: its first example, bounded by the budget, and Hypothesis's one replay of it
    call = re.search(r"([\d.]+)s call +\S*test_delayed_message_arrives_after_its_level", run.stdout)
    assert call and float(call.group(1)) <= 2 * budget + 30, (call and call.group(0), elapsed)
