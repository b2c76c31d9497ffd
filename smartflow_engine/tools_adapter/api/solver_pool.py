"""Tool calls that may run a solver, in a pool of worker processes.

A CP-SAT search releases the GIL, but parts of the engine (model building, the health search's
moves) hold it for long stretches; in the server's process they would stall every other request,
``/health`` included (issue 12 item 2). So a call of a solving tool (:data:`SOLVING_TOOLS`) is
shipped to a worker process as the session's snapshot, run there through the same
:class:`~..session.Session` pipeline, and the snapshot it leaves is taken back; the server's
threads only wait on a future. With ``processes=0`` the calls run in the request's thread (as a
library user or a test may prefer).

Only the registry's own tools go to the pool (a test-only tool injected into a session's table
cannot be rebuilt in another process); a tool that needs the database never does.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

from ...solver.budget import DEFAULT_CALIBRATION, Calibration
from ...state import ScheduleState
from ..core import registry
from ..sessions.session import CallResult, Session

SOLVING_TOOLS = frozenset(
    {
        "check_feasibility",
        "propose_placement",
        "apply_proposal",
        "spread_even",
        "min_context_switch",
        "analyze_health",
        "resolve_negotiation",
        "restore_best",
        "query_target_tasks",
        "query_available_slots",  # each destination re-measures health
    }
)

# The health family's calls are short on a semester's window since the one evaluator (issue 25:
# ~7 ms at 30 days and ~30 ms at 120 on a quiet machine, the fixable search bounded by its
# candidate budget), while shipping the session to a worker and back costs ~20 ms of its own and
# makes concurrent agents queue on the worker. Up to INLINE_MAX_TASKS tasks they run in the
# request's thread; a larger window still goes to the pool.
INLINE_TOOLS = frozenset({"analyze_health", "query_target_tasks", "query_available_slots"})
INLINE_MAX_TASKS = 300


def _watch_parent(parent: int) -> None:
    """In a worker: exit as soon as the server process is gone (a killed or restarted server
    must not leave solver processes behind)."""

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(0)
            time.sleep(1.0)

    threading.Thread(target=watch, daemon=True).start()


def _timed(fn: Any, *args: Any) -> tuple[float, Any]:
    """In a worker: ``fn(*args)`` and the seconds it ran (the pool's busy time)."""
    started = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - started, out


def _session_call(
    snapshot: dict[str, Any], name: str, args: Any, kwargs: dict[str, Any]
) -> tuple[CallResult, dict[str, Any]]:
    session = Session.restore(snapshot, **kwargs)
    result = session.invoke(name, args)
    return result, session.snapshot()


def _stateless_call(
    state: dict[str, Any] | None, name: str, args: Any, kwargs: dict[str, Any]
) -> tuple[CallResult, dict[str, Any] | None]:
    loaded = ScheduleState.from_json(state) if state is not None else None
    spec = registry.REGISTRY[name]
    # a hidden tool (offered in no mode) stays hidden here too
    session = Session(loaded, specs=[spec], enabled_tools=[name] if spec.modes else [], **kwargs)
    result = session.invoke(name, args)
    after = session.state.to_dict() if result.changes and session.state is not None else None
    return result, after


class SolverPool:
    """Worker processes for solving tool calls (started on first use, ``spawn`` context)."""

    def __init__(self, processes: int = 1) -> None:
        self.processes = processes
        self._executor: Executor | None = None
        self._stats_lock = threading.Lock()
        self._in_flight = 0
        self._busy_seconds = 0.0

    def stats(self) -> dict[str, Any]:
        """Calls submitted and not finished, and the seconds workers spent running calls."""
        with self._stats_lock:
            return {"in_flight": self._in_flight, "busy_seconds": self._busy_seconds}

    def _run(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in a worker, counted in :meth:`stats`."""
        with self._stats_lock:
            self._in_flight += 1
        busy = 0.0
        try:
            busy, out = self._pool().submit(_timed, fn, *args).result()
        finally:
            with self._stats_lock:
                self._in_flight -= 1
                self._busy_seconds += busy
        return out

    def handles(self, name: str, session: Session | None = None) -> bool:
        """Whether a call of ``name`` (in ``session``, if given) goes to the pool."""
        if self.processes <= 0 or name not in SOLVING_TOOLS:
            return False
        spec = registry.REGISTRY.get(name)
        if spec is None or spec.needs_confirm:
            return False
        if session is None:
            return True
        state = session.state
        if name in INLINE_TOOLS and state is not None and len(state.tasks) <= INLINE_MAX_TASKS:
            return False
        mine = session.specs  # the worker rebuilds the session with the registry's table
        return len(mine) == len(registry.TOOLS) and all(
            a is b for a, b in zip(mine, registry.TOOLS, strict=True)
        )

    def _pool(self) -> Executor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                self.processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_watch_parent,
                initargs=(os.getpid(),),
            )
        return self._executor

    def session_call(self, session: Session, name: str, args: Any) -> CallResult:
        """Run ``session.invoke(name, args)`` in a worker; the session takes over the state,
        change log and pending calls the worker left (the caller holds the session's lock)."""
        ctx = session.toolbox.ctx
        kwargs: dict[str, Any] = {
            "user_id": session.user_id,
            "session_id": session.session_id,
            "max_time_limit_s": ctx.max_time_limit_s,
            "num_workers": ctx.num_workers,
            "self_check": session.toolbox.self_check,
            "calibration": ctx.calibration,
        }
        before = session.snapshot()
        result, after = self._run(_session_call, before, name, args, kwargs)
        if after != before:
            rebuilt = Session.restore(after, store=ctx.store, db_user_id=ctx.user_id, **kwargs)
            lock = session.lock
            session.__dict__.update(rebuilt.__dict__)
            session.lock = lock
        out: CallResult = result
        return out

    def stateless_call(
        self,
        state: dict[str, Any] | None,
        name: str,
        args: Any,
        max_time_limit_s: float,
        num_workers: int,
        calibration: Calibration = DEFAULT_CALIBRATION,
    ) -> tuple[CallResult, dict[str, Any] | None]:
        kwargs: dict[str, Any] = {
            "max_time_limit_s": max_time_limit_s,
            "num_workers": num_workers,
            "calibration": calibration,
        }
        result: tuple[CallResult, dict[str, Any] | None] = self._run(
            _stateless_call, state, name, args, kwargs
        )
        return result

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
