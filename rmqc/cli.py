"""``rmqc``: the command line of rocketmq-conformance."""
from __future__ import annotations

import argparse
import sys

from . import (
    broker_command,
    expectations_command,
    mutate_command,
    report_command,
    run_command,
    serve_command,
    soak_command,
    spark_commands,
    spec_command,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rmqc", description="RocketMQ conformance suite and spec harness")
    sub = parser.add_subparsers(dest="command", required=True)
    run_command.add_parser(sub)
    spec_command.add_parser(sub)
    spark_commands.add_parsers(sub)
    serve_command.add_parser(sub)
    soak_command.add_parser(sub)
    report_command.add_parser(sub)
    expectations_command.add_parser(sub)
    mutate_command.add_parser(sub)
    broker_command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except BrokenPipeError:  # the reader went away (``rmqc spec show X | head``): stop quietly
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
