"""The release oracle's table and the spec say the same (issue 35), and the oracle is not applicable, never
passed, where Java or the jars are missing."""
from __future__ import annotations

import importlib
import inspect

import pytest

from history.outcomes import NotApplicable
from spec.loader import default_spec
from suites import release_oracle
from suites.oracle_rules import CHECKS, oracle_line


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
        with pytest.raises(NotApplicable, match="mvn is not installed"):
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
    m = release_oracle._NOT_FOUND.search(output)
    assert m and (m.group(1) or m.group(2)) == "broker"
