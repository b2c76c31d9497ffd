"""The exact chain of one class by its programme needs no CP-SAT, so ``keep_order`` runs it
whatever work and wall time it is given (a proposal's other starts are ordered with neither):
an ordered start then keeps every period where a chain can (issue 42)."""

from __future__ import annotations

from smartflow_engine.solver.counting import max_placeable
from smartflow_engine.solver.order import keep_order
from smartflow_engine.solver.problem import build_problem, scope_tasks
from smartflow_engine.state.synthetic import synthetic_window


def test_keep_order_without_work_keeps_every_period_a_chain_can() -> None:
    """Tests that on the 30-day fragmented upstream window (seed 501, suggested tasks
    re-planned) the counting witness, ordered with no work and no wall time, keeps all its
    periods (the greedy chains alone drop some)."""
    state = synthetic_window(501, 30, variant="fragmented", upstream=True)
    problem = build_problem(state, include_suggested=True, subjects=False)
    counted = max_placeable(problem, time_limit_s=5.0, num_workers=1)
    assert counted.proven and counted.best == problem.required_slots
    scope = [t.state_id for t in scope_tasks(state, include_suggested=True)]
    kept, dropped = keep_order(state, counted.witness, scope, 0.0, work_s=0.0)
    assert dropped == []
    assert sum(p.length for p in kept) == problem.required_slots
