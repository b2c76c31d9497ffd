"""A proven lower bound on a proposal's weighted objective, by day decomposition.

The full-window placement model has a weak relaxation (its bound is ~0 after seconds on 30-day
windows), so it cannot tell how far a proposal is from the optimum. Every soft term except the
load term is a sum of per-day pieces, and the load term is a sum of per-day pieces once the
window's total load is fixed. Relaxing the only coupling between days (each group's task count)
gives, for a fixed total ``T`` of periods placed outside host blocks,

    LB(T) = min over (n_d) with Σ n_d = T of  Σ_d [ c_d(n_d) + w_load · |fixed_d + n_d − mean_T| ]

where ``c_d(n)`` is the exact minimum of the other weighted terms on day ``d`` when ``n`` free
periods are placed there (one small CP-SAT model per day and ``n``), and ``mean_T`` is the mean day
load. The minimum over ``n_d`` is a dynamic programme over days. Guests (tasks embedded in a host
block) add no load, no isolated period and no switch, only non-negative category, lateness and
time-of-day costs, so they are left out of ``c_d``; the bound takes the minimum of ``LB(T)`` over
every ``T = slots − G`` with ``G`` between 0 and the most periods the host blocks can take.

The result is proven when every per-day model was solved to optimality (or proven infeasible);
otherwise CP-SAT's own bound of that model is used, which keeps the total a valid lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._cpsat import SolveStatus, make_solver, status_of
from .objective import lateness, resolve_weights
from .placement import SCALE, _SubModel, _Window
from .problem import Problem


@dataclass(frozen=True)
class DayBound:
    """A lower bound on ``weighted_total`` for placements of ``slots`` periods in all."""

    value: float
    proven: bool  # every per-day model solved to optimality or proven infeasible
    models: int  # per-day models solved
    unproven: int  # per-day models stopped by their limit (their CP-SAT bound was used)
    free_total: int  # the T (periods outside host blocks) at which the minimum is reached


class _DayModel(_SubModel):
    """The placement model of one day without the load term (the programme adds it exactly)."""

    def _add_load_imbalance(self) -> None:
        return None


def day_decomposition_bound(
    problem: Problem,
    slots: int,
    weights: dict[str, float] | None = None,
    time_limit_s: float = 5.0,
    num_workers: int = 1,
) -> DayBound:
    """A lower bound on the weighted objective of any placement of ``slots`` scope periods.

    Parameters
    ----------
    problem
        The window, built with ``by_subject=True`` (as ``propose_placement`` builds it).
    slots
        Periods placed in all (a proposal's ``placed_slots``, the proven maximum).
    time_limit_s
        Limit of each per-day model (they are small: one day's free runs).
    """
    w = resolve_weights(weights)
    num_days = problem.num_days
    day_weights = dict(w, load_imbalance=0.0)
    win = _Window.build(problem, day_weights, 0)
    counts = [g.count for g in problem.groups]
    free_by_day = np.count_nonzero(problem.owner == 0, axis=1)
    max_free = min(slots, int(free_by_day.sum()))
    # cost[d, n]: the exact minimum (or a proven lower bound) of the day's other terms. Days
    # that look the same to the model (periods, fixed subjects and counts, allowed groups) share
    # one row: weekly courses make most days repeat.
    cost = np.full((num_days, max_free + 1), math.inf)
    rows: dict[tuple[object, ...], np.ndarray] = {}
    models = unproven = 0
    for day in range(1, num_days + 1):
        key = _signature(problem, day)
        if key in rows:
            cost[day - 1] = rows[key]
            continue
        for n in range(min(int(free_by_day[day - 1]), max_free) + 1):
            sub = _DayModel(win, [day], counts, n, free_slots=n)
            solver = make_solver(time_limit_s, num_workers, exact=False)
            status = status_of(solver.solve(sub.model))
            models += 1
            if status == SolveStatus.INFEASIBLE:
                continue
            if status != SolveStatus.OPTIMAL:
                unproven += 1
            cost[day - 1, n] = solver.best_objective_bound / (SCALE * num_days)
        rows[key] = cost[day - 1].copy()
    guest_max = min(slots, sum(max((g.duration for g in problem.groups
                                    if problem.starts(g, b)), default=0)
                               for b in problem.hosts))
    fixed = np.count_nonzero(problem.owner, axis=1).astype(float)
    best, best_t = math.inf, -1
    for guest in range(guest_max + 1):
        total = slots - guest
        if total > max_free:
            continue
        value = _programme(cost, fixed, total, w["load_imbalance"])
        if value < best:
            best, best_t = value, total
    return DayBound(best, unproven == 0 and math.isfinite(best), models, unproven, best_t)


def _signature(problem: Problem, day: int) -> tuple[object, ...]:
    """Everything the one-day model of ``day`` depends on, apart from the day number itself."""
    fixed = tuple(sorted((k, n) for (k, d), n in problem.fixed_counts.items() if d == day))
    allowed = tuple((g.rule.allows_day(day, problem.num_days), lateness(g.rule, day))
                    for g in problem.groups)
    return (tuple(problem.subjects[day - 1].tolist()), fixed, allowed)


def _programme(cost: np.ndarray, fixed: np.ndarray, total: int, w_load: float) -> float:
    """min Σ_d cost[d, n_d] + w_load · |fixed_d + n_d − mean| subject to Σ_d n_d = total."""
    num_days, width = cost.shape
    mean = (fixed.sum() + total) / num_days
    n = np.arange(width)
    best = np.full(total + 1, math.inf)
    best[0] = 0.0
    for d in range(num_days):
        day = cost[d] + w_load * np.abs(fixed[d] + n - mean)
        nxt = np.full(total + 1, math.inf)
        for k in range(min(width, total + 1)):
            if math.isfinite(day[k]):
                np.minimum(nxt[k:], best[: total + 1 - k] + day[k], out=nxt[k:])
        best = nxt
    return float(best[total])


__all__ = ["DayBound", "day_decomposition_bound"]
