"""A deliberately broken driver for tests/test_broken_drivers.py: the reference driver, except that every
``send`` command meets the fault named on the command line: ``crash`` (the process exits), ``hang`` (it
never answers) or ``garbage`` (it writes a line that is not JSON)."""
from __future__ import annotations

import sys
import time
from typing import Any

from drivers.reference_driver import ReferenceDriver

FAULTS = ("crash", "hang", "garbage")


class BrokenDriver(ReferenceDriver):
    def __init__(self, fault: str) -> None:
        super().__init__(sys.stdin, sys.stdout)
        self.fault = fault

    def serve(self, message: dict[str, Any]) -> None:
        if message.get("cmd") != "send":
            return super().serve(message)
        if self.fault == "crash":
            sys.stderr.write("broken driver: crashing on send\n")
            sys.stderr.flush()
            sys.exit(3)
        if self.fault == "hang":
            time.sleep(3600)
        self.stdout.write("garbage instead of a reply\n")
        self.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in FAULTS:
        sys.exit(f"usage: broken_driver.py {'|'.join(FAULTS)}")
    BrokenDriver(sys.argv[1]).run()
