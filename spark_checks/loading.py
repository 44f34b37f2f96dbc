"""How the event log is read, once for every check (``checks.run_checks`` calls ``load`` and, for the
counterexamples, ``_names``): the columns it must and may have, the schema invariants a row can break
(``PROBLEMS``, the quarantine's reasons), the kinds and identities as numbers, the cache of the checkable rows,
the profile the log names, and the names read back from the input afterwards. A transaction's commit is
read as its message's send (TX-02), its state from a column of its own (``tx_state``).

How the log is read, once for every check:

- One scan of the input. Each row's kind becomes a number and so do its identities: the message
  (``run_id`` + ``msg_id``; for an APPLY, ``run_id`` + ``group`` + ``key``) a 64-bit xxhash and a 32-bit
  murmur3 hash, so two identities are taken for one only if both hashes collide (about 2^-96 a pair);
  the group (``run_id`` + ``group``), the topic and the message group a 64-bit xxhash each. Rows that
  break the schema's invariants are counted in the same scan (``observe``).
- The sends that did not end in a SEND_OK are cached too when they name their message (``OUTCOME_KINDS``:
  indeterminate, refused, invoked with client retries), and the input's SEND_UNKNOWN and SEND_FAIL rows are
  counted in the same scan (``Loaded.outcomes``): every check reports the indeterminate ones (issue 50, item 4).
- The checkable rows are hash-partitioned by message, sorted by (message, group, attempt, time) and
  cached. Every later aggregate, window and join keyed by message reads them in that order: no other
  shuffle of the events and no other sort of them (the plan streams them, ``replaceHashWithSortAgg``).
- The cache stays in memory (spilling to disk what does not fit) unless its estimated size passes the memory
  Spark keeps for storage (``cache_on_disk``): then it is written to disk only. A cache many times the memory,
  kept in memory and on disk, churns: Spark's block manager tries to bring each block it reads from disk back
  into memory (``BlockManager.getLocalValues``), pushing another out (10⁸ events at a 2 GB driver: 245–258 s
  in memory and on disk, 208–212 s on disk only; 10⁷, which fits: 34.5 s against 36.3 s on disk).
- Only numbers are cached, every one a long. Spark generates a reader class for each set of column types
  a query reads back from the cache; with longs only, that is one class per number of columns (a check
  run compiles 7 readers instead of 15; at 10M events a first run in a new JVM takes about 2 s less).
- The names in the counterexamples (at most ``COUNTEREXAMPLES`` a check) are looked up afterwards, only
  when some check has counterexamples: each counterexample carries the time of a row that names each of
  its identities (a send, delivery, DLQ or APPLY the check read anyway), and the input is read again only
  at those times. Nothing of the log is collected to the driver beyond those rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from history.events import EVENT_KINDS
from history.profiles import BROKER_PROFILES

from .consumers import KINDS as STATED_KINDS
from .consumers import Stated, read_stated

if TYPE_CHECKING:
    from .verdicts import Examples


REQUIRED = {"ts_ms": "bigint", "kind": "string", "topic": "string", "group": "string", "msg_id": "string",
            "key": "string", "message_group": "string", "producer_seq": "bigint", "attempt": "int",
            "delay_level": "int"}
OPTIONAL = {"run_id": "string", "profile": "string", "expected_delay_ms": "bigint", "client_id": "string",
            "seq": "bigint", "tx_state": "string"}
MESSAGE_KINDS = ("SEND_OK", "DELIVER", "CONSUME_OK", "CONSUME_FAIL", "DLQ", "APPLY", "ACK", "RETRY_SCHEDULED")
PROBLEMS = ("unknown kind", "null ts_ms", "null msg_id", "attempt below 1")
"""The schema invariants a row can break, in the order they are tested (the quarantine's reason)."""


class CheckInputError(ValueError):
    """The input cannot be checked: the message says why in one line."""


class ColumnError(CheckInputError):
    """The log lacks required columns or has one in another type (issue 55): ``columns`` names them, so the
    written result can say which (``damage.input_error_result``)."""

    def __init__(self, message: str, columns: list[str]) -> None:
        super().__init__(message)
        self.columns = columns


KIND_CODE = {kind: i + 1 for i, kind in enumerate(EVENT_KINDS)}
"""Kinds are cached as numbers (0: not a kind of the schema)."""
CHECKED_KINDS = ("SEND_OK", "DELIVER", "CONSUME_OK", "CONSUME_FAIL", "ACK", "RETRY_SCHEDULED", "DLQ", "APPLY")
"""The kinds the checks read from the cache; the others are counted and validated but not cached (the
consumer and settle rows are read apart, ``consumers.read_stated``), but for the sends of OUTCOME_KINDS."""
OUTCOME_KINDS = ("SEND_UNKNOWN", "SEND_FAIL", "SEND_INVOKE")
"""Sends whose outcome is not a SEND_OK, cached when they name their message (issue 50, item 4): a send whose
outcome its client could not know (SEND_UNKNOWN: the broker may have stored it, once for each attempt its client
made), a refused one (SEND_FAIL), and a send invoked with more than one attempt under one id (SEND_INVOKE whose
``attempt`` passes 1: its client's retries). They are few; a SEND_INVOKE of one attempt (every send's) is not
cached. ``tables.send_outcomes`` reads them."""
INDETERMINATE = ("indeterminate", "refused")
"""The input's counts of SEND_UNKNOWN and SEND_FAIL rows (named or not), observed in the load's one scan."""


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
    cached_on_disk: bool = False
    """Whether the events are cached on disk only (``cache_on_disk``)."""
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(INDETERMINATE, 0))
    """The input's SEND_UNKNOWN (``indeterminate``) and SEND_FAIL (``refused``) rows, named or not: every check
    reports the first (issue 50, item 4)."""


def _read(spark, path: str, files: list[str] | None = None):
    """The log as Spark reads it: the folder or file ``path``, or only ``files`` under the folder ``path`` (the
    parts that are not damaged, issue 55; ``basePath`` keeps the partition columns of their folders)."""
    try:
        raw = (spark.read.option("basePath", str(path)).parquet(*files) if files is not None
               else spark.read.parquet(str(path)))
    except Exception as exc:  # AnalysisException: path missing or not Parquet
        raise CheckInputError(f"cannot read {path} as Parquet: {str(exc).splitlines()[0]}") from None
    types = dict(raw.dtypes)
    missing = sorted(c for c in REQUIRED if c not in types)
    expected = {**REQUIRED, **OPTIONAL}
    mistyped = sorted(c for c, t in expected.items()
                      if c in types and types[c] != t and not (t == "int" and types[c] == "bigint"))
    wrong = [f"{c} is {types[c]}, expected {expected[c]}" for c in mistyped]
    if missing or wrong:
        raise ColumnError("event log columns: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else []) + wrong), missing + mistyped)
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


CACHE_BYTES_PER_INPUT_BYTE = 5.5
"""The cache's size in memory against the input's on disk: 659 MB cached from 119 MB of Parquet (10⁷ events
of ``rmqc simulate``). A log with more text a row (a soak's) is overestimated, which errs towards the disk."""


def cache_on_disk(input_bytes: int, storage_bytes: int) -> bool:
    """Whether the events are cached on disk only: when the cache, estimated from the input's size on disk,
    would not fit in the memory Spark keeps for storage (the block managers' together)."""
    return input_bytes * CACHE_BYTES_PER_INPUT_BYTE > storage_bytes


def persisted(frame, on_disk: bool):
    """``frame`` cached on disk only when ``on_disk`` (``cache_on_disk`` said so of the events), else in memory,
    spilling to disk what does not fit: the events and the tables the checks share (``tables._cached``)."""
    from pyspark import StorageLevel

    return frame.persist(StorageLevel.DISK_ONLY) if on_disk else frame.cache()


def _input_bytes(raw) -> int:
    """The input's size on disk, from the plan's statistics of the files read (no file is opened)."""
    leaves = raw._jdf.queryExecution().optimizedPlan().collectLeaves()
    return sum(int(leaves.apply(i).stats().sizeInBytes()) for i in range(leaves.size()))


def _storage_bytes(spark) -> int:
    """The memory for storage of the block managers registered now (the driver's in local mode)."""
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().values().iterator()
    total = 0
    while status.hasNext():
        total += int(status.next()._1())
    return total


CACHE_ORDER = ("m", "m2", "g", "ts_ms", "attempt", "k")
"""The cache's order within a partition: a (message, group)'s rows in time order, a delivery before its outcome
before its ack at one time (their kind codes in that order), so the redelivery window reads it as it is."""
PROFILES_BY_NAME = tuple(sorted(BROKER_PROFILES))
"""The profiles the checks know, in name order: a log naming several is checked as the first."""


def load(spark, path: str, quarantine_dir: Path | None, files: list[str] | None = None) -> Loaded:
    """Read once: count every row and the invariants it breaks (``observe``), keep the checkable rows as
    numbers, partitioned by message and sorted, in the cache. Rows that break an invariant are written
    with all their columns to the quarantine folder when there are any (read again for that only).
    ``files``: only these parts of the folder ``path`` (the others are damaged, issue 55). Whatever fails
    after the cache is made unpersists it (a part found damaged then is set aside and the log loaded again)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    raw = _read(spark, path, files)
    kind_code = F.coalesce(F.array_position(F.array(*[F.lit(k) for k in EVENT_KINDS]), F.col("kind")),
                           F.lit(0)).cast("byte")
    # a transaction's commit is its message's send (TX-02): checked as one
    kind_code = F.when(_committed(raw), F.lit(KIND_CODE["SEND_OK"]).cast("byte")).otherwise(kind_code)
    problem = _problem(kind_code, F.col("ts_ms"), F.col("msg_id"), F.col("attempt"))
    # a profile as its place in PROFILES_BY_NAME (0: another name; null: none): the counts observe numbers only
    profile_code = F.array_position(F.array(*[F.lit(p) for p in PROFILES_BY_NAME]), F.col("profile"))
    named = F.col("msg_id").isNotNull()
    keep = (F.col("_problem") == 0) & (_is(*CHECKED_KINDS) | (_is("SEND_UNKNOWN", "SEND_FAIL") & named) |
                                       (_is("SEND_INVOKE") & named & (F.col("attempt") > 1)))
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
        F.count(F.when((F.col("_problem") == 0) & (F.col("k") == KIND_CODE[kind]), 1)).alias(name)
        for name, kind in zip(INDETERMINATE, ("SEND_UNKNOWN", "SEND_FAIL"))] + [
        F.count(F.when(F.col("_problem") == i + 1, 1)).alias(f"p{i}") for i in range(len(PROBLEMS))]
    partitions = max(8, 4 * raw.rdd.getNumPartitions())  # a sorted partition of about 1-2 M rows
    events = (raw.withColumn("k", kind_code).withColumn("_problem", problem)
              .select(*[column.cast("long").alias(name) for name, column in cached.items()], "_problem",
                      profile_code.alias("_profile"))
              .observe(observed, *metrics).filter(keep).drop("_problem", "_profile")
              .repartition(partitions, "m").sortWithinPartitions(*CACHE_ORDER))
    on_disk = cache_on_disk(_input_bytes(raw), _storage_bytes(spark))
    events = persisted(events, on_disk)
    try:
        events.count()  # the one scan of the input: builds the cache and the observed counts
        seen = observed.get
        reasons = {PROBLEMS[i]: seen[f"p{i}"] for i in range(len(PROBLEMS)) if seen[f"p{i}"]}
        total, bad = seen["rows"], sum(reasons.values())
        if total == 0:
            raise CheckInputError(f"{path}: the event log is empty; an empty log is not a pass")
        if bad and quarantine_dir is not None:
            reason = F.element_at(F.array(*[F.lit(name) for name in PROBLEMS]), problem.cast("int"))
            raw.filter(problem > 0).withColumn("_problem", reason) \
                .write.mode("overwrite").parquet(str(quarantine_dir))
        if total == bad:
            raise CheckInputError(f"{path}: all {total} rows break the schema's invariants (see the quarantine)")
        return Loaded(events, raw, {"rows": total, "quarantined": bad, "quarantine_reasons": reasons},
                      _profile_named(raw, seen["profile"]), read_stated(raw, seen["stated"] > 0), seen["acks"] > 0,
                      on_disk, {name: int(seen[name]) for name in INDETERMINATE})
    except BaseException:
        events.unpersist()
        raise


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


# ---- the names of the counterexamples, read again from the input ---------------------------------

NAMING_KINDS = ("SEND_OK", "DELIVER", "DLQ", "APPLY")
"""The rows a counterexample's identities are named from: each carries its message's name (an APPLY its
key's), its group's (a send its topic's), and a delivery its topic's and message group's."""


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
