"""What cites each behaviour: the reference rule that implements it, the model code that implements it,
the tests that check it and the scenarios that pin it.

- Rules are the functions and classes under ``reference_impl/rules`` whose docstrings cite the ID.
- Model code is every function or class under ``reference_impl/model`` and ``frontends`` whose docstring or
  comments cite the ID (the innermost one that holds the citation); the model cites exact IDs, never
  ranges such as ``FIFO-04..06`` (a range there is reported, and fails ``--strict``).
- Tests are the test functions under ``suites/`` and ``tests/`` whose ``pytest.mark.spec(...)`` markers
  cite it, and the generic vector test's case for each rule the behaviour's ``cases`` name.
- Scenarios are the files under ``spec/scenarios`` whose ``spec:`` list names it.

A seed claim is implemented by the rules of the behaviours it relates to. A behaviour needs a model
citation unless it says ``not_modelled`` (with the reason) or is a claim.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .loader import Spec

ROOT = Path(__file__).resolve().parent.parent
ID_PATTERN = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-[0-9]{2}\b(?!\.\.)")
RANGE_PATTERN = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-[0-9]{2}\.\.[0-9]{2}\b")
MODEL_FOLDERS = (("reference_impl", "model"), ("frontends",))
VECTOR_TEST = "suites/test_rule_vectors.py::test_rule_vectors"
"""The generic test that runs every behaviour's ``cases`` (one parametrized case per rule and behaviour)."""


@dataclass
class Coverage:
    rules: dict[str, list[str]] = field(default_factory=dict)
    model: dict[str, list[str]] = field(default_factory=dict)
    tests: dict[str, list[str]] = field(default_factory=dict)
    scenarios: dict[str, list[str]] = field(default_factory=dict)
    unknown_citations: list[str] = field(default_factory=list)
    range_citations: list[str] = field(default_factory=list)
    """``path:line: RANGE`` for each range the model cites instead of exact IDs."""

    def gaps(self, spec: Spec, areas: set[str] | None = None) -> dict[str, list[str]]:
        """ID -> what is missing ("rule", "model", "test") for the behaviours in ``areas`` (all when None)."""
        out: dict[str, list[str]] = {}
        for bid, b in spec.behaviours.items():
            if areas and b.area not in areas:
                continue
            missing = [what for what, table in (("rule", self.rules), ("test", self.tests)) if not table.get(bid)]
            if b.kind == "behaviour" and not b.not_modelled and not self.model.get(bid):
                missing.insert(1, "model")
            if missing:
                out[bid] = missing
        return out


def _rule_citations(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((root / "reference_impl" / "rules").glob("*.py")):
        module = "reference_impl.rules." + path.stem
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node) or ""
                for bid in dict.fromkeys(ID_PATTERN.findall(doc)):
                    found.setdefault(bid, []).append(f"{module}.{node.name}")
    return found


def _owners(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function and class, outermost first."""
    out: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                out.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".")

    visit(tree, "")
    return out


def _model_citations(root: Path) -> tuple[dict[str, list[str]], list[str]]:
    found: dict[str, list[str]] = {}
    ranges: list[str] = []
    paths = sorted(p for parts in MODEL_FOLDERS for p in root.joinpath(*parts).rglob("*.py"))
    for path in paths:
        text = path.read_text()
        module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        owners = _owners(ast.parse(text, filename=str(path)))
        texts: list[tuple[int, str]] = []  # (line, docstring or comment text)
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.COMMENT, tokenize.STRING):
                texts.append((token.start[0], token.string))
        for line, chunk in texts:
            for rng in RANGE_PATTERN.findall(chunk):
                ranges.append(f"{path.relative_to(root)}:{line}: {rng}")
            ids = ID_PATTERN.findall(chunk)
            if not ids:
                continue
            inner = [name for first, last, name in owners if first <= line <= last]
            owner = f"{module}.{inner[-1]}" if inner else module
            for bid in dict.fromkeys(ids):
                if owner not in found.setdefault(bid, []):
                    found[bid].append(owner)
    return found, ranges


def _marker_ids(node: ast.AST) -> list[str]:
    ids: list[str] = []
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "spec":
            ids.extend(a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return ids


def _test_citations(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for folder in ("suites", "tests"):
        for path in sorted((root / folder).glob("test_*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            module_ids = [i for stmt in tree.body if isinstance(stmt, ast.Assign)
                          and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets)
                          for i in _marker_ids(stmt)]
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.startswith(("test", "Test")):
                    owner = f"{folder}/{path.name}::{node.name}"
                    for bid in dict.fromkeys(_marker_ids(node) + module_ids):
                        found.setdefault(bid, []).append(owner)
    return found


def _scenario_citations(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((root / "spec" / "scenarios").glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        for bid in data.get("spec") or ():
            found.setdefault(str(bid), []).append(f"spec/scenarios/{path.name} ({data.get('id', '?')})")
    return found


def compute_coverage(spec: Spec, root: Path = ROOT) -> Coverage:
    rules = _rule_citations(root)
    model, ranges = _model_citations(root)
    tests = _test_citations(root)
    scenarios = _scenario_citations(root)
    for bid, b in spec.behaviours.items():
        for case in b.cases:
            for cited in (bid, *case.get("also", ())):
                where = f"{VECTOR_TEST}[{case['rule']}-{cited}]"
                if where not in tests.setdefault(cited, []):
                    tests[cited].append(where)
        if b.related and all(rules.get(r) for r in b.related):
            rules.setdefault(bid, [f"via {r}" for r in b.related])
    families = {b.rsplit("-", 1)[0] for b in spec.behaviours}
    unknown = sorted({f"{bid} cited by {t}" for table in (tests, scenarios) for bid, owners in table.items()
                      if bid not in spec.behaviours for t in owners})
    unknown += sorted({f"{bid} cited by {r}" for table in (rules, model) for bid, owners in table.items()
                       if bid not in spec.behaviours and bid.rsplit("-", 1)[0] in families for r in owners})

    def known(table: dict[str, list[str]]) -> dict[str, list[str]]:
        return {k: v for k, v in table.items() if k in spec.behaviours}

    return Coverage(known(rules), known(model), known(tests), known(scenarios), unknown, ranges)
