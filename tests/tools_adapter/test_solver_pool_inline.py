"""Tests of which session calls the server ships to its solver processes (issue 25): the health
family stays in the request's thread on a semester-sized window, everything that solves goes."""

from __future__ import annotations

from conftest_adapters import load_window

from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.api.solver_pool import (
    INLINE_MAX_TASKS,
    INLINE_TOOLS,
    SOLVING_TOOLS,
    SolverPool,
)
from smartflow_engine.tools_adapter.sessions.session import Session


def test_health_calls_stay_in_thread_on_small_windows_and_go_to_the_pool_on_large_ones():
    pool = SolverPool(processes=1)
    small = Session(load_window())
    big = Session(synthetic_window(0, 200, pending=INLINE_MAX_TASKS, slots_per_day=12))
    assert len(big.state.tasks) > INLINE_MAX_TASKS >= len(small.state.tasks)
    for name in INLINE_TOOLS:
        assert name in SOLVING_TOOLS
        assert not pool.handles(name, small)
        assert pool.handles(name, big)
    for name in ("apply_proposal", "check_feasibility", "propose_placement"):
        assert pool.handles(name, small) and pool.handles(name, big)
    assert not SolverPool(processes=0).handles("apply_proposal", big)  # no pool: all in thread
    assert pool._executor is None  # deciding starts no process
