"""The outcomes a conformance check ends in besides pass and fail, as typed exceptions, and the
verdict names. Targets raise ``NotApplicable``; checks raise ``Inconclusive``; the pytest plugin turns
either into its verdict, never into a pass or a failure.
"""
from __future__ import annotations

PASS = "pass"
FAIL = "fail"
INCONCLUSIVE = "inconclusive"
NOT_APPLICABLE = "not applicable"
VERDICTS: tuple[str, ...] = (FAIL, INCONCLUSIVE, PASS, NOT_APPLICABLE)
"""Every verdict, in the order a behaviour takes the first one any of its tests has."""


class Outcome(Exception):
    """A test ended neither passed nor failed; ``verdict`` says how, the message says why."""

    verdict: str = ""


class NotApplicable(Outcome):
    """The target lacks a capability or a profile; the message is the recorded reason."""

    verdict = NOT_APPLICABLE


class Inconclusive(Outcome):
    """A timing property landed inside the noise band: neither held nor broken."""

    verdict = INCONCLUSIVE


def outcome_of(exc: BaseException) -> Outcome | None:
    """The outcome an exception stands for: itself, or for an exception group (Hypothesis raises one
    when several examples end differently) the group's outcome when every leaf is an outcome: not
    applicable when all are, else inconclusive. ``None`` when any leaf is a real failure."""
    if isinstance(exc, Outcome):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        leaves = _leaves(exc)
        if leaves and all(isinstance(leaf, Outcome) for leaf in leaves):
            kinds = {type(leaf) for leaf in leaves}
            reasons = "; ".join(dict.fromkeys(str(leaf) for leaf in leaves))
            return NotApplicable(reasons) if kinds == {NotApplicable} else Inconclusive(reasons)
    return None


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out
