"""Histories with the faults of a real cluster, made from a correct one (issue 50, item 4): the checks must stay
sound on them (``tests/test_spark_soundness_faults.py``).

A real client under faults cannot always know how its send ended. The reference model's programs run on a
healthy broker; ``with_faults`` rewrites the event list of such a run, deterministically from a seed, as if its
sends had met one of three faults, each rewrite keeping the history one a correct broker and client could
produce (the reference's own timing and consumers untouched: ``reference_impl/model`` is not changed):

- **a broker killed and restarted on its store** (``kill``): the sends in flight when it died (a sync producer's
  one, and the async sends beside it) end SEND_UNKNOWN. Some had been stored: the store survives the restart and
  their deliveries stay (``unknown-stored``). Some had not: every row of their message goes (``unknown-lost``). A
  send whose client retried under the same id before giving up may have been stored by both attempts
  (``unknown-twice``: a copy delivered besides, see below).
- **a stalled broker or a reset connection** (``stall``): the first attempt of a send times out and the client
  retries at once under the same message id (the Python 5.x SDK does; so does a 4.x producer, on another broker).
  The retry is stored and answered: one SEND_OK of two attempts. If the broker had stored the first attempt too,
  the message is stored twice (``retry-twice``: a copy delivered besides); if not, once (``retry-once``). When
  every attempt times out the send is SEND_UNKNOWN, stored once or not at all, as for a kill.
- **a refusal** (``refuse``: SYSTEM_BUSY, flow control): the broker stores nothing and says so, SEND_FAIL. A send
  of the run is refused (every row of its message goes, ``refused``) and another, new, is refused besides
  (``refused-new``: a SEND_INVOKE and its SEND_FAIL, under a message id of its own, never delivered).

A copy a client's retry stored is delivered like the first: from attempt 1. Where the first copy was taken
(CONSUME_OK, and its ACK on 5.x) or dead-lettered, the listener no longer fails that key, so the copy is one
successful delivery (and its ack, where the run logs acks) to the consumer that took the first copy (or had its
last delivery), right after the first copy's success or dead letter (at the end of that millisecond, one
millisecond later when the log leaves room), or, in a FIFO line, right after the first copy's last row (the
broker serves a message group in queue order, and the copy was stored behind the first, before the next message
was sent); none where that consumer had stopped by then. A broadcasting group's every client that took the first
copy takes the second. Consumers are idempotent: the copy applies nothing the first copy did not (no APPLY row
is added).

Only plain sends are rewritten (a SEND_OK with a message id, of a sync or async send: a oneway send is SEND_UNKNOWN
already, a transaction's commit is its TX_END's). Rows whose ``seq`` the rewrites disturb are numbered again in
each run's order. Each rewritten row's ``detail`` says which fault made it (``fault``); the checks read no
``detail``.
"""
from __future__ import annotations

import dataclasses
import random
from collections import Counter, defaultdict
from typing import Iterable, Sequence

from history.events import Event
from history.profiles import GRPC_5X, REMOTING_4X

FAULTS = ("kill", "stall", "refuse")
REWRITES = ("unknown-stored", "unknown-lost", "unknown-twice", "retry-twice", "retry-once", "refused", "refused-new",
            "copies")
"""What ``with_faults`` tallies: the sends rewritten each way, and the copies' deliveries added (``copies``)."""
MESSAGE_ROWS = ("DELIVER", "CONSUME_OK", "CONSUME_FAIL", "ACK", "RETRY_SCHEDULED", "DLQ", "APPLY")
"""The rows of a message's deliveries: they go with a message that was never stored."""
SEND_MODES = ("sync", "async")
MEMBERS = ("CONSUMER_START", "CONSUMER_STOP", "SETTLED", "REBALANCE")
"""Rows a copy's delivery is not moved past in its millisecond: its consumer may be leaving, the run ending."""
KILL_WINDOW_MS = 1_000
IN_FLIGHT = 3
"""A kill catches in flight the send of its moment and, when they are async, up to two more of the second after."""
REFUSED_CODE = {GRPC_5X: "42900", REMOTING_4X: "2"}
"""A refusal's code: 5.x TOO_MANY_REQUESTS, 4.x SYSTEM_BUSY."""


@dataclasses.dataclass
class _Run:
    """One run's events (a program's history) and what is done to them."""

    events: list[Event]
    rng: random.Random
    tally: Counter

    def __post_init__(self) -> None:
        self.txs = {e.msg_id for e in self.events if e.kind.startswith("TX_")}
        self.broadcasting = {e.group for e in self.events
                             if e.kind == "CONSUMER_START" and e.detail.get("mode") == "broadcasting"}
        self.dropped: set[str] = set()
        self.after: dict[int, list[Event]] = defaultdict(list)  # place -> rows added after it
        self.added: list[Event] = []                            # rows added at the run's end of sends
        self.done: set[str] = set()                             # messages rewritten
        self.acks = any(e.kind == "ACK" for e in self.events)  # the run's consumers log their acks (5.x)

    def candidates(self) -> list[int]:
        """Places of the plain sends not rewritten yet."""
        return [i for i, e in enumerate(self.events)
                if e.kind == "SEND_OK" and e.msg_id and e.msg_id not in self.txs and e.msg_id not in self.done
                and e.detail.get("mode", "sync") in SEND_MODES]

    def end(self, place: int, kind: str, fault: str, attempts: int, **detail: str) -> None:
        """The send at ``place`` ends ``kind`` after ``attempts`` attempts."""
        e = self.events[place]
        failure = {"kill": "connection reset", "stall": "timeout", "refuse": "refused"}[fault]
        broker = e.detail.get("broker", "broker")
        tried = ",".join([f"{broker}:{failure}"] * (attempts - (kind == "SEND_OK"))
                         + ([f"{broker}:0"] if kind == "SEND_OK" else []))
        keep = {k: v for k, v in e.detail.items() if k == "mode" or (kind == "SEND_OK" and k != "duplicates")}
        fields: dict = {"kind": kind, "attempt": attempts,
                        "detail": {**keep, "attempts": tried, "fault": fault, **detail}}
        if kind != "SEND_OK":  # nothing answered: no queue, no offset
            fields.update(queue_id=None, queue_offset=None)
        self.events[place] = dataclasses.replace(e, **fields)
        self.done.add(e.msg_id or "")

    def drop(self, msg_id: str) -> None:
        self.dropped.add(msg_id)

    def copy(self, msg_id: str) -> int:
        """A second stored copy of ``msg_id`` delivered, from attempt 1, wherever the first copy was taken or
        dead-lettered (see the module's docstring); how many deliveries were added."""
        lives: dict[str, list[int]] = defaultdict(list)
        for i, e in enumerate(self.events):
            if e.msg_id == msg_id and e.group and e.kind in MESSAGE_ROWS:
                lives[e.group].append(i)
        added = 0
        for group, places in sorted(lives.items()):
            delivered = [i for i in places if self.events[i].kind == "DELIVER"]
            fifo = any(self.events[i].message_group is not None for i in delivered)
            oks = [i for i in places if self.events[i].kind == "CONSUME_OK"]
            dead = [i for i in places if self.events[i].kind == "DLQ"]
            if oks:  # after the first copy's success: each client of a broadcasting group has a copy of its own
                clients = sorted({self.events[i].client_id or "" for i in oks})
                for client in clients if group in self.broadcasting else clients[:1]:
                    ok = next(i for i in oks if (self.events[i].client_id or "") == client)
                    success = self.events[ok]
                    acks = [i for i in places if i > ok and self.events[i].kind == "ACK" and
                            self.events[i].attempt == success.attempt and (self.events[i].client_id or "") == client]
                    anchor = places[-1] if fifo else (acks[0] if acks else ok)
                    added += self._deliver_copy(anchor, client, places, success,
                                                self.events[acks[0]] if acks else None, fifo)
            elif dead and delivered:  # after the first copy's dead letter: the key's listener fails no more
                client = self.events[delivered[-1]].client_id or ""
                first = self.events[delivered[-1]]
                success = dataclasses.replace(first, kind="CONSUME_OK", message_group=None,
                                              detail={"outcome": "SUCCESS"})
                ack = dataclasses.replace(success, kind="ACK", queue_id=None, detail={}) if self.acks else None
                added += self._deliver_copy(places[-1] if fifo else dead[-1], client, places, success, ack, fifo)
        return added

    def _deliver_copy(self, anchor: int, client: str, places: list[int], success: Event, ack: Event | None,
                      fifo: bool) -> int:
        """The copy's delivery to ``client``, its success and ack, after the row at ``anchor``; 0 when the client
        was gone by then (nothing added), else 1."""
        at, ts = anchor, self.events[anchor].ts_ms
        if not fifo:  # to the end of the anchor's millisecond, and a millisecond later when the log leaves room
            while at + 1 < len(self.events) and self.events[at + 1].ts_ms == ts \
                    and self.events[at + 1].kind not in MEMBERS:
                at += 1
            if at + 1 < len(self.events) and self.events[at + 1].ts_ms > ts:
                ts += 1
            elif at + 1 >= len(self.events):
                at = anchor
        if any(e.kind == "CONSUMER_STOP" and (e.client_id or "") == client for e in self.events[:at + 1]):
            return 0
        first = next(self.events[i] for i in places
                     if self.events[i].kind == "DELIVER" and (self.events[i].client_id or "") == client)
        mark = {"fault": "client retry copy"}
        rows = [dataclasses.replace(first, ts_ms=ts, attempt=1, queue_offset=None, detail={  # stored elsewhere
                    **first.detail, "reconsume_times": "0", "since_previous_ms": "", **mark}),
                dataclasses.replace(success, ts_ms=ts, attempt=1, client_id=first.client_id,
                                    detail={**success.detail, **mark})]
        if ack is not None:
            rows.append(dataclasses.replace(ack, ts_ms=ts, attempt=1, client_id=first.client_id,
                                            detail={**ack.detail, **mark}))
        self.after[at].extend(rows)
        return 1

    def result(self) -> list[Event]:
        out: list[Event] = []
        for i, e in enumerate(self.events):
            if not (e.kind in MESSAGE_ROWS and e.msg_id in self.dropped):
                out.append(e)
            out.extend(self.after.get(i, []))
        out = _with_added(out, self.added)
        return [dataclasses.replace(e, seq=n) for n, e in enumerate(out)]


def _with_added(rows: list[Event], added: list[Event]) -> list[Event]:
    """``rows`` with each of ``added`` after the last row at or before its time."""
    out = list(rows)
    for extra in added:
        place = max((i + 1 for i, e in enumerate(out) if e.ts_ms <= extra.ts_ms), default=0)
        out.insert(place, extra)
    return out


def _kill(run: _Run, profile: str) -> None:
    places = run.candidates()
    if not places:
        return
    first = run.rng.randrange(len(places))
    moment = run.events[places[first]].ts_ms
    # a sync producer has one send in flight; an async one may have the next ones too
    for place in places[first:first + IN_FLIGHT]:
        e = run.events[place]
        if place != places[first] and (e.detail.get("mode") != "async" or e.ts_ms > moment + KILL_WINDOW_MS):
            break
        how = run.rng.choices(["unknown-stored", "unknown-lost", "unknown-twice"], weights=[4, 4, 2])[0]
        _indeterminate(run, place, "kill", how)


def _indeterminate(run: _Run, place: int, fault: str, how: str) -> None:
    msg_id = run.events[place].msg_id or ""
    attempts = 2 if how == "unknown-twice" else run.rng.choice([1, 2, 3])
    run.end(place, "SEND_UNKNOWN", fault, attempts, code="-1",
            remark=f"the {'connection was reset' if fault == 'kill' else 'request timed out'}: outcome unknown")
    run.tally[how] += 1
    if how == "unknown-lost":
        run.drop(msg_id)
    elif how == "unknown-twice":
        run.tally["copies"] += run.copy(msg_id)


def _stall(run: _Run, profile: str) -> None:
    places = run.candidates()
    for place in run.rng.sample(places, k=min(len(places), run.rng.choice([1, 1, 2]))):
        msg_id = run.events[place].msg_id or ""
        how = run.rng.choices(["retry-twice", "retry-once", "unknown-stored", "unknown-lost", "unknown-twice"],
                              weights=[4, 2, 1, 1, 1])[0]
        if how.startswith("unknown"):
            _indeterminate(run, place, "stall", how)
            continue
        run.end(place, "SEND_OK", "stall", 2, duplicates="1" if how == "retry-twice" else "0")
        run.tally[how] += 1
        if how == "retry-twice":
            run.tally["copies"] += run.copy(msg_id)


def _refuse(run: _Run, profile: str) -> None:
    places = run.candidates()
    code = REFUSED_CODE.get(profile, "2")
    if places:
        place = run.rng.choice(places)
        msg_id = run.events[place].msg_id or ""
        run.end(place, "SEND_FAIL", "refuse", run.rng.choice([1, 3]), code=code, remark="[TOO_MANY_REQUESTS] busy")
        run.drop(msg_id)
        run.tally["refused"] += 1
    sends = [e for e in run.events if e.kind in ("SEND_OK", "SEND_UNKNOWN", "SEND_FAIL") and e.msg_id]
    if not sends:
        return
    like = run.rng.choice(sends)
    new_id = f"{like.msg_id}-refused"
    common = dict(topic=like.topic, client_id=like.client_id, msg_id=new_id, key=like.key, producer_seq=None,
                  message_group=like.message_group, delay_level=None, expected_delay_ms=None, queue_id=None,
                  queue_offset=None, group=None)
    run.added += [dataclasses.replace(like, kind="SEND_INVOKE", attempt=None, **common,
                                      detail={"mode": "sync", "fault": "refuse"}),
                  dataclasses.replace(like, kind="SEND_FAIL", attempt=1, **common,
                                      detail={"mode": "sync", "code": code, "remark": "[TOO_MANY_REQUESTS] busy",
                                              "fault": "refuse"})]
    run.tally["refused-new"] += 1


APPLY_FAULT = {"kill": _kill, "stall": _stall, "refuse": _refuse}


def with_faults(events: Iterable[Event], seed: int | str, *, chance: float = 0.5,
                faults: Sequence[str] = FAULTS) -> tuple[list[Event], Counter]:
    """``events`` (the reference's, one run or many, each run's rows in its order) with ``faults`` applied to each
    run with probability ``chance`` each, deterministically from ``seed`` (each run from ``seed`` and its run id),
    and the tally of what was done (``REWRITES``). See the module's docstring for what each fault does."""
    runs: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        runs[e.run_id].append(e)
    tally: Counter = Counter()
    out: list[Event] = []
    for run_id, rows in runs.items():
        run = _Run(list(rows), random.Random(f"{seed}:{run_id}"), tally)
        for fault in faults:
            if run.rng.random() < chance:
                APPLY_FAULT[fault](run, rows[0].profile if rows else "")
        out.extend(run.result())
    return out, tally
