"""What an event log states about its consumers and its settle, read once for the checks (issue 36).

``CONSUMER_START`` / ``CONSUMER_STOP`` rows say when each consumer of a group came up and went away, what it
is (push or simple, clustering or broadcasting, orderly, its subscription) and the most deliveries it makes
of one message before the message is dead-lettered; a ``SETTLED`` row says the run let every consumer up at
that time take what it was owed. From them the checks judge what the broker promised a group, and nothing
a log cannot show:

- a message is owed to a group (``no_loss``) only if one of its push consumers, subscribed to every message
  of the topic, was up from the send through the run's settle (RETRY-CONC-03, RETRY-5X-06);
- a group's maximum deliveries are the ones its consumers state (RETRY-CONC-06, RETRY-5X-07), known only
  when they all state the same;
- a redelivery after a success is allowed when the group's members changed in between (a rebalance hands
  a queue over from the last committed offset, OFFSET-04).

A log that states no consumer (``rmqc simulate``, logs written before these rows) is judged as before: every
group that received from a topic was subscribed throughout, with the profile's or the manifest's maximum.
These rows are few: they are collected to the driver, never cached with the events.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("CONSUMER_START", "CONSUMER_STOP", "SETTLED")


@dataclass(frozen=True)
class Consumer:
    """One consumer client of a group, by the hashes the cached events carry (``g``, ``t``, ``c``)."""

    g: int
    t: int
    c: int
    start_ms: int
    stop: tuple[int, int] | None
    """When it stopped, as (time, seq): a stop at the settle's own millisecond is before or after it by seq."""
    push: bool
    broadcasting: bool
    every_message: bool
    """Subscribed with ``*``: a filtered subscription is owed only what matches, which the log cannot tell."""
    max_deliveries: int | None
    run: str


@dataclass
class Stated:
    """The consumers a log states, and each run's settle time."""

    consumers: list[Consumer] = field(default_factory=list)
    settled: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Run -> its settle as (time, seq)."""

    @property
    def groups(self) -> set[int]:
        """The groups whose consumers the log states (others are judged the old way)."""
        return {c.g for c in self.consumers}

    def up_at_settle(self, consumer: Consumer) -> bool:
        settled = self.settled.get(consumer.run)
        return settled is not None and consumer.start_ms <= settled[0] and \
            (consumer.stop is None or consumer.stop > settled)

    def owed(self) -> list[tuple[int, int, int, int]]:
        """(topic, group, from_ms, settled_ms): a message sent on the topic after ``from_ms`` and visible before
        ``settled_ms`` is owed to the group: a push consumer subscribed to every message of the topic was up
        from before its send through the settle. Strictly after and before: within one millisecond the log's
        times cannot tell which came first."""
        out: dict[tuple[int, int], tuple[int, int]] = {}
        for c in self.consumers:
            if c.push and c.every_message and self.up_at_settle(c):
                settled = self.settled[c.run][0]
                before = out.get((c.t, c.g))
                out[(c.t, c.g)] = (min(c.start_ms, before[0]) if before else c.start_ms, settled)
        return [(t, g, start, settled) for (t, g), (start, settled) in sorted(out.items())]

    def max_deliveries(self) -> dict[int, int | None]:
        """Group -> the maximum deliveries its consumers state; None when one states none or they differ."""
        stated: dict[int, set[int | None]] = {}
        for c in self.consumers:
            stated.setdefault(c.g, set()).add(c.max_deliveries)
        return {g: next(iter(values)) if len(values) == 1 else None for g, values in stated.items()}

    def broadcasting(self) -> set[int]:
        return {c.g for c in self.consumers if c.broadcasting}

    def changes(self) -> list[tuple[int, int]]:
        """(group, time) of every start and stop: the group's members changed then."""
        out = {(c.g, c.start_ms) for c in self.consumers}
        out |= {(c.g, c.stop[0]) for c in self.consumers if c.stop is not None}
        return sorted(out)

    def push_clients_up_at_settle(self) -> list[int]:
        return sorted({c.c for c in self.consumers if c.push and self.up_at_settle(c)})


def read_stated(raw, present: bool) -> Stated:
    """The consumer and settle rows of the log as read (``present``: the load counted some; else nothing is
    read)."""
    from pyspark.sql import functions as F

    if not present:
        return Stated()
    detail = "detail" in raw.columns

    def field_of(name: str):
        return F.col("detail")[name] if detail else F.lit(None).cast("string")

    rows = (raw.filter(F.col("kind").isin(*KINDS) & F.col("ts_ms").isNotNull())
            .select("kind", "ts_ms", F.coalesce(F.col("seq"), F.lit(0)).alias("seq"), "run_id", "attempt", F.xxhash64("run_id", "group").alias("g"),
                    F.xxhash64("run_id", "topic").alias("t"), F.xxhash64("run_id", "client_id").alias("c"),
                    field_of("consumer").alias("consumer"), field_of("mode").alias("mode"),
                    field_of("expression").alias("expression"))
            .collect())
    return stated_from_rows([r.asDict() for r in rows])


def stated_from_rows(rows: list[dict[str, Any]]) -> Stated:
    """``Stated`` from the rows (as dictionaries): a stop ends its client's start; a run's last SETTLED is
    its settle."""
    starts: dict[int, dict[str, Any]] = {}
    stops: dict[int, tuple[int, int]] = {}
    settled: dict[str, tuple[int, int]] = {}
    for r in sorted(rows, key=lambda r: (r["ts_ms"], r["seq"])):
        if r["kind"] == "SETTLED":
            settled[r["run_id"] or ""] = (r["ts_ms"], r["seq"])
        elif r["kind"] == "CONSUMER_START":
            starts.setdefault(r["c"], r)
        elif r["kind"] == "CONSUMER_STOP":
            stops.setdefault(r["c"], (r["ts_ms"], r["seq"]))
    consumers = [Consumer(g=r["g"], t=r["t"], c=c, start_ms=r["ts_ms"], stop=stops.get(c),
                          push=(r["consumer"] or "push") == "push", broadcasting=r["mode"] == "broadcasting",
                          every_message=(r["expression"] or "*").strip() == "*", max_deliveries=r["attempt"],
                          run=r["run_id"] or "")
                 for c, r in starts.items()]
    return Stated(consumers, settled)
