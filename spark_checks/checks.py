"""PySpark checks over an event log (v1). Each check is a function from the log to a verdict with
counts and counterexamples (Jepsen-style). One scan of the input, cached narrow (kinds as bytes);
the checks share three tables built from it once: the sends, each message's life per group
(numbers only, hash-aggregated) and each delivery beside the previous one (one window), so the events
are shuffled a few times per run, not once per check. Nothing of the log is collected to the driver
beyond the counterexamples.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from .eventlog import EVENT_KINDS
from .profiles import timing

REQUIRED = {"ts_ms": "bigint", "kind": "string", "topic": "string", "group": "string", "msg_id": "string",
            "key": "string", "message_group": "string", "producer_seq": "bigint", "attempt": "int",
            "delay_level": "int"}
OPTIONAL = {"run_id": "string", "profile": "string", "expected_delay_ms": "bigint"}
MESSAGE_KINDS = ("SEND_OK", "DELIVER", "CONSUME_OK", "CONSUME_FAIL", "DLQ", "APPLY", "ACK", "RETRY_SCHEDULED")
COUNTEREXAMPLES = 20


class CheckInputError(ValueError):
    """The input cannot be checked: the message says why in one line."""


@dataclass
class Tolerance:
    absolute_ms: int = 100
    relative: float = 0.01

    def band(self, expected: Any):
        return expected * self.relative + self.absolute_ms


@dataclass
class CheckResult:
    name: str
    verdict: str                      # pass, fail, inconclusive
    spec: list[str]
    counts: dict[str, Any] = field(default_factory=dict)
    counterexamples: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


KIND_CODE = {kind: i + 1 for i, kind in enumerate(EVENT_KINDS)}
"""Kinds are cached as one byte each (0: not a kind of the schema)."""
CHECKED_KINDS = ("SEND_OK", "DELIVER", "CONSUME_OK", "CONSUME_FAIL", "DLQ", "APPLY")
"""The kinds the checks read; the others are counted and validated but not cached."""


def _is(*kinds: str):
    from pyspark.sql import functions as F

    codes = [KIND_CODE[k] for k in kinds]
    return F.col("k") == codes[0] if len(codes) == 1 else F.col("k").isin(*codes)


def _problem(kind_code, ts, msg_id, attempt):
    """The first schema invariant a row breaks, or null (the quarantine's reason column)."""
    from pyspark.sql import functions as F

    message_codes = [KIND_CODE[k] for k in MESSAGE_KINDS]
    return (F.when(kind_code == 0, F.lit("unknown kind"))
            .when(ts.isNull(), F.lit("null ts_ms"))
            .when(kind_code.isin(*message_codes) & msg_id.isNull(), F.lit("null msg_id"))
            .when(attempt.isNotNull() & (attempt < 1), F.lit("attempt below 1")))


@dataclass
class Loaded:
    """The checkable rows (a view of ``cached``, the one cached scan), the input's counts, and the profile
    the log names."""

    valid: Any
    cached: Any
    stats: dict[str, Any]
    profile: str | None


def load(spark, path: str, quarantine_dir: Path | None) -> Loaded:
    """Read once, check the columns, cache a narrow copy of every row (kind as a byte, ``key`` only where
    an APPLY needs it); rows that break the schema's invariants are counted and, when there are any,
    written with all their columns to the quarantine folder (read again for that only)."""
    from pyspark.sql import functions as F

    try:
        raw = spark.read.parquet(str(path))
    except Exception as exc:  # AnalysisException: path missing or not Parquet
        raise CheckInputError(f"cannot read {path} as Parquet: {str(exc).splitlines()[0]}") from None
    types = dict(raw.dtypes)
    missing = sorted(c for c in REQUIRED if c not in types)
    wrong = sorted(f"{c} is {types[c]}, expected {t}" for c, t in {**REQUIRED, **OPTIONAL}.items()
                   if c in types and types[c] != t and not (t == "int" and types[c] == "bigint"))
    if missing or wrong:
        raise CheckInputError("event log columns: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else []) + wrong))
    kind_code = F.coalesce(F.array_position(F.array(*[F.lit(k) for k in EVENT_KINDS]), F.col("kind")),
                           F.lit(0)).cast("byte")
    problem = _problem(kind_code, F.col("ts_ms"), F.col("msg_id"), F.col("attempt"))
    checked = kind_code.isin(*[KIND_CODE[k] for k in CHECKED_KINDS])
    narrow = raw.select(
        F.col("run_id") if "run_id" in types else F.lit("").alias("run_id"), kind_code.alias("k"), "ts_ms", "topic",
        "group", "msg_id", F.when(kind_code == KIND_CODE["APPLY"], F.col("key")).alias("key"), "message_group",
        "producer_seq", F.col("attempt").cast("int").alias("attempt"), F.col("delay_level").cast("int").alias("delay_level"),
        (F.col("expected_delay_ms") if "expected_delay_ms" in types else F.lit(None).cast("bigint")).alias("expected_delay_ms"),
        problem.alias("_problem"), checked.alias("_checked"))
    typed = narrow.cache()  # the one scan of the input: every row, narrow
    by_problem = {r["_problem"]: r["n"] for r in typed.groupBy("_problem").agg(F.count("*").alias("n")).collect()}
    reasons = {k: n for k, n in by_problem.items() if k is not None}
    total, bad = sum(by_problem.values()), sum(reasons.values())
    if total == 0 or total == bad:
        typed.unpersist()
    if total == 0:
        raise CheckInputError(f"{path}: the event log is empty; an empty log is not a pass")
    if bad and quarantine_dir is not None:
        raw.withColumn("_problem", problem).filter(F.col("_problem").isNotNull()) \
            .write.mode("overwrite").parquet(str(quarantine_dir))
    valid = typed.filter(F.col("_problem").isNull() & F.col("_checked")).drop("_problem", "_checked")
    if total == bad:
        raise CheckInputError(f"{path}: all {total} rows break the schema's invariants (see the quarantine)")
    profile = None
    if "profile" in types:
        found = raw.select("profile").where(F.col("profile").isNotNull()).limit(1).collect()
        profile = found[0]["profile"] if found else None
    return Loaded(valid, typed, {"rows": total, "quarantined": bad, "quarantine_reasons": reasons}, profile)


def _examples(df, columns: list[str]) -> list[dict[str, Any]]:
    """The first counterexamples in a fixed order, so every master gives the same ones."""
    return [row.asDict() for row in df.select(*columns).orderBy(*columns).limit(COUNTEREXAMPLES).collect()]


def _verdict(bad: int, noisy: int = 0) -> str:
    return "fail" if bad else ("inconclusive" if noisy else "pass")


# ---- tables shared by the checks, built once per run and cached ----------------------------------

def sends(v, ctx):
    """SEND_OK rows: what each check compares deliveries with."""
    if "sends" not in ctx:
        ctx["sends"] = v.filter(_is("SEND_OK")).select("run_id", "msg_id", "topic", "producer_seq", "delay_level",
                                                       "ts_ms").cache()
    return ctx["sends"]


def lives(v, ctx):
    """One row per (run, group, message): deliveries, successes, DLQ time, first (attempt 1) and last
    delivery. Numbers only, so Spark aggregates them by hashing; every check of a message's life reads
    this one table instead of shuffling the events again."""
    from pyspark.sql import functions as F

    if "lives" in ctx:
        return ctx["lives"]
    deliver, dlq = _is("DELIVER"), _is("DLQ")
    table = (v.filter(_is("DELIVER", "CONSUME_FAIL", "CONSUME_OK", "DLQ"))
             .groupBy("run_id", "group", "msg_id").agg(
                 F.sum(deliver.cast("int")).alias("deliveries"),
                 F.sum(_is("CONSUME_OK").cast("int")).alias("successes"),
                 F.min(F.when(dlq, F.col("ts_ms"))).alias("dlq_ts"),
                 F.max(F.when(deliver, F.col("ts_ms"))).alias("last_delivery"),
                 F.min(F.when(deliver & (F.col("attempt") == 1), F.col("ts_ms"))).alias("first_attempt_1")))
    ctx["lives"] = table.cache()
    return ctx["lives"]


def redeliveries(v, ctx):
    """Each delivery beside the one before it for the same (run, group, message), in (attempt, time)
    order: the retry intervals and the duplicate deliveries both read it."""
    from pyspark.sql import Window, functions as F

    if "redeliveries" not in ctx:
        w = Window.partitionBy("run_id", "group", "msg_id").orderBy("attempt", "ts_ms")
        ctx["redeliveries"] = (v.filter(_is("DELIVER"))
                               .select("run_id", "group", "msg_id", "attempt", "ts_ms", "expected_delay_ms")
                               .withColumn("prev_ts", F.lag("ts_ms").over(w))
                               .withColumn("prev_attempt", F.lag("attempt").over(w))
                               .filter(F.col("prev_ts").isNotNull()).cache())
    return ctx["redeliveries"]


def check_no_loss(v, ctx) -> CheckResult:
    """Every SEND_OK reaches every group subscribed to its topic (delivered at least once)."""
    from pyspark.sql import functions as F

    delivered = lives(v, ctx).filter(F.col("deliveries") > 0)
    subscribed = v.filter(_is("DELIVER")).select("run_id", "topic", "group").distinct()
    expected = sends(v, ctx).select("run_id", "msg_id", "topic").distinct().join(subscribed, ["run_id", "topic"])
    missing = expected.join(delivered.select("run_id", "msg_id", "group"), ["run_id", "msg_id", "group"],
                            "left_anti").cache()
    n = missing.count()
    return CheckResult("no_loss", _verdict(n), ["RETRY-CONC-03", "RETRY-5X-06"], {"lost": n},
                       _examples(missing, ["run_id", "msg_id", "topic", "group"]))


def check_duplicates(v, ctx) -> CheckResult:
    """Deliveries of the same attempt of a message to a group more than once (at-least-once allows some)."""
    from pyspark.sql import functions as F

    again = redeliveries(v, ctx).filter(F.col("attempt").eqNullSafe(F.col("prev_attempt")))
    extra = again.count()  # a delivery with the attempt of the one before it: n deliveries of one attempt give n - 1
    dup = (again.groupBy("run_id", "group", "msg_id", "attempt").agg((F.count("*") + 1).alias("n")))
    verdict = "pass" if extra <= ctx["allow_duplicates"] else "fail"
    return CheckResult("duplicates", verdict, ["RETRY-CONC-03", "OFFSET-04"],
                       {"duplicate_deliveries": int(extra), "allowed": ctx["allow_duplicates"]},
                       _examples(dup, ["run_id", "group", "msg_id", "attempt", "n"]))


def check_exactly_once(v, ctx) -> CheckResult:
    """APPLY once per key per group (the idempotent consumer of seed 004)."""
    from pyspark.sql import functions as F

    dup = (v.filter(_is("APPLY")).groupBy("run_id", "group", "key").agg(F.count("*").alias("n"))
           .filter(F.col("n") > 1).cache())
    extra = dup.agg(F.sum(F.col("n") - 1)).first()[0] or 0
    return CheckResult("exactly_once", _verdict(int(extra)), ["CLAIM-05"], {"extra_applies": int(extra)},
                       _examples(dup, ["run_id", "group", "key", "n"]))


def check_order(v, ctx) -> CheckResult:
    """Per (group, message_group): first deliveries follow the send order, and a message is not delivered
    before the previous one has finished (FIFO blocking)."""
    from pyspark.sql import Window, functions as F

    fifo = v.filter(_is("DELIVER", "DLQ") & F.col("message_group").isNotNull())
    per_msg = fifo.groupBy("run_id", "group", "message_group", "msg_id").agg(
        F.min(F.when(_is("DELIVER"), F.col("ts_ms"))).alias("first"), F.max("ts_ms").alias("done"))
    seqs = sends(v, ctx).select("run_id", "msg_id", "producer_seq")
    w = Window.partitionBy("run_id", "group", "message_group").orderBy("producer_seq")
    pairs = (per_msg.join(seqs, ["run_id", "msg_id"]).withColumn("prev_first", F.lag("first").over(w))
             .withColumn("prev_done", F.lag("done").over(w)).withColumn("prev_msg", F.lag("msg_id").over(w)))
    bad = pairs.filter(F.col("prev_first").isNotNull() & ((F.col("first") < F.col("prev_first")) |
                                                          (F.col("first") < F.col("prev_done")))).cache()
    n = bad.count()
    return CheckResult("order", _verdict(n), ["FIFO-01", "FIFO-04", "FIFO-05", "RETRY-5X-08"], {"violations": n},
                       _examples(bad, ["run_id", "group", "message_group", "prev_msg", "msg_id", "prev_done", "first"]))


def check_retry_intervals(v, ctx) -> CheckResult:
    """The wait before each redelivery against the profile's table, per attempt: count, p50, p99, the
    KS distance to the documented value, and a verdict with the tolerance stated."""
    from pyspark.sql import functions as F

    t = timing(ctx["profile"])
    table = ctx["spark"].createDataFrame([(k + 2, w) for k, w in enumerate(t.waits_ms)], "attempt int, table_ms long")
    d = redeliveries(v, ctx).filter(F.col("attempt") == F.col("prev_attempt") + 1)
    tol = ctx["tolerance"]
    d = (d.join(F.broadcast(table), "attempt")
         .withColumn("expected", F.coalesce("expected_delay_ms", "table_ms"))
         .withColumn("interval", F.col("ts_ms") - F.col("prev_ts"))
         .withColumn("off", F.abs(F.col("interval") - F.col("expected")))
         .withColumn("band", F.col("expected") * tol.relative + tol.absolute_ms).cache())
    stats = (d.groupBy("attempt").agg(
        F.count("*").alias("count"), F.first("table_ms").alias("expected_ms"),
        F.percentile_approx("interval", 0.5).alias("p50"), F.percentile_approx("interval", 0.99).alias("p99"),
        F.sum(F.when(F.col("interval") < F.col("expected") - F.col("band"), 1).otherwise(0)).alias("below"),
        F.sum(F.when(F.col("interval") > F.col("expected") + F.col("band"), 1).otherwise(0)).alias("above"),
        F.sum(F.when(F.col("off") > 2 * F.col("band"), 1).otherwise(0)).alias("outside"),
        F.sum(F.when((F.col("off") > F.col("band")) & (F.col("off") <= 2 * F.col("band")), 1).otherwise(0)).alias("noisy"))
        .orderBy("attempt").collect())
    per_attempt = []
    for r in stats:
        ks = max(r["below"], r["above"]) / r["count"]  # distance of the empirical CDF to the documented point
        per_attempt.append({"attempt": r["attempt"], "count": r["count"], "expected_ms": r["expected_ms"],
                            "p50_ms": r["p50"], "p99_ms": r["p99"], "ks": round(ks, 6), "outside": r["outside"],
                            "noisy": r["noisy"]})
    outside = sum(p["outside"] for p in per_attempt)
    noisy = sum(p["noisy"] for p in per_attempt)
    bad = d.filter(F.col("off") > 2 * F.col("band"))
    return CheckResult("retry_intervals", _verdict(outside, noisy), ["RETRY-CONC-07", "RETRY-5X-06", "RETRY-5X-08"],
                       {"intervals": sum(p["count"] for p in per_attempt), "out_of_tolerance": outside,
                        "noise_band": noisy},
                       _examples(bad, ["run_id", "group", "msg_id", "attempt", "interval", "expected"]),
                       {"per_attempt": per_attempt, "tolerance": asdict(tol), "profile": ctx["profile"]})


def check_nothing_after_dlq(v, ctx) -> CheckResult:
    """Nothing is delivered to a group after its DLQ event (RETRY-CONC-04, RETRY-5X-07)."""
    from pyspark.sql import functions as F

    bad = lives(v, ctx).filter(F.col("dlq_ts").isNotNull() & (F.col("last_delivery") > F.col("dlq_ts"))).cache()
    n = bad.count()
    return CheckResult("nothing_after_dlq", _verdict(n), ["RETRY-CONC-04", "RETRY-5X-07"], {"violations": n},
                       _examples(bad, ["run_id", "group", "msg_id", "dlq_ts", "last_delivery"]))


def check_dlq(v, ctx) -> CheckResult:
    """A message goes to the DLQ exactly after the maximum deliveries, all failed, and only then."""
    from pyspark.sql import functions as F

    max_d = timing(ctx["profile"]).max_deliveries
    per = lives(v, ctx).filter(F.col("dlq_ts").isNull() | (F.col("last_delivery") <= F.col("dlq_ts")))
    reason = (F.when(F.col("dlq_ts").isNotNull() & (F.col("deliveries") != max_d), F.lit("DLQ not at the maximum"))
              .when(F.col("dlq_ts").isNull() & (F.col("deliveries") >= max_d) & (F.col("successes") == 0),
                    F.lit("maximum reached without DLQ")))
    bad = per.withColumn("reason", reason).filter(F.col("reason").isNotNull()).cache()
    n = bad.count()
    return CheckResult("dlq_at_max", _verdict(n), ["RETRY-CONC-04", "RETRY-CONC-06", "RETRY-5X-07"],
                       {"violations": n, "max_deliveries": max_d},
                       _examples(bad, ["run_id", "group", "msg_id", "deliveries", "dlq_ts", "last_delivery", "reason"]))


def check_delay_accuracy(v, ctx) -> CheckResult:
    """A delayed message's first delivery comes its level's delay after the send (DELAY-01, DELAY-06)."""
    from pyspark.sql import functions as F

    t = timing(ctx["profile"])
    levels = ctx["spark"].createDataFrame([(i + 1, d) for i, d in enumerate(t.delay_levels_ms)], "delay_level int, delay_ms long")
    delayed = (sends(v, ctx).filter(F.col("delay_level") > 0)
               .select("run_id", "msg_id", F.col("ts_ms").alias("sent"),
                       F.least(F.col("delay_level"), F.lit(len(t.delay_levels_ms))).alias("delay_level")))
    first = (lives(v, ctx).filter(F.col("first_attempt_1").isNotNull())
             .select("run_id", "msg_id", "group", F.col("first_attempt_1").alias("first")))
    tol = ctx["tolerance"]
    d = (delayed.join(F.broadcast(levels), "delay_level").join(first, ["run_id", "msg_id"])
         .withColumn("late_by", F.col("first") - F.col("sent") - F.col("delay_ms"))
         .withColumn("band", F.col("delay_ms") * tol.relative + tol.absolute_ms)).cache()
    bad = d.filter(F.abs("late_by") > F.col("band"))
    n, total = bad.count(), d.count()
    return CheckResult("delay_accuracy", _verdict(n), ["DELAY-01", "DELAY-05", "DELAY-06"],
                       {"delayed_deliveries": total, "off": n},
                       _examples(bad, ["run_id", "msg_id", "group", "delay_level", "sent", "first", "late_by"]))


CHECKS: dict[str, Callable] = {
    "no_loss": check_no_loss, "duplicates": check_duplicates, "exactly_once": check_exactly_once,
    "order": check_order, "retry_intervals": check_retry_intervals, "dlq_at_max": check_dlq,
    "nothing_after_dlq": check_nothing_after_dlq, "delay_accuracy": check_delay_accuracy,
}
CONFIGURATION_FREE = ("exactly_once", "nothing_after_dlq", "delay_accuracy")
"""Checks that hold whatever each consumer's retry settings are: the ones a mixed conformance log can take."""
FAULT_CHECK = {"lost": "no_loss", "duplicate-delivery": "duplicates", "duplicate-apply": "exactly_once",
               "reorder": "order", "early-retry": "retry_intervals", "late-retry": "retry_intervals",
               "dlq-early": "dlq_at_max", "dlq-missing": "dlq_at_max", "delivered-after-dlq": "nothing_after_dlq"}
FAULT_COUNT = {"no_loss": "lost", "duplicates": "duplicate_deliveries", "exactly_once": "extra_applies",
               "order": "violations", "retry_intervals": "out_of_tolerance", "dlq_at_max": "violations",
               "nothing_after_dlq": "violations"}


def run_checks(spark, path: str, out: Path | None = None, profile: str | None = None,
               tolerance: Tolerance | None = None, allow_duplicates: int = 0,
               checks: tuple[str, ...] | None = None) -> dict[str, Any]:

    quarantine = (out / "quarantine") if out else None
    loaded = load(spark, path, quarantine)
    v, cached, stats = loaded.valid, loaded.cached, loaded.stats
    profile = profile or loaded.profile or "grpc-5.x"
    if profile not in ("remoting-4.x", "grpc-5.x"):
        raise CheckInputError(f"profile {profile!r}: the checks know remoting-4.x and grpc-5.x")
    ctx = {"spark": spark, "profile": profile, "tolerance": tolerance or Tolerance(),
           "allow_duplicates": allow_duplicates}
    unknown = [c for c in (checks or ()) if c not in CHECKS]
    if unknown:
        raise CheckInputError(f"unknown check {', '.join(unknown)}; known: {', '.join(CHECKS)}")
    try:
        results = [fn(v, ctx) for name, fn in CHECKS.items() if checks is None or name in checks]
    finally:
        for table in (ctx.get("lives"), ctx.get("sends"), ctx.get("redeliveries"), cached):
            if table is not None:
                table.unpersist()
    return {"input": str(path), "profile": profile, **stats, "checks": [asdict(r) for r in results],
            "passed": all(r.verdict == "pass" for r in results)}


def write_result(result: dict[str, Any], out: Path) -> None:
    from .report import write_html

    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2, default=str))
    write_html(result, out / "index.html")
