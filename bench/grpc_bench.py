"""Messages per second the official 5.x SDK sends and consumes against ``rmqc serve``, side by side
with the same SDK against a server that only acknowledges (the SDK's own ceiling on this machine).

    python bench/grpc_bench.py [--messages 4000] [--producers 8] [--consumers 2]

Prints both rates and the ratio reference / ceiling (the gRPC issue asks for at least 0.8).
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.sdk5x import load_sdk  # noqa: E402
from frontends.process import spawn_listening  # noqa: E402


def workload(address: str, messages: int, producers: int, consumers: int, topic: str) -> tuple[float, float]:
    """(sent per second, consumed per second) for ``messages`` messages through the SDK."""
    sdk = load_sdk()
    config = sdk.ClientConfiguration(address, sdk.Credentials())
    per = messages // producers
    consumed = [0]
    lock = threading.Lock()
    all_sent = threading.Event()
    times: dict[str, float] = {}

    def produce() -> None:
        p = sdk.Producer(config, (topic,))
        p.startup()
        for i in range(per):
            m = sdk.Message()
            m.topic, m.body = topic, b"x" * 128
            p.send(m)
        p.shutdown()

    def consume() -> None:
        c = sdk.SimpleConsumer(config, "BENCH", {topic: sdk.FilterExpression()}, await_duration=1)
        c.startup()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with lock:
                if consumed[0] >= per * producers:
                    break
            for m in c.receive(32, 30):
                c.ack(m)
                with lock:
                    consumed[0] += 1
                    if consumed[0] == per * producers:
                        times["consumed"] = time.perf_counter()
        c.shutdown()

    start_t = time.perf_counter()
    threads = [threading.Thread(target=produce) for _ in range(producers)]
    readers = [threading.Thread(target=consume) for _ in range(consumers)]
    for t in threads + readers:
        t.start()
    for t in threads:
        t.join()
    sent_t = time.perf_counter()
    all_sent.set()
    for t in readers:
        t.join()
    total = per * producers
    return total / (sent_t - start_t), total / (times.get("consumed", time.perf_counter()) - start_t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--consumers", type=int, default=2)
    args = parser.parse_args()
    rows = {}
    for name, command in (("rmqc serve", [sys.executable, "-m", "rmqc.cli", "serve", "--port", "0"]),
                          ("ack-only ceiling", [sys.executable, "bench/ack_server.py", "0"])):
        process, address = spawn_listening(command, ROOT)
        try:
            workload(address, args.producers * 10, args.producers, args.consumers, f"WARM{len(rows)}")  # warm-up
            rows[name] = workload(address, args.messages, args.producers, args.consumers, f"BENCH{len(rows)}")
        finally:
            process.terminate()
            process.wait(timeout=10)
        print(f"{name:<18} sent {rows[name][0]:8.0f} msg/s   consumed {rows[name][1]:8.0f} msg/s", flush=True)
    ref, ceiling = rows["rmqc serve"], rows["ack-only ceiling"]
    print(f"ratio reference / ceiling: send {ref[0] / ceiling[0]:.2f}, consume {ref[1] / ceiling[1]:.2f} "
          f"({args.messages} messages, {args.producers} producer threads, {args.consumers} simple consumers)")


if __name__ == "__main__":
    main()
