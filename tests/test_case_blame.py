"""A parametrized case that names its own behaviours blames only those when it fails; a failure that names
the behaviour it broke fails that one only; a Hypothesis test
whose examples end not applicable in several ways is not applicable, never failed."""
from __future__ import annotations

import json

import pytest

CASES = '''
import pytest
from hypothesis import given, strategies as st

from history.outcomes import NotApplicable


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("DELAY-01", "DELAY-02", "DELAY-03")
@pytest.mark.parametrize("value", [
    pytest.param(1, marks=pytest.mark.spec("DELAY-01")),
    pytest.param(2, marks=pytest.mark.spec("DELAY-02")),
    3,
])
def test_cases(value):
    assert value != 2


@pytest.mark.spec("RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-11")
def test_fails_naming_one():
    from suites.checks import SpecViolation
    raise SpecViolation("RETRY-5X-11", "key m0: delivery 2 came 72709 ms after the previous one")


@pytest.mark.spec("DELAY-05", "DELAY-06")
def test_fails_naming_none():
    assert 1 == 2


@pytest.mark.spec("DELAY-04")
@given(st.integers(0, 50))
def test_not_applicable_in_several_ways(n):
    if n % 2:
        raise NotApplicable("lacks capability a")  # two places: Hypothesis reports both, as an exception group
    raise NotApplicable("lacks capability b")
'''


def test_a_failing_case_blames_only_its_behaviours(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cases=CASES)
    out = pytester.path / "out"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rmq-hypothesis-profile", "ci", "--rmq-out", str(out))
    behaviours = json.loads((out / "summary.json").read_text())["behaviours"]
    assert behaviours["DELAY-02"]["verdict"] == "fail"
    assert behaviours["DELAY-01"]["verdict"] == "pass"  # its own case passed; the failing case is DELAY-02's
    assert [t["verdict"] for t in behaviours["DELAY-03"]["tests"]] == ["pass"]  # only the unmarked case cites it
    # a failure naming one behaviour fails that one only; the test's others are inconclusive (not shown)
    assert behaviours["RETRY-5X-11"]["verdict"] == "fail"
    for sid in ("RETRY-5X-06", "RETRY-5X-07"):
        assert behaviours[sid]["verdict"] == "inconclusive", behaviours[sid]
        assert "stopped at a failure of RETRY-5X-11" in behaviours[sid]["tests"][0]["reason"]
    # a failure that names no behaviour fails every one the test cites
    assert behaviours["DELAY-05"]["verdict"] == behaviours["DELAY-06"]["verdict"] == "fail"
    # several not-applicable outcomes across examples: not applicable, not a failure
    assert behaviours["DELAY-04"]["verdict"] == "not applicable", behaviours["DELAY-04"]
    reason = behaviours["DELAY-04"]["tests"][0]["reason"]
    assert "lacks capability a" in reason and "lacks capability b" in reason, reason  # both outcomes, one verdict


NOTED = '''
import pytest


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ORDER-4X-02")
def test_noted_and_failing(make_target):
    from suites.checks import SpecViolation
    target = make_target()
    target.note("group G had not rebalanced 15000 wall ms after a member started or stopped: holds queues []")
    raise SpecViolation("ORDER-4X-02", "key m0: 0 deliveries, the spec says 4")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ORDER-4X-03")
def test_noted_and_passing(make_target):
    make_target().note("group G had not rebalanced")
'''


def test_a_failure_carries_what_its_target_noted(pytester: pytest.Pytester) -> None:
    """A consumer that had not taken its queues when the story began (``Target.notes``) is evidence beside the
    behaviour a failure names: the failing test's reason carries it; a passing test's verdict is unchanged."""
    pytester.makepyfile(test_noted=NOTED)
    out = pytester.path / "out"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rmq-hypothesis-profile", "ci", "--rmq-out", str(out))
    behaviours = json.loads((out / "summary.json").read_text())["behaviours"]
    failed = behaviours["ORDER-4X-02"]["tests"][0]
    assert failed["verdict"] == "fail"
    assert "0 deliveries" in failed["reason"] and "(the target noted: group G had not rebalanced 15000 wall ms" \
        in failed["reason"], failed["reason"]
    assert behaviours["ORDER-4X-03"]["tests"][0] == {**behaviours["ORDER-4X-03"]["tests"][0], "verdict": "pass",
                                                     "reason": ""}
