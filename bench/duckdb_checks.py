"""The Spark checks of ``spark_checks.checks`` written again for DuckDB, as the benchmark's peer.

Same validity rules, same definitions, same outputs: the counts and verdicts, the per-attempt retry
statistics (count, exact p50 / p99 interpolated between the nearest ranks, as Spark's ``percentile``), and
the first counterexamples of each check with their names (ordered by name here, by hash in Spark, so the
bench compares how many there are, not which).
"""
from __future__ import annotations

from typing import Any

from history.events import EVENT_KINDS
from spark_checks.checks import COUNTEREXAMPLES, FAULT_COUNT, MESSAGE_KINDS, Tolerance
from spark_checks.profiles import timing
from spark_checks.timing_model import wait_model


def _list(values) -> str:
    return ", ".join(f"'{v}'" for v in values)


def run_duckdb_checks(con, path: str, profile: str, tolerance: Tolerance = Tolerance()) -> dict[str, dict[str, Any]]:
    t = timing(profile)
    rel, ab = tolerance.relative, tolerance.absolute_ms
    con.execute(f"""CREATE OR REPLACE TEMP TABLE v AS SELECT coalesce(run_id, '') AS run_id, ts_ms, kind, topic, "group",
        msg_id, key, message_group, producer_seq, attempt, delay_level, expected_delay_ms
        FROM read_parquet('{path}/**/*.parquet', hive_partitioning = true, union_by_name = true)
        WHERE kind IN ({_list(EVENT_KINDS)}) AND ts_ms IS NOT NULL
          AND NOT (kind IN ({_list(MESSAGE_KINDS)}) AND msg_id IS NULL) AND (attempt IS NULL OR attempt >= 1)""")
    con.execute("CREATE OR REPLACE TEMP TABLE tbl(attempt INTEGER, table_ms BIGINT)")
    con.executemany("INSERT INTO tbl VALUES (?, ?)", [(k + 2, w) for k, w in enumerate(t.waits_ms)])
    con.execute("CREATE OR REPLACE TEMP TABLE levels(delay_level INTEGER, delay_ms BIGINT)")
    con.executemany("INSERT INTO levels VALUES (?, ?)", [(i + 1, d) for i, d in enumerate(t.delay_levels_ms)])
    one = lambda sql: con.execute(sql).fetchone()  # noqa: E731
    examples: dict[str, int] = {}

    def violations(name: str, table: str) -> int:
        """Count the rows of a temp table of violations and fetch the first ones (by name), as the Spark check does."""
        examples[name] = len(con.execute(f"SELECT * FROM {table} ORDER BY ALL LIMIT {COUNTEREXAMPLES}").fetchall())
        return one(f"SELECT count(*) FROM {table}")[0]

    out: dict[str, dict[str, Any]] = {}
    con.execute("""CREATE OR REPLACE TEMP TABLE missing AS
        WITH s AS (SELECT DISTINCT run_id, msg_id, topic FROM v WHERE kind = 'SEND_OK'),
        subs AS (SELECT DISTINCT run_id, topic, "group" FROM v WHERE kind = 'DELIVER'),
        got AS (SELECT DISTINCT run_id, msg_id, "group" FROM v WHERE kind = 'DELIVER')
        SELECT * FROM (SELECT s.run_id, s.msg_id, s.topic, subs."group" FROM s JOIN subs USING (run_id, topic)) e
        ANTI JOIN got USING (run_id, msg_id, "group")""")
    out["no_loss"] = {"owed": one("""SELECT count(*) FROM (SELECT DISTINCT s.run_id, s.msg_id, subs."group" FROM
        (SELECT DISTINCT run_id, msg_id, topic FROM v WHERE kind = 'SEND_OK') s
        JOIN (SELECT DISTINCT run_id, topic, "group" FROM v WHERE kind = 'DELIVER') subs USING (run_id, topic))""")[0],
                      "lost": violations("no_loss", "missing")}
    # each delivery after a (message, group)'s first, in time order (a delivery before its outcome at one time),
    # with the delivery before it and how that ended (the simulated logs state no consumers, acks or waits asked)
    con.execute("""CREATE OR REPLACE TEMP TABLE redelivered AS WITH o AS (
            SELECT run_id, "group", msg_id, message_group, kind, attempt, ts_ms, expected_delay_ms,
                   CASE kind WHEN 'DELIVER' THEN 0 WHEN 'CONSUME_OK' THEN 1 ELSE 2 END AS k
            FROM v WHERE kind IN ('DELIVER', 'CONSUME_OK', 'CONSUME_FAIL')),
        w AS (SELECT *,
                last_value(CASE WHEN kind = 'DELIVER' THEN {'ts': ts_ms, 'a': attempt} END IGNORE NULLS) OVER p AS d,
                last_value(CASE WHEN kind != 'DELIVER' THEN {'ts': ts_ms, 'a': attempt, 'kind': kind} END IGNORE NULLS)
                    OVER p AS o
              FROM o WINDOW p AS (PARTITION BY run_id, "group", msg_id ORDER BY ts_ms, attempt, k
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
        SELECT run_id, "group", msg_id, message_group, attempt, ts_ms, expected_delay_ms, d.ts AS prev_ts,
               d.a AS prev_attempt, CASE WHEN o.ts >= d.ts AND o.a IS NOT DISTINCT FROM d.a THEN o.kind END AS prev_outcome
        FROM w WHERE kind = 'DELIVER' AND d IS NOT NULL""")
    # a redelivery after a delivery that succeeded
    con.execute("""CREATE OR REPLACE TEMP TABLE dup AS SELECT run_id, "group", msg_id, attempt, ts_ms FROM redelivered
        WHERE prev_outcome = 'CONSUME_OK'""")
    # a message stored twice (TX-05, two sends under one id) is counted apart (the simulated logs have no
    # transactions: the commits that Spark takes for sends are not read here)
    con.execute("""CREATE OR REPLACE TEMP TABLE twice AS SELECT run_id, msg_id FROM v WHERE kind = 'SEND_OK'
        GROUP BY ALL HAVING count(*) > 1""")
    twice_dups = int(one("SELECT count(*) FROM dup SEMI JOIN twice USING (run_id, msg_id)")[0])
    con.execute("DELETE FROM dup WHERE (run_id, msg_id) IN (SELECT (run_id, msg_id) FROM twice)")
    violations("duplicates", "dup")
    out["duplicates"] = {"redeliveries": int(one("SELECT count(*) FROM redelivered")[0]),
                         "duplicate_deliveries": int(one("SELECT count(*) FROM dup")[0]), "crash_window_duplicates": 0,
                         "stored_twice_duplicates": twice_dups}
    con.execute("""CREATE OR REPLACE TEMP TABLE dup_apply AS SELECT run_id, "group", key, count(*) AS n FROM v
        WHERE kind = 'APPLY' GROUP BY ALL HAVING count(*) > 1""")
    violations("exactly_once", "dup_apply")
    out["exactly_once"] = {"applies": int(one("SELECT count(*) FROM v WHERE kind = 'APPLY'")[0]),
                           "extra_applies": int(one("SELECT coalesce(sum(n - 1), 0) FROM dup_apply")[0])}
    con.execute("""CREATE OR REPLACE TEMP TABLE disorder AS WITH per AS (SELECT run_id, "group", message_group, msg_id,
            min(CASE WHEN kind = 'DELIVER' THEN ts_ms END) AS first, max(ts_ms) AS done
            FROM v WHERE kind IN ('DELIVER', 'DLQ') AND message_group IS NOT NULL GROUP BY ALL),
        seqs AS (SELECT run_id, msg_id, producer_seq FROM v WHERE kind = 'SEND_OK'),
        p AS (SELECT per.*, lag(first) OVER w AS prev_first, lag(done) OVER w AS prev_done, lag(msg_id) OVER w AS prev_msg
              FROM per JOIN seqs USING (run_id, msg_id)
              WINDOW w AS (PARTITION BY run_id, "group", message_group ORDER BY producer_seq))
        SELECT run_id, "group", message_group, prev_msg, msg_id, prev_done, first, prev_first FROM p
        WHERE prev_first IS NOT NULL""")
    pairs = int(one("SELECT count(*) FROM disorder")[0])
    con.execute(f"DELETE FROM disorder WHERE NOT coalesce(first < prev_first OR first < prev_done - {ab}, false)")
    out["order"] = {"pairs": pairs, "violations": violations("order", "disorder")}
    # the spec's timing model: a window [low, high] after the nominal wait, the noise band around it
    standard, fifo = (wait_model(n) for n in ({"grpc-5.x": ("retry-5x", "retry-5x-fifo")}.get(profile)
                                               or ("retry-4x", "retry-4x")))
    con.execute(f"""CREATE OR REPLACE TEMP TABLE waits AS WITH
        e AS (SELECT run_id, "group", msg_id, attempt, ts_ms - prev_ts AS gap, message_group IS NOT NULL AS fifo,
                     coalesce(expected_delay_ms, tbl.table_ms) AS expected
              FROM redelivered JOIN tbl USING (attempt)
              WHERE attempt = prev_attempt + 1 AND prev_outcome = 'CONSUME_FAIL')
        SELECT *, expected + CASE WHEN fifo THEN {fifo.late_ms} ELSE {standard.late_ms} END AS low,
               expected + CASE WHEN fifo THEN {fifo.late_ms + fifo.slack_ms} ELSE {standard.late_ms + standard.slack_ms} END
               AS high, expected * {rel} + {ab} AS band FROM e""")
    twice_waits = int(one("SELECT count(*) FROM waits SEMI JOIN twice USING (run_id, msg_id)")[0])
    con.execute("DELETE FROM waits WHERE (run_id, msg_id) IN (SELECT (run_id, msg_id) FROM twice)")
    fails = "(gap < low - band OR gap > high + band)"
    per_attempt = con.execute(f"""SELECT attempt, count(*), quantile_cont(gap, 0.5), quantile_cont(gap, 0.99),
            count(*) FILTER (WHERE {fails}), count(*) FILTER (WHERE NOT {fails} AND (gap < low OR gap > high))
        FROM waits GROUP BY attempt ORDER BY attempt""").fetchall()
    con.execute(f"CREATE OR REPLACE TEMP TABLE off_waits AS SELECT * FROM waits WHERE {fails}")
    violations("retry_intervals", "off_waits")
    out["retry_intervals"] = {"intervals": sum(r[1] for r in per_attempt), "out_of_tolerance": sum(r[4] for r in per_attempt),
                              "noise_band": sum(r[5] for r in per_attempt), "crash_window_redeliveries": 0,
                              "stored_twice_redeliveries": twice_waits, "late_after_handover": 0, "outside_in_stall": 0,
                              "per_attempt": [{"attempt": r[0], "count": r[1], "p50_ms": r[2], "p99_ms": r[3]}
                                              for r in per_attempt]}
    con.execute("""CREATE OR REPLACE TEMP TABLE lives AS SELECT run_id, "group", msg_id,
        sum(CASE WHEN kind = 'DELIVER' THEN 1 ELSE 0 END) AS deliveries,
        coalesce(max(CASE WHEN kind = 'DELIVER' THEN attempt END), 0) AS last_attempt,
        sum(CASE WHEN kind = 'CONSUME_OK' THEN 1 ELSE 0 END) AS successes,
        min(CASE WHEN kind = 'DLQ' THEN ts_ms END) AS dlq_ts, max(CASE WHEN kind = 'DELIVER' THEN ts_ms END) AS last_delivery
        FROM v WHERE kind IN ('DELIVER', 'CONSUME_OK', 'DLQ') GROUP BY ALL""")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE bad_dlq AS SELECT * FROM lives WHERE NOT coalesce(last_delivery > dlq_ts, false) AND
        ((dlq_ts IS NOT NULL AND last_attempt != {t.max_deliveries}) OR
         (dlq_ts IS NULL AND last_attempt >= {t.max_deliveries} AND successes = 0))""")
    dead_letters = int(one("SELECT count(*) FROM lives WHERE dlq_ts IS NOT NULL")[0])
    out["dlq_at_max"] = {"dead_letters": dead_letters, "violations": violations("dlq_at_max", "bad_dlq"),
                         "max_deliveries": t.max_deliveries}
    con.execute("CREATE OR REPLACE TEMP TABLE after_dlq AS SELECT * FROM lives WHERE coalesce(last_delivery > dlq_ts, false)")
    out["nothing_after_dlq"] = {"dead_letters": dead_letters, "violations": violations("nothing_after_dlq", "after_dlq")}
    con.execute(f"""CREATE OR REPLACE TEMP TABLE delays AS WITH s AS (SELECT run_id, msg_id, ts_ms AS sent,
            least(delay_level, {len(t.delay_levels_ms)}) AS delay_level FROM v WHERE kind = 'SEND_OK' AND delay_level > 0),
        f AS (SELECT run_id, msg_id, "group", min(ts_ms) AS first FROM v WHERE kind = 'DELIVER' AND attempt = 1 GROUP BY ALL)
        SELECT run_id, msg_id, "group", delay_level, sent, first, first - sent - delay_ms AS late_by, delay_ms
        FROM s JOIN levels USING (delay_level) JOIN f USING (run_id, msg_id)""")
    con.execute(f"CREATE OR REPLACE TEMP TABLE early AS SELECT * FROM delays WHERE late_by < -(delay_ms * {rel} + {ab})")
    out["delay_accuracy"] = {"delayed_deliveries": one("SELECT count(*) FROM delays")[0],
                             "early": violations("delay_accuracy", "early"),
                             "late": one(f"SELECT count(*) FROM delays WHERE late_by > delay_ms * {rel} + {ab}")[0]}
    for name, counts in out.items():
        key = {**FAULT_COUNT, "delay_accuracy": "early"}[name]
        noisy_band = counts.get("noise_band", 0)
        counts["verdict"] = "fail" if counts[key] else ("inconclusive" if noisy_band else "pass")
        counts["counterexamples"] = examples[name]
    return out
