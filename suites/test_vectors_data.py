"""Catalog vectors of FILTER, TOPIC, LIMIT, STORE, OFFSET and MSGID against the pure rules."""
from __future__ import annotations

import pytest

from reference_impl.rules import codes, filter as f, message_id as mid, offsets as o, storage as st, validation as v
from reference_impl.rules.codes import RocketMQError

pytestmark = pytest.mark.reference_rule

PROPS = {"a": "10", "b": "abc", "c": "TRUE", "f": "1.5"}


@pytest.mark.spec("FILTER-01", "PRIM-01")
@pytest.mark.parametrize("tags,code", [("TagA", 2598919), ("TagB", 2598920), ("a", 97), ("*", 42), ("", 0), (None, 0)])
def test_tags_code(tags, code):
    assert f.tags_code(tags) == code


@pytest.mark.spec("FILTER-02")
def test_tag_expression_parsing():
    sub = f.parse_tag_expression("TagA || TagB")
    assert sub.tags == {"TagA", "TagB"} and sub.codes == {2598919, 2598920}
    assert f.parse_tag_expression("TagA||").tags == {"TagA"}
    assert f.parse_tag_expression(" * ").tags == {"*"} and not f.parse_tag_expression(" * ").all
    assert f.parse_tag_expression("A||*").tags == {"A", "*"}
    assert f.parse_tag_expression("").all and f.parse_tag_expression(None).all and f.parse_tag_expression("*").all


@pytest.mark.spec("FILTER-03")
def test_where_tag_filtering_happens():
    aa = f.parse_tag_expression("Aa")
    assert f.broker_tag_match(aa, f.tags_code("BB")) and not f.client_tag_match(aa, "BB")
    assert not f.delivered_to_tag_subscriber(aa, "BB")
    tag_a = f.parse_tag_expression("TagA")
    assert not f.broker_tag_match(tag_a, f.tags_code(None))
    assert f.delivered_to_tag_subscriber(f.parse_tag_expression("*"), None)
    assert f.proxy_tag_match(frozenset(), None) and not f.proxy_tag_match(frozenset({"A"}), None)


@pytest.mark.spec("FILTER-04")
def test_sql_needs_property_filter():
    assert f.sql_subscription_check("a > 5", enable_property_filter=False) == (1, f.SQL_NOT_ENABLED_REMARK)
    assert f.sql_subscription_check("a > 5", enable_property_filter=True) == (0, "")
    assert not f.sql_filters_retry_topic()


@pytest.mark.spec("FILTER-05")
@pytest.mark.parametrize("expression,message", [("a BETWEEN 10 AND 1", "Illegal values of between"),
                                                ("a = NULL", "'NULL' cannot be compared."),
                                                ("b > 'aaa'", "cannot be compared"),
                                                ("x > 0.0", "0.0 is less than 4.9E-324"),
                                                ("a >", "Encountered"), ("a IN (1, 2)", "was expecting string"),
                                                ("(a = 1", "was expecting )")])
def test_parse_errors(expression, message):
    with pytest.raises(f.SqlParseError, match=message.replace("(", r"\(").replace(")", r"\)")):
        f.compile_sql(expression)
    code, remark = f.sql_subscription_check(expression, True)
    assert code == codes.R_SUBSCRIPTION_PARSE_FAILED == 23 and expression in remark


@pytest.mark.spec("FILTER-05")
def test_grammar_details():
    assert f.sql_matches("a > 5 -- comment", PROPS) and f.sql_matches("/* c */ a > 5", PROPS)
    assert f.sql_matches("a between 1 and 10 and NOT (b = 'x')", PROPS)
    assert not f.sql_matches("NOT b = 'x'", PROPS)  # NOT is unary: (NOT FALSE) = 'x' -> TRUE = false
    assert f.sql_evaluate(f.compile_sql("a"), PROPS) is False and f.sql_evaluate(f.compile_sql("z"), PROPS) is None
    assert f.sql_matches("NOT (a < 5 AND f > 1)", PROPS)  # AND short-circuits: f > 1 never throws here
    assert not f.sql_matches("NOT (a > 5 AND f > 1)", PROPS)
    with pytest.raises(f.SqlParseError, match="will not result in a boolean value"):
        f.compile_sql("5 AND a = 1")
    assert f.sql_matches("b = 'it''s'", {"b": "it's"})
    assert f.sql_matches("a = 10L", PROPS) and f.sql_matches("a < 3000000000", PROPS)
    assert f.sql_matches("a > -5", PROPS) and f.sql_matches("b STARTSWITH 'ab' AND b ENDSWITH 'bc'", PROPS)
    assert f.sql_matches("b NOT IN ('x', 'y') AND b NOT CONTAINS 'z'", PROPS)


@pytest.mark.spec("FILTER-06")
@pytest.mark.parametrize("expression,result", [
    ("a > 5", True), ("a < 5", False), ("a = 10", True), ("a = '10'", True), ("a BETWEEN 1 AND 10", True),
    ("a NOT BETWEEN 1 AND 9", True), ("a IN ('10','11')", True), ("b <> 'abc'", False), ("z IS NULL", True),
    ("z = 1", None), ("NOT (z = 1)", None), ("z = 1 OR a = 10", True), ("z = 1 AND a = 10", None),
    ("c = TRUE", True), ("f > 1.2", True), ("a > 5.5", True), ("b CONTAINS 'bc'", True), ("z CONTAINS 'a'", False),
    ("z NOT CONTAINS 'a'", False), ("z IS NOT NULL", False), ("z IN ('a')", None),
    ("z = y", None), ("z <> y", None), ("a = a", True), ("a > b", "error"),
])
def test_three_valued_evaluation(expression, result):
    if result == "error":
        with pytest.raises(f.SqlEvaluationError):
            f.sql_evaluate(f.compile_sql(expression), PROPS)
        assert not f.sql_matches(expression, PROPS)
        return
    assert f.sql_evaluate(f.compile_sql(expression), PROPS) is result
    assert f.sql_matches(expression, PROPS) is (result is True)


@pytest.mark.spec("FILTER-06")
def test_coercion_errors_do_not_match():
    with pytest.raises(f.SqlEvaluationError):
        f.sql_evaluate(f.compile_sql("f > 1"), PROPS)
    assert not f.sql_matches("f > 1", PROPS)
    assert not f.sql_matches("a = 5", {"a": "x"})
    assert f.sql_matches("TAGS IN ('TagA','TagB')", {"TAGS": "TagB"})
    assert not f.sql_matches("a = 10", {"a": " 10"})  # Integer.valueOf does not trim


@pytest.mark.spec("TOPIC-01")
def test_perm_bits():
    assert [v.perm_to_string(p) for p in (6, 7, 4, 2)] == ["RW-", "RWX", "R--", "-W-"]
    assert not v.perm_valid(8) and v.perm_valid(7)
    assert v.writable(6) and not v.writable(4) and v.readable(4)


@pytest.mark.spec("TOPIC-02")
def test_auto_creation():
    created = v.auto_create_topic("NewTopic", v.broker_tbw102())
    assert (created.read_queues, created.write_queues, created.perm) == (4, 4, 6)
    assert v.auto_create_topic("NewTopic", v.broker_tbw102(), client_default_queue_nums=16).write_queues == 8
    assert v.auto_create_topic("%RETRY%g", None).write_queues == 1
    with pytest.raises(RocketMQError, match=r"topic\[NewTopic\] not exist, apply first please!") as err:
        v.auto_create_topic("NewTopic", None)
    assert err.value.code == 17


@pytest.mark.spec("TOPIC-03")
def test_read_and_write_queue_numbers():
    config = v.TopicConfig("T", read_queues=8, write_queues=4)
    assert v.check_send_queue_id(6, config) == 6
    with pytest.raises(RocketMQError, match=r"request queueId\[8\] is illegal") as err:
        v.check_send_queue_id(8, config)
    assert err.value.code == 1
    assert v.check_send_queue_id(-1, config, random_value=7) == 3


@pytest.mark.spec("TOPIC-04")
def test_precreated_topics():
    topics = v.precreated_topics()
    assert topics["SCHEDULE_TOPIC_XXXX"] == (18, 18) and topics["BenchmarkTest"] == (1024, 1024)
    assert "DefaultCluster_REPLY_TOPIC" in topics and topics["TBW102"] == (8, 8)
    assert "RMQ_SYS_TRACE_TOPIC" in v.precreated_topics(trace_enabled=True)


@pytest.mark.spec("LIMIT-01")
def test_topic_names():
    v.check_topic_client_4x("Topic-A_1%x")
    v.check_topic_client_4x("a|b")
    assert not v.java_5x_topic_valid("a|b")
    for bad, message in [("a.b", "illegal characters"), ("a" * 128, "longer than topic max length 127"),
                         ("", "blank"), ("SCHEDULE_TOPIC_XXXX", "is forbidden")]:
        with pytest.raises(RocketMQError, match=message):
            v.check_topic_client_4x(bad)
    assert v.is_system_topic("rmq_sys_foo") and v.is_system_topic("TBW102")
    with pytest.raises(RocketMQError, match="cannot access system topic") as err:
        v.check_topic_proxy("rmq_sys_foo")
    assert err.value.code == 40002
    with pytest.raises(RocketMQError) as broker:
        v.check_topic_broker_4x("SCHEDULE_TOPIC_XXXX")
    assert broker.value.code == 16


@pytest.mark.spec("LIMIT-02")
def test_group_names():
    v.check_group("g" * 121, "4.9.8")
    with pytest.raises(RocketMQError, match="longer than group max length 120"):
        v.check_group("g" * 121, "develop")
    with pytest.raises(RocketMQError) as err:
        v.check_group_proxy("CID_RMQ_SYS_X")
    assert err.value.code == 40003


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


@pytest.mark.spec("LIMIT-06")
def test_java_message_builder():
    with pytest.raises(RocketMQError, match="deliveryTimestamp and messageGroup should not be set at same time"):
        v.check_java_message_builder("T", b"x", message_group="g", delivery_timestamp=1)
    with pytest.raises(RocketMQError, match="tag should not contain"):
        v.check_java_message_builder("T", b"x", tag="a|b")
    with pytest.raises(RocketMQError, match="topic does not match"):
        v.check_java_message_builder("a|b", b"x")


@pytest.mark.spec("STORE-01")
def test_commitlog_lengths_and_crc():
    assert st.cal_msg_length(5, 9, 0) == 105 and st.cal_msg_length(0, 0, 0) == 91
    assert st.cal_msg_length(5, 9, 0, sys_flag=0x30) == 129 and st.cal_msg_length(11, 9, 36) == 147
    assert st.body_crc(b"hello") == 907060870
    unit = st.encode_commitlog(st.CommitLogMessage("TopicTest", b"hello", queue_id=3, queue_offset=7))
    assert len(unit) == 105 and int.from_bytes(unit[4:8], "big", signed=True) == st.MESSAGE_MAGIC_CODE
    assert int.from_bytes(unit[8:12], "big") == 907060870 and int.from_bytes(unit[12:16], "big") == 3
    assert st.decode_commitlog(unit).body == b"hello"


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


@pytest.mark.spec("STORE-04")
def test_properties_serialization():
    assert st.properties_to_string({"TAGS": "A", "KEYS": "k1 k2"}) == "TAGS\u0001A\u0002KEYS\u0001k1 k2"
    assert st.string_to_properties("a\u0001") == {}
    assert st.string_to_properties("TAGS\u0001A\u0002KEYS\u0001k1 k2") == {"TAGS": "A", "KEYS": "k1 k2"}


@pytest.mark.spec("STORE-05")
def test_consume_queue_unit():
    unit = st.encode_cq_unit(1073742124, 105, f.tags_code("TagA"))
    assert unit.hex().upper() == "000000004000012C00000069000000000027A807"
    assert st.cq_position(7) == 140 and st.decode_cq_unit(unit) == (1073742124, 105, 2598919)
    assert st.decode_cq_unit(st.CQ_BLANK_UNIT) == (0, 2**31 - 1, 0)


@pytest.mark.spec("STORE-06")
@pytest.mark.parametrize("offset,name", [(0, "00000000000000000000"), (1073741824, "00000000001073741824"),
                                         (2147483648, "00000000002147483648"), (6000000, "00000000000006000000"),
                                         (12000000, "00000000000012000000")])
def test_file_names(offset, name):
    assert st.offset_to_file_name(offset) == name
    assert (st.COMMITLOG_FILE_SIZE, st.CQ_FILE_SIZE, st.CQ_EXT_FILE_SIZE) == (1073741824, 6000000, 48 * 1024 * 1024)
    assert st.store_paths()["consumequeue"] == "~/store/consumequeue"


@pytest.mark.spec("STORE-07")
def test_index_file():
    assert st.index_file_size() == 420_000_040
    assert st.index_key_hash("TopicTest#KEY1") == 1656969516
    assert st.index_slot_position("TopicTest#KEY1") == (1969516, 7878104)
    assert st.index_entry_position(1) == 20000060
    assert st.index_slot_position("T#k") == (81916, 327704)
    assert len(st.encode_index_header(0, 0, 0, 0, 0, 1)) == 40
    assert st.encode_index_entry(1, 2, -5, 0)[12:16] == b"\x00\x00\x00\x00"


@pytest.mark.spec("STORE-08")
def test_what_is_indexed():
    assert st.index_keys("T", "U", "a b  c") == ["T#U", "T#a", "T#b", "T#c"]
    assert not st.indexable(st.TRANSACTION_ROLLBACK_TYPE) and st.indexable(st.TRANSACTION_COMMIT_TYPE)


@pytest.mark.spec("STORE-09")
def test_sys_flag_bits():
    assert st.transaction_value(0x5) == 0x4 and st.reset_transaction_value(0x5, st.TRANSACTION_COMMIT_TYPE) == 0x9
    assert (st.BORNHOST_V6_FLAG, st.STOREHOSTADDRESS_V6_FLAG, st.INNER_BATCH_FLAG, st.COMPRESSION_ZLIB) == \
        (0x10, 0x20, 0x80, 0x300)


@pytest.mark.spec("OFFSET-01")
def test_consume_from_where():
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_LAST_OFFSET, False, 1000, lambda: 0) == 1000
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_LAST_OFFSET, True, 1000, lambda: 0) == 0
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_FIRST_OFFSET, False, 1000, lambda: 5) == 0
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_TIMESTAMP, False, 1000, lambda: 42) == 42
    assert o.compute_pull_from_where(-1, o.CONSUME_FROM_TIMESTAMP, True, 1000, lambda: 42) == 1000
    assert o.compute_pull_from_where(17, o.CONSUME_FROM_FIRST_OFFSET, False, 1000, lambda: 0) == 17
    assert o.compute_pull_from_where(-2, o.CONSUME_FROM_LAST_OFFSET, False, 1000, lambda: 0) == -1


@pytest.mark.spec("OFFSET-02")
def test_new_group_starts_from_zero_on_a_young_queue():
    assert o.broker_query_offset(None, 0, offset_zero_in_memory=True) == (codes.R_SUCCESS, 0)
    assert o.broker_query_offset(None, 0, offset_zero_in_memory=False) == (codes.R_QUERY_NOT_FOUND, -1)
    assert o.broker_query_offset(12, 0, offset_zero_in_memory=False) == (codes.R_SUCCESS, 12)


@pytest.mark.spec("OFFSET-03")
def test_where_offsets_live():
    assert o.broker_offset_key("T", "g") == "T@g"
    assert o.local_offset_path("c1", "g") == "~/.rocketmq_offsets/c1/g/offsets.json"


@pytest.mark.spec("OFFSET-04")
def test_commit_cadence():
    assert o.persist_times_ms(0, 25_000) == [10_000, 15_000, 20_000, 25_000]
    assert o.last_persist_before(4_000) is None and o.last_persist_before(13_000) == 10_000


@pytest.mark.spec("OFFSET-05")
@pytest.mark.parametrize("offset,status,nxt,code", [(5, "OFFSET_TOO_SMALL", 10, 21), (20, "OFFSET_OVERFLOW_ONE", 20, 19),
                                                    (25, "OFFSET_OVERFLOW_BADLY", 20, 21)])
def test_pull_statuses(offset, status, nxt, code):
    result = o.get_message_status(offset, 10, 20)
    assert (result.status, result.next_begin_offset, result.response_code) == (status, nxt, code)


@pytest.mark.spec("OFFSET-05")
def test_pull_found_skips_filtered_units():
    result = o.get_message_status(12, 10, 20, scanned_units=8, found=1)
    assert (result.status, result.next_begin_offset, result.response_code) == ("FOUND", 20, 0)
    assert o.get_message_status(0, 0, 0).response_code == 19 and o.get_message_status(3, 0, 0).response_code == 21


@pytest.mark.spec("MSGID-01")
def test_offset_msg_id():
    assert mid.offset_msg_id("127.0.0.1", 10911, 0) == "7F00000100002A9F0000000000000000"
    assert mid.offset_msg_id("192.168.0.10", 10911, 1073742124) == "C0A8000A00002A9F000000004000012C"
    assert mid.decode_offset_msg_id("C0A8000A00002A9F000000004000012C") == ("192.168.0.10", 10911, 1073742124)
    assert len(mid.offset_msg_id("::1", 10911, 0)) == 56


@pytest.mark.spec("MSGID-02")
def test_uniq_id():
    assert mid.uniq_id("10.0.0.1", 1234, 0x1B6D3586, 100, 0) == "0A00000104D21B6D3586000000640000"
    assert mid.uniq_id_is_ipv6(mid.uniq_id("::1", 1, 1, 1, 1))
    props = {"UNIQ_KEY": "first"}
    assert mid.set_uniq_id(props, "second") == "first"


@pytest.mark.spec("MSGID-03", "CLAIM-12")
def test_message_id_v1():
    got = mid.message_id_v1(bytes.fromhex("56F7E71C361B"), 0x21BC, 0x024CCDBE, 0)
    assert got == "0156F7E71C361B21BC024CCDBE00000000"
    assert mid.message_id_version(got) == "01" and mid.message_id_version("7F0000010000") == "00"
