"""The Spark checks of ``spark_checks.checks`` written again for DuckDB, as the benchmark's peer.

Same validity rules, same definitions, same counts; percentiles are approximate in both engines and
are not compared.
"""
from __future__ import annotations

from typing import Any

from spark_checks.checks import FAULT_COUNT, MESSAGE_KINDS, Tolerance
from spark_checks.eventlog import EVENT_KINDS
from spark_checks.profiles import timing


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
    out: dict[str, dict[str, Any]] = {}
    lost = one("""WITH s AS (SELECT DISTINCT run_id, msg_id, topic FROM v WHERE kind = 'SEND_OK'),
        subs AS (SELECT DISTINCT run_id, topic, "group" FROM v WHERE kind = 'DELIVER'),
        got AS (SELECT DISTINCT run_id, msg_id, "group" FROM v WHERE kind = 'DELIVER')
        SELECT count(*) FROM (SELECT s.run_id, s.msg_id, subs."group" FROM s JOIN subs USING (run_id, topic)) e
        ANTI JOIN got USING (run_id, msg_id, "group")""")[0]
    out["no_loss"] = {"lost": lost}
    dup = one("""SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM v WHERE kind = 'DELIVER'
        GROUP BY run_id, "group", msg_id, attempt HAVING count(*) > 1)""")[0]
    out["duplicates"] = {"duplicate_deliveries": int(dup)}
    extra = one("""SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM v WHERE kind = 'APPLY'
        GROUP BY run_id, "group", key HAVING count(*) > 1)""")[0]
    out["exactly_once"] = {"extra_applies": int(extra)}
    order = one("""WITH per AS (SELECT run_id, "group", message_group, msg_id,
            min(CASE WHEN kind = 'DELIVER' THEN ts_ms END) AS first, max(ts_ms) AS done
            FROM v WHERE kind IN ('DELIVER', 'DLQ') AND message_group IS NOT NULL GROUP BY ALL),
        seqs AS (SELECT run_id, msg_id, producer_seq FROM v WHERE kind = 'SEND_OK'),
        p AS (SELECT per.*, lag(first) OVER w AS prev_first, lag(done) OVER w AS prev_done
              FROM per JOIN seqs USING (run_id, msg_id)
              WINDOW w AS (PARTITION BY run_id, "group", message_group ORDER BY producer_seq))
        SELECT count(*) FROM p WHERE prev_first IS NOT NULL AND (first < prev_first OR first < prev_done)""")[0]
    out["order"] = {"violations": order}
    intervals, outside, noisy = one(f"""WITH d AS (SELECT run_id, "group", msg_id, attempt, ts_ms, expected_delay_ms,
            lag(ts_ms) OVER w AS prev_ts, lag(attempt) OVER w AS prev_attempt FROM v WHERE kind = 'DELIVER'
            WINDOW w AS (PARTITION BY run_id, "group", msg_id ORDER BY attempt, ts_ms)),
        x AS (SELECT coalesce(expected_delay_ms, tbl.table_ms) AS expected, ts_ms - prev_ts AS gap
              FROM d JOIN tbl USING (attempt) WHERE prev_ts IS NOT NULL AND attempt = prev_attempt + 1)
        SELECT count(*), coalesce(sum(CASE WHEN abs(gap - expected) > 2 * (expected * {rel} + {ab}) THEN 1 ELSE 0 END), 0),
               coalesce(sum(CASE WHEN abs(gap - expected) > expected * {rel} + {ab}
                                  AND abs(gap - expected) <= 2 * (expected * {rel} + {ab}) THEN 1 ELSE 0 END), 0)
        FROM x""")
    out["retry_intervals"] = {"intervals": intervals, "out_of_tolerance": int(outside), "noise_band": int(noisy)}
    con.execute("""CREATE OR REPLACE TEMP TABLE lives AS SELECT run_id, "group", msg_id,
        sum(CASE WHEN kind = 'DELIVER' THEN 1 ELSE 0 END) AS deliveries,
        sum(CASE WHEN kind = 'CONSUME_OK' THEN 1 ELSE 0 END) AS successes,
        min(CASE WHEN kind = 'DLQ' THEN ts_ms END) AS dlq_ts, max(CASE WHEN kind = 'DELIVER' THEN ts_ms END) AS last_delivery
        FROM v WHERE kind IN ('DELIVER', 'CONSUME_FAIL', 'CONSUME_OK', 'DLQ') GROUP BY ALL""")
    at_max = one(f"""SELECT count(*) FROM lives WHERE (dlq_ts IS NULL OR last_delivery <= dlq_ts) AND
        ((dlq_ts IS NOT NULL AND deliveries != {t.max_deliveries}) OR
         (dlq_ts IS NULL AND deliveries >= {t.max_deliveries} AND successes = 0))""")[0]
    out["dlq_at_max"] = {"violations": at_max, "max_deliveries": t.max_deliveries}
    after = one("SELECT count(*) FROM lives WHERE dlq_ts IS NOT NULL AND last_delivery > dlq_ts")[0]
    out["nothing_after_dlq"] = {"violations": after}
    delayed, off = one(f"""WITH s AS (SELECT run_id, msg_id, ts_ms AS sent, least(delay_level, {len(t.delay_levels_ms)}) AS delay_level
            FROM v WHERE kind = 'SEND_OK' AND delay_level > 0),
        f AS (SELECT run_id, msg_id, "group", min(ts_ms) AS first FROM v WHERE kind = 'DELIVER' AND attempt = 1 GROUP BY ALL),
        d AS (SELECT first - sent - delay_ms AS late_by, delay_ms FROM s JOIN levels USING (delay_level) JOIN f USING (run_id, msg_id))
        SELECT count(*), coalesce(sum(CASE WHEN abs(late_by) > delay_ms * {rel} + {ab} THEN 1 ELSE 0 END), 0) FROM d""")
    out["delay_accuracy"] = {"delayed_deliveries": delayed, "off": int(off)}
    for name, counts in out.items():
        key = {**FAULT_COUNT, "delay_accuracy": "off"}[name]
        noisy_band = counts.get("noise_band", 0)
        counts["verdict"] = "fail" if counts[key] else ("inconclusive" if noisy_band else "pass")
    return out
