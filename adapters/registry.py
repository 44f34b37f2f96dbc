"""Turn a ``--target`` string into a ``Target`` factory, or a one-line error."""
from __future__ import annotations

from typing import Any, Callable

from history.profiles import GRPC_5X, KAFKA_RETRY, REFERENCE_PROFILES, REMOTING_4X

from .base import Target, TargetError

KNOWN_FORMS = "reference, grpc://HOST:PORT, container:IMAGE or driver:CMD"


def target_factory(spec: str) -> tuple[str, Callable[..., Target]]:
    """Return (kind, factory(profile=..., run_id=..., seed=...)) for a ``--target`` value."""
    if spec == "reference":
        from .kafka_pattern import KafkaPatternTarget
        from .reference import ReferenceTarget

        def reference(profile: str = REMOTING_4X, **kw: object) -> Target:
            return (KafkaPatternTarget if profile == KAFKA_RETRY else ReferenceTarget)(profile, **kw)  # type: ignore[arg-type]

        return "reference", reference
    if spec.startswith("grpc://"):
        address = spec[len("grpc://"):].rstrip("/")
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise TargetError(f"--target {spec}: expected grpc://HOST:PORT")
        from .grpc import GrpcTarget

        def grpc_target(profile: str = GRPC_5X, **kw: object) -> Target:
            return GrpcTarget(address, profile, **kw)  # type: ignore[arg-type]

        return "grpc", grpc_target
    if spec.startswith("driver:") and driver_command(spec):
        command = driver_command(spec)
        from .driver import DriverTarget

        def driver(profile: str = GRPC_5X, **kw: object) -> Target:
            return DriverTarget(command, profile, **kw)  # type: ignore[arg-type]

        return "driver", driver
    if spec.startswith("container:") and len(spec) > len("container:"):
        image = spec[len("container:"):]
        from .container import container_target

        def container(profile: str = GRPC_5X, **kw: object) -> Target:
            return container_target(image, profile, **kw)  # type: ignore[no-any-return]

        return "container", container
    raise TargetError(f"unknown --target {spec!r}: expected {KNOWN_FORMS}")


def driver_command(spec: str) -> str:
    """The command of a ``driver:CMD`` target."""
    return spec[len("driver:"):].strip()


def driver_hello(spec: str) -> dict[str, Any]:
    """What the driver of a ``driver:CMD`` target said when it started (one process per test process)."""
    from .driver import driver_process

    return driver_process(driver_command(spec)).hello


def preflight(kind: str, spec: str) -> None:
    """Reach the target once before any test runs: an unreachable proxy, a missing Docker engine or a
    driver that does not start is a ``TargetError`` in one line, not a run of failures."""
    if kind == "grpc":
        from .grpc import probe

        probe(spec.removeprefix("grpc://").rstrip("/"))
    elif kind == "container":
        from .container import engine_error

        error = engine_error(spec.removeprefix("container:"))
        if error:
            raise TargetError(error)
    elif kind == "driver":
        driver_hello(spec)


def target_profiles(kind: str, spec: str | None = None) -> tuple[str, ...]:
    """Profiles a target kind can run (a driver says which in its hello)."""
    if kind == "reference":
        return REFERENCE_PROFILES
    if kind == "driver" and spec is not None:
        return tuple(driver_hello(spec).get("profiles", ()))
    return (GRPC_5X,)
