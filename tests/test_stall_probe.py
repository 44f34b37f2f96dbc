"""The soak's stall probe (``rmqc.stall_probe``): a stretch in which the process could not run is measured on the
target's clock, merged with those it touches, and bounded in number."""
from __future__ import annotations

import sys
import time

from rmqc import stall_probe
from rmqc.stall_probe import StallProbe


def _ms() -> int:
    return int(time.monotonic() * 1000)


def test_a_process_that_cannot_run_for_300_ms_is_one_stall_of_about_that_length():
    probe = StallProbe(_ms).start()
    time.sleep(0.2)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(5.0)  # the busy loop below keeps the interpreter: the probe's thread cannot run
    try:
        began = _ms()
        while _ms() - began < 300:
            pass
    finally:
        sys.setswitchinterval(previous)
    time.sleep(0.2)
    probe.stop()
    spans = probe.statement()["spans"]
    assert len(spans) == 1, spans
    assert 250 <= spans[0]["to_ms"] - spans[0]["from_ms"] <= 1000 and spans[0]["from_ms"] <= began + 20


def test_a_quiet_process_has_no_stall():
    probe = StallProbe(_ms).start()
    time.sleep(0.5)
    probe.stop()
    assert probe.statement()["spans"] == []


def test_touching_stalls_merge_and_past_the_bound_the_last_span_grows(monkeypatch):
    monkeypatch.setattr(stall_probe, "MAX_SPANS", 3)
    probe = StallProbe(_ms)
    for a, b in [(0, 100), (100, 180), (500, 600), (900, 950), (2000, 2100), (3000, 3300)]:
        probe.note(a, b)
    assert probe.statement()["spans"] == [{"from_ms": 0, "to_ms": 180}, {"from_ms": 500, "to_ms": 600},
                                          {"from_ms": 900, "to_ms": 3300}]
    assert probe.statement()["longest_ms"] == 300
