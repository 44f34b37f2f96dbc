"""The official 5.x SDK against ``rmqc serve``: the full retry ladder through a PushConsumer, and 16
concurrent clients with no loss. The server is the real command, started on a free loopback port."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from serving import ROOT, start_serve, stop_serve

from adapters.grpc import GrpcTarget
from history.values import ListenerOutcome
from reference_impl.rules import retry5x
from suites.tolerance import redelivered_in_time, tolerance_for


@pytest.fixture(scope="module")
def serve_fast():
    process, address = start_serve(0.001)
    yield address
    out = stop_serve(process)
    assert process.returncode == 0 and "stopped" in out, out


@pytest.mark.spec("RETRY-5X-01", "RETRY-5X-06", "RETRY-5X-07", "CLAIM-01", "CLAIM-04")
def test_full_17_attempt_ladder_through_the_sdk(serve_fast):
    """A message the PushConsumer always fails: 17 attempts 1 s, 5 s, ... 30 m apart, then %DLQ%<group>."""
    target = GrpcTarget(serve_fast, budget_s=60)
    started = time.monotonic()
    try:
        target.create_topic("T")
        target.push_consumer_5x("G", "T", lambda view: ListenerOutcome.RECONSUME_LATER)
        target.producer().send("T", b"x", key="m0")
        target.settle()
        wall_s = time.monotonic() - started
        events = target.events()
    finally:
        target.close()
    delivered = [e for e in events if e.kind == "DELIVER" and e.key == "m0"]
    waits = [b.ts_ms - a.ts_ms for a, b in zip(delivered, delivered[1:])]
    table = list(retry5x.DEFAULT_CUSTOMIZED_NEXT_MS[:16])
    tolerance = tolerance_for(target)
    print(f"\n17-attempt ladder through the SDK at time scale {target.time_scale:g}: {wall_s:.1f} s wall; "
          f"waits {waits} ms; backoff table {table} ms; tolerance {tolerance.absolute_ms} ms + "
          f"{tolerance.relative:.0%}")
    assert [e.attempt for e in delivered] == list(range(1, 18))
    assert all(redelivered_in_time(target, seen, want) for seen, want in zip(waits, table)), (waits, table)
    assert [e.topic for e in events if e.kind == "DLQ" and e.key == "m0"] == ["%DLQ%G"]
    assert wall_s < 30, f"the ladder took {wall_s:.1f} s of wall time"


@pytest.mark.spec("RETRY-5X-06", "SEND-5X-01")
def test_sixteen_sdk_clients_lose_nothing():
    """8 producers and 8 simple consumers at once, a bounded number of messages: none lost, none twice."""
    process, address = start_serve(1.0)
    producers, consumers, per_producer = 8, 8, 40
    target = GrpcTarget(address, budget_s=60)
    target.create_topic("LOAD")
    sdk = target.sdk
    config = sdk.ClientConfiguration(address, sdk.Credentials())
    topic = target.real("LOAD")
    sent: list[str] = []
    received: Counter[str] = Counter()
    lock = threading.Lock()
    done = threading.Event()
    errors: list[str] = []

    def produce() -> None:
        producer = sdk.Producer(config, (topic,))
        producer.startup()
        try:
            for i in range(per_producer):
                message = sdk.Message()
                message.topic, message.body, message.keys = topic, f"m{i}".encode(), f"m{i}"
                receipt = producer.send(message)
                with lock:
                    sent.append(receipt.message_id)
        except Exception as exc:
            errors.append(f"send: {exc}")
        finally:
            producer.shutdown()

    def consume() -> None:
        consumer = sdk.SimpleConsumer(config, target.real("LOADG"), {topic: sdk.FilterExpression()}, await_duration=1)
        consumer.startup()
        deadline = time.monotonic() + 60
        try:
            while not done.is_set() and time.monotonic() < deadline:
                for message in consumer.receive(16, 30):
                    consumer.ack(message)
                    with lock:
                        received[message.message_id] += 1
                        if len(sent) == producers * per_producer and set(sent) <= set(received):
                            done.set()
        except Exception as exc:
            errors.append(f"receive: {exc}")
        finally:
            consumer.shutdown()

    threads = [threading.Thread(target=produce) for _ in range(producers)]
    threads += [threading.Thread(target=consume) for _ in range(consumers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=90)
    finally:
        target.close()
        stop_serve(process)
    lost = set(sent) - set(received)
    duplicated = {m: n for m, n in received.items() if n > 1}
    print(f"\nload: {producers} producers + {consumers} consumers: sent {len(sent)}, consumed {len(received)}, "
          f"lost {len(lost)}, duplicated {len(duplicated)}")
    assert not errors, errors
    assert len(sent) == producers * per_producer
    assert not lost and not duplicated


@pytest.mark.spec("RETRY-5X-06", "RETRY-5X-07", "FIFO-04")
def test_the_suites_pass_through_the_sdk_against_rmqc_serve(tmp_path):
    """``rmqc run --target grpc://...``: every suite the SDK adapter can run, against ``rmqc serve``."""
    import json

    process, address = start_serve(0.001)
    try:
        run = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", f"grpc://{address}",
                              "--out", str(tmp_path / "run")], cwd=ROOT,
                             capture_output=True, text=True, timeout=600,
                             env={**os.environ, "PYTHONPATH": str(ROOT), "RMQC_REALTIME_EXAMPLES": "2"})
    finally:
        stop_serve(process)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    passed = sorted(s for s, b in summary["behaviours"].items() if b["verdict"] == "pass")
    print(f"\nthrough the SDK: {len(passed)} behaviours pass ({' '.join(passed)}); timing {summary['timing']}")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert not summary["failed"]
    assert summary["timing"]["clock"] == "wall" and summary["timing"]["time_scale"] == 0.001
    assert {"RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-09", "FIFO-05", "TX-02", "TX-03", "TX-04", "FIFO-01", "FILTER-01", "LIMIT-03", "DELAY-08"} <= set(passed)
