"""One window's row: parse, then the chosen jobs through the engine's public entry points.

Each job holds the batch's ``time_limit_s`` as its whole wall clock (issue 24 item 6: one
:class:`~smartflow_engine.solver.budget.Deadline` per job, made when the job starts):

- ``feasibility``: :func:`~smartflow_engine.solver.check_feasibility`, then
  :func:`~smartflow_engine.solver.negotiation_figures` on its report with the time the check
  left (free when feasible or unproven; exact extra days / lifting flags / slots to cut when
  proven infeasible, where they cost several times the check's own proof: ``negotiation=False``
  skips them, leaving those columns null; figures cut short are null with ``negotiation_proven``
  false);
- ``proposal``: :func:`~smartflow_engine.solver.propose_placement` with the batch's seed, stopped
  by a deterministic work budget (``work_limit_s``; by default the one a call with the batch's
  ``time_limit_s`` would get, the calibration's ``work_share`` × the limit) under the job's wall clock, so the
  same seed gives the same row on any engine, worker count or load whenever the work budget,
  not the wall clock, ended the search; ``proposal_wall_limited`` says when the wall clock cut
  it (a loaded machine, a window too big for the limit): a caller that needs the same table
  everywhere gives a generous ``time_limit_s`` and fixes ``work_limit_s``;
- ``health``: :func:`~smartflow_engine.analyzers.analyze_health` on the window as the proposal
  would leave it (its placements applied as ``suggested``) when a proposal ran, else on the
  window as loaded, with the time applying the placements left; the close signal is read
  defensively (``reason``, ``best_achievable`` and ``floor`` exist only on engines that compute
  them).

``clock_cut`` marks a row where the wall clock ended a solver call before its proof or its
work budget did (issue 45 item 2): the check or its figures unproven (they stop only on a proof
or the clock), the proposal ``wall_limited``, analyze_health's check or floor unproven. Every
other row is the same on any engine, worker count and load for the same seed; a marked row's
solver figures may differ (``run_batch`` counts them in ``attrs["batch"]["clock_cut"]``).

Frozen days (issue 28, ``frozen_days``): days ``1..k`` of every window are frozen. The
feasibility check, its figures and the proposal run on
:func:`~smartflow_engine.state.freeze.frozen_view` (nothing placed there moves, nothing new lands
there), and ``analyze_health`` gets the same setting (its feasibility and floor honour it; its
metrics are the window's own). A window shorter than ``k`` days is frozen whole.

Every failure of one window (malformed JSON, an invalid state, a solver error, the window's
wall-clock timeout) is caught here and becomes the row's ``error``; figures computed before the
failure are kept. Nothing here raises for a bad window.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

JOBS: tuple[str, ...] = ("feasibility", "proposal", "health")

# The table's columns, in order (runtime columns end in ``_s``; the rest is deterministic for a
# given seed). Objective columns come from the solver's term names at import time.
BASE_COLUMNS: tuple[str, ...] = (
    "window_id",
    "user_id",
    "days",
    "slots_per_day",
    "tasks",
    "pending_tasks",
    "pending_slots",
)
FEASIBILITY_COLUMNS: tuple[str, ...] = (
    "is_feasible",
    "proven",
    "required_task_slots",
    "feasible_slots",
    "capacity_gap",
    "free_capacity_slots",
    "slack_slots",
    "reason_code",
    "extra_days_needed",
    "extra_days_possible",
    "slots_to_cut",
    "lifting_banned_suffices",
    "lifting_class_constraints_suffices",
    "negotiation_proven",
)
PROPOSAL_HEAD: tuple[str, ...] = (
    "proposal_status",
    "proposal_wall_limited",
    "placed_tasks",
    "placed_slots",
    "unplaced_tasks",
    "unplaced_slots",
    "max_slots",
    "objective_bound",
)
HEALTH_COLUMNS: tuple[str, ...] = (
    "health_of",
    "critical",
    "warning",
    "acceptable_to_close",
    "close_reason",
    "best_achievable",
    "floor_critical",
    "floor_warning",
    "floor_proven",
)
# Whether the wall clock, not a proof or a work budget, ended a solver call of the row (issue 45
# item 2): its solver figures may then differ on another run, engine or load.
CUT_COLUMNS: tuple[str, ...] = ("clock_cut",)
RUNTIME_COLUMNS: tuple[str, ...] = ("feasibility_s", "proposal_s", "health_s", "total_s")


def objective_columns() -> tuple[str, ...]:
    from ..solver import TERM_NAMES

    return tuple(f"obj_{name}" for name in (*TERM_NAMES, "weighted_total"))


COMMIT_COLUMNS: tuple[str, ...] = ("commit_status", "commit_detail")

_STRING = (
    "window_id",
    "reason_code",
    "proposal_status",
    "health_of",
    "close_reason",
    "error",
    "commit_status",
    "commit_detail",
)
_BOOLEAN = (
    "is_feasible",
    "proven",
    "extra_days_possible",
    "lifting_banned_suffices",
    "lifting_class_constraints_suffices",
    "negotiation_proven",
    "proposal_wall_limited",
    "acceptable_to_close",
    "best_achievable",
    "floor_proven",
    "clock_cut",
)
_FLOAT = ("unplaced_slots", "objective_bound", *RUNTIME_COLUMNS)


def columns(commit: bool = False) -> tuple[str, ...]:
    """Every column of a batch table, in order (``commit_*`` only for a committing run)."""
    return (
        *BASE_COLUMNS,
        *FEASIBILITY_COLUMNS,
        *PROPOSAL_HEAD,
        *objective_columns(),
        *HEALTH_COLUMNS,
        *CUT_COLUMNS,
        *RUNTIME_COLUMNS,
        "error",
        *(COMMIT_COLUMNS if commit else ()),
    )


def column_dtype(name: str) -> str:
    """The pandas (nullable) dtype of a column: every figure may be missing on an error row."""
    if name in _STRING:
        return "string"
    if name in _BOOLEAN:
        return "boolean"
    if name in _FLOAT or name.startswith("obj_"):
        return "Float64"
    return "Int64"


class WindowTimeout(BaseException):  # not an Exception: solver code must not catch it
    """The window's wall-clock budget ran out."""


@dataclass(frozen=True)
class JobConfig:
    """What every window of a batch runs with (shipped to the workers once per chunk)."""

    jobs: tuple[str, ...] = JOBS
    time_limit_s: float = 2.0
    seed: int = 0
    window_timeout_s: float | None = None  # None: a generous multiple of the solver budget
    keep_placements: bool = False  # return the proposal's placements (for --commit)
    work_limit_s: float | None = None  # proposals' work budget; None: work_share x time limit
    negotiation: bool = True  # the feasibility job also computes the negotiation figures
    frozen_days: int = 0  # days 1..frozen_days of every window are frozen (issue 28)

    def solver_view(self, state: Any) -> Any:
        """The state the solver jobs see: ``state`` itself, or its frozen view."""
        if not self.frozen_days:
            return state
        from ..state.freeze import frozen_count, frozen_view

        return frozen_view(state, frozen_count(state, self.frozen_days))

    def proposal_work_s(self) -> float:
        """The proposals' deterministic work budget (estimated seconds of the calibration
        machine)."""
        if self.work_limit_s is not None:
            return self.work_limit_s
        from ..solver.budget import DEFAULT_CALIBRATION

        return DEFAULT_CALIBRATION.work_share * self.time_limit_s

    def proposal_wall_s(self) -> float:
        """The proposals' wall clock: the job's limit, like every job's (issue 24; it was ten
        times the limit the work budget corresponds to, and a window took up to 38 s at
        ``--time-limit 2``)."""
        return self.time_limit_s

    def timeout(self) -> float:
        if self.window_timeout_s is not None:
            return self.window_timeout_s
        # generous: each job holds time_limit_s (+ 0.5 s) except analyze_health, whose own
        # whole-call limit is issue 25's (13-25 s on 1000-day windows on a loaded machine)
        return 60.0 + 6.0 * self.time_limit_s * max(1, len(self.jobs))


@dataclass
class WindowResult:
    """A window's row, and the proposal's placements when the config keeps them."""

    index: int
    row: dict[str, Any]
    placements: list[tuple[int, int, int]] | None = None  # (task_id, day, slot_start)
    user_id: int | None = None
    fingerprint: str | None = None
    day_mapping: tuple[tuple[int, int, int], ...] | None = None


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`WindowTimeout` after ``seconds`` of wall clock (main thread only: elsewhere
    the solvers' own time limits are the only bound)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _fire(signum: int, frame: Any) -> None:
        raise WindowTimeout

    previous = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _num(value: Any) -> Any:
    """``None`` for a missing or NaN figure, else the value."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def run_window(item: Any, config: JobConfig) -> WindowResult:
    """The row of one :class:`~.sources.WindowItem` (never raises for a bad window)."""
    row: dict[str, Any] = {"window_id": item.window_id, "user_id": item.user_id, "error": None}
    result = WindowResult(
        item.index,
        row,
        user_id=item.user_id,
        fingerprint=item.fingerprint,
        day_mapping=item.day_mapping,
    )
    if item.error is not None:
        row["error"] = item.error
        return result
    t0 = time.perf_counter()
    stage = "parse"
    try:
        with _deadline(config.timeout()):
            from ..state import ScheduleState, StateError

            try:
                state = ScheduleState.from_json(item.text)
            except StateError as exc:
                row["error"] = f"invalid_state: {exc}"
                return result
            pending = state.pending_tasks()
            row.update(
                days=state.num_days,
                slots_per_day=state.slots_per_day,
                tasks=len(state.tasks),
                pending_tasks=len(pending),
                pending_slots=sum(t.need() for t in pending),
            )
            placements = None
            if "feasibility" in config.jobs:
                stage = "feasibility"
                _feasibility(state, config, row)
            if "proposal" in config.jobs:
                stage = "proposal"
                placements = _proposal(state, config, row)
                if config.keep_placements:
                    result.placements = placements
            if "health" in config.jobs:
                stage = "health"
                _health(state, placements, config, row)
            row["clock_cut"] = clock_cut(row)
            row.pop("health_check_proven", None)
    except WindowTimeout:
        row["error"] = f"timeout: {stage} still running after the window's {config.timeout():g} s"
    except Exception as exc:  # a solver or analyzer failure on this window only
        row["error"] = f"{stage}_error: {type(exc).__name__}: {_first_line(exc)}"
    finally:
        row["total_s"] = time.perf_counter() - t0
    return result


def clock_cut(row: dict[str, Any]) -> bool:
    """Whether the wall clock ended one of the row's solver calls (see the module docstring):
    an unproven feasibility check or negotiation figures, a wall-limited proposal, an unproven
    floor or feasibility check of analyze_health."""
    flags = (
        row.get("proven") is False,
        row.get("negotiation_proven") is False,
        row.get("proposal_wall_limited") is True,
        row.get("floor_proven") is False,
        row.get("health_check_proven") is False,
    )
    return any(flags)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _feasibility(state: Any, config: JobConfig, row: dict[str, Any]) -> None:
    from ..solver import check_feasibility, negotiation_figures
    from ..solver.budget import Deadline

    clock = Deadline.start(config.time_limit_s)
    t0 = clock.started
    state = config.solver_view(state)
    report = check_feasibility(state, time_limit_s=clock.left(), num_workers=1, explain=False)
    row.update(
        is_feasible=report.is_feasible,
        proven=report.proven,
        required_task_slots=report.required_task_slots,
        feasible_slots=report.feasible_slots,
        capacity_gap=report.capacity_gap,
        free_capacity_slots=report.free_capacity_slots,
        slack_slots=report.slack_slots,
        reason_code=report.reason_code,
    )
    if not config.negotiation:
        row["feasibility_s"] = time.perf_counter() - t0
        return
    # The figures get what the check left of the job's limit (they had a limit of their own).
    figures = negotiation_figures(state, report, time_limit_s=clock.left(), num_workers=1)
    row.update(
        extra_days_needed=figures.extra_days_needed,
        extra_days_possible=figures.extra_days_possible,
        slots_to_cut=figures.slots_to_cut,
        lifting_banned_suffices=figures.lifting_banned_suffices,
        lifting_class_constraints_suffices=figures.lifting_class_constraints_suffices,
        negotiation_proven=figures.proven,
    )
    row["feasibility_s"] = time.perf_counter() - t0


def _proposal(state: Any, config: JobConfig, row: dict[str, Any]) -> list[tuple[int, int, int]]:
    from ..solver import propose_placement

    t0 = time.perf_counter()
    proposal = propose_placement(
        config.solver_view(state),  # its placements are the real tasks' (the view adds blockers)
        time_limit_s=config.proposal_wall_s(),
        seed=config.seed,
        num_workers=1,
        work_limit_s=config.proposal_work_s(),
    )
    objective = proposal.objective
    row.update(
        proposal_status=proposal.status,
        proposal_wall_limited=proposal.wall_limited,
        placed_tasks=len(proposal.placements),
        placed_slots=sum(p.length for p in proposal.placements),
        unplaced_tasks=len(proposal.unplaced),
        unplaced_slots=_num(objective.get("unplaced_slots")),
        max_slots=proposal.max_slots,
        objective_bound=_num(proposal.bound),
    )
    for column in objective_columns():
        row[column] = _num(objective.get(column.removeprefix("obj_")))
    row["proposal_s"] = time.perf_counter() - t0
    return [(p.task_id, p.day, p.slot_start) for p in proposal.placements]


def apply_placements(state: Any, placements: Sequence[tuple[int, int, int]]) -> Any:
    """Place ``placements`` on ``state`` as ``suggested`` in one all-or-nothing step.

    Returns the :class:`~smartflow_engine.state.OpResult` (its ``changes`` are the log a commit
    writes; on refusal nothing changed).
    """
    from ..state import Request, relocate

    requests = [Request(task_id, day, start) for task_id, day, start in placements]
    return relocate(state, requests, op="apply_proposal", status_after="suggested")


def _health(
    state: Any,
    placements: list[tuple[int, int, int]] | None,
    config: JobConfig,
    row: dict[str, Any],
) -> None:
    from ..analyzers import analyze_health
    from ..solver.budget import Deadline

    clock = Deadline.start(config.time_limit_s)
    t0 = clock.started
    target = state
    row["health_of"] = "window"
    if placements:
        # The health job is a window's last: the placements go on the parsed window itself. A
        # copy cost more than the whole limit on large windows (1.2-1.8 s for 20,111 tasks).
        applied = apply_placements(target, placements)
        if not applied.ok:
            raise RuntimeError(f"the proposal does not apply: {applied.refusal}")
        row["health_of"] = "proposal"
    # analyze_health's limit (its feasibility check) is what applying the placements left.
    result = analyze_health(
        target,
        time_limit_s=min(max(clock.left(), 0.001), 60.0),
        num_workers=1,
        frozen_days=config.frozen_days,
    )
    if not result.success:
        raise RuntimeError(f"analyze_health: {result.error_code}: {result.error}")
    check = result.feasibility or {}
    if "proven" in check:  # (not a column: read by clock_cut, then dropped)
        row["health_check_proven"] = bool(check["proven"])
    close = result.metrics.get("close_signal") or {}
    floor = close.get("floor") or {}
    row.update(
        critical=close.get("critical"),
        warning=close.get("warning"),
        acceptable_to_close=close.get("acceptable_to_close"),
        close_reason=close.get("reason"),
        best_achievable=close.get("best_achievable"),
        floor_critical=floor.get("critical"),
        floor_warning=floor.get("warning"),
        floor_proven=floor.get("proven"),
    )
    row["health_s"] = time.perf_counter() - t0


def run_chunk(items: Sequence[Any], config: JobConfig) -> tuple[list[WindowResult], dict[str, Any]]:
    """Run a chunk of windows in this process; also report the CPU time the chunk took (this
    process, every thread) and the process's peak memory."""
    import os
    import resource

    cpu0 = time.process_time()
    results = [run_window(item, config) for item in items]
    cpu = time.process_time() - cpu0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return results, {"pid": os.getpid(), "peak_rss_mb": peak_kb / 1024.0, "cpu_s": cpu}
