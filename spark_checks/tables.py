"""The tables and columns more than one family of checks reads, built from the cache once per run: each
table is cached by the first check that asks (``_cached``, the checks run concurrently). The sends and their
delay (DELAY-01, DELAY-02, DELAY-08), the sends that did not end in one SEND_OK (``send_outcomes``, issue 50,
item 4) and from them the messages stored twice (TX-05) and those a client's retries may have stored twice
(``client_retried``), one row per (message, group) (``lives``), every redelivery beside the delivery before it
in time (``redeliveries``, RETRY-5X-08), the rows of a group whose members changed (``consumers.Stated.changes``),
and the columns read from a profile's tables and the soak manifest (``_looked_up``, ``_case``, ``_per_group``,
``_in_crash_window``)."""
from __future__ import annotations

from typing import Any, Callable

from .loading import _is, persisted


# ---- tables shared by the checks, built from the cache once per run ------------------------------

def _cached(ctx, name: str, build: Callable[[], Any]):
    """The table ``name`` of this run, cached; built by the first check that asks (checks run concurrently).
    Where the events are cached on disk only (``loading.cache_on_disk``), so are these: ``lives`` has a row for
    each (message, group), about half the events, and would churn in memory as the events would."""
    with ctx["lock"]:
        if name not in ctx["tables"]:
            ctx["tables"][name] = persisted(build(), ctx.get("on_disk", False))
        return ctx["tables"][name]


def _unless_empty(ctx, name: str, table):
    """``table`` (the cached table ``name``), or None when it has no row: asked once a run, so the checks that
    read it skip their joins in the usual case (every message sent once, acknowledged) at no cost of theirs."""
    known = ctx.setdefault("empty", {})
    if name not in known:
        known[name] = table.isEmpty()
    return None if known[name] else table


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


def send_outcomes(e, ctx):
    """One row per message whose sends the log does not show as one plain SEND_OK (issue 50, item 4), cached:
    ``oks`` its SEND_OK rows (a committed transaction's TX_END among them, TX-02), ``unknowns`` its SEND_UNKNOWN
    rows (sends whose outcome the client could not know: the broker may or may not have stored them),
    ``refusals`` its SEND_FAIL rows, and ``copies``, the most copies of it the broker can hold: one for each
    attempt of a SEND_OK or SEND_UNKNOWN (``attempt``, the client's attempts under the one id; one when not
    logged), or as many as a SEND_INVOKE's attempts, whichever is more. A SEND_FAIL stores nothing. Only the
    messages with more than one SEND_OK, any other outcome, or more than one possible copy have a row; None when
    none has (``_unless_empty``)."""
    from pyspark.sql import functions as F

    ok, unknown = _is("SEND_OK"), _is("SEND_UNKNOWN")
    stores = F.sum(F.when(ok | unknown, F.coalesce(F.col("attempt"), F.lit(1))))
    return _unless_empty(ctx, "send_outcomes", _cached(ctx, "send_outcomes", lambda: (
        e.filter(_is("SEND_OK", "SEND_UNKNOWN", "SEND_FAIL", "SEND_INVOKE")).groupBy("m", "m2").agg(
            F.count(F.when(ok, 1)).alias("oks"), F.count(F.when(unknown, 1)).alias("unknowns"),
            F.count(F.when(_is("SEND_FAIL"), 1)).alias("refusals"),
            F.greatest(stores, F.max(F.when(_is("SEND_INVOKE"), F.col("attempt")))).alias("copies"))
        .filter((F.col("oks") > 1) | (F.col("unknowns") > 0) | (F.col("refusals") > 0) |
                (F.coalesce(F.col("copies"), F.lit(0)) > 1)))))


def stored_twice(e, ctx):
    """The messages sent more than once under one id: from 5.1.0 a transaction its producer committed can be
    committed again by a check that ran before the commit's op message was written (TX-05), and each commit
    stores the message anew, so its deliveries are two lives under one id. The duplicates and retry-interval
    checks count them apart: the log cannot tell which copy a delivery was. (Two SEND_OK rows: ``send_outcomes``.)
    None when there is none."""
    from pyspark.sql import functions as F

    outcomes = send_outcomes(e, ctx)  # outside: _cached's lock is not reentrant
    if outcomes is None:
        return None
    return _unless_empty(ctx, "stored_twice", _cached(ctx, "stored_twice", lambda: outcomes.filter(
        F.col("oks") > 1).select("m", "m2")))


def client_retried(e, ctx):
    """The messages a client's retries may have stored more than once under one id, with ``copies``, the most
    copies there can be (``send_outcomes``; those sent twice are ``stored_twice``'s). A client that retries a send
    whose first attempt timed out (a stalled or killed broker, a reset connection) sends the same message id
    again: the Python 5.x SDK does, so does a 4.x producer on another broker (SEND-4X-02). When the broker had
    stored the first attempt, there are two stored copies under one id, each delivered from attempt 1: copies
    its client made, not the broker. The log shows it by a SEND_UNKNOWN, or by more than one attempt of a send
    (the ``attempt`` of its SEND_OK, SEND_UNKNOWN or SEND_INVOKE); one copy of each attempt at most. None when
    there is none."""
    from pyspark.sql import functions as F

    outcomes = send_outcomes(e, ctx)
    if outcomes is None:
        return None
    return _unless_empty(ctx, "client_retried", _cached(ctx, "client_retried", lambda: outcomes.filter(
        (F.col("oks") <= 1) & (F.col("copies") > 1)).select("m", "m2", "copies")))


def _copies_apart(rows, retried, broadcasting: set[int] | frozenset[int] = frozenset()):
    """``rows`` (redeliveries after a success) split into (those no client's retry explains, the count of those
    it does): of a message its client may have stored ``copies`` times (``client_retried``), the first
    ``copies - 1`` of each (message, group) in time are the other copies' (of each client of a broadcasting
    group: each client has its own copy of each). A correct broker hands each stored copy out until it is taken
    once, so a success followed by another delivery needs another copy: more than ``copies - 1`` of them is a
    copy the broker made, which still counts."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if retried is None:  # the usual case: no indeterminate send, no client retry logged
        return rows, 0
    client = F.when(F.col("g").isin(*broadcasting), F.col("c")) if broadcasting else F.lit(None)
    place = F.row_number().over(Window.partitionBy("m", "m2", "g", client).orderBy("ts_ms", "attempt"))
    ranked = rows.join(F.broadcast(retried), ["m", "m2"], "left").withColumn(
        "_copy", F.coalesce(F.when(F.col("copies").isNotNull(), place) < F.col("copies"), F.lit(False)))
    return ranked.filter(~F.col("_copy")).drop("copies", "_copy"), ranked.filter(F.col("_copy")).count()


def _apart(rows, twice):
    """``rows`` split into (those of a message stored once, the count of those of a message stored twice, or
    more than once maybe: ``twice`` is ``stored_twice`` or ``client_retried``)."""
    from pyspark.sql import functions as F

    if twice is None:  # the usual case (no transaction, or a release before 5.1.0; no client retry): no join at all
        return rows, 0
    twice = twice.select("m", "m2")
    return rows.join(F.broadcast(twice), ["m", "m2"], "left_anti"), \
        rows.join(F.broadcast(twice), ["m", "m2"], "left_semi").count()


def lives(e, ctx):
    """One row per (message, group): deliveries, successes, DLQ time (the first, the last, how many), first
    (attempt 1) and last delivery,
    the topic it was delivered from. A streaming aggregate over the sorted cache; cached for four checks."""
    from pyspark.sql import functions as F

    deliver, dlq = _is("DELIVER"), _is("DLQ")
    return _cached(ctx, "lives", lambda: e.filter(_is("DELIVER", "CONSUME_OK", "DLQ")).groupBy("m", "m2", "g").agg(
        F.count(F.when(deliver, 1)).alias("deliveries"), F.count(F.when(_is("CONSUME_OK"), 1)).alias("successes"),
        F.min(F.when(dlq, F.col("ts_ms"))).alias("dlq_ts"),
        # every DLQ, and the last: a message its client stored twice has a life for each copy (``client_retried``)
        F.count(F.when(dlq, 1)).alias("dlqs"), F.max(F.when(dlq, F.col("ts_ms"))).alias("last_dlq_ts"),
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


def _looked_up(table: tuple[int, ...] | list[int], place):
    """``table[place - 1]`` as a literal lookup in the plan (null for a place outside the table): a profile's
    table needs no DataFrame of its own, nor a join."""
    from pyspark.sql import functions as F

    values = F.array(*[F.lit(v).cast("long") for v in table])
    return F.when(place >= 1, F.try_element_at(values, place.cast("int")))  # the place of an array is an int


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


STALL_AFTER_MS = 100
"""How long after a stall of the soak's process ends a timestamp it delayed may still be logged."""


def _in_stall(ctx, since, until):
    """True when one of the soak process's stalls (``rmqc.stall_probe``, the manifest's ``stalls``) touches
    ``[since, until + STALL_AFTER_MS]``: a timestamp logged there may be late by the stall."""
    from pyspark.sql import functions as F

    if not ctx.get("stalls"):
        return F.lit(False)
    spans = F.array(*(F.struct(F.lit(a).cast("long").alias("a"), F.lit(b).cast("long").alias("b"))
                      for a, b in ctx["stalls"]))
    return F.exists(spans, lambda s: (s["a"] <= until + STALL_AFTER_MS) & (s["b"] >= since))


def _crash_window_overlaps(ctx, since, until):
    """True for a row of a group one of whose stated crash windows overlaps ``[since, until]``."""
    from pyspark.sql import functions as F

    test = F.lit(False)
    for window in ctx["crash_windows"]:
        test = test | ((F.col("g") == F.lit(window["g"])) & (since <= window["to_ms"]) & (until >= window["from_ms"]))
    return test


def _in_crash_window(ctx, ts):
    """True for a row of a group inside one of the crash windows the soak manifest states."""
    return _crash_window_overlaps(ctx, ts, ts)
