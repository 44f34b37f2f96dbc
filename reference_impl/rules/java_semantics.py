"""Java's string and number semantics, in one place for every rule (issue 35; PRIM-01, LIMIT-01, LIMIT-02).

Where a rule restates Java, Python's idioms answer differently at the edges: ``re``'s ``$`` matches before a
final ``\\n`` (Java's character tables refuse it), ``str.strip()`` removes Unicode whitespace and keeps control
characters (``String.trim`` removes every unit up to U+0020 and nothing else), ``str.split`` keeps trailing
empty strings (``String.split`` drops them), ``len`` counts code points (``String.length`` counts UTF-16
units) and ``int`` never overflows (Java's ``int`` and ``long`` wrap). The rules use these helpers instead;
``tests/test_java_idioms.py`` refuses the Python idioms in ``reference_impl/rules`` unless a line says why
it is safe.
"""
from __future__ import annotations

from .primitives import (java_is_blank, java_split, java_string_hash, java_trim, to_int32, to_int64,
                         utf16_units)

__all__ = ["int32", "int64", "java_length", "java_trim", "java_split", "java_is_blank", "java_string_hash",
           "java_chars_in_table", "NAME_TABLE", "utf16_units"]

int32 = to_int32
"""Wrap to Java's ``int`` (two's complement, 32 bits)."""
int64 = to_int64
"""Wrap to Java's ``long`` (two's complement, 64 bits)."""

NAME_TABLE = frozenset("%|-_" "0123456789" "abcdefghijklmnopqrstuvwxyz" "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""``TopicValidator.VALID_CHAR_BIT_MAP``: the characters a topic or group name may hold,
``^[%|a-zA-Z0-9_-]+$`` as a table (common/.../topic/TopicValidator.java#TopicValidator.isTopicOrGroupIllegal)."""


def java_length(text: str) -> int:
    """``String.length()``: UTF-16 code units, so a character outside the basic plane counts two."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def java_chars_in_table(text: str, table: frozenset[str] = NAME_TABLE) -> bool:
    """Every UTF-16 unit of ``text`` is in ``table`` (``TopicValidator.isTopicOrGroupIllegal`` negated): no
    anchoring, so a trailing line feed is refused like any other character outside the table; the empty
    string passes (the callers check blankness first)."""
    return all(unit in table for unit in utf16_units(text))
