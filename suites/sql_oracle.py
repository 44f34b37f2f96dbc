"""An independent restatement of SQL92 filter semantics (FILTER-05, FILTER-06) over tuple trees,
with a renderer to selector text and Hypothesis strategies for trees and property maps.

It shares no code with ``reference_impl.rules.filter``: the suites compare the two.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from hypothesis import strategies as st

NAMES = ("a", "b", "c")
VALUES = ("10", "-3", "2.5", "abc", "007", "TRUE", " 4")  # a 4.x client refuses blank values


class OracleError(Exception):
    """An evaluation error: the message does not match."""


def _java_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text) or not -(2**31) <= int(text) < 2**31:
        raise OracleError(text)
    return int(text)


def _java_double(text: str) -> float:
    t = text.strip()
    if not re.fullmatch(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)", t):
        raise OracleError(text)
    return float(t.rstrip("fFdD").replace("Infinity", "inf"))


def evaluate(node: tuple, props: Mapping[str, str]) -> Any:
    kind = node[0]
    if kind == "prop":  # a property in boolean position is cast: missing -> null, any string -> FALSE
        return None if node[1] not in props else False
    if kind == "not":
        v = evaluate(node[1], props)
        return None if v is None else not v
    if kind == "and":
        left = evaluate(node[1], props)
        if left is False:
            return False
        right = evaluate(node[2], props)
        if right is False:
            return False
        return None if None in (left, right) else True
    if kind == "or":
        left = evaluate(node[1], props)
        if left is True:
            return True
        right = evaluate(node[2], props)
        if right is True:
            return True
        return None if None in (left, right) else False
    if kind == "isnull":
        return (node[1] in props) if node[2] else (node[1] not in props)
    if kind == "cmpprop":  # two properties: null if either is missing; strings, numeric for ordering
        _, op, left_name, right_name = node
        left, right = props.get(left_name), props.get(right_name)
        if left is None or right is None:
            return None
        if op in ("=", "<>"):
            return (left == right) if op == "=" else (left != right)
        a, b = _java_double(left), _java_double(right)
        return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[op]
    value = props.get(node[2] if kind == "cmp" else node[1])
    if kind == "in":
        if value is None:
            return None
        return (value not in node[2]) if node[3] else (value in node[2])
    if kind == "str":
        _, name, op, pattern, negated = node
        if value is None:
            return False
        hit = {"CONTAINS": pattern in value, "STARTSWITH": value.startswith(pattern),
               "ENDSWITH": value.endswith(pattern)}[op]
        return not hit if negated else hit
    if kind == "between":
        _, name, low, high, negated = node
        if negated:
            return evaluate(("or", ("cmp", "<", name, low), ("cmp", ">", name, high)), props)
        return evaluate(("and", ("cmp", ">=", name, low), ("cmp", "<=", name, high)), props)
    _, op, name, const = node
    if value is None:
        return None
    if isinstance(const, str):
        return (value == const) if op == "=" else (value != const)
    number = _java_double(value) if isinstance(const, float) else _java_int(value)
    return {"=": number == const, "<>": number != const, ">": number > const, ">=": number >= const,
            "<": number < const, "<=": number <= const}[op]


def matches(node: tuple, props: Mapping[str, str]) -> bool:
    try:
        return evaluate(node, props) is True
    except OracleError:
        return False


def render(node: tuple) -> str:
    kind = node[0]
    if kind == "prop":
        return node[1]
    if kind == "not":
        return f"(NOT {render(node[1])})"
    if kind in ("and", "or"):
        return f"({render(node[1])} {kind.upper()} {render(node[2])})"
    if kind == "isnull":
        return f"({node[1]} IS {'NOT ' if node[2] else ''}NULL)"
    if kind == "in":
        values = ", ".join("'" + v.replace("'", "''") + "'" for v in node[2])
        return f"({node[1]} {'NOT ' if node[3] else ''}IN ({values}))"
    if kind == "str":
        _, name, op, pattern, negated = node
        return f"({name} {'NOT ' if negated else ''}{op} '{pattern}')"
    if kind == "between":
        _, name, low, high, negated = node
        return f"({name} {'NOT ' if negated else ''}BETWEEN {low} AND {high})"
    if kind == "cmpprop":
        return f"({node[2]} {node[1]} {node[3]})"
    _, op, name, const = node
    shown = "'" + const + "'" if isinstance(const, str) else repr(const)
    return f"({name} {op} {shown})"


names = st.sampled_from(NAMES)
ints = st.integers(-5, 20)
leaf = st.one_of(
    st.tuples(st.just("cmp"), st.sampled_from(["=", "<>", ">", ">=", "<", "<="]), names, ints),
    st.tuples(st.just("cmp"), st.sampled_from([">", "<", "="]), names, st.sampled_from([0.5, 2.5, 9.75])),
    st.tuples(st.just("cmp"), st.sampled_from(["=", "<>"]), names, st.sampled_from(["10", "abc", "x"])),
    st.tuples(st.just("isnull"), names, st.booleans()),
    st.tuples(st.just("in"), names, st.frozensets(st.sampled_from(["10", "abc", "007", "x"]), min_size=1, max_size=3),
              st.booleans()),
    st.tuples(st.just("str"), names, st.sampled_from(["CONTAINS", "STARTSWITH", "ENDSWITH"]),
              st.sampled_from(["a", "0", "bc", "T"]), st.booleans()),
    st.tuples(st.just("between"), names, st.integers(-5, 5), st.integers(5, 20), st.booleans()),
    st.tuples(st.just("prop"), names),
    st.tuples(st.just("cmpprop"), st.sampled_from(["=", "<>", ">", "<"]), names, names),
)
trees = st.recursive(leaf, lambda inner: st.one_of(
    st.tuples(st.just("not"), inner), st.tuples(st.sampled_from(["and", "or"]), inner, inner)), max_leaves=6)
property_maps = st.dictionaries(names, st.sampled_from(VALUES), max_size=2)
