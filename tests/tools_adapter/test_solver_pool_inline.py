"""Tests of which session calls the server ships to its solver processes (issue 25): the health
family stays in the request's thread on a semester-sized window, everything that solves goes."""

from __future__ import annotations

from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.api.solver_pool import (
    INLINE_MAX_TASKS,
    INLINE_TOOLS,
    SOLVING_TOOLS,
    SolverPool,
)
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.windows import load_window


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
    assert pool.pids() == []  # deciding starts no process


def _solver_imported() -> bool:
    """In a worker: whether CP-SAT's module is already imported (by the worker's warm-up)."""
    import sys

    return "ortools.sat.python.cp_model" in sys.modules


def test_the_server_starts_and_warms_its_solver_workers_before_the_first_call():
    """Tests that the app's startup spawns every solver worker and pays the solver's imports
    in them before any request, so the first solving call does not wait for a process to start
    (issue 45 item 7: it took 2.7 s for a 1 s limit); and that the first call then runs in an
    already started worker (no new process)."""
    from fastapi.testclient import TestClient

    from smartflow_engine.tools_adapter.api import create_app
    from tests.helpers.windows import window_dict

    app = create_app({"tok": "alice"}, solver_processes=1)
    pool: SolverPool = app.state.ctx.solver
    assert pool.pids() == []  # nothing before startup
    with TestClient(app) as client:
        assert pool.started.wait(120)  # the start-up thread started every process
        warmed = set(pool.pids())
        assert len(warmed) == pool.size == 2  # the long lane's process and the short lane's
        assert pool.run(_solver_imported, lane="short")
        assert pool.run(_solver_imported, lane="long")
        headers = {"Authorization": "Bearer tok"}
        made = client.post(
            "/v1/sessions", headers=headers, json={"state": window_dict(), "mode": "first_full"}
        )
        sid = made.json()["session_id"]
        call = {"tool": "check_feasibility", "args": {"time_limit_s": 1}}
        done = client.post(f"/v1/sessions/{sid}/calls", headers=headers, json=call)
        assert done.status_code == 200, done.text
        assert set(pool.pids()) == warmed
