"""One model behind both front ends: the official 4.x SDK (``rocketmq-client-python`` over librocketmq)
sends through ``rmqc serve``'s remoting ports and the official 5.x Python SDK receives the same messages
over gRPC from the same process. Without the 4.x library the test is not applicable and says why."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from serving import ROOT, start_serve, stop_serve

from adapters.grpc import GrpcTarget
from history.outcomes import NotApplicable

VENV_4X = ROOT / ".venv-4x" / "bin" / "python"
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


def _four_x_ready() -> None:
    if not VENV_4X.exists():
        raise NotApplicable("the 4.x environment is missing (make driver-4x)")
    probe = subprocess.run([str(VENV_4X), "-c", "import sys; sys.path.insert(0, 'drivers'); "
                            "import remoting4x_driver as d; d.library_check()"], cwd=ROOT, capture_output=True,
                           text=True, timeout=30)
    if probe.returncode != 0:
        raise NotApplicable(f"rocketmq-client-python cannot run here: {probe.stderr.strip().splitlines()[-1:]}")


@pytest.mark.spec("SEND-4X-01", "RETRY-5X-06")
def test_the_4x_sdk_sends_and_the_5x_sdk_receives_from_one_server(tmp_path: Path) -> None:
    _four_x_ready()
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
