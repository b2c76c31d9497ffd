"""Rough placement: a lexicographic CP-SAT proposal for the pending tasks.

Level 1 places the most periods: exactly the maximum of the counting model (:mod:`.counting`)
when it is proven. Level 2 minimises the weighted soft terms of :mod:`.objective` with that total
held fixed. Every term is a sum over days, so the model is built for a *set of days*: the whole
window for short windows, and, for long ones, a seeded large-neighbourhood search that re-solves a
few days at a time (the days' tasks and the unplaced ones may be re-placed on them) and keeps
every improvement, which changes the global objective by exactly the local change.

Warm start: the load/category-aware greedy (:func:`.baselines.balanced_greedy`) when it reaches
the level-1 total, else the counting model's witness, then polished by fast local moves
(:mod:`.local_search`); the result is never worse than that start. Deterministic for a given
seed and worker count: every stage is bounded by a deterministic work measure (local-move
attempts and row scans, CP-SAT deterministic time, variables built), converted to estimated
seconds and capped at WORK_SHARE of the limit; the wall-clock limit is only a safety net.

The wall clock holds the whole call, model building included (issue 12): the greedies, the
pricing set-up, the decomposition programme and every model build check the deadline
(:class:`._cpsat.OutOfTime`) and the call answers with the best complete placement it has, its
status saying what is proven (``unknown`` when even the maximum is not). Stages get at least
:data:`._cpsat.MIN_WORK_S`, and the first packing order and a started pricing round may end
shortly after the deadline; the call stays within its limit + 0.5 s on windows up to 1000 days
of 24 periods (``benchmarks/results_solver.md``). One-time costs (importing OR-Tools, loading
the compiled kernels) are paid before the clock starts.

Bounds and ``optimal`` are exact for any weight (see :mod:`.objective`): the CP-SAT models use
integer weights scaled exactly or rounded down, and optimality is decided in exact arithmetic.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from ..state import ScheduleState, runs
from ._cpsat import (
    DETERMINISTIC_SHARE,
    MIN_WORK_S,
    OutOfTime,
    SolveStatus,
    check_deadline,
    cp_model,
    make_solver,
    status_of,
)
from .baselines import balanced_greedy
from .columns import ColumnSearch, search
from .counting import max_placeable
from .health_floor import health_floor
from .health_search import (
    HEALTH_SHARE,
    prefer_lexicographic,
    search_health,
    unplaced_critical,
)
from .local_search import improve
from .objective import (
    TERM_NAMES,
    Proof,
    clustered_subjects,
    evaluate,
    guest_start,
    integer_weights,
    lateness,
    model_magnitude,
    off_preference,
    preferred_slots,
    resolve_weights,
)
from .problem import Bin, Placement, Problem, build_problem
from .progress import report

FULL_MODEL_MAX_DAYS = 14  # longer windows are improved by the day-window neighbourhood search
LNS_DAYS = 2  # days re-solved per neighbourhood (two random blocks of LNS_DAYS // 2 days)
LNS_STEP = 0.03  # deterministic time per neighbourhood: small ones solve to optimality fast
# Estimated seconds per neighbourhood (calibrated on the 2-core CI machine, 120-day windows):
# LNS_SOLVE_COST per solve call (set-up and presolve, which deterministic time barely counts),
# WALL_PER_DET per unit of CP-SAT deterministic time, LNS_BUILD_COST per variable built in Python.
LNS_SOLVE_COST = 0.010
WALL_PER_DET = 1.5
LNS_BUILD_COST = 4e-5

# Work budget. Every stage is bounded by a deterministic work measure, converted to estimated
# seconds of the 2-core CI machine; the wall clock (time_limit_s) is only a safety net. The total
# estimate is WORK_SHARE of the limit, so the wall clock decides only on a machine more than
# 1 / WORK_SHARE times slower than the calibration. No share keeps a loaded machine out (on a
# fresh 2-core machine the estimates ran ~1.5x short of the wall time, and a competing busy
# thread slowed the pure-Python stages 2-7x), so determinism for a seed is promised only for a
# proposal the wall clock did not cut: it says so (``wall_limited``), and a caller that needs
# the same answer everywhere fixes the work (``work_limit_s``) under a generous wall limit.
WORK_SHARE = 0.4
PRE_LOCAL_SHARE = 0.05  # of the limit for the first burst of local moves
COLUMN_SHARE = 0.35  # of the limit for the column generation (see .columns)
LOCAL_SHARE = 0.35  # share of the limit for the local moves (measured: more effective per
# second than the neighbourhood search, which gets what they leave)
LOCAL_STALL = 0.4  # the local moves stop after this share of their budget without a new best
# The full-window model gets a fixed deterministic budget: measured wall / deterministic time
# of 0.7-1.9 on 13-day windows (plus set-up), so the wall clock stays out by a factor of 3.
FULL_MODEL_DET_SHARE = 0.1


def _trace(iteration: int, spent: float, now: float) -> None:
    """Hook for calibration runs (benchmarks patch it); does nothing."""


@dataclass(frozen=True)
class Proposal:
    """A rough schedule for the scope tasks (the tools render it; apply_proposal applies it).

    ``status``: ``optimal`` (both levels proven: the most periods, and ``weighted_total``
    meets the proven ``bound``), ``feasible`` (the most periods are proven placed; the soft
    terms are within ``bound`` of optimal, not proven optimal) or ``unknown`` (the maximum
    itself is not proven). ``objective`` holds each soft term, ``weighted_total``, ``placed_slots`` and
    ``unplaced_slots``; ``start_objective`` the same for the warm start.
    """

    status: str
    placements: list[Placement]
    unplaced: list[int]
    objective: dict[str, float]
    start_objective: dict[str, float]
    start: str  # "greedy", "greedy+repair" or "witness"
    max_slots: int | None  # the proven maximum of placeable periods
    bound: float | None  # proven lower bound on weighted_total (placements of max_slots)
    weights: dict[str, float] = field(default_factory=dict)
    runtime_s: float = 0.0
    seed: int = 0
    iterations: int = 0
    local_moves: int = 0  # improving moves of the local search
    columns_explored: int = 0  # free totals whose pattern master ran (see .columns)
    # Issue 10: analyze_health's (critical, warning) on the applied proposal, at ``threshold``;
    # the close stage (see .health_search) minimises them after the placed periods.
    critical: int | None = None
    warning: int | None = None
    threshold: str = "normal"
    start_health: tuple[int, int] | None = None  # (critical, warning) before the close stage
    # True when the wall-clock safety net may have cut a stage (a slow or overloaded machine):
    # the same seed then need not give the same proposal. False: every stage stopped on its
    # deterministic work budget, so the proposal is the one this seed always gives.
    wall_limited: bool = False


# ---------------------------------------------------------------------------------- the model
class _Lin:
    """A linear expression kept as data, so hint values can be computed for auxiliaries."""

    __slots__ = ("const", "terms")

    def __init__(self, terms: Sequence[tuple[Any, int]] = (), const: int = 0) -> None:
        self.terms = list(terms)
        self.const = const

    def expr(self) -> Any:
        lin = cp_model().LinearExpr
        return lin.weighted_sum([v for v, _ in self.terms], [c for _, c in self.terms]) + \
            self.const

    def value(self, values: Mapping[int, int]) -> int:
        return self.const + sum(c * values[v.index] for v, c in self.terms)


@dataclass
class _Window:
    """What every sub-model of one proposal shares (precomputed once)."""

    problem: Problem
    weights: dict[str, int]  # integer weights: floor(scale · w) (see .objective)
    scale: int
    exact: bool  # weights == scale · w: the model's objective is the real one, scaled
    total_load: int  # Σ day loads of the start solution (kept by every neighbourhood)
    fixed_load: np.ndarray
    runs_by_day: dict[int, list[int]]
    hosts_by_day: dict[int, list[int]]
    cluster: frozenset[str]
    scope_subjects: frozenset[str]
    prefs: dict[int, frozenset[int] | None]  # group -> preferred periods
    host_start: dict[tuple[int, int], int]  # (host idx, group) -> start a guest takes
    deadline: float | None = None  # building a model past it raises OutOfTime

    @classmethod
    def build(cls, problem: Problem, weights: dict[str, float], free_slots: int,
              extra: Sequence[float] = (), deadline: float | None = None) -> _Window:
        """``free_slots``: periods the start solution places outside host blocks; ``extra``:
        other coefficients the integer scale should cover (see .objective.integer_weights).
        Building this and every model of it raises :class:`._cpsat.OutOfTime` past
        ``deadline``."""
        runs_by_day, hosts_by_day = problem.bins_by_day()
        prefs = {gi: preferred_slots(problem, g.rule) for gi, g in enumerate(problem.groups)}
        host_start: dict[tuple[int, int], int] = {}
        for hi, b in enumerate(problem.hosts):
            check_deadline(deadline)
            for gi, g in enumerate(problem.groups):
                starts = problem.starts(g, b)
                if starts:
                    host_start[(hi, gi)] = guest_start(prefs[gi], starts, g.duration)
        fixed_load = np.count_nonzero(problem.owner, axis=1)
        iw = integer_weights(weights, model_magnitude(problem.num_days, problem.slots_per_day),
                             extra)
        return cls(
            problem=problem,
            weights=iw.ints,
            scale=iw.scale,
            exact=iw.exact,
            total_load=int(fixed_load.sum()) + free_slots,
            fixed_load=fixed_load,
            runs_by_day=runs_by_day,
            hosts_by_day=hosts_by_day,
            cluster=clustered_subjects(problem),
            scope_subjects=frozenset(g.subject for g in problem.groups),
            prefs=prefs,
            host_start=host_start,
            deadline=deadline,
        )


class _SubModel:
    """The placement model restricted to ``days``: one builder method per constraint family."""

    def __init__(self, win: _Window, days: Sequence[int], counts: Sequence[int],
                 slots: int, extra: Callable[[_SubModel], None] | None = None,
                 free_slots: int | None = None) -> None:
        """A model of ``days`` placing up to ``counts`` tasks per group, ``slots`` periods in all.

        ``free_slots`` (periods outside host blocks) is held fixed when given, which keeps the
        window's total load, hence the mean day load, constant: a neighbourhood's change of the
        load term is then exactly its change of the global term. Without it the model must span
        the whole window (the mean is then a variable).
        """
        self.win = win
        self.p = win.problem
        self.days = sorted(days)
        self.counts = list(counts)
        self.slots = slots
        self.free_slots = free_slots
        if free_slots is None and len(self.days) != self.p.num_days:
            raise ValueError("a model of part of the window needs free_slots")
        self.model = cp_model().CpModel()
        self.x: dict[tuple[int, int, int], Any] = {}  # (run, group, start) -> bool
        self.y: dict[tuple[int, int], Any] = {}  # (host, group) -> bool
        self.aux: list[tuple[Any, list[_Lin]]] = []  # aux >= each expression, minimised
        self.cost: list[tuple[Any, int]] = []  # objective terms on primaries and auxiliaries
        self.const = 0
        # Per cell: the placement variables covering it, with their subject.
        self.cover: dict[tuple[int, int], list[tuple[Any, str]]] = defaultdict(list)
        self._day_vars_cache: dict[int, list[tuple[Any, int, str]]] | None = None
        for family in (self._add_variables, self._add_no_overlap, self._add_one_guest_per_host,
                       self._add_group_counts, self._add_level_one_total,
                       self._add_load_imbalance, self._add_same_category,
                       self._add_isolated_free, self._add_context_switch,
                       self._add_late_and_time_of_day):
            check_deadline(win.deadline)
            family()
        if extra is not None:
            check_deadline(win.deadline)
            extra(self)
        check_deadline(win.deadline)
        lin = cp_model().LinearExpr
        self.model.minimize(lin.weighted_sum([v for v, _ in self.cost],
                                             [c for _, c in self.cost]) + self.const)

    # -------------------------------------------------------------- variables
    def _add_variables(self) -> None:
        p, m = self.p, self.model
        for day in self.days:
            check_deadline(self.win.deadline)
            for ri in self.win.runs_by_day.get(day, []):
                b = p.runs[ri]
                for gi, g in enumerate(p.groups):
                    if not self.counts[gi]:
                        continue
                    for s in p.starts(g, b):
                        var = m.new_bool_var("")
                        self.x[(ri, gi, s)] = var
                        for q in range(s, s + g.duration):
                            self.cover[(day, q)].append((var, g.subject))
            for hi in self.win.hosts_by_day.get(day, []):
                for gi in range(len(p.groups)):
                    if self.counts[gi] and (hi, gi) in self.win.host_start:
                        self.y[(hi, gi)] = m.new_bool_var("")

    def _ge(self, aux: Any, exprs: list[_Lin], weight: int) -> None:
        if len(self.aux) % 64 == 0:
            check_deadline(self.win.deadline)
        for e in exprs:
            self.model.add(aux >= e.expr())
        self.aux.append((aux, exprs))
        if weight:
            self.cost.append((aux, weight))

    # -------------------------------------------------------------- hard constraints
    def _add_no_overlap(self) -> None:
        for cell_vars in self.cover.values():
            if len(cell_vars) > 1:
                self.model.add_at_most_one(v for v, _ in cell_vars)

    def _add_one_guest_per_host(self) -> None:
        by_host: dict[int, list[Any]] = defaultdict(list)
        for (hi, _), var in self.y.items():
            by_host[hi].append(var)
        for vars_ in by_host.values():
            if len(vars_) > 1:
                self.model.add_at_most_one(vars_)

    def _group_vars(self) -> dict[int, list[Any]]:
        out: dict[int, list[Any]] = defaultdict(list)
        for (_, gi, _), var in self.x.items():
            out[gi].append(var)
        for (_, gi), var in self.y.items():
            out[gi].append(var)
        return out

    def _add_group_counts(self) -> None:
        for gi, vars_ in self._group_vars().items():
            if len(vars_) > self.counts[gi]:
                self.model.add(cp_model().LinearExpr.sum(vars_) <= self.counts[gi])

    def _add_level_one_total(self) -> None:
        groups = self.p.groups
        total = [(v, groups[gi].duration) for gi, vs in self._group_vars().items() for v in vs]
        lin = cp_model().LinearExpr
        self.model.add(lin.weighted_sum([v for v, _ in total], [c for _, c in total])
                       == self.slots)
        if self.free_slots is not None:
            free = [(var, groups[gi].duration) for (_, gi, _), var in self.x.items()]
            self.model.add(lin.weighted_sum([v for v, _ in free], [c for _, c in free])
                           == self.free_slots)

    # -------------------------------------------------------------- soft terms
    def _day_vars(self) -> dict[int, list[tuple[Any, int, str]]]:
        """Per day: (var, periods it occupies (0 for a guest), subject)."""
        if self._day_vars_cache is not None:
            return self._day_vars_cache
        out: dict[int, list[tuple[Any, int, str]]] = defaultdict(list)
        for (ri, gi, _), var in self.x.items():
            g = self.p.groups[gi]
            out[self.p.runs[ri].day].append((var, g.duration, g.subject))
        for (hi, gi), var in self.y.items():
            out[self.p.hosts[hi].day].append((var, 0, self.p.groups[gi].subject))
        self._day_vars_cache = out
        return out

    def _add_load_imbalance(self) -> None:
        """dev_d >= |D·load_d − Σ_e load_e|, so Σ_d dev_d = D · Σ_d |load_d − mean|."""
        w = self.win.weights["load_imbalance"]
        num_days = self.p.num_days
        day_vars = self._day_vars()
        if self.free_slots is not None:
            total_terms: list[tuple[Any, int]] = []
            total = self.win.total_load
        else:  # the whole window: the total load is Σ of the placed periods, a variable
            total_terms = [(v, n) for d in self.days for v, n, _ in day_vars.get(d, []) if n]
            total = int(self.win.fixed_load.sum())
        for day in self.days:
            check_deadline(self.win.deadline)
            base = int(self.win.fixed_load[day - 1])
            coef: dict[int, int] = defaultdict(int)
            var_of: dict[int, Any] = {}
            for v, n, _ in day_vars.get(day, []):
                if n:
                    coef[v.index] += num_days * n
                    var_of[v.index] = v
            for v, n in total_terms:
                coef[v.index] -= n
                var_of[v.index] = v
            terms = [(var_of[i], c) for i, c in coef.items() if c]
            up = _Lin(terms, num_days * base - total)
            down = _Lin([(v, -c) for v, c in terms], total - num_days * base)
            bound = num_days * self.p.slots_per_day * (num_days + 1)
            dev = self.model.new_int_var(0, bound, "")
            self._ge(dev, [up, down], w)

    def _add_same_category(self) -> None:
        w = self.win.weights["same_category"] * self.p.num_days
        day_vars = self._day_vars()
        for day in self.days:
            check_deadline(self.win.deadline)
            by_subject: dict[str, list[Any]] = defaultdict(list)
            for v, _, k in day_vars.get(day, []):
                by_subject[k].append(v)
            for k in self.win.scope_subjects:
                fixed = self.p.fixed_counts.get((k, day), 0)
                vars_ = by_subject.get(k, [])
                if k in self.win.cluster:
                    if fixed:
                        self.const += w
                    elif vars_:
                        used = self.model.new_bool_var("")
                        self._ge(used, [_Lin([(v, 1)]) for v in vars_], w)
                elif vars_ and len(vars_) + fixed > 1:
                    excess = self.model.new_int_var(0, len(vars_) + fixed, "")
                    self._ge(excess, [_Lin([(v, 1) for v in vars_], fixed - 1)], w)
                elif fixed > 1:
                    self.const += w * (fixed - 1)

    def _occ(self, day: int, slot: int, subject: str | None = None) -> list[tuple[Any, int]]:
        return [(v, 1) for v, k in self.cover.get((day, slot), [])
                if subject is None or k == subject]

    def _add_isolated_free(self) -> None:
        w = self.win.weights["isolated_free"] * self.p.num_days
        for day in self.days:
            check_deadline(self.win.deadline)
            for ri in self.win.runs_by_day.get(day, []):
                b = self.p.runs[ri]
                for q in range(b.slot_start, b.slot_end + 1):
                    nbrs = [n for n in (q - 1, q + 1) if b.slot_start <= n <= b.slot_end]
                    # iso >= free(q) - Σ free(n) with free = 1 - occ
                    terms = [(v, -1) for v, _ in self._occ(day, q)]
                    for n in nbrs:
                        terms += self._occ(day, n)
                    expr = _Lin(terms, 1 - len(nbrs))
                    if not terms:
                        self.const += w * max(0, expr.const)
                        continue
                    iso = self.model.new_bool_var("")
                    self._ge(iso, [expr], w)

    def _add_context_switch(self) -> None:
        w = self.win.weights["context_switch"] * self.p.num_days
        subj = self.p.subjects
        free = self.p.owner == 0
        for day in self.days:
            check_deadline(self.win.deadline)
            row_free, row_subj = free[day - 1], subj[day - 1]
            for q in range(1, self.p.slots_per_day):  # pair (q, q + 1), 1-based
                a_free, b_free = bool(row_free[q - 1]), bool(row_free[q])
                if not a_free and not b_free:
                    continue  # fixed on both sides: not counted (see objective.TERMS)
                exprs: list[_Lin] = []
                if a_free and b_free:
                    occ_b = self._occ(day, q + 1)
                    for k in {k for _, k in self.cover.get((day, q), [])}:
                        cat_a = self._occ(day, q, k)
                        cat_b = [(v, -1) for v, _ in self._occ(day, q + 1, k)]
                        exprs.append(_Lin(cat_a + occ_b + cat_b, -1))
                else:
                    cell, fixed_subject = (q, row_subj[q]) if a_free else (q + 1, row_subj[q - 1])
                    occ = self._occ(day, cell)
                    same = [(v, -1) for v, _ in self._occ(day, cell, fixed_subject)]
                    if occ:
                        exprs.append(_Lin(occ + same))
                exprs = [e for e in exprs if e.terms]
                if exprs:
                    sw = self.model.new_bool_var("")
                    self._ge(sw, exprs, w)

    def _add_late_and_time_of_day(self) -> None:
        w_late = self.win.weights["late"] * self.p.num_days
        w_tod = self.win.weights["time_of_day"] * self.p.num_days
        groups, prefs = self.p.groups, self.win.prefs
        for (ri, gi, s), var in self.x.items():
            g = groups[gi]
            c = w_late * lateness(g.rule, self.p.runs[ri].day) + w_tod * off_preference(
                prefs[gi], s, s + g.duration - 1)
            if c:
                self.cost.append((var, c))
        for (hi, gi), var in self.y.items():
            g = groups[gi]
            s = self.win.host_start[(hi, gi)]
            c = w_late * lateness(g.rule, self.p.hosts[hi].day) + w_tod * off_preference(
                prefs[gi], s, s + g.duration - 1)
            if c:
                self.cost.append((var, c))

    # -------------------------------------------------------------- hints and solutions
    def hint(self, placements: Sequence[Placement]) -> int | None:
        """Hint every variable from ``placements`` (those on the model's days); return the
        hint's objective, or None when it breaks the model's level-1 total."""
        p = self.p
        group_of = p.group_of()
        run_at = {(p.runs[ri].day, p.runs[ri].slot_start): ri
                  for d in self.days for ri in self.win.runs_by_day.get(d, [])}
        run_starts: dict[int, list[int]] = defaultdict(list)
        for (d, s) in run_at:
            run_starts[d].append(s)
        host_at = {(p.hosts[hi].day, p.hosts[hi].host, p.hosts[hi].slot_start): hi
                   for d in self.days for hi in self.win.hosts_by_day.get(d, [])}
        check_deadline(self.win.deadline)
        values: dict[int, int] = {}
        for var in (*self.x.values(), *self.y.values()):
            values[var.index] = 0
        slots = 0
        for pl in placements:
            gi = group_of[pl.task_id]
            if pl.embed_host is not None:
                hi = next((h for (d, host, s), h in host_at.items()
                           if d == pl.day and host == pl.embed_host
                           and s <= pl.slot_start <= p.hosts[h].slot_end), None)
                var = self.y.get((hi, gi)) if hi is not None else None
            else:
                starts = [s for s in run_starts.get(pl.day, []) if s <= pl.slot_start]
                ri = run_at[(pl.day, max(starts))] if starts else None
                var = self.x.get((ri, gi, pl.slot_start)) if ri is not None else None
            if var is None:
                continue
            values[var.index] = 1
            slots += pl.length
        if slots != self.slots:
            return None
        for aux, exprs in self.aux:
            values[aux.index] = max(0, *(e.value(values) for e in exprs))
        check_deadline(self.win.deadline)
        m = self.model
        m.clear_hints()
        for var in (*self.x.values(), *self.y.values()):
            m.add_hint(var, values[var.index])
        for aux, _ in self.aux:
            m.add_hint(aux, values[aux.index])
        return self.const + sum(c * values[v.index] for v, c in self.cost)

    def placements(self, solver: Any, pool: dict[int, list[int]],
                   before: dict[int, Placement]) -> list[Placement]:
        """The solution as placements, keeping tasks where they were when a place is reused."""
        p = self.p
        wanted: dict[int, list[Placement]] = defaultdict(list)  # group -> places, no task yet
        for (ri, gi, s), var in self.x.items():
            if solver.value(var):
                b: Bin = p.runs[ri]
                wanted[gi].append(Placement(0, b.day, s, s + p.groups[gi].duration - 1))
        for (hi, gi), var in self.y.items():
            if solver.value(var):
                h = p.hosts[hi]
                s = self.win.host_start[(hi, gi)]
                wanted[gi].append(Placement(0, h.day, s, s + p.groups[gi].duration - 1, h.host))
        out: list[Placement] = []
        for gi, places in wanted.items():
            free_ids = list(pool.get(gi, []))
            where = {(pl.day, pl.slot_start, pl.embed_host): tid for tid in free_ids
                     if (pl := before.get(tid)) is not None}
            rest: list[Placement] = []
            for pl in places:
                tid = where.get((pl.day, pl.slot_start, pl.embed_host))
                if tid is not None and tid in free_ids:
                    free_ids.remove(tid)
                    out.append(Placement(tid, pl.day, pl.slot_start, pl.slot_end, pl.embed_host))
                else:
                    rest.append(pl)
            for pl, tid in zip(rest, sorted(free_ids), strict=False):
                out.append(Placement(tid, pl.day, pl.slot_start, pl.slot_end, pl.embed_host))
        return out


# ---------------------------------------------------------------------------------- entry point
def propose_placement(
    state: ScheduleState,
    time_limit_s: float = 2.0,
    seed: int = 0,
    weights: Mapping[str, float] | None = None,
    include_suggested: bool = False,
    num_workers: int = 1,
    allow_late: bool = False,
    threshold: str = "normal",
    work_limit_s: float | None = None,
) -> Proposal:
    """Propose places for the pending tasks (and, optionally, re-plan the suggested ones).

    Parameters
    ----------
    time_limit_s
        Budget for everything (level 1, warm start and level 2).
    seed
        Seeds CP-SAT and the neighbourhood choice; same seed + workers -> same proposal.
    weights
        Overrides of :data:`.objective.DEFAULT_WEIGHTS` (unknown names raise ValueError).
    include_suggested
        Re-plan the movable suggested tasks too.
    allow_late
        Let class tasks go past their class's end day, each day late costing the ``late``
        weight (level 1 then maximises with the end days lifted).
    threshold
        The ``analyze_health`` level whose (critical, warning) counts the close stage minimises
        (lexicographically after the placed periods, before the soft terms).
    work_limit_s
        The deterministic work budget, in estimated seconds of the calibration machine
        (default ``WORK_SHARE * time_limit_s``). It alone decides where the search stops, so a
        seed gives the same proposal on any machine that finishes it within ``time_limit_s``;
        ``Proposal.wall_limited`` says when the wall clock cut it instead.

    Returns
    -------
    Proposal
        Never places fewer periods than the proven maximum; never scores worse than its start.
    """
    from ._jit import kernels_ready

    # One-time costs are not the search's time: loading the pricing kernels and importing CP-SAT
    # (both once per process). On a fresh install the kernels compile in the background instead
    # (see ._jit) and this proposal goes without the column search (and its bound).
    compiled = kernels_ready()
    cp_model()
    t0 = time.perf_counter()
    report("max periods", t0)
    w = resolve_weights(weights)
    problem = build_problem(state, include_suggested=include_suggested, by_subject=True,
                            allow_late=allow_late)
    proof = Proof(w, problem.num_days)
    # ``effort``: the limit the deterministic budgets are computed from (the wall clock's own
    # limit unless the caller fixes the work separately).
    effort = time_limit_s if work_limit_s is None else work_limit_s / WORK_SHARE
    # The wall clock holds the whole call, model building included (issue 12): every stage
    # below stops at the deadline and the answer says what was proven.
    deadline = t0 + max(time_limit_s, MIN_WORK_S)
    level1 = max_placeable(problem, time_limit_s=time_limit_s * 0.3, num_workers=num_workers,
                           deterministic_time=effort * 0.3 * DETERMINISTIC_SHARE,
                           deadline=deadline - 0.02)
    level1_cut = level1.runtime_s >= time_limit_s * 0.3 - 0.01
    target = level1.best
    candidates = [("witness", level1.witness)]
    try:
        greedy = balanced_greedy(problem, w, deadline=deadline - 0.02)
    except OutOfTime:
        greedy = []
    greedy_slots = sum(pl.length for pl in greedy)
    if greedy_slots == target and greedy:
        candidates.insert(0, ("greedy", greedy))
    elif greedy and greedy_slots < target and time.perf_counter() < deadline - 0.02:
        # Repair: place the greedy's leftovers exactly in the space it left.
        rest = max_placeable(_residual(problem, greedy), time_limit_s=time_limit_s * 0.1,
                             num_workers=num_workers,
                             deterministic_time=effort * 0.1 * DETERMINISTIC_SHARE,
                             deadline=deadline - 0.02)
        level1_cut = level1_cut or rest.runtime_s >= time_limit_s * 0.1 - 0.01
        if greedy_slots + rest.best == target:
            candidates.insert(0, ("greedy+repair", greedy + rest.witness))
    scored = [(evaluate(problem, c[1], w), c) for c in candidates]
    start_obj, (start_name, start) = min(scored, key=lambda e: e[0]["weighted_total"])

    total_budget = WORK_SHARE * effort  # estimated seconds of deterministic work
    # 1. A short burst of local moves (see .local_search): cheap, and a better start makes a
    #    better first master for the column generation.
    pre_budget = PRE_LOCAL_SHARE * effort
    report("local moves", t0, start_obj["weighted_total"])
    pre = improve(problem, w, start, seed=seed, deadline=deadline - 0.02, budget_s=pre_budget,
                  stall_s=LOCAL_STALL * pre_budget)
    local_moves = pre.moves
    best = pre.placements
    # 2. Column generation over day patterns (see .columns): near-optimal schedules and a
    #    proven bound; on most windows up to ~40 days it proves the optimum within the limit.
    report("column search" if compiled else "no column search (kernels compiling)", t0,
           start_obj["weighted_total"] + pre.delta)
    if compiled:
        columns = search(problem, target, best, w, budget_s=COLUMN_SHARE * effort,
                         deadline=deadline - 0.02, num_workers=num_workers, seed=seed,
                         start_value=start_obj["weighted_total"] + pre.delta)
    else:
        obj = evaluate(problem, best, w)["weighted_total"]
        columns = ColumnSearch(placements=list(best), objective=obj, bound=math.inf,
                               optimal=False, start_objective=obj, totals={}, explored=[],
                               converged=False)
    bound: float | None = columns.bound if math.isfinite(columns.bound) else None
    if columns.objective < columns.start_objective:
        best = columns.placements
    work = pre.work_s + columns.work_s
    current = {pl.task_id: pl for pl in best}
    status = SolveStatus.FEASIBLE
    iterations = 0
    try:
        if not columns.optimal:
            # 3. What the budget leaves: local moves again, then the full model (short windows)
            #    or the day-pair neighbourhood search.
            local_budget = min(LOCAL_SHARE * effort, max(0.0, total_budget - work))
            so_far = min(columns.objective, columns.start_objective)
            report("local moves", t0, so_far, bound)
            local = improve(problem, w, best, seed=seed + 1, deadline=deadline - 0.02,
                            budget_s=local_budget, stall_s=LOCAL_STALL * local_budget)
            local_moves += local.moves
            work += local.work_s
            current = {pl.task_id: pl for pl in local.placements}
            win = _Window.build(problem, w, sum(pl.length for pl in best if pl.embed_host is None),
                                deadline=deadline - 0.02)
            report("full model" if problem.num_days <= FULL_MODEL_MAX_DAYS else "neighbourhoods",
                   t0, so_far + local.delta, bound)
            if problem.num_days <= FULL_MODEL_MAX_DAYS:
                sub = _SubModel(win, range(1, problem.num_days + 1),
                                [g.count for g in problem.groups], target)
                hinted = sub.hint(local.placements)
                solver = make_solver(max(deadline - time.perf_counter(), 0.01), num_workers,
                                     seed=seed, exact=False,
                                     deterministic_time=FULL_MODEL_DET_SHARE * effort)
                # Presolve overruns the deterministic limit on tight windows (0.5 units for a 0.1
                # limit, measured); the hinted search without it keeps to the limit.
                solver.parameters.cp_model_presolve = False
                status = status_of(solver.solve(sub.model))
                iterations = 1
                if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
                    # The model's weights are floor(scale · w) <= scale · w (see .objective), so
                    # its integer bound over scale · D is a valid bound of the real objective.
                    scaled = math.ceil(solver.best_objective_bound - 1e-6)
                    model_bound = proof.lower(Fraction(scaled, win.scale * problem.num_days))
                    bound = model_bound if bound is None else max(bound, model_bound)
                    if hinted is None or solver.objective_value <= hinted:
                        pool = {gi: list(g.task_ids) for gi, g in enumerate(problem.groups)}
                        found = sub.placements(solver, pool, current)
                        # With rounded-down weights the model's best may be worse in real terms.
                        if win.exact or evaluate(problem, found, w)["weighted_total"] <= evaluate(
                                problem, list(current.values()), w)["weighted_total"]:
                            current = {pl.task_id: pl for pl in found}
            else:
                budget = max(0.0, total_budget - work)
                current, iterations = _neighbourhood_search(win, current, deadline, budget, seed,
                                                            num_workers)
    except OutOfTime:
        pass  # ``current`` holds the last complete placement found before the deadline

    # Every stage stops by ``deadline - 0.02`` at the latest; one that got that close may
    # have been cut by the wall clock rather than by its deterministic budget.
    wall_limited = level1_cut or time.perf_counter() >= deadline - 0.03
    placements = sorted(current.values(), key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
    unchanged = {pl.task_id: pl for pl in start} == current
    objective = start_obj if unchanged else evaluate(problem, placements, w)
    if objective["weighted_total"] > start_obj["weighted_total"] + 1e-9:  # guard, never expected
        placements, objective = sorted(start, key=lambda pl: (pl.day, pl.slot_start)), start_obj
    placed = {pl.task_id for pl in placements}
    unplaced = sorted(tid for g in problem.groups for tid in g.task_ids if tid not in placed)
    # 4. The close stage (issue 10): analyze_health's (critical, warning), see .health_search;
    #    it stops at the proven floor of placements of as many periods.
    scope_placed = sum(pl.length for pl in placements if problem.current.get(pl.task_id) is None)
    floor = health_floor(state, threshold, pending_periods=scope_placed) if level1.proven \
        else None
    feasibility = unplaced_critical(state, unplaced, 0.1 * time_limit_s, num_workers)
    close = search_health(
        state, problem, placements, level=threshold, seed=seed,
        budget_s=HEALTH_SHARE * effort, deadline=deadline - 0.02,
        feasibility_critical=feasibility,
        floor=(floor.critical, floor.warning) if floor is not None else None)
    wall_limited = wall_limited or time.perf_counter() >= deadline - 0.03
    if close.counts.key < close.start_counts.key:
        placements = close.placements
        objective = evaluate(problem, placements, w)
    # Never lexicographically worse than the balanced greedy placing as many periods.
    counts = close.counts
    if HEALTH_SHARE > 0:  # (zero turns the whole close stage off, as benchmarks compare)
        placements, objective, counts = prefer_lexicographic(
            state, problem, threshold, feasibility, w, (placements, objective, counts), greedy)
    report("done", t0, objective["weighted_total"], bound)
    if not level1.proven:
        name = "unknown"
    elif proof.meets(objective, bound):  # exact arithmetic on the real weights
        name = "optimal"
    else:
        name = "feasible"
    return Proposal(
        status=name,
        placements=placements,
        unplaced=unplaced,
        objective=objective,
        start_objective=start_obj,
        start=start_name,
        max_slots=level1.best if level1.proven else None,
        bound=bound,
        weights=w,
        runtime_s=time.perf_counter() - t0,
        seed=seed,
        iterations=iterations,
        local_moves=local_moves,
        columns_explored=len(columns.explored),
        critical=counts.critical,
        warning=counts.warning,
        threshold=threshold,
        start_health=close.start_counts.key,
        wall_limited=wall_limited,
    )


def _residual(problem: Problem, placements: Sequence[Placement]) -> Problem:
    """The problem left once ``placements`` are made: their tasks and places are gone."""
    owner = problem.owner.copy()
    used_hosts: set[tuple[int, int | None]] = set()
    for pl in placements:
        if pl.embed_host is None:
            owner[pl.day - 1, pl.slot_start - 1 : pl.slot_end] = pl.task_id
        else:
            used_hosts.add((pl.day, pl.embed_host))
    placed = {pl.task_id for pl in placements}
    days, starts, lengths = runs(owner == 0)
    free_bins = [Bin(int(d) + 1, int(st) + 1, int(st + n)) for d, st, n in
                 zip(days.tolist(), starts.tolist(), lengths.tolist(), strict=True)]
    hosts = [b for b in problem.hosts
             if not any(d == b.day and h == b.host for d, h in used_hosts)
             or not _holds_guest(b, placements)]
    groups = [replace(g, task_ids=[t for t in g.task_ids if t not in placed])
              for g in problem.groups]
    return replace(problem, groups=groups, runs=free_bins, hosts=hosts, owner=owner)


def _holds_guest(b: Bin, placements: Sequence[Placement]) -> bool:
    return any(pl.embed_host == b.host and pl.day == b.day
               and b.slot_start <= pl.slot_start <= b.slot_end for pl in placements)


def _neighbourhood_search(
    win: _Window,
    current: dict[int, Placement],
    deadline: float,
    budget: float,
    seed: int,
    num_workers: int,
) -> tuple[dict[int, Placement], int]:
    """Re-solve two days at a time; keep each strict improvement.

    Half the neighbourhoods pair a heavily loaded day with a lightly loaded one (what load
    balancing needs), the other half are random pairs (switches, isolated periods, categories).
    A pair already solved without improvement is not tried again until one of its days changes.
    """
    problem = win.problem
    rng = np.random.default_rng(seed)
    group_of = problem.group_of()
    # ``budget``: estimated seconds, from deterministic measures only (see LNS_SOLVE_COST)
    spent = 0.0
    iterations = 0
    half = max(1, LNS_DAYS // 2)
    num_days = problem.num_days
    load = win.fixed_load.astype(float).copy()
    for pl in current.values():
        if pl.embed_host is None:
            load[pl.day - 1] += pl.length
    version = np.zeros(num_days + 1, dtype=np.int64)
    tried: set[tuple[int, ...]] = set()
    quarter = max(1, num_days // 4)
    while spent < budget and time.perf_counter() < deadline - 0.02:
        days: list[int] = []
        for _ in range(20):  # draw until an untried neighbourhood comes up
            if rng.random() < 0.5:
                order = np.argsort(load, kind="stable")
                a = int(order[-1 - rng.integers(quarter)]) + 1
                b = int(order[rng.integers(quarter)]) + 1
            else:
                a, b = (int(v) for v in rng.integers(1, num_days + 1, size=2))
            days = sorted({d for s in (a, b) for d in range(s, min(num_days, s + half - 1) + 1)})
            key = tuple(v for d in days for v in (d, int(version[d])))
            if key not in tried:
                break
        else:
            break  # every drawn neighbourhood is exhausted
        tried.add(key)
        iterations += 1
        day_set = set(days)
        inside = [pl for pl in current.values() if pl.day in day_set]
        pool: dict[int, list[int]] = defaultdict(list)
        for pl in inside:
            pool[group_of[pl.task_id]].append(pl.task_id)
        for gi, g in enumerate(problem.groups):
            pool[gi].extend(tid for tid in g.task_ids if tid not in current)
        counts = [len(pool.get(gi, [])) for gi in range(len(problem.groups))]
        sub = _SubModel(win, days, counts, sum(pl.length for pl in inside),
                        free_slots=sum(pl.length for pl in inside if pl.embed_host is None))
        hinted = sub.hint(inside)
        solver = make_solver(max(deadline - time.perf_counter(), 0.01), num_workers,
                             seed=seed + iterations, exact=False, deterministic_time=LNS_STEP)
        status = status_of(solver.solve(sub.model))
        # Deterministic stand-in for the time spent (calibrated on the CI machine).
        spent += (LNS_SOLVE_COST + WALL_PER_DET * solver.deterministic_time
                  + LNS_BUILD_COST * (len(sub.x) + len(sub.aux)))
        _trace(iterations, spent, time.perf_counter())
        if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE) or hinted is None:
            continue
        if solver.objective_value < hinted - 1e-9:
            fresh = sub.placements(solver, pool, current)
            for pl in inside:
                del current[pl.task_id]
                if pl.embed_host is None:
                    load[pl.day - 1] -= pl.length
            for pl in fresh:
                current[pl.task_id] = pl
                if pl.embed_host is None:
                    load[pl.day - 1] += pl.length
            for d in days:
                version[d] += 1
    return current, iterations


__all__ = ["TERM_NAMES", "Proposal", "propose_placement"]
