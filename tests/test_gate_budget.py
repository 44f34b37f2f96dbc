"""Every wait and every advance respects the budget on a wall-clock target (issue 55): a test that would need
more wall time than its budget has left is not applicable at once, with the figure, never run for an hour."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from serving import ROOT, verdicts_by_test

from adapters import base
from adapters.driver import DriverTarget
from history.outcomes import NotApplicable

SLOW = "python tests/drivers/wall_clock_driver.py"


@pytest.fixture
def slow_target(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv(base.BUDGET_ENV, "30")
    monkeypatch.chdir(ROOT)
    target = DriverTarget(SLOW, "remoting-4.x")
    yield target
    target.close()
    base.stop_test_clock()


def test_an_hour_long_advance_on_a_slow_target_is_not_applicable_at_once(slow_target: DriverTarget) -> None:
    assert slow_target.wall_clock and slow_target.time_scale == 1.0
    base.start_test_clock()
    started = time.monotonic()
    with pytest.raises(NotApplicable) as info:
        slow_target.advance(3_600_000)
    assert time.monotonic() - started < 2.0
    assert "needs 3,600 s of wall time" in str(info.value) and "budget 30 s" in str(info.value), info.value


def test_waits_are_held_to_what_is_left_of_the_budget(slow_target: DriverTarget, monkeypatch) -> None:
    base.start_test_clock()
    slow_target.advance(1_000)  # fits: a second of the wall
    monkeypatch.setattr(base, "_TEST_CLOCK", [time.monotonic() - 29.5])  # half a second left
    started = time.monotonic()
    with pytest.raises(NotApplicable, match="the condition did not hold before the budget ran out"):
        slow_target.wait_until(lambda: False, 60_000)
    assert time.monotonic() - started < 5.0
    with pytest.raises(NotApplicable, match=r"needs 5 s of wall time .*budget 30 s, 3\d s of it used"):
        slow_target.advance(5_000)
    base.stop_test_clock()  # outside a test (a soak), the target's own bounds hold
    assert slow_target.wait_until(lambda: True, 60_000)


def test_the_hour_long_orderly_test_is_not_applicable_through_rmqc_run(tmp_path: Path) -> None:
    """The orderly test that advances an hour of spec time, found running 446 s despite --budget 30 against a
    third-party broker: not applicable at once, with the figure."""
    out = tmp_path / "run"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", f"driver:{SLOW}", "--budget", "30",
                           "--profile", "remoting-4.x", "-k", "test_orderly_default_max_retries_forever",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    tests = verdicts_by_test(json.loads((out / "summary.json").read_text()))
    assert tests, done.stdout[-2000:]
    for name, test in tests.items():
        assert test["verdict"] == "not applicable", (name, test)
        assert "needs 3,600 s of wall time" in test["reason"] and "budget 30 s" in test["reason"], test["reason"]
    assert elapsed < 60, elapsed
