"""What every check returns and how it shows its counterexamples: the result (``CheckResult``) and its
verdict (``_verdict``), the noise band around the timing model's windows (``Tolerance``), a check's first
``COUNTEREXAMPLES`` rows in a fixed (hash) order with how to name them once the input is read again
(``Examples``; ``loading._names`` reads the names), the count a query observed on its way, and how a
counterexample's identities are named (``MSG_AND_GROUP``, ``_at``). It states no spec rule of its own: the
checks cite theirs (``delivery_checks``, ``timing_checks``, ``dlq_checks``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .timing_model import noise_band


COUNTEREXAMPLES = 20


@dataclass
class Tolerance:
    """The noise band around the timing model's windows (``spec/timing_model.yaml`` by default)."""

    absolute_ms: int = field(default_factory=lambda: noise_band()[1])
    relative: float = field(default_factory=lambda: noise_band()[0])

    def band(self, expected: Any):
        """The band around ``expected`` (a number or a Spark column): its relative part plus the absolute one."""
        return expected * self.relative + self.absolute_ms


@dataclass
class CheckResult:
    name: str
    verdict: str                      # pass, fail, inconclusive
    spec: list[str]
    counts: dict[str, Any] = field(default_factory=dict)
    counterexamples: Any = field(default_factory=list)  # Examples while running, named rows in the result
    detail: dict[str, Any] = field(default_factory=dict)


# ---- counterexamples: first rows in hash order, named afterwards -----------------------------------

NAMED = {"msg": ("run_id", "msg_id"), "key": ("run_id", "key"), "g": ("group",), "t": ("topic",),
         "mg": ("message_group",)}
"""What each kind of identity in a counterexample is named by."""


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


def _verdict(bad: int, noisy: int = 0) -> str:
    return "fail" if bad else ("inconclusive" if noisy else "pass")


MSG_AND_GROUP = {"m": "msg", "g": "g"}


def _at(time: str, ids: dict[str, str]) -> dict[str, str]:
    """Every identity in ``ids`` named by the one row at ``time``."""
    return {column: time for column in ids}
