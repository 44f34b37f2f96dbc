"""Catalog vectors of ALLOC-00..06, QSEL-01..04, SEND-4X-01..07 and SEND-5X-01..03 against the pure rules."""
from __future__ import annotations

import pytest

from reference_impl.rules import allocation as a, codes, queue_selection as q, send as s
from reference_impl.rules.allocation import MessageQueue as MQ
from reference_impl.rules.primitives import INT_MAX, md5_ring_hash

pytestmark = pytest.mark.reference_rule


def mqs(n: int, topic: str = "T", broker: str = "broker-a") -> list[MQ]:
    return [MQ(topic, broker, i) for i in range(n)]


def _each(strategy, queues, cids):
    return [[m.queue_id for m in strategy(queues, cids, c)] for c in cids]


@pytest.mark.spec("ALLOC-00")
def test_sorting_and_check():
    queues, cids = a.prepare([MQ("T", "broker-b", 0), MQ("T", "broker-a", 7)], ["c1", "c0"])
    assert cids == ["c0", "c1"] and queues == [MQ("T", "broker-a", 7), MQ("T", "broker-b", 0)]
    assert a.allocate_averagely(mqs(4), ["c0"], "c9") == []
    with pytest.raises(ValueError):
        a.allocate_averagely([], ["c0"], "c0")


@pytest.mark.spec("ALLOC-01")
@pytest.mark.parametrize("n,c,expected", [(8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
                                          (10, 4, [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]),
                                          (3, 5, [[0], [1], [2], [], []])])
def test_averagely(n, c, expected):
    assert _each(a.allocate_averagely, mqs(n), [f"c{i}" for i in range(c)]) == expected


@pytest.mark.spec("ALLOC-02")
@pytest.mark.parametrize("n,c,expected", [(8, 3, [[0, 3, 6], [1, 4, 7], [2, 5]]),
                                          (10, 4, [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]),
                                          (3, 5, [[0], [1], [2], [], []])])
def test_by_circle(n, c, expected):
    assert _each(a.allocate_by_circle, mqs(n), [f"c{i}" for i in range(c)]) == expected


@pytest.mark.spec("ALLOC-03", "PRIM-04")
def test_consistent_hash():
    assert md5_ring_hash("c0-0") == 2316876094
    assert md5_ring_hash(str(MQ("TopicTest", "broker-a", 0))) == 1987926524
    queues = mqs(8, "TopicTest")
    assert _each(a.allocate_consistent_hash, queues, ["c0", "c1", "c2"]) == [[1], [0, 3, 4, 5, 7], [2, 6]]
    cids = ["192.168.0.1@DEFAULT", "192.168.0.2@DEFAULT", "192.168.0.3@DEFAULT"]
    assert _each(a.allocate_consistent_hash, queues, cids) == [[6, 7], [0, 3, 4, 5], [1, 2]]
    with pytest.raises(ValueError):
        a.allocate_consistent_hash(queues, ["c0"], "c0", virtual_nodes=-1)


@pytest.mark.spec("ALLOC-04")
def test_machine_room_nearby():
    queues = [MQ("T", "A-broker", i) for i in range(4)] + [MQ("T", "B-broker", i) for i in range(2)]
    room = lambda mq: mq.broker_name[0]  # noqa: E731
    consumer_room = lambda cid: cid[1]  # noqa: E731
    got = {c: [f"{m.broker_name[0].lower()}{m.queue_id}" for m in a.allocate_machine_room_nearby(
        queues, ["cA1", "cA2"], c, a.allocate_averagely, room, consumer_room)] for c in ("cA1", "cA2")}
    assert got == {"cA1": ["a0", "a1", "b0"], "cA2": ["a2", "a3", "b1"]}


@pytest.mark.spec("ALLOC-05")
def test_by_config():
    configured = [MQ("T", "b", 1), MQ("T", "b", 3)]
    strategy = a.allocate_by_config(configured)
    assert strategy(mqs(8), ["c0", "c1"], "c0") == configured == strategy(mqs(8), ["c0", "c1"], "c1")


@pytest.mark.spec("ALLOC-06")
def test_by_machine_room():
    queues = [MQ("T", "IDC1@b1", i) for i in range(4)] + [MQ("T", "IDC2@b2", i) for i in range(4)]
    got = [[m.queue_id for m in a.allocate_by_machine_room(queues, ["c0", "c1", "c2"], c, {"IDC1"})]
           for c in ("c0", "c1", "c2")]
    assert got == [[0, 3], [1], [2]]


@pytest.mark.spec("QSEL-01")
def test_thread_local_index():
    index = q.ThreadLocalIndex(INT_MAX)
    assert index.increment_and_get() == 0
    index = q.ThreadLocalIndex(5)
    assert index.increment_and_get() == 6


@pytest.mark.spec("QSEL-02")
def test_select_avoiding_last_broker():
    queues = mqs(4, broker="broker-a") + mqs(4, broker="broker-b")
    index = q.ThreadLocalIndex(5)
    assert q.select_one(queues, index, "broker-b") == MQ("T", "broker-a", 0) and index.index == 8
    single = mqs(4)
    index = q.ThreadLocalIndex(0)
    assert q.select_one(single, index, "broker-a") == MQ("T", "broker-a", 1)  # after 4 misses: next round robin
    assert q.select_one(single, q.ThreadLocalIndex(2)) == MQ("T", "broker-a", 3)


@pytest.mark.spec("QSEL-03")
def test_publish_queue_list():
    route = [q.QueueData("broker-b", 2, 2), q.QueueData("broker-a", 3, 3)]
    assert [f"{m.broker_name[-1]}{m.queue_id}" for m in q.publish_queues("T", route)] == ["a0", "a1", "a2", "b0", "b1"]
    read_only = [q.QueueData("broker-b", 2, 2), q.QueueData("broker-a", 3, 3, perm=4)]
    assert [f"{m.broker_name[-1]}{m.queue_id}" for m in q.publish_queues("T", read_only)] == ["b0", "b1"]
    assert len(q.subscribe_queues("T", read_only)) == 5
    assert q.new_topic_queue_nums(4, 8) == 4
    assert [m.queue_id for m in q.publish_queues("T", [], "brokerA:2;brokerB:1")] == [0, 1, 0]


@pytest.mark.spec("QSEL-04")
def test_python_round_robin_and_java_candidates():
    selector = q.PythonQueueSelector(mqs(4), 5)
    assert [selector.select_next_queue().queue_id for _ in range(4)] == [1, 2, 3, 0]
    queues = mqs(2, broker="a") + mqs(2, broker="b") + mqs(2, broker="c")
    assert [m.broker_name for m in q.java_take_message_queues(queues, 0, set(), 3)] == ["a", "b", "c"]
    assert [m.broker_name for m in q.java_take_message_queues(queues, 0, {"a"}, 3)] == ["b", "c"]
    assert [m.broker_name for m in q.java_take_message_queues(queues, 0, {"a", "b", "c"}, 2)] == ["a", "b"]


@pytest.mark.spec("SEND-4X-01", "CLAIM-05")
def test_producer_defaults_and_dead_broker():
    assert (s.SEND_MSG_TIMEOUT_MS, s.RETRY_TIMES_WHEN_SEND_FAILED, s.RETRY_TIMES_WHEN_SEND_ASYNC_FAILED) == (3000, 2, 2)
    assert (s.COMPRESS_MSG_BODY_OVER_HOWMUCH, s.DEFAULT_TOPIC_QUEUE_NUMS, s.CREATE_TOPIC_KEY) == (4096, 4, "TBW102")
    dead = [s.Attempt(failure="remoting")] * 5
    assert len(s.sync_send(dead).attempts) == 3
    assert len(s.sync_send(dead, retry_times=0).attempts) == 1
    assert len(s.oneway_send(dead).attempts) == 1


@pytest.mark.spec("SEND-4X-02")
def test_sync_loop_decisions():
    trace = s.sync_send([s.Attempt(codes.R_SYSTEM_ERROR), s.Attempt(codes.R_MESSAGE_ILLEGAL)])
    assert len(trace.attempts) == 2 and trace.error_code == 13
    flush = [s.Attempt(codes.R_FLUSH_DISK_TIMEOUT), s.Attempt(codes.R_SUCCESS)]
    assert s.sync_send(flush).status == "FLUSH_DISK_TIMEOUT" and len(s.sync_send(flush).attempts) == 1
    assert s.sync_send(flush, retry_another_broker_when_not_store_ok=True).status == "SEND_OK"
    budgets = s.sync_send([s.Attempt(failure="remoting", cost_ms=2900), s.Attempt(codes.R_SUCCESS)]).budgets_ms
    assert budgets == [3000, 100]
    slow = s.sync_send([s.Attempt(failure="timeout")] * 3)
    assert len(slow.attempts) == 1 and slow.error == "sendDefaultImpl call timeout"


@pytest.mark.spec("SEND-4X-03")
def test_retry_response_codes():
    assert s.retry_response_codes("4.9.8") == {17, 14, 1, 16, 204, 205}
    assert s.retry_response_codes("5.3.0") == {17, 14, 1, 16, 204, 205, 2, 1500}
    busy = [s.Attempt(codes.R_SYSTEM_BUSY), s.Attempt(codes.R_SUCCESS)]
    assert s.sync_send(busy, version="4.9.8").error_code == 2
    assert s.sync_send(busy, version="5.3.0").status == "SEND_OK"


@pytest.mark.spec("SEND-4X-04")
def test_status_mapping():
    assert s.send_status_for(0) == "SEND_OK" and s.send_status_for(11) == "SLAVE_NOT_AVAILABLE"
    assert s.send_status_for(10) == "FLUSH_DISK_TIMEOUT" and s.send_status_for(12) == "FLUSH_SLAVE_TIMEOUT"
    with pytest.raises(codes.RocketMQError) as err:
        s.send_status_for(2)
    assert err.value.code == 2


@pytest.mark.spec("SEND-4X-05", "CLAIM-10")
def test_async_retry():
    timeouts = s.async_send([s.Attempt(failure="timeout")] * 5)
    assert len(timeouts.attempts) == 3 and timeouts.error_code == -1
    broker_error = s.async_send([s.Attempt(codes.R_SYSTEM_ERROR), s.Attempt(codes.R_SUCCESS)])
    assert len(broker_error.attempts) == 1 and broker_error.error_code == 1


@pytest.mark.spec("SEND-4X-06")
@pytest.mark.parametrize("latency,old,new", [(49, 0, 0), (100, 0, 0), (550, 30000, 2000), (1000, 60000, 2000),
                                             (1800, 60000, 5000), (2000, 120000, 5000), (3000, 180000, 6000),
                                             (5000, 180000, 10000), (15000, 600000, 30000)])
def test_latency_fault_tables(latency, old, new):
    assert q.not_available_duration(latency, "4.9.8") == old and q.not_available_duration(latency, "5.1.4") == new


@pytest.mark.spec("SEND-4X-06")
def test_isolation_durations():
    assert q.not_available_duration(0, "4.9.8", isolation=True) == 600000
    assert q.not_available_duration(0, "5.1.4", isolation=True) == 10000
    table = q.FaultTable()
    table.update("broker-a", 550, now_ms=0)
    assert not table.available("broker-a", 29_999) and table.available("broker-a", 30_000)


@pytest.mark.spec("SEND-4X-07")
def test_latency_fault_queue_choice():
    queues = mqs(4, broker="broker-a") + mqs(4, broker="broker-b")
    index = q.ThreadLocalIndex(4)
    assert q.select_with_latency_fault(queues, index, lambda b: b != "broker-a") == MQ("T", "broker-b", 1)
    assert q.select_with_latency_fault(queues, q.ThreadLocalIndex(0), lambda b: False) is None


@pytest.mark.spec("SEND-5X-01")
def test_java_5x_send_retry():
    busy = s.GrpcAttempt(codes.TOO_MANY_REQUESTS)
    trace = s.java_5x_send([busy, busy, busy])
    assert len(trace.attempts) == 3 and trace.waits_ms == [20, 40] and not trace.ok
    assert s.java_5x_send([busy, busy, busy], settings_synced=False).waits_ms == [0, 0]
    net = s.java_5x_send([s.GrpcAttempt(network_error=True), s.GrpcAttempt()])
    assert net.ok and net.waits_ms == [0]


@pytest.mark.spec("SEND-5X-02")
def test_python_5x_send_retry():
    assert len(s.python_5x_send([s.GrpcAttempt(codes.TOO_MANY_REQUESTS)] * 3).attempts) == 1
    internal = s.python_5x_send([s.GrpcAttempt(codes.INTERNAL_SERVER_ERROR)] * 3)
    assert len(internal.attempts) == 3 and internal.error_code == codes.INTERNAL_SERVER_ERROR


@pytest.mark.spec("SEND-5X-03", "CLAIM-06")
def test_flow_control_codes():
    assert codes.TOO_MANY_REQUESTS == 42900 and codes.R_SYSTEM_BUSY == 2 and codes.R_FLOW_CONTROL == 215
    assert s.grpc_code_for_remoting(codes.R_SYSTEM_BUSY) == 42900
    assert s.grpc_code_for_remoting(codes.R_SUCCESS) == codes.OK
    assert s.grpc_code_for_remoting(99) == codes.INTERNAL_SERVER_ERROR
    assert 530 not in {v for k, v in vars(codes).items() if k.isupper() and isinstance(v, int)}
