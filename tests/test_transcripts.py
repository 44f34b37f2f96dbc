"""history.transcripts: a history cut into per-key stories, and where two stories part."""
from __future__ import annotations

from history.events import Event
from history.transcripts import (
    Placement,
    first_divergence,
    id_names,
    placements,
    transcripts,
)


def _e(kind: str, ts: int, key: str = "k", msg_id: str = "A1", **fields) -> Event:
    return Event(kind=kind, ts_ms=ts, key=key, msg_id=msg_id, **fields)


def test_ids_are_named_per_key_in_order_of_first_appearance() -> None:
    events = [_e("SEND_OK", 0, msg_id="X"), _e("SEND_OK", 0, key="j", msg_id="Y"), _e("DELIVER", 5, msg_id="Z")]
    assert id_names(events) == {"X": "id0", "Y": "id0", "Z": "id1"}


def test_deployment_fields_are_left_out_and_ids_in_properties_named() -> None:
    dlq = _e("DLQ", 30, topic="%DLQ%G", queue_id=3, client_id="c-9",
             detail={"properties": "REAL_QID=2;ORIGIN_MESSAGE_ID=A1;RETRY_TOPIC=T", "broker": "b"})
    (step,) = transcripts([_e("SEND_OK", 10, detail={"broker": "broker-a"}), dlq])["k"][1:]
    assert step.at_ms == 20
    assert dict(step.fields) == {"topic": "%DLQ%G", "msg_id": "id0",
                                 "properties": "ORIGIN_MESSAGE_ID=id0;RETRY_TOPIC=T"}


def test_events_without_a_key_or_outside_a_story_are_left_out() -> None:
    stories = transcripts([_e("REBALANCE", 0, key=None), _e("OFFSET_COMMIT", 0), _e("DELIVER", 1)])
    assert [s.kind for s in stories["k"]] == ["DELIVER"]


def test_the_first_divergence_names_the_step_and_both_sides() -> None:
    want = transcripts([_e("DELIVER", 0), _e("DELIVER", 10_000, attempt=2)])["k"]
    late = transcripts([_e("DELIVER", 0), _e("DELIVER", 10_050, attempt=2)])["k"]
    assert first_divergence("k", want, want, {}) is None
    assert first_divergence("k", late, want, {1: 100}) is None
    divergence = first_divergence("k", late, want, {})
    assert divergence is not None and divergence.index == 1
    assert "+10050 ms" in divergence.describe() and "+10000 ms" in divergence.describe()
    short = first_divergence("k", want[:1], want, {})
    assert short is not None and "observed nothing more" in short.describe()


def test_placement_is_each_send_queue_and_the_first_consumer_in_order_of_appearance() -> None:
    events = [Event(kind="REBALANCE", ts_ms=0, client_id="zz@2"), Event(kind="REBALANCE", ts_ms=0, client_id="aa@1"),
              _e("SEND_OK", 0, queue_id=3), _e("DELIVER", 1, client_id="aa@1"), _e("DELIVER", 9, client_id="zz@2")]
    assert placements(events) == {"k": Placement((3,), 1)}
    assert str(placements(events)["k"]) == "queues [3], first delivered to consumer 1"


def test_a_missing_delivery_is_not_another_placement() -> None:
    """A target that never delivered a key, or stored fewer copies, placed nothing differently: the stories
    must be compared (a broker that loses timed messages was set aside as placed elsewhere before)."""
    want = Placement((0,), 0)
    assert not Placement((0,)).apart_from(want)
    assert not Placement().apart_from(Placement((1,), 0))
    assert Placement((1,), 0).apart_from(want)
    assert Placement((0,), 1).apart_from(want)
    assert not Placement((0, 2), 0).apart_from(want)
    assert placements([_e("DELIVER", 1, client_id="a@1")]) == {"k": Placement((), 0)}
