"""The reference's pure rules equal the Java they model on every input, odd ones included.

Each property states the Java rule again, read from the release's source (cited in the behaviour's
``sources``), in its own words here, independently of ``reference_impl``, and draws inputs where Java's
own details decide: ``String.split``, ``Long.parseLong``, 64-bit overflow, ``NumberFormat``,
``string2bytes`` and ``InetAddress.getByAddress``.
"""
from __future__ import annotations

import ipaddress
import re
import struct
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl.rules import delay as d
from reference_impl.rules import message_id as mid
from reference_impl.rules import storage

pytestmark = pytest.mark.reference_rule

LONG = 1 << 63
UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
DIGITS_OF_OTHER_SCRIPTS = "٣３५"  # Arabic-Indic three, fullwidth three, Devanagari five: all Unicode Nd
SUPPLEMENTARY_DIGIT = "\U0001d7d3"  # MATHEMATICAL BOLD DIGIT FIVE: Nd, but two UTF-16 units in Java


def wrap64(value: int) -> int:
    return (value + LONG) % (1 << 64) - LONG


# ---- ScheduleMessageService.parseDelayLevel (DELAY-02) --------------------------------------------------

def java_split_on_space(text: str) -> list[str]:
    """``text.split(" ")``: no space, the text itself; else every piece, minus the empty ones at the end."""
    if " " not in text:
        return [text]
    pieces = re.split(" ", text)
    while pieces and not pieces[-1]:
        del pieces[-1]
    return pieces


def java_long(text: str) -> int | None:
    """``Long.parseLong``: ``[+-]?`` then one or more one-unit decimal digits, within a long; else None."""
    if not re.fullmatch(r"[+-]?\w+", text) or any(ord(c) > 0xFFFF for c in text):
        return None
    body = text.lstrip("+-") if text[:1] in "+-" else text
    if len(body) != len(text) - (text[:1] in "+-") or not all(unicodedata.category(c) == "Nd" for c in body):
        return None
    value = int("".join(str(unicodedata.decimal(c)) for c in body)) * (-1 if text[:1] == "-" else 1)
    return value if -LONG <= value < LONG else None


def java_parse_delay_level(text: str) -> tuple[dict[int, int], int, bool]:
    table: dict[int, int] = {}
    highest = 0
    for index, token in enumerate(java_split_on_space(text)):
        if token == "":
            return table, highest, False
        highest = max(highest, index + 1)
        number, unit = java_long(token[:-1]), UNITS.get(token[-1])
        if len(token[-1].encode("utf-16-be", "surrogatepass")) > 2:  # Java's last unit is a low surrogate
            unit, number = None, None
        if number is None or unit is None:
            return table, highest, False
        table[index + 1] = wrap64(unit * number)
    return table, highest, True


tokens = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", st.integers(-(2**66), 2**66), st.sampled_from([*UNITS, "x", "", "S"])),
    st.text(alphabet=st.sampled_from(list("0123456789smhdx+- ") + list(DIGITS_OF_OTHER_SCRIPTS)
                                     + [SUPPLEMENTARY_DIGIT]), max_size=8),
)
level_strings = st.lists(tokens, max_size=6).map(" ".join) | st.text(
    alphabet=st.sampled_from(list("15smh +-") + list(DIGITS_OF_OTHER_SCRIPTS)), max_size=20)


@pytest.mark.spec("DELAY-02")
@given(level_strings)
@example("1s 5s ")          # trailing separators are dropped by String.split
@example(" ")               # nothing at all: true, an empty table
@example("")                # one empty token: false
@example(" 1s")             # a leading empty token: false, nothing raised
@example("+5s -5s ٣s")       # signs and digits of any script
@example("9223372036854775807s 9223372036854775808s")  # 64-bit wrap, then beyond a long
@example(f"5{SUPPLEMENTARY_DIGIT}")
def test_parse_delay_level_is_javas(text: str) -> None:
    table = d.parse_delay_levels(text)
    assert (dict(table.levels), table.max_level, table.ok) == java_parse_delay_level(text), repr(text)


# ---- computeDeliverTimestamp, correctDeliverTimestamp and the countdown (DELAY-05, DELAY-06) -----------

longs = st.integers(-LONG, LONG - 1)


@pytest.mark.spec("DELAY-05")
@given(level=st.integers(-2, 20), store=longs)
@example(level=18, store=LONG - 1)
def test_deliver_timestamp_wraps_like_a_long(level: int, store: int) -> None:
    delay = d.DEFAULT_DELAY_TABLE.levels.get(level)
    assert d.compute_deliver_timestamp(level, store) == wrap64(store + (1000 if delay is None else delay))


@pytest.mark.spec("DELAY-06")
@given(now=longs, deliver=longs, level=st.integers(1, 18))
@example(now=LONG - 1, deliver=0, level=18)
def test_correction_and_countdown_wrap_like_longs(now: int, deliver: int, level: int) -> None:
    maximum = wrap64(now + d.DEFAULT_DELAY_TABLE.levels[level])
    corrected = now if deliver > maximum else deliver
    assert d.correct_deliver_timestamp(now, deliver, level) == corrected
    assert d.next_check_delay_ms(now, corrected) == (None if wrap64(corrected - now) <= 0 else 100)


# ---- UtilAll.offset2FileName (STORE-06) -------------------------------------------------------------------

@pytest.mark.spec("STORE-06")
@given(longs)
@example(-1)
@example(-LONG)
def test_offset_to_file_name_is_number_format(offset: int) -> None:
    name = storage.offset_to_file_name(offset)
    digits = name.removeprefix("-")
    assert name.startswith("-") == (offset < 0)
    assert digits.isascii() and digits.isdigit() and len(digits) == max(20, len(str(abs(offset))))
    assert int(name) == offset


# ---- MessageDecoder.decodeMessageId (MSGID-01) -------------------------------------------------------------

def java_string2bytes(text: str) -> bytes:
    upper = text.upper()

    def index(c: str) -> int:
        return "0123456789ABCDEF".find(c)

    out = []
    for i in range(len(upper) // 2):
        high, low = index(upper[2 * i]), index(upper[2 * i + 1])
        out.append(0xFF if low < 0 else ((0xF if high < 0 else high) << 4) | low)
    return bytes(out)


def java_decode(msg_id: str) -> tuple[str, int, int] | str:
    """What ``decodeMessageId`` returns, or the name of what Java throws first: ``string2bytes`` gives null
    for "" (NullPointerException); ``ByteBuffer.get`` and ``getInt`` underflow; ``new InetSocketAddress``
    refuses the port before ``getLong`` reads the offset."""
    if msg_id == "":
        return "NullPointerException"
    raw = java_string2bytes(msg_id)
    size = 4 if len(msg_id.encode("utf-16-be", "surrogatepass")) == 64 else 16
    if len(raw) < size + 4:
        return "BufferUnderflowException"
    (port,) = struct.unpack_from(">i", raw, size)
    if port < 0 or port > 65535:
        return "IllegalArgumentException"
    if len(raw) < size + 12:
        return "BufferUnderflowException"
    (offset,) = struct.unpack_from(">q", raw, size + 4)
    address = ipaddress.ip_address(raw[:size])
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    text = str(address) if address.version == 4 else ":".join(
        f"{group:x}" for group in struct.unpack(">8H", address.packed))
    return text, port, offset


JAVA_THROWS = {"NullPointerException": mid.NullIdError, "BufferUnderflowException": mid.BufferUnderflowError,
               "IllegalArgumentException": mid.PortOutOfRangeError}


hex_ids = st.text(alphabet=st.sampled_from(list("0123456789abcdefABCDEFxg-ß")), min_size=0, max_size=60)


@pytest.mark.spec("MSGID-01")
@given(st.one_of(hex_ids, st.sampled_from([32, 33, 56, 57, 64]).flatmap(
    lambda n: st.text(alphabet=st.sampled_from(list("0123456789ABCDEFz")), min_size=n, max_size=n))))
@example("7F00000100002A9F0000000000000000")
@example("00000000000000000000FFFF7F00000100002A9F0000000000000000")  # IPv4-mapped IPv6
@example("7F00000100002A9F000000000000000")   # 31 characters: read as IPv6, too short
@example("7F000001FFFFFFFF0000000000000000")   # port -1
@example("7F00000100002A9F0000000000000000Z")  # 33 characters: IPv6, too short
@example("0" * 32 + "00010000" + "0000")       # IPv6, port 65536, no room for the offset: the port is refused first
@example("20010DB800000000000000000000000100002A9F00000000000000100A")  # IPv6, something after the offset
def test_decode_message_id_is_javas(msg_id: str) -> None:
    want = java_decode(msg_id)
    if isinstance(want, str):
        with pytest.raises(JAVA_THROWS[want]):
            mid.decode_offset_msg_id(msg_id)
    else:
        assert mid.decode_offset_msg_id(msg_id) == want, msg_id


# ---- rocketmq-client-java: Exponential / CustomizedBackoffRetryPolicy.getNextAttemptDelay (RETRY-5X-03/04) --

def java_exponential_ms(attempt: int, initial_ms: int, max_ms: int, multiplier: float) -> float:
    """Doubles all the way: pow overflows to +-inf, 0 * inf is NaN, Math.min keeps NaN, (long) NaN is 0."""
    try:
        power = multiplier ** float(attempt - 1)
    except OverflowError:
        power = float("-inf") if multiplier < 0 and (attempt - 1) % 2 else float("inf")
    product = initial_ms * 1_000_000 * power
    delay = product if product != product else min(product, float(max_ms * 1_000_000))
    if delay <= 0:
        return 0
    nanos = 0 if delay != delay else int(max(min(delay, 2.0 ** 63 - 1), -(2.0 ** 63)))
    return min(nanos, (1 << 63) - 1) / 1_000_000


@pytest.mark.spec("RETRY-5X-04")
@given(attempt=st.integers(1, 5000), initial_ms=st.integers(0, 10**7), max_ms=st.integers(0, 10**9),
       multiplier=st.one_of(st.integers(-3, 10).map(float), st.floats(-4, 16, allow_nan=False)))
@example(attempt=2000, initial_ms=10, max_ms=1000, multiplier=2.0)   # Math.pow overflows: the maximum
@example(attempt=2000, initial_ms=0, max_ms=1000, multiplier=2.0)    # 0 * infinity = NaN: zero
@example(attempt=1001, initial_ms=10, max_ms=1000, multiplier=-2.0)  # -infinity: zero
def test_java_exponential_backoff_is_javas(attempt: int, initial_ms: int, max_ms: int, multiplier: float) -> None:
    from reference_impl.rules import retry5x

    assert retry5x.java_exponential_delay_ms(attempt, initial_ms, max_ms, multiplier) == \
        java_exponential_ms(attempt, initial_ms, max_ms, multiplier)


@pytest.mark.spec("RETRY-5X-03")
@given(attempt=st.integers(-2, 40), durations=st.lists(st.integers(0, 10**7), max_size=20))
@example(attempt=1, durations=[])
def test_java_customized_backoff_is_javas(attempt: int, durations: list[int]) -> None:
    from reference_impl.rules import retry5x

    if not durations or attempt <= 0:  # checkArgument in the constructor, then in getNextAttemptDelay
        with pytest.raises(ValueError):
            retry5x.java_customized_delay_ms(attempt, durations)
        return
    assert retry5x.java_customized_delay_ms(attempt, durations) == durations[min(attempt, len(durations)) - 1]
