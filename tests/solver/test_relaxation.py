"""Tests of the counting model's linear relaxation: its certified bound and integral points."""

from __future__ import annotations

import numpy as np
from hypothesis import given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.solver.counting import CountModelBuilder, decode, round_down
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.solver.relaxation import (
    MatrixSink,
    certified_bound,
    is_solution,
    solve_relaxation,
)
from tests.helpers.solver_windows import apply_placements, oracle, tiny_windows


@settings(max_examples=120, deadline=None)
@given(state=tiny_windows(max_pending=6), include_suggested=st.booleans())
def test_bound_and_points_against_brute_force(
    state: ScheduleState, include_suggested: bool
) -> None:
    """Tests on tiny windows (class windows, banned periods, host blocks) that the certified
    bound is never below the brute-force maximum, and that the integral optimum (when there is
    one) and the rounded-down optimum are solutions whose placements apply cleanly."""
    note(state.to_json(indent=None))
    truth = oracle(state, include_suggested)
    problem = build_problem(state, include_suggested=include_suggested)
    cm = CountModelBuilder(problem).build(MatrixSink())
    relaxed = solve_relaxation(cm.sink, time_limit_s=5.0)
    assert relaxed.bound is not None
    assert relaxed.bound >= truth.best
    assert relaxed.solution is not None
    replanned = truth.replanned
    if relaxed.values is not None:
        assert is_solution(cm.sink, relaxed.values)
        placed = decode(problem, cm, relaxed.values)
        assert sum(p.length for p in placed) == cm.placed_slots(relaxed.values) <= truth.best
        apply_placements(state, placed, replanned)
    rounded = round_down(cm, relaxed.solution)
    assert is_solution(cm.sink, rounded)
    placed = decode(problem, cm, rounded)
    assert sum(p.length for p in placed) == cm.placed_slots(rounded) <= truth.best
    apply_placements(state, placed, replanned)


@settings(max_examples=80, deadline=None)
@given(state=tiny_windows(max_pending=6), seed=st.integers(0, 2**16))
def test_any_multipliers_give_a_valid_bound(state: ScheduleState, seed: int) -> None:
    """Tests that the weak-duality bound holds for arbitrary (even wrong-signed) multipliers:
    the certificate, not the LP solver, is what makes it a proof."""
    note(state.to_json(indent=None))
    truth = oracle(state)
    problem = build_problem(state)
    sink = CountModelBuilder(problem).build(MatrixSink()).sink
    rng = np.random.default_rng(seed)
    for scale in (0.0, 0.3, 4.0):
        y = rng.normal(0.0, scale, len(sink.row_lb))
        bound = certified_bound(sink, y)
        assert bound is not None and bound >= truth.best


def test_bound_is_exact_on_tight_class_windows() -> None:
    """Tests that on 120-day tight windows with task classes the certified bound equals the
    maximum the plain CP-SAT model proves (what lets the relaxation decide them)."""
    from smartflow_engine.solver.counting import max_placeable
    from smartflow_engine.state.synthetic import synthetic_window

    for seed in (1, 6):
        problem = build_problem(
            synthetic_window(seed, 120, variant="tight", pending=300, with_task_classes=True)
        )
        sink = CountModelBuilder(problem).build(MatrixSink()).sink
        relaxed = solve_relaxation(sink, time_limit_s=5.0)
        plain = max_placeable(problem, time_limit_s=30.0, num_workers=1, relaxation=False)
        assert plain.proven
        assert relaxed.bound == plain.best
