"""``rmqc soak --target T --duration D --out PATH [--workload FILE]``: real clients' event log, rolled as it goes."""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from adapters.base import TargetError
from adapters.targets import USAGE, parse_target
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
    """The workload file, validated against ``spec/schemas/soak-workload.schema.json``."""
    import jsonschema
    import yaml

    from rmqc.soak import GroupPlan, ProducerPlan, Workload
    from spec.loader import SCHEMAS_DIR

    if path is None:
        return Workload()
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise WorkloadError(f"{path}: {exc}".replace("\n", " ")) from None
    schema = json.loads((SCHEMAS_DIR / "soak-workload.schema.json").read_text())
    error = next(iter(jsonschema.Draft202012Validator(schema).iter_errors(data)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the file"
        raise WorkloadError(f"{path}: {where}: {error.message}")
    return Workload(topic=data.get("topic", "SoakT"), seed=int(data.get("seed", 0)),
                    tick_ms=int(data.get("tick_ms", 1000)),
                    producers=tuple(ProducerPlan(**p) for p in data.get("producers", [{}])),
                    groups=tuple(GroupPlan(**g) for g in data.get("groups", [{"group": "SoakG"}])))


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("soak", help="drive a target for a long time and log what its clients saw (rolled Parquet)")
    parser.add_argument("--target", required=True, help=USAGE)
    parser.add_argument("--duration", type=parse_duration, required=True, help="wall time to send for: 60, 90s, 10m, 2h")
    parser.add_argument("--out", type=Path, required=True, help="the log's folder (Parquet parts)")
    parser.add_argument("--workload", type=Path, default=None, help="YAML (spec/schemas/soak-workload.schema.json)")
    parser.add_argument("--max-messages", type=int, default=None, help="stop sending after this many messages")
    parser.add_argument("--roll-s", type=float, default=2.0, help="seconds between two parts of the log")
    parser.set_defaults(handler=soak)


def soak(args: argparse.Namespace) -> int:
    from rmqc.soak import run_soak

    try:
        workload = load_workload(args.workload)
        parsed = parse_target(args.target)
        profiles = parsed.probe().profiles
        if GRPC_5X not in profiles:
            raise TargetError(f"{args.target} runs {', '.join(profiles)}; this soak drives 5.x clients")
        target = parsed.build(GRPC_5X, run_id="soak")
        stats = run_soak(target, workload, args.out, args.duration, args.max_messages, args.roll_s)
    except (WorkloadError, TargetError, NotApplicable, FileExistsError) as exc:
        print(f"rmqc soak: error: {exc}", file=sys.stderr)
        return 2
    return 0 if stats.sent else 1
