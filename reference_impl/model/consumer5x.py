"""5.x gRPC consumers: SimpleConsumer and PushConsumer (standard and FIFO), Java or Python SDK habits.

RETRY-5X-03, RETRY-5X-04, RETRY-5X-05, RETRY-5X-06, RETRY-5X-07, RETRY-5X-08, RETRY-5X-09 and FIFO-04, FIFO-05,
FIFO-06 decide; this module holds receipts and local FIFO retries.
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from typing import TYPE_CHECKING

from history.values import ListenerOutcome
from history.views import Listener, MessageView

from ..rules import codes, node5x, retry4x, retry5x
from ..rules import filter as filter_rules
from .broker import InFlight

if TYPE_CHECKING:
    from .simulation import Simulation


def _view(flight: InFlight, attempt: int) -> MessageView:
    m = flight.message
    return MessageView(m.msg_id, flight.origin_topic, m.key, m.tags, m.body, m.reconsume_times, attempt,
                       m.queue_id, m.queue_offset, m.topic, m.message_group, dict(m.properties), flight.receipt)


def announce_start(sim: "Simulation", group: str, topic: str, client_id: str, consumer: str, expression: str) -> None:
    """The CONSUMER_START of a 5.x consumer: its attempt is the group's maxDeliveryAttempts the server gives
    every consumer of the group (RETRY-5X-01, RETRY-5X-07); a FIFO group's consumers are orderly (RETRY-5X-08)."""
    group_state = sim.broker.group(group)
    sim.emit("CONSUMER_START", topic=topic, group=group, client_id=client_id,
             attempt=group_state.settings().backoff.max_attempts,
             detail={"consumer": consumer, "mode": "clustering", "orderly": str(group_state.fifo).lower(),
                     "expression": expression})


class SimpleConsumer5x:
    """Explicit receive / ack / change-invisible-duration (RETRY-5X-06, -07, -09)."""

    def __init__(self, sim: "Simulation", group: str, topic: str, client_id: str, expression: str = "*") -> None:
        self.sim, self.group, self.topic, self.client_id = sim, group, topic, client_id
        self._attempts = itertools.count(1)
        self.tags = filter_rules.parse_tag_expression(expression).tags
        announce_start(sim, group, topic, client_id, "simple", expression)

    def receive(self, max_messages: int = 16, invisible_ms: int = 30_000) -> list[MessageView]:
        invisible = retry5x.receive_invisible_ms(invisible_ms, auto_renew=False)
        flights = self.sim.broker.pop(self.group, self.topic, invisible, max_messages,
                                      f"{self.client_id}-{next(self._attempts)}",
                                      fifo=self.sim.broker.group(self.group).fifo, tags=self.tags)
        views = []
        for flight in flights:
            view = _view(flight, retry5x.delivery_attempt(flight.message.reconsume_times))
            self.sim.emit_deliver(self.group, self.client_id, view)
            views.append(view)
        return views

    def ack(self, view: MessageView) -> int:
        assert view.receipt_handle is not None
        code = self.sim.broker.ack(view.receipt_handle)
        if code == codes.OK:
            self.sim.emit("ACK", topic=view.topic, group=self.group, client_id=self.client_id, msg_id=view.msg_id,
                          key=view.key, attempt=view.delivery_attempt)
        return code

    def change_invisible_duration(self, view: MessageView, invisible_ms: int) -> tuple[int, str | None]:
        assert view.receipt_handle is not None
        return self.sim.broker.change_invisible_duration(view.receipt_handle, invisible_ms)


class PushConsumer5x:
    """Push consumer with auto-renew; nack is change-invisible-duration; FIFO retries locally."""

    def __init__(self, sim: "Simulation", group: str, topic: str, listener: Listener, client_id: str,
                 sdk: retry5x.Sdk = "java", expression: str = "*") -> None:
        self.sim, self.group, self.topic, self.listener, self.client_id = sim, group, topic, listener, client_id
        self.sdk = sdk
        self.expression = expression
        self.running = False
        self._attempt_ids = itertools.count(1)
        self.tags = filter_rules.parse_tag_expression(expression).tags

    @property
    def fifo(self) -> bool:
        return self.sim.broker.group(self.group).fifo

    @property
    def policy(self) -> "retry5x.SdkRetryPolicy | node5x.NodeRetryPolicy":
        # implements SDK-NODE-01, SDK-NODE-02 through the rules it calls
        return retry5x.sdk_consumer_policy(self.sdk, self.sim.broker.group(self.group).settings())

    def start(self) -> None:
        self.running = True
        announce_start(self.sim, self.group, self.topic, self.client_id, "push", self.expression)
        self.sim.broker.heartbeating.add(self.client_id)
        self._polls = itertools.count(1)
        self._poll = 0
        self.sim.broker.on_arrival(self.topic, self.pump)
        if retry5x.retry_arrival_wakes_long_poll(self.sim.release):  # RETRY-5X-11
            self.sim.broker.on_arrival(retry4x.pop_retry_topic_v1(self.group, self.topic), self.pump)
        self.sim.broker.first_receive(self.group, self.topic)
        self.sim.clock.call_later(0, self.pump)

    def shutdown(self) -> None:
        """Stop, then ``NotifyClientTermination`` as the SDKs' shutdown does: the proxy clears the handles it
        still renews for this client at once (RETRY-5X-09), a FIFO message waiting for a local retry among them."""
        self._stop()
        self._announce_stop("shutdown")
        self.sim.broker.client_gone(self.client_id)

    def crash(self) -> None:
        """Die without a word: the proxy clears what the client held once it is idle past the channel expiry
        (RETRY-5X-09)."""
        self._stop()
        self._announce_stop("crash")

    def _announce_stop(self, how: str) -> None:
        self.sim.emit("CONSUMER_STOP", topic=self.topic, group=self.group, client_id=self.client_id,
                      detail={"how": how})

    def _stop(self) -> None:
        """No more receives, heartbeats or local retries."""
        self.running = False
        self.sim.broker.heartbeating.discard(self.client_id)
        self.sim.broker.remove_arrival(self.pump)

    def pump(self) -> None:
        if not self.running:
            return
        self.sim.broker.client_seen(self.client_id)  # each receive is a call of the client (RETRY-5X-09)
        while True:
            flights = self.sim.broker.pop(self.group, self.topic, retry5x.DEFAULT_INVISIBLE_MS,
                                          retry5x.RECEIVE_BATCH_SIZE, f"{self.client_id}-{next(self._attempt_ids)}",
                                          fifo=self.fifo, auto_renew=True, tags=self.tags,
                                          client_id=self.client_id)
            if not flights:
                self._long_poll()
                return
            if self.fifo:
                by_queue: dict[tuple[str, int], list[InFlight]] = defaultdict(list)
                for flight in flights:
                    by_queue[(flight.message.topic, flight.message.queue_id)].append(flight)
                for key, batch in by_queue.items():
                    self._fifo_next(key, batch, 0, None)
                return
            for flight in flights:
                self._consume_standard(flight)

    def _long_poll(self) -> None:
        """Wait in a long-poll receive. Before 5.2.0 a revived message does not wake it: the consumer sees
        the message when the poll times out (or a new message wakes it), so the model ends the poll
        after the proxy's long-polling time while a redelivery of the group is pending (RETRY-5X-11)."""
        self._poll = next(self._polls)
        if retry5x.retry_arrival_wakes_long_poll(self.sim.release) or not self.sim.broker.awaiting_redelivery(self.group):
            return
        self.sim.clock.call_later(retry5x.PROXY_LONG_POLLING_MS_5_0, lambda poll=self._poll: self._poll_timeout(poll))

    def _poll_timeout(self, poll: int) -> None:
        if poll == self._poll:
            self.pump()

    def _run_listener(self, view: MessageView) -> ListenerOutcome:
        self.sim.emit_deliver(self.group, self.client_id, view)
        outcome = self.listener(view)
        ok = outcome is ListenerOutcome.SUCCESS
        self.sim.emit("CONSUME_OK" if ok else "CONSUME_FAIL", topic=view.topic, group=self.group,
                      client_id=self.client_id, msg_id=view.msg_id, key=view.key, attempt=view.delivery_attempt,
                      queue_id=view.queue_id, queue_offset=view.queue_offset, detail={"outcome": outcome.value})
        return outcome

    def _consume_standard(self, flight: InFlight) -> None:
        """RETRY-5X-06: success -> ack; failure -> change invisible duration by the SDK's policy."""
        attempt = retry5x.delivery_attempt(flight.message.reconsume_times)
        view = _view(flight, attempt)
        if self._run_listener(view) is ListenerOutcome.SUCCESS:
            self.sim.broker.ack(flight.receipt)
            self.sim.emit("ACK", topic=view.topic, group=self.group, client_id=self.client_id, msg_id=view.msg_id,
                          key=view.key, attempt=attempt)
            return
        wait = retry5x.nack_invisible_ms(self.policy, attempt)
        self.sim.broker.change_invisible_duration(flight.receipt, wait)
        max_attempts = self.sim.broker.group(self.group).settings().backoff.max_attempts
        if attempt < max_attempts:
            self.sim.emit("RETRY_SCHEDULED", topic=view.topic, group=self.group, client_id=self.client_id,
                          msg_id=view.msg_id, key=view.key, attempt=attempt + 1, expected_delay_ms=wait,
                          detail={"via": "change_invisible_duration"})

    def _fifo_next(self, key: tuple[str, int], batch: list[InFlight], index: int, attempt: int | None) -> None:
        """RETRY-5X-08: consume a FIFO batch in order; a failure is retried locally, blocking the queue."""
        # implements SDK-NODE-04 through the rules it calls
        if not self.running:  # a local retry falls due after shutdown: the SDK's executors are gone
            return
        if index >= len(batch):
            self.sim.clock.call_later(0, self.pump)
            return
        flight = batch[index]
        server_attempt = retry5x.delivery_attempt(flight.message.reconsume_times)
        if attempt is None:
            attempt = server_attempt if retry5x.counts_from_server_attempt(self.sdk) else 1
        view = _view(flight, attempt)
        outcome = self._run_listener(view)
        policy = self.policy
        if outcome is ListenerOutcome.SUCCESS:
            self.sim.broker.ack(flight.receipt)
            self.sim.emit("ACK", topic=view.topic, group=self.group, client_id=self.client_id, msg_id=view.msg_id,
                          key=view.key, attempt=attempt)
            self._fifo_next(key, batch, index + 1, None)
            return
        if attempt < policy.max_attempts:
            wait = policy.next_attempt_delay_ms(attempt)
            self.sim.emit("RETRY_SCHEDULED", topic=view.topic, group=self.group, client_id=self.client_id,
                          msg_id=view.msg_id, key=view.key, attempt=attempt + 1, expected_delay_ms=wait,
                          detail={"via": "fifo_local", "sdk": self.sdk})
            self.sim.clock.call_later(wait, lambda: self._fifo_next(key, batch, index, attempt + 1))
            return
        self.sim.broker.forward_in_flight_to_dlq(flight.receipt)
        self._fifo_next(key, batch, index + 1, None)
