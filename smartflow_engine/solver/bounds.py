"""Proven lower bounds on a proposal's weighted objective.

The full-window placement model has a weak relaxation (its bound is ~0 after seconds on 30-day
windows), so it cannot tell how far a proposal is from the optimum. Two bounds replace it, both
built on the exact one-day pricing programme of :mod:`.pricing`:

- :func:`day_decomposition_bound`: relax the only coupling between days (each group's task
  count). Every term but the load term is a sum of per-day pieces, and so is the load term once
  the total ``T`` of periods placed outside host blocks is fixed, so

      LB(T) = min over (n_d) with Σ n_d = T of  Σ_d [ c_d(n_d) + w_load · |fixed_d + n_d − mean_T| ]

  where ``c_d(n)`` is the exact least cost of day ``d``'s other terms with ``n`` free periods
  filled (the programme with zero duals) and a dynamic programme over days picks the split. The
  bound is the minimum over every possible ``T`` (guests only add cost).
- :func:`column_bound`: the Dantzig-Wolfe bound, which keeps the group counts: column
  generation over day patterns, branching on ``T`` (see :func:`.columns.search`). Much tighter
  (it met the best known solution on most 30-day benchmark windows).

Both are proven: the programmes are exact, and every Lagrangian bound of the column generation
is valid whatever its multipliers, so a bound is still valid when a budget cuts it short. They
are computed in floats, lowered by a margin for rounding and rounded up to the next achievable
value on the real weights (:class:`.objective.Proof`), so they hold for any weight.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._cpsat import OutOfTime
from .budget import DEFAULT_CALIBRATION, Calibration
from .columns import search
from .objective import Proof, resolve_weights
from .pricing import Pricer, day_decomposition_totals
from .problem import Placement, Problem


@dataclass(frozen=True)
class DayBound:
    """A lower bound on ``weighted_total`` for placements of ``slots`` periods in all."""

    value: float
    proven: bool  # always True: a valid bound (a weaker one where the time limit cut it)
    models: int  # one-day programmes solved (days that look the same share one)
    unproven: int  # free totals the time limit left with the weaker relaxed bound
    free_total: int  # the T (periods outside host blocks) at which the minimum is reached
    complete: bool = True  # every day's programme ran (else the value is -inf: no bound)


def day_decomposition_bound(
    problem: Problem,
    slots: int,
    weights: Mapping[str, float] | None = None,
    time_limit_s: float | None = None,
    *,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> DayBound:
    """A lower bound on the weighted objective of any placement of ``slots`` scope periods.

    Parameters
    ----------
    problem
        The window, built with ``by_subject=True`` (as ``propose_placement`` builds it).
    slots
        Periods placed in all (a proposal's ``placed_slots``, the proven maximum).
    time_limit_s
        Wall-clock limit, building included: the programme over days stops there and the free
        totals it did not reach get the weaker bound ``Σ_d min_n c_d(n)``; if even the days'
        data does not fit, the value is ``-inf``.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit_s is None else t0 + time_limit_s
    w = resolve_weights(weights)
    try:
        pricer = Pricer(problem, w, deadline, calibration=calibration)
        reps = len(pricer.days_of)
        totals = day_decomposition_totals(pricer, slots, deadline=deadline)
    except OutOfTime:
        return DayBound(-math.inf, True, 0, 0, -1, complete=False)
    if not totals:
        return DayBound(math.inf, True, reps, 0, -1)
    best_t = min(totals, key=lambda t: (totals[t], t))
    value = Proof(w, problem.num_days).lower(totals[best_t])
    return DayBound(value, True, reps, pricer.relaxed_totals, best_t)


@dataclass(frozen=True)
class ColumnBound:
    """The column-generation (Dantzig-Wolfe) bound, and the best solution found on the way."""

    value: float  # proven lower bound on weighted_total for placements of ``slots`` periods
    converged: bool  # every master that ran reached its LP optimum (the exact DW bound there)
    complete: bool  # every free total was settled: bounded above the best solution, or explored
    best: float  # the best solution's weighted objective (an upper bound)
    placements: list[Placement]
    explored: int  # free totals whose master ran
    totals: int  # free totals possible
    runtime_s: float


def column_bound(
    problem: Problem,
    slots: int,
    start: Sequence[Placement],
    weights: Mapping[str, float] | None = None,
    budget_s: float = 30.0,
    num_workers: int = 1,
    time_limit_s: float | None = None,
    *,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> ColumnBound:
    """The Dantzig-Wolfe bound on the weighted objective of any placement of ``slots`` periods.

    ``start`` is a complete placement of ``slots`` periods (e.g. a proposal): it seeds the
    search and is the first upper bound. ``budget_s`` bounds the work (estimated seconds);
    ``time_limit_s`` the wall clock, building included (the bound stays valid, only weaker).
    """
    t0 = time.perf_counter()
    res = search(
        problem,
        slots,
        start,
        weights,
        budget_s=budget_s,
        deadline=t0 + (3 * budget_s + 5.0 if time_limit_s is None else time_limit_s),
        num_workers=num_workers,
        calibration=calibration,
    )
    open_totals = [
        t for t, v in res.totals.items() if v < res.objective - 1e-6 and t not in res.explored
    ]
    complete = math.isfinite(res.bound) and not open_totals  # a cut search proves nothing
    return ColumnBound(
        res.bound,
        res.converged,
        complete,
        res.objective,
        res.placements,
        len(res.explored),
        len(res.totals),
        time.perf_counter() - t0,
    )


__all__ = ["ColumnBound", "DayBound", "column_bound", "day_decomposition_bound"]
