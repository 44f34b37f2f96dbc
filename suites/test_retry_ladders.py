"""Differential, property-based suites of the retry ladders of every consumer kind.

Hypothesis draws messages with failure scripts; each scenario runs on the target and is checked
against the spec (the oracle) and, for targets other than the reference, against the reference's
prediction of the same scenario.
"""
from __future__ import annotations

import pytest
from hypothesis import given

from suites import strategies
from suites.harness import run_checked
from suites.scenario import MessagePlan, Scenario


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-01", "RETRY-CONC-03", "RETRY-CONC-04", "RETRY-CONC-05", "RETRY-CONC-06",
                  "RETRY-CONC-07", "RETRY-CONC-09", "RETRY-CONC-10", "DELAY-04", "DELAY-05", "DELAY-06", "ALLOC-01")
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
@pytest.mark.spec("ORDER-4X-01", "ORDER-4X-02", "ORDER-4X-03", "RETRY-CONC-11")
@given(scenario=strategies.orderly_4x())
def test_orderly_4x_local_retry_and_dlq(make_target, reference_for, scenario: Scenario) -> None:
    run_checked(make_target, reference_for, scenario)


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-01", "RETRY-5X-03", "RETRY-5X-05", "RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-10")
@given(scenario=strategies.push_5x())
def test_push_5x_nack_ladder(make_target, reference_for, scenario: Scenario) -> None:
    """Attempt n fails -> invisible for durations[n-1]; the redelivery at max attempts goes to the DLQ."""
    run_checked(make_target, reference_for, scenario)


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-08", "FIFO-01", "FIFO-04", "FIFO-05", "FIFO-06")
@given(scenario=strategies.fifo_5x())
def test_fifo_5x_local_retry_and_dlq(make_target, reference_for, scenario: Scenario) -> None:
    run_checked(make_target, reference_for, scenario)


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-07", "CLAIM-01", "CLAIM-02")
def test_full_16_retry_ladder_4x(make_target, reference_for) -> None:
    """The documented 16 retries 10 s ... 2 h, then %DLQ%group (true for 4.x remoting)."""
    life = run_checked(make_target, reference_for, Scenario("push4x-concurrent", (MessagePlan("m0", failures=99),)))
    assert life["m0"].waits_ms == (10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
                                   480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000)
    assert sum(life["m0"].waits_ms) == 17_140_000


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-06", "RETRY-5X-07", "CLAIM-01", "CLAIM-04")
def test_full_17_attempt_ladder_5x(make_target, reference_for) -> None:
    """5.x clients: 1 s, 5 s, ... 30 m between 17 attempts -- not the docs' 10 s ... 2 h (CLAIM-01 false for gRPC)."""
    from suites.tolerance import close_enough

    target_seen: list = []

    def make(profile):
        target_seen.append(make_target(profile))
        return target_seen[-1]

    life = run_checked(make, reference_for, Scenario("push5x", (MessagePlan("m0", failures=99),)))
    target = target_seen[0]
    assert life["m0"].deliveries == 17 and life["m0"].final == "DLQ"
    assert close_enough(target, life["m0"].waits_ms[0], 1000), life["m0"].waits_ms
    assert close_enough(target, life["m0"].waits_ms[-1], 1_800_000), life["m0"].waits_ms
    assert not any(close_enough(target, w, 7_200_000) for w in life["m0"].waits_ms), life["m0"].waits_ms


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-08", "RETRY-CONC-11")
@pytest.mark.parametrize("rt_failures,expected_deliveries,final", [(2, 3, "CONSUMED"), (99, 16, "DLQ")])
def test_send_back_failure_falls_back_to_republish(make_target, rt_failures, expected_deliveries, final) -> None:
    """Send-back always failing: the client republishes with RECONSUME_TIME rt+1, so the DLQ comes one attempt early."""
    from history.trace import lives
    from suites.scenario import run_scenario

    target = make_target()
    scenario = Scenario("push4x-concurrent", (MessagePlan("m0", failures=rt_failures),), faults={"send_back": -1})
    got = lives(run_scenario(target, scenario), "G")["m0"]
    assert got.deliveries == expected_deliveries, f"[RETRY-CONC-08] {got}"
    assert got.final == final, f"[RETRY-CONC-08] {got}"
    if final == "CONSUMED":
        assert got.waits_ms == (10_000, 30_000), f"[RETRY-CONC-08] DELAY = 3 + rt on the fallback path: {got}"


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
