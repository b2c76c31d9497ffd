"""Column generation over day patterns: a tight proven bound and near-optimal proposals.

The full-window placement model has a weak relaxation (its bound is ~0 on 30-day windows). Every
soft term but the load term is a sum of per-day pieces, so the window decomposes by day
(Dantzig-Wolfe): a *pattern* is one day's complete filling, priced exactly by the one-day
programme of :mod:`.pricing`, and the master problem (:mod:`.master`) picks one pattern per day
so that the group counts and the level-1 total add up, with the load term ``Σ_d |load_d − mean|``
kept in the master as linear deviations (the mean is linear in the patterns' loads).

This module is the search that drives them (:func:`search`): it branches on the free total
(periods placed outside host blocks), taking totals best bound first; each total's master runs
rounds of LP, pricing and Lagrangian bounds (one round bounds every total, see
:func:`.master.lagrange_totals`), then its integer master; totals the master never reached keep
the day-decomposition bound (:func:`.pricing.day_decomposition_totals`). It is bounded by a
deterministic work estimate (see :mod:`.budget`), the wall clock being a safety net.

Objective units are the weighted points of :mod:`.objective`. Proofs are exact for any weight:
every Lagrangian and decomposition bound is computed in floats and lowered by
:func:`.objective.float_margin` of the magnitude of the numbers it sums before it is stored, the
final bound is rounded up to the next achievable value by :meth:`.objective.Proof.lower`, and
``optimal`` is decided by :meth:`.objective.Proof.meets` in exact arithmetic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ._cpsat import OutOfTime
from .budget import DEFAULT_CALIBRATION, Calibration
from .master import Master, lagrange_totals
from .objective import Proof, evaluate, resolve_weights
from .pricing import INF, Pattern, Pricer, day_decomposition_totals, pattern_value
from .problem import Placement, Problem


@dataclass
class ColumnSearch:
    """What :func:`search` found.

    ``bound`` is a proven lower bound on the weighted objective of every placement of ``slots``
    periods, whatever its free total: the minimum over the free totals of the best bound known
    for each (the master's Lagrangian bound where it ran, the day-decomposition bound
    elsewhere). ``placements`` is the best solution found (never worse than the start);
    ``optimal`` says its objective meets the bound.
    """

    placements: list[Placement]
    objective: float
    bound: float
    optimal: bool
    start_objective: float
    totals: dict[int, float]  # free total -> its lower bound
    explored: list[int]  # free totals whose master ran, in order
    converged: bool  # every master that ran converged (its bound is the exact LP bound)
    rounds: int = 0
    columns: int = 0
    work_s: float = 0.0
    runtime_s: float = 0.0
    # (seconds, best objective, bound) after every round and every integer master
    history: list[tuple[float, float, float]] = field(default_factory=list)
    abandoned: bool = False  # the budget could not pay for the rounds a master needs


def search(
    problem: Problem,
    slots: int,
    start: Sequence[Placement],
    weights: Mapping[str, float] | None = None,
    *,
    budget_s: float,
    deadline: float | None = None,
    num_workers: int = 1,
    seed: int = 0,
    start_value: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> ColumnSearch:
    """Branch on the free total, solve each total's master by column generation, keep the best.

    Free totals are taken best bound first (the start's own total first); the search ends when
    the best solution meets every remaining total's bound (proven optimal) or the budget is
    spent. ``budget_s`` is in estimated seconds of deterministic work, so the result does not
    depend on the machine's load; ``deadline`` (``time.perf_counter()`` value) is a safety net.

    Parameters
    ----------
    problem
        Built with ``by_subject=True``.
    slots
        Periods placed in all (the proven maximum); ``start`` places exactly that many.
    start_value
        The start's weighted objective when the caller knows it (saves an evaluation when the
        deadline leaves no time for the search).
    calibration
        The solver's figures (:class:`.budget.Calibration`): the work costs of the pricing, the
        masters and the integer solves, the integer share, the rounds a first master needs.
    """
    t0 = time.perf_counter()
    if deadline is None:
        deadline = t0 + 10 * budget_s + 1.0
    w = resolve_weights(weights)
    cal = calibration
    try:
        pricer = Pricer(problem, w, deadline - 0.01, calibration=cal)
    except OutOfTime:  # the window's day data alone does not fit the time limit
        value = (
            evaluate(problem, start, w)["weighted_total"] if start_value is None else start_value
        )
        return ColumnSearch(
            placements=list(start),
            objective=value,
            bound=-INF,
            optimal=False,
            start_objective=value,
            totals={},
            explored=[],
            converged=False,
            runtime_s=time.perf_counter() - t0,
            abandoned=True,
        )
    start_patterns = pricer.from_placements(start)
    start_total = sum(pat.free for pat in start_patterns)
    best_patterns = list(start_patterns)
    best = start_value = pattern_value(pricer, best_patterns)
    try:
        totals = day_decomposition_totals(
            pricer,
            slots,
            max_ops=int(cal.dd_budget_factor * budget_s * cal.totals_ops_per_s),
            deadline=deadline - 0.01,
        )
    except OutOfTime:
        totals = {}
    totals.setdefault(start_total, -INF)  # not expected: the start's total is always covered
    explored: list[int] = []
    solver_work = 0.0  # estimated seconds of LP solves and integer masters

    def work() -> float:
        return cal.op_cost * pricer.ops + solver_work

    history: list[tuple[float, float, float]] = []
    pool: list[Pattern] = list(start_patterns)
    rounds = 0
    converged = True
    abandoned = False

    def left() -> bool:
        return work() < budget_s and time.perf_counter() < deadline - 0.01

    # A free total is settled when its bound is within ``tol`` of the best: every objective is
    # a multiple of 1 / unit (see .objective.Proof), so a bound above best − 1 / unit rounds up
    # to the best. Settling only ends the search of a total; the bound returned is the minimum
    # over every total, whatever was settled.
    proof = Proof(w, problem.num_days)
    tol = max(1e-9 * abs(best), 0.5 / proof.unit)
    try:
        while left():
            candidates = [t for t in totals if t not in explored and totals[t] < best - tol]
            if not candidates:
                break
            total = (
                start_total
                if start_total in candidates
                else min(candidates, key=lambda t: (totals[t], abs(t - start_total)))
            )
            explored.append(total)
            master = Master(pricer, slots, total, pool)
            lp_until = work() + (1 - cal.integer_share) * (budget_s - work())
            while work() < lp_until and time.perf_counter() < deadline - 0.01:
                before = work()
                # A round started before the deadline may finish a little after it (its bound
                # is what the search is for); a longer one is cut (1000-day windows).
                done, step = master.round(deadline + cal.round_grace_s)
                solver_work += step
                if (
                    explored == [total]
                    and not done
                    and master.rounds <= 3
                    and (work() - before) * (cal.min_rounds - master.rounds) > lp_until - work()
                ):
                    # The rounds a first master needs (costlier as columns accumulate) do not fit
                    # the budget: leave it to the caller's other searches rather than spend it on
                    # an unfinished relaxation.
                    abandoned = True
                    break
                open_totals = [t for t in totals if t != total and totals[t] < best - tol]
                cap = int(
                    max(0.0, min(budget_s - work(), deadline - 0.01 - time.perf_counter()))
                    * cal.totals_ops_per_s
                )
                for t, value in lagrange_totals(pricer, master, open_totals, cap).items():
                    totals[t] = max(totals[t], value)
                if master.bound > -INF:
                    totals[total] = max(totals[total], master.bound)
                history.append((time.perf_counter() - t0, best, min(totals.values())))
                if done:
                    break
            rounds += master.rounds
            converged = converged and master.converged
            if abandoned:
                break
            if master.rounds and master.bound > -INF:
                totals[total] = max(totals[total], master.bound)
            if totals[total] < best - tol and left():
                det = max(
                    0.01, (budget_s - work()) / cal.wall_per_det * (0.5 if len(totals) > 1 else 1)
                )
                chosen, value, step = master.integer(
                    best_patterns,
                    best,
                    det,
                    max(0.01, deadline - time.perf_counter()),
                    num_workers,
                    seed,
                )
                solver_work += step
                if chosen is not None and value < best - 1e-9:
                    best, best_patterns = value, chosen
            pool = _useful(master, best_patterns)
            history.append((time.perf_counter() - t0, best, min(totals.values())))
    except OutOfTime:  # the wall clock cut a pricing round: what is stored stays valid
        abandoned, converged = True, False
    bound = proof.lower(min(totals.values()))
    placements = _to_placements(problem, best_patterns, start)
    optimal = math.isfinite(bound) and proof.meets(evaluate(problem, placements, w), bound)
    return ColumnSearch(
        placements=placements,
        objective=best,
        bound=bound,
        optimal=optimal,
        start_objective=start_value,
        totals=totals,
        explored=explored,
        converged=converged,
        rounds=rounds,
        columns=len(pool),
        work_s=work(),
        runtime_s=time.perf_counter() - t0,
        history=history,
        abandoned=abandoned,
    )


def _useful(master: Master, best: Sequence[Pattern]) -> list[Pattern]:
    """Columns worth carrying to the next free total: the best solution's and every column the
    last LP used."""
    return list(best) + master.support


def _to_placements(
    problem: Problem, patterns: Sequence[Pattern], keep: Sequence[Placement] = ()
) -> list[Placement]:
    """Task ids for the patterns' places, keeping a task where it already is when a place of
    its group is reused (so a proposal that changes little reads as little change)."""
    group_of = problem.group_of()
    pools = {gi: sorted(g.task_ids) for gi, g in enumerate(problem.groups)}
    where = {
        (gi, pl.day, pl.slot_start, pl.embed_host): pl.task_id
        for pl in keep
        for gi in [group_of[pl.task_id]]
    }
    wanted: list[tuple[int, int, int, int | None]] = []
    for pat in patterns:
        for kind, idx, gi, s in pat.items:
            host = problem.hosts[idx].host if kind == "h" else None
            wanted.append((gi, pat.day, s, host))
    out: list[Placement] = []
    rest = []
    for gi, day, s, host in wanted:
        tid = where.get((gi, day, s, host))
        if tid is not None and tid in pools[gi]:
            pools[gi].remove(tid)
            out.append(Placement(tid, day, s, s + problem.groups[gi].duration - 1, host))
        else:
            rest.append((gi, day, s, host))
    for gi, day, s, host in rest:
        tid = pools[gi].pop(0)
        out.append(Placement(tid, day, s, s + problem.groups[gi].duration - 1, host))
    return sorted(out, key=lambda pl: (pl.day, pl.slot_start, pl.task_id))


__all__ = ["ColumnSearch", "search"]
