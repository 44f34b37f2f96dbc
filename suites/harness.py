"""Run one scenario on the target and on the reference, and check both the oracle and the prediction."""
from __future__ import annotations

from typing import Callable

from adapters.base import Target

from .checks import check_differential, check_scenario, tolerance_for
from .oracle import default_oracle
from .scenario import Life, Scenario, lives, run_scenario


def run_checked(make_target: Callable[..., Target], reference_for: Callable[..., Target],
                scenario: Scenario) -> dict[str, Life]:
    target = make_target(scenario.profile)
    observed = lives(run_scenario(target, scenario), scenario.group)
    tolerance = tolerance_for(target)
    check_scenario(scenario, observed, default_oracle(), tolerance)
    if target.name != "reference":
        predicted = lives(run_scenario(reference_for(scenario.profile), scenario), scenario.group)
        check_differential(observed, predicted, tolerance, scenario.spec or ("RETRY-CONC-04",))
    return observed
