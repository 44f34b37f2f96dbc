"""Load and validate the spec: behaviour files and scenario files.

Every problem is reported as one line naming the file, the line and the ID it concerns, e.g.
``spec/behaviours/delay.yaml:42: DELAY-03: 'statement' is a required property``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema
import yaml

from . import versions

SPEC_DIR = Path(__file__).resolve().parent
BEHAVIOURS_DIR = SPEC_DIR / "behaviours"
SCENARIOS_DIR = SPEC_DIR / "scenarios"
SCHEMAS_DIR = SPEC_DIR / "schemas"


class SpecError(Exception):
    """A spec or scenario file is malformed; the message is one line with file, line and ID."""


@dataclass(frozen=True)
class Behaviour:
    id: str
    area: str
    title: str
    statement: str
    profiles: Mapping[str, Mapping[str, Any]]
    defaults: Mapping[str, Any]
    sources: Mapping[str, Any]
    vectors: str = ""
    divergences: tuple[Mapping[str, Any], ...] = ()
    kind: str = "behaviour"
    related: tuple[str, ...] = ()
    cases: tuple[Mapping[str, Any], ...] = ()
    """The catalog's vectors as tables (``suites/rule_vectors.py``)."""
    not_modelled: str = ""
    """Why the model does not implement it; empty when it does (and must cite the ID)."""
    since: str | None = None
    until: str | None = None
    variants: tuple[Mapping[str, Any], ...] = ()
    """What ranges of releases do differently (``statement``, ``defaults``, ``source`` at the tag)."""
    sdk: Mapping[str, Any] | None = None
    """For an SDK habit: ``client``, its ``since`` / ``until`` SDK versions and the ``source`` at its tag."""
    file: str = ""
    line: int = 0

    def applies_to(self, profile: str) -> bool:
        return bool(self.profiles[profile]["applies"])

    def holds_at(self, version: str) -> bool:
        """Whether the behaviour exists in that release (``since`` / ``until``)."""
        return versions.holds(version, self.since, self.until)

    def variant_at(self, version: str) -> Mapping[str, Any] | None:
        """The variant a release follows, if one covers it."""
        return next((v for v in self.variants if versions.holds(version, v.get("since"), v.get("until"))), None)

    def defaults_at(self, version: str) -> dict[str, Any]:
        """The behaviour's defaults with those of the variant the release follows laid over them."""
        variant = self.variant_at(version) or {}
        return {**self.defaults, **variant.get("defaults", {})}

    def divergences_at(self, version: str) -> tuple[Mapping[str, Any], ...]:
        return tuple(d for d in self.divergences if versions.holds(version, d.get("since"), d.get("until")))


@dataclass
class Spec:
    behaviours: dict[str, Behaviour] = field(default_factory=dict)
    areas: dict[str, str] = field(default_factory=dict)

    def by_area(self) -> dict[str, list[Behaviour]]:
        out: dict[str, list[Behaviour]] = {}
        for b in self.behaviours.values():
            out.setdefault(b.area, []).append(b)
        return out

    def differences(self, one: str, other: str) -> list[str]:
        """The behaviours that exist in only one of two releases, or follow another variant there."""
        return [b.id for b in self.behaviours.values()
                if b.holds_at(one) != b.holds_at(other) or b.variant_at(one) is not b.variant_at(other)]

    def get(self, behaviour_id: str) -> Behaviour:
        try:
            return self.behaviours[behaviour_id]
        except KeyError:
            raise SpecError(f"unknown spec ID {behaviour_id!r} (try `rmqc spec list`)") from None


@lru_cache(maxsize=None)
def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS_DIR / name).read_text())


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def node_at(node: yaml.Node, path: Iterable[Any]) -> yaml.Node:
    """Follow a JSON path through a composed YAML node tree as far as it goes."""
    for part in path:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == part), None)
            if nxt is None:
                return node
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return node
    return node


def _id_near_line(text: str, line: int, id_key: str) -> str:
    pattern = re.compile(rf"^\s*-?\s*{{?\s*{id_key}:\s*['\"]?([A-Za-z0-9-]+)")  # block or flow mapping
    found = "?"
    for i, row in enumerate(text.splitlines(), start=1):
        if i > line:
            break
        m = pattern.match(row)
        if m:
            found = m.group(1)
    return found


def load_yaml_validated(path: Path, schema_name: str, id_key: str = "id") -> tuple[Any, yaml.Node]:
    """Parse a YAML file and validate it; raise SpecError with file, line and ID on any problem."""
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        problem = " ".join(str(p) for p in (exc.problem, exc.context) if p)
        raise SpecError(f"{shown}:{line}: {_id_near_line(text, line, id_key)}: YAML syntax error: {problem}") from None
    if root is None or data is None:
        raise SpecError(f"{shown}:1: ?: the file is empty")
    validator = jsonschema.Draft202012Validator(schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        error = errors[0]
        node = node_at(root, error.absolute_path)
        line = node.start_mark.line + 1
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise SpecError(f"{shown}:{line}: {_id_near_line(text, line, id_key)}: at {where}: {error.message}{more}")
    return data, root


def load_spec(directory: Path | None = None) -> Spec:
    """Load every ``behaviours/*.yaml``; duplicate IDs across files are an error."""
    directory = directory or BEHAVIOURS_DIR
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise SpecError(f"{display_path(directory)}: no behaviour files (*.yaml) found")
    spec = Spec()
    for path in files:
        data, root = load_yaml_validated(path, "behaviour-file.schema.json")
        items = node_at(root, ["behaviours"])
        spec.areas[data["area"]] = data["title"]
        for index, raw in enumerate(data["behaviours"]):
            line = items.value[index].start_mark.line + 1
            bid = raw["id"]
            if bid in spec.behaviours:
                other = spec.behaviours[bid]
                raise SpecError(f"{display_path(path)}:{line}: {bid}: duplicate ID, first defined at {other.file}:{other.line}")
            spec.behaviours[bid] = Behaviour(
                id=bid, area=data["area"], title=raw["title"], statement=raw["statement"].strip(),
                profiles=raw["profiles"], defaults=raw.get("defaults") or {}, sources=raw["sources"],
                vectors=(raw.get("vectors") or "").strip(), divergences=tuple(raw.get("divergences") or ()),
                kind=raw.get("kind", "behaviour"), related=tuple(raw.get("related") or ()),
                not_modelled=raw.get("not_modelled", ""), cases=tuple(raw.get("cases") or ()),
                since=_version(raw.get("since")), until=_version(raw.get("until")),
                variants=tuple(raw.get("variants") or ()), sdk=raw.get("sdk"),
                file=display_path(path), line=line)
    for b in spec.behaviours.values():
        for ref in list(b.related) + [d["claim"] for d in b.divergences]:
            if ref not in spec.behaviours:
                raise SpecError(f"{b.file}:{b.line}: {b.id}: refers to unknown ID {ref}")
        for number, case in enumerate(b.cases, start=1):
            _check_case(spec, b, number, case)
        _check_ranges(b)
    return spec


def _version(value: Any) -> str | None:
    """YAML reads ``5.0`` as a number: keep every version as its text."""
    return None if value is None else str(value)


def _check_ranges(b: Behaviour) -> None:
    """``since`` not after ``until``, and no release covered by two variants."""
    ranges = [("the behaviour", b.since, b.until)] + [
        (f"variant {i}", _version(v.get("since")), _version(v.get("until"))) for i, v in enumerate(b.variants, start=1)]
    ranges += [(f"divergence {d['claim']}", _version(d.get("since")), _version(d.get("until"))) for d in b.divergences]
    if b.sdk:
        ranges.append((f"the {b.sdk['client']} SDK range", _version(b.sdk.get("since")), _version(b.sdk.get("until"))))
    for what, since, until in ranges:
        try:
            if since and until and versions.key(since) > versions.key(until):
                raise SpecError(f"{b.file}:{b.line}: {b.id}: {what} has since {since} after until {until}")
        except ValueError as exc:
            raise SpecError(f"{b.file}:{b.line}: {b.id}: {what}: {exc}") from None
    for release in versions.COVERED + (versions.DEVELOP,):
        covering = [i for i, v in enumerate(b.variants, start=1)
                    if versions.holds(release, _version(v.get("since")), _version(v.get("until")))]
        if len(covering) > 1:
            raise SpecError(f"{b.file}:{b.line}: {b.id}: variants {covering} both cover {release}")


def _check_case(spec: Spec, b: Behaviour, number: int, case: Mapping[str, Any]) -> None:
    """Every row has a value per column; ``match`` only beside ``raises``, never beside ``expect``."""
    where = f"{b.file}:{b.line}: {b.id}: case {number} ({case['rule']})"
    columns = case["columns"]
    for other in case.get("also", ()):
        if other not in spec.behaviours:
            raise SpecError(f"{where}: also names unknown ID {other}")
    if ("match" in columns or "error_code" in columns) and "raises" not in columns:
        raise SpecError(f"{where}: match and error_code columns need a raises column")
    if "expect" in columns and "raises" in columns:
        raise SpecError(f"{where}: a case checks either expect or raises, not both")
    for index, row in enumerate(case["rows"], start=1):
        if len(row) != len(columns):
            raise SpecError(f"{where}: row {index} has {len(row)} values for {len(columns)} columns {columns}")


@lru_cache(maxsize=1)
def default_spec() -> Spec:
    return load_spec()
