"""The official Go 5.x SDK (github.com/apache/rocketmq-clients/golang/v5 v5.1.4, drivers/go) runs the grpc-5.x suites
against ``rmqc serve`` (``--target go://``) at time scale 0.01, every line its driver writes checked against the
driver-protocol schema: no failure, its habits (SDK-GO-*) shown, and the behaviours it runs end to end passed."""
from __future__ import annotations

from pathlib import Path

import pytest
from sdk_runs import assert_no_failure, schema_checked_lines, verdicts_of
from serving import start_serve, stop_serve
from test_sdk_matrix import _run

from adapters.golang import BINARY, SDK_MODULE, require_binary, sdk_version
from history.outcomes import NotApplicable

pytestmark = pytest.mark.sdk_driver
"""Run beside the project's own tests in ``make test``, after the real-release gate (the Makefile's SDK_DRIVER_TESTS), and
by ``make sdk-drivers`` alone."""

MUST_PASS = ("RETRY-5X-07", "RETRY-5X-10", "FIFO-05", "TX-02", "TX-03", "TX-04", "FILTER-01", "FILTER-02",
             "FILTER-03", "DELAY-08", "TOPIC-05", "LIMIT-02", "SDK-GO-01", "SDK-GO-02")
"""Behaviours the Go SDK runs end to end through rmqc serve; they pass, not only 'not failed'."""


@pytest.fixture(scope="module")
def go_run(tmp_path_factory):
    """One rmqc serve at time scale 0.01; the grpc-5.x suites through the Go SDK, schema checks on."""
    try:
        require_binary("go://")
    except NotApplicable as exc:  # the driver is not built (make driver-go: Go is missing or the build failed)
        pytest.skip(f"not applicable: {exc}")
    out = tmp_path_factory.mktemp("go-sdk") / "go"
    process, address = start_serve(0.01)
    try:
        run = _run(f"go://{address}", out, {"RMQC_DRIVER_VALIDATE": "1"})
    finally:
        stop_serve(process)
    return out, run


@pytest.mark.spec("SDK-GO-01", "SDK-GO-02", "RETRY-5X-09", "TX-07")
def test_the_grpc_suites_pass_through_the_go_sdk(go_run) -> None:
    folder, run = go_run
    summary, verdicts = verdicts_of(Path(folder), f"grpc-5.x verdicts through {SDK_MODULE} {sdk_version()}")
    assert_no_failure(summary, run)
    assert summary["sdk"] == {"name": SDK_MODULE, "version": "v5.1.4"} and sdk_version() == "v5.1.4"
    assert all(verdicts.get(sid) == "pass" for sid in MUST_PASS), {sid: verdicts.get(sid) for sid in MUST_PASS}
    checked = schema_checked_lines(run, "rmqc-go-driver")
    assert checked > 5000, run.stderr[-2000:]


def test_the_target_is_not_applicable_without_the_driver(tmp_path, monkeypatch) -> None:
    """Without the built driver, go:// is not applicable and names how to build it (never passed)."""
    import adapters.golang as golang

    monkeypatch.setattr(golang, "BINARY", tmp_path / "rmqc-go-driver")
    with pytest.raises(NotApplicable, match="make driver-go"):
        golang.require_binary("go://127.0.0.1:1")
    assert BINARY.name == "rmqc-go-driver"
