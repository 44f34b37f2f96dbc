"""``go://HOST:PORT``: the official Go 5.x SDK ``github.com/apache/rocketmq-clients/golang/v5`` (pinned in
``drivers/go/go.mod``, built by ``make driver-go`` into ``drivers/go/bin/``) against any 5.x proxy endpoint, through
the Go driver: the same target as ``--target "driver:drivers/go/bin/rmqc-go-driver --endpoint HOST:PORT ..."`` plus
what a user does around an SDK, done by the harness as for ``nodejs://`` (``adapters.nodejs``, whose target this
one is a kind of): topics and groups set up through the name server, dead letters read from ``%DLQ%group``, the
proxy's time scale learnt from ``rmqc serve``. A target kind of ``adapters.targets``.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from history.outcomes import NotApplicable
from history.profiles import GRPC_5X

from .grpc import ServerInfo
from .nodejs import NodeTarget, probe_driver, time_options
from .targets import GO, Probe

ROOT = Path(__file__).resolve().parent.parent
DRIVER_DIR = ROOT / "drivers" / "go"
BINARY = DRIVER_DIR / "bin" / "rmqc-go-driver"
SDK_MODULE = "github.com/apache/rocketmq-clients/golang/v5"


def sdk_version() -> str | None:
    """The SDK version ``drivers/go/go.mod`` pins (what the driver's hello says)."""
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(SDK_MODULE)}\s+(v\S+)", (DRIVER_DIR / "go.mod").read_text(),
                      re.MULTILINE)
    return found.group(1) if found else None


def require_binary(target_text: str) -> Path:
    """The built driver, or not applicable naming how to build it."""
    if not BINARY.exists():
        raise NotApplicable(f"{target_text}: the Go SDK driver is not built ({BINARY}); make driver-go builds it "
                            "(it needs Go)")
    return BINARY


def driver_command(endpoint: str, info: ServerInfo) -> str:
    """The Go driver's command line for one endpoint, with the time options every wall-clock driver takes."""
    binary = require_binary(GO.text(endpoint))
    return " ".join(shlex.quote(part) for part in (str(binary), *time_options(endpoint, info)))


class GoTarget(NodeTarget):
    """A Go SDK session; topics and groups are set up through the name server's brokers."""

    KIND = GO
    SDK = "go"
    SDK_TITLE = "Go"
    command = staticmethod(driver_command)

    def __init__(self, address: str, profile: str = GRPC_5X, **options: object) -> None:
        require_binary(GO.text(address))
        super().__init__(address, profile, **options)  # type: ignore[arg-type]


def build(address: str, profile: str, **options: object) -> GoTarget:
    """A target of the ``go://HOST:PORT`` kind (``adapters.targets``)."""
    return GoTarget(address, profile, **options)


def probe(address: str) -> Probe:
    """Reach the proxy once, then start the driver and read its hello."""
    require_binary(GO.text(address))
    return probe_driver(GO, driver_command, address)


__all__ = ["GoTarget", "build", "probe", "driver_command", "require_binary", "sdk_version", "BINARY", "SDK_MODULE"]
