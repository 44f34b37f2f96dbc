"""``make real-matrix``: every covered release × every SDK target that can reach it, the full suites, one run folder
each, then ``rmqc report`` over all of them (the release × SDK matrix: HTML, JSON, JUnit), the wall time per
release, and per 5.x release a soak through the Python SDK checked by ``rmqc check`` (the nightly Spark
validation, on real brokers) and a faulted soak of a two-master cluster under a nemesis (issue 50: recovery times
and the checks, ``faulted-soak-V.json``). The matrix's JSON and each soak's check result are copied under ``docs/real-matrix/``
for readers; the HTML and the event logs stay in the output folder (build output).

A release whose jars the registry does not serve whole (4.9.8's name server and broker, 5.1.4's proxy) is built
from its source release on Maven Central (``adapters.release_jars.build_from_source``); what cannot be had either
way is listed with the reason. This is a bench, not CI: a whole run takes about two hours (a faulted soak about 15 minutes a 5.x release). A run of some
releases (``--releases``) keeps what earlier runs wrote of the others, and the matrix covers every run folder.

    python bench/real_matrix.py [--releases 5.0.0,5.5.0] [--sdks python,cpp4x] [--budget 30] [--soak 180s]
        [--faulted-soak 10m] [--serve]

``--serve``: every SDK against one ``rmqc serve`` too (time scale 0.01, folders ``serve-SDK``), so the matrix has a
column per SDK under each server: the reference beside the real release.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters import release_jars  # noqa: E402
from spec import versions  # noqa: E402

SDKS = {"python": ("grpc-5.x", "the official Python 5.x SDK through the release's proxy", {}),
        "nodejs": ("grpc-5.x", "the official Node.js 5.x SDK through the release's proxy", {"RMQC_RELEASE_SDK": "nodejs"}),
        "java5x": ("grpc-5.x", "the official Java 5.x SDK (rocketmq-client-java) through the release's proxy",
                   {"RMQC_RELEASE_SDK": "java"}),
        "go": ("grpc-5.x", "the official Go 5.x SDK through the release's proxy", {"RMQC_RELEASE_SDK": "go"}),
        "cpp4x": ("remoting-4.x", "the 4.x SDK (rocketmq-client-python over the C++ client) through its name server", {}),
        "java4x": ("remoting-4.x", "the Java 4.x SDK (rocketmq-client) through its name server",
                   {"RMQC_RELEASE_SDK_4X": "java"})}
"""The SDK targets a ``release:V`` run can drive: the profile that selects them and the environment that picks the
SDK (``adapters.release``)."""


def run(command: list[str], log: Path, env: dict[str, str] | None = None, timeout_s: float = 7200) -> int:
    """A command with its output in ``log``; its exit code (124 when it outlasted ``timeout_s``)."""
    with log.open("w") as sink:
        try:
            return subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT, timeout=timeout_s,
                                  env={**os.environ, **(env or {})}).returncode
        except subprocess.TimeoutExpired:
            sink.write(f"\n(stopped after {timeout_s:.0f} s)\n")
            return 124


def rmqc(*args: str) -> list[str]:
    return [sys.executable, "-m", "rmqc.cli", *args]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", default=",".join(versions.COVERED))
    parser.add_argument("--sdks", default=",".join(SDKS))
    parser.add_argument("--budget", type=float, default=30,
                        help="wall seconds one test may take (30: a release's full run within 15 minutes)")
    parser.add_argument("--soak", default="180s", help="soak duration per 5.x release (0 to skip)")
    parser.add_argument("--faulted-soak", default="10m",
                        help="per 5.x release, a soak of a two-master SYNC_FLUSH cluster with a broker killed and "
                             "restarted, or paused, every 60 s (issue 50; 0 to skip)")
    parser.add_argument("--workload", default=str(ROOT / "bench" / "workloads" / "real-release.yaml"),
                        help="the soak's workload (retries, FIFO and transactions, so the checks have work)")
    parser.add_argument("--out", default=str(ROOT / "reports" / "out" / "real-matrix"))
    parser.add_argument("--docs", default=str(ROOT / "docs" / "real-matrix"))
    parser.add_argument("--serve", action="store_true", help="run every SDK against rmqc serve as well")
    args = parser.parse_args(argv)
    out, docs = Path(args.out), Path(args.docs)
    out.mkdir(parents=True, exist_ok=True)
    docs.mkdir(parents=True, exist_ok=True)
    sdks = [sdk for sdk in args.sdks.split(",") if sdk]  # --sdks "": the soak alone
    index_path = docs / "index.json"  # a run of some releases keeps what earlier runs wrote of the others
    index: dict[str, dict] = json.loads(index_path.read_text()) if index_path.exists() else {}
    for release in [r for r in args.releases.split(",") if r]:  # --releases "": rmqc serve alone (--serve)
        started = time.monotonic()
        # what this run does not redo (another SDK's run, the soak) is kept from the last one
        entry: dict = index.setdefault(release, {"runs": {}, "skipped": {}, "soak": None})
        try:
            jars = release_jars.resolve(release, lambda line: print(f"  {line}", flush=True))
        except release_jars.ReleaseUnavailable as exc:
            entry["skipped"] = {sdk: str(exc) for sdk in sdks}
            print(f"{release}: not run: {exc}", flush=True)
            continue
        expectations = ROOT / "expectations" / f"rocketmq-{release}.yaml"
        for sdk in sdks:
            entry["skipped"].pop(sdk, None)
            if sdk not in SDKS:
                entry["skipped"][sdk] = f"unknown SDK {sdk!r} (known: {', '.join(SDKS)})"
                continue
            profile, _, sdk_env = SDKS[sdk]
            if profile == "grpc-5.x" and not jars.has("proxy"):
                entry["skipped"][sdk] = jars.missing.get("proxy", "no proxy before 5.0.0")
                continue
            folder = out / f"{release}-{sdk}"
            shutil.rmtree(folder, ignore_errors=True)
            command = rmqc("run", "--target", f"release:{release}", "--profile", profile, "--budget", str(args.budget),
                           "--out", str(folder), *(["--expectations", str(expectations)] if expectations.exists() else []))
            t0 = time.monotonic()
            folder.mkdir(parents=True)
            code = run(command, folder / "run.log", env=sdk_env)
            entry["runs"][sdk] = {"exit": code, "seconds": round(time.monotonic() - t0, 1)}
            if (folder / "summary.json").exists():
                entry["runs"][sdk].update(verdict_counts(folder / "summary.json"))
            print(f"{release} {sdk}: exit {code} in {entry['runs'][sdk]['seconds']:.0f} s: "
                  f"{entry['runs'][sdk].get('verdicts', {})}", flush=True)
        if args.soak not in ("0", "0s") and jars.has("proxy"):
            entry["soak"] = soak(release, out, docs, args.soak, Path(args.workload))
        if args.faulted_soak not in ("0", "0s") and jars.has("proxy"):
            entry["faulted_soak"] = faulted_soak(release, out, docs, args.faulted_soak, Path(args.workload))
        entry["seconds"] = round(time.monotonic() - started, 1)
        print(f"{release}: {entry['seconds'] / 60:.1f} min", flush=True)
    if args.serve:
        index["serve"] = {"runs": serve_runs(out, sdks, args.budget), "skipped": {}, "soak": None}
    runs = sorted(folder for folder in out.iterdir() if (folder / "summary.json").exists()
                  and folder.name.split("-")[0] in index)  # every release's runs, the earlier ones too
    if runs:
        code = run(rmqc("report", *map(str, runs), "--out", str(out / "matrix")), out / "report.log")
        if code == 0 and (out / "matrix" / "matrix.json").exists():
            shutil.copy(out / "matrix" / "matrix.json", docs / "matrix.json")
        # the six SDKs under the newest release and rmqc serve, rendered in headless Chromium (when all twelve ran)
        code = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "-m", "real_release",
                    str(ROOT / "tests" / "test_sdk_release_matrix.py")], out / "matrix-render.log",
                   env={"RMQC_MATRIX_RUNS": str(out)})
        print(f"the SDK x server matrix in Chromium: exit {code} ({out / 'matrix-render.log'})", flush=True)
    index_path.write_text(json.dumps(dict(sorted(index.items())), indent=2) + "\n")
    print(f"matrix: {out / 'matrix' / 'matrix.html'}; summaries in {docs}")
    return 0


SERVE_TARGETS = {"python": "grpc://{grpc}", "nodejs": "nodejs://{grpc}", "java5x": "java://{grpc}",
                 "go": "go://{grpc}", "cpp4x": "remoting://{namesrv}", "java4x": "java-remoting://{namesrv}"}
"""Each SDK's target against ``rmqc serve`` (its gRPC endpoint, its name server)."""


def serve_runs(out: Path, sdks: list[str], budget: float) -> dict:
    """Each SDK's suites against one ``rmqc serve`` at time scale 0.01 (its clock compressed as ``make test`` runs it)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from serving import namesrv_of, start_serve, stop_serve

    process, grpc = start_serve(0.01)
    namesrv = namesrv_of(process)
    runs: dict = {}
    try:
        for sdk in sdks:
            profile = SDKS[sdk][0]
            folder = out / f"serve-{sdk}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            target = SERVE_TARGETS[sdk].format(grpc=grpc, namesrv=namesrv)
            t0 = time.monotonic()
            code = run(rmqc("run", "--target", target, "--profile", profile, "--budget", str(min(budget, 20)),
                            "--out", str(folder)), folder / "run.log", env={"RMQC_REALTIME_EXAMPLES": "2"})
            runs[sdk] = {"exit": code, "seconds": round(time.monotonic() - t0, 1)}
            if (folder / "summary.json").exists():
                runs[sdk].update(verdict_counts(folder / "summary.json"))
            print(f"rmqc serve {sdk}: exit {code} in {runs[sdk]['seconds']:.0f} s: {runs[sdk].get('verdicts', {})}",
                  flush=True)
    finally:
        stop_serve(process)
    return runs


def verdict_counts(summary_path: Path) -> dict:
    """A run's behaviours by verdict (an expected failure counted apart from an unexpected one) and its gate."""
    summary = json.loads(summary_path.read_text())
    gate = summary.get("gate") or {}
    expected = {e["id"] for e in gate.get("expected_failures", [])}
    counts: dict[str, int] = {}
    for sid, behaviour in summary["behaviours"].items():
        verdict = behaviour["verdict"]
        verdict = "expected failure" if verdict == "fail" and sid in expected else verdict
        counts[verdict] = counts.get(verdict, 0) + 1
    return {"verdicts": counts, "gate_passed": gate.get("passed"),
            "unexpected": [u["id"] for u in gate.get("unexpected_failures", []) + gate.get("unexpected_passes", [])]}


def soaked(release: str, folder: Path, duration: str, workload: Path, *extra: str) -> tuple[dict, Path | None]:
    """``rmqc soak`` of the release into ``folder`` (with ``extra`` arguments), then ``rmqc check`` of its log: the
    exit codes, and the check's result.json when it was written."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    log = folder / "events"
    code = run(rmqc("soak", "--target", f"release:{release}", *extra, "--duration", duration, "--workload",
                    str(workload), "--out", str(log)),
               folder / "soak.log", env={"RMQC_RELEASE_HOME": str(folder)})
    result: dict = {"soak_exit": code}
    if code != 0:
        return result, None
    checked = folder / "checks"
    result["check_exit"] = run(rmqc("check", str(log), "--out", str(checked)), folder / "check.log",
                               env={"SPARK_LOCAL_IP": "127.0.0.1"})
    return result, (checked / "result.json") if (checked / "result.json").exists() else None


def soak(release: str, out: Path, docs: Path, duration: str, workload: Path) -> dict:
    """Soak the release through the Python SDK, then Spark-check the log; the check's result goes to docs/."""
    result, checked = soaked(release, out / f"soak-{release}", duration, workload)
    if checked is not None:
        shutil.copy(checked, docs / f"soak-checks-{release}.json")
    print(f"{release} soak: {result}", flush=True)
    return result


FAULTED_CLUSTER = "2m,sync-flush"
FAULTED_NEMESIS = "kill,pause,every=60s,down=10s,seed=1"
"""The faulted soak's cluster and schedule (issue 50): two masters, each send answered once on disk, a broker
SIGKILLed and started again on its store or SIGSTOPped for 10 s, one a minute, the kinds in turn (seed 1 replays
it)."""


def faulted_soak(release: str, out: Path, docs: Path, duration: str, workload: Path) -> dict:
    """Soak a two-master cluster of the release under the nemesis, Spark-check the log, and write what a reader of
    docs/real-matrix/ needs (topology, schedule, recovery times, the checks) as ``faulted-soak-V.json``."""
    folder = out / f"faulted-soak-{release}"
    result, checked = soaked(release, folder, duration, workload, "--cluster", FAULTED_CLUSTER,
                             "--nemesis", FAULTED_NEMESIS)
    if checked is not None:
        statement = faulted_statement(release, duration, workload, folder / "events" / "_soak.json", checked)
        (docs / f"faulted-soak-{release}.json").write_text(json.dumps(statement, indent=2) + "\n")
        result["passed"] = statement["checks"]["passed"]
        result["recovery"] = {k: statement["nemesis"]["recovery"].get(k)
                              for k in ("faults", "recovered", "p50_ms", "p99_ms", "max_ms")}
    print(f"{release} faulted soak: {result}", flush=True)
    return result


def faulted_statement(release: str, duration: str, workload: Path, manifest_path: Path, result_path: Path) -> dict:
    """The committed record of one faulted soak: its manifest's topology, nemesis (schedule, what was caused,
    recovery times) and stats beside the checks' result."""
    manifest = json.loads(manifest_path.read_text())
    nemesis = manifest.get("nemesis") or {}
    return {"release": release, "topology": nemesis.get("topology"), "nemesis": nemesis,
            "soak_stats": manifest.get("stats"), "duration": duration, "workload": workload.name,
            "time_scale": manifest.get("time_scale"), "stalls": {k: v for k, v in (manifest.get("stalls") or {}).items()
                                                                 if k != "spans"},
            "checks": json.loads(result_path.read_text())}


if __name__ == "__main__":
    sys.exit(main())
