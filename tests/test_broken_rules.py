"""A deliberately broken reference rule makes the suites fail, with a shrunk counterexample naming the spec ID."""
from __future__ import annotations

from pathlib import Path

import pytest

SUITES = Path(__file__).resolve().parent.parent / "suites"

BREAKS = {
    "level-two-plus-rt": (
        "from reference_impl.rules import retry4x\n"
        "retry4x.retry_level_for = lambda reconsume_times: 2 + reconsume_times\n",
        "test_retry_ladders.py", "concurrent_4x_retry_ladder", "[RETRY-CONC-07]", "failures=1"),
    "dlq-one-attempt-early": (
        "from reference_impl.rules import retry4x\n"
        "_orig = retry4x.effective_max_reconsume_times\n"
        "retry4x.effective_max_reconsume_times = lambda m, orderly: 15 if m == -1 and not orderly else _orig(m, orderly)\n",
        "test_retry_ladders.py", "concurrent_4x_retry_ladder", "[RETRY-CONC-04]", "failures=16"),
    "5x-server-index-in-client": (
        "from reference_impl.rules import retry5x\n"
        "retry5x.java_customized_delay_ms = lambda attempt, d=retry5x.DEFAULT_CUSTOMIZED_NEXT_MS: d[min(attempt + 1, len(d) - 1)]\n",
        "test_retry_ladders.py", "push_5x_nack_ladder", "[RETRY-5X-06]", "failures=1"),
    "orderly-suspend-unclamped": (
        "from reference_impl.rules import orderly4x\n"
        "orderly4x.suspend_time_ms = lambda context=-1, consumer=1000: 5000\n",
        "test_retry_ladders.py", "orderly", "[ORDER-4X-02]", "failures=1"),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_broken_rule_is_caught(pytester: pytest.Pytester, name: str) -> None:
    patch, suite, keyword, spec_tag, shrunk = BREAKS[name]
    pytester.makepyfile(breakrule=patch)
    result = pytester.runpytest_subprocess(
        "-p", "breakrule", "-p", "suites.plugin", "-p", "no:cacheprovider", "--rootdir", str(SUITES),
        str(SUITES / suite), "-k", keyword)
    out = result.stdout.str()
    assert result.ret == 1, out[-3000:]
    assert spec_tag in out, out[-3000:]
    assert shrunk in out, f"expected a shrunk counterexample with {shrunk}:\n{out[-3000:]}"
    assert f"FAIL {spec_tag.strip('[]')}" in out, out[-3000:]
