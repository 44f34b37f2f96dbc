"""Storage formats: CommitLog units, properties, ConsumeQueue units, file names, IndexFile (STORE-01..09)."""
from __future__ import annotations

import ipaddress
import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from spec import versions

from .java_semantics import int32
from .primitives import java_abs_int, java_string_hash

MESSAGE_MAGIC_CODE = -626843481          # 0xDAA320A7, V1
MESSAGE_MAGIC_CODE_V2 = -626843477       # 0xDAA320AB, V2
BLANK_MAGIC_CODE = -875286124            # 0xCBD43194
END_FILE_MIN_BLANK_LENGTH = 8
COMMITLOG_FILE_SIZE = 1024 * 1024 * 1024
CQ_UNIT_SIZE = 20
CQ_FILE_UNITS = 300_000
CQ_FILE_SIZE = CQ_UNIT_SIZE * CQ_FILE_UNITS
CQ_EXT_FILE_SIZE = 48 * 1024 * 1024
INDEX_HEADER_SIZE = 40
INDEX_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20
MAX_HASH_SLOT_NUM = 5_000_000
MAX_INDEX_NUM = 20_000_000
FILE_RESERVED_TIME_HOURS = 72
DELETE_WHEN = "04"

# sysFlag bits (STORE-09)
COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_TYPE_MASK = 0xC
TRANSACTION_NOT_TYPE, TRANSACTION_PREPARED_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE = 0x0, 0x4, 0x8, 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20
NEED_UNWRAP_FLAG = 0x40
INNER_BATCH_FLAG = 0x80
COMPRESSION_TYPE_MASK = 0x700
COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_ZLIB = 0x100, 0x200, 0x300

NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"


def transaction_value(sys_flag: int) -> int:
    """``getTransactionValue``: ``flag & 0xC`` (STORE-09)."""
    return sys_flag & TRANSACTION_TYPE_MASK


def reset_transaction_value(sys_flag: int, tran_type: int) -> int:
    """``resetTransactionValue``: ``(flag & ~0xC) | type`` (STORE-09)."""
    return (sys_flag & ~TRANSACTION_TYPE_MASK) | tran_type


def body_crc(body: bytes) -> int:
    """``UtilAll.crc32``: CRC32 of the body masked to 31 bits (STORE-01)."""
    return zlib.crc32(body) & 0x7FFFFFFF


def message_version_for_topic(topic_length: int, develop: bool = True) -> int:
    """Magic code for a topic: V2 (2-byte length) above 127 bytes on develop, else V1 (STORE-02)."""
    if develop and topic_length > 127:
        return MESSAGE_MAGIC_CODE_V2
    return MESSAGE_MAGIC_CODE


def cal_msg_length(body_length: int, topic_length: int, properties_length: int, sys_flag: int = 0,
                   magic: int = MESSAGE_MAGIC_CODE) -> int:
    """``calMsgLength``: 91 + body + topic + properties for IPv4 hosts, +12 per IPv6 host (STORE-01); a
    negative body or properties length counts 0, and the sum is an ``int`` that wraps
    (store/.../CommitLog.java#CommitLog.calMsgLength@rocketmq-all-4.9.8 L451-453,
    store/.../MessageExtEncoder.java#MessageExtEncoder.calMsgLength@rocketmq-all-5.3.3 L78-80)."""
    born = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    topic_len_size = 2 if magic == MESSAGE_MAGIC_CODE_V2 else 1
    return int32(4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8 + 4 + max(body_length, 0)
                 + topic_len_size + topic_length + 2 + max(properties_length, 0))


def properties_to_string(properties: Mapping[str, str | None], version: str = versions.LATEST) -> str:
    """``messageProperties2String``: name\\u0001value\\u0002 ... (STORE-04); up to 5.1.x the last \\u0002 is
    removed, from 5.2.0 it stays (the CRC check of the commit log, #7437:
    common/.../message/MessageDecoder.java#MessageDecoder.messageProperties2String@rocketmq-all-5.3.3 L605-634)."""
    parts = [f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in properties.items() if v is not None]
    text = "".join(parts)
    return text if versions.holds(version, since="5.2.0") else text[:-1]


def string_to_properties(text: str) -> dict[str, str]:
    """``string2messageProperties``: segments of >= 3 chars with \\u0001 strictly inside (STORE-04)."""
    out: dict[str, str] = {}
    for segment in text.split(PROPERTY_SEPARATOR):  # idiom-ok: empty segments are skipped, as Java drops them
        if len(segment) < 3:
            continue
        pos = segment.find(NAME_VALUE_SEPARATOR)
        if 0 < pos < len(segment) - 1:
            out[segment[:pos]] = segment[pos + 1:]
    return out


def _host_bytes(host: tuple[str, int]) -> bytes:
    ip, port = host
    return ipaddress.ip_address(ip).packed + struct.pack(">i", port)


@dataclass
class CommitLogMessage:
    """The fields of one CommitLog message unit (STORE-01)."""

    topic: str
    body: bytes = b""
    queue_id: int = 0
    flag: int = 0
    queue_offset: int = 0
    physical_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    store_timestamp: int = 0
    store_host: tuple[str, int] = ("127.0.0.1", 10911)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    properties: dict[str, str] = field(default_factory=dict)


def assigns_queue_offset(sys_flag: int) -> bool:
    """``DefaultMessageStore.assignOffset``: only non-transactional and committed messages take a consume
    queue offset; prepared and rolled-back ones do not advance it (STORE-01)."""
    return transaction_value(sys_flag) in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)


def stored_queue_offset(sys_flag: int, queue_offset: int) -> int:
    """The QUEUEOFFSET ``CommitLog.doAppend`` writes: 0 for prepared and rolled-back transaction messages,
    which never enter a consume queue, else the assigned offset (STORE-01)."""
    return queue_offset if assigns_queue_offset(sys_flag) else 0


def encode_commitlog(m: CommitLogMessage, develop: bool = True) -> bytes:
    """One unit as the commit log stores it, big-endian, in the catalog's field order (STORE-01, STORE-02);
    QUEUEOFFSET as ``doAppend`` writes it (``stored_queue_offset``)."""
    topic = m.topic.encode("utf-8")
    props = properties_to_string(m.properties).encode("utf-8")
    magic = message_version_for_topic(len(topic), develop)
    sys_flag = m.sys_flag
    sys_flag = (sys_flag | BORNHOST_V6_FLAG) if ":" in m.born_host[0] else sys_flag
    sys_flag = (sys_flag | STOREHOSTADDRESS_V6_FLAG) if ":" in m.store_host[0] else sys_flag
    total = cal_msg_length(len(m.body), len(topic), len(props), sys_flag, magic)
    out = struct.pack(">iiiiiqqiq", total, magic, body_crc(m.body), m.queue_id, m.flag,
                      stored_queue_offset(sys_flag, m.queue_offset),
                      m.physical_offset, sys_flag, m.born_timestamp)
    out += _host_bytes(m.born_host) + struct.pack(">q", m.store_timestamp) + _host_bytes(m.store_host)
    out += struct.pack(">iq", m.reconsume_times, m.prepared_transaction_offset)
    out += struct.pack(">i", len(m.body)) + m.body
    out += (struct.pack(">h", len(topic)) if magic == MESSAGE_MAGIC_CODE_V2 else struct.pack(">b", len(topic))) + topic
    out += struct.pack(">h", len(props)) + props
    assert len(out) == total
    return out


def decode_commitlog(data: bytes) -> CommitLogMessage:
    """Decode one unit written by ``encode_commitlog`` (STORE-01)."""
    total, magic, crc, queue_id, flag, queue_offset, physical, sys_flag, born_ts = struct.unpack_from(">iiiiiqqiq", data, 0)
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
        raise ValueError(f"bad magic code {magic}")
    pos = 48

    def host(v6: bool) -> tuple[str, int]:
        nonlocal pos
        size = 16 if v6 else 4
        ip = str(ipaddress.ip_address(data[pos:pos + size]))
        port = struct.unpack_from(">i", data, pos + size)[0]
        pos += size + 4
        return ip, port

    born = host(bool(sys_flag & BORNHOST_V6_FLAG))
    store_ts = struct.unpack_from(">q", data, pos)[0]
    pos += 8
    store = host(bool(sys_flag & STOREHOSTADDRESS_V6_FLAG))
    reconsume, prepared = struct.unpack_from(">iq", data, pos)
    pos += 12
    body_len = struct.unpack_from(">i", data, pos)[0]
    body = data[pos + 4: pos + 4 + body_len]
    pos += 4 + body_len
    if magic == MESSAGE_MAGIC_CODE_V2:
        topic_len = struct.unpack_from(">h", data, pos)[0]
        pos += 2
    else:
        topic_len = data[pos]
        pos += 1
    topic = data[pos:pos + topic_len].decode()
    pos += topic_len
    props_len = struct.unpack_from(">h", data, pos)[0]
    props = string_to_properties(data[pos + 2:pos + 2 + props_len].decode())
    if body_crc(body) != crc or total != len(data[:total]):
        raise ValueError("body CRC or total size mismatch")
    return CommitLogMessage(topic, body, queue_id, flag, queue_offset, physical, sys_flag, born_ts, born, store_ts,
                            store, reconsume, prepared, props)


def place_in_file(write_position: int, message_length: int, file_size: int = COMMITLOG_FILE_SIZE,
                  file_start: int = 0) -> tuple[bytes | None, int]:
    """End-of-file blank (STORE-03): (blank bytes or None, the physical offset the message gets)."""
    remaining = file_size - write_position
    if message_length + END_FILE_MIN_BLANK_LENGTH > remaining:
        return struct.pack(">ii", remaining, BLANK_MAGIC_CODE), file_start + file_size
    return None, file_start + write_position


def encode_cq_unit(commitlog_offset: int, size: int, tags_code: int) -> bytes:
    """ConsumeQueue unit: offset (8) | size (4) | tagsCode (8) (STORE-05)."""
    return struct.pack(">qiq", commitlog_offset, size, tags_code)


def decode_cq_unit(data: bytes) -> tuple[int, int, int]:
    return struct.unpack(">qiq", data[:CQ_UNIT_SIZE])


def cq_position(queue_offset: int) -> int:
    """Unit i lives at byte i * 20 (STORE-05)."""
    return queue_offset * CQ_UNIT_SIZE


CQ_BLANK_UNIT = encode_cq_unit(0, 2**31 - 1, 0)


def offset_to_file_name(offset: int) -> str:
    """``UtilAll.offset2FileName`` (STORE-06): ``NumberFormat`` with at least 20 integer digits, no
    grouping, no fraction: the absolute value zero-padded to 20 digits, after a ``-`` when negative."""
    return ("-" if offset < 0 else "") + f"{abs(offset):020d}"


def store_paths(root: str = "~/store") -> dict[str, str]:
    """Where the store keeps its files (STORE-06)."""
    return {"commitlog": f"{root}/commitlog", "consumequeue": f"{root}/consumequeue", "index": f"{root}/index",
            "checkpoint": f"{root}/checkpoint", "abort": f"{root}/abort", "config": f"{root}/config"}


def index_file_size(slots: int = MAX_HASH_SLOT_NUM, entries: int = MAX_INDEX_NUM) -> int:
    """40 + slots*4 + entries*20 (STORE-07)."""
    return INDEX_HEADER_SIZE + slots * INDEX_SLOT_SIZE + entries * INDEX_ENTRY_SIZE


def index_key_hash(key: str) -> int:
    """``indexKeyHashMethod``: abs(hashCode), MIN_VALUE -> 0 (STORE-07)."""
    h = java_abs_int(java_string_hash(key))
    return 0 if h < 0 else h


def index_slot_position(key: str, slots: int = MAX_HASH_SLOT_NUM) -> tuple[int, int]:
    """(slot, byte position of the slot) (STORE-07)."""
    slot = index_key_hash(key) % slots
    return slot, INDEX_HEADER_SIZE + slot * INDEX_SLOT_SIZE


def index_entry_position(index_count: int, slots: int = MAX_HASH_SLOT_NUM) -> int:
    return INDEX_HEADER_SIZE + slots * INDEX_SLOT_SIZE + index_count * INDEX_ENTRY_SIZE


def encode_index_entry(key_hash: int, phy_offset: int, time_diff_s: int, prev_index: int) -> bytes:
    """keyHash (4) | phyOffset (8) | timeDiff (4, clamped to [0, MAX_INT]) | prevIndex (4) (STORE-07)."""
    return struct.pack(">iqii", key_hash, phy_offset, max(0, min(2**31 - 1, time_diff_s)), prev_index)


def encode_index_header(begin_ts: int, end_ts: int, begin_phy: int, end_phy: int, slot_count: int,
                        index_count: int) -> bytes:
    return struct.pack(">qqqqii", begin_ts, end_ts, begin_phy, end_phy, slot_count, index_count)


def index_keys(topic: str, uniq_key: str | None, keys: str | None, tags: str | None = None,
               version: str = versions.LATEST) -> list[str]:
    """What the IndexService indexes: topic#UNIQ_KEY and topic#k for each KEYS token; from 5.5.0 also
    ``topic#T#<TAGS>`` (the whole TAGS string, ``MessageConst.INDEX_TAG_TYPE``) when TAGS is not empty
    (store/.../index/IndexService.java#IndexService.buildIndex@rocketmq-all-5.5.0) (STORE-08)."""
    out = [f"{topic}#{uniq_key}"] if uniq_key else []
    for k in (keys or "").split(" "):  # idiom-ok: empty keys are skipped, as Java's length() > 0 test does
        if k:
            out.append(f"{topic}#{k}")
    if tags and versions.holds(version, since="5.5.0"):
        out.append(f"{topic}#T#{tags}")
    return out


def indexable(tran_type: int) -> bool:
    """Rollback-type messages are not indexed (STORE-08)."""
    return tran_type != TRANSACTION_ROLLBACK_TYPE


def iter_units(data: bytes) -> Iterable[CommitLogMessage]:
    """Walk a commit-log buffer unit by unit, stopping at a blank or zero size."""
    pos = 0
    while pos + 8 <= len(data):
        total, magic = struct.unpack_from(">ii", data, pos)
        if total <= 0 or magic == BLANK_MAGIC_CODE:
            return
        yield decode_commitlog(data[pos:pos + total])
        pos += total
