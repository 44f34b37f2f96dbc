"""The bulk generator is faithful to the discrete-event model (issue 5), without Spark."""
from __future__ import annotations

from collections import Counter

import pytest

from history.profiles import BROKER_PROFILES
from spark_checks.simulate import (
    Distributions,
    FifoQueues,
    generate_chunk,
    model_events,
    plan_messages,
    to_table,
)

KINDS = {"SEND_OK", "DELIVER", "CONSUME_OK", "CONSUME_FAIL", "DLQ", "APPLY"}


def _project(kind, ts, topic, group, msg_id, key, attempt):
    return kind, ts, topic, group, msg_id, key, attempt if kind in ("DELIVER", "DLQ") else None


@pytest.mark.parametrize("profile", BROKER_PROFILES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bulk_generator_equals_the_model(profile, seed):
    dist = Distributions(profile=profile, p_fail=0.3, p_always_fail=0.05, p_fifo=0.3, message_groups=4, p_delay=0.1,
                         queues=4)
    plan = plan_messages(80, seed, dist)
    rows = to_table(generate_chunk(plan, dist, FifoQueues()), plan, "r", profile, 0).to_pylist()
    bulk = Counter(_project(r["kind"], r["ts_ms"], r["topic"], r["group"], r["msg_id"], r["key"], r["attempt"])
                   for r in rows if r["kind"] in KINDS)
    model = Counter(_project(e.kind, e.ts_ms, e.topic, e.group, e.msg_id, e.key, e.attempt)
                    for e in model_events(plan, dist) if e.kind in KINDS)
    assert sum(bulk.values()) > 300
    assert bulk == model, (sorted((bulk - model).elements())[:5], sorted((model - bulk).elements())[:5])
    kinds = Counter(k[0] for k in bulk.elements())
    assert kinds["DLQ"] > 0 and kinds["CONSUME_FAIL"] > 0 and kinds["APPLY"] > 0
