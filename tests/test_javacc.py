"""reference_impl.rules.javacc: positions and messages as the filter module's generated lexer makes them
(FILTER-05); the SQL92 vectors check the same through ``sql92.compile_sql``."""
from __future__ import annotations

import pytest

from adapters.driver_codec import error_from_json, error_to_json
from reference_impl.rules import javacc
from reference_impl.rules.javacc import Position
from reference_impl.rules.sql92 import SqlParseError, compile_sql


def test_columns_count_tab_stops_line_ends_and_utf16_units() -> None:
    spans = javacc.spans("a\tb\r\nc\rd\U0001F600e")
    assert [s.begin for s in spans] == [Position(1, 1), Position(1, 8), Position(1, 9), Position(1, 10),
                                        Position(1, 11), Position(2, 1), Position(2, 2), Position(3, 1),
                                        Position(3, 2), Position(3, 4)]
    assert spans[8].end == Position(3, 3)  # the low surrogate


def test_escapes_are_java_ones() -> None:
    assert javacc.escape("a'\"\\\t\x00\u00e9\U0001F600") == "a\\'\\\"\\\\\\t\\u00e9\\ud83d\\ude00"


def test_lexical_errors_say_where_the_token_manager_stopped() -> None:
    lexical = "Lexical error at line {}, column {}.  Encountered: {}"
    assert javacc.lexical_error("a @ 1", 2, 0) == lexical.format(1, 3, '"@" (64), after : ""')
    assert javacc.lexical_error("a @", 2, 0) == lexical.format(1, 4, '<EOF> after : ""')
    assert javacc.lexical_error("'x\n", 0, 3) == lexical.format(2, 0, '<EOF> after : "\\\'x\\n"')


def test_a_parse_error_crosses_the_driver_protocol_as_the_error_suites_catch() -> None:
    """The parser raises a refinement of SqlParseError; a driver reports it by the name the harness knows."""
    with pytest.raises(SqlParseError) as caught:
        compile_sql("a >")
    sent = error_to_json(caught.value)
    assert sent["type"] == "SqlParseError"
    back = error_from_json(sent)
    assert type(back) is SqlParseError and str(back) == 'Encountered "<EOF>" at line 1, column 3.'
