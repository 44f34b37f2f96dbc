"""Runs mutants: each one written into a scratch copy of ``reference_impl`` and judged by the unmodified suites.

Two ways a suite can see a mutant, the two channels:

- ``target``: the mutant is served as a driver target (``drivers/reference_driver.py`` with the scratch copy
  first on its ``PYTHONPATH``); the suites, their oracle and the reference they compare with run from the
  checkout and judge it as any vendor's implementation;
- ``vectors``: the suites of the reference's own rules (marked ``reference_rule``: the spec's vectors as data,
  the rules stated again from the Java, the JVM and Guava oracles) import the mutated rules themselves;
- ``release``: the differential suite through the driver target once more, as ``EARLIER_RELEASE``.

A mutant is killed when a channel's run fails or outlives its timeout; it survives when every channel
that selects tests for it passes. Runs go on in ``jobs`` worker threads, each with a scratch copy of its own.
"""
from __future__ import annotations

import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .coverage_map import CoverageMap
from .operators import Mutant, apply, mutants
from .selection import SuiteTest, keyword, selection, spec_ids_at, suite_tests

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reference_impl"
SUITES = ROOT / "suites"
EVERY_RULE_MUTANT = ("test_rule_vectors.py", "test_rule_vectors_in_code.py", "test_sql92_grammar.py")
"""Rule suites every rule mutant meets, whatever IDs its code cites: a vector's behaviour is marked at run
time, not in the source, and all of them take a second or two. The other rule suites are chosen by ID."""
EVERY_MUTANT_THROUGH_TARGET = ("test_differential.py",)
"""Target suites every mutant meets, whatever IDs its code cites: they compare whole stories of generated
workloads and programs with the reference's, so any behaviour they reach is theirs."""
EVERY_MODEL_MUTANT = tuple(sorted(p.name for p in SUITES.glob("test_model_*.py")))
"""Rule-channel suites every model mutant meets: the model's own properties (``suites/test_model_*.py``: its
virtual clock, the Kafka pattern, the broker's stored state, handles, clients and transactions, the consumers'
queues and offsets), importing the mutated model from the scratch copy. The stories through the target show the model only where a story's timing or placement shows it; these
pin the clock's order and edges and the bookkeeping under the stories directly (issue 37)."""
EARLIER_RELEASE = "5.0.0"
"""The differential suite is run a second time as this release (``--rmq-target-version``): the model's
branches for releases before the latest (a 5.0.0 long poll that a revived message does not wake, say) are
judged too. 5.0.0 is the release round 2 holds the suites to."""
DEFAULT_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Job:
    """One mutant of one module (``path`` relative to ``reference_impl``)."""

    path: str
    mutant: Mutant

    @property
    def area(self) -> str:
        return area_of(self.path)

    @property
    def key(self) -> str:
        return f"{self.path}:{self.mutant.key}"


@dataclass
class Outcome:
    job: Job
    verdict: str                      # killed | survived | uncovered | equivalent | harness error
    killed_by: str = ""               # the channel, its exit code or "timeout"
    seconds: float = 0.0
    tests: int = 0                    # suite tests selected for it
    diff: str = ""
    reason: str = ""                  # an equivalent mutant's reason
    output: str = field(default="", repr=False)


def area_of(path: str) -> str:
    """``rules/retry4x.py`` -> ``rules.retry4x``."""
    return path.removesuffix(".py").replace("/", ".")


def jobs_for(paths: Iterable[str]) -> list[Job]:
    out = []
    for path in paths:
        out.extend(Job(path, m) for m in mutants((PACKAGE / path).read_text()))
    return out


def module_paths(areas: list[str] | None = None) -> list[str]:
    """The modules of the rules and the model, or those whose area (``rules.retry4x``) starts with one of
    ``areas``."""
    modules = sorted(PACKAGE.glob("rules/*.py")) + sorted(PACKAGE.glob("model/*.py"))
    paths = [str(p.relative_to(PACKAGE)) for p in modules if p.name != "__init__.py"]
    if not areas:
        return paths
    return [p for p in paths if any(area_of(p).startswith(a) for a in areas)]


def unified_diff(job: Job) -> str:
    """The mutant's change as a diff of the module as ``ast.unparse`` writes it, before and after."""
    source = (PACKAGE / job.path).read_text()
    before = ast.unparse(ast.parse(source)).splitlines()
    after = apply(source, job.mutant).splitlines()
    return "\n".join(difflib.unified_diff(before, after, f"a/reference_impl/{job.path}", f"b/reference_impl/{job.path}",
                                          lineterm="", n=1))


class Scratch:
    """A copy of ``reference_impl`` one worker writes its mutants into (bytecode never cached there)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rmqc-mutant-"))
        shutil.copytree(PACKAGE, self.dir / "reference_impl", ignore=shutil.ignore_patterns("__pycache__"))
        self.checkout = Zygote(preload_reference=True)   # the target channel: harness and oracle of the checkout
        self.bare = Zygote(preload_reference=False)      # the vectors channel: the rules imported from here

    def write(self, job: Job) -> None:
        source = (PACKAGE / job.path).read_text()
        (self.dir / "reference_impl" / job.path).write_text(apply(source, job.mutant))

    def run_dir(self, channel: str) -> Path:
        """Where a channel's run through the driver target writes its summary (beside the scratch copy)."""
        return self.dir / f"run-{channel}"

    def restore(self, job: Job) -> None:
        shutil.copyfile(PACKAGE / job.path, self.dir / "reference_impl" / job.path)

    def remove(self) -> None:
        self.checkout.close()
        self.bare.close()
        shutil.rmtree(self.dir, ignore_errors=True)


HARNESS_ERROR = "harness error"
"""A mutant's run through the driver target that ended without a complete ``summary.json``, or with harness errors in
it (issue 55): the gate did not report, so nothing was learnt of the mutant; counted apart, never as killed."""


def summary_problem(scratch: Scratch, channel: str, code: int | None) -> str | None:
    """Why the ``channel`` run of a mutant (through the driver target) did not report, or None: its summary.json is
    missing or invalid, or names harness errors. The vectors channel writes none (the rules run in process); a run
    that outlived its timeout was killed before it could."""
    if channel == "vectors" or code is None or code == 5:
        return None
    from reports.summary import RunSummary, SummaryError

    path = scratch.run_dir(channel) / "summary.json"
    if not path.exists():
        return "no summary.json written"
    try:
        summary = RunSummary.read(path)
    except SummaryError as exc:
        return f"summary.json is not complete: {exc}"[:300]
    if summary.harness:
        first = summary.harness[0]
        return f"{len(summary.harness)} harness errors in summary.json, the first: {first['test']}: {first['reason']}"[:300]
    return None


class BaselineError(RuntimeError):
    """The suites cannot judge mutants: they do not run, or the vectors fail, against the unmutated copy."""


FAILED_TEST = re.compile(r"^FAILED \S+?::(test_\w+)", re.M)


def _argv(files: list[str], kw: str, extra: list[str], stop_at_first: bool = True) -> list[str]:
    return [*files, "-q", *(["-x"] if stop_at_first else []), "-p", "rocketmq_conformance", "-p", "no:cacheprovider",
            "--rootdir", str(SUITES), "--rmq-hypothesis-profile", "mutation", *(["-k", kw] if kw else []), *extra]


class Zygote:
    """A warm pytest process of one worker (``mutation.zygote``): each run is a fork of it."""

    def __init__(self, preload_reference: bool) -> None:
        self.preload_reference = preload_reference
        self.process: subprocess.Popen[str] | None = None

    def run(self, argv: list[str], cwd: Path, path: list[str], timeout_s: float) -> tuple[int | None, str]:
        """One pytest run forked from the warm process; a zygote that died is started again, once."""
        for _ in range(2):
            answer = self._ask(argv, cwd, path, timeout_s)
            if answer:
                data = json.loads(answer)
                return data["code"], data["output"]
            self.process = None
        raise RuntimeError("the mutation zygote exited twice in a row; run with --jobs 1 to see why")

    def _ask(self, argv: list[str], cwd: Path, path: list[str], timeout_s: float) -> str:
        if self.process is None or self.process.poll() is not None:
            flags = ["--preload-reference"] if self.preload_reference else []
            self.process = subprocess.Popen([sys.executable, "-m", "mutation.zygote", *flags], cwd=ROOT, text=True,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                                            start_new_session=True)  # a terminal's Ctrl-C is for rmqc mutate alone
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "path": path,
                                                 "timeout_s": timeout_s}) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return ""
        return self.process.stdout.readline()

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()  # type: ignore[union-attr]
            self.process.wait(10)


class Runner:
    """Judges jobs with the suites; ``progress`` is called after each with (done, total, outcome)."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self.vector_timeout_s = timeout_s
        """The rule suites' own limit: ten times what they take against the unmutated rules (``baseline``), at
        least 30 s, so that a mutant looping in a rule is called killed in seconds, not after ``timeout_s``."""
        self.tests = suite_tests(SUITES)
        self.vector_tests = [t for t in self.tests if t.rule]
        self.coverage: CoverageMap | None = None
        """Which tests ran each model line (``mutation.coverage_map``): a model mutant meets those too."""
        self._spec_cache: dict[tuple[str, int], set[str]] = {}
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        """Set (by Ctrl-C in ``rmqc mutate``): the mutants being judged finish, no new one starts."""

    def selected(self, job: Job) -> list[SuiteTest]:
        key = (job.path, job.mutant.line)
        with self._lock:
            if key not in self._spec_cache:
                self._spec_cache[key] = spec_ids_at((PACKAGE / job.path).read_text(), job.mutant.line)
            ids = self._spec_cache[key]
        return selection(self.tests, ids)

    def target_tests(self, job: Job) -> list[SuiteTest]:
        """The tests that judge ``job`` through the driver target (the rule suites are the other channel): those
        of the IDs its code cites, those that ran its statement (a model mutant, ``covering``) and
        ``EVERY_MUTANT_THROUGH_TARGET``."""
        chosen = set(self.selected(job))
        covering = self.covering(job)
        return [t for t in self.tests if not t.rule and (t in chosen or t.name in covering
                                                         or t.file in EVERY_MUTANT_THROUGH_TARGET)]

    def covering(self, job: Job) -> frozenset[str]:
        """The names of the tests that ran the statement ``job`` changes, for a model mutant when the coverage
        map is loaded; empty otherwise."""
        if self.coverage is None or not job.path.startswith("model/"):
            return frozenset()
        return self.coverage.tests_at(job.path, job.mutant.line)

    def rule_tests(self, job: Job) -> list[SuiteTest]:
        """The rule suites' tests a rule mutant meets in its own process: ``EVERY_RULE_MUTANT`` and those
        of the other rule suites marked with the IDs its code cites; for the model's mutants, the model's own
        properties (``EVERY_MODEL_MUTANT``)."""
        if job.path.startswith("model/"):
            return [t for t in self.vector_tests if t.file in EVERY_MODEL_MUTANT]
        if not job.path.startswith("rules/"):
            return []
        chosen = set(self.selected(job))
        return [t for t in self.vector_tests if t.file in EVERY_RULE_MUTANT or t in chosen]

    def judge(self, job: Job, scratch: Scratch) -> Outcome:
        started = time.monotonic()
        chosen = self.target_tests(job)
        vector_tests = self.rule_tests(job)
        scratch.write(job)
        try:
            verdict, by, output = "uncovered", "", ""
            release_tests = [t for t in chosen if t.file in EVERY_MUTANT_THROUGH_TARGET]
            for channel, tests in (("vectors", vector_tests), ("target", chosen), ("release", release_tests)):
                if not tests:
                    continue
                code, output = self._run(channel, tests, scratch)
                missing = summary_problem(scratch, channel, code)
                if missing is not None:  # the run did not report: the harness's failure, not the mutant's death
                    verdict, by = HARNESS_ERROR, f"{channel}: exit {code}, {missing}"
                    break
                if code is None or code not in (0, 5):
                    verdict, by = "killed", f"{channel}: " + ("timeout" if code is None else f"exit {code}")
                    break
                if code == 0:
                    verdict = "survived"
        finally:
            scratch.restore(job)
        return Outcome(job, verdict, by, time.monotonic() - started, len(chosen) + len(vector_tests),
                       diff="" if verdict == "killed" else unified_diff(job), output=output)

    def _run(self, channel: str, tests: list[SuiteTest], scratch: Scratch, stop_at_first: bool = True,
             timeout_s: float | None = None) -> tuple[int | None, str]:
        files = sorted({str(SUITES / t.file) for t in tests})
        timeout_s = timeout_s or (self.vector_timeout_s if channel == "vectors" else self.timeout_s)
        if channel == "vectors":  # the rules imported from the scratch copy: its directory is the first on the path
            return scratch.bare.run(_argv(files, keyword(tests), ["--import-mode=append"], stop_at_first),
                                    scratch.dir, [str(scratch.dir)], timeout_s)
        release = ["--rmq-target-version", EARLIER_RELEASE] if channel == "release" else []
        out = scratch.run_dir(channel)
        shutil.rmtree(out, ignore_errors=True)
        return scratch.checkout.run(_argv(files, keyword(tests), ["--rmq-target", self._driver(scratch), *release,
                                                                  "--rmq-out", str(out)],
                                          stop_at_first), ROOT, [], timeout_s)

    @staticmethod
    def _driver(scratch: Scratch) -> str:
        """The reference driver with the scratch copy first on its path: the mutant as a driver target."""
        return (f"driver:env PYTHONPATH={scratch.dir}{os.pathsep}{ROOT} PYTHONDONTWRITEBYTECODE=1 "
                f"{sys.executable} drivers/reference_driver.py")

    def baseline(self, jobs: list[Job]) -> list[str]:
        """Run every test the jobs would meet against the unmutated copy (no ``-x``) and leave out the ones
        that fail there, returned by name: a test that fails unmutated would count every mutant as killed.
        The vector suites must pass whole (``BaselineError`` otherwise)."""
        chosen = sorted({t for job in jobs for t in self.target_tests(job)}, key=lambda t: t.name)
        rules = any(job.path.startswith("rules/") for job in jobs)
        own = sorted({t for job in jobs for t in self.rule_tests(job)}, key=lambda t: t.name)
        scratch = Scratch()
        try:
            if rules or own:  # the model's own properties alone when only the model is mutated
                started = time.monotonic()
                code, output = self._run("vectors", self.vector_tests if rules else own, scratch)
                self.vector_timeout_s = min(self.timeout_s, max(30.0, 10 * (time.monotonic() - started)))
                if code not in (0, 5):
                    raise BaselineError(f"the spec's vectors fail against the unmutated rules (exit {code}): "
                                        f"{output[-1500:]}")
            failing: list[str] = []
            if chosen:
                code, output = self._run("target", chosen, scratch, stop_at_first=False, timeout_s=self.timeout_s * 4)
                if code is None:
                    raise BaselineError("the suites did not finish against the unmutated reference in "
                                        f"{self.timeout_s * 4:.0f} s")
                failing = sorted(set(FAILED_TEST.findall(output)))
                if code not in (0, 1, 5) or (code == 1 and not failing):
                    raise BaselineError(f"the suites could not run against the unmutated reference (exit {code}): "
                                        f"{output[-1500:]}")
                release_tests = [t for t in chosen if t.file in EVERY_MUTANT_THROUGH_TARGET]
                if release_tests:
                    code, output = self._run("release", release_tests, scratch, stop_at_first=False,
                                             timeout_s=self.timeout_s * 4)
                    if code not in (0, 5):
                        raise BaselineError(f"the differential suite fails against the unmutated reference as "
                                            f"{EARLIER_RELEASE} (exit {code}): {output[-1500:]}")
        finally:
            scratch.remove()
        self.tests = [t for t in self.tests if t.name not in failing]
        return failing

    def run(self, jobs: list[Job], workers: int, deadline: float | None = None,
            progress: Callable[[int, int, Outcome], None] | None = None) -> tuple[list[Outcome], list[Job]]:
        """Judge ``jobs`` on ``workers`` threads until done or ``deadline`` (monotonic); the jobs not started
        by then are returned apart."""
        pending = list(jobs)
        outcomes: list[Outcome] = []
        skipped: list[Job] = []
        lock = threading.Lock()

        def worker() -> None:
            scratch = Scratch()
            try:
                while True:
                    with lock:
                        if not pending:
                            return
                        job = pending.pop(0)
                        if self.stopping.is_set() or (deadline is not None and time.monotonic() >= deadline):
                            skipped.append(job)
                            continue
                    outcome = self.judge(job, scratch)
                    with lock:  # one progress call at a time: its counts and its line stay whole
                        outcomes.append(outcome)
                        if progress is not None:
                            progress(len(outcomes), len(jobs), outcome)
            finally:
                scratch.remove()

        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(worker) for _ in range(workers)]:
                future.result()
        return outcomes, skipped
