"""A vendor's subtly broken broker or SDK, one bug at a time: the reference with one bug patched in, served as
a driver target (tests/drivers/patched_reference_driver.py), judged by the unchanged suites through
``rmqc run``. Each bug must fail the suite named for its class with the spec ID and words that say what was
wrong; the unbroken reference driver passes the same selections.

The classes are those of issue 22: where retried and dead-lettered copies are stored, the properties they
carry, identity across retries, receipt handles, what a listener sees on a redelivery, consumer modes that
never send back, rounding at the timer's edges, FIFO bookkeeping (the broker's consumed counts, the SDK's
local attempts); and, from issue 37, a clamp or a range left out (the orderly suspend time, a receive's or a
change's invisible time)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from serving import ROOT, verdicts_by_test

from history.profiles import BROKER_PROFILES, GRPC_5X, REMOTING_4X

STORED_4X = (REMOTING_4X, "test_4x_retry_and_dead_letter_copies_are_stored")

BREAKS = {  # name -> (profile, -k selection, the spec tag, words of the failing check)
    "retry-topic-misnamed": (*STORED_4X, "[RETRY-CONC-04]", "%RETRY%G holds copies with reconsume times []"),
    "dlq-topic-misnamed": (*STORED_4X, "[RETRY-CONC-04]", "%DLQ%G holds [], want reconsume times"),
    "pop-retry-topic-v2-by-default": (GRPC_5X, "test_5x_pop_retry_copies", "[RETRY-5X-10]", "%RETRY%G_T holds"),
    "delay-kept-on-restore": (*STORED_4X, "[DELAY-06]", "still carries DELAY="),
    "retry-topic-property-is-the-retry-topic": (*STORED_4X, "[RETRY-CONC-04]", "carries RETRY_TOPIC '%RETRY%G'"),
    "dead-letter-reconsume-times-kept": (*STORED_4X, "[RETRY-CONC-04]", "%DLQ%G holds ["),
    "redelivery-shows-offset-id": (*STORED_4X, "[MSGID-02]", "a redelivery keeps the client's id"),
    "listener-sees-the-retry-topic": (*STORED_4X, "[RETRY-CONC-09]", "a redelivery shows the original topic"),
    "stale-handle-acked": (GRPC_5X, "test_simple_consumer_ack_and_change_invisible", "[RETRY-5X-09]",
                           "an ack of an expired handle must be INVALID_RECEIPT_HANDLE"),
    "broadcast-sends-back": (REMOTING_4X, "test_a_broadcasting_consumer_sends_nothing_back", "[RETRY-CONC-02]",
                             "a broadcasting consumer's failures left"),
    "python-fifo-counts-from-server-attempt": (GRPC_5X, "test_a_fifo_message_redelivered_by_the_server",
                                              "[RETRY-5X-08]", "the python consumer ran 'a' 2 times"),
    "fifo-consumed-count-kept": (GRPC_5X, "test_a_fifo_message_redelivered_by_the_server", "[FIFO-06]",
                                 "least count + 1 = attempt 2; got [('a', 1), ('b', 1)]"),
    "cpp-orderly-retry-forgotten": (REMOTING_4X, "test_generated_workloads_tell_the_reference_story",
                                    "[ORDER-4X-03]", "observed nothing more; the reference has RETRY_SCHEDULED"),
    "timer-exact-tick-floored": (GRPC_5X, "test_timed_message_on_a_tick_edge", "[DELAY-08]", "the spec says once at"),
    "timed-message-lost": (GRPC_5X, "test_timed_messages_tell_the_reference_story", "[DELAY-08]",
                           "observed nothing more; the reference has DELIVER"),
    "suspend-unclamped": (REMOTING_4X, "test_the_orderly_suspend_time_is_clamped_through_the_target",
                          "[ORDER-4X-02]", "the clamp to [10, 30000] ms gives"),
    "receive-invisible-unbounded-below": (GRPC_5X, "test_a_receive_takes_only_an_invisible_time_within_its_bounds",
                                          "[RETRY-5X-09]", "the bounds [10000, 43200000] ms say 40011"),
    "change-invisible-unbounded-above": (GRPC_5X, "test_a_change_of_invisible_duration_takes_only_a_time_within",
                                         "[RETRY-5X-09]", "the bounds [0, 43200000] ms say 40011"),
    "gone-client-handles-kept": (GRPC_5X, "test_a_fifo_consumer_leaving_mid_retry_hands_over_as_the_reference_does",
                                 "[RETRY-5X-08, RETRY-5X-09]", "the reference has DELIVER at +1000 ms"),
}


def run_suites(tmp_path: Path, driver: str, profile: str, selection: str) -> tuple[int, list[dict]]:
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", f"driver:{driver}",
                           "--profile", profile, "-k", selection, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    summary = json.loads((out / "summary.json").read_text())
    tests = verdicts_by_test(summary)
    return done.returncode, list(tests.values())


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_broken_target_fails_the_suite_for_its_class(tmp_path: Path, name: str) -> None:
    profile, selection, tag, words = BREAKS[name]
    code, tests = run_suites(tmp_path, f"python tests/drivers/patched_reference_driver.py {name}", profile, selection)
    failed = [t for t in tests if t["verdict"] == "fail"]
    assert code == 1 and failed, tests
    reasons = " | ".join(t["reason"] for t in failed)
    assert tag in reasons and words in reasons, reasons


@pytest.mark.parametrize("profile", BROKER_PROFILES)
def test_the_unbroken_reference_driver_passes_the_same_selections(tmp_path: Path, profile: str) -> None:
    selection = " or ".join(sorted({s for p, s, *_ in BREAKS.values() if p == profile}))
    code, tests = run_suites(tmp_path, "python drivers/reference_driver.py", profile, selection)
    assert code == 0, [t for t in tests if t["verdict"] != "pass"]
    assert sum(t["verdict"] == "pass" for t in tests) >= len({s for p, s, *_ in BREAKS.values() if p == profile})
