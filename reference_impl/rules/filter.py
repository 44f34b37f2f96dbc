"""Message filtering: tag codes, tag expressions, where filtering happens, and SQL92 (FILTER-01..06).

The SQL92 part is a small recursive-descent parser producing an expression tree, and an evaluator
with the three-valued logic and the coercions of the catalog. Parse-time checks raise
``SqlParseError``; evaluation errors (an unparseable number, say) make the message not match.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from . import codes
from .primitives import java_string_hash

DOUBLE_MIN_VALUE = 4.9e-324
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
SUBSCRIPTION_PARSE_FAILED = 23
SQL_NOT_ENABLED_REMARK = "The broker does not support consumer to filter message by SQL92"


# ---- tags (FILTER-01..03) -------------------------------------------------------------------------

def tags_code(tags: str | None) -> int:
    """``tagsString2tagsCode``: Java hashCode of the TAGS property, 0 when absent or empty (FILTER-01)."""
    return java_string_hash(tags) if tags else 0


@dataclass(frozen=True)
class TagSubscription:
    """``SubscriptionData`` for a TAG expression (FILTER-02)."""

    sub_string: str
    tags: frozenset[str]
    codes: frozenset[int]

    @property
    def all(self) -> bool:
        return self.sub_string == "*"


def parse_tag_expression(expression: str | None) -> TagSubscription:
    """``FilterAPI.buildSubscriptionData`` for TAG (FILTER-02).

    null, empty or exactly ``*`` subscribe to everything; otherwise split on ``||``, trim, drop empty
    parts. A ``*`` inside a list, or with spaces around it, is an ordinary tag.
    """
    if expression is None or expression == "" or expression == "*":
        return TagSubscription("*", frozenset(), frozenset())
    tags = [part.strip() for part in expression.split("||")]
    tags = [t for t in tags if t]
    return TagSubscription(expression, frozenset(tags), frozenset(java_string_hash(t) for t in tags))


def broker_tag_match(subscription: TagSubscription | None, tags_code_value: int | None) -> bool:
    """``ExpressionMessageFilter.isMatchedByConsumeQueue`` for TAG: a hash check only (FILTER-03)."""
    if subscription is None or tags_code_value is None or subscription.all:
        return True
    return tags_code_value in subscription.codes


def client_tag_match(subscription: TagSubscription, tags: str | None) -> bool:
    """``PullAPIWrapper.processPullResult`` re-filter: exact string membership (FILTER-03)."""
    if not subscription.tags:
        return True
    return tags is not None and tags in subscription.tags


def proxy_tag_match(tag_set: frozenset[str], tags: str | None) -> bool:
    """5.x proxy ``FilterUtils.isTagMatched``: empty set matches; null tags never (FILTER-03)."""
    if not tag_set:
        return True
    return tags is not None and tags in tag_set


def delivered_to_tag_subscriber(subscription: TagSubscription, tags: str | None) -> bool:
    """Broker hash filter then client exact filter (FILTER-03)."""
    return broker_tag_match(subscription, tags_code(tags)) and client_tag_match(subscription, tags)


# ---- SQL92 (FILTER-04..06) ------------------------------------------------------------------------

class SqlParseError(ValueError):
    """A malformed or illegal SQL92 expression (broker answers SUBSCRIPTION_PARSE_FAILED, 23)."""

    code = SUBSCRIPTION_PARSE_FAILED


class SqlEvaluationError(Exception):
    """Raised during evaluation; the broker logs it and the message does not match (FILTER-06)."""


def sql_subscription_check(expression: str, enable_property_filter: bool) -> tuple[int, str]:
    """What the broker answers to a SQL92 subscription: code and remark (FILTER-04, FILTER-05)."""
    if not enable_property_filter:
        return codes.R_SYSTEM_ERROR, SQL_NOT_ENABLED_REMARK
    try:
        compile_sql(expression)
    except SqlParseError as exc:
        return SUBSCRIPTION_PARSE_FAILED, f"Parse the consumer's subscription[{expression}] failed: {exc}"
    return codes.R_SUCCESS, ""


_TOKEN = re.compile(r"""
    (?P<ws>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^']|'')*')
  | (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<decimal>\d+[lL]?)
  | (?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op><>|>=|<=|[=<>(),+\-])
""", re.X | re.S)
KEYWORDS = {"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH", "ENDSWITH"}


@dataclass(frozen=True)
class Tok:
    kind: str   # string, number, ident, kw, op, end
    value: Any
    text: str


def _tokenize(text: str) -> list[Tok]:
    out: list[Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SqlParseError(f"Encountered unexpected character {text[pos]!r} at column {pos + 1}")
        pos = m.end()
        kind = m.lastgroup
        raw = m.group(kind)
        if kind == "ws":
            continue
        if kind == "string":
            out.append(Tok("string", raw[1:-1].replace("''", "'"), raw))
        elif kind == "float":
            value = float(raw)
            if value < DOUBLE_MIN_VALUE:
                raise SqlParseError(f"{raw} is less than 4.9E-324")
            out.append(Tok("number", value, raw))
        elif kind == "decimal":
            digits = raw.rstrip("lL")
            value = int(digits)
            if value > LONG_MAX:
                raise SqlParseError(f"{raw} is out of the range of a long")
            out.append(Tok("number", JavaLong(value) if (raw[-1] in "lL" or value > INT_MAX) else value, raw))
        elif kind == "ident":
            upper = raw.upper()
            out.append(Tok("kw", upper, raw) if upper in KEYWORDS else Tok("ident", raw, raw))
        else:
            out.append(Tok("op", raw, raw))
    out.append(Tok("end", None, "<EOF>"))
    return out


class JavaLong(int):
    """An integer literal typed as Long (it does not fit an int, or carries an L suffix)."""


class Expr:
    """A node of the compiled expression; ``evaluate`` returns True/False/None or a value."""

    def evaluate(self, props: Mapping[str, str]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Const(Expr):
    value: Any

    def evaluate(self, props: Mapping[str, str]) -> Any:
        return self.value


@dataclass(frozen=True)
class Prop(Expr):
    name: str

    def evaluate(self, props: Mapping[str, str]) -> Any:
        return props.get(self.name)


@dataclass(frozen=True)
class Unary(Expr):
    op: str
    operand: Expr

    def evaluate(self, props: Mapping[str, str]) -> Any:
        value = self.operand.evaluate(props)
        if value is None:
            return None
        if self.op == "NOT":
            return not value
        if self.op == "-":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SqlEvaluationError(f"cannot negate {value!r}")
            return -value
        return value


@dataclass(frozen=True)
class Logic(Expr):
    op: str
    left: Expr
    right: Expr

    def evaluate(self, props: Mapping[str, str]) -> Any:
        """Short-circuits like ``LogicExpression``: a false left side of AND (true of OR) is the answer,
        and the right side is not evaluated, so its errors do not surface (FILTER-06)."""
        a = self.left.evaluate(props)
        if self.op == "AND":
            if a is False:
                return False
            b = self.right.evaluate(props)
            if b is False:
                return False
            return None if a is None or b is None else True
        if a is True:
            return True
        b = self.right.evaluate(props)
        if b is True:
            return True
        return None if a is None or b is None else False


@dataclass(frozen=True)
class BoolCast(Expr):
    """``createBooleanCast`` of a property: null stays null, any non-Boolean value is FALSE (FILTER-06)."""

    operand: Expr

    def evaluate(self, props: Mapping[str, str]) -> Any:
        value = self.operand.evaluate(props)
        if value is None:
            return None
        return value if isinstance(value, bool) else False


def as_boolean(expr: Expr) -> Expr:
    """``asBooleanExpression``: boolean expressions pass, properties are cast, anything else is an error (FILTER-05)."""
    if isinstance(expr, Unary) and expr.op == "NOT" or isinstance(expr, _BOOLEAN_NODES) or (isinstance(expr, Const) and (expr.value is None or isinstance(expr.value, bool))):
        return expr
    if isinstance(expr, Prop):
        return BoolCast(expr)
    raise SqlParseError(f"Expression will not result in a boolean value: {expr}")


@dataclass(frozen=True)
class Compare(Expr):
    op: str
    left: Expr
    right: Expr

    def evaluate(self, props: Mapping[str, str]) -> Any:
        a, b = self.left.evaluate(props), self.right.evaluate(props)
        if a is None or b is None:
            return None
        a, b = _coerce(a, b, self.op)
        if self.op == "=":
            return a == b
        if self.op == "<>":
            return a != b
        try:
            return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[self.op]
        except TypeError as exc:
            raise SqlEvaluationError(str(exc)) from exc


def _number_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return "double"
    if isinstance(value, JavaLong):
        return "long"
    if isinstance(value, int):
        return "int"
    return None


_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")


def _parse_as(text: str, kind: str) -> Any:
    """``Integer.valueOf`` / ``Long.valueOf`` / ``Double.valueOf`` of a property string, Java's grammar."""
    if kind in ("int", "long"):
        if not _JAVA_INT.fullmatch(text):
            raise SqlEvaluationError(f"For input string: {text!r}")
        value = int(text, 10)
        low, high = (INT_MIN, INT_MAX) if kind == "int" else (LONG_MIN, LONG_MAX)
        if not low <= value <= high:
            raise SqlEvaluationError(f"{text!r} is out of the range of {kind}")
        return value
    trimmed = text.strip(" \t\n\r\x0b\x0c\x00")  # Double.valueOf trims characters <= ' '
    if not _JAVA_DOUBLE.fullmatch(trimmed):
        raise SqlEvaluationError(f"For input string: {text!r}")
    return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))


def _coerce(a: Any, b: Any, op: str) -> tuple[Any, Any]:
    """FILTER-06 coercions between a String property and a constant, and between two strings."""
    if isinstance(a, str) and isinstance(b, str):
        if op in ("=", "<>"):
            return a, b
        return _parse_as(a, "double"), _parse_as(b, "double")
    if isinstance(a, str) and not isinstance(b, str):
        return _coerce_one(a, b), b
    if isinstance(b, str) and not isinstance(a, str):
        return a, _coerce_one(b, a)
    if isinstance(a, bool) != isinstance(b, bool):
        raise SqlEvaluationError(f"cannot compare {a!r} with {b!r}")
    return a, b


def _coerce_one(text: str, other: Any) -> Any:
    if isinstance(other, bool):
        return text.lower() == "true"  # Boolean.valueOf
    kind = _number_type(other)
    if kind is None:
        raise SqlEvaluationError(f"cannot coerce {text!r}")
    return _parse_as(text, kind)


@dataclass(frozen=True)
class IsNull(Expr):
    operand: Expr
    negated: bool

    def evaluate(self, props: Mapping[str, str]) -> Any:
        is_null = self.operand.evaluate(props) is None
        return not is_null if self.negated else is_null


@dataclass(frozen=True)
class InList(Expr):
    operand: Expr
    values: frozenset[str]
    negated: bool

    def evaluate(self, props: Mapping[str, str]) -> Any:
        value = self.operand.evaluate(props)
        if value is None or not isinstance(value, str):
            return None
        return (value not in self.values) if self.negated else (value in self.values)


@dataclass(frozen=True)
class StringTest(Expr):
    op: str
    operand: Expr
    pattern: str
    negated: bool

    def evaluate(self, props: Mapping[str, str]) -> Any:
        value = self.operand.evaluate(props)
        if value is None or not isinstance(value, str):
            return False
        found = {"CONTAINS": self.pattern in value, "STARTSWITH": value.startswith(self.pattern),
                 "ENDSWITH": value.endswith(self.pattern)}[self.op]
        return not found if self.negated else found


_BOOLEAN_NODES = (Logic, BoolCast, Compare, IsNull, InList, StringTest)


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self, offset: int = 0) -> Tok:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def take(self) -> Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, kind: str, value: Any = None) -> bool:
        tok = self.peek()
        if tok.kind == kind and (value is None or tok.value == value):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, value: Any = None) -> Tok:
        tok = self.peek()
        if tok.kind != kind or (value is not None and tok.value != value):
            want = value if value is not None else kind
            raise SqlParseError(f"Encountered \"{tok.text}\", was expecting {want}")
        return self.take()

    def parse(self) -> Expr:
        expr = as_boolean(self.or_expr())
        if self.peek().kind != "end":
            raise SqlParseError(f"Encountered \"{self.peek().text}\" after a complete expression")
        return expr

    def or_expr(self) -> Expr:
        left = self.and_expr()
        while self.accept("kw", "OR"):
            left = Logic("OR", as_boolean(left), as_boolean(self.and_expr()))
        return left

    def and_expr(self) -> Expr:
        left = self.equality()
        while self.accept("kw", "AND"):
            left = Logic("AND", as_boolean(left), as_boolean(self.equality()))
        return left

    def equality(self) -> Expr:
        left = self.comparison()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.value in ("=", "<>"):
                self.take()
                right = self.comparison()
                if isinstance(right, Const) and right.value is None or isinstance(left, Const) and left.value is None:
                    raise SqlParseError("'NULL' cannot be compared.")
                left = Compare(tok.value, left, right)
            elif tok.kind == "kw" and tok.value == "IS":
                self.take()
                negated = self.accept("kw", "NOT")
                self.expect("kw", "NULL")
                left = IsNull(left, negated)
            else:
                return left

    def comparison(self) -> Expr:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.value in (">", ">=", "<", "<="):
                self.take()
                right = self.unary()
                _check_comparable(left)
                _check_comparable(right)
                left = Compare(tok.value, left, right)
                continue
            negated = False
            if tok.kind == "kw" and tok.value == "NOT" and self.peek(1).kind == "kw" and self.peek(1).value in (
                    "BETWEEN", "IN", "CONTAINS", "STARTSWITH", "ENDSWITH"):
                self.take()
                negated = True
                tok = self.peek()
            if tok.kind == "kw" and tok.value == "BETWEEN":
                self.take()
                low = self.unary()
                self.expect("kw", "AND")
                high = self.unary()
                for side in (low, high):
                    _check_comparable(side)
                if isinstance(low, Const) and isinstance(high, Const) and _number_type(low.value) and \
                        _number_type(high.value) and low.value > high.value:
                    raise SqlParseError(f"Illegal values of between, values: {low.value}, {high.value}")
                if negated:
                    left = Logic("OR", Compare("<", left, low), Compare(">", left, high))
                else:
                    left = Logic("AND", Compare(">=", left, low), Compare("<=", left, high))
            elif tok.kind == "kw" and tok.value == "IN":
                self.take()
                self.expect("op", "(")
                values = [self.expect("string").value]
                while self.accept("op", ","):
                    values.append(self.expect("string").value)
                self.expect("op", ")")
                left = InList(left, frozenset(values), negated)
            elif tok.kind == "kw" and tok.value in ("CONTAINS", "STARTSWITH", "ENDSWITH"):
                self.take()
                left = StringTest(tok.value, left, self.expect("string").value, negated)
            else:
                if negated:
                    raise SqlParseError(f"Encountered \"{tok.text}\" after NOT")
                return left

    def unary(self) -> Expr:
        if self.accept("op", "+"):
            return self.unary()
        if self.accept("op", "-"):
            operand = self.unary()
            if isinstance(operand, Const) and _number_type(operand.value):
                return Const(-operand.value if not isinstance(operand.value, JavaLong) else JavaLong(-operand.value))
            return Unary("-", operand)
        if self.accept("kw", "NOT"):
            return Unary("NOT", as_boolean(self.unary()))
        return self.primary()

    def primary(self) -> Expr:
        tok = self.take()
        if tok.kind in ("string", "number"):
            return Const(tok.value)
        if tok.kind == "kw" and tok.value in ("TRUE", "FALSE"):
            return Const(tok.value == "TRUE")
        if tok.kind == "kw" and tok.value == "NULL":
            return Const(None)
        if tok.kind == "ident":
            return Prop(tok.value)
        if tok.kind == "op" and tok.value == "(":
            inner = self.or_expr()
            self.expect("op", ")")
            return inner
        raise SqlParseError(f"Encountered \"{tok.text}\" where a value was expected")


def _check_comparable(side: Expr) -> None:
    """``checkLessThanOperand``: string and boolean constants cannot be ordered (FILTER-05)."""
    if isinstance(side, Const) and (isinstance(side.value, (str, bool)) or side.value is None):
        shown = "'" + side.value + "'" if isinstance(side.value, str) else str(side.value).upper()
        raise SqlParseError(f"{shown} cannot be compared.")


def compile_sql(expression: str) -> Expr:
    """Parse a SQL92 selector (FILTER-05); raises SqlParseError."""
    if not expression or not expression.strip():
        raise SqlParseError("SQL92 expression must not be empty")
    return _Parser(expression).parse()


def sql_evaluate(expr: Expr, properties: Mapping[str, str]) -> bool | None:
    """The raw three-valued result; evaluation errors propagate (FILTER-06)."""
    value = expr.evaluate(properties)
    return value if isinstance(value, bool) or value is None else None


def sql_matches(expression: str | Expr, properties: Mapping[str, str]) -> bool:
    """Broker-side match: null, non-boolean and errors do not match (FILTER-04, FILTER-06)."""
    expr = compile_sql(expression) if isinstance(expression, str) else expression
    try:
        return expr.evaluate(properties) is True
    except SqlEvaluationError:
        return False


def sql_filters_retry_topic(filter_support_retry: bool = False) -> bool:
    """Retry topics are SQL-filtered only with ``filterSupportRetry`` (default false) (FILTER-04)."""
    return filter_support_retry


MatchFunction = Callable[[Mapping[str, str]], bool]
