"""Importing the official 5.x SDK ``rocketmq-python-client`` the way a harness must (its habits, see
``sdk-grpc-notes.md``): its log file goes under a scratch folder instead of ``~/logs``, its local
address is 127.0.0.1 instead of a lookup towards a public address, and its FIFO consumer's local
retry sleeps follow the target's time scale like every other wait.
"""
from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace

SDK_LOG_DIR = Path(os.environ.get("RMQC_SDK_LOG_DIR", Path(tempfile.gettempdir()) / "rmqc-sdk-home"))


def load_sdk() -> ModuleType:
    """Import ``rocketmq`` with ``HOME`` pointed at ``SDK_LOG_DIR`` for the import (its log path is fixed then)."""
    import sys

    if "rocketmq.v5.log" not in sys.modules:
        SDK_LOG_DIR.mkdir(parents=True, exist_ok=True)
        home = os.environ.get("HOME")
        os.environ["HOME"] = str(SDK_LOG_DIR)
        try:
            import rocketmq.v5.log  # noqa: F401  (creates the log folder under HOME)
        finally:
            if home is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = home
    import rocketmq
    from rocketmq.v5.util import Misc

    Misc._Misc__LOCAL_IP = "127.0.0.1"  # type: ignore[attr-defined]
    logging.getLogger("rocketmq-python-client").setLevel(os.environ.get("RMQC_SDK_LOG_LEVEL", "WARNING"))
    return rocketmq


SDK_DISTRIBUTION = "rocketmq-python-client"


def sdk_name_and_version() -> tuple[str, str | None]:
    """The installed SDK's distribution name and version (a column of the SDK × server matrix)."""
    from importlib import metadata

    try:
        return SDK_DISTRIBUTION, metadata.version(SDK_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return SDK_DISTRIBUTION, None


class _LocalRetrySleeps:
    """The FIFO consumer's local retry sleeps, scaled, and how many are under way right now."""

    def __init__(self) -> None:
        self.time_scale = 1.0
        self._active = 0
        self._lock = threading.Lock()

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self._active += 1
        try:
            time.sleep(seconds * self.time_scale)
        finally:
            with self._lock:
                self._active -= 1

    @property
    def active(self) -> int:
        with self._lock:
            return self._active


LOCAL_RETRY_SLEEPS = _LocalRetrySleeps()


def scale_fifo_local_retries(time_scale: float) -> None:
    """The FIFO push consumer sleeps its backoff locally; under a time-compressed server, so must it.
    ``LOCAL_RETRY_SLEEPS.active`` tells a settling harness that a message is still between local attempts."""
    from rocketmq.v5.consumer.push import fifo_consumption

    LOCAL_RETRY_SLEEPS.time_scale = time_scale
    fifo_consumption.time = SimpleNamespace(sleep=LOCAL_RETRY_SLEEPS.sleep,  # type: ignore[attr-defined]
                                            time=time.time, monotonic=time.monotonic)
