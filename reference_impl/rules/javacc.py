"""What the JavaCC-generated lexer and parser of the broker's ``filter`` module say when they fail (FILTER-05).

Read from ``filter/src/main/java/org/apache/rocketmq/filter/parser`` at the covered tags (the generated files
are the same from 4.9.8 through 5.3.3): where a character is (``SimpleCharStream.UpdateLineColumn``: lines
and columns from 1, a tab stop every 8 columns, a line ending after its ``\\n``, ``\\r`` or ``\\r\\n``), how a
message quotes text (``TokenMgrError.addEscapes``, ``ParseException.add_escapes``), and the wording of
``TokenMgrError.LexicalError`` and of the first sentence of ``ParseException.initialise``. Positions count
Java chars, UTF-16 code units: a character outside the Basic Multilingual Plane takes two columns. The broker
shows these messages to a client that checks its subscription (``ClientManageProcessor.checkClientConfig``
answers ``SUBSCRIPTION_PARSE_FAILED`` with the exception's text).
"""
from __future__ import annotations

from dataclasses import dataclass

from .primitives import utf16_units

TAB_SIZE = 8
"""``SimpleCharStream.tabSize``."""

_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x27: "\\'",
            0x5C: "\\\\"}


@dataclass(frozen=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True)
class Span:
    """Where one character is: its first and its last UTF-16 unit (the same unit in the BMP)."""

    begin: Position
    end: Position


def spans(text: str) -> list[Span]:
    """The span of every character of ``text``, counted as ``SimpleCharStream.UpdateLineColumn`` counts."""
    line, column, after_cr, after_lf = 1, 0, False, False
    out: list[Span] = []
    for char in text:
        units: list[Position] = []
        for unit in map(ord, utf16_units(char)):
            column += 1
            if after_lf:
                after_lf, line, column = False, line + 1, 1
            elif after_cr:
                after_cr = False
                if unit == 0x0A:
                    after_lf = True
                else:
                    line, column = line + 1, 1
            if unit == 0x0D:
                after_cr = True
            elif unit == 0x0A:
                after_lf = True
            elif unit == 0x09:
                column -= 1
                column += TAB_SIZE - column % TAB_SIZE
            units.append(Position(line, column))
        out.append(Span(units[0], units[-1]))
    return out


def escape(text: str) -> str:
    """``addEscapes`` (``ParseException.add_escapes``): the usual backslash escapes, NUL dropped, every other unit outside 0x20-0x7E as
    ``\\uXXXX`` (lower-case hex)."""
    out: list[str] = []
    for unit in map(ord, utf16_units(text)):
        if unit == 0:
            continue
        if unit in _ESCAPES:
            out.append(_ESCAPES[unit])
        elif unit < 0x20 or unit > 0x7E:
            out.append(f"\\u{unit:04x}")
        else:
            out.append(chr(unit))
    return "".join(out)


def lexical_error(text: str, start: int, prefix: int) -> str:
    """``TokenMgrError.LexicalError`` for the token manager failing at index ``start`` of ``text`` after
    reading ``prefix`` characters that could still begin a token (0 for a character that begins none).

    The token manager reads one character past the prefix, the one that fails, unless the prefix runs to
    the end. The error is placed at the last character read; when nothing follows it, the message says
    ``<EOF>`` one column further (the next line, column 0, after a line break). "after" quotes what was read
    of the attempt once that is more than one char: without the failing character when input goes on. A
    failing character outside the BMP fails on its high surrogate, and its low one still follows."""
    positions = spans(text)
    failing = start + prefix < len(text)
    last = start + prefix if failing else len(text) - 1
    read = len(utf16_units(text[start:start + prefix])) + (1 if failing else 0)
    units = [ord(u) for u in utf16_units(text[last])]
    if failing and len(units) > 1:
        at, after = positions[last].begin, escape(text[start:last]) if read > 1 else ""
        return (f"Lexical error at line {at.line}, column {at.column}.  Encountered: "
                f'"{escape(chr(units[0]))}" ({units[0]}), after : "{after}"')
    at = positions[last].end
    if last == len(text) - 1:
        line, column = (at.line + 1, 0) if text[last] in "\n\r" else (at.line, at.column + 1)
        after = escape(text[start:last + 1]) if read > 1 else ""
        return f'Lexical error at line {line}, column {column}.  Encountered: <EOF> after : "{after}"'
    after = escape(text[start:last]) if read > 1 else ""
    return (f"Lexical error at line {at.line}, column {at.column}.  Encountered: "
            f'"{escape(text[last])}" ({units[0]}), after : "{after}"')


def encountered(image: str | None, token_name: str, at: Position) -> str:
    """The first sentence of ``ParseException.initialise`` for the token it names (one token: the parser's
    expected sequences are one token long): ``<EOF>`` bare, any other token as its kind's image and its text."""
    shown = "<EOF>" if image is None else f' {token_name} "{escape(image)} "'
    return f'Encountered "{shown}" at line {at.line}, column {at.column}.'
