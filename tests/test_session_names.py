"""A session's names on a shared server (``adapters.names``) and what a wall-clock driver's rows say in them
(``WallDriverTarget.incoming``): the suites see the logical names, the stored topic of a delivery's detail too."""
from __future__ import annotations

from types import SimpleNamespace

from adapters.names import SessionNames
from adapters.wall_driver import WallDriverTarget


def test_a_delivery_row_is_told_back_in_the_sessions_names_detail_included() -> None:
    names = SessionNames("abc123")
    topic, retry, group = names.real("T"), names.real("%RETRY%G"), names.real("G")
    assert (topic, retry, group) == ("T-abc123", "%RETRY%G-abc123", "G-abc123")
    session = SimpleNamespace(names=names)
    row = {"kind": "DELIVER", "topic": topic, "group": group, "queue_id": 2, "queue_offset": 1,
           "detail": {"stored_topic": retry, "reconsume_times": "1"}}
    seen = WallDriverTarget.incoming(session, row)  # type: ignore[arg-type]
    assert seen["topic"] == "T" and seen["group"] == "G"
    assert seen["detail"] == {"stored_topic": "%RETRY%G", "reconsume_times": "1"}  # OFFSET-04's windows read it
    assert row["detail"]["stored_topic"] == retry  # the driver's row itself is left as it came
    assert WallDriverTarget.incoming(session, {"kind": "SEND_OK", "topic": topic})["topic"] == "T"  # type: ignore[arg-type]
