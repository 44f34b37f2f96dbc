"""Every named scenario in ``spec/scenarios/`` runs through the target and is checked."""
from __future__ import annotations

import pytest

from suites.harness import run_checked
from suites.scenario import load_scenario, scenario_files


def _params() -> list:
    params = []
    for path in scenario_files():
        scenario = load_scenario(path)
        params.append(pytest.param(scenario, id=scenario.id,
                                   marks=[pytest.mark.spec(*scenario.spec), pytest.mark.profile(scenario.profile)]))
    return params


@pytest.mark.parametrize("scenario", _params())
def test_named_scenario(make_target, reference_for, scenario) -> None:
    run_checked(make_target, reference_for, scenario)
