"""Version ranges in the spec: what holds in which release, how the loader checks ranges, and how
``rmqc spec show --version`` and ``rmqc run --target-version`` use them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from spec_copies import spec_copy

from spec import versions
from spec.loader import SpecError, default_spec, load_spec

RMQC = [sys.executable, "-m", "rmqc.cli"]


def _rmqc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(RMQC + list(args), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("version,since,until,holds", [
    ("5.0.0", None, None, True), ("5.0.0", "5.0.0", "5.0.0", True), ("5.1.4", "5.0.0", "5.0.0", False),
    ("4.9.8", "5.0.0", None, False), ("5.3.3", "5.1.0", "5.3.3", True), ("develop", "5.1.0", "5.3.3", False),
    ("develop", "develop", None, True), ("5.10.0", "5.9.0", None, True),  # release numbers, not strings
])
def test_ranges(version: str, since: str | None, until: str | None, holds: bool) -> None:
    assert versions.holds(version, since, until) is holds


def test_a_malformed_version_is_named() -> None:
    with pytest.raises(ValueError, match="'five' is not a version"):
        versions.key("five")


def test_behaviours_hold_where_they_say() -> None:
    limit = default_spec().get("LIMIT-02")
    assert limit.holds_at("5.0.0") and not limit.holds_at("4.9.0")
    assert "consumer group cannot be empty" in limit.variant_at("5.0.0")["statement"]
    assert "checkGroup` first" in limit.variant_at("5.1.4")["statement"]
    assert limit.variant_at("develop")["defaults"] == {"maxGroupLength": 120}
    assert limit.variant_at("5.5.0") is limit.variant_at("develop") and limit.defaults_at("5.3.3")["maxGroupLength"] == 255
    assert limit.variant_at("5.5.0")["source"].endswith("@rocketmq-all-5.5.0")


def test_the_latest_covered_release_is_5_5_0() -> None:
    """5.5.0, the newest 5.x release Maven Central serves whole, read from its sources jars against 5.3.3."""
    assert versions.COVERED == ("4.9.8", "5.0.0", "5.1.4", "5.3.3", "5.5.0") and versions.LATEST == "5.5.0"
    assert default_spec().get("TOPIC-05").defaults_at("5.5.0")["enableMixedMessageType"] is False


def test_since_after_until_is_an_error(tmp_path: Path) -> None:
    spec_dir = spec_copy(tmp_path, "limits.yaml", "  since: 4.9.8\n", "  since: 5.3.3\n  until: 5.0.0\n")
    with pytest.raises(SpecError, match=r"limits.yaml:\d+: LIMIT-02: the behaviour has since 5.3.3 after until 5.0.0"):
        load_spec(spec_dir)


def test_sdk_habits_carry_sdk_version_ranges(tmp_path: Path) -> None:
    """An SDK habit names its client, the SDK versions and the source at the SDK's tag; the loader refuses
    a range that ends before it starts and one that names no client."""
    habit = default_spec().get("RETRY-5X-03").sdk
    assert habit["client"] == "java" and habit["since"] == "5.0.0" and habit["source"].endswith("@rocketmq-client-java-5.0.0")
    spec_dir = spec_copy(tmp_path, "retry_5x.yaml", "    client: java\n    since: 5.0.0\n",
                         "    client: java\n    since: 5.1.0\n    until: 5.0.8\n")
    with pytest.raises(SpecError, match=r"retry_5x.yaml:\d+: RETRY-5X-03: the java SDK range has since 5.1.0 after until 5.0.8"):
        load_spec(spec_dir)
    spec_dir = spec_copy(tmp_path / "nameless", "retry_5x.yaml", "    client: java\n    since: 5.0.0\n", "    since: 5.0.0\n")
    with pytest.raises(SpecError, match=r"retry_5x.yaml:\d+: RETRY-5X-03: .*'client' is a required property"):
        load_spec(spec_dir)
    shown = _rmqc("spec", "show", "RETRY-5X-03")
    assert "SDK habit: the java client, since 5.0.0" in shown.stdout


def test_two_variants_covering_one_release_is_an_error(tmp_path: Path) -> None:
    spec_dir = spec_copy(tmp_path, "limits.yaml", "  - since: 5.1.0\n    until: 5.3.3\n", "  - since: 5.0.0\n    until: 5.3.3\n")
    with pytest.raises(SpecError, match=r"LIMIT-02: variants \[1, 2\] both cover 5.0.0"):
        load_spec(spec_dir)


def test_spec_show_for_a_release() -> None:
    shown = _rmqc("spec", "show", "LIMIT-02", "--version", "5.0.0")
    assert shown.returncode == 0, shown.stderr
    assert "in 5.0.0 (5.0.0 only, proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/common/GrpcValidator.java" \
           "#GrpcValidator.validateConsumerGroup@rocketmq-all-5.0.0)" in shown.stdout
    assert "consumer group cannot be empty" in shown.stdout
    absent = _rmqc("spec", "show", "LIMIT-02", "--version", "4.9.0")
    assert absent.returncode == 0 and "in 4.9.0: does not hold (since 4.9.8)" in absent.stdout
    bad = _rmqc("spec", "show", "LIMIT-02", "--version", "five")
    assert bad.returncode == 2 and "'five' is not a version" in bad.stderr


def test_run_holds_the_target_to_a_release(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _rmqc("run", "--target", "reference", "--target-version", "4.9.0", "--out", str(out),
                   "-k", "bad_group_names or delay_level_to_queue_id")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["release"] == "4.9.0"
    assert summary["behaviours"]["DELAY-03"]["verdict"] == "pass"
    limit = summary["behaviours"]["LIMIT-02"]
    assert limit["verdict"] == "not applicable"
    assert limit["tests"][0]["reason"] == "not applicable: not in RocketMQ 4.9.0: LIMIT-02 holds since 4.9.8"
    bad = _rmqc("run", "--target", "reference", "--target-version", "five")
    assert bad.returncode == 2 and bad.stderr.strip().endswith("'five' is not a version (expected a release such as "
                                                                "5.0.0, or develop)")
