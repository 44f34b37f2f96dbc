"""Which behaviours a difference from the reference's story points at: one bug, one red behaviour (issue 37).

The differential suite compares a target's run of a program with the reference's: each key's transcript
(``history.transcripts``), each step's result, the copies stored in every topic the messages went through.
Where they first part, this module names the spec IDs that state what differs, from tables keyed by the
family of the story (which consumer kind retried it), the kind of the step, and the field that differs:

* a field of a step (``delay_level`` of a ``RETRY_SCHEDULED`` → RETRY-CONC-04, ``properties`` of a ``DLQ``
  → the dead letter's IDs, ``msg_id`` of a ``DELIVER`` → MSGID-02 or MSGID-03, ...);
* a step's time (``at_ms``): a redelivery's time is the retry ladder's (RETRY-CONC-07, ORDER-4X-02,
  RETRY-5X-06, RETRY-5X-08, RETRY-5X-11), a delayed message's first delivery the delay table's (DELAY-01,
  DELAY-08), a transaction check's TX-03;
* a step one side has and the other has not (``present``): what decides whether that step happens;
* a stored copy: the property that differs (``DELAY`` → DELAY-06, ``RETRY_TOPIC`` → RETRY-CONC-04, ...),
  else the topic's owner (a dead-letter topic, the schedule topic, the timer's, a transaction's);
* a step's result: the program step's operation (an ack or a change of invisible time → RETRY-5X-09, ...).

Pure: transcripts in, IDs out. ``tests/test_blame.py`` checks every ID exists in the spec and that every
behaviour the differential suite is marked with can be reached from the tables.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

from history.profiles import GRPC_5X
from history.transcripts import Divergence, Step

CONCURRENT_4X, ORDERLY_4X, BROADCAST_4X = "4x", "4x-orderly", "4x-broadcast"
PUSH_5X, FIFO_5X, FIFO_HANDOVER_5X = "5x", "5x-fifo", "5x-fifo-handover"
FAMILIES = (CONCURRENT_4X, ORDERLY_4X, BROADCAST_4X, PUSH_5X, FIFO_5X, FIFO_HANDOVER_5X)
"""The consumer kinds whose stories differ in which behaviours decide them; a family ``a-b`` falls back to
``a``'s entries where it has none of its own (a FIFO handover is a FIFO story where push consumers leave)."""
ANY = "*"
PRESENT, TIME = "present", "at_ms"
"""Pseudo-fields: a step only one side has; a step's time."""

FAMILY_ID: dict[str, tuple[str, ...]] = {
    CONCURRENT_4X: ("RETRY-CONC-04",), ORDERLY_4X: ("ORDER-4X-03",), BROADCAST_4X: ("RETRY-CONC-02",),
    PUSH_5X: ("RETRY-5X-07",), FIFO_5X: ("RETRY-5X-08",)}
"""The behaviour a family's whole story stands for: blamed only where no table names the difference."""

STEP_IDS: dict[tuple[str, str, str], tuple[str, ...]] = {
    # (family, kind, field) -> IDs; ANY matches every family. Looked up family first, then ANY.
    # sends: the status and code a send ends with, its attempts, where it is stored
    ("4x", "SEND_OK", "status"): ("SEND-4X-04",),
    ("4x", "SEND_FAIL", "code"): ("SEND-4X-04",),
    ("4x", "SEND_OK", "attempt"): ("SEND-4X-02",),
    ("4x", "SEND_FAIL", "attempt"): ("SEND-4X-02",),
    ("4x", "SEND_OK", PRESENT): ("SEND-4X-02",),
    ("4x", "SEND_FAIL", PRESENT): ("SEND-4X-02",),
    ("4x", "SEND_UNKNOWN", PRESENT): ("SEND-4X-02",),
    ("4x", "SEND_OK", "delay_level"): ("DELAY-04",),
    ("4x", "SEND_UNKNOWN", "delay_level"): ("DELAY-04",),
    ("4x", "SEND_OK", "stored_topic"): ("DELAY-03",),
    ("4x", "SEND_OK", "msg_id"): ("MSGID-02",),
    ("5x", "SEND_OK", PRESENT): ("TOPIC-05",),
    ("5x", "SEND_FAIL", PRESENT): ("TOPIC-05",),
    ("5x", "SEND_FAIL", "code"): ("TOPIC-05",),
    ("5x", "SEND_OK", "stored_topic"): ("DELAY-08",),
    ("5x", "SEND_OK", "message_group"): ("FIFO-07",),
    ("5x", "SEND_OK", "msg_id"): ("MSGID-03",),
    # deliveries: what the listener sees, where the copy is stored, how many times it came
    ("4x", "DELIVER", "topic"): ("RETRY-CONC-09",),
    ("4x", "DELIVER", "stored_topic"): ("RETRY-CONC-05",),
    ("4x", "DELIVER", "reconsume_times"): ("RETRY-CONC-04",),
    ("4x", "DELIVER", "attempt"): ("RETRY-CONC-04",),
    ("4x", "DELIVER", "msg_id"): ("MSGID-02",),
    ("4x-orderly", "DELIVER", "reconsume_times"): ("ORDER-4X-03",),
    ("4x-orderly", "DELIVER", "attempt"): ("ORDER-4X-03",),
    ("5x", "DELIVER", "topic"): ("RETRY-5X-10",),
    ("5x", "DELIVER", "stored_topic"): ("RETRY-CONC-05",),
    ("5x", "DELIVER", "reconsume_times"): ("RETRY-5X-10",),
    ("5x", "DELIVER", "attempt"): ("RETRY-5X-06",),
    ("5x", "DELIVER", "msg_id"): ("MSGID-03",),
    ("5x", "DELIVER", "message_group"): ("FIFO-01",),
    ("5x-fifo", "DELIVER", "reconsume_times"): ("FIFO-06",),
    ("5x-fifo", "DELIVER", "attempt"): ("FIFO-06",),
    # the listener's outcome and what the client does with it
    ("4x", "CONSUME_OK", PRESENT): ("RETRY-CONC-01",),
    ("4x", "CONSUME_FAIL", PRESENT): ("RETRY-CONC-01",),
    ("4x", "CONSUME_OK", "outcome"): ("RETRY-CONC-01",),
    ("4x", "CONSUME_FAIL", "outcome"): ("RETRY-CONC-01",),
    ("4x-orderly", "CONSUME_OK", "outcome"): ("ORDER-4X-01",),
    ("4x-orderly", "CONSUME_FAIL", "outcome"): ("ORDER-4X-01",),
    ("5x", "CONSUME_OK", "outcome"): ("RETRY-5X-06",),
    ("5x", "CONSUME_FAIL", "outcome"): ("RETRY-5X-06",),
    ("5x", "ACK", PRESENT): ("RETRY-5X-06",),
    ("5x-fifo", "ACK", PRESENT): ("RETRY-5X-08",),
    # a retry: the level and wait the client or broker chose, and which way it went
    ("4x", "RETRY_SCHEDULED", PRESENT): ("RETRY-CONC-04",),
    ("4x", "RETRY_SCHEDULED", "delay_level"): ("RETRY-CONC-04",),
    ("4x", "RETRY_SCHEDULED", "expected_delay_ms"): ("RETRY-CONC-07",),
    ("4x", "RETRY_SCHEDULED", "via"): ("RETRY-CONC-08",),
    ("4x", "RETRY_SCHEDULED", "attempt"): ("RETRY-CONC-04",),
    ("4x-orderly", "RETRY_SCHEDULED", PRESENT): ("ORDER-4X-03",),
    ("4x-orderly", "RETRY_SCHEDULED", "expected_delay_ms"): ("ORDER-4X-02",),
    ("4x-orderly", "RETRY_SCHEDULED", "attempt"): ("ORDER-4X-03",),
    ("4x-orderly", "RETRY_SCHEDULED", "via"): ("ORDER-4X-01",),
    ("4x-broadcast", "RETRY_SCHEDULED", PRESENT): ("RETRY-CONC-02",),
    ("5x", "RETRY_SCHEDULED", PRESENT): ("RETRY-5X-01",),  # the attempts the server's settings allow
    ("5x", "RETRY_SCHEDULED", "expected_delay_ms"): ("RETRY-5X-06",),
    ("5x", "RETRY_SCHEDULED", "attempt"): ("RETRY-5X-06",),
    ("5x", "RETRY_SCHEDULED", "via"): ("RETRY-5X-06",),
    ("5x-fifo", "RETRY_SCHEDULED", PRESENT): ("RETRY-5X-08",),
    ("5x-fifo", "RETRY_SCHEDULED", "expected_delay_ms"): ("RETRY-5X-08",),
    ("5x-fifo", "RETRY_SCHEDULED", "attempt"): ("FIFO-06",),
    ("5x-fifo", "RETRY_SCHEDULED", "via"): ("RETRY-5X-08",),
    # a dead letter: whether and when, its topic, what the copy carries
    ("4x", "DLQ", PRESENT): ("RETRY-CONC-04",),
    ("4x", "DLQ", "topic"): ("RETRY-CONC-05",),
    ("4x", "DLQ", "properties"): ("RETRY-CONC-04",),
    ("4x", "DLQ", "reconsume_times"): ("RETRY-CONC-04",),
    ("4x-orderly", "DLQ", PRESENT): ("ORDER-4X-03",),
    ("4x-broadcast", "DLQ", PRESENT): ("RETRY-CONC-02",),
    ("5x", "DLQ", PRESENT): ("RETRY-5X-07",),
    ("5x", "DLQ", "topic"): ("RETRY-CONC-05",),
    ("5x", "DLQ", "properties"): ("RETRY-5X-07",),
    ("5x", "DLQ", "reconsume_times"): ("RETRY-5X-07",),
    ("5x-fifo", "DLQ", PRESENT): ("RETRY-5X-08",),
    ("5x-fifo", "DLQ", "properties"): ("RETRY-5X-08",),
    # transactions: the half, its end, the broker's checks, a discard
    (ANY, "TX_HALF", PRESENT): ("TX-01",),
    (ANY, "TX_HALF", "stored_topic"): ("TX-01",),
    (ANY, "TX_HALF", "real_topic"): ("TX-01",),
    (ANY, "TX_END", PRESENT): ("TX-02",),
    (ANY, "TX_END", "state"): ("TX-02",),
    (ANY, "TX_END", "source"): ("TX-03",),
    (ANY, "TX_END", TIME): ("TX-03",),
    (ANY, "TX_CHECK", PRESENT): ("TX-03",),
    (ANY, "TX_CHECK", TIME): ("TX-03",),
    (ANY, "TX_CHECK", "check_times"): ("TX-03",),
    (ANY, "TX_DISCARD", PRESENT): ("TX-04",),
    (ANY, "TX_DISCARD", TIME): ("TX-04",),
    (ANY, "TX_DISCARD", "check_times"): ("TX-04",),
}
"""What a field of a transcript step is stated by (issue 37)."""

REDELIVERY_IDS = {CONCURRENT_4X: ("RETRY-CONC-04",), ORDERLY_4X: ("ORDER-4X-03",), BROADCAST_4X: ("RETRY-CONC-02",),
                  PUSH_5X: ("RETRY-5X-06",), FIFO_5X: ("RETRY-5X-08",)}
"""Whether a message comes again after a retry was scheduled: the send-back and the broker's retry copy
(4.x concurrent), the orderly consumer's local retry, none at all (broadcasting), the nack (5.x), the FIFO
consumer's local retry."""
REDELIVERY_TIME_IDS = {CONCURRENT_4X: ("RETRY-CONC-07",), ORDERLY_4X: ("ORDER-4X-02",),
                       BROADCAST_4X: ("RETRY-CONC-02",), PUSH_5X: ("RETRY-5X-06",), FIFO_5X: ("RETRY-5X-08",),
                       FIFO_HANDOVER_5X: ("RETRY-5X-08", "RETRY-5X-09")}
"""When a delivery after a scheduled retry comes: the family's ladder; where the consumer that scheduled it
may have left, also the release of a gone client's handles (RETRY-5X-09)."""
REVIVE_IDS = {"4x": ("OFFSET-04",), "5x": ("RETRY-5X-10",)}
REVIVE_TIME_IDS = {"4x": ("OFFSET-04",), "5x": ("RETRY-5X-11",)}
"""Whether and when a delivery no retry announced comes again: 5.x, a revive after the invisible time
(RETRY-5X-10, RETRY-5X-11); 4.x, a redelivery from the committed offset after a consumer left (OFFSET-04)."""
DELAYED_DELIVERY_TIME_IDS = {"4x": ("DELAY-01",), "5x": ("DELAY-08",)}
TRANSACTION_DELIVERY_IDS = ("TX-02",)
"""Whether a transaction's message is stored in its topic and first delivered at all: its end state (a commit
stores it for the consumers, a rollback discards the half), on either line."""
"""A delayed (4.x level) or timed (5.x delivery time) message's first delivery."""
FIRST_DELIVERY_IDS = {FIFO_5X: ("FIFO-05",)}
"""Whether and when a message that is not delayed is first delivered: in a FIFO group, once the group's
earlier messages are done (``checkBlock``); elsewhere, the family's story."""

STORED_PROPERTY_IDS: dict[tuple[str, str], tuple[str, ...]] = {
    (ANY, "DELAY"): ("DELAY-06",),
    ("4x", "REAL_TOPIC"): ("DELAY-04",),
    ("4x", "REAL_QID"): ("DELAY-04",),
    (ANY, "TIMER_DELIVER_MS"): ("DELAY-08",),
    (ANY, "TIMER_OUT_MS"): ("DELAY-08",),
    (ANY, "TIMER_ROLL_TIMES"): ("DELAY-08",),
    (ANY, "TRAN_MSG"): ("TX-01",),
    (ANY, "PGROUP"): ("TX-01",),
    (ANY, "TRANSACTION_CHECK_TIMES"): ("TX-03",),
    ("4x", "RETRY_TOPIC"): ("RETRY-CONC-04",),
    ("5x", "RETRY_TOPIC"): ("RETRY-5X-10",),
    ("4x", "ORIGIN_MESSAGE_ID"): ("RETRY-CONC-04",),
    ("5x", "ORIGIN_MESSAGE_ID"): ("RETRY-5X-10",),
    ("4x", "UNIQ_KEY"): ("MSGID-02",),
    ("5x", "UNIQ_KEY"): ("MSGID-03",),
    ("5x", "1ST_POP_TIME"): ("RETRY-5X-10",),
    ("5x", "__SHARDINGKEY"): ("FIFO-01",),
}
"""A property of a stored copy -> the behaviour that sets or clears it."""

STORED_TOPIC_IDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("4x", "%DLQ%"): ("RETRY-CONC-04",),
    ("4x", "%RETRY%"): ("RETRY-CONC-04",),
    ("5x", "%DLQ%"): ("RETRY-5X-07",),
    ("5x", "%RETRY%"): ("RETRY-5X-10",),
    (ANY, "SCHEDULE_TOPIC_XXXX"): ("DELAY-03",),
    (ANY, "rmq_sys_wheel_timer"): ("DELAY-08",),
    (ANY, "RMQ_SYS_TRANS_HALF_TOPIC"): ("TX-01",),
    (ANY, "RMQ_SYS_TRANS_OP_HALF_TOPIC"): ("TX-05",),
}
"""A topic (by prefix or name) -> the behaviour that decides what its copies are."""

RESULT_IDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("4x", "send"): ("SEND-4X-02",),
    ("5x", "send"): ("TOPIC-05",),
    (ANY, "batch"): ("DELAY-07",),
    (ANY, "tx"): ("TX-02",),
    ("5x", "receive"): ("RETRY-5X-09",),
    ("5x", "ack"): ("RETRY-5X-09",),
    ("5x", "change"): ("RETRY-5X-09",),
}
"""A program step's operation -> the behaviour that decides its result."""


DECISIVE = ("DLQ", "TX_DISCARD", "TX_END", "TX_CHECK", "RETRY_SCHEDULED", "DELIVER")
"""Where the two sides took steps of different kinds, the step earlier in this list is what was decided
differently (a dead letter instead of a retry or a redelivery is the dead-letter decision, not the delivery
that did not follow); only its IDs are blamed. Kinds not listed come after."""


@dataclass(frozen=True)
class Blame:
    """The behaviours a difference points at and the words that show it."""

    spec_ids: tuple[str, ...]
    message: str

    def __post_init__(self) -> None:
        if not isinstance(self.spec_ids, tuple) or not all(isinstance(i, str) and i for i in self.spec_ids):
            raise TypeError(f"blame: spec_ids must be a tuple of spec IDs, got {self.spec_ids!r}")


def line(family: str) -> str:
    """``4x`` or ``5x``: the profile line of a family."""
    return family.split("-", 1)[0]


def scopes(family: str) -> list[str]:
    """``family`` and the families it falls back to, most precise first: ``5x-fifo-handover``, ``5x-fifo``,
    ``5x``, then ``ANY``."""
    parts = family.split("-")
    return ["-".join(parts[:n]) for n in range(len(parts), 0, -1)] + [ANY]


def by_family(table: Mapping[str, tuple[str, ...]], family: str) -> tuple[str, ...]:
    """The entry of ``table`` (keyed by family) for ``family`` or the nearest family it falls back to."""
    return next((table[scope] for scope in scopes(family) if scope in table), ())


def _look_up(table: Mapping[tuple[str, ...], tuple[str, ...]], family: str, *rest: str) -> tuple[str, ...]:
    return next((table[(scope, *rest)] for scope in scopes(family) if (scope, *rest) in table), ())


def _ordered(ids: Sequence[str]) -> tuple[str, ...]:
    if isinstance(ids, str):  # one ID where a tuple of IDs was meant would be split into its characters
        raise TypeError(f"blame: {ids!r} is one spec ID where a sequence of IDs was meant")
    return tuple(dict.fromkeys(ids))


def family_of(profile: str, story: Sequence[Step], hint: str | None = None) -> str:
    """The family of one key's story: a FIFO story on 5.x (its steps carry a message group), an orderly or a
    concurrent one on 4.x (its retries are the orderly consumer's local ones, or send-backs); else ``hint``
    (the program's consumers: all broadcasting, say), else the line's plain consumer."""
    if profile == GRPC_5X:
        fifo = hint in (FIFO_5X, FIFO_HANDOVER_5X) or any(name == "message_group"
                                                          for s in story for name, _ in s.fields)
        return (hint if hint == FIFO_HANDOVER_5X else FIFO_5X) if fifo else PUSH_5X
    ways = {value for s in story if s.kind == "RETRY_SCHEDULED" for name, value in s.fields if name == "via"}
    if "orderly_local" in ways:
        return ORDERLY_4X
    if ways & {"send_back", "fallback"}:
        return CONCURRENT_4X
    return hint if hint in (ORDERLY_4X, BROADCAST_4X) else CONCURRENT_4X


def _differing_fields(seen: Step, want: Step) -> list[str]:
    a, b = dict(seen.fields), dict(want.fields)
    return [name for name in sorted(set(a) | set(b)) if a.get(name) != b.get(name)]


def _delayed(story: Sequence[Step]) -> bool:
    """The story's message was sent with a delay level (4.x) or a delivery time (5.x, stored in the timer)."""
    return any(s.kind == "SEND_OK" and any(name == "delay_level" or value == "rmq_sys_wheel_timer"
                                           for name, value in s.fields) for s in story)


def _delivery_ids(family: str, story: Sequence[Step], index: int, timing: bool) -> tuple[str, ...]:
    """The IDs stating whether (``timing`` false) or when the ``index``-th step of ``story``, a delivery, comes:
    a first delivery is the delay's (a delayed or timed message) or the family's; a redelivery after a
    scheduled retry the family's retry; another redelivery a revive (5.x) or a restart from the offset (4.x)."""
    earlier = story[:index]
    if not any(s.kind == "DELIVER" for s in earlier):
        if not timing and any(s.kind == "TX_HALF" for s in story):
            return TRANSACTION_DELIVERY_IDS
        return DELAYED_DELIVERY_TIME_IDS[line(family)] if _delayed(story) else \
            by_family(FIRST_DELIVERY_IDS, family) or by_family(FAMILY_ID, family)
    previous = next((s for s in reversed(earlier) if s.kind in ("RETRY_SCHEDULED", "DELIVER")), None)
    if previous is not None and previous.kind == "RETRY_SCHEDULED":
        return by_family(REDELIVERY_TIME_IDS if timing else REDELIVERY_IDS, family)
    return by_family(REVIVE_TIME_IDS if timing else REVIVE_IDS, family)


def _rank(kind: str) -> int:
    """Where ``kind`` stands in ``DECISIVE`` (after all of it when it is not there)."""
    return DECISIVE.index(kind) if kind in DECISIVE else len(DECISIVE)


def step_ids(family: str, divergence: Divergence, seen_story: Sequence[Step],
             want_story: Sequence[Step]) -> tuple[str, ...]:
    """The behaviours the first differing step of a key points at (the tables above)."""
    seen, want, index = divergence.seen, divergence.want, divergence.index
    if seen is None or want is None or seen.kind != want.kind:  # a step only one side has
        sides = [(step, story) for step, story in ((want, want_story), (seen, seen_story)) if step is not None]
        decisive = min(_rank(s.kind) for s, _ in sides)
        ids: list[str] = []
        for step, story in sides:
            if _rank(step.kind) == decisive:
                ids += _look_up(STEP_IDS, family, step.kind, PRESENT) or (
                    _delivery_ids(family, story, index, timing=False) if step.kind == "DELIVER" else ())
        return _ordered(ids or by_family(FAMILY_ID, family))
    differing = _differing_fields(seen, want)
    ids = [i for name in differing for i in _look_up(STEP_IDS, family, want.kind, name)]
    if not differing:  # the time alone differs
        ids = list(_look_up(STEP_IDS, family, want.kind, TIME))
        if not ids and want.kind in ("DELIVER", "CONSUME_OK", "CONSUME_FAIL", "ACK"):
            deliveries = [i for i, s in enumerate(want_story[:index + 1]) if s.kind == "DELIVER"]
            ids = list(_delivery_ids(family, want_story, deliveries[-1] if deliveries else index, timing=True))
        if not ids and want.kind == "RETRY_SCHEDULED":
            ids = list(by_family(REDELIVERY_TIME_IDS, family))
    return _ordered(ids or by_family(FAMILY_ID, family))


def _around(story: Sequence[Step], index: int, width: int = 2) -> str:
    lo, hi = max(0, index - width), min(len(story), index + width + 1)
    shown = [f"{'>' if i == index else ' '} {i + 1}. {story[i].describe()}" for i in range(lo, hi)]
    return "\n".join(shown) if shown else "  (no steps)"


def story_blame(profile: str, divergence: Divergence, seen_story: Sequence[Step], want_story: Sequence[Step],
                hint: str | None = None) -> Blame:
    """The IDs a key's first differing step points at, and both stories around it."""
    family = family_of(profile, want_story or seen_story, hint)
    ids = step_ids(family, divergence, seen_story, want_story)
    return Blame(ids, f"{divergence.describe()}\n  observed around it:\n{_around(seen_story, divergence.index)}"
                      f"\n  the reference around it:\n{_around(want_story, divergence.index)}")


def _copy_fields(copy: str) -> tuple[str, dict[str, str]]:
    """A stored copy's text (``key rt=N k=v;...``, ``suites.programs._stored``) as its key and its fields."""
    key, _, rest = copy.partition(" ")
    rt, _, properties = rest.partition(" ")
    fields = {"rt": rt.removeprefix("rt=")}
    fields.update(pair.split("=", 1) for pair in properties.split(";") if "=" in pair)
    return key, fields


NAMING_IDS = ("RETRY-CONC-05",)
"""Two values that are both a retry or both a dead-letter topic, differently spelled: the naming rule."""


def _both_named(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and any(a.startswith(p) and b.startswith(p) for p in ("%RETRY%", "%DLQ%"))


def topic_ids(family: str, topic: str) -> tuple[str, ...]:
    """The behaviour deciding what ``topic``'s copies are; the family's own for the user's topic."""
    for (scope, prefix), ids in STORED_TOPIC_IDS.items():
        if scope in (ANY, line(family)) and topic.startswith(prefix):
            return ids
    return by_family(FAMILY_ID, family)


def stored_blame(family: str, topic: str, seen: Sequence[str] | None, want: Sequence[str]) -> Blame:
    """The IDs a difference in ``topic``'s stored copies points at: the properties that differ in the first
    copy that differs (``STORED_PROPERTY_IDS``), else the topic's owner."""
    seen = list(seen or [])
    ids: list[str] = []
    extra, missing = Counter(seen) - Counter(want), Counter(want) - Counter(seen)
    whole = list((extra or missing).elements()) if not (extra and missing) else []
    if whole and not topic.startswith("RMQ_SYS_TRANS") and all(_copy_fields(c)[1].get("PGROUP") for c in whole):
        # copies one side stored and the other did not, each a transaction's committed message: stored at all
        # is its end state's decision
        return Blame(TRANSACTION_DELIVERY_IDS, f"topic {topic} stores {seen}; the reference stores {list(want)}")
    first = next((i for i in range(max(len(seen), len(want)))
                  if i >= len(seen) or i >= len(want) or seen[i] != want[i]), 0)
    if first < len(seen) and first < len(want):
        (a_key, a), (b_key, b) = _copy_fields(seen[first]), _copy_fields(want[first])
        if a_key == b_key:
            for name in sorted(set(a) | set(b)):
                if a.get(name) != b.get(name):
                    ids += NAMING_IDS if _both_named(a.get(name), b.get(name)) else \
                        _look_up(STORED_PROPERTY_IDS, family, name)
    ids = list(_ordered(ids)) or list(topic_ids(family, topic))
    return Blame(tuple(ids), f"topic {topic} stores {seen}; the reference stores {list(want)}")


def result_blame(family: str, step: Sequence[object], seen: str, want: str, number: int) -> Blame:
    """The IDs a program step's different result points at: its operation's (``RESULT_IDS``)."""
    ids = _look_up(RESULT_IDS, family, str(step[0])) or by_family(FAMILY_ID, family)
    return Blame(_ordered(ids), f"step {number} {tuple(step)}: observed {seen!r}; the reference has {want!r}")


def reachable_ids() -> set[str]:
    """Every ID a difference can be blamed on."""
    tables: list[Mapping[object, tuple[str, ...]]] = [
        STEP_IDS, STORED_PROPERTY_IDS, STORED_TOPIC_IDS, RESULT_IDS, REDELIVERY_IDS, REDELIVERY_TIME_IDS, REVIVE_IDS,
        REVIVE_TIME_IDS, FIRST_DELIVERY_IDS, DELAYED_DELIVERY_TIME_IDS, FAMILY_ID]
    return {i for table in tables for ids in table.values() for i in ids} | set(NAMING_IDS) | \
        set(TRANSACTION_DELIVERY_IDS)


def tables() -> dict[str, Mapping[object, object]]:
    """Every table of IDs by name, and the tuples of IDs that stand alone, for the test that each entry is a tuple
    of known spec IDs (``tests/test_blame.py``)."""
    return {"STEP_IDS": STEP_IDS, "STORED_PROPERTY_IDS": STORED_PROPERTY_IDS, "STORED_TOPIC_IDS": STORED_TOPIC_IDS,
            "RESULT_IDS": RESULT_IDS, "REDELIVERY_IDS": REDELIVERY_IDS, "REDELIVERY_TIME_IDS": REDELIVERY_TIME_IDS,
            "REVIVE_IDS": REVIVE_IDS, "REVIVE_TIME_IDS": REVIVE_TIME_IDS, "FIRST_DELIVERY_IDS": FIRST_DELIVERY_IDS,
            "DELAYED_DELIVERY_TIME_IDS": DELAYED_DELIVERY_TIME_IDS, "FAMILY_ID": FAMILY_ID,
            "NAMING_IDS": {"": NAMING_IDS}, "TRANSACTION_DELIVERY_IDS": {"": TRANSACTION_DELIVERY_IDS}}
