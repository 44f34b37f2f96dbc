"""``rmqc broker start|stop --release V``: a real RocketMQ release from Maven Central on 127.0.0.1, alone, for
users who want the broker without the suites (``adapters.release``). ``start`` returns once the name server,
the broker and (from 5.0.0) the proxy answer, and leaves them running; ``stop`` stops what a start left in the
same folder."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from adapters.base import TargetError
from adapters.targets import GRPC, REMOTING

STATE_FILE = "cluster.json"


def default_home(release: str) -> Path:
    return Path.home() / ".cache" / "rocketmq-conformance" / "brokers" / release


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("broker", help="start or stop a real RocketMQ release (from Maven Central) on 127.0.0.1")
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("--release", required=True, metavar="V", help="the release, e.g. 5.3.3")
    parser.add_argument("--home", default=None, metavar="DIR",
                        help="folder of its configuration, store and logs (default ~/.cache/rocketmq-conformance/"
                             "brokers/V)")
    parser.add_argument("--time-scale", type=float, default=1.0, metavar="X",
                        help="compress the release's clocks by X through its own keys, as the suites do (default 1: "
                             "the release's defaults, except its ports and folders)")
    parser.add_argument("--cluster", default=None, metavar="SHAPE",
                        help="a cluster of several brokers: 2m (two masters), 1m1s (a master and a slave), 2m2s; "
                             "then ,sync or ,async replication and ,sync-flush or ,async-flush (default: one broker)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from adapters.release_cluster import stop_recorded

    home = Path(args.home) if args.home else default_home(args.release)
    state = home / STATE_FILE
    if args.action == "stop":
        stopped = stop_recorded(home)
        state.unlink(missing_ok=True)
        print(f"rmqc broker: stopped {', '.join(stopped)} of RocketMQ {args.release}" if stopped else
              f"rmqc broker: nothing of RocketMQ {args.release} was running from {home}")
        return 0
    if not 0 < args.time_scale <= 1:
        print("rmqc broker: error: --time-scale must be in (0, 1]", file=sys.stderr)
        return 2
    if stop_recorded(home):
        print(f"rmqc broker: stopped the RocketMQ {args.release} an earlier start left in {home}", file=sys.stderr)
    from adapters.release import start_cluster
    from adapters.release_topology import Topology, TopologyError

    try:
        shape = Topology.parse(args.cluster)
    except TopologyError as exc:
        print(f"rmqc broker: error: {exc}", file=sys.stderr)
        return 2
    home.mkdir(parents=True, exist_ok=True)
    try:
        cluster = start_cluster(args.release, home, args.time_scale, detached=True, shape=shape)
    except TargetError as exc:
        print(f"rmqc broker: error: {exc}", file=sys.stderr)
        return 2
    plan = cluster.plan
    record = {"release": plan.release, "namesrv": plan.namesrv_address, "broker": plan.broker_address,
              "proxy_grpc": plan.grpc_address if plan.with_proxy else None, "time_scale": plan.time_scale,
              "home": str(home), "missing": cluster.jars.missing,
              "built_from_source_release": cluster.jars.built}
    if not shape.single:
        record["topology"] = shape.as_json()
        record["brokers"] = {n.label: plan.node_address(n) for n in plan.nodes()}
    state.write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))
    target = f"{GRPC.text(plan.grpc_address)} --namesrv {plan.namesrv_address}" if plan.with_proxy else \
        REMOTING.text(plan.namesrv_address)
    print(f"rmqc broker: RocketMQ {plan.release} is running; `rmqc run --target {target} --target-version "
          f"{plan.release}` drives it, `rmqc broker stop --release {plan.release}` stops it")
    return 0
