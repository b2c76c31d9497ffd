"""Tests of the greedy baselines: valid placements, never above the exact maximum."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.solver.baselines import _start_table, balanced_greedy, best_pack, first_fit
from smartflow_engine.solver.problem import allowed_starts, build_problem
from tests.helpers.solver_windows import apply_placements, oracle, tiny_windows


@settings(max_examples=60, deadline=None)
@given(state=tiny_windows())
def test_greedies_are_valid_and_bounded(state: ScheduleState) -> None:
    """Tests on tiny windows that every greedy's placement applies cleanly through relocate and
    places no more periods than the brute-force maximum."""
    best = oracle(state).best
    problem = build_problem(state, by_subject=True)
    for placements in (first_fit(state), best_pack(problem), balanced_greedy(problem)):
        assert sum(p.length for p in placements) <= best
        apply_placements(state, placements)


def test_first_fit_takes_the_first_free_place(fragmented_window: ScheduleState) -> None:
    """Tests that first fit puts the 1-period task at period 1 and cannot fit the 3-period one."""
    (p,) = first_fit(fragmented_window)
    assert (p.task_id, p.day, p.slot_start) == (3, 1, 1)


@settings(max_examples=300, deadline=None)
@given(
    banned=st.lists(st.integers(-1, 14), max_size=6),
    duration=st.integers(1, 13),
    start=st.integers(1, 12),
    end=st.integers(1, 12),
)
def test_start_table_gives_the_first_allowed_start(banned, duration, start, end) -> None:
    """Tests that the best-fit greedy's start table finds, for any segment, the first start
    whose periods avoid the banned ones (as ``allowed_starts`` lists them), and none when no
    start is allowed."""
    table = _start_table(tuple(sorted(set(banned))), duration, 12)
    starts = allowed_starts(banned, duration, start, end, 12)
    s = table[start]
    if starts:
        assert s == starts[0]
    else:
        assert s + duration - 1 > end
