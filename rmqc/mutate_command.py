"""``rmqc mutate``: a mutation run of the suites over the reference's rules and model (issue 22).

Each mutant is written into a scratch copy of ``reference_impl``, served as a driver target and judged by the
unmodified suites of this checkout (``mutation.runner``); the report gives the score per area and every
survivor with its diff (``mutation.report``)."""
from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from pathlib import Path

SMOKE_AREAS = ("rules.retry4x",)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("mutate", help="mutation run of the suites over the reference's rules and model",
                            description=__doc__)
    parser.add_argument("--areas", default="", help="comma-separated areas to mutate, by prefix: rules, model, "
                        "rules.retry4x, model.broker (default: all of reference_impl/rules and reference_impl/model)")
    parser.add_argument("--max", type=int, default=None, metavar="N",
                        help="judge N mutants drawn evenly at random (--seed) instead of all")
    parser.add_argument("--seconds", type=float, default=None, help="start no mutant after this many seconds; "
                        "the ones left are counted as not run (Ctrl-C does the same at once)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants judged at once (default 2, one per core)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds a suite run of one mutant may take; "
                        "longer counts as killed (default 180)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--equivalents", type=Path, default=None,
                        help="the hand-kept file of equivalent mutants (default mutation/equivalent.yaml)")
    parser.add_argument("--fail-under", type=float, default=None, metavar="PERCENT",
                        help="exit 1 when the score is below this")
    parser.add_argument("--again", type=Path, action="append", default=None, metavar="REPORT",
                        help="carry over the kills of an earlier run's mutation.json and judge the rest again; a "
                        "module whose mutants no longer match that report (its source changed) is judged whole; "
                        "give it more than once to carry the kills of several runs (one of the rules, one of the "
                        "model, a run stopped half-way)")
    parser.add_argument("--resume", type=Path, action="append", default=None, metavar="REPORT",
                        help="keep every verdict of an earlier run's mutation.json for the modules whose mutants "
                        "are unchanged and judge only the modules edited since (a survivor is not judged again: "
                        "use --again for that); given more than once, a later report's modules replace an "
                        "earlier one's (a run of a few areas on top of a whole run)")
    parser.add_argument("--rescore", type=Path, default=None, metavar="REPORT",
                        help="run nothing: apply the equivalents file to an earlier run's mutation.json and write the "
                        "report again to --out")
    parser.add_argument("--no-coverage", action="store_true",
                        help="select a model mutant's tests by the spec IDs its code cites only, not also by the "
                             "tests that run its line (the coverage map, reports/out/mutation/coverage-map.json, "
                             "made once per change of the model or the suites)")
    parser.add_argument("--out", type=Path, default=Path("reports/out/mutation"))
    parser.set_defaults(handler=mutate)


def mutate(args: argparse.Namespace) -> int:
    from mutation import report
    from mutation.runner import BaselineError, Runner, jobs_for, module_paths

    areas = [a.strip() for a in args.areas.split(",") if a.strip()]
    paths = module_paths(areas)
    if not paths:
        print(f"rmqc mutate: error: --areas {args.areas!r} names no module of reference_impl/rules or "
              f"reference_impl/model (areas look like rules.retry4x or model.broker)", file=sys.stderr)
        return 2
    try:
        equivalents = report.load_equivalents(args.equivalents or report.EQUIVALENT_FILE)
    except report.EquivalentFileError as exc:
        print(f"rmqc mutate: error: {exc}", file=sys.stderr)
        return 2
    try:
        earlier = {"rescore": report.load_report(args.rescore)} if args.rescore is not None else {}
        if args.again:
            earlier["again"] = report.merged_reports([report.load_report(path) for path in args.again])
        if args.resume:
            earlier["resume"] = report.layered_reports([report.load_report(path) for path in args.resume])
    except report.EquivalentFileError as exc:
        print(f"rmqc mutate: error: {exc}", file=sys.stderr)
        return 2
    if "rescore" in earlier:
        result = report.rescored(earlier["rescore"], equivalents)
        report.write(args.out, result)
        return _summary(args, result)
    jobs = jobs_for(paths)
    carried = []
    if "again" in earlier and "resume" in earlier:
        print("rmqc mutate: error: --again judges an earlier run's survivors again, --resume keeps them: "
              "give one of the two", file=sys.stderr)
        return 2
    if "again" in earlier:
        jobs, carried = report.split_by_earlier(jobs, earlier["again"])
    if "resume" in earlier:
        jobs, carried = report.split_by_module(jobs, earlier["resume"])
    if args.max is not None and args.max < len(jobs):
        jobs = sorted(random.Random(args.seed).sample(jobs, args.max), key=lambda j: j.key)
    runner = Runner(args.timeout)
    if not args.no_coverage and any(job.path.startswith("model/") for job in jobs):
        from mutation.coverage_map import CoverageMapError, load_or_build
        try:
            runner.coverage = load_or_build(progress=lambda line: print(line, file=sys.stderr))
        except CoverageMapError as exc:
            print(f"rmqc mutate: error: {exc}; --no-coverage selects the model's tests by spec ID only",
                  file=sys.stderr)
            return 2
    try:
        left_out = runner.baseline(jobs)
    except BaselineError as exc:
        print(f"rmqc mutate: error: {exc}", file=sys.stderr)
        return 2
    if left_out:
        print(f"rmqc mutate: {len(left_out)} suite tests fail against the unmutated reference and are left out: "
              f"{', '.join(left_out)}", file=sys.stderr)
    started = time.monotonic()
    deadline = started + args.seconds if args.seconds is not None else None
    counts = {"killed": 0, "survived": 0, "uncovered": 0}

    def progress(done: int, total: int, outcome) -> None:  # type: ignore[no-untyped-def]
        counts[outcome.verdict] = counts.get(outcome.verdict, 0) + 1
        elapsed = time.monotonic() - started
        left = (total - done) * elapsed / done
        sys.stderr.write(f"\rrmqc mutate: {done}/{total} judged, {counts['killed']} killed, "
                         f"{counts['survived']} survived, {counts['uncovered']} uncovered, "
                         f"{elapsed / done * args.jobs:.1f} s a mutant, {left / 60:.0f} min left   ")
        sys.stderr.flush()

    def stop(*_: object) -> None:  # Ctrl-C or SIGTERM: finish the mutants in hand, report what was judged
        runner.stopping.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        outcomes, not_run = runner.run(jobs, args.jobs, deadline, progress)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.stderr.write("\n")
    outcomes = carried + outcomes
    report.mark_equivalents(outcomes, equivalents)
    result = report.as_json(outcomes, time.monotonic() - started, args.jobs, len(not_run), left_out)
    report.write(args.out, result)
    return _summary(args, result)


def _summary(args: argparse.Namespace, result: dict) -> int:  # type: ignore[type-arg]
    score = result["score"]
    print(f"rmqc mutate: score {'n/a' if score is None else f'{100 * score:.1f} %'} over {result['mutants']} "
          f"mutants ({result['killed']} killed, {result['survived']} survived, {result['uncovered']} uncovered, "
          f"{result['equivalent']} equivalent, {result.get('harness_errors', 0)} harness errors, "
          f"{result['not_run']} not run) in {result['wall_s']} s; "
          f"report: {args.out / 'mutation.md'}")
    if args.fail_under is not None and (score is None or 100 * score < args.fail_under):
        return 1
    return 0
