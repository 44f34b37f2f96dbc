"""A warm pytest for the mutation run: ``python -m mutation.zygote [--preload-reference]`` imports pytest,
Hypothesis and the harness once, then forks one child per request, which runs ``pytest.main`` and exits.

Every mutant's suite run starts in a fraction of the seconds a fresh interpreter takes to import and
collect. Requests and answers are one JSON object per line on stdin and stdout:
``{"argv": [...], "cwd": DIR, "path": [DIR, ...], "timeout_s": S}`` and ``{"code": N | null, "output": TAIL}``
(null: the child outlived its timeout and was killed). ``path`` goes first on the child's ``sys.path``.

With ``--preload-reference`` the checkout's ``reference_impl`` is imported too (the ``target`` channel,
where the harness and the oracle use the checkout); without it the child imports ``reference_impl`` from
``path`` (the ``vectors`` channel, where the suites call the mutated rules themselves).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time

POLL_S = 0.01


def _preload(reference: bool) -> None:
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401
    import yaml  # noqa: F401

    from spec.loader import default_spec

    default_spec()  # the catalog, read and validated once (a second a run); it imports nothing of reference_impl
    if reference:
        import adapters.driver  # noqa: F401
        import suites.harness  # noqa: F401
        import suites.oracle  # noqa: F401


def _child(request: dict, out_fd: int) -> None:
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    try:
        import pytest

        os.chdir(request["cwd"])
        if request.get("path"):  # a scratch copy: no bytecode written beside the mutant
            sys.path[:0] = list(request["path"])
            sys.dont_write_bytecode = True
        code = int(pytest.main(list(request["argv"])))
    except BaseException:  # anything at all: the parent must get an exit code, never a second zygote
        import traceback

        traceback.print_exc()
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve(stdin=sys.stdin, stdout=sys.stdout) -> None:  # type: ignore[no-untyped-def]
    for line in stdin:
        request = json.loads(line)
        with tempfile.TemporaryFile() as captured:
            pid = os.fork()
            if pid == 0:
                _child(request, captured.fileno())
            deadline = time.monotonic() + float(request.get("timeout_s", 600))
            code: int | None = None
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    code = os.waitstatus_to_exitcode(status)
                    break
                if time.monotonic() >= deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    break
                time.sleep(POLL_S)
            captured.seek(0)
            output = captured.read()[-6000:].decode(errors="replace")
        stdout.write(json.dumps({"code": code, "output": output}) + "\n")
        stdout.flush()


if __name__ == "__main__":
    _preload("--preload-reference" in sys.argv[1:])
    serve()
