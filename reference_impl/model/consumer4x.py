"""4.x remoting push consumers: concurrent and orderly, clustering and broadcasting.

RETRY-CONC-01, RETRY-CONC-02, RETRY-CONC-03, RETRY-CONC-04, RETRY-CONC-05, RETRY-CONC-06, RETRY-CONC-07,
RETRY-CONC-08, RETRY-CONC-09, RETRY-CONC-10 and ORDER-4X-01, ORDER-4X-02, ORDER-4X-03, ORDER-4X-04 decide; this
module keeps the per-queue state and moves messages through them on the virtual clock.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from history.values import ListenerOutcome
from history.views import Listener, MessageView

from ..rules import codes, cpp4x, orderly4x, retry4x, sql92
from ..rules import filter as filter_rules
from ..rules import offsets as offset_rules
from ..rules.codes import RocketMQError
from ..rules.primitives import INT_MAX
from .broker import Message

if TYPE_CHECKING:
    from .simulation import Simulation

QueueKey = tuple[str, int]
CLIENT_4X_VERSION = "4.9.8"
"""The Java 4.x client whose own code the model's push consumer runs (its send-back fallback: RETRY-CONC-08),
whatever release the broker behaves as."""


class PushConsumer4x:
    def __init__(self, sim: "Simulation", group: str, topic: str, listener: Listener, client_id: str, *,
                 orderly: bool = False, broadcasting: bool = False, max_reconsume_times: int = -1,
                 suspend_ms: int = orderly4x.DEFAULT_SUSPEND_MS, delay_level_when_next_consume: int = 0,
                 expression: str = "*", expression_type: str = "TAG",
                 consume_from_where: str = offset_rules.CONSUME_FROM_LAST_OFFSET,
                 consume_timestamp_ms: int | None = None, sdk: str = "java") -> None:
        """``sdk``: ``"java"`` (the catalog's ``DefaultMQPushConsumer``) or ``cpp4x.SDK`` (the C++ client's
        habits: SDK-CPP-01, SDK-CPP-02, SDK-CPP-03)."""
        self.sdk = sdk
        self.sim, self.group, self.topic, self.listener, self.client_id = sim, group, topic, listener, client_id
        self.orderly, self.broadcasting = orderly, broadcasting
        self.max_reconsume_times = max_reconsume_times
        self.suspend_ms = suspend_ms
        self.delay_level_when_next_consume = delay_level_when_next_consume
        self.subscriptions = retry4x.push_subscriptions(group, topic, expression, broadcasting)
        self.expression = expression
        self.expression_type = expression_type
        if expression_type == "SQL92":
            code, remark = filter_rules.sql_subscription_check(expression, sim.broker.enable_property_filter,
                                                                sim.release)
            if code != codes.R_SUCCESS:
                raise RocketMQError(code, remark)  # FILTER-04, FILTER-05
            self._sql = sql92.compile_sql(expression, sim.release)
        else:
            self._tags = filter_rules.parse_tag_expression(expression)
        self.consume_from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.assigned: set[QueueKey] = set()
        self._pull: dict[QueueKey, int] = {}
        self.offsets: dict[QueueKey, int] = {}                       # the client's in-memory offset store
        self._updates: dict[QueueKey, list[tuple[int, int]]] = {}    # (time, offset) since the queue came
        self._local_persisted: dict[QueueKey, int] = {}              # broadcasting: offsets.json
        self.started_ms = 0
        self.crashed = False
        self._pending_local: dict[QueueKey, set[int]] = {}
        self._suspended_until: dict[QueueKey, int] = {}
        self._local_rt: dict[tuple[QueueKey, int], int] = {}
        self.running = False

    # ---- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self.running = True
        self.started_ms = self.sim.clock.now_ms
        self.sim.emit("CONSUMER_START", topic=self.topic, group=self.group, client_id=self.client_id,
                      attempt=self.max_deliveries(), detail={
                          "consumer": "push", "mode": "broadcasting" if self.broadcasting else "clustering",
                          "orderly": str(self.orderly).lower(), "expression": self.expression})
        for topic in self.subscriptions:
            self.sim.broker.on_arrival(topic, self.pump)
        self.sim.join(self)

    def max_deliveries(self) -> int | None:
        """The most deliveries of one message this client makes before it is dead-lettered: the effective
        maxReconsumeTimes + 1 (RETRY-CONC-06; orderly ORDER-4X-03; the C++ client SDK-CPP-01, whose orderly
        retries never end, SDK-CPP-03). None where there is no such end: broadcasting drops a failure
        (RETRY-CONC-05), and an orderly -1 is Integer.MAX_VALUE."""
        if self.broadcasting or (self.orderly and self.sdk == cpp4x.SDK):
            return None
        if self.orderly:
            limit = orderly4x.orderly_max_reconsume_times(self.max_reconsume_times)
        elif self.sdk == cpp4x.SDK:
            limit = cpp4x.max_reconsume_times(self.max_reconsume_times)
        else:
            limit = retry4x.effective_max_reconsume_times(self.max_reconsume_times, orderly=False)
        return None if limit >= INT_MAX else limit + 1

    def shutdown(self) -> None:
        """Clean shutdown: persist every offset, unregister, the group rebalances at once (OFFSET-04)."""
        for key in list(self.assigned):
            self._persist(key, self.offsets.get(key))
        self.running = False
        self.sim.broker.remove_arrival(self.pump)
        self._announce_stop("shutdown")
        self.sim.leave(self)

    def crash(self) -> None:
        """Die without unregistering: the broker keeps the offsets last persisted on the 5 s cadence and
        drops the client 120 s later; its queues pause until then (OFFSET-04)."""
        now = self.sim.clock.now_ms
        for key in list(self.assigned):
            self._persist(key, offset_rules.persisted_offset(self._updates.get(key, []), self.started_ms, now,
                                                             self._stored(key) or 0))
        self.running = False
        self.crashed = True
        self.sim.broker.remove_arrival(self.pump)
        self.sim.emit("REBALANCE", group=self.group, client_id=self.client_id, detail={"crashed": "true"})
        self._announce_stop("crash")
        self.sim.clock.call_at(offset_rules.crash_detected_at(now), lambda: self.sim.leave(self))

    def _announce_stop(self, how: str) -> None:
        self.sim.emit("CONSUMER_STOP", topic=self.topic, group=self.group, client_id=self.client_id,
                      detail={"how": how})

    def all_queues(self) -> list[QueueKey]:
        out = []
        for topic in sorted(self.subscriptions):
            config = self.sim.broker.topics.get(topic)
            if config is None and topic.startswith(retry4x.RETRY_TOPIC_PREFIX):
                config = self.sim.broker.ensure_topic(topic, self.sim.broker.group(self.group).retry_queue_nums)
            if config is not None and config.perm & 4:  # readable queue data only (PERM_READ, QSEL-03)
                out.extend((topic, q) for q in config.read_queue_ids())
        return out

    def assign(self, queues: set[QueueKey]) -> None:
        if self.crashed:
            self.assigned = set()
            return
        dropped = self.assigned - queues
        for key in dropped:  # removeUnnecessaryMessageQueue: persist, then forget (OFFSET-04)
            self._persist(key, self.offsets.get(key))
            self._pull.pop(key, None)
            self.offsets.pop(key, None)
            self._updates.pop(key, None)
            self._pending_local.pop(key, None)
        for key in set(queues) - self.assigned:  # computePullFromWhere at rebalance time (OFFSET-01)
            self._pull[key] = self._initial_offset(key)
        self.assigned = set(queues)
        self.sim.emit("REBALANCE", group=self.group, client_id=self.client_id,
                      detail={"queues": ",".join(f"{t}:{q}" for t, q in sorted(self.assigned))})
        self.sim.clock.call_later(0, self.pump)

    # ---- offsets (RETRY-CONC-03, OFFSET-03) ---------------------------------------------------

    def _stored(self, key: QueueKey) -> int | None:
        if self.broadcasting:
            return self._local_persisted.get(key)
        return self.sim.broker.offsets.get((self.group, key[0], key[1]))

    def _persist(self, key: QueueKey, offset: int | None) -> None:
        if offset is None:
            return
        if self.broadcasting:
            self._local_persisted[key] = offset
        else:
            self.sim.broker.offsets[(self.group, key[0], key[1])] = offset

    def _initial_offset(self, key: QueueKey) -> int:
        """Where a newly assigned queue starts: the stored offset, or ConsumeFromWhere (OFFSET-01, OFFSET-02)."""
        queue = self.sim.broker.queues.get(key, [])
        stored = self._stored(key)
        if self.broadcasting:
            code, value = (codes.R_SUCCESS, stored) if stored is not None else (codes.R_QUERY_NOT_FOUND, -1)
        else:
            code, value = offset_rules.broker_query_offset(stored, 0, self.sim.broker.messages_in_memory,
                                                           queue_empty=not queue, release=self.sim.release)
        retry = key[0].startswith(retry4x.RETRY_TOPIC_PREFIX)
        ts = self.consume_timestamp_ms if self.consume_timestamp_ms is not None else \
            self.sim.clock.now_ms - offset_rules.DEFAULT_CONSUME_TIMESTAMP_AGO_MS
        search = lambda: next((m.queue_offset for m in queue if m.store_ms >= ts), len(queue))  # noqa: E731
        start = offset_rules.compute_pull_from_where(value if code == codes.R_SUCCESS else -1,
                                                     self.consume_from_where, retry, len(queue), search)
        return max(0, start)

    def _commit(self, key: QueueKey, offset: int) -> None:
        """Update the in-memory offset store (increase only); persistence follows OFFSET-04."""
        if offset < 0:
            return
        pending = self._pending_local.get(key)
        if pending:
            offset = min(offset, min(pending))
        if offset <= self.offsets.get(key, -1):
            return
        self.offsets[key] = offset
        self._updates.setdefault(key, []).append((self.sim.clock.now_ms, offset))
        self.sim.emit("OFFSET_COMMIT", group=self.group, client_id=self.client_id, topic=key[0], queue_id=key[1],
                      queue_offset=offset)

    # ---- consumption ------------------------------------------------------------------------

    def pump(self) -> None:
        if not self.running:
            return
        for key in sorted(self.assigned):
            queue = self.sim.broker.queues.get(key, [])
            if key not in self._pull:
                self._pull[key] = self._initial_offset(key)
            while self._pull[key] < len(queue):
                if self.orderly and self._suspended_until.get(key, -1) > self.sim.clock.now_ms:
                    break
                message = queue[self._pull[key]]
                if not self._matches(key[0], message):
                    self._pull[key] += 1
                    self._commit(key, self._pull[key])
                    continue
                if self.orderly:
                    if not self._consume_orderly(key, message):
                        break
                else:
                    self._consume_concurrently(key, message, message.reconsume_times)
                self._pull[key] += 1

    def _matches(self, topic: str, message: Message) -> bool:
        """Broker filter then client re-filter for TAG; broker-only SQL92; retry topics per FILTER-04."""
        # implements FILTER-02, FILTER-06 through the rules it calls
        if topic != self.topic:
            return True
        if self.expression_type == "SQL92":
            return sql92.sql_matches(self._sql, message.properties)
        return filter_rules.delivered_to_tag_subscriber(self._tags, message.tags)

    def _view(self, message: Message, reconsume_times: int) -> MessageView:
        topic = retry4x.topic_seen_by_listener(message.topic, message.properties, self.group)
        return MessageView(message.msg_id, topic, message.key, message.tags, message.body, reconsume_times,
                           reconsume_times + 1, message.queue_id, message.queue_offset, message.topic,
                           message.message_group, dict(message.properties))

    def _deliver(self, view: MessageView) -> ListenerOutcome:
        self.sim.emit_deliver(self.group, self.client_id, view)
        outcome = self.listener(view)
        kind = "CONSUME_OK" if outcome is ListenerOutcome.SUCCESS else "CONSUME_FAIL"
        self.sim.emit(kind, topic=view.topic, group=self.group, client_id=self.client_id, msg_id=view.msg_id,
                      key=view.key, attempt=view.delivery_attempt, queue_id=view.queue_id,
                      queue_offset=view.queue_offset, detail={"outcome": outcome.value})
        return outcome

    def _consume_concurrently(self, key: QueueKey, message: Message, reconsume_times: int) -> None:
        view = self._view(message, reconsume_times)
        status = retry4x.concurrent_status(self._deliver(view))
        failed = retry4x.failed_indexes(1, status)
        resubmitted = False
        if failed and not self.broadcasting:
            resubmitted = not self._send_back(view, message)
        if resubmitted:
            self._pending_local.setdefault(key, set()).add(message.queue_offset)
            wait = cpp4x.after_failed_send_back(reconsume_times)[0] if self.sdk == cpp4x.SDK \
                else retry4x.LOCAL_RESUBMIT_DELAY_MS
            # the client's own wait before it consumes the message again (RETRY-CONC-03; the C++ client's, SDK-CPP-02)
            self.sim.emit("RETRY_SCHEDULED", topic=view.topic, group=self.group, client_id=self.client_id,
                          msg_id=view.msg_id, key=view.key, attempt=view.delivery_attempt + 1, expected_delay_ms=wait,
                          detail={"via": "local_resubmit"})
            self.sim.clock.call_later(wait,
                                      lambda: self._local_resubmit(key, message, reconsume_times + 1))
        # ProcessQueue#removeMessage (RETRY-CONC-03): the first offset the process queue still holds, or
        # queueOffsetMax + 1 once it is empty, so a message consumed again locally after later ones commits past them
        self._commit(key, max(message.queue_offset + 1, self._pull.get(key, 0)))

    def _local_resubmit(self, key: QueueKey, message: Message, reconsume_times: int) -> None:
        """RETRY-CONC-03: the client re-runs a message whose send-back failed, 5 s later, rt + 1."""
        pending = self._pending_local.get(key)
        if not self.running or key not in self.assigned or not pending or message.queue_offset not in pending:
            return
        pending.discard(message.queue_offset)
        self._consume_concurrently(key, message, reconsume_times)

    def _send_back(self, view: MessageView, message: Message) -> bool:
        """Send-back, then the inner-producer fallback (RETRY-CONC-03, -04, -08). False = both failed."""
        effective_max = cpp4x.max_reconsume_times(self.max_reconsume_times) if self.sdk == cpp4x.SDK \
            else retry4x.effective_max_reconsume_times(self.max_reconsume_times, orderly=False)
        msg = message if message.reconsume_times == view.reconsume_times else _with_rt(message, view.reconsume_times)
        code = self.sim.broker.consumer_send_msg_back(self.group, msg, view.topic,
                                                      self.delay_level_when_next_consume, effective_max)
        if code == codes.R_SUCCESS:
            self._note_retry(view, effective_max, via="send_back")
            return True
        if self.sdk == cpp4x.SDK:
            return False  # SDK-CPP-02: no republish fallback
        props = retry4x.fallback_republish_properties(msg.properties, view.topic, view.reconsume_times, effective_max,
                                                      msg.msg_id, CLIENT_4X_VERSION)
        if self.sim.broker.republish_to_retry(self.group, msg, props) == codes.R_SUCCESS:
            self._note_retry(view, effective_max, via="fallback")
            return True
        return False

    def _note_retry(self, view: MessageView, effective_max: int, via: str) -> None:
        if view.reconsume_times >= effective_max:
            return
        if via == "fallback" and view.reconsume_times + 1 >= effective_max:
            return
        level = retry4x.retry_level_for(view.reconsume_times) if self.delay_level_when_next_consume == 0 \
            else self.delay_level_when_next_consume
        self.sim.emit("RETRY_SCHEDULED", topic=view.topic, group=self.group, client_id=self.client_id,
                      msg_id=view.msg_id, key=view.key, attempt=view.delivery_attempt + 1, delay_level=level,
                      expected_delay_ms=self.sim.delay_ms(level), detail={"via": via})

    def _consume_orderly(self, key: QueueKey, message: Message) -> bool:
        """One orderly step on a queue; False when the queue is suspended (ORDER-4X-01, ORDER-4X-02, ORDER-4X-03)."""
        # implements RETRY-CONC-11 through the rules it calls
        rt = self._local_rt.get((key, message.queue_offset), message.reconsume_times)
        view = self._view(message, rt)
        if self.sdk == cpp4x.SDK:
            return self._consume_orderly_cpp(key, message, view, rt)
        status = orderly4x.orderly_status(self._deliver(view))
        check = None
        if status is orderly4x.OrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
            check = orderly4x.check_reconsume_times([rt], self.max_reconsume_times)
            if check.to_dlq:
                props = orderly4x.dlq_publish_properties(dict(message.properties), view.topic, message.msg_id, rt,
                                                         orderly4x.orderly_max_reconsume_times(self.max_reconsume_times))
                if self.sim.broker.republish_to_retry(self.group, _with_rt(message, rt), props) != codes.R_SUCCESS:
                    check = orderly4x.ReconsumeCheck(True, (), (rt + 1,))
        suspend = orderly4x.suspend_time_ms(-1, self.suspend_ms)
        result = orderly4x.process_consume_result([message.queue_offset], status, True, check, suspend)
        if result.redeliver_after_ms is not None:
            assert check is not None
            self._local_rt[(key, message.queue_offset)] = check.new_reconsume_times[0]
            self._suspended_until[key] = self.sim.clock.now_ms + result.redeliver_after_ms
            self.sim.emit("RETRY_SCHEDULED", topic=view.topic, group=self.group, client_id=self.client_id,
                          msg_id=view.msg_id, key=view.key, attempt=view.delivery_attempt + 1,
                          expected_delay_ms=result.redeliver_after_ms, detail={"via": "orderly_local"})
            self.sim.clock.call_later(result.redeliver_after_ms, self.pump)
            return False
        self._local_rt.pop((key, message.queue_offset), None)
        self._commit(key, result.commit_offset)
        return True

    def _consume_orderly_cpp(self, key: QueueKey, message: Message, view: MessageView, rt: int) -> bool:
        """SDK-CPP-03: a failure is consumed again locally after 1 s (5 s once rt passed 15), never DLQ."""
        if self._deliver(view) is ListenerOutcome.SUCCESS:
            self._local_rt.pop((key, message.queue_offset), None)
            self._commit(key, message.queue_offset + 1)
            return True
        wait = cpp4x.orderly_retry_delay_ms(rt)
        self._local_rt[(key, message.queue_offset)] = rt + 1
        self._suspended_until[key] = self.sim.clock.now_ms + wait
        self.sim.emit("RETRY_SCHEDULED", topic=view.topic, group=self.group, client_id=self.client_id,
                      msg_id=view.msg_id, key=view.key, attempt=view.delivery_attempt + 1, expected_delay_ms=wait,
                      detail={"via": "orderly_local"})
        self.sim.clock.call_later(wait, self.pump)
        return False


def _with_rt(message: Message, reconsume_times: int) -> Message:
    return dataclasses.replace(message, reconsume_times=reconsume_times)
