"""A slow target for tests/test_gate_budget.py: the reference driver, except that it says its clock is the wall's
at time scale 1 and lets real time pass for every ``advance`` and ``settle`` (as a third-party broker that cannot
compress time would), capped at ``CAP_S`` a call so that a harness that forgot its budget still ends."""
from __future__ import annotations

import sys
import time
from typing import Any

from drivers.reference_driver import ReferenceDriver

CAP_S = 120.0


class WallClockDriver(ReferenceDriver):
    def cmd_hello(self, m: dict[str, Any]) -> dict[str, Any]:
        return {**super().cmd_hello(m), "driver": "wall-clock-reference", "implementation": "wall-clock-reference",
                "clock": "wall", "time_scale": 1.0}

    def cmd_advance(self, m: dict[str, Any]) -> dict[str, Any]:
        time.sleep(min(CAP_S, int(m["ms"]) / 1000))
        return super().cmd_advance(m)

    def cmd_settle(self, m: dict[str, Any]) -> dict[str, Any]:
        time.sleep(min(CAP_S, 0.05))  # its clock moves on as the reference's settles: a short real pause
        return super().cmd_settle(m)


if __name__ == "__main__":
    WallClockDriver(sys.stdin, sys.stdout).run()
    sys.exit(0)
