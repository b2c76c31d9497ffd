"""The one place that talks to OR-Tools: lazy import, solver parameters, status names.

ortools takes ~0.25 s to import, so it is imported inside :func:`cp_model` and nowhere at module
level: ``import smartflow_engine`` and the read tools stay fast.
"""

from __future__ import annotations

import math
import time
from enum import StrEnum
from types import ModuleType
from typing import Any


class SolveStatus(StrEnum):
    """CP-SAT outcomes, named once."""

    OPTIMAL = "optimal"  # proven optimal (or proven feasible for a pure feasibility model)
    FEASIBLE = "feasible"  # a solution, optimality not proven
    INFEASIBLE = "infeasible"  # proven: no solution
    UNKNOWN = "unknown"  # time limit hit before any proof

    @property
    def proven(self) -> bool:
        return self in (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE)


class OutOfTime(Exception):
    """A model build or a search passed its wall-clock deadline (internal: every entry point
    catches it and answers with what it has, marked unproven)."""


def check_deadline(deadline: float | None) -> None:
    """Raise :class:`OutOfTime` once ``time.perf_counter()`` is past ``deadline``."""
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime


# A solve or stage that ends within this of its wall-clock limit was cut by it (not by its
# work): the one definition every "did the clock decide?" check reads.
CUT_MARGIN_S = 0.01


def ran_out(spent: float, limit: float) -> bool:
    """Whether a solve that took ``spent`` seconds of its ``limit`` was stopped by the clock."""
    return spent >= limit - CUT_MARGIN_S


def at_deadline(deadline: float) -> bool:
    """Whether ``time.perf_counter()`` has reached ``deadline`` (within the margin): a stage
    ending now was cut by it."""
    return time.perf_counter() >= deadline - CUT_MARGIN_S


def time_left(deadline: float) -> float:
    """Seconds to ``deadline`` (never below CP-SAT's smallest limit)."""
    return max(deadline - time.perf_counter(), MIN_TIME_LIMIT_S)


def cp_model() -> ModuleType:
    from ortools.sat.python import cp_model as module

    return module


def status_of(code: Any) -> SolveStatus:
    m = cp_model()
    return {
        m.OPTIMAL: SolveStatus.OPTIMAL,
        m.FEASIBLE: SolveStatus.FEASIBLE,
        m.INFEASIBLE: SolveStatus.INFEASIBLE,
    }.get(code, SolveStatus.UNKNOWN)


MIN_TIME_LIMIT_S = 1e-3


def make_solver(
    time_limit_s: float,
    num_workers: int,
    *,
    seed: int = 0,
    exact: bool = True,
    deterministic_time: float | None = None,
) -> Any:
    """A ``CpSolver`` with ``max_time_in_seconds`` and ``num_workers`` always set explicitly.

    ``exact`` selects the setting measured best for the counting models (``linearization_level=2``
    proved every tight 120-day window where the defaults left a third unproven).
    ``deterministic_time`` also bounds the deterministic time, so one worker gives the same answer
    on every run even when the machine is busy (the wall-clock limit then only acts as a safety
    net); callers that budget their own work pass it (a share of their limit, see
    :attr:`.budget.Calibration.deterministic_share`), so it does not depend on how much wall time
    happens to be left.
    """
    solver = cp_model().CpSolver()
    params = solver.parameters
    limit = max(float(time_limit_s), MIN_TIME_LIMIT_S) if math.isfinite(time_limit_s) else 60.0
    params.max_time_in_seconds = limit
    params.num_workers = max(1, int(num_workers))
    params.random_seed = int(seed)
    if exact:
        params.linearization_level = 2
    if deterministic_time is not None:
        params.max_deterministic_time = max(float(deterministic_time), MIN_TIME_LIMIT_S)
    return solver


__all__ = [
    "MIN_TIME_LIMIT_S",
    "OutOfTime",
    "SolveStatus",
    "check_deadline",
    "cp_model",
    "make_solver",
    "status_of",
    "time_left",
]
