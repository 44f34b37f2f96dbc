"""The broker's queue locks through the target's 4.x client: a broadcasting orderly consumer locks a queue once and
never renews it (ORDER-4X-04)."""
from __future__ import annotations

import pytest

from history.outcomes import NotApplicable
from history.values import ListenerOutcome
from reference_impl.rules import orderly4x
from suites.checks import require
from suites.tolerance import tolerance_for

REBALANCE_WAIT_MS = 20_000
"""``rocketmq.client.rebalance.waitInterval``: a consumer that could not lock a queue tries again at its next
rebalance (RebalanceService)."""


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("ORDER-4X-04")
def test_a_second_broadcasting_instance_takes_a_queue_once_the_first_lock_expires(make_target):
    """ORDER-4X-04: taking a queue at a rebalance needs its broker lock even when broadcasting, and a broadcasting
    orderly consumer never renews its locks (``lockMQPeriodically`` runs in CLUSTERING only). So a second instance of
    the group holds the queue only once the first instance's lock has expired on the broker
    (``BROKER_LOCK_MAX_LIVE_MS`` after the first one's last lock, as both clients' process queues record their
    locks), and then it does: a lock the first renewed would keep it out for good."""
    target = make_target()
    target.require("consumer.push4x.orderly", "consumer.push4x.broadcast", "consumer.broker_locks")
    if getattr(target, "release_record", None) and target.time_scale != 1:
        raise NotApplicable(f"{target.name}: the broker's lock lives rocketmq.broker.rebalance.lockMaxLiveTime of "
                            "its wall clock, a JVM property the harness's compressed clock does not reach")
    lock_ms = orderly4x.BROKER_LOCK_MAX_LIVE_MS
    target.require_duration(2 * lock_ms + 4 * REBALANCE_WAIT_MS)
    target.create_topic("T", read_queues=1, write_queues=1)

    def listener(view):
        return ListenerOutcome.SUCCESS

    started = target.now_ms()
    first = target.push_consumer_4x("G", "T", listener, orderly=True, broadcasting=True)
    require(first.assigned == {("T", 0)}, "ORDER-4X-04", f"the first instance holds {first.assigned}, not queue 0")
    second = target.push_consumer_4x("G", "T", listener, orderly=True, broadcasting=True)
    deadline = started + 2 * lock_ms + 3 * REBALANCE_WAIT_MS
    while ("T", 0) not in second.assigned and target.now_ms() < deadline:
        target.advance(1_000)
    require(("T", 0) in second.assigned, "ORDER-4X-04",
            f"the second instance still lacks queue 0 {target.now_ms() - started} ms after the first one started: the "
            f"first one's lock was renewed, or never expired ({lock_ms} ms on the broker)")
    first_locked, first_at = first.locks.get(("T", 0), (False, None))
    second_locked, second_at = second.locks.get(("T", 0), (False, None))
    require(first_at is not None and second_at is not None and second_locked, "ORDER-4X-04",
            f"the clients' locks of queue 0: first {first_locked} at {first_at}, second {second_locked} at {second_at}")
    gap = second_at - first_at
    require(gap >= lock_ms - tolerance_for(target).allowed(lock_ms), "ORDER-4X-04",
            f"the broker granted the second instance's lock {gap} ms after the first one's last lock, before the "
            f"first had expired ({lock_ms} ms): the first's lock, taken once and never renewed, still held")
