"""Examples a target cannot run: on a wall-clock target a drawn scenario may need more time than the budget,
or an option the SDK does not offer. Such an example is rejected (Hypothesis draws another) instead of
ending the whole property as not applicable; when no example was within reach, the test is not applicable
with the reasons (``suites.plugin.verdicts``)."""
from __future__ import annotations

from history.outcomes import NotApplicable

_reasons: list[str] = []


def out_of_reach(exc: NotApplicable) -> None:
    """Reject the current Hypothesis example for ``exc``; outside a property, ``exc`` stands."""
    from hypothesis import reject
    from hypothesis.control import currently_in_test_context

    if not currently_in_test_context():
        raise exc
    _reasons.append(str(exc))
    reject()


def start_test() -> None:
    _reasons.clear()


def reasons() -> str:
    """The distinct reasons examples of the current test were rejected for."""
    return "; ".join(dict.fromkeys(_reasons)) or "no example could be generated"
