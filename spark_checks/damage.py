"""What the checks do with a log they cannot read whole (issue 55): ``rmqc check`` never ends with a
traceback and nothing written.

- **Damaged parts.** Before Spark reads a local log, every part's footer is opened (``scan_parts``): a part
  whose footer does not read (cut short, garbage, empty) or that lacks a required column the other parts
  have is set aside. A part whose footer reads but whose pages do not fails Spark's scan; the failure names
  the file, which is then set aside and the log loaded again (``load_setting_aside``). Each part set aside
  is an entry of the result's ``damaged_parts``: ``{"path", "bytes", "rows", "error"}`` (``rows`` from the
  footer, null when it does not read; ``error`` one line). The other parts are checked. A check that needs
  every row (``NEEDS_EVERY_ROW``: a row it does not see can read as a violation) is then inconclusive,
  naming the parts and its reason, its verdict over the rows read kept in ``detail``; the others keep their
  verdicts, judged over the rows read (a violation they count is in those rows). The run does not pass.
- **Input errors.** A log that cannot be checked at all (missing or mistyped columns, empty, every row
  quarantined, every part damaged, an unreadable manifest, a profile the checks do not know) still gets a
  result (``input_error_result``): every check asked for is inconclusive, and ``input_errors`` holds
  ``{"error": one line, "columns": [...]}`` (``columns`` for a column error only).
- **A check that raises** is inconclusive (``failed_check``), its ``detail.error`` naming the exception's
  type and message (``{"type", "message"}``; a JVM exception's message is its root cause's ``Class: message``);
  the other checks run.

``checks.checked`` is ``run_checks`` made total; ``exit_code`` is ``rmqc check``'s: 0 every check passed, 1 a check
failed or is inconclusive (parts set aside, a check raised), 2 an input error (the log was not checked).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .loading import REQUIRED, CheckInputError, ColumnError, Loaded, load
from .verdicts import CheckResult, Examples

NEEDS_EVERY_ROW = {
    "no_loss": "a delivery in a part set aside reads as a loss (and a send there hides one)",
    "order": "a first delivery in a part set aside makes a later one read as the message's first",
    "retry_intervals": "a delivery in a part set aside stretches the wait before the next one",
    "dlq_at_max": "deliveries or a DLQ in a part set aside read as a DLQ off the maximum or a maximum without one",
}
"""The checks a missing row can make fail (issue 55): inconclusive when parts are set aside. The others count
violations the rows read hold (a duplicate, an extra APPLY, a delivery after a DLQ, an early first delivery):
rows set aside can hide one but not make one up."""
TASK_LOGGERS = ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager")
"""The JVM's loggers that print a failed task's stack trace: quiet while the log is loaded (the failure is
reported in one line)."""
NOT_DAMAGE = ("OutOfMemoryError", "InterruptedException", "ClosedByInterruptException", "TaskKilledException",
              "SparkOutOfMemoryError")
"""Causes of a failed read that are the run's, not the part's (Spark names the file it was reading whatever
failed): such a failure is raised, no part set aside."""
NAMED_PARTS = 3
"""Parts named in a check's reason; the result's ``damaged_parts`` names them all."""


def one_line(text: Any, limit: int = 300) -> str:
    """The first non-empty line of ``text``, at most ``limit`` characters."""
    line = next((part.strip() for part in str(text).splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def root_cause(exc: BaseException) -> str:
    """``Type: message`` of the exception's deepest cause, in one line (a JVM exception's, through Py4J)."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            while java.getCause() is not None:
                java = java.getCause()
            return one_line(f"{java.getClass().getSimpleName()}: {java.getMessage()}")
        except Exception:  # the JVM is gone: the Python side's text
            pass
    return one_line(f"{type(exc).__name__}: {exc}")


# ---- the parts of a log and their footers ----------------------------------------------------------

def _hidden(name: str) -> bool:
    """Names Spark's file listing skips (``InMemoryFileIndex.shouldFilterOutPathName``)."""
    return ((name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")) \
        and name not in ("_metadata", "_common_metadata")


def parts(path: str | Path) -> list[Path]:
    """The files Spark reads for ``path`` (a file or a folder), in name order; none for a path that is not local."""
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    found: list[Path] = []
    for child in sorted(root.iterdir()):
        if _hidden(child.name):
            continue
        found.extend(parts(child) if child.is_dir() else [child])
    return found


def _footer(file: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    entry: dict[str, Any] = {"path": str(file), "bytes": file.stat().st_size, "rows": None, "error": None}
    try:
        with pq.ParquetFile(file) as opened:
            entry["rows"], entry["columns"] = opened.metadata.num_rows, set(opened.schema_arrow.names)
    except Exception as exc:
        entry["error"] = f"footer does not read: {root_cause(exc)}"
    return entry


def scan_parts(path: str | Path) -> tuple[list[str], list[dict[str, Any]]]:
    """(every part Spark would read, the damaged ones) from their footers: one that does not read, or that lacks
    a required column another part has (Spark would read it as nulls, or take its schema for the log's). A
    column no part has is the whole log's (``_read``'s input error)."""
    files = parts(path)
    with ThreadPoolExecutor(8, thread_name_prefix="rmqc-footer") as pool:
        footers = list(pool.map(_footer, files))
    columns = set().union(*(f["columns"] for f in footers if f["error"] is None))
    damaged = []
    for f in footers:
        lacking = sorted(c for c in REQUIRED if c in columns and c not in f.get("columns", columns))
        if f["error"] is None and lacking:
            f["error"] = f"lacks column {', '.join(lacking)}, which the other parts have"
        if f["error"] is not None:
            damaged.append({k: f[k] for k in ("path", "bytes", "rows", "error")})
    return [str(f) for f in files], damaged


def part_of(exc: BaseException, candidates: list[str]) -> str | None:
    """The part a failed read names (Spark's FAILED_READ_FILE: 'Encountered error while reading file
    file:///…/part-00002.parquet'), the longest that matches; None when it names none of ``candidates`` or the
    failure is the run's (``NOT_DAMAGE``)."""
    text = str(exc)
    java = getattr(exc, "java_exception", None)
    try:
        while java is not None:
            text += "\n" + str(java.getMessage())
            java = java.getCause()
    except Exception:
        pass
    if any(cause in text for cause in NOT_DAMAGE):
        return None
    named = [c for c in candidates if c in text]
    return max(named, key=len) if named else None


@contextmanager
def quiet_task_errors(spark) -> Iterator[None]:
    """The JVM's failed-task stack traces (``TASK_LOGGERS``) off while the log is loaded, as they were after;
    nothing changes where the loggers cannot be reached (no JVM on this side)."""
    restore: list[Callable[[], None]] = []
    try:
        jvm = spark.sparkContext._jvm
        log4j = jvm.org.apache.logging.log4j
        context = log4j.LogManager.getContext(False)
        config = context.getConfiguration()
        for name in TASK_LOGGERS:
            if config.getLoggers().containsKey(name):
                level = log4j.LogManager.getLogger(name).getLevel()
                restore.append(lambda name=name, level=level: log4j.core.config.Configurator.setLevel(name, level))
            else:
                restore.append(lambda name=name: (config.removeLogger(name), context.updateLoggers()))
            log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    except Exception:
        pass
    try:
        yield
    finally:
        for undo in restore:
            try:
                undo()
            except Exception:
                pass


class DamagedLog(CheckInputError):
    """Every part of the log is damaged (issue 55): ``damaged`` lists them as ``damaged_parts`` does."""

    def __init__(self, message: str, damaged: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.damaged = damaged


def load_setting_aside(spark, path: str, quarantine_dir: Path | None,
                       say: Callable[[str], None]) -> tuple[Loaded, list[dict[str, Any]]]:
    """``load`` over the parts that read: the damaged ones by their footers first (``scan_parts``), then each
    part a failed scan names, set aside and the log loaded again. Returns the loaded log and the parts set
    aside; a failure that names no part is raised as it is."""
    files, damaged = scan_parts(path)
    for d in damaged:
        say(f"set aside {d['path']}: {d['error']}")
    readable = [f for f in files if f not in {d["path"] for d in damaged}]
    while True:
        if files and not readable:
            raise DamagedLog(f"{path}: every part of the log is damaged ({len(damaged)} set aside)", damaged)
        try:
            with quiet_task_errors(spark):
                return load(spark, path, quarantine_dir, readable if damaged else None), damaged
        except CheckInputError:
            raise
        except Exception as exc:
            part = part_of(exc, readable)
            if part is None:
                raise
            footer = _footer(Path(part))  # it read: the rows it holds are known
            entry = {"path": part, "bytes": footer["bytes"], "rows": footer["rows"],
                     "error": f"does not read: {root_cause(exc)}"}
            damaged.append(entry)
            readable.remove(part)
            say(f"set aside {part}: {entry['error']}")


# ---- the verdicts ------------------------------------------------------------------------------------

def _named(damaged: list[dict[str, Any]]) -> str:
    names = [Path(d["path"]).name for d in damaged[:NAMED_PARTS]]
    more = f" and {len(damaged) - NAMED_PARTS} more" if len(damaged) > NAMED_PARTS else ""
    return f"{len(damaged)} damaged part{'s' if len(damaged) > 1 else ''} set aside ({', '.join(names)}{more})"


def judged_with_damage(checks: list[dict[str, Any]], damaged: list[dict[str, Any]]) -> None:
    """The checks' entries (as written) once parts were set aside: a check of ``NEEDS_EVERY_ROW`` inconclusive,
    naming the parts and its reason, its verdict over the rows read kept (``detail.verdict_over_rows_read``);
    the others keep theirs, noted as judged over the rows read (``detail.damage``)."""
    if not damaged:
        return
    parts_named = _named(damaged)
    for c in checks:
        reason = NEEDS_EVERY_ROW.get(c["name"])
        if reason is None:
            c["detail"]["damage"] = f"judged over the rows read; {parts_named}"
        elif "error" not in c["detail"]:  # a check that raised keeps its own reason
            c["detail"]["verdict_over_rows_read"] = c["verdict"]
            c["detail"]["inconclusive"] = f"{parts_named}: {reason}"
            c["verdict"] = "inconclusive"


def failed_check(name: str, exc: BaseException) -> CheckResult:
    """An inconclusive verdict for a check that raised (issue 55), naming the exception."""
    message = root_cause(exc) if getattr(exc, "java_exception", None) is not None else one_line(exc)
    error = {"type": type(exc).__name__, "message": message}
    return CheckResult(name, "inconclusive", [], {}, Examples([], {}, {}, []),
                       {"error": error, "inconclusive": f"the check raised {error['type']}: {error['message']}"})


def input_error_result(path: str, exc: BaseException, names: list[str], profile: str | None = None) -> dict[str, Any]:
    """The result of a log the checks could not read (issue 55): every check of ``names`` inconclusive, naming
    the error; ``input_errors`` the error and the columns it names."""
    error = one_line(exc) if isinstance(exc, CheckInputError) else f"the log could not be loaded: {root_cause(exc)}"
    entry: dict[str, Any] = {"error": error}
    if isinstance(exc, ColumnError):
        entry["columns"] = exc.columns
    verdicts = [{"name": n, "verdict": "inconclusive", "spec": [], "counts": {}, "counterexamples": [],
                 "detail": {"inconclusive": f"not checked: {error}"}} for n in names]
    return {"input": str(path), "profile": profile, "rows": None, "quarantined": None, "quarantine_reasons": {},
            "checks": verdicts, "passed": False, "damaged_parts": list(getattr(exc, "damaged", [])),
            "input_errors": [entry]}


def exit_code(result: dict[str, Any]) -> int:
    """``rmqc check``'s exit code: 2 an input error (nothing checked), 0 every check passed, else 1."""
    if result.get("input_errors"):
        return 2
    return 0 if result["passed"] else 1
