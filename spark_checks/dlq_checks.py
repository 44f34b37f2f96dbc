"""The dead-letter checks, over one row per (message, group) (``tables.lives``): nothing is delivered to a
group after its DLQ event (``nothing_after_dlq``, RETRY-CONC-04, RETRY-5X-07; copies in flight after a change
of the group's members counted apart, OFFSET-04), and a message goes to the DLQ exactly after the maximum
deliveries, all failed, and only then (``dlq_at_max``, RETRY-CONC-04, RETRY-CONC-06, RETRY-5X-07; the
attempt counted by one client, RETRY-5X-08). A message its client's retries stored twice has a life for each copy
(issue 50, item 4): a delivery after one copy's DLQ is judged only once every copy may be dead."""
from __future__ import annotations

from typing import Any, Callable

from .profiles import timing
from .tables import _case, _crash_window_overlaps, _in_crash_window, _members_changed, _per_group, client_retried, lives
from .verdicts import MSG_AND_GROUP, CheckResult, _at, _observed_count, _verdict, _violations


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


def _other_copies_live(after, retried):
    """``after`` (a (message, group) delivered after its first DLQ) split into (those judged, the count of those
    a client's retries explain): a message its client may have stored ``copies`` times (``client_retried``) has a
    copy still live until as many DLQs were logged; only a delivery after the last of them, once there are
    ``copies``, is judged."""
    from pyspark.sql import functions as F

    if retried is None:
        return after, 0
    rows = after.join(F.broadcast(retried), ["m", "m2"], "left")
    all_dead = (F.col("dlqs") >= F.col("copies")) & (F.col("last_delivery") > F.col("last_dlq_ts"))
    excused = F.col("copies").isNotNull() & ~all_dead
    return rows.filter(~excused).drop("copies"), rows.filter(excused).count()


def check_nothing_after_dlq(e, ctx) -> CheckResult:
    """Nothing is delivered to a group after its DLQ event (RETRY-CONC-04, RETRY-5X-07), unless the group's
    members changed since the message's first delivery (counted apart: copies of it were in flight). A message
    its client's retries may have stored more than once (issue 50, item 4) has a life for each copy: a delivery
    after one copy's DLQ is another copy's until every copy has one (``client_retry_copies``, counted apart). A
    message dead-lettered inside a stated crash window, or delivered after its DLQ inside one, may be handed out again
    (``dead_lettered_in_crash_window``, counted apart): its ack may never have reached the broker."""
    from pyspark.sql import functions as F

    observed, dead_letters = _observing_dead_letters(e, ctx)
    after, retry_copies = _other_copies_live(observed.filter(_delivered_after_dlq()), client_retried(e, ctx))
    # a 5.x dead letter is acked by the proxy after its send-back succeeds, without waiting and ignoring the answer
    # (ProducerProcessor.forwardMessageToDeadLetterQueue@rocketmq-all-5.3.3): one made inside a fault's window (a
    # killed or paused broker, a stale receipt handle) may never be acked, and the broker hands the message out
    # again; and inside a window what a killed broker held (a revive's acks not yet on disk) may come again
    faulted = 0
    if ctx["crash_windows"]:
        in_window = _in_crash_window(ctx, F.col("dlq_ts")) | _in_crash_window(ctx, F.col("last_delivery"))
        faulted = after.filter(in_window).count()
        after = after.filter(~in_window)
    # a change of the group's members since the first delivery leaves copies of a message in flight (a 4.x
    # retry copy a crashed consumer sent back, beside its original, OFFSET-04): one may come after another's DLQ
    bad, changed = _members_changed(after, ctx, "first_delivery", "last_delivery")
    n, ex = _violations(bad, ["m", "m2", "g", "dlq_ts", "last_delivery"], MSG_AND_GROUP,
                        _at("last_delivery", MSG_AND_GROUP), ["run_id", "group", "msg_id", "dlq_ts", "last_delivery"])
    return CheckResult("nothing_after_dlq", _verdict(n), ["RETRY-CONC-04", "RETRY-5X-07"],
                       {"dead_letters": dead_letters(), "violations": n, "client_retry_copies": retry_copies,
                        "dead_lettered_in_crash_window": faulted,
                        **({"after_members_changed": changed.count()} if ctx["stated"].groups else {})}, ex)


def check_dlq(e, ctx) -> CheckResult:
    """A message goes to the DLQ exactly after the maximum deliveries, all failed, and only then. The maximum
    is the one the group's consumers state (``consumers``), else the manifest's or the profile's. The last
    attempt is judged when one client had every delivery (an attempt count is the client's, RETRY-5X-08), and
    a maximum reached without a DLQ only when that client was a push consumer up at the run's settle (or the
    log states no consumer, and the soak's manifest does not call the group ``simple``): one that died after its
    last failure never sent the message back, and a simple consumer's message is dead-lettered at a receive that
    may never come (RETRY-5X-07). A DLQ before the maximum
    with a stated crash window between the last logged delivery and it is counted apart
    (``early_dlq_in_crash_window``): the fault may have lost the answer of a pop the broker counted."""
    from pyspark.sql import functions as F

    default_max = timing(ctx["profile"]).max_deliveries
    stated = ctx["stated"]
    max_d = _per_group(ctx, lambda g: F.lit(g["max_deliveries"]) if g.get("max_deliveries") else None,
                       F.lit(default_max))
    # a group whose consumers state no maximum, or differ, has none (a null literal, which _case keeps)
    max_d = _case("g", {g: F.lit(m).cast("long") for g, m in stated.max_deliveries().items()}, max_d)
    stayed = (~F.col("g").isin(*stated.groups) | F.col("last_c").isin(*stated.push_clients_up_at_settle())) \
        if stated.groups else F.lit(True)
    simple = [h for h, g in ctx["group_hashes"].items() if g.get("kind") == "simple"]  # the soak manifest's word
    if simple:
        stayed = stayed & ~F.col("g").isin(*simple)
    per, dead_letters = _observing_dead_letters(e, ctx)
    per = per.filter(~_delivered_after_dlq())  # those are nothing_after_dlq's
    # the last attempt, not the count of deliveries: a consumer that crashed may have taken an attempt the
    # log never saw (RETRY-5X-07: the server dead-letters by the delivery attempt)
    last = F.coalesce(F.col("last_attempt"), F.lit(0))  # a DLQ with no delivery logged is not at the maximum
    one_client = F.coalesce(F.col("one_client"), F.lit(True))
    # a fault's window between the last logged delivery and the DLQ may hide an attempt the broker counted: a pop
    # whose answer a killed or paused broker, or its proxy, never brought back (issue 50)
    unseen = (last < max_d) & _crash_window_overlaps(ctx, F.coalesce("last_delivery", "dlq_ts"), F.col("dlq_ts")) \
        if ctx["crash_windows"] else F.lit(False)
    early_dlq = F.col("dlq_ts").isNotNull() & one_client & (last != max_d)
    reason = (F.when(early_dlq & ~unseen, F.lit("DLQ not at the maximum"))
              .when(F.col("dlq_ts").isNull() & one_client & stayed & (last >= max_d) & (F.col("successes") == 0),
                    F.lit("maximum reached without DLQ")))
    # named by its last delivery, or by its DLQ when it has none
    bad = (per.withColumn("reason", reason).filter(F.col("reason").isNotNull())
           .withColumn("at", F.coalesce("last_delivery", "dlq_ts")))
    n, ex = _violations(bad, ["m", "m2", "g", "deliveries", "dlq_ts", "last_delivery", "reason"], MSG_AND_GROUP,
                        _at("at", MSG_AND_GROUP),
                        ["run_id", "group", "msg_id", "deliveries", "dlq_ts", "last_delivery", "reason"])
    named = {name: g["max_deliveries"] for name, g in ctx["groups"].items() if g.get("max_deliveries")}
    apart = {"early_dlq_in_crash_window": per.filter(early_dlq & unseen).count()} if ctx["crash_windows"] else {}
    return CheckResult("dlq_at_max", _verdict(n), ["RETRY-CONC-04", "RETRY-CONC-06", "RETRY-5X-07"],
                       {"dead_letters": dead_letters(), "violations": n, "max_deliveries": default_max,
                        **({"per_group": named} if named else {}), **apart}, ex)
