"""The Spark checks' definitions again, in plain Python over a list of rows: the oracle the checks are
compared with on small generated logs (each count straight from the check's docstring, with no hashing,
no cache and no SQL null rules), and the Hypothesis strategy for those logs."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from hypothesis import strategies as st

from spark_checks.checks import Tolerance
from spark_checks.profiles import timing
from spark_checks.timing_model import wait_model

PROFILE = "grpc-5.x"
Row = dict[str, Any]


def as_table(rows: list[Row]):  # -> pyarrow.Table with the event log's types for these columns
    import pyarrow as pa

    from history.parquet import arrow_schema

    log = arrow_schema()
    return pa.Table.from_pylist(rows, schema=pa.schema([log.field(c) for c in rows[0]]))


def row(kind: str, ts: int, **fields: Any) -> Row:
    """A row of the generated logs: every column the checks read, null unless given."""
    return {"run_id": "r", "profile": PROFILE, "kind": kind, "ts_ms": ts, "topic": None, "group": None,
            "msg_id": None, "key": None, "message_group": None, "producer_seq": None, "attempt": None,
            "delay_level": None, "expected_delay_ms": None, **fields}


@st.composite
def event_logs(draw: st.DrawFn) -> list[Row]:
    """A few messages, each with one topic and message group, sent at most once, delivered to some groups
    with ladders that keep to, miss or break the profile's waits, some repeated attempts, DLQs before and
    after the last delivery, APPLYs once or twice. Every row keeps the schema's invariants."""
    t = timing(PROFILE)
    rows: list[Row] = []
    for i in range(draw(st.integers(1, 6))):
        msg = {"msg_id": f"m{i}", "topic": draw(st.sampled_from(["T1", "T2"]))}
        mg = draw(st.sampled_from([None, "A", "A", "B"]))  # most messages share a FIFO line
        sent, level = draw(st.integers(0, 5_000)), draw(st.sampled_from([0, 0, 1, 3]))
        if i == 0 or draw(st.integers(0, 9)):  # the first message is always sent: the log is never empty
            rows.append(row("SEND_OK", sent, producer_seq=i, delay_level=level, **msg))
            if mg is None and not level and draw(st.integers(0, 4)) == 0:  # a transaction committed twice (TX-05)
                rows.append(row("SEND_OK", sent + draw(st.integers(0, 9_000)), producer_seq=i, **msg))
        for group in draw(st.sets(st.sampled_from(["G1", "G2"]))):
            at = dict(msg, group=group, message_group=mg)
            first = t.delay_levels_ms[level - 1] if level and draw(st.booleans()) else draw(st.integers(0, 3_000))
            ts, attempt = sent + first, 1
            for k in range(draw(st.sampled_from([0, 1, 2, 3, 16, 17, 18]))):
                # the attempt before failed (mostly), succeeded, or its consumer never answered
                outcome = draw(st.sampled_from(["CONSUME_FAIL"] * 6 + ["CONSUME_OK", None])) if k else None
                if outcome:
                    rows.append(row(outcome, ts + 1, attempt=attempt, **at))
                if k and draw(st.integers(0, 9)):
                    attempt += 1
                    wait = t.wait_before(attempt) or 1_000
                    lag = 0 if mg else t.revive_lag_ms  # the timing model's window starts here
                    ts += draw(st.sampled_from([wait, wait + lag, wait + lag + 150, wait + lag + 3_000,
                                                wait + lag - 50, 3 * wait, 10]))
                rows.append(row("DELIVER", ts, attempt=attempt, **at))
            if draw(st.booleans()):
                rows.append(row("CONSUME_OK", ts + 1, attempt=attempt, **at))
            if draw(st.integers(0, 2)) == 0:
                rows.append(row("DLQ", ts + draw(st.sampled_from([t.dlq_after_last_ms, -5])), **at))
            for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
                rows.append(row("APPLY", ts + 2, group=group, key=f"k{i}", msg_id=f"m{i}"))
    return rows


def expected_counts(rows: list[Row], tol: Tolerance = Tolerance()) -> dict[str, dict[str, int]]:
    """Each check's counts for ``rows``, as ``run_checks`` reports them."""
    t = timing(PROFILE)
    of = defaultdict(list)
    for r in rows:
        of[r["kind"]].append(r)
    life: dict[tuple, list[Row]] = defaultdict(list)  # (run, msg, group) -> its deliveries, successes, DLQs
    for r in of["DELIVER"] + of["CONSUME_OK"] + of["DLQ"]:
        life[(r["run_id"], r["msg_id"], r["group"])].append(r)
    # (run, msg, group) -> each delivery after its first: (delivery, the delivery before it in time, how that ended)
    ordered: dict[tuple, list[Row]] = defaultdict(list)
    for r in of["DELIVER"] + of["CONSUME_OK"] + of["CONSUME_FAIL"]:
        ordered[(r["run_id"], r["msg_id"], r["group"])].append(r)
    code = {"DELIVER": 0, "CONSUME_OK": 1, "CONSUME_FAIL": 2}
    after: dict[tuple, list[tuple[Row, Row, str | None]]] = defaultdict(list)
    for key, events in ordered.items():
        prev, outcome = None, None
        for e in sorted(events, key=lambda e: (e["ts_ms"], e["attempt"], code[e["kind"]])):
            if e["kind"] != "DELIVER":
                outcome = e
                continue
            if prev is not None:
                answered = outcome is not None and outcome["ts_ms"] >= prev["ts_ms"] and \
                    outcome["attempt"] == prev["attempt"]
                after[key].append((e, prev, outcome["kind"] if answered else None))
            prev = e
    sends: dict[tuple, Row] = {}
    stores = Counter((r["run_id"], r["msg_id"]) for r in of["SEND_OK"])
    for r in of["SEND_OK"]:
        sends.setdefault((r["run_id"], r["msg_id"]), r)
    twice = {key for key, n in stores.items() if n > 1}  # stored twice (TX-05): duplicates and waits apart

    subscribed = {(r["run_id"], r["topic"], r["group"]) for r in of["DELIVER"]}
    delivered = {(r["run_id"], r["msg_id"], r["group"]) for r in of["DELIVER"]}
    owed = {(run, msg, g) for (run, msg), s in sends.items() for (run2, topic, g) in subscribed
            if (run2, topic) == (run, s["topic"])}
    lost = owed - delivered

    def extra(counter: Counter) -> int:
        return sum(n - 1 for n in counter.values() if n > 1)

    duplicates = duplicates_twice = 0  # a redelivery after a delivery that succeeded (no acks, no consumers here)
    for key, pairs in after.items():
        n = sum(outcome == "CONSUME_OK" for _, _, outcome in pairs)
        if key[:2] in twice:
            duplicates_twice += n
        else:
            duplicates += n
    applies = extra(Counter((r["run_id"], r["group"], r["key"]) for r in of["APPLY"]))

    lines: dict[tuple, list[tuple]] = defaultdict(list)  # (run, group, message group) -> (seq, first, done)
    for (run, msg, group), events in life.items():
        fifo = [e for e in events if e["kind"] in ("DELIVER", "DLQ") and e["message_group"] is not None]
        if fifo and (run, msg) in sends:
            firsts = [e["ts_ms"] for e in fifo if e["kind"] == "DELIVER"]
            lines[(run, group, fifo[0]["message_group"])].append(
                (sends[(run, msg)]["producer_seq"], min(firsts) if firsts else None, max(e["ts_ms"] for e in fifo)))
    disorder = lined_up = 0
    for line in lines.values():
        line.sort()
        for (_, prev_first, prev_done), (_, first, _) in zip(line, line[1:]):
            lined_up += prev_first is not None
            disorder += prev_first is not None and first is not None and \
                (first < prev_first or first < prev_done - tol.absolute_ms)

    intervals = outside = noisy = waits_twice = 0
    dlq_bad = after_dlq = 0
    for key, pairs in after.items():  # a redelivery at the next attempt after a failure
        for e, prev, outcome in pairs:
            if outcome != "CONSUME_FAIL":
                continue
            attempt, prev_attempt, ts, prev_ts = e["attempt"], prev["attempt"], e["ts_ms"], prev["ts_ms"]
            revived, wait = e["message_group"] is None, t.wait_before(e["attempt"])
            if attempt == prev_attempt + 1 and wait is not None and key[:2] in twice:
                waits_twice += 1
            elif attempt == prev_attempt + 1 and wait is not None:
                # the spec's timing model: a window after the nominal wait, the noise band around it
                low, high = wait_model("retry-5x" if revived else "retry-5x-fifo").window(wait)
                band, iv = wait * tol.relative + tol.absolute_ms, ts - prev_ts
                bad = iv < low - band or iv > high + band
                intervals, outside, noisy = intervals + 1, outside + bad, noisy + (not bad and not low <= iv <= high)
    dead_letters = 0
    for key, events in life.items():
        ladder = sorted((e["attempt"], e["ts_ms"]) for e in events if e["kind"] == "DELIVER")
        dlqs = [e["ts_ms"] for e in events if e["kind"] == "DLQ"]
        dead_letters += bool(dlqs)
        dlq, last = (min(dlqs) if dlqs else None), max((ts for _, ts in ladder), default=None)
        if dlq is not None and last is not None and last > dlq:
            after_dlq += 1
            continue
        successes = sum(e["kind"] == "CONSUME_OK" for e in events)
        last_attempt = max((a for a, _ in ladder), default=None)  # the server dead-letters by attempt
        dlq_bad += (dlq is not None and last_attempt != t.max_deliveries) or (
            dlq is None and last_attempt is not None and last_attempt >= t.max_deliveries and successes == 0)

    delayed = early = late = 0  # early fails; late is counted, not judged (the log cannot tell whose it is)
    for (run, msg), s in sends.items():
        if not s["delay_level"]:
            continue
        delay = t.delay_levels_ms[min(s["delay_level"], len(t.delay_levels_ms)) - 1]
        for (run2, msg2, _), events in life.items():
            firsts = [e["ts_ms"] for e in events if e["kind"] == "DELIVER" and e["attempt"] == 1]
            if (run2, msg2) == (run, msg) and firsts:
                delayed += 1
                late_by, band = min(firsts) - s["ts_ms"] - delay, delay * tol.relative + tol.absolute_ms
                early, late = early + (late_by < -band), late + (late_by > band)

    # no manifest states crash windows here: nothing is counted apart
    return {"no_loss": {"owed": len(owed), "lost": len(lost)},
            "duplicates": {"redeliveries": sum(len(p) for p in after.values()), "duplicate_deliveries": duplicates,
                           "crash_window_duplicates": 0, "stored_twice_duplicates": duplicates_twice},
            "exactly_once": {"applies": len(of["APPLY"]), "extra_applies": applies},
            "order": {"pairs": lined_up, "violations": disorder},
            "retry_intervals": {"intervals": intervals, "out_of_tolerance": outside, "noise_band": noisy,
                                "crash_window_redeliveries": 0, "stored_twice_redeliveries": waits_twice,
                                "late_after_handover": 0, "outside_in_stall": 0},
            "dlq_at_max": {"dead_letters": dead_letters, "violations": dlq_bad},
            "nothing_after_dlq": {"dead_letters": dead_letters, "violations": after_dlq},
            "delay_accuracy": {"delayed_deliveries": delayed, "early": early, "late": late}}
