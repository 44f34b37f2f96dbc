"""A target that answers wrongly, for the broken-target property (tests/test_broken_target_property.py, issue 55):
the reference driver, except that the faults of a plan meet the commands they name.

The plan is JSON in ``RMQC_FAULT_PLAN``: a list of ``{"cmd": NAME, "nth": K, "fault": KIND, "field": F}``; the
K-th ``NAME`` command this run serves meets ``KIND``:

- ``wrong``: the reply's field ``F`` (or its first field) carries a value of the wrong kind;
- ``missing``: the reply lacks field ``F`` (or its first field);
- ``exception``: the command fails with an error the driver reports (``injected fault``);
- ``late``: the reply comes after the harness stopped waiting (``RMQC_DRIVER_TIMEOUT_S`` + 1 s);
- ``die``: the driver exits mid-test;
- ``garbage``: the driver prints a line that is not JSON instead of its reply.

Each fault fires once per run, even across the driver processes the harness starts again after one died: the
ones that fired are appended to ``RMQC_FAULT_LOG`` (one JSON line each, with the command's target session), and a
new process skips them and counts on from there."""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Mapping

from drivers.reference_driver import ReferenceDriver

FAULTS = ("wrong", "missing", "exception", "late", "die", "garbage")
WRONG_VALUES = ("bogus", -1, None, [1, 2], {"x": 1})


class FaultyDriver(ReferenceDriver):
    def __init__(self, plan: list[Mapping[str, Any]], log: str) -> None:
        super().__init__(sys.stdin, sys.stdout)
        self.plan, self.log = plan, log
        fired = self._fired()
        self.seen: dict[str, int] = {}
        for entry in fired:  # a process started after one died counts on from the commands already served
            self.seen[entry["cmd"]] = max(self.seen.get(entry["cmd"], 0), int(entry["nth"]))
        self.done = {(e["cmd"], int(e["nth"])) for e in fired}
        self.mangle: tuple[Any, Mapping[str, Any]] | None = None

    def _fired(self) -> list[dict[str, Any]]:
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def _fire(self, entry: Mapping[str, Any], message: Mapping[str, Any]) -> None:
        with open(self.log, "a") as f:
            f.write(json.dumps({**entry, "target": message.get("target")}) + "\n")
        self.done.add((entry["cmd"], int(entry["nth"])))

    def serve(self, message: dict[str, Any]) -> None:
        cmd = str(message.get("cmd"))
        n = self.seen[cmd] = self.seen.get(cmd, 0) + 1
        entry = next((e for e in self.plan if e["cmd"] == cmd and int(e["nth"]) == n
                      and (cmd, n) not in self.done), None)
        if entry is None:
            return super().serve(message)
        self._fire(entry, message)
        fault = entry["fault"]
        if fault == "die":
            sys.stderr.write(f"faulty driver: dying on {cmd} #{n}\n")
            sys.stderr.flush()
            os._exit(7)
        if fault == "garbage":
            self.stdout.write(f"faulty driver garbage on {cmd} #{n}\n")
            self.stdout.flush()
            return
        if fault == "exception":
            self.write({"reply": message.get("id"), "ok": False,
                        "error": {"type": "RuntimeError", "message": f"injected fault on {cmd} #{n}"}})
            return
        if fault == "late":
            time.sleep(float(os.environ.get("RMQC_DRIVER_TIMEOUT_S", "2")) + 1)
            return super().serve(message)
        self.mangle = (message.get("id"), entry)
        super().serve(message)

    def write(self, message: Mapping[str, Any]) -> None:
        if self.mangle is not None and message.get("reply") == self.mangle[0]:
            entry = self.mangle[1]
            self.mangle = None
            fields = [k for k in message if k not in ("reply", "ok")]
            name = entry.get("field") if entry.get("field") in fields else (fields[0] if fields else None)
            message = dict(message)
            if name is not None and entry["fault"] == "missing":
                del message[name]
            elif name is not None:
                message[name] = WRONG_VALUES[int(entry["nth"]) % len(WRONG_VALUES)]
            else:
                message["ok"] = "bogus"  # a reply with nothing to get wrong: its status is
        super().write(message)


if __name__ == "__main__":
    FaultyDriver(json.loads(os.environ.get("RMQC_FAULT_PLAN", "[]")), os.environ["RMQC_FAULT_LOG"]).run()
    sys.exit(0)
