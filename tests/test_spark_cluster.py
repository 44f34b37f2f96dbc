"""The same ``rmqc check`` on a Spark standalone cluster (a master and two workers started from the
pyspark installation on 127.0.0.1) gives the same result.json as local mode."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from spark_checks.simulate import simulate

RMQC = [sys.executable, "-m", "rmqc.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@pytest.fixture
def cluster(tmp_path):
    if not shutil.which("java"):
        pytest.skip("not applicable: no java on PATH, a Spark standalone cluster cannot start")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(_spark_class().parent.parent),
           "SPARK_NO_DAEMONIZE": "1", "SPARK_WORKER_DIR": str(tmp_path / "work"), "PYSPARK_PYTHON": sys.executable}
    port, ui = _free_port(), _free_port()
    procs = [subprocess.Popen([str(_spark_class()), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(ui)], env=env,
                              stdout=open(tmp_path / "master.log", "w"), stderr=subprocess.STDOUT)]
    for i in range(2):
        procs.append(subprocess.Popen(
            [str(_spark_class()), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host",
             "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port())], env=env,
            stdout=open(tmp_path / f"worker{i}.log", "w"), stderr=subprocess.STDOUT))
    try:
        deadline = time.time() + 90
        alive = 0
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    alive = json.load(r).get("aliveworkers", 0)
            except OSError:
                pass
            if alive == 2:
                break
            time.sleep(1)
        assert alive == 2, f"{alive} workers alive after 90 s; see {tmp_path}/*.log"
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _result(out: Path) -> dict:
    result = json.loads((out / "result.json").read_text())
    for key in ("seconds", "master"):
        result.pop(key)
    return result


def test_standalone_cluster_gives_the_local_result(cluster, tmp_path):
    log = tmp_path / "log"
    simulate(12_000, log, seed=9, faults={"late-retry": 2, "duplicate-apply": 1}, progress=False)
    local = subprocess.run(RMQC + ["check", str(log), "--out", str(tmp_path / "local")], capture_output=True,
                           text=True, timeout=300)
    remote = subprocess.run(RMQC + ["check", str(log), "--master", cluster, "--out", str(tmp_path / "cluster")],
                            capture_output=True, text=True, timeout=300)
    assert local.returncode == remote.returncode == 1, remote.stdout + remote.stderr[-2000:]
    assert _result(tmp_path / "local") == _result(tmp_path / "cluster")
    assert json.loads((tmp_path / "cluster" / "result.json").read_text())["master"] == cluster
