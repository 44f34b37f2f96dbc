"""The official 4.x SDK (rocketmq-client-python 2.0.0 over librocketmq) sending and consuming through
``rmqc serve``'s remoting ports, side by side in one run with the official 5.x Python SDK over gRPC on the
same server, with the same messages (unique keys, 128-byte bodies).

    python bench/remoting_bench.py [--messages 2000]

Prints, per path: messages sent per second, messages consumed per second, and the counts of sent,
received, lost and duplicated keys; then the 4.x / 5.x ratios. Needs ``make driver-4x``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.remoting_client import RemotingAdmin  # noqa: E402
from adapters.sdk5x import load_sdk  # noqa: E402
from frontends.process import spawn_listening  # noqa: E402

VENV_4X = ROOT / ".venv-4x" / "bin" / "python"
BODY = b"x" * 128
CONSUME_LIMIT_S = 300

# runs in .venv-4x (the 4.x SDK's package name clashes with the 5.x SDK's): send, then consume with a
# push consumer until every key came or the limit passed; the SDK's shutdown crashes (SDK-CPP-07), so the
# figures are printed first and the process leaves without it
SCRIPT_4X = textwrap.dedent('''
    import json, os, sys, threading, time
    from rocketmq import client as sdk
    namesrv, topic, group, n, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    producer = sdk.Producer(group + "-P")
    producer.set_name_server_address(namesrv)
    producer.start()
    start = time.perf_counter()
    sent = []
    for i in range(n):
        m = sdk.Message(topic)
        m.set_keys("k%d" % i)
        m.set_body(b"x" * 128)
        if int(producer.send_sync(m).status) == 0:
            sent.append("k%d" % i)
    send_s = time.perf_counter() - start
    seen, lock, done = [], threading.Lock(), threading.Event()
    def listener(msg):
        with lock:
            seen.append(msg.keys.decode())
            if len(set(seen)) >= len(sent):
                done.set()
        return sdk.ConsumeStatus.CONSUME_SUCCESS
    consumer = sdk.PushConsumer(group)
    consumer.set_name_server_address(namesrv)
    consumer.subscribe(topic, listener, "*")
    start = time.perf_counter()
    consumer.start()
    done.wait(limit)
    consume_s = time.perf_counter() - start
    time.sleep(1)  # a late duplicate would show up here
    with lock:
        print(json.dumps({"sent": sent, "seen": seen, "send_s": send_s, "consume_s": consume_s}), flush=True)
    os._exit(0)
''')


@dataclass
class PathResult:
    name: str
    sent: int
    received: int
    lost: int
    duplicated: int
    send_rate: float
    consume_rate: float

    def line(self) -> str:
        return (f"{self.name:<34} send {self.send_rate:8.0f} msg/s   consume {self.consume_rate:8.0f} msg/s   "
                f"sent {self.sent}  received {self.received}  lost {self.lost}  duplicated {self.duplicated}")


def result(name: str, sent: list[str], seen: list[str], send_s: float, consume_s: float) -> PathResult:
    unique = set(seen)
    return PathResult(name, len(sent), len(seen), len(set(sent) - unique), len(seen) - len(unique),
                      len(sent) / send_s, len(unique) / consume_s)


def run_4x(namesrv: str, topic: str, messages: int) -> PathResult:
    out = subprocess.run([str(VENV_4X), "-c", SCRIPT_4X, namesrv, topic, "BENCH4X", str(messages),
                          str(CONSUME_LIMIT_S)], capture_output=True, text=True, timeout=CONSUME_LIMIT_S + 120)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"remoting_bench: the 4.x run printed no figures (exit {out.returncode}): "
                         f"{out.stderr.strip()[-500:]}")
    data = json.loads(lines[-1])
    return result("4.x SDK, remoting", data["sent"], data["seen"], data["send_s"], data["consume_s"])


def run_5x(address: str, topic: str, messages: int) -> PathResult:
    sdk = load_sdk()
    config = sdk.ClientConfiguration(address, sdk.Credentials())
    producer = sdk.Producer(config, (topic,))
    producer.startup()
    sent: list[str] = []
    start = time.perf_counter()
    for i in range(messages):
        m = sdk.Message()
        m.topic, m.body, m.keys = topic, BODY, f"k{i}"
        producer.send(m)
        sent.append(f"k{i}")
    send_s = time.perf_counter() - start
    producer.shutdown()
    consumer = sdk.SimpleConsumer(config, "BENCH5X", {topic: sdk.FilterExpression()}, await_duration=1)
    consumer.startup()
    seen: list[str] = []
    start = time.perf_counter()
    deadline = time.monotonic() + CONSUME_LIMIT_S
    while len(set(seen)) < len(sent) and time.monotonic() < deadline:
        for m in consumer.receive(32, 30):
            seen.append(next(iter(m.keys)))
            consumer.ack(m)
    consume_s = time.perf_counter() - start
    for m in consumer.receive(32, 30):  # a late duplicate would show up here
        seen.append(next(iter(m.keys)))
        consumer.ack(m)
    consumer.shutdown()
    return result("5.x Python SDK, gRPC", sent, seen, send_s, consume_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    if not VENV_4X.exists():
        raise SystemExit("remoting_bench: the 4.x environment is missing; run make driver-4x first")
    serve, address = spawn_listening([sys.executable, "-m", "rmqc.cli", "serve", "--port", "0"], ROOT)
    try:
        info = serve.stdout.readline() if serve.stdout else ""
        namesrv = info.split("name server on ")[1].split(",")[0]
        admin = RemotingAdmin(namesrv)
        admin.create_topic("BENCH-4X", 4, 4, 6, "NORMAL")
        admin.create_topic("BENCH-5X", 4, 4, 6, "NORMAL")
        print(f"rmqc serve on {address} (gRPC) and {namesrv} (remoting name server); {args.messages} messages each")
        four = run_4x(namesrv, "BENCH-4X", args.messages)
        print(four.line(), flush=True)
        five = run_5x(address, "BENCH-5X", args.messages)
        print(five.line(), flush=True)
        print(f"ratio 4.x / 5.x: send {four.send_rate / five.send_rate:.2f}, "
              f"consume {four.consume_rate / five.consume_rate:.2f}")
        if four.lost or five.lost:
            raise SystemExit("remoting_bench: messages were lost")
    finally:
        serve.terminate()
        serve.wait(10)


if __name__ == "__main__":
    main()
