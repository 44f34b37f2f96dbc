"""The model's virtual clock by its own properties (issue 37): every timed behaviour of the reference (retry
ladders, delays, revives, transaction checks) is an action on this clock, so its order and its edges are checked
directly, not only through the stories that use it.

Actions run in (due time, scheduling order); an action due in the past runs at once, at the present; ``advance``
runs everything due up to and including its end and leaves the clock there; ``run_until`` stops at the last action
run; ``step_until`` runs one due action or moves the clock to the deadline, never back. These are the reference's
own; the mutation run imports them from its scratch copy (``reference_rule``)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.model.clock import VirtualClock

pytestmark = pytest.mark.reference_rule

DELAYS = st.lists(st.integers(-5, 50), min_size=1, max_size=12)


def _scheduled(start: int, delays: list[int]) -> tuple[VirtualClock, list[tuple[int, int]]]:
    """A clock at ``start`` with one action per delay (``call_later``); each records (its index, the time it ran)."""
    clock = VirtualClock(start)
    ran: list[tuple[int, int]] = []
    for i, delay in enumerate(delays):
        clock.call_later(delay, lambda i=i: ran.append((i, clock.now_ms)))
    return clock, ran


def _expected_order(start: int, delays: list[int]) -> list[tuple[int, int]]:
    due = [(start + max(0, d), i) for i, d in enumerate(delays)]
    return [(i, at) for at, i in sorted(due)]


@given(start=st.integers(0, 1000), delays=DELAYS)
def test_actions_run_in_due_order_then_scheduling_order_and_never_in_the_past(start: int, delays: list[int]) -> None:
    clock, ran = _scheduled(start, delays)
    assert clock.next_due_ms() == start + max(0, min(delays))
    clock.advance(60)
    assert ran == _expected_order(start, delays)
    assert clock.now_ms == start + 60 and clock.next_due_ms() is None


@given(start=st.integers(0, 1000), delays=DELAYS, at=st.integers(-10, 60))
def test_advance_runs_exactly_what_is_due_by_its_end_inclusive(start: int, delays: list[int], at: int) -> None:
    clock, ran = _scheduled(start, delays)
    clock.advance(max(0, at))
    end = start + max(0, at)
    assert ran == [(i, t) for i, t in _expected_order(start, delays) if t <= end]
    assert clock.now_ms == end
    later = [start + max(0, d) for d in delays if start + max(0, d) > end]
    assert clock.next_due_ms() == (min(later) if later else None)


@given(start=st.integers(0, 1000), delays=DELAYS, deadline=st.integers(-10, 60))
def test_run_until_stops_at_the_last_action_it_ran(start: int, delays: list[int], deadline: int) -> None:
    clock, ran = _scheduled(start, delays)
    clock.run_until(start + deadline)
    want = [(i, t) for i, t in _expected_order(start, delays) if t <= start + deadline]
    assert ran == want
    assert clock.now_ms == (want[-1][1] if want else start)


@given(start=st.integers(0, 1000), delays=DELAYS, deadline=st.integers(-10, 60))
def test_step_until_runs_one_due_action_or_moves_to_the_deadline_never_back(start: int, delays: list[int],
                                                                           deadline: int) -> None:
    clock, ran = _scheduled(start, delays)
    first = _expected_order(start, delays)[0]
    stepped = clock.step_until(start + deadline)
    if first[1] <= start + deadline:
        assert stepped is True and ran == [first] and clock.now_ms == first[1]
    else:
        assert stepped is False and ran == [] and clock.now_ms == max(start, start + deadline)


@given(start=st.integers(0, 1000), delays=DELAYS)
def test_step_runs_the_earliest_action_and_says_whether_there_was_one(start: int, delays: list[int]) -> None:
    clock, ran = _scheduled(start, delays)
    for n, (i, at) in enumerate(_expected_order(start, delays), start=1):
        assert clock.step() is True
        assert ran[-1] == (i, at) and len(ran) == n and clock.now_ms == at
    assert clock.step() is False and clock.next_due_ms() is None


@given(start=st.integers(0, 1000), past=st.integers(1, 500))
def test_an_action_scheduled_in_the_past_runs_at_the_present(start: int, past: int) -> None:
    clock = VirtualClock(start)
    ran: list[int] = []
    clock.call_at(start - past, lambda: ran.append(clock.now_ms))
    assert clock.next_due_ms() == start
    clock.advance(0)
    assert ran == [start] and clock.now_ms == start


def test_an_action_can_schedule_another_within_the_same_advance() -> None:
    clock = VirtualClock(0)
    ran: list[int] = []
    clock.call_later(10, lambda: clock.call_later(5, lambda: ran.append(clock.now_ms)))
    clock.advance(15)
    assert ran == [15]
    clock.call_later(10, lambda: clock.call_later(10, lambda: ran.append(clock.now_ms)))
    clock.advance(15)
    assert ran == [15] and clock.next_due_ms() == 35
