"""``rmqc check`` over a log it cannot read whole (issue 55): a damaged part is set aside and named, a missing
column is a written input error, a check that raises is inconclusive naming the exception; result.json and
index.html are written every time and no traceback ends the run. One SparkSession for the module, small
simulated logs of three parts."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from serving import ROOT

from spark_checks import checks as engine
from spark_checks.checks import checked, write_result
from spark_checks.damage import NEEDS_EVERY_ROW, exit_code
from spark_checks.simulate import simulate

EVENTS = 2_000
RMQC = [sys.executable, "-m", "rmqc.cli"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}


@pytest.fixture(scope="module")
def spark():
    from spark_checks.session import spark_session, stop_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    yield spark_session()
    stop_session()


@pytest.fixture(scope="module")
def clean_log(tmp_path_factory) -> Path:
    """A clean log in three parts (a chunk of 80 messages a part)."""
    path = tmp_path_factory.mktemp("clean")
    simulate(EVENTS, path, seed=3, chunk_messages=80, progress=False)
    assert len(_parts(path)) == 3
    return path


def _parts(log: Path) -> list[Path]:
    return sorted(log.rglob("part-*.parquet"))


def _copy(clean_log: Path, tmp_path: Path) -> tuple[Path, list[Path]]:
    log = tmp_path / "log"
    shutil.copytree(clean_log, log)
    return log, _parts(log)


def _verdicts(result):
    return {c["name"]: c for c in result["checks"]}


def _written(result, out: Path) -> dict:
    write_result(result, out)
    assert (out / "index.html").is_file()
    return json.loads((out / "result.json").read_text())


def test_a_truncated_part_is_set_aside_and_the_rest_checked(spark, clean_log, tmp_path):
    log, parts = _copy(clean_log, tmp_path)
    cut = parts[1]
    kept_rows = sum(pq.ParquetFile(p).metadata.num_rows for p in parts if p != cut)
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    written = _written(checked(spark, str(log), tmp_path / "out"), tmp_path / "out")
    [damaged] = written["damaged_parts"]
    assert damaged["path"] == str(cut) and damaged["bytes"] == len(data) // 2 and damaged["rows"] is None
    assert damaged["error"].startswith("footer does not read: ") and "\n" not in damaged["error"]
    assert written["rows"] == kept_rows and written["input_errors"] == [] and not written["passed"]
    assert exit_code(written) == 1
    verdicts = _verdicts(written)
    for name, check in verdicts.items():
        if name in NEEDS_EVERY_ROW:  # a row set aside can read as a violation: not judged
            assert check["verdict"] == "inconclusive", name
            assert cut.name in check["detail"]["inconclusive"] and check["detail"]["verdict_over_rows_read"] == "pass"
        else:  # judged over the rows read, named as such
            assert check["verdict"] == "pass", name
            assert cut.name in check["detail"]["damage"]
    page = (tmp_path / "out" / "index.html").read_text()
    assert "Damaged parts set aside: 1" in page and cut.name in page


def test_garbage_pages_are_found_by_the_scan_and_set_aside(spark, clean_log, tmp_path):
    """A part whose footer reads but whose pages are garbage fails Spark's scan: the part the failure names is
    set aside (its rows known from the footer) and the log loaded again."""
    log, parts = _copy(clean_log, tmp_path)
    bad = parts[2]
    rows = pq.ParquetFile(bad).metadata.num_rows
    data = bytearray(bad.read_bytes())
    for i in range(200, len(data) // 2):
        data[i] = (i * 7919) & 0xFF
    bad.write_bytes(bytes(data))
    said: list[str] = []
    result = checked(spark, str(log), tmp_path / "out", checks=("no_loss", "exactly_once"), progress=said.append)
    [damaged] = result["damaged_parts"]
    assert (damaged["path"], damaged["rows"]) == (str(bad), rows)
    assert damaged["error"].startswith("does not read: ") and "\n" not in damaged["error"]
    assert any(line.startswith(f"set aside {bad}: does not read") for line in said), said
    verdicts = _verdicts(result)
    assert verdicts["no_loss"]["verdict"] == "inconclusive" and verdicts["exactly_once"]["verdict"] == "pass"
    assert result["rows"] == sum(pq.ParquetFile(p).metadata.num_rows for p in parts if p != bad)


def test_a_part_without_a_column_the_others_have_is_set_aside(spark, clean_log, tmp_path):
    log, parts = _copy(clean_log, tmp_path)
    odd = parts[0]
    pq.write_table(pq.read_table(odd).drop(["attempt"]), odd)
    result = checked(spark, str(log), tmp_path / "out", checks=("duplicates",))
    [damaged] = result["damaged_parts"]
    assert damaged["path"] == str(odd) and damaged["error"] == "lacks column attempt, which the other parts have"
    assert _verdicts(result)["duplicates"]["verdict"] == "pass" and exit_code(result) == 1


def test_a_log_without_a_column_is_a_written_input_error(spark, clean_log, tmp_path):
    """Every part lacks msg_id: nothing can be checked; the result says so (every check inconclusive, the column
    named under input_errors) and the exit code is the input error's, 2."""
    log, parts = _copy(clean_log, tmp_path)
    for part in parts:
        pq.write_table(pq.read_table(part).drop(["msg_id"]), part)
    written = _written(checked(spark, str(log), tmp_path / "out"), tmp_path / "out")
    assert written["input_errors"] == [{"error": "event log columns: missing msg_id", "columns": ["msg_id"]}]
    assert written["rows"] is None and written["damaged_parts"] == [] and not written["passed"]
    assert sorted(c["name"] for c in written["checks"]) == sorted(engine.CHECKS)
    for c in written["checks"]:
        assert c["verdict"] == "inconclusive" and "missing msg_id" in c["detail"]["inconclusive"], c
    assert exit_code(written) == 2
    assert "Not checked:" in (tmp_path / "out" / "index.html").read_text()


def test_a_check_that_raises_is_inconclusive_and_the_others_run(spark, clean_log, tmp_path, monkeypatch):
    def broken(events, ctx):
        raise RuntimeError("the order check broke on purpose")

    monkeypatch.setitem(engine.CHECKS, "order", broken)
    written = _written(checked(spark, str(clean_log), tmp_path / "out"), tmp_path / "out")
    verdicts = _verdicts(written)
    order = verdicts.pop("order")
    assert order["verdict"] == "inconclusive"
    assert order["detail"]["error"] == {"type": "RuntimeError", "message": "the order check broke on purpose"}
    assert "the order check broke on purpose" in order["detail"]["inconclusive"]
    assert len(verdicts) == len(engine.CHECKS) - 1 and all(c["verdict"] == "pass" for c in verdicts.values())
    assert not written["passed"] and written["damaged_parts"] == [] and exit_code(written) == 1


def test_check_command_writes_its_result_for_a_damaged_log(clean_log, tmp_path):
    """Through the CLI: a truncated part is exit 1 with the part named, a log without a column exit 2 with the
    column named; result.json either way, and no traceback."""
    log, parts = _copy(clean_log, tmp_path)
    data = parts[0].read_bytes()
    parts[0].write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    run = subprocess.run(RMQC + ["check", str(log), "--out", str(out), "--checks", "no_loss,exactly_once"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, env=ENV)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stderr and f"set aside {parts[0]}: footer does not read" in run.stderr
    assert "1 damaged part set aside" in run.stdout and "INCONCLUSIVE  no_loss" in run.stdout
    result = json.loads((out / "result.json").read_text())
    assert [d["path"] for d in result["damaged_parts"]] == [str(parts[0])]
    assert {c["name"]: c["verdict"] for c in result["checks"]} == {"no_loss": "inconclusive", "exactly_once": "pass"}

    for part in parts:
        pq.write_table(pq.read_table(part).drop(["attempt"]), part) if part != parts[0] else part.unlink()
    out = tmp_path / "out-columns"
    run = subprocess.run(RMQC + ["check", str(log), "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env=ENV)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "rmqc check: error: event log columns: missing attempt" in run.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["input_errors"][0]["columns"] == ["attempt"]
    assert {c["verdict"] for c in result["checks"]} == {"inconclusive"}
