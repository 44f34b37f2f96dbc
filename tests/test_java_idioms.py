"""No Python idiom where a rule models Java (issue 35): ``tests.java_idioms`` scans ``reference_impl/rules`` for
``$``-anchored patterns, bare ``strip()`` / ``split()`` and unwrapped ``int``/``long`` arithmetic; a line may
say why it is safe (``# idiom-ok: ...``). The scanner is shown to fail on each idiom put into a real rule.
"""
from __future__ import annotations

import pytest

from tests.java_idioms import RULES, scan, scan_source

IDIOMS = {
    "dollar": '''
def check_name(name: str) -> bool:
    """A name check (LIMIT-01)."""
    return re.match(r"^[%|a-zA-Z0-9_-]+$", name) is not None
''',
    "strip": '''
def blank(tag: str) -> bool:
    """A blank tag (FILTER-02)."""
    return not tag.strip()
''',
    "split": '''
def tags(expression: str) -> list[str]:
    """Tags of an expression (FILTER-02)."""
    return expression.split("||")
''',
    "arith": '''
def frame_length(header: int, body: int) -> int:
    """The frame length, a Java ``int`` (REMOTING-01)."""
    return 4 + header + body
''',
}


def test_the_rules_use_no_python_idiom_where_java_applies() -> None:
    found = scan()
    assert not found, "Python idioms where a rule models Java (use reference_impl.rules.java_semantics, or say " \
                      "why it is safe with '# idiom-ok: <why>'):\n" + "\n".join(map(str, found))


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_the_scan_fails_on_each_idiom_put_into_a_rule(idiom: str) -> None:
    source = (RULES / "validation.py").read_text() + IDIOMS[idiom]
    found = scan_source(source, "reference_impl/rules/validation.py")
    assert [f.idiom for f in found] == [idiom], found


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_a_line_that_says_why_is_exempt(idiom: str) -> None:
    lines = IDIOMS[idiom].rstrip("\n").split("\n")  # idiom-ok: not a rule
    lines[-1] += "  # idiom-ok: shown exempt"
    assert scan_source("\n".join(lines) + "\n") == []


def test_wrapped_or_masked_arithmetic_passes() -> None:
    source = IDIOMS["arith"].replace("return 4 + header + body", "return int32(4 + header + body)")
    assert scan_source(source) == []
    assert scan_source(IDIOMS["arith"].replace("return 4 + header + body", "return (header << 24) & 0xFFFFFFFF")) == []
