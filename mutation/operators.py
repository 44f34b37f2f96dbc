"""Mutation operators over Python source, as pure functions: enumerate the mutants of a module (each a
small, named change at a line) and apply one, giving the mutated source. No I/O.

Operators: comparison off-by-one and negation (``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``),
arithmetic (``+`` and ``-``, ``*`` and ``//``), integer constants plus and minus one, boolean constants
flipped, ``not`` dropped, ``and`` and ``or`` swapped, and a statement of a function body replaced by
``pass`` (a dropped statement). Docstrings, type annotations and the constant of a ``raise`` message are
not mutated: a change there changes nothing a suite can see; nor are decorators (``@dataclass(frozen=True)``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

COMPARE_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE,), ast.LtE: (ast.Lt,), ast.Gt: (ast.GtE,), ast.GtE: (ast.Gt,),
    ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
}
BINOP_SWAPS: dict[type, tuple[type, ...]] = {ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.FloorDiv,),
                                             ast.FloorDiv: (ast.Mult,), ast.Mod: (ast.FloorDiv,)}
BOOL_SWAPS: dict[type, type] = {ast.And: ast.Or, ast.Or: ast.And}


@dataclass(frozen=True)
class Mutant:
    """One change: its operator, where (line and column of the node), what it was and what it becomes, and
    the changed node's place in a walk of the module (stable for the same source)."""

    operator: str
    line: int
    column: int
    before: str
    after: str
    index: int

    @property
    def key(self) -> str:
        return f"{self.line}:{self.column}:{self.operator}:{self.before}->{self.after}#{self.index}"


def _skipped(tree: ast.AST) -> set[int]:
    """ids of nodes never mutated: docstrings, annotations, the messages of raised errors."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip.update(id(n) for n in ast.walk(body[0]))
        for annotation in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if annotation is not None:
                skip.update(id(n) for n in ast.walk(annotation))
        if isinstance(node, ast.Raise) and node.exc is not None:
            skip.update(id(n) for n in ast.walk(node.exc))
        for decorator in getattr(node, "decorator_list", ()):  # @dataclass(frozen=True): declarations, not rules
            skip.update(id(n) for n in ast.walk(decorator))
    return skip


def _returns_none(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Return) and (statement.value is None or (
        isinstance(statement.value, ast.Constant) and statement.value.value is None))


def _sites(tree: ast.AST) -> Iterator[tuple[int, ast.AST, str, str, str]]:
    """(walk index, node, operator, before, after) for every possible change, in walk order."""
    skip = _skipped(tree)
    order = {id(n): i for i, n in enumerate(ast.walk(tree))}
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                for new in COMPARE_SWAPS.get(type(op), ()):
                    yield index, node, f"compare[{i}]", type(op).__name__, new.__name__
        elif isinstance(node, ast.BinOp):
            for new in BINOP_SWAPS.get(type(node.op), ()):
                yield index, node, "arithmetic", type(node.op).__name__, new.__name__
        elif isinstance(node, ast.BoolOp):
            yield index, node, "boolean-operator", type(node.op).__name__, BOOL_SWAPS[type(node.op)].__name__
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield index, node, "drop-not", "not", ""
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                yield index, node, "boolean", repr(node.value), repr(not node.value)
            elif isinstance(node.value, int) and not isinstance(node.value, bool):
                yield index, node, "constant", repr(node.value), repr(node.value + 1)
                yield index, node, "constant", repr(node.value), repr(node.value - 1)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            statements = [s for s in node.body if id(s) not in skip and not isinstance(s, ast.Pass)]
            for s in statements:
                if isinstance(s, (ast.Return, ast.Raise)) and len(statements) == 1:
                    continue  # a function of one return: dropping it is caught by any call, or is a type error
                if s is node.body[-1] and _returns_none(s):
                    continue  # falling off the end returns None too: equivalent by the language
                if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                    continue  # an attribute's docstring: a string nobody reads
                yield order[id(s)], s, "drop-statement", type(s).__name__, "pass"


def mutants(source: str) -> list[Mutant]:
    """Every mutant of ``source``, in a stable order."""
    tree = ast.parse(source)
    out = []
    for index, node, operator, before, after in _sites(tree):
        out.append(Mutant(operator, getattr(node, "lineno", 0), getattr(node, "col_offset", 0), before, after, index))
    return out


class _Apply(ast.NodeTransformer):
    def __init__(self, mutant: Mutant, target: ast.AST) -> None:
        self.mutant, self.target = mutant, target

    def visit(self, node: ast.AST) -> ast.AST:
        if node is not self.target:
            return self.generic_visit(node)
        m = self.mutant
        if m.operator.startswith("compare["):
            i = int(m.operator[len("compare["):-1])
            node.ops[i] = getattr(ast, m.after)()  # type: ignore[attr-defined]
        elif m.operator == "arithmetic":
            node.op = getattr(ast, m.after)()  # type: ignore[attr-defined]
        elif m.operator == "boolean-operator":
            node.op = getattr(ast, m.after)()  # type: ignore[attr-defined]
        elif m.operator == "drop-not":
            return node.operand  # type: ignore[attr-defined]
        elif m.operator in ("boolean", "constant"):
            node.value = ast.literal_eval(m.after)  # type: ignore[attr-defined]
        elif m.operator == "drop-statement":
            return ast.copy_location(ast.Pass(), node)
        return node


def apply(source: str, mutant: Mutant) -> str:
    """``source`` with ``mutant`` applied (the module re-emitted by ``ast.unparse``). Raises ``ValueError``
    when the mutant does not belong to this source."""
    tree = ast.parse(source)
    sites = {(index, operator, before, after): node for index, node, operator, before, after in _sites(tree)}
    node = sites.get((mutant.index, mutant.operator, mutant.before, mutant.after))
    if node is None:
        raise ValueError(f"mutant {mutant.key} is not one of this source's")
    changed = _Apply(mutant, node).visit(tree)
    return ast.unparse(ast.fix_missing_locations(changed))
