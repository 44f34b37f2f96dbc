"""Start and stop the real ``rmqc serve`` command on a free loopback port, for the tests that need it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from frontends.process import spawn_listening

ROOT = Path(__file__).resolve().parent.parent


def start_serve(time_scale: float, *extra: str) -> tuple[subprocess.Popen, str]:
    """``rmqc serve --port 0``; returns the process and the address it printed."""
    return spawn_listening([sys.executable, "-m", "rmqc.cli", "serve", "--port", "0", "--time-scale",
                            str(time_scale), *extra], ROOT)


def stop_serve(process: subprocess.Popen) -> str:
    process.terminate()
    out, _ = process.communicate(timeout=10)
    return out
