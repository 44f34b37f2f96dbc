"""Run one scenario on the target and on the reference, and check both the oracle and the prediction."""
from __future__ import annotations

import dataclasses
from typing import Callable

from adapters.base import Target
from history.outcomes import NotApplicable
from history.profiles import GRPC_5X, REMOTING_4X
from history.trace import Life, lives
from history.values import CPP_4X_SDK as CPP_SDK
from history.values import NODE_5X_SDK

from .checks import check_differential, check_scenario, client_timed, scaled_waits
from .oracle import default_oracle
from .reach import out_of_reach
from .scenario import Scenario, run_scenario
from .tolerance import tolerance_for


def drives_nodejs_only(target: Target) -> bool:
    """The target drives the Node.js client and nothing that can act as another one (SDK-NODE-*)."""
    return "sdk.nodejs" in target.capabilities and "sdk.java" not in target.capabilities


def fit_to_target(target: Target, scenario: Scenario) -> Scenario:
    """A target that drives only the Python 5.x SDK runs a scenario drawn for the Java one as Python, one that
    drives the Node.js SDK runs every 5.x scenario as Node.js; the reference's prediction then runs the same
    scenario, so the comparison stays exact."""
    if scenario.profile == GRPC_5X and drives_nodejs_only(target):
        # the Node.js client's habits (SDK-NODE-*): a scenario's pinned expectations are another client's, so
        # the oracle and the reference's prediction, both aware of these habits, judge every key instead
        return dataclasses.replace(scenario, sdk=NODE_5X_SDK, expect=())
    if scenario.profile == GRPC_5X and scenario.sdk == "java" and "sdk.java" not in target.capabilities \
            and "sdk.python" in target.capabilities:
        return dataclasses.replace(scenario, sdk="python")
    if scenario.profile == REMOTING_4X and "sdk.cpp4x" in target.capabilities:
        return dataclasses.replace(scenario, sdk=CPP_SDK)  # the C++ client's habits (SDK-CPP-01..03)
    return scenario


def expected_duration_ms(scenario: Scenario, client_timer_scale: float = 1.0) -> int:
    """Spec time the longest ladder of the scenario takes, by the oracle, plus its longest wait once more
    (the wait after the last failure, before the dead letter)."""
    oracle = default_oracle()
    factor = client_timer_scale if client_timed(scenario) else 1.0
    longest = 0
    for p in scenario.messages:
        waits = oracle.expected(scenario.consumer, p.failures, max_reconsume_times=scenario.max_reconsume_times,
                                retry_max_times=scenario.retry_max_times, sdk=scenario.sdk).waits_ms
        longest = max(longest, int((sum(waits) + max(waits, default=0)) * factor))
    return longest


def run_checked(make_target: Callable[..., Target], reference_for: Callable[..., Target],
                scenario: Scenario) -> dict[str, Life]:
    target = make_target(scenario.profile)
    scenario = fit_to_target(target, scenario)
    factor = target.client_timer_scale
    try:
        target.require_duration(expected_duration_ms(scenario, factor))
        observed = lives(run_scenario(target, scenario), scenario.group)
    except NotApplicable as exc:  # this example only: another may be within the target's reach
        out_of_reach(exc)
    tolerance = tolerance_for(target, redelivery=scenario.consumer == "push5x")  # RETRY-5X-11
    check_scenario(scenario, observed, default_oracle(), tolerance, factor)
    if target.name != "reference":
        predicted = lives(run_scenario(reference_for(scenario.profile), scenario), scenario.group)
        if client_timed(scenario) and factor != 1.0:
            predicted = {k: scaled_waits(v, factor) for k, v in predicted.items()}
        check_differential(observed, predicted, tolerance, scenario.spec or ("RETRY-CONC-04",))
    return observed
