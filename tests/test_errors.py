"""Bad input gets a one-line error naming the file, line and ID (or the target and the cause)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from spec.loader import BEHAVIOURS_DIR, SpecError, load_spec
from suites.scenario import load_scenario

RMQC = [sys.executable, "-m", "rmqc.cli"]


def _copy_spec(tmp_path: Path) -> Path:
    target = tmp_path / "behaviours"
    shutil.copytree(BEHAVIOURS_DIR, target)
    return target


def _load_error(tmp_path: Path, file: str, edit: Callable[[str], str]) -> tuple[str, str]:
    """Copy the spec, edit one file, load it; return (the one-line error, the file's original text)."""
    spec_dir = _copy_spec(tmp_path)
    path = spec_dir / file
    text = path.read_text()
    path.write_text(edit(text))
    with pytest.raises(SpecError) as error:
        load_spec(spec_dir)
    message = str(error.value)
    assert "\n" not in message
    return message, text


def _line_of(text: str, anchor: str) -> int:
    return text[:text.index(anchor)].count("\n") + 1


def test_missing_field_names_file_line_and_id(tmp_path: Path) -> None:
    def drop_statement(text: str) -> str:
        statement = text.index("  statement:", text.index("- id: DELAY-03"))
        return text[:statement] + text[text.index("  versions:", statement):]

    message, text = _load_error(tmp_path, "delay.yaml", drop_statement)
    assert f"delay.yaml:{_line_of(text, '- id: DELAY-03')}: DELAY-03: " in message, message
    assert "'statement' is a required property" in message


def test_yaml_syntax_error_names_line_and_nearest_id(tmp_path: Path) -> None:
    def break_syntax(text: str) -> str:
        lines = text.splitlines()
        lines[_line_of(text, "- id: TX-02") + 1] += " : [unclosed"
        return "\n".join(lines) + "\n"

    message, _ = _load_error(tmp_path, "transactions.yaml", break_syntax)
    assert "transactions.yaml:" in message and "TX-02" in message and "YAML syntax error" in message


def test_bad_profile_value(tmp_path: Path) -> None:
    message, _ = _load_error(tmp_path, "delay.yaml", lambda text: text.replace(
        "    remoting-4.x:\n      applies: true", "    remoting-4.x:\n      applies: maybe", 1))
    assert re.search(r"delay\.yaml:\d+: DELAY-01: at behaviours/0/profiles/remoting-4.x/applies", message), message


def test_duplicate_id_names_both_places(tmp_path: Path) -> None:
    spec_dir = _copy_spec(tmp_path)
    text = (spec_dir / "delay.yaml").read_text()
    (spec_dir / "zz_dup.yaml").write_text("area: ZZ\ntitle: dup\nbehaviours:\n" +
                                         text[text.index("- id: DELAY-01"):text.index("- id: DELAY-02")])
    with pytest.raises(SpecError, match=r"zz_dup\.yaml:4: DELAY-01: duplicate ID, first defined at .*delay\.yaml:\d+"):
        load_spec(spec_dir)


def test_malformed_scenario_names_file_line_and_id(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("id: SCN-bad\nspec: [RETRY-CONC-04]\nprofile: remoting-4.x\ndescription: x\n"
                    "setup: {topic: T, group: G, consumer: push4x-concurrent}\n"
                    "messages:\n  - {key: m0, failures: -2}\nexpect: []\n")
    with pytest.raises(SpecError) as error:
        load_scenario(path)
    message = str(error.value)
    assert "\n" not in message and "bad.yaml:7: SCN-bad: at messages/0/failures" in message, message


def test_unknown_target_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(RMQC + ["run", "--target", "bogus", "--out", str(tmp_path)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "unknown --target 'bogus'" in result.stderr and "reference" in result.stderr


def test_driver_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(RMQC + ["run", "--target", "driver:some-sdk-driver", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "driver:some-sdk-driver: cannot start: No such file or directory" in result.stderr


def test_unreachable_grpc_target_fails_within_its_timeout(tmp_path: Path) -> None:
    """Nothing listens on port 1: the run stops with the address and the cause, within the 5 s probe."""
    import time

    started = time.monotonic()
    result = subprocess.run(RMQC + ["run", "--target", "grpc://127.0.0.1:1", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "grpc://127.0.0.1:1: unreachable: no answer within 5 s" in result.stdout + result.stderr
    assert time.monotonic() - started < 30


def test_spec_cli_reports_bad_file_in_one_line(tmp_path: Path) -> None:
    spec_dir = _copy_spec(tmp_path)
    (spec_dir / "delay.yaml").write_text("area: DELAY\ntitle: x\nbehaviours: []\n")
    result = subprocess.run(RMQC + ["spec", "--spec-dir", str(spec_dir), "list"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "delay.yaml:3" in result.stderr, result.stderr


def test_unknown_spec_id_in_show() -> None:
    result = subprocess.run(RMQC + ["spec", "show", "NOPE-01"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "unknown spec ID 'NOPE-01'" in result.stderr
