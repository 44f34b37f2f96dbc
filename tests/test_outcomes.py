"""The typed outcomes: an exception group (Hypothesis raises one when examples end in several ways) is
the group's outcome only when every leaf is one."""
from __future__ import annotations

from history.outcomes import Inconclusive, NotApplicable, outcome_of


def test_a_plain_outcome_is_itself() -> None:
    exc = NotApplicable("no broadcasting")
    assert outcome_of(exc) is exc
    assert outcome_of(AssertionError("x")) is None


def test_a_group_of_not_applicable_outcomes_is_not_applicable() -> None:
    group = ExceptionGroup("examples", [NotApplicable("lacks a"), ExceptionGroup("inner", [NotApplicable("lacks b")])])
    ended = outcome_of(group)
    assert isinstance(ended, NotApplicable) and str(ended) == "lacks a; lacks b"


def test_a_group_mixing_outcomes_is_inconclusive() -> None:
    ended = outcome_of(ExceptionGroup("examples", [NotApplicable("lacks a"), Inconclusive("noise band")]))
    assert isinstance(ended, Inconclusive) and "noise band" in str(ended)


def test_a_group_with_a_failure_is_a_failure() -> None:
    assert outcome_of(ExceptionGroup("examples", [NotApplicable("lacks a"), AssertionError("broke")])) is None
