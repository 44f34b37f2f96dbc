"""One expectation file per covered release: each loads, names known behaviours with a reason, and gates a
run held to that release green on the release's known failures and red on a regression or a fixed bug."""
from __future__ import annotations

from pathlib import Path

import pytest

from history.profiles import GRPC_5X
from reports.expectations import gate, load_expectations
from reports.summary import RunSummary, TestResult
from spec import versions
from spec.loader import default_spec

EXPECTATIONS = Path(__file__).resolve().parent.parent / "expectations"


@pytest.mark.parametrize("release", versions.COVERED)
def test_every_covered_release_has_a_well_formed_file(release: str) -> None:
    loaded = load_expectations(EXPECTATIONS / f"rocketmq-{release}.yaml", default_spec())
    assert loaded.target == f"rocketmq-{release}"
    assert all(e.reason.strip() for e in loaded.entries)


SEEN_AT_500 = {"LIMIT-02": ("E           suites.checks.SpecViolation: [LIMIT-02] group 'CID_RMQ_SYS_TRANS': got "
                            "(50001, '50001, Cannot invoke \"apache.rocketmq.v2.Settings.getSubscription()\" because "
                            "\"settings\" is null. NullPointerException. org.apache.rocketmq.proxy.grpc.v2.consumer."
                            "ReceiveMessageActivity.receiveMessage(ReceiveMessageActivity.java:65)')")}
"""How a known failure read on a real 5.0.0 through the Python SDK (its entry excuses only such texts)."""


def _run(release: str, verdicts: dict[str, str], reasons: dict[str, str] | None = None) -> RunSummary:
    reasons = SEEN_AT_500 if reasons is None else reasons
    results = {sid: [TestResult(f"t::{sid}", v, reasons.get(sid, f"why {sid}") if v == "fail" else "")]
               for sid, v in verdicts.items()}
    summary = RunSummary.build(results, default_spec(), run_id="r", target="grpc://proxy:8081", version=None,
                               profiles=[GRPC_5X], elapsed_s=0.0, timing={})
    summary.release = release
    return summary


def test_a_release_is_green_on_its_known_failures_and_red_on_a_regression() -> None:
    file = load_expectations(EXPECTATIONS / "rocketmq-5.0.0.yaml", default_spec())
    known = _run("5.0.0", {"LIMIT-02": "fail", "RETRY-5X-06": "pass", "RETRY-5X-09": "pass", "DELAY-08": "pass"})
    assert gate(known, file).passed
    # 5.0.0's redelivery timing is the spec's own (RETRY-5X-11): a late redelivery beyond it is a regression
    regression = _run("5.0.0", {"LIMIT-02": "fail", "RETRY-5X-06": "fail", "DELAY-08": "fail"})
    result = gate(regression, file)
    assert not result.passed and [u["id"] for u in result.unexpected_failures] == ["DELAY-08", "RETRY-5X-06"]
    # LIMIT-02 failing in another way than the entry knows is a regression too, naming the entry
    other = gate(_run("5.0.0", {"LIMIT-02": "fail"}, {"LIMIT-02": "got (40003, 'the specified group is blank')"}), file)
    assert not other.passed and [u["id"] for u in other.unexpected_failures] == ["LIMIT-02"]
    assert "rocketmq-5.0.0.yaml" in other.unexpected_failures[0]["reason"]
    fixed = _run("5.0.0", {"LIMIT-02": "pass", "RETRY-5X-06": "pass"})
    result = gate(fixed, file)
    assert not result.passed and [u["id"] for u in result.unexpected_passes] == ["LIMIT-02"]
