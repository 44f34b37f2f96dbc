"""FIFO through the target: message groups routed to queues, local retries and the DLQ of a FIFO group."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.profiles import BROKER_PROFILES
from suites import strategies
from suites.checks import require
from suites.harness import run_checked
from suites.scenario import Scenario


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-08", "FIFO-01", "FIFO-04", "FIFO-05", "FIFO-06")
@given(scenario=strategies.fifo_5x())
def test_fifo_5x_local_retry_and_dlq(make_target, reference_for, scenario: Scenario) -> None:
    run_checked(make_target, reference_for, scenario)


@pytest.mark.spec("FIFO-01", "FIFO-03", "QSEL-04")
@pytest.mark.parametrize("profile", BROKER_PROFILES)
@given(groups=st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20),
                       min_size=1, max_size=5), per_group=st.integers(1, 4))
def test_message_group_routing(make_target, profile, groups, per_group):
    """Every message of a group lands on one queue. Which queue is pinned by the catalog vectors below and
    by the JVM cross-check of the hash functions (suites/test_primitives.py)."""
    target = make_target(profile)
    target.require("observe.queue_id")
    target.create_topic("T", read_queues=8, write_queues=8, message_type="FIFO")
    producer = target.producer()
    for g in groups:
        for _ in range(per_group):
            producer.send("T", b"x", key=g, message_group=g)
    for g in groups:
        queues = {e.queue_id for e in target.events() if e.kind == "SEND_OK" and e.message_group == g}
        require(len(queues) == 1, "FIFO-01" if profile == "grpc-5.x" else "FIFO-03", f"group {g!r} spread over {queues}")


CATALOG_ROUTES = [("grpc-5.x", "order-1", 4, 3), ("grpc-5.x", "order-2", 16, 11), ("grpc-5.x", "user-42", 2, 1),
                  ("grpc-5.x", "order-2", 4, 2), ("remoting-4.x", "order-1", 8, 6), ("remoting-4.x", "order-2", 8, 5),
                  ("remoting-4.x", "Aa", 8, 0)]


@pytest.mark.spec("FIFO-01", "FIFO-03")
@pytest.mark.parametrize("profile,group,queues,want", CATALOG_ROUTES)
def test_catalog_group_routing_through_the_target(make_target, profile, group, queues, want):
    target = make_target(profile)
    target.require("observe.queue_id")
    target.create_topic("T", read_queues=queues, write_queues=queues, message_type="FIFO")
    result = target.producer().send("T", b"x", key=group, message_group=group)
    require(result.queue_id == want, "FIFO-01" if profile == "grpc-5.x" else "FIFO-03",
            f"{group} on {queues} queues went to {result.queue_id}, the catalog says {want}")
