"""The ``Target`` interface every adapter implements, and the errors and capabilities around it.

A suite talks only to this interface. A capability a target lacks turns the test into "not
applicable" with the target's reason, never into a pass.
"""
from __future__ import annotations

import abc
import os
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from history.events import Event
from history.outcomes import NotApplicable
from history.values import SEND_OUTCOMES, SETTLE_LIMIT_MS, LocalTransactionState
from history.views import Listener, MessageView, SendResult

CAPABILITIES = {
    "clock.virtual": "time can be advanced instantly (a virtual clock)",
    "send.sync": "synchronous send", "send.async": "asynchronous send", "send.oneway": "one-way send",
    "send.batch": "batch send",
    "delay.level": "4.x delay levels", "delay.timer": "5.x delivery timestamps",
    "consumer.push4x.concurrent": "4.x push consumer, concurrent", "consumer.push4x.orderly": "4.x push consumer, orderly",
    "consumer.push4x.broadcast": "4.x broadcasting consumption",
    "consumer.allocation": "a 4.x push consumer's allocation strategy can be chosen by name (allocation: AVG, "
                           "AVG_BY_CIRCLE, CONSISTENT_HASH, MACHINE_ROOM_NEARBY, CONFIG, MACHINE_ROOM) and its "
                           "allocation read back",
    "consumer.suspend_time": "a 4.x orderly consumer's suspend time can be set (suspendCurrentQueueTimeMillis)",
    "consumer.simple5x": "5.x simple consumer", "consumer.push5x": "5.x push consumer",
    "consumer.push5x.fifo": "5.x FIFO push consumer",
    "sdk.java": "can act as the Java 5.x SDK", "sdk.python": "can act as the Python 5.x SDK",
    "sdk.nodejs": "the official Node.js 5.x SDK (rocketmq-client-nodejs): its habits SDK-NODE-*",
    "sdk.go": "the official Go 5.x SDK (github.com/apache/rocketmq-clients/golang/v5): its habits SDK-GO-*",
    "transactions": "transactional messages with a scripted check",
    "inspect.broker": "broker internals (schedule topic, DLQ contents, properties) can be read",
    "fault.send_back": "CONSUMER_SEND_MSG_BACK failures can be injected",
    "fault.retry_republish": "failures of the client's retry-topic republish can be injected",
    "fault.send": "broker faults on sends (unreachable, timeout, SYSTEM_BUSY, ...) can be injected",
    "topic.multi_broker": "a topic can span several brokers",
    "consumer.filter.tag": "tag subscriptions", "consumer.filter.sql": "SQL92 subscriptions",
    "consumer.crash": "a consumer can vanish without a clean shutdown and without closing its connections "
                      "(the broker notices only when its channel expires)",
    "observe.queue_id": "the queue a sent message was stored in is observable by the client",
    "observe.offset": "the consume offset the broker stores for a group and queue can be queried",
    "observe.stored": "what a topic stores (a retry or dead-letter topic too) can be read by an ordinary consumer "
                      "of a group of its own, as a client sees it: topic, id, key, tags, body, reconsume times",
    "observe.properties": "a message read back shows the system properties a remoting client sees (RETRY_TOPIC, "
                          "ORIGIN_MESSAGE_ID, REAL_TOPIC, REAL_QID, DELAY, ...); a 5.x proxy hands a client its "
                          "user properties only",
    "observe.query": "stored messages can be looked up by key or by id (the QUERY_MESSAGE and VIEW_MESSAGE_BY_ID "
                     "request codes)",
    "observe.client_offsets": "the offsets a 4.x client commits locally are events (OFFSET_COMMIT)",
    "send.orderly": "4.x ordered send: the queue chosen by a sharding key",
    "consumer.broker_locks": "a 4.x orderly consumer takes a queue only under the broker's lock (LOCK_BATCH_MQ at "
                             "each rebalance, ORDER-4X-04); the reference's consumers take no lock",
    "send.latency_fault": "a 4.x producer with the client's latency fault tolerance on (sendLatencyFaultEnable, "
                          "SEND-4X-06, SEND-4X-07); the reference's producers run with it off",
    "sdk.java4x": "the official Java 4.x client (rocketmq-client 4.9.8): the catalog's 4.x client behaviours are its "
                  "own, so other clients' habits (SDK-CPP-*) are not shown by it",
    "sdk.cpp4x": "the 4.x C++ client (rocketmq-client-cpp, under rocketmq-client-python): its habits SDK-CPP-*",
}


BUDGET_ENV = "RMQC_BUDGET_S"
DEFAULT_BUDGET_S = 120.0


def wait_by_steps(predicate: Callable[[], bool], timeout_ms: int, now_ms: int,
                  step_until: Callable[[int], bool]) -> bool:
    """Wait on a virtual clock: run pending actions one at a time (``step_until(deadline)`` runs one due by then,
    or moves the clock there and answers False) until ``predicate()`` holds or ``timeout_ms`` pass."""
    deadline = now_ms + timeout_ms
    while not predicate():
        if not step_until(deadline):
            return predicate()
    return True


def wall_budget_s() -> float:
    """Wall seconds one test may take on a wall-clock target (``rmqc run --budget`` sets ``RMQC_BUDGET_S``)."""
    return float(os.environ.get(BUDGET_ENV) or DEFAULT_BUDGET_S)


BUDGET_SLACK_S = 30.0
"""What a test may outlive its budget by on a wall-clock target (issue 55): every wait and advance is held to
what is left of the budget, so only the calls between them run past it, each bounded by its own timeout (a
client's start, a send: the SDKs' 3-10 s; a driver's answer: ``RMQC_DRIVER_TIMEOUT_S``)."""
_TEST_CLOCK: list[float | None] = [None]
"""When the running test started (``time.monotonic``), while a test runs; None outside tests (a soak, a bench
keep their own bounds)."""


def start_test_clock() -> None:
    """A test starts: its budget is counted from now (the suites' plugin calls it at each test's set-up)."""
    _TEST_CLOCK[0] = time.monotonic()


def stop_test_clock() -> None:
    _TEST_CLOCK[0] = None


def wall_left_s(budget_s: float) -> float:
    """The wall seconds the running test has left of ``budget_s``; all of it outside a test."""
    started = _TEST_CLOCK[0]
    return budget_s if started is None else max(0.0, budget_s - (time.monotonic() - started))


def _needs(name: str, wall: float, time_scale: float, budget_s: float) -> str:
    left = wall_left_s(budget_s)
    used = f", {budget_s - left:,.0f} s of it used" if left < budget_s else ""
    return (f"needs {wall:,.0f} s of wall time on {name} at its time scale {time_scale:g}; budget {budget_s:,.0f} s"
            f"{used}")


def require_wall_budget(name: str, spec_ms: float, time_scale: float, budget_s: float) -> None:
    """Not applicable when ``spec_ms`` of spec time would take longer than what is left of ``budget_s`` on a
    wall-clock target (issue 55): decided before the wait, never after it."""
    wall = spec_ms * time_scale / 1000
    if wall > wall_left_s(budget_s):
        raise NotApplicable(f"{spec_ms / 1000:,.0f} s of spec time " + _needs(name, wall, time_scale, budget_s))


def wall_wait_s(wanted_s: float, budget_s: float) -> float:
    """A wait of ``wanted_s`` wall seconds, cut to what is left of the test's budget."""
    return max(0.0, min(wanted_s, wall_left_s(budget_s)))


def budget_cut(name: str, wanted_s: float, time_scale: float, budget_s: float) -> NotApplicable:
    """A wait the budget cut short and whose condition did not hold by then: the test cannot tell."""
    return NotApplicable(f"a wait {_needs(name, wanted_s, time_scale, budget_s)}; the condition did not hold "
                         f"before the budget ran out")


class TargetError(Exception):
    """A target cannot be created or reached; one line with the address and the cause."""


class ProducerHandle(Protocol):
    def send(self, topic: str, body: bytes = b"", *, key: str | None = None, tags: str | None = None,
             message_group: str | None = None, delay_level: int = 0, delivery_timestamp_ms: int | None = None,
             mode: str = "sync") -> SendResult: ...

    def send_batch(self, messages: Sequence[Mapping[str, object]]) -> list[SendResult]: ...


class ConsumerHandle(Protocol):
    def shutdown(self) -> None: ...


@dataclass(frozen=True)
class BrokerTiming:
    """What a target's server was configured with, in spec ms, where a real release could not take the spec's
    defaults exactly at its time scale (``adapters.release_plan``): its ``messageDelayLevel`` table (a level
    under a second after scaling is one second) and the retry ladder its consumer groups get by default (whole
    protocol seconds, which every SDK can carry), and the durations it cannot compress. ``None``: the spec's default. The oracle and the reference's
    prediction use these (``suites.oracle.oracle_for``), so a test judges what the harness configured."""

    delay_levels_ms: tuple[int, ...] | None = None
    customized_next_ms: tuple[int, ...] | None = None
    revive_lag_ms: int | None = None
    """RETRY-5X-11's revive lag in spec ms where the release reads it from no key: its 2 wall seconds are
    ``2000 / time_scale`` of spec time on a time-scaled release."""
    revive_slack_ms: int | None = None
    """RETRY-5X-11's scan slack in spec ms where the release does not compress all of it (``ReleasePlan``)."""

    @property
    def is_default(self) -> bool:
        return self.delay_levels_ms is None and self.customized_next_ms is None and self.revive_lag_ms is None \
            and self.revive_slack_ms is None


DEFAULT_TIMING = BrokerTiming()


class Target(abc.ABC):
    """A system under test: the reference, a proxy, a container or a driver process."""

    name: str
    profile: str
    capabilities: frozenset[str]
    time_scale: float = 1.0
    client_timer_scale: float = 1.0
    """Spec ms per ms of an SDK's own timer (an orderly local retry, say): 1 where the client's timers run on
    spec time; ``1 / time_scale`` where an SDK on the wall clock meets a server on a time scale."""
    version: str | None = None
    """The product version under test (for expectation files' ``when.version``), when the target tells it."""
    client_library: tuple[str, str | None] | None = None
    """The SDK the target drives, ``(name, version)``: a column of the SDK × server matrix."""
    broker_timing: BrokerTiming = DEFAULT_TIMING
    """The server's configured delay table and default retry ladder where they differ from the spec's."""

    def notes(self) -> list[str]:
        """What the target saw of its own clients that a failure's reader needs besides the failure (a consumer
        that had not taken its queues when the harness went on); a failing test's reason carries them."""
        return list(getattr(self, "_notes", ()))

    def note(self, text: str) -> None:
        """Keep one of ``notes``."""
        self._notes = [*getattr(self, "_notes", ()), text]

    def require(self, *capabilities: str) -> None:
        missing = [c for c in capabilities if c not in self.capabilities]
        if missing:
            raise NotApplicable(f"target {self.name} lacks {', '.join(missing)} "
                                f"({'; '.join(CAPABILITIES.get(c, c) for c in missing)})")

    # topics and groups
    @abc.abstractmethod
    def create_topic(self, name: str, *, read_queues: int = 4, write_queues: int = 4, perm: int = 6,
                     message_type: str = "NORMAL", brokers: int = 1) -> None: ...

    @abc.abstractmethod
    def configure_group(self, name: str, *, retry_max_times: int = 16, fifo: bool = False,
                        retry_policy: str = "CUSTOMIZED", retry_queue_nums: int = 1,
                        retry_ladder_ms: Sequence[int] | None = None) -> None:
        """``retry_ladder_ms``: a 5.x group's customized retry ladder (``customizedRetryPolicy.next``,
        RETRY-5X-01), set through the broker's own configuration; a target that cannot set it raises
        NotApplicable."""

    # clients
    @abc.abstractmethod
    def producer(self, group: str = "P", **options: object) -> ProducerHandle:
        """Options: ``sdk`` (java | python, 5.x), ``version`` (4.9.8 | 5.3.0), ``retry_times``,
        ``retry_another_broker_when_not_store_ok``."""

    @abc.abstractmethod
    def transaction_producer(self, group: str, check: Callable[[str | None, int], LocalTransactionState | None],
                             topics: Sequence[str] = ()) -> object:
        """A transactional producer answering checks with ``check``. ``topics`` are the topics it declares:
        a 5.x proxy sends a half's checks only to a producer that declared the half's topic (TX-07)."""

    @abc.abstractmethod
    def push_consumer_4x(self, group: str, topic: str, listener: Listener, *, orderly: bool = False,
                         broadcasting: bool = False, max_reconsume_times: int = -1, suspend_ms: int = 1000,
                         expression: str = "*", expression_type: str = "TAG",
                         consume_from_where: str = "CONSUME_FROM_LAST_OFFSET",
                         consume_timestamp_ms: int | None = None) -> ConsumerHandle: ...

    @abc.abstractmethod
    def simple_consumer_5x(self, group: str, topic: str, *, expression: str = "*") -> object: ...

    @abc.abstractmethod
    def push_consumer_5x(self, group: str, topic: str, listener: Listener, *, sdk: str = "java",
                         expression: str = "*") -> ConsumerHandle: ...

    def update_topic(self, name: str, *, read_queues: int, write_queues: int) -> None:
        """Change a topic's queue numbers (TOPIC-03)."""
        raise NotApplicable(f"target {self.name} cannot change topics")

    def configure_broker(self, **settings: object) -> None:
        """Broker settings a suite may need, e.g. ``enable_property_filter=True``."""
        raise NotApplicable(f"target {self.name} cannot change broker settings")

    # faults and inspection
    def inject_fault(self, name: str, count: int = 1) -> None:
        self.require(f"fault.{name}")

    def inject_send_fault(self, broker: str, outcome: str, count: int = 1) -> None:
        """The next ``count`` attempts on ``broker`` meet ``outcome`` (-1: all of them)."""
        self.require("fault.send")

    def send_fault_outcomes(self) -> tuple[str, ...]:
        """The outcomes ``inject_send_fault`` can give here, for a test to draw from; none without ``fault.send``."""
        return SEND_OUTCOMES if "fault.send" in self.capabilities else ()

    def stored_messages(self, topic: str) -> list[dict[str, object]]:
        self.require("inspect.broker")
        return []

    def read_stored(self, topic: str) -> list[MessageView]:
        """Every message ``topic`` stores so far (in no promised order), read from the start by an ordinary
        consumer of a group of its own: what a user sees who subscribes to ``%RETRY%<group>`` or
        ``%DLQ%<group>`` (RETRY-CONC-05). Not the owner group, so a retry copy shows its stored topic, not the
        topic RETRY_TOPIC names (RETRY-CONC-09). ``properties`` holds the system properties only where
        ``observe.properties`` says so. An unknown topic stores nothing."""
        self.require("observe.stored")
        return []

    def query_messages(self, topic: str, *, key: str | None = None, msg_id: str | None = None) -> list[MessageView]:
        """The stored messages of ``topic`` with ``key`` among their keys, or with id ``msg_id`` (the id a
        client is given, MSGID-02, MSGID-03), as an admin's query by key or id finds them."""
        self.require("observe.query")
        return []

    def committed_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        """The consume offset the broker stores for ``group`` on a queue, as a client's
        QUERY_CONSUMER_OFFSET reads it; ``None`` when it stores none (OFFSET-03, OFFSET-04)."""
        self.require("observe.offset")
        return None

    # time
    @abc.abstractmethod
    def now_ms(self) -> int: ...

    @abc.abstractmethod
    def advance(self, delta_ms: int) -> None: ...

    @abc.abstractmethod
    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool: ...

    def require_duration(self, spec_ms: float) -> None:
        """Raise ``NotApplicable`` when ``spec_ms`` of spec time would outlast this target's time budget."""

    def delivery_time_sent_ms(self, at_ms: int) -> int:
        """The delivery time (spec ms) this target's client sends when asked for ``at_ms``: ``at_ms`` itself,
        unless the client can only send coarser times (the Python 5.x SDK sends whole seconds of the wall
        clock, DELAY-08): a test of a delivery time judges the one that was sent."""
        return at_ms

    def settle(self, max_ms: int = SETTLE_LIMIT_MS) -> None:
        """Let everything pending happen (all retries, DLQs, checks), bounded by ``max_ms`` of spec time."""
        self.advance(max_ms)

    def mark_settled(self) -> None:
        """State in the log that the run has settled (a ``SETTLED`` event): every consumer still up was given
        what it was owed. The Spark checks judge a group's losses only up to it (issue 36). A target whose log
        cannot take the harness's events states nothing, and losses are then judged only for groups whose
        consumers the log does not state."""

    # results
    @abc.abstractmethod
    def events(self) -> list[Event]: ...

    def drain_events(self) -> list[Event]:
        """The events seen since the last drain, for a long run that logs as it goes (``rmqc soak``); a
        target may forget them afterwards. By default the tail of ``events()``, which only grows."""
        seen = self.events()
        start = getattr(self, "_drained_up_to", 0)
        self._drained_up_to = len(seen)
        return list(seen[start:])

    def close(self) -> None:
        """Release whatever the target holds."""


__all__ = ["Target", "TargetError", "NotApplicable", "CAPABILITIES", "MessageView", "SendResult"]
