"""The container target: its generated configuration, its readiness logic, and what happens without a
Docker engine (every container test not applicable, with the engine's error as the reason)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.base import TargetError
from adapters.container import (
    READY_MARKERS,
    ContainerPlan,
    engine_error,
    missing_markers,
    wait_ready,
)
from reference_impl.rules import retry5x
from reference_impl.rules.delay import DEFAULT_DELAY_TABLE

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "apache/rocketmq:5.3.1"


def test_broker_conf_compresses_the_server_side_clocks():
    plan = ContainerPlan(IMAGE, time_scale=0.1)
    conf = dict(line.split(" = ", 1) for line in plan.broker_conf().splitlines())
    assert conf["transactionCheckInterval"] == "3000" and conf["transactionTimeOut"] == "600"
    assert conf["autoCreateTopicEnable"] == "true" and conf["timerWheelEnable"] == "true"
    levels = plan.parsed_delay_levels()  # parsed the way the broker parses the line (DELAY-02)
    assert len(levels) == DEFAULT_DELAY_TABLE.max_level == 18
    assert levels[:4] == [1000, 1000, 1000, 3000]  # the broker parses whole seconds: 1 s at least
    assert levels[-1] == 720_000 and levels[13] == 60_000  # 2 h -> 12 min, 10 min -> 1 min


def test_retry_policy_is_the_scaled_customized_table():
    plan = ContainerPlan(IMAGE, time_scale=0.01)
    policy = json.loads(plan.retry_policy_json())
    assert policy["type"] == "CUSTOMIZED"
    assert policy["customizedRetryPolicy"]["next"] == [max(1, round(ms * 0.01)) for ms in retry5x.DEFAULT_CUSTOMIZED_NEXT_MS]
    command = plan.update_sub_group("G-abc", 3, True)
    assert command[:3] == ["sh", "mqadmin", "updateSubGroup"]
    assert command[command.index("-r") + 1] == "3" and command[command.index("-o") + 1] == "true"
    assert json.loads(command[command.index("-p") + 1]) == policy
    assert command[command.index("-q") + 1] == "1"
    assert plan.update_sub_group("G-abc", 3, False, retry_queue_nums=0)[command.index("-q") + 1] == "0"
    topic = plan.update_topic("T-abc", 8, 8, "FIFO")
    assert topic[topic.index("-a") + 1] == "+message.type=FIFO"


def test_readiness_waits_for_every_component():
    logs = [{"namesrv": READY_MARKERS["namesrv"]},
            {"namesrv": READY_MARKERS["namesrv"], "broker": "The broker[broker-a] boot success"},
            {"namesrv": READY_MARKERS["namesrv"], "broker": "boot success", "proxy": READY_MARKERS["proxy"]}]
    seen = iter(logs)
    slept: list[float] = []
    wait_ready(lambda: next(seen), timeout_s=60, sleep=slept.append, clock=lambda: 0.0)
    assert slept == [1.0, 1.0]
    assert missing_markers(logs[0]) == ["broker", "proxy"]


def test_readiness_times_out_naming_what_is_missing():
    now = [0.0]

    def clock() -> float:
        now[0] += 30
        return now[0]

    with pytest.raises(TargetError) as err:
        wait_ready(lambda: {"namesrv": READY_MARKERS["namesrv"]}, timeout_s=60, sleep=lambda s: None, clock=clock)
    assert "not ready within 60 s" in str(err.value) and "broker, proxy" in str(err.value)


def test_a_container_that_exits_is_reported_with_its_last_log_line():
    with pytest.raises(TargetError) as err:
        wait_ready(lambda: {"broker": "starting\njava.lang.OutOfMemoryError"}, timeout_s=60, sleep=lambda s: None,
                   clock=lambda: 0.0, exited=lambda: "broker")
    assert "broker exited before it was ready" in str(err.value) and "OutOfMemoryError" in str(err.value)


def test_without_an_engine_rmqc_run_exits_within_10_s_with_the_engine_error(tmp_path):
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", f"container:{IMAGE}",
                          "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    error = engine_error(IMAGE)
    if error is None:
        pytest.skip("not applicable: a Docker engine answers here, so the no-engine path cannot be shown")
    assert run.returncode != 0 and elapsed < 10, (run.returncode, elapsed)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == f"rmqc run: error: {error}"


def test_suites_against_real_rocketmq_containers(tmp_path):
    """The real thing: namesrv, broker and proxy from the image, the suites through the SDK."""
    error = engine_error(IMAGE)
    if error:
        pytest.skip(f"not applicable: {error}")
    run = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", f"container:{IMAGE}",
                          "--out", str(tmp_path), "-k", "transaction or scenarios"], cwd=ROOT, capture_output=True,
                         text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
