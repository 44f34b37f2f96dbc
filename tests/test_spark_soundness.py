"""The Spark checks are sound (issue 36): on every history the reference can produce, every check passes.

Elle's discipline: a checker reports no anomaly on a history a correct system can produce. The histories
here are the differential suite's generated programs (consumers that start late, are busy, fail, crash,
rebalance, leave; orderly, broadcasting and FIFO groups; delayed and timed messages; transactions; brokers
failing sends), run on the reference, each under a run id of its own, one log a profile. The run's settle is
stated as the harness states it (``SETTLED``: ``run_program`` marks it after its settle, before the consumers'
shutdown).

A failing check names each counterexample's program: the run id of a counterexample row is the program's
place in the list, so the program that made the history a check calls wrong is printed whole.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from adapters.targets import reference_target
from history.events import Event
from history.parquet import write_parquet
from history.profiles import GRPC_5X, REMOTING_4X
from spark_checks.checks import CHECKS, run_checks
from suites import strategies
from suites.programs import Program, run_program

PROGRAMS = 60
"""Programs a profile: the done-when asks for at least 50."""


@pytest.fixture(scope="module")
def spark():
    from spark_checks.session import spark_session, stop_session

    yield spark_session()
    stop_session()


def program_space(profile: str) -> st.SearchStrategy[Program]:
    """Every kind of generated program of the profile: the general programs (consumers starting, stopping,
    crashing, simple consumers, transactions, batches, send faults), timed sends, and on 5.x the FIFO
    hand-overs."""
    kinds = [strategies.programs(profile), strategies.timed_sends(profile)]
    if profile == GRPC_5X:
        kinds.append(strategies.handovers())
    return st.one_of(*kinds)


def history_of(program: Program, run_id: str) -> list[Event]:
    """The reference's events for ``program`` under ``run_id`` (its settle stated by ``run_program``)."""
    target = reference_target(program.profile, run_id=run_id)
    run_program(target, program)
    return target.events()


def _explain(result: dict, programs: dict[str, Program]) -> str:
    lines = []
    for check in result["checks"]:
        if check["verdict"] == "pass":
            continue
        lines.append(f"{check['name']} {check['verdict'].upper()} {check['counts']}")
        for example in check["counterexamples"][:5]:
            lines.append(f"  {json.dumps(example, default=str)}")
            program = programs.get(example.get("run_id") or "")
            if program is not None:
                lines.append(f"    made by {program!r}")
    return "\n".join(lines)


def drawn_programs(profile: str, count: int) -> dict[str, Program]:
    """``count`` programs of the profile, drawn as Hypothesis draws examples (seeded: the same programs every
    run), each under its run id. One example a program: a single example's first draw is the simplest."""
    programs: dict[str, Program] = {}

    @settings(max_examples=count, deadline=None, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(program=program_space(profile))
    def draw(program: Program) -> None:
        programs.setdefault(f"{profile}-{len(programs)}", program)

    draw()
    return programs


@pytest.mark.spec("RETRY-CONC-03", "RETRY-CONC-04", "RETRY-CONC-05", "RETRY-CONC-06", "RETRY-CONC-07", "OFFSET-04",
                  "ORDER-4X-02", "RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-08", "RETRY-5X-09", "FIFO-01", "DELAY-01",
                  "DELAY-08", "TX-02", "CLAIM-05")
@pytest.mark.parametrize("profile", [REMOTING_4X, GRPC_5X])
def test_every_check_passes_on_every_history_the_reference_can_produce(spark, tmp_path, profile: str) -> None:
    programs = drawn_programs(profile, PROGRAMS)
    assert len(programs) >= 50
    events = [e for run_id, program in programs.items() for e in history_of(program, run_id)]
    write_parquet(events, tmp_path / "log" / "part-0.parquet")
    result = run_checks(spark, str(tmp_path / "log"), profile=profile)
    assert [c["name"] for c in result["checks"]] == list(CHECKS)
    assert result["passed"], "a check calls a history of the reference wrong:\n" + _explain(result, programs)


COMPLETENESS_PROGRAMS = 400
"""Programs a profile for the injected faults: enough dead letters and FIFO pairs to place them. A 4.x program's
dead letters come at the millisecond its consumer started, where a delivery after them may be a copy the start's
rebalance handed out (nothing_after_dlq allows it): ``delivered-after-dlq`` is placed in the 5.x log only."""
INJECTED = {REMOTING_4X: {"lost": 2, "duplicate-delivery": 3, "early-retry": 1, "late-retry": 2, "dlq-early": 1,
                          "dlq-missing": 2},
            GRPC_5X: {"lost": 2, "duplicate-delivery": 3, "reorder": 2, "early-retry": 1, "late-retry": 2,
                      "dlq-early": 1, "dlq-missing": 1, "delivered-after-dlq": 1}}


@pytest.mark.spec("RETRY-CONC-03", "RETRY-CONC-04", "RETRY-CONC-06", "RETRY-CONC-07", "RETRY-5X-06", "RETRY-5X-07",
                  "FIFO-01")
@pytest.mark.parametrize("profile", [REMOTING_4X, GRPC_5X])
def test_every_fault_injected_into_the_programs_logs_is_found_with_its_count(spark, tmp_path, profile: str) -> None:
    """Completeness stays (issue 36): each fault of ``rmqc simulate --inject`` placed in the reference's logs of
    generated programs (``program_faults``), where its check judges, is found by its check alone, with the
    exact count; the other checks still pass."""
    from program_faults import inject

    from spark_checks.checks import FAULT_CHECK, FAULT_COUNT

    programs = drawn_programs(profile, COMPLETENESS_PROGRAMS)
    events = inject([e for run_id, program in programs.items() for e in history_of(program, run_id)],
                    INJECTED[profile])
    write_parquet(events, tmp_path / "log" / "part-0.parquet")
    result = run_checks(spark, str(tmp_path / "log"), profile=profile)
    expected: dict[str, int] = {}
    for fault, count in INJECTED[profile].items():
        expected[FAULT_CHECK[fault]] = expected.get(FAULT_CHECK[fault], 0) + count
    found = {c["name"]: c["counts"][FAULT_COUNT[c["name"]]] for c in result["checks"] if c["name"] in FAULT_COUNT}
    assert found == {name: expected.get(name, 0) for name in found}, f"found {found}, injected {expected}\n" + \
        _explain(result, programs)
