"""The timing checks, against the spec's timing model (``spec/timing_model.yaml``) and the noise band around
it: the wait before each redelivery after a failure (``retry_intervals``, RETRY-CONC-07, RETRY-5X-06,
RETRY-5X-08, RETRY-5X-11; crash windows and messages stored twice, TX-05, counted apart), with its
per-attempt percentiles, KS distance and histogram, and a delayed message not delivered before its time
(``delay_accuracy``, DELAY-01, DELAY-05, DELAY-06, DELAY-08; a message a client's retries may have stored twice
counted apart in both, issue 50, item 4)."""
from __future__ import annotations

from dataclasses import asdict

from history.profiles import GRPC_5X

from .loading import KIND_CODE
from .profiles import timing
from .tables import (STALL_AFTER_MS, _apart, _case, _delay_ms, _in_crash_window, _in_stall, _looked_up,
                     _members_changed, _per_group, client_retried, lives, redeliveries, sends, stored_twice)
from .timing_model import WaitModel, wait_model
from .verdicts import MSG_AND_GROUP, CheckResult, Examples, _at, _first, _observed_count, _verdict, _violations


RETRY_MODELS = {GRPC_5X: ("retry-5x", "retry-5x-fifo")}
"""The timing model's waits for the redeliveries of each profile: (standard, FIFO); others use retry-4x."""
HISTOGRAM_BINS = 40
KS_GRID = 100


def _retry_models(ctx) -> tuple[WaitModel, WaitModel]:
    standard, fifo = RETRY_MODELS.get(ctx["profile"], ("retry-4x", "retry-4x"))
    fixed = tuple(sorted(ctx.get("wall_fixed_ms", {}).items()))
    return (wait_model(standard, ctx["release"], ctx["time_scale"], fixed),
            wait_model(fifo, ctx["release"], ctx["time_scale"], fixed))


def _with_changed(rows, ctx, since: str, until: str):
    """``rows`` with ``changed``: whether their group's members changed between ``since`` and ``until``."""
    from pyspark.sql import functions as F

    if not ctx["stated"].changes():
        return rows.withColumn("changed", F.lit(False))
    same, changed = _members_changed(rows, ctx, since, until)
    return same.withColumn("changed", F.lit(False)).unionByName(changed.withColumn("changed", F.lit(True)))


def check_retry_intervals(e, ctx) -> CheckResult:
    """The wait before each redelivery against the spec's timing model (``spec/timing_model.yaml``):
    inside its window a pass, outside by no more than the noise band inconclusive, farther a fail. Per
    attempt: count, p50 / p90 / p99, the KS distance to the model (uniform over the window, on a 1 % grid)
    and a histogram for the plot. Redeliveries inside a stated crash window are counted apart, and so are those
    of a message stored twice (``stored_twice``, TX-05: which copy's wait a delivery ends is not in the log) and
    of a message its client's retries may have stored twice (``client_retried``, issue 50, item 4: the same,
    ``client_retry_redeliveries``). A wait one of whose ends the soak's own process may have logged late (a
    stall its probe saw, ``rmqc.stall_probe``) is not judged on that side (``outside_in_stall``)."""
    from pyspark.sql import functions as F

    t = timing(ctx["profile"])
    standard, fifo = _retry_models(ctx)
    tol = ctx["tolerance"]
    table = _looked_up(t.waits_ms, F.col("attempt") - 1)
    ladder = _per_group(ctx, lambda g: _looked_up(g["ladder_ms"], F.least(F.col("attempt") - 1,
                                                                          F.lit(len(g["ladder_ms"]))))
                        if g.get("ladder_ms") else None, F.lit(None).cast("long"))
    is_fifo = F.col("mg").isNotNull()
    after_failure = redeliveries(e, ctx).filter((F.col("attempt") == F.col("prev_attempt") + 1) &
                                                (F.col("prev_outcome") == KIND_CODE["CONSUME_FAIL"]))
    d = (_with_changed(after_failure, ctx, "prev_ts", "ts_ms")
         # lateness is the broker's only when the client that failed the attempt before stayed to take this one
         .withColumn("handed_over", ~(F.col("c").eqNullSafe(F.col("prev_c")) & ~F.col("changed")))
         # an end the soak's own process may have logged late (a stall, rmqc.stall_probe) is not judged on its side:
         # the delivery before (its time moves the wait's start) for earliness, anything in between for lateness
         .withColumn("early_stalled", _in_stall(ctx, F.col("prev_ts") - STALL_AFTER_MS, F.col("prev_ts")))
         .withColumn("late_stalled", _in_stall(ctx, F.col("prev_ts"), F.col("ts_ms")))
         .withColumn("judge_late", ~F.col("handed_over") & ~F.col("late_stalled"))
         .withColumn("nominal", F.coalesce("scheduled_ms", "expected_delay_ms", ladder, table))
         .filter(F.col("nominal").isNotNull())
         .withColumn("low", F.col("nominal") + F.when(is_fifo, F.lit(fifo.late_ms)).otherwise(F.lit(standard.late_ms)))
         .withColumn("high", F.col("low") + F.when(is_fifo, F.lit(fifo.slack_ms)).otherwise(F.lit(standard.slack_ms)))
         .withColumn("band", tol.band(F.col("nominal")))
         .withColumn("interval", F.col("ts_ms") - F.col("prev_ts"))
         .withColumn("crash", _in_crash_window(ctx, F.col("ts_ms"))))
    d, twice = _apart(d, stored_twice(e, ctx))
    d, retried = _apart(d, client_retried(e, ctx))
    judged = d.filter(~F.col("crash"))
    iv, low, high, band, judge_late = F.col("interval"), F.col("low"), F.col("high"), F.col("band"), F.col("judge_late")
    judge_early = ~F.col("early_stalled")
    early_out, late_out = iv < low - band, iv > high + band
    fails = (early_out & judge_early) | (late_out & judge_late)
    noisy = ~fails & (((iv < low) & judge_early) | ((iv > high) & judge_late))
    stalled = (early_out & ~judge_early) | (late_out & ~F.col("handed_over") & F.col("late_stalled"))
    u = F.when(high > low, (iv - low) / (high - low)).otherwise(F.when(iv < low, -1.0).otherwise(2.0))
    stats = judged.groupBy("attempt").agg(
        F.count("*").alias("count"), F.count(F.when(early_out & judge_early, 1)).alias("early"),
        F.count(F.when(late_out & judge_late, 1)).alias("late"),
        F.count(F.when(late_out & F.col("handed_over"), 1)).alias("late_unjudged"), F.count(F.when(noisy, 1)).alias("noisy"),
        F.count(F.when(stalled, 1)).alias("stalled"),
        F.percentile(iv, F.array(F.lit(0.5), F.lit(0.9), F.lit(0.99))).alias("p"),
        F.min(iv).alias("min"), F.max(iv).alias("max"), F.min(low - band).alias("lo"), F.max(high + band).alias("hi"),
        F.min("low").alias("window_low"), F.max("high").alias("window_high"),
        F.array_sort(F.collect_set("nominal")).alias("nominals")).collect()
    crash = d.filter(F.col("crash")).count() if ctx["crash_windows"] else 0
    stats = sorted(stats, key=lambda r: r["attempt"])  # a few rows: sorted here, not by another Spark job
    ks_bins = {(r["attempt"], r["bin"]): r["n"] for r in judged.groupBy(
        "attempt", F.least(F.greatest(F.floor(u * KS_GRID), F.lit(-1)), F.lit(KS_GRID)).alias("bin")).agg(
        F.count("*").alias("n")).collect()} if stats else {}
    # the plot's range: the documented waits, the window and its band, every observed wait
    edges = {r["attempt"]: (min(r["lo"], r["min"], *r["nominals"]), max(r["hi"], r["max"])) for r in stats}
    histogram = _histogram(judged, edges) if stats else {}
    per_attempt = []
    for r in stats:
        a, n = r["attempt"], r["count"]
        per_attempt.append({
            "attempt": a, "count": n, "expected_ms": r["nominals"][0] if len(r["nominals"]) == 1 else r["nominals"],
            "window_ms": [r["window_low"], r["window_high"]], "p50_ms": r["p"][0], "p90_ms": r["p"][1],
            "p99_ms": r["p"][2], "min_ms": r["min"], "max_ms": r["max"], "ks": round(_ks_uniform(ks_bins, a, n), 4),
            "early": r["early"], "late": r["late"], "outside": r["early"] + r["late"], "noisy": r["noisy"],
            "late_unjudged": r["late_unjudged"], "outside_in_stall": r["stalled"],
            "histogram": {"from_ms": edges[a][0], "to_ms": edges[a][1], "counts": histogram.get(a, [])}})
    n_outside = sum(p["outside"] for p in per_attempt)
    n_noisy = sum(p["noisy"] for p in per_attempt)
    # the count is known from the statistics: the examples are read only when there are some
    examples = (_first(judged.filter(fails), ["m", "m2", "g", "attempt", "interval", "low", "high"],
                       MSG_AND_GROUP, _at("ts_ms", MSG_AND_GROUP),
                       ["run_id", "group", "msg_id", "attempt", "interval", "low", "high"])
                if n_outside else Examples([], MSG_AND_GROUP, {}, []))
    return CheckResult("retry_intervals", _verdict(n_outside, n_noisy),
                       ["RETRY-CONC-07", "RETRY-5X-06", "RETRY-5X-08", "RETRY-5X-11"],
                       {"intervals": sum(p["count"] for p in per_attempt), "out_of_tolerance": n_outside,
                        "noise_band": n_noisy, "crash_window_redeliveries": crash,
                        "stored_twice_redeliveries": twice, "client_retry_redeliveries": retried,
                        "late_after_handover": sum(p["late_unjudged"] for p in per_attempt),
                        "outside_in_stall": sum(p["outside_in_stall"] for p in per_attempt)}, examples,
                       {"per_attempt": per_attempt, "tolerance": asdict(tol), "profile": ctx["profile"],
                        "release": ctx["release"], "time_scale": ctx["time_scale"],
                        "model": {"standard": standard.stated(), "fifo": fifo.stated(),
                                  "noise_band": f"{tol.relative:g} x nominal + {tol.absolute_ms} ms",
                                  "file": "spec/timing_model.yaml"},
                        "revive_lag_ms": t.revive_lag_ms, "stalls": len(ctx.get("stalls") or ())})


def _ks_uniform(bins: dict[tuple[int, int], int], attempt: int, n: int) -> float:
    """The KS distance between the observed positions in the window (0 its earliest edge, 1 its latest)
    and the uniform distribution the model allows, read at the grid's edges (below: bin -1, above: KS_GRID)."""
    below = bins.get((attempt, -1), 0)
    seen, worst = below, below / n
    for j in range(KS_GRID):
        seen += bins.get((attempt, j), 0)
        worst = max(worst, abs(seen / n - (j + 1) / KS_GRID))
    return max(worst, bins.get((attempt, KS_GRID), 0) / n)


def _histogram(d, edges: dict[int, tuple[float, float]]) -> dict[int, list[int]]:
    """Per attempt, HISTOGRAM_BINS counts of the intervals between that attempt's edges."""
    from pyspark.sql import functions as F

    lo = _case("attempt", {a: F.lit(float(low)) for a, (low, _) in edges.items()})
    width = (_case("attempt", {a: F.lit(float(high)) for a, (_, high) in edges.items()}) - lo) / HISTOGRAM_BINS
    b = F.least(F.greatest(F.floor((F.col("interval") - lo) / F.when(width > 0, width).otherwise(1)), F.lit(0)),
                F.lit(HISTOGRAM_BINS - 1)).cast("int")
    out = {a: [0] * HISTOGRAM_BINS for a in edges}
    for r in d.groupBy("attempt", b.alias("bin")).agg(F.count("*").alias("n")).collect():
        out[r["attempt"]][r["bin"]] = r["n"]
    return out


def check_delay_accuracy(e, ctx) -> CheckResult:
    """A delayed message is not delivered before its time (DELAY-01, DELAY-06; a 5.x timed message's time
    less the timer's rounding, DELAY-08, as ``spec/timing_model.yaml`` states it): a first delivery earlier
    than that, by more than the tolerance, is a violation (``early``). A later one is
    counted (``late``) but not judged: the broker promises that the message is not visible before its time,
    and a log cannot tell a late broker from a consumer busy with other messages (a generated program on
    the reference delivered a level-3 message 26 s after its send, its group retrying others meanwhile).
    The suites judge lateness on the target itself (the delay property, DELAY-01).

    A message its client's retries may have stored twice (``client_retried``, issue 50, item 4) is counted apart
    (``client_retry_deliveries``): its first copy was stored by an attempt before the one its SEND_OK answers,
    so its time runs from before the send the log shows. An indeterminate send (SEND_UNKNOWN) is not judged: when
    it was stored is not known."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    t = timing(ctx["profile"])
    # the earliest a delayed message may come: a level's delay (DELAY-01), a timed message's wait less the
    # timer wheel's rounding down to its tick (DELAY-08): the timing model's delay-level and timer waits
    level, timer = (wait_model(name, ctx["release"], ctx["time_scale"]) for name in ("delay-level", "timer"))
    earliest = F.when(F.col("delay_level") > 0, F.lit(level.late_ms)).otherwise(F.lit(timer.late_ms))
    delayed = (sends(e).withColumn("delay_ms", _delay_ms(t)).filter(F.col("delay_ms").isNotNull())
               .select("m", "m2", F.col("ts_ms").alias("sent"), (F.col("delay_ms") + earliest).alias("delay_ms"),
                       "delay_level"))
    first = (lives(e, ctx).filter(F.col("first_attempt_1").isNotNull())
             .select("m", "m2", "g", F.col("first_attempt_1").alias("first")))
    tol = ctx["tolerance"]
    d, retried = _apart(delayed.join(first, ["m", "m2"]), client_retried(e, ctx))
    d = d.withColumn("late_by", F.col("first") - F.col("sent") - F.col("delay_ms"))
    band = tol.band(F.col("delay_ms"))
    total, delayed_deliveries = Observation(), F.count(F.lit(1)).alias("n")
    later, late = Observation(), F.count(F.when(F.col("late_by") > band, 1)).alias("n")
    early = d.observe(total, delayed_deliveries).observe(later, late).filter(F.col("late_by") < -band)
    n, ex = _violations(early, ["m", "m2", "g", "delay_level", "sent", "first", "late_by"], MSG_AND_GROUP,
                        _at("first", MSG_AND_GROUP), ["run_id", "msg_id", "group", "delay_level", "sent", "first", "late_by"])
    return CheckResult("delay_accuracy", _verdict(n), ["DELAY-01", "DELAY-05", "DELAY-06", "DELAY-08"],
                       {"delayed_deliveries": _observed_count(total, lambda: d.agg(delayed_deliveries)), "early": n,
                        "late": _observed_count(later, lambda: d.agg(late)), "client_retry_deliveries": retried}, ex)
