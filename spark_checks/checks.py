"""PySpark checks over an event log (v1). Each check is a function from the log to a verdict with
counts and counterexamples (Jepsen-style). One scan of the input, cached; nothing of the log is
collected to the driver beyond the counterexamples.
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


def load(spark, path: str, quarantine_dir: Path | None):
    """Read, check the columns, split off rows that break the schema's invariants, cache the rest."""
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
    cols = [c for c in list(REQUIRED) + list(OPTIONAL) if c in types]
    df = raw.select(*cols)
    if "run_id" not in types:
        df = df.withColumn("run_id", F.lit(""))
    if "profile" not in types:
        df = df.withColumn("profile", F.lit(None).cast("string"))
    if "expected_delay_ms" not in types:
        df = df.withColumn("expected_delay_ms", F.lit(None).cast("bigint"))
    problem = (F.when(F.col("kind").isNull() | ~F.col("kind").isin(*EVENT_KINDS), F.lit("unknown kind"))
               .when(F.col("ts_ms").isNull(), F.lit("null ts_ms"))
               .when(F.col("kind").isin(*MESSAGE_KINDS) & F.col("msg_id").isNull(), F.lit("null msg_id"))
               .when(F.col("attempt").isNotNull() & (F.col("attempt") < 1), F.lit("attempt below 1")))
    typed = df.withColumn("_problem", problem).cache()
    by_problem = {r["_problem"]: r["n"] for r in typed.groupBy("_problem").agg(F.count("*").alias("n")).collect()}
    reasons = {k: n for k, n in by_problem.items() if k is not None}
    total, bad = sum(by_problem.values()), sum(reasons.values())
    if total == 0:
        raise CheckInputError(f"{path}: the event log is empty; an empty log is not a pass")
    if bad and quarantine_dir is not None:
        typed.filter(F.col("_problem").isNotNull()).write.mode("overwrite").parquet(str(quarantine_dir))
    valid = typed.filter(F.col("_problem").isNull()).drop("_problem")
    if total == bad:
        raise CheckInputError(f"{path}: all {total} rows break the schema's invariants (see the quarantine)")
    return valid, {"rows": total, "quarantined": bad, "quarantine_reasons": reasons}


def _examples(df, columns: list[str]) -> list[dict[str, Any]]:
    """The first counterexamples in a fixed order, so every master gives the same ones."""
    return [row.asDict() for row in df.select(*columns).orderBy(*columns).limit(COUNTEREXAMPLES).collect()]


def _verdict(bad: int, noisy: int = 0) -> str:
    return "fail" if bad else ("inconclusive" if noisy else "pass")


def check_no_loss(v, ctx) -> CheckResult:
    """Every SEND_OK reaches every group subscribed to its topic (delivered at least once)."""
    from pyspark.sql import functions as F

    sends = v.filter(F.col("kind") == "SEND_OK").select("run_id", "msg_id", "topic").distinct()
    subscribed = v.filter(F.col("kind") == "DELIVER").select("run_id", "topic", "group").distinct()
    expected = sends.join(subscribed, ["run_id", "topic"])
    got = v.filter(F.col("kind") == "DELIVER").select("run_id", "msg_id", "group").distinct()
    missing = expected.join(got, ["run_id", "msg_id", "group"], "left_anti").cache()
    n = missing.count()
    return CheckResult("no_loss", _verdict(n), ["RETRY-CONC-03", "RETRY-5X-06"], {"lost": n},
                       _examples(missing, ["run_id", "msg_id", "topic", "group"]))


def check_duplicates(v, ctx) -> CheckResult:
    """Deliveries of the same attempt of a message to a group more than once (at-least-once allows some)."""
    from pyspark.sql import functions as F

    dup = (v.filter(F.col("kind") == "DELIVER").groupBy("run_id", "group", "msg_id", "attempt")
           .agg(F.count("*").alias("n")).filter(F.col("n") > 1).cache())
    extra = dup.agg(F.sum(F.col("n") - 1)).first()[0] or 0
    verdict = "pass" if extra <= ctx["allow_duplicates"] else "fail"
    return CheckResult("duplicates", verdict, ["RETRY-CONC-03", "OFFSET-04"],
                       {"duplicate_deliveries": int(extra), "allowed": ctx["allow_duplicates"]},
                       _examples(dup, ["run_id", "group", "msg_id", "attempt", "n"]))


def check_exactly_once(v, ctx) -> CheckResult:
    """APPLY once per key per group (the idempotent consumer of seed 004)."""
    from pyspark.sql import functions as F

    dup = (v.filter(F.col("kind") == "APPLY").groupBy("run_id", "group", "key").agg(F.count("*").alias("n"))
           .filter(F.col("n") > 1).cache())
    extra = dup.agg(F.sum(F.col("n") - 1)).first()[0] or 0
    return CheckResult("exactly_once", _verdict(int(extra)), ["CLAIM-05"], {"extra_applies": int(extra)},
                       _examples(dup, ["run_id", "group", "key", "n"]))


def check_order(v, ctx) -> CheckResult:
    """Per (group, message_group): first deliveries follow the send order, and a message is not delivered
    before the previous one has finished (FIFO blocking)."""
    from pyspark.sql import Window, functions as F

    d = v.filter((F.col("kind").isin("DELIVER", "DLQ")) & F.col("message_group").isNotNull())
    per_msg = d.groupBy("run_id", "group", "message_group", "msg_id").agg(
        F.min(F.when(F.col("kind") == "DELIVER", F.col("ts_ms"))).alias("first"), F.max("ts_ms").alias("done"))
    seqs = v.filter(F.col("kind") == "SEND_OK").select("run_id", "msg_id", "producer_seq")
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
    from pyspark.sql import Window, functions as F

    t = timing(ctx["profile"])
    table = ctx["spark"].createDataFrame([(k + 2, w) for k, w in enumerate(t.waits_ms)], "attempt int, table_ms long")
    w = Window.partitionBy("run_id", "group", "msg_id").orderBy("attempt", "ts_ms")
    d = (v.filter(F.col("kind") == "DELIVER").select("run_id", "group", "msg_id", "attempt", "ts_ms",
                                                     "expected_delay_ms")
         .withColumn("prev_ts", F.lag("ts_ms").over(w)).withColumn("prev_attempt", F.lag("attempt").over(w))
         .filter(F.col("prev_ts").isNotNull() & (F.col("attempt") == F.col("prev_attempt") + 1)))
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


def _dlq_lives(v):
    from pyspark.sql import functions as F

    return (v.filter(F.col("kind").isin("DELIVER", "CONSUME_FAIL", "CONSUME_OK", "DLQ"))
            .groupBy("run_id", "group", "msg_id").agg(
                F.sum(F.when(F.col("kind") == "DELIVER", 1).otherwise(0)).alias("deliveries"),
                F.sum(F.when(F.col("kind") == "CONSUME_OK", 1).otherwise(0)).alias("successes"),
                F.min(F.when(F.col("kind") == "DLQ", F.col("ts_ms"))).alias("dlq_ts"),
                F.max(F.when(F.col("kind") == "DELIVER", F.col("ts_ms"))).alias("last_delivery")))


def check_nothing_after_dlq(v, ctx) -> CheckResult:
    """Nothing is delivered to a group after its DLQ event (RETRY-CONC-04, RETRY-5X-07)."""
    from pyspark.sql import functions as F

    bad = _dlq_lives(v).filter(F.col("dlq_ts").isNotNull() & (F.col("last_delivery") > F.col("dlq_ts"))).cache()
    n = bad.count()
    return CheckResult("nothing_after_dlq", _verdict(n), ["RETRY-CONC-04", "RETRY-5X-07"], {"violations": n},
                       _examples(bad, ["run_id", "group", "msg_id", "dlq_ts", "last_delivery"]))


def check_dlq(v, ctx) -> CheckResult:
    """A message goes to the DLQ exactly after the maximum deliveries, all failed, and only then."""
    from pyspark.sql import functions as F

    max_d = timing(ctx["profile"]).max_deliveries
    per = _dlq_lives(v).filter(F.col("dlq_ts").isNull() | (F.col("last_delivery") <= F.col("dlq_ts")))
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
    sends = (v.filter((F.col("kind") == "SEND_OK") & (F.col("delay_level") > 0))
             .select("run_id", "msg_id", F.col("ts_ms").alias("sent"),
                     F.least(F.col("delay_level"), F.lit(len(t.delay_levels_ms))).alias("delay_level")))
    first = (v.filter((F.col("kind") == "DELIVER") & (F.col("attempt") == 1))
             .groupBy("run_id", "msg_id", "group").agg(F.min("ts_ms").alias("first")))
    tol = ctx["tolerance"]
    d = (sends.join(F.broadcast(levels), "delay_level").join(first, ["run_id", "msg_id"])
         .withColumn("late_by", F.col("first") - F.col("sent") - F.col("delay_ms"))
         .withColumn("band", F.col("delay_ms") * tol.relative + tol.absolute_ms))
    bad = d.filter(F.abs("late_by") > F.col("band")).cache()
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
    from pyspark.sql import functions as F

    quarantine = (out / "quarantine") if out else None
    v, stats = load(spark, path, quarantine)
    if profile is None:
        found = v.select("profile").where(F.col("profile").isNotNull()).limit(1).collect()
        profile = found[0]["profile"] if found else "grpc-5.x"
    if profile not in ("remoting-4.x", "grpc-5.x"):
        raise CheckInputError(f"profile {profile!r}: the checks know remoting-4.x and grpc-5.x")
    ctx = {"spark": spark, "profile": profile, "tolerance": tolerance or Tolerance(),
           "allow_duplicates": allow_duplicates}
    unknown = [c for c in (checks or ()) if c not in CHECKS]
    if unknown:
        raise CheckInputError(f"unknown check {', '.join(unknown)}; known: {', '.join(CHECKS)}")
    results = [fn(v, ctx) for name, fn in CHECKS.items() if checks is None or name in checks]
    v.unpersist()
    return {"input": str(path), "profile": profile, **stats, "checks": [asdict(r) for r in results],
            "passed": all(r.verdict == "pass" for r in results)}


def write_result(result: dict[str, Any], out: Path) -> None:
    from .report import write_html

    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2, default=str))
    write_html(result, out / "index.html")
