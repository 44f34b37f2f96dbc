"""The seed-000 Kafka retry-topic pattern as its own profile, and its traces beside RocketMQ's."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.trace import lives
from reference_impl.rules import kafka_pattern as k
from suites import strategies
from suites.checks import require
from suites.harness import run_checked
from suites.oracle import default_oracle
from suites.scenario import Scenario, run_scenario


@pytest.mark.reference_rule
@pytest.mark.spec("KAFKA-01", "KAFKA-02", "KAFKA-03", "KAFKA-04")
def test_kafka_pattern_vectors():
    assert k.on_failure({}, 3) == ("retry", {k.RETRY_HEADER: "1"})
    assert k.on_failure({k.RETRY_HEADER: "3"}, 3)[0] == "dead"
    assert k.retry_wait_ms(1000, 4000, 10_000) == 7000 and k.retry_wait_ms(1000, 12_000, 10_000) == 0
    assert k.resend_target({"origin_topic": "T", "origin_partition": "2"}) == ("T", 2)
    assert k.interceptor_keeps({"origin_group": "g1"}, "g1") and not k.interceptor_keeps({"origin_group": "g1"}, "g2")


@pytest.mark.profile("kafka-retry")
@pytest.mark.spec("KAFKA-01", "KAFKA-02", "KAFKA-03", "KAFKA-04")
@given(msgs=strategies.message_plans(6, boundaries=(2, 3, 4)), max_retry=st.sampled_from([None, 1, 3, 5]),
       partitions=st.integers(1, 4))
def test_kafka_retry_pattern(make_target, reference_for, msgs, max_retry, partitions):
    """Every retry waits the fixed delay and comes back on the original partition; the dead topic at max."""
    run_checked(make_target, reference_for, Scenario("kafka-retry", msgs, retry_max_times=max_retry, queues=partitions))


@pytest.mark.spec("KAFKA-01", "KAFKA-02", "RETRY-CONC-07", "CLAIM-01")
@given(failures=st.lists(st.integers(0, 20), min_size=1, max_size=4))
def test_same_failure_scripts_kafka_versus_rocketmq(make_target, failures):
    """Same scripts, same maximum (16): the same number of deliveries and the same final state, but
    RocketMQ's waits follow the 10 s ... 2 h ladder where the Kafka pattern waits a fixed delay."""
    from suites.scenario import MessagePlan

    plans = tuple(MessagePlan(f"m{i}", f) for i, f in enumerate(failures))
    kafka = lives(run_scenario(make_target("kafka-retry"), Scenario("kafka-retry", plans, retry_max_times=16)), "G")
    rocket = lives(run_scenario(make_target("remoting-4.x"), Scenario("push4x-concurrent", plans)), "G")
    oracle = default_oracle()
    delay = oracle.kafka_retry(1).waits_ms[0]
    for plan in plans:
        a, b = kafka[plan.key], rocket[plan.key]
        require((a.deliveries, a.final) == (b.deliveries, b.final), "KAFKA-01",
                f"{plan.key}: kafka {a.deliveries}/{a.final} vs rocketmq {b.deliveries}/{b.final}")
        require(set(a.waits_ms) <= {delay}, "KAFKA-02", f"{plan.key}: kafka waits {a.waits_ms}")
        require(list(b.waits_ms) == [oracle.level_delay_ms(3 + rt) for rt in range(len(b.waits_ms))], "RETRY-CONC-07",
                f"{plan.key}: rocketmq waits {b.waits_ms}")
