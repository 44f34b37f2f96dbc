"""A 4.x clustering group under churn: consumers join, leave and crash while messages fail, retry and
flow (one RuleBasedStateMachine, run in two configurations).

Invariants: once no crash is pending, every queue of the topic and of the group's retry topic is owned
by exactly one live consumer (ALLOC-00/01). At the end no message is lost (RETRY-CONC-03, OFFSET-04); a
stored copy is consumed twice only if it lies in a crashed consumer's window between the offset the broker
stored for it and what it had consumed (OFFSET-03/04, read through ``Target.committed_offset``), or if the
group's members changed in between: each client rebalances on its own, and a queue's new owner may read the
stored offset before its old owner's offset reached the broker (``RebalanceImpl`` persists a removed queue's
offset, a new queue's start is read from the broker: OFFSET-04). With no crash each message's ladder is the
spec's (RETRY-CONC-04/07/10), exactly so while some consumer was always present, besides such copies.
"""
from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from history.outcomes import NotApplicable
from history.trace import lives
from history.values import ListenerOutcome
from suites.checks import require
from suites.oracle import default_oracle
from suites.scenario import MessagePlan, ScriptedListener

MOST_FAILURES = 18
"""A message's listener fails at most this often (past the 16 retries: to its dead letter), where the budget allows."""
ADVANCES_MS = (1_000, 5_000, 30_000, 130_000, 600_000, 3_600_000)
"""The pauses a run may take, in spec ms: each at most what the target's time budget allows."""
CRASH_DETECTED_MS = 120_000
"""A crashed consumer's queues pause until the broker drops it (OFFSET-04)."""


class ClusteringMachine(RuleBasedStateMachine):
    target_factory = None  # set by each test below
    crashes = False
    """With crashes, listeners succeed (duplicates come only from crash windows); without, they fail
    each message's first deliveries as its script says."""

    @initialize()
    def start(self) -> None:
        self.target = type(self).target_factory("remoting-4.x")
        self.target.create_topic("T", read_queues=4, write_queues=4)
        self.listener = ScriptedListener(())
        self.live: list = []
        self.sent: dict[str, int] = {}
        self.pending_crashes: list[int] = []
        self.windows: set[tuple[int, int]] = set()  # (queue id, offset) that may be redelivered
        self.crashed = False
        self.had_gap = False
        self.changes: list[int] = []  # when the group's membership changed (a crash: when the broker drops it)
        # on a wall clock a story must end within the budget, or the end of the run would cut it short: a message
        # fails at most as often as its ladder fits, and a pause is at most what fits
        ladder = default_oracle().push4x_concurrent
        self.most_failures = max(f for f in range(MOST_FAILURES + 1)
                                 if f == 0 or self._within_budget(sum(ladder(f).waits_ms)))
        self.longest_advance_ms = max(ms for ms in ADVANCES_MS if ms == ADVANCES_MS[0] or self._within_budget(ms))
        self.join()

    @rule()
    def join(self) -> None:
        if len(self.live) < 4:
            self.changes.append(self.target.now_ms())
            self.live.append(self.target.push_consumer_4x("G", "T", self.listener))

    @precondition(lambda self: len(self.live) > (1 if self.crashes else 0))
    @rule(index=st.integers(0, 3))
    def leave(self, index: int) -> None:
        self.changes.append(self.target.now_ms())
        self.live.pop(index % len(self.live)).shutdown()
        self.had_gap = self.had_gap or not self.live

    @precondition(lambda self: self.crashes and len(self.live) > 1)
    @rule(index=st.integers(0, 3))
    def crash(self, index: int) -> None:
        consumer = self.live.pop(index % len(self.live))
        before = {key: consumer.offsets.get(key) for key in consumer.assigned}
        crashed_id = consumer.client_id
        consumer.crash()
        # what it took of the topic's queues before it died: its offsets in memory, and any copy its listener was
        # given up to the crash (a listener still running when the state was read: its offset was not in memory yet)
        taken = {q: offset for (topic, q), offset in before.items() if topic == "T" and offset is not None}
        for e in self.target.events():
            if e.kind == "DELIVER" and e.topic == "T" and e.client_id == crashed_id and e.queue_offset is not None \
                    and e.detail.get("stored_topic", "T") == "T":
                taken[e.queue_id] = max(taken.get(e.queue_id, 0), e.queue_offset + 1)
        for q, consumed in taken.items():
            persisted = self.target.committed_offset("G", "T", q) or 0
            self.windows.update((q, off) for off in range(persisted, consumed))
        self.crashed = True
        self.pending_crashes.append(self.target.now_ms() + CRASH_DETECTED_MS)
        self.changes.append(self.target.now_ms() + CRASH_DETECTED_MS)

    @rule(failures=st.integers(0, MOST_FAILURES), count=st.integers(1, 5))
    def send(self, failures: int, count: int) -> None:
        failures = min(failures, self.most_failures)
        for _ in range(count if self.crashes else 1):
            key = f"m{len(self.sent)}"
            self.sent[key] = 0 if self.crashes else failures
            self.listener.plans[key] = MessagePlan(key, self.sent[key])
            self.target.producer().send("T", key.encode(), key=key)

    @rule(ms=st.sampled_from(ADVANCES_MS))
    def advance(self, ms: int) -> None:
        self.target.advance(min(ms, self.longest_advance_ms))
        self.pending_crashes = [t for t in self.pending_crashes if t > self.target.now_ms()]

    def _within_budget(self, spec_ms: int) -> bool:
        """Whether ``spec_ms`` of spec time fits the target's time budget (a wall clock's; always, on a virtual one)."""
        try:
            self.target.require_duration(spec_ms)
        except NotApplicable:
            return False
        return True

    @invariant()
    def every_queue_owned_once(self) -> None:
        if not getattr(self, "live", None) or self.pending_crashes:
            return
        owners: dict = {}
        for c in self.live:
            for q in c.assigned:
                owners.setdefault(q, []).append(c.client_id)
        for topic, queues in (("T", 4), ("%RETRY%G", 1)):
            for qid in range(queues):
                held = owners.get((topic, qid), [])
                require(len(held) == 1, "ALLOC-01", f"queue {topic}:{qid} owned by {held} with no crash pending")

    def teardown(self) -> None:
        if not hasattr(self, "target"):
            return
        if not self.live:
            self.join()
        self.target.settle()
        delivered = [e for e in self.target.events() if e.kind == "DELIVER" and e.topic == "T"]
        missing = set(self.sent) - {e.key for e in delivered}
        require(not missing, "OFFSET-04" if self.crashes else "RETRY-CONC-03", f"lost {sorted(missing)}")
        again: dict[str, int] = {}  # copies consumed again after a rebalance
        first: dict[tuple, int] = {}
        for e in delivered:
            place = (e.detail.get("stored_topic", e.topic), e.queue_id, e.queue_offset)
            if place in first:
                moved = any(first[place] <= t <= e.ts_ms for t in self.changes)
                crashed = place[0] == "T" and (e.queue_id, e.queue_offset) in self.windows
                require(moved or crashed, "OFFSET-04", f"{e.key} ({place[0]}:{e.queue_id}@{e.queue_offset}) "
                        "consumed twice with no crash window or change of the group's members between")
                again[e.key] = again.get(e.key, 0) + 1
            first.setdefault(place, e.ts_ms)
        if self.crashes:
            return
        observed = lives(self.target.events(), "G")
        oracle = default_oracle()
        for key, failures in self.sent.items():
            want, got = oracle.push4x_concurrent(failures), observed[key]
            deliveries = got.deliveries - again.get(key, 0)
            require((deliveries, got.final) == (want.deliveries, want.final), "RETRY-CONC-04",
                    f"{key}: {deliveries} deliveries (and {again.get(key, 0)} again after a rebalance) ending "
                    f"{got.final}; spec: {want.deliveries} ending {want.final}")
            if again.get(key):
                continue  # a copy consumed again after a rebalance sits between the ladder's steps
            require(all(seen >= w for seen, w in zip(got.waits_ms, want.waits_ms)), "RETRY-CONC-07",
                    f"{key}: a retry came early: waits {got.waits_ms}, spec {want.waits_ms}")
            if not self.had_gap:
                require(got.waits_ms == want.waits_ms, "RETRY-CONC-07",
                        f"{key}: waits {got.waits_ms} with consumers always present; spec {want.waits_ms}")


def _run(make_target, crashes: bool, steps: int) -> None:
    machine = type("Machine", (ClusteringMachine,), {"target_factory": staticmethod(make_target), "crashes": crashes})
    runner = machine.TestCase()
    runner.settings = settings(runner.settings, stateful_step_count=steps)
    runner.runTest()


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ALLOC-00", "ALLOC-01", "RETRY-CONC-03", "RETRY-CONC-04", "RETRY-CONC-07", "RETRY-CONC-10")
def test_membership_churn_with_failing_listeners(make_target) -> None:
    _run(make_target, crashes=False, steps=25)


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ALLOC-00", "ALLOC-01", "OFFSET-03", "OFFSET-04")
def test_rebalance_under_churn_with_crashes(make_target) -> None:
    _run(make_target, crashes=True, steps=30)


# ---- each allocation strategy, through the target's own client ----

ROOMS = ("broker", "elsewhere", "elsewhere")
"""MACHINE_ROOM_NEARBY: the consumers' rooms, by their order; a broker's room is its name up to the first '-'
(the user's resolver, given to the client)."""
CONFIGURED_IDS = (1, 3)
"""CONFIG: the configured list is these queues of the topic, for every consumer."""


def _expected(strategy: str, queues: list, cids: list[str], cid: str, rooms: dict[str, str]) -> list:
    from reference_impl.rules import allocation as a

    if strategy == "AVG":
        return a.allocate_averagely(queues, cids, cid)
    if strategy == "AVG_BY_CIRCLE":
        return a.allocate_by_circle(queues, cids, cid)
    if strategy == "CONSISTENT_HASH":
        return a.allocate_consistent_hash(queues, cids, cid)
    if strategy == "MACHINE_ROOM_NEARBY":
        return a.allocate_machine_room_nearby(queues, cids, cid, a.allocate_averagely,
                                              lambda mq: mq.broker_name.split("-")[0], lambda c: rooms[c])
    if strategy == "CONFIG":
        return a.allocate_by_config([q for q in queues if q.queue_id in CONFIGURED_IDS])(queues, cids, cid)
    # MACHINE_ROOM: only a broker named IDC@name is in a room (a broker-a is in none: nobody gets its queues)
    return a.allocate_by_machine_room(queues, cids, cid, {"broker"})


@pytest.mark.profile("remoting-4.x")
@pytest.mark.parametrize("strategy", [
    pytest.param("AVG", marks=pytest.mark.spec("ALLOC-00", "ALLOC-01")),
    pytest.param("AVG_BY_CIRCLE", marks=pytest.mark.spec("ALLOC-00", "ALLOC-02")),
    pytest.param("CONSISTENT_HASH", marks=pytest.mark.spec("ALLOC-00", "ALLOC-03")),
    pytest.param("MACHINE_ROOM_NEARBY", marks=pytest.mark.spec("ALLOC-00", "ALLOC-04")),
    pytest.param("CONFIG", marks=pytest.mark.spec("ALLOC-00", "ALLOC-05")),
    pytest.param("MACHINE_ROOM", marks=pytest.mark.spec("ALLOC-00", "ALLOC-06")),
])
def test_each_allocation_strategy_allocates_as_the_spec_says(make_target, strategy: str) -> None:
    """Three consumers of a group, each with the strategy, over a topic of 8 queues: once they have rebalanced, each
    holds what the strategy gives it over the sorted queues and client ids it sees (ALLOC-00), in the names its
    client uses (a consistent hash hashes them)."""
    from reference_impl.rules.allocation import MessageQueue

    target = make_target("remoting-4.x")
    target.require("consumer.push4x.concurrent", "consumer.allocation")
    target.create_topic("T", read_queues=8, write_queues=8)
    options: list[dict] = [{} for _ in ROOMS]
    if strategy == "MACHINE_ROOM_NEARBY":
        options = [{"consumer_room": room} for room in ROOMS]
    elif strategy == "CONFIG":
        options = [{"allocation_queue_ids": list(CONFIGURED_IDS)} for _ in ROOMS]
    elif strategy == "MACHINE_ROOM":
        options = [{"consumer_rooms": ["broker"]} for _ in ROOMS]
    consumers = [target.push_consumer_4x("G", "T", lambda v: ListenerOutcome.SUCCESS, allocation=strategy, **o)
                 for o in options]
    rooms = {c.client_id: room for c, room in zip(consumers, ROOMS)}
    cids = sorted(rooms)
    seen: dict = {}

    def as_expected() -> bool:
        seen.clear()
        for c in consumers:
            held, over = c.allocation
            topic = {t for t, _, _ in over if not t.startswith("%")}
            queues = sorted(MessageQueue(t, b, q) for t, b, q in over if t in topic)
            want = {(m.topic, m.broker_name, m.queue_id)
                    for m in _expected(strategy, queues, cids, c.client_id, rooms)} if queues else None
            seen[c.client_id] = (sorted((t, b, q) for t, b, q in held if t in topic), sorted(want or ()), len(queues))
            if want is None or {h for h in held if h[0] in topic} != want:
                return False
        return True

    settled = target.wait_until(as_expected, 30_000)
    require(settled, STRATEGY_IDS[strategy], f"{strategy} over {cids}: (held, the strategy's, queues seen) per "
            f"client {seen}")
    for c in consumers:
        c.shutdown()


STRATEGY_IDS = {"AVG": "ALLOC-01", "AVG_BY_CIRCLE": "ALLOC-02", "CONSISTENT_HASH": "ALLOC-03",
                "MACHINE_ROOM_NEARBY": "ALLOC-04", "CONFIG": "ALLOC-05", "MACHINE_ROOM": "ALLOC-06"}
