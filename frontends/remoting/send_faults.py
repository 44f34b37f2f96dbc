"""``rmqc serve``'s own broker requests, which no real broker has: the harness injects a send fault into one broker
and reads back every send attempt the brokers answered (SEND-4X-01, SEND-4X-02, SEND-4X-03, SEND-4X-05).

A real client's send loop is inside the client; what the suites need from it (how many attempts, on which broker,
what each met) is what the brokers saw. So every SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE a served
broker takes is logged with its message's client id (``UNIQ_KEY``, the same in every attempt of one send) and
key, and with what the attempt met: the response code, or ``timeout`` where the broker (as injected) never
answered. A fault is injected for the topics whose names end with a scope (a harness session's name suffix, so
one session's faults never reach another's sends, nor the next Hypothesis example's), and taken by the broker's
name as the reference's producers take theirs (``BrokerFaults``). A real broker answers these codes
REQUEST_CODE_NOT_SUPPORTED, which the harness reads as "no injected faults here".

``unreachable`` is refused: a broker that refuses connections sees no attempt to count, and one that takes the
request and drops the connection is, to the 4.x Java client, a timeout (``NettyRemotingClient`` fails a pending
request fast only when the client itself closes the channel).
"""
from __future__ import annotations

import collections
import itertools
import json
import threading
from dataclasses import asdict, dataclass, field

from history.values import SEND_OUTCOMES
from reference_impl.model.broker import BrokerFaults
from reference_impl.rules import codes

from .codec import Command

INJECT_SEND_FAULT, SEND_ATTEMPTS = 90001, 90002
"""Request codes only ``rmqc serve``'s brokers answer (far above ``RequestCode``'s)."""
SEND_BACK = "send_back"
"""Not a send outcome: the next ``count`` CONSUMER_SEND_MSG_BACK requests of a group in the scope fail with
SYSTEM_ERROR, so the client republishes the message itself (RETRY-CONC-08)."""
NOT_SERVED = ("unreachable",)
"""Injected faults a served broker cannot show a real client (above)."""
REFUSALS = {"system_busy": codes.R_SYSTEM_BUSY, "system_error": codes.R_SYSTEM_ERROR,
            "message_illegal": codes.R_MESSAGE_ILLEGAL}
"""Faults the broker answers with an error code, storing nothing."""
NO_ANSWER = None
"""What a send handler returns for a request the broker never answers."""


@dataclass
class SendAttempt:
    """One send request a served broker took, in the order the brokers took them."""

    seq: int
    broker: str
    uniq_id: str
    key: str | None
    outcome: str
    """the response code as text (``0`` for SUCCESS), or ``timeout``: no answer"""
    stored: bool


@dataclass
class AttemptLog:
    """Every send attempt of one ``rmqc serve``, shared by its brokers, by the message's client id."""

    _by_uniq: "collections.OrderedDict[str, list[SendAttempt]]" = field(default_factory=collections.OrderedDict)
    _seq: "itertools.count[int]" = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    MOST = 100_000
    """Messages kept at most; the oldest go first (a long run's early sends are long asked for)."""

    def add(self, broker: str, uniq_id: str, key: str | None, outcome: str, stored: bool) -> None:
        with self._lock:
            attempt = SendAttempt(next(self._seq), broker, uniq_id, key, outcome, stored)
            self._by_uniq.setdefault(uniq_id, []).append(attempt)
            if len(self._by_uniq) > self.MOST:
                self._by_uniq.popitem(last=False)

    def of(self, uniq_id: str | None = None, key: str | None = None) -> list[SendAttempt]:
        """The attempts of the message with client id ``uniq_id`` (and ``key``, if given), or of every message
        with ``key``, oldest first."""
        with self._lock:
            if uniq_id is not None:
                found = list(self._by_uniq.get(uniq_id, ()))
            else:
                found = sorted((a for attempts in self._by_uniq.values() for a in attempts), key=lambda a: a.seq)
            return [a for a in found if key is None or a.key == key]


@dataclass
class ScopedFaults:
    """Injected send faults by scope (a topic-name suffix; empty: every topic), shared by the served brokers."""

    scopes: dict[str, BrokerFaults] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, scope: str, broker: str, outcome: str, count: int) -> None:
        with self._lock:
            self.scopes.setdefault(scope, BrokerFaults()).add_send_fault(broker, outcome, count)

    def take(self, broker: str, topic: str) -> str | None:
        """The fault the next attempt on ``broker`` for ``topic`` meets (counted down), or None."""
        with self._lock:
            for scope, faults in self.scopes.items():
                if topic.endswith(scope):
                    fault = faults.take_send(broker)
                    if fault is not None:
                        return fault
        return None

    def set_send_back(self, scope: str, count: int) -> None:
        """The scope's next ``count`` send-backs fail (-1: all of them)."""
        with self._lock:
            self.scopes.setdefault(scope, BrokerFaults()).send_back_failures = count

    def take_send_back(self, group: str) -> bool:
        """Whether the next CONSUMER_SEND_MSG_BACK of ``group`` fails (counted down; RETRY-CONC-08)."""
        with self._lock:
            return any(faults.take("send_back_failures") for scope, faults in self.scopes.items()
                       if group.endswith(scope))

    def clear(self, scope: str) -> None:
        with self._lock:
            self.scopes.pop(scope, None)


def send_fault(broker: str, outcome: str) -> tuple[int | None, bool]:
    """What an injected ``outcome`` makes one attempt on a served broker do: (the code it answers, or None for
    no answer; whether it stores the message first)."""
    if outcome in REFUSALS:
        return REFUSALS[outcome], False
    if outcome == "flush_disk_timeout":
        return codes.R_FLUSH_DISK_TIMEOUT, True
    if outcome == "timeout":
        return None, False
    if outcome == "timeout_after_store":
        return None, True
    raise ValueError(f"{broker}: no injected {outcome!r} here")


def inject(request: Command, broker: str, faults: ScopedFaults) -> Command:
    """INJECT_SEND_FAULT: the next ``count`` send attempts on this broker for a topic ending with ``scope`` meet
    ``outcome`` (-1: every one); ``clear``: the scope's faults go."""
    outcome, count = request.ext.get("outcome", ""), int(request.ext.get("count", 1))
    scope = request.ext.get("scope", "")
    if request.ext.get("clear") == "true":
        faults.clear(scope)
        return request.response(codes.R_SUCCESS)
    if outcome == SEND_BACK:
        faults.set_send_back(scope, count)
        return request.response(codes.R_SUCCESS)
    if outcome in NOT_SERVED:
        return request.response(codes.R_SYSTEM_ERROR, f"rmqc serve cannot show a real client an {outcome} broker: "
                                "a refused connection reaches no broker to count it")
    if outcome not in SEND_OUTCOMES:
        return request.response(codes.R_SYSTEM_ERROR, f"unknown send fault {outcome!r}; known: "
                                f"{', '.join(o for o in SEND_OUTCOMES if o not in NOT_SERVED)}")
    faults.add(scope, broker, outcome, count)
    return request.response(codes.R_SUCCESS)


def attempts_answer(request: Command, log: AttemptLog) -> Command:
    """SEND_ATTEMPTS: the attempts of one message (by ``uniqId``, else ``key``), oldest first, as JSON."""
    uniq_id, key = request.ext.get("uniqId") or None, request.ext.get("key") or None
    found = log.of(uniq_id, key) if uniq_id or key else []
    body = json.dumps([asdict(a) for a in found], separators=(",", ":")).encode("utf-8")
    return request.response(codes.R_SUCCESS, body=body)
