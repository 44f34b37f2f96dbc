"""The official Java 5.x client (rocketmq-client-java 5.2.0, drivers/java in its grpc mode) runs the grpc-5.x suites
against ``rmqc serve`` (``--target java://``), every line its driver writes checked against the driver-protocol
schema: 0 failures, and the behaviours below pass end to end."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from sdk_runs import assert_no_failure, schema_checked_lines, verdicts_of
from serving import start_serve, stop_serve
from test_sdk_matrix import _run

from adapters.java_driver import CLASSES, DEPENDENCIES, DRIVER_DIR

pytestmark = pytest.mark.sdk_driver
"""Run beside the project's own tests in ``make test``, after the real-release gate (the Makefile's SDK_DRIVER_TESTS), and
by ``make sdk-drivers`` alone."""

MUST_PASS = ("RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-09", "TX-02", "TX-03", "TX-04", "FILTER-01", "DELAY-08",
             "TOPIC-05", "SDK-JAVA5-01", "SDK-JAVA5-02")
"""Behaviours the Java 5.x client runs end to end through rmqc serve; they pass, not only 'not failed'."""
SDK = {"name": "rocketmq-client-java", "version": "5.2.0"}


def require_java_driver() -> None:
    if shutil.which("java") is None:
        pytest.skip("not applicable: Java is not installed here (java is not on PATH)")
    if not (CLASSES / "rmqc" / "driver" / "Grpc5xMode.class").exists() or \
            not any(DEPENDENCIES.glob("rocketmq-client-java-*.jar")):
        pytest.skip(f"not applicable: the Java driver is not built ({DRIVER_DIR}; make driver-java)")


@pytest.fixture(scope="module")
def java_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One rmqc serve at time scale 0.01; the suites through the Java 5.x client, schema checks on."""
    require_java_driver()
    out = tmp_path_factory.mktemp("java-grpc") / "run"
    process, address = start_serve(0.01)
    try:
        run = _run(f"java://{address}", out, {"RMQC_DRIVER_VALIDATE": "1"})
    finally:
        stop_serve(process)
    return out, run


def test_the_grpc_suites_pass_through_the_java_5x_client(java_run) -> None:
    folder, run = java_run
    summary, verdicts = verdicts_of(folder, "grpc-5.x verdicts through rocketmq-client-java")
    assert_no_failure(summary, run)
    assert summary["sdk"] == SDK
    assert all(verdicts.get(sid) == "pass" for sid in MUST_PASS), {sid: verdicts.get(sid) for sid in MUST_PASS}
    checked = schema_checked_lines(run, "java")
    assert checked > 1000, run.stderr[-2000:]
