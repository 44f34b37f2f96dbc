"""Message IDs: 4.x offsetMsgId and UNIQ_KEY, 5.x MessageId v1 (MSGID-01..03)."""
from __future__ import annotations

import ipaddress
import struct

from .primitives import utf16_units


class NullIdError(ValueError):
    """Java's ``NullPointerException``: ``string2bytes`` gives null for an empty id."""


class BufferUnderflowError(ValueError):
    """Java's ``BufferUnderflowException``: the id's bytes end before the field being read."""


class PortOutOfRangeError(ValueError):
    """Java's ``IllegalArgumentException("port out of range:" + port)`` from ``InetSocketAddress``."""


def offset_msg_id(store_ip: str, store_port: int, commit_log_offset: int) -> str:
    """``createMessageId``: upper-case hex of ip | port:int | offset:long (MSGID-01)."""
    return (ipaddress.ip_address(store_ip).packed + struct.pack(">iq", store_port, commit_log_offset)).hex().upper()


HEX_DIGITS = "0123456789ABCDEF"


def java_host_address(raw: bytes) -> str:
    """``InetAddress.getByAddress(raw).getHostAddress()``: 4 bytes are IPv4; 16 bytes are IPv6 unless they
    are an IPv4-mapped address (``::ffff:a.b.c.d``), which Java turns into that IPv4 address; IPv6 is
    eight hex groups without leading zeros and without ``::`` compression (MSGID-01)."""
    if len(raw) == 16 and raw[:10] == bytes(10) and raw[10:12] == b"\xff\xff":
        raw = raw[12:]
    if len(raw) == 4:
        return ".".join(str(b) for b in raw)
    return ":".join(format(int.from_bytes(raw[i:i + 2], "big"), "x") for i in range(0, 16, 2))


def hex_to_bytes(hex_string: str) -> bytes:
    """``UtilAll.string2bytes``: upper-cased, ``length / 2`` bytes (an odd last character is dropped), each
    from two ``"0123456789ABCDEF".indexOf`` values; a character that is not a hex digit counts as -1, so
    it sets every bit it is or-ed into (MSGID-01)."""
    upper = utf16_units(hex_string.upper())  # String.length and charAt count UTF-16 units
    out = bytearray()
    for i in range(len(upper) // 2):
        high, low = HEX_DIGITS.find(upper[2 * i]), HEX_DIGITS.find(upper[2 * i + 1])
        out.append(((high << 4) | low) & 0xFF)
    return bytes(out)


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """``MessageDecoder.decodeMessageId`` (MSGID-01): the address is 4 bytes when the id has exactly 32
    characters (UTF-16 units), else 16; then a port (int) and a commit-log offset (long), big-endian, read
    in that order from ``string2bytes(msgId)``; whatever follows is ignored. Java's failures, in the order
    it meets them: an empty id (``NullIdError``), bytes ending before the address and port
    (``BufferUnderflowError``), a port outside 0..65535 (``PortOutOfRangeError``, before the offset is
    read), bytes ending before the offset (``BufferUnderflowError``). Returns (host address as Java
    prints it, port, offset)."""
    if not msg_id:
        raise NullIdError("decodeMessageId: empty id (string2bytes gives null)")
    raw = hex_to_bytes(msg_id)
    size = 4 if len(msg_id.encode("utf-16-be", "surrogatepass")) // 2 == 32 else 16
    if len(raw) < size + 4:
        raise BufferUnderflowError(f"decodeMessageId: {len(raw)} bytes, the address and port need {size + 4}")
    (port,) = struct.unpack(">i", raw[size:size + 4])
    if not 0 <= port <= 0xFFFF:
        raise PortOutOfRangeError(f"decodeMessageId: port out of range: {port}")
    if len(raw) < size + 12:
        raise BufferUnderflowError(f"decodeMessageId: {len(raw)} bytes, the offset needs {size + 12}")
    (offset,) = struct.unpack(">q", raw[size + 4:size + 12])
    return java_host_address(raw[:size]), port, offset


def uniq_id(ip: str, pid: int, class_loader_hash: int, ms_since_month_start: int, counter: int) -> str:
    """``MessageClientIDSetter.createUniqID``: ip | pid:short | clHash:int | time:int | counter:short (MSGID-02)."""
    raw = ipaddress.ip_address(ip).packed + struct.pack(">hiih", _to_short(pid), _to_int(class_loader_hash),
                                                        _to_int(ms_since_month_start), _to_short(counter))
    return raw.hex().upper()


def uniq_id_is_ipv6(msg_id: str) -> bool:
    """``getIPFromID``: a 28-byte id carries an IPv6 address (MSGID-02). The id is read by
    ``UtilAll.string2bytes`` (``hex_to_bytes``: an odd last character dropped, any character taken), and an
    empty id is null there (``NullIdError``); fewer than 4 bytes cannot give the address ``System.arraycopy``
    copies (``IndexError`` for ArrayIndexOutOfBoundsException)
    (common/.../message/MessageClientIDSetter.java#MessageClientIDSetter.getIPFromID@rocketmq-all-5.3.3 L99-105)."""
    if not msg_id:
        raise NullIdError("string2bytes gives null for an empty id")
    raw = hex_to_bytes(msg_id)
    if len(raw) < 4:
        raise IndexError(f"arraycopy: last source index 4 out of bounds for byte[{len(raw)}]")
    return len(raw) == 28


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
