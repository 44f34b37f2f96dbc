"""``rmqc check`` stays readable: one progress line per check, no Spark stage bars and none of the JVM's
start-up notes a user cannot act on."""
from __future__ import annotations

import os
import subprocess
import sys

from serving import ROOT


def test_check_prints_a_line_per_check_and_no_spark_noise(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
    log = tmp_path / "sim.parquet"
    made = subprocess.run([sys.executable, "-m", "rmqc.cli", "simulate", "--events", "3000", "--out", str(log)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert made.returncode == 0, made.stderr
    checked = subprocess.run([sys.executable, "-m", "rmqc.cli", "check", str(log), "--out", str(tmp_path / "out")],
                             cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    lines = checked.stderr.splitlines()
    assert lines[0].startswith("rmqc check: loaded ") and "rows in" in lines[0], checked.stderr[:500]
    assert sorted(int(line.split("[")[1].split("/")[0]) for line in lines[1:] if "] " in line) == list(range(1, 9))
    for noise in ("[Stage", "Using incubator modules", "log4j profile", "Setting default log level", "NativeCodeLoader"):
        assert noise not in checked.stderr + checked.stdout, noise
    assert "PASS          no_loss" in checked.stdout
