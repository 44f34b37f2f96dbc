"""Which reference rule implements each behaviour, and which tests check it.

Rules are the functions and classes under ``reference_impl/rules`` whose docstrings cite the ID;
tests are the test functions under ``suites/`` and ``tests/`` whose ``pytest.mark.spec(...)``
markers cite it. A seed claim is implemented by the rules of the behaviours it relates to.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from .loader import Spec

ROOT = Path(__file__).resolve().parent.parent
ID_PATTERN = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-[0-9]{2}\b")


@dataclass
class Coverage:
    rules: dict[str, list[str]] = field(default_factory=dict)
    tests: dict[str, list[str]] = field(default_factory=dict)
    unknown_citations: list[str] = field(default_factory=list)

    def gaps(self, spec: Spec, areas: set[str] | None = None) -> dict[str, list[str]]:
        """ID -> what is missing ("rule", "test") for the behaviours in ``areas`` (all when None)."""
        out: dict[str, list[str]] = {}
        for bid, b in spec.behaviours.items():
            if areas and b.area not in areas:
                continue
            missing = [what for what, table in (("rule", self.rules), ("test", self.tests)) if not table.get(bid)]
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


def compute_coverage(spec: Spec, root: Path = ROOT) -> Coverage:
    rules = _rule_citations(root)
    tests = _test_citations(root)
    for bid, b in spec.behaviours.items():
        if b.related and all(rules.get(r) for r in b.related):
            rules.setdefault(bid, [f"via {r}" for r in b.related])
    unknown = sorted({f"{bid} cited by {t}" for bid, owners in tests.items() if bid not in spec.behaviours
                      for t in owners})
    families = {b.rsplit("-", 1)[0] for b in spec.behaviours}
    unknown += sorted({f"{bid} cited by {r}" for bid, owners in rules.items()
                       if bid not in spec.behaviours and bid.rsplit("-", 1)[0] in families for r in owners})
    return Coverage({k: v for k, v in rules.items() if k in spec.behaviours},
                    {k: v for k, v in tests.items() if k in spec.behaviours}, unknown)
