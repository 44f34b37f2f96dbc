"""The generic vector runner itself (``suites/rule_vectors.py``): a row that disagrees fails naming the
behaviour, the rule and the row; matching is exact for mappings unless a vector says partial; a spec file
with a malformed case is one clear error."""
from __future__ import annotations

from pathlib import Path

import pytest
from spec_copies import spec_copy

from spec.loader import SpecError, load_spec
from suites.rule_vectors import VectorRow, check_row, matches


def _row(rule: str, arguments: dict, **checks: object) -> VectorRow:
    return VectorRow("DELAY-05", rule, 0, arguments, checks, "spec/behaviours/delay.yaml:1")


def test_a_row_that_agrees_passes_and_one_that_disagrees_names_where() -> None:
    check_row(_row("delay.schedule_tags_code", {"delay_property": 3, "store_timestamp": 0}, expect=10_000))
    with pytest.raises(AssertionError, match=r"DELAY-05 \(spec/behaviours/delay.yaml:1\) delay.schedule_tags_code "
                                             r"row 1 .*got 10000, the vector says 9999"):
        check_row(_row("delay.schedule_tags_code", {"delay_property": 3, "store_timestamp": 0}, expect=9_999))


def test_raises_rows_fail_on_a_result_another_exception_message_or_code() -> None:
    check_row(_row("retry5x.java_customized_delay_ms", {"attempt": 0}, raises="ValueError"))
    with pytest.raises(AssertionError, match="returned 1000, expected ValueError"):
        check_row(_row("retry5x.java_customized_delay_ms", {"attempt": 1}, raises="ValueError"))
    with pytest.raises(AssertionError, match="does not match"):
        check_row(_row("delay.check_batch", {"messages": [{"topic": "T"}, {"topic": "U"}]}, raises="BatchRejected",
                       match="TimeDelayLevel"))
    with pytest.raises(AssertionError, match="raised with code 40002, the vector says 40003"):
        check_row(_row("validation.check_topic_proxy", {"topic": "rmq_sys_x"}, raises="RocketMQError",
                       error_code=40003))


def test_enum_arguments_and_results_by_name() -> None:
    check_row(_row("retry4x.concurrent_status", {"outcome": "NULL"}, expect="RECONSUME_LATER"))
    with pytest.raises(AssertionError):
        check_row(_row("retry4x.concurrent_status", {"outcome": "SUCCESS"}, expect="RECONSUME_LATER"))


@pytest.mark.parametrize("actual,expected,verdict", [
    ({"a": "1", "b": "2"}, {"a": "1"}, False),                       # mappings are exact by default
    ({"a": "1", "b": "2"}, {"<partial>": True, "a": "1"}, True),
    ({"a": "1"}, {"<partial>": True, "b": "<absent>"}, True),
    ({"a": "1", "b": "2"}, {"<partial>": True, "b": "<absent>"}, False),
    ((1, [2, 3]), [1, [2, 3]], True),
    ({3, 1}, [1, 3], True),
    ({3, 1}, [1, 3, 3], False),
    (1, True, False),                                                # booleans are not numbers
    (True, 1, False),
    (None, None, True),
])
def test_matching(actual: object, expected: object, verdict: bool) -> None:
    assert matches(actual, expected) is verdict


def test_a_row_with_too_few_values_names_file_line_and_id(tmp_path: Path) -> None:
    spec_dir = spec_copy(tmp_path, "delay.yaml", "    - [3, 10000]\n", "    - [3]\n")
    with pytest.raises(SpecError, match=r"delay.yaml:\d+: DELAY-01: case 1 \(delay.delay_ms_for_level\): row 1 has 1 "
                                        r"values for 2 columns"):
        load_spec(spec_dir)


def test_also_naming_an_unknown_behaviour_is_an_error(tmp_path: Path) -> None:
    spec_dir = spec_copy(tmp_path, "delay.yaml", "also: [TX-01]", "also: [TX-99]")
    with pytest.raises(SpecError, match="also names unknown ID TX-99"):
        load_spec(spec_dir)
