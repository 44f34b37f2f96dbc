"""The project's shape, checked on its source with ``ast``: imports only run downward between packages,
no two modules import each other (directly or round a cycle) outside ``TYPE_CHECKING``, and profile
names, target forms and event columns are each written once."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from adapters.targets import KINDS
from history.events import COLUMNS
from history.profiles import KAFKA_RETRY, REFERENCE_PROFILES, SPEC_PROFILES

ROOT = Path(__file__).resolve().parent.parent

LAYERS = {"history": 0, "spec": 1, "reference_impl": 2, "frontends": 3, "spark_checks": 3, "reports": 3,
          "adapters": 4, "drivers": 5, "suites": 5, "rmqc": 6}
"""A package may import only from packages of a lower layer (and from itself)."""


def _modules() -> dict[str, Path]:
    out = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts).removesuffix(".__init__")] = path
    return out


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere (module level or inside functions), outside
    ``TYPE_CHECKING`` blocks."""
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _type_checking_lines(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def test_imports_never_run_upward() -> None:
    upward = sorted(f"{a} imports {b}" for a, targets in import_graph().items() for b in targets
                    if a.split(".")[0] != b.split(".")[0] and LAYERS[b.split(".")[0]] >= LAYERS[a.split(".")[0]])
    assert not upward, "\n".join(upward)


def test_no_import_cycles() -> None:
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(set(graph) | {t for ts in graph.values() for t in ts}):
        if module not in index:
            connect(module)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_model_and_the_interfaces_import_no_checks_or_reference() -> None:
    graph = import_graph()
    assert not [t for m, ts in graph.items() if m.startswith("reference_impl") for t in ts
                if t.startswith("spark_checks")]
    for module in ("adapters.base", "suites.scenario"):
        assert not [t for t in graph[module] if t.startswith("reference_impl")], module


STANDALONE = {ROOT / "drivers" / "remoting4x_driver.py"}
"""Programs that run in an environment of their own and import nothing of the project: they speak only
the driver protocol, whose profile names and target forms are values on the wire."""


def _library_sources() -> list[Path]:
    """Every source file but the tests (test modules may name profiles as data, e.g. in markers) and the
    standalone drivers."""
    return sorted(p for package in LAYERS for p in (ROOT / package).rglob("*.py")
                  if not p.name.startswith("test_") and p.name != "conftest.py" and p not in STANDALONE)


def _string_constants(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
    return out


def _collections_of(path: Path, names: set[str], at_least: int) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(set(values) & names) >= at_least:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_profile_names_are_written_once() -> None:
    names = set(SPEC_PROFILES) | set(REFERENCE_PROFILES)
    home = ROOT / "history" / "profiles.py"
    written = [f"{p.relative_to(ROOT)}:{line}: {value!r}" for p in _library_sources() if p != home
               for line, value in _string_constants(p) if value in names - {"docs", KAFKA_RETRY}]
    assert not written, "profile names outside history/profiles.py:\n" + "\n".join(written)
    every = sorted(p for package in LAYERS for p in (ROOT / package).rglob("*.py")) + sorted((ROOT / "tests").glob("*.py"))
    lists = [where for p in every if p != home for where in _collections_of(p, names, 2)]
    assert not lists, "collections of profile names outside history/profiles.py:\n" + "\n".join(lists)


def test_target_forms_are_written_once() -> None:
    home = ROOT / "adapters" / "targets.py"
    prefixes = tuple(k.prefix for k in KINDS if k.prefix)
    written = [f"{p.relative_to(ROOT)}:{line}: {value!r}" for p in _library_sources() if p != home
               for line, value in _string_constants(p) if value.startswith(prefixes)]
    assert not written, "target forms outside adapters/targets.py:\n" + "\n".join(written)


def test_event_columns_are_written_once() -> None:
    home = ROOT / "history" / "events.py"
    every = sorted(p for package in LAYERS for p in (ROOT / package).rglob("*.py")) + sorted((ROOT / "tests").glob("*.py"))
    lists = [where for p in every if p != home for where in _collections_of(p, set(COLUMNS), 10)]
    assert not lists, "lists of event columns outside history/events.py:\n" + "\n".join(lists)


@pytest.mark.parametrize("module", ["adapters.base", "suites.scenario", "history.events"])
def test_the_graph_sees_real_imports(module: str) -> None:
    """The checker itself: it finds the imports these modules are known to have."""
    graph = import_graph()
    assert graph[module] or module == "history.events"
    if module == "suites.scenario":
        assert {"adapters.base", "history.events", "spec.loader"} <= graph[module]
