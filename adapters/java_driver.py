"""The Java driver's command line (``drivers/java``, built by ``make driver-java``): the official Java clients
behind the driver protocol, in two modes: ``remoting`` (the 4.x client ``org.apache.rocketmq:rocketmq-client``,
``adapters.java_remoting``) and ``grpc`` (the 5.x client ``org.apache.rocketmq:rocketmq-client-java``,
``adapters.java_grpc``). Without Java or without the build, a target of either kind is not applicable with
the reason, never passed."""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from history.outcomes import NotApplicable

ROOT = Path(__file__).resolve().parent.parent
DRIVER_DIR = ROOT / "drivers" / "java"
CLASSES = DRIVER_DIR / "target" / "classes"
DEPENDENCIES = DRIVER_DIR / "target" / "dependency"
MAIN_CLASS = "rmqc.driver.Main"
HEAP = "-Xmx256m"
"""One driver JVM runs every client of a test process; the clients keep little."""


def java_command(target_text: str, mode: str, *options: str) -> str:
    """``java ... rmqc.driver.Main --mode MODE OPTIONS``, or ``NotApplicable`` naming what is missing."""
    java = shutil.which("java")
    if java is None:
        raise NotApplicable(f"{target_text}: Java is not installed (java is not on PATH)")
    if not (CLASSES / "rmqc" / "driver" / "Main.class").exists() or not DEPENDENCIES.is_dir():
        raise NotApplicable(f"{target_text}: the Java driver is not built ({DRIVER_DIR}); make driver-java builds it")
    classpath = f"{CLASSES}:{DEPENDENCIES}/*"
    return " ".join(shlex.quote(part) for part in (java, HEAP, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                                   "-cp", classpath, MAIN_CLASS, "--mode", mode, *options))
