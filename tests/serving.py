"""Start and stop the real ``rmqc serve`` command on a free loopback port, for the tests that need it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from frontends.process import spawn_listening
from history.outcomes import NotApplicable

ROOT = Path(__file__).resolve().parent.parent
VENV_4X = ROOT / ".venv-4x" / "bin" / "python"


def start_serve(time_scale: float, *extra: str) -> tuple[subprocess.Popen, str]:
    """``rmqc serve --port 0``; returns the process and the address it printed."""
    return spawn_listening([sys.executable, "-m", "rmqc.cli", "serve", "--port", "0", "--time-scale",
                            str(time_scale), *extra], ROOT)


STOP_S = 30.0
"""How long ``rmqc serve`` may take to stop on SIGTERM (a one-second gRPC grace, then its brokers and name server)
on a loaded machine: make test runs the project's tests at nice 10 beside the real-release jobs, where 10 s once ran
out after a test had passed."""


def stop_serve(process: subprocess.Popen) -> str:
    """SIGTERM, and its output once it exits; killed, and an AssertionError saying so, when it outlasts ``STOP_S``."""
    process.terminate()
    try:
        out, _ = process.communicate(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate(timeout=10)
        raise AssertionError(f"rmqc serve did not stop within {STOP_S:.0f} s of SIGTERM (killed); its last output: "
                             f"{(out or '')[-1500:]}") from None
    return out


def namesrv_of(process: subprocess.Popen) -> str:
    """The remoting name server address ``rmqc serve`` prints on its second line."""
    assert process.stdout is not None
    line = process.stdout.readline()
    return line.split("name server on ")[1].split(",")[0]


def require_4x_sdk() -> None:
    """Not applicable, with the reason, where the 4.x SDK or its librocketmq cannot run here."""
    if not VENV_4X.exists():
        raise NotApplicable("the 4.x environment is missing (make driver-4x)")
    probe = subprocess.run([str(VENV_4X), "-c", "import sys; sys.path.insert(0, 'drivers'); "
                            "import remoting4x_driver as d; d.library_check()"], cwd=ROOT, capture_output=True,
                           text=True, timeout=30)
    if probe.returncode != 0:
        raise NotApplicable(f"rocketmq-client-python cannot run here: {probe.stderr.strip().splitlines()[-1:]}")


def verdicts_by_test(summary: dict) -> dict[str, dict]:
    """Each test of a run summary once, by name, with its verdict: a failing test fails the behaviour its
    failure names and leaves the others it cites inconclusive, so its failing entry is the one kept."""
    tests: dict[str, dict] = {}
    for behaviour in summary["behaviours"].values():
        for test in behaviour["tests"]:
            if tests.get(test["test"], {}).get("verdict") != "fail":
                tests[test["test"]] = test
    return tests
