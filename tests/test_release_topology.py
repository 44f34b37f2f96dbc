"""Release clusters of several brokers and their faults, the pure parts (issue 50): the ``--cluster`` shapes and the
keys each broker node gets, the ``--nemesis`` schedules a seed replays, and the recovery times of a soak."""
from __future__ import annotations

from pathlib import Path

import pytest

from adapters.nemesis import NemesisError, NemesisPlan
from adapters.release_plan import Ports, ReleasePlan
from adapters.release_topology import Topology, TopologyError
from rmqc.soak_recovery import FaultSpan, failures_after, percentile, recovery_ms, spans, summary


def test_one_master_is_the_default_and_keeps_the_single_broker_plan() -> None:
    plan = ReleasePlan("5.5.0", Ports(1, 10911, 2, 3), home=Path("/h"))
    assert plan.topology.single and list(plan.keys_set()) == ["namesrv", "broker", "proxy"]
    conf = plan.broker_conf()
    assert conf["brokerName"] == "broker-a" and conf["brokerRole"] == "ASYNC_MASTER"
    assert conf["storePathRootDir"] == "/h/store" and "haListenPort" not in conf


@pytest.mark.parametrize("text,masters,slaves,role,flush", [
    ("2m", 2, 0, "ASYNC_MASTER", "ASYNC_FLUSH"),
    ("1m1s,sync", 1, 1, "SYNC_MASTER", "ASYNC_FLUSH"),
    ("2m2s,async,sync-flush", 2, 1, "ASYNC_MASTER", "SYNC_FLUSH"),
    ("2m,sync-flush", 2, 0, "ASYNC_MASTER", "SYNC_FLUSH"),
])
def test_each_broker_node_gets_its_own_keys_port_and_store(text, masters, slaves, role, flush) -> None:
    shape = Topology.parse(text)
    nodes = shape.nodes()
    assert len(nodes) == masters * (1 + slaves)
    ports = Ports(1, 20000, 2, 3, tuple(20000 + 10 * i for i in range(1, len(nodes))))
    plan = ReleasePlan("5.5.0", ports, home=Path("/h"), topology=shape)
    keys = plan.keys_set()
    assert set(keys) == {"namesrv", "proxy", *(n.label for n in nodes)}
    seen_ports, stores = set(), set()
    for node in nodes:
        conf = keys[node.label]
        assert conf["brokerName"] == node.name and conf["brokerId"] == node.broker_id
        assert conf["brokerRole"] == (role if node.is_master else "SLAVE")
        assert conf["flushDiskType"] == flush
        assert conf["haListenPort"] == conf["listenPort"] + 1 and conf["bindAddress"] == "127.0.0.1"
        seen_ports.add(conf["listenPort"])
        stores.add(conf["storePathRootDir"])
    assert len(seen_ports) == len(stores) == len(nodes)  # a port and a store folder each
    assert all(s.startswith("/h/store/broker-") for s in stores)
    assert set(ports.all()) >= {p + d for p in seen_ports for d in (-2, 0, 1)}
    assert shape.as_json()["text"] == Topology.parse(shape.text).text


@pytest.mark.parametrize("text,words", [
    ("3x", r"expected <N>m\[<S>s\]"), ("2m,fast", "unknown option 'fast'"), ("1m2s", "expected"),
    ("2m,sync", "'sync' replicates to a slave"),
])
def test_a_bad_cluster_shape_is_one_line_saying_what_is_accepted(text, words) -> None:
    with pytest.raises(TopologyError, match=words):
        Topology.parse(text)


def test_a_nemesis_schedule_is_replayed_by_its_seed_and_bounded() -> None:
    plan = NemesisPlan.parse("kill,pause,every=60s,down=10s,seed=7")
    brokers = ["broker-a-0", "broker-b-0"]
    first = plan.schedule(600, brokers, has_proxy=True)
    assert first == plan.schedule(600, brokers, has_proxy=True)  # the same seed, the same faults at the same times
    assert [f.kind for f in first[:4]] == ["kill", "pause", "kill", "pause"]
    assert [f.at_s for f in first] == [60.0 * i for i in range(1, 10)]
    assert all(f.at_s + f.down_s + 20 <= 600 and f.process in brokers for f in first)
    other = NemesisPlan.parse("kill,pause,every=60s,down=10s,seed=8").schedule(600, brokers, has_proxy=True)
    assert [f.process for f in other] != [f.process for f in first]


@pytest.mark.parametrize("text,words", [
    ("explode", "unknown fault 'explode'"), ("kill,every=5s,down=10s", "must be longer than down"),
    ("kill,down=600s", "at most 120"), ("kill,often=3", "unknown option"), ("every=60s", "name at least one"),
])
def test_a_bad_nemesis_is_one_line(text, words) -> None:
    with pytest.raises(NemesisError, match=words):
        NemesisPlan.parse(text)


def test_recovery_runs_from_a_faults_end_to_the_first_send_after_the_last_failure() -> None:
    events = [{"ts_ms": 1000, "number": 0, "fault": "kill", "process": "broker-a-0", "phase": "start"},
              {"ts_ms": 2000, "number": 0, "fault": "kill", "process": "broker-a-0", "phase": "end"},
              {"ts_ms": 5000, "number": 1, "fault": "pause", "process": "broker-b-0", "phase": "start"},
              {"ts_ms": 6000, "number": 1, "fault": "pause", "process": "broker-b-0", "phase": "end"}]
    faults = spans(events)
    assert faults == [FaultSpan(0, "kill", "broker-a-0", 1000, 2000), FaultSpan(1, "pause", "broker-b-0", 5000, 6000)]
    sends = [(900, True), (1500, False), (2100, False), (2300, True), (2400, True),  # recovered 300 ms after the end
             (3500, False),                                                          # later: counted, not the fault's
             (5500, True), (6100, True)]                                             # never failed: at once
    assert recovery_ms(faults, sends) == [300, 100]
    assert failures_after(faults, sends) == [1, 0]
    assert recovery_ms(faults, [(1500, False), (4000, False)]) == [None, None]
    result = summary(faults, sends, time_scale=1.0)  # a wall second of settling is 1000 spec ms at scale 1
    assert (result["p50_ms"], result["max_ms"], result["not_recovered"]) == (100, 300, 0)
    assert [f["failures_after"] for f in result["per_fault"]] == [1, 0]
    halved = summary(faults, sends, time_scale=0.5)  # 2000 spec ms: the send failed at 3500 is the first fault's
    assert halved["not_recovered"] == 1 and halved["per_fault"][1]["recovery_ms"] == 50
    assert percentile([1, 2, 3, 4, 100], 0.99) == 100 and percentile([5], 0.5) == 5
