"""``rmqc soak --target T --duration D --out PATH [--workload FILE]``: real clients' event log, rolled as it goes."""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from adapters.base import TargetError
from adapters.targets import RELEASE, USAGE, parse_target
from history.outcomes import NotApplicable
from history.profiles import GRPC_5X

DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h)?$")


class WorkloadError(ValueError):
    """A workload file that is not one: the message names the file and the entry."""


def parse_duration(text: str) -> float:
    match = DURATION.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"--duration {text!r}: expected seconds, or a number with s, m or h")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]


def load_workload(path: Path | None) -> Any:
    """The workload file, validated against ``spec/schemas/soak-workload.schema.json``; an error names the
    file, the line and the entry."""
    from rmqc.soak_plan import FaultPlan, GroupPlan, ProducerPlan, Workload, default_workload
    from spec.loader import SpecError, load_yaml_validated

    if path is None:
        return default_workload()
    try:
        data, _ = load_yaml_validated(path, "soak-workload.schema.json", id_key="group")
    except SpecError as exc:
        raise WorkloadError(str(exc)) from None
    groups = []
    for g in data.get("groups", [{"group": "SoakG"}]):
        ladder = g.get("retry_ladder_ms")
        groups.append(GroupPlan(**{**g, "retry_ladder_ms": tuple(ladder) if ladder else None}))
    workload = Workload(seed=int(data.get("seed", 0)), tick_ms=int(data.get("tick_ms", 100)),
                        producers=tuple(ProducerPlan(**p) for p in data.get("producers", [{}])),
                        groups=tuple(groups), faults=tuple(FaultPlan(**f) for f in data.get("faults", [])))
    known = {g.group for g in workload.groups}
    for f in workload.faults:
        if f.group not in known:
            raise WorkloadError(f"{path}: faults: {f.kind} names group {f.group!r}, which the workload does not have")
    return workload


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "soak", help="drive a target for a long time and log what its clients saw (rolled Parquet)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Drive a 5.x target with real clients and log what they saw, for rmqc check.",
        epilog="Without --workload the soak runs a workload that gives every check of rmqc check something to\n"
               "judge (about 10,000 events a minute against rmqc serve):\n"
               "  normal messages 20/s to SoakG (push, 30% of deliveries fail: retries on a 1/2/3 s ladder\n"
               "    set on the broker, the DLQ after 4 deliveries) and SoakS (a simple consumer, 20% fail);\n"
               "  FIFO messages 6/s in 4 message groups to SoakF (20% fail, local retries);\n"
               "  timed messages 3/s, 5 s ahead, to SoakD;\n"
               "  transactions 4/s (15% rolled back, 15% left to the server's check) to SoakX;\n"
               "  every group idempotent (APPLY once per key).\n"
               "A workload file (spec/schemas/soak-workload.schema.json) states its own.")
    parser.add_argument("--target", required=True, help=USAGE)
    parser.add_argument("--duration", type=parse_duration, required=True, help="wall time to send for: 60, 90s, 10m, 2h")
    parser.add_argument("--out", type=Path, required=True, help="the log's folder (Parquet parts)")
    parser.add_argument("--workload", type=Path, default=None,
                        help="YAML (spec/schemas/soak-workload.schema.json); without it, the workload below")
    parser.add_argument("--max-messages", type=int, default=None, help="stop sending after this many messages")
    parser.add_argument("--max-events", type=int, default=None, help="stop sending once this many events are logged")
    parser.add_argument("--roll-s", type=float, default=2.0, help="seconds between two parts of the log")
    parser.add_argument("--settle-s", type=float, default=180.0,
                        help="after the sends, wait at most this long for every message to finish")
    parser.add_argument("--cluster", default=None, metavar="SHAPE",
                        help="with --target release:V: the release as a cluster of several brokers (2m, 1m1s,sync, "
                             "2m,sync-flush; see rmqc broker start --help)")
    parser.add_argument("--nemesis", default=None, metavar="FAULTS",
                        help="with --target release:V: faults on the cluster's processes, one every period in turn: "
                             "kill (a broker SIGKILLed and restarted on its store), pause (SIGSTOP/SIGCONT), "
                             "namesrv-kill, proxy-pause; options every=60s, down=10s, first=30s, seed=1 "
                             "(the same seed replays the same schedule); e.g. kill,pause,every=60s")
    parser.set_defaults(handler=soak)


def soak(args: argparse.Namespace) -> int:
    from rmqc.soak import run_soak

    try:
        nemesis = None
        if args.nemesis:
            from adapters.nemesis import NemesisError, NemesisPlan

            try:
                nemesis = NemesisPlan.parse(args.nemesis)
            except NemesisError as exc:
                raise TargetError(str(exc)) from None
        workload = load_workload(args.workload)
        parsed = parse_target(args.target)
        if (args.cluster or nemesis is not None) and parsed.kind is not RELEASE:
            raise TargetError(f"--cluster and --nemesis act on a release the suite starts (--target release:V), "
                              f"not on {args.target}")
        if args.cluster:
            from adapters.release import CLUSTER_ENV

            os.environ[CLUSTER_ENV] = args.cluster
        profiles = parsed.probe().profiles
        if GRPC_5X not in profiles:
            raise TargetError(f"{args.target} runs {', '.join(profiles)}; this soak drives 5.x clients")
        target = parsed.build(GRPC_5X, run_id="soak")
        if parsed.kind is RELEASE:  # the consumers' own processes drive the cluster this process started
            from adapters.release import attach_environment, shared_cluster

            os.environ.update(attach_environment(shared_cluster(parsed.address)))
        stats = run_soak(target, args.target, workload, args.out, args.duration, args.max_messages, args.roll_s,
                         settle_s=args.settle_s, max_events=args.max_events, nemesis=nemesis)
    except (WorkloadError, TargetError, NotApplicable, FileExistsError) as exc:
        print(f"rmqc soak: error: {exc}", file=sys.stderr)
        return 2
    return 0 if stats.sent else 1
