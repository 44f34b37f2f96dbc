"""The RocketMQ releases the spec covers, and version ranges over them.

A behaviour, a variant of one or a divergence may say ``since`` (the first release where it holds) and
``until`` (the last); with neither it holds in every covered release. Versions compare as release numbers
(``packaging.version``); ``develop`` names the development branch, later than every release.
"""
from __future__ import annotations

from packaging.version import InvalidVersion, Version

COVERED = ("4.9.8", "5.0.0", "5.1.4", "5.3.3", "5.5.0")
"""Releases whose source the spec was read against, oldest first (tags ``rocketmq-all-<version>``)."""
LATEST = COVERED[-1]
DEVELOP = "develop"


def key(version: str) -> Version:
    """A sortable form; ``develop`` sorts after every release. ``ValueError`` names a malformed version."""
    if version == DEVELOP:
        return Version("999999")
    try:
        return Version(version)
    except InvalidVersion:
        raise ValueError(f"{version!r} is not a version (expected a release such as 5.0.0, or develop)") from None


def holds(version: str, since: str | None = None, until: str | None = None) -> bool:
    """Whether a range ``[since, until]`` (either end open when None) contains ``version``."""
    v = key(version)
    return (since is None or key(since) <= v) and (until is None or v <= key(until))


def describe(since: str | None, until: str | None) -> str:
    if since and until:
        return f"{since}–{until}" if since != until else f"{since} only"
    if since:
        return f"since {since}"
    if until:
        return f"until {until}"
    return "every covered release"
