"""``rmqc serve``: the reference model over the RocketMQ 5.x gRPC protocol and the 4.x remoting protocol."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from history.profiles import GRPC_5X
from spec import versions


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the reference over the 5.x gRPC and the 4.x remoting protocols (official SDKs connect to it)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8081, help="port (0: any free port, printed at start)")
    p.add_argument("--profile", default=GRPC_5X, choices=[GRPC_5X])
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="wall seconds per spec second: 0.01 makes a 10 s retry wait take 100 ms")
    p.add_argument("--config", type=Path, default=None,
                   help="YAML with topics: [{name, queues, message_type}], groups: [{name, retry_max_times, fifo}], "
                        "auto_create: true|false")
    p.add_argument("--events-out", type=Path, default=None, help="write the server's event log (Parquet) at shutdown")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--version", dest="release", default=versions.LATEST, metavar="V",
                   help=f"behave as this RocketMQ release where the spec says releases differ "
                        f"({', '.join(versions.COVERED)} or develop; default {versions.LATEST})")
    p.add_argument("--namesrv-port", type=int, default=0, metavar="PORT",
                   help="the remoting name server's port (default 0: any free port, printed at start); topics and "
                        "groups are set up through it as with mqadmin, and 4.x clients connect to it")
    p.add_argument("--broker-port", type=int, default=0, metavar="PORT",
                   help="the first remoting broker's port (default 0: any free port); the others take free ports")
    p.add_argument("--brokers", type=int, default=2, metavar="N",
                   help="remoting brokers (default 2: broker-a and broker-b); every topic is on broker-a, one also made "
                        "on broker-b spans both, as mqadmin updateTopic -b on each broker makes it")
    p.add_argument("--max-clients", type=int, default=1024, metavar="N",
                   help="clients held at once; past it a call is answered TOO_MANY_REQUESTS (42900) naming the limit")
    p.add_argument("--max-streams-per-client", type=int, default=8, metavar="N",
                   help="Telemetry streams one client may hold (past it: RESOURCE_EXHAUSTED)")
    p.add_argument("--max-receives-per-client", type=int, default=64, metavar="N",
                   help="long-polling receives one client may have in flight (past it: 42900)")
    p.add_argument("--stalled-stream-s", type=float, default=10.0, metavar="S",
                   help="a Telemetry stream whose reader takes nothing this long is dropped")
    p.add_argument("--partial-frame-s", type=float, default=10.0, metavar="S",
                   help="a remoting connection that sends part of a frame and then nothing this long is closed")
    p.add_argument("--log-level", default="WARNING")
    p.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from frontends.grpc.server import (
        ReferenceServer,
        ServeConfigError,
        load_config,
    )
    from frontends.limits import ServeLimits

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        config = load_config(args.config) if args.config else None
        limits = ServeLimits(max_clients=args.max_clients, max_streams_per_client=args.max_streams_per_client,
                             max_receives_per_client=args.max_receives_per_client,
                             stalled_write_s=args.stalled_stream_s, partial_frame_s=args.partial_frame_s)
        server = ReferenceServer(host=args.host, port=args.port, time_scale=args.time_scale, profile=args.profile,
                                 config=config, seed=args.seed, release=args.release,
                                 remoting_ports=(args.namesrv_port, args.broker_port), limits=limits,
                                 brokers=args.brokers)
        server.start()
    except (ServeConfigError, ValueError, OSError, RuntimeError) as exc:
        print(f"rmqc serve: error: {exc}", file=sys.stderr)
        return 2
    print(f"rmqc serve: listening on {server.address} (profile {args.profile}, RocketMQ {args.release}, "
          f"time scale {args.time_scale})",
          flush=True)
    if server.remoting is not None:
        print(f"rmqc serve: remoting name server on {server.remoting.namesrv_address}, brokers on "
              f"{', '.join(server.remoting.broker_addresses)}", flush=True)
    server.serve_until_signalled()
    if args.events_out:
        from history.parquet import write_parquet

        count = write_parquet(server.sim.recorder.events, args.events_out)
        print(f"rmqc serve: wrote {count} events to {args.events_out}", flush=True)
    print("rmqc serve: stopped", flush=True)
    return 0
