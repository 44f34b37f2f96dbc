"""``java-remoting://NAMESRV``: the official Java 4.x client ``org.apache.rocketmq:rocketmq-client`` (pinned in
``drivers/java/pom.xml``, built by ``make driver-java``) against any name server, through the Java driver's
``remoting`` mode (``drivers/java``: ``Remoting4xMode``). Around the client the harness does what ``remoting://``
does (``adapters.remoting4x.RemotingTarget``): topics and groups set up with the name server's admin codes, dead
letters read from ``%DLQ%group``, ``rmqc serve``'s time scale learnt from the broker's runtime info (a real broker
runs at 1). One JVM serves every session of a test process; each client in it has an MQClientInstance of its own.
The capabilities are the driver's. A target kind of ``adapters.targets``.
"""
from __future__ import annotations

from frontends.remoting import handlers as codes
from frontends.remoting import send_faults
from history.outcomes import NotApplicable
from history.profiles import REMOTING_4X

from .base import TargetError
from .driver import DriverProcess
from .java_driver import java_command
from .remoting4x import RemotingTarget
from .remoting_client import RemotingAdmin, RemotingClient, RemotingClientError
from .targets import JAVA_REMOTING, Probe
from .wall_driver import WallDriverTarget

UPDATE_BROKER_CONFIG, TIME_SCALE_KEY = codes.UPDATE_BROKER_CONFIG, codes.TIME_SCALE_KEY
"""What ``mqadmin updateBrokerConfig`` sends each broker; the runtime-info key only ``rmqc serve``'s brokers have."""

"""``RequestCode.UPDATE_BROKER_CONFIG``: what ``mqadmin updateBrokerConfig`` sends each broker."""


def driver_command(namesrv: str, time_scale: float = 1.0, wire_scale: float = 1.0) -> str:
    """The Java driver in remoting mode for one name server, the server's time scale and what its clients write
    in the server's seconds (``wire_scale``: 1 for ``rmqc serve``; the time scale for a compressed release)."""
    return java_command(JAVA_REMOTING.text(namesrv), "remoting", "--namesrv", namesrv, "--time-scale", repr(time_scale),
                        "--wire-scale", repr(wire_scale))


class JavaRemotingTarget(RemotingTarget):
    """A session of the Java 4.x client; set-up, dead letters and time as ``remoting://``. The client's own timers
    of consumption (the orderly suspend time) run on the wall clock, so ``client_timer_scale`` is ``1 / time
    scale``, as for the C++ client; its periodic timers keep the server's pace (``Remoting4xMode.Timers``)."""

    KIND = JAVA_REMOTING
    SHARED = True
    SEND_LOOP_UNCHECKED = None  # the catalog's send loop (SEND-4X) is this client's

    @classmethod
    def command_for(cls, namesrv: str, time_scale: float, wire_scale: float) -> str:
        return driver_command(namesrv, time_scale, wire_scale)

    BROKER_KEYS = {"enable_property_filter": "enablePropertyFilter"}
    """Broker settings a suite may ask for, by the broker configuration key ``mqadmin updateBrokerConfig`` sets."""

    def configure_broker(self, **settings: object) -> None:
        """Through the admin code UPDATE_BROKER_CONFIG, as ``mqadmin updateBrokerConfig -k KEY -v VALUE`` does; the
        session puts the broker's default back when it closes (the server is shared). ``messages_in_memory`` is the
        store's state, not a key: it holds on ``rmqc serve`` (its queues never leave memory), and can be asked for
        there only."""
        if "messages_in_memory" in settings:
            if not settings.pop("messages_in_memory") or not self._keeps_all_in_memory():
                raise NotApplicable(f"{self.name}: whether a queue's first message is still in memory is the store's "
                                    "state, which no configuration key sets")
        for name in settings:
            if name not in self.BROKER_KEYS:
                raise NotApplicable(f"{self.name}: no broker configuration key sets {name!r}")
        for name, value in settings.items():
            key = self.BROKER_KEYS[name]
            self._broker_config(key, "true" if value else "false")
            self._changed_keys = {**getattr(self, "_changed_keys", {}), key: "false"}

    def _keeps_all_in_memory(self) -> bool:
        """``rmqc serve`` (its brokers' runtime info has its time-scale key) keeps every queue in memory."""
        try:
            with RemotingClient(self.admin.brokers()[0], 5) as broker:
                return TIME_SCALE_KEY in broker.runtime_info()
        except RemotingClientError:
            return False

    def inject_fault(self, name: str, count: int = 1) -> None:
        """``send_back``: the session's next ``count`` send-backs (-1: all) are refused by ``rmqc serve``'s brokers,
        so the client republishes the message itself (RETRY-CONC-08); a real broker takes no injected fault."""
        if name != send_faults.SEND_BACK or not self._logs_attempts():
            return super().inject_fault(name, count)
        broker, address = self._broker_table()[0]  # the served brokers share their faults (send_faults.ScopedFaults)
        self._serve_fault(broker, address, send_faults.SEND_BACK, count)

    def update_topic(self, name: str, *, read_queues: int, write_queues: int) -> None:
        """As ``mqadmin updateTopic -r R -w W``: UPDATE_AND_CREATE_TOPIC with the new queue numbers (TOPIC-03)."""
        real = self.names.real(name)
        self._set_up(f"update topic {real} ({read_queues}/{write_queues} queues)",
                     lambda: self.admin.create_topic(real, read_queues, write_queues, 6, None))

    def _broker_config(self, key: str, value: str) -> None:
        body = f"{key}={value}\n".encode()
        self._set_up(f"update broker config {key}={value}",
                     lambda: self.admin._each_broker(lambda b: b.call(UPDATE_BROKER_CONFIG, {}, body)))

    def close(self) -> None:
        for key, default in getattr(self, "_changed_keys", {}).items():
            try:
                self._broker_config(key, default)
            except TargetError:
                pass
        self._changed_keys = {}
        super().close()

    def transaction_producer(self, group, check, topics=()):  # type: ignore[no-untyped-def]
        """Not the C++ client's heart-beat allowance (SDK-CPP-10): the Java producer beats at the server's pace."""
        return WallDriverTarget.transaction_producer(self, group, check, topics)

    def _checks_may_come(self) -> bool:
        return WallDriverTarget._checks_may_come(self)


def build(address: str, profile: str, **options: object) -> JavaRemotingTarget:
    """A target of the ``java-remoting://NAMESRV`` kind; a ``--namesrv`` may only repeat its address."""
    options.pop("namesrv", None)
    return JavaRemotingTarget(address, profile, **options)  # type: ignore[arg-type]


def probe(address: str) -> Probe:
    """Reach the name server and a broker (its time scale), then start the driver and read its hello."""
    try:
        scale = RemotingAdmin(address).time_scale()
    except RemotingClientError as exc:
        raise TargetError(f"{JAVA_REMOTING.text(address)}: unreachable: {exc}") from None
    process = DriverProcess(driver_command(address, scale))  # the sessions share another: this one only says hello
    hello = process.hello
    process.stop()
    if REMOTING_4X not in hello.get("profiles", ()):
        raise TargetError(f"{JAVA_REMOTING.text(address)}: the driver runs {hello.get('profiles')}, not {REMOTING_4X}")
    return Probe(tuple(hello.get("profiles", ())), str(hello.get("clock", "wall")), hello.get("version"), False, None)


__all__ = ["JavaRemotingTarget", "build", "probe", "driver_command", "NotApplicable"]
