"""The CP-SAT placement model over a set of days, shared by the proposal and the re-optimising
writes.

:class:`WindowData` holds what every model of one window shares (precomputed once: runs and host
blocks per day, preferred periods, guest starts, the integer weights of :mod:`.objective`);
:class:`SubModel` is the placement model restricted to a set of days, with one builder method
per constraint family (no overlap, one guest per host block, the group counts, the level-1
total) and per soft term of :mod:`.objective` (load imbalance, same category, isolated free
periods, context switches, lateness and time of day). Every term is a sum over days, so a model
of part of the window changes the global objective by exactly its local change when the
window's free total is held fixed (``free_slots``).

Auxiliary variables are kept with their defining expressions as data (:class:`Lin`), so a hint
(:meth:`SubModel.hint`) sets them to the values the hinted placement implies. Building a model
checks the window's deadline and raises :class:`._cpsat.OutOfTime` past it (issue 12).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._cpsat import check_deadline, cp_model
from .objective import (
    clustered_subjects,
    guest_start,
    integer_weights,
    lateness,
    model_magnitude,
    off_preference,
    preferred_slots,
)
from .problem import Bin, Placement, Problem


class Lin:
    """A linear expression kept as data, so hint values can be computed for auxiliaries."""

    __slots__ = ("const", "terms")

    def __init__(self, terms: Sequence[tuple[Any, int]] = (), const: int = 0) -> None:
        self.terms = list(terms)
        self.const = const

    def expr(self) -> Any:
        lin = cp_model().LinearExpr
        return lin.weighted_sum([v for v, _ in self.terms], [c for _, c in self.terms]) + self.const

    def value(self, values: Mapping[int, int]) -> int:
        return self.const + sum(c * values[v.index] for v, c in self.terms)


@dataclass
class WindowData:
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
    def build(
        cls,
        problem: Problem,
        weights: dict[str, float],
        free_slots: int,
        extra: Sequence[float] = (),
        deadline: float | None = None,
    ) -> WindowData:
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
        iw = integer_weights(
            weights, model_magnitude(problem.num_days, problem.slots_per_day), extra
        )
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


class SubModel:
    """The placement model restricted to ``days``: one builder method per constraint family."""

    def __init__(
        self,
        win: WindowData,
        days: Sequence[int],
        counts: Sequence[int],
        slots: int,
        extra: Callable[[SubModel], None] | None = None,
        free_slots: int | None = None,
    ) -> None:
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
        self.aux: list[tuple[Any, list[Lin]]] = []  # aux >= each expression, minimised
        self.cost: list[tuple[Any, int]] = []  # objective terms on primaries and auxiliaries
        self.const = 0
        # Per cell: the placement variables covering it, with their subject.
        self.cover: dict[tuple[int, int], list[tuple[Any, str]]] = defaultdict(list)
        # Per host cell holding no subject (an event's): the guest variables whose guest would
        # put its subject there (the study layer, see ..concepts; context switches only).
        self.guest_cover: dict[tuple[int, int], list[tuple[Any, str]]] = defaultdict(list)
        self._day_vars_cache: dict[int, list[tuple[Any, int, str]]] | None = None
        for family in (
            self._add_variables,
            self._add_no_overlap,
            self._add_one_guest_per_host,
            self._add_group_counts,
            self._add_level_one_total,
            self._add_load_imbalance,
            self._add_same_category,
            self._add_isolated_free,
            self._add_context_switch,
            self._add_late_and_time_of_day,
        ):
            check_deadline(win.deadline)
            family()
        if extra is not None:
            check_deadline(win.deadline)
            extra(self)
        check_deadline(win.deadline)
        lin = cp_model().LinearExpr
        self.model.minimize(
            lin.weighted_sum([v for v, _ in self.cost], [c for _, c in self.cost]) + self.const
        )

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
                        var = m.new_bool_var(f"x_r{ri}_g{gi}_s{s}")
                        self.x[(ri, gi, s)] = var
                        for q in range(s, s + g.duration):
                            self.cover[(day, q)].append((var, g.subject))
            for hi in self.win.hosts_by_day.get(day, []):
                for gi in range(len(p.groups)):
                    if self.counts[gi] and (hi, gi) in self.win.host_start:
                        var = self.y[(hi, gi)] = m.new_bool_var(f"y_h{hi}_g{gi}")
                        s = self.win.host_start[(hi, gi)]
                        for q in range(s, s + p.groups[gi].duration):
                            # (a host with a subject of its own, a study task, keeps it here:
                            # the spec's hosts are courses)
                            if not p.subjects[day - 1, q - 1]:
                                self.guest_cover[(day, q)].append((var, p.groups[gi].subject))

    def add_max(self, aux: Any, exprs: list[Lin], weight: int) -> None:
        """``aux >= e`` for every expression ``e``; ``aux`` costs ``weight`` per unit, so the
        minimisation brings it down to the largest of them (or 0)."""
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
        self.model.add(lin.weighted_sum([v for v, _ in total], [c for _, c in total]) == self.slots)
        if self.free_slots is not None:
            free = [(var, groups[gi].duration) for (_, gi, _), var in self.x.items()]
            self.model.add(
                lin.weighted_sum([v for v, _ in free], [c for _, c in free]) == self.free_slots
            )

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
            up = Lin(terms, num_days * base - total)
            down = Lin([(v, -c) for v, c in terms], total - num_days * base)
            bound = num_days * self.p.slots_per_day * (num_days + 1)
            dev = self.model.new_int_var(0, bound, f"load_dev_d{day}")
            self.add_max(dev, [up, down], w)

    def _add_same_category(self) -> None:
        w = self.win.weights["same_category"] * self.p.num_days
        day_vars = self._day_vars()
        for day in self.days:
            check_deadline(self.win.deadline)
            by_subject: dict[str, list[Any]] = defaultdict(list)
            for v, _, k in day_vars.get(day, []):
                by_subject[k].append(v)
            for k in sorted(self.win.scope_subjects):
                fixed = self.p.fixed_counts.get((k, day), 0)
                vars_ = by_subject.get(k, [])
                if k in self.win.cluster:
                    if fixed:
                        self.const += w
                    elif vars_:
                        used = self.model.new_bool_var(f"used_d{day}_{k}")
                        self.add_max(used, [Lin([(v, 1)]) for v in vars_], w)
                elif vars_ and len(vars_) + fixed > 1:
                    excess = self.model.new_int_var(0, len(vars_) + fixed, f"excess_d{day}_{k}")
                    self.add_max(excess, [Lin([(v, 1) for v in vars_], fixed - 1)], w)
                elif fixed > 1:
                    self.const += w * (fixed - 1)

    def _occ(self, day: int, slot: int, subject: str | None = None) -> list[tuple[Any, int]]:
        return [
            (v, 1) for v, k in self.cover.get((day, slot), []) if subject is None or k == subject
        ]

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
                    expr = Lin(terms, 1 - len(nbrs))
                    if not terms:
                        self.const += w * max(0, expr.const)
                        continue
                    iso = self.model.new_bool_var(f"isolated_d{day}_s{q}")
                    self.add_max(iso, [expr], w)

    def _add_context_switch(self) -> None:
        w = self.win.weights["context_switch"] * self.p.num_days
        subj = self.p.subjects
        free = self.p.owner == 0
        for day in self.days:
            check_deadline(self.win.deadline)
            row_free, row_subj = free[day - 1], subj[day - 1]

            def variable(q: int, day: int = day, row_free: Any = row_free) -> bool:
                """Period q's subject depends on the model: free, or a host's with a guest."""
                return bool(row_free[q - 1]) or (day, q) in self.guest_cover

            def vars_at(q: int, day: int = day) -> list[tuple[Any, str]]:
                return self.cover.get((day, q), []) + self.guest_cover.get((day, q), [])

            for q in range(1, self.p.slots_per_day):  # pair (q, q + 1), 1-based
                a_var, b_var = variable(q), variable(q + 1)
                if not a_var and not b_var:
                    continue  # fixed on both sides: not counted (see objective.TERMS)
                va, vb = vars_at(q), vars_at(q + 1)
                exprs: list[Lin] = []
                if a_var and b_var:  # no subject unless a variable puts one there
                    occ_b = [(v, 1) for v, _ in vb]
                    for k in sorted({k for _, k in va}):
                        cat_a = [(v, 1) for v, kk in va if kk == k]
                        cat_b = [(v, -1) for v, kk in vb if kk == k]
                        exprs.append(Lin(cat_a + occ_b + cat_b, -1))
                else:
                    cell_vars, fixed_subject = (va, row_subj[q]) if a_var else (vb, row_subj[q - 1])
                    if not fixed_subject:
                        continue  # a neighbour with no subject (an event): never a switch
                    occ = [(v, 1) for v, _ in cell_vars]
                    same = [(v, -1) for v, k in cell_vars if k == fixed_subject]
                    if occ:
                        exprs.append(Lin(occ + same))
                exprs = [e for e in exprs if e.terms]
                if exprs:
                    sw = self.model.new_bool_var(f"switch_d{day}_s{q}")
                    self.add_max(sw, exprs, w)

    def _add_late_and_time_of_day(self) -> None:
        w_late = self.win.weights["late"] * self.p.num_days
        w_tod = self.win.weights["time_of_day"] * self.p.num_days
        groups, prefs = self.p.groups, self.win.prefs
        for (ri, gi, s), var in self.x.items():
            g = groups[gi]
            c = w_late * lateness(g.rule, self.p.runs[ri].day) + w_tod * off_preference(
                prefs[gi], s, s + g.duration - 1
            )
            if c:
                self.cost.append((var, c))
        for (hi, gi), var in self.y.items():
            g = groups[gi]
            s = self.win.host_start[(hi, gi)]
            c = w_late * lateness(g.rule, self.p.hosts[hi].day) + w_tod * off_preference(
                prefs[gi], s, s + g.duration - 1
            )
            if c:
                self.cost.append((var, c))

    # -------------------------------------------------------------- hints and solutions
    def hint(self, placements: Sequence[Placement]) -> int | None:
        """Hint every variable from ``placements`` (those on the model's days); return the
        hint's objective, or None when it breaks the model's level-1 total."""
        p = self.p
        group_of = p.group_of()
        run_at = {
            (p.runs[ri].day, p.runs[ri].slot_start): ri
            for d in self.days
            for ri in self.win.runs_by_day.get(d, [])
        }
        run_starts: dict[int, list[int]] = defaultdict(list)
        for d, s in run_at:
            run_starts[d].append(s)
        host_at = {
            (p.hosts[hi].day, p.hosts[hi].host, p.hosts[hi].slot_start): hi
            for d in self.days
            for hi in self.win.hosts_by_day.get(d, [])
        }
        check_deadline(self.win.deadline)
        values: dict[int, int] = {}
        for var in (*self.x.values(), *self.y.values()):
            values[var.index] = 0
        slots = 0
        for pl in placements:
            gi = group_of[pl.task_id]
            if pl.embed_host is not None:
                hi = next(
                    (
                        h
                        for (d, host, s), h in host_at.items()
                        if d == pl.day
                        and host == pl.embed_host
                        and s <= pl.slot_start <= p.hosts[h].slot_end
                    ),
                    None,
                )
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

    def placements(
        self, solver: Any, pool: dict[int, list[int]], before: dict[int, Placement]
    ) -> list[Placement]:
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
            where = {
                (pl.day, pl.slot_start, pl.embed_host): tid
                for tid in free_ids
                if (pl := before.get(tid)) is not None
            }
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


__all__ = ["Lin", "SubModel", "WindowData"]
