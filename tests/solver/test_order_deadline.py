"""The item order's chains stop at a caller's deadline (the feasibility check, a proposal's
other starts and its guard): their set-up grows with the window (about 0.1 s a class at 120
days) and ran past the call's limit, by up to 1.2 s on 90- and 120-day upstream first_full
proposals; past the deadline no further class is chained and the caller answers unproven,
saying the clock decided."""

from __future__ import annotations

import sys
import time

import pytest

from smartflow_engine.solver import feasibility
from smartflow_engine.solver._cpsat import OutOfTime
from smartflow_engine.solver.counting import max_placeable
from smartflow_engine.solver.order import keep_order
from smartflow_engine.solver.problem import build_problem, scope_tasks
from smartflow_engine.state.synthetic import synthetic_window


@pytest.fixture(scope="module")
def chained():
    """30-day fragmented upstream window (seed 501, suggested tasks re-planned): its counting
    witness needs classes chained (no relabelling orders them)."""
    state = synthetic_window(501, 30, variant="fragmented", upstream=True)
    problem = build_problem(state, include_suggested=True, subjects=False)
    counted = max_placeable(problem, time_limit_s=5.0, num_workers=1)
    scope = [t.state_id for t in scope_tasks(state, include_suggested=True)]
    return state, counted.witness, scope


def test_a_passed_deadline_stops_the_chains_and_a_later_one_changes_nothing(chained) -> None:
    """Tests that keep_order raises OutOfTime when its deadline has passed before a class is
    chained, and that a deadline not reached gives exactly the answer without one."""
    state, witness, scope = chained
    plain = keep_order(state, witness, scope, 0.0, work_s=0.0)
    assert plain[0] != witness  # (the witness is re-placed: some class is chained)
    later = keep_order(state, witness, scope, 0.0, work_s=0.0, deadline=time.perf_counter() + 60)
    assert later == plain
    with pytest.raises(OutOfTime):
        keep_order(state, witness, scope, 0.0, work_s=0.0, deadline=time.perf_counter() - 1)


def test_the_check_answers_unproven_when_the_chains_run_out_of_time(chained, monkeypatch) -> None:
    """Tests that check_feasibility, whose chains pass their deadline, answers "unknown"
    (not proven, no gap) instead of raising or claiming a maximum, and that with time its
    answer is the proven one."""
    state, _, _ = chained
    proven = feasibility.check_feasibility(state, time_limit_s=10.0, include_suggested=True)
    assert proven.proven and proven.is_feasible is not None
    real = feasibility.keep_order

    def late(*args, **kwargs):
        return real(*args, **{**kwargs, "deadline": time.perf_counter() - 1})

    monkeypatch.setattr(feasibility, "keep_order", late)
    report = feasibility.check_feasibility(state, time_limit_s=10.0, include_suggested=True)
    assert report.is_feasible is None and not report.proven
    assert report.capacity_gap is None and report.feasible_slots is None


def test_a_proposal_orders_its_other_starts_and_guard_by_the_search_stop(monkeypatch) -> None:
    """Tests that a first_full proposal's item-order step bounds every keep_order after its
    start's (the other starts and the greedy guard) by the search's stop: each gets a
    deadline, so past the stop no class of theirs is chained (they ran 0.3 s each past the
    limit at 90 days)."""
    from smartflow_engine.solver import order
    from smartflow_engine.solver.placement import propose_placement

    calls: list[tuple[str, float | None]] = []
    real = order.keep_order

    def recorded(*args, **kwargs):
        calls.append((sys._getframe(1).f_code.co_name, kwargs.get("deadline")))
        return real(*args, **kwargs)

    monkeypatch.setattr(order, "keep_order", recorded)
    state = synthetic_window(501, 30, variant="fragmented", upstream=True)
    propose_placement(state, time_limit_s=30.0, work_limit_s=0.5, seed=0, include_suggested=True)
    later = [d for caller, d in calls if caller in ("_other_starts", "_ordered_guard")]
    assert later and all(d is not None for d in later)
