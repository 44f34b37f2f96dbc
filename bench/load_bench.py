"""Hundreds of real SDK clients against one ``rmqc serve``, side by side with the same workload on the
acknowledge-only server (``bench/ack_server.py``, the SDK's ceiling on this machine).

    python bench/load_bench.py [--clients 16,64,256] [--processes 4] [--messages 12800] [--repeat 3]

For each client count N the clients are spread over ``--processes`` worker processes: half producers, a
quarter simple consumers, a quarter push consumers (the official Python 5.x SDK), the consumers in one
group. Every message carries a unique key. Once every client is up, the producers send ``--messages`` in all;
the run ends when every key was received or ``--timeout`` passed (each producer's first send, which fetches
routes and settings, comes before and is not counted). Printed per N and server: sent, received,
lost, duplicated (at-least-once redeliveries, explained), throughput (received keys per second from the
first send to the last new key), p50 / p99 send latency and receive latency (born to received), the
server's peak RSS, and throughput at N against throughput at the smallest N (the issue asks for >= 0.8 at
256 against 16 on rmqc serve). Bounded in count (the messages) and in time (``--timeout`` per run).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOPIC, GROUP = "LoadT", "LoadG"
WARM_UP = "warm-"
"""Keys of the one message each producer sends before ``go`` (routes and settings fetched): not counted."""


# ---- a worker process: its share of the clients -----------------------------------------------------------


def worker(spec: dict[str, Any]) -> None:
    """Start the clients, say ``ready``, wait for ``go``, send, receive until ``stop``, print the result."""
    from adapters.sdk5x import load_sdk

    sdk = load_sdk()
    config = sdk.ClientConfiguration(spec["address"], sdk.Credentials(), request_timeout=10)
    lock = threading.Lock()
    received: dict[str, int] = {}
    receive_ms: list[float] = []
    last_new = [0.0]
    stop = threading.Event()

    def got(message: Any) -> None:
        now = time.time()
        with lock:
            for key in message.keys:
                if key.startswith(WARM_UP):
                    continue
                received[key] = received.get(key, 0) + 1
                if received[key] == 1:
                    last_new[0] = now
                    if message.born_timestamp:
                        receive_ms.append(now * 1000 - message.born_timestamp)

    class Listener:
        def consume(self, message: Any) -> Any:
            got(message)
            return sdk.ConsumeResult.SUCCESS

    producers = [sdk.Producer(config, (TOPIC,)) for _ in range(spec["producers"])]
    simple = [sdk.SimpleConsumer(config, GROUP, {TOPIC: sdk.FilterExpression()}, await_duration=2)
              for _ in range(spec["simple"])]
    push = [sdk.PushConsumer(config, GROUP, Listener(), {TOPIC: sdk.FilterExpression()}, consumption_thread_count=2)
            for _ in range(spec["push"])]
    for client in producers + simple + push:
        client.startup()

    def simple_loop(consumer: Any) -> None:
        while not stop.is_set():
            try:
                for m in consumer.receive(16, 30):
                    got(m)
                    consumer.ack(m)
            except Exception as exc:  # a refused or timed-out receive: counted by what never arrives
                if not stop.is_set():
                    print(f"receive: {exc!r}", file=sys.stderr, flush=True)
                time.sleep(0.1)

    send_ms: list[float] = []
    sent: list[str] = []
    errors: list[str] = []

    def produce(producer: Any, keys: list[str]) -> None:
        for key in keys:
            message = sdk.Message()
            message.topic, message.body, message.keys = TOPIC, b"x" * 64, key
            start = time.perf_counter()
            try:
                producer.send(message)
            except Exception as exc:
                with lock:
                    errors.append(f"{key}: {exc}")
                continue
            with lock:
                send_ms.append((time.perf_counter() - start) * 1000)
                sent.append(key)

    for i, producer in enumerate(producers):  # first sends fetch routes and settings: not part of the timing
        warm = sdk.Message()
        warm.topic, warm.body, warm.keys = TOPIC, b"w", f"{WARM_UP}{os.getpid()}-{i}"
        producer.send(warm)
    print("ready", flush=True)
    sys.stdin.readline()  # go
    threads = [threading.Thread(target=simple_loop, args=(c,), daemon=True) for c in simple]
    for t in threads:
        t.start()
    keys = spec["keys"]
    share = [keys[i::len(producers)] for i in range(len(producers))] if producers else []
    senders = [threading.Thread(target=produce, args=(p, k)) for p, k in zip(producers, share)]
    for t in senders:
        t.start()
    for t in senders:
        t.join()
    print(f"sent {len(sent)}", flush=True)
    while not stop.is_set():  # progress for the parent until it says stop
        line = sys.stdin.readline()
        if not line or line.strip() == "stop":
            stop.set()
        else:
            with lock:
                print(f"received {len(received)}", flush=True)
    result = {"sent": sent, "received": received, "send_ms": send_ms, "receive_ms": receive_ms,
              "last_new": last_new[0], "errors": errors[:5], "error_count": len(errors)}
    print("result " + json.dumps(result), flush=True)
    for client in producers + simple + push:
        try:
            client.shutdown()
        except Exception:
            pass
    os._exit(0)


# ---- the parent: servers, workers, figures -----------------------------------------------------------------


@dataclass
class Figures:
    server: str
    clients: int
    sent: int = 0
    received: int = 0
    lost: int = 0
    duplicated: int = 0
    seconds: float = 0.0
    send_ms: list[float] = field(default_factory=list)
    receive_ms: list[float] = field(default_factory=list)
    rss_mb: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.received / self.seconds if self.seconds else 0.0

    @staticmethod
    def quantile(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else (values[0] if values else 0.0)

    def line(self, baseline: "Figures | None") -> str:
        ratio = f"{self.throughput / baseline.throughput:.2f}x" if baseline and baseline.throughput else "-"
        return (f"{self.server:11} {self.clients:4} clients: sent {self.sent}, received {self.received}, lost "
                f"{self.lost}, duplicated {self.duplicated}; {self.throughput:7.1f} msg/s ({ratio} of its "
                f"smallest N); send p50 {self.quantile(self.send_ms, 50):.1f} p99 {self.quantile(self.send_ms, 99):.1f}"
                f" ms; receive p50 {self.quantile(self.receive_ms, 50):.1f} p99 {self.quantile(self.receive_ms, 99):.1f}"
                f" ms; server peak RSS {self.rss_mb:.0f} MB")


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def start_server(kind: str, time_scale: float) -> tuple[subprocess.Popen, str]:
    from frontends.process import spawn_listening

    if kind == "rmqc serve":
        return spawn_listening([sys.executable, "-m", "rmqc.cli", "serve", "--port", "0", "--time-scale",
                                str(time_scale), "--max-clients", "100000"], ROOT)
    return spawn_listening([sys.executable, str(ROOT / "bench" / "ack_server.py"), "0"], ROOT)


def run_once(kind: str, clients: int, processes: int, messages: int, time_scale: float, timeout_s: float) -> Figures:
    server, address = start_server(kind, time_scale)
    figures = Figures(kind, clients)
    try:
        producers, simple = clients // 2, clients // 4
        push = clients - producers - simple
        keys = [f"{kind[:3]}-{clients}-{i}" for i in range(messages)]
        workers = []
        for w in range(processes):
            share = {"producers": len(range(w, producers, processes)), "simple": len(range(w, simple, processes)),
                     "push": len(range(w, push, processes))}
            mine = [k for i, k in enumerate(keys) if i % producers % processes == w]
            spec = {"address": address, "keys": mine, **share}
            workers.append(subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(spec)], cwd=ROOT,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1))
        for w in workers:
            if w.stdout.readline().strip() != "ready":  # type: ignore[union-attr]
                raise RuntimeError(f"a worker did not start ({kind}, {clients} clients)")
        started = time.time()
        for w in workers:
            w.stdin.write("go\n")  # type: ignore[union-attr]
            w.stdin.flush()  # type: ignore[union-attr]
        for w in workers:
            w.stdout.readline()  # type: ignore[union-attr]  # sent N
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            total = 0
            for w in workers:
                w.stdin.write("progress\n")  # type: ignore[union-attr]
                w.stdin.flush()  # type: ignore[union-attr]
                total += int(w.stdout.readline().split()[1])  # type: ignore[union-attr]
            if total >= messages:
                break
            time.sleep(0.2)
        results = []
        for w in workers:
            w.stdin.write("stop\n")  # type: ignore[union-attr]
            w.stdin.flush()  # type: ignore[union-attr]
            line = w.stdout.readline()  # type: ignore[union-attr]
            while line and not line.startswith("result "):
                line = w.stdout.readline()  # type: ignore[union-attr]
            results.append(json.loads(line[len("result "):]))
            w.wait(timeout=60)
        figures.rss_mb = peak_rss_mb(server.pid)
        sent = {k for r in results for k in r["sent"]}
        counts: dict[str, int] = {}
        for r in results:
            for k, n in r["received"].items():
                counts[k] = counts.get(k, 0) + n
        figures.sent, figures.received = len(sent), len(set(counts) & sent)
        figures.lost = len(sent - set(counts))
        figures.duplicated = sum(n - 1 for n in counts.values() if n > 1)
        figures.seconds = max((r["last_new"] for r in results), default=started) - started
        figures.send_ms = [x for r in results for x in r["send_ms"]]
        figures.receive_ms = [x for r in results for x in r["receive_ms"]]
        figures.errors = [e for r in results for e in r["errors"]][:3]
        return figures
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", default="16,64,256")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--messages", type=int, default=12800)
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take to receive everything")
    parser.add_argument("--servers", default="rmqc serve,ack-only")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per server and N; the figures of the run with the median throughput are shown "
                             "(two cores shared by hundreds of client threads make one run noisy)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    counts = [int(c) for c in args.clients.split(",")]
    ok = True
    for kind in args.servers.split(","):
        baseline = None
        for clients in counts:
            runs = sorted((run_once(kind, clients, args.processes, args.messages, args.time_scale, args.timeout)
                           for _ in range(max(1, args.repeat))), key=lambda f: f.throughput)
            if len(runs) > 1:
                print(f"{kind:11} {clients:4} clients: {len(runs)} runs, "
                      f"{', '.join(f'{f.throughput:.1f}' for f in runs)} msg/s; the median run:", flush=True)
            figures = runs[len(runs) // 2]
            baseline = baseline or figures
            ok = ok and all(f.lost == 0 for f in runs)
            print(figures.line(baseline), flush=True)
            if figures.errors:
                print(f"  first errors: {figures.errors}", flush=True)
            if figures.duplicated:
                print(f"  {figures.duplicated} duplicates: at-least-once redeliveries (a receipt's invisible time "
                      "ran out before its ack, or a push consumer's rebalance)", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
