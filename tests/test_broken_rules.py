"""A deliberately broken reference rule makes the suites fail, with a shrunk counterexample naming the spec ID."""
from __future__ import annotations

from pathlib import Path

import pytest

SUITES = Path(__file__).resolve().parent.parent / "suites"

BREAKS = {
    "level-two-plus-rt": (
        "from reference_impl.rules import retry4x\n"
        "retry4x.retry_level_for = lambda reconsume_times: 2 + reconsume_times\n",
        "test_retry_4x.py", "concurrent_4x_retry_ladder", "[RETRY-CONC-07]", "failures=1"),
    "dlq-one-attempt-early": (
        "from reference_impl.rules import retry4x\n"
        "_orig = retry4x.effective_max_reconsume_times\n"
        "retry4x.effective_max_reconsume_times = lambda m, orderly: 15 if m == -1 and not orderly else _orig(m, orderly)\n",
        "test_retry_4x.py", "concurrent_4x_retry_ladder", "[RETRY-CONC-04]", "failures=16"),
    "5x-server-index-in-client": (
        "from reference_impl.rules import retry5x\n"
        "retry5x.java_customized_delay_ms = lambda attempt, d=retry5x.DEFAULT_CUSTOMIZED_NEXT_MS: d[min(attempt + 1, len(d) - 1)]\n",
        "test_retry_5x.py", "push_5x_nack_ladder", "[RETRY-5X-06]", "failures=1"),
    "orderly-suspend-unclamped": (
        "from reference_impl.rules import orderly4x\n"
        "orderly4x.suspend_time_ms = lambda context=-1, consumer=1000: 5000\n",
        "test_retry_4x.py", "orderly_4x", "[ORDER-4X-02]", "failures=1"),
    "modulo-instead-of-consistent-hash": (
        "from reference_impl.rules import fifo\n"
        "from reference_impl.rules.primitives import java_string_hash\n"
        "fifo.proxy_queue_for_group = lambda group, n: abs(java_string_hash(group)) % n\n",
        "test_fifo.py", "catalog_group_routing", "[FIFO-01]", "order-1"),
    "averagely-instead-of-by-circle": (
        "from reference_impl.rules import allocation\n"
        "allocation.allocate_by_circle = allocation.allocate_averagely\n",
        "test_rule_vectors_in_code.py", "by_circle", "FAIL ALLOC-02", "test_by_circle[8-3"),
    "sql-null-equals-null-is-null": (  # the old catalog's reading; Java's doCreateEqual answers TRUE
        "from reference_impl.rules import sql92\n"
        "_orig = sql92.Equal.evaluate\n"
        "def _broken(self, props):\n"
        "    if self.left.evaluate(props) is None and self.right.evaluate(props) is None:\n"
        "        return None\n"
        "    return _orig(self, props)\n"
        "sql92.Equal.evaluate = _broken\n",
        "test_filters.py", "oracle", "[FILTER-06]", "cmpprop"),
    "commitlog-fields-swapped": (
        "from reference_impl.rules import storage\n"
        "_orig = storage.encode_commitlog\n"
        "def _swapped(m, develop=True):\n"
        "    data = _orig(m, develop)\n"
        "    return data[:12] + data[16:20] + data[12:16] + data[20:]  # FLAG before QUEUEID\n"
        "storage.encode_commitlog = _swapped\n",
        "test_storage.py", "offsets", "[STORE-01]", "Failing test case"),
    "delay-queue-id-off-by-one": (  # caught by a catalog vector that is data (spec/behaviours/delay.yaml)
        "from reference_impl.rules import delay\n"
        "delay.delay_level_to_queue_id = lambda level: level\n",
        "test_rule_vectors.py", "delay_level_to_queue_id", "FAIL DELAY-03",
        "delay.delay_level_to_queue_id row 1 {'level': 1}: got 1, the vector says 0"),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_broken_rule_is_caught(pytester: pytest.Pytester, name: str) -> None:
    patch, suite, keyword, spec_tag, shrunk = BREAKS[name]
    pytester.makepyfile(breakrule=patch)
    result = pytester.runpytest_subprocess(
        "-p", "breakrule", "-p", "rocketmq_conformance", "-p", "no:cacheprovider", "--rmq-hypothesis-profile", "ci",
        "--rootdir", str(SUITES),
        str(SUITES / suite), "-k", keyword)
    out = result.stdout.str()
    assert result.ret == 1, out[-3000:]
    assert spec_tag in out, out[-3000:]
    assert shrunk in out, f"expected a shrunk counterexample with {shrunk}:\n{out[-3000:]}"
    spec_id = spec_tag.strip("[]").removeprefix("FAIL ")
    assert f"FAIL {spec_id}" in out, out[-3000:]  # the run summary names the behaviour
