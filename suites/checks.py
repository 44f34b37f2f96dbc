"""Checkers: a function from a history to a verdict with a counterexample (Jepsen-style).

Every failure message starts with the spec ID it breaks, e.g. ``[RETRY-CONC-07] key m0: ...``.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence, TypeVar

from history.outcomes import Inconclusive
from history.profiles import REMOTING_4X
from history.trace import Life

from .oracle import Expected, Oracle
from .scenario import Scenario
from .tolerance import Tolerance


class SpecViolation(AssertionError):
    """A behaviour broke its spec; ``spec_id`` names it (``spec_ids``: every behaviour the failure points at,
    when one difference is stated by more than one, ``suites.blame``)."""

    def __init__(self, spec_id: str | Sequence[str], message: str) -> None:
        ids = (spec_id,) if isinstance(spec_id, str) else tuple(spec_id)
        super().__init__(f"[{', '.join(ids)}] {message}")
        self.spec_id = ids[0]
        self.spec_ids = ids


def require(condition: bool, spec_id: str | Sequence[str], message: str) -> None:
    if not condition:
        raise SpecViolation(spec_id, message)


def check_life(key: str, observed: Life, expected: Expected, tolerance: Tolerance) -> None:
    """Deliveries, waits and the final state of one message against the spec's expectation."""
    count_id = "RETRY-5X-07" if "RETRY-5X-07" in expected.spec_ids else expected.spec_ids[0]
    timing_id = next((s for s in expected.spec_ids if s in ("SDK-NODE-01", "RETRY-CONC-07", "ORDER-4X-02",
                                                             "RETRY-5X-06", "RETRY-5X-08")), expected.spec_ids[0])
    final_id = next((s for s in expected.spec_ids if s in ("SDK-NODE-01", "RETRY-CONC-04", "RETRY-CONC-02",
                                                            "ORDER-4X-03", "RETRY-5X-07", "RETRY-5X-08")),
                    expected.spec_ids[0])
    require(observed.deliveries == expected.deliveries, count_id,
            f"key {key}: {observed.deliveries} deliveries, the spec says {expected.deliveries}")
    band = []
    for i, (seen, want) in enumerate(zip(observed.waits_ms, expected.waits_ms), start=2):
        off = tolerance.off(seen, want)
        if off > 2 * tolerance.allowed(want):
            late = f", {tolerance.late_min_ms}-{tolerance.late_max_ms} ms late by RETRY-5X-11" \
                if tolerance.late_max_ms else ""
            raise SpecViolation(timing_id, f"key {key}: delivery {i} came {seen} ms after the previous one, "
                                           f"the spec says {want} ms{late} (tolerance {tolerance.allowed(want):.0f} ms)")
        if off > tolerance.allowed(want):
            band.append(i)
    require(observed.final == expected.final, final_id,
            f"key {key}: ended {observed.final}, the spec says {expected.final}")
    if band:
        raise Inconclusive(f"key {key}: deliveries {band} inside the noise band of {timing_id}")


WithWaits = TypeVar("WithWaits", Expected, Life)


def client_timed(scenario: Scenario) -> bool:
    """The scenario's waits are the client's own timers, not the broker's: a 4.x orderly consumer's local retry,
    and a 5.x FIFO push consumer's local retries (RETRY-5X-08: the client waits its retry policy's delay itself
    before consuming the message again; only its final dead-letter forward reaches the server)."""
    return scenario.consumer in ("push4x-orderly", "push5x-fifo")


def scaled_waits(life: "WithWaits", factor: float) -> "WithWaits":
    """An expected or predicted life with its waits times ``factor`` (client timers on a scaled server)."""
    return dataclasses.replace(life, waits_ms=tuple(int(w * factor) for w in life.waits_ms))  # type: ignore[type-var]


def check_scenario(scenario: Scenario, observed: Mapping[str, Life], oracle: Oracle, tolerance: Tolerance,
                   client_timer_scale: float = 1.0) -> None:
    """Every message of the scenario against the oracle, and the scenario's own ``expect`` lines.
    ``client_timer_scale``: spec ms per ms of a client timer where the client runs on the wall clock and the
    server on a time scale (``Target.client_timer_scale``); the waits of client-timed scenarios scale by it."""
    # a pinned scenario's waits are the spec's default tables; a target configured with others is judged by the
    # oracle, which knows its tables, and the pinned counts and final states only
    configured = oracle.configured_delay_levels_ms is not None or oracle.configured_customized_ms is not None
    pinned = set() if configured else {line["key"] for line in scenario.expect}
    for plan in scenario.messages:
        if plan.key in pinned:
            continue  # a pinned scenario's own expectation replaces the oracle for this key
        require(plan.key in observed, "RETRY-CONC-03" if scenario.profile == REMOTING_4X else "RETRY-5X-06",
                f"key {plan.key}: never delivered")
        life = observed[plan.key]
        expected = oracle.expected(scenario.consumer, plan.failures, max_reconsume_times=scenario.max_reconsume_times,
                                   retry_max_times=scenario.retry_max_times, sdk=scenario.sdk)
        if client_timed(scenario):
            expected = scaled_waits(expected, client_timer_scale)
        if scenario.consumer == "push4x-broadcast":
            # every instance's own copy, once; their deliveries are as far apart as the instances' first pulls (one
            # the broker refuses before it holds the instance's subscription is tried again after the client's pause,
            # DefaultMQPushConsumerImpl.pullTimeDelayMillsWhenException), never a retry's first delay (level 3)
            first_retry = oracle.push4x_concurrent(1).waits_ms[0]
            require(all(w < first_retry for w in life.waits_ms), "RETRY-CONC-02",
                    f"key {plan.key}: the instances' deliveries came {list(life.waits_ms)} ms apart: a copy "
                    f"{first_retry} ms or more after another is a retry, which broadcasting never makes")
            expected = Expected(expected.deliveries * scenario.instances, (), expected.final, expected.spec_ids)
        check_life(plan.key, life, expected, tolerance)
    for line in scenario.expect:
        life = observed.get(line["key"])
        sid = scenario.spec[0]
        require(life is not None, sid, f"{scenario.id}: key {line['key']} never delivered")
        assert life is not None
        if "deliveries" in line:
            require(life.deliveries == line["deliveries"], sid,
                    f"{scenario.id}: key {line['key']}: {life.deliveries} deliveries, scenario expects {line['deliveries']}")
        if "waits_ms" in line and not configured:
            # a client-timed scenario's pinned waits are ms of the client's own timers, as the oracle's are above
            factor = client_timer_scale if client_timed(scenario) else 1.0
            want = [int(w * factor) for w in line["waits_ms"]]
            close = len(life.waits_ms) == len(want) and all(
                tolerance.accepts(a, b) for a, b in zip(life.waits_ms, want))
            require(close, sid, f"{scenario.id}: key {line['key']}: waits {list(life.waits_ms)}, scenario expects {want}")
        if "final" in line:
            require(life.final == line["final"], sid,
                    f"{scenario.id}: key {line['key']}: ended {life.final}, scenario expects {line['final']}")


def check_differential(observed: Mapping[str, Life], predicted: Mapping[str, Life], tolerance: Tolerance,
                       spec_ids: Iterable[str]) -> None:
    """The target's lives against the reference's prediction for the same scenario."""
    sid = next(iter(spec_ids))
    require(set(observed) == set(predicted), sid,
            f"messages seen {sorted(observed)} differ from the reference prediction {sorted(predicted)}")
    for key, want in predicted.items():
        seen = observed[key]
        require(seen.deliveries == want.deliveries and seen.final == want.final, sid,
                f"key {key}: observed {seen.deliveries} deliveries ending {seen.final}; reference predicts "
                f"{want.deliveries} ending {want.final}")
        for i, (a, b) in enumerate(zip(seen.waits_ms, want.waits_ms), start=2):
            require(abs(a - b) <= 2 * tolerance.allowed(b) + tolerance.spread_ms, sid,
                    f"key {key}: wait before delivery {i} is {a} ms; reference predicts {b} ms")
