"""The day-plan prototype (benchmarks/day_plan_prototype.py, measured for issue 42 and not in
the engine) stays honest: a plan it returns places every scope task where the write path
accepts it, the item order kept, and one worker on a fixed work gives the same plan twice."""

from __future__ import annotations

import pytest

from benchmarks.day_plan_prototype import day_plan
from smartflow_engine.solver.order import order_kept
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state import Request, relocate
from smartflow_engine.state.synthetic import synthetic_window


@pytest.mark.parametrize(("seed", "variant"), [(500, "plain"), (501, "fragmented")])
def test_a_plan_keeps_every_rule_and_is_the_same_twice(seed: int, variant: str) -> None:
    """Tests two 13-day upstream-shaped windows (bans, weekdays, dates, item order): the plan
    places every scope task, the write path (which refuses any class rule's breach) accepts
    it, the order holds, and a second call gives the same placements."""
    state = synthetic_window(seed, 13, variant=variant, upstream=True)  # type: ignore[arg-type]
    problem = build_problem(state, include_suggested=True)
    plan = day_plan(state, problem, level="normal", time_limit_s=60.0, work_s=1.0)
    assert plan.placements is not None, plan
    assert sum(p.length for p in plan.placements) == problem.required_slots
    assert order_kept(state, plan.placements)
    applied = state.copy_state()
    requests = [Request(p.task_id, p.day, p.slot_start) for p in plan.placements]
    assert relocate(applied, requests, op="apply_proposal", status_after="suggested").ok
    again = day_plan(state, problem, level="normal", time_limit_s=60.0, work_s=1.0)
    assert again.placements == plan.placements
