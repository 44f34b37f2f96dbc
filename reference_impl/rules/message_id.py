"""Message IDs: 4.x offsetMsgId and UNIQ_KEY, 5.x MessageId v1 (MSGID-01..03)."""
from __future__ import annotations

import ipaddress
import struct

EPOCH_2021_S = 1_609_459_200


def offset_msg_id(store_ip: str, store_port: int, commit_log_offset: int) -> str:
    """``createMessageId``: upper-case hex of ip | port:int | offset:long (MSGID-01)."""
    return (ipaddress.ip_address(store_ip).packed + struct.pack(">iq", store_port, commit_log_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """``decodeMessageId``: 32 chars IPv4, else IPv6 (MSGID-01)."""
    raw = bytes.fromhex(msg_id)
    size = 4 if len(msg_id) == 32 else 16
    port, offset = struct.unpack(">iq", raw[size:size + 12])
    return str(ipaddress.ip_address(raw[:size])), port, offset


def uniq_id(ip: str, pid: int, class_loader_hash: int, ms_since_month_start: int, counter: int) -> str:
    """``MessageClientIDSetter.createUniqID``: ip | pid:short | clHash:int | time:int | counter:short (MSGID-02)."""
    raw = ipaddress.ip_address(ip).packed + struct.pack(">hiih", _to_short(pid), _to_int(class_loader_hash),
                                                        _to_int(ms_since_month_start), _to_short(counter))
    return raw.hex().upper()


def uniq_id_is_ipv6(msg_id: str) -> bool:
    """``getIPFromID``: a 28-byte id carries an IPv6 address (MSGID-02)."""
    return len(bytes.fromhex(msg_id)) == 28


def set_uniq_id(properties: dict[str, str], new_id: str) -> str:
    """``setUniqID`` never overwrites an existing UNIQ_KEY (MSGID-02)."""
    return properties.setdefault("UNIQ_KEY", new_id)


def message_id_v1(mac: bytes, pid: int, seconds_since_2021: int, sequence: int) -> str:
    """5.x MessageId v1: "01" + MAC(6) + pid low 2 bytes + seconds low 4 bytes + sequence (MSGID-03)."""
    raw = b"\x01" + mac[:6] + struct.pack(">H", pid & 0xFFFF) + struct.pack(">I", seconds_since_2021 & 0xFFFFFFFF)
    return (raw + struct.pack(">I", sequence & 0xFFFFFFFF)).hex().upper()


def message_id_version(msg_id: str) -> str:
    """``MessageIdCodec.decode``: 34 chars -> the first byte, else legacy "00" (MSGID-03)."""
    return msg_id[:2] if len(msg_id) == 34 else "00"


def _to_short(value: int) -> int:
    value &= 0xFFFF
    return value - 0x10000 if value >= 0x8000 else value


def _to_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value >= 0x80000000 else value
