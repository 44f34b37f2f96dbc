"""FIFO through the target: message groups routed to queues, local retries and the DLQ of a FIFO group."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.outcomes import Inconclusive, NotApplicable
from history.profiles import BROKER_PROFILES
from history.values import ListenerOutcome
from reference_impl.rules import fifo as fifo_rules
from suites import strategies
from suites.checks import require
from suites.harness import run_checked
from suites.oracle import release_of
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


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("FIFO-06", "RETRY-5X-08")
@pytest.mark.parametrize("sdk", ["java", "python"])
def test_a_fifo_message_redelivered_by_the_server_is_counted_by_the_broker_and_then_by_the_sdk(target, sdk):
    """A simple consumer of a FIFO group takes ``a`` and lets its invisible time run out: ``b`` behind it in
    the same message group is not handed out meanwhile. The broker counts each offset's pops, and a proxy in
    local mode hands every message of a pop out as the pop's least count + 1 (FIFO-06): the next pop takes
    ``a`` (counted once) with ``b`` (new), both attempt 1; the one after, both attempt 2. A push consumer of
    the group then pops both again (attempt 3) and fails ``a`` every time: Java numbers its local attempts on
    from the server's attempt (3, 4), Python from 1 (1, 2, 3, 4); with 3 retries (4 attempts) ``a`` then goes
    to ``%DLQ%G`` (RETRY-5X-08)."""
    target.require("consumer.simple5x", "consumer.push5x.fifo", f"sdk.{sdk}")
    target.create_topic("T", read_queues=1, write_queues=1, message_type="FIFO")
    target.configure_group("G", fifo=True, retry_max_times=3)
    if not fifo_rules.order_info_per_offset(release_of(target)):
        raise NotApplicable(f"at {release_of(target)} the broker keeps one consumed count per queue and blocks by the "
                            "new receive's invisible time (FIFO-05, FIFO-06 variants), which the model does not follow")
    simple = target.simple_consumer_5x("G", "T")
    producer = target.producer()
    producer.send("T", b"a", key="a", message_group="g")
    producer.send("T", b"b", key="b", message_group="g")
    # 'a' invisible for longer than a receive may wait: before 5.1 the proxy long-polls for what is left of the
    # call's deadline (ReceiveMessageActivity@5.0.0: pollTime = remaining - requestTimeout / 2), seconds of wall
    first = simple.receive(1, invisible_ms=30_000)
    visible_again_at = target.now_ms() + 30_000
    require([(v.key, v.delivery_attempt) for v in first] == [("a", 1)], "FIFO-06", f"first receive {first}")
    target.advance(3000)
    held = simple.receive(16, invisible_ms=10_000)
    if held and target.now_ms() >= visible_again_at:  # a wall clock under load: the receive outlasted 'a's time
        raise Inconclusive(f"FIFO-06: {[v.key for v in held]} handed out by a receive that ended "
                           f"{target.now_ms() - visible_again_at} ms after 'a' was visible again: what it saw of the "
                           "block is not known")
    require(held == [], "FIFO-06", f"{[v.key for v in held]} handed out while 'a' of the same group is in flight")
    target.advance(max(0, visible_again_at + 1000 - target.now_ms()))
    for pop, want in ((2, 1), (3, 2)):
        got = sorted((v.key, v.delivery_attempt) for v in simple.receive(16, invisible_ms=10_000))
        require(got == [("a", want), ("b", want)], "FIFO-06",
                f"pop {pop} of 'a' (with 'b', popped {pop - 2} times before) hands both out as the pop's least count "
                f"+ 1 = attempt {want}; got {got}")
        target.advance(11_000)
    seen: list[str] = []
    target.push_consumer_5x("G", "T", lambda v: (seen.append(v.key or ""),
                                                 ListenerOutcome.RECONSUME_LATER if v.key == "a"
                                                 else ListenerOutcome.SUCCESS)[1], sdk=sdk)
    target.settle()
    want = 4 - 3 + 1 if sdk == "java" else 4  # attempts 3 and 4 (the server's 3rd), or 1 to 4
    require(seen.count("a") == want, "RETRY-5X-08",
            f"the {sdk} consumer ran 'a' {seen.count('a')} times after the server's attempt 3; the spec says {want}")
    require([e.key for e in target.events() if e.kind == "DLQ"] == ["a"] and "b" in seen, "RETRY-5X-08",
            f"'a' to the DLQ and 'b' consumed after it; deliveries {seen}")


JAVA_HASH_ROUTES = [("polygenelubricants", 3, 2), ("order-negative", 8, 4), ("zzzzzzzz", 5, 2)]
"""Sharding keys whose ``String.hashCode`` is negative (``Integer.MIN_VALUE`` for the first): Java's ``%`` keeps
the dividend's sign, then ``SelectMessageQueueByHash`` takes ``Math.abs`` (PRIM-01, FIFO-03). Computed by hand
from the catalog's formulas: -2147483648 % 3 = -2, -188391468 % 8 = -4, -1910022912 % 5 = -2."""


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("PRIM-01", "FIFO-03")
@pytest.mark.parametrize("group,queues,want", JAVA_HASH_ROUTES)
def test_a_sharding_key_of_negative_hash_routes_as_java_computes(make_target, group, queues, want):
    target = make_target()
    target.require("observe.queue_id")
    if "sdk.cpp4x" in target.capabilities:
        raise NotApplicable(f"{target.name}: PRIM-01 is Java's arithmetic; the C++ client hashes with its own")
    target.create_topic("T", read_queues=queues, write_queues=queues)
    result = target.producer().send("T", b"x", key=group, message_group=group)
    require(result.queue_id == want, "PRIM-01",
            f"{group!r} (hashCode negative) on {queues} queues went to {result.queue_id}, Java computes {want}")
