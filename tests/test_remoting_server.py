"""The remoting front end over the model: a client written here with the standard library sets up topics
and groups with mqadmin's admin codes, reads routes and sends; bad frames close only their connection."""
from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.remoting_client import RemotingClient, RemotingClientError
from frontends.model_service import RealTimeModel
from frontends.remoting import handlers as h
from frontends.remoting.codec import ROCKETMQ, Command, encode
from frontends.remoting.server import RemotingServer
from history.profiles import GRPC_5X
from reference_impl.model.simulation import Simulation

pytestmark = pytest.mark.spec("TOPIC-05")


@pytest.fixture(scope="module")
def server():
    model = RealTimeModel(Simulation(GRPC_5X, run_id="remoting", release="5.3.3"), 0.01)
    model.start()
    srv = RemotingServer(model).start()
    yield srv
    srv.stop()
    model.stop()


def _properties(**props: str) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


def test_admin_codes_create_a_typed_topic_and_its_route(server) -> None:
    with RemotingClient(server.namesrv_address) as client:
        assert client.route("Typed") is None
        assert client.create_topic("Typed", 2, 2, message_type="FIFO").code == h.SUCCESS
        route = client.route("Typed")
        assert route["queueDatas"][0]["writeQueueNums"] == 2
        assert route["brokerDatas"][0]["brokerAddrs"]["0"] == f"127.0.0.1:{server.broker_port}"
        assert client.create_topic("Bad", message_type="NOPE").code == h.SYSTEM_ERROR
        assert client.create_group("G-admin", retry_max_times=3).code == h.SUCCESS
    with server.model.locked() as sim:
        assert sim.broker.topics["Typed"].message_type == "FIFO"
        assert sim.broker.group("G-admin").retry_max_times == 3
        assert "Bad" not in sim.broker.topics


@pytest.mark.parametrize("serialize", [0, ROCKETMQ])
@pytest.mark.parametrize("code, short", [(h.SEND_MESSAGE, False), (h.SEND_MESSAGE_V2, True)])
def test_a_send_is_stored_in_the_model(server, serialize: int, code: int, short: bool) -> None:
    with RemotingClient(f"127.0.0.1:{server.broker_port}", serialize=serialize) as client:
        client.create_topic("S", 1, 1)
        header = {"producerGroup": "P", "topic": "S", "queueId": 0, "sysFlag": 0, "bornTimestamp": 0, "flag": 0,
                  "properties": _properties(KEYS=f"k-{code}-{serialize}", UNIQ_KEY=f"u-{code}-{serialize}")}
        if short:
            names = {v: k for k, v in h.V2_FIELDS.items()}
            header = {names[k]: v for k, v in header.items()}
        answer = client.call(code, header, body=b"hello")
        assert answer.code == h.SUCCESS and answer.ext["msgId"] == f"u-{code}-{serialize}"
    with server.model.locked() as sim:
        stored = [m for m in sim.broker.queues[("S", 0)] if m.msg_id == f"u-{code}-{serialize}"]
        assert len(stored) == 1 and stored[0].body == b"hello" and stored[0].properties["KEYS"] == f"k-{code}-{serialize}"


def test_unknown_codes_and_missing_topics_get_rocketmq_codes(server) -> None:
    with RemotingClient(server.namesrv_address) as client:
        unknown = client.call(9999)
        assert unknown.code == h.REQUEST_CODE_NOT_SUPPORTED and "9999 not supported" in unknown.remark
        missing = client.call(h.SEND_MESSAGE, {"topic": "Nowhere", "queueId": 0}, body=b"x")
        assert missing.code == h.TOPIC_NOT_EXIST
        assert client.call(h.SEND_MESSAGE, {"queueId": 0}).code == h.SYSTEM_ERROR  # no topic field


def test_an_unreachable_server_is_named_with_its_cause() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RemotingClientError, match=f"cannot reach 127.0.0.1:{port}"):
        RemotingClient(f"127.0.0.1:{port}", timeout_s=1)


HOSTILE = st.one_of(
    st.binary(min_size=1, max_size=64),
    st.integers(16 * 1024 * 1024 + 1, 2**31 - 1).map(lambda n: struct.pack(">i", n)),
    st.binary(max_size=32).map(lambda header: struct.pack(">ii", len(header) + 4, len(header) + 50) + header),
    st.sampled_from([b'{"code":', b'{"code":"x"}', b'[1,2]', b'{"code":10,"extFields":{"topic":[1]}}']).map(
        lambda header: struct.pack(">ii", len(header) + 4, len(header)) + header),
    st.integers(2, 127).map(lambda kind: struct.pack(">ii", 6, (kind << 24) | 2) + b"{}"),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None)
@given(frames=st.lists(HOSTILE, min_size=1, max_size=4))
def test_hostile_frames_close_only_their_connection(server, frames: list[bytes]) -> None:
    """Each hostile stream gets a RocketMQ code or a closed connection; the server keeps serving."""
    with socket.create_connection(("127.0.0.1", server.broker_port), timeout=5) as sock:
        for frame in frames:
            try:
                sock.sendall(frame)
            except OSError:
                break
        try:
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except OSError:  # the server already closed it: the answer to a bad frame
            pass
    with RemotingClient(server.namesrv_address) as client:
        assert client.call(h.GET_BROKER_CLUSTER_INFO).code == h.SUCCESS


def test_a_client_that_never_reads_does_not_stop_the_others(server) -> None:
    lazy = socket.create_connection(("127.0.0.1", server.broker_port), timeout=5)
    try:
        request = encode(Command(h.GET_BROKER_CLUSTER_INFO, 1))
        for _ in range(200):
            lazy.sendall(request)
        with RemotingClient(server.namesrv_address) as client:
            assert client.call(h.GET_BROKER_CLUSTER_INFO).code == h.SUCCESS
    finally:
        lazy.close()


def _send(client: RemotingClient, topic: str, key: str, body: bytes) -> None:
    answer = client.call(h.SEND_MESSAGE, {"producerGroup": "P", "topic": topic, "queueId": 0, "sysFlag": 0,
                                          "bornTimestamp": 0, "flag": 0, "properties": _properties(KEYS=key)},
                         body=body)
    assert answer.code == h.SUCCESS


def test_pull_returns_commit_log_units_and_offsets_move(server) -> None:
    """A pull answers the stored units (decodable as the commit log stores them), the next offset and the
    queue's bounds; past the end it is PULL_NOT_FOUND, beyond it PULL_OFFSET_MOVED; offsets commit and read
    back."""
    from reference_impl.rules import storage

    with RemotingClient(f"127.0.0.1:{server.broker_port}") as client:
        client.create_topic("PullT", 1, 1)
        for i in range(3):
            _send(client, "PullT", f"k{i}", f"body-{i}".encode())
        pulled = client.call(h.PULL_MESSAGE, {"consumerGroup": "G", "topic": "PullT", "queueId": 0, "queueOffset": 1,
                                              "maxMsgNums": 32, "sysFlag": 0})
        assert pulled.code == h.SUCCESS and pulled.ext["nextBeginOffset"] == "3" and pulled.ext["maxOffset"] == "3"
        units = list(storage.iter_units(pulled.body))
        assert [(u.queue_offset, u.body, u.properties["KEYS"]) for u in units] == [(1, b"body-1", "k1"), (2, b"body-2", "k2")]
        end = client.call(h.PULL_MESSAGE, {"consumerGroup": "G", "topic": "PullT", "queueId": 0, "queueOffset": 3})
        assert end.code == h.PULL_NOT_FOUND and end.ext["nextBeginOffset"] == "3"
        moved = client.call(h.PULL_MESSAGE, {"consumerGroup": "G", "topic": "PullT", "queueId": 0, "queueOffset": 9})
        assert moved.code == h.PULL_OFFSET_MOVED and moved.ext["nextBeginOffset"] == "3"
        assert client.call(h.GET_MAX_OFFSET, {"topic": "PullT", "queueId": 0}).ext["offset"] == "3"
        assert client.call(h.GET_MIN_OFFSET, {"topic": "PullT", "queueId": 0}).ext["offset"] == "0"
        group = {"consumerGroup": "G", "topic": "PullT", "queueId": 0}
        assert client.call(h.QUERY_CONSUMER_OFFSET, group).ext["offset"] == "0"
        assert client.call(h.UPDATE_CONSUMER_OFFSET, {**group, "commitOffset": 2}).code == h.SUCCESS
        assert client.call(h.QUERY_CONSUMER_OFFSET, group).ext["offset"] == "2"


def test_a_suspended_pull_waits_for_the_next_message(server) -> None:
    """Long polling: a pull at the end of the queue with FLAG_SUSPEND is answered when a message arrives."""
    import threading
    import time

    with RemotingClient(f"127.0.0.1:{server.broker_port}") as setup:
        setup.create_topic("LongPoll", 1, 1)
    answers: list = []

    def pull() -> None:
        with RemotingClient(f"127.0.0.1:{server.broker_port}", timeout_s=10) as client:
            answers.append(client.call(h.PULL_MESSAGE, {"consumerGroup": "G", "topic": "LongPoll", "queueId": 0,
                                                        "queueOffset": 0, "sysFlag": h.FLAG_SUSPEND,
                                                        "suspendTimeoutMillis": 15_000}))

    waiting = threading.Thread(target=pull)
    waiting.start()
    time.sleep(0.05)  # 5 s of spec time at time scale 0.01: the pull is suspended
    assert not answers
    with RemotingClient(f"127.0.0.1:{server.broker_port}") as client:
        _send(client, "LongPoll", "late", b"late")
    waiting.join(timeout=10)
    assert answers and answers[0].code == h.SUCCESS and answers[0].ext["nextBeginOffset"] == "1"


def test_a_suspended_pull_does_not_hold_back_the_requests_behind_it(server) -> None:
    """Requests pipelined on one connection are answered side by side, as the broker answers them."""
    from frontends.remoting.codec import FrameSplitter, decode

    with RemotingClient(f"127.0.0.1:{server.broker_port}") as setup:
        setup.create_topic("Pipelined", 1, 1)
    with socket.create_connection(("127.0.0.1", server.broker_port), timeout=5) as sock:
        pull = Command(h.PULL_MESSAGE, 1, ext={"consumerGroup": "G", "topic": "Pipelined", "queueId": "0",
                                               "queueOffset": "0", "sysFlag": str(h.FLAG_SUSPEND)})
        sock.sendall(encode(pull) + encode(Command(h.HEART_BEAT, 2)))
        first = decode(FrameSplitter().feed(sock.recv(65536))[0])
        assert first.opaque == 2 and first.code == h.SUCCESS  # the heart beat, while the pull still waits
