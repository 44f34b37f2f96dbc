"""Start a server process that prints ``listening on HOST:PORT`` first (``rmqc serve``, the benchmark's
acknowledge-only server), for tests and benchmarks that need the real command."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path


def spawn_listening(command: list[str], cwd: Path) -> tuple[subprocess.Popen, str]:
    """Run ``command`` with ``cwd`` on PYTHONPATH; return the process and the address its first line names."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONPATH": str(cwd)})
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"listening on (\S+)", line)
    if not match:
        process.kill()
        raise RuntimeError(f"{' '.join(command)} did not start: {line}{process.stdout.read()}")
    return process, match.group(1)
