"""Catalog vectors of RETRY-CONC-01..11 and ORDER-4X-01..04 against the reference's pure rules."""
from __future__ import annotations

import pytest

from reference_impl.rules import orderly4x as o, retry4x as r
from reference_impl.rules.primitives import INT_MAX
from reference_impl.rules.retry4x import ConsumeStatus, ListenerOutcome

pytestmark = pytest.mark.reference_rule


@pytest.mark.spec("RETRY-CONC-01")
@pytest.mark.parametrize("status,ack,failed", [
    (ConsumeStatus.CONSUME_SUCCESS, r.DEFAULT_ACK_INDEX, []),
    (ConsumeStatus.CONSUME_SUCCESS, 2, [3, 4]),
    (ConsumeStatus.RECONSUME_LATER, 2, [0, 1, 2, 3, 4]),
])
def test_ack_index(status, ack, failed):
    assert r.failed_indexes(5, status, ack) == failed


@pytest.mark.spec("RETRY-CONC-01")
@pytest.mark.parametrize("outcome", [ListenerOutcome.EXCEPTION, ListenerOutcome.NULL, ListenerOutcome.RECONSUME_LATER])
def test_exception_and_null_mean_reconsume_later(outcome):
    assert r.concurrent_status(outcome) is ConsumeStatus.RECONSUME_LATER
    assert r.failed_indexes(5, r.concurrent_status(outcome)) == [0, 1, 2, 3, 4]


@pytest.mark.spec("RETRY-CONC-02")
def test_broadcasting_drops_failures():
    assert r.broadcasting_drops_failures()
    assert r.push_subscriptions("g", "T", "*", broadcasting=True) == {"T": "*"}


@pytest.mark.spec("RETRY-CONC-03")
def test_offset_after_remove_sequence():
    cached = {10, 11, 12}
    assert r.offset_after_remove(cached, [11], 12) == 10
    assert r.offset_after_remove({10, 12}, [10], 12) == 12
    assert r.offset_after_remove({12}, [12], 12) == 13
    assert r.offset_after_remove(set(), [12], 12) == -1
    assert r.LOCAL_RESUBMIT_DELAY_MS == 5000


def _send_back(rt, delay_level=0, max_rt=16, **kw):
    return r.consumer_send_msg_back("g", "T", rt, {}, "MSGID", delay_level, max_rt, **kw)


@pytest.mark.spec("RETRY-CONC-04")
def test_send_back_first_failure():
    res = _send_back(0)
    assert (res.topic, res.delay_level, res.reconsume_times, res.properties["DELAY"]) == ("%RETRY%g", 3, 1, "3")
    assert res.properties["RETRY_TOPIC"] == "T" and res.properties["ORIGIN_MESSAGE_ID"] == "MSGID"


@pytest.mark.spec("RETRY-CONC-04")
def test_send_back_rt5():
    res = _send_back(5)
    assert (res.delay_level, res.reconsume_times) == (8, 6)


@pytest.mark.spec("RETRY-CONC-04")
def test_send_back_at_max_goes_to_dlq():
    res = _send_back(16)
    assert (res.topic, res.queue_id, res.reconsume_times) == ("%DLQ%g", 0, 17) and "DELAY" not in res.properties


@pytest.mark.spec("RETRY-CONC-04")
def test_send_back_negative_level_goes_to_dlq_and_positive_is_kept():
    assert _send_back(0, delay_level=-1).topic == "%DLQ%g"
    assert _send_back(0, delay_level=5).delay_level == 5


@pytest.mark.spec("RETRY-CONC-04")
def test_send_back_zero_retry_queues_stores_nothing():
    res = _send_back(0, retry_queue_nums=0)
    assert res.code == r.SUCCESS and not res.stored


@pytest.mark.spec("RETRY-CONC-04")
def test_send_back_error_codes_and_header_fallback():
    assert _send_back(0, group_exists=False).code == r.SUBSCRIPTION_GROUP_NOT_EXIST == 26
    assert _send_back(0, broker_writable=False).code == r.NO_PERMISSION == 16
    assert _send_back(3, max_rt=None, group_retry_max_times=3).topic == "%DLQ%g"
    kept = r.consumer_send_msg_back("g", "T", 1, {"ORIGIN_MESSAGE_ID": "FIRST", "RETRY_TOPIC": "Orig"}, "SECOND", 0, 16)
    assert kept.properties["ORIGIN_MESSAGE_ID"] == "FIRST" and kept.properties["RETRY_TOPIC"] == "Orig"


@pytest.mark.spec("RETRY-CONC-05")
def test_retry_and_dlq_names():
    assert (r.retry_topic("cg1"), r.dlq_topic("cg1")) == ("%RETRY%cg1", "%DLQ%cg1")
    assert (r.pop_retry_topic_v1("cg1", "T"), r.pop_retry_topic_v2("cg1", "T")) == ("%RETRY%cg1_T", "%RETRY%cg1+T")
    assert (r.DLQ_NUMS_PER_GROUP, r.PERM_READ_WRITE) == (1, 6)


@pytest.mark.spec("RETRY-CONC-06")
@pytest.mark.parametrize("configured,orderly,effective", [(-1, False, 16), (3, False, 3), (0, False, 0),
                                                         (-1, True, INT_MAX)])
def test_effective_max_reconsume_times(configured, orderly, effective):
    assert r.effective_max_reconsume_times(configured, orderly) == effective


@pytest.mark.spec("RETRY-CONC-06")
def test_max_zero_sends_every_failure_to_dlq():
    assert _send_back(0, max_rt=0).topic == "%DLQ%g"


@pytest.mark.spec("RETRY-CONC-07")
def test_retry_interval_table():
    assert r.retry_delays_ms() == [10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
                                   480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000]
    assert sum(r.retry_delays_ms()) == 17_140_000
    assert r.retry_delays_ms(20)[16:] == [7_200_000] * 4


@pytest.mark.spec("RETRY-CONC-08")
def test_fallback_republish_properties():
    props = r.fallback_republish_properties({"UNIQ_KEY": "U", "TRAN_MSG": "true"}, "T", "M", 2, 16)
    assert props == {"UNIQ_KEY": "U", "ORIGIN_MESSAGE_ID": "M", "RETRY_TOPIC": "T", "RECONSUME_TIME": "3",
                     "MAX_RECONSUME_TIMES": "16", "DELAY": "5"}


@pytest.mark.spec("RETRY-CONC-08", "RETRY-CONC-11")
def test_fallback_at_rt15_lands_in_dlq():
    props = r.fallback_republish_properties({}, "T", "M", 15, 16)
    decision = r.handle_retry_and_dlq("%RETRY%g", 0, int(props["RECONSUME_TIME"]), 16, 18)
    assert decision.topic == "%DLQ%g" and decision.delay_level == 0


@pytest.mark.spec("RETRY-CONC-09")
@pytest.mark.parametrize("topic,props,seen", [("%RETRY%g", {"RETRY_TOPIC": "Orders"}, "Orders"),
                                              ("%RETRY%other", {"RETRY_TOPIC": "Orders"}, "%RETRY%other"),
                                              ("Orders", {}, "Orders")])
def test_reset_retry_topic(topic, props, seen):
    assert r.topic_seen_by_listener(topic, props, "g") == seen


@pytest.mark.spec("RETRY-CONC-10")
def test_clustering_subscribes_retry_topic_and_reaper():
    assert r.push_subscriptions("g", "T", "tagA", broadcasting=False) == {"T": "tagA", "%RETRY%g": "*"}
    assert r.reaper_expired(0, 16 * 60_000) and not r.reaper_expired(0, 15 * 60_000)
    assert r.reaper_send_back_level(0, 16 * 60_000) == 3 and r.reaper_send_back_level(0, 60_000) is None
    assert r.REAPER_DELAY_LEVEL == 3


@pytest.mark.spec("RETRY-CONC-11")
def test_direct_send_to_retry_topic():
    assert r.handle_retry_and_dlq("%RETRY%g", 0, 16, 16, 0).topic == "%DLQ%g"
    keep = r.handle_retry_and_dlq("%RETRY%g", 0, 3, 16, 6)
    assert (keep.topic, keep.delay_level) == ("%RETRY%g", 6)
    assert r.handle_retry_and_dlq("%RETRY%g", 0, 3, 16, 6, group_exists=False).code == 26


@pytest.mark.spec("ORDER-4X-01")
def test_orderly_success_commits_after_last_in_flight():
    result = o.process_consume_result([7, 8, 9], o.OrderlyStatus.SUCCESS, True, None, 1000)
    assert result.commit_offset == 10 and result.redeliver_after_ms is None


@pytest.mark.spec("ORDER-4X-01")
def test_orderly_suspend_below_max_redelivers_without_commit():
    check = o.check_reconsume_times([0, 0, 0], 16)
    result = o.process_consume_result([7, 8, 9], o.OrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, True, check, 1000)
    assert result.commit_offset == -1 and result.redeliver_after_ms == 1000


@pytest.mark.spec("ORDER-4X-01")
@pytest.mark.parametrize("outcome", [ListenerOutcome.EXCEPTION, ListenerOutcome.NULL])
def test_orderly_exception_or_null_suspends(outcome):
    assert o.orderly_status(outcome) is o.OrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT


@pytest.mark.spec("ORDER-4X-01")
def test_orderly_manual_commit_modes():
    assert o.process_consume_result([3], o.OrderlyStatus.SUCCESS, False, None, 10).commit_offset == -1
    assert o.process_consume_result([3], o.OrderlyStatus.COMMIT, False, None, 10).commit_offset == 4
    rollback = o.process_consume_result([3], o.OrderlyStatus.ROLLBACK, False, None, 10)
    assert rollback.rollback and rollback.redeliver_after_ms == 10


@pytest.mark.spec("ORDER-4X-02")
@pytest.mark.parametrize("context,expected", [(-1, 1000), (5, 10), (60_000, 30_000), (2000, 2000)])
def test_suspend_time_clamp(context, expected):
    assert o.suspend_time_ms(context) == expected


@pytest.mark.spec("ORDER-4X-03", "CLAIM-03")
def test_orderly_check_reconsume_times():
    below = o.check_reconsume_times([2], 3)
    assert below.suspend and below.new_reconsume_times == (3,) and not below.to_dlq
    at_max = o.check_reconsume_times([3], 3)
    assert not at_max.suspend and at_max.to_dlq == (0,)
    forever = o.check_reconsume_times([10**6], -1)
    assert forever.suspend  # -1 means Integer.MAX_VALUE: retried forever


@pytest.mark.spec("ORDER-4X-03")
def test_orderly_dlq_publish_properties():
    props = o.dlq_publish_properties({"UNIQ_KEY": "U"}, "T", "M", 3, 3)
    assert props["RECONSUME_TIME"] == "3" and props["MAX_RECONSUME_TIMES"] == "3" and props["DELAY"] == "6"
    assert o.dlq_publish_properties({}, "T", "M", 3, 3, develop=True)["RECONSUME_TIME"] == "4"
    assert r.handle_retry_and_dlq("%RETRY%g", 0, 3, 3, 6).topic == "%DLQ%g"


@pytest.mark.spec("ORDER-4X-04")
def test_lock_constants_and_expiry():
    assert o.lock_expired(0, 30_001) and not o.lock_expired(0, 30_000)
    assert (o.CLIENT_LOCK_MAX_LIVE_MS, o.CLIENT_LOCK_INTERVAL_MS, o.BROKER_LOCK_MAX_LIVE_MS, o.PULL_MAX_IDLE_MS) == \
        (30_000, 20_000, 60_000, 120_000)
    assert not o.needs_lock(broadcasting=True) and o.needs_lock(broadcasting=False)
