"""`rmqc run --target remoting://NAMESRV` against `rmqc serve`: the remoting-4.x suites through the official
4.x SDK (rocketmq-client-python 2.0.0 over librocketmq), set up through the admin codes only. Every
behaviour it can run passes, or is a recorded habit of the C++ client the SDK wraps (SDK-CPP-*): none
fails. Not applicable, with the reason, where the 4.x SDK cannot run here."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sdk_runs import assert_no_failure, verdicts_of
from serving import ROOT, namesrv_of, require_4x_sdk, start_serve, stop_serve

MUST_PASS = ("RETRY-CONC-04", "RETRY-CONC-07", "DELAY-01", "ORDER-4X-02", "SDK-CPP-03", "SDK-CPP-08", "LIMIT-02",
             "TX-02", "TX-03")
"""Behaviours the 4.x SDK runs end to end through rmqc serve; they pass, not only 'not failed'."""


@pytest.mark.spec("RETRY-CONC-04", "SDK-CPP-01", "SDK-CPP-03", "SDK-CPP-08", "TX-03")
def test_the_remoting_suites_pass_through_the_4x_sdk(tmp_path: Path) -> None:
    require_4x_sdk()
    process, _ = start_serve(0.01)
    try:
        namesrv = namesrv_of(process)
        run = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", f"remoting://{namesrv}",
                              "--profile", "remoting-4.x", "--budget", "20", "--out", str(tmp_path / "run")],
                             cwd=ROOT, capture_output=True, text=True, timeout=1500,
                             env={**os.environ, "PYTHONPATH": str(ROOT), "RMQC_REALTIME_EXAMPLES": "2"})
    finally:
        stop_serve(process)
    summary, verdicts = verdicts_of(tmp_path / "run", "remoting-4.x verdicts through rocketmq-client-python 2.0.0")
    assert_no_failure(summary, run)
    assert all(verdicts.get(sid) == "pass" for sid in MUST_PASS), {sid: verdicts.get(sid) for sid in MUST_PASS}
