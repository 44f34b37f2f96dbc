"""What one conformance run keeps while it runs: the target, the profiles, the verdicts so far."""
from __future__ import annotations

import itertools
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest

from adapters.targets import ParsedTarget, Probe
from history.events import Event
from reports.summary import RunSummary, TestResult


@dataclass
class RunState:
    target: ParsedTarget
    probe: Probe
    profiles: tuple[str, ...]
    run_id: str
    expectations: Any = None  # reports.expectations.ExpectationFile, when the run has one
    events: list[Event] = field(default_factory=list)
    results: dict[str, list[TestResult]] = field(default_factory=lambda: defaultdict(list))
    started: float = field(default_factory=time.perf_counter)
    targets: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    timing: dict[str, Any] = field(default_factory=dict)
    version: str | None = None
    sdk: tuple[str, str | None] | None = None
    """The client library the run's targets drive, (name, version), when they say."""
    summary: RunSummary | None = None
    gate: Any = None  # reports.expectations.GateResult, when the run has expectations
    release: str = ""
    """The RocketMQ release the target is held to (``--rmq-target-version``)."""


_KEY = pytest.StashKey[RunState]()
TARGET_SDKS = pytest.StashKey[frozenset[str]]()
"""On a test item: the ``sdk.*`` capabilities of the target it built (which clients' habits it can show)."""
TARGETS = pytest.StashKey[list[Any]]()
"""On a test item: the targets it built, whose ``notes`` a failure's reason carries."""


def run_state(config: pytest.Config) -> RunState:
    return config.stash[_KEY]


def set_run_state(config: pytest.Config, state: RunState) -> None:
    config.stash[_KEY] = state


def has_run_state(config: pytest.Config) -> bool:
    return _KEY in config.stash
