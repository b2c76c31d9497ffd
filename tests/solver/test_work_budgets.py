"""Every reply a function of the state and the arguments (issue 40 item 6): work budgets, never
the time left on the clock, decide what a search does; the wall clock only cuts a call that
would run past its limit, and the answer says so (``wall_limited``).

Each test runs the same call twice with both cores busy (a busy-loop process per core, started
and stopped by the test) and compares the answers: placements, counts and flags.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Iterator
from typing import Any

import pytest

from smartflow_engine.solver import proposal_key, propose_placement, repair_placement
from smartflow_engine.state import ScheduleState
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import make_state


def _spin() -> None:  # pragma: no cover (runs in a child process)
    while True:
        pass


@pytest.fixture
def busy_cores() -> Iterator[None]:
    """A busy-loop process on each core for the test's duration."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 2)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(timeout=10)


def _answer(state: ScheduleState, proposal: Any) -> tuple[Any, ...]:
    return (
        sorted((p.task_id, p.day, p.slot_start, p.slot_end) for p in proposal.placements),
        proposal_key(state, proposal),
        proposal.critical,
        proposal.warning,
        proposal.start_health,
        proposal.floor,
        proposal.wall_limited,
    )


def test_a_proposal_is_the_same_twice_with_both_cores_busy(busy_cores: None) -> None:
    state = synthetic_window(3, 10, variant="fragmented", with_task_classes=True)
    runs = [propose_placement(state, time_limit_s=60.0, work_limit_s=0.1, seed=0) for _ in range(2)]
    assert not runs[0].wall_limited  # the work budget, not the clock, ended it
    assert _answer(state, runs[0]) == _answer(state, runs[1])


def test_an_ordered_windows_proposal_is_the_same_twice_with_both_cores_busy(
    busy_cores: None,
) -> None:
    """An upstream-shaped window (item order, bans, weekdays): the ordered start's exact chains
    and the whole scope's ordered model have work budgets (their wall limits once decided what
    they found, so the start changed with the load, unflagged)."""
    state = synthetic_window(500, 13, variant="tight", with_task_classes=True, upstream=True)
    runs = [propose_placement(state, time_limit_s=60.0, work_limit_s=0.3, seed=0) for _ in range(2)]
    assert not runs[0].wall_limited
    assert _answer(state, runs[0]) == _answer(state, runs[1])


def test_a_repair_is_the_same_twice_with_both_cores_busy(busy_cores: None) -> None:
    state = synthetic_window(4, 10, variant="tight")
    placed = propose_placement(state, time_limit_s=60.0, work_limit_s=0.1, seed=0)
    from smartflow_engine.state import Request, relocate

    assert relocate(
        state,
        [Request(p.task_id, p.day, p.slot_start) for p in placed.placements],
        op="apply_proposal",
        status_after="suggested",
    ).ok
    runs = [
        repair_placement(state, max_moves=5, time_limit_s=60.0, work_limit_s=0.1, seed=1)
        for _ in range(2)
    ]
    assert not runs[0].wall_limited
    assert _answer(state, runs[0]) == _answer(state, runs[1])


def test_a_repair_cut_by_the_clock_says_so() -> None:
    """A limit far below the work budget: the wall clock ends the call, and the answer says it."""
    state = synthetic_window(4, 30, variant="tight")
    cut = repair_placement(state, max_moves=5, time_limit_s=0.05, work_limit_s=30.0, seed=1)
    assert cut.wall_limited


def test_analyze_health_replies_the_same_twice_with_both_cores_busy(busy_cores: None) -> None:
    """The read's reply (its actions, their fixable flags, the floor) is the state's."""
    from smartflow_engine.analyzers import analyze_health

    state = synthetic_window(5, 30, variant="fragmented", with_task_classes=True)
    replies = []
    for _ in range(2):
        env = analyze_health(state.copy_state(), time_limit_s=30.0).to_dict()
        env["feasibility"].pop("runtime_s", None)
        replies.append(env)
    assert replies[0] == replies[1]


@pytest.mark.parametrize("days", [1, 5])
def test_a_small_windows_default_proposal_is_the_same_twice_with_both_cores_busy(
    days: int, busy_cores: None
) -> None:
    """The default limit's work fits the limit with room for a busy machine (the CI failure of
    2026-12-07: a one-day window's soft phase spent its whole budget and the clock cut it)."""
    state = (
        synthetic_window(2, days, variant="fragmented")
        if days > 1
        else make_state(1, 6, [{"duration": 2}, {"duration": 2}])
    )
    runs = [propose_placement(state, seed=0) for _ in range(2)]
    assert not runs[0].wall_limited and not runs[1].wall_limited
    assert _answer(state, runs[0]) == _answer(state, runs[1])


def test_the_soft_phase_ends_on_its_patience_not_its_budget() -> None:
    """A search given far more work than a small window needs stops once the soft terms have
    not improved for ``soft_patience`` steps: the evaluations spent are the same with a budget
    ten times larger, and far below either budget."""
    from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
    from smartflow_engine.solver.health_search import search_health
    from smartflow_engine.solver.objective import DEFAULT_WEIGHTS
    from smartflow_engine.solver.placement import propose_placement as propose
    from smartflow_engine.solver.problem import build_problem

    state = synthetic_window(500, 13, variant="mixed")  # its health phase meets its floor early
    problem = build_problem(state, by_subject=True)
    start = propose(state, time_limit_s=60.0, work_limit_s=0.01, seed=0).placements
    runs = [
        search_health(
            state,
            problem,
            start,
            seed=0,
            budget_s=budget,
            weights=DEFAULT_WEIGHTS,
            calibration=DEFAULT_CALIBRATION,
        )
        for budget in (30.0, 300.0)
    ]
    assert runs[0].floor is not None and runs[0].counts.key == runs[0].floor  # then soft only
    assert runs[0].evaluations == runs[1].evaluations
    assert runs[0].placements == runs[1].placements
    limit = 30.0 / (DEFAULT_CALIBRATION.eval_cost_s * DEFAULT_CALIBRATION.soft_eval_factor)
    assert runs[0].evaluations < limit / 10
