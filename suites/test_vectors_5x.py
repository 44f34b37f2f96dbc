"""Catalog vectors of RETRY-5X-01..10, FIFO-01..07, TX-01..06 and PRIM-01..04 against the pure rules."""
from __future__ import annotations

import pytest

from reference_impl.rules import codes, fifo as f, primitives as p, retry5x as x, transaction as t
from reference_impl.rules.transaction import CheckDecision, LocalTransactionState as S

pytestmark = pytest.mark.reference_rule


@pytest.mark.spec("RETRY-5X-01", "CLAIM-04")
def test_consumer_settings_defaults():
    s = x.consumer_settings()
    assert s.backoff.max_attempts == 17 and s.backoff.strategy == "CUSTOMIZED"
    assert len(s.backoff.customized_ms) == 18 and s.backoff.customized_ms[0] == 1000
    assert s.backoff.customized_ms[-1] == 7_200_000
    assert (s.receive_batch_size, s.long_polling_timeout_ms) == (32, 20_000)


@pytest.mark.spec("RETRY-5X-01")
def test_exponential_group_and_producer_settings():
    s = x.consumer_settings(3, "EXPONENTIAL")
    assert (s.backoff.max_attempts, s.backoff.initial_ms, s.backoff.max_ms, s.backoff.multiplier) == (4, 5000, 7_200_000, 2)
    prod = x.producer_settings()
    assert (prod.backoff.max_attempts, prod.backoff.initial_ms, prod.backoff.max_ms, prod.backoff.multiplier) == (3, 10, 1000, 2)
    assert prod.max_body_size == 4 * 1024 * 1024 and prod.validate_message_type


@pytest.mark.spec("RETRY-5X-02", "CLAIM-02")
@pytest.mark.parametrize("rt,ms", [(-1, 10_000), (0, 10_000), (1, 30_000), (15, 7_200_000), (16, 7_200_000)])
def test_server_customized_delay(rt, ms):
    assert x.server_customized_delay_ms(rt) == ms


@pytest.mark.spec("RETRY-5X-02")
@pytest.mark.parametrize("rt,ms", [(0, 5000), (1, 10_000), (2, 20_000), (5, 160_000), (10, 5_120_000),
                                   (11, 7_200_000), (33, 7_200_000)])
def test_server_exponential_delay(rt, ms):
    assert x.server_exponential_delay_ms(rt) == ms


@pytest.mark.spec("RETRY-5X-03")
@pytest.mark.parametrize("attempt,ms", [(1, 1000), (2, 5000), (3, 10_000), (4, 30_000), (16, 1_800_000),
                                        (17, 3_600_000), (18, 7_200_000), (25, 7_200_000)])
def test_java_customized(attempt, ms):
    assert x.java_customized_delay_ms(attempt) == ms


@pytest.mark.spec("RETRY-5X-03")
def test_java_customized_rejects_attempt_zero():
    with pytest.raises(ValueError):
        x.java_customized_delay_ms(0)


@pytest.mark.spec("RETRY-5X-04")
@pytest.mark.parametrize("policy,attempt,ms", [((10, 1000, 2), 1, 10), ((10, 1000, 2), 2, 20), ((10, 1000, 2), 3, 40),
                                               ((10, 1000, 2), 7, 640), ((10, 1000, 2), 8, 1000),
                                               ((5000, 7_200_000, 2), 1, 5000), ((5000, 7_200_000, 2), 2, 10_000),
                                               ((5000, 7_200_000, 2), 3, 20_000), ((5000, 7_200_000, 2), 12, 7_200_000),
                                               ((0, 0, 1), 5, 0)])
def test_java_exponential(policy, attempt, ms):
    assert x.java_exponential_delay_ms(attempt, *policy) == ms


@pytest.mark.spec("RETRY-5X-05")
def test_python_customized():
    seconds = x.python_customized_durations_s(x.DEFAULT_CUSTOMIZED_NEXT_MS)
    assert [x.python_customized_delay_s(a, seconds) for a in (1, 17, 19, 0)] == [1, 3600, 7200, 7200]
    assert x.python_customized_durations_s([1500]) == [1]
    assert x.python_customized_delay_s(3, []) == 1
    with pytest.raises(ValueError):
        x.python_customized_delay_s(-1, seconds)


@pytest.mark.spec("RETRY-5X-05")
def test_python_exponential():
    assert x.python_exponential_delay_s(3, 0.01, 1, 2) == pytest.approx(0.04)
    assert x.python_exponential_delay_s(3, 0, 1, 2) == 1


@pytest.mark.spec("RETRY-5X-06")
@pytest.mark.parametrize("attempt,ms", [(1, 1000), (4, 30_000), (17, 3_600_000)])
def test_nack_delay_by_delivery_attempt(attempt, ms):
    policy = x.sdk_consumer_policy("java", x.consumer_settings())
    assert x.nack_invisible_ms(policy, attempt) == ms
    assert x.delivery_attempt(attempt - 1) == attempt


@pytest.mark.spec("RETRY-5X-06")
def test_exponential_group_java_versus_python():
    settings = x.consumer_settings(16, "EXPONENTIAL")
    java = x.sdk_consumer_policy("java", settings)
    assert (x.nack_invisible_ms(java, 1), x.nack_invisible_ms(java, 3)) == (5000, 20_000)
    python = x.sdk_consumer_policy("python", settings)
    assert [x.nack_invisible_ms(python, a) for a in (1, 5, 16)] == [1000, 1000, 1000] and python.max_attempts == 17


@pytest.mark.spec("RETRY-5X-07")
@pytest.mark.parametrize("rt,max_attempts,decision", [(16, 17, "DELIVER"), (17, 17, "TO_DLQ"), (4, 4, "TO_DLQ"),
                                                      (3, 4, "DELIVER")])
def test_pop_filter(rt, max_attempts, decision):
    assert x.pop_filter(rt, max_attempts) == decision
    assert x.pop_filter(rt, max_attempts, tag_matches=False) == "NO_MATCH"


@pytest.mark.spec("RETRY-5X-08")
def test_fifo_local_schedule_java_and_python():
    policy = x.sdk_consumer_policy("java", x.consumer_settings())
    waits = x.fifo_local_waits_ms("java", 1, policy)
    assert len(waits) == 16 and sum(waits) == 6_346_000
    assert x.fifo_local_attempts("java", 16, 17) == [16, 17]
    assert len(x.fifo_local_attempts("python", 16, 17)) == 17


@pytest.mark.spec("RETRY-5X-09", "CLAIM-11")
def test_invisible_time_rules():
    with pytest.raises(x.IllegalInvisibleTime):
        x.receive_invisible_ms(5000, auto_renew=False)
    assert x.receive_invisible_ms(5000, auto_renew=True) == 60_000
    assert x.IllegalInvisibleTime.code == codes.ILLEGAL_INVISIBLE_TIME == 40011
    assert [x.renew_invisible_ms(n) for n in (0, 2, 9)] == [60_000, 300_000, 3_600_000]
    assert len(x.RENEW_STEPS_MS) == 6 and 360_000 not in x.RENEW_STEPS_MS
    assert x.server_next_delay_ms(x.consumer_settings().backoff, 0) == 10_000
    assert x.change_invisible_ms(0) == 0
    with pytest.raises(x.IllegalInvisibleTime):
        x.change_invisible_ms(12 * 3_600_000 + 1)
    assert x.renew_due(70_000, 60_000) and not x.renew_due(70_001, 60_000)
    assert x.renew_stopped(0, 3 * 3_600_000)
    assert x.long_polling_ms(30_000, 60_000, 10_000) == 20_000 and x.long_polling_ms(None, 12_000, 10_000) == 7_000


@pytest.mark.spec("RETRY-5X-10")
def test_revive_and_pop_init_offset():
    assert x.revive_reconsume_times(2) == 3
    assert x.pop_init_offset(0, 100, offset_zero_in_memory=False) == 99
    assert x.pop_init_offset(0, 100, offset_zero_in_memory=True) == 0
    assert x.pop_init_offset(5, 100, offset_zero_in_memory=True, init_mode_max=False) == 5


@pytest.mark.spec("FIFO-01", "PRIM-02")
@pytest.mark.parametrize("group,buckets", [("order-1", [0, 0, 3, 3, 3]), ("order-2", [0, 0, 2, 2, 11]),
                                           ("user-42", [0, 1, 1, 1, 1]), ("a", [0, 0, 0, 0, 0])])
def test_proxy_consistent_hash(group, buckets):
    assert [f.proxy_queue_for_group(group, n) for n in (1, 2, 4, 8, 16)] == buckets


@pytest.mark.spec("FIFO-02", "PRIM-03", "CLAIM-14")
def test_client_side_group_hashes():
    assert p.siphash24(b"order-1") == -4360020059536918905 and p.siphash24(b"a") == 3144613055062689994
    assert (f.java_client_queue_for_group("order-1", 8), f.java_client_queue_for_group("order-1", 16)) == (7, 7)
    assert f.java_client_queue_for_group("a", 16) == 10
    assert f.python_client_queue_for_group("order-2", 8) == 3
    assert f.java_client_queue_for_group("order-2", 8) == 6 and f.proxy_queue_for_group("order-2", 8) == 2


@pytest.mark.spec("FIFO-03", "PRIM-01")
@pytest.mark.parametrize("arg,queue", [(p.java_string_hash("order-1"), 6), (p.java_string_hash("order-2"), 5),
                                       (12345, 1), (-7, 7), (p.java_string_hash("Aa"), 0),
                                       (p.java_string_hash("BB"), 0), (p.INT_MIN, 0)])
def test_4x_select_by_hash(arg, queue):
    assert f.select_queue_by_hash_4x(arg, 8) == queue


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


@pytest.mark.spec("FIFO-05")
def test_need_block():
    info = f.OrderInfo([5, 1], 0, 60_000, "a1", commit_bits=0b01)
    assert info.need_block("a2", 30_000, 60_000)
    assert not info.need_block("a2", 60_000, 60_000)
    assert not info.need_block("a1", 30_000, 60_000)


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


@pytest.mark.spec("FIFO-07")
@pytest.mark.parametrize("group,code", [("a" * 63, codes.OK), ("a" * 64, codes.ILLEGAL_MESSAGE_GROUP),
                                        ("  ", codes.ILLEGAL_MESSAGE_GROUP), ("a\tb", codes.ILLEGAL_MESSAGE_GROUP)])
def test_message_group_validation(group, code):
    assert f.validate_message_group(group) == code


@pytest.mark.spec("TX-01")
def test_half_message():
    topic, qid, props = t.half_message("T", 2, {"DELAY": "3"}, "pg")
    assert (topic, qid) == ("RMQ_SYS_TRANS_HALF_TOPIC", 0)
    assert props == {"TRAN_MSG": "true", "PGROUP": "pg", "REAL_TOPIC": "T", "REAL_QID": "2"}
    assert t.local_state_after_send("FLUSH_DISK_TIMEOUT", S.COMMIT_MESSAGE) is S.ROLLBACK_MESSAGE
    assert t.local_state_after_send("SEND_OK", None) is S.UNKNOW


@pytest.mark.spec("TX-02")
def test_end_transaction():
    assert [t.commit_or_rollback_flag(s) for s in (S.COMMIT_MESSAGE, S.ROLLBACK_MESSAGE, S.UNKNOW)] == [8, 12, 0]
    topic, qid, props = t.committed_message({"REAL_TOPIC": "T", "REAL_QID": "2", "TRAN_MSG": "true", "PGROUP": "pg"})
    assert (topic, qid, props) == ("T", 2, {"PGROUP": "pg"})
    assert t.end_transaction_error({"PGROUP": "pg"}, "other") == "The producer group wrong"


@pytest.mark.spec("TX-03")
def test_check_decisions():
    born = 0
    assert t.check_decision(3000, born, 0, False) is CheckDecision.WAIT
    assert t.check_decision(61_000, born, 0, False) is CheckDecision.CHECK
    assert t.check_decision(61_000, born, 15, False) is CheckDecision.DISCARD
    assert t.check_decision(100_000, born, 0, False, immunity_seconds=120) is CheckDecision.WAIT
    assert t.check_decision(121_000, born, 0, False, immunity_seconds=120) is CheckDecision.CHECK
    assert t.check_decision(61_000, born, 0, True) is CheckDecision.DONE
    assert t.CHECK_INTERVAL_MS == {"remoting-4.x": 60_000, "grpc-5.x": 30_000}


@pytest.mark.spec("TX-04", "TX-05")
def test_discard_topic_and_op_message():
    assert t.CHECK_MAX_TIME_TOPIC == "TRANS_CHECK_MAX_TIME_TOPIC"
    assert t.op_message(0, 42) == ("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, "d", "42")


@pytest.mark.spec("TX-06")
def test_recovery_duration_limit():
    assert t.validate_recovery_seconds(7200) == codes.BAD_REQUEST == 40000
    assert t.validate_recovery_seconds(3600) == codes.OK


@pytest.mark.spec("PRIM-01")
@pytest.mark.parametrize("text,value", [("TagA", 2598919), ("order-1", -1207111310), ("user-42", -147182656),
                                        ("TopicTest#KEY1", -1656969516), ("", 0)])
def test_java_string_hash(text, value):
    assert p.java_string_hash(text) == value


@pytest.mark.spec("PRIM-01")
def test_java_rem_and_abs():
    assert p.java_rem(-7, 8) == -7 and p.java_rem(7, -8) == 7
    assert p.java_abs_int(p.INT_MIN) == p.INT_MIN


@pytest.mark.spec("PRIM-04")
def test_md5_ring_hash():
    assert p.md5_ring_hash("c0-0") == 2316876094


@pytest.mark.spec("CLAIM-07", "RETRY-5X-08")
def test_fifo_retry_interval_is_the_backoff_list_not_3000ms():
    policy = x.sdk_consumer_policy("java", x.consumer_settings(fifo=True))
    waits = x.fifo_local_waits_ms("java", 1, policy)
    assert waits[:4] == [1000, 5000, 10_000, 30_000] and 3000 not in waits


@pytest.mark.spec("CLAIM-08")
def test_push_consumer_cache_defaults():
    assert x.push_consumer_cache_limits() == (4096, 64 * 1024 * 1024)


@pytest.mark.spec("CLAIM-13", "TX-03")
def test_escape_fail_sleep_is_xor_not_power():
    assert [t.escape_fail_sleep_ms(n) for n in (0, 1, 2, 3, 4)] == [200, 300, 0, 100, 600]
