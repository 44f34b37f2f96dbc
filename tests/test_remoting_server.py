"""The remoting front end over the model: a client written here with the standard library sets up topics
and groups with mqadmin's admin codes, reads routes and sends; bad frames close only their connection."""
from __future__ import annotations

import json
import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.remoting_client import (
    RemotingClient,
    RemotingClientError,
    commitlog_units,
)
from frontends.model_service import RealTimeModel
from frontends.remoting import handlers as h
from frontends.remoting.codec import ROCKETMQ, Command, encode
from frontends.remoting.server import RemotingServer
from history.profiles import GRPC_5X
from reference_impl.model.simulation import Simulation
from reference_impl.rules import message_id

pytestmark = pytest.mark.spec("REMOTING-01", "TOPIC-05")


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
        assert answer.code == h.SUCCESS
        # SendMessageResponseHeader.msgId is the offset message id: the store host and the commit-log offset
        host, port, offset = message_id.decode_offset_msg_id(answer.ext["msgId"])
        assert (host, port) == ("127.0.0.1", server.broker_port)
    with server.model.locked() as sim:
        stored = [m for m in sim.broker.queues[("S", 0)] if m.msg_id == f"u-{code}-{serialize}"]
        assert len(stored) == 1 and stored[0].body == b"hello" and stored[0].properties["KEYS"] == f"k-{code}-{serialize}"


def _send_attempt(client: RemotingClient, topic: str, queue_id: int, uniq: str) -> Command:
    header = {"producerGroup": "P", "topic": topic, "queueId": queue_id, "sysFlag": 0, "bornTimestamp": 0, "flag": 0,
              "properties": _properties(KEYS=uniq, UNIQ_KEY=uniq)}
    return client.call(h.SEND_MESSAGE, header, body=b"x")


def test_a_topic_made_on_both_brokers_spans_them_and_their_faults_are_logged(server) -> None:
    """The second broker keeps only topics made on it too; its queue q is the model's stride + q; an injected
    fault answers its code for the session's topics only, and every attempt is logged with what it met."""
    a, b = server.broker_addresses
    with RemotingClient(server.namesrv_address) as ns:
        assert [name for name, _ in ns.broker_table()] == ["broker-a", "broker-b"]
    with RemotingClient(a) as broker_a, RemotingClient(b) as broker_b:
        assert broker_a.create_topic("Two-s1", 2, 2).code == h.SUCCESS
        assert _send_attempt(broker_b, "Two-s1", 0, "before").code == h.TOPIC_NOT_EXIST  # not made on broker-b yet
        assert broker_b.create_topic("Two-s1", 2, 2).code == h.SUCCESS
        assert broker_b.create_topic("Two-s1", 4, 4).code == h.SYSTEM_ERROR  # one queue layout on both
        with RemotingClient(server.namesrv_address) as ns:
            route = ns.route("Two-s1")
        assert [q["brokerName"] for q in route["queueDatas"]] == ["broker-a", "broker-b"]
        assert broker_b.inject_send_fault("system_busy", 1, scope="-s1").code == h.SUCCESS
        assert broker_b.inject_send_fault("unreachable", 1, scope="-s1").code == h.SYSTEM_ERROR
        assert broker_b.inject_send_fault("nonsense", 1, scope="-s1").code == h.SYSTEM_ERROR
        assert broker_a.create_topic("Other-s2", 1, 1).code == h.SUCCESS
        assert _send_attempt(broker_b, "Two-s1", 1, "busy").code == 2  # SYSTEM_BUSY
        stored = _send_attempt(broker_b, "Two-s1", 1, "stored")
        assert stored.code == h.SUCCESS and stored.ext["queueId"] == "1"
        assert broker_a.inject_send_fault("system_error", -1, scope="-s1").code == h.SUCCESS
        assert _send_attempt(broker_a, "Other-s2", 0, "elsewhere").code == h.SUCCESS  # another scope: untouched
        assert _send_attempt(broker_a, "Two-s1", 0, "refused").code == h.SYSTEM_ERROR
        assert broker_a.inject_send_fault("", 0, scope="-s1", clear=True).code == h.SUCCESS
        assert _send_attempt(broker_a, "Two-s1", 0, "cleared").code == h.SUCCESS
        log = {u: broker_a.send_attempts(u, None) for u in ("busy", "stored", "refused", "cleared")}
    assert [(x["broker"], x["outcome"], x["stored"]) for x in log["busy"]] == [("broker-b", "2", False)]
    assert [(x["broker"], x["outcome"], x["stored"]) for x in log["stored"]] == [("broker-b", "0", True)]
    assert [(x["broker"], x["outcome"]) for x in log["refused"]] == [("broker-a", "1")]
    assert [(x["broker"], x["outcome"]) for x in log["cleared"]] == [("broker-a", "0")]
    with server.model.locked() as sim:
        stride = sim.broker.topics["Two-s1"].stride
        assert [m.msg_id for m in sim.broker.queues[("Two-s1", stride + 1)]] == ["stored"]


def test_an_injected_timeout_is_never_answered(server) -> None:
    with RemotingClient(server.broker_addresses[0], timeout_s=1) as client:
        client.create_topic("Slow-s3", 1, 1)
        client.inject_send_fault("timeout_after_store", 1, scope="-s3")
        with pytest.raises(RemotingClientError, match="did not answer"):
            _send_attempt(client, "Slow-s3", 0, "dropped")
    with RemotingClient(server.broker_addresses[0]) as client:
        assert [(x["outcome"], x["stored"]) for x in client.send_attempts("dropped", None)] == [("timeout", True)]
    with server.model.locked() as sim:
        assert [m.msg_id for m in sim.broker.queues[("Slow-s3", 0)]] == ["dropped"]


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


def _request_frame(code: int, ext: dict) -> bytes:
    header = json.dumps({"code": code, "flag": 0, "opaque": 7, "language": "JAVA", "version": 0,
                         "extFields": ext}).encode()
    return struct.pack(">ii", len(header) + 4, len(header)) + header


HOSTILE = st.one_of(
    st.binary(min_size=1, max_size=64),  # noise
    st.integers(16 * 1024 * 1024 + 1, 2**31 - 1).map(lambda n: struct.pack(">i", n)),  # over the frame limit
    st.binary(max_size=32).map(lambda header: struct.pack(">ii", len(header) + 4, len(header) + 50) + header),
    st.sampled_from([b'{"code":', b'{"code":"x"}', b'[1,2]', b'{"code":10,"extFields":{"topic":[1]}}']).map(
        lambda header: struct.pack(">ii", len(header) + 4, len(header)) + header),  # bad JSON, wrong types
    st.integers(2, 127).map(lambda kind: struct.pack(">ii", 6, (kind << 24) | 2) + b"{}"),  # unknown serialization
    st.integers(1000, 2**31 - 1).map(lambda code: _request_frame(code, {})),  # unknown codes
    st.builds(lambda code, field, value: _request_frame(code, {field: value}),  # wrong types in ext fields
              st.sampled_from([h.SEND_MESSAGE, h.PULL_MESSAGE, h.QUERY_CONSUMER_OFFSET, h.UPDATE_CONSUMER_OFFSET,
                               h.CONSUMER_SEND_MSG_BACK, h.END_TRANSACTION, h.SEARCH_OFFSET_BY_TIMESTAMP,
                               h.GET_CONSUMER_RUNNING_INFO, h.LOCK_BATCH_MQ, h.GET_MAX_OFFSET, h.SEND_BATCH_MESSAGE]),
              st.sampled_from(["topic", "queueId", "queueOffset", "offset", "commitLogOffset", "timestamp",
                               "consumerGroup", "maxMsgNums", "sysFlag"]),
              st.sampled_from(["abc", "-1", "99999999999999999999", "", "1.5", "\u0000"])),
)
FUZZED = {"frames": 0, "answered": 0, "closed": 0}


def _answers(data: bytes) -> list[Command]:
    from frontends.remoting.codec import FrameSplitter, decode

    return [decode(payload) for payload in FrameSplitter().feed(data)]


@settings(max_examples=500, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None)
@given(frames=st.lists(HOSTILE, min_size=1, max_size=8))
def test_hostile_frames_close_only_their_connection(server, frames: list[bytes]) -> None:
    """Each hostile frame gets a RocketMQ code or its connection closed; the server keeps serving."""
    received = b""
    with socket.create_connection(("127.0.0.1", server.broker_port), timeout=5) as sock:
        for frame in frames:
            try:
                sock.sendall(frame)
                FUZZED["frames"] += 1
            except OSError:
                break
        try:
            sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                received += chunk
        except OSError:  # the server already closed it: the answer to a bad frame
            pass
    answers = _answers(received)
    assert all(a.is_response and isinstance(a.code, int) for a in answers)
    FUZZED["answered"] += len(answers)
    FUZZED["closed"] += 1 if len(answers) < len(frames) else 0
    with RemotingClient(server.namesrv_address) as client:
        assert client.call(h.GET_BROKER_CLUSTER_INFO).code == h.SUCCESS


def test_after_the_fuzz_a_well_formed_send_succeeds(server) -> None:
    """Runs after the fuzz above: at least 1,000 hostile frames went in, and the broker still stores a send."""
    assert FUZZED["frames"] >= 1000, f"the fuzz sent only {FUZZED}"
    with RemotingClient(f"127.0.0.1:{server.broker_port}") as client:
        assert client.create_topic("AfterFuzz", 1, 1).code == h.SUCCESS
        _send(client, "AfterFuzz", "ok", b"still serving")
        assert [m.body for m in client.pull("G", "AfterFuzz", 0, 0)[1]] == [b"still serving"]
    print(f"fuzz: {FUZZED['frames']} frames, {FUZZED['answered']} answered with a code, "
          f"{FUZZED['closed']} connections closed, {server.connections_closed_for_bad_frames} for malformed frames")


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


@pytest.mark.spec("OFFSET-02")
@pytest.mark.parametrize("release,empty_answer", [("5.0.0", "0"), ("5.1.4", None), ("5.5.0", None)])
def test_a_new_groups_offset_on_an_empty_queue_follows_the_release(release: str, empty_answer: str | None) -> None:
    """OFFSET-02's variants over the wire: a new group's QUERY_CONSUMER_OFFSET on a queue with no message yet is
    SUCCESS 0 until 5.0.0 (``!checkInDiskByConsumeOffset``) and QUERY_NOT_FOUND from 5.1.0
    (``checkInMemByConsumeOffset``); once the queue has a message in memory, 0 at every release."""
    model = RealTimeModel(Simulation(GRPC_5X, run_id="offsets", release=release), 0.01)
    model.start()
    srv = RemotingServer(model).start()
    try:
        with RemotingClient(f"127.0.0.1:{srv.broker_port}") as client:
            client.create_topic("Young", 1, 1)
            group = {"consumerGroup": "New", "topic": "Young", "queueId": 0}
            empty = client.call(h.QUERY_CONSUMER_OFFSET, group)
            if empty_answer is None:
                assert empty.code == h.QUERY_NOT_FOUND and empty.remark.startswith("Not found"), empty
            else:
                assert empty.code == h.SUCCESS and empty.ext["offset"] == empty_answer, empty
            _send(client, "Young", "first", b"x")
            young = client.call(h.QUERY_CONSUMER_OFFSET, group)
            assert young.code == h.SUCCESS and young.ext["offset"] == "0", young
    finally:
        srv.stop()
        model.stop()


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


# ---- orderly locks, search by time, transactions and the broker's calls to its clients ----------------


def _heart_beat(client: RemotingClient, client_id: str, consumer_group: str = "", producer_group: str = "") -> None:
    data: dict = {"clientID": client_id, "consumerDataSet": [], "producerDataSet": []}
    if consumer_group:
        data["consumerDataSet"].append({"groupName": consumer_group, "consumeType": "CONSUME_PASSIVELY",
                                        "messageModel": "CLUSTERING", "subscriptionDataSet": []})
    if producer_group:
        data["producerDataSet"].append({"groupName": producer_group})
    assert client.call(h.HEART_BEAT, body=json.dumps(data).encode()).code == h.SUCCESS


def _lock_body(client_id: str, *queues: int) -> bytes:
    return json.dumps({"consumerGroup": "LG", "clientId": client_id, "onlyThisBroker": True,
                       "mqSet": [{"topic": "L", "brokerName": "broker-a", "queueId": q} for q in queues]}).encode()


def test_lock_batch_grants_free_queues_and_unlock_frees_them(server) -> None:
    """LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (RebalanceLockManager): a queue held by one client is not granted to
    another until the holder unlocks it."""
    with RemotingClient(f"127.0.0.1:{server.broker_port}") as a, RemotingClient(f"127.0.0.1:{server.broker_port}") as b:
        assert a.create_topic("L", 2, 2).code == h.SUCCESS
        got = json.loads(a.call(h.LOCK_BATCH_MQ, body=_lock_body("A", 0, 1)).body)["lockOKMQSet"]
        assert sorted(q["queueId"] for q in got) == [0, 1]
        assert json.loads(b.call(h.LOCK_BATCH_MQ, body=_lock_body("B", 0)).body)["lockOKMQSet"] == []
        assert a.call(h.UNLOCK_BATCH_MQ, body=_lock_body("A", 0)).code == h.SUCCESS
        assert [q["queueId"] for q in json.loads(b.call(h.LOCK_BATCH_MQ, body=_lock_body("B", 0)).body)["lockOKMQSet"]] == [0]
        assert json.loads(a.call(h.LOCK_BATCH_MQ, body=_lock_body("A", 0, 1)).body)["lockOKMQSet"] == \
            [{"topic": "L", "brokerName": "broker-a", "queueId": 1}]
        assert a.call(h.LOCK_BATCH_MQ, body=b"{}").code == h.SYSTEM_ERROR  # no mqSet: a clear refusal


def test_search_offset_by_timestamp(server) -> None:
    """SEARCH_OFFSET_BY_TIMESTAMP: the first offset stored at or after the time; the end when none was."""
    with RemotingClient(f"127.0.0.1:{server.broker_port}") as client:
        assert client.create_topic("ByTime", 1, 1).code == h.SUCCESS
        for i in range(3):
            _send(client, "ByTime", f"t{i}", b"x")
        at = lambda ts: int(client.call(h.SEARCH_OFFSET_BY_TIMESTAMP,  # noqa: E731
                                        {"topic": "ByTime", "queueId": 0, "timestamp": ts}).ext["offset"])
        assert at(0) == 0
        assert at(10 ** 15) == 3


def test_consumers_are_told_when_their_group_changes(server) -> None:
    """NOTIFY_CONSUMER_IDS_CHANGED: a one-way request to the group's consumers when one joins or leaves."""
    address = f"127.0.0.1:{server.broker_port}"
    with RemotingClient(address) as a:
        _heart_beat(a, "A", consumer_group="CG")
        with RemotingClient(address) as b:
            _heart_beat(b, "B", consumer_group="CG")
            told = a.next_request(5)  # A's own arrival
            told = a.next_request(5)  # B's
            assert (told.code, told.ext["consumerGroup"], told.is_oneway) == (h.NOTIFY_CONSUMER_IDS_CHANGED, "CG", True)
        told = a.next_request(5)  # B's connection closed: A hears again
        assert told.code == h.NOTIFY_CONSUMER_IDS_CHANGED


def test_consumer_running_info_is_asked_of_the_client(server) -> None:
    """GET_CONSUMER_RUNNING_INFO: the broker forwards the admin's request to the client and answers with the
    client's answer; a client not connected is SYSTEM_ERROR."""
    import threading

    address = f"127.0.0.1:{server.broker_port}"
    with RemotingClient(address) as consumer, RemotingClient(address) as admin:
        _heart_beat(consumer, "C-1", consumer_group="RG")

        def answer() -> None:
            asked = consumer.next_request(5)
            while asked.code == h.NOTIFY_CONSUMER_IDS_CHANGED:  # its own arrival changed the group too
                asked = consumer.next_request(5)
            assert asked.code == h.GET_CONSUMER_RUNNING_INFO and asked.ext["clientId"] == "C-1"
            consumer.reply(asked, h.SUCCESS, body=b'{"properties":{"consumeType":"CONSUME_PASSIVELY"}}')

        replier = threading.Thread(target=answer)
        replier.start()
        got = admin.call(h.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "RG", "clientId": "C-1", "jstackEnable": "false"})
        replier.join(5)
        assert got.code == h.SUCCESS and json.loads(got.body)["properties"]["consumeType"] == "CONSUME_PASSIVELY"
        gone = admin.call(h.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "RG", "clientId": "nobody"})
        assert gone.code == h.SYSTEM_ERROR and "not online" in (gone.remark or "")


def _send_half(client: RemotingClient, topic: str, key: str) -> int:
    answer = client.call(h.SEND_MESSAGE, {"producerGroup": "PG", "topic": topic, "queueId": 0,
                                          "sysFlag": h.TRANSACTION_PREPARED_TYPE, "bornTimestamp": 0, "flag": 0,
                                          "properties": _properties(KEYS=key, TRAN_MSG="true", PGROUP="PG",
                                                                    UNIQ_KEY=f"uniq-{key}")}, body=key.encode())
    assert answer.code == h.SUCCESS
    return message_id.decode_offset_msg_id(answer.ext["msgId"])[2]


def _visible(client: RemotingClient, topic: str) -> list[str]:
    code, messages, _ = client.pull("TXG", topic, 0, 0)
    return [m.properties.get("KEYS", "") for m in messages]


def test_transactions_end_and_are_checked_over_remoting(server) -> None:
    """A half (TRAN_MSG, sysFlag prepared) is invisible until END_TRANSACTION commits it (TX-01); an
    unresolved one is checked with CHECK_TRANSACTION_STATE on its producer group's connection, carrying
    the half as a commit-log unit, and a rollback from the check keeps it invisible (TX-02, TX-03)."""
    with RemotingClient(f"127.0.0.1:{server.broker_port}") as producer:
        assert producer.create_topic("TxT", 1, 1).code == h.SUCCESS
        _heart_beat(producer, "P-1", producer_group="PG")
        committed = _send_half(producer, "TxT", "c")
        assert _visible(producer, "TxT") == []
        producer.call(h.END_TRANSACTION, {"producerGroup": "PG", "tranStateTableOffset": 0,
                                          "commitLogOffset": committed, "commitOrRollback": 8,
                                          "fromTransactionCheck": "false", "msgId": "uniq-c"}, oneway=True)
        deadline = time.monotonic() + 5
        while _visible(producer, "TxT") != ["c"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _visible(producer, "TxT") == ["c"]
        _send_half(producer, "TxT", "r")
        check = producer.next_request(10)  # the first check after the transaction timeout (60 s spec = 0.6 s)
        assert check.code == h.CHECK_TRANSACTION_STATE and check.is_oneway
        unit = commitlog_units(check.body)[0]
        assert unit.properties["KEYS"] == "r" and check.ext["msgId"] == "uniq-r"
        producer.call(h.END_TRANSACTION, {"producerGroup": "PG", "tranStateTableOffset": check.ext["tranStateTableOffset"],
                                          "commitLogOffset": check.ext["commitLogOffset"], "commitOrRollback": 12,
                                          "fromTransactionCheck": "true", "msgId": "uniq-r"}, oneway=True)
        time.sleep(0.2)
        assert _visible(producer, "TxT") == ["c"]
        bad = producer.call(h.END_TRANSACTION, {"producerGroup": "PG", "commitLogOffset": 10 ** 9, "commitOrRollback": 8})
        assert bad.code == h.SYSTEM_ERROR


def test_consumer_list_unregister_send_back_and_runtime_info(server) -> None:
    """GET_CONSUMER_LIST_BY_GROUP lists the heart-beating client, UNREGISTER_CLIENT takes it out (then the
    list is SYSTEM_ERROR); CONSUMER_SEND_MSG_BACK puts a pulled message into %RETRY%group, reconsume times
    1 after delay level 3 (RETRY-CONC-04); GET_MIN_OFFSET / GET_MAX_OFFSET bound it; the runtime info
    carries rmqc serve's time scale."""
    with RemotingClient(f"127.0.0.1:{server.broker_port}") as client:
        _heart_beat(client, "U-1", consumer_group="UG")
        listed = client.call(h.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "UG"})
        assert listed.code == h.SUCCESS and json.loads(listed.body)["consumerIdList"] == ["U-1"]
        assert client.call(h.UNREGISTER_CLIENT, {"clientID": "U-1", "consumerGroup": "UG"}).code == h.SUCCESS
        assert client.call(h.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "UG"}).code == h.SYSTEM_ERROR

        assert client.create_topic("Back", 1, 1).code == h.SUCCESS
        _send(client, "Back", "b0", b"again")
        [message] = client.pull("UG", "Back", 0, 0)[1]
        answer = client.call(h.CONSUMER_SEND_MSG_BACK, {"offset": message.physical_offset, "group": "UG",
                                                        "delayLevel": 0, "originMsgId": "", "originTopic": "Back",
                                                        "maxReconsumeTimes": 16})
        assert answer.code == h.SUCCESS
        deadline = time.monotonic() + 5
        retried: list = []
        while not retried and time.monotonic() < deadline:
            time.sleep(0.02)  # level 3: 10 s of spec time, 100 ms here
            retried = client.pull("UG", "%RETRY%UG", 0, 0)[1]
        assert [(m.body, m.reconsume_times) for m in retried] == [(b"again", 1)]
        assert client.call(h.GET_MIN_OFFSET, {"topic": "Back", "queueId": 0}).ext["offset"] == "0"
        assert client.max_offset("Back", 0) == 1
        assert float(client.runtime_info()[h.TIME_SCALE_KEY]) == 0.01


def _batch_unit(body: bytes, properties: str) -> bytes:
    props = properties.encode()
    total = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(props)
    return struct.pack(">iiiii", total, 0, 0, 0, len(body)) + body + struct.pack(">h", len(props)) + props


def test_a_batch_is_stored_in_order_and_a_delayed_batch_is_refused(server) -> None:
    """SEND_BATCH_MESSAGE: the units go into one queue in order, each with its own properties; the answer
    lists each unit's offset message id; a batch with DELAY is MESSAGE_ILLEGAL (DELAY-07); a truncated body
    is answered with a code, not a crash."""
    with RemotingClient(f"127.0.0.1:{server.broker_port}") as client:
        assert client.create_topic("Batch", 1, 1).code == h.SUCCESS
        body = b"".join(_batch_unit(f"b{i}".encode(), _properties(KEYS=f"k{i}", UNIQ_KEY=f"bu-{i}")) for i in range(3))
        header = {"a": "P", "b": "Batch", "e": 0, "f": 0, "g": 0, "h": 0, "i": "", "j": 0, "m": "true"}
        answer = client.call(h.SEND_BATCH_MESSAGE, header, body=body)
        assert answer.code == h.SUCCESS and len(answer.ext["msgId"].split(",")) == 3
        assert answer.ext["queueOffset"] == "0"
        pulled = client.pull("BG", "Batch", 0, 0)[1]
        assert [(m.body, m.properties["KEYS"]) for m in pulled] == [(b"b0", "k0"), (b"b1", "k1"), (b"b2", "k2")]
        delayed = client.call(h.SEND_BATCH_MESSAGE, {**header, "i": _properties(DELAY="3")}, body=body)
        assert delayed.code == 13
        assert client.call(h.SEND_BATCH_MESSAGE, header, body=body[:30]).code == h.SYSTEM_ERROR
