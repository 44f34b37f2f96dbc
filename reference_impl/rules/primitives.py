"""Java-compatible primitives the rules are built on (PRIM-01..04).

Pure functions, no state. Each reproduces the arithmetic of the Java (or Guava) function named in
the spec entry, so that Python results equal what a JVM computes for the same input.
"""
from __future__ import annotations

import hashlib
import math
import re
import struct
import unicodedata

INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def to_int32(value: int) -> int:
    """Wrap an integer into Java's signed 32-bit range (PRIM-01, QSEL-01, FILTER-06)."""
    value &= _MASK32
    return value - (1 << 32) if value >= (1 << 31) else value


def to_int64(value: int) -> int:
    """Wrap an integer into Java's signed 64-bit range (DELAY-05, DELAY-06, FILTER-06)."""
    value &= _MASK64
    return value - (1 << 64) if value >= (1 << 63) else value


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode`` over UTF-16 code units (PRIM-01)."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return to_int32(h)


def utf16_units(text: str) -> list[str]:
    """A string as Java holds it: UTF-16 code units (a supplementary character is two surrogates; PRIM-01,
    DELAY-02, FILTER-06)."""
    data = text.encode("utf-16-be", "surrogatepass")
    return [chr((data[i] << 8) | data[i + 1]) for i in range(0, len(data), 2)]


def java_split(text: str, separator: str) -> list[str]:
    """Java ``String.split(separator)`` for a one-character literal separator, limit 0: when the
    separator never occurs the string itself; else the pieces with trailing empty strings removed, so
    ``" "`` gives ``[]`` and ``""`` gives ``[""]`` (DELAY-02)."""
    pieces = text.split(separator)  # idiom-ok: the one place Python's split is turned into Java's
    if len(pieces) == 1:
        return pieces
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


def java_char_digit(unit: str) -> int:
    """Java ``Character.digit(char, 10)``: a decimal digit of any script (Unicode Nd) in the basic plane
    gives its value; anything else, surrogates included, gives -1 (DELAY-02)."""
    if len(unit) != 1 or 0xD800 <= ord(unit) <= 0xDFFF or unicodedata.category(unit) != "Nd":
        return -1
    return unicodedata.decimal(unit, -1)


def java_parse_long(text: str, low: int = LONG_MIN, high: int = LONG_MAX) -> int:
    """Java ``Long.parseLong(text)`` (``Integer.parseInt`` with the int bounds): one optional leading
    ``-`` or ``+`` (not alone), then decimal digits of any script; anything else, an empty string or a
    value beyond the type raises ``ValueError`` as Java raises ``NumberFormatException`` (DELAY-02)."""
    units = utf16_units(text)
    if not units:
        raise ValueError(f'For input string: "{text}"')
    sign, start = 1, 0
    if units[0] < "0":
        if units[0] not in "-+" or len(units) == 1:
            raise ValueError(f'For input string: "{text}"')
        sign, start = (-1 if units[0] == "-" else 1), 1
    value = 0
    for unit in units[start:]:
        digit = java_char_digit(unit)
        if digit < 0:
            raise ValueError(f'For input string: "{text}"')
        value = value * 10 + digit
    value *= sign
    if not low <= value <= high:
        raise ValueError(f'For input string: "{text}"')
    return value


_DECIMAL_FLOAT = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?", re.ASCII)
_HEX_FLOAT = re.compile(r"0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?", re.ASCII)


def java_trim(text: str) -> str:
    """Java ``String.trim``: drops every leading and trailing character at or below U+0020 (FILTER-06)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def java_parse_double(text: str) -> float:
    """Java ``Double.valueOf(String)`` (``FloatingDecimal.readJavaFormatString``): the string trimmed as
    ``String.trim`` does, an optional sign, then ``NaN``, ``Infinity``, a decimal number with ASCII digits
    (optional fraction and exponent) or a hexadecimal one with a binary exponent (``0x1.8p1``), and for
    the numbers one optional ``f``/``F``/``d``/``D`` suffix. Anything else raises ``ValueError`` as Java
    raises ``NumberFormatException``; too large a value is an infinity, too small a zero (FILTER-06)."""
    body = java_trim(text)
    sign = -1.0 if body[:1] == "-" else 1.0
    unsigned = body[1:] if body[:1] in ("-", "+") else body
    if unsigned == "NaN":
        return math.nan
    if unsigned == "Infinity":
        return sign * math.inf
    if _DECIMAL_FLOAT.fullmatch(unsigned):
        return sign * float(unsigned.rstrip("fFdD"))
    if _HEX_FLOAT.fullmatch(unsigned):
        try:
            return sign * float.fromhex(unsigned.rstrip("fFdD"))
        except OverflowError:
            return sign * math.inf
    raise ValueError(f'For input string: "{text}"')


def java_double_to_string(value: float) -> str:
    """Java ``Double.toString``: ``NaN``, ``Infinity``, ``0.0``; from 10^-3 up to 10^7 plain decimals with at
    least one digit after the point (``100.0``, ``0.001``), else one digit, a point, at least one more digit
    and ``E`` with the exponent (``1.0E31``, ``4.9E-324``). The digits are the fewest that read back to the
    same double, as from JDK 19; the ``FloatingDecimal`` of JDK 8 to 18 gives a longer tail for a few values
    (FILTER-06)."""
    if math.isnan(value):
        return "NaN"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if math.isinf(value):
        return sign + "Infinity"
    if value == 0:
        return sign + "0.0"
    digits, exponent = _shortest_digits(abs(value))
    if 1e-3 <= abs(value) < 1e7:
        point = exponent + 1  # digits before the point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, fraction = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{fraction or '0'}"
    if len(digits) == 1:  # two digits at least: the nearest two (5e-324 is 4.9E-324)
        mantissa, _, exp = f"{abs(value):.1e}".partition("e")
        return f"{sign}{mantissa}E{int(exp)}"
    return f"{sign}{digits[0]}.{digits[1:]}E{exponent}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """(the significant digits of Python's shortest round-trip repr, the decimal exponent of the first)."""
    shortest = repr(value)
    if "e" in shortest:
        mantissa, _, exp = shortest.partition("e")
        digits = mantissa.replace(".", "").rstrip("0") or "0"
        return digits, int(exp)
    whole, _, fraction = shortest.partition(".")
    all_digits = (whole + fraction).lstrip("0")
    exponent = len(whole.lstrip("0")) - 1 if whole.strip("0") else -(len(fraction) - len(fraction.lstrip("0")) + 1)
    return all_digits.rstrip("0") or "0", exponent


def java_double_compare(a: float, b: float) -> int:
    """Java ``Double.compare``: numeric order, except that ``-0.0`` is below ``0.0`` and NaN is above
    everything and equal to itself (FILTER-06)."""
    if a < b:
        return -1
    if a > b:
        return 1
    bits_a, bits_b = java_double_to_long_bits(a), java_double_to_long_bits(b)
    return 0 if bits_a == bits_b else (-1 if bits_a < bits_b else 1)


def java_double_to_long_bits(value: float) -> int:
    """Java ``Double.doubleToLongBits``: the IEEE bits as a signed long, every NaN as the one canonical NaN
    (FILTER-06)."""
    if math.isnan(value):
        return 0x7FF8000000000000
    return struct.unpack(">q", struct.pack(">d", value))[0]


def ieee_pow(base: float, exponent: float) -> float:
    """Java's and JavaScript's ``Math.pow``: IEEE 754 ``pow``, where a result beyond a double is an infinity
    of the right sign (a negative base to an odd whole power is negative), not an error; so is a zero to a
    negative power, and a negative base to a power that is not whole is NaN; unlike C's ``pow``, a NaN
    exponent, and ±1 to an infinite power, are NaN too (java.base/java/lang/Math.java#Math.pow, StrictMath.pow's
    special cases; ECMAScript's Number::exponentiate agrees). Elsewhere the result is the correctly rounded
    power, which ``Math.pow`` may miss by the 1 ulp its contract allows (HotSpot's intrinsic on 41.0 ** 10.0)
    (RETRY-5X-04, SDK-NODE-02)."""
    if math.isnan(exponent) or (abs(base) == 1.0 and math.isinf(exponent)):
        return math.nan  # where C's pow (and Python's) gives 1.0, Java and JavaScript give NaN
    try:
        return math.pow(base, exponent)
    except OverflowError:
        negative = base < 0 and exponent.is_integer() and int(exponent) % 2 == 1
        return -math.inf if negative else math.inf
    except ValueError:  # where Python's pow refuses, IEEE (and Java's Math.pow) answers
        if base == 0.0:  # a zero to a negative power: an infinity, negative for -0.0 to an odd whole power
            odd = exponent.is_integer() and int(exponent) % 2 == 1
            return -math.inf if odd and math.copysign(1.0, base) < 0 else math.inf
        return math.nan  # a negative base to a power that is not whole


_JAVA_WHITESPACE_CONTROLS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
_NO_BREAK_SPACES = "\u00a0\u2007\u202f"


def java_is_blank(text: str | None) -> bool:
    """RocketMQ's ``UtilAll.isBlank``: null, empty, or every UTF-16 unit ``Character.isWhitespace`` (a Unicode
    space, line or paragraph separator other than the no-break spaces, or one of the controls TAB, LF, VT,
    FF, CR and FS..US) (RETRY-CONC-04, ORDER-4X-03)."""
    if not text:
        return True
    return all(u in _JAVA_WHITESPACE_CONTROLS or (u not in _NO_BREAK_SPACES and
                                                  unicodedata.category(u) in ("Zs", "Zl", "Zp"))
               for u in utf16_units(text))


def java_boolean_value_of(text: str) -> bool:
    """Java ``Boolean.valueOf(String)``: true exactly for ``"true"`` in any ASCII case (FILTER-06)."""
    return len(text) == 4 and text.isascii() and text.lower() == "true"


def java_string_compare(a: str, b: str) -> int:
    """The sign of Java ``String.compareTo``: lexicographic over UTF-16 code units (FILTER-06)."""
    ua, ub = utf16_units(a), utf16_units(b)
    return (ua > ub) - (ua < ub)


def java_rem(a: int, b: int) -> int:
    """Java ``a % b``: truncates toward zero, result has the sign of the dividend (PRIM-01)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def java_abs_int(value: int) -> int:
    """Java ``Math.abs(int)``: ``Math.abs(Integer.MIN_VALUE) == Integer.MIN_VALUE`` (PRIM-01)."""
    return value if value == INT_MIN else abs(value)


def guava_consistent_hash(key: int, buckets: int) -> int:
    """Guava ``Hashing.consistentHash(long, int)`` (PRIM-02)."""
    if buckets <= 0:
        raise ValueError(f"buckets must be positive, got {buckets}")
    state, candidate = key & _MASK64, 0
    while True:
        state = (2862933555777941757 * state + 1) & _MASK64
        high = to_int32(state >> 33)
        nxt = (candidate + 1) / ((high + 1) / 2147483648.0)
        nxt = int(min(nxt, INT_MAX))
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK64


def siphash24(data: bytes, k0: int = 0x0706050403020100, k1: int = 0x0F0E0D0C0B0A0908) -> int:
    """Guava ``Hashing.sipHash24()`` as a signed long (PRIM-03)."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & _MASK64
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _MASK64
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK64
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK64
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    full = len(data) - len(data) % 8
    for i in range(0, full, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v3 ^= m
        rounds(2)
        v0 ^= m
    tail = int.from_bytes(data[full:], "little") | ((len(data) & 0xFF) << 56)
    v3 ^= tail
    rounds(2)
    v0 ^= tail
    v2 ^= 0xFF
    rounds(4)
    return to_int64(v0 ^ v1 ^ v2 ^ v3)


def md5_ring_hash(key: str) -> int:
    """First four bytes of MD5(key) as an unsigned big-endian int (PRIM-04, ALLOC-03)."""
    digest = hashlib.md5(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big")


def sha256_mod(text: str, n: int) -> int:
    """The Python 5.x SDK's group hash: ``int(sha256(text)) % n`` (FIFO-02)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big") % n
