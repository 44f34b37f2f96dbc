"""The vectors that need code rather than a table: sequences over a rule's state (an OrderInfo committed
offset by offset, consumed counts merged pop by pop, a local FIFO retry schedule summed), generated inputs
(bodies and property maps at the limits), byte layouts, and rules that take a callback. The vectors that
are plain inputs and outputs are data in ``spec/behaviours`` (``test_rule_vectors.py``)."""
from __future__ import annotations

import pytest

from reference_impl.rules import allocation as a
from reference_impl.rules import codes, node5x
from reference_impl.rules import fifo as f
from reference_impl.rules import filter as sql
from reference_impl.rules import message_id as mid
from reference_impl.rules import offsets as o
from reference_impl.rules import queue_selection as q
from reference_impl.rules import retry5x as x
from reference_impl.rules import send as s
from reference_impl.rules import storage as st
from reference_impl.rules import validation as v
from reference_impl.rules.allocation import MessageQueue as MQ
from reference_impl.rules.codes import RocketMQError
from reference_impl.rules.primitives import INT_MAX, md5_ring_hash

pytestmark = pytest.mark.reference_rule


@pytest.mark.spec("RETRY-5X-08")
def test_fifo_local_schedule_java_and_python():
    policy = x.sdk_consumer_policy("java", x.consumer_settings())
    waits = x.fifo_local_waits_ms("java", 1, policy)
    assert len(waits) == 16 and sum(waits) == 6_346_000
    assert len(x.fifo_local_attempts("python", 16, 17)) == 17


@pytest.mark.spec("FIFO-04")
def test_order_info_commit_and_next():
    info = f.OrderInfo(f.OrderInfo.build_offset_list([100, 101, 103]), 1000, 60_000, "a1")
    assert info.offset_list == [100, 1, 3]
    assert f.commit_and_next(info, 101, 1000) == 100 and info.commit_bits == 0b010
    assert f.commit_and_next(info, 102, 1000) == -1
    assert f.commit_and_next(info, 100, 999) == -2
    assert f.commit_and_next(info, 100, 1000) == 103 and info.commit_bits == 0b011
    assert f.commit_and_next(info, 103, 1000) == 104 and info.commit_bits == 0b111
    assert f.commit_and_next(None, 7, 0) == 8
    assert f.commit_and_next(f.OrderInfo([], 0, 0, "x"), 7, 0) == -1


@pytest.mark.spec("FIFO-06")
def test_consumed_count_merge():
    first = f.OrderInfo(f.OrderInfo.build_offset_list([100, 101]), 0, 0, "a1")
    counts = f.merge_consumed_count(first, [100, 101, 102], "a2")
    assert counts == {100: 1, 101: 1} and f.min_consumed_count(counts, [100, 101, 102]) == 0
    second = f.OrderInfo(f.OrderInfo.build_offset_list([100, 101, 102]), 0, 0, "a2", offset_consumed_count=counts)
    counts3 = f.merge_consumed_count(second, [100, 101, 102], "a3")
    assert counts3 == {100: 2, 101: 2, 102: 1} and f.min_consumed_count(counts3, [100, 101, 102]) == 1
    assert f.merge_consumed_count(second, [100], "a2") == counts
    assert f.fifo_delivery_attempt(2) == 3
    # a local-mode proxy gives every message of the pop the queue's minimum: 100 and 101 (counted once) are
    # handed out as attempt 1 beside 102, new; then all three as attempt 2; a stored count stays under a 0
    assert f.local_proxy_reconsume_times(counts, [100, 101, 102], 0) == 0
    assert f.local_proxy_reconsume_times(counts3, [100, 101, 102], 0) == 1
    assert f.local_proxy_reconsume_times(counts, [100, 101, 102], 5) == 5


@pytest.mark.spec("CLAIM-07", "RETRY-5X-08")
def test_fifo_retry_interval_is_the_backoff_list_not_3000ms():
    policy = x.sdk_consumer_policy("java", x.consumer_settings(fifo=True))
    waits = x.fifo_local_waits_ms("java", 1, policy)
    assert waits[:4] == [1000, 5000, 10_000, 30_000] and 3000 not in waits


@pytest.mark.spec("FILTER-05")
@pytest.mark.parametrize("expression", ["a BETWEEN 10 AND 1", "a = NULL", "b > 'aaa'", "x > 0.0", "a >", "a IN (1, 2)",
                                        "(a = 1"])
def test_parse_errors_answer_the_subscription(expression):
    code, remark = sql.sql_subscription_check(expression, True)
    assert code == codes.R_SUBSCRIPTION_PARSE_FAILED == 23 and expression in remark


@pytest.mark.spec("LIMIT-03")
def test_body_limits():
    v.check_body_client(b"x" * 4194304)
    with pytest.raises(RocketMQError, match="the message body size over max value, MAX: 4194304") as err:
        v.check_body_client(b"x" * 4194305)
    assert err.value.code == 13
    with pytest.raises(RocketMQError, match="length is zero"):
        v.check_body_client(b"")
    with pytest.raises(RocketMQError) as grpc_empty:
        v.check_body_proxy(b"")
    assert grpc_empty.value.code == 41302
    with pytest.raises(RocketMQError) as grpc_big:
        v.check_body_proxy(b"x" * 4194305)
    assert grpc_big.value.code == 41301
    v.check_body_proxy(b"x" * 4194305, max_message_size=0)


@pytest.mark.spec("LIMIT-04")
def test_property_limits():
    with pytest.raises(RocketMQError) as many:
        v.check_properties_proxy({f"k{i}": "v" for i in range(129)})
    assert many.value.code == 43101
    with pytest.raises(RocketMQError) as reserved:
        v.check_properties_proxy({"DELAY": "1"})
    assert reserved.value.code == 40007
    with pytest.raises(RocketMQError) as tag:
        v.check_properties_proxy({}, tag="a|b")
    assert tag.value.code == 40004
    with pytest.raises(RocketMQError) as large:
        v.check_properties_proxy({"k": "v" * 16384})
    assert large.value.code == 43101
    with pytest.raises(RocketMQError, match="msg properties length limit 32KB"):
        v.check_properties_store("x" * 32768)


@pytest.mark.spec("LIMIT-05")
def test_batch_size():
    uniq = st.properties_to_string({"UNIQ_KEY": "0" * 32, "WAIT": "true"})
    with pytest.raises(RocketMQError) as err:
        v.check_batch_size([b"x" * 5000] * 1000, [uniq] * 1000)
    assert err.value.code == 13
    v.check_batch_size([b"x" * 5000] * 800, [uniq] * 800)


@pytest.mark.spec("STORE-01")
def test_commitlog_lengths_and_crc():
    assert st.cal_msg_length(5, 9, 0) == 105 and st.cal_msg_length(0, 0, 0) == 91
    assert st.cal_msg_length(5, 9, 0, sys_flag=0x30) == 129 and st.cal_msg_length(11, 9, 36) == 147
    assert st.body_crc(b"hello") == 907060870
    unit = st.encode_commitlog(st.CommitLogMessage("TopicTest", b"hello", queue_id=3, queue_offset=7))
    assert len(unit) == 105 and int.from_bytes(unit[4:8], "big", signed=True) == st.MESSAGE_MAGIC_CODE
    assert int.from_bytes(unit[8:12], "big") == 907060870 and int.from_bytes(unit[12:16], "big") == 3
    assert st.decode_commitlog(unit).body == b"hello"
    assert st.body_crc(b"a") == 1756872259                      # UtilAll.crc32: CRC32 & 0x7FFFFFFF (an odd one)
    # a unit made of the record's defaults: a broker on 127.0.0.1:10911, every number 0, read back field by field
    plain = st.decode_commitlog(st.encode_commitlog(st.CommitLogMessage("T")))
    assert plain == st.CommitLogMessage("T", b"", 0, 0, 0, 0, 0, 0, ("127.0.0.1", 0), 0, ("127.0.0.1", 10911), 0, 0, {})
    with pytest.raises(ValueError, match="magic"):
        st.decode_commitlog(unit[:4] + (1).to_bytes(4, "big") + unit[8:])
    with pytest.raises(ValueError, match="CRC"):
        st.decode_commitlog(unit.replace(b"hello", b"jello"))    # a byte of the body changed
    units = list(st.iter_units(unit + unit + (8).to_bytes(4, "big") + st.BLANK_MAGIC_CODE.to_bytes(4, "big", signed=True)))
    assert [u.queue_offset for u in units] == [7, 7]
    assert len(list(st.iter_units(unit + unit))) == 2             # a buffer may end right after a unit
    assert len(list(st.iter_units(unit + bytes(8)))) == 1         # a zero total size ends the walk


@pytest.mark.spec("STORE-02")
def test_magic_codes_and_versions():
    assert (st.MESSAGE_MAGIC_CODE, st.MESSAGE_MAGIC_CODE_V2, st.BLANK_MAGIC_CODE) == (-626843481, -626843477, -875286124)
    assert st.message_version_for_topic(127) == st.MESSAGE_MAGIC_CODE
    assert st.message_version_for_topic(128) == st.MESSAGE_MAGIC_CODE_V2
    assert st.message_version_for_topic(128, develop=False) == st.MESSAGE_MAGIC_CODE
    long_topic = st.encode_commitlog(st.CommitLogMessage("t" * 200, b"x"))
    assert st.decode_commitlog(long_topic).topic == "t" * 200


@pytest.mark.spec("STORE-03")
def test_end_of_file_blank():
    blank, offset = st.place_in_file(1073741800, 105)
    assert blank == (24).to_bytes(4, "big") + (0xCBD43194).to_bytes(4, "big") and offset == 1073741824
    assert st.place_in_file(0, 105) == (None, 0)


@pytest.mark.spec("STORE-05")
def test_consume_queue_unit():
    unit = st.encode_cq_unit(1073742124, 105, sql.tags_code("TagA"))
    assert unit.hex().upper() == "000000004000012C00000069000000000027A807"
    assert st.cq_position(7) == 140 and st.decode_cq_unit(unit) == (1073742124, 105, 2598919)
    assert st.decode_cq_unit(st.CQ_BLANK_UNIT) == (0, 2**31 - 1, 0)


@pytest.mark.spec("STORE-07")
def test_index_file():
    assert st.index_file_size() == 420_000_040
    assert st.index_key_hash("TopicTest#KEY1") == 1656969516
    assert st.index_slot_position("TopicTest#KEY1") == (1969516, 7878104)
    assert st.index_entry_position(1) == 20000060
    assert st.index_slot_position("T#k") == (81916, 327704)
    assert len(st.encode_index_header(0, 0, 0, 0, 0, 1)) == 40
    assert st.encode_index_entry(1, 2, -5, 0)[12:16] == b"\x00\x00\x00\x00"
    assert st.encode_index_entry(1, 2, 2**31 + 5, 0)[12:16] == b"\x7f\xff\xff\xff"   # IndexFile.putKey: MAX_VALUE
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE, whose Math.abs stays negative: indexKeyHashMethod gives 0
    assert st.index_key_hash("polygenelubricants") == 0


@pytest.mark.spec("OFFSET-01")
def test_consume_from_where():
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_LAST_OFFSET, False, 1000, lambda: 0) == 1000
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_LAST_OFFSET, True, 1000, lambda: 0) == 0
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_FIRST_OFFSET, False, 1000, lambda: 5) == 0
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_TIMESTAMP, False, 1000, lambda: 42) == 42
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_TIMESTAMP, True, 1000, lambda: 42) == 1000
    assert o.compute_pull_from_where(17, o.CONSUME_FROM_FIRST_OFFSET, False, 1000, lambda: 0) == 17
    assert o.compute_pull_from_where(-2, o.CONSUME_FROM_LAST_OFFSET, False, 1000, lambda: 0) == -1


@pytest.mark.spec("MSGID-01")
def test_offset_msg_id_of_an_ipv6_store():
    assert len(mid.offset_msg_id("::1", 10911, 0)) == 56


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


@pytest.mark.spec("FIFO-03")
def test_select_queue_by_hash_4x():
    assert f.select_queue_by_hash_4x(-1, 4) == 1       # Java's remainder is -1, then Math.abs
    assert f.select_queue_by_hash_4x(-8, 4) == 0
    assert f.select_queue_by_hash_4x(9, 4) == 1


@pytest.mark.spec("FIFO-04", "FIFO-05")
def test_order_info_edges():
    assert f.OrderInfo.build_offset_list([]) == [] and f.OrderInfo.build_offset_list([5]) == [5]
    assert f.OrderInfo([], 1000, 60_000, "a").next_offset() == -2
    assert f.commit_and_next(None, 7, 0) == 8                                    # no order info: the next offset
    assert f.commit_and_next(f.OrderInfo([5], 1000, 60_000, "a"), 5, 999) == -2  # another pop's commit
    assert f.commit_and_next(f.OrderInfo([5], 1000, 60_000, "a"), 6, 1000) == -1  # not one of its offsets
    unset = f.OrderInfo([5], 1000, 0, "a")       # no invisible time of its own: the request's counts
    assert unset.need_block("b", 1500, 60_000) and not unset.need_block("a", 1500, 60_000)
    one = f.OrderInfo([5], 1000, 1, "a")
    assert one.need_block("b", 1000, 60_000) and not one.need_block("b", 1001, 60_000)


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
    assert a.allocate_consistent_hash(queues, ["c0"], "c0", virtual_nodes=0) == []  # an empty ring routes to null


@pytest.mark.spec("ALLOC-04")
def test_machine_room_nearby():
    queues = [MQ("T", "A-broker", i) for i in range(4)] + [MQ("T", "B-broker", i) for i in range(2)]
    room = lambda mq: mq.broker_name[0]  # noqa: E731
    consumer_room = lambda cid: cid[1]  # noqa: E731
    got = {c: [f"{m.broker_name[0].lower()}{m.queue_id}" for m in a.allocate_machine_room_nearby(
        queues, ["cA1", "cA2"], c, a.allocate_averagely, room, consumer_room)] for c in ("cA1", "cA2")}
    assert got == {"cA1": ["a0", "a1", "b0"], "cA2": ["a2", "a3", "b1"]}
    with pytest.raises(ValueError):  # "Machine room is null for mq"
        a.allocate_machine_room_nearby(queues, ["cA1"], "cA1", a.allocate_averagely, lambda mq: "", consumer_room)
    with pytest.raises(ValueError):
        a.allocate_machine_room_nearby(queues, ["cA1"], "cA1", a.allocate_averagely, room, lambda cid: "")


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
    five = [MQ("T", "IDC1@b1", i) for i in range(5)]  # mod 2, rem 1: the first consumer takes the fifth
    assert [[m.queue_id for m in a.allocate_by_machine_room(five, ["c0", "c1"], c, {"IDC1"})]
            for c in ("c0", "c1")] == [[0, 1, 4], [2, 3]]


@pytest.mark.spec("QSEL-01")
def test_thread_local_index():
    index = q.ThreadLocalIndex(INT_MAX)
    assert index.increment_and_get() == 0
    index = q.ThreadLocalIndex(5)
    assert index.increment_and_get() == 6
    assert q.ThreadLocalIndex(-5).increment_and_get() == 6                 # 4.9.8: Math.abs of the seed
    assert q.ThreadLocalIndex(-5, "5.1.4").increment_and_get() == (-4) & INT_MAX  # 5.x: the seed as drawn


@pytest.mark.spec("QSEL-02")
def test_select_avoiding_last_broker():
    queues = mqs(4, broker="broker-a") + mqs(4, broker="broker-b")
    index = q.ThreadLocalIndex(5)
    assert q.select_one(queues, index, "broker-b") == MQ("T", "broker-a", 0) and index.index == 8
    single = mqs(4)
    index = q.ThreadLocalIndex(0)
    assert q.select_one(single, index, "broker-a") == MQ("T", "broker-a", 1)  # after 4 misses: next round robin
    assert q.select_one(single, q.ThreadLocalIndex(2)) == MQ("T", "broker-a", 3)
    assert q.select_one(single, q.ThreadLocalIndex(4)) == MQ("T", "broker-a", 1)  # index % size


@pytest.mark.spec("QSEL-03")
def test_publish_queue_list():
    route = [q.QueueData("broker-b", 2, 2, 6), q.QueueData("broker-a", 3, 3, 6)]
    assert [f"{m.broker_name[-1]}{m.queue_id}" for m in q.publish_queues("T", route)] == ["a0", "a1", "a2", "b0", "b1"]
    read_only = [q.QueueData("broker-b", 2, 2, 6), q.QueueData("broker-a", 3, 3, perm=4)]
    assert [f"{m.broker_name[-1]}{m.queue_id}" for m in q.publish_queues("T", read_only)] == ["b0", "b1"]
    assert len(q.subscribe_queues("T", read_only)) == 5
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
    assert len(slow.attempts) == 1 and slow.error == "sendDefaultImpl call timeout" and slow.error_code == -1
    assert s.elapsed_ms(slow) == 3001                              # a timeout takes its whole budget, then its cost
    # timeout < costTime ends the loop: a cost of exactly the timeout still gets an attempt (with no budget left)
    edge = s.sync_send([s.Attempt(codes.R_SYSTEM_ERROR, cost_ms=3000), s.Attempt(codes.R_SUCCESS)])
    assert edge.status == "SEND_OK" and edge.budgets_ms == [3000, 0]
    failing = s.sync_send([s.Attempt(codes.R_SYSTEM_ERROR)] * 4)   # 1 + retryTimesWhenSendFailed, 1 ms each
    assert len(failing.attempts) == 3 and failing.error_code == codes.R_SYSTEM_ERROR
    assert failing.error == "Send [3] times, still failed, cost [3]ms (MQBrokerException)"
    assert (s.sync_send([]).error_code, s.sync_send([]).error) == (-1, "Send [0] times, still failed, cost [0]ms (no attempt)")
    assert s.sync_send([s.Attempt(codes.R_MESSAGE_ILLEGAL)]).error_code == codes.R_MESSAGE_ILLEGAL  # not retried
    assert [a.code for a in s.oneway_send([s.Attempt(codes.R_SUCCESS), s.Attempt(codes.R_SYSTEM_ERROR)]).attempts] == [0]


@pytest.mark.spec("SEND-4X-03")
def test_system_busy_is_retried_from_5x():
    busy = [s.Attempt(codes.R_SYSTEM_BUSY), s.Attempt(codes.R_SUCCESS)]
    assert s.sync_send(busy, version="4.9.8").error_code == 2
    assert s.sync_send(busy, version="5.3.0").status == "SEND_OK"
    assert codes.R_SYSTEM_BUSY not in s.retry_response_codes("5.2.0")
    assert {codes.R_SYSTEM_BUSY, codes.R_GO_AWAY} <= s.retry_response_codes("5.3.0")


@pytest.mark.spec("SEND-4X-05", "CLAIM-10")
def test_async_retry():
    timeouts = s.async_send([s.Attempt(failure="timeout")] * 5)
    assert len(timeouts.attempts) == 3 and timeouts.error_code == -1
    broker_error = s.async_send([s.Attempt(codes.R_SYSTEM_ERROR), s.Attempt(codes.R_SUCCESS)])
    assert len(broker_error.attempts) == 1 and broker_error.error_code == 1


@pytest.mark.spec("SEND-4X-06")
def test_isolation_durations():
    table = q.FaultTable()
    table.update("broker-a", 550, now_ms=0)
    assert not table.available("broker-a", 29_999) and table.available("broker-a", 30_000)
    assert table.available("broker-b", 0)  # never faulted: available from time 0


@pytest.mark.spec("SEND-4X-07")
def test_latency_fault_queue_choice():
    queues = mqs(4, broker="broker-a") + mqs(4, broker="broker-b")
    index = q.ThreadLocalIndex(4)
    assert q.select_with_latency_fault(queues, index, lambda b: b != "broker-a") == MQ("T", "broker-b", 1)
    assert q.select_with_latency_fault(queues, q.ThreadLocalIndex(0), lambda b: False) is None
    three = mqs(1, broker="a") + mqs(1, broker="b") + mqs(1, broker="c")
    assert q.select_with_latency_fault(three, q.ThreadLocalIndex(0), lambda b: b != "b") == MQ("T", "c", 0)


@pytest.mark.spec("SEND-5X-01")
def test_java_5x_send_retry():
    busy = s.GrpcAttempt(codes.TOO_MANY_REQUESTS)
    trace = s.java_5x_send([busy, busy, busy])
    assert len(trace.attempts) == 3 and trace.waits_ms == [20, 40] and not trace.ok
    assert s.java_5x_send([busy, busy, busy], settings_synced=False).waits_ms == [0, 0]
    net = s.java_5x_send([s.GrpcAttempt(network_error=True), s.GrpcAttempt()])
    assert net.ok and net.waits_ms == [0]
    # the default policy (10 ms, 1 s, x2) from the second attempt: its maximum from the eighth
    assert s.java_5x_send([busy] * 9, max_attempts=9).waits_ms == [20, 40, 80, 160, 320, 640, 1000, 1000]
    assert len(s.java_5x_send([busy] * 5).attempts) == 3          # maxAttempts 3
    node = s.send_5x([busy] * 3, node5x.SDK, backoff=(2000, 60000, 2))   # SDK-NODE-02: whole seconds as ms
    assert node.waits_ms == [node5x.publishing_retry_delay_ms(2, (2000, 60000, 2)),
                             node5x.publishing_retry_delay_ms(3, (2000, 60000, 2))] == [4, 8]


@pytest.mark.spec("SEND-5X-02")
def test_python_5x_send_retry():
    assert len(s.python_5x_send([s.GrpcAttempt(codes.TOO_MANY_REQUESTS)] * 3).attempts) == 1
    internal = s.python_5x_send([s.GrpcAttempt(codes.INTERNAL_SERVER_ERROR)] * 3)
    assert len(internal.attempts) == 3 and internal.error_code == codes.INTERNAL_SERVER_ERROR


@pytest.mark.spec("SEND-5X-03", "CLAIM-06")
def test_flow_control_codes():
    assert 530 not in {v for k, v in vars(codes).items() if k.isupper() and isinstance(v, int)}


@pytest.mark.spec("SEND-5X-03")
def test_grpc_codes_are_the_official_sdks():
    """Every gRPC code the rules use has the number of ``apache.rocketmq.v2.Code`` in the official Python
    SDK's generated protocol (the same ``definition.proto`` the proxy serves)."""
    from rocketmq.grpc_protocol import definition_pb2
    names = [n for n in dir(codes) if n.isupper() and not n.startswith(("R_", "C_"))]
    assert len(names) >= 20
    assert {n: getattr(codes, n) for n in names} == {n: definition_pb2.Code.Value(n) for n in names}


REMOTING_RESPONSE_CODES = {  # remoting/.../RemotingSysResponseCode.java and common/.../ResponseCode.java @4.9.8
    "SUCCESS": 0, "SYSTEM_ERROR": 1, "SYSTEM_BUSY": 2, "FLUSH_DISK_TIMEOUT": 10, "SLAVE_NOT_AVAILABLE": 11,
    "FLUSH_SLAVE_TIMEOUT": 12, "MESSAGE_ILLEGAL": 13, "SERVICE_NOT_AVAILABLE": 14, "NO_PERMISSION": 16,
    "TOPIC_NOT_EXIST": 17, "PULL_NOT_FOUND": 19, "PULL_RETRY_IMMEDIATELY": 20, "PULL_OFFSET_MOVED": 21,
    "QUERY_NOT_FOUND": 22, "SUBSCRIPTION_PARSE_FAILED": 23, "SUBSCRIPTION_GROUP_NOT_EXIST": 26, "NO_BUYER_ID": 204,
    "NOT_IN_CURRENT_UNIT": 205, "FLOW_CONTROL": 215,
    "GO_AWAY": 1500,  # remoting/.../protocol/ResponseCode.java @rocketmq-all-5.3.3
}
CLIENT_ERROR_CODES = {  # client/.../common/ClientErrorCode.java @rocketmq-all-4.9.8
    "CONNECT_BROKER_EXCEPTION": 10001, "ACCESS_BROKER_TIMEOUT": 10002, "BROKER_NOT_EXIST_EXCEPTION": 10003,
    "NOT_FOUND_TOPIC_EXCEPTION": 10005,
}


@pytest.mark.spec("SEND-5X-03")
def test_remoting_and_client_codes_are_javas():
    remoting = {n[2:]: getattr(codes, n) for n in dir(codes) if n.startswith("R_")}
    client = {n[2:]: getattr(codes, n) for n in dir(codes) if n.startswith("C_")}
    assert remoting == REMOTING_RESPONSE_CODES
    assert client == CLIENT_ERROR_CODES


@pytest.mark.spec("SDK-NODE-05")
def test_node_message_type_numbers_are_the_protocols():
    """The numbers the Node.js client prints for message types are ``apache.rocketmq.v2.MessageType``'s."""
    from rocketmq.grpc_protocol import definition_pb2
    assert node5x.MESSAGE_TYPE_NUMBERS == {n: definition_pb2.MessageType.Value(n) for n in node5x.MESSAGE_TYPE_NUMBERS}


@pytest.mark.spec("LIMIT-01", "LIMIT-02")
def test_name_lengths_at_their_limits():
    """127 characters for a topic; 255 for a group up to 5.3.3, 120 from 5.5.0: the limit itself passes, one more
    is refused."""
    for check in (v.check_topic_client_4x, v.check_topic_broker_4x, v.check_topic_proxy):
        check("t" * 127)
        with pytest.raises(RocketMQError):
            check("t" * 128)
    v.check_group("g" * 255, "5.3.3")
    with pytest.raises(RocketMQError, match="longer than group max length 255"):
        v.check_group("g" * 256, "5.3.3")
    v.check_group("g" * 120, "5.5.0")
    with pytest.raises(RocketMQError, match=r"longer than group max length: 120\.$"):
        v.check_group("g" * 121, "5.5.0")


@pytest.mark.spec("LIMIT-04")
def test_property_sizes_at_their_limits():
    v.check_properties_store("a" * 32767)                      # Short.MAX_VALUE, in characters and in bytes
    for too_long in ("a" * 32768, "\u00e9" * 16384):           # 16384 characters are 32768 UTF-8 bytes
        with pytest.raises(RocketMQError):
            v.check_properties_store(too_long)
    v.check_properties_proxy({f"k{i}": "v" for i in range(128)})
    with pytest.raises(RocketMQError) as many:
        v.check_properties_proxy({f"k{i}": "v" for i in range(129)})
    assert many.value.code == codes.MESSAGE_PROPERTIES_TOO_LARGE
    v.check_properties_proxy({"k": "v" * 16383})                # key and value bytes: 16 KiB exactly
    with pytest.raises(RocketMQError):
        v.check_properties_proxy({"k": "v" * 16384})
    with pytest.raises(RocketMQError):                          # keys count too
        v.check_properties_proxy({"k": "v" * 16382}, keys=["ab"])
    v.check_properties_proxy({"k": "v" * 16381}, keys=["ab"])
    v.check_body_python_5x(b"x" * v.MAX_MESSAGE_SIZE)
    with pytest.raises(RocketMQError):
        v.check_body_python_5x(b"x" * (v.MAX_MESSAGE_SIZE + 1))


@pytest.mark.spec("PRIM-01", "FILTER-06")
def test_java_arithmetic_and_comparison_at_their_edges():
    """The JDK's documented results at the values where Java and Python part (``Integer``, ``Long``,
    ``Double`` and ``String`` Javadoc)."""
    from reference_impl.rules import primitives as p

    assert p.to_int32(2**31) == -(2**31) and p.to_int32(2**32 + 5) == 5            # (int) of a long wraps
    assert p.to_int64(2**63) == -(2**63)
    assert p.java_parse_long("-9223372036854775808") == -(2**63)                 # Long.MIN_VALUE parses
    with pytest.raises(ValueError):
        p.java_parse_long("-9223372036854775809")                                # one below does not
    assert p.java_rem(-1, 3) == -1 and p.java_rem(-7, 3) == -1 and p.java_rem(7, -3) == 1   # sign of the dividend
    assert p.java_trim(" \ta \x00") == "a"                                       # String.trim: every char <= U+0020
    assert p.java_double_to_long_bits(float("nan")) == 0x7FF8000000000000        # the canonical NaN
    assert p.java_double_compare(-2.0, -1.0) == -1 and p.java_double_compare(-1.0, -2.0) == 1
    assert p.java_string_compare("a", "b") == -1 and p.java_string_compare("b", "a") == 1
    assert p.java_string_compare("a", "a") == 0
    assert p.java_string_compare("\uffff", "\U0001f600") == 1                    # UTF-16 units, not code points
    assert p.java_char_digit("a") == -1 and p.java_char_digit("\u0663") == 3     # Character.digit(c, 10)
