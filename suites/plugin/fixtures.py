"""The fixtures: ``make_target`` (fresh targets of the run's kind for a profile; their events kept for
the run's log), ``target``, ``reference_for`` (the in-process reference, the prediction in differential
tests) and ``rmq_spec``; tests marked ``reference_rule`` are not applicable unless the target is this
reference."""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import pytest

from adapters.base import DEFAULT_TIMING, BrokerTiming, Target
from adapters.targets import namesrv_option, reference_target
from history.outcomes import NotApplicable
from spec import versions
from spec.loader import Spec, default_spec
from suites.tolerance import tolerance_for

from .markers import profile_of, spec_ids
from .state import TARGET_SDKS, TARGETS, run_state


@pytest.fixture(scope="session")
def rmq_spec() -> Spec:
    return default_spec()


@pytest.fixture
def make_target(request: pytest.FixtureRequest) -> Iterator[Callable[..., Target]]:
    """Create targets of the run's kind for a profile; events are kept for the run's event log."""
    state = run_state(request.config)
    created: list[Target] = []
    request.node.stash[TARGETS] = created

    def make(profile: str | None = None, seed: int = 0) -> Target:
        profile = profile or profile_of(request.node)
        if profile is None:
            raise pytest.UsageError(f"{request.node.nodeid} uses a target but has no profile marker")
        if profile not in state.profiles:
            raise NotApplicable(f"target {state.target.text} runs {', '.join(state.profiles)}, not {profile}")
        target = state.target.build(profile, run_id=state.run_id, seed=seed, release=state.release,
                                    **namesrv_option(state.target, request.config.getoption("--rmq-namesrv")))
        target.release = state.release  # the release the run holds it to, whatever it is
        created.append(target)
        request.node.stash[TARGET_SDKS] = frozenset(c for c in target.capabilities if c.startswith("sdk."))
        state.version = state.version or target.version
        state.sdk = state.sdk or target.client_library
        if not state.timing:
            tolerance = tolerance_for(target)
            window = tolerance_for(target, redelivery=True)
            late_min, late_max = window.late_min_ms, window.late_max_ms
            state.timing = {"time_scale": target.time_scale, "tolerance_absolute_ms": tolerance.absolute_ms,
                            "tolerance_relative": tolerance.relative,
                            "redelivery_late_ms": [late_min, late_max],
                            "clock": "virtual" if "clock.virtual" in target.capabilities else "wall"}
            if getattr(target, "release_record", None):  # a real release: the keys it was started with
                state.timing["release"] = target.release_record
            from hypothesis import Phase, settings

            state.timing["properties"] = {"examples": settings.default.max_examples,
                                          "shrink": Phase.shrink in settings.default.phases}
        return target

    yield make
    for target in created:
        # every target numbers its own messages: prefix the ids so they stay unique in the run's log
        tag = f"t{next(state.targets)}:"
        state.events.extend(dataclasses.replace(e, msg_id=tag + e.msg_id if e.msg_id else None,
                                                detail={**e.detail, "test": request.node.nodeid})
                            for e in target.events())
        target.close()


@pytest.fixture
def target(make_target: Callable[..., Target]) -> Target:
    """A fresh target for this test's profile."""
    return make_target()


@pytest.fixture
def reference_for(request: pytest.FixtureRequest) -> Callable[..., Target]:
    """The in-process reference (the Kafka pattern's model for kafka-retry), the prediction in differential
    tests, as the same release as the target."""
    release = run_state(request.config).release

    def reference(profile: str, seed: int = 0, timing: BrokerTiming = DEFAULT_TIMING) -> Target:
        """``timing``: the target's configured delay table and retry ladder (``Target.broker_timing``)."""
        return reference_target(profile, run_id="prediction", seed=seed, release=release,
                                **({} if timing.is_default else {"broker_timing": timing}))

    return reference


@pytest.fixture
def rmq_release(request: pytest.FixtureRequest) -> str:
    """The RocketMQ release the run holds the target to."""
    return run_state(request.config).release


@pytest.fixture(autouse=True)
def _holds_in_the_release(request: pytest.FixtureRequest) -> None:
    """A test whose behaviours all do not exist in the run's release is not applicable there."""
    state = run_state(request.config)
    spec = default_spec()
    cited = [spec.behaviours[i] for i in spec_ids(request.node) if i in spec.behaviours]
    if cited and not any(b.holds_at(state.release) for b in cited):
        ranges = "; ".join(f"{b.id} holds {versions.describe(b.since, b.until)}" for b in cited)
        raise NotApplicable(f"not in RocketMQ {state.release}: {ranges}")


@pytest.fixture(autouse=True)
def _reference_rule_only(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("reference_rule") and not run_state(request.config).probe.runs_reference:
        raise NotApplicable("checks the reference implementation's pure rules, not the target")
