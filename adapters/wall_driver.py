"""An SDK driver against a real server on the wall clock: what the harness does around the driver.

A driver runs SDK clients only; everything a user would do with ``mqadmin`` and an ordinary consumer is
done here, through the name server's brokers: topics and groups are set up with the remoting admin codes,
dead letters are read from ``%DLQ%group`` with plain pulls, names carry a per-session suffix on a shared
server, and ``settle`` waits until every sent message is finished for each subscribed group. The
``remoting://`` (4.x SDK) and ``nodejs://`` (Node.js 5.x SDK) targets are kinds of this.
"""
from __future__ import annotations

import atexit
import logging
import itertools
import time
from dataclasses import dataclass
from typing import Any, Callable

from history.outcomes import NotApplicable
from reference_impl.rules import transaction as tx_rules
from spec import versions

from .base import SETTLE_LIMIT_MS, TargetError, require_wall_budget, wall_budget_s, wall_wait_s
from .driver import DriverProcess, DriverTarget
from .names import SessionNames
from .remoting_client import AdminRefused, RemotingAdmin, RemotingClient, RemotingClientError

log = logging.getLogger("rmqc.wall_driver")

STEP_S = 0.02
"""Wall seconds of one wait in the driver while the harness waits (the listeners' questions come between)."""


@dataclass
class Subscription:
    topic: str
    tags: frozenset[str]
    """empty: every tag"""
    broadcasting: bool = False
    instances: int = 1


def tags_of(expression: str) -> frozenset[str]:
    """The tags a tag expression subscribes to; empty for ``*`` (every tag)."""
    expression = (expression or "*").strip()
    return frozenset() if expression == "*" else frozenset(t.strip() for t in expression.split("||") if t.strip())


class WallDriverTarget(DriverTarget):
    """A session of an SDK driver of this target's own, against the name server ``namesrv``'s brokers."""

    wall_clock = True  # an SDK against a real endpoint: every wait is the wall's (issue 55)
    FINISHED_KINDS: tuple[str, ...] = ("CONSUME_OK", "DLQ")
    """Events after which a message is done for a group (a 5.x push consumer: its ack)."""

    def __init__(self, name: str, namesrv: str, command: str, profile: str, *, run_id: str, seed: int,
                 release: str = versions.LATEST, budget_s: float | None = None, shared: bool = False) -> None:
        """``shared``: a session in the one process of ``command`` (a driver that serves many sessions); else
        a driver process of this session's own."""
        self.namesrv = namesrv
        self.admin = RemotingAdmin(namesrv)
        self.names = SessionNames()
        self.budget_s = budget_s or wall_budget_s()
        process = None
        if not shared:
            process = DriverProcess(command)
            atexit.register(process.stop)  # a session the suites never closed
        super().__init__(command, profile, run_id=run_id, seed=seed, release=release, process=process)
        self.name = name
        self.release = release
        self._subscriptions: dict[str, Subscription] = {}
        self._dlq_groups: list[str] = []  # every group a consumer of this session consumed with
        self._sent: list[tuple[str, str | None, str | None]] = []  # (topic, key, tag) of each sent message
        self._dlq_offsets: dict[tuple[str, str, int], int] = {}
        self._open_halves: dict[str | None, int] = {}  # key -> spec ms of the half or its last check, while open
        self._seq = itertools.count(10 ** 9)

    # ---- names: this session's own topics and groups on a shared server ----

    def outgoing(self, fields: dict[str, Any]) -> dict[str, Any]:
        out = {k: self.names.real(v) if k in ("topic", "group", "name") and isinstance(v, str) else v
               for k, v in fields.items()}
        if isinstance(out.get("topics"), list):
            out["topics"] = [self.names.real(t) for t in out["topics"]]
        if isinstance(out.get("messages"), list):  # a batch: each message names its topic
            out["messages"] = [{**m, "topic": self.names.real(m["topic"])} if isinstance(m, dict)
                               and isinstance(m.get("topic"), str) else m for m in out["messages"]]
        return out

    def call(self, cmd: str, **fields: Any) -> dict[str, Any]:
        """A 4.x consumer's state names its queues by the server's topic names: told back in this session's."""
        answer = super().call(cmd, **fields)
        if cmd == "consumer_state":
            answer = {**answer, "assigned": [[self.names.logical(t), *rest] for t, *rest in answer.get("assigned", [])],
                      "offsets": [[self.names.logical(t), *rest] for t, *rest in answer.get("offsets", [])],
                      "locks": [[self.names.logical(t), *rest] for t, *rest in answer.get("locks", [])]}
        elif cmd in ("read_stored", "stored_messages"):  # what a topic stores, read back: in this session's names
            answer = {**answer, "messages": [self._stored_names(m) for m in answer.get("messages", [])]}
        return answer

    NAMED_PROPERTIES = ("RETRY_TOPIC", "REAL_TOPIC", "PGROUP")
    """System properties whose values are topic or group names."""

    def _stored_names(self, message: dict[str, Any]) -> dict[str, Any]:
        out = dict(self.incoming(message))
        if isinstance(out.get("properties"), dict):
            out["properties"] = {k: self.names.logical(v) if k in self.NAMED_PROPERTIES and isinstance(v, str) else v
                                 for k, v in out["properties"].items()}
        return out

    def incoming(self, row: Any) -> Any:
        """A row from the driver in this session's names: its topic, group and stored topic, the stored topic in an
        event's detail too (where a 4.x delivery says which topic held the copy: the topic or %RETRY%group)."""
        out = {k: self.names.logical(v) if k in ("topic", "group", "stored_topic") and isinstance(v, str) else v
               for k, v in row.items()}
        detail = out.get("detail")
        if isinstance(detail, dict) and isinstance(detail.get("stored_topic"), str):
            out["detail"] = {**detail, "stored_topic": self.names.logical(detail["stored_topic"])}
        return out

    # ---- set-up through the admin codes ----

    def _set_up(self, what: str, action: Callable[[], Any], courtesy: bool = False) -> None:
        """``courtesy``: a step the harness takes on its own account before a client starts (a retry topic made
        early); a broker that refuses it (an illegal group name, say) leaves the client to meet the refusal
        itself, which is what a test of that name observes."""
        try:
            action()
        except AdminRefused as exc:
            if not courtesy:
                raise TargetError(f"{self.name}: {what} through the name server failed: {exc}") from None
            log.info("%s: %s refused; the client meets the broker as it is: %s", self.name, what, exc)
        except RemotingClientError as exc:
            raise TargetError(f"{self.name}: {what} through the name server failed: {exc}") from None

    def inject_fault(self, name: str, count: int = 1) -> None:
        raise NotApplicable(f"{self.name}: a real SDK and broker take no injected {name} fault")

    def subscribe(self, group: str, topic: str, expression: str, broadcasting: bool = False) -> None:
        """What ``settle`` waits for: every message of ``topic`` with a matching tag, for ``group``."""
        self._watch_dead_letters(group)
        known = self._subscriptions.get(group)
        self._subscriptions[group] = Subscription(topic, tags_of(expression), broadcasting,
                                                  known.instances + 1 if known else 1)

    def _watch_dead_letters(self, group: str) -> None:
        if group not in self._dlq_groups:
            self._dlq_groups.append(group)

    def simple_consumer_5x(self, group: str, topic: str, **options: Any) -> Any:
        """Its group's dead letters are read too; ``settle`` does not wait for it (the suite receives)."""
        self._watch_dead_letters(group)
        return super().simple_consumer_5x(group, topic, **options)

    # ---- what the harness watches ----

    def events(self) -> list[Any]:
        """Everything seen so far, with what reached the dead-letter topics of this session's groups."""
        if self.process.process.poll() is None and self.process.broken is None:
            self._read_dead_letters()
        return self._events

    def received(self, row: Any) -> None:
        super().received(row)
        event = self._events[-1]
        detail = event.detail or {}
        if event.kind == "SEND_OK" and event.topic:
            self._sent.append((event.topic, event.key, detail.get("tags")))
        elif event.kind == "TX_HALF":
            if detail.get("local_state", "UNKNOW") == "UNKNOW":
                # checks start after the half's immunity (CHECK_IMMUNITY_TIME_IN_SECONDS), if it has one
                self._open_halves[event.key] = event.ts_ms + 1000 * int(detail.get("immunity_seconds", 0))
            elif detail.get("local_state") == "COMMIT_MESSAGE" and event.topic:
                self._sent.append((event.topic, event.key, None))
        elif event.kind == "TX_CHECK" and event.key in self._open_halves:
            self._open_halves[event.key] = event.ts_ms

    def transaction_producer(self, group: str, check: Any, topics: Any = ()) -> Any:
        """The checker's answers close a half (or make it deliverable) for ``settle``."""
        def watched(key: str | None, n: int) -> Any:
            state = check(key, n)
            if state is not None and state.name != "UNKNOW":
                self._open_halves.pop(key, None)
                if state.name == "COMMIT_MESSAGE":
                    topic = next((e.topic for e in self._events if e.kind == "TX_HALF" and e.key == key), None)
                    if topic:
                        self._sent.append((topic, key, None))
            return state

        return super().transaction_producer(group, watched, topics)

    def _checks_may_come(self) -> bool:
        """An open half is checked every interval after the transaction timeout, at most 15 times (TX-03, TX-04):
        once no check came for two intervals past that, the broker has given up on it."""
        return tx_rules.checks_may_still_come(list(self._open_halves.values()), self.now_ms(), self.release)

    def _finished(self, group: str, key: str | None) -> bool:
        """A message is done for a group once finished (consumed, or acked) or dead-lettered, or (broadcasting,
        which never sends back: RETRY-CONC-02) answered by every instance."""
        sub = self._subscriptions[group]
        kinds = self.FINISHED_KINDS + (("CONSUME_FAIL",) if sub.broadcasting else ())
        done = sum(1 for e in self._events if e.group == group and e.key == key and e.kind in kinds)
        return done >= (sub.instances if sub.broadcasting else 1)

    def _pending(self) -> list[tuple[str, str | None]]:
        return [(group, key) for group, sub in self._subscriptions.items() for topic, key, tag in self._sent
                if topic == sub.topic and (not sub.tags or tag in sub.tags) and not self._finished(group, key)]

    def _read_dead_letters(self) -> None:
        """Pull what reached ``%DLQ%group`` of each group, as an ordinary consumer of that topic would."""
        for group in self._dlq_groups:
            topic = self.names.real(f"%DLQ%{group}")
            try:
                with RemotingClient(self.namesrv, 5) as ns:
                    route = ns.route(topic)
                if route is None:
                    continue
                for broker in route.get("brokerDatas", []):
                    address = broker["brokerAddrs"].get("0") or broker["brokerAddrs"].get(0)
                    queues = next((q["readQueueNums"] for q in route.get("queueDatas", [])
                                   if q["brokerName"] == broker["brokerName"]), 1)
                    with RemotingClient(address, 5) as client:
                        for queue_id in range(int(queues)):
                            self._read_dlq_queue(client, group, topic, queue_id)
            except RemotingClientError as exc:
                raise TargetError(f"{self.name}: reading {topic} failed: {exc}") from None

    def _read_dlq_queue(self, client: RemotingClient, group: str, topic: str, queue_id: int) -> None:
        where = (client.address, topic, queue_id)
        while True:
            offset = self._dlq_offsets.get(where, 0)
            _, messages, next_offset = client.pull(f"rmqc-dlq-reader-{group}", topic, queue_id, offset)
            if not messages:
                return
            self._dlq_offsets[where] = next_offset
            for m in messages:
                key = m.properties.get("KEYS")
                msg_id = m.properties.get("UNIQ_KEY")
                attempts = sum(1 for e in self._events if e.kind == "DELIVER" and e.group == group and e.key == key)
                self.received({"run_id": "run", "profile": self.profile, "seq": next(self._seq),
                               "ts_ms": self.now_ms(), "kind": "DLQ", "topic": topic, "group": self.names.real(group),
                               "msg_id": msg_id, "key": key, "attempt": attempts,
                               "detail": {"reconsume_times": str(m.reconsume_times)}})

    # ---- time ----

    def require_duration(self, spec_ms: float) -> None:
        require_wall_budget(self.name, spec_ms, self.time_scale, self.budget_s)

    def settle(self, max_ms: int = SETTLE_LIMIT_MS) -> None:
        """Until every sent message is finished or dead-lettered for each subscribed group, then a quiet of 20
        spec seconds (at least 50 ms) for stray redeliveries; bounded by ``max_ms`` and the budget. The wait
        is a run of ``step`` calls, so the listeners' questions keep being answered."""
        start = time.monotonic()
        deadline = start + wall_wait_s(max_ms * self.time_scale / 1000, self.budget_s)
        while time.monotonic() < deadline:
            self._read_dead_letters()
            if not self._pending() and not self._checks_may_come():
                break
            self._step(STEP_S)
        quiet_end = min(deadline, time.monotonic() + max(0.05, 20 * self.time_scale))
        while time.monotonic() < quiet_end:
            self._step(STEP_S)
        self._read_dead_letters()

    def advance(self, delta_ms: int) -> None:
        """Let ``delta_ms`` of spec time pass while answering the listeners; not applicable at once when that
        would outlast the test's budget (issue 55: an hour of spec time at time scale 1 is an hour)."""
        self.require_duration(delta_ms)
        end = time.monotonic() + delta_ms * self.time_scale / 1000
        while time.monotonic() < end:
            self._step(min(end - time.monotonic(), STEP_S))

    def _step(self, wall_s: float) -> None:
        """Up to ``wall_s`` of waiting in the driver, answering the listeners' questions meanwhile."""
        self.call("step", deadline_ms=self.now_ms() + max(1, int(wall_s / self.time_scale * 1000)))


__all__ = ["WallDriverTarget", "Subscription", "tags_of", "STEP_S"]
