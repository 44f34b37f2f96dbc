"""Per-message transcripts: a history cut into the story of each key, with what an implementation may choose
freely left out, so that two implementations of the same spec can be compared event by event.

A transcript keeps, per event of one key and in the order observed: the kind, the topic and group, the
delivery attempt, the delay level and the delay expected, the message group, and the detail (the topic a
listener saw and the one the copy is stored in, reconsume times, a dead-lettered copy's properties, a
listener's outcome, a send's status). It leaves out what a deployment or a client decides on its own: client
ids, queue ids and offsets, broker names and the attempts of a send across brokers, and message ids, which
are replaced by their order of first appearance within the key (so "the same id on a redelivery" survives
the cut and the id's value does not). Times are kept relative to the key's first event. Pure: events in,
transcripts out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from .events import Event

TRANSCRIPT_KINDS = ("SEND_OK", "SEND_FAIL", "SEND_UNKNOWN", "DELIVER", "CONSUME_OK", "CONSUME_FAIL",
                    "RETRY_SCHEDULED", "DLQ", "ACK", "TX_HALF", "TX_END", "TX_CHECK", "TX_DISCARD")
"""Kinds that belong to one message's story (rebalances and offset commits do not name a key)."""
DEPLOYMENT_DETAIL = frozenset({"broker", "attempts", "since_previous_ms", "queues", "sdk", "duplicates"})
"""Detail keys an implementation fills in by deployment or by client: where a send went, and a client's
own name."""
DEPLOYMENT_PROPERTIES = frozenset({"REAL_QID", "MSG_REGION", "TRACE_ON", "CLUSTER"})
"""Properties of a stored copy that name a queue or a deployment, not the message."""


@dataclass(frozen=True)
class Step:
    """One event of a key's transcript; ``at_ms`` is its time after the key's first event."""

    kind: str
    at_ms: int
    fields: tuple[tuple[str, str], ...]

    def describe(self) -> str:
        return f"{self.kind} at +{self.at_ms} ms " + ", ".join(f"{k}={v}" for k, v in self.fields)


def properties_text(properties: Mapping[str, str], ids: Mapping[str, str]) -> str:
    """``k=v;...`` in key order without the deployment's properties, ids replaced by their names."""
    return ";".join(f"{k}={ids.get(v, v)}" for k, v in sorted(properties.items()) if k not in DEPLOYMENT_PROPERTIES)


def _parsed(text: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in text.split(";") if "=" in pair)


def id_names(events: Iterable[Event]) -> dict[str, str]:
    """Message id -> its name, ``id0``, ``id1``, ... in order of first appearance within its key."""
    names: dict[str, str] = {}
    per_key: dict[str, int] = {}
    for event in events:
        if event.key is not None and event.msg_id and event.msg_id not in names:
            names[event.msg_id] = f"id{per_key.get(event.key, 0)}"
            per_key[event.key] = per_key.get(event.key, 0) + 1
    return names


def _step(event: Event, start_ms: int, ids: Mapping[str, str]) -> Step:
    fields: dict[str, str] = {}
    for name in ("topic", "group", "attempt", "delay_level", "expected_delay_ms", "message_group"):
        value = getattr(event, name)
        if name == "expected_delay_ms" and event.kind == "SEND_OK":
            continue  # the wait to a timed message's delivery time, as each client's log states it (issue 36)
        if value is not None:
            fields[name] = str(value)
    if event.msg_id:
        fields["msg_id"] = ids[event.msg_id]
    for name, value in sorted(event.detail.items()):
        if name in DEPLOYMENT_DETAIL:
            continue
        fields[name] = properties_text(_parsed(value), ids) if name == "properties" else ids.get(value, value)
    return Step(event.kind, event.ts_ms - start_ms, tuple(sorted(fields.items())))


def transcripts(events: Iterable[Event]) -> dict[str, list[Step]]:
    """Key -> its steps in observed order (events without a key, and kinds outside ``TRANSCRIPT_KINDS``, are
    left out)."""
    events = list(events)
    ids = id_names(events)
    by_key: dict[str, list[Event]] = {}
    for event in events:
        if event.key is not None and event.kind in TRANSCRIPT_KINDS:
            by_key.setdefault(event.key, []).append(event)
    return {key: [_step(e, story[0].ts_ms, ids) for e in story] for key, story in by_key.items()}


@dataclass(frozen=True)
class Placement:
    """Where one key was placed: the queue of each send that stored it, in order, and which consumer (numbered
    in order of first appearance in the history) had its first delivery (None: never delivered)."""

    queues: tuple[int, ...] = ()
    consumer: int | None = None

    def apart_from(self, other: "Placement") -> bool:
        """Whether the two differ where both made the choice: the queues of the sends both stored, in order,
        and the consumer of the first delivery when both delivered it. A send one side never stored or a
        delivery it never made is not another placement: the transcripts show it."""
        both_delivered = self.consumer is not None and other.consumer is not None
        return any(a != b for a, b in zip(self.queues, other.queues)) or (both_delivered and
                                                                          self.consumer != other.consumer)

    def __str__(self) -> str:
        delivered = "never delivered" if self.consumer is None else f"first delivered to consumer {self.consumer}"
        return f"queues {list(self.queues)}, {delivered}"


def placements(events: Iterable[Event]) -> dict[str, Placement]:
    """Key -> where it was placed (``Placement``). Both the queue and the consumer are choices the spec leaves
    to the client: the producer's round robin starts at a random queue, and consumers' ids (which order the
    allocation) are the client's own; a story that depends on them can be compared only where they agree."""
    clients: dict[str, int] = {}
    queues: dict[str, list[int]] = {}
    consumer: dict[str, int] = {}
    for event in events:
        if event.client_id and event.client_id not in clients:
            clients[event.client_id] = len(clients)
        if event.key is None:
            continue
        if event.kind == "SEND_OK":
            queues.setdefault(event.key, []).append(-1 if event.queue_id is None else event.queue_id)
        elif event.kind == "DELIVER" and event.key not in consumer:
            consumer[event.key] = clients.get(event.client_id or "", -1)
    return {key: Placement(tuple(queues.get(key, ())), consumer.get(key))
            for key in sorted(set(queues) | set(consumer))}


@dataclass(frozen=True)
class Divergence:
    """Where two transcripts of one key part: the index of the first step that differs, and both steps
    (``None`` where one transcript has ended)."""

    key: str
    index: int
    seen: Step | None
    want: Step | None

    def describe(self) -> str:
        seen = self.seen.describe() if self.seen else "nothing more"
        want = self.want.describe() if self.want else "nothing more"
        return f"key {self.key}, step {self.index + 1}: observed {seen}; the reference has {want}"


def first_divergence(key: str, seen: list[Step], want: list[Step], slack_ms: Mapping[int, float]) -> Divergence | None:
    """The first step where ``seen`` and ``want`` differ in kind or fields, or in time by more than
    ``slack_ms[i]`` (the step's allowed difference; exact when absent); ``None`` when they agree."""
    for i in range(max(len(seen), len(want))):
        a = seen[i] if i < len(seen) else None
        b = want[i] if i < len(want) else None
        if a is None or b is None or a.kind != b.kind or a.fields != b.fields \
                or abs(a.at_ms - b.at_ms) > slack_ms.get(i, 0.0):
            return Divergence(key, i, a, b)
    return None
