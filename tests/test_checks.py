"""The checkers themselves: each can fail, names the spec ID, and the noise band is inconclusive."""
from __future__ import annotations

import pytest

from adapters.reference import ReferenceTarget
from history.outcomes import Inconclusive
from history.trace import Life
from suites.checks import SpecViolation, check_differential, check_life
from suites.harness import run_checked
from suites.oracle import Expected
from suites.scenario import MessagePlan, Scenario
from suites.tolerance import Tolerance, tolerance_for

EXPECTED = Expected(3, (10_000, 30_000), "CONSUMED", ("RETRY-CONC-04", "RETRY-CONC-06", "RETRY-CONC-07"))


def test_life_matching_the_spec_passes() -> None:
    check_life("m0", Life(3, (10_000, 30_000), "CONSUMED"), EXPECTED, Tolerance())


@pytest.mark.parametrize("life,spec_id", [
    (Life(2, (10_000,), "CONSUMED"), "RETRY-CONC-04"),
    (Life(3, (5_000, 30_000), "CONSUMED"), "RETRY-CONC-07"),
    (Life(3, (10_000, 30_000), "DLQ"), "RETRY-CONC-04"),
])
def test_life_off_the_spec_names_the_id(life: Life, spec_id: str) -> None:
    with pytest.raises(SpecViolation) as error:
        check_life("m0", life, EXPECTED, Tolerance())
    assert error.value.spec_id == spec_id and str(error.value).startswith(f"[{spec_id}] key m0:")


def test_timing_inside_the_noise_band_is_inconclusive() -> None:
    tolerance = Tolerance(250, 0.05)  # allowed 750 ms at 10 s
    check_life("m0", Life(3, (10_700, 30_000), "CONSUMED"), EXPECTED, tolerance)
    with pytest.raises(Inconclusive, match="key m0: deliveries \\[2\\]"):
        check_life("m0", Life(3, (11_000, 30_000), "CONSUMED"), EXPECTED, tolerance)
    with pytest.raises(SpecViolation):
        check_life("m0", Life(3, (11_600, 30_000), "CONSUMED"), EXPECTED, tolerance)


def test_differential_check_catches_a_target_that_disagrees_with_the_prediction() -> None:
    predicted = {"m0": Life(3, (10_000, 30_000), "CONSUMED")}
    check_differential({"m0": Life(3, (10_000, 30_000), "CONSUMED")}, predicted, Tolerance(), ["RETRY-CONC-04"])
    with pytest.raises(SpecViolation, match=r"\[RETRY-CONC-04\] key m0: wait before delivery 3"):
        check_differential({"m0": Life(3, (10_000, 31_000), "CONSUMED")}, predicted, Tolerance(), ["RETRY-CONC-04"])
    with pytest.raises(SpecViolation, match="messages seen"):
        check_differential({}, predicted, Tolerance(), ["RETRY-CONC-04"])


class _RealClockLookalike(ReferenceTarget):
    """The reference under another name and without the virtual-clock capability, so the harness
    treats it as a real target and runs the differential comparison and real-clock tolerances."""

    def __init__(self, profile: str, **kw) -> None:
        super().__init__(profile, **kw)
        self.name = "lookalike"
        self.capabilities = self.capabilities - {"clock.virtual"}


def test_harness_runs_the_differential_path_for_other_targets() -> None:
    made = []

    def make(profile: str, seed: int = 0) -> ReferenceTarget:
        made.append(_RealClockLookalike(profile))
        return made[-1]

    predictions = []

    def reference_for(profile: str, seed: int = 0) -> ReferenceTarget:
        predictions.append(ReferenceTarget(profile))
        return predictions[-1]

    run_checked(make, reference_for, Scenario("push4x-concurrent", (MessagePlan("m0", 2),)))
    assert len(made) == 1 and len(predictions) == 1
    assert tolerance_for(made[0]) == Tolerance(250, 0.05)


def test_a_lateness_window_accepts_late_waits_inside_it_only() -> None:
    """RETRY-5X-11's window: a 5.x redelivery may come 2-5 s after its documented wait, never earlier."""
    window = Tolerance(0, 0.0, 2_000, 5_000)
    assert window.accepts(12_000, 10_000) and window.accepts(15_000, 10_000)
    assert not window.accepts(10_000, 10_000) and not window.accepts(15_001, 10_000)
    assert window.spread_ms == 3_000
    check_life("m0", Life(3, (12_000, 33_000), "CONSUMED"), EXPECTED, window)
    with pytest.raises(SpecViolation, match="2000-5000 ms late by RETRY-5X-11"):
        check_life("m0", Life(3, (10_000, 30_000), "CONSUMED"), EXPECTED, window)



def test_broadcast_instances_apart_pass_and_a_copy_as_late_as_a_retry_fails() -> None:
    """RETRY-CONC-02: two broadcasting instances each get the message once; how far apart their copies come is
    their first pulls' business (2.9 s: one pull refused before the broker held the instance's subscription), but
    a copy a retry's first delay (level 3, 10 s) after the other is a retry, which broadcasting never makes."""
    from suites.checks import check_scenario
    from suites.oracle import default_oracle

    scenario = Scenario("push4x-broadcast", (MessagePlan("m0", failures=1),), instances=2)
    check_scenario(scenario, {"m0": Life(2, (2_918,), "DROPPED")}, default_oracle(), Tolerance())
    with pytest.raises(SpecViolation, match=r"\[RETRY-CONC-02\] key m0: the instances' deliveries came \[10000\]"):
        check_scenario(scenario, {"m0": Life(2, (10_000,), "DROPPED")}, default_oracle(), Tolerance())
    with pytest.raises(SpecViolation, match=r"\[RETRY-CONC-02\] key m0: 3 deliveries"):
        check_scenario(scenario, {"m0": Life(3, (0, 0), "DROPPED")}, default_oracle(), Tolerance())
