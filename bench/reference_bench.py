"""Reference-model benchmark: ladder wall times and simulated events per second.

Prints, side by side: the wall time of the full 4.x 16-retry ladder and the 5.x 17-attempt ladder
of one message against the spec time they cover (the virtual-clock speed-up), and the throughput of
a 100k-message run with failures, retries and DLQs, as events per second and as spec time per wall
second. Usage: ``python bench/reference_bench.py [--messages N] [--seed S]``.
"""
from __future__ import annotations

import argparse
import random
import sys
import time

from history.profiles import GRPC_5X, REMOTING_4X
from history.values import SETTLE_LIMIT_MS, ListenerOutcome
from reference_impl.model.simulation import Simulation


def ladder(profile: str) -> tuple[float, int, int]:
    """Wall seconds, spec ms covered and deliveries for one always-failing message."""
    start = time.perf_counter()
    sim = Simulation(profile)
    sim.broker.create_topic("T")
    fail = lambda view: ListenerOutcome.RECONSUME_LATER  # noqa: E731
    if profile == REMOTING_4X:
        sim.push_consumer_4x("G", "T", fail)
    else:
        sim.push_consumer_5x("G", "T", fail)
    sim.producer().send("T", b"x", key="k")
    sim.run_until_idle(SETTLE_LIMIT_MS)
    wall = time.perf_counter() - start
    deliveries = sum(1 for e in sim.recorder.events if e.kind == "DELIVER")
    return wall, sim.recorder.events[-1].ts_ms, deliveries  # the last observable event, not stale timers


def bulk(messages: int, seed: int) -> tuple[float, int, int, dict[str, int]]:
    """100k messages over 8 queues and 2 consumers; 10 % fail 1-5 times, 0.5 % always fail (DLQ)."""
    rng = random.Random(seed)
    failures: dict[str, int] = {}
    for i in range(messages):
        roll = rng.random()
        failures[f"m{i}"] = 99 if roll < 0.005 else (rng.randint(1, 5) if roll < 0.105 else 0)
    seen: dict[str, int] = {}

    def listener(view):
        n = seen.get(view.key, 0) + 1
        seen[view.key] = n
        return ListenerOutcome.RECONSUME_LATER if n <= failures[view.key] else ListenerOutcome.SUCCESS

    start = time.perf_counter()
    sim = Simulation(REMOTING_4X, seed=seed)
    sim.broker.create_topic("T", 8, 8)
    for _ in range(2):
        sim.push_consumer_4x("G", "T", listener)
    producer = sim.producer()
    step = max(1, messages // 20)
    for i in range(messages):
        producer.send("T", b"payload", key=f"m{i}")
        if i % 1000 == 999:
            sim.advance(10)  # 1000 messages per 10 ms of spec time
        if i % step == step - 1:
            print(f"  sent {i + 1}/{messages}", file=sys.stderr, end="\r")
    sim.run_until_idle(SETTLE_LIMIT_MS)
    wall = time.perf_counter() - start
    kinds: dict[str, int] = {}
    for e in sim.recorder.events:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    print(" " * 40, file=sys.stderr, end="\r")
    return wall, len(sim.recorder.events), sim.recorder.events[-1].ts_ms, kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{'ladder':<28} {'wall ms':>9} {'spec time':>11} {'speed-up':>12} {'deliveries':>10}")
    for name, profile in (("4.x concurrent, 16 retries", REMOTING_4X), ("5.x push, 17 attempts", GRPC_5X)):
        wall, spec_ms, deliveries = ladder(profile)
        print(f"{name:<28} {wall * 1000:>9.2f} {spec_ms / 1000:>10.0f}s {spec_ms / 1000 / wall:>11.0f}x {deliveries:>10}")
    wall, events, spec_ms, kinds = bulk(args.messages, args.seed)
    print(f"\n{args.messages} messages with failures: {events} events in {wall:.2f} s wall = "
          f"{events / wall:,.0f} simulated events/s; {spec_ms / 1000:,.0f} s of spec time "
          f"({spec_ms / 1000 / wall:,.0f}x real time)")
    print("  " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
