"""4.x consumer retry through the target: concurrent, orderly and broadcasting consumers, the send-back path and its fallbacks.

Hypothesis draws messages with failure scripts; each scenario runs on the target and is checked against the
spec (the oracle) and, for targets other than the reference, against the reference's prediction of it."""
from __future__ import annotations

import pytest
from hypothesis import given

from suites import strategies
from suites.checks import require
from suites.harness import run_checked
from suites.scenario import MessagePlan, Scenario
from suites.tolerance import tolerance_for


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-01", "RETRY-CONC-03", "RETRY-CONC-04", "RETRY-CONC-05", "RETRY-CONC-06",
                  "RETRY-CONC-07", "RETRY-CONC-09", "RETRY-CONC-10", "DELAY-04", "DELAY-05", "DELAY-06", "ALLOC-01",
                  "SDK-CPP-01", "SDK-CPP-09")
@given(scenario=strategies.concurrent_4x())
def test_concurrent_4x_retry_ladder(make_target, reference_for, scenario: Scenario) -> None:
    """A failing message comes back after level 3 + rt, from %RETRY%group, until rt reaches max, then DLQ."""
    run_checked(make_target, reference_for, scenario)


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-02")
@given(scenario=strategies.broadcast_4x())
def test_broadcasting_never_retries(make_target, reference_for, scenario: Scenario) -> None:
    run_checked(make_target, reference_for, scenario)


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ORDER-4X-01", "ORDER-4X-02", "ORDER-4X-03", "RETRY-CONC-11", "SDK-CPP-03")
@given(scenario=strategies.orderly_4x())
def test_orderly_4x_local_retry_and_dlq(make_target, reference_for, scenario: Scenario) -> None:
    run_checked(make_target, reference_for, scenario)


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-07", "CLAIM-01", "CLAIM-02")
def test_full_16_retry_ladder_4x(make_target, reference_for) -> None:
    """The documented 16 retries 10 s ... 2 h, then %DLQ%group (true for 4.x remoting)."""
    life = run_checked(make_target, reference_for, Scenario("push4x-concurrent", (MessagePlan("m0", failures=99),)))
    assert life["m0"].waits_ms == LADDER_4X_MS
    assert sum(life["m0"].waits_ms) == 17_140_000


LADDER_4X_MS = (10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
                480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000)
"""Delay levels 3..18 of the default ``messageDelayLevel``: the waits of retries 1..16 (RETRY-CONC-07)."""


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-08", "RETRY-CONC-11")
@pytest.mark.parametrize("rt_failures,expected_deliveries,final", [(2, 3, "CONSUMED"), (99, 16, "DLQ")])
def test_send_back_failure_falls_back_to_republish(make_target, rt_failures, expected_deliveries, final) -> None:
    """Send-back always failing: the client republishes with RECONSUME_TIME rt+1, so the DLQ comes one attempt early."""
    from history.trace import lives
    from suites.scenario import run_scenario

    target = make_target()
    target.require_duration(sum(LADDER_4X_MS[:expected_deliveries - 1]) + 60_000)
    scenario = Scenario("push4x-concurrent", (MessagePlan("m0", failures=rt_failures),), faults={"send_back": -1})
    got = lives(run_scenario(target, scenario), "G")["m0"]
    assert got.deliveries == expected_deliveries, f"[RETRY-CONC-08] {got}"
    assert got.final == final, f"[RETRY-CONC-08] {got}"
    if final == "CONSUMED":
        tolerance = tolerance_for(target)  # exact on a virtual clock; a wall clock's lag within the tolerance
        assert len(got.waits_ms) == 2 and all(tolerance.accepts(seen, want) for seen, want in
                                              zip(got.waits_ms, LADDER_4X_MS)), \
            f"[RETRY-CONC-08] DELAY = 3 + rt on the fallback path, 10 s then 30 s: {got}"


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-03")
def test_both_send_back_paths_failing_resubmits_locally_after_5s(make_target) -> None:
    from history.trace import lives
    from suites.scenario import run_scenario

    target = make_target()
    scenario = Scenario("push4x-concurrent", (MessagePlan("m0", failures=1),),
                        faults={"send_back": 1, "retry_republish": 1})
    got = lives(run_scenario(target, scenario), "G")["m0"]
    assert (got.deliveries, got.waits_ms, got.final) == (2, (5000,), "CONSUMED"), f"[RETRY-CONC-03] {got}"
    assert got.attempts == (1, 2), f"[RETRY-CONC-03] local resubmission counts rt + 1: {got}"


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-02")
def test_broadcasting_failure_advances_the_local_offset(target):
    """BROADCASTING, RECONSUME_LATER on the only cached message: dropped, offset = queueOffset + 1."""
    from history.values import ListenerOutcome

    target.require("observe.client_offsets")
    target.create_topic("T", read_queues=1, write_queues=1)
    target.push_consumer_4x("G", "T", lambda v: ListenerOutcome.RECONSUME_LATER, broadcasting=True)
    target.producer().send("T", b"x", key="b")
    target.settle()
    commits = [e.queue_offset for e in target.events() if e.kind == "OFFSET_COMMIT" and e.topic == "T"]
    delivered = [e for e in target.events() if e.kind == "DELIVER"]
    require(commits == [1] and len(delivered) == 1, "RETRY-CONC-02", f"commits {commits}, deliveries {len(delivered)}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ORDER-4X-03", "ORDER-4X-02", "CLAIM-03")
def test_orderly_default_max_retries_forever_and_blocks_the_queue(target):
    """maxReconsumeTimes -1 (Integer.MAX_VALUE): m0 is retried every second for an hour; m1 behind it waits.
    The counts are the Java consumer's on spec time; the C++ client's ladder is SDK-CPP-03's scenarios."""
    from history.outcomes import NotApplicable
    from history.values import ListenerOutcome

    if target.client_timer_scale != 1.0 or "sdk.cpp4x" in target.capabilities:
        raise NotApplicable(f"{target.name}: counts an hour of the Java consumer's 1 s suspends on spec time; "
                            "this client's timers run on the wall clock (its ladder: SDK-CPP-03)")

    target.create_topic("T", read_queues=1, write_queues=1)
    target.push_consumer_4x("G", "T", lambda v: ListenerOutcome.SUSPEND if v.key == "m0" else ListenerOutcome.SUCCESS,
                            orderly=True)
    producer = target.producer()
    producer.send("T", b"0", key="m0")
    producer.send("T", b"1", key="m1")
    target.advance(3_600_000)
    times = [e.ts_ms for e in target.events() if e.kind == "DELIVER" and e.key == "m0"]
    require(len(times) == 3601 and times[-1] == 3_600_000, "ORDER-4X-03", f"{len(times)} deliveries, last at {times[-1]}")
    require({b - a for a, b in zip(times, times[1:])} == {1000}, "ORDER-4X-02", "suspend time is not 1000 ms")
    require(not [e for e in target.events() if e.kind == "DELIVER" and e.key == "m1"], "ORDER-4X-03",
            "m1 was delivered while m0 blocked the queue")
    require(not [e for e in target.events() if e.kind == "DLQ"], "ORDER-4X-03", "a DLQ with an unlimited max")
