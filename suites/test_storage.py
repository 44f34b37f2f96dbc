"""Storage formats: Hypothesis round trips and the catalog's byte layout as golden field offsets."""
from __future__ import annotations

import dataclasses
import ipaddress
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.rules import message_id as mid
from reference_impl.rules import storage as st_rules
from spec import versions
from suites.checks import require

pytestmark = pytest.mark.reference_rule

hosts_v4 = st.tuples(st.ip_addresses(v=4).map(str), st.integers(0, 65535))
hosts_any = st.tuples(st.ip_addresses().map(str), st.integers(0, 65535))
prop_text = st.text(st.characters(blacklist_characters="\u0001\u0002", blacklist_categories=("Cs",)), min_size=1,
                    max_size=20)
messages = st.builds(
    st_rules.CommitLogMessage,
    topic=st.text(st.sampled_from("abcXYZ09_-%|"), min_size=1, max_size=200),
    body=st.binary(max_size=300),
    queue_id=st.integers(0, 2**31 - 1), flag=st.integers(-(2**31), 2**31 - 1),
    queue_offset=st.integers(0, 2**63 - 1), physical_offset=st.integers(0, 2**63 - 1),
    sys_flag=st.sampled_from([0, 0x1, 0x4, 0x8, 0xC]), born_timestamp=st.integers(0, 2**62),
    born_host=hosts_any, store_timestamp=st.integers(0, 2**62), store_host=hosts_any,
    reconsume_times=st.integers(0, 1000), prepared_transaction_offset=st.integers(0, 2**62),
    properties=st.dictionaries(prop_text, prop_text, max_size=5))


@pytest.mark.spec("STORE-01", "STORE-02", "STORE-04", "STORE-09")
@given(message=messages)
def test_commitlog_round_trip(message):
    data = st_rules.encode_commitlog(message)
    back = st_rules.decode_commitlog(data)
    v6 = (st_rules.BORNHOST_V6_FLAG if ":" in message.born_host[0] else 0) | \
        (st_rules.STOREHOSTADDRESS_V6_FLAG if ":" in message.store_host[0] else 0)
    require(back.sys_flag == message.sys_flag | v6, "STORE-09", f"sysFlag {back.sys_flag} for {message.sys_flag}")
    back.sys_flag = message.sys_flag
    tran_type = message.sys_flag & 0xC  # prepared (0x4) and rolled-back (0xC) units are stored with QUEUEOFFSET 0
    want = dataclasses.replace(message, queue_offset=0) if tran_type in (0x4, 0xC) else message
    require(back == want, "STORE-01", f"round trip changed the message: {back} != {want}")
    topic_len = len(message.topic.encode())
    props_len = len(st_rules.properties_to_string(message.properties).encode())
    magic = st_rules.message_version_for_topic(topic_len)
    require(len(data) == st_rules.cal_msg_length(len(message.body), topic_len, props_len, v6, magic), "STORE-01",
            "unit size differs from calMsgLength")


GOLDEN_FIELDS = [  # (offset, struct format, attribute) for IPv4 hosts, from the catalog's table (STORE-01)
    (0, ">i", None), (4, ">i", "magic"), (8, ">i", "crc"), (12, ">i", "queue_id"), (16, ">i", "flag"),
    (20, ">q", "queue_offset"), (28, ">q", "physical_offset"), (36, ">i", "sys_flag"),
    (40, ">q", "born_timestamp"), (56, ">q", "store_timestamp"), (72, ">i", "reconsume_times"),
    (76, ">q", "prepared_transaction_offset"), (84, ">i", "body_length"),
]


@pytest.mark.spec("STORE-01")
@given(message=messages.filter(lambda m: ":" not in m.born_host[0] + m.store_host[0] and len(m.topic) <= 127))
def test_commitlog_fields_sit_at_the_catalog_offsets(message):
    data = st_rules.encode_commitlog(message)
    expected = {"magic": st_rules.MESSAGE_MAGIC_CODE, "crc": st_rules.body_crc(message.body),
                "body_length": len(message.body)}
    for offset, fmt, name in GOLDEN_FIELDS:
        if name is None:
            continue
        value = struct.unpack_from(fmt, data, offset)[0]
        want = expected[name] if name in expected else getattr(message, name)
        if name == "queue_offset" and message.sys_flag & 0xC in (0x4, 0xC):
            want = 0  # prepared and rolled-back transaction messages never enter a consume queue
        require(value == want, "STORE-01", f"field {name} at byte {offset} is {value}, not {want}")
    require(data[48:52] == bytes(int(p) for p in message.born_host[0].split(".")), "STORE-01", "BORNHOST at 48")
    require(data[64:68] == bytes(int(p) for p in message.store_host[0].split(".")), "STORE-01", "STOREHOST at 64")
    require(data[88:88 + len(message.body)] == message.body, "STORE-01", "BODY at 88")


@pytest.mark.spec("STORE-04")
@given(props=st.dictionaries(prop_text, prop_text, max_size=8), release=st.sampled_from(versions.COVERED))
def test_properties_round_trip(props, release):
    text = st_rules.properties_to_string(props, release)
    kept = versions.holds(release, since="5.2.0")  # MessageDecoder.messageProperties2String keeps it from 5.2.0
    require(text.endswith("\u0002") == (kept and bool(props)), "STORE-04",
            f"at {release} the last separator is {'kept' if kept else 'removed'}: {text!r}")
    want = {k: v for k, v in props.items() if len(k) + len(v) + 1 >= 3}
    require(st_rules.string_to_properties(text) == want, "STORE-04", f"{props} -> {text!r}")


@pytest.mark.spec("STORE-05", "STORE-03")
@given(offset=st.integers(0, 2**63 - 1), size=st.integers(1, 2**31 - 1), tags_code=st.integers(-(2**63), 2**63 - 1),
       position=st.integers(0, st_rules.COMMITLOG_FILE_SIZE), length=st.integers(91, 5_000_000))
def test_consume_queue_unit_and_end_of_file(offset, size, tags_code, position, length):
    unit = st_rules.encode_cq_unit(offset, size, tags_code)
    require(len(unit) == 20 and st_rules.decode_cq_unit(unit) == (offset, size, tags_code), "STORE-05", "CQ round trip")
    blank, placed = st_rules.place_in_file(position, length)
    remaining = st_rules.COMMITLOG_FILE_SIZE - position
    if length + 8 > remaining:
        require(blank is not None and placed == st_rules.COMMITLOG_FILE_SIZE, "STORE-03", "message must move to the next file")
        require(struct.unpack(">ii", blank) == (remaining, st_rules.BLANK_MAGIC_CODE), "STORE-03", "blank layout")
    else:
        require(blank is None and placed == position, "STORE-03", "message fits")


@pytest.mark.spec("MSGID-01")
@given(host=hosts_any, offset=st.integers(0, 2**63 - 1))
def test_offset_msg_id_round_trip(host, offset):
    ip, port = host
    msg_id = mid.offset_msg_id(ip, port, offset)
    require(len(msg_id) == (32 if ":" not in ip else 56) and msg_id == msg_id.upper(), "MSGID-01", msg_id)
    address = ipaddress.ip_address(ip)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:  # Java's getByAddress makes it IPv4
        address = address.ipv4_mapped
    decoded = mid.decode_offset_msg_id(msg_id)
    require((ipaddress.ip_address(decoded[0]), decoded[1:]) == (address, (port, offset)), "MSGID-01",
            f"{msg_id} decodes to {decoded}, not {host}")


@pytest.mark.spec("STORE-07", "STORE-06")
@given(key=st.text(max_size=40), count=st.integers(1, st_rules.MAX_INDEX_NUM))
def test_index_positions(key, count):
    slot, position = st_rules.index_slot_position(key)
    require(0 <= slot < st_rules.MAX_HASH_SLOT_NUM and position == 40 + slot * 4, "STORE-07", f"slot {slot}")
    require(st_rules.index_entry_position(count) == 40 + 5_000_000 * 4 + count * 20, "STORE-07", "entry position")
    require(len(st_rules.offset_to_file_name(count)) == 20, "STORE-06", "file names have 20 digits")
