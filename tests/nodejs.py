"""The Node.js driver for the tests that need it: its command line, or not applicable with the reason."""
from __future__ import annotations

import shutil

from adapters.nodejs import DRIVER, SDK_PACKAGE
from history.outcomes import NotApplicable


def require_node_sdk() -> str:
    """The ``node`` binary, when Node.js and rocketmq-client-nodejs (make driver-node) are here."""
    node = shutil.which("node")
    if node is None:
        raise NotApplicable("Node.js is not installed here (node is not on PATH)")
    if not SDK_PACKAGE.exists():
        raise NotApplicable(f"rocketmq-client-nodejs is not installed ({SDK_PACKAGE.parent}; make driver-node)")
    return node


def node_driver_command(endpoint: str, time_scale: float = 1.0) -> str:
    return f"{require_node_sdk()} {DRIVER} --endpoint {endpoint} --time-scale {time_scale!r}"
