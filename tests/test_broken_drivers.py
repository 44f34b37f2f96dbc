"""A driver that crashes, hangs or writes a line that is not JSON: the tests it affects fail with a one-line
reason naming the driver and what went wrong, the run goes on and ends (tests/drivers/broken_driver.py
breaks on every send and is otherwise the reference driver)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from serving import ROOT, verdicts_by_test

SELECTION = "test_system_busy_is_retried_from_530 or test_unknown_topic_is_auto_created_with_four_queues"
"""Three tests that send through the target (each must fail), run in one process one after the other."""


@pytest.mark.parametrize("fault,cause", [
    ("crash", "the driver exited (code 3): broken driver: crashing on send"),
    ("hang", "no answer to 'send' within 3 s (hung)"),
    ("garbage", "wrote a line that is not JSON: 'garbage instead of a reply'"),
])
def test_a_broken_driver_fails_the_tests_it_affects_and_never_hangs_the_run(tmp_path: Path, fault: str,
                                                                             cause: str) -> None:
    driver = f"python tests/drivers/broken_driver.py {fault}"
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", f"driver:{driver}",
                          "--profile", "remoting-4.x", "-k", SELECTION, "--out", str(tmp_path / "run")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "RMQC_DRIVER_TIMEOUT_S": "3"})
    elapsed = time.monotonic() - started
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    tests = verdicts_by_test(summary)
    print(f"\n{fault}: {len(tests)} tests in {elapsed:.1f} s; " + "; ".join(sorted({t['reason'] for t in tests.values()})))
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert len(tests) == 3, sorted(tests)
    for name, test in tests.items():
        assert test["verdict"] == "fail", (name, test)
        reason = test["reason"]
        assert "\n" not in reason and f"driver:{driver}" in reason and cause in reason, reason
    assert elapsed < 120
