"""The restricted master problem of the column generation (see :mod:`.columns`).

For one free total ``T`` (periods placed outside host blocks) the master picks one pattern per
day so that the group counts and the level-1 total add up; with ``T`` fixed the mean day load is
a constant, so each pattern's load term ``|load_d − mean|`` is exact in its cost.

- Its LP relaxation is solved by GLOP; the duals price new patterns (:class:`.pricing.Pricer`).
  Every round gives a Lagrangian lower bound (the LP value only when pricing finds nothing),
  valid for any duals: ``Σ_g π_g c_g + μ·slots + ν·T + Σ_d min_p rc_dp``.
- :func:`lagrange_totals` turns one round's pricing tables into a bound at every other free total.
- The integer master over the generated patterns (CP-SAT, hinted with the start solution's own
  patterns, which are always among the columns) gives a placement never worse than the start.
  It scales the weighted points by ``S · D`` with the integer scale of
  :func:`.objective.integer_weights` (a heuristic: its answer is re-evaluated exactly and only
  kept when better).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._cpsat import SolveStatus, check_deadline, cp_model, make_solver, status_of
from .objective import float_margin, integer_weights, model_magnitude
from .pricing import INF, Pattern, Pricer, pattern_value


class Master:
    """The master problem of one free total ``T``: its LP, its columns, its bound."""

    def __init__(
        self, pricer: Pricer, slots: int, free_total: int, pool: Sequence[Pattern]
    ) -> None:
        from ortools.linear_solver import pywraplp

        self.pywraplp = pywraplp
        self.pricer = pricer
        p = pricer.p
        self.slots, self.free_total = slots, free_total
        num_days = p.num_days
        self.fixed = np.count_nonzero(p.owner, axis=1).astype(float)
        mean = (float(self.fixed.sum()) + free_total) / num_days
        width = p.slots_per_day + 1
        w_load = pricer.w["load_imbalance"]
        self.load_cost = w_load * np.abs(self.fixed[:, None] + np.arange(width)[None, :] - mean)
        self.counts = np.array([g.count for g in p.groups], dtype=float)
        self.columns: list[Pattern] = []
        self.vars: list[Any] = []
        self.support: list[Pattern] = []  # columns the last LP solution uses
        self.seen: set[tuple[int, tuple[tuple[str, int, int, int], ...]]] = set()
        lp = pywraplp.Solver.CreateSolver("GLOP")
        # Column generation LPs are highly degenerate; the strong guarantee makes GLOP give up
        # (ABNORMAL) on them. Slightly imprecise duals are harmless: any multipliers give a
        # valid Lagrangian bound.
        lp.SetSolverSpecificParametersAsString("provide_strong_optimal_guarantee: false")
        self.lp = lp
        self.conv = [lp.Add(lp.Sum([]) == 1) for _ in range(num_days)]
        self.cnt = [lp.Add(lp.Sum([]) <= float(c)) for c in self.counts]
        self.total = lp.Add(lp.Sum([]) == float(slots))
        self.free_row = lp.Add(lp.Sum([]) == float(free_total))
        self.objective = lp.Objective()
        big = 1e3 * max(1.0, *pricer.w.values())
        # Artificial columns keep the LP feasible at any free total (a start placing another
        # total gives no feasible combination at first); their cost drives them out.
        for row, sign in (
            (self.total, 1.0),
            (self.total, -1.0),
            (self.free_row, 1.0),
            (self.free_row, -1.0),
        ):
            var = lp.NumVar(0.0, lp.infinity(), "")
            row.SetCoefficient(var, sign)
            self.objective.SetCoefficient(var, big)
        self.objective.SetMinimization()
        for d in range(1, num_days + 1):
            self.add(pricer.make(d, ()))
        for pat in pool:
            self.add(pat)
        self.bound = -INF
        self.lp_value = INF
        self.converged = False
        self.rounds = 0
        self.duals: tuple[np.ndarray, float] | None = None  # (π, μ) of the last round

    def add(self, pat: Pattern) -> bool:
        key = (pat.day, pat.items)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.columns.append(pat)
        cal = self.pricer.calibration
        self.pricer.ops += round(cal.build_cost / cal.op_cost)
        var = self.lp.NumVar(0.0, self.lp.infinity(), "")
        self.vars.append(var)
        self.conv[pat.day - 1].SetCoefficient(var, 1.0)
        for gi, c in pat.counts:
            self.cnt[gi].SetCoefficient(var, float(c))
        self.total.SetCoefficient(var, float(pat.periods))
        self.free_row.SetCoefficient(var, float(pat.free))
        self.objective.SetCoefficient(var, self.cost(pat))
        return True

    def cost(self, pat: Pattern) -> float:
        return pat.cost + float(self.load_cost[pat.day - 1, pat.free])

    def round(self, deadline: float | None = None) -> tuple[bool, float]:
        """Solve the LP, price every day type, add the improving patterns.

        Raises :class:`._cpsat.OutOfTime` when the pricing passes ``deadline`` (the round's
        bound is then not used).

        Returns whether it converged (nothing to add, or the bound met the LP value) and the
        estimated seconds of the LP solve (the pricing counts in ``pricer.ops``).
        """
        pricer = self.pricer
        self.rounds += 1
        work = self.pricer.calibration.lp_column_cost * len(self.columns)
        if self.lp.Solve() != self.pywraplp.Solver.OPTIMAL:  # not expected (artificials)
            self.converged = False
            return True, work
        self.lp_value = self.objective.Value()
        self.support = [
            pat
            for pat, var in zip(self.columns, self.vars, strict=True)
            if var.solution_value() > 1e-9
        ]
        pi = np.minimum(np.array([c.dual_value() for c in self.cnt]), 0.0)
        mu, nu = self.total.dual_value(), self.free_row.dual_value()
        sigma = np.array([c.dual_value() for c in self.conv])
        # Lagrangian bound: valid for any multipliers of this sign pattern, since the pricing
        # minimises over (a superset of) every day's fillings.
        lagrange = float(pi @ self.counts) + mu * self.slots + nu * self.free_total
        magnitude = (
            float(np.abs(pi) @ self.counts) + abs(mu) * self.slots + abs(nu) * self.free_total
        )
        new = 0
        width = self.load_cost.shape[1]
        for rep, days in pricer.days_of.items():
            check_deadline(deadline)
            day_cost = self.load_cost[days[0] - 1] - nu * np.arange(width)
            below = float(sigma[[d - 1 for d in days]].max()) - 1e-6
            value, patterns = pricer.price(
                rep, pi, mu, day_cost, below, pricer.calibration.extra_columns
            )
            lagrange += value * len(days)
            magnitude += (pricer.magnitude + abs(value)) * len(days)
            for d in days:
                for pat in patterns:
                    moved = pricer.move(pat, d)
                    rc = (
                        self.cost(moved)
                        - float(sum(pi[gi] * c for gi, c in pat.counts))
                        - mu * pat.periods
                        - nu * pat.free
                        - sigma[d - 1]
                    )
                    if rc < -1e-6 and self.add(moved):
                        new += 1
        self.bound = max(self.bound, lagrange - float_margin(magnitude, pricer.summands))
        self.duals = (pi, mu)
        self.converged = new == 0 or self.lp_value - self.bound <= 1e-6 * max(
            1.0, abs(self.lp_value)
        )
        return self.converged, work

    def integer(
        self,
        start: Sequence[Pattern],
        upper: float,
        deterministic_time: float,
        wall_s: float,
        num_workers: int,
        seed: int,
    ) -> tuple[list[Pattern] | None, float, float]:
        """The best choice of one generated pattern per day at this free total (CP-SAT), if
        it beats ``upper``.

        With the free total fixed the mean day load is a constant, so each pattern's load term
        is exact in its cost: a pure 0-1 programme whose relaxation is the master LP. Reduced
        cost fixing keeps it small: at the LP optimum every integer solution costs at least
        the LP value plus the reduced costs of its columns, so a column whose reduced cost
        exceeds ``upper − LP`` is in no solution better than ``upper`` and is left out.
        Returns the patterns (or None), their objective and the estimated seconds spent.
        """
        p = self.pricer.p
        cal = self.pricer.calibration
        work = cal.lp_column_cost * len(self.columns)
        if self.lp.Solve() != self.pywraplp.Solver.OPTIMAL:
            return None, INF, work
        slack = upper - self.objective.Value()
        if slack <= 1e-9:
            return None, INF, work  # nothing over these columns beats ``upper``
        start_keys = {(pat.day, pat.items) for pat in start}
        # Per day: the start's pattern and the columns of least reduced cost within the slack
        # (the cap keeps the model small; the columns it drops are the least promising).
        per_day: dict[int, list[tuple[float, int, Pattern]]] = defaultdict(list)
        for j, (pat, var) in enumerate(zip(self.columns, self.vars, strict=True)):
            rc = var.reduced_cost()
            if (pat.day, pat.items) in start_keys:
                per_day[pat.day].append((-INF, j, pat))
            elif rc <= slack + 1e-9:
                per_day[pat.day].append((rc, j, pat))
        if len(per_day) < p.num_days:
            return None, INF, work
        kept = [
            pat
            for d in sorted(per_day)
            for _, _, pat in sorted(per_day[d], key=lambda e: (e[0], e[1]))[: cal.integer_per_day]
        ]
        lin = cp_model().LinearExpr
        m = cp_model().CpModel()
        num_days = p.num_days
        unit = (
            integer_weights(self.pricer.w, model_magnitude(num_days, p.slots_per_day)).scale
            * num_days
        )
        variables = [m.new_bool_var(f"pattern{i}_d{pat.day}") for i, pat in enumerate(kept)]
        by_day: dict[int, list[Any]] = defaultdict(list)
        by_group: dict[int, tuple[list[Any], list[int]]] = defaultdict(lambda: ([], []))
        for pat, v in zip(kept, variables, strict=True):
            by_day[pat.day].append(v)
            for gi, c in pat.counts:
                by_group[gi][0].append(v)
                by_group[gi][1].append(c)
        for vs in by_day.values():
            m.add_exactly_one(vs)
        for gi, (vs, cs) in by_group.items():
            m.add(lin.weighted_sum(vs, cs) <= p.groups[gi].count)
        m.add(lin.weighted_sum(variables, [pat.periods for pat in kept]) == self.slots)
        m.add(lin.weighted_sum(variables, [pat.free for pat in kept]) == self.free_total)
        m.minimize(lin.weighted_sum(variables, [round(unit * self.cost(pat)) for pat in kept]))
        if sum(pat.free for pat in start) == self.free_total:
            for pat, v in zip(kept, variables, strict=True):
                m.add_hint(v, 1 if (pat.day, pat.items) in start_keys else 0)
        solver = make_solver(
            wall_s, num_workers, seed=seed, exact=False, deterministic_time=deterministic_time
        )
        status = status_of(solver.solve(m))
        work += cal.wall_per_det * solver.deterministic_time + cal.build_cost * len(kept)
        if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
            return None, INF, work
        chosen = sorted(
            (pat for pat, v in zip(kept, variables, strict=True) if solver.value(v)),
            key=lambda pat: pat.day,
        )
        return chosen, self.value(chosen), work

    def value(self, patterns: Sequence[Pattern]) -> float:
        return pattern_value(self.pricer, patterns)


def lagrange_totals(
    pricer: Pricer, master: Master, totals: Sequence[int], max_ops: int = 2**62
) -> dict[int, float]:
    """Lagrangian bounds at every free total from the last pricing of ``master``.

    ``max_ops`` caps the kernel's work: the totals with the lowest bounds so far come first,
    the ones left out are not returned.

    The pricing tables hold, per day type and number of free periods ``n``, the least
    ``cost − π·a − μ·s`` of a filling. Only the load term and the free-total multiplier ``ν``
    depend on the free total ``T``, so for any ``T``

        L(T, ν) = π·c + μ·slots + ν·T + Σ_types days · min_n (table[n] + load_T[n] − ν·n)

    is a valid lower bound for every ``ν``; it is concave in ``ν`` and maximised by ternary
    search (any ``ν`` it stops at is still valid). One round at one total bounds all of them.
    """
    if master.duals is None:
        return {}
    pi, mu = master.duals
    p = pricer.p
    num_days = p.num_days
    fixed = master.fixed
    w_load = pricer.w["load_imbalance"]
    reps = list(pricer.days_of)
    width = p.slots_per_day + 1
    table = np.full((len(reps), width), INF)
    for i, rep in enumerate(reps):
        row = pricer.tables[rep]
        table[i, : row.shape[0]] = row
    days = np.array([len(pricer.days_of[rep]) for rep in reps], dtype=float)
    rep_fixed = np.array([fixed[pricer.reps[rep] - 1] for rep in reps])
    base = float(pi @ master.counts) + mu * master.slots
    if not totals:
        return {}
    from ._kernels import lagrange_kernel

    t_arr = np.array(list(totals), dtype=np.int64)
    best = lagrange_kernel(
        table,
        days,
        rep_fixed.astype(float),
        float(fixed.sum()),
        num_days,
        float(w_load),
        base,
        t_arr,
        max_ops,
    )
    pricer.ops += 10 + len(t_arr) * len(reps) // 2
    # Magnitude of the numbers summed: the base, ν·T and the day terms, with |ν| at most the
    # span the kernel searches (its values' range + 1 around 0).
    finite = np.abs(table[np.isfinite(table)])
    big = float(finite.max(initial=0.0)) + w_load * (width + float(fixed.max(initial=0.0)) + width)
    scale = float(np.abs(pi) @ master.counts) + abs(mu) * master.slots
    out: dict[int, float] = {}
    for t, v in zip(t_arr.tolist(), best.tolist(), strict=True):
        if math.isfinite(v):
            nu_max = 2 * big + 1.0
            magnitude = scale + nu_max * (t + num_days * width) + num_days * big
            out[int(t)] = float(v) - float_margin(magnitude, pricer.summands)
    return out


__all__ = ["Master", "lagrange_totals"]
