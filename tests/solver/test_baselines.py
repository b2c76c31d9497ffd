"""Tests of the greedy baselines: valid placements, never above the exact maximum."""

from __future__ import annotations

from hypothesis import given, settings
from solver_windows import apply_placements, oracle, tiny_windows

from smartflow_engine import ScheduleState
from smartflow_engine.solver.baselines import balanced_greedy, best_pack, first_fit
from smartflow_engine.solver.problem import build_problem


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
