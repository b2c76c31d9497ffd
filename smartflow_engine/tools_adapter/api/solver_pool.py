"""Tool calls that may run a solver, in worker processes.

A CP-SAT search releases the GIL, but parts of the engine (model building, the health search's
moves) hold it for long stretches; in the server's process they would stall every other request,
``/health`` included (issue 12 item 2). So a call of a solving tool (:data:`SOLVING_TOOLS`) is
shipped to a worker process as the session's snapshot, run there through the same
:class:`~..session.Session` pipeline, and the snapshot it leaves is taken back; the server's
threads only wait on a future. With ``processes=0`` the calls run in the request's thread (as a
library user or a test may prefer).

Lanes (issue 44 item 7). A short call is not queued behind another user's long one: a call whose
time limit (asked, or the tool's default, capped by the server's) is at most
:data:`SHORT_CALL_S` runs in the *short lane*, one process of its own; the others share the
``processes`` of the *long lane*. A call waits only for calls of its own lane, each of which
ends within its own limit (the solver honours it by the wall clock).

Each worker process is a slot of its own (issue 44 item 6): a process that dies (killed, out of
memory) fails only the call it was running, with :class:`SolverUnavailable` (HTTP 503
``solver_unavailable``, "retry"); the slot starts a new process for the next call, and a process
found dead before a call was handed to it is replaced for that call. A process that cannot
start at all is remembered (:meth:`SolverPool.health`, which ``/health`` reports) and every call
is answered 503 until one starts.

Only the registry's own tools go to the pool (a test-only tool injected into a session's table
cannot be rebuilt in another process); a tool that needs the database never does.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal

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

# A call whose time limit is at most this many seconds runs in the short lane.
SHORT_CALL_S = 1.0

Lane = Literal["short", "long"]


class SolverUnavailable(RuntimeError):
    """The solver process died during the call or cannot start: nothing of the call was kept;
    the caller may retry (the pool starts a new process)."""


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


def _worker_start(parent: int) -> None:
    """A worker's initializer: watch the server (:func:`_watch_parent`) and pay the solver's
    one-time imports now (CP-SAT's and GLOP's, ~0.4 s), before the worker takes its first call
    (issue 45 item 7: the first solving call took 2.7 s for a 1 s limit). Then the ~90,000
    objects the imports leave, which live as long as the process, are frozen out of the
    collector's full passes (``gc.freeze``): such a pass stops a solving call inside its limit,
    and scanning them made it take ~45 ms where ~20 ms remain (``python -m
    benchmarks.bench_solver --gc-freeze``). The process is the pool's own: nothing else
    shares its collector."""
    _watch_parent(parent)
    from ...solver.placement import warm_imports

    warm_imports()
    gc.freeze()


def _ping() -> int:
    """In a worker: its process id (starts the process)."""
    return os.getpid()


class _Slot:
    """One worker process: a process pool of one, replaced when its process dies."""

    def __init__(self, start: Callable[[], Executor]) -> None:
        self._start = start
        self._executor: Executor | None = None
        self._starting = threading.Lock()  # the pool's start-up thread and a call may meet here
        self.error = ""  # why the last start failed ("" once a process started)

    def run(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in this slot's process (started, or replaced when found dead)."""
        try:
            future = self._executor_now().submit(fn, *args)
        except BrokenProcessPool:  # it died while idle: the call was never handed to it
            self.drop()
            future = self._executor_now().submit(fn, *args)
        try:
            return future.result()
        except BrokenProcessPool:
            self.drop()
            raise SolverUnavailable(
                "the solver process ended during this call (killed or out of memory); "
                "nothing of the call was kept: retry"
            ) from None

    def start(self) -> None:
        """Start the process if it is not running."""
        self._executor_now()

    def _executor_now(self) -> Executor:
        with self._starting:
            return self._executor if self._executor is not None else self._started()

    def _started(self) -> Executor:
        """A new process, answering; a start that fails twice in a row is remembered (one
        failure may be a process killed while it started)."""
        failure = ""
        for _ in range(2):
            executor = self._start()
            try:
                executor.submit(_ping).result()  # starts the process
            except Exception as exc:
                executor.shutdown(wait=False, cancel_futures=True)
                failure = f"{type(exc).__name__}: {exc}"
                continue
            self.error = ""
            self._executor = executor
            return executor
        # Remembered only now: while the second try runs, /health does not report the first
        # try's failure (a process killed while it started is not a pool that cannot start).
        self.error = failure
        raise SolverUnavailable(f"the solver process cannot start ({failure}); retry later")

    def drop(self, *, wait: bool = False) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)

    def pids(self) -> list[int]:
        """Process ids of this slot's live process (for tests and operators)."""
        processes = getattr(self._executor, "_processes", None) or {}
        return [p.pid for p in processes.values() if p.pid is not None]


class _Lane:
    """Slots serving one kind of call; a call takes a free slot or waits for one."""

    def __init__(self, size: int, start: Callable[[], Executor]) -> None:
        self.slots = [_Slot(start) for _ in range(size)]
        self._free: queue.SimpleQueue[_Slot] = queue.SimpleQueue()
        for slot in self.slots:
            self._free.put(slot)

    def run(self, fn: Any, *args: Any) -> Any:
        slot = self._free.get()
        try:
            return slot.run(fn, *args)
        finally:
            self._free.put(slot)


class SolverPool:
    """Worker processes for solving tool calls, in two lanes (see the module docstring),
    started on first use or by :meth:`start` (``spawn`` context).

    Parameters
    ----------
    processes
        Processes of the long lane (0: every call runs in the caller's thread).
    short_lane
        Give calls within :data:`SHORT_CALL_S` a process of their own (the default).
    """

    def __init__(self, processes: int = 1, *, short_lane: bool = True) -> None:
        self.processes = processes
        self.short_lane = short_lane and processes > 0
        self._lanes: dict[Lane, _Lane] = {
            "long": _Lane(max(0, processes), self._new_executor),
            "short": _Lane(1 if self.short_lane else 0, self._new_executor),
        }
        self._stats_lock = threading.Lock()
        self._in_flight = 0
        self._busy_seconds = 0.0
        self.started = threading.Event()  # set when :meth:`start` has started every process

    @property
    def size(self) -> int:
        """Worker processes in all (both lanes)."""
        return sum(len(lane.slots) for lane in self._lanes.values())

    def _new_executor(self) -> Executor:
        return ProcessPoolExecutor(
            1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start,
            initargs=(os.getpid(),),
        )

    def stats(self) -> dict[str, Any]:
        """Calls submitted and not finished, and the seconds workers spent running calls."""
        with self._stats_lock:
            return {"in_flight": self._in_flight, "busy_seconds": self._busy_seconds}

    def health(self) -> str:
        """``inline`` (no processes), ``ok``, or ``cannot start: <why>`` when a worker
        process failed to start at its last try."""
        if self.processes <= 0:
            return "inline"
        errors = [s.error for lane in self._lanes.values() for s in lane.slots if s.error]
        return f"cannot start: {errors[0]}" if errors else "ok"

    def start(self) -> None:
        """Start every worker process now (a server does so at start-up, so that its first
        solving call does not pay for it and ``/health`` knows at once if they cannot start)."""
        for lane in self._lanes.values():
            for slot in lane.slots:
                with contextlib.suppress(SolverUnavailable):  # remembered, see health()
                    slot.start()
        self.started.set()

    def pids(self) -> list[int]:
        """Process ids of the live worker processes."""
        return [pid for lane in self._lanes.values() for s in lane.slots for pid in s.pids()]

    def lane(self, name: str, args: Any, max_time_limit_s: float) -> Lane:
        """The lane of a call of ``name`` with ``args``: short when its time limit (asked, or
        the tool's default; capped by ``max_time_limit_s``) is at most :data:`SHORT_CALL_S`."""
        if not self.short_lane:
            return "long"
        spec = registry.REGISTRY.get(name)
        asked = args.get("time_limit_s") if isinstance(args, dict) else None
        if not isinstance(asked, int | float) or isinstance(asked, bool):
            field = spec.args_model.model_fields.get("time_limit_s") if spec else None
            asked = field.default if field is not None else None
        limit = max_time_limit_s if not isinstance(asked, int | float) else asked
        return "short" if min(float(limit), max_time_limit_s) <= SHORT_CALL_S else "long"

    def run(self, fn: Any, *args: Any, lane: Lane = "long") -> Any:
        """``fn(*args)`` in a worker of ``lane``, counted in :meth:`stats`. Raises
        :class:`SolverUnavailable` when the worker died during the call or cannot start."""
        with self._stats_lock:
            self._in_flight += 1
        busy = 0.0
        try:
            busy, out = self._lanes[lane].run(_timed, fn, *args)
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
        lane = self.lane(name, args, ctx.max_time_limit_s)
        result, after = self.run(_session_call, before, name, args, kwargs, lane=lane)
        if after != before:
            rebuilt = Session.restore(after, store=ctx.store, db_user_id=ctx.user_id, **kwargs)
            lock, hook = session.lock, session.before_effect
            session.__dict__.update(rebuilt.__dict__)
            session.lock, session.before_effect = lock, hook
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
        lane = self.lane(name, args, max_time_limit_s)
        result: tuple[CallResult, dict[str, Any] | None] = self.run(
            _stateless_call, state, name, args, kwargs, lane=lane
        )
        return result

    def shutdown(self) -> None:
        for lane in self._lanes.values():
            for slot in lane.slots:
                slot.drop(wait=True)
