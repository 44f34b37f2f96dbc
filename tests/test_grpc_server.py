"""``rmqc serve`` at the protocol level: bad input gets the code a 5.x proxy returns, never a crash.

The requests are built with the stubs the official SDK ships; the server runs in this process on a
free loopback port.
"""
from __future__ import annotations

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as rpc
from rocketmq.grpc_protocol import service_pb2_grpc

from frontends.grpc.server import ReferenceServer, ServeConfig

pytestmark = pytest.mark.spec("LIMIT-01", "LIMIT-02", "LIMIT-03", "TOPIC-02", "RETRY-5X-09")

KNOWN_CODES = set(pb.Code.values())


@pytest.fixture(scope="module")
def server():
    srv = ReferenceServer(port=0, time_scale=0.01, config=ServeConfig(
        topics=[{"name": "T", "queues": 4}, {"name": "TX", "queues": 2, "message_type": "TRANSACTION"}],
        auto_create=False)).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def stub(server):
    channel = grpc.insecure_channel(server.address)
    yield service_pb2_grpc.MessagingServiceStub(channel)
    channel.close()


def _message(topic="T", body=b"x", message_id="01ABC", **system) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name=topic), body=body)
    m.system_properties.message_id = message_id
    m.system_properties.message_type = pb.NORMAL
    for k, v in system.items():
        setattr(m.system_properties, k, v)
    return m


def _send(stub, message: pb.Message) -> rpc.SendMessageResponse:
    return stub.SendMessage(rpc.SendMessageRequest(messages=[message]), timeout=5)


def _receive(stub, group="G", topic="T", invisible_s=30, batch=16, poll_ms=10):
    request = rpc.ReceiveMessageRequest(group=pb.Resource(name=group), batch_size=batch, auto_renew=False)
    request.message_queue.topic.name = topic
    request.message_queue.id = -1
    request.invisible_duration.seconds = invisible_s
    request.long_polling_timeout.nanos = poll_ms * 1_000_000
    return list(stub.ReceiveMessage(request, timeout=5))


@pytest.mark.parametrize("message,code", [
    (_message(topic=""), 40002),
    (_message(topic="a.b"), 40002),
    (_message(topic="rmq_sys_x"), 40002),
    (_message(topic="Unknown"), 40402),
    (_message(body=b""), 41302),
    (_message(body=b"x" * (4 * 1024 * 1024 + 1)), 41301),
    (_message(message_id=""), 40009),
    (_message(message_group="g" * 64), 40006),
], ids=["missing-topic", "bad-topic", "system-topic", "unknown-topic", "empty-body", "oversized-body",
        "missing-message-id", "long-message-group"])
def test_bad_sends_get_the_proxy_code(stub, message, code):
    response = _send(stub, message)
    assert response.status.code == code, response
    assert response.entries[0].status.code == code


def test_empty_send_request_is_a_bad_request(stub):
    assert stub.SendMessage(rpc.SendMessageRequest(), timeout=5).status.code == 40000


@pytest.mark.parametrize("group,code", [("", 40003), ("CID_RMQ_SYS_TRANS", 40003), ("g" * 256, 40003)])  # 255 is allowed (LIMIT-02)
def test_bad_groups_are_refused_on_receive(stub, group, code):
    (only,) = _receive(stub, group=group)
    assert only.status.code == code


def test_receive_invisible_time_and_batch_checks(stub):
    (short,) = _receive(stub, invisible_s=5)
    assert short.status.code == 40011  # under 10 s without auto-renew (RETRY-5X-09)
    (empty_batch,) = _receive(stub, batch=0)
    assert empty_batch.status.code == 40000
    (unknown,) = _receive(stub, topic="Nope")
    assert unknown.status.code == 40402


def test_receipt_handles_ack_again_ok_forged_invalid(stub):
    assert _send(stub, _message(message_id="ACK-ONCE")).status.code == 20000
    responses = _receive(stub, group="G-ack")
    assert responses[-1].status.code == 20000
    (delivered,) = [r.message for r in responses if r.HasField("message")]
    assert delivered.system_properties.body_digest.checksum and delivered.system_properties.delivery_attempt == 1
    ack = rpc.AckMessageRequest(group=pb.Resource(name="G-ack"), topic=pb.Resource(name="T"))
    ack.entries.add(message_id="ACK-ONCE", receipt_handle=delivered.system_properties.receipt_handle)
    assert stub.AckMessage(ack, timeout=5).status.code == 20000
    again = stub.AckMessage(ack, timeout=5)  # the broker has no duplicate check: OK while the handle is unexpired
    assert again.status.code == 20000 and again.entries[0].status.code == 20000
    forged = rpc.AckMessageRequest(group=pb.Resource(name="G-ack"), topic=pb.Resource(name="T"))
    forged.entries.add(message_id="ACK-ONCE", receipt_handle="not-a-handle")
    assert stub.AckMessage(forged, timeout=5).entries[0].status.code == 40013
    bad = rpc.ChangeInvisibleDurationRequest(group=pb.Resource(name="G-ack"), topic=pb.Resource(name="T"),
                                             receipt_handle="not-a-handle", message_id="x")
    bad.invisible_duration.seconds = 10
    assert stub.ChangeInvisibleDuration(bad, timeout=5).status.code == 40013
    forward = rpc.ForwardMessageToDeadLetterQueueRequest(group=pb.Resource(name="G-ack"), topic=pb.Resource(name="T"),
                                                         receipt_handle="not-a-handle", message_id="x")
    assert stub.ForwardMessageToDeadLetterQueue(forward, timeout=5).status.code == 40013


def test_unserved_methods_answer_not_implemented(stub):
    assert stub.QueryOffset(rpc.QueryOffsetRequest(), timeout=5).status.code == 50100
    with pytest.raises(grpc.RpcError) as pulled:
        list(stub.PullMessage(rpc.PullMessageRequest(), timeout=5))
    assert pulled.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_unknown_transaction_is_refused(stub):
    end = rpc.EndTransactionRequest(topic=pb.Resource(name="T"), message_id="m", transaction_id="tx-404",
                                    resolution=pb.COMMIT)
    assert stub.EndTransaction(end, timeout=5).status.code == 40008
    end.transaction_id = ""
    assert stub.EndTransaction(end, timeout=5).status.code == 40008


def test_unspecified_resolution_is_unknown_and_answered_ok(stub):
    """The proxy reads a resolution other than COMMIT / ROLLBACK as UNKNOWN: OK, the half waits for checks."""
    send = rpc.SendMessageRequest(messages=[pb.Message(
        topic=pb.Resource(name="TX"), body=b"x",
        system_properties=pb.SystemProperties(message_id="tx-unspecified", message_type=pb.TRANSACTION,
                                              body_encoding=pb.IDENTITY))])
    entry = stub.SendMessage(send, timeout=5).entries[0]
    assert entry.status.code == 20000 and entry.transaction_id
    end = rpc.EndTransactionRequest(topic=pb.Resource(name="TX"), message_id="tx-unspecified",
                                    transaction_id=entry.transaction_id)
    assert stub.EndTransaction(end, timeout=5).status.code == 20000
    end.resolution = pb.COMMIT
    assert stub.EndTransaction(end, timeout=5).status.code == 20000


def test_route_carries_what_the_sdk_needs(stub, server):
    route = stub.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="T")), timeout=5)
    assert route.status.code == 20000 and len(route.message_queues) == 4
    q = route.message_queues[0]
    assert q.permission == pb.READ_WRITE and q.broker.id == 0
    assert q.broker.endpoints.addresses[0].port == server.port


@pytest.mark.spec("TOPIC-05")
def test_a_topic_takes_its_own_message_type_only(stub):
    """An untyped topic is NORMAL: its route accepts NORMAL only and the proxy refuses a FIFO or transactional
    message on it, and a NORMAL one on a TRANSACTION topic, with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE."""
    route = stub.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="T")), timeout=5)
    assert {tuple(q.accept_message_types) for q in route.message_queues} == {(pb.NORMAL,)}
    tx_route = stub.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="TX")), timeout=5)
    assert {tuple(q.accept_message_types) for q in tx_route.message_queues} == {(pb.TRANSACTION,)}
    for topic, message_id, kind, group in (("T", "fifo-on-normal", pb.FIFO, "g"), ("T", "tx-on-normal", pb.TRANSACTION, None),
                                           ("TX", "normal-on-tx", pb.NORMAL, None)):
        sp = pb.SystemProperties(message_id=message_id, message_type=kind, body_encoding=pb.IDENTITY)
        if group:
            sp.message_group = group
        send = rpc.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name=topic), body=b"x", system_properties=sp)])
        entry = stub.SendMessage(send, timeout=5).entries[0]
        assert entry.status.code == 40014 and "TopicMessageType validate failed" in entry.status.message, entry


# ---- fuzzing at the gRPC layer ----------------------------------------------------------------

_text = st.one_of(st.just(""), st.just("T"), st.text(max_size=40), st.sampled_from(["%DLQ%G", "rmq_sys_x", "T" * 130]))


@st.composite
def fuzzed_messages(draw: st.DrawFn) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name=draw(_text)), body=draw(st.binary(max_size=64)))
    sp = m.system_properties
    sp.message_id = draw(_text)
    sp.message_type = draw(st.sampled_from(list(pb.MessageType.values())))
    if draw(st.booleans()):
        sp.tag = draw(_text)
    if draw(st.booleans()):
        sp.message_group = draw(_text)
    if draw(st.booleans()):
        sp.delivery_timestamp.seconds = draw(st.integers(0, 2**40))
    if draw(st.booleans()):
        sp.keys.extend(draw(st.lists(_text, max_size=3)))
    for k, v in draw(st.dictionaries(_text, _text, max_size=3)).items():
        m.user_properties[k] = v
    return m


@st.composite
def fuzzed_calls(draw: st.DrawFn):
    kind = draw(st.sampled_from(["send", "receive", "ack", "change", "forward", "route", "assign", "end"]))
    group, topic = pb.Resource(name=draw(_text)), pb.Resource(name=draw(_text))
    handle = draw(st.one_of(st.just(""), st.text(max_size=20), st.sampled_from(["rh-1", "rh-999999"])))
    duration = {"seconds": draw(st.integers(-10, 10**6)), "nanos": draw(st.integers(0, 999_999_999))}
    if kind == "send":
        return "SendMessage", rpc.SendMessageRequest(messages=draw(st.lists(fuzzed_messages(), max_size=3)))
    if kind == "receive":
        request = rpc.ReceiveMessageRequest(group=group, batch_size=draw(st.integers(-5, 100)),
                                            auto_renew=draw(st.booleans()), attempt_id=draw(_text))
        request.message_queue.topic.CopyFrom(topic)
        request.invisible_duration.seconds = duration["seconds"]
        request.long_polling_timeout.nanos = draw(st.integers(0, 20_000_000))
        return "ReceiveMessage", request
    if kind == "ack":
        request = rpc.AckMessageRequest(group=group, topic=topic)
        for _ in range(draw(st.integers(0, 3))):
            request.entries.add(message_id=draw(_text), receipt_handle=handle)
        return "AckMessage", request
    if kind == "change":
        request = rpc.ChangeInvisibleDurationRequest(group=group, topic=topic, receipt_handle=handle)
        request.invisible_duration.seconds = duration["seconds"]
        return "ChangeInvisibleDuration", request
    if kind == "forward":
        return "ForwardMessageToDeadLetterQueue", rpc.ForwardMessageToDeadLetterQueueRequest(
            group=group, topic=topic, receipt_handle=handle, delivery_attempt=draw(st.integers(-1, 20)))
    if kind == "route":
        return "QueryRoute", rpc.QueryRouteRequest(topic=topic)
    if kind == "assign":
        return "QueryAssignment", rpc.QueryAssignmentRequest(topic=topic, group=group)
    return "EndTransaction", rpc.EndTransactionRequest(topic=topic, message_id=draw(_text), transaction_id=draw(_text),
                                                       resolution=draw(st.sampled_from([0, 1, 2])))


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=fuzzed_calls())
def test_fuzzed_requests_get_a_rocketmq_status(stub, call):
    """Whatever the fields hold, the answer is a RocketMQ status code, and the server keeps serving."""
    method, request = call
    answer = getattr(stub, method)(request, timeout=5)
    responses = list(answer) if method == "ReceiveMessage" else [answer]
    statuses = [r.status.code for r in responses if r.HasField("status")]
    assert statuses, f"{method} answered without a status"
    assert set(statuses) <= KNOWN_CODES, statuses
    assert 50001 not in statuses, f"{method} hit an internal error: {responses}"
    alive = stub.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="T")), timeout=5)
    assert alive.status.code == 20000
