"""The official Node.js 5.x SDK (rocketmq-client-nodejs, drivers/nodejs) against rmqc serve: its habits that
need a server of their own, and every line its driver writes checked against the driver-protocol schema."""
from __future__ import annotations

import pytest
from nodejs import node_driver_command
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as rpc

from adapters.driver import DriverBroken, DriverProcess
from frontends.grpc.server import ReferenceServer, ServeConfig

WAIT_S = 8.0


@pytest.fixture
def server():
    srv = ReferenceServer(port=0, time_scale=0.01, config=ServeConfig(topics=[{"name": "T", "queues": 4}],
                                                                     auto_create=False)).start()
    yield srv
    srv.stop()


def _start_simple_consumer(address: str) -> dict:
    driver = DriverProcess(node_driver_command(address, 0.01), timeout_s=WAIT_S, validate=True)
    try:
        driver.call({"cmd": "open", "target": "s1", "profile": "grpc-5.x"})
        return driver.call({"cmd": "simple_consumer_5x", "target": "s1", "handle": "c1", "group": "G", "topic": "T"})
    finally:
        driver.stop()


@pytest.mark.spec("SDK-NODE-07")
def test_startup_waits_for_settings_without_a_time_limit(server):
    """A consumer has topics, so its start-up awaits the first Settings: served, it starts at once; against a
    server that withholds them (an OK status instead), it is still waiting when the harness gives up."""
    assert _start_simple_consumer(server.address)["ok"]
    server.service._settings_answer = lambda asked: rpc.TelemetryCommand(status=pb.Status(code=pb.OK))
    with pytest.raises(DriverBroken) as err:
        _start_simple_consumer(server.address)
    assert f"no answer to 'simple_consumer_5x' within {WAIT_S:g} s (hung)" in str(err.value)
