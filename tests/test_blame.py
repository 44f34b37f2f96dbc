"""One bug, one red behaviour (issue 37): where a target's story first parts from the reference's, the
differential suite blames the behaviours that state what differs (``suites.blame``), not the consumer
kind's whole story.

The tables are checked against the spec; the blame of synthetic differences is checked rule by rule; and
single bugs, one per area, patched into the reference and served behind the driver protocol, are judged by
the unchanged differential suite through ``rmqc run``: the run summary marks exactly the behaviours each
bug breaks, and shows the first differing step with both stories around it."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from serving import ROOT

from history.profiles import GRPC_5X, REMOTING_4X
from history.transcripts import Divergence, Step
from spec.loader import default_spec
from suites import blame

DIFFERENTIAL = ROOT / "suites" / "test_differential.py"


def _table_ids() -> set[str]:
    return blame.reachable_ids()


def test_every_id_the_tables_blame_is_a_behaviour_of_the_spec() -> None:
    unknown = sorted(_table_ids() - set(default_spec().behaviours))
    assert not unknown, f"the blame tables name IDs the spec does not have: {unknown}"


def test_every_table_entry_is_a_tuple_of_known_spec_ids() -> None:
    """A single ID where a tuple was meant is split into characters by whoever iterates it (issue 55: a failure
    blamed on '-', and the run's summary lost to a KeyError): every entry of every table is a non-empty tuple
    of the spec's IDs."""
    known = set(default_spec().behaviours)
    bad = [f"{name}[{key!r}] = {ids!r}" for name, table in blame.tables().items() for key, ids in table.items()
           if not (isinstance(ids, tuple) and ids and all(isinstance(i, str) and i in known for i in ids))]
    assert not bad, f"blame table entries that are not tuples of known spec IDs: {bad}"
    assert len(blame.tables()) >= 13


def test_one_id_where_a_tuple_was_meant_is_refused_not_split() -> None:
    with pytest.raises(TypeError, match="one spec ID where a sequence"):
        blame._ordered("TX-02")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a tuple of spec IDs"):
        blame.Blame("TX-02", "m")  # type: ignore[arg-type]


def test_a_delivery_of_a_rolled_back_transaction_is_blamed_on_its_end_state() -> None:
    half = _step("TX_HALF", 0, stored_topic="RMQ_SYS_TRANS_HALF_TOPIC", real_topic="T")
    end = _step("TX_END", 0, state="ROLLBACK_MESSAGE", source="CLIENT")
    for profile in (REMOTING_4X, GRPC_5X):
        assert _blamed(profile, [half, end, DELIVER_1], [half, end]) == ("TX-02",)


def _differential_marks() -> set[str]:
    ids: set[str] = set()
    for node in ast.parse(DIFFERENTIAL.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("mark.spec"):
                    ids |= {a.value for a in decorator.args if isinstance(a, ast.Constant)}
    return ids


def test_every_behaviour_the_differential_suite_observes_can_be_blamed() -> None:
    marks = _differential_marks()
    assert marks, "the differential suite's tests lost their spec marks"
    habits = {sid for sid in marks if default_spec().behaviours[sid].sdk}  # a client's habit shapes the story
    unreachable = sorted(marks - _table_ids() - habits)
    assert not unreachable, f"the differential suite is marked with {unreachable}, which no difference can blame"


def _step(kind: str, at_ms: int = 0, **fields: str) -> Step:
    return Step(kind, at_ms, tuple(sorted(fields.items())))


SEND = _step("SEND_OK", status="SEND_OK", stored_topic="T", topic="T")
DELIVER_1 = _step("DELIVER", 0, attempt="1", reconsume_times="0", stored_topic="T", topic="T", msg_id="id0")
FAIL_1 = _step("CONSUME_FAIL", 0, attempt="1", outcome="RECONSUME_LATER")
RETRY_4X = _step("RETRY_SCHEDULED", 0, attempt="2", delay_level="3", expected_delay_ms="10000", via="send_back")
DELIVER_2 = _step("DELIVER", 10_000, attempt="2", reconsume_times="1", stored_topic="%RETRY%G", topic="T",
                  msg_id="id0")


def _blamed(profile: str, seen: list[Step], want: list[Step], hint: str | None = None) -> tuple[str, ...]:
    index = next(i for i in range(max(len(seen), len(want)))
                 if i >= len(seen) or i >= len(want) or seen[i] != want[i])
    divergence = Divergence("k", index, seen[index] if index < len(seen) else None,
                            want[index] if index < len(want) else None)
    return blame.story_blame(profile, divergence, seen, want, hint).spec_ids


def test_a_field_of_a_step_is_blamed_on_the_behaviour_that_states_it() -> None:
    want = [SEND, DELIVER_1, FAIL_1, RETRY_4X, DELIVER_2]
    wrong_level = [SEND, DELIVER_1, FAIL_1,
                   _step("RETRY_SCHEDULED", 0, **{**dict(RETRY_4X.fields), "delay_level": "2"})]
    assert _blamed(REMOTING_4X, wrong_level, want) == ("RETRY-CONC-04",)
    wrong_view = [SEND, DELIVER_1, FAIL_1, RETRY_4X, _step("DELIVER", 10_000, **{**dict(DELIVER_2.fields),
                                                                                 "topic": "%RETRY%G"})]
    assert _blamed(REMOTING_4X, wrong_view, want) == ("RETRY-CONC-09",)
    new_id = [SEND, DELIVER_1, FAIL_1, RETRY_4X, _step("DELIVER", 10_000, **{**dict(DELIVER_2.fields),
                                                                             "msg_id": "id1"})]
    assert _blamed(REMOTING_4X, new_id, want) == ("MSGID-02",)


def test_a_step_time_alone_is_blamed_on_the_ladder_or_the_delay_that_sets_it() -> None:
    want = [SEND, DELIVER_1, FAIL_1, RETRY_4X, DELIVER_2]
    late = [*want[:4], _step("DELIVER", 12_000, **dict(DELIVER_2.fields))]
    assert _blamed(REMOTING_4X, late, want) == ("RETRY-CONC-07",)
    assert _blamed(REMOTING_4X, late, want, hint=blame.ORDERLY_4X) == ("RETRY-CONC-07",)  # its retry was a send-back
    delayed_send = _step("SEND_OK", delay_level="3", status="SEND_OK", stored_topic="SCHEDULE_TOPIC_XXXX", topic="T")
    first = _step("DELIVER", 10_000, **dict(DELIVER_1.fields))
    assert _blamed(REMOTING_4X, [delayed_send, _step("DELIVER", 11_000, **dict(DELIVER_1.fields))],
                   [delayed_send, first]) == ("DELAY-01",)
    revived = [SEND, DELIVER_1, _step("DELIVER", 62_000, **dict(DELIVER_2.fields))]
    assert _blamed(GRPC_5X, [*revived[:2], _step("DELIVER", 64_000, **dict(DELIVER_2.fields))], revived) \
        == ("RETRY-5X-11",)


def test_a_dead_letter_instead_of_a_retry_blames_the_dead_letter_decision_only() -> None:
    want = [SEND, DELIVER_1, FAIL_1, RETRY_4X, DELIVER_2]
    early = [SEND, DELIVER_1, FAIL_1, _step("DLQ", 0, topic="%DLQ%G", reconsume_times="1")]
    assert _blamed(REMOTING_4X, early, want) == ("RETRY-CONC-04",)
    five = [SEND, DELIVER_1, FAIL_1, _step("RETRY_SCHEDULED", 0, attempt="2", expected_delay_ms="1000",
                                           via="change_invisible_duration"), DELIVER_2]
    assert _blamed(GRPC_5X, [*five[:3], _step("DLQ", 0, topic="%DLQ%G", reconsume_times="1")], five) \
        == ("RETRY-5X-07",)
    assert _blamed(REMOTING_4X, [*want[:3], RETRY_4X], want) == ("RETRY-CONC-04",)  # the redelivery never came
    assert _blamed(REMOTING_4X, [*want[:3], RETRY_4X], want, hint=blame.BROADCAST_4X) == ("RETRY-CONC-04",)


def test_a_stored_copy_is_blamed_on_the_property_that_differs_else_on_its_topic() -> None:
    kept = blame.stored_blame(blame.CONCURRENT_4X, "T", ["k0 rt=0 DELAY=1;KEYS=k0"], ["k0 rt=0 KEYS=k0"])
    assert kept.spec_ids == ("DELAY-06",) and "topic T stores" in kept.message
    renamed = blame.stored_blame(blame.CONCURRENT_4X, "SCHEDULE_TOPIC_XXXX", ["k0 rt=1 REAL_TOPIC=%RETRY%G_x"],
                                 ["k0 rt=1 REAL_TOPIC=%RETRY%G"])
    assert renamed.spec_ids == ("RETRY-CONC-05",)
    assert blame.stored_blame(blame.PUSH_5X, "%DLQ%G", [], ["k0 rt=16 KEYS=k0"]).spec_ids == ("RETRY-5X-07",)
    assert blame.stored_blame(blame.CONCURRENT_4X, "RMQ_SYS_TRANS_OP_HALF_TOPIC", ["a"], ["b"]).spec_ids == ("TX-05",)


def test_the_blame_shows_both_stories_around_the_first_difference() -> None:
    want = [SEND, DELIVER_1, FAIL_1, RETRY_4X, DELIVER_2]
    seen = [*want[:4], _step("DELIVER", 12_000, **dict(DELIVER_2.fields))]
    found = blame.story_blame(REMOTING_4X, Divergence("k", 4, seen[4], want[4]), seen, want)
    assert "step 5: observed DELIVER at +12000 ms" in found.message
    assert "observed around it:\n  3. CONSUME_FAIL" in found.message
    assert "the reference around it:" in found.message and "> 5. DELIVER at +10000 ms" in found.message


SINGLE_BUGS = {  # tests/drivers/breaks/NAME.py -> (profile, the behaviours it breaks), one per area
    "send-back-dead-letters-early": (REMOTING_4X, {"RETRY-CONC-04"}),  # the 4.x send-back
    "delay-level-one-slow": (REMOTING_4X, {"DELAY-01"}),  # the delay table
    "orderly-suspend-longer": (REMOTING_4X, {"ORDER-4X-02"}),  # the orderly consumer
    "transaction-check-interval-slow": (REMOTING_4X, {"TX-03"}),  # transactions
    "listener-sees-the-retry-topic": (REMOTING_4X, {"RETRY-CONC-09"}),  # what the listener sees
    "delay-kept-on-restore": (REMOTING_4X, {"DELAY-06"}),  # stored copies
    "nack-backoff-one-ahead": (GRPC_5X, {"RETRY-5X-06"}),  # the 5.x nack
    "pop-dead-letters-early": (GRPC_5X, {"RETRY-5X-07"}),  # the 5.x dead letter
    "revive-makes-a-new-message-id": (GRPC_5X, {"MSGID-03"}),  # message ids
    "fifo-consumed-count-kept": (GRPC_5X, {"FIFO-06"}),  # FIFO bookkeeping
    "timer-exact-tick-floored": (GRPC_5X, {"DELAY-08"}),  # the 5.x timer
    "rollback-commits": (REMOTING_4X, {"TX-02"}),  # a transaction's end state (issue 55)
}
DIFFERENTIAL_SELECTION = "programs_tell_the_reference_story or timed_messages_tell or hands_over"
"""The differential suite's generated programs (every consumer kind, sends, transactions, receives), timed
messages and FIFO handovers; the scenario workloads, which repeat the programs' consumer kinds one by one, are
left out to keep the run short."""


@pytest.mark.parametrize("name", sorted(SINGLE_BUGS))
def test_a_single_bug_marks_exactly_the_behaviours_it_breaks(tmp_path: Path, name: str) -> None:
    profile, broken = SINGLE_BUGS[name]
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target",
                           f"driver:python tests/drivers/patched_reference_driver.py {name}", "--profile", profile,
                           "-k", DIFFERENTIAL_SELECTION, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    behaviours = json.loads((out / "summary.json").read_text())["behaviours"]
    failing = {sid for sid, b in behaviours.items() if b["verdict"] == "fail"}
    assert failing == broken and len(failing) <= 3, {sid: [t["reason"][:200] for t in behaviours[sid]["tests"]]
                                                     for sid in failing}
    shown = [t for sid in broken for t in behaviours[sid]["tests"] if t["verdict"] == "fail"]
    details = " ".join(t.get("detail") or "" for t in shown)
    assert any("the reference" in t["reason"] for t in shown), shown  # the first difference, both sides
    assert "the reference around it" in details or "the reference stores" in details, details[-1500:]


def test_a_transaction_copy_stored_by_one_side_only_is_blamed_on_its_end_state() -> None:
    committed = "k0 rt=0 KEYS=k0;PGROUP=TP;UNIQ_KEY=id1"
    plain = "k0 rt=0 KEYS=k0;UNIQ_KEY=id0"
    assert blame.stored_blame("4x", "T", [committed, plain], [plain]).spec_ids == ("TX-02",)
    assert blame.stored_blame("5x", "T", [plain], [committed, plain]).spec_ids == ("TX-02",)
    # a copy both sides stored with different properties is still the property's
    assert blame.stored_blame("4x", "T", ["k0 rt=0 DELAY=3"], ["k0 rt=0"]).spec_ids == ("DELAY-06",)
