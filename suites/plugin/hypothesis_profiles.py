"""The project's Hypothesis profiles. They are registered and loaded only when a run asks for one
(``--rmq-hypothesis-profile NAME`` or ``RMQC_HYPOTHESIS_PROFILE``), or when the run's target is on a
wall clock and nothing was asked (then ``realtime``): merely installing the package changes no other
pytest run's Hypothesis settings.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypothesis import settings

ENV = "RMQC_HYPOTHESIS_PROFILE"


def _profiles() -> "dict[str, settings]":
    # imported here, not at import time: ``rmqc run`` reads ENV before pytest starts and rewrites asserts
    from hypothesis import HealthCheck, Phase, settings

    # ``make_target`` is a factory: every example gets fresh targets, so sharing it across examples is safe.
    suppressed = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much]
    common = dict(deadline=None, print_blob=True, suppress_health_check=suppressed)
    return {
        "ci": settings(max_examples=100, derandomize=True, **common),
        "dev": settings(max_examples=300, **common),
        # one run per mutant of ``rmqc mutate``: fewer examples, the same on every run
        "mutation": settings(max_examples=25, derandomize=True, **common),
        "thorough": settings(max_examples=2000, **common),
        # targets on a wall clock run a few examples per property: each example's ladder takes real time, so a
        # failing example is reported as it is, at once, without shrinking (each shrink step would be another
        # real ladder); the differential suites name the first event that differs
        "realtime": settings(max_examples=int(os.environ.get("RMQC_REALTIME_EXAMPLES", "3")), derandomize=True,
                             phases=(Phase.explicit, Phase.generate), **common),
    }


NAMES = ("ci", "dev", "thorough", "realtime", "mutation")


def requested(option: str | None) -> str | None:
    """The profile a run asked for: the option, else the environment variable, else none."""
    return option or os.environ.get(ENV) or None


def load(name: str) -> None:
    """Register the project's profiles and load ``name``; an unknown name says which exist."""
    profiles = _profiles()
    if name not in profiles:
        raise ValueError(f"unknown Hypothesis profile {name!r}; the project has {', '.join(NAMES)}")
    from hypothesis import settings

    for key, value in profiles.items():
        settings.register_profile(f"rmqc-{key}", value)
    settings.load_profile(f"rmqc-{name}")
