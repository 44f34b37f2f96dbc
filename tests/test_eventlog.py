"""The event log: the Python record, the Parquet schema and the JSON Schema agree, and runs are deterministic."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from adapters.reference import ReferenceTarget
from history.events import COLUMNS, EVENT_KINDS, EventRecorder
from history.parquet import arrow_schema, read_parquet, write_parquet
from history.profiles import BROKER_PROFILES
from spec.loader import schema
from suites.scenario import MessagePlan, Scenario, run_scenario


def _events(profile: str = "remoting-4.x", seed: int = 0):
    consumer = "push4x-concurrent" if profile == "remoting-4.x" else "push5x"
    scenario = Scenario(consumer, (MessagePlan("a", 3), MessagePlan("b", 99), MessagePlan("c", 0, delay_level=2)))
    return run_scenario(ReferenceTarget(profile, seed=seed), scenario)


def test_kinds_and_columns_match_the_json_schema() -> None:
    s = schema("event-log.schema.json")
    assert tuple(s["properties"]["kind"]["enum"]) == EVENT_KINDS
    assert set(s["properties"]) == set(COLUMNS)
    assert tuple(arrow_schema().names) == tuple(s["properties"]) == COLUMNS


@pytest.mark.parametrize("profile", BROKER_PROFILES)
def test_every_emitted_event_validates(profile: str) -> None:
    validator = jsonschema.Draft202012Validator(schema("event-log.schema.json"))
    events = _events(profile)
    assert {e.kind for e in events} >= {"SEND_INVOKE", "SEND_OK", "DELIVER", "CONSUME_FAIL", "CONSUME_OK", "DLQ",
                                        "RETRY_SCHEDULED"}
    for e in events:
        row = {c: getattr(e, c) for c in COLUMNS}
        row["detail"] = dict(e.detail)
        validator.validate(row)


def test_parquet_round_trip(tmp_path: Path) -> None:
    events = _events()
    path = tmp_path / "events.parquet"
    assert write_parquet(events, path) == len(events)
    assert list(read_parquet(path)) == events


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown event kind 'NOPE'"):
        EventRecorder("r", "t", "p").emit("NOPE", 0)


@pytest.mark.parametrize("profile", BROKER_PROFILES)
def test_the_model_is_deterministic_for_a_seed(profile: str) -> None:
    assert _events(profile, seed=7) == _events(profile, seed=7)
    assert [e.msg_id for e in _events(profile, 7)] != [e.msg_id for e in _events(profile, 8)]


def test_dlq_event_counts_deliveries() -> None:
    events = _events()
    dlq = next(e for e in events if e.kind == "DLQ")
    assert dlq.key == "b" and dlq.attempt == 17 and dlq.topic == "%DLQ%G"
    assert json.dumps(dict(dlq.detail))  # plain strings only


def test_a_transaction_end_states_its_outcome_in_a_column_of_its_own(tmp_path: Path) -> None:
    """TX_END carries its state (detail.state) in ``tx_state`` too, whoever built the event (a recorder, a driver's
    row, a log read back): the Spark checks read that column, never the detail map of millions of rows."""
    recorder = EventRecorder("r", "t", "grpc-5.x")
    end = recorder.emit("TX_END", 5, msg_id="m1", detail={"state": "COMMIT_MESSAGE", "source": "CLIENT"})
    other = recorder.emit("DELIVER", 6, msg_id="m1", detail={"state": "COMMIT_MESSAGE"})
    assert (end.tx_state, other.tx_state) == ("COMMIT_MESSAGE", None)
    write_parquet([end, other], tmp_path / "log.parquet")
    assert [e.tx_state for e in read_parquet(tmp_path / "log.parquet")] == ["COMMIT_MESSAGE", None]
