"""``java://HOST:PORT``: the official Java 5.x client ``org.apache.rocketmq:rocketmq-client-java`` (pinned in
``drivers/java/pom.xml``, built by ``make driver-java``) against any 5.x proxy endpoint, through the Java driver in
its ``grpc`` mode (``drivers/java``, ``rmqc.driver.Grpc5xMode``). Everything around the SDK is what
``nodejs://`` does (``adapters.nodejs.NodeTarget``): topics and groups set up through the name server, dead
letters read from ``%DLQ%group``, the proxy's time scale learnt from ``rmqc serve``. The client's own timers (a
FIFO consumer's local retries, a producer's flow-control backoff) run on the wall clock, so in spec time they
last ``1 / time_scale`` times what the server's settings say: the harness scales what it expects of those
(``client_timer_scale``), as for the Node.js client. A target kind of ``adapters.targets``.
"""
from __future__ import annotations

from history.profiles import GRPC_5X

from .grpc import ServerInfo
from .java_driver import java_command
from .nodejs import NodeTarget, probe_driver, time_options
from .targets import JAVA, Probe


def driver_command(endpoint: str, info: ServerInfo) -> str:
    """The Java driver's command line in its grpc mode, or ``NotApplicable`` without Java or the build. The
    options are the Node driver's (``time_options``), a timestamp's and a duration's scale being one factor,
    which the Java driver calls its wire scale (``rmqc.driver.Clock``)."""
    options = ["--wire-scale" if o == "--timestamp-scale" else o for o in time_options(endpoint, info)]
    return java_command(JAVA.text(endpoint), "grpc", *options)


class JavaTarget(NodeTarget):
    """A session of the Java 5.x client, in the one driver JVM of the endpoint."""

    KIND = JAVA
    SDK = "java"
    SDK_TITLE = "Java"
    command = staticmethod(driver_command)


def build(address: str, profile: str = GRPC_5X, **options: object) -> JavaTarget:
    """A target of the ``java://HOST:PORT`` kind (``adapters.targets``)."""
    return JavaTarget(address, profile, **options)  # type: ignore[arg-type]


def probe(address: str) -> Probe:
    """Reach the proxy once, then start the driver and read its hello."""
    return probe_driver(JAVA, driver_command, address)


__all__ = ["JavaTarget", "build", "probe", "driver_command"]
