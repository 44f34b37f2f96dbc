"""The broker (and the proxy's pop front) of the discrete-event model.

State lives here; every decision is delegated to a rule function in ``reference_impl.rules``,
called through its module so that a test can swap one rule and see the suites react.
"""
from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from history.values import SEND_OUTCOMES  # the faults a broker takes (re-exported here)

from ..rules import codes, retry4x, retry5x, topic_types
from ..rules import delay as delay_rules
from ..rules import fifo as fifo_rules
from ..rules import filter as filter_rules
from ..rules import transaction as tx_rules

if TYPE_CHECKING:
    from .simulation import Simulation


@dataclass
class Message:
    """A stored message unit, as a consumer would see it (MessageExt)."""

    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_offset: int
    body: bytes
    properties: dict[str, str]
    reconsume_times: int
    born_ms: int
    store_ms: int
    tran_type: int = 0

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def key(self) -> str | None:
        keys = self.properties.get("KEYS")
        return keys.split(" ")[0] if keys else None

    @property
    def message_group(self) -> str | None:
        return self.properties.get("__SHARDINGKEY")


@dataclass
class TopicConfig:
    """A topic on ``brokers`` brokers, each with the same queue numbers.

    Broker k's queue q is stored under the global id ``k * stride + q``.
    """

    name: str
    read_queues: int = 4
    write_queues: int = 4
    perm: int = 6
    message_type: str = "NORMAL"
    brokers: int = 1

    @property
    def stride(self) -> int:
        return max(self.read_queues, self.write_queues)

    def broker_names(self) -> list[str]:
        return [f"broker-{chr(ord('a') + k)}" for k in range(self.brokers)]

    def read_queue_ids(self) -> list[int]:
        return [k * self.stride + q for k in range(self.brokers) for q in range(self.read_queues)]

    def global_queue_id(self, broker: str, queue_id: int) -> int:
        return self.broker_names().index(broker) * self.stride + queue_id


@dataclass
class GroupConfig:
    """Subscription group config (``SubscriptionGroupConfig``): retry and FIFO settings."""

    name: str
    retry_max_times: int = retry4x.DEFAULT_RETRY_MAX_TIMES
    retry_queue_nums: int = retry4x.DEFAULT_RETRY_QUEUE_NUMS
    fifo: bool = False
    retry_policy: str = "CUSTOMIZED"
    customized_next_ms: tuple[int, ...] = retry5x.DEFAULT_CUSTOMIZED_NEXT_MS
    """``GroupRetryPolicy.customizedRetryPolicy.next`` (RETRY-5X-01): the ladder the proxy sends."""
    exponential_ms: tuple[int, int, float] = retry5x.DEFAULT_EXPONENTIAL_MS

    def settings(self) -> retry5x.ConsumerSettings:
        return retry5x.consumer_settings(self.retry_max_times, self.retry_policy, self.customized_next_ms,
                                         self.exponential_ms, fifo=self.fifo)


@dataclass
class BrokerFaults:
    """Injected failures; counts go down as they are used, -1 means always."""

    send_back_failures: int = 0
    retry_republish_failures: int = 0
    send: dict[str, list[list]] = field(default_factory=dict)  # broker -> [[outcome, count], ...]

    def add_send_fault(self, broker: str, outcome: str, count: int) -> None:
        if outcome not in SEND_OUTCOMES:
            raise ValueError(f"unknown send fault {outcome!r}; known: {', '.join(SEND_OUTCOMES)}")
        self.send.setdefault(broker, []).append([outcome, count])

    def take_send(self, broker: str) -> str | None:
        for entry in self.send.get(broker, []):
            if entry[1] != 0:
                if entry[1] > 0:
                    entry[1] -= 1
                return entry[0]
        return None

    def take(self, name: str) -> bool:
        left = getattr(self, name)
        if left == 0:
            return False
        if left > 0:
            setattr(self, name, left - 1)
        return True


@dataclass
class InFlight:
    """A popped, not yet acked message (a pop checkpoint)."""

    message: Message
    group: str
    origin_topic: str
    visible_at: int
    receipt: str
    fifo: bool
    attempt_id: str = ""
    auto_renew: bool = False
    client_id: str = ""
    popped_at: int = 0


@dataclass
class HalfMessage:
    message: Message
    producer_group: str
    check_times: int = 0
    resolved: bool = False
    immunity_seconds: int | None = None


@dataclass
class PutResult:
    code: int
    message: Message | None = None
    remark: str = ""


class Broker:
    """One broker, ``broker-a``, with the 5.x proxy's pop front folded in."""

    name = "broker-a"

    def __init__(self, sim: "Simulation", delay_table: delay_rules.DelayTable = delay_rules.DEFAULT_DELAY_TABLE,
                 tx_check_interval_ms: int = tx_rules.check_interval_ms()) -> None:
        self.sim = sim
        self.delay_table = delay_table
        self.topics: dict[str, TopicConfig] = {}
        self.groups: dict[str, GroupConfig] = {}
        self.queues: dict[tuple[str, int], list[Message]] = defaultdict(list)
        self.commit_log: list[Message] = []
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.faults = BrokerFaults()
        self.enable_property_filter = False  # enablePropertyFilter, off by default (FILTER-04)
        self.messages_in_memory = True  # False: queue offset 0 is on disk, new groups follow ConsumeFromWhere
        self._arrival: dict[str, list[Callable[[], None]]] = defaultdict(list)
        self.on_append: list[Callable[[str, int], None]] = []
        """Observers of every stored message's topic and queue (a real-time front end wakes their waiters)."""
        self._receipts = itertools.count(1)
        self.in_flight: dict[str, InFlight] = {}
        self.clients_seen: dict[str, int] = {}  # client id -> spec ms of its last call (RETRY-5X-09)
        self._watched_clients: set[str] = set()
        self._gone_clients: set[str] = set()    # unregistered (NotifyClientTermination) and not seen since
        self.heartbeating: set[str] = set()
        """The model's own running clients: a live SDK heartbeats every 10 s, so they are never idle."""
        self.revive_lag_ms = retry5x.REVIVE_LAG_MS
        """RETRY-5X-11's revive lag in spec ms (a prediction of a time-scaled release sets its longer one)."""
        self.client_expiry_ms = retry5x.CHANNEL_EXPIRED_TIMEOUT_MS
        """How long a silent client stays online (a real-time server scales it: ``retry5x.client_expiry_ms``)."""
        self.acked: dict[str, int] = {}
        self._ack_expiry: list[tuple[int, str]] = []
        """Acked receipt handles and when each expires (a repeated ack before then is OK, RETRY-5X-09)."""
        self.replaced_fifo: dict[str, InFlight] = {}
        """A FIFO handle a change of invisible time replaced -> the message it still commits until it expires
        (RETRY-5X-09: ``ackOrderly`` commits by offset; the FIFO change keeps the pop time)."""
        self.pop_offsets: dict[tuple[str, str, int], int] = {}
        self.order_infos: dict[tuple[str, str, int], fifo_rules.OrderInfo] = {}
        self.halves: list[HalfMessage] = []
        self.tx_check_interval_ms = tx_check_interval_ms
        self.tx_checkers: dict[str, Callable[[Message, int], tx_rules.LocalTransactionState | None]] = {}
        self.reviving: Counter[str] = Counter()  # expired checkpoints not yet revived, by group (RETRY-5X-11)
        self._tx_scan_scheduled = False
        self.create_topic(delay_rules.SCHEDULE_TOPIC, delay_rules.SCHEDULE_TOPIC_QUEUE_NUM,
                          delay_rules.SCHEDULE_TOPIC_QUEUE_NUM)

    # ---- configuration ----------------------------------------------------------------------

    def create_topic(self, name: str, read_queues: int = 4, write_queues: int = 4, perm: int = 6,
                     message_type: str = "NORMAL", brokers: int = 1) -> TopicConfig:
        """``message_type`` is the topic's ``message.type`` attribute; a name the release does not have is
        refused as ``TopicMessageType.valueOf`` refuses it (TOPIC-05)."""
        topic_types.topic_message_type(message_type, self.sim.release)
        config = TopicConfig(name, read_queues, write_queues, perm, message_type, brokers)
        self.topics[name] = config
        return config

    def ensure_topic(self, name: str, queues: int) -> TopicConfig:
        return self.topics.get(name) or self.create_topic(name, queues, queues, retry4x.PERM_READ_WRITE)

    def group(self, name: str) -> GroupConfig:
        if name not in self.groups:
            self.groups[name] = GroupConfig(name)
        return self.groups[name]

    def on_arrival(self, topic: str, callback: Callable[[], None]) -> None:
        self._arrival[topic].append(callback)

    def remove_arrival(self, callback: Callable[[], None]) -> None:
        for callbacks in self._arrival.values():
            if callback in callbacks:
                callbacks.remove(callback)

    def _notify(self, topic: str) -> None:
        for callback in list(self._arrival.get(topic, ())):
            self.sim.clock.call_later(0, callback)

    # ---- storing ----------------------------------------------------------------------------

    def _append(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str], msg_id: str,
                reconsume_times: int, born_ms: int, tran_type: int = 0) -> Message:
        queue = self.queues[(topic, queue_id)]
        message = Message(msg_id, topic, queue_id, len(queue), len(self.commit_log), body, properties,
                          reconsume_times, born_ms, self.sim.clock.now_ms, tran_type)
        queue.append(message)
        self.commit_log.append(message)
        for listener in self.on_append:
            listener(topic, queue_id)
        return message

    def put(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str], msg_id: str, *,
            born_ms: int, reconsume_times: int = 0, tran_type: int = 0,
            header_reconsume_times: int | None = None, header_max_reconsume_times: int | None = None) -> PutResult:
        """Store one message: retry/DLQ redirect, half messages, delay and timer routing, then append."""
        # implements DELAY-03, DELAY-04, DELAY-05, RETRY-CONC-11 through the rules it calls
        props = dict(properties)
        if topic.startswith(retry4x.RETRY_TOPIC_PREFIX) and header_reconsume_times is not None:
            group = topic[len(retry4x.RETRY_TOPIC_PREFIX):]
            decision = retry4x.handle_retry_and_dlq(
                topic, queue_id, header_reconsume_times, header_max_reconsume_times,
                int(props.get("DELAY", "0") or 0), group_exists=True,
                group_retry_max_times=self.group(group).retry_max_times)
            if decision.code != codes.R_SUCCESS:
                return PutResult(decision.code)
            if decision.topic != topic:
                props.pop("DELAY", None)
                return self._store_dlq(decision.topic, props, msg_id, header_reconsume_times, born_ms, body)
            self.ensure_topic(topic, 1)
            reconsume_times = header_reconsume_times
        if props.get("TRAN_MSG") == "true" and tran_type == delay_rules.TRANSACTION_PREPARED_TYPE:
            half_topic, half_qid, half_props = tx_rules.half_message(topic, queue_id, props, props.get("PGROUP", ""))
            self.ensure_topic(half_topic, 1)
            message = self._append(half_topic, half_qid, body, half_props, msg_id, reconsume_times, born_ms, tran_type)
            return PutResult(codes.R_SUCCESS, message)
        try:
            placement = delay_rules.route_timer_message(topic, queue_id, props, self.sim.clock.now_ms,
                                                        max_level=self.delay_table.max_level)
        except delay_rules.TimerMessageIllegal as exc:
            return PutResult(codes.R_MESSAGE_ILLEGAL, remark=str(exc))
        message = self._append(placement.topic, placement.queue_id, body, dict(placement.properties), msg_id,
                               reconsume_times, born_ms, tran_type)
        if placement.topic == delay_rules.SCHEDULE_TOPIC:
            deliver_at = delay_rules.schedule_tags_code(int(message.properties["DELAY"]), message.store_ms,
                                                        self.delay_table)
            self.sim.clock.call_at(deliver_at, lambda m=message: self._schedule_timeup(m))
        elif placement.topic == delay_rules.TIMER_TOPIC:
            self.sim.clock.call_at(int(message.properties["TIMER_OUT_MS"]), lambda m=message: self._timer_timeup(m))
        else:
            self._notify(placement.topic)
        return PutResult(codes.R_SUCCESS, message)

    def _schedule_timeup(self, scheduled: Message) -> None:
        """``messageTimeup``: back to the real topic with DELAY cleared (DELAY-06)."""
        placement = delay_rules.restore_from_schedule(scheduled.properties)
        if placement.topic == tx_rules.HALF_TOPIC:
            return
        message = self._append(placement.topic, placement.queue_id, scheduled.body, dict(placement.properties),
                               scheduled.msg_id, scheduled.reconsume_times, scheduled.born_ms, scheduled.tran_type)
        self._notify(message.topic)

    def _timer_timeup(self, timed: Message) -> None:
        props = dict(timed.properties)
        topic, qid = props["REAL_TOPIC"], int(props["REAL_QID"])
        for key in ("TIMER_OUT_MS", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS"):
            props.pop(key, None)
        self._append(topic, qid, timed.body, props, timed.msg_id, timed.reconsume_times, timed.born_ms)
        self._notify(topic)

    def _store_dlq(self, dlq: str, props: dict[str, str], msg_id: str, reconsume_times: int, born_ms: int,
                   body: bytes) -> PutResult:
        self.ensure_topic(dlq, retry4x.DLQ_NUMS_PER_GROUP)
        message = self._append(dlq, 0, body, props, msg_id, reconsume_times, born_ms)
        group = dlq[len(retry4x.DLQ_TOPIC_PREFIX):]
        self.sim.emit_dlq(group, message)
        return PutResult(codes.R_SUCCESS, message)

    # ---- 4.x send-back (RETRY-CONC-04) ------------------------------------------------------

    def consumer_send_msg_back(self, group: str, message: Message, origin_topic: str, delay_level: int,
                               max_reconsume_times: int | None) -> int:
        if self.faults.take("send_back_failures"):
            return codes.R_SYSTEM_ERROR
        config = self.group(group)
        result = retry4x.consumer_send_msg_back(
            group, origin_topic, message.reconsume_times, message.properties, message.msg_id, delay_level,
            max_reconsume_times, retry_queue_nums=config.retry_queue_nums,
            group_retry_max_times=config.retry_max_times, group_exists=True)
        if result.code != codes.R_SUCCESS or not result.stored:
            return result.code
        assert result.topic is not None and result.queue_id is not None
        props = dict(result.properties)
        if result.topic.startswith(retry4x.DLQ_TOPIC_PREFIX):
            self._store_dlq(result.topic, props, message.msg_id, result.reconsume_times, message.born_ms, message.body)
            return codes.R_SUCCESS
        self.ensure_topic(result.topic, config.retry_queue_nums)
        put = self.put(result.topic, result.queue_id, message.body, props, message.msg_id,
                       born_ms=message.born_ms, reconsume_times=result.reconsume_times)
        return put.code

    def republish_to_retry(self, group: str, message: Message, properties: dict[str, str]) -> int:
        """A client's inner-producer send to ``%RETRY%group`` (RETRY-CONC-08, ORDER-4X-03)."""
        if self.faults.take("retry_republish_failures"):
            return codes.R_SYSTEM_ERROR
        props = dict(properties)
        header_rt = int(props.pop("RECONSUME_TIME"))
        header_max = int(props.pop("MAX_RECONSUME_TIMES"))
        return self.put(retry4x.retry_topic(group), 0, message.body, props, message.msg_id, born_ms=message.born_ms,
                        header_reconsume_times=header_rt, header_max_reconsume_times=header_max).code

    # ---- 5.x pop (RETRY-5X-06, RETRY-5X-07, RETRY-5X-08, RETRY-5X-09, RETRY-5X-10, FIFO-04, FIFO-05, FIFO-06) ----

    def _new_receipt(self) -> str:
        return f"rh-{next(self._receipts)}"

    def pop(self, group: str, topic: str, invisible_ms: int, max_messages: int, attempt_id: str,
            fifo: bool, auto_renew: bool = False, tags: frozenset[str] = frozenset(),
            client_id: str = "") -> list[InFlight]:
        """Pop for a gRPC consumer. ``auto_renew`` models the proxy renewing a push consumer's handles
        while it holds them and its client is online, until STOP_RENEW after 3 h (RETRY-5X-09). A pop is not a
        sign of life of ``client_id`` (a long poll goes on popping after its client died): the caller says
        when the client called (``client_seen``)."""
        out = self._pop(group, topic, invisible_ms, max_messages, attempt_id, fifo, auto_renew, tags)
        if client_id and out:
            for flight in out:
                flight.client_id = client_id
            if client_id in self._gone_clients:  # a poll that outlived its client: the next renew scan clears
                self.sim.clock.call_at(self.sim.clock.now_ms + retry5x.RENEW_SCHEDULE_PERIOD_MS,
                                       lambda c=client_id: self._clear_client(c))
            elif auto_renew and client_id not in self._watched_clients:
                self._watched_clients.add(client_id)
                self._schedule_offline_check(client_id)
        return out

    # ---- clients that go away (RETRY-5X-09) ----

    def client_seen(self, client_id: str) -> None:
        """A call of ``client_id`` arrived (a heartbeat, a receive, any call): it is online."""
        self.clients_seen[client_id] = self.sim.clock.now_ms
        self._gone_clients.discard(client_id)

    def client_gone(self, client_id: str) -> None:
        """``NotifyClientTermination`` (CLIENT_UNREGISTER): its renewed handles are cleared at once, and any a
        poll of it still takes at the next renew scan."""
        self._gone_clients.add(client_id)
        self._clear_client(client_id)

    def _schedule_offline_check(self, client_id: str) -> None:
        at = retry5x.offline_since_ms(self.clients_seen.get(client_id, self.sim.clock.now_ms), self.client_expiry_ms)
        self.sim.clock.call_at(at, lambda c=client_id: self._offline_check(c))

    def _offline_check(self, client_id: str) -> None:
        """While the client holds renewed handles: gone once idle past the channel expiry, else look again
        then (a client that holds nothing is not watched, so an idle model never ticks for ever)."""
        if not any(f.client_id == client_id and f.auto_renew for f in self.in_flight.values()):
            self._watched_clients.discard(client_id)
            return
        if client_id in self.heartbeating:
            self.client_seen(client_id)
        if self.sim.clock.now_ms >= retry5x.offline_since_ms(self.clients_seen.get(client_id, 0), self.client_expiry_ms):
            self._watched_clients.discard(client_id)
            self._clear_client(client_id)
        else:
            self._schedule_offline_check(client_id)

    def _clear_client(self, client_id: str) -> None:
        """``ReceiptHandleProcessor.clearGroup``: every renewed handle of the client gets a change of invisible
        time to ``invisibleTimeMillisWhenClear``; a standard one then goes through the revive (RETRY-5X-11)."""
        now = self.sim.clock.now_ms
        for flight in [f for f in self.in_flight.values() if f.client_id == client_id and f.auto_renew]:
            self.change_invisible_duration(flight.receipt, retry5x.cleared_visible_at_ms(now) - now)

    def _pop(self, group: str, topic: str, invisible_ms: int, max_messages: int, attempt_id: str,
             fifo: bool, auto_renew: bool, tags: frozenset[str]) -> list[InFlight]:
        policy = self.group(group).settings().backoff
        max_attempts = policy.max_attempts
        if auto_renew:
            invisible_ms = retry5x.RENEW_MAX_TIME_MS
            if fifo:  # STOP_RENEW after 3 h: the group's server-side delay follows (RETRY-5X-02)
                invisible_ms += retry5x.server_next_delay_ms(policy, 0)
        if fifo:
            popped = self._pop_fifo(group, topic, invisible_ms, max_messages, attempt_id, max_attempts)
            for flight in popped:  # the proxy renews a push consumer's ordered handles too
                flight.auto_renew = auto_renew
            return popped
        out: list[InFlight] = []
        retry = retry4x.pop_retry_topic_v1(group, topic)
        for source in (topic, retry):
            config = self.topics.get(source)
            if config is None:
                continue
            for qid in config.read_queue_ids():
                queue = self.queues.get((source, qid), [])
                key = (group, source, qid)
                offset = self._pop_offset(key)
                while offset < len(queue) and len(out) < max_messages:
                    message = queue[offset]
                    offset += 1
                    decision = retry5x.pop_filter(message.reconsume_times, max_attempts,
                                                  filter_rules.proxy_tag_match(tags, message.tags))
                    if decision == "NO_MATCH":
                        continue  # the proxy acks it (FILTER-03)
                    if decision == "TO_DLQ":
                        self.forward_to_dlq(group, message, topic)
                        continue
                    flight = self._check_out(message, group, topic, invisible_ms, fifo=False)
                    flight.auto_renew = auto_renew
                    out.append(flight)
                self.pop_offsets[key] = offset
        return out

    def first_receive(self, group: str, topic: str) -> None:
        """A push consumer's first receive, a long poll sent as it starts: it fixes where the group pops each
        queue of ``topic`` and of its pop retry topic before anything sent later (RETRY-5X-10)."""
        for source in (topic, retry4x.pop_retry_topic_v1(group, topic)):
            config = self.topics.get(source)
            for qid in config.read_queue_ids() if config is not None else ():
                self._pop_offset((group, source, qid))

    def _pop_offset(self, key: tuple[str, str, int]) -> int:
        """Where ``group`` pops ``topic``'s queue next; its first pop there fixes and commits the start
        (RETRY-5X-10, ``getInitOffset``: the model's queues start at 0 and stay in memory)."""
        if key not in self.pop_offsets:
            group, topic, qid = key
            self.pop_offsets[key] = retry5x.pop_init_offset(
                0, len(self.queues.get((topic, qid), [])), True,
                retry_topic=topic.startswith(retry4x.RETRY_TOPIC_PREFIX), release=self.sim.release)
        return self.pop_offsets[key]

    def _check_out(self, message: Message, group: str, origin_topic: str, invisible_ms: int, fifo: bool,
                   attempt_id: str = "") -> InFlight:
        flight = InFlight(message, group, origin_topic, self.sim.clock.now_ms + invisible_ms, self._new_receipt(),
                          fifo, attempt_id, popped_at=self.sim.clock.now_ms)
        self.in_flight[flight.receipt] = flight
        if not fifo:
            self.sim.clock.call_at(flight.visible_at, lambda r=flight.receipt, v=flight.visible_at: self._expire(r, v))
        return flight

    def _expire(self, receipt: str, visible_at: int) -> None:
        """An un-acked pop checkpoint expires: revive a copy into the pop retry topic (RETRY-5X-10)."""
        flight = self.in_flight.get(receipt)
        if flight is None or flight.visible_at != visible_at:
            return
        if flight.auto_renew:
            flight.auto_renew = False
            policy = self.group(flight.group).settings().backoff
            flight.visible_at = visible_at + retry5x.server_next_delay_ms(policy, flight.message.reconsume_times)
            self.sim.clock.call_at(flight.visible_at, lambda r=receipt, v=flight.visible_at: self._expire(r, v))
            return
        del self.in_flight[receipt]
        self.reviving[flight.group] += 1
        self.sim.clock.call_at(retry5x.revive_at_ms(visible_at, self.revive_lag_ms), lambda f=flight: self._revive(f))

    def _revive(self, flight: InFlight) -> None:
        """The revive service writes the expired checkpoint's message to the pop retry topic, 2 s after it
        expired at the earliest (RETRY-5X-10, RETRY-5X-11)."""
        self.reviving[flight.group] -= 1
        message = flight.message
        retry = retry4x.pop_retry_topic_v1(flight.group, flight.origin_topic)
        self.ensure_topic(retry, 1)
        props = retry5x.revived_properties(message.properties, message.reconsume_times, flight.popped_at, flight.group,
                                           self.sim.release)
        self._append(retry, 0, message.body, props, message.msg_id,
                     retry5x.revive_reconsume_times(message.reconsume_times), message.born_ms)
        self._notify(retry)

    def stored_count(self, topic: str) -> int:
        """How many messages the topic's queues hold."""
        config = self.topics.get(topic)
        return 0 if config is None else sum(len(self.queues.get((topic, q), ())) for q in config.read_queue_ids())

    def awaiting_redelivery(self, group: str) -> bool:
        """Whether a message of the group is in flight or being revived: a retry may still arrive."""
        return self.reviving[group] > 0 or any(f.group == group and not f.fifo for f in self.in_flight.values())

    def ack(self, receipt: str) -> int:
        """Ack a receipt handle (RETRY-5X-09): the proxy refuses only an expired handle
        (INVALID_RECEIPT_HANDLE); the broker has no duplicate check, so acking a handle again before it
        expires is OK."""
        flight = self.in_flight.pop(receipt, None)
        if flight is None:
            expires = self.acked.get(receipt)
            if expires is None or self.sim.clock.now_ms >= expires:
                return codes.INVALID_RECEIPT_HANDLE
            held = self.replaced_fifo.get(receipt)  # a replaced FIFO handle commits the message it names
            if held is not None and self.in_flight.get(held.receipt) is held:
                del self.in_flight[held.receipt]
                self._fifo_commit(held)
                self._remember_ack(held.receipt, held.visible_at)
            return codes.OK
        if flight.fifo:
            self._fifo_commit(flight)
        self._remember_ack(receipt, flight.visible_at)
        return codes.OK

    def _remember_ack(self, receipt: str, expires_ms: int) -> None:
        """Keep an acked handle until it expires (a repeated ack before then is OK). The expired ones are
        forgotten from the front of a heap by expiry: each ack costs O(log n), however many are held."""
        now = self.sim.clock.now_ms
        while self._ack_expiry and self._ack_expiry[0][0] <= now:
            _, old = heapq.heappop(self._ack_expiry)
            if self.acked.get(old, now + 1) <= now:
                del self.acked[old]
                self.replaced_fifo.pop(old, None)
        self.acked[receipt] = expires_ms
        heapq.heappush(self._ack_expiry, (expires_ms, receipt))

    def change_invisible_duration(self, receipt: str, invisible_ms: int) -> tuple[int, str | None]:
        retry5x.change_invisible_ms(invisible_ms)  # an illegal time leaves the handle as it was
        flight = self.in_flight.pop(receipt, None)
        if flight is None:
            return codes.INVALID_RECEIPT_HANDLE, None
        # RETRY-5X-09: the proxy takes the old handle until its own invisible time ends. A standard change acked
        # the checkpoint it names, so an ack with it is OK and does nothing; a FIFO one still commits the message
        self._remember_ack(receipt, flight.visible_at)
        if flight.fifo:
            self.replaced_fifo[receipt] = flight
        flight.auto_renew = False
        flight.visible_at = self.sim.clock.now_ms + invisible_ms
        flight.receipt = self._new_receipt()
        self.in_flight[flight.receipt] = flight
        if flight.fifo:
            self._fifo_next_visible(flight)
        else:
            self.sim.clock.call_at(flight.visible_at, lambda r=flight.receipt, v=flight.visible_at: self._expire(r, v))
        return codes.OK, flight.receipt

    def _fifo_next_visible(self, flight: InFlight) -> None:
        """``updateNextVisibleTime`` (FIFO-05, from 5.1.0): the ordered message's offset becomes visible at its
        new time, if the order info is still that of its pop and the group has not committed past it."""
        key = (flight.group, flight.origin_topic, flight.message.queue_id)
        info = self.order_infos.get(key)
        if not fifo_rules.change_sets_next_visible_time(self.sim.release) or info is None or \
                info.pop_time != flight.popped_at or flight.message.queue_offset < self.pop_offsets.get(key, 0):
            return
        info.offset_next_visible_time[flight.message.queue_offset] = flight.visible_at
        self.sim.clock.call_at(flight.visible_at, lambda t=flight.origin_topic: self._notify(t))

    def forward_to_dlq(self, group: str, message: Message, origin_topic: str) -> int:
        """``forwardMessageToDeadLetterQueue``: send-back with level -1 and max 0 (RETRY-5X-07)."""
        # the broker reads the stored message by its offset: RETRY_TOPIC, when absent, is the topic it is
        # stored in (a revived copy's is the pop retry topic)
        result = retry4x.consumer_send_msg_back(group, message.topic, message.reconsume_times, message.properties,
                                                message.msg_id, -1, 0)
        assert result.topic is not None
        self._store_dlq(result.topic, dict(result.properties), message.msg_id, result.reconsume_times,
                        message.born_ms, message.body)
        return codes.OK

    def forward_in_flight_to_dlq(self, receipt: str) -> int:
        flight = self.in_flight.pop(receipt, None)
        if flight is None:
            return codes.INVALID_RECEIPT_HANDLE
        self.forward_to_dlq(flight.group, flight.message, flight.origin_topic)
        if flight.fifo:
            self._fifo_commit(flight)
        return codes.OK

    def _pop_fifo(self, group: str, topic: str, invisible_ms: int, max_messages: int, attempt_id: str,
                  max_attempts: int) -> list[InFlight]:
        config = self.topics.get(topic)
        out: list[InFlight] = []
        if config is None:
            return out
        now = self.sim.clock.now_ms
        for qid in config.read_queue_ids():
            key = (group, topic, qid)
            info = self.order_infos.get(key)
            if info is not None and info.need_block(attempt_id, now, invisible_ms):
                continue
            queue = self.queues.get((topic, qid), [])
            offset = self._pop_offset(key)
            batch = queue[offset:offset + max_messages]
            if not batch:
                continue
            offsets = [m.queue_offset for m in batch]
            counts = fifo_rules.merge_consumed_count(info, offsets, attempt_id)
            new_info = fifo_rules.OrderInfo(fifo_rules.OrderInfo.build_offset_list(offsets), now, invisible_ms,
                                            attempt_id, offset_consumed_count=counts)
            self.order_infos[key] = new_info
            for message in batch:
                view = dataclasses.replace(message, reconsume_times=fifo_rules.local_proxy_reconsume_times(
                    counts, offsets, message.reconsume_times))
                if retry5x.pop_filter(view.reconsume_times, max_attempts) == "TO_DLQ":
                    self.forward_to_dlq(group, view, topic)
                    fifo_rules.commit_and_next(new_info, message.queue_offset, new_info.pop_time)
                    continue
                out.append(self._check_out(view, group, topic, invisible_ms, fifo=True, attempt_id=attempt_id))
            nxt = new_info.next_offset()
            if nxt >= 0 and all(new_info.is_acked(i) for i in range(len(new_info.offset_list))):
                self.pop_offsets[key] = nxt
            self.sim.clock.call_at(now + invisible_ms, lambda t=topic: self._notify(t))
        return out

    def _fifo_commit(self, flight: InFlight) -> None:
        key = (flight.group, flight.origin_topic, flight.message.queue_id)
        info = self.order_infos.get(key)
        if info is None:
            return
        nxt = fifo_rules.commit_and_next(info, flight.message.queue_offset, info.pop_time)
        if nxt >= 0:
            self.pop_offsets[key] = nxt
        self._notify(flight.origin_topic)

    # ---- transactions (TX-01, TX-02, TX-03, TX-04, TX-05) ----

    def put_half(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str], msg_id: str,
                 producer_group: str, immunity_seconds: int | None = None) -> HalfMessage:
        props = dict(properties)
        props["TRAN_MSG"] = "true"
        props["PGROUP"] = producer_group
        put = self.put(topic, queue_id, body, props, msg_id, born_ms=self.sim.clock.now_ms,
                       tran_type=delay_rules.TRANSACTION_PREPARED_TYPE)
        assert put.message is not None
        half = HalfMessage(put.message, producer_group, immunity_seconds=immunity_seconds)
        self.halves.append(half)
        self._schedule_tx_scan()
        return half

    def end_transaction(self, half: HalfMessage, state: tx_rules.LocalTransactionState, producer_group: str) -> str | None:
        if half.resolved or state is tx_rules.LocalTransactionState.UNKNOW:
            return None
        error = tx_rules.end_transaction_error(half.message.properties, producer_group)
        if error:
            return error
        half.resolved = True
        if state is tx_rules.LocalTransactionState.COMMIT_MESSAGE:
            topic, qid, props = tx_rules.committed_message(half.message.properties)
            self.put(topic, qid, half.message.body, props, half.message.msg_id, born_ms=half.message.born_ms,
                     tran_type=delay_rules.TRANSACTION_COMMIT_TYPE)
        op_topic, op_qid, tag, body = tx_rules.op_message(half.message.queue_id, half.message.queue_offset)
        self.ensure_topic(op_topic, 1)
        self._append(op_topic, op_qid, body.encode(), {"TAGS": tag}, f"op-{half.message.msg_id}", 0,
                     self.sim.clock.now_ms)
        return None

    def _schedule_tx_scan(self) -> None:
        if self._tx_scan_scheduled:
            return
        self._tx_scan_scheduled = True
        interval = self.tx_check_interval_ms
        next_scan = (self.sim.clock.now_ms // interval + 1) * interval
        self.sim.clock.call_at(next_scan, self._tx_scan)

    def _tx_scan(self) -> None:
        """One pass of the transaction check service (TX-03, TX-04)."""
        self._tx_scan_scheduled = False
        now = self.sim.clock.now_ms
        for half in self.halves:
            if half.resolved:
                continue
            decision = tx_rules.check_decision(now, half.message.born_ms, half.check_times, half.resolved,
                                               half.immunity_seconds)
            if decision is tx_rules.CheckDecision.DISCARD:
                half.resolved = True
                self.ensure_topic(tx_rules.CHECK_MAX_TIME_TOPIC, 1)
                self._append(tx_rules.CHECK_MAX_TIME_TOPIC, 0, half.message.body, dict(half.message.properties),
                             half.message.msg_id, 0, half.message.born_ms)
                self.sim.emit_tx("TX_DISCARD", half, {"check_times": half.check_times})
            elif decision is tx_rules.CheckDecision.CHECK:
                half.check_times += 1
                self.sim.emit_tx("TX_CHECK", half, {"check_times": half.check_times})
                checker = self.tx_checkers.get(half.producer_group)
                state = checker(half.message, half.check_times) if checker else None
                if state is not None and state is not tx_rules.LocalTransactionState.UNKNOW:
                    self.end_transaction(half, state, half.producer_group)
                    self.sim.emit_tx("TX_END", half, {"state": state.value, "source": "SERVER_CHECK"})
        if any(not h.resolved for h in self.halves):
            self._schedule_tx_scan()
