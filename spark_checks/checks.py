"""PySpark checks over an event log (v1). Each check is a function from the log to a verdict with
counts and counterexamples (Jepsen-style).

How the log is read, once for every check:

- One scan of the input. Each row's kind becomes a number and so do its identities: the message
  (``run_id`` + ``msg_id``; for an APPLY, ``run_id`` + ``group`` + ``key``) a 64-bit xxhash and a 32-bit
  murmur3 hash, so two identities are taken for one only if both hashes collide (about 2^-96 a pair);
  the group (``run_id`` + ``group``), the topic and the message group a 64-bit xxhash each. Rows that
  break the schema's invariants are counted in the same scan (``observe``).
- The checkable rows are hash-partitioned by message, sorted by (message, group, attempt, time) and
  cached. Every later aggregate, window and join keyed by message reads them in that order: no other
  shuffle of the events and no other sort of them (the plan streams them, ``replaceHashWithSortAgg``).
- Only numbers are cached, every one a long. Spark generates a reader class for each set of column types
  a query reads back from the cache; with longs only, that is one class per number of columns (a check
  run compiles 7 readers instead of 15; at 10M events a first run in a new JVM takes about 2 s less).
- The names in the counterexamples (at most ``COUNTEREXAMPLES`` a check) are looked up afterwards, only
  when some check has counterexamples: each counterexample carries the time of a row that names each of
  its identities (a send, delivery, DLQ or APPLY the check read anyway), and the input is read again only
  at those times. Nothing of the log is collected to the driver beyond those rows.
"""
from __future__ import annotations

import itertools
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any, Callable, Iterator

from history.events import EVENT_KINDS
from history.profiles import BROKER_PROFILES, GRPC_5X
from spec import versions

from .consumers import KINDS as STATED_KINDS
from .consumers import Stated, read_stated
from .profiles import timing
from .timing_model import WaitModel, noise_band, wait_model

REQUIRED = {"ts_ms": "bigint", "kind": "string", "topic": "string", "group": "string", "msg_id": "string",
            "key": "string", "message_group": "string", "producer_seq": "bigint", "attempt": "int",
            "delay_level": "int"}
OPTIONAL = {"run_id": "string", "profile": "string", "expected_delay_ms": "bigint", "client_id": "string",
            "seq": "bigint", "tx_state": "string"}
MESSAGE_KINDS = ("SEND_OK", "DELIVER", "CONSUME_OK", "CONSUME_FAIL", "DLQ", "APPLY", "ACK", "RETRY_SCHEDULED")
COUNTEREXAMPLES = 20
PROBLEMS = ("unknown kind", "null ts_ms", "null msg_id", "attempt below 1")
"""The schema invariants a row can break, in the order they are tested (the quarantine's reason)."""


class CheckInputError(ValueError):
    """The input cannot be checked: the message says why in one line."""


@dataclass
class Tolerance:
    """The noise band around the timing model's windows (``spec/timing_model.yaml`` by default)."""

    absolute_ms: int = field(default_factory=lambda: noise_band()[1])
    relative: float = field(default_factory=lambda: noise_band()[0])

    def band(self, expected: Any):
        return expected * self.relative + self.absolute_ms


@dataclass
class CheckResult:
    name: str
    verdict: str                      # pass, fail, inconclusive
    spec: list[str]
    counts: dict[str, Any] = field(default_factory=dict)
    counterexamples: Any = field(default_factory=list)  # Examples while running, named rows in the result
    detail: dict[str, Any] = field(default_factory=dict)


KIND_CODE = {kind: i + 1 for i, kind in enumerate(EVENT_KINDS)}
"""Kinds are cached as numbers (0: not a kind of the schema)."""
CHECKED_KINDS = ("SEND_OK", "DELIVER", "CONSUME_OK", "CONSUME_FAIL", "ACK", "RETRY_SCHEDULED", "DLQ", "APPLY")
"""The kinds the checks read from the cache; the others are counted and validated but not cached (the
consumer and settle rows are read apart, ``consumers.read_stated``)."""
TUNING = {
    "spark.sql.inMemoryColumnarStorage.compressed": "false",   # numbers only: compressing costs more than it saves
    "spark.sql.execution.replaceHashWithSortAgg": "true",      # stream aggregates over the sorted cache
    "spark.sql.requireAllClusterKeysForCoPartition": "false",  # joins on (message, ...) over tables partitioned by message
    # the plans are fixed: every table is cached or partitioned by message already, and the one small join
    # side is broadcast by name; planning each stage again as it ends costs more than it finds
    "spark.sql.adaptive.enabled": "false",
}
"""SQL settings the checks run with (restored afterwards)."""


def _is(*kinds: str):
    from pyspark.sql import functions as F

    codes = [KIND_CODE[k] for k in kinds]
    return F.col("k") == codes[0] if len(codes) == 1 else F.col("k").isin(*codes)


def _problem(kind_code, ts, msg_id, attempt):
    """The first schema invariant a row breaks, as its 1-based place in PROBLEMS, or 0."""
    from pyspark.sql import functions as F

    message_codes = [KIND_CODE[k] for k in MESSAGE_KINDS]
    tests = (kind_code == 0, ts.isNull(), kind_code.isin(*message_codes) & msg_id.isNull(),
             attempt.isNotNull() & (attempt < 1))
    code = F.when(tests[0], F.lit(1))
    for i, test in enumerate(tests[1:], start=2):
        code = code.when(test, F.lit(i))
    return code.otherwise(F.lit(0)).cast("byte")


def _identity_hashes(apply):
    """The numeric identities of a row (see the module's docstring), ``apply`` telling APPLY rows: message
    ``m``/``m2`` (for an APPLY its key's), group ``g``, topic ``t``, message group ``mg`` (null without one)."""
    from pyspark.sql import functions as F

    return {"m": F.when(apply, F.xxhash64("run_id", "group", "key")).otherwise(F.xxhash64("run_id", "msg_id")),
            "m2": F.when(apply, F.hash("run_id", "group", "key")).otherwise(F.hash("run_id", "msg_id")),
            "g": F.xxhash64("run_id", "group"), "t": F.xxhash64("run_id", "topic"),
            "mg": F.when(F.col("message_group").isNotNull(), F.xxhash64("message_group"))}


@dataclass
class Loaded:
    """The cached checkable rows (numbers only, partitioned and sorted by message), the input as read
    (for the names of counterexamples), the input's counts, and the profile the log names."""

    events: Any
    raw: Any
    stats: dict[str, Any]
    profile: str | None
    stated: Stated = field(default_factory=Stated)
    """The consumers and settles the log states (``consumers``)."""
    acks: bool = False
    """Whether the log records acks (a 5.x client's ACK): a redelivery after a success is then a duplicate
    only after its ack."""


def _read(spark, path: str):
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
    from pyspark.sql import functions as F

    if "run_id" not in types:
        raw = raw.withColumn("run_id", F.lit(""))
    if "expected_delay_ms" not in types:
        raw = raw.withColumn("expected_delay_ms", F.lit(None).cast("bigint"))
    if "tx_state" not in types:  # a log from before the column: the state from the detail map, when there is one
        raw = raw.withColumn("tx_state", F.when(F.col("kind") == "TX_END", F.col("detail")["state"])
                             if "detail" in types else F.lit(None).cast("string"))
    for name in ("profile", "client_id"):
        if name not in types:
            raw = raw.withColumn(name, F.lit(None).cast("string"))
    if "seq" not in types:
        raw = raw.withColumn("seq", F.lit(None).cast("bigint"))
    return raw


def _committed(raw):
    """A TX_END row that commits its half (``tx_state`` COMMIT_MESSAGE). The state has a column of its own: reading
    the detail map of every row for it made a soak log a tenth slower to check than a simulated one (issue 36)."""
    from pyspark.sql import functions as F

    return (F.col("kind") == "TX_END") & F.coalesce(F.col("tx_state") == "COMMIT_MESSAGE", F.lit(False))


CACHE_ORDER = ("m", "m2", "g", "ts_ms", "attempt", "k")
"""The cache's order within a partition: a (message, group)'s rows in time order, a delivery before its outcome
before its ack at one time (their kind codes in that order), so the redelivery window reads it as it is."""
PROFILES_BY_NAME = tuple(sorted(BROKER_PROFILES))
"""The profiles the checks know, in name order: a log naming several is checked as the first."""


def load(spark, path: str, quarantine_dir: Path | None) -> Loaded:
    """Read once: count every row and the invariants it breaks (``observe``), keep the checkable rows as
    numbers, partitioned by message and sorted, in the cache. Rows that break an invariant are written
    with all their columns to the quarantine folder when there are any (read again for that only)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    raw = _read(spark, path)
    kind_code = F.coalesce(F.array_position(F.array(*[F.lit(k) for k in EVENT_KINDS]), F.col("kind")),
                           F.lit(0)).cast("byte")
    # a transaction's commit is its message's send (TX-02): checked as one
    kind_code = F.when(_committed(raw), F.lit(KIND_CODE["SEND_OK"]).cast("byte")).otherwise(kind_code)
    problem = _problem(kind_code, F.col("ts_ms"), F.col("msg_id"), F.col("attempt"))
    # a profile as its place in PROFILES_BY_NAME (0: another name; null: none): the counts observe numbers only
    profile_code = F.array_position(F.array(*[F.lit(p) for p in PROFILES_BY_NAME]), F.col("profile"))
    keep = (F.col("_problem") == 0) & _is(*CHECKED_KINDS)
    ids = _identity_hashes(F.col("k") == KIND_CODE["APPLY"])
    # the topic is read from sends and deliveries, the message group from deliveries and DLQs
    ids["t"], ids["mg"] = F.when(_is("SEND_OK", "DELIVER"), ids["t"]), F.when(_is("DELIVER", "DLQ"), ids["mg"])
    # the projection comes before the filter (see below): only the rows kept are hashed
    cached = {"k": F.col("k"), "ts_ms": F.col("ts_ms"), **{c: F.when(keep, ids[c]) for c in ("m", "m2", "g", "t", "mg")},
              # the client of a delivery: a redelivery by the client that had the attempt before it
              "c": F.when(keep & _is("DELIVER"), F.xxhash64("run_id", "client_id")),
              "seq": F.col("producer_seq"), "attempt": F.col("attempt"), "delay_level": F.col("delay_level"),
              "expected_delay_ms": F.col("expected_delay_ms")}
    # The counts are observed on the rows as numbers: observing the rows as read made Spark copy every
    # string of every row once more (10M events: load 7.1 -> 6.7 s warm).
    observed = Observation("input")
    metrics = [F.count(F.lit(1)).alias("rows"), F.min("_profile").alias("profile"),
               F.count(F.when((F.col("_problem") == 0) & F.col("k").isin(*[KIND_CODE[k] for k in STATED_KINDS]), 1))
               .alias("stated"), F.count(F.when(F.col("k") == KIND_CODE["ACK"], 1)).alias("acks")] + [
        F.count(F.when(F.col("_problem") == i + 1, 1)).alias(f"p{i}") for i in range(len(PROBLEMS))]
    partitions = max(8, 4 * raw.rdd.getNumPartitions())  # a sorted partition of about 1-2 M rows
    events = (raw.withColumn("k", kind_code).withColumn("_problem", problem)
              .select(*[column.cast("long").alias(name) for name, column in cached.items()], "_problem",
                      profile_code.alias("_profile"))
              .observe(observed, *metrics).filter(keep).drop("_problem", "_profile")
              .repartition(partitions, "m").sortWithinPartitions(*CACHE_ORDER).cache())
    try:
        events.count()  # the one scan of the input: builds the cache and the observed counts
        seen = observed.get
    except Exception:
        events.unpersist()
        raise
    reasons = {PROBLEMS[i]: seen[f"p{i}"] for i in range(len(PROBLEMS)) if seen[f"p{i}"]}
    total, bad = seen["rows"], sum(reasons.values())
    if total == 0 or total == bad:
        events.unpersist()
    if total == 0:
        raise CheckInputError(f"{path}: the event log is empty; an empty log is not a pass")
    if bad and quarantine_dir is not None:
        reason = F.element_at(F.array(*[F.lit(name) for name in PROBLEMS]), problem.cast("int"))
        raw.filter(problem > 0).withColumn("_problem", reason) \
            .write.mode("overwrite").parquet(str(quarantine_dir))
    if total == bad:
        raise CheckInputError(f"{path}: all {total} rows break the schema's invariants (see the quarantine)")
    return Loaded(events, raw, {"rows": total, "quarantined": bad, "quarantine_reasons": reasons},
                  _profile_named(raw, seen["profile"]), read_stated(raw, seen["stated"] > 0), seen["acks"] > 0)


def _profile_named(raw, code: int | None) -> str | None:
    """The profile a log names (the first by name when it names several), from the least place in
    PROFILES_BY_NAME its rows observed: 0 means some row names another profile, then found by one query of
    that column."""
    from pyspark.sql import functions as F

    if code is None:
        return None
    if code > 0:
        return PROFILES_BY_NAME[code - 1]
    return raw.agg(F.min("profile")).first()[0]


# ---- counterexamples: first rows in hash order, named afterwards -----------------------------------

NAMED = {"msg": ("run_id", "msg_id"), "key": ("run_id", "key"), "g": ("group",), "t": ("topic",),
         "mg": ("message_group",)}
"""What each kind of identity in a counterexample is named by."""


NAMING_KINDS = ("SEND_OK", "DELIVER", "DLQ", "APPLY")
"""The rows a counterexample's identities are named from: each carries its message's name (an APPLY its
key's), its group's (a send its topic's), and a delivery its topic's and message group's."""


PAIRED = ("msg", "key")
"""Identities hashed twice: their column ``c`` comes with ``c2``."""


@dataclass
class Examples:
    """A check's first counterexample rows (hash columns and numbers) and how to name them: ``ids`` maps each
    identity column (``m``, ``prev``, ``g``, ``t``, ``mg``) to its kind in NAMED; ``at`` maps it to the column
    that holds the time of a row (of NAMING_KINDS) naming it; ``columns`` is the order of the named rows.
    A ``msg`` identity in column ``m`` is named ``run_id``/``msg_id``, in another column ``<column>_msg``."""

    rows: list[dict[str, Any]]
    ids: dict[str, str]
    at: dict[str, str]
    columns: list[str]

    def naming_times(self) -> Iterator[int]:
        for row in self.rows:
            for column, time in self.at.items():
                if row.get(column) is not None and row.get(time) is not None:
                    yield row[time]

    def named(self, names: dict[tuple[str, Any], tuple[str, str]]) -> list[dict[str, Any]]:
        hashes = set(self.ids) | {c + "2" for c, kind in self.ids.items() if kind in PAIRED}
        out = []
        for row in self.rows:
            values = {k: v for k, v in row.items() if k not in hashes}
            for column, kind in self.ids.items():
                key = (row.get(column), row.get(column + "2")) if kind in PAIRED else row.get(column)
                a, b = names.get((kind, key), (None, None))
                if kind == "msg" and column != "m":
                    values[f"{column}_msg"] = b
                elif kind in PAIRED:
                    values["run_id"], values[NAMED[kind][1]] = a, b
                else:
                    values[NAMED[kind][0]] = a
            out.append({c: values.get(c) for c in self.columns})
        return out


def _first(df, order: list[str], ids: dict[str, str], at: dict[str, str], columns: list[str]) -> Examples:
    """The first COUNTEREXAMPLES rows in a fixed (hash) order, so every master gives the same ones, with the
    naming times ``at`` names."""
    times = [c for c in dict.fromkeys(at.values()) if c not in order]
    rows = [r.asDict() for r in df.select(*order, *times).orderBy(*order, *times).limit(COUNTEREXAMPLES).collect()]
    return Examples(rows, ids, at, columns)


def _observed_count(seen, counted_again: Callable[[], Any]) -> int:
    """The count ``n`` an Observation saw. When Spark proves the observed plan empty it drops the node that
    observes it and gives an empty row, which PySpark cannot convert (an AssertionError in the JVM); then the
    one-row DataFrame ``counted_again()`` is read instead."""
    from py4j.protocol import Py4JJavaError

    try:
        n = seen.get["n"]
    except Py4JJavaError as exc:
        if exc.java_exception.getClass().getName() != "java.lang.AssertionError":
            raise
        n = counted_again().first()["n"]
    return int(n or 0)


def _violations(df, order: list[str], ids: dict[str, str], at: dict[str, str], columns: list[str], count=None,
                shown: Callable[[Any], Any] | None = None) -> tuple[int, Examples]:
    """How many violations ``df`` holds (its rows, or the sum of ``count`` over them) and the first
    COUNTEREXAMPLES in a fixed (hash) order, in one query: the count is observed on the way to the ordered
    limit. ``shown`` turns the counted rows into the rows shown, when they differ."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen, total = Observation(), (F.count(F.lit(1)) if count is None else F.sum(count)).alias("n")
    counted = df.observe(seen, total)
    examples = _first(shown(counted) if shown else counted, order, ids, at, columns)
    return _observed_count(seen, lambda: df.agg(total)), examples


def _names(raw, examples: list[Examples]) -> dict[tuple[str, Any], tuple[str, str]]:
    """{(kind, hash or (hash, hash2)): (a, b)} for every identity the rows read hold (a, b as in NAMED).

    The input is read again only at the times the counterexamples carry (each that of a row naming one of
    their identities), so only the few rows there are hashed, and every identity they hold is named.
    Nothing is read when there are no counterexamples."""
    from pyspark.sql import functions as F

    times = sorted({t for ex in examples for t in ex.naming_times()})
    if not times:
        return {}
    apply = F.col("kind") == "APPLY"
    ids = _identity_hashes(apply)
    naming = (F.col("kind").isin(*NAMING_KINDS) | _committed(raw)) & F.col("msg_id").isNotNull()
    rows = (raw.filter(F.col("ts_ms").isin(times) & (naming | (F.col("kind") == "CONSUMER_START")))
            .select(apply.alias("apply"), *[ids[c].alias(c) for c in ids], "run_id", "msg_id", "key", "group", "topic",
                    "message_group").distinct().collect())
    names: dict[tuple[str, Any], tuple[str, str]] = {}
    for r in rows:
        kind = "key" if r["apply"] else "msg"
        if r["msg_id"] is not None:
            names[(kind, (r["m"], r["m2"]))] = (r["run_id"], r["key"] if r["apply"] else r["msg_id"])
        for hashed, named in (("g", "group"), ("t", "topic"), ("mg", "message_group")):
            if r[named] is not None:
                names[(hashed, r[hashed])] = (r[named], r[named])
    return names


def _verdict(bad: int, noisy: int = 0) -> str:
    return "fail" if bad else ("inconclusive" if noisy else "pass")


# ---- tables shared by the checks, built from the cache once per run ------------------------------

def _cached(ctx, name: str, build: Callable[[], Any]):
    """The table ``name`` of this run, cached; built by the first check that asks (checks run concurrently)."""
    with ctx["lock"]:
        if name not in ctx["tables"]:
            ctx["tables"][name] = build().cache()
        return ctx["tables"][name]


def sends(e):
    """SEND_OK rows (in message order, as cached): what the checks compare deliveries with. A 5.x timed
    message's SEND_OK carries the wait to its delivery time in ``expected_delay_ms`` (DELAY-08)."""
    return e.filter(_is("SEND_OK")).select("m", "m2", "t", "seq", "delay_level", "ts_ms", "expected_delay_ms")


def _delay_ms(t):
    """A send's delay (null when none): its level's (DELAY-01, DELAY-02: past the table's end, the last
    level), else a 5.x timed message's wait to its delivery time (DELAY-08)."""
    from pyspark.sql import functions as F

    level = F.least(F.col("delay_level"), F.lit(len(t.delay_levels_ms)))
    return F.coalesce(F.when(F.col("delay_level") > 0, _looked_up(t.delay_levels_ms, level)),
                      F.when(F.col("expected_delay_ms") > 0, F.col("expected_delay_ms")))


def stored_twice(e, ctx):
    """The messages sent more than once under one id: from 5.1.0 a transaction its producer committed can be
    committed again by a check that ran before the commit's op message was written (TX-05), and each commit
    stores the message anew, so its deliveries are two lives under one id. The duplicates and retry-interval
    checks count them apart: the log cannot tell which copy a delivery was."""
    from pyspark.sql import functions as F

    return _cached(ctx, "stored_twice", lambda: (
        sends(e).groupBy("m", "m2").agg(F.count(F.lit(1)).alias("stores")).filter(F.col("stores") > 1)
        .select("m", "m2")))


def _apart(rows, twice):
    """``rows`` split into (those of a message stored once, the count of those of a message stored twice)."""
    from pyspark.sql import functions as F

    if twice.isEmpty():  # the usual case (no transaction, or a release before 5.1.0): no join at all
        return rows, 0
    return rows.join(F.broadcast(twice), ["m", "m2"], "left_anti"), \
        rows.join(F.broadcast(twice), ["m", "m2"], "left_semi").count()


def lives(e, ctx):
    """One row per (message, group): deliveries, successes, DLQ time, first (attempt 1) and last delivery,
    the topic it was delivered from. A streaming aggregate over the sorted cache; cached for four checks."""
    from pyspark.sql import functions as F

    deliver, dlq = _is("DELIVER"), _is("DLQ")
    return _cached(ctx, "lives", lambda: e.filter(_is("DELIVER", "CONSUME_OK", "DLQ")).groupBy("m", "m2", "g").agg(
        F.count(F.when(deliver, 1)).alias("deliveries"), F.count(F.when(_is("CONSUME_OK"), 1)).alias("successes"),
        F.min(F.when(dlq, F.col("ts_ms"))).alias("dlq_ts"),
        F.min(F.when(deliver, F.col("ts_ms"))).alias("first_delivery"),
        F.max(F.when(deliver, F.col("ts_ms"))).alias("last_delivery"),
        F.max(F.when(deliver, F.col("attempt"))).alias("last_attempt"),
        F.min(F.when(deliver & (F.col("attempt") == 1), F.col("ts_ms"))).alias("first_attempt_1"),
        F.max(F.when(deliver, F.col("t"))).alias("t"),
        # one client had every delivery (attempt counts are a client's), and the client of the last one
        (F.min(F.when(deliver, F.col("c"))) == F.max(F.when(deliver, F.col("c")))).alias("one_client"),
        F.max_by(F.col("c"), F.when(deliver, F.col("ts_ms"))).alias("last_c")))


def redeliveries(e, ctx):
    """Each delivery of a (message, group) after its first, beside what the log says of the delivery before it
    in time: the first delivery's time (``first_ts``), its time, attempt and client (``prev_ts``,
    ``prev_attempt``, ``prev_c``), how it ended
    (``prev_outcome``: the kind code of its CONSUME_OK or CONSUME_FAIL, null when its consumer never
    answered), whether its ack is logged (``prev_acked``), and the wait its client asked for before this
    attempt (``scheduled_ms``: the RETRY_SCHEDULED of this attempt after the one before). A window over the
    cache in its own order (``CACHE_ORDER``); the retry intervals and the duplicates both read it.

    In time order, not attempt order: an attempt count is the client's, and a 5.x FIFO message handed to
    another consumer is counted again from that client's view (RETRY-5X-08)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    before = Window.partitionBy("m", "m2", "g").orderBy("ts_ms", "attempt", "k").rowsBetween(Window.unboundedPreceding, -1)
    deliver, consumed = _is("DELIVER"), _is("CONSUME_OK", "CONSUME_FAIL")

    def last(test, *columns: str):
        return F.last(F.when(test, F.struct(*columns)), ignorenulls=True).over(before)

    def build():
        rows = (e.filter(_is("DELIVER", "CONSUME_OK", "CONSUME_FAIL", "ACK", "RETRY_SCHEDULED"))
                .select("m", "m2", "g", "mg", "c", "k", "attempt", "ts_ms", "expected_delay_ms",
                        F.min(F.when(deliver, F.col("ts_ms"))).over(before).alias("first_ts"),
                        last(deliver, "ts_ms", "attempt", "c").alias("_d"),
                        last(consumed, "ts_ms", "attempt", "k").alias("_o"),
                        last(_is("ACK"), "ts_ms", "attempt").alias("_a"),
                        last(_is("RETRY_SCHEDULED"), "ts_ms", "attempt", "expected_delay_ms").alias("_s"))
                .filter(deliver & F.col("_d").isNotNull()))
        prev_ts, prev_attempt = F.col("_d.ts_ms"), F.col("_d.attempt")

        def of_previous(struct: str):  # the row answers the delivery before this one (same attempt, not before it)
            return (F.col(f"{struct}.ts_ms") >= prev_ts) & F.col(f"{struct}.attempt").eqNullSafe(prev_attempt)

        return rows.select(
            "m", "m2", "g", "mg", "c", "attempt", "ts_ms", "expected_delay_ms", "first_ts", prev_ts.alias("prev_ts"),
            prev_attempt.alias("prev_attempt"), F.col("_d.c").alias("prev_c"),
            F.when(of_previous("_o"), F.col("_o.k")).alias("prev_outcome"),
            F.coalesce(of_previous("_a"), F.lit(False)).alias("prev_acked"),
            F.when((F.col("_s.ts_ms") >= prev_ts) & F.col("_s.attempt").eqNullSafe(F.col("attempt")),
                   F.col("_s.expected_delay_ms")).alias("scheduled_ms"))

    return _cached(ctx, "redeliveries", build)


def _with_changed(rows, ctx, since: str, until: str):
    """``rows`` with ``changed``: whether their group's members changed between ``since`` and ``until``."""
    from pyspark.sql import functions as F

    if not ctx["stated"].changes():
        return rows.withColumn("changed", F.lit(False))
    same, changed = _members_changed(rows, ctx, since, until)
    return same.withColumn("changed", F.lit(False)).unionByName(changed.withColumn("changed", F.lit(True)))


def _members_changed(rows, ctx, since: str, until: str):
    """``rows`` split into (those of a group whose members did not change between ``since`` and ``until``, those
    whose did): a consumer of the group started or stopped in between (``consumers.Stated.changes``). Logs that
    state no consumer: nothing changed."""
    from pyspark.sql import functions as F

    changes = ctx["stated"].changes()
    if not changes:
        return rows, rows.limit(0)
    table = F.broadcast(ctx["spark"].createDataFrame(changes, "cg long, changed_at long"))
    test = (F.col("g") == F.col("cg")) & (F.col("changed_at") >= F.col(since)) & (F.col("changed_at") <= F.col(until))
    return rows.join(table, test, "left_anti"), rows.join(table, test, "left_semi")


MSG_AND_GROUP = {"m": "msg", "g": "g"}


def _at(time: str, ids: dict[str, str]) -> dict[str, str]:
    """Every identity in ``ids`` named by the one row at ``time``."""
    return {column: time for column in ids}


def check_no_loss(e, ctx) -> CheckResult:
    """Every SEND_OK reaches every group it is owed to (delivered at least once). Where the log states a
    group's consumers (``consumers``), a message is owed when one of its push consumers, subscribed to every
    message of the topic, was up from the send through the run's settle and the message was visible by then
    (its delay, DELAY-01, DELAY-08); a consumer that left, a simple consumer that stopped receiving, a group
    that came after the send are owed nothing. Where it does not, every group that received from the topic
    is taken as subscribed throughout."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    delivered = lives(e, ctx).filter(F.col("deliveries") > 0)
    stated = ctx["stated"]
    sent = sends(e).groupBy("m", "m2", "t").agg(
        F.min("ts_ms").alias("sent"), F.max(_delay_ms(timing(ctx["profile"]))).alias("delay"))
    # a group is named by its last delivery from the topic (or its consumer's start), a message and its topic by the send
    subscribed = delivered.groupBy("t", "g").agg(F.max("last_delivery").alias("group_at"))
    if stated.groups:
        subscribed = subscribed.filter(~F.col("g").isin(*stated.groups))
    expected = sent.join(F.broadcast(subscribed), "t").select("m", "m2", "t", "g", "sent", "group_at")
    owed = stated.owed()
    if owed:
        table = ctx["spark"].createDataFrame(owed, "ot long, g long, from_ms long, settled_ms long")
        visible = F.col("sent") + F.coalesce(F.col("delay"), F.lit(0))
        expected = expected.unionByName(
            sent.join(F.broadcast(table), (F.col("t") == F.col("ot")) & (F.col("sent") > F.col("from_ms")) &
                      (visible < F.col("settled_ms")))
            .select("m", "m2", "t", "g", "sent", F.col("from_ms").alias("group_at")))
    judged, pairs = Observation(), F.count(F.lit(1)).alias("n")
    missing = expected.observe(judged, pairs).join(delivered.select("m", "m2", "g"), ["m", "m2", "g"], "left_anti")
    n, ex = _violations(missing, ["m", "m2", "g", "t"], {"m": "msg", "g": "g", "t": "t"},
                        {"m": "sent", "t": "sent", "g": "group_at"}, ["run_id", "msg_id", "topic", "group"])
    return CheckResult("no_loss", _verdict(n), ["RETRY-CONC-03", "RETRY-5X-06"],
                       {"owed": _observed_count(judged, lambda: expected.agg(pairs)), "lost": n}, ex)


def check_duplicates(e, ctx) -> CheckResult:
    """Deliveries a message did not need: a redelivery after a delivery that succeeded (CONSUME_OK), and, in a
    log that records acks, whose ack the broker took (ACK). At-least-once allows the others: after a failure,
    after a consumer that died or left before answering, and after a success when the group's members changed
    since the message's first delivery (a queue handed over from its last committed offset, OFFSET-04); a broadcasting group's clients
    each get their own copy (RETRY-CONC-05). Those inside a crash window the soak manifest states are counted
    apart and allowed, and so are those of a message stored twice (``stored_twice``, TX-05)."""
    from pyspark.sql import functions as F

    judged = redeliveries(e, ctx)
    broadcasting = ctx["stated"].broadcasting()
    if broadcasting:
        judged = judged.filter(~(F.col("g").isin(*broadcasting) & ~F.col("c").eqNullSafe(F.col("prev_c"))))
    extra = judged.filter((F.col("prev_outcome") == KIND_CODE["CONSUME_OK"]) &
                          (F.col("prev_acked") if ctx["acks"] else F.lit(True)))
    # a change since the message's first delivery: any copy handed out before it may come again (the 4.x
    # original whose offset a crashed consumer never committed, beside its retry copy)
    extra, _ = _members_changed(extra, ctx, "first_ts", "ts_ms")
    extra, twice = _apart(extra, stored_twice(e, ctx))
    crash = extra.filter(_in_crash_window(ctx, F.col("ts_ms"))).count() if ctx["crash_windows"] else 0
    counted = extra.filter(~_in_crash_window(ctx, F.col("ts_ms")))
    n, ex = _violations(counted, ["m", "m2", "g", "attempt", "n"], MSG_AND_GROUP, _at("at", MSG_AND_GROUP),
                        ["run_id", "group", "msg_id", "attempt", "n"],
                        shown=lambda dup: dup.groupBy("m", "m2", "g", "attempt").agg(
                            (F.count("*") + 1).alias("n"), F.min("ts_ms").alias("at")))
    verdict = "pass" if n <= ctx["allow_duplicates"] else "fail"
    return CheckResult("duplicates", verdict, ["RETRY-CONC-03", "OFFSET-04", "RETRY-CONC-05"],
                       {"redeliveries": judged.count(), "duplicate_deliveries": n, "allowed": ctx["allow_duplicates"],
                        "crash_window_duplicates": crash, "stored_twice_duplicates": twice}, ex)


def check_exactly_once(e, ctx) -> CheckResult:
    """APPLY once per key per group (the idempotent consumer of seed 004)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen, applies = Observation(), F.count(F.lit(1)).alias("n")
    rows = e.filter(_is("APPLY"))
    dup = (rows.observe(seen, applies).groupBy("m", "m2", "g").agg(F.count("*").alias("n"), F.min("ts_ms").alias("at"))
           .filter(F.col("n") > 1))
    ids = {"m": "key", "g": "g"}
    extra, ex = _violations(dup, ["m", "m2", "g", "n"], ids, _at("at", ids), ["run_id", "group", "key", "n"],
                            F.col("n") - 1)
    return CheckResult("exactly_once", _verdict(extra), ["CLAIM-05"],
                       {"applies": _observed_count(seen, lambda: rows.agg(applies)), "extra_applies": extra}, ex)


def check_order(e, ctx) -> CheckResult:
    """Per (group, message_group): first deliveries follow the send order, and a message is not delivered
    before the previous one has finished (FIFO blocking), by more than the noise band's absolute part: the
    end of the one before is logged by the client after its call returns (a 5.x FIFO consumer's own
    dead-letter forward), which the server may answer after it handed the next out (a soak logged one 1 ms
    before its predecessor's DLQ)."""
    from pyspark.sql import Observation, Window
    from pyspark.sql import functions as F

    per_msg = (e.filter(_is("DELIVER", "DLQ") & F.col("mg").isNotNull()).groupBy("m", "m2", "g", "mg")
               .agg(F.min(F.when(_is("DELIVER"), F.col("ts_ms"))).alias("first"), F.max("ts_ms").alias("done")))
    w = Window.partitionBy("g", "mg").orderBy("seq")
    pairs = (per_msg.join(sends(e).select("m", "m2", "seq"), ["m", "m2"])
             .withColumn("prev_first", F.lag("first").over(w)).withColumn("prev_done", F.lag("done").over(w))
             .withColumn("prev", F.lag("m").over(w)).withColumn("prev2", F.lag("m2").over(w)))
    blocking_band = F.lit(ctx["tolerance"].absolute_ms)
    seen, judged = Observation(), F.count(F.when(F.col("prev_first").isNotNull(), 1)).alias("n")
    out_of_order = (F.col("first") < F.col("prev_first")) | (F.col("first") < F.col("prev_done") - blocking_band)
    bad = pairs.observe(seen, judged).filter(F.col("prev_first").isNotNull() & out_of_order)
    n, ex = _violations(bad, ["g", "mg", "prev", "prev2", "m", "m2", "prev_done", "first"],
                        {"g": "g", "mg": "mg", "prev": "msg", "m": "msg"},
                        {"g": "first", "mg": "first", "m": "first", "prev": "prev_first"},
                        ["run_id", "group", "message_group", "prev_msg", "msg_id", "prev_done", "first"])
    return CheckResult("order", _verdict(n), ["FIFO-01", "FIFO-04", "FIFO-05", "RETRY-5X-08"],
                       {"pairs": _observed_count(seen, lambda: pairs.agg(judged)), "violations": n}, ex)


def _looked_up(table: tuple[int, ...] | list[int], place):
    """``table[place - 1]`` as a literal lookup in the plan (null for a place outside the table): a profile's
    table needs no DataFrame of its own, nor a join."""
    from pyspark.sql import functions as F

    values = F.array(*[F.lit(v).cast("long") for v in table])
    return F.when(place >= 1, F.try_element_at(values, place.cast("int")))  # the place of an array is an int


RETRY_MODELS = {GRPC_5X: ("retry-5x", "retry-5x-fifo")}
"""The timing model's waits for the redeliveries of each profile: (standard, FIFO); others use retry-4x."""
HISTOGRAM_BINS = 40
KS_GRID = 100


def _retry_models(ctx) -> tuple[WaitModel, WaitModel]:
    standard, fifo = RETRY_MODELS.get(ctx["profile"], ("retry-4x", "retry-4x"))
    fixed = tuple(sorted(ctx.get("wall_fixed_ms", {}).items()))
    return (wait_model(standard, ctx["release"], ctx["time_scale"], fixed),
            wait_model(fifo, ctx["release"], ctx["time_scale"], fixed))


def _case(column: str, values: dict[Any, Any], otherwise=None):
    """``CASE column WHEN key THEN value ... ELSE otherwise END`` over ``values`` (keys and values given as
    Python values or columns; an entry whose value is None is left out); ``otherwise`` when none is left."""
    from pyspark.sql import functions as F

    case = None
    for key, value in values.items():
        if value is None:
            continue
        test = F.col(column) == F.lit(key)
        case = F.when(test, value) if case is None else case.when(test, value)
    if case is None:
        return otherwise
    return case if otherwise is None else case.otherwise(otherwise)


def _per_group(ctx, values: Callable[[dict[str, Any]], Any], otherwise):
    """A column that is ``values(group's manifest entry)`` for the rows of each group the soak manifest
    states (matched by the group's hash), else ``otherwise``."""
    return _case("g", {h: values(entry) for h, entry in ctx["group_hashes"].items()}, otherwise)


def _in_crash_window(ctx, ts):
    """True for a row of a group inside one of the crash windows the soak manifest states."""
    from pyspark.sql import functions as F

    test = F.lit(False)
    for window in ctx["crash_windows"]:
        test = test | ((F.col("g") == F.lit(window["g"])) & ts.between(window["from_ms"], window["to_ms"]))
    return test


def check_retry_intervals(e, ctx) -> CheckResult:
    """The wait before each redelivery against the spec's timing model (``spec/timing_model.yaml``):
    inside its window a pass, outside by no more than the noise band inconclusive, farther a fail. Per
    attempt: count, p50 / p90 / p99, the KS distance to the model (uniform over the window, on a 1 % grid)
    and a histogram for the plot. Redeliveries inside a stated crash window are counted apart, and so are those
    of a message stored twice (``stored_twice``, TX-05: which copy's wait a delivery ends is not in the log)."""
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
         .withColumn("judge_late", F.col("c").eqNullSafe(F.col("prev_c")) & ~F.col("changed"))
         .withColumn("nominal", F.coalesce("scheduled_ms", "expected_delay_ms", ladder, table))
         .filter(F.col("nominal").isNotNull())
         .withColumn("low", F.col("nominal") + F.when(is_fifo, F.lit(fifo.late_ms)).otherwise(F.lit(standard.late_ms)))
         .withColumn("high", F.col("low") + F.when(is_fifo, F.lit(fifo.slack_ms)).otherwise(F.lit(standard.slack_ms)))
         .withColumn("band", F.col("nominal") * tol.relative + tol.absolute_ms)
         .withColumn("interval", F.col("ts_ms") - F.col("prev_ts"))
         .withColumn("crash", _in_crash_window(ctx, F.col("ts_ms"))))
    d, twice = _apart(d, stored_twice(e, ctx))
    judged = d.filter(~F.col("crash"))
    iv, low, high, band, judge_late = F.col("interval"), F.col("low"), F.col("high"), F.col("band"), F.col("judge_late")
    fails = (iv < low - band) | ((iv > high + band) & judge_late)
    noisy = ~fails & ((iv < low) | ((iv > high) & judge_late))
    u = F.when(high > low, (iv - low) / (high - low)).otherwise(F.when(iv < low, -1.0).otherwise(2.0))
    stats = judged.groupBy("attempt").agg(
        F.count("*").alias("count"), F.count(F.when(iv < low - band, 1)).alias("early"),
        F.count(F.when((iv > high + band) & judge_late, 1)).alias("late"),
        F.count(F.when((iv > high + band) & ~judge_late, 1)).alias("late_unjudged"), F.count(F.when(noisy, 1)).alias("noisy"),
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
            "late_unjudged": r["late_unjudged"],
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
                        "stored_twice_redeliveries": twice,
                        "late_after_handover": sum(p["late_unjudged"] for p in per_attempt)}, examples,
                       {"per_attempt": per_attempt, "tolerance": asdict(tol), "profile": ctx["profile"],
                        "release": ctx["release"], "time_scale": ctx["time_scale"],
                        "model": {"standard": standard.stated(), "fifo": fifo.stated(),
                                  "noise_band": f"{tol.relative:g} x nominal + {tol.absolute_ms} ms",
                                  "file": "spec/timing_model.yaml"},
                        "revive_lag_ms": t.revive_lag_ms})


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


def _delivered_after_dlq():
    """A (message, group) of ``lives`` delivered after its DLQ event; false without a DLQ or a delivery."""
    from pyspark.sql import functions as F

    return F.coalesce(F.col("last_delivery") > F.col("dlq_ts"), F.lit(False))


def _observing_dead_letters(e, ctx) -> tuple[Any, Callable[[], int]]:
    """``lives`` with the (message, group)s that have a DLQ event counted on the way, and how to read that
    count once the query ran: what ``dlq_at_max`` and ``nothing_after_dlq`` judged."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen, dead = Observation(), F.count(F.when(F.col("dlq_ts").isNotNull(), 1)).alias("n")
    return lives(e, ctx).observe(seen, dead), lambda: _observed_count(seen, lambda: lives(e, ctx).agg(dead))


def check_nothing_after_dlq(e, ctx) -> CheckResult:
    """Nothing is delivered to a group after its DLQ event (RETRY-CONC-04, RETRY-5X-07), unless the group's
    members changed since the message's first delivery (counted apart: copies of it were in flight)."""
    observed, dead_letters = _observing_dead_letters(e, ctx)
    after = observed.filter(_delivered_after_dlq())
    # a change of the group's members since the first delivery leaves copies of a message in flight (a 4.x
    # retry copy a crashed consumer sent back, beside its original, OFFSET-04): one may come after another's DLQ
    bad, changed = _members_changed(after, ctx, "first_delivery", "last_delivery")
    n, ex = _violations(bad, ["m", "m2", "g", "dlq_ts", "last_delivery"], MSG_AND_GROUP,
                        _at("last_delivery", MSG_AND_GROUP), ["run_id", "group", "msg_id", "dlq_ts", "last_delivery"])
    return CheckResult("nothing_after_dlq", _verdict(n), ["RETRY-CONC-04", "RETRY-5X-07"],
                       {"dead_letters": dead_letters(), "violations": n,
                        **({"after_members_changed": changed.count()} if ctx["stated"].groups else {})}, ex)


def check_dlq(e, ctx) -> CheckResult:
    """A message goes to the DLQ exactly after the maximum deliveries, all failed, and only then. The maximum
    is the one the group's consumers state (``consumers``), else the manifest's or the profile's. The last
    attempt is judged when one client had every delivery (an attempt count is the client's, RETRY-5X-08), and
    a maximum reached without a DLQ only when that client was a push consumer up at the run's settle (or the
    log states no consumer): one that died after its last failure never sent the message back, and a simple
    consumer's message is dead-lettered at a receive that may never come (RETRY-5X-07)."""
    from pyspark.sql import functions as F

    default_max = timing(ctx["profile"]).max_deliveries
    stated = ctx["stated"]
    max_d = _per_group(ctx, lambda g: F.lit(g["max_deliveries"]) if g.get("max_deliveries") else None,
                       F.lit(default_max))
    # a group whose consumers state no maximum, or differ, has none (a null literal, which _case keeps)
    max_d = _case("g", {g: F.lit(m).cast("long") for g, m in stated.max_deliveries().items()}, max_d)
    stayed = (~F.col("g").isin(*stated.groups) | F.col("last_c").isin(*stated.push_clients_up_at_settle())) \
        if stated.groups else F.lit(True)
    per, dead_letters = _observing_dead_letters(e, ctx)
    per = per.filter(~_delivered_after_dlq())  # those are nothing_after_dlq's
    # the last attempt, not the count of deliveries: a consumer that crashed may have taken an attempt the
    # log never saw (RETRY-5X-07: the server dead-letters by the delivery attempt)
    last = F.coalesce(F.col("last_attempt"), F.lit(0))  # a DLQ with no delivery logged is not at the maximum
    one_client = F.coalesce(F.col("one_client"), F.lit(True))
    reason = (F.when(F.col("dlq_ts").isNotNull() & one_client & (last != max_d), F.lit("DLQ not at the maximum"))
              .when(F.col("dlq_ts").isNull() & one_client & stayed & (last >= max_d) & (F.col("successes") == 0),
                    F.lit("maximum reached without DLQ")))
    # named by its last delivery, or by its DLQ when it has none
    bad = (per.withColumn("reason", reason).filter(F.col("reason").isNotNull())
           .withColumn("at", F.coalesce("last_delivery", "dlq_ts")))
    n, ex = _violations(bad, ["m", "m2", "g", "deliveries", "dlq_ts", "last_delivery", "reason"], MSG_AND_GROUP,
                        _at("at", MSG_AND_GROUP),
                        ["run_id", "group", "msg_id", "deliveries", "dlq_ts", "last_delivery", "reason"])
    named = {name: g["max_deliveries"] for name, g in ctx["groups"].items() if g.get("max_deliveries")}
    return CheckResult("dlq_at_max", _verdict(n), ["RETRY-CONC-04", "RETRY-CONC-06", "RETRY-5X-07"],
                       {"dead_letters": dead_letters(), "violations": n, "max_deliveries": default_max, **({"per_group": named} if named else {})}, ex)


def check_delay_accuracy(e, ctx) -> CheckResult:
    """A delayed message is not delivered before its time (DELAY-01, DELAY-06; a 5.x timed message's time
    less the timer's rounding, DELAY-08, as ``spec/timing_model.yaml`` states it): a first delivery earlier
    than that, by more than the tolerance, is a violation (``early``). A later one is
    counted (``late``) but not judged: the broker promises that the message is not visible before its time,
    and a log cannot tell a late broker from a consumer busy with other messages (a generated program on
    the reference delivered a level-3 message 26 s after its send, its group retrying others meanwhile).
    The suites judge lateness on the target itself (the delay property, DELAY-01)."""
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
    d = (delayed.join(first, ["m", "m2"])
         .withColumn("late_by", F.col("first") - F.col("sent") - F.col("delay_ms")))
    band = F.col("delay_ms") * tol.relative + tol.absolute_ms
    total, delayed_deliveries = Observation(), F.count(F.lit(1)).alias("n")
    later, late = Observation(), F.count(F.when(F.col("late_by") > band, 1)).alias("n")
    early = d.observe(total, delayed_deliveries).observe(later, late).filter(F.col("late_by") < -band)
    n, ex = _violations(early, ["m", "m2", "g", "delay_level", "sent", "first", "late_by"], MSG_AND_GROUP,
                        _at("first", MSG_AND_GROUP), ["run_id", "msg_id", "group", "delay_level", "sent", "first", "late_by"])
    return CheckResult("delay_accuracy", _verdict(n), ["DELAY-01", "DELAY-05", "DELAY-06", "DELAY-08"],
                       {"delayed_deliveries": _observed_count(total, lambda: d.agg(delayed_deliveries)), "early": n,
                        "late": _observed_count(later, lambda: d.agg(late))}, ex)


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


CONCURRENCY = 2
"""Checks run at once. While one query is planned and compiled on the driver, another's tasks use the
cores, and the shared tables are built once for all of them."""


@contextmanager
def _tuned(spark) -> Iterator[None]:
    before = {k: spark.conf.get(k, None) for k in TUNING}
    for k, v in TUNING.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def run_checks(spark, path: str, out: Path | None = None, profile: str | None = None,
               tolerance: Tolerance | None = None, allow_duplicates: int = 0,
               checks: tuple[str, ...] | None = None, concurrency: int = CONCURRENCY,
               progress: Callable[[str], None] | None = None, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load the log once, run the checks over it (``concurrency`` at a time), name their counterexamples.
    ``progress`` gets one line when the log is loaded and one as each check ends. ``manifest``: what the
    run that wrote the log states (``rmqc soak`` writes ``_soak.json`` beside the parts, read by default):
    release, time scale, each group's retry ladder and maximum deliveries, crash windows."""
    unknown = [c for c in (checks or ()) if c not in CHECKS]
    if unknown:
        raise CheckInputError(f"unknown check {', '.join(unknown)}; known: {', '.join(CHECKS)}")
    known = " and ".join(BROKER_PROFILES)
    if profile is not None and profile not in BROKER_PROFILES:
        raise CheckInputError(f"profile {profile!r}: the checks know {known}")
    say = progress or (lambda line: None)
    started = perf_counter()
    with _tuned(spark):
        loaded = load(spark, path, (out / "quarantine") if out else None)
        say(f"loaded {loaded.stats.get('rows', '?')} rows in {perf_counter() - started:.1f} s")
        profile = profile or loaded.profile or GRPC_5X
        stated = manifest if manifest is not None else read_manifest(path)
        ctx = {"spark": spark, "profile": profile, "tolerance": tolerance or Tolerance(),
               "allow_duplicates": allow_duplicates, "tables": {}, "lock": threading.Lock(),
               "stated": loaded.stated, "acks": loaded.acks,
               **_manifest_context(spark, stated)}
        try:
            if profile not in BROKER_PROFILES:
                raise CheckInputError(f"profile {profile!r} (named by the log): the checks know {known}")
            chosen = [fn for name, fn in CHECKS.items() if checks is None or name in checks]
            ended = itertools.count(1)

            def run(fn: Callable) -> CheckResult:
                began = perf_counter()
                result = fn(loaded.events, ctx)
                say(f"[{next(ended)}/{len(chosen)}] {result.name} {result.verdict.upper()} "
                    f"({perf_counter() - began:.1f} s)")
                return result

            with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="rmqc-check") as pool:
                results = list(pool.map(run, chosen))
            names = _names(loaded.raw, [r.counterexamples for r in results])
        finally:
            for table in (*ctx["tables"].values(), loaded.events):
                table.unpersist()
    for r in results:
        r.counterexamples = r.counterexamples.named(names)
    return {"input": str(path), "profile": profile, **loaded.stats, "checks": [asdict(r) for r in results],
            "passed": all(r.verdict == "pass" for r in results),
            **({"manifest": {k: v for k, v in stated.items() if k != "workload"}} if stated else {})}


MANIFEST = "_soak.json"
"""What a soak states beside its log (Spark's Parquet reader skips names that start with ``_``)."""


def read_manifest(path: str | Path) -> dict[str, Any] | None:
    """``<log>/_soak.json`` when the log is a folder that has one, else None; one that does not parse is
    an input error naming it."""
    file = Path(path) / MANIFEST
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckInputError(f"{file}: not a soak manifest: {exc}") from None
    if not isinstance(data, dict):
        raise CheckInputError(f"{file}: not a soak manifest: expected an object")
    return data


def _manifest_context(spark, stated: dict[str, Any] | None) -> dict[str, Any]:
    """The checks' view of a manifest: release and time scale for the timing model, each stated group by
    the hash its rows carry, crash windows with that hash."""
    from pyspark.sql import functions as F

    stated = stated or {}
    run_id = str(stated.get("run_id", ""))
    groups: dict[str, dict[str, Any]] = dict(stated.get("groups", {}))
    windows = list(stated.get("crash_windows", []))
    names = sorted(set(groups) | {w["group"] for w in windows})
    hashes: dict[str, int] = {}
    if names:
        rows = spark.createDataFrame([(run_id, n) for n in names], "run_id string, group string") \
            .select("group", F.xxhash64("run_id", "group").alias("g")).collect()
        hashes = {r["group"]: r["g"] for r in rows}
    return {"release": str(stated.get("release", versions.LATEST)), "time_scale": float(stated.get("time_scale", 1.0)),
            "wall_fixed_ms": {str(k): int(v) for k, v in dict(stated.get("wall_fixed_ms", {})).items()},
            "groups": groups, "group_hashes": {hashes[n]: g for n, g in groups.items()},
            "crash_windows": [{**w, "g": hashes[w["group"]]} for w in windows]}


def write_result(result: dict[str, Any], out: Path) -> None:
    from .report import write_html

    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2, default=str))
    write_html(result, out / "index.html")
