"""An independent restatement of SQL92 selector evaluation (FILTER-05, FILTER-06) over tuple trees, with a
renderer to selector text and Hypothesis strategies for trees and property maps.

The rules restated here were read from the broker's ``filter`` module at rocketmq-all-5.0.0 and 5.3.3
(``ComparisonExpression.doCreateEqual`` / ``evaluate`` / ``__compare``, ``LogicExpression``,
``UnaryExpression.createNegate`` / ``createInExpression`` / ``createBooleanCast``, the 5.1.3
``ContainsExpression`` family). It shares no code with ``reference_impl.rules.sql92``: the suites compare
the two.
"""
from __future__ import annotations

import math
import re
import unicodedata
from typing import Any, Mapping

from hypothesis import strategies as st

NAMES = ("a", "b", "c")
# a 4.x client refuses blank values; the rest are chosen to reach every conversion: Unicode digits
# (Arabic-Indic three), a hexadecimal double, NaN, a signed zero, a long, Boolean text in odd case
VALUES = ("10", "-3", "2.5", "abc", "007", "TRUE", " 4", "NaN", "-0.0", "0x1p3", "\u0663", "1e3", "+5",
          "2147483648", "tRuE", "-Infinity", "3d")
STRING_TESTS_SINCE = (5, 1, 3)


class OracleError(Exception):
    """Java threw during evaluation: the message does not match."""


def _parse_integral(text: str, bits: int) -> int:
    """``Integer.valueOf`` (32 bits) / ``Long.valueOf`` (64): sign, then Unicode decimal digits of the
    basic plane, in range."""
    if not text or any(ord(ch) > 0xFFFF for ch in text):
        raise OracleError(text)
    body = text[1:] if text[0] in "+-" else text
    if not body or any(unicodedata.category(ch) != "Nd" for ch in body):
        raise OracleError(text)
    value = int("".join(str(unicodedata.decimal(ch)) for ch in body))
    value = -value if text[0] == "-" else value
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise OracleError(text)
    return value


def _parse_double(text: str) -> float:
    """``Double.valueOf``: trimmed of characters up to U+0020; NaN, Infinity, decimal or hex with a suffix."""
    t = text
    while t and ord(t[0]) <= 32:
        t = t[1:]
    while t and ord(t[-1]) <= 32:
        t = t[:-1]
    m = re.fullmatch(r"([+-]?)(NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
                     r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)", t, re.ASCII)
    if not m:
        raise OracleError(text)
    sign, body = -1.0 if m.group(1) == "-" else 1.0, m.group(2)
    if body == "NaN":
        return math.nan
    if body == "Infinity":
        return sign * math.inf
    body = body.rstrip("fFdD")
    if body[:2].lower() == "0x":
        try:
            return sign * float.fromhex(body)
        except OverflowError:
            return sign * math.inf
    return sign * float(body)


def _double_order(a: float, b: float) -> int:
    """``Double.compareTo``: NaN above all and equal to itself; -0.0 below 0.0."""
    if math.isnan(a) or math.isnan(b):
        return 0 if math.isnan(a) and math.isnan(b) else (1 if math.isnan(a) else -1)
    if a == b:
        return int(math.copysign(1, a) > math.copysign(1, b)) - int(math.copysign(1, a) < math.copysign(1, b))
    return 1 if a > b else -1


def _kind(const: Any) -> str:
    if isinstance(const, bool):
        return "bool"
    if isinstance(const, float):
        return "double"
    if isinstance(const, int):
        return "int" if -(2 ** 31) <= const < 2 ** 31 else "long"
    return "string"


def _string_against(value: str, const: Any) -> int:
    """The order of a String property against a constant, converted to the constant's type."""
    kind = _kind(const)
    if kind == "bool":
        converted = value.isascii() and value.lower() == "true"
        return (converted > const) - (converted < const)
    if kind == "double":
        return _double_order(_parse_double(value), const)
    if kind in ("int", "long"):
        number = _parse_integral(value, 32 if kind == "int" else 64)
        return (number > const) - (number < const)
    return 0 if value == const else 1


def _equal(left: Any, right: Any, const_on_left: bool) -> bool | None:
    """``doCreateEqual`` of a property (a String or None) and a constant, in either order."""
    if const_on_left:
        if right is None:
            return False
        if isinstance(left, bool):
            raise OracleError("a Boolean constant against a String is cast to String")
        return -_string_against(right, left) == 0
    if left is None:
        return None
    return _string_against(left, right) == 0


_ORDERS = {">": lambda c: c > 0, ">=": lambda c: c >= 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0}


def evaluate(node: tuple, props: Mapping[str, str]) -> Any:
    kind = node[0]
    if kind == "prop":  # a property in boolean position is cast: missing -> null, any string -> FALSE
        return None if node[1] not in props else False
    if kind == "not":
        v = evaluate(node[1], props)
        return None if v is None else not v
    if kind in ("and", "or"):
        decisive = kind == "or"
        left = evaluate(node[1], props)
        if left is decisive:
            return decisive
        right = evaluate(node[2], props)
        if right is decisive:
            return decisive
        return None if None in (left, right) else not decisive
    if kind == "isnull":
        return (node[1] in props) if node[2] else (node[1] not in props)
    if kind == "cmpprop":  # two properties
        _, op, left_name, right_name = node
        left, right = props.get(left_name), props.get(right_name)
        if op in ("=", "<>"):  # one null: null when it is the left one, FALSE when the right; two: TRUE
            if (left is None) != (right is None):
                equal = None if left is None else False
            else:
                equal = left == right
            return equal if op == "=" or equal is None else not equal
        if left is None or right is None:
            return None
        return _ORDERS[op](_double_order(_parse_double(left), _parse_double(right)))
    if kind == "neg":  # minus a property: never a number, so null, and so is any comparison with it
        return None
    if kind == "in":
        value = props.get(node[1])
        if value is None:
            return None
        return (value not in node[2]) if node[3] else (value in node[2])
    if kind == "str":
        _, name, op, pattern, negated = node
        value = props.get(name)
        if not pattern or value is None:
            return False
        hit = {"CONTAINS": pattern in value, "STARTSWITH": value.startswith(pattern),
               "ENDSWITH": value.endswith(pattern)}[op]
        return not hit if negated else hit
    if kind == "between":
        _, name, low, high, negated = node
        if negated:
            return evaluate(("or", ("cmp", "<", name, low), ("cmp", ">", name, high)), props)
        return evaluate(("and", ("cmp", ">=", name, low), ("cmp", "<=", name, high)), props)
    const_on_left = kind == "rcmp"
    if const_on_left:
        _, op, const, name = node
    else:
        _, op, name, const = node
    value = props.get(name)
    if op in ("=", "<>"):
        equal = _equal(const, value, True) if const_on_left else _equal(value, const, False)
        return equal if op == "=" or equal is None else not equal
    if value is None:
        return None
    order = _string_against(value, const)
    return _ORDERS[op](-order if const_on_left else order)


def matches(node: tuple, props: Mapping[str, str]) -> bool:
    try:
        return evaluate(node, props) is True
    except OracleError:
        return False


def _shown(const: Any) -> str:
    if isinstance(const, bool):
        return "TRUE" if const else "FALSE"
    if isinstance(const, str):
        return "'" + const.replace("'", "''") + "'"
    return repr(const)


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
        values = ", ".join("'" + v.replace("'", "''") + "'" for v in sorted(node[2]))
        return f"({node[1]} {'NOT ' if node[3] else ''}IN ({values}))"
    if kind == "str":
        _, name, op, pattern, negated = node
        return f"({name} {'NOT ' if negated else ''}{op} '{pattern}')"
    if kind == "between":
        _, name, low, high, negated = node
        return f"({name} {'NOT ' if negated else ''}BETWEEN {low} AND {high})"
    if kind == "cmpprop":
        return f"({node[2]} {node[1]} {node[3]})"
    if kind == "neg":
        _, op, name, const = node
        return f"(-{name} {op} {_shown(const)})"
    if kind == "rcmp":
        _, op, const, name = node
        return f"({_shown(const)} {op} {name})"
    _, op, name, const = node
    return f"({name} {op} {_shown(const)})"


def has_string_tests(node: tuple) -> bool:
    if node[0] == "str":
        return True
    return node[0] in ("not", "and", "or") and any(has_string_tests(child) for child in node[1:])


names = st.sampled_from(NAMES)
ints = st.integers(-5, 20)
numbers = st.one_of(ints, st.sampled_from([0.5, 2.5, 9.75, 1e-05, 2147483648, 9007199254740993]))
leaf = st.one_of(
    st.tuples(st.just("cmp"), st.sampled_from(["=", "<>", ">", ">=", "<", "<="]), names, numbers),
    st.tuples(st.just("cmp"), st.sampled_from(["=", "<>"]), names, st.sampled_from(["10", "abc", "x", True, False])),
    st.tuples(st.just("rcmp"), st.sampled_from(["=", "<>", ">", "<="]), numbers, names),
    st.tuples(st.just("rcmp"), st.sampled_from(["=", "<>"]), st.sampled_from(["10", True]), names),
    st.tuples(st.just("neg"), st.sampled_from(["=", ">", "<>"]), names, ints),
    st.tuples(st.just("isnull"), names, st.booleans()),
    st.tuples(st.just("in"), names, st.frozensets(st.sampled_from(["10", "abc", "007", "x"]), min_size=1, max_size=3),
              st.booleans()),
    st.tuples(st.just("str"), names, st.sampled_from(["CONTAINS", "STARTSWITH", "ENDSWITH"]),
              st.sampled_from(["a", "0", "bc", "T", ""]), st.booleans()),
    st.tuples(st.just("between"), names, st.integers(-5, 5), st.integers(5, 20), st.booleans()),
    st.tuples(st.just("prop"), names),
    st.tuples(st.just("cmpprop"), st.sampled_from(["=", "<>", ">", "<"]), names, names),
)
trees = st.recursive(leaf, lambda inner: st.one_of(
    st.tuples(st.just("not"), inner), st.tuples(st.sampled_from(["and", "or"]), inner, inner)), max_leaves=6)
property_maps = st.dictionaries(names, st.sampled_from(VALUES), max_size=2)
