"""Run one scenario on the target and on the reference, and check both the oracle and the prediction."""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

from adapters.base import Target
from history.outcomes import NotApplicable
from history.profiles import GRPC_5X, REMOTING_4X
from history.trace import Life, lives
from history.transcripts import (
    Divergence,
    Placement,
    Step,
    first_divergence,
    placements,
    transcripts,
)
from history.values import CPP_4X_SDK as CPP_SDK
from history.values import NODE_5X_SDK
from reference_impl.rules import codes, go5x, retry5x

from . import blame
from .checks import (
    SpecViolation,
    check_differential,
    check_scenario,
    client_timed,
    require,
    scaled_waits,
)
from .oracle import Oracle, default_oracle, oracle_for, release_of
from .programs import Program, Run, program_duration_ms, run_program
from .reach import out_of_reach
from .scenario import Scenario, run_scenario
from .tolerance import Tolerance, tolerance_for


def drives_nodejs_only(target: Target) -> bool:
    """The target drives the Node.js client and nothing that can act as another one (SDK-NODE-*)."""
    return "sdk.nodejs" in target.capabilities and "sdk.java" not in target.capabilities


def drives_go_only(target: Target) -> bool:
    """The target drives the Go 5.x client and nothing that can act as another one (SDK-GO-*)."""
    return "sdk.go" in target.capabilities and "sdk.java" not in target.capabilities


def expired_ack(target: Target) -> tuple[int, str]:
    """What a simple consumer's ack with an expired receipt handle answers through the target's client, and the
    behaviour that says so: INVALID_RECEIPT_HANDLE (RETRY-5X-09), or OK through the Go client, whose ack does not
    read the server's status (SDK-GO-02)."""
    if drives_go_only(target):
        return go5x.simple_ack_code(codes.INVALID_RECEIPT_HANDLE), "SDK-GO-02"
    return codes.INVALID_RECEIPT_HANDLE, "RETRY-5X-09"


def drives_java_client_only(target: Target) -> bool:
    """The target drives the official Java 5.x client and nothing that can act as another one (SDK-JAVA5-*): the
    reference, which can act as every client, keeps the statements' own expectations."""
    return "sdk.java" in target.capabilities and not {"sdk.python", "sdk.nodejs", "sdk.go"} & set(target.capabilities)


def fit_to_target(target: Target, scenario: Scenario) -> Scenario:
    """A target that drives only the Python 5.x SDK runs a scenario drawn for the Java one as Python, one that
    drives the Node.js SDK runs every 5.x scenario as Node.js; the reference's prediction then runs the same
    scenario, so the comparison stays exact."""
    if scenario.profile == GRPC_5X and drives_nodejs_only(target):
        # the Node.js client's habits (SDK-NODE-*): a scenario's pinned expectations are another client's, so
        # the oracle and the reference's prediction, both aware of these habits, judge every key instead
        return dataclasses.replace(scenario, sdk=NODE_5X_SDK, expect=())
    if scenario.profile == GRPC_5X and scenario.sdk == "java" and "sdk.java" not in target.capabilities \
            and "sdk.python" in target.capabilities:
        return dataclasses.replace(scenario, sdk="python")
    if scenario.profile == REMOTING_4X and "sdk.cpp4x" in target.capabilities:
        return dataclasses.replace(scenario, sdk=CPP_SDK)  # the C++ client's habits (SDK-CPP-01..03)
    return scenario


def prediction_target(reference_for: Callable[..., Target], profile: str, target: Target) -> Target:
    """The reference as the prediction of ``target``: with the delay table, retry ladder and revive lag its server
    was configured with, where they differ from the spec's (``Target.broker_timing``)."""
    timing = target.broker_timing
    return reference_for(profile) if timing.is_default else reference_for(profile, timing=timing)


def batch_unpredictable(scenario: Scenario) -> NotApplicable | None:
    """SDK-CPP-09: the C++ client answers for a whole pull batch, so where two messages may share a pull and one
    fails, which messages the listener sees depends on how the pulls fell; the model hands out one message per
    consume and cannot predict that. Such a scenario is out of reach for the C++ client."""
    if scenario.sdk == CPP_SDK and scenario.consumer == "push4x-concurrent" and len(scenario.messages) > 1 \
            and any(p.failures for p in scenario.messages):
        return NotApplicable("SDK-CPP-09: the C++ client answers for a whole pull batch; with two messages and a "
                             "failure, which ones its listener sees depends on how the pulls fell")
    return None


def pop_start_unpredictable(target: Target, scenario: Scenario) -> NotApplicable | None:
    """RETRY-5X-10 before 5.1.4: a group's first pop of a queue starts at its last message, so where several
    messages may be stored in a queue before the group first pops it (sent before the consumers start, or
    revived together into a new pop retry topic) the earlier ones are never delivered, and which depends on
    timing. ``test_a_new_groups_first_receive_starts_where_its_release_starts_it`` shows that behaviour once;
    such a scenario is out of reach elsewhere."""
    release = release_of(target)
    if scenario.profile != GRPC_5X or not retry5x.pop_init_offset(0, 2, True, release=release):
        return None
    if scenario.consumers_start == "after_send" and len(scenario.messages) > 1:
        return NotApplicable(f"RETRY-5X-10 at {release}: a new group starts at the last of the messages sent "
                             "before its consumers")
    if scenario.consumer == "push5x" and sum(1 for p in scenario.messages if p.failures) > 1:
        return NotApplicable(f"RETRY-5X-10 at {release}: two revived copies may reach the new pop retry topic before "
                             "the group first pops it, which then starts at the last")
    return None


def expected_duration_ms(scenario: Scenario, client_timer_scale: float = 1.0, oracle: Oracle | None = None,
                         late_ms: int = 0) -> int:
    """Spec time the longest ladder of the scenario takes, by the oracle, plus its longest wait once more
    (the wait after the last failure, before the dead letter); ``late_ms``: how late each redelivery may
    legitimately come (RETRY-5X-11's window on a 5.x target)."""
    oracle = oracle or default_oracle()
    factor = client_timer_scale if client_timed(scenario) else 1.0
    longest = 0
    for p in scenario.messages:
        waits = oracle.expected(scenario.consumer, p.failures, max_reconsume_times=scenario.max_reconsume_times,
                                retry_max_times=scenario.retry_max_times, sdk=scenario.sdk).waits_ms
        longest = max(longest, int((sum(waits) + max(waits, default=0)) * factor) + late_ms * (len(waits) + 1))
    return longest


def run_checked(make_target: Callable[..., Target], reference_for: Callable[..., Target],
                scenario: Scenario) -> dict[str, Life]:
    target = make_target(scenario.profile)
    scenario = fit_to_target(target, scenario)
    factor = target.client_timer_scale
    oracle = oracle_for(target)
    tolerance = tolerance_for(target, redelivery=scenario.consumer == "push5x")  # RETRY-5X-11
    try:
        unpredictable = batch_unpredictable(scenario) or pop_start_unpredictable(target, scenario)
        if unpredictable:
            raise unpredictable
        target.require_duration(expected_duration_ms(scenario, factor, oracle, tolerance.late_max_ms))
        observed = lives(run_scenario(target, scenario), scenario.group)
    except NotApplicable as exc:  # this example only: another may be within the target's reach
        out_of_reach(exc)
    check_scenario(scenario, observed, oracle, tolerance, factor)
    if target.name != "reference":
        predicted = lives(run_scenario(prediction_target(reference_for, scenario.profile, target), scenario),
                          scenario.group)
        if client_timed(scenario) and factor != 1.0:
            predicted = {k: scaled_waits(v, factor) for k, v in predicted.items()}
        seen = observed
        if scenario.consumer == "push4x-broadcast":  # the instances' copies are not a sequence in time (check_scenario)
            seen, predicted = ({k: dataclasses.replace(v, waits_ms=()) for k, v in lives_.items()}
                               for lives_ in (observed, predicted))
        check_differential(seen, predicted, tolerance, scenario.spec or ("RETRY-CONC-04",))
    return observed


CONSUMER_FAMILY = {"push4x-concurrent": blame.CONCURRENT_4X, "push4x-orderly": blame.ORDERLY_4X,
                   "push4x-broadcast": blame.BROADCAST_4X, "push5x": blame.PUSH_5X, "push5x-fifo": blame.FIFO_5X}
"""A scenario's consumer kind -> the family its stories are blamed by (``suites.blame``)."""
KAFKA_STORY_ID = "KAFKA-01"
"""The Kafka pattern's story is the pattern's own (KAFKA-01): the tables speak of the brokers' consumers."""


def _slack_ms(want: list[Step], tolerance: Tolerance) -> dict[int, float]:
    """How far each step's time may lie from the reference's: the wall clock's noise on the time itself plus
    the legitimate lateness window once per redelivery before it (exact on a virtual clock)."""
    slack, redeliveries = {}, 0
    for i, step in enumerate(want):
        if step.kind == "DELIVER" and i:
            redeliveries += 1
        slack[i] = 2 * tolerance.allowed(step.at_ms) + tolerance.spread_ms * redeliveries
    return slack


def _require_same_stories(observed: Mapping[str, list[Step]], predicted: Mapping[str, list[Step]],
                          tolerance: Tolerance, profile: str, hint: str | None) -> None:
    """Every key's transcript is the reference's; the first that parts fails the behaviours its first differing
    step points at (``suites.blame``), with both stories around it."""
    missing, extra = sorted(set(predicted) - set(observed)), sorted(set(observed) - set(predicted))
    for key in missing + extra:  # a whole story one side lacks: its first step is the difference
        seen, want = observed.get(key, []), predicted.get(key, [])
        found = blame.story_blame(profile, Divergence(key, 0, seen[0] if seen else None, want[0] if want else None),
                                  seen, want, hint)
        raise SpecViolation(found.spec_ids, found.message)
    for key, want in sorted(predicted.items()):
        divergence = first_divergence(key, observed[key], want, _slack_ms(want, tolerance))
        if divergence is not None:
            found = blame.story_blame(profile, divergence, observed[key], want, hint)
            raise SpecViolation(found.spec_ids, found.message)


def _same_placement(observed: Mapping[str, Placement], predicted: Mapping[str, Placement]) -> None:
    """Reject the example (``out_of_reach``) when the target placed a key elsewhere than the reference did: the
    queue a send went to and the consumer that took it are the client's free choices, and the stories that
    follow depend on them."""
    for key, want in sorted(predicted.items()):
        seen = observed.get(key, Placement())
        if seen.apart_from(want):
            out_of_reach(NotApplicable(f"the target placed {key} at {seen}, the reference at {want}: "
                                       "placement is the client's choice, and the stories depend on it"))


def run_compared(make_target: Callable[..., Target], reference_for: Callable[..., Target],
                 scenario: Scenario) -> dict[str, list[Step]]:
    """Run ``scenario`` on the target and on the reference and require the same transcript for every key
    (``history.transcripts``): what each delivery showed the listener, where each copy was stored, what a
    dead-lettered copy carries, in the same order and, within the target's tolerance, at the same times."""
    target = make_target(scenario.profile)
    scenario = fit_to_target(target, scenario)
    try:
        unpredictable = batch_unpredictable(scenario) or pop_start_unpredictable(target, scenario)
        if unpredictable:
            raise unpredictable
        target.require_duration(expected_duration_ms(scenario, target.client_timer_scale, oracle_for(target),
                                                     tolerance_for(target, redelivery=scenario.consumer == "push5x")
                                                     .late_max_ms))
        seen = run_scenario(target, scenario)
    except NotApplicable as exc:
        out_of_reach(exc)
    want = run_scenario(prediction_target(reference_for, scenario.profile, target), scenario)
    _same_placement(placements(seen), placements(want))
    observed, predicted = transcripts(seen), transcripts(want)
    tolerance = tolerance_for(target, redelivery=scenario.consumer == "push5x")
    if scenario.consumer not in CONSUMER_FAMILY:  # the Kafka pattern's story
        require(set(observed) == set(predicted), KAFKA_STORY_ID,
                f"keys with a story {sorted(observed)} differ from the reference's {sorted(predicted)}")
        for key, want in sorted(predicted.items()):
            divergence = first_divergence(key, observed[key], want, _slack_ms(want, tolerance))
            require(divergence is None, KAFKA_STORY_ID, divergence.describe() if divergence else "")
        return observed
    _require_same_stories(observed, predicted, tolerance, scenario.profile, CONSUMER_FAMILY[scenario.consumer])
    return observed


def program_family(program: Program) -> str | None:
    """The family a program's stories are blamed by when every consumer it starts is of one kind (all orderly,
    all broadcasting on 4.x; a FIFO topic on 5.x, a handover where push consumers leave it); ``None`` when the
    stories themselves must tell."""
    if program.profile == GRPC_5X:
        if program.topic_type != "FIFO":
            return None
        leaves = any(step[0] in ("shutdown", "crash") for step in program.steps)
        return blame.FIFO_HANDOVER_5X if leaves else blame.FIFO_5X
    kinds = {blame.ORDERLY_4X if step[1] else blame.BROADCAST_4X if step[2] else blame.CONCURRENT_4X
             for step in program.steps if step[0] == "push4x"}
    return kinds.pop() if len(kinds) == 1 else None


def run_programs_compared(make_target: Callable[..., Target], reference_for: Callable[..., Target],
                          program: Program) -> Run:
    """Run ``program`` on the target and on the reference: each step's result, every key's transcript and
    every stored copy of the topics the messages went through must be the reference's."""
    target = make_target(program.profile)
    try:
        target.require_duration(program_duration_ms(program))
        observed = run_program(target, program)
    except NotApplicable as exc:
        out_of_reach(exc)
    predicted = run_program(prediction_target(reference_for, program.profile, target), program)
    _same_placement(observed.placed, predicted.placed)
    hint = program_family(program)
    _require_same_stories(observed.stories, predicted.stories,
                          tolerance_for(target, redelivery=program.profile == GRPC_5X), program.profile, hint)
    family = hint or (blame.PUSH_5X if program.profile == GRPC_5X else blame.CONCURRENT_4X)
    for i, (seen, want) in enumerate(zip(observed.results, predicted.results), start=1):
        if seen != want:
            found = blame.result_blame(family, program.steps[i - 1], seen, want, i)
            raise SpecViolation(found.spec_ids, found.message)
    if observed.stored:  # the target can read what it stores (observe.stored)
        for topic, copies in predicted.stored.items():
            if observed.stored.get(topic) != copies:
                found = blame.stored_blame(family, topic, observed.stored.get(topic), copies)
                raise SpecViolation(found.spec_ids, found.message)
    if observed.offsets:  # the target tells a group's committed offsets (observe.offset)
        require(observed.offsets == predicted.offsets, "OFFSET-04",
                f"committed offsets {observed.offsets}; the reference commits {predicted.offsets}")
    return observed
