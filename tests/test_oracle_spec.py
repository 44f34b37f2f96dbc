"""The release oracle's table and the spec say the same (issue 35), and the oracle is not applicable, never
passed, where Java or the jars are missing."""
from __future__ import annotations

import ast
import re
import importlib
import inspect
from pathlib import Path

import pytest

from adapters import release_jars
from history.outcomes import NotApplicable
from spec.coverage import ID_PATTERN
from spec.loader import default_spec
from suites import release_oracle
from suites.oracle_rules import CHECKS, CITES_JAVA, NOT_CHECKED, not_checked_line, oracle_line

RULES = Path(__file__).resolve().parents[1] / "reference_impl" / "rules"


def java_citing_rules() -> dict[str, list[str]]:
    """``module.function`` of every public rule whose docstring cites a Java method (``CITES_JAVA``: a ``.java``
    path, a ``#method``, a ``Class.method`` or a ``camelCase`` name), with the spec IDs it cites."""
    found: dict[str, list[str]] = {}
    for path in sorted(RULES.glob("*.py")):
        for node in ast.parse(path.read_text(), filename=str(path)).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                doc = ast.get_docstring(node) or ""
                if CITES_JAVA.search(doc):
                    found[f"{path.stem}.{node.name}"] = list(dict.fromkeys(ID_PATTERN.findall(doc)))
    return found


CITING = java_citing_rules()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.rule)
def test_the_behaviour_names_the_java_method_its_rule_is_checked_against(check) -> None:
    behaviour = default_spec().get(check.spec_id)
    assert oracle_line(check) in behaviour.sources.get("upstream", []), \
        f"{check.spec_id} should list {oracle_line(check)!r} in sources.upstream (rmqc spec show prints it)"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.rule)
def test_the_rule_exists_and_cites_its_behaviour(check) -> None:
    module, name = check.rule.rsplit(".", 1)
    fn = getattr(importlib.import_module(f"reference_impl.rules.{module}"), name)
    doc = inspect.getdoc(fn) or ""
    assert check.java.split("#")[1].split(".")[-1] in doc or check.java.split("#")[1] in doc or \
        check.spec_id in doc, f"{check.rule}'s docstring names neither {check.java} nor {check.spec_id}"


def test_without_java_the_oracle_is_not_applicable(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(release_oracle.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(release_oracle.shutil, "which", lambda name: None)
    release_oracle._JVMS.pop("0.0.1", None)
    try:
        with pytest.raises(NotApplicable, match="java is not installed"):
            release_oracle.jvm("0.0.1")
    finally:
        release_oracle._JVMS.pop("0.0.1", None)


def test_without_the_jars_offline_the_oracle_is_not_applicable(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(release_oracle.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv("RMQC_ORACLE_OFFLINE", "1")
    release_oracle._JVMS.pop("0.0.2", None)
    try:
        with pytest.raises(NotApplicable, match="make oracle"):
            release_oracle.jvm("0.0.2")
    finally:
        release_oracle._JVMS.pop("0.0.2", None)


def test_a_missing_artifact_is_recorded_with_its_reason() -> None:
    output = ("[ERROR] Failed to execute goal on project oracle-4.9.8: Could not resolve dependencies: "
              "org.apache.rocketmq:rocketmq-broker:jar:4.9.8 was not found in https://repo.maven.apache.org/maven2")
    assert release_jars.missing_component(output) == "broker"


@pytest.mark.parametrize("rule", sorted(CITING))
def test_a_rule_that_models_a_java_method_is_checked_or_says_why(rule: str) -> None:
    """Every rule whose docstring cites a Java method is in the release oracle's table, or one of the behaviours
    it cites (any, when it cites none) says in ``sources.upstream`` why it is not checked."""
    if any(c.rule == rule for c in CHECKS):
        return  # test_the_behaviour_names_the_java_method_its_rule_is_checked_against requires its line
    assert rule in NOT_CHECKED, (f"{rule} cites a Java method: add it to suites/oracle_rules.py CHECKS, or to "
                                 "NOT_CHECKED with the reason it cannot be checked against the released classes")
    spec = default_spec()
    cited = [spec.behaviours[i] for i in CITING[rule] if i in spec.behaviours] or list(spec.behaviours.values())
    line = not_checked_line(rule)
    assert any(line in b.sources.get("upstream", []) for b in cited), \
        f"{' or '.join(b.id for b in cited[:3])} should list {line!r} in sources.upstream (rmqc spec show prints it)"


def test_every_reason_line_is_the_table_s() -> None:
    """A rule is either checked or not, and every ``oracle:`` line of the spec is one the table makes."""
    checked = {c.rule for c in CHECKS}
    assert not checked & set(NOT_CHECKED), f"both checked and not: {sorted(checked & set(NOT_CHECKED))}"
    made = {oracle_line(c) for c in CHECKS} | {not_checked_line(r) for r in NOT_CHECKED}
    stale = [f"{b.id}: {line}" for b in default_spec().behaviours.values()
             for line in b.sources.get("upstream", []) if isinstance(line, str) and line.startswith("oracle:")
             and line not in made]
    assert not stale, "spec oracle lines the table no longer makes:\n" + "\n".join(stale)



def test_no_reason_says_not_yet() -> None:
    """A rule the oracle does not check says why it cannot be checked against the released classes: a reason
    that it could be but is not yet ("not yet", "left for a later round") is refused."""
    deferred = re.compile(r"\bnot\s+yet\b|later round|ran out of time", re.IGNORECASE)
    lazy = {rule: why for rule, why in NOT_CHECKED.items() if deferred.search(why)}
    assert not lazy, "check these in suites/oracle_rules.py CHECKS, or say why they cannot be:\n" + \
        "\n".join(f"{rule}: {why}" for rule, why in lazy.items())
