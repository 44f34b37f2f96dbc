"""A scan of ``reference_impl/rules`` for Python idioms where a rule models Java (issue 35).

Three idioms answer otherwise than Java at the edges (``reference_impl.rules.java_semantics`` says how):

* ``dollar``: a regular expression anchored with ``$`` (Python's ``$`` matches before a final ``\\n``; Java's
  ``Matcher.matches`` and the character tables refuse it);
* ``strip`` / ``split``: ``str.strip()`` (Unicode whitespace, not ``String.trim``'s units up to U+0020) and
  ``str.split`` (keeps trailing empty strings, ``String.split`` drops them);
* ``arith``: a function whose docstring says it models a Java ``int`` or ``long`` returning ``+``, ``-``,
  ``*`` or ``<<`` arithmetic that is not wrapped (``int32`` / ``int64`` / ``to_int32`` / ``to_int64``) or
  masked (``& ...``).

A line that carries ``# idiom-ok: <why>`` is exempt: the reason says why Python's semantics are the right
ones there (a Python SDK's own code, text the rule itself built, a value proven in range).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

RULES = Path(__file__).resolve().parent.parent / "reference_impl" / "rules"
EXEMPT = "# idiom-ok:"
_REGEX_FUNCS = {"compile", "match", "search", "fullmatch", "sub", "subn", "findall", "finditer", "split"}
_JAVA_NUMBER = re.compile(r"``(?:int|long)``|\b(?:32|64)-bit\b|Java(?:'s)? (?:``)?(?:int|long)\b")
_WRAPS = {"int32", "int64", "to_int32", "to_int64", "wrap32", "wrap64"}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    idiom: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.idiom}: {self.text.strip()}"


def _dollar_anchored(pattern: str) -> bool:
    return pattern.endswith("$") and not pattern.endswith("\\$")


def _wrapped(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        return name in _WRAPS
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd)


def _arith(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.LShift))


def scan_source(source: str, path: str = "<rule>") -> list[Finding]:
    """Every use of the idioms in one module's source, less the exempt lines."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found: list[Finding] = []

    def add(node: ast.AST, idiom: str) -> None:
        line = getattr(node, "lineno", 0)
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        end = getattr(node, "end_lineno", line) or line
        if not any(EXEMPT in lines[i - 1] for i in range(line, end + 1) if 0 < i <= len(lines)):
            found.append(Finding(path, line, idiom, text))

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, receiver = node.func.attr, node.func.value
            if (attr in _REGEX_FUNCS and isinstance(receiver, ast.Name) and receiver.id == "re" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                    and _dollar_anchored(node.args[0].value)):
                add(node, "dollar")
            elif attr in ("strip", "lstrip", "rstrip") and not node.args:
                add(node, "strip")
            elif attr == "split" and not (isinstance(receiver, ast.Name) and receiver.id == "re") \
                    and not isinstance(receiver, ast.Constant):
                add(node, "split")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node) or ""
            if _JAVA_NUMBER.search(doc):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Return) and inner.value is not None and _arith(inner.value) \
                            and not _wrapped(inner.value):
                        add(inner, "arith")
    return found


def scan(root: Path = RULES) -> list[Finding]:
    """The findings in every module of ``reference_impl/rules``."""
    found: list[Finding] = []
    for path in sorted(root.glob("*.py")):
        found.extend(scan_source(path.read_text(), str(path.relative_to(root.parent.parent))))
    return found
