"""The catalog's vectors (each behaviour's ``cases`` in ``spec/behaviours``) against the reference's pure
rules: one generic test, parametrized by rule and behaviour, so a failing row blames only the behaviour
whose vector it is."""
from __future__ import annotations

from collections import defaultdict

import pytest

from spec.loader import default_spec
from suites.rule_vectors import VectorRow, check_row, rows_of

pytestmark = pytest.mark.reference_rule


def _cases() -> list:
    grouped: dict[tuple[str, str], list[VectorRow]] = defaultdict(list)
    for row in rows_of(default_spec()):
        grouped[(row.rule, row.behaviour)].append(row)
    return [pytest.param(rows, id=f"{rule}-{behaviour}", marks=pytest.mark.spec(behaviour))
            for (rule, behaviour), rows in grouped.items()]


@pytest.mark.parametrize("rows", _cases())
def test_rule_vectors(rows: list[VectorRow]) -> None:
    failures = []
    for row in rows:
        try:
            check_row(row)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)
