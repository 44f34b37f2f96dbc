"""Generated workloads of every consumer kind, run on the target and on the reference: the two must tell
the same story of every message (``history.transcripts``): the topic and properties each delivery shows the
listener, the id it carries across redeliveries, where every retried and dead-lettered copy is stored and
what it carries, the listener outcomes, and when each step happens within the target's tolerance.

The other suites check what the spec states in a formula; this one holds every detail of the reference's
prediction, so it names the consumer kind's behaviour and shows the first step where the stories part.

It runs on targets with a virtual clock (the reference, drivers of models): a generated story takes hours of
spec time to play out (a 4.x ladder to its dead letter is almost 5 h), more than a wall-clock target's budget
for a property of many examples."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.outcomes import NotApplicable
from history.profiles import GRPC_5X, REMOTING_4X
from suites import strategies
from suites.harness import run_compared, run_programs_compared
from suites.plugin.state import run_state
from suites.programs import Program
from suites.scenario import PROFILE_OF, Scenario

BOTH_PROFILES = [pytest.param(p, marks=pytest.mark.profile(p)) for p in (REMOTING_4X, GRPC_5X)]


@pytest.fixture(autouse=True)
def _virtual_clock_only(request: pytest.FixtureRequest) -> None:
    if not run_state(request.config).probe.virtual_clock:
        raise NotApplicable("whole generated stories take hours of spec time each: run against a target on a "
                            "virtual clock")


@pytest.mark.spec("RETRY-CONC-01", "RETRY-CONC-02", "RETRY-CONC-04", "RETRY-CONC-05", "RETRY-CONC-08",
                  "ORDER-4X-01", "ORDER-4X-03", "RETRY-5X-01", "RETRY-5X-07", "RETRY-5X-08", "DELAY-01",
                  "SDK-CPP-01", "SDK-CPP-03")
@pytest.mark.parametrize("consumer,sdk", [
    pytest.param(consumer, sdk, marks=pytest.mark.profile(PROFILE_OF[consumer]))
    for consumer, clients in strategies.WORKLOAD_CLIENTS.items() for sdk in clients])
@given(data=st.data())
def test_generated_workloads_tell_the_reference_story(make_target, reference_for, consumer: str, sdk: str,
                                                      data: st.DataObject) -> None:
    scenario: Scenario = data.draw(strategies.workloads(consumer, sdk), label="scenario")
    run_compared(make_target, reference_for, scenario)


@pytest.mark.spec("RETRY-CONC-01", "RETRY-CONC-02", "RETRY-CONC-04", "RETRY-CONC-08", "ORDER-4X-01", "ORDER-4X-03",
                  "RETRY-5X-01", "RETRY-5X-06", "RETRY-5X-07", "RETRY-5X-08", "RETRY-5X-09", "DELAY-01", "DELAY-08")
@pytest.mark.parametrize("profile", BOTH_PROFILES)
@given(data=st.data())
def test_generated_programs_tell_the_reference_story(make_target, reference_for, profile: str,
                                                     data: st.DataObject) -> None:
    program: Program = data.draw(strategies.programs(profile), label="program")
    run_programs_compared(make_target, reference_for, program)


@pytest.mark.spec("RETRY-5X-08", "RETRY-5X-09", "RETRY-5X-11", "FIFO-05")
@pytest.mark.profile(GRPC_5X)
@given(program=strategies.handovers())
def test_a_fifo_consumer_leaving_mid_retry_hands_over_as_the_reference_does(make_target, reference_for,
                                                                             program: Program) -> None:
    run_programs_compared(make_target, reference_for, program)


@pytest.mark.spec("DELAY-01", "DELAY-06", "DELAY-08", "RETRY-CONC-01", "RETRY-5X-06")
@pytest.mark.parametrize("profile", BOTH_PROFILES)
@given(data=st.data())
def test_timed_messages_tell_the_reference_story(make_target, reference_for, profile: str,
                                                 data: st.DataObject) -> None:
    program: Program = data.draw(strategies.timed_sends(profile), label="program")
    run_programs_compared(make_target, reference_for, program)
