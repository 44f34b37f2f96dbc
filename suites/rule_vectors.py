"""The catalog's vectors as data: each behaviour's ``cases`` are tables of inputs and expected outputs for
one reference rule (``reference_impl.rules``), validated by the behaviour-file schema and run by one generic
test (``suites/test_rule_vectors.py``); the data lives in ``spec/behaviours``, this runner here (it imports the rules).

A case::

    - rule: delay.schedule_tags_code       # a function (or constant) of reference_impl.rules, by module.name
      with: {store_timestamp: 0}           # arguments every row shares (optional)
      also: [CLAIM-04]                     # other behaviours the same rows check (optional)
      columns: [delay_property, expect]    # argument names, then what to check
      rows:
      - [18, 7200000]

The check columns: ``expect`` (the result must match it), ``raises`` (the name of the exception the rule
raises, looked up in the rule's module, then among builtins) with ``match`` (a regular expression its
message must contain) and ``error_code`` (the RocketMQ code it carries). A rule that is not callable is a constant: its only column is ``expect``.

Values: plain YAML, except a mapping ``{new: module.Class, args: [...], kwargs: {...}}`` builds an object
(or calls a rule for its result; ``attr: name`` then takes an attribute of it),
``{ref: module.NAME}`` is a rule module's constant (inputs only: expectations are literal values),
``{hex: "0A0B"}`` is bytes (an expectation too), and a string given for a parameter annotated with an
enum becomes that enum's member; a list given for a ``set`` parameter becomes a set, a string given for a
``bytes`` parameter its UTF-8 bytes.

Matching: an expected mapping matches an object by the attributes it names (the others are not checked)
and a mapping exactly, key for key, unless it says ``"<partial>": true`` (then only the keys it names);
``"<absent>"`` for a key means the mapping must not have it; each value matches in turn; an enum matches
its name; a NaN (``.nan``) matches a NaN; a set matches the list of its members in any order; tuples
and lists match lists.
"""
from __future__ import annotations

import builtins
import enum
import importlib
import inspect
import math
import re
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from spec.loader import Spec

RULES_PACKAGE = "reference_impl.rules"
ABSENT = "<absent>"
PARTIAL = "<partial>"
CHECK_COLUMNS = ("expect", "raises", "match", "error_code")


@dataclass(frozen=True)
class VectorRow:
    behaviour: str
    rule: str
    index: int
    arguments: Mapping[str, Any]
    checks: Mapping[str, Any]
    where: str
    """``file:line`` of the behaviour, for messages."""


def rows_of(spec: Spec) -> list[VectorRow]:
    """Every row of every behaviour's cases, in spec order."""
    out: list[VectorRow] = []
    for b in spec.behaviours.values():
        for case in b.cases:
            shared = dict(case.get("with") or {})
            for index, row in enumerate(case["rows"]):
                values = dict(zip(case["columns"], row))
                arguments = {**shared, **{k: v for k, v in values.items() if k not in CHECK_COLUMNS}}
                checks = {k: v for k, v in values.items() if k in CHECK_COLUMNS}
                for cited in (b.id, *case.get("also", ())):
                    out.append(VectorRow(cited, case["rule"], index, arguments, checks, f"{b.file}:{b.line}"))
    return out


def resolve(path: str) -> Any:
    """``module.name[.attr ...]`` under ``reference_impl.rules``."""
    module_name, _, rest = path.partition(".")
    value: Any = importlib.import_module(f"{RULES_PACKAGE}.{module_name}")
    for part in rest.split("."):
        value = getattr(value, part)
    return value


def build(value: Any) -> Any:
    """A YAML value as a rule's input (``new`` and ``ref`` mappings built, recursively)."""
    if isinstance(value, Mapping):
        if set(value) <= {"new", "args", "kwargs", "attr"} and "new" in value:
            made = resolve(value["new"])(*[build(a) for a in value.get("args", ())],
                                         **{k: build(v) for k, v in (value.get("kwargs") or {}).items()})
            for part in str(value.get("attr") or "").split(".") if value.get("attr") else ():
                made = getattr(made, part)
            return made
        if set(value) == {"ref"}:
            return resolve(value["ref"])
        if set(value) == {"hex"}:
            return bytes.fromhex(value["hex"])
        return {k: build(v) for k, v in value.items()}
    if isinstance(value, list):
        return [build(v) for v in value]
    return value


def _coerce(value: Any, annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for option in typing.get_args(annotation):
            if option is not type(None):
                return _coerce(value, option)
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum) and isinstance(value, str):
        return annotation[value]
    if annotation is bytes and isinstance(value, str):
        return value.encode()
    if (origin in (set, frozenset) or annotation in (set, frozenset)) and isinstance(value, list):
        return (frozenset if frozenset in (origin, annotation) else set)(value)
    return value


def call(rule: Callable[..., Any], arguments: Mapping[str, Any]) -> Any:
    """Call a rule with named arguments, coerced to its parameters' enum and set annotations."""
    try:
        hints = typing.get_type_hints(rule)
    except Exception:  # an annotation that does not resolve here: take the values as they are
        hints = {}
    built = {k: _coerce(build(v), hints.get(k)) for k, v in arguments.items()}
    return rule(**built)


def matches(actual: Any, expected: Any) -> bool:
    if isinstance(actual, (bytes, bytearray)) and isinstance(expected, Mapping) and set(expected) == {"hex"}:
        return bytes(actual) == bytes.fromhex(str(expected["hex"]))
    if isinstance(expected, Mapping):
        if isinstance(actual, Mapping):
            wanted = {k: v for k, v in expected.items() if k != PARTIAL}
            if expected.get(PARTIAL) is not True and set(actual) != {k for k, v in wanted.items() if v != ABSENT}:
                return False
            return all((k not in actual) if v == ABSENT else (k in actual and matches(actual[k], v))
                       for k, v in wanted.items())
        return all(hasattr(actual, k) and matches(getattr(actual, k), v) for k, v in expected.items())
    if isinstance(actual, enum.Enum) and isinstance(expected, str):
        return actual.name == expected
    if isinstance(actual, (set, frozenset)) and isinstance(expected, list):
        return len(actual) == len(expected) and all(any(matches(a, e) for a in actual) for e in expected)
    if isinstance(actual, (list, tuple)) and isinstance(expected, list):
        return len(actual) == len(expected) and all(matches(a, e) for a, e in zip(actual, expected))
    if isinstance(expected, bool) or expected is None:
        return actual is expected
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    return bool(actual == expected) and type(actual) is not bool


def exception_class(rule_path: str, name: str) -> type[BaseException]:
    module = importlib.import_module(f"{RULES_PACKAGE}.{rule_path.partition('.')[0]}")
    found = getattr(module, name, None) or getattr(builtins, name, None)
    if not (inspect.isclass(found) and issubclass(found, BaseException)):
        raise LookupError(f"{rule_path}: no exception class {name!r} in its module or among builtins")
    return found


def check_row(row: VectorRow) -> None:
    """Run one row; an ``AssertionError`` says which behaviour, rule, row and values disagree."""
    label = f"{row.behaviour} ({row.where}) {row.rule} row {row.index + 1} {dict(row.arguments)}"
    rule = resolve(row.rule)
    if "raises" in row.checks:
        wanted = exception_class(row.rule, row.checks["raises"])
        try:
            result = call(rule, row.arguments)
        except wanted as exc:
            pattern = row.checks.get("match")
            assert pattern is None or re.search(pattern, str(exc)), \
                f"{label}: raised {type(exc).__name__}({exc}), which does not match {pattern!r}"
            assert "error_code" not in row.checks or getattr(exc, "code", None) == row.checks["error_code"], \
                f"{label}: raised with code {getattr(exc, 'code', None)!r}, the vector says {row.checks['error_code']!r}"
            return
        raise AssertionError(f"{label}: returned {result!r}, expected {wanted.__name__}")
    result = call(rule, row.arguments) if callable(rule) and not isinstance(rule, enum.Enum) else rule
    assert matches(result, row.checks["expect"]), f"{label}: got {result!r}, the vector says {row.checks['expect']!r}"
