"""rmqc simulate + rmqc check: every fault fails exactly its check with the injected count; a clean log
passes; bad input is set aside or refused with one clear line. One SparkSession for the module."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from check_oracle import as_table, event_logs, expected_counts, row
from hypothesis import HealthCheck, given, settings

from history.profiles import BROKER_PROFILES
from spark_checks.checks import FAULT_CHECK, FAULT_COUNT, CheckInputError, run_checks
from spark_checks.simulate import FAULTS, simulate

RMQC = [sys.executable, "-m", "rmqc.cli"]
EVENTS = 15_000


@pytest.fixture(scope="module")
def spark():
    from spark_checks.session import spark_session, stop_session

    yield spark_session()
    stop_session()


@pytest.fixture(scope="module")
def clean_logs(tmp_path_factory):
    out = {}
    for profile in BROKER_PROFILES:
        path = tmp_path_factory.mktemp(f"clean-{profile}")
        simulate(EVENTS, path, seed=11, profile=profile, progress=False)
        out[profile] = path
    return out


def _verdicts(result):
    return {c["name"]: c for c in result["checks"]}


@pytest.mark.parametrize("profile", BROKER_PROFILES)
def test_a_clean_log_passes_every_check(spark, clean_logs, profile):
    result = run_checks(spark, str(clean_logs[profile]))
    failing = {n: c["counts"] for n, c in _verdicts(result).items() if c["verdict"] != "pass"}
    assert result["passed"] and not failing, failing
    assert result["profile"] == profile and result["quarantined"] == 0
    intervals = _verdicts(result)["retry_intervals"]
    assert intervals["counts"]["intervals"] > 100
    # rmqc simulate waits exactly the documented time: every wait sits on the model window's earliest edge
    # (a point mass), far from the spread of a real broker (KS against the window's uniform near 1)
    for p in intervals["detail"]["per_attempt"]:
        assert p["window_ms"][0] <= p["min_ms"] and p["ks"] >= 0.9 and sum(p["histogram"]["counts"]) == p["count"]


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_fails_exactly_its_check(spark, tmp_path, fault):
    simulate(EVENTS, tmp_path, seed=5, profile="grpc-5.x", faults={fault: 3}, progress=False)
    result = run_checks(spark, str(tmp_path))
    verdicts = _verdicts(result)
    failing = sorted(n for n, c in verdicts.items() if c["verdict"] != "pass")
    meant = FAULT_CHECK[fault]
    assert failing == [meant], f"{fault}: failing {failing}, meant {meant}"
    assert verdicts[meant]["counts"][FAULT_COUNT[meant]] == 3
    examples = verdicts[meant]["counterexamples"]
    log = pq.read_table(tmp_path, columns=["msg_id", "key", "group"])
    names = {c: set(log[c].to_pylist()) - {None} for c in ("msg_id", "key", "group")}
    assert examples and all((r.get("msg_id") or r.get("key")) for r in examples), examples
    for column in ("msg_id", "key", "group"):  # the names looked up for the hashed identities are the log's own
        assert all(r[column] in names[column] for r in examples if column in r), (column, examples)


def _counts_of_generated(spark, path: Path, rows) -> dict:
    """Each check's counts (its settings left out) for ``rows`` written to ``path`` as one Parquet file."""
    pq.write_table(as_table(rows), path / "log.parquet")
    return {c["name"]: {k: v for k, v in c["counts"].items() if k not in ("allowed", "max_deliveries")}
            for c in run_checks(spark, str(path))["checks"]}


def _with_outcome_counts(expected: dict) -> dict:
    """The oracle's counts with those of the sends that did not end in one SEND_OK (issue 50, item 4): the
    generated logs have no SEND_UNKNOWN, no SEND_FAIL and no send of more than one attempt, so none is
    indeterminate or refused, no copy is a client's retry, and every duplicate is a broker's copy."""
    out = {name: {**counts, "indeterminate": 0} for name, counts in expected.items()}
    out["no_loss"].update(indeterminate_delivered=0, refused=0, refused_delivered=0)
    out["duplicates"].update(client_retry_copies=0, broker_copies=out["duplicates"]["duplicate_deliveries"])
    out["nothing_after_dlq"].update(client_retry_copies=0, dead_lettered_in_crash_window=0)
    out["order"].update(client_retry_messages=0, crash_window_pairs=0)
    out["retry_intervals"]["client_retry_redeliveries"] = 0
    out["delay_accuracy"]["client_retry_deliveries"] = 0
    return out


ORACLE_SPEC = ("RETRY-CONC-03", "RETRY-CONC-04", "RETRY-CONC-07", "RETRY-5X-06", "RETRY-5X-07", "OFFSET-04",
               "CLAIM-05", "FIFO-01", "FIFO-04", "DELAY-01", "DELAY-06")


@pytest.mark.spec(*ORACLE_SPEC)
@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=event_logs())
def test_counts_equal_the_checks_definitions_in_plain_python(spark, tmp_path_factory, rows):
    """Every check's counts on a small generated log (ladders kept and broken, repeated attempts, DLQs before
    and after the last delivery, lost and delayed messages, double APPLYs) equal those of the plain-Python
    oracle in check_oracle, which reads each definition with no hashing, cache or SQL null rules."""
    assert _counts_of_generated(spark, tmp_path_factory.mktemp("generated"), rows) == \
        _with_outcome_counts(expected_counts(rows))


@pytest.mark.spec(*ORACLE_SPEC)
def test_counts_where_spark_drops_the_observing_node(spark, tmp_path):
    """One message delivered three times, one attempt each, every attempt but the last failed: a plan where
    Spark may prove the duplicates check empty and drop the node that counts it; the check still counts 0
    (found by the oracle test, 100 examples)."""
    rows = [row("DELIVER", ts, topic="T1", group="G1", msg_id="m1", attempt=attempt)
            for ts, attempt in ((0, 1), (1_000, 2), (6_000, 3))]
    rows += [row("CONSUME_FAIL", ts + 1, topic="T1", group="G1", msg_id="m1", attempt=attempt)
             for ts, attempt in ((0, 1), (1_000, 2))]
    counts = _counts_of_generated(spark, tmp_path, rows)
    assert counts == _with_outcome_counts(expected_counts(rows))
    assert counts["duplicates"]["duplicate_deliveries"] == 0


@pytest.mark.spec("TX-05", "RETRY-CONC-03", "RETRY-5X-06")
@pytest.mark.parametrize("second_commit", [True, False])
def test_a_transaction_committed_again_by_a_check_is_two_stores_not_a_duplicate(spark, tmp_path, second_commit):
    """From 5.1.0 a check can commit a half its producer already committed, before the batched op message
    is written (TX-05): the message is stored twice and delivered twice, each copy at attempt 1, the second
    copy's delivery falling between the first copy's attempts (as the 5.1.4 soak logged them). With both commits in
    the log the duplicate is counted apart; with one commit the same deliveries are a duplicate (the check still
    bites). Either way no wait is judged: in time order the attempt-2 delivery follows a success."""
    def r(kind, ts, detail=None, **kw):
        return {**row(kind, ts, **kw), "detail": detail}

    tx = {"topic": "T1", "msg_id": "m1"}
    rows = [r("TX_HALF", 0, **tx), r("TX_END", 10, [("state", "COMMIT_MESSAGE"), ("source", "CLIENT")], **tx),
            r("DELIVER", 20, group="G1", attempt=1, **tx), r("CONSUME_FAIL", 21, group="G1", attempt=1, **tx),
            r("DELIVER", 9_000, group="G1", attempt=1, **tx), r("CONSUME_OK", 9_001, group="G1", attempt=1, **tx),
            r("DELIVER", 16_000, group="G1", attempt=2, **tx), r("CONSUME_OK", 16_001, group="G1", attempt=2, **tx)]
    if second_commit:
        rows.insert(2, r("TX_END", 8_900, [("state", "COMMIT_MESSAGE"), ("source", "SERVER_CHECK")], **tx))
    pq.write_table(as_table(rows), tmp_path / "log.parquet")
    checks = {c["name"]: c for c in run_checks(spark, str(tmp_path))["checks"]}
    duplicates, waits = checks["duplicates"]["counts"], checks["retry_intervals"]["counts"]
    if second_commit:
        assert checks["duplicates"]["verdict"] == "pass" and checks["no_loss"]["verdict"] == "pass"
        assert (duplicates["duplicate_deliveries"], duplicates["stored_twice_duplicates"]) == (0, 1)
    else:
        assert checks["duplicates"]["verdict"] == "fail"
        assert (duplicates["duplicate_deliveries"], duplicates["stored_twice_duplicates"]) == (1, 0)
    assert (waits["intervals"], waits["stored_twice_redeliveries"]) == (0, 0)


@pytest.mark.spec("DELAY-01", "DELAY-06")
@pytest.mark.parametrize("first_ms, verdict, early, late", [(26_000, "pass", 0, 1), (10_050, "pass", 0, 0),
                                                            (4_000, "fail", 1, 0)])
def test_a_delayed_message_is_judged_by_what_the_broker_promises(spark, tmp_path, first_ms, verdict, early, late):
    """A level-3 message (10 s) first delivered 26 s after its send, its group busy meanwhile, is what a
    correct broker can log (make run's own log had one): counted late, not failed. Delivered 4 s after its
    send, before its time, it fails."""
    msg = {"topic": "T1", "msg_id": "m1"}
    rows = [row("SEND_OK", 0, producer_seq=1, delay_level=3, **msg),
            row("DELIVER", first_ms, group="G1", attempt=1, **msg), row("CONSUME_OK", first_ms + 1, group="G1", attempt=1, **msg)]
    pq.write_table(as_table(rows), tmp_path / "log.parquet")
    check = {c["name"]: c for c in run_checks(spark, str(tmp_path))["checks"]}["delay_accuracy"]
    assert check["verdict"] == verdict
    assert check["counts"] == {"delayed_deliveries": 1, "early": early, "late": late, "client_retry_deliveries": 0,
                               "indeterminate": 0}
    assert len(check["counterexamples"]) == early


def test_checks_run_at_once_give_what_they_give_one_by_one(spark, tmp_path):
    """The verdicts of RETRY-CONC-03, FIFO-01, RETRY-CONC-07 and RETRY-CONC-04, their counts and named
    counterexamples do not depend on how many checks share the cache at once."""
    faults = {"lost": 2, "duplicate-delivery": 2, "reorder": 2, "late-retry": 2, "delivered-after-dlq": 1}
    simulate(EVENTS, tmp_path, seed=7, profile="grpc-5.x", faults=faults, progress=False)
    one_by_one = run_checks(spark, str(tmp_path), concurrency=1)
    assert one_by_one == run_checks(spark, str(tmp_path), concurrency=4)
    assert sum(len(c["counterexamples"]) for c in one_by_one["checks"]) >= sum(faults.values())


def test_a_cache_larger_than_the_memory_goes_to_disk_and_gives_the_same_results(spark, tmp_path, monkeypatch):
    """The events are cached on disk only when their estimated size passes the storage memory, and so are the
    tables the checks share; the verdicts, counts and named counterexamples are those of the caches in memory."""
    import threading

    from pyspark import StorageLevel

    from spark_checks import loading, tables

    assert not loading.cache_on_disk(100 * 2**20, 2**30)  # 100 MiB of Parquet: about 550 MiB cached
    assert loading.cache_on_disk(200 * 2**20, 2**30)      # 200 MiB: about 1.1 GiB
    for on_disk, level in ((True, StorageLevel.DISK_ONLY), (False, StorageLevel.MEMORY_AND_DISK)):
        shared = tables._cached({"lock": threading.Lock(), "tables": {}, "on_disk": on_disk}, "t", lambda: spark.range(3))
        assert (shared.storageLevel.useDisk, shared.storageLevel.useMemory) == (level.useDisk, level.useMemory)
        shared.unpersist()
    faults = {"lost": 2, "duplicate-delivery": 2, "reorder": 2, "late-retry": 2, "dlq-missing": 1}
    simulate(EVENTS, tmp_path, seed=9, profile="grpc-5.x", faults=faults, progress=False)
    said: list[str] = []
    in_memory = run_checks(spark, str(tmp_path), progress=said.append)
    assert "cached on disk" not in said[0]
    monkeypatch.setattr(loading, "cache_on_disk", lambda input_bytes, storage_bytes: True)
    said.clear()
    on_disk = run_checks(spark, str(tmp_path), progress=said.append)
    assert "cached on disk" in said[0]
    assert on_disk == in_memory
    injected = {FAULT_CHECK[fault]: count for fault, count in faults.items()}  # one check a fault here
    found = {c["name"]: c["counts"][FAULT_COUNT[c["name"]]] for c in on_disk["checks"] if c["name"] in FAULT_COUNT}
    assert found == {name: injected.get(name, 0) for name in found}


def _write(path: Path, table: pa.Table) -> None:
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path / "part-0.parquet")


def test_missing_and_mistyped_columns_are_one_clear_error(spark, clean_logs, tmp_path):
    table = pq.read_table(next(clean_logs["grpc-5.x"].rglob("*.parquet")))
    _write(tmp_path / "a", table.drop(["attempt", "msg_id"]))
    with pytest.raises(CheckInputError, match=r"^event log columns: missing attempt, msg_id$"):
        run_checks(spark, str(tmp_path / "a"))
    _write(tmp_path / "b", table.set_column(table.schema.get_field_index("ts_ms"), "ts_ms",
                                            table["ts_ms"].cast(pa.string())))
    with pytest.raises(CheckInputError, match="ts_ms is string, expected bigint"):
        run_checks(spark, str(tmp_path / "b"))


def test_bad_rows_are_quarantined_and_the_rest_checked(spark, clean_logs, tmp_path):
    table = pq.read_table(next(clean_logs["grpc-5.x"].rglob("*.parquet")))
    rows = table.slice(0, 3).to_pylist()
    rows[0].update(kind="NOT_A_KIND")
    rows[1].update(kind="APPLY", msg_id=None)
    rows[2].update(kind="DELIVER", attempt=-1)
    _write(tmp_path / "log", pa.concat_tables([table, pa.Table.from_pylist(rows, schema=table.schema)]))
    result = run_checks(spark, str(tmp_path / "log"), out=tmp_path / "out")
    assert result["quarantined"] == 3 and result["passed"]
    assert result["quarantine_reasons"] == {"unknown kind": 1, "null msg_id": 1, "attempt below 1": 1}
    assert pq.read_table(tmp_path / "out" / "quarantine").num_rows == 3


@pytest.mark.spec("RETRY-5X-07", "RETRY-CONC-04")
def test_a_message_sent_to_the_dlq_without_a_delivery_is_named_by_its_dlq_row(spark, clean_logs, tmp_path):
    """RETRY-5X-07: a DLQ before the maximum deliveries fails dlq_at_max, and the counterexample names the
    message and the group from the DLQ row itself (the log has no send or delivery of it)."""
    table = pq.read_table(next(clean_logs["grpc-5.x"].rglob("*.parquet")))
    delivery = next(r for r in table.to_pylist() if r["kind"] == "DELIVER")
    delivery.update(kind="DLQ", msg_id="dlq-only-1")
    _write(tmp_path / "log", pa.concat_tables([table, pa.Table.from_pylist([delivery], schema=table.schema)]))
    verdicts = _verdicts(run_checks(spark, str(tmp_path / "log")))
    assert sorted(n for n, c in verdicts.items() if c["verdict"] != "pass") == ["dlq_at_max"]
    [example] = verdicts["dlq_at_max"]["counterexamples"]
    assert (example["msg_id"], example["group"], example["deliveries"]) == ("dlq-only-1", delivery["group"], 0)
    assert example["reason"] == "DLQ not at the maximum"


def test_the_profile_is_the_one_the_log_names(spark, tmp_path):
    """A log's rows name its profile: both known ones give the first by name, another name is one clear
    error naming it (unless the user names the profile), and a log without the column is checked as
    grpc-5.x."""
    delivery = dict(topic="T1", group="G1", msg_id="m1", attempt=1)
    logs = {"both": [row("DELIVER", 1, **delivery), row("SEND_OK", 0, topic="T1", msg_id="m1", profile="remoting-4.x")],
            "other": [row("SEND_OK", 0, topic="T1", msg_id="m1", profile="docs"), row("DELIVER", 1, **delivery)]}
    for name, rows in logs.items():
        _write(tmp_path / name, as_table(rows))
    _write(tmp_path / "none", as_table(logs["both"]).drop(["profile"]))
    assert run_checks(spark, str(tmp_path / "both"))["profile"] == "grpc-5.x"
    assert run_checks(spark, str(tmp_path / "none"))["profile"] == "grpc-5.x"
    with pytest.raises(CheckInputError, match=r"profile 'docs' \(named by the log\)"):
        run_checks(spark, str(tmp_path / "other"))
    assert run_checks(spark, str(tmp_path / "other"), profile="remoting-4.x")["profile"] == "remoting-4.x"


def test_an_empty_log_is_an_error(spark, clean_logs, tmp_path):
    table = pq.read_table(next(clean_logs["grpc-5.x"].rglob("*.parquet")))
    _write(tmp_path / "empty", table.slice(0, 0))
    with pytest.raises(CheckInputError, match="the event log is empty; an empty log is not a pass"):
        run_checks(spark, str(tmp_path / "empty"))


def test_check_command_end_to_end(tmp_path):
    log = tmp_path / "log"
    made = subprocess.run(RMQC + ["simulate", "--events", "8000", "--out", str(log), "--inject", "dlq-missing=2"],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["injected"] == {"dlq-missing": 2} and "events/s" in made.stderr
    out = tmp_path / "check"
    checked = subprocess.run(RMQC + ["check", str(log), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "FAIL          dlq_at_max" in checked.stdout
    result = json.loads((out / "result.json").read_text())
    assert not result["passed"] and {c["name"]: c["verdict"] for c in result["checks"]}["dlq_at_max"] == "fail"
    page = (out / "index.html").read_text()
    assert "<svg" in page and "dlq_at_max" in page and "counterexamples" in page
    subset = subprocess.run(RMQC + ["check", str(log), "--out", str(tmp_path / "subset"), "--checks",
                                    "no_loss,exactly_once"], capture_output=True, text=True, timeout=300)
    assert subset.returncode == 0 and "dlq" not in subset.stdout
    missing = subprocess.run(RMQC + ["check", str(tmp_path / "nope")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    bad = subprocess.run(RMQC + ["simulate", "--events", "10", "--out", str(tmp_path / "x"), "--inject", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown fault 'nope'" in bad.stderr
