"""The delivery checks: every message reaches every group it is owed to (``no_loss``, RETRY-CONC-03,
RETRY-5X-06; owed once visible, its delay DELAY-01, DELAY-08; only an acknowledged send is owed), no delivery a
message did not need (``duplicates``, RETRY-CONC-03, OFFSET-04, RETRY-CONC-05; messages stored twice counted
apart, TX-05, and the copies a client's retries made told from the broker's, issue 50, item 4), one
APPLY per key and group (``exactly_once``, CLAIM-05), and send order and FIFO blocking per message group
(``order``, FIFO-01, FIFO-04, FIFO-05, RETRY-5X-08; a message a client's retries may have stored twice left out
of its line)."""
from __future__ import annotations

from .loading import KIND_CODE, _is
from .profiles import timing
from .tables import (_apart, _copies_apart, _delay_ms, _in_crash_window, _members_changed, client_retried, lives,
                     redeliveries, send_outcomes, sends, stored_twice)
from .verdicts import MSG_AND_GROUP, CheckResult, _at, _observed_count, _verdict, _violations


def check_no_loss(e, ctx) -> CheckResult:
    """Every SEND_OK reaches every group it is owed to (delivered at least once). Where the log states a
    group's consumers (``consumers``), a message is owed when one of its push consumers, subscribed to every
    message of the topic, was up from the send through the run's settle and the message was visible by then
    (its delay, DELAY-01, DELAY-08); a consumer that left, a simple consumer that stopped receiving, a group
    that came after the send are owed nothing. Where it does not, every group that received from the topic
    is taken as subscribed throughout.

    Only an acknowledged send is owed (issue 50, item 4): a send whose outcome its client could not know
    (SEND_UNKNOWN) may or may not have been stored, so it is owed to no one, delivered or not; nor is a refused one
    (SEND_FAIL). Counted: ``indeterminate_delivered``, the messages only indeterminate sends sent that some group
    received (stored after all); ``refused``, the log's SEND_FAIL rows; ``refused_delivered``, the messages only
    refused sends sent that some group received (a refusal is definite: the broker should not have stored them;
    counted, not judged, as a client that reports a timeout as a failure logs them too)."""
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
                       {"owed": _observed_count(judged, lambda: expected.agg(pairs)), "lost": n,
                        **_unacknowledged_delivered(e, ctx, delivered),
                        "refused": ctx.get("outcomes", {}).get("refused", 0)}, ex)


def _unacknowledged_delivered(e, ctx, delivered) -> dict[str, int]:
    """The messages sent without a SEND_OK that some group received: sent only by indeterminate sends
    (``indeterminate_delivered``), only by refused ones (``refused_delivered``)."""
    from pyspark.sql import functions as F

    outcomes = send_outcomes(e, ctx)
    if outcomes is None:
        return {"indeterminate_delivered": 0, "refused_delivered": 0}
    row = (outcomes.filter(F.col("oks") == 0).join(delivered.select("m", "m2"), ["m", "m2"], "left_semi")
           .agg(F.count(F.when(F.col("unknowns") > 0, 1)).alias("indeterminate_delivered"),
                F.count(F.when((F.col("unknowns") == 0) & (F.col("refusals") > 0), 1)).alias("refused_delivered"))
           .first())
    return {"indeterminate_delivered": int(row[0] or 0), "refused_delivered": int(row[1] or 0)}


def check_duplicates(e, ctx) -> CheckResult:
    """Deliveries a message did not need: a redelivery after a delivery that succeeded (CONSUME_OK), and, in a
    log that records acks, whose ack the broker took (ACK). At-least-once allows the others: after a failure,
    after a consumer that died or left before answering, and after a success when the group's members changed
    since the message's first delivery (a queue handed over from its last committed offset, OFFSET-04); a broadcasting group's clients
    each get their own copy (RETRY-CONC-05). Those inside a crash window the soak manifest states are counted
    apart and allowed, and so are those of a message stored twice (``stored_twice``, TX-05).

    Copies a client's retries made are not the broker's (issue 50, item 4). A client that retries a send whose
    attempt timed out sends the same message id again; when the broker had stored the attempt it is stored twice,
    and each copy is delivered, each from attempt 1. A delivery of a message whose send was indeterminate is no
    duplicate by itself: only a redelivery after a success is judged, as for any message. The log shows a client's
    retries by a SEND_UNKNOWN or by a send of more than one attempt under the message's id (``client_retried``:
    at most one stored copy an attempt). A correct broker takes each stored copy once, so of a (message, group)'s
    redeliveries after a success the first ``copies - 1`` in time are ``client_retry_copies`` (allowed); the
    others, like every redelivery after a success of a message with no sign of a retry (the same id delivered at
    attempt 1 again included), are ``broker_copies``: copies no client retry, second store, change of the group's
    members explains, those inside a crash window among them. ``duplicate_deliveries`` (the verdict's count) are
    the broker copies outside crash windows."""
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
    extra, retry_copies = _copies_apart(extra, client_retried(e, ctx), broadcasting)
    crash = extra.filter(_in_crash_window(ctx, F.col("ts_ms"))).count() if ctx["crash_windows"] else 0
    counted = extra.filter(~_in_crash_window(ctx, F.col("ts_ms")))
    n, ex = _violations(counted, ["m", "m2", "g", "attempt", "n"], MSG_AND_GROUP, _at("at", MSG_AND_GROUP),
                        ["run_id", "group", "msg_id", "attempt", "n"],
                        shown=lambda dup: dup.groupBy("m", "m2", "g", "attempt").agg(
                            (F.count("*") + 1).alias("n"), F.min("ts_ms").alias("at")))
    verdict = "pass" if n <= ctx["allow_duplicates"] else "fail"
    return CheckResult("duplicates", verdict, ["RETRY-CONC-03", "OFFSET-04", "RETRY-CONC-05"],
                       {"redeliveries": judged.count(), "duplicate_deliveries": n, "allowed": ctx["allow_duplicates"],
                        "crash_window_duplicates": crash, "stored_twice_duplicates": twice,
                        "client_retry_copies": retry_copies, "broker_copies": n + crash}, ex)


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
    before its predecessor's DLQ).

    A line holds the messages with a SEND_OK (an indeterminate send's place in it is not known), less those its
    client's retries may have stored twice (``client_retried``, issue 50, item 4; ``client_retry_messages``, one a
    (message, group)): an async send's retry may store its message behind one sent after it, and which copy's end
    blocks the next is not in the log. The message before and the one after are then judged as a pair (the
    broker serves a message group in the order it stored it). A pair inside a crash window the log states (a
    consumer crashed, a nemesis killed a broker) is counted apart (``crash_window_pairs``): see below."""
    from pyspark.sql import Observation, Window
    from pyspark.sql import functions as F

    per_msg = (e.filter(_is("DELIVER", "DLQ") & F.col("mg").isNotNull()).groupBy("m", "m2", "g", "mg")
               .agg(F.min(F.when(_is("DELIVER"), F.col("ts_ms"))).alias("first"), F.max("ts_ms").alias("done")))
    per_msg, retried = _apart(per_msg, client_retried(e, ctx))
    w = Window.partitionBy("g", "mg").orderBy("seq")
    pairs = (per_msg.join(sends(e).select("m", "m2", "seq"), ["m", "m2"])
             .withColumn("prev_first", F.lag("first").over(w)).withColumn("prev_done", F.lag("done").over(w))
             .withColumn("prev", F.lag("m").over(w)).withColumn("prev2", F.lag("m2").over(w)))
    blocking_band = F.lit(ctx["tolerance"].absolute_ms)
    seen, judged = Observation(), F.count(F.when(F.col("prev_first").isNotNull(), 1)).alias("n")
    out_of_order = (F.col("first") < F.col("prev_first")) | (F.col("first") < F.col("prev_done") - blocking_band)
    bad = pairs.observe(seen, judged).filter(F.col("prev_first").isNotNull() & out_of_order)
    replayed = 0
    if ctx["crash_windows"]:
        # a broker killed and started again reads a FIFO queue from the consumer offset it last persisted (every
        # 5 s: BrokerConfig.flushConsumerOffsetInterval, BrokerController@rocketmq-all-5.3.3 L646-652), so messages
        # acked just before the kill come again, in order: the previous message's end moves past the next one's
        # first delivery. A pair whose previous end or next first delivery falls in a crash window the log states
        # is counted apart (issue 50), as the duplicates and retry checks count such windows' redeliveries.
        in_window = _in_crash_window(ctx, F.col("prev_done")) | _in_crash_window(ctx, F.col("first"))
        replayed = bad.filter(in_window).count()
        bad = bad.filter(~in_window)
    n, ex = _violations(bad, ["g", "mg", "prev", "prev2", "m", "m2", "prev_done", "first"],
                        {"g": "g", "mg": "mg", "prev": "msg", "m": "msg"},
                        {"g": "first", "mg": "first", "m": "first", "prev": "prev_first"},
                        ["run_id", "group", "message_group", "prev_msg", "msg_id", "prev_done", "first"])
    return CheckResult("order", _verdict(n), ["FIFO-01", "FIFO-04", "FIFO-05", "RETRY-5X-08"],
                       {"pairs": _observed_count(seen, lambda: pairs.agg(judged)), "violations": n,
                        "client_retry_messages": retried, "crash_window_pairs": replayed}, ex)
