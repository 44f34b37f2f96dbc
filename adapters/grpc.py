"""The grpc adapter: a ``Target`` over the official 5.x SDK ``rocketmq-python-client``, pointed at any
proxy endpoint (``--target grpc://HOST:PORT``) -- ``rmqc serve`` or a real RocketMQ 5.x proxy.

Time: the target runs on the wall clock. Against ``rmqc serve`` the adapter asks the server for its
time scale (``rmqc.Admin/Info``) and reports spec time (wall time / scale); against any other proxy
the scale is 1.0. Every observable transition goes to the event log: sends, deliveries, listener
outcomes, acks, nacks and what lands in ``%DLQ%<group>`` (read back with a simple consumer).

Names: each target suffixes the topics and groups it creates with a short tag, so runs against a
long-lived proxy never see each other's messages; events carry the names the suite used.
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import itertools
import logging
import math
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import grpc

from frontends.grpc import admin
from history.events import Event, EventRecorder
from history.profiles import GRPC_5X
from history.values import ListenerOutcome, LocalTransactionState
from history.views import Listener, MessageView, SendResult
from reference_impl.rules import transaction as tx_rules
from reference_impl.rules.codes import RocketMQError
from spec import versions

from .base import (
    SETTLE_LIMIT_MS,
    NotApplicable,
    Target,
    TargetError,
    budget_cut,
    require_wall_budget,
    wall_budget_s,
    wall_left_s,
    wall_wait_s,
)
from .names import SessionNames
from .remoting_client import AdminRefused, RemotingAdmin, RemotingClientError
from .sdk5x import (
    LOCAL_RETRY_SLEEPS,
    load_sdk,
    scale_fifo_local_retries,
    sdk_name_and_version,
)
from .targets import GRPC, Probe

log = logging.getLogger("rmqc.grpc")

CAPABILITIES = frozenset({"send.sync", "send.async", "delay.timer", "consumer.simple5x", "consumer.push5x",
                          "consumer.push5x.fifo", "sdk.python", "consumer.filter.tag", "transactions",
                          "observe.stored"})
STORED_WITH_NAMESRV = frozenset({"observe.properties"})
"""What a name server adds: a remoting pull shows a stored message's system properties."""
PROBE_TIMEOUT_S = 5.0
PYTHON_FIRST_SETTINGS_SYNC_S = 1.0
"""rocketmq-python-client 5.1.2 ``ClientTelemetryManager.start_scheduler``: settings (with every topic the client
has sent to, ``Client._retrieve_topic_route_data``) are sent 1 s after start, then every 300 s (TX-07)."""


@dataclass
class ServerInfo:
    time_scale: float
    spec_wall_at_start_ms: float
    admin: bool
    description: str
    version: str | None = None
    answered_at: float = field(default_factory=time.monotonic)
    release: str | None = None
    namesrv: str | None = None
    """``rmqc serve``'s remoting name server, when it runs one."""


def admin_call(address: str, method: str, request: dict[str, Any], timeout_s: float = PROBE_TIMEOUT_S,
               wait_for_ready: bool = False) -> dict[str, Any]:
    """One JSON call on ``rmqc serve``'s ``rmqc.Admin`` side channel."""
    channel = grpc.insecure_channel(address)
    try:
        call = channel.unary_unary(f"/{admin.SERVICE}/{method}", request_serializer=admin.encode,
                                   response_deserializer=admin.decode)
        return call(request, timeout=timeout_s, wait_for_ready=wait_for_ready)
    finally:
        channel.close()


def server_info(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> ServerInfo:
    """Reach the endpoint once; ``rmqc serve`` answers ``rmqc.Admin/Info``, a real proxy UNIMPLEMENTED."""
    try:
        answer = admin_call(address, "Info", {}, timeout_s, wait_for_ready=True)
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
            return ServerInfo(1.0, time.time() * 1000, False, "a RocketMQ 5.x proxy")
        cause = exc.details() or exc.code().name
        if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            cause = f"no answer within {timeout_s:g} s (connection refused or nothing listening)"
        raise TargetError(f"{GRPC.text(address)}: unreachable: {cause}") from None
    return ServerInfo(float(answer["time_scale"]), answer["wall_epoch_ms"] + answer["spec_now_ms"], True,
                      f"{answer['server']} {answer['version']}", str(answer["version"]),
                      release=answer.get("release"), namesrv=answer.get("namesrv"))


INDETERMINATE_CODES = frozenset({40800, 50000, 50001, 50002, 50400, 50401, 50402})
"""Answers after which the message may well be stored (issue 50): REQUEST_TIMEOUT, the internal errors, HA_NOT_AVAILABLE
(a SYNC_MASTER stored it and has no slave to copy it to: SLAVE_NOT_AVAILABLE), PROXY_TIMEOUT and the master's or
slave's persistence timeouts (stored, not flushed or not replicated in time: FLUSH_DISK_TIMEOUT,
FLUSH_SLAVE_TIMEOUT). The SDK retries them with the same message id, so any of its attempts may have been
stored."""
SDK_REFUSALS = ("IllegalArgumentException", "IllegalStateException")
"""The SDK's own checks, made before anything is sent: a send they refuse is known not stored."""


def send_outcome_unknown(exc: BaseException) -> bool:
    """Whether a failed send's message may have been stored all the same, so that its outcome is unknown to the
    client (``SEND_UNKNOWN``, Jepsen's ``:info``; issue 50): a transport failure (a deadline, a reset or refused
    connection: no RocketMQ status), or an answer of ``INDETERMINATE_CODES``. A RocketMQ status outside those (a bad
    request, a topic not found, flow control) and the SDK's own refusals are failures (``SEND_FAIL``)."""
    code = _code_of(exc)
    if code != -1:
        return code in INDETERMINATE_CODES
    return type(exc).__name__ not in SDK_REFUSALS


def _code_of(exc: BaseException) -> int:
    """The RocketMQ status code an SDK exception carries; -1 for the SDK's own checks (no code)."""
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) and code else -1


class GrpcTarget(Target):
    """A 5.x proxy through the official Python SDK."""

    def __init__(self, address: str, profile: str = GRPC_5X, *, run_id: str = "run", seed: int = 0,
                 time_scale: float | None = None, budget_s: float | None = None,
                 release: str = versions.LATEST, namesrv: str | None = None,
                 epoch_monotonic: float | None = None, session_tag: str | None = None) -> None:
        """``namesrv``: the name server whose brokers take the set-up (topics with their message type, groups
        with their retry policy) through the remoting admin codes, as mqadmin does; discovered from
        ``rmqc serve`` when it runs one. ``epoch_monotonic``: the ``time.monotonic()`` that is spec time 0
        (another process's, so that two processes' clients log on one clock); by default the instant the
        server answered. ``session_tag``: another target's name tag, to share its topics and groups."""
        if profile != GRPC_5X:
            raise NotApplicable(f"{GRPC.text(address)} speaks the 5.x protocol; profile {profile} needs another target")
        self.address = address
        self.release = release
        self.name = GRPC.text(address)
        self.profile = profile
        self.info = server_info(address)
        self.time_scale = time_scale or self.info.time_scale
        self.wire_scale = 1.0 if self.info.admin else self.time_scale
        """Protocol milliseconds per spec millisecond: ``rmqc serve`` speaks spec time; a real proxy whose release
        the harness compressed through its keys (``release:V``) speaks wall time."""
        self.admin = RemotingAdmin(namesrv or self.info.namesrv) if (namesrv or self.info.namesrv) else None
        self.capabilities = CAPABILITIES | (STORED_WITH_NAMESRV if self.admin else frozenset())
        self.version = self.info.version
        self.client_library = sdk_name_and_version()
        self.budget_s = budget_s or wall_budget_s()
        self.sdk = load_sdk()
        scale_fifo_local_retries(self.time_scale / self.wire_scale)  # the policy's seconds are spec or wall seconds
        self.recorder = EventRecorder(run_id, self.name, profile)
        self._lock = threading.RLock()
        self._t0 = self.info.answered_at if epoch_monotonic is None else epoch_monotonic
        self.names = SessionNames(session_tag)
        self._clients: list[Any] = []
        self._groups: dict[str, dict[str, Any]] = {}
        self._subscriptions: dict[str, tuple[str, frozenset[str]]] = {}  # group -> (topic, tags or empty = all)
        self._sent: dict[str, tuple[str, str | None]] = {}  # msg_id -> (topic, tag)
        self._final: set[tuple[str, str]] = set()           # (group, msg_id) acked or dead-lettered
        self._dlq_seen: set[tuple[str, str]] = set()
        self._deliveries: Counter[tuple[str, str]] = Counter()  # (group, msg_id) -> deliveries seen
        self._open_halves: dict[str, int] = {}  # msg_id -> spec ms of the half or its last check, while unresolved
        self._dlq_readers: dict[str, Any] = {}
        self._anchored: set[str] = set()
        """Groups whose dead-letter reader starts at the first dead letter (``_dlq_anchored``)."""
        self._anchor_tried: dict[str, int] = {}
        self._reader_numbers = itertools.count(1)
        self._config = self.sdk.ClientConfiguration(address, self.sdk.Credentials(), request_timeout=3)

    @property
    def epoch_monotonic(self) -> float:
        """The ``time.monotonic()`` that is spec time 0 for this target's clients."""
        return self._t0

    def wire_seconds(self, spec_ms: int) -> int:
        """A duration as the Python SDK sends it: whole seconds of protocol time (its requests carry
        ``Duration.seconds`` only, so it truncates, RETRY-5X-*'s Python habits). On a compressed real release a
        spec duration that is no whole number of protocol seconds cannot be sent: not applicable."""
        wire_ms = max(0, spec_ms) * self.wire_scale
        if self.wire_scale != 1.0 and abs(wire_ms - round(wire_ms / 1000) * 1000) > 1e-6:
            raise NotApplicable(f"{self.name}: {spec_ms} ms of spec time is {wire_ms:g} ms on the wire at time scale "
                                f"{self.time_scale:g}, and the Python SDK sends whole seconds")
        return int(round(wire_ms)) // 1000

    @property
    def timestamp_step_ms(self) -> int:
        """How far the Python SDK may move a delivery timestamp, in spec ms: it sends whole protocol seconds."""
        return int(round(1000 / self.wire_scale))

    def spec_ms_of_wire(self, wire_ms: float) -> int:
        return int(round(wire_ms / self.wire_scale))

    # ---- names --------------------------------------------------------------------------------

    def real(self, name: str) -> str:
        return self.names.real(name)

    def logical(self, real: str) -> str:
        return self.names.logical(real)

    # ---- time ---------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return int((time.monotonic() - self._t0) * 1000 / self.time_scale)

    def _sleep_spec(self, spec_ms: float) -> None:
        time.sleep(max(0.0, spec_ms * self.time_scale / 1000))

    def advance(self, delta_ms: int) -> None:
        self.require_duration(delta_ms)
        self._sleep_spec(delta_ms)

    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        wanted = timeout_ms * self.time_scale / 1000
        deadline = time.monotonic() + wall_wait_s(wanted, self.budget_s)
        while not predicate():
            if time.monotonic() >= deadline:
                if predicate():
                    return True
                if wanted > 0 and wall_left_s(self.budget_s) == 0:  # the budget, not the timeout, ended it
                    raise budget_cut(self.name, wanted, self.time_scale, self.budget_s)
                return False
            time.sleep(0.002)
        return True

    def require_duration(self, spec_ms: float) -> None:
        """Suites whose ladders would outlast the budget on this target are not applicable."""
        require_wall_budget(self.name, spec_ms, self.time_scale, self.budget_s)

    def settle(self, max_ms: int = SETTLE_LIMIT_MS) -> None:
        """Until every message a push consumer should get is acked or dead-lettered and no FIFO message is
        between local attempts (a redelivered copy can be acked while the first still retries), then a
        short quiet."""
        deadline = time.monotonic() + wall_wait_s(max_ms * self.time_scale / 1000, self.budget_s)
        while time.monotonic() < deadline:
            self._read_dead_letters()
            if not self._pending() and not LOCAL_RETRY_SLEEPS.active and not self._checks_may_come():
                break
            time.sleep(0.005)
        quiet = max(0.05, 20 * self.time_scale)  # 20 spec seconds, at least 50 ms: stray redeliveries show up
        end = min(deadline, time.monotonic() + quiet)
        while time.monotonic() < end:
            time.sleep(0.005)
        self._read_dead_letters(look_now=True)

    def _checks_may_come(self) -> bool:
        """An unresolved half is checked every interval after the transaction timeout; once no check came
        for two intervals past that, the proxy has given up on it (TX-03, TX-04)."""
        now = self.now_ms()
        with self._lock:
            return tx_rules.checks_may_still_come(list(self._open_halves.values()), now, self.release)

    def _pending(self) -> list[tuple[str, str]]:
        with self._lock:
            out = []
            for group, (topic, tags) in self._subscriptions.items():
                for msg_id, (sent_topic, tag) in self._sent.items():
                    if sent_topic == topic and (not tags or tag in tags) and (group, msg_id) not in self._final:
                        out.append((group, msg_id))
            return out

    # ---- events -------------------------------------------------------------------------------

    def emit(self, kind: str, **fields: Any) -> None:
        with self._lock:
            self.recorder.emit(kind, self.now_ms(), **fields)
    
    def events(self) -> list[Event]:
        self._read_dead_letters(look_now=True)
        with self._lock:
            return sorted(self.recorder.events, key=lambda e: (e.ts_ms, e.seq))

    def drain_events(self) -> list[Event]:
        """What was seen since the last drain (dead letters read first), forgotten here: a soak's memory
        stays bounded. A broker that cannot be read now (a nemesis stopped it, issue 50) is read at a later
        drain: the dead letters wait in their topic."""
        try:
            self._read_dead_letters(look_now=True)
        except (RemotingClientError, TargetError) as exc:
            log.info("%s: dead letters not read this time: %s", self.name, exc)
        with self._lock:
            return self.recorder.drain()

    def _wall_of_spec(self, spec_ms: float) -> float:
        return self.info.spec_wall_at_start_ms + spec_ms if self.info.admin else \
            self.info.spec_wall_at_start_ms + spec_ms * self.time_scale

    def delivery_time_sent_ms(self, at_ms: int) -> int:
        """The Python SDK sends a delivery time in whole seconds (``system_properties.delivery_timestamp.seconds``):
        ``at_ms`` as the wall second it falls in, in spec time again, rounded up so that sending it sends that
        same second (at a time scale of 0.2 up to 5 s of spec time earlier than asked)."""
        return math.ceil(self._spec_of_wall(self._wall_of_spec(at_ms) // 1000 * 1000))

    def _spec_of_wall(self, wall_ms: float) -> float:
        return wall_ms - self.info.spec_wall_at_start_ms if self.info.admin else \
            (wall_ms - self.info.spec_wall_at_start_ms) / self.time_scale

    def _spec_ts_of_wall(self, wall_ms: float) -> int:
        return int(self._spec_of_wall(wall_ms))

    def _read_dead_letters(self, look_now: bool = False) -> None:
        """What reached ``%DLQ%<group>`` of the groups this target consumed with; ``look_now``: look for a
        dead-letter topic not found yet at once (a final read), not after ``ANCHOR_RETRY_MS``."""
        for group in list(self._groups):
            reader = self._dlq_reader(group)
            if reader is None or not self._dlq_anchored(group, look_now):
                continue
            while True:
                try:
                    messages = reader.receive(32, 20)
                except Exception:  # the DLQ topic does not exist until the first dead letter
                    break
                if not messages:
                    break
                for m in messages:
                    stored = getattr(m, "_Message__store_timestamp", None)  # no public property in 5.1.2
                    self.log_dead_letter(group, m, self._spec_ts_of_wall(stored) if stored else self.now_ms())
                    try:
                        reader.ack(m)
                    except Exception as exc:
                        log.warning("ack of a dead letter failed: %s", exc)

    def log_dead_letter(self, group: str, message: Any, ts_ms: int, **detail: str) -> None:
        """A DLQ event for ``message`` of ``group`` at ``ts_ms``, once: a forward the push consumer logged
        itself is not logged again by the dead-letter reader."""
        key = (group, message.message_id)
        with self._lock:
            if key in self._dlq_seen:
                return
            self._dlq_seen.add(key)
            self._final.add(key)
            self.recorder.emit("DLQ", ts_ms, topic=f"%DLQ%{group}", group=group, msg_id=message.message_id,
                               key=_key_of(message), message_group=message.message_group,
                               attempt=self._deliveries[key],
                               detail={"reconsume_times": max(0, (message.delivery_attempt or 1) - 1), **detail})

    def _dlq_reader(self, group: str) -> Any | None:
        if group in self._dlq_readers:
            return self._dlq_readers[group]
        reader = self._reader(f"rmqc-dlq-{self.names.tag}", f"%DLQ%{self.real(group)}")
        if reader is not None:
            self._clients.append(reader)
            self._dlq_readers[group] = reader
        return reader

    def _dlq_anchored(self, group: str, look_now: bool = False) -> bool:
        """Whether the dead-letter reader of ``group`` may receive: with a name server known, only once its
        offsets in ``%DLQ%group`` are committed at the first message, which needs the topic to exist. A new
        group's first pop would otherwise start at the last dead letter before 5.1.4 (RETRY-5X-10) and skip
        the earlier ones for good."""
        if self.admin is None or group in self._anchored:
            return True
        now = self.now_ms()
        if not look_now and now - self._anchor_tried.get(group, -ANCHOR_RETRY_MS) < ANCHOR_RETRY_MS:
            return False  # the topic comes with the first dead letter: looked for again a little later
        self._anchor_tried[group] = now
        if self.admin.start_group_at_first(f"%DLQ%{self.real(group)}", f"rmqc-dlq-{self.names.tag}"):
            self._anchored.add(group)
        return group in self._anchored

    def _reader(self, reader_group: str, real_topic: str) -> Any | None:
        """A started SDK simple consumer of ``reader_group`` on ``real_topic``, or None when the topic has no
        route yet (nothing written to it). A message read there may carry many reconsume times (a dead
        letter): the group is given 10,000 retries where a name server takes set-up, so that a pop does not
        dead-letter it again."""
        if self.admin is not None:
            self._remoting_admin(f"configure group {reader_group}",
                                 lambda a: a.create_group(reader_group, 10_000, False, None))
        try:
            reader = self.sdk.SimpleConsumer(self._config, reader_group, {real_topic: self.sdk.FilterExpression()},
                                             await_duration=1)
            reader.startup()
        except Exception as exc:
            log.info("no reader for %s yet: %s", real_topic, exc)
            return None
        return reader

    # ---- stored state (observe.stored, observe.properties) -------------------------------------

    def read_stored(self, topic: str) -> list[MessageView]:
        """Through the SDK: a simple consumer of a group of its own reads ``topic`` until two receives in a
        row are empty, acking what it gets, so the owner group sees no change; with a name server known, that
        group starts at each queue's first message (``start_group_at_first``, RETRY-5X-10). With a name server known,
        each message's system properties come from a remoting pull of the same topic: the 5.x proxy hands a
        gRPC client its user properties only."""
        real = self.real(topic)
        with self._lock:
            group = f"rmqc-read-{self.names.tag}-{next(self._reader_numbers)}"
        reader = self._reader(group, real)
        if reader is None:  # a topic never written stores nothing
            return []
        if self.admin is not None:  # read from the first message whatever the release does with a new group
            self.admin.start_group_at_first(real, group)
        views: list[MessageView] = []
        try:
            empty, deadline = 0, time.monotonic() + wall_left_s(self.budget_s)
            while empty < 2 and time.monotonic() < deadline:
                try:
                    got = reader.receive(32, 30)
                except Exception:
                    got = []
                empty = 0 if got else empty + 1
                for m in got:
                    views.append(_view(self, m, m.delivery_attempt or 1))
                    try:
                        reader.ack(m)
                    except Exception as exc:
                        log.warning("ack of a message read from %s failed: %s", real, exc)
        finally:
            reader.shutdown()
        if self.admin is None:
            return views
        # copies of one message (its retries) share an id: a copy is told apart by its reconsume times too
        pulled = {(_client_id(m), m.reconsume_times): m for m in self.admin.read_topic(real, group)}
        read = [dataclasses.replace(v, properties={**pulled[(v.msg_id, v.reconsume_times)].properties, **v.properties})
                if (v.msg_id, v.reconsume_times) in pulled else v for v in views]
        # what the SDK could not read: a topic the name server has no route for (5.0.0's pop retry topics)
        seen = {(v.msg_id, v.reconsume_times) for v in views}
        return read + [_pulled_view(self, m) for key, m in pulled.items() if key not in seen]

    # ---- admin --------------------------------------------------------------------------------

    def _remoting_admin(self, what: str, action: Callable[[RemotingAdmin], None], courtesy: bool = False) -> None:
        """Set-up through the name server's brokers, as mqadmin does; with no name server known (a real proxy
        and no ``--namesrv``) the test is not applicable. ``courtesy``: a step the harness takes on its own
        account before a client starts; a broker's refusal (an illegal group name) is left for the client to
        meet, which is what a test of that name observes."""
        if self.admin is None:
            raise NotApplicable(f"{self.name}: no name server to set up through (give --namesrv); "
                                f"{what} with mqadmin first")
        try:
            action(self.admin)
        except AdminRefused as exc:
            if not courtesy:
                raise TargetError(f"{self.name}: {what} through the name server failed: {exc}") from None
            log.info("%s: %s refused; the client meets the broker as it is: %s", self.name, what, exc)
        except RemotingClientError as exc:
            raise TargetError(f"{self.name}: {what} through the name server failed: {exc}") from None

    def create_topic(self, name: str, *, read_queues: int = 4, write_queues: int = 4, perm: int = 6,
                     message_type: str = "NORMAL", brokers: int = 1) -> None:
        """On the first ``brokers`` masters by name through the admin codes, as ``mqadmin updateTopic -b`` on each
        (a release cluster of several masters, ``rmqc serve --brokers N``); fewer masters than that: not
        applicable."""
        if brokers > 1:
            known: list[tuple[str, str]] = []
            self._remoting_admin("list the masters", lambda a: known.extend(a.broker_table()))
            if len(known) < brokers:
                raise NotApplicable(f"{self.name}: a topic on {brokers} brokers, and the name server knows "
                                    f"{len(known)} masters")
        real = self.real(name)
        self._remoting_admin(f"create topic {real} ({read_queues}/{write_queues} queues, {message_type})",
                             lambda a: a.create_topic(real, read_queues, write_queues, perm, message_type, brokers))

    def configure_group(self, name: str, *, retry_max_times: int = 16, fifo: bool = False,
                        retry_policy: str = "CUSTOMIZED", retry_queue_nums: int = 1,
                        retry_ladder_ms: Sequence[int] | None = None, courtesy: bool = False) -> None:
        """``courtesy``: the harness's own set-up of a group a client is about to use (``_ensure_group``)."""
        settings = {"name": self.real(name), "retry_max_times": retry_max_times, "fifo": fifo,
                    "retry_policy": retry_policy}
        self._remoting_admin(f"configure group {settings['name']}", lambda a: a.create_group(
            settings["name"], retry_max_times, fifo, retry_policy, retry_ladder_ms, retry_queue_nums), courtesy)
        self._groups.setdefault(name, {}).update(settings)

    # ---- clients ------------------------------------------------------------------------------

    def producer(self, group: str = "P", **options: object) -> "GrpcProducer":
        sdk = options.pop("sdk", "python")
        if sdk != "python":
            raise NotApplicable(f"{self.name} drives the Python SDK, not the {sdk} one")
        producer = self.sdk.Producer(self._config, tls_enable=False)
        self._start(producer)
        return GrpcProducer(self, producer)

    def transaction_producer(self, group: str, check: Callable[[str | None, int], LocalTransactionState | None],
                             topics: Sequence[str] = ()) -> "GrpcTransactionProducer":
        """The SDK's producer with a checker, declaring ``topics`` (TX-07). The Python SDK declares a topic it sends
        to at its next settings sync, the first one second after start, then every 300 s (TX-07's Python habit):
        a producer asked to declare none is returned once that first sync is past, so that it declares none."""
        self.require("transactions")
        handle = GrpcTransactionProducer(self, check)
        producer = self.sdk.Producer(self._config, topics=[self.real(t) for t in topics] or None,
                                     checker=handle.checker(), tls_enable=False)
        started = time.monotonic()
        self._start(producer)
        handle.producer = producer
        if not topics:
            time.sleep(max(0.0, started + PYTHON_FIRST_SETTINGS_SYNC_S + 0.5 - time.monotonic()))
        return handle

    def push_consumer_4x(self, group: str, topic: str, listener: Listener, **options: Any) -> Any:
        raise NotApplicable(f"{self.name} is a 5.x proxy; 4.x push consumers need the remoting protocol")

    def _ensure_group(self, group: str) -> None:
        """Before a consumer of ``group`` starts: nothing here (a target that must set every group up first
        overrides it)."""

    def simple_consumer_5x(self, group: str, topic: str, *, expression: str = "*") -> "GrpcSimpleConsumer":
        self._ensure_group(group)
        self._groups.setdefault(group, {})
        consumer = self._consumer(lambda: self.sdk.SimpleConsumer(
            self._config, self.real(group), {self.real(topic): self._filter(expression)}, await_duration=1))
        return GrpcSimpleConsumer(self, consumer, group, topic)

    def push_consumer_5x(self, group: str, topic: str, listener: Listener, *, sdk: str = "python",
                         expression: str = "*") -> "GrpcPushConsumer":
        self.require("consumer.push5x", f"sdk.{sdk}")
        self._ensure_group(group)
        self._groups.setdefault(group, {})
        tags = frozenset(t.strip() for t in expression.split("||") if t.strip()) if expression not in ("", "*") \
            else frozenset()
        with self._lock:
            self._subscriptions[group] = (topic, tags)
        handle = GrpcPushConsumer(self, group, topic, listener)
        handle.consumer = self._consumer(lambda: _recording_push_consumer(self.sdk)(
            handle, self._config, self.real(group), handle, {self.real(topic): self._filter(expression)}))
        self._wait_receiving(handle.consumer)
        return handle

    def _wait_receiving(self, consumer: Any, timeout_s: float = 15.0) -> None:
        """A push consumer is ready once its assignment arrived and its first receive is out (the SDK
        scans assignments a second after start); until then no delivery time means anything."""
        deadline = time.monotonic() + timeout_s
        while not getattr(consumer, "_PushConsumer__process_queues", None) or \
                not consumer._PushConsumer__process_queues.values():
            if time.monotonic() >= deadline:
                raise TargetError(f"{self.name}: the push consumer got no queue assignment within {timeout_s:g} s")
            time.sleep(0.01)

    def _filter(self, expression: str) -> Any:
        return self.sdk.FilterExpression(expression or "*")

    def _consumer(self, build: Callable[[], Any]) -> Any:
        client = _sdk_call(build)
        self._start(client)
        return client

    def _start(self, client: Any) -> None:
        try:
            client.startup()
        except Exception as exc:
            raise TargetError(f"{self.name}: {type(client).__name__} failed to start: {exc}") from None
        self._clients.append(client)

    def close(self) -> None:
        for client in reversed(self._clients):
            try:
                client.shutdown()
            except Exception as exc:  # a client that never fully started
                log.info("shutdown of %s: %s", client, exc)
        self._clients.clear()


class _SdkError(RocketMQError):
    """An SDK call that failed: its RocketMQ status code (-1 for the SDK's own argument checks)."""


def _sdk_call(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except (_SdkError, NotApplicable):
        raise
    except Exception as exc:
        raise _SdkError(_code_of(exc), str(exc)) from None


class GrpcProducer:
    def __init__(self, target: GrpcTarget, producer: Any) -> None:
        self.target, self.producer = target, producer
        self._seq: dict[str | None, itertools.count] = {}

    def send(self, topic: str, body: bytes = b"", *, key: str | None = None, tags: str | None = None,
             message_group: str | None = None, delay_level: int = 0, delivery_timestamp_ms: int | None = None,
             properties: dict[str, str] | None = None, mode: str = "sync") -> SendResult:
        t = self.target
        if delay_level:
            raise NotApplicable(f"{t.name}: the 5.x SDK has no delay levels (use delivery timestamps)")
        if mode not in ("sync", "async"):
            raise NotApplicable(f"{t.name}: the Python 5.x SDK has no {mode} send")
        seq = next(self._seq.setdefault(message_group, itertools.count()))
        common = dict(topic=topic, key=key, message_group=message_group, producer_seq=seq)
        t.emit("SEND_INVOKE", **common, detail={"mode": mode, "sdk": "python"})
        message = None
        try:
            message = self._message(topic, body, key, tags, message_group, delivery_timestamp_ms, properties)
            receipt = self.producer.send(message) if mode == "sync" else self.producer.send_async(message).result()
        except Exception as exc:
            code = _code_of(exc)
            t.emit("SEND_UNKNOWN" if send_outcome_unknown(exc) else "SEND_FAIL", **common,
                   msg_id=getattr(message, "message_id", None) or None,  # the id its attempts carried
                   detail={"code": code, "remark": str(exc)[:300], "error": type(exc).__name__})
            raise _SdkError(code, str(exc)) from None
        with t._lock:
            t._sent[receipt.message_id] = (topic, tags)
        # a timed message's SEND_OK carries the wait to the delivery time the client sent (DELAY-08)
        timed = None if delivery_timestamp_ms is None else \
            max(0, t.delivery_time_sent_ms(delivery_timestamp_ms) - t.now_ms()) or None
        t.emit("SEND_OK", **common, msg_id=receipt.message_id, queue_offset=receipt.offset, expected_delay_ms=timed,
               detail={"mode": mode, "status": "SEND_OK"})
        return SendResult("SEND_OK", receipt.message_id, topic, None, receipt.offset)

    def _message(self, topic: str, body: bytes, key: str | None, tags: str | None, message_group: str | None,
                 delivery_timestamp_ms: int | None, properties: dict[str, str] | None) -> Any:
        """The SDK's ``Message``; its setters make the SDK's own argument checks (LIMIT-03, LIMIT-04, LIMIT-06)."""
        t = self.target
        message = t.sdk.Message()
        message.topic = t.real(topic)
        message.body = body
        if key:
            message.keys = key
        if tags:
            message.tag = tags
        if message_group:
            message.message_group = message_group
        if properties:
            for k, v in properties.items():
                message.add_property(k, v)
        if delivery_timestamp_ms is not None:  # whole seconds: see GrpcTarget.delivery_time_sent_ms
            message.delivery_timestamp = int(t._wall_of_spec(delivery_timestamp_ms) // 1000)
        return message

    def send_batch(self, messages: Any) -> list[SendResult]:
        raise NotApplicable(f"{self.target.name}: the Python 5.x SDK sends one message per request")


class GrpcTransactionProducer(GrpcProducer):
    """Half message, local decision, ``EndTransaction``; the proxy's checks reach ``check`` through the
    SDK's ``TransactionChecker`` on the Telemetry stream (TX-01..04). Broker-side transitions (the
    half and op topics, the discard after the last check) are not observable through the SDK."""

    def __init__(self, target: GrpcTarget, check: Callable[[str | None, int], LocalTransactionState | None]) -> None:
        super().__init__(target, None)
        self.check = check
        self._check_times: dict[str, int] = {}
        self._keys: dict[str, str | None] = {}

    def checker(self) -> Any:
        sdk, producer = self.target.sdk, self

        class ScriptedChecker(sdk.TransactionChecker):  # type: ignore[misc, name-defined]
            def check(self, message: Any) -> Any:
                return producer._answer_check(message)

        return ScriptedChecker()

    def _answer_check(self, message: Any) -> Any:
        from rocketmq.grpc_protocol import TransactionResolution

        t = self.target
        msg_id = message.message_id
        with t._lock:
            n = self._check_times[msg_id] = self._check_times.get(msg_id, 0) + 1
            if msg_id in t._open_halves:
                t._open_halves[msg_id] = t.now_ms()
            key = self._keys.get(msg_id, _key_of(message))
        common = dict(topic=t.logical(message.topic), msg_id=msg_id, key=key)
        t.emit("TX_CHECK", **common, detail={"check_times": n})
        try:
            state = self.check(key, n)
        except Exception as exc:  # a failing script is an UNKNOW answer, as the SDK would treat it
            log.warning("transaction check script failed for %s: %s", key, exc)
            state = None
        if state is LocalTransactionState.COMMIT_MESSAGE:
            self._committed(msg_id, message.topic)
        if state in (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE):
            t.emit("TX_END", **common, detail={"state": state.value, "source": "SERVER_CHECK"})
            return TransactionResolution.COMMIT if state is LocalTransactionState.COMMIT_MESSAGE \
                else TransactionResolution.ROLLBACK
        return TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED  # the proxy reads it as UNKNOWN

    def _committed(self, msg_id: str, real_topic: str) -> None:
        """From now on a subscribed group should get the message (settle waits for it)."""
        t = self.target
        with t._lock:
            t._sent[msg_id] = (t.logical(real_topic), None)
            t._open_halves.pop(msg_id, None)

    def send_in_transaction(self, topic: str, body: bytes = b"", *, key: str | None = None,
                            local_state: LocalTransactionState | None = None,
                            immunity_seconds: int | None = None) -> SendResult:
        t = self.target
        if immunity_seconds is not None:
            raise NotApplicable(f"{t.name}: the Python 5.x SDK sets no check immunity time")
        message = self._message(topic, body, key, None, None, None, None)
        transaction = self.producer.begin_transaction()
        t.emit("SEND_INVOKE", topic=topic, key=key, detail={"mode": "transaction", "sdk": "python"})
        try:
            receipt = self.producer.send(message, transaction)
        except Exception as exc:
            # a half whose outcome is unknown may be stored: the broker's check then decides it (TX-03)
            t.emit("SEND_UNKNOWN" if send_outcome_unknown(exc) else "SEND_FAIL", topic=topic, key=key,
                   msg_id=getattr(message, "message_id", None) or None,
                   detail={"code": _code_of(exc), "remark": str(exc)[:300], "error": type(exc).__name__})
            raise _SdkError(_code_of(exc), str(exc)) from None
        common = dict(topic=topic, msg_id=receipt.message_id, key=key)
        with t._lock:
            self._keys[receipt.message_id] = key
            t._open_halves[receipt.message_id] = t.now_ms()
        t.emit("TX_HALF", **common, detail={"real_topic": topic, "transaction_id": receipt.transaction_id})
        if local_state is LocalTransactionState.COMMIT_MESSAGE:
            self._committed(receipt.message_id, message.topic)
            transaction.commit()
        elif local_state is LocalTransactionState.ROLLBACK_MESSAGE:
            with t._lock:
                t._open_halves.pop(receipt.message_id, None)
            transaction.rollback()
        if local_state in (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE):
            t.emit("TX_END", **common, detail={"state": local_state.value, "source": "CLIENT"})
        return SendResult("SEND_OK", receipt.message_id, topic, None, receipt.offset)


def _client_id(message: Any) -> str:
    """The id a client is given for a pulled message: its UNIQ_KEY (MSGID-02), else the topic and offset."""
    return message.properties.get("UNIQ_KEY") or f"{message.topic}@{message.queue_id}:{message.queue_offset}"


def _key_of(message: Any) -> str | None:
    """The first of an SDK message's keys (the suites send one), or None."""
    return next(iter(message.keys), None) if message.keys else None


def _view(target: GrpcTarget, m: Any, attempt: int) -> MessageView:
    props = dict(m.properties or {})
    return MessageView(m.message_id, target.logical(m.topic), _key_of(m), m.tag,
                       m.body, max(0, (m.delivery_attempt or 1) - 1), attempt, -1, -1, target.logical(m.topic),
                       m.message_group, props, m.receipt_handle)


def _pulled_view(target: GrpcTarget, m: Any) -> MessageView:
    """A stored message read by a remoting pull (``RemotingAdmin.read_topic``) as the suites see a message."""
    props = dict(m.properties)
    key = next(iter(props.get("KEYS", "").split()), None)
    return MessageView(_client_id(m), target.logical(m.topic), key, props.get("TAGS"), m.body, m.reconsume_times,
                       m.reconsume_times + 1, m.queue_id, m.queue_offset, target.logical(m.topic),
                       props.get("__SHARDINGKEY"), props)


SIMPLE_HANDLES_KEPT = 65_536
ANCHOR_RETRY_MS = 1000
"""Spec ms between two looks for a group's dead-letter topic, which exists once its first dead letter does."""


class GrpcSimpleConsumer:
    """receive / ack / change_invisible_duration with codes, as the reference's simple consumer answers."""

    def __init__(self, target: GrpcTarget, consumer: Any, group: str, topic: str) -> None:
        self.target, self.consumer, self.group, self.topic = target, consumer, group, topic
        self._messages: collections.OrderedDict[str, Any] = collections.OrderedDict()
        """Receipt handle -> the SDK's message, every handle a view was given (a suite acks a stale one on
        purpose); the oldest forgotten past SIMPLE_HANDLES_KEPT, so a long soak stays bounded."""

    def receive(self, max_messages: int = 16, invisible_ms: int = 30_000) -> list[MessageView]:
        t = self.target

        def call() -> list[Any]:
            try:
                return self.consumer.receive(max_messages, t.wire_seconds(invisible_ms))
            except Exception as exc:
                if _code_of(exc) != 50001:
                    raise
                log.warning("receive before settings arrived (5.0.0 proxy race): retrying once in 1 s")
                time.sleep(1)
                return self.consumer.receive(max_messages, t.wire_seconds(invisible_ms))

        t.wire_seconds(invisible_ms)  # a duration the SDK cannot send is not applicable, before anything is asked
        views = []
        for m in _sdk_call(call):
            view = _view(t, m, m.delivery_attempt)
            self._keep(m.receipt_handle, m)
            t.emit("DELIVER", topic=view.topic, group=self.group, msg_id=m.message_id, key=view.key,
                   message_group=view.message_group, attempt=view.delivery_attempt)
            views.append(view)
        return views

    def _with_handle(self, view: MessageView) -> Any:
        """The SDK's message carrying the view's own receipt handle: the SDK moves a message object on to the
        handle a change of invisible time returned, while a caller may hold on to the old one (RETRY-5X-09)."""
        message = copy.copy(self._messages[view.receipt_handle])  # type: ignore[index]
        message.receipt_handle = view.receipt_handle
        return message

    def ack(self, view: MessageView) -> int:
        message = self._with_handle(view)
        try:
            self.consumer.ack(message)
        except Exception as exc:
            return _code_of(exc)
        self.target.emit("ACK", topic=view.topic, group=self.group, msg_id=view.msg_id, key=view.key,
                         attempt=view.delivery_attempt)
        with self.target._lock:
            self.target._final.add((self.group, view.msg_id))
        return 20000

    def _keep(self, handle: str, message: Any) -> None:
        self._messages[handle] = message
        while len(self._messages) > SIMPLE_HANDLES_KEPT:
            self._messages.popitem(last=False)

    def change_invisible_duration(self, view: MessageView, invisible_ms: int) -> tuple[int, str | None]:
        message = self._with_handle(view)
        seconds = self.target.wire_seconds(invisible_ms)
        try:
            self.consumer.change_invisible_duration(message, seconds)
        except Exception as exc:
            return _code_of(exc), None
        self._keep(message.receipt_handle, message)
        return 20000, message.receipt_handle

    def shutdown(self) -> None:
        """Shut down with the target."""


_RECORDING: dict[int, type] = {}


def _recording_push_consumer(sdk: Any) -> type:
    """The SDK's PushConsumer with its ack and nack calls recorded as they succeed."""
    if id(sdk) in _RECORDING:
        return _RECORDING[id(sdk)]

    class RecordingPushConsumer(sdk.PushConsumer):  # type: ignore[name-defined,misc]
        def __init__(self, handle: "GrpcPushConsumer", *args: Any) -> None:
            super().__init__(*args)
            self._rmqc = handle

        def _ack(self, message: Any) -> None:
            super()._ack(message)
            self._rmqc.acked(message)

        def _change_invisible_duration(self, message: Any, invisible_duration: Any) -> None:
            super()._change_invisible_duration(message, invisible_duration)
            self._rmqc.nacked(message, invisible_duration)

        def _PushConsumer__forward_message_to_dead_letter_queue(self, message: Any) -> None:
            # the SDK's private forward (a FIFO message past its attempts, RETRY-5X-08), timed on the client
            sdk.PushConsumer._PushConsumer__forward_message_to_dead_letter_queue(self, message)
            self._rmqc.forwarded(message)

    _RECORDING[id(sdk)] = RecordingPushConsumer
    return RecordingPushConsumer


class GrpcPushConsumer:
    """The SDK's PushConsumer; this object is its MessageListener and records what the SDK does."""

    def __init__(self, target: GrpcTarget, group: str, topic: str, listener: Listener) -> None:
        self.target, self.group, self.topic, self.listener = target, group, topic, listener
        self.consumer: Any = None
        self._local: dict[tuple[str, str], int] = {}

    def consume(self, message: Any) -> Any:
        t = self.target
        fifo = bool(message.message_group) and bool(t._groups.get(self.group, {}).get("fifo"))
        if fifo:  # the Python SDK counts local FIFO attempts from 1 (RETRY-5X-08)
            handle = (message.message_id, message.receipt_handle)
            attempt = self._local[handle] = self._local.get(handle, 0) + 1
        else:
            attempt = message.delivery_attempt
        view = _view(t, message, attempt)
        with t._lock:
            t._deliveries[(self.group, message.message_id)] += 1
        t.emit("DELIVER", topic=view.topic, group=self.group, msg_id=view.msg_id, key=view.key,
               message_group=view.message_group, attempt=attempt,
               detail={"reconsume_times": view.reconsume_times})
        try:
            outcome = self.listener(view)
        except Exception as exc:
            outcome = ListenerOutcome.EXCEPTION
            log.info("listener raised %s", exc)
        ok = outcome is ListenerOutcome.SUCCESS
        t.emit("CONSUME_OK" if ok else "CONSUME_FAIL", topic=view.topic, group=self.group, msg_id=view.msg_id,
               key=view.key, attempt=attempt, detail={"outcome": outcome.value})
        return t.sdk.ConsumeResult.SUCCESS if ok else t.sdk.ConsumeResult.FAILURE

    def acked(self, message: Any) -> None:
        t = self.target
        key = _key_of(message)
        with t._lock:
            t._final.add((self.group, message.message_id))
        t.emit("ACK", topic=t.logical(message.topic), group=self.group, msg_id=message.message_id, key=key,
               attempt=message.delivery_attempt)

    def forwarded(self, message: Any) -> None:
        """The SDK forwarded the message to the dead-letter queue: logged now, on the client's clock, so that
        it comes before what the consumer does next (the DLQ copy's store time is on the server's clock);
        the dead-letter reader then skips it."""
        self.target.log_dead_letter(self.group, message, self.target.now_ms(),
                                    via="forward_message_to_dead_letter_queue")

    def nacked(self, message: Any, invisible_s: float) -> None:
        t = self.target
        key = _key_of(message)
        t.emit("RETRY_SCHEDULED", topic=t.logical(message.topic), group=self.group, msg_id=message.message_id,
               key=key, attempt=message.delivery_attempt + 1, expected_delay_ms=t.spec_ms_of_wire(invisible_s * 1000),
               detail={"via": "change_invisible_duration"})

    def shutdown(self) -> None:
        """Shut down with the target (the SDK's shutdown also notifies the server)."""




def build(address: str, profile: str, **options: object) -> GrpcTarget:
    """A target of the ``grpc://HOST:PORT`` kind (``adapters.targets``)."""
    return GrpcTarget(address, profile, **options)  # type: ignore[arg-type]


def probe(address: str) -> Probe:
    """Reach the proxy once: it runs the 5.x profile, on a wall clock."""
    info = server_info(address)
    return Probe((GRPC_5X,), "wall", info.version, release=info.release)


__all__ = ["GrpcTarget", "build", "probe", "server_info", "admin_call", "ServerInfo"]
