"""One consumer of a soak in a process of its own: ``python -m rmqc.soak_worker CONFIG-JSON``.

It builds the soak's target on the soak's clock (``epoch``), configures and starts one push consumer of
the group with the soak's listener, and writes every event to stdout as one JSON line the moment it is
recorded (a SIGKILL loses none already written). It says ``{"ready": true}`` once consuming, and shuts
down as a user would when stdin says ``stop`` or closes."""
from __future__ import annotations

import dataclasses
import json
import random
import sys
import threading
from pathlib import Path

from adapters.targets import parse_target
from history.profiles import GRPC_5X

from .soak_plan import AppliedStore, GroupPlan, apply_event, soak_listener


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    plan_fields = dict(config["plan"])
    if plan_fields.get("retry_ladder_ms"):
        plan_fields["retry_ladder_ms"] = tuple(plan_fields["retry_ladder_ms"])
    plan = GroupPlan(**plan_fields)
    lock = threading.Lock()

    def write(data: dict) -> None:
        line = json.dumps(data) + "\n"
        with lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    target = parse_target(config["target"]).build(GRPC_5X, run_id=config["run_id"], epoch_monotonic=config["epoch"],
                                                  session_tag=config["names"])
    # the same group settings the soak gave it (the broker takes the same update again)
    target.configure_group(plan.group, retry_max_times=plan.retry_max_times, fifo=config["fifo"],
                           retry_ladder_ms=plan.retry_ladder_ms)
    target.recorder.listeners.append(lambda event: write(dataclasses.asdict(event)))
    store = AppliedStore(Path(config["store"]))

    def applied(view) -> None:
        write(dataclasses.asdict(apply_event(view, plan.group, target.now_ms(), config["run_id"], target.name)))

    try:
        target.push_consumer_5x(plan.group, plan.topic,
                                soak_listener(plan, random.Random(config["seed"]), store, applied))
        write({"ready": True})
        for line in sys.stdin:
            if line.strip() == "stop":
                break
    finally:
        target.close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
