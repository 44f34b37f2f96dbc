"""SQL92 selectors compile exactly when the release's ``SelectorParser`` compiles them (FILTER-05).

Each row states what the Java does with one input and why, read from ``filter/src/main/java/org/apache/
rocketmq/filter`` at rocketmq-all-5.0.0 (same as 4.9.8) and rocketmq-all-5.3.3 (same as 5.1.3 and 5.1.4):
the grammar (``parser/SelectorParser.jj``, generated ``SelectorParser.java``), the checks in
``ComparisonExpression.createBetween`` / ``createInFilter`` / ``checkLessThanOperand`` /
``checkEqualOperand`` / ``checkEqualOperandCompatability``, ``ConstantExpression.createFromDecimal`` /
``createFloat`` and ``SelectorParser.asBooleanExpression``. The properties restate the two rules that
decide most odd inputs: the parser ignores what follows a complete selector except the one token it
peeks at, and ``CONTAINS``/``STARTSWITH``/``ENDSWITH`` are names before 5.1.3.
"""
from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reference_impl.rules import sql92
from spec import versions
from suites import sql_oracle
from suites.checks import require

pytestmark = [pytest.mark.reference_rule, pytest.mark.spec("FILTER-05")]

OLD, NEW = "5.0.0", versions.LATEST
BOTH = (OLD, NEW)

# (selector, releases where it compiles, why)
ROWS = [
    ("a > 5", BOTH, "a comparison"),
    ("(a > 1) > 0", (), "a boolean expression cannot be ordered (checkLessThanOperand)"),
    ("a > (b = 1)", (), "a boolean expression cannot be ordered"),
    ("a > TRUE", (), "an ordered constant must be a Number"),
    ("TRUE < a", (), "an ordered constant must be a Number"),
    ("a > 'x'", (), "an ordered constant must be a Number"),
    ("TRUE = 5", (), "a boolean constant on the left of = with a non-boolean constant on the right"),
    ("FALSE <> 1", (), "<> is NOT(=), with the same check"),
    ("TRUE = 'x'", (), "a boolean constant against a string constant"),
    ("5 = TRUE", BOTH, "the check looks only at a boolean constant on the left"),
    ("TRUE = FALSE", BOTH, "two boolean constants"),
    ("TRUE = a", BOTH, "a property is not a constant"),
    ("a = NULL", (), "NULL cannot be compared (checkEqualOperand)"),
    ("NULL = a", (), "NULL cannot be compared on either side"),
    ("a IS NULL", BOTH, "IS NULL has no check"),
    ("NULL IS NULL", BOTH, "IS NULL has no check"),
    ("NULL", BOTH, "NULL is a BooleanConstantExpression"),
    ("TRUE", BOTH, "a boolean constant"),
    ("'x'", (), "a string will not result in a boolean value"),
    ("5", (), "a number will not result in a boolean value"),
    ("-a", (), "a negation will not result in a boolean value"),
    ("NOT 5", (), "NOT needs a boolean operand"),
    ("NOT a", BOTH, "a property is cast to a boolean"),
    ("+a", BOTH, "unary plus is its operand"),
    ("a > 1e309", (), "a floating literal beyond Double.MAX_VALUE"),
    ("a > 1.7976931348623157e308", BOTH, "Double.MAX_VALUE itself"),
    ("a > 1e-400", (), "a floating literal that rounds to zero is below Double.MIN_VALUE"),
    ("a > 0.0", (), "0.0 is below Double.MIN_VALUE"),
    ("a > 4.9e-324", BOTH, "Double.MIN_VALUE itself"),
    ("a > 2e-324", (), "rounds to zero"),
    ("a > 3e-324", BOTH, "rounds to Double.MIN_VALUE"),
    ("'x' IN ('x')", (), "IN needs a property on its left"),
    ("5 IN ('5')", (), "IN needs a property on its left"),
    ("-a IN ('x')", (), "a negated property is not a property"),
    ("(a) IN ('x')", BOTH, "a parenthesised property is the property"),
    ("a IN (1)", (), "IN takes string literals only"),
    ("a = 00", BOTH, "00 lexes as 0 then 0; the second is after a complete selector"),
    ("a = 0L", BOTH, "0 takes no suffix; L is a name after a complete selector"),
    ("a = 9223372036854775807", BOTH, "Long.MAX_VALUE"),
    ("a = 9223372036854775808", (), "new Long(text) overflows"),
    ("a = -9223372036854775808", (), "the literal overflows before it is negated"),
    ("a BETWEEN 2 AND 1", (), "constant bounds out of order"),
    ("a BETWEEN 1 AND 1.5", BOTH, "Integer against Double widens"),
    ("a BETWEEN 2 AND 1.5", (), "out of order after widening"),
    ("a BETWEEN -1 AND -5", BOTH, "a negation is not a constant, so the order is not checked"),
    ("a NOT BETWEEN 2 AND 1", BOTH, "NOT BETWEEN checks no order"),
    ("a BETWEEN TRUE AND 1", (), "__compare(Integer, Boolean) is -1: out of order"),
    ("a BETWEEN TRUE AND TRUE", (), "in order, then a boolean cannot be ordered"),
    ("a BETWEEN NULL AND 1", (), "between values can not be null"),
    ("a BETWEEN 'a' AND 'b'", (), "in order, then a string cannot be ordered"),
    ("a BETWEEN 'x' AND 5", (), "Integer.valueOf('x') throws while checking the order"),
    ("b CONTAINS 'x'", BOTH, "5.0.0: the property b cast to a boolean, the rest ignored; 5.3.3: CONTAINS"),
    ("b NOT CONTAINS 'x'", (NEW,), "5.0.0: NOT after an operand must start NOT BETWEEN or NOT IN"),
    ("(b CONTAINS 'x')", (NEW,), "5.0.0: ')' expected where the name CONTAINS stands"),
    ("b STARTSWITH 'x' AND b ENDSWITH 'y'", BOTH, "5.0.0: b, then the rest ignored"),
    ("b CONTAINS 5", (OLD,), "5.3.3: CONTAINS takes a string literal"),
    ("contains = 'x'", (OLD,), "5.3.3: contains is a keyword, not a name"),
    ("a = 1 b c", BOTH, "tokens after a complete selector are ignored"),
    ("a = 1 )", BOTH, "even an unbalanced parenthesis"),
    ("a = 1 #", (), "the one token the parser peeks at must lex"),
    ("a = 1 b #", BOTH, "the token after the peeked one is never lexed"),
    ("a = 1 NOT", (), "a peeked NOT must start NOT BETWEEN or NOT IN"),
    ("a = 1 AND", (), "a peeked AND is taken and needs an operand"),
    ("a = 1 'open", (), "an unterminated string does not lex"),
    ("a = 1 -- note", BOTH, "a line comment with no newline lexes as '-': ignored"),
    ("a = 1 /* open", (), "'/' starts no token"),
    ("a = 1\x0b", (), "a vertical tab is not whitespace to this lexer"),
    ("A > 5 AND $b_1 < 2", BOTH, "names of either case, with $ and _"),
    ("1a > 5", (), "1 then the name a: 1 alone is not a boolean"),
    ("\u00e9 = 1", (), "a non-ASCII letter starts no token"),
    ("", (), "nothing to parse"),
    ("  ", (), "nothing to parse"),
]


@pytest.mark.parametrize("release", BOTH)
@pytest.mark.parametrize("selector, compiles_in, why", ROWS, ids=[row[0] or "<empty>" for row in ROWS])
def test_selector_compiles_as_the_release_does(release, selector, compiles_in, why):
    try:
        sql92.compile_sql(selector, release)
        compiled = True
    except sql92.SqlParseError:
        compiled = False
    require(compiled == (release in compiles_in), "FILTER-05",
            f"{selector!r} on {release}: {'compiled' if compiled else 'refused'}; Java "
            f"{'compiles' if release in compiles_in else 'refuses'} it ({why})")


NAME_TAILS = st.from_regex(r"\A[a-z_$][a-z0-9_$ ]{0,8}(\)|#|'|\.|!)?\Z")


@given(tree=sql_oracle.trees, tail=NAME_TAILS, release=st.sampled_from(BOTH))
def test_what_follows_a_complete_selector_is_ignored(tree, tail, release):
    """A complete selector followed by a name (not a keyword of the release) compiles to the same
    expression, whatever comes after that name: the parser peeks at one token and stops."""
    assume(not sql_oracle.has_string_tests(tree) or versions.holds(release, since="5.1.3"))
    keywords = sql92.KEYWORDS + (sql92.STRING_TEST_KEYWORDS if versions.holds(release, since="5.1.3") else ())
    first = tail.split(" ")[0].rstrip(")#'.!")
    assume(first and first.upper() not in keywords)
    text = sql_oracle.render(tree)
    alone = str(sql92.compile_sql(text, release))
    followed = str(sql92.compile_sql(f"{text} {tail}", release))
    require(followed == alone, "FILTER-05", f"{text!r} followed by {tail!r}: {followed} instead of {alone}")


@given(tree=sql_oracle.trees, bad=st.sampled_from(["#", "!", "*", "/", ".", "\"", "'x", "\u00e9", "\x0b"]))
def test_an_unlexable_token_right_after_a_selector_is_an_error(tree, bad):
    """The token the parser peeks at after a complete selector must lex."""
    assume(not sql_oracle.has_string_tests(tree))
    with pytest.raises(sql92.SqlParseError):
        sql92.compile_sql(f"{sql_oracle.render(tree)} {bad}", OLD)
