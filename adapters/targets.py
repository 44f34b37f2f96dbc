"""The ``--target`` string, parsed once: one table of target kinds, one record per parsed target.

Every part that takes a target (``rmqc run``, the pytest plugin, the expectation commands) calls
``parse_target`` and, before any test runs, ``ParsedTarget.probe`` (cached per target text, so a run
reaches its target once however many parts ask). Adding a target kind is one entry in ``KINDS``: its
form, its default profile and the module that builds and probes it. That module has two functions:
``build(address, profile, **options) -> Target`` and ``probe(address) -> Probe``; they are imported
only when a target of that kind is used.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from history.profiles import GRPC_5X, REMOTING_4X

from .base import Target, TargetError


@dataclass(frozen=True)
class TargetKind:
    """One form of ``--target``: ``prefix`` + an address (or the bare word ``name`` when there is no prefix)."""

    name: str
    prefix: str
    placeholder: str
    default_profile: str
    implementation: str
    """The module with ``build`` and ``probe``."""
    namesrv: str = "none"
    """What ``--namesrv`` means to this kind: ``set-up`` (the name server that takes topic and group set-up),
    ``address`` (the target's address is its name server: ``--namesrv`` may only repeat it), ``none``."""

    @property
    def usage(self) -> str:
        return f"{self.prefix}{self.placeholder}" if self.prefix else self.name

    def text(self, address: str) -> str:
        """The ``--target`` text naming ``address`` (what a target calls itself in messages)."""
        return f"{self.prefix}{address}" if self.prefix else self.name

    def module(self) -> Any:
        return importlib.import_module(self.implementation)


REFERENCE = TargetKind("reference", "", "", REMOTING_4X, "adapters.reference")
GRPC = TargetKind("grpc", "grpc://", "HOST:PORT", GRPC_5X, "adapters.grpc", "set-up")
CONTAINER = TargetKind("container", "container:", "IMAGE", GRPC_5X, "adapters.container")
DRIVER = TargetKind("driver", "driver:", "CMD", GRPC_5X, "adapters.driver")
REMOTING = TargetKind("remoting", "remoting://", "NAMESRV", REMOTING_4X, "adapters.remoting4x", "address")
NODEJS = TargetKind("nodejs", "nodejs://", "HOST:PORT", GRPC_5X, "adapters.nodejs", "set-up")
JAVA = TargetKind("java", "java://", "HOST:PORT", GRPC_5X, "adapters.java_grpc", "set-up")
GO = TargetKind("go", "go://", "HOST:PORT", GRPC_5X, "adapters.golang", "set-up")
JAVA_REMOTING = TargetKind("java-remoting", "java-remoting://", "NAMESRV", REMOTING_4X, "adapters.java_remoting", "address")
RELEASE = TargetKind("release", "release:", "V", GRPC_5X, "adapters.release")

KINDS: tuple[TargetKind, ...] = (REFERENCE, RELEASE, GRPC, CONTAINER, DRIVER, REMOTING, NODEJS, JAVA, GO, JAVA_REMOTING)
USAGE = " | ".join(k.usage for k in KINDS)
"""The forms, for help texts."""


@dataclass(frozen=True)
class Probe:
    """What reaching a target once tells: the profiles it runs, its clock, its version, and whether it
    is this very reference implementation (in process, or a driver wrapping this version of it), so
    that the tests of the reference's own pure rules are about the target too."""

    profiles: tuple[str, ...]
    clock: str = "wall"
    version: str | None = None
    runs_reference: bool = False
    release: str | None = None
    """The RocketMQ release the target says it behaves as, when it says (``rmqc serve --version``)."""

    @property
    def virtual_clock(self) -> bool:
        return self.clock == "virtual"


@dataclass(frozen=True)
class ParsedTarget:
    """A ``--target`` value: its kind and address, before anything is reached."""

    text: str
    kind: TargetKind
    address: str

    def probe(self) -> Probe:
        """Reach the target once (cached for the process): an unreachable proxy, a missing Docker engine
        or a driver that does not start is a ``TargetError`` in one line, not a run of failures."""
        if self.text not in _PROBES:
            _PROBES[self.text] = self.kind.module().probe(self.address)
        return _PROBES[self.text]

    def build(self, profile: str | None = None, **options: object) -> Target:
        """A fresh target of this kind (``run_id``, ``seed`` and the kind's own options)."""
        return self.kind.module().build(self.address, profile or self.kind.default_profile, **options)  # type: ignore[no-any-return]


_PROBES: dict[str, Probe] = {}


def parse_target(text: str) -> ParsedTarget:
    """Parse a ``--target`` value; an unknown or incomplete one is a ``TargetError`` naming the forms."""
    for kind in KINDS:
        if not kind.prefix:
            if text == kind.name:
                return ParsedTarget(text, kind, "")
            continue
        if text.startswith(kind.prefix):
            address = text[len(kind.prefix):].strip()
            address = _check_address(kind, text, address)
            return ParsedTarget(text, kind, address)
    raise TargetError(f"unknown --target {text!r}: expected {', '.join(k.usage for k in KINDS)}")


def _check_address(kind: TargetKind, text: str, address: str) -> str:
    if kind.placeholder == "HOST:PORT":
        address = address.rstrip("/")
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise TargetError(f"--target {text}: expected {kind.usage}")
    elif kind.placeholder == "V":
        from spec import versions

        try:
            versions.key(address)
        except ValueError as exc:
            raise TargetError(f"--target {text}: expected {kind.usage}, a release such as 5.3.3: {exc}") from None
    elif not address:
        raise TargetError(f"--target {text}: expected {kind.usage}")
    return address


def namesrv_option(target: ParsedTarget, namesrv: str | None) -> dict[str, str]:
    """The ``namesrv`` option a target of this kind is built with for ``--namesrv``: passed to a kind that sets up
    through a name server; dropped where the target's own address is its name server and ``--namesrv`` repeats
    it; a ``TargetError`` in one line where it names another one, or a kind that has no use for it."""
    if not namesrv:
        return {}
    if target.kind.namesrv == "set-up":
        return {"namesrv": namesrv}
    if target.kind.namesrv == "address" and namesrv.strip() == target.address:
        return {}
    if target.kind.namesrv == "address":
        raise TargetError(f"--namesrv {namesrv}: {target.text} already names its name server ({target.address}); "
                          "give one or the other")
    raise TargetError(f"--namesrv {namesrv}: {target.text} has its own name server; --namesrv is for grpc:// and "
                      "nodejs:// targets")


def reference_target(profile: str, **options: object) -> Target:
    """The in-process reference, e.g. the prediction in differential tests."""
    return parse_target(REFERENCE.name).build(profile, **options)
