"""The model of the seed-000 Kafka retry-topic pattern by its own properties (issue 37; KAFKA-01..KAFKA-04).

The stories through the target compare deliveries and waits; these pin what a story does not show: a record's
offset is its place in its partition's log, and every event that names a partition and an offset (a send, a
delivery, a dead letter) points at that record; the listener's view carries the attempt the header counts; a
log exists only on a partition its topic has; a consumer that shut down consumes nothing more. The mutation run
imports the model from its scratch copy (``reference_rule``), as for the clock's properties."""
from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from history.values import ListenerOutcome
from history.views import MessageView
from reference_impl.model.kafka_pattern import KafkaConsumer, KafkaPatternSimulation
from reference_impl.rules import kafka_pattern as rules

pytestmark = [pytest.mark.reference_rule, pytest.mark.spec("KAFKA-01", "KAFKA-02", "KAFKA-03", "KAFKA-04")]

DELAY_MS = 1_000


class _Script:
    """A listener that fails each message its scripted number of times, then succeeds; it keeps every view."""

    def __init__(self, failures: dict[str, int]) -> None:
        self.failures = failures
        self.seen: list[MessageView] = []

    def __call__(self, view: MessageView) -> ListenerOutcome:
        self.seen.append(view)
        failed_before = sum(1 for v in self.seen[:-1] if v.msg_id == view.msg_id)
        key = view.key or ""
        return ListenerOutcome.RECONSUME_LATER if failed_before < self.failures.get(key, 0) else ListenerOutcome.SUCCESS


def _run(partitions: int, max_retry: int, plan: list[int], groups: int, stop_after_ms: int | None
         ) -> tuple[KafkaPatternSimulation, list[KafkaConsumer], list[_Script], list]:
    sim = KafkaPatternSimulation(max_retry_count=max_retry, retry_delay_ms=DELAY_MS)
    sim.create_topic("T", partitions)
    scripts = [_Script({f"k{i}": n for i, n in enumerate(plan)}) for _ in range(groups)]
    consumers = [KafkaConsumer(sim, f"G{g}", "T", scripts[g], f"c{g}") for g in range(groups)]
    round_robin = itertools.count()
    sent = [sim.send("T", f"v{i}".encode(), f"k{i}", round_robin) for i in range(len(plan))]
    if stop_after_ms is not None:
        sim.clock.advance(stop_after_ms)
        consumers[0].shutdown()
    sim.clock.run_until(sim.clock.now_ms + (max_retry + 2) * DELAY_MS * (len(plan) + 1))
    return sim, consumers, scripts, sent


PLANS = st.lists(st.integers(0, 5), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(partitions=st.integers(1, 3), max_retry=st.integers(0, 3), plan=PLANS, groups=st.integers(1, 2))
def test_every_event_that_names_an_offset_points_at_its_record(partitions: int, max_retry: int, plan: list[int],
                                                                groups: int) -> None:
    """A send's, a delivery's and a dead letter's partition and offset are where the record is (KAFKA-01, KAFKA-03)."""
    sim, consumers, _, sent = _run(partitions, max_retry, plan, groups, None)
    for i, result in enumerate(sent):
        assert result.queue_id == i % partitions, "the producer's partitions go round-robin"
        assert sim.logs[("T", result.queue_id)][result.queue_offset].msg_id == result.msg_id
    for (topic, partition) in sim.logs:
        assert topic in sim.partitions and 0 <= partition < sim.partitions[topic], \
            f"a record was written to {topic}:{partition}, a partition that topic does not have"
    events = sim.recorder.events
    for e in events:
        if e.kind in ("SEND_OK", "DELIVER", "DLQ"):
            topic = e.topic
            assert sim.logs[(topic, e.queue_id)][e.queue_offset].msg_id == e.msg_id, e
    for consumer in consumers:
        for e in events:
            if e.kind == "DLQ" and e.group == consumer.group:
                assert e.topic == consumer.dead_topic and e.queue_id == 0
                assert sim.partitions[consumer.dead_topic] == 1 and sim.partitions[consumer.retry_topic] == 1


@settings(max_examples=40, deadline=None, derandomize=True)
@given(max_retry=st.integers(0, 3), plan=PLANS, groups=st.integers(1, 2))
def test_the_view_counts_attempts_from_the_header_and_the_dead_topic_takes_the_rest(
        max_retry: int, plan: list[int], groups: int) -> None:
    """Attempt n is retry header n - 1; a message failed more than the maximum has 1 + maximum deliveries and one
    dead letter per group; fewer failures are delivered until they succeed (KAFKA-01, KAFKA-04)."""
    sim, _, scripts, _ = _run(1, max_retry, plan, groups, None)
    for script in scripts:
        by_key = Counter(v.key for v in script.seen)
        for view in script.seen:
            count = int(view.properties.get(rules.RETRY_HEADER, "0"))
            assert view.delivery_attempt == count + 1 and view.reconsume_times == count, view
        for i, n in enumerate(plan):
            assert by_key[f"k{i}"] == min(n, max_retry) + 1, (i, n, max_retry)
    dead = Counter((e.group, e.key) for e in sim.recorder.events if e.kind == "DLQ")
    assert dead == Counter({(f"G{g}", f"k{i}"): 1 for g in range(groups) for i, n in enumerate(plan) if n > max_retry})


@settings(max_examples=25, deadline=None, derandomize=True)
@given(plan=PLANS, stop_after_ms=st.integers(0, 3 * DELAY_MS))
def test_a_consumer_that_shut_down_consumes_nothing_more(plan: list[int], stop_after_ms: int) -> None:
    sim, consumers, _, _ = _run(1, 3, plan, 2, stop_after_ms)
    stopped_at = stop_after_ms
    late = [e for e in sim.recorder.events if e.kind == "DELIVER" and e.client_id == consumers[0].client_id
            and e.ts_ms > stopped_at]
    assert not late, f"deliveries to a consumer after its shutdown at {stopped_at} ms: {late[:2]}"
    others = [e for e in sim.recorder.events if e.kind == "DELIVER" and e.client_id == consumers[1].client_id]
    assert len({e.key for e in others}) == len(plan), "the other group still consumes every message"
