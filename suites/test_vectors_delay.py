"""Catalog vectors of DELAY-01..09 against the reference's pure rules."""
from __future__ import annotations

import pytest

from reference_impl.rules import delay as d

pytestmark = pytest.mark.reference_rule


@pytest.mark.spec("DELAY-01")
@pytest.mark.parametrize("level,ms", [(3, 10_000), (18, 7_200_000), (16, 1_800_000)])
def test_default_level_table(level, ms):
    assert d.delay_ms_for_level(level) == ms
    assert d.DEFAULT_DELAY_TABLE.max_level == 18


@pytest.mark.spec("DELAY-01")
def test_default_table_is_the_documented_string():
    assert d.DEFAULT_MESSAGE_DELAY_LEVEL == "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    assert list(d.DEFAULT_DELAY_TABLE.levels.values()) == [
        1000, 5000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000, 480_000,
        540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000]


@pytest.mark.spec("DELAY-02")
def test_parse_mixed_units():
    table = d.parse_delay_levels("1s 2d 90m")
    assert table.ok and dict(table.levels) == {1: 1000, 2: 172_800_000, 3: 5_400_000} and table.max_level == 3


@pytest.mark.spec("DELAY-02")
def test_parse_unknown_unit_fails_but_keeps_earlier_levels():
    table = d.parse_delay_levels("1s 5x")
    assert not table.ok and dict(table.levels) == {1: 1000}
    assert table.max_level == 2  # raised before the bad token is parsed


@pytest.mark.spec("DELAY-02")
def test_parse_double_space_fails():
    assert not d.parse_delay_levels("1s  5s").ok


@pytest.mark.spec("DELAY-03")
@pytest.mark.parametrize("level,qid", [(1, 0), (18, 17)])
def test_level_to_queue_id(level, qid):
    assert d.delay_level_to_queue_id(level) == qid


@pytest.mark.spec("DELAY-03")
def test_queue_id_to_level_and_schedule_topic():
    assert d.queue_id_to_delay_level(2) == 3
    assert d.SCHEDULE_TOPIC == "SCHEDULE_TOPIC_XXXX" and d.SCHEDULE_TOPIC_QUEUE_NUM == 18


@pytest.mark.spec("DELAY-04")
def test_route_delayed_message():
    p = d.route_delayed_message("T", 3, {"DELAY": "3"})
    assert (p.topic, p.queue_id) == ("SCHEDULE_TOPIC_XXXX", 2)
    assert dict(p.properties) == {"DELAY": "3", "REAL_TOPIC": "T", "REAL_QID": "3"}


@pytest.mark.spec("DELAY-04")
def test_route_clamps_level_above_max():
    p = d.route_delayed_message("T", 3, {"DELAY": "25"})
    assert p.properties["DELAY"] == "18" and p.queue_id == 17


@pytest.mark.spec("DELAY-04")
@pytest.mark.parametrize("level", ["0", "-1"])
def test_route_ignores_non_positive_levels(level):
    p = d.route_delayed_message("T", 3, {"DELAY": level})
    assert (p.topic, p.queue_id) == ("T", 3)


@pytest.mark.spec("DELAY-04", "TX-01")
def test_route_never_moves_prepared_messages():
    p = d.route_delayed_message("T", 3, {"DELAY": "3"}, tran_type=d.TRANSACTION_PREPARED_TYPE)
    assert p.topic == "T"


@pytest.mark.spec("DELAY-05")
def test_schedule_tags_code_is_deliver_timestamp():
    assert d.schedule_tags_code(3, 1_700_000_000_000) == 1_700_000_010_000
    assert d.schedule_tags_code(18, 0) == 7_200_000
    assert d.schedule_tags_code(19, 0) == 7_200_000  # clamped to the max before the lookup


@pytest.mark.spec("DELAY-05")
def test_unknown_level_adds_one_second():
    assert d.compute_deliver_timestamp(40, 5, d.DEFAULT_DELAY_TABLE) == 1005


@pytest.mark.spec("DELAY-06")
@pytest.mark.parametrize("tags_code,corrected", [(1_015_000, 1_000_000), (1_005_000, 1_005_000),
                                                 (1_010_000, 1_010_000)])
def test_correct_deliver_timestamp(tags_code, corrected):
    assert d.correct_deliver_timestamp(1_000_000, tags_code, 3) == corrected


@pytest.mark.spec("DELAY-06")
@pytest.mark.parametrize("tags_code,recheck", [(1_015_000, None), (1_005_000, 100), (1_010_000, 100)])
def test_countdown_rechecks_after_100ms(tags_code, recheck):
    deliver = d.correct_deliver_timestamp(1_000_000, tags_code, 3)
    assert d.next_check_delay_ms(1_000_000, deliver) == recheck


@pytest.mark.spec("DELAY-06")
def test_timeup_restores_real_topic_and_keeps_real_properties():
    p = d.restore_from_schedule({"DELAY": "3", "REAL_TOPIC": "T", "REAL_QID": "3", "TAGS": "a"})
    assert (p.topic, p.queue_id) == ("T", 3)
    assert "DELAY" not in p.properties and p.properties["REAL_TOPIC"] == "T"
    assert (d.DELAY_FOR_A_WHILE_MS, d.DELAY_FOR_A_PERIOD_MS, d.FIRST_DELIVERY_CHECK_MS) == (100, 10_000, 1000)


@pytest.mark.spec("DELAY-07")
@pytest.mark.parametrize("batch,message", [
    ([{"topic": "T"}, {"topic": "T", "delay_level": 2}], "TimeDelayLevel is not supported for batching"),
    ([{"topic": "T"}, {"topic": "U"}], "The topic of the messages in one batch should be the same"),
    ([{"topic": "%RETRY%g"}], "Retry Group is not supported for batching"),
    ([{"topic": "T"}, {"topic": "T", "wait_store_msg_ok": False}],
     "The waitStoreMsgOK of the messages in one batch should the same"),
])
def test_batch_rejections(batch, message):
    with pytest.raises(d.BatchRejected, match=message):
        d.check_batch(batch)


@pytest.mark.spec("DELAY-07")
def test_store_rejects_delayed_or_transactional_batches():
    assert d.store_rejects_batch(d.TRANSACTION_NOT_TYPE, 2)
    assert d.store_rejects_batch(d.TRANSACTION_PREPARED_TYPE, 0)
    assert not d.store_rejects_batch(d.TRANSACTION_NOT_TYPE, 0)


@pytest.mark.spec("DELAY-08")
@pytest.mark.parametrize("deliver,rounded", [(1_700_000_000_000, 1_699_999_999_000),
                                             (1_700_000_000_500, 1_700_000_000_000),
                                             (1_700_000_000_999, 1_700_000_000_000)])
def test_timer_rounding(deliver, rounded):
    assert d.round_timer_deliver_ms(deliver) == rounded


@pytest.mark.spec("DELAY-08")
def test_delay_level_wins_over_timer_properties():
    p = d.route_timer_message("T", 0, {"DELAY": "2", "TIMER_DELAY_SEC": "100"}, now=0)
    assert (p.topic, p.queue_id) == ("SCHEDULE_TOPIC_XXXX", 1) and "TIMER_DELAY_SEC" not in p.properties


@pytest.mark.spec("DELAY-08")
def test_timer_beyond_three_days_is_illegal():
    with pytest.raises(d.TimerMessageIllegal):
        d.route_timer_message("T", 0, {"TIMER_DELAY_SEC": "259201"}, now=0)


@pytest.mark.spec("DELAY-08")
def test_timer_precedence_and_past_times():
    assert d.timer_deliver_ms({"TIMER_DELAY_SEC": "2", "TIMER_DELAY_MS": "9", "TIMER_DELIVER_MS": "7"}, 100) == 2100
    assert d.timer_deliver_ms({"TIMER_DELAY_MS": "9", "TIMER_DELIVER_MS": "7"}, 100) == 109
    past = d.route_timer_message("T", 1, {"TIMER_DELIVER_MS": "50"}, now=100)
    assert (past.topic, past.queue_id) == ("T", 1)
    future = d.route_timer_message("T", 1, {"TIMER_DELIVER_MS": "5500"}, now=100)
    assert future.topic == "rmq_sys_wheel_timer" and future.properties["TIMER_OUT_MS"] == "5000"


@pytest.mark.spec("DELAY-08")
def test_proxy_rejects_delivery_more_than_a_day_ahead():
    assert d.proxy_delivery_time_legal(86_400_000, 0)
    assert not d.proxy_delivery_time_legal(86_400_001, 0)


@pytest.mark.spec("DELAY-09")
@pytest.mark.parametrize("interval,level", [(0, 1), (7000, 3), (5000, 3), (3 * 3_600_000, 18)])
def test_proxy_delay_level_for_timestamp(interval, level):
    assert d.delay_level_for_timestamp(1_000_000 + interval, 1_000_000) == level
