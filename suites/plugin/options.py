"""The ``--rmq-*`` options; at configure time the target is parsed and reached once, the profiles to
run are settled, the expectation file is read and the Hypothesis profile chosen."""
from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from adapters.base import TargetError
from adapters.targets import USAGE, namesrv_option, parse_target
from history.profiles import BROKER_PROFILES
from spec import versions
from spec.loader import SpecError, default_spec

from . import hypothesis_profiles
from .state import RunState, set_run_state

TARGET_VERSION_HELP = (f"the RocketMQ release the target behaves as ({', '.join(versions.COVERED)} or develop; "
                       f"default {versions.LATEST}): behaviours that do not hold there are not applicable")
NAMESRV_HELP = ("for a 5.x proxy target: the name server whose brokers take the set-up through the remoting admin "
                "codes, as mqadmin does (default: the one rmqc serve reports, if any)")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocketmq-conformance")
    group.addoption("--rmq-target", default="reference", help=USAGE)
    group.addoption("--rmq-profile", default=None,
                    help=f"{' | '.join(BROKER_PROFILES)} (default: every profile the target runs)")
    group.addoption("--rmq-expectations", default=None, metavar="FILE",
                    help="expectation file (expectations/<name>.yaml): the run passes when only expected failures fail")
    group.addoption("--rmq-out", default=None, help="write summary.json and events.parquet of this run here")
    group.addoption("--rmq-run-id", default=None, help="run id recorded in the event log")
    group.addoption("--rmq-target-version", default=None, metavar="V", help=TARGET_VERSION_HELP)
    group.addoption("--rmq-namesrv", default=None, metavar="HOST:PORT", help=NAMESRV_HELP)
    group.addoption("--rmq-hypothesis-profile", default=None, choices=hypothesis_profiles.NAMES,
                    help=f"load this Hypothesis profile of the project (or set {hypothesis_profiles.ENV}); "
                         "by default none is loaded, except realtime for a target on a wall clock")


def pytest_configure(config: pytest.Config) -> None:
    text = config.getoption("--rmq-target")
    try:
        target = parse_target(text)
        namesrv_option(target, config.getoption("--rmq-namesrv"))
        probe = target.probe()
    except TargetError as exc:
        raise pytest.UsageError(str(exc)) from None
    asked = hypothesis_profiles.requested(config.getoption("--rmq-hypothesis-profile"))
    try:
        if asked or not probe.virtual_clock:
            hypothesis_profiles.load(asked or "realtime")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    profiles = probe.profiles
    wanted = config.getoption("--rmq-profile")
    if wanted is not None:
        if wanted not in profiles:
            raise pytest.UsageError(f"--rmq-profile {wanted}: target {text} runs {' and '.join(profiles)}")
        profiles = (wanted,)
    expectations = None
    if config.getoption("--rmq-expectations"):
        from reports.expectations import load_expectations

        try:
            expectations = load_expectations(Path(config.getoption("--rmq-expectations")), default_spec())
        except SpecError as exc:
            raise pytest.UsageError(str(exc)) from None
    release = config.getoption("--rmq-target-version") or probe.release or versions.LATEST
    try:
        versions.key(release)
    except ValueError as exc:
        raise pytest.UsageError(f"--rmq-target-version: {exc}") from None
    run_id = config.getoption("--rmq-run-id") or time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    set_run_state(config, RunState(target, probe, profiles, run_id, expectations=expectations, release=release))
