"""Tests of the solver pool's faults and lanes (issue 44 items 6 and 7): a killed worker
process fails only the call it ran, with a retryable error, and the next call gets a new
process; a pool that cannot start is reported by /health; a short call runs while another
user's long call holds the long lane."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from smartflow_engine.tools_adapter.api import create_app, solver_pool
from smartflow_engine.tools_adapter.api.solver_pool import (
    SHORT_CALL_S,
    SolverPool,
    SolverUnavailable,
)
from tests.helpers.windows import window_dict

TOKENS = {"tok": "alice"}
AUTH = {"Authorization": "Bearer tok"}


def _die() -> None:
    """In a worker: end the process as kill -9 would, in the middle of a call."""
    os.kill(os.getpid(), signal.SIGKILL)


def _pid() -> int:
    return os.getpid()


def _collector() -> tuple[int, bool, bool]:
    """In a worker: the objects frozen out of the collector's passes, whether the collector
    runs, and whether CP-SAT was imported before the call."""
    import gc
    import sys

    return gc.get_freeze_count(), gc.isenabled(), "ortools.sat.python.cp_model" in sys.modules


def _wait_for(event: Any) -> int:
    """In a worker: hold the process until ``event`` (a manager's Event) is set."""
    event.wait()
    return os.getpid()


def test_a_killed_solver_process_fails_only_its_call():
    """Tests issue 44 item 6 on the pool: the call whose process is killed gets
    SolverUnavailable ("retry"), the next call runs in a new process; a process killed while
    idle is replaced for the next call, which succeeds (before: every later call failed with
    BrokenProcessPool until the server restarted)."""
    pool = SolverPool(1)
    try:
        first = pool.run(_pid)
        with pytest.raises(SolverUnavailable, match="retry"):
            pool.run(_die)
        second = pool.run(_pid)
        assert second != first and second in pool.pids()
        os.kill(second, signal.SIGKILL)
        try:
            third = pool.run(_pid)  # replaced if the pool already saw it die
        except SolverUnavailable:
            third = pool.run(_pid)  # or this call hit it: the next one runs
        assert third != second
        assert pool.health() == "ok"
    finally:
        pool.shutdown()


def test_a_worker_freezes_what_its_imports_leave():
    """Tests that a solver process, started, has paid CP-SAT's import and frozen the objects
    the imports left (``gc.freeze``: the collector's full passes inside a solving call then
    skip them) while its collector still runs for what the calls make."""
    pool = SolverPool(1)
    try:
        frozen, enabled, imported = pool.run(_collector)
    finally:
        pool.shutdown()
    assert imported and enabled
    assert frozen > 10_000


def test_a_killed_solver_process_heals_over_http():
    """Tests issue 44 item 6 over HTTP: after kill -9 of the server's solver processes, a
    solving call answers 200, or once 503 solver_unavailable saying to retry and then 200;
    /health stays 200 ok (before: 500 BrokenProcessPool on every solving call while /health
    said 200)."""
    body = {"state": window_dict(), "args": {"time_limit_s": 2.0}}
    with TestClient(create_app(TOKENS, solver_processes=1, max_time_limit_s=2.0)) as client:
        assert client.post("/v1/feasibility", headers=AUTH, json=body).status_code == 200
        workers = _solver_children()
        assert workers, "the solving call ran in no worker process"
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        answers = [client.post("/v1/feasibility", headers=AUTH, json=body) for _ in range(2)]
        codes = [a.status_code for a in answers]
        assert codes in ([200, 200], [503, 200]), [a.text for a in answers]
        if codes[0] == 503:
            assert answers[0].json()["error_code"] == "solver_unavailable"
            assert "retry" in answers[0].json()["error"]
        health = client.get("/health")
        assert health.status_code == 200 and health.json()["solver_pool"] == "ok"


def _solver_children() -> list[int]:
    """This process's children that are multiprocessing's spawned workers (from /proc)."""
    from pathlib import Path

    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and "spawn_main" in cmdline:
            out.append(int(entry.name))
    return out


class _CannotStart:
    """A process pool whose process cannot start (e.g. no memory to fork)."""

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def submit(self, *_args: Any, **_kwargs: Any) -> Any:
        raise OSError("[Errno 12] Cannot allocate memory")

    def shutdown(self, **_kwargs: Any) -> None:
        pass


def test_health_reports_a_pool_that_cannot_start(monkeypatch):
    """Tests issue 44 item 6's last part: when the solver's processes cannot start, /health
    answers 503 degraded naming why, and a solving call answers 503 solver_unavailable (before:
    /health said 200 ok)."""
    monkeypatch.setattr(solver_pool, "ProcessPoolExecutor", _CannotStart)
    with TestClient(create_app(TOKENS, solver_processes=1)) as client:
        body = {"state": window_dict(), "args": {}}
        call = client.post("/v1/feasibility", headers=AUTH, json=body)
        assert call.status_code == 503 and call.json()["error_code"] == "solver_unavailable"
        health = client.get("/health")
        assert health.status_code == 503, health.text
        got = health.json()
        assert got["status"] == "degraded" and "Cannot allocate memory" in got["solver_pool"]


LANES = [
    # (tool, args, lane) with the server's cap at 10 s
    ("check_feasibility", {"time_limit_s": 0.1}, "short"),  # asked within the short limit
    ("check_feasibility", {"time_limit_s": SHORT_CALL_S}, "short"),  # on the limit
    ("check_feasibility", {}, "long"),  # its default 5 s
    ("propose_placement", {"time_limit_s": 0.5}, "short"),
    ("propose_placement", {}, "long"),  # default by window size, up to the cap
    ("spread_even", {"time_limit_s": 3}, "long"),
    ("analyze_health", {}, "long"),  # no time-limit argument: the cap
]


@pytest.mark.parametrize(("tool", "args", "lane"), LANES)
def test_a_call_goes_to_the_lane_of_its_time_limit(tool, args, lane):
    """Tests issue 44 item 7's rule: a call whose time limit (asked or the tool's default,
    capped) is within SHORT_CALL_S takes the short lane, any other the long one."""
    assert SolverPool(1).lane(tool, args, 10.0) == lane
    assert SolverPool(1, short_lane=False).lane(tool, args, 10.0) == "long"
    assert SolverPool(1).lane("check_feasibility", {}, 0.5) == "short"  # the cap decides


def test_a_short_call_runs_while_a_long_call_holds_the_long_lane():
    """Tests issue 44 item 7: while another user's call holds the long lane's only process
    (until the test lets it go), a short call completes in the short lane's own process
    (before: one process per worker, so it waited behind the long call)."""
    import multiprocessing

    pool = SolverPool(1)
    manager = multiprocessing.get_context("spawn").Manager()
    release = manager.Event()
    try:
        with ThreadPoolExecutor(1) as threads:
            long_call = threads.submit(pool.run, _wait_for, release, lane="long")
            short = pool.run(_pid, lane="short")
            assert not long_call.done()  # the long call still holds its process
            release.set()
            assert long_call.result(timeout=120) != short
    finally:
        release.set()
        manager.shutdown()
        pool.shutdown()


def test_lanes_serve_concurrent_callers_without_mixing():
    """Tests that concurrent callers of both lanes all get their own call's answer."""
    pool = SolverPool(1)
    try:
        results: list[int] = []
        lock = threading.Lock()

        def call(lane: str) -> None:
            got = pool.run(pow, 2, 10, lane=lane)  # type: ignore[arg-type]
            with lock:
                results.append(got)

        threads = [threading.Thread(target=call, args=(lane,)) for lane in ["short", "long"] * 4]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [1024] * 8
    finally:
        pool.shutdown()
