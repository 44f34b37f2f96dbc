"""One model behind both front ends: the official 4.x SDK (``rocketmq-client-python`` over librocketmq)
sends through ``rmqc serve``'s remoting ports and the official 5.x Python SDK receives the same messages
over gRPC from the same process. Without the 4.x library the test is not applicable and says why."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from serving import VENV_4X, require_4x_sdk, start_serve, stop_serve

from adapters.grpc import GrpcTarget
from adapters.remoting_client import RemotingAdmin

SEND_4X = '''
import sys
from rocketmq.client import Producer, Message
producer = Producer("PG-4x")
producer.set_name_server_address(sys.argv[1])
producer.start()
for i in range(int(sys.argv[3])):
    message = Message(sys.argv[2])
    message.set_keys(f"x4-{i}")
    message.set_tags("TagA")
    message.set_body(f"from 4.x {i}")
    result = producer.send_sync(message)
    print(result.status, result.msg_id, result.offset, flush=True)
producer.shutdown()
'''


@pytest.mark.spec("SEND-4X-01", "RETRY-5X-06")
def test_the_4x_sdk_sends_and_the_5x_sdk_receives_from_one_server(tmp_path: Path) -> None:
    require_4x_sdk()
    process, address = start_serve(0.01, "--namesrv-port", "0")
    try:
        target = GrpcTarget(address, budget_s=60)
        try:
            assert target.info.namesrv, "rmqc serve reports its remoting name server"
            target.create_topic("Cross", read_queues=2, write_queues=2)
            consumer = target.simple_consumer_5x("G-cross", "Cross")
            sent = subprocess.run([str(VENV_4X), "-c", SEND_4X, target.info.namesrv, target.real("Cross"), "3"],
                                  capture_output=True, text=True, timeout=60)
            assert sent.returncode == 0, sent.stderr[-2000:]
            statuses = [line.split()[0] for line in sent.stdout.splitlines()]
            assert statuses == ["0", "0", "0"], sent.stdout  # SEND_OK
            received = []
            for _ in range(50):  # bounded: the three messages, or give up
                received += consumer.receive(16, invisible_ms=30_000)
                if len(received) >= 3:
                    break
            assert sorted(v.key for v in received) == ["x4-0", "x4-1", "x4-2"]
            assert sorted(v.body for v in received) == [b"from 4.x 0", b"from 4.x 1", b"from 4.x 2"]
            assert {v.tags for v in received} == {"TagA"}
        finally:
            target.close()
    finally:
        stop_serve(process)


CONSUME_4X = '''
import json, sys, threading, time
from rocketmq.client import PushConsumer, ConsumeStatus
namesrv, topic, group, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
started, seen, out = time.monotonic(), [], threading.Lock()
def listener(message):
    # the client calls this from several threads at once: one line is written whole, under a lock
    line = json.dumps({"key": message.keys.decode(), "tags": message.tags.decode(), "body": message.body.decode(),
                       "reconsume_times": message.reconsume_times, "wall_s": time.monotonic() - started})
    with out:
        seen.append(1)
        sys.stdout.write(line + "\\n")
        sys.stdout.flush()
    first_failure = message.keys == b"fail-once" and message.reconsume_times == 0
    return ConsumeStatus.RECONSUME_LATER if first_failure else ConsumeStatus.CONSUME_SUCCESS
consumer = PushConsumer(group)
consumer.set_name_server_address(namesrv)
consumer.subscribe(topic, listener)
consumer.start()
deadline = time.monotonic() + 30
while len(seen) < want and time.monotonic() < deadline:
    time.sleep(0.05)
print("done", flush=True)
consumer.shutdown()  # the 2.0.0 client build dies with SIGSEGV here: everything is printed and flushed first
'''


@pytest.mark.spec("RETRY-CONC-07", "SEND-5X-01")
def test_the_5x_sdk_sends_and_the_4x_push_consumer_retries_on_the_4x_ladder() -> None:
    """The other way round: messages sent over gRPC by the 5.x SDK reach a 4.x PushConsumer over remoting;
    a RECONSUME_LATER comes back with reconsume times 1 after delay level 3 (10 s of spec time)."""
    require_4x_sdk()
    scale = 0.1
    process, address = start_serve(scale, "--namesrv-port", "0")
    try:
        target = GrpcTarget(address, budget_s=60)
        try:
            target.create_topic("Back", read_queues=2, write_queues=2)
            # the group's retry topic exists before the client starts, as after its first heart beat on a
            # broker that has seen the group: the C++ client reads its route once at start-up
            RemotingAdmin(target.info.namesrv).create_topic("%RETRY%G-4x", 1, 1, 6, None)
            consumer = subprocess.Popen([str(VENV_4X), "-c", CONSUME_4X, target.info.namesrv, target.real("Back"),
                                         "G-4x", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            producer = target.producer()
            producer.send("Back", b"fine", key="fine")
            producer.send("Back", b"fail-once", key="fail-once")
            out, err = consumer.communicate(timeout=60)
        finally:
            target.close()
    finally:
        stop_serve(process)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert "done" in out, (out, err[-2000:])
    # a known defect of the 2.0.0 client build: PushConsumer.shutdown() ends in SIGSEGV (recorded, not hidden)
    assert consumer.returncode in (0, -11, 139), (consumer.returncode, err[-2000:])
    assert sorted((d["key"], d["reconsume_times"]) for d in lines) == [("fail-once", 0), ("fail-once", 1), ("fine", 0)]
    first, again = (next(d["wall_s"] for d in lines if d["key"] == "fail-once" and d["reconsume_times"] == n)
                    for n in (0, 1))
    spec_wait_ms = (again - first) * 1000 / scale
    assert 10_000 <= spec_wait_ms <= 10_000 + 2_000 / scale, spec_wait_ms  # level 3, plus the wall clock's slack
    assert {d["body"] for d in lines} == {"fine", "fail-once"}
