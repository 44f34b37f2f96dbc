"""SQL92 message selectors as the broker's ``filter`` module compiles and evaluates them (FILTER-05, FILTER-06).

Read from ``filter/src/main/java/org/apache/rocketmq/filter`` at the covered tags: the grammar
(``parser/SelectorParser.jj`` and the generated ``SelectorParser`` / ``SelectorParserTokenManager``), the
parse-time checks and evaluation of ``expression/ComparisonExpression``, ``LogicExpression``,
``UnaryExpression``, ``ConstantExpression`` and ``BooleanConstantExpression``. Three things decide most
odd inputs:

- The lexer is lazy and the parser stops after the longest prefix its grammar accepts: the selector's
  top rule never asks for the end of input, so the tokens after a complete expression are ignored, except
  the one token the parser peeks at, which must lex and must not start a failing alternative (FILTER-05).
- ``CONTAINS``, ``STARTSWITH`` and ``ENDSWITH`` are keywords only from 5.1.3. Before, they are property
  names: ``b CONTAINS 'x'`` is the property ``b`` cast to a boolean, the rest ignored; ``b NOT CONTAINS
  'x'`` is a parse error (FILTER-05).
- Values are Java objects: String, Integer, Long, Double, Boolean or null. Comparisons convert between
  them as ``ComparisonExpression.__compare`` does, and throw where it throws (FILTER-06).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from spec import versions

from . import javacc
from .primitives import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    java_boolean_value_of,
    java_double_compare,
    java_double_to_long_bits,
    java_double_to_string,
    java_parse_double,
    java_parse_long,
    java_string_compare,
    to_int32,
    to_int64,
    utf16_units,
)

SUBSCRIPTION_PARSE_FAILED = 23
DOUBLE_MAX_VALUE = 1.7976931348623157e308
DOUBLE_MIN_VALUE = 5e-324
STRING_TESTS_SINCE = "5.1.3"
"""``CONTAINS``/``STARTSWITH``/``ENDSWITH`` enter the grammar at rocketmq-all-5.1.3 (FILTER-05)."""


class SqlParseError(ValueError):
    """The selector does not compile: ``SelectorParser.parse`` throws ``MQFilterException`` and the broker
    answers SUBSCRIPTION_PARSE_FAILED (23) (FILTER-05)."""

    code = SUBSCRIPTION_PARSE_FAILED


class SqlEvaluationError(Exception):
    """Evaluation threw: the broker logs it and the message does not match (FILTER-06)."""


class JavaLong(int):
    """A value of Java type Long (an ``int`` is an Integer)."""


def java_type(value: Any) -> str:
    """The Java class of a selector value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, JavaLong):
        return "Long"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, float):
        return "Double"
    return "String"


def java_text(value: Any) -> str:
    """``ConstantExpression.toString``: NULL, TRUE, FALSE, a quoted string with quotes doubled, a number."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return java_double_to_string(value)
    return str(value)


# ---- lexer (SelectorParserTokenManager) ----------------------------------------------------------------

KEYWORDS = ("NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS")
STRING_TEST_KEYWORDS = ("CONTAINS", "STARTSWITH", "ENDSWITH")
_WHITESPACE = " \t\n\r\f"
_LINE_COMMENT = re.compile(r"--[^\n\r]*(?:\r\n|\n|\r)")
_BLOCK_COMMENT = re.compile(r"/\*[^*]*\*+(?:[^*/][^*]*\*+)*/")
_ID = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*", re.ASCII)
_DECIMAL = re.compile(r"0|[1-9][0-9]*[lL]?", re.ASCII)
_FLOATS = (re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?", re.ASCII),
           re.compile(r"\.[0-9]+(?:[eE][+-]?[0-9]+)?", re.ASCII),
           re.compile(r"[0-9]+[eE][+-]?[0-9]+", re.ASCII))
_PUNCTUATION = ("<>", ">=", "<=", "=", ">", "<", "(", ",", ")", "+", "-")


@dataclass(frozen=True)
class Token:
    kind: str  # a keyword, DECIMAL, FLOAT, STRING, ID, a punctuation mark, or EOF
    image: str
    at: javacc.Position

    @property
    def name(self) -> str:
        """The kind as ``SelectorParserConstants.tokenImage`` spells it."""
        return _TOKEN_NAMES.get(self.kind, f'"{self.kind}"')

    def encountered(self) -> str:
        return javacc.encountered(None if self.kind == "EOF" else self.image, self.name, self.at)


_TOKEN_NAMES = {"ID": "<ID>", "DECIMAL": "<DECIMAL_LITERAL>", "FLOAT": "<FLOATING_POINT_LITERAL>",
                "STRING": "<STRING_LITERAL>"}


def _string_literal_end(text: str, pos: int) -> int:
    """The end of the longest ``'...'`` literal at ``pos`` (a doubled quote is one quote), or -1."""
    end, i = -1, pos + 1
    while i < len(text):
        if text[i] == "'":
            end = i + 1
            if i + 1 < len(text) and text[i + 1] == "'":
                i += 2
                continue
            return end
        i += 1
    return end


class Lexer:
    """Tokens on demand, as JavaCC's token manager gives them: whitespace and complete comments skipped,
    then the longest match, a keyword winning a tie with a name. A character that starts no token raises
    ``SqlParseError`` only when the parser asks for that token, with JavaCC's message (``javacc``)."""

    def __init__(self, text: str, keywords: tuple[str, ...]) -> None:
        self.text, self.pos, self.keywords = text, 0, frozenset(keywords)
        self.spans = javacc.spans(text)

    def next(self) -> Token:
        text = self.text
        while True:
            while self.pos < len(text) and text[self.pos] in _WHITESPACE:
                self.pos += 1
            comment = _LINE_COMMENT.match(text, self.pos) or _BLOCK_COMMENT.match(text, self.pos)
            if not comment:
                break
            self.pos = comment.end()
        start = self.pos
        if start >= len(text):  # placed at the last character read, line 0 column 0 when there is none
            return Token("EOF", "<EOF>", self.spans[-1].end if text else javacc.Position(0, 0))
        candidates: list[tuple[int, str]] = []
        name = _ID.match(text, start)
        if name:
            upper = name.group().upper()
            candidates.append((name.end(), upper if upper in self.keywords else "ID"))
        decimal = _DECIMAL.match(text, start)
        if decimal:
            candidates.append((decimal.end(), "DECIMAL"))
        for pattern in _FLOATS:
            number = pattern.match(text, start)
            if number:
                candidates.append((number.end(), "FLOAT"))
        if text[start] == "'":
            end = _string_literal_end(text, start)
            if end > 0:
                candidates.append((end, "STRING"))
        for mark in _PUNCTUATION:
            if text.startswith(mark, start):
                candidates.append((start + len(mark), mark))
                break
        if not candidates:
            raise SqlParseError(javacc.lexical_error(text, start, _unfinished(text, start)))
        end = max(end for end, _ in candidates)
        kind = next(kind for e, kind in candidates if e == end)
        self.pos = end
        return Token(kind, text[start:end], self.spans[start].begin)


def _unfinished(text: str, start: int) -> int:
    """How many characters at ``start`` still begin a token when none completes there: an unclosed string
    or block comment runs to the end of input, a lone ``/`` or ``.`` is one, any other character none."""
    if text[start] == "'" or text.startswith("/*", start):
        return len(text) - start
    return 1 if text[start] in "/." else 0


# ---- expression tree -------------------------------------------------------------------------------------

class Expr:
    """A compiled node; ``evaluate`` returns a Java value (None for null) or raises SqlEvaluationError."""

    boolean = False  # an instance of BooleanExpression

    def evaluate(self, props: Mapping[str, str]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Const(Expr):
    """``ConstantExpression``; TRUE, FALSE and NULL are ``BooleanConstantExpression`` (boolean)."""

    value: Any

    @property
    def boolean(self) -> bool:  # type: ignore[override]
        return self.value is None or isinstance(self.value, bool)

    def evaluate(self, props: Mapping[str, str]) -> Any:
        return self.value

    def __str__(self) -> str:
        return java_text(self.value)


@dataclass(frozen=True)
class Prop(Expr):
    """``PropertyExpression``: the message property, a String, or null when absent."""

    name: str

    def evaluate(self, props: Mapping[str, str]) -> Any:
        return props.get(self.name)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Negate(Expr):
    """``UnaryExpression.createNegate``: evaluated at run time, never folded into a constant; null and
    anything but a number give null; Integer and Long wrap around as Java's ``-`` does (FILTER-06)."""

    operand: Expr

    def evaluate(self, props: Mapping[str, str]) -> Any:
        value = self.operand.evaluate(props)
        kind = java_type(value)
        if kind == "Integer":
            return to_int32(-value)
        if kind == "Long":
            return JavaLong(to_int64(-value))
        if kind == "Double":
            return -value
        return None

    def __str__(self) -> str:
        return f"(- {self.operand})"


@dataclass(frozen=True)
class Not(Expr):
    """``UnaryExpression.createNOT``: null stays null."""

    operand: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        value = self.operand.evaluate(props)
        return None if value is None else not value

    def __str__(self) -> str:
        return f"(NOT {self.operand})"


@dataclass(frozen=True)
class BoolCast(Expr):
    """``UnaryExpression.createBooleanCast`` of a property: null stays null, a non-Boolean is FALSE."""

    operand: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        value = self.operand.evaluate(props)
        if value is None:
            return None
        return value if isinstance(value, bool) else False

    def __str__(self) -> str:
        return str(self.operand)


@dataclass(frozen=True)
class Logic(Expr):
    """``LogicExpression.createAND/createOR``: a false left side of AND (true of OR) answers without
    evaluating the right side; otherwise null if either side is null."""

    op: str
    left: Expr
    right: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        decisive = self.op == "OR"
        a = self.left.evaluate(props)
        if a is decisive:
            return decisive
        b = self.right.evaluate(props)
        if b is decisive:
            return decisive
        return None if a is None or b is None else not decisive

    def __str__(self) -> str:
        return f"({self.left} {'||' if self.op == 'OR' else '&&'} {self.right})"


def java_equals(a: Any, b: Any) -> bool:
    """``Object.equals`` of two non-null selector values: same class and same value (Double by its bits)."""
    kind = java_type(a)
    if kind != java_type(b):
        return False
    if kind == "Double":
        return java_double_to_long_bits(a) == java_double_to_long_bits(b)
    return a == b


def _value_of(text: str, kind: str) -> Any:
    """``Integer.valueOf`` / ``Long.valueOf`` / ``Double.valueOf`` / ``Boolean.valueOf`` of a String."""
    try:
        if kind == "Integer":
            return java_parse_long(text, INT_MIN, INT_MAX)
        if kind == "Long":
            return JavaLong(java_parse_long(text, LONG_MIN, LONG_MAX))
        if kind == "Double":
            return java_parse_double(text)
    except ValueError as exc:
        raise SqlEvaluationError(f"NumberFormatException: {exc}") from None
    return java_boolean_value_of(text)


_WIDENING = {("Integer", "Long"): "Long", ("Integer", "Double"): "Double", ("Long", "Integer"): "Long",
             ("Long", "Double"): "Double", ("Double", "Integer"): "Double", ("Double", "Long"): "Double"}


def _as(value: Any, kind: str) -> Any:
    return float(value) if kind == "Double" else JavaLong(value)


def java_compare(lv: Any, rv: Any) -> int:
    """``ComparisonExpression.__compare(lv, rv, true)``: numbers widen to the wider of the two types; a
    String against a number or a Boolean is converted to the other's type (NumberFormatException is
    an evaluation error); a Boolean on the left against a String throws (the Java casts the Boolean to
    String); any other mix of types compares as -1 (FILTER-06)."""
    lc, rc = java_type(lv), java_type(rv)
    if lc != rc:
        if (lc, rc) in _WIDENING:
            wide = _WIDENING[(lc, rc)]
            lv, rv, lc = _as(lv, wide), _as(rv, wide), wide
        elif lc == "Boolean" and rc == "String":
            raise SqlEvaluationError("ClassCastException: java.lang.Boolean cannot be cast to java.lang.String")
        elif lc in ("Integer", "Long", "Double") and rc == "String":
            rv = _value_of(rv, lc)
        elif lc == "String" and rc in ("Boolean", "Integer", "Long", "Double"):
            lv, lc = _value_of(lv, rc), rc
        else:
            return -1
    if lc == "Double":
        return java_double_compare(lv, rv)
    if lc == "String":
        return java_string_compare(lv, rv)
    return (lv > rv) - (lv < rv)


@dataclass(frozen=True)
class Equal(Expr):
    """``ComparisonExpression.doCreateEqual``: both sides are evaluated; exactly one null side gives null
    when it is the left one and FALSE when it is the right one; two nulls are equal (TRUE); equal objects
    are TRUE; otherwise ``__compare`` decides (FILTER-06). ``IS NULL`` is this against the constant NULL."""

    left: Expr
    right: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        lv, rv = self.left.evaluate(props), self.right.evaluate(props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None or java_equals(lv, rv):
            return True
        return java_compare(lv, rv) == 0

    def __str__(self) -> str:
        return f"({self.left} == {self.right})"


_ORDER = {">": lambda c: c > 0, ">=": lambda c: c >= 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0}


@dataclass(frozen=True)
class Order(Expr):
    """``ComparisonExpression.evaluate`` for ``> >= < <=``: a null left side is null before the right side
    is evaluated; two Strings are both read as doubles (an error if either is not one); otherwise
    ``__compare`` decides (FILTER-06)."""

    op: str
    left: Expr
    right: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            lv, rv = _value_of(lv, "Double"), _value_of(rv, "Double")
        return _ORDER[self.op](java_compare(lv, rv))

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class InList(Expr):
    """``UnaryExpression.createInExpression``: null or a non-String gives null, else membership (negated
    for NOT IN)."""

    operand: Expr
    values: tuple[str, ...]
    negated: bool
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        value = self.operand.evaluate(props)
        if not isinstance(value, str):
            return None
        return (value in self.values) != self.negated

    def __str__(self) -> str:
        return f"{self.operand} {'NOT IN' if self.negated else 'IN'} ( {', '.join(self.values)} )"


_STRING_TESTS: dict[str, Callable[[str, str], bool]] = {
    "CONTAINS": lambda value, search: search in value,
    "STARTSWITH": str.startswith,
    "ENDSWITH": str.endswith,
}


@dataclass(frozen=True)
class StringTest(Expr):
    """``ComparisonExpression.ContainsExpression`` and its kin (5.1.3+): an empty search, a null or a
    non-String value is FALSE for the plain and the NOT form alike; the test runs on UTF-16 code units."""

    op: str
    operand: Expr
    search: str
    negated: bool
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        if not self.search:
            return False
        value = self.operand.evaluate(props)
        if not isinstance(value, str):
            return False
        found = _STRING_TESTS[self.op]("".join(utf16_units(value)), "".join(utf16_units(self.search)))
        return found != self.negated

    def __str__(self) -> str:
        # UnaryExpression.toString, the search not shown: "(" + getExpressionSymbol() + " " + right + ")"
        # (filter/.../expression/UnaryExpression.java#UnaryExpression.toString@rocketmq-all-5.3.3 L248-249;
        # ComparisonExpression.java#ContainsExpression.getExpressionSymbol@rocketmq-all-5.3.3 L81-82, L119-120)
        return f"({'NOT ' if self.negated else ''}{self.op} {self.operand})"


# ---- parse-time constructors (the create* methods and their checks) -------------------------------------

def as_boolean(expr: Expr) -> Expr:
    """``SelectorParser.asBooleanExpression``: a boolean expression as it is, a property cast, anything
    else a parse error."""
    if expr.boolean:
        return expr
    if isinstance(expr, Prop):
        return BoolCast(expr)
    raise SqlParseError(f"Expression will not result in a boolean value: {expr}")


def _check_orderable(expr: Expr) -> None:
    """``checkLessThanOperand``: a constant must be a number; a boolean expression cannot be ordered."""
    if isinstance(expr, Const):
        if java_type(expr.value) in ("Integer", "Long", "Double"):
            return
        raise SqlParseError(f"Value '{expr}' cannot be compared.")
    if expr.boolean:
        raise SqlParseError(f"Value '{expr}' cannot be compared.")


def create_order(op: str, left: Expr, right: Expr) -> Expr:
    _check_orderable(left)
    _check_orderable(right)
    return Order(op, left, right)


def create_equal(left: Expr, right: Expr) -> Expr:
    """``createEqual``: no NULL constant on either side; a TRUE/FALSE constant on the left needs a boolean
    constant on the right when the right is a constant."""
    for side in (left, right):
        if isinstance(side, Const) and side.value is None:
            raise SqlParseError(f"'{side}' cannot be compared.")
    if isinstance(left, Const) and isinstance(right, Const) and left.boolean and not right.boolean:
        raise SqlParseError(f"'{left}' cannot be compared with '{right}'")
    return Equal(left, right)


def create_between(value: Expr, low: Expr, high: Expr) -> Expr:
    """``createBetween``: two constant bounds must be non-null with ``__compare(high, low) >= 0`` (its own
    conversions and throws included); then ``value >= low AND value <= high`` with their operand checks."""
    if isinstance(low, Const) and isinstance(high, Const):
        if low.value is None or high.value is None:
            raise SqlParseError("Illegal values of between, values can not be null!")
        try:
            ordered = java_compare(high.value, low.value)
        except SqlEvaluationError as exc:
            raise SqlParseError(str(exc)) from None
        if ordered < 0:
            raise SqlParseError(f"Illegal values of between, left value({low.value}) must less than or equal to "
                                f"right value({high.value})")
    return Logic("AND", create_order(">=", value, low), create_order("<=", value, high))


def create_in(value: Expr, values: list[str], negated: bool) -> Expr:
    if not isinstance(value, Prop):
        raise SqlParseError(f"Expected a property for In expression, got: {value}")
    return InList(value, tuple(values), negated)


def create_from_decimal(image: str) -> Const:
    """``ConstantExpression.createFromDecimal``: the digits (an ``l``/``L`` dropped) as a Long, an error
    beyond Long's range; an Integer when the value fits one, suffix or not."""
    digits = image[:-1] if image[-1] in "lL" else image
    value = int(digits)
    if value > LONG_MAX:
        raise SqlParseError(f'NumberFormatException: For input string: "{digits}"')
    return Const(value if INT_MIN <= value <= INT_MAX else JavaLong(value))


def create_float(image: str) -> Const:
    """``ConstantExpression.createFloat``: a Double; infinite (beyond Double.MAX_VALUE) or zero (below
    Double.MIN_VALUE, ``0.0`` itself included) is an error."""
    value = float(image)
    if value > DOUBLE_MAX_VALUE:
        raise SqlParseError(f"{image} is greater than 1.7976931348623157E308")
    if value < DOUBLE_MIN_VALUE:
        raise SqlParseError(f"{image} is less than 4.9E-324")
    return Const(value)


# ---- parser (SelectorParser) -----------------------------------------------------------------------------

_COMPARISON_MARKS = (">", ">=", "<", "<=")
_LITERALS = ("STRING", "DECIMAL", "FLOAT", "TRUE", "FALSE", "NULL")


class _NoMatch(SqlParseError):
    """The tokens do not match the grammar here (``ParseException``), as opposed to a lexical error or a
    check of a semantic action. Its message is the release's first sentence, exact; the list of expected
    tokens that follows it there is not modelled."""


class _Parser:
    """Recursive descent with JavaCC's control flow: one token of lookahead (two after NOT and IS, the whole
    operand after a unary ``+``), and no check for the end of input once the top rule is complete."""

    def __init__(self, text: str, release: str) -> None:
        self.string_tests = versions.holds(release, since=STRING_TESTS_SINCE)
        keywords = KEYWORDS + (STRING_TEST_KEYWORDS if self.string_tests else ())
        self.lexer = Lexer(text, keywords)
        self.tokens: list[Token] = []
        self.i = 0
        self.scanning = False

    def act(self, build: Callable[..., Expr], *args: Any) -> Expr:
        """A semantic action that may throw: skipped while a syntactic lookahead scans, as JavaCC's
        ``jj_3`` routines skip every action."""
        return Const(None) if self.scanning else build(*args)

    def scans(self, expansion: Callable[[], object]) -> bool:
        """A syntactic lookahead (``jj_2_*``): whether the tokens from here match ``expansion``, its actions
        skipped; a lexical error on the way is raised as the scan meets it."""
        at, scanning = self.i, self.scanning
        self.scanning = True
        try:
            expansion()
            return True
        except _NoMatch:
            return False
        finally:
            self.i, self.scanning = at, scanning

    def peek(self, ahead: int = 0) -> Token:
        while len(self.tokens) <= self.i + ahead:
            self.tokens.append(self.lexer.next())
        return self.tokens[self.i + ahead]

    def take(self, kind: str | None = None) -> Token:
        token = self.peek()
        if kind is not None and token.kind != kind:
            raise _NoMatch(token.encountered())
        self.i += 1
        return token

    def fail(self) -> SqlParseError:
        return _NoMatch(self.peek().encountered())

    def selector(self) -> Expr:
        return self.act(as_boolean, self.or_expr())

    def or_expr(self) -> Expr:
        left = self.and_expr()
        while self.peek().kind == "OR":
            self.take()
            right = self.and_expr()
            left = Logic("OR", self.act(as_boolean, left), self.act(as_boolean, right))
        return left

    def and_expr(self) -> Expr:
        left = self.equality()
        while self.peek().kind == "AND":
            self.take()
            right = self.equality()
            left = Logic("AND", self.act(as_boolean, left), self.act(as_boolean, right))
        return left

    def equality(self) -> Expr:
        left = self.comparison()
        while self.peek().kind in ("=", "<>", "IS"):
            kind = self.take().kind
            if kind == "=":
                left = self.act(create_equal, left, self.comparison())
            elif kind == "<>":
                left = Not(self.act(create_equal, left, self.comparison()))
            elif self.peek().kind == "NULL":
                self.take()
                left = Equal(left, Const(None))
            else:
                self.take("NOT")
                self.take("NULL")
                left = Not(Equal(left, Const(None)))
        return left

    def comparison(self) -> Expr:
        left = self.unary()
        starts = ("NOT", "BETWEEN", "IN") + _COMPARISON_MARKS + (STRING_TEST_KEYWORDS if self.string_tests else ())
        while self.peek().kind in starts:
            kind = self.peek().kind
            negated = kind == "NOT"
            if negated:
                kind = self.peek(1).kind
                if kind not in ("BETWEEN", "IN") + (STRING_TEST_KEYWORDS if self.string_tests else ()):
                    raise self.fail()
                self.take()
            self.take()
            if kind in _COMPARISON_MARKS:
                left = self.act(create_order, kind, left, self.unary())
            elif kind == "BETWEEN":
                low = self.unary()
                self.take("AND")
                high = self.unary()
                if negated:
                    left = Logic("OR", self.act(create_order, "<", left, low), self.act(create_order, ">", left, high))
                else:
                    left = self.act(create_between, left, low, high)
            elif kind == "IN":
                self.take("(")
                values = [self.string_literal()]
                while self.peek().kind == ",":
                    self.take()
                    values.append(self.string_literal())
                self.take(")")
                left = self.act(create_in, left, values, negated)
            else:
                left = StringTest(kind, left, self.string_literal(), negated)
        return left

    def unary(self) -> Expr:
        kind = self.peek().kind
        if kind == "+":
            if not self.scans(lambda: (self.take(), self.unary())):  # LOOKAHEAD("+" unaryExpr())
                raise self.fail()
            self.take()
            return self.unary()
        if kind == "-":
            self.take()
            return Negate(self.unary())
        if kind == "NOT":
            self.take()
            return Not(self.act(as_boolean, self.unary()))
        return self.primary()

    def primary(self) -> Expr:
        token = self.peek()
        if token.kind in _LITERALS:
            return self.literal()
        if token.kind == "ID":
            return Prop(self.take().image)
        if token.kind == "(":
            self.take()
            inner = self.or_expr()
            self.take(")")
            return inner
        raise self.fail()

    def literal(self) -> Expr:
        token = self.peek()
        if token.kind == "STRING":
            return Const(self.string_literal())
        self.take()
        if token.kind == "DECIMAL":
            return self.act(create_from_decimal, token.image)
        if token.kind == "FLOAT":
            return self.act(create_float, token.image)
        return Const({"TRUE": True, "FALSE": False, "NULL": None}[token.kind])

    def string_literal(self) -> str:
        return self.take("STRING").image[1:-1].replace("''", "'")


def compile_sql(expression: str, release: str = versions.LATEST) -> Expr:
    """``SelectorParser.parse`` of the release (FILTER-05); raises SqlParseError."""
    return _Parser(expression, release).selector()


def sql_evaluate(expr: Expr, properties: Mapping[str, str]) -> Any:
    """The value the compiled expression evaluates to; evaluation errors propagate (FILTER-06)."""
    return expr.evaluate(properties)


def sql_matches(expression: str | Expr, properties: Mapping[str, str], release: str = versions.LATEST) -> bool:
    """``ExpressionMessageFilter.isMatchedByCommitLog``: matched only when the value is Boolean TRUE; null,
    a non-Boolean and an error do not match (FILTER-04, FILTER-06)."""
    expr = compile_sql(expression, release) if isinstance(expression, str) else expression
    try:
        return expr.evaluate(properties) is True
    except SqlEvaluationError:
        return False
