"""Hypothesis strategies biased to where Java and Python part ways (issue 35): empty strings, lengths at and one
past a limit, control characters, U+00A0 and U+2028 (Python whitespace, not Java's), U+001C..U+001F (both),
characters outside the basic plane (two UTF-16 units in Java), lone surrogates, a trailing line feed (before
which Python's ``$`` matches), signs and digits of other scripts, and numbers at and beyond 32 and 64 bits
(``Integer.MIN_VALUE`` included).
"""
from __future__ import annotations

from hypothesis import strategies as st

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
EDGE_CHARS = ("\n", "\r", "\t", " ", "\x00", "\x01", "\x0b", "\x0c", "\x1c", "\x1f", "\x7f", "\x85", "\u00a0",
              "\u1680", "\u2007", "\u2028", "\u2029", "\u202f", "\u3000", "\ufeff", "\U0001F600", "\U0001D7CE",
              "\ud800", "\udfff", "\u0663", "\uff17", "|", "%", "*", "-", "_", "+", ".", ",", ";", "\\", "$", "^")
NAME_CHARS = tuple("abcXYZ019%|_-")
EDGE_INTS = (0, 1, -1, 2, 7, 8, 127, 128, 255, 256, 65535, 65536, 0x7FFFFF, 0xFFFFFF, 0x1000000,
             INT_MAX, INT_MAX - 1, INT_MIN, INT_MIN + 1)
EDGE_LONGS = EDGE_INTS + (INT_MAX + 1, INT_MIN - 1, 2**32, LONG_MAX, LONG_MAX - 1, LONG_MIN, LONG_MIN + 1)


def edge_text(max_size: int = 12, plain: tuple[str, ...] = NAME_CHARS) -> st.SearchStrategy[str]:
    """Short strings over ordinary characters and Java's edges, with a trailing ``\\n`` now and then."""
    alphabet = st.sampled_from(plain + EDGE_CHARS)
    text = st.text(alphabet=alphabet, max_size=max_size)
    return st.one_of(text, text.map(lambda s: s + "\n"), st.sampled_from(("", " ", "\n", "a\n", "\u00a0",
                                                                            "\u2028", "\U0001F600", "\x1f")))


def around(limit: int, char: str = "a") -> st.SearchStrategy[str]:
    """Strings at, one below and one past ``limit`` UTF-16 units, some ending in a character outside the BMP
    (two units in Java, one in Python) or a line feed."""
    sizes = st.sampled_from((limit - 2, limit - 1, limit, limit + 1))
    return st.one_of(sizes.map(lambda n: char * n), sizes.map(lambda n: char * (n - 1) + "\U0001F600"),
                     sizes.map(lambda n: char * (n - 1) + "\n"))


def names(limit: int, max_size: int = 12) -> st.SearchStrategy[str]:
    """Topic and group names: short ones over the edges, and ones at the length limit."""
    return st.one_of(edge_text(max_size), around(limit))


def ints32() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(EDGE_INTS), st.integers(INT_MIN, INT_MAX), st.integers(-16, 16))


def longs() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(EDGE_LONGS), st.integers(LONG_MIN, LONG_MAX), st.integers(-16, 16))


def number_text() -> st.SearchStrategy[str]:
    """Text a number parser meets: signs, digits of several scripts, overflow, spaces, exponents."""
    pieces = st.sampled_from(("0", "1", "9", "00", "+", "-", " ", ".", "e", "E", "x", "p", "d", "f", "L",
                              "\u0663", "\uff17", "\U0001D7CE", "\n", "\x00", "\u00a0", "NaN", "Infinity",
                              "2147483648", "9223372036854775808", "-2147483648", "-9223372036854775808"))
    return st.one_of(st.lists(pieces, max_size=5).map("".join), longs().map(str), ints32().map(str))
