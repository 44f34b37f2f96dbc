"""Consumers join and leave a clustering group while messages fail and retry (a RuleBasedStateMachine)."""
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

from history.trace import lives
from suites.checks import require
from suites.oracle import default_oracle
from suites.scenario import MessagePlan, ScriptedListener


class MembershipMachine(RuleBasedStateMachine):
    """4.x clustering group under churn: queues stay owned exactly once, and no message is lost."""

    target_factory = None  # set by the test below

    @initialize()
    def start(self) -> None:
        self.target = type(self).target_factory("remoting-4.x")
        self.target.create_topic("T", read_queues=4, write_queues=4)
        self.listener = ScriptedListener(())
        self.consumers: list = []
        self.sent: dict[str, int] = {}
        self.had_gap = False
        self.join()

    @rule()
    def join(self) -> None:
        if len(self.consumers) < 4:
            self.consumers.append(self.target.push_consumer_4x("G", "T", self.listener))

    @precondition(lambda self: len(self.consumers) > 0)
    @rule(index=st.integers(0, 3))
    def leave(self, index: int) -> None:
        consumer = self.consumers.pop(index % len(self.consumers))
        consumer.shutdown()
        self.had_gap = self.had_gap or not self.consumers

    @rule(failures=st.integers(0, 18))
    def send(self, failures: int) -> None:
        key = f"m{len(self.sent)}"
        self.sent[key] = failures
        self.listener.plans[key] = MessagePlan(key, failures)
        self.target.producer().send("T", key.encode(), key=key)

    @rule(ms=st.sampled_from([1000, 10_000, 60_000, 600_000, 3_600_000]))
    def advance(self, ms: int) -> None:
        self.target.advance(ms)

    @invariant()
    def every_queue_owned_once(self) -> None:
        if not getattr(self, "consumers", None):
            return
        owners: dict = {}
        for c in self.consumers:
            for q in c.assigned:
                owners.setdefault(q, []).append(c.client_id)
        for topic in ("T", "%RETRY%G"):
            for qid in range(4 if topic == "T" else 1):
                held = owners.get((topic, qid), [])
                require(len(held) == 1, "ALLOC-01", f"queue {topic}:{qid} owned by {held}")

    def teardown(self) -> None:
        if not hasattr(self, "target"):
            return
        if not self.consumers:
            self.join()
        self.target.settle()
        observed = lives(self.target.events(), "G")
        oracle = default_oracle()
        for key, failures in self.sent.items():
            want = oracle.push4x_concurrent(failures)
            got = observed.get(key)
            require(got is not None, "RETRY-CONC-03", f"{key} was never delivered (lost)")
            assert got is not None
            require((got.deliveries, got.final) == (want.deliveries, want.final), "RETRY-CONC-04",
                    f"{key}: {got.deliveries} deliveries ending {got.final}; spec: {want.deliveries} ending {want.final}")
            require(all(seen >= w for seen, w in zip(got.waits_ms, want.waits_ms)), "RETRY-CONC-07",
                    f"{key}: a retry came early: waits {got.waits_ms}, spec {want.waits_ms}")
            if not self.had_gap:
                require(got.waits_ms == want.waits_ms, "RETRY-CONC-07",
                        f"{key}: waits {got.waits_ms} with consumers always present; spec {want.waits_ms}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ALLOC-00", "ALLOC-01", "RETRY-CONC-03", "RETRY-CONC-04", "RETRY-CONC-07", "RETRY-CONC-10")
def test_membership_churn(make_target) -> None:
    MembershipMachine.target_factory = staticmethod(make_target)
    runner = MembershipMachine.TestCase()
    runner.settings = settings(runner.settings, stateful_step_count=25)
    runner.runTest()
