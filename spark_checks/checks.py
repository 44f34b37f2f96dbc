"""PySpark checks over an event log (v1). Each check is a function from the log to a verdict with
counts and counterexamples (Jepsen-style).

This module is the engine: the registry of the checks (``CHECKS``) and of what each simulated fault is
caught by, the SQL settings the checks run with, ``run_checks`` (read the log once, run the checks
concurrently, name their counterexamples), the soak manifest beside a log, and the written result. The
parts live beside it: how the log is read (``loading``), results, verdicts and counterexamples
(``verdicts``), the tables the checks share (``tables``), and one module per family of checks
(``delivery_checks``, ``timing_checks``, ``dlq_checks``). Names other code imports from here are
re-exported (``__all__``).
"""
from __future__ import annotations

import itertools
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from time import perf_counter
from typing import Any, Callable, Iterator

from history.profiles import BROKER_PROFILES, GRPC_5X
from spec import versions

from .damage import (NEEDS_EVERY_ROW, failed_check, input_error_result, judged_with_damage, load_setting_aside,
                     root_cause)
from .delivery_checks import check_duplicates, check_exactly_once, check_no_loss, check_order
from .dlq_checks import check_dlq, check_nothing_after_dlq
from .loading import MESSAGE_KINDS, CheckInputError, _names
from .timing_checks import check_delay_accuracy, check_retry_intervals
from .verdicts import COUNTEREXAMPLES, CheckResult, Tolerance

__all__ = [
    # the engine
    "CHECKS", "CONCURRENCY", "CONFIGURATION_FREE", "FAULT_CHECK", "FAULT_COUNT", "MANIFEST", "TUNING",
    "checked", "read_manifest", "run_checks", "write_result",
    # re-exported from loading, verdicts and the check modules: what other code imports from here, and the checks
    "COUNTEREXAMPLES", "MESSAGE_KINDS", "CheckInputError", "CheckResult", "Tolerance",
    "check_delay_accuracy", "check_dlq", "check_duplicates", "check_exactly_once", "check_no_loss",
    "check_nothing_after_dlq", "check_order", "check_retry_intervals",
]


TUNING = {
    "spark.sql.inMemoryColumnarStorage.compressed": "false",   # numbers only: compressing costs more than it saves
    "spark.sql.execution.replaceHashWithSortAgg": "true",      # stream aggregates over the sorted cache
    "spark.sql.requireAllClusterKeysForCoPartition": "false",  # joins on (message, ...) over tables partitioned by message
    # the plans are fixed: every table is cached or partitioned by message already, and the one small join
    # side is broadcast by name; planning each stage again as it ends costs more than it finds
    "spark.sql.adaptive.enabled": "false",
}
"""SQL settings the checks run with (restored afterwards)."""


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
    release, time scale, each group's retry ladder and maximum deliveries, crash windows.

    Every check's counts hold ``indeterminate`` (issue 50, item 4): the log's sends that ended SEND_UNKNOWN, whose
    outcome their client could not know (a broker killed or stalled, a connection reset). No check takes one for
    an acknowledged send: ``no_loss`` owes only SEND_OKs, and a client's retries under one id (a SEND_UNKNOWN or
    a send of more than one attempt) may have stored a message twice, which ``duplicates``, ``nothing_after_dlq``,
    ``retry_intervals`` and ``delay_accuracy`` allow for (``tables.client_retried``).

    Issue 55 (``damage``): damaged parts are set aside and listed (``damaged_parts``; the checks that need
    every row inconclusive, the run not passed), a check that raises is inconclusive naming the exception,
    and counterexamples that cannot be named stay unnamed (``naming_error``). A log that cannot be checked
    at all still raises ``CheckInputError``; ``checked`` turns it into a result to write."""
    unknown = [c for c in (checks or ()) if c not in CHECKS]
    if unknown:
        raise CheckInputError(f"unknown check {', '.join(unknown)}; known: {', '.join(CHECKS)}")
    known = " and ".join(BROKER_PROFILES)
    if profile is not None and profile not in BROKER_PROFILES:
        raise CheckInputError(f"profile {profile!r}: the checks know {known}")
    say = progress or (lambda line: None)
    started = perf_counter()
    with _tuned(spark):
        loaded, damaged = load_setting_aside(spark, path, (out / "quarantine") if out else None, say)
        say(f"loaded {loaded.stats.get('rows', '?')} rows in {perf_counter() - started:.1f} s"
            + (" (cached on disk: larger than the memory for storage)" if loaded.cached_on_disk else ""))
        profile = profile or loaded.profile or GRPC_5X
        stated = manifest if manifest is not None else read_manifest(path)
        ctx = {"spark": spark, "profile": profile, "tolerance": tolerance or Tolerance(),
               "allow_duplicates": allow_duplicates, "tables": {}, "lock": threading.Lock(),
               "stated": loaded.stated, "acks": loaded.acks, "on_disk": loaded.cached_on_disk,
               "outcomes": loaded.outcomes,
               **_manifest_context(spark, stated)}
        try:
            if profile not in BROKER_PROFILES:
                raise CheckInputError(f"profile {profile!r} (named by the log): the checks know {known}")
            chosen = [(name, fn) for name, fn in CHECKS.items() if checks is None or name in checks]
            ended = itertools.count(1)

            def run(chosen_check: tuple[str, Callable]) -> CheckResult:
                name, fn = chosen_check
                began = perf_counter()
                try:
                    result = fn(loaded.events, ctx)
                except Exception as exc:  # inconclusive, naming the exception; the others run (issue 55)
                    result = failed_check(name, exc)
                # every check says how many sends it saw end indeterminate (issue 50, item 4): owed to no one,
                # their deliveries judged as the log allows (INDETERMINATE)
                result.counts.setdefault("indeterminate", loaded.outcomes["indeterminate"])
                verdict = result.verdict.upper()
                if damaged and name in NEEDS_EVERY_ROW and "error" not in result.detail:
                    verdict = f"INCONCLUSIVE ({verdict} over the rows read)"
                why = f": {result.detail['inconclusive']}" if "error" in result.detail else ""
                say(f"[{next(ended)}/{len(chosen)}] {result.name} {verdict} ({perf_counter() - began:.1f} s){why}")
                return result

            with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="rmqc-check") as pool:
                results = list(pool.map(run, chosen))
            try:
                names = _names(loaded.raw, [r.counterexamples for r in results])
                naming: dict[str, str] = {}
            except Exception as exc:  # the counterexamples stay unnamed; the verdicts stand (issue 55)
                names, naming = {}, {"naming_error": root_cause(exc)}
        finally:
            for table in (*ctx["tables"].values(), loaded.events):
                table.unpersist()
    for r in results:
        r.counterexamples = r.counterexamples.named(names)
    entries = [asdict(r) for r in results]
    judged_with_damage(entries, damaged)
    return {"input": str(path), "profile": profile, **loaded.stats, "checks": entries,
            "passed": not damaged and all(r["verdict"] == "pass" for r in entries),
            "damaged_parts": damaged, "input_errors": [], **naming,
            **({"manifest": {k: v for k, v in stated.items() if k != "workload"}} if stated else {})}


def checked(spark, path: str, out: Path | None = None, **kwargs: Any) -> dict[str, Any]:
    """``run_checks`` made total (issue 55): a log it cannot check, or whose load fails another way (named as
    ``the log could not be loaded: Type: message``), gives ``damage.input_error_result`` (every check asked
    for inconclusive), not an exception."""
    try:
        return run_checks(spark, path, out, **kwargs)
    except Exception as exc:  # a check that raises is caught in run_checks: this is the load's failure
        asked = kwargs.get("checks")
        names = [n for n in CHECKS if asked is None or n in asked] or list(CHECKS)
        return input_error_result(path, exc, names, kwargs.get("profile"))


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
    the hash its rows carry, crash windows with that hash, the soak process's own stalls (``rmqc.stall_probe``)."""
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
            "crash_windows": [{**w, "g": hashes[w["group"]]} for w in windows],
            "stalls": [(int(s["from_ms"]), int(s["to_ms"])) for s in dict(stated.get("stalls") or {}).get("spans", [])]}


def write_result(result: dict[str, Any], out: Path) -> None:
    from .report import write_html

    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2, default=str))
    write_html(result, out / "index.html")
