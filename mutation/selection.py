"""Which suites can see a mutant: the spec IDs the mutated code cites, and the suite tests marked with them.

A rule or model function names the behaviours it implements in its docstring or an ``# implements`` comment
(the project's convention); the suites mark their tests with ``@pytest.mark.spec(...)``. A mutant inside a
function is judged by the tests of that function's IDs, else of its class's, else of its module's; code that
cites nothing is judged by every suite test. Pure: source text in, names out.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

SPEC_ID = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-\d{2}\b")


def _ids(text: str | None) -> set[str]:
    return set(SPEC_ID.findall(text or ""))


def _scope_ids(source_lines: list[str], node: ast.AST) -> set[str]:
    """IDs a function or class cites: its docstring and its own comments (nested scopes included)."""
    ids = _ids(ast.get_docstring(node)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                             ast.ClassDef)) else set()
    start, end = getattr(node, "lineno", 1), getattr(node, "end_lineno", 0) or 0
    for text in source_lines[start - 1:end]:
        if "#" in text:
            ids |= _ids(text[text.index("#"):])
    return ids


def spec_ids_at(source: str, line: int) -> set[str]:
    """The spec IDs that speak for ``line``: the innermost enclosing function citing any; for a method that
    cites none, for ``__init__`` and for a class body, every ID its class cites (the state it sets up serves
    them all); else the module docstring's; empty when nothing is cited."""
    tree = ast.parse(source)
    lines = source.splitlines()
    chain: list[ast.AST] = []
    node: ast.AST = tree
    while True:
        inner = next((child for child in ast.iter_child_nodes(node)
                      if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and child.lineno <= line <= (child.end_lineno or child.lineno)), None)
        if inner is None:
            break
        chain.append(inner)
        node = inner
    for scope in reversed(chain):
        if isinstance(scope, ast.ClassDef):
            break  # a method citing nothing (``__init__``, a helper) serves the whole class
        if scope.name in ("__init__", "__post_init__"):  # type: ignore[attr-defined]
            break
        ids = _scope_ids(lines, scope)
        if ids:
            return ids
    classes = [scope for scope in chain if isinstance(scope, ast.ClassDef)]
    if classes:
        ids = _class_ids(lines, classes[-1])
        if ids:
            return ids
    return _ids(ast.get_docstring(tree))


def _class_ids(source_lines: list[str], node: ast.ClassDef) -> set[str]:
    """Every ID a class cites anywhere: its docstring, its methods' docstrings, its comments."""
    ids = _scope_ids(source_lines, node)
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            ids |= _ids(ast.get_docstring(inner))
    return ids


@dataclass(frozen=True)
class SuiteTest:
    """A suite test function, the spec IDs it is marked with, and whether it checks the reference's own
    rules (marked ``reference_rule``, on itself or its module): such a test imports the rule functions, so
    only a mutant imported in its own process can meet it."""

    file: str
    name: str
    spec_ids: frozenset[str]
    rule: bool = False


def _marks(decorators: list[ast.expr]) -> tuple[set[str], bool]:
    ids: set[str] = set()
    rule = False
    for decorator in decorators:
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("mark.spec"):
            ids |= {a.value for a in decorator.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
        rule = rule or ast.unparse(decorator).endswith("mark.reference_rule")
    return ids, rule


def suite_tests(suites_dir: Path) -> list[SuiteTest]:
    """Every ``test_*`` function of ``suites_dir/test_*.py`` with its ``@pytest.mark.spec`` IDs and whether
    it is a rule test."""
    out = []
    for path in sorted(suites_dir.glob("test_*.py")):
        body = ast.parse(path.read_text()).body
        module_rule = any(isinstance(n, ast.Assign) and any(ast.unparse(t) == "pytestmark" for t in n.targets)
                          and "reference_rule" in ast.unparse(n.value) for n in body)
        for node in body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
                continue
            ids, rule = _marks(node.decorator_list)
            out.append(SuiteTest(path.name, node.name, frozenset(ids), module_rule or rule))
    return out


def selection(tests: list[SuiteTest], spec_ids: set[str]) -> list[SuiteTest]:
    """The tests marked with any of ``spec_ids``; every marked test when ``spec_ids`` is empty."""
    if not spec_ids:
        return [t for t in tests if t.spec_ids]
    return [t for t in tests if t.spec_ids & spec_ids]


def keyword(tests: list[SuiteTest]) -> str:
    """A pytest ``-k`` expression selecting exactly these test functions (by name; names are unique)."""
    return " or ".join(sorted({t.name for t in tests}))
