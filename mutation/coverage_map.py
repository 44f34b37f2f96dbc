"""Which suite tests run each line of the model: selection by coverage (issue 37).

Selection by spec ID (``mutation.selection``) is too narrow for the model: a broker method that cites RETRY-5X-10
also serves the stored-state, limit and transaction suites, which never name that ID. So the target suites run
once in process against the reference (``--rmq-target reference``), under ``coverage`` with one context per test
function, and a model mutant is judged by every test that ran its statement as well as by those of its IDs.

The map is build output (``reports/out/mutation/coverage-map.json``), made again when the model or the suites
change (a digest of their sources). The in-process reference runs the same model code as the driver target a
mutant is served through, so the lines it runs are the lines the mutant's tests reach.
"""
from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "reference_impl" / "model"
SUITES = ROOT / "suites"
MAP_PATH = ROOT / "reports" / "out" / "mutation" / "coverage-map.json"
BUILD_TIMEOUT_S = 3600


class CoverageMapError(RuntimeError):
    """The map could not be built: ``coverage`` is missing, or the suites did not run."""


def digest() -> str:
    """What the map depends on: the model's and the suites' sources."""
    h = hashlib.sha256()
    for path in sorted([*MODEL.glob("*.py"), *SUITES.glob("*.py"), *(SUITES / "plugin").glob("*.py")]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def statement_starts(source: str) -> dict[int, int]:
    """Line -> the first line of the innermost statement whose own text (a compound statement's header, not its
    body) holds it: coverage records a statement spread over several lines at its first one, while a mutant is
    keyed by the line of the node it changes."""
    starts: dict[int, int] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        own_end = body[0].lineno - 1 if isinstance(body, list) and body else (node.end_lineno or node.lineno)
        for line in range(node.lineno, own_end + 1):
            if starts.get(line, 0) < node.lineno:  # the innermost: the one that starts last
                starts[line] = node.lineno
    return starts


def statement_line(source: str, line: int) -> int:
    """The first line of the statement ``line`` belongs to (``statement_starts``); ``line`` itself where no
    statement holds it."""
    return statement_starts(source).get(line, line)


@dataclass
class CoverageMap:
    """Module path (relative to ``reference_impl``) -> line -> the names of the suite tests that ran it."""

    lines: dict[str, dict[int, frozenset[str]]]
    digest: str
    _starts: dict[str, dict[int, int]] = field(default_factory=dict, compare=False, repr=False)
    """Each module's ``statement_starts``, read from the checkout once."""

    def tests_at(self, path: str, line: int) -> frozenset[str]:
        """The tests that ran the statement a mutant at ``line`` of ``path`` (of ``reference_impl``) changes."""
        if path not in self._starts:
            self._starts[path] = statement_starts((ROOT / "reference_impl" / path).read_text())
        by_line = self.lines.get(path, {})
        return by_line.get(line, frozenset()) | by_line.get(self._starts[path].get(line, line), frozenset())

    def to_json(self) -> dict[str, object]:
        return {"digest": self.digest,
                "lines": {path: {str(n): sorted(names) for n, names in lines.items()}
                          for path, lines in self.lines.items()}}

    @classmethod
    def from_json(cls, data: dict) -> "CoverageMap":  # type: ignore[type-arg]
        return cls({path: {int(n): frozenset(names) for n, names in lines.items()}
                    for path, lines in data["lines"].items()}, data["digest"])


def _test_name(context: str) -> str | None:
    """``suites.test_retry_5x.test_x`` (coverage's ``test_function`` context) -> ``test_x``."""
    name = context.rsplit(".", 1)[-1]
    return name if name.startswith("test_") else None


def build(progress: Callable[[str], None] = lambda _: None, timeout_s: float = BUILD_TIMEOUT_S) -> CoverageMap:
    """Run the target suites once against the in-process reference under coverage and read the map."""
    try:
        from coverage import CoverageData
    except ImportError as exc:
        raise CoverageMapError("selection by coverage needs the coverage package (pip install coverage)") from exc
    with tempfile.TemporaryDirectory(prefix="rmqc-coverage-") as tmp:
        data_file, rc = Path(tmp) / ".coverage", Path(tmp) / "coveragerc"
        rc.write_text(f"[run]\nsource = {MODEL}\ndynamic_context = test_function\ndata_file = {data_file}\n")
        argv = [sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest",
                *sorted(str(p) for p in SUITES.glob("test_*.py")), "-q", "-p", "rocketmq_conformance",
                "-p", "no:cacheprovider", "--rootdir", str(SUITES), "--rmq-target", "reference",
                "--rmq-hypothesis-profile", "mutation", "-m", "not reference_rule"]
        progress("rmqc mutate: mapping the model's lines to the suite tests that run them (once per change of "
                 "the model or the suites)")
        try:
            done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise CoverageMapError(f"the suites did not finish under coverage in {timeout_s:.0f} s") from exc
        if done.returncode not in (0, 1, 5) or not data_file.exists():
            raise CoverageMapError(f"the suites could not run under coverage (exit {done.returncode}): "
                                   f"{(done.stdout + done.stderr)[-1500:]}")
        data = CoverageData(basename=str(data_file))
        data.read()
        lines: dict[str, dict[int, frozenset[str]]] = {}
        for measured in data.measured_files():
            path = Path(measured).resolve()
            if MODEL not in path.parents:
                continue
            by_line = data.contexts_by_lineno(measured)
            rel = str(path.relative_to(ROOT / "reference_impl"))
            lines[rel] = {n: frozenset(t for t in map(_test_name, contexts) if t) for n, contexts in by_line.items()}
        return CoverageMap(lines, digest())


def load_or_build(path: Path = MAP_PATH, progress: Callable[[str], None] = lambda _: None) -> CoverageMap:
    """The map at ``path`` if it was made from the current sources, else a new one written there."""
    current = digest()
    if path.exists():
        try:
            found = CoverageMap.from_json(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError):
            found = None
        if found is not None and found.digest == current:
            return found
    made = build(progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(made.to_json()))
    return made
