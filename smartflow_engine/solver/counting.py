"""The aggregated CP-SAT model: place *counts* of interchangeable tasks into *types* of bins.

Free runs on different days with the same length, the same set of allowed groups (class day
windows) and the groups' banned periods at the same offsets are identical bins: one *run type*
with multiplicity ``m``. Inside a type, groups of the same duration and the same allowed offsets
are one *kind*. Each copy of a type takes one maximal *pattern* (a multiset of kinds that fits
into the run, :mod:`.patterns`); ``p[t, i]`` counts the copies of type ``t`` taking pattern ``i``
(Σ_i p[t, i] <= m), and the tasks placed of each group of a kind are bounded by the kind's supply
Σ_i count[i, k] p[t, i]. This is the configuration (Gilmore-Gomory) formulation: exact, with a
tight linear relaxation, and its size depends on the number of distinct (duration, class
constraints) groups and bin types, never on the number of tasks or days. Host blocks are typed
the same way and take at most one guest each.

The model is written by :class:`CountModelBuilder`, one method per constraint family (as
PyJobShop's CP-SAT builder is), into a :class:`LinearSink`: CP-SAT's model (:class:`CpSatSink`)
or the rows of its linear relaxation (:class:`.relaxation.MatrixSink`). Both see the same rows,
so the relaxation is the relaxation of exactly this model.

:func:`max_placeable` answers from the cheapest proof it finds (issue 10):

1. a greedy packing that places everything proves feasibility;
2. the linear relaxation's optimum, made safe by a dual certificate checked in integer
   arithmetic (:mod:`.relaxation`), is an upper bound; a greedy packing that meets it, or an
   integral relaxation optimum (checked row by row in integers), proves the maximum;
3. otherwise CP-SAT solves the model, hinted with the best packing and with the bound as a cut.
"""

from __future__ import annotations

import operator
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal, Protocol

import numpy as np

from ..health_facts import free_runs
from ._cpsat import (
    MIN_TIME_LIMIT_S,
    OutOfTime,
    SolveStatus,
    check_deadline,
    cp_model,
    make_solver,
    status_of,
)
from .baselines import PACK_ORDERS, best_fit_decreasing
from .budget import DEFAULT_CALIBRATION, Calibration
from .patterns import MAX_PATTERNS, KindSpec, count_patterns, run_patterns
from .problem import Bin, Group, Placement, Problem
from .relaxation import MatrixSink, is_solution, solve_relaxation

INF = float("inf")


# ---------------------------------------------------------------------------------- sinks
class LinearSink(Protocol):
    """Where :class:`CountModelBuilder` writes: integer variables (by index), linear rows and
    a linear objective. Every coefficient and bound is an integer."""

    def new_var(self, lb: int, ub: int, name: str) -> int: ...

    def add_row(self, idx: Sequence[int], coeffs: Sequence[int], lb: float, ub: float) -> None: ...

    def set_objective(self, idx: Sequence[int], coeffs: Sequence[int], maximize: bool) -> None: ...


class CpSatSink:
    """A :class:`LinearSink` writing a CP-SAT model (variable ``i`` is the model's ``i``-th)."""

    def __init__(self) -> None:
        self.module = cp_model()
        self.model = self.module.CpModel()
        self.vars: list[Any] = []

    def new_var(self, lb: int, ub: int, name: str) -> int:
        self.vars.append(self.model.new_int_var(lb, ub, name))
        return len(self.vars) - 1

    def _expr(self, idx: Sequence[int], coeffs: Sequence[int]) -> Any:
        return self.module.LinearExpr.weighted_sum([self.vars[i] for i in idx], list(coeffs))

    def add_row(self, idx: Sequence[int], coeffs: Sequence[int], lb: float, ub: float) -> None:
        lo = self.module.INT_MIN if lb == -INF else int(lb)
        hi = self.module.INT_MAX if ub == INF else int(ub)
        self.model.add_linear_constraint(self._expr(idx, coeffs), lo, hi)

    def set_objective(self, idx: Sequence[int], coeffs: Sequence[int], maximize: bool) -> None:
        (self.model.maximize if maximize else self.model.minimize)(self._expr(idx, coeffs))

    def hint(self, i: int, value: int) -> None:
        self.model.add_hint(self.vars[i], value)

    @staticmethod
    def values(solver: Any) -> list[int]:
        """Every variable's value in the solver's solution (index = variable index)."""
        return [int(v) for v in solver.response_proto.solution]


# ---------------------------------------------------------------------------------- the model
@dataclass
class RunType:
    """One run type of a built model: its bins, kinds, patterns and pattern variables."""

    bins: list[Bin]
    spec: KindSpec
    counts: np.ndarray  # (patterns, kinds)
    layouts: tuple[tuple[int, ...], ...]
    p: list[int]  # per pattern: variable, copies taking it (pattern encoding)
    x: list[tuple[int, int, int]] = field(default_factory=list)  # (kind, offset, var) coverage
    kind_of: dict[int, int] = field(default_factory=dict)  # group -> kind index


@dataclass
class CountModel:
    """A built counting model and the handles (variable indices) to read a solution back.

    ``split`` rows ``(type, kind, group, var)``: tasks of ``group`` placed in copies of run type
    ``type`` as kind ``kind``; ``host_y`` rows ``(type, group, var)``: guests of ``group`` in
    host blocks of host type ``type``.
    """

    sink: Any  # the LinearSink it was written into
    counts: list[int]
    placed: list[int]  # per group: variable, number placed
    run_types: list[RunType] = field(default_factory=list)
    split: list[tuple[int, int, int, int]] = field(default_factory=list)
    host_y: list[tuple[int, int, int]] = field(default_factory=list)
    host_types: list[list[Bin]] = field(default_factory=list)
    extra_days: int | None = None  # variable: number of appended empty days
    durations: list[int] = field(default_factory=list)  # per group: objective coefficient

    @property
    def model(self) -> Any:
        """The sink's model (a ``CpModel`` for :class:`CpSatSink`)."""
        return self.sink.model

    def placed_slots(self, values: Sequence[int]) -> int:
        return sum(d * int(values[v]) for d, v in zip(self.durations, self.placed, strict=True))


@dataclass(frozen=True)
class _TypeSpec:
    """A run (or host) type before any variable exists: its bins and its kinds' groups."""

    bins: list[Bin]
    spec: KindSpec
    by_kind: dict[tuple[int, tuple[int, ...]], list[int]]


@lru_cache(maxsize=16384)
def _offsets(length: int, duration: int, banned: tuple[int, ...]) -> tuple[int, ...]:
    """Offsets where a task of ``duration`` may start in a run of ``length`` periods whose
    banned periods sit at offsets ``banned`` (the pure-Python twin of ``allowed_starts``)."""
    return tuple(
        o for o in range(length - duration + 1) if not any(o <= q < o + duration for q in banned)
    )


class CountModelBuilder:
    """Writes the counting model of ``problem`` into a sink, one method per constraint family.

    The bins are typed once (in the constructor); :meth:`build` may then be called for several
    sinks (the relaxation first, CP-SAT only when it is needed).

    Parameters
    ----------
    counts
        Tasks per group to consider (default: every scope task); a subset for core extraction.
    place_all
        Require every counted task to be placed (a feasibility question) instead of maximising
        the placed periods.
    extra_days_max
        Allow up to this many empty days appended after the window (a variable, minimised).
    """

    def __init__(
        self,
        problem: Problem,
        counts: Sequence[int] | None = None,
        *,
        place_all: bool = False,
        extra_days_max: int = 0,
    ) -> None:
        self.problem = problem
        groups = problem.groups
        self.counts = [g.count for g in groups] if counts is None else list(counts)
        self.place_all = place_all
        self.extra_days_max = extra_days_max
        self.active = [gi for gi, c in enumerate(self.counts) if c > 0]
        rules = list(dict.fromkeys(groups[gi].rule for gi in self.active))
        rule_index = {r: i for i, r in enumerate(rules)}
        # Per active group: (index, rule index, duration, banned periods, may be a guest).
        self._group_facts = [
            (
                gi,
                rule_index[groups[gi].rule],
                groups[gi].duration,
                groups[gi].rule.banned,
                groups[gi].can_guest,
            )
            for gi in self.active
        ]
        self._banned_sets = list(dict.fromkeys(r.banned for r in rules if r.banned))
        # the item order's cuts on its bounding days (issue 42): a bin's type keeps them
        self._ordered_rules = [
            i for i, r in enumerate(rules) if r.after is not None or r.before is not None
        ]
        self._rules = rules
        num_days = problem.num_days
        self._day_sig = [
            tuple(r.allows_day(day, num_days) for r in rules) for day in range(num_days + 2)
        ]
        self.run_types = [
            t for t in (self._type_of(bins) for bins in self._typed(problem.runs)) if t.spec
        ]
        spd = problem.slots_per_day
        self.extra_type = self._type_of([], Bin(num_days + 1, 1, spd)) if extra_days_max else None
        self.host_types = [
            t for t in (self._type_of(bins) for bins in self._typed(problem.hosts)) if t.spec
        ]

    # -- typing the bins ------------------------------------------------------------------
    def _relative(self, b: Bin) -> tuple[tuple[int, ...], ...]:
        return tuple(
            tuple(p - b.slot_start for p in bs if b.slot_start <= p <= b.slot_end)
            for bs in self._banned_sets
        )

    def _typed(self, bins: list[Bin]) -> list[list[Bin]]:
        """Bins grouped by (length, allowed rules, banned offsets), in first-seen order."""
        out: dict[tuple[Any, ...], list[Bin]] = defaultdict(list)
        for b in bins:
            cuts = tuple(  # relative to the bin, as the banned periods
                tuple(
                    p - b.slot_start
                    for p in self._rules[i].order_banned(b.day, self.problem.slots_per_day)
                    if b.slot_start <= p <= b.slot_end
                )
                for i in self._ordered_rules
            )
            out[(b.length, self._day_sig[b.day], self._relative(b), cuts)].append(b)
        return list(out.values())

    def _type_of(self, bins: list[Bin], proto: Bin | None = None) -> _TypeSpec:
        """The kinds of a type: active groups grouped by (duration, allowed offsets)."""
        proto = bins[0] if proto is None else proto
        sig = self._day_sig[min(proto.day, len(self._day_sig) - 1)]
        start, end, length = proto.slot_start, proto.slot_end, proto.length
        by_kind: dict[tuple[int, tuple[int, ...]], list[int]] = defaultdict(list)
        for gi, rule, d, banned, can_guest in self._group_facts:
            if not sig[rule] or d > length or (proto.host is not None and not can_guest):
                continue
            cut = self._rules[rule].order_banned(proto.day, self.problem.slots_per_day)
            if cut:
                banned = (*banned, *cut)
            rel = tuple(p - start for p in banned if start <= p <= end) if banned else ()
            offsets = _offsets(length, d, rel)
            if offsets:
                by_kind[(d, offsets)].append(gi)
        return _TypeSpec(bins, tuple(sorted(by_kind)), dict(by_kind))

    # -- building ---------------------------------------------------------------------------
    def build(self, sink: LinearSink, deadline: float | None = None) -> CountModel:
        """Write the whole model into ``sink``; raise :class:`._cpsat.OutOfTime` once
        ``deadline`` (a ``time.perf_counter()`` value) has passed (checked per run type: the
        patterns of 21 run types took 0.5-1.3 s on a 20,000-task window)."""
        self._sink = sink
        self._deadline = deadline
        self._terms: list[list[int]] = [[] for _ in self.problem.groups]
        self._cm = CountModel(
            sink, self.counts, [], durations=[g.duration for g in self.problem.groups]
        )
        self._add_run_types()
        self._add_extra_days()
        self._add_host_blocks()
        self._add_group_totals()
        self._set_objective()
        return self._cm

    def _add_run_types(self) -> None:
        """Free runs: each type's copies take patterns (or cover offsets), and feed its kinds."""
        for spec in self.run_types:
            check_deadline(self._deadline)
            m = len(spec.bins)
            self._add_run_type(spec, (m, None), m)

    def _add_extra_days(self) -> None:
        """Appended empty days: one more run type whose multiplicity is a variable."""
        if self.extra_type is None:
            return
        var = self._sink.new_var(0, self.extra_days_max, "extra_days")
        self._cm.extra_days = var
        if self.extra_type.spec:  # else no counted task may use an appended day
            self._add_run_type(self.extra_type, (0, var), self.extra_days_max)

    def _add_run_type(self, spec: _TypeSpec, mult: tuple[int, int | None], mult_max: int) -> None:
        proto = spec.bins[0] if spec.bins else Bin(0, 1, self.problem.slots_per_day)
        if count_patterns(proto.length, spec.spec) <= MAX_PATTERNS:
            rt, supplies, caps = self._add_pattern_copies(spec, proto.length, mult, mult_max)
        else:
            rt, supplies, caps = self._add_coverage_copies(spec, proto.length, mult, mult_max)
        self._add_kind_supply(rt, spec, supplies, caps)

    def _copies_at_most(self, idx: list[int], mult: tuple[int, int | None]) -> None:
        """Σ idx <= the type's multiplicity (a constant, or the extra-days variable)."""
        const, var = mult
        if var is not None:
            self._sink.add_row([*idx, var], [1] * len(idx) + [-1], -INF, 0)
        elif len(idx) > 1:  # a single variable already has the multiplicity as its bound
            self._sink.add_row(idx, [1] * len(idx), -INF, const)

    def _add_pattern_copies(
        self, spec: _TypeSpec, length: int, mult: tuple[int, int | None], mult_max: int
    ) -> tuple[RunType, list[tuple[list[int], list[int]]], list[int]]:
        """Pattern encoding: ``p[i]`` copies take pattern ``i``; Σ_i p[i] <= m."""
        pat_counts, layouts = run_patterns(length, spec.spec)
        tag = f"type{len(self._cm.run_types)}"  # this type's index once _add_kind_supply adds it
        ps = [self._sink.new_var(0, mult_max, f"{tag}_pattern{i}") for i in range(len(layouts))]
        rt = RunType(spec.bins, spec.spec, pat_counts, layouts, ps)
        self._copies_at_most(ps, mult)
        supplies, caps = [], []
        for k in range(len(spec.spec)):
            col = pat_counts[:, k].tolist()
            supplies.append(([ps[i] for i, c in enumerate(col) if c], [c for c in col if c]))
            caps.append(max(col) * mult_max)
        return rt, supplies, caps

    def _add_coverage_copies(
        self, spec: _TypeSpec, length: int, mult: tuple[int, int | None], mult_max: int
    ) -> tuple[RunType, list[tuple[list[int], list[int]]], list[int]]:
        """Positional encoding: ``x[k, off]`` tasks of kind ``k`` start at offset ``off``; at
        most ``m`` of them cover any offset (an interval matrix: exact for identical runs)."""
        rt = RunType(spec.bins, spec.spec, np.zeros((0, len(spec.spec)), dtype=np.int64), (), [])
        cover: dict[int, list[int]] = defaultdict(list)
        supplies, caps = [], []
        tag = f"type{len(self._cm.run_types)}"
        for k, (d, offsets) in enumerate(spec.spec):
            xs = []
            for off in offsets:
                var = self._sink.new_var(0, mult_max, f"{tag}_k{k}_off{off}")
                rt.x.append((k, off, var))
                xs.append(var)
                for q in range(off, off + d):
                    cover[q].append(var)
            supplies.append((xs, [1] * len(xs)))
            caps.append(mult_max * (length // d))
        for vars_ in cover.values():
            self._copies_at_most(vars_, mult)
        return rt, supplies, caps

    def _add_kind_supply(
        self,
        rt: RunType,
        spec: _TypeSpec,
        supplies: list[tuple[list[int], list[int]]],
        caps: list[int],
    ) -> None:
        """The tasks of a kind's groups placed in a type are at most the kind's supply."""
        t = len(self._cm.run_types)
        self._cm.run_types.append(rt)
        for k, kind in enumerate(spec.spec):
            zs = []
            for gi in spec.by_kind[kind]:
                z = self._sink.new_var(0, min(self.counts[gi], caps[k]), f"split_t{t}_k{k}_g{gi}")
                rt.kind_of[gi] = k
                self._cm.split.append((t, k, gi, z))
                self._terms[gi].append(z)
                zs.append(z)
            idx, coeffs = supplies[k]
            self._sink.add_row([*zs, *idx], [1] * len(zs) + [-c for c in coeffs], -INF, 0)

    def _add_host_blocks(self) -> None:
        """Embeddable host blocks: each takes at most one guest."""
        for spec in self.host_types:
            t = len(self._cm.host_types)
            self._cm.host_types.append(spec.bins)
            ys = []
            for gi in sorted(gi for gis in spec.by_kind.values() for gi in gis):
                var = self._sink.new_var(
                    0, min(len(spec.bins), self.counts[gi]), f"host_t{t}_g{gi}"
                )
                self._cm.host_y.append((t, gi, var))
                self._terms[gi].append(var)
                ys.append(var)
            if len(ys) > 1:
                self._sink.add_row(ys, [1] * len(ys), -INF, len(spec.bins))

    def _add_group_totals(self) -> None:
        """``placed[g]`` = Σ of the group's split and guest variables (= count with place_all)."""
        for gi, c in enumerate(self.counts):
            var = self._sink.new_var(c if self.place_all else 0, c, f"placed_g{gi}")
            terms = self._terms[gi]
            self._sink.add_row([var, *terms], [1] + [-1] * len(terms), 0, 0)
            self._cm.placed.append(var)

    def _set_objective(self) -> None:
        """Maximise the placed periods, or (placing all) minimise the extra days."""
        cm = self._cm
        if not self.place_all:
            self._sink.set_objective(cm.placed, cm.durations, maximize=True)
        elif cm.extra_days is not None:
            self._sink.set_objective([cm.extra_days], [1], maximize=False)


def build(
    problem: Problem,
    counts: list[int] | None = None,
    *,
    place_all: bool = False,
    extra_days_max: int = 0,
) -> CountModel:
    """Build the CP-SAT counting model (see :class:`CountModelBuilder` for the parameters)."""
    builder = CountModelBuilder(problem, counts, place_all=place_all, extra_days_max=extra_days_max)
    return builder.build(CpSatSink())


# ---------------------------------------------------------------------------------- solutions
def decode(problem: Problem, cm: CountModel, values: Sequence[int]) -> list[Placement]:
    """Turn a solution's pattern and split counts (``values[var]``) into placements of concrete
    tasks."""
    queues = [list(g.task_ids) for g in problem.groups]
    out: list[Placement] = []
    items: dict[tuple[int, int], list[tuple[Bin, int]]] = defaultdict(list)  # (type, kind)
    for t, rt in enumerate(cm.run_types):
        if not rt.bins:
            continue
        intervals = sorted(
            (off, off + rt.spec[k][0] - 1, k)
            for k, off, var in rt.x
            for _ in range(int(values[var]))
        )
        last_end = [-1] * len(rt.bins)
        for s0, e0, k in intervals:
            # Interval-graph colouring by start: a copy whose last interval ended is always free.
            c = next(i for i, end in enumerate(last_end) if end < s0)
            last_end[c] = e0
            items[(t, k)].append((rt.bins[c], s0))
        copy = 0
        for i, var in enumerate(rt.p):
            for _ in range(int(values[var])):
                b = rt.bins[copy]
                copy += 1
                lay = rt.layouts[i]
                for j in range(0, len(lay), 2):
                    items[(t, lay[j + 1])].append((b, lay[j]))
    for t, k, gi, z in cm.split:
        if not cm.run_types[t].bins:
            continue
        d = problem.groups[gi].duration
        pool = items[(t, k)]
        for _ in range(int(values[z])):
            b, off = pool.pop()
            s = b.slot_start + off
            out.append(Placement(queues[gi].pop(0), b.day, s, s + d - 1))
    used: dict[int, int] = defaultdict(int)
    for t, gi, var in cm.host_y:
        g = problem.groups[gi]
        for _ in range(int(values[var])):
            b = cm.host_types[t][used[t]]
            used[t] += 1
            s = problem.starts(g, b)[0]
            out.append(Placement(queues[gi].pop(0), b.day, s, s + g.duration - 1, b.host))
    out.sort(key=lambda p: (p.day, p.slot_start, p.task_id))
    return out


def add_hint(problem: Problem, cm: CountModel, placements: list[Placement]) -> None:
    """Hint every variable of ``cm`` (built into a :class:`CpSatSink`) with the counts of a
    concrete (partial) placement."""
    where = {(b.day, b.slot_start): (t, b) for t, rt in enumerate(cm.run_types) for b in rt.bins}
    run_starts: dict[int, list[int]] = defaultdict(list)
    for b in problem.runs:
        run_starts[b.day].append(b.slot_start)
    host_type = {
        (b.day, b.slot_start, b.host): t for t, bins in enumerate(cm.host_types) for b in bins
    }
    host_blocks: dict[tuple[int, int | None], list[Bin]] = defaultdict(list)
    for b in problem.hosts:
        host_blocks[(b.day, b.host)].append(b)
    group_of = problem.group_of()
    per_bin: dict[tuple[int, int], np.ndarray] = {}
    xs: dict[tuple[int, int, int], int] = defaultdict(int)
    zs: dict[tuple[int, int, int], int] = defaultdict(int)
    ys: dict[tuple[int, int], int] = defaultdict(int)
    placed = [0] * len(problem.groups)
    for p in placements:
        gi = group_of[p.task_id]
        placed[gi] += 1
        if p.embed_host is not None:
            hb = next(
                b
                for b in host_blocks[(p.day, p.embed_host)]
                if b.slot_start <= p.slot_start and p.slot_end <= b.slot_end
            )
            ys[(host_type[(hb.day, hb.slot_start, hb.host)], gi)] += 1
            continue
        start = max(s for s in run_starts[p.day] if s <= p.slot_start)
        t, b = where[(p.day, start)]
        rt = cm.run_types[t]
        k = rt.kind_of[gi]
        zs[(t, k, gi)] += 1
        if rt.x:
            xs[(t, k, p.slot_start - b.slot_start)] += 1
            continue
        vec = per_bin.setdefault((p.day, start), np.zeros(len(rt.spec), dtype=np.int64))
        vec[k] += 1
    ps: dict[tuple[int, int], int] = defaultdict(int)
    for (day, start), vec in per_bin.items():
        t, _ = where[(day, start)]
        dominating = np.flatnonzero((cm.run_types[t].counts >= vec).all(axis=1))
        ps[(t, int(dominating[0]))] += 1
    sink = cm.sink
    for t, rt in enumerate(cm.run_types):
        used_copies = sum(v for (tt, _), v in ps.items() if tt == t)
        free_copies = len(rt.bins) - used_copies
        for i, var in enumerate(rt.p):
            # Unused copies take the first pattern: harmless, supply may exceed demand.
            extra = free_copies if i == 0 else 0
            sink.hint(var, ps.get((t, i), 0) + extra)
        for k, off, var in rt.x:
            sink.hint(var, xs.get((t, k, off), 0))
    for t, k, gi, z in cm.split:
        sink.hint(z, zs.get((t, k, gi), 0))
    for t, gi, var in cm.host_y:
        sink.hint(var, ys.get((t, gi), 0))
    for gi, var in enumerate(cm.placed):
        sink.hint(var, placed[gi])


def round_down(cm: CountModel, x: np.ndarray) -> list[int]:
    """An integer solution of ``cm`` below a fractional point ``x`` (the relaxation's optimum).

    Copies (pattern and coverage variables) and guests are rounded down, which keeps every
    multiplicity row; each kind's split is then cut to the supply that is left, and the group
    totals are recounted.
    """
    v = np.floor(np.asarray(x, dtype=float) + 1e-9).astype(np.int64)
    v = np.maximum(v, 0)
    by_type_kind: dict[tuple[int, int], list[int]] = defaultdict(list)
    terms: list[list[int]] = [[] for _ in cm.placed]
    for t, k, gi, z in cm.split:
        by_type_kind[(t, k)].append(z)
        terms[gi].append(z)
    for _, gi, y in cm.host_y:
        terms[gi].append(y)
    for t, rt in enumerate(cm.run_types):
        supply = np.zeros(len(rt.spec), dtype=np.int64)
        for k, _, var in rt.x:
            supply[k] += v[var]
        if rt.p:
            supply += rt.counts.T @ v[rt.p]
        for k in range(len(rt.spec)):
            left = int(supply[k])
            for z in by_type_kind[(t, k)]:
                v[z] = min(int(v[z]), left)
                left -= int(v[z])
    for gi, var in enumerate(cm.placed):
        v[var] = int(v[terms[gi]].sum()) if terms[gi] else 0
    return [int(a) for a in v]


def residual(problem: Problem, placements: Sequence[Placement]) -> Problem:
    """The problem left once ``placements`` are made: their tasks, periods and host blocks
    are gone."""
    owner = problem.owner.copy()
    for pl in placements:
        if pl.embed_host is None:
            owner[pl.day - 1, pl.slot_start - 1 : pl.slot_end] = pl.task_id
    days, starts, lengths = free_runs(owner == 0)
    free = [
        Bin(int(d) + 1, int(s) + 1, int(s + n))
        for d, s, n in zip(days.tolist(), starts.tolist(), lengths.tolist(), strict=True)
    ]
    guests = {
        (pl.day, pl.embed_host, pl.slot_start) for pl in placements if pl.embed_host is not None
    }
    hosts = [
        b
        for b in problem.hosts
        if not any((b.day, b.host, s) in guests for s in range(b.slot_start, b.slot_end + 1))
    ]
    placed = {pl.task_id for pl in placements}
    groups = [
        replace(g, task_ids=[t for t in g.task_ids if t not in placed]) for g in problem.groups
    ]
    return replace(problem, groups=groups, runs=free, hosts=hosts, owner=owner)


# ---------------------------------------------------------------------------------- questions
# What proved a CountResult: "complete" (the placement holds every counted task),
# "relaxation" (it meets the relaxation's certified bound), "cp-sat" (CP-SAT's own proof,
# or none when unproven) or "standing" (the scope's places now hold every task,
# :func:`.feasibility.standing_witness`).
ProofKind = Literal["complete", "relaxation", "cp-sat", "standing"]


@dataclass
class CountResult:
    status: SolveStatus
    best: int  # best placed slots found (a lower bound on the maximum)
    bound: int  # proven upper bound on the maximum
    witness: list[Placement]
    runtime_s: float
    proof: ProofKind = "cp-sat"

    @property
    def proven(self) -> bool:
        return self.status.proven or self.best == self.bound


_ENDS, _STARTS = operator.attrgetter("slot_end"), operator.attrgetter("slot_start")


def _slots(placements: list[Placement]) -> int:
    """Σ length (in C: the packings call this in their inner loops)."""
    out: int = sum(map(_ENDS, placements)) - sum(map(_STARTS, placements)) + len(placements)
    return out


def _pack_orders(
    problem: Problem,
    counts: Sequence[int],
    orders: Sequence[Any],
    best: list[Placement],
    target: int,
    end: float,
) -> list[Placement]:
    """The best of ``best`` and the greedy packings in ``orders``, stopping once one reaches
    ``target`` periods or the clock reaches ``end``."""
    for order in orders:
        if _slots(best) >= target or time.perf_counter() > end:
            break
        placed = best_fit_decreasing(problem, counts, order, end)
        if _slots(placed) > _slots(best):
            best = placed
    return best


def _relaxation_path(
    problem: Problem,
    counts: list[int],
    builder: CountModelBuilder,
    greedy: list[Placement],
    end: float,
    calibration: Calibration,
) -> tuple[list[Placement], int]:
    """The relaxation's certified bound and the best placement it leads to.

    Returns ``(placements, bound)``. The placement is the relaxation's optimum when it is
    integral, else its rounding down completed by the greedy orders on what is left (stopping
    as soon as one meets the bound); ``greedy`` when neither beats it.
    """
    required = sum(g.duration * c for g, c in zip(problem.groups, counts, strict=True))
    try:
        cm = builder.build(MatrixSink(), deadline=end)
    except OutOfTime:  # no bound in time: the greedy stands, unproven
        return greedy, required
    relaxed = solve_relaxation(cm.sink, time_limit_s=end - time.perf_counter())
    bound = required if relaxed.bound is None else min(required, relaxed.bound)
    best = greedy
    if _slots(best) >= bound or relaxed.solution is None:
        return best, bound
    if relaxed.values is not None:
        return decode(problem, cm, relaxed.values), bound
    values = round_down(cm, relaxed.solution)
    if not is_solution(cm.sink, values):  # not expected; the rounding keeps every row
        return best, bound
    base = decode(problem, cm, values)
    rest = residual(problem, base)
    left = [g.count for g in rest.groups]  # the counted tasks the rounding did not place
    for gi, g in enumerate(problem.groups):
        left[gi] = max(0, counts[gi] - (g.count - left[gi]))
    for order in PACK_ORDERS[: calibration.pack_orders]:
        if _slots(best) >= bound or time.perf_counter() > end:
            break
        found = base + best_fit_decreasing(rest, left, order, end)
        if _slots(found) > _slots(best):
            best = found
    return (
        _shuffled_packs(problem, counts, base, rest, left, best, bound, end, calibration),
        bound,
    )


def _keyed(keys: dict[int, tuple[float, ...]]) -> Callable[[Group], tuple[float, ...]]:
    """A group order from sort keys by group identity."""
    return lambda g: keys[id(g)]


def _shuffled_packs(
    problem: Problem,
    counts: list[int],
    base: list[Placement],
    rest: Problem,
    left: list[int],
    best: list[Placement],
    bound: int,
    end: float,
    calibration: Calibration,
) -> list[Placement]:
    """The best of ``best`` and greedy packings under seeded random group orders: the
    rounding's ``base`` completed on its residual ``rest`` (any order), then the whole problem
    (longest first, ties random), ``calibration.random_orders`` tries each. Stops at ``bound``
    or ``end``; deterministic."""
    rng = random.Random(0)
    for tries, target, target_counts, start, longest in (
        (calibration.random_orders[0], rest, left, base, False),
        (calibration.random_orders[1], problem, counts, [], True),
    ):
        for _ in range(tries):
            if _slots(best) >= bound or time.perf_counter() > end:
                return best
            keys: dict[int, tuple[float, ...]] = {
                id(g): ((-g.duration,) if longest else ()) + (rng.random(),) for g in target.groups
            }
            found = start + best_fit_decreasing(target, target_counts, _keyed(keys), end)
            if _slots(found) > _slots(best):
                best = found
    return best


def max_placeable(
    problem: Problem,
    *,
    time_limit_s: float,
    num_workers: int,
    counts: list[int] | None = None,
    witness: bool = True,
    deterministic: bool = False,
    deterministic_time: float | None = None,
    deadline: float | None = None,
    relaxation: bool = True,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> CountResult:
    """The exact maximum of placeable periods (``best == bound`` when proven).

    Best-fit-decreasing greedies and the safe bound of the linear relaxation run first (see the
    module docstring): when a greedy places everything, or meets the bound, or the relaxation's
    optimum is integral, CP-SAT is not called; otherwise the best packing is the CP-SAT model's
    hint and the bound a cut. ``relaxation=False`` skips the relaxation (the plain model, for
    comparisons). ``deterministic`` also bounds CP-SAT's deterministic time (half the limit), so
    a search cut short ends at the same point on a busy machine (proposals rely on it);
    ``deterministic_time`` sets that bound explicitly instead. The wall clock (``time_limit_s``,
    or ``deadline`` when it comes first) covers the greedies and the model building too: past
    it, the best packing is returned unproven.
    """
    t0 = time.perf_counter()
    counts = [g.count for g in problem.groups] if counts is None else counts
    required = sum(g.duration * c for g, c in zip(problem.groups, counts, strict=True))
    if required == 0:
        return _answer(t0, SolveStatus.OPTIMAL, [], 0, "complete")
    end = t0 + max(time_limit_s, calibration.min_work_s)
    if deadline is not None:
        end = min(end, deadline)
    greedy, bound, builder = _packings(problem, counts, required, end, relaxation, calibration)
    if _slots(greedy) == bound or builder is None:
        proof: ProofKind = "complete" if bound == required else "relaxation"
        return _answer(t0, SolveStatus.OPTIMAL, greedy, bound, proof)
    if time.perf_counter() > end:
        return _answer(t0, SolveStatus.UNKNOWN, greedy, bound)
    # The limit covers the greedy and the model building too (issue 12); the deterministic
    # bound stays a share of the whole limit (or the caller's own), so it does not depend on
    # the machine's load.
    if deterministic_time is None and deterministic:
        deterministic_time = calibration.deterministic_share * time_limit_s
    solve = _CountSolve(t0, end, num_workers, deterministic_time, witness)
    return solve.run(problem, builder, greedy, bound, required)


def _answer(
    t0: float, status: SolveStatus, best: list[Placement], bound: int, proof: ProofKind = "cp-sat"
) -> CountResult:
    """The :class:`CountResult` of the packing ``best`` (its runtime from ``t0``)."""
    return CountResult(status, _slots(best), bound, best, time.perf_counter() - t0, proof)


def _packings(
    problem: Problem,
    counts: list[int],
    required: int,
    end: float,
    relaxation: bool,
    calibration: Calibration,
) -> tuple[list[Placement], int, CountModelBuilder | None]:
    """The best greedy packing, the bound it is measured against (the relaxation's certified
    one, else ``required``) and the counting model's builder (``None`` when a packing placed
    everything before the model was needed)."""
    # The first order always runs to the end (issue 24 item 7): it is linear in the window
    # (~35 ms for 20,000 tasks on 1000 days), and a cut one made the answer erratic (a call cut
    # early answered 0 or a few hundred tasks where this greedy places thousands).
    greedy = best_fit_decreasing(problem, counts, PACK_ORDERS[0], None)
    if _slots(greedy) == required:
        return greedy, required, None
    bound = required
    orders: Sequence[Any] = PACK_ORDERS[1 : calibration.pack_orders]
    capacity = problem.free_slots + problem.embed_slots
    small = len(problem.runs) + len(problem.hosts) <= calibration.greedy_first_max_bins
    if small and required <= capacity:
        # Small windows that may fit: the other orders cost less than the relaxation.
        greedy = _pack_orders(problem, counts, orders, greedy, required, end)
        if _slots(greedy) == required:
            return greedy, required, None
        orders = ()
    builder = CountModelBuilder(problem, counts)
    if relaxation and time.perf_counter() < end:
        found, bound = _relaxation_path(problem, counts, builder, greedy, end, calibration)
        if _slots(found) > _slots(greedy):
            greedy = found
        if _slots(greedy) == bound:
            return greedy, bound, builder
    return _pack_orders(problem, counts, orders, greedy, bound, end), bound, builder


@dataclass(frozen=True)
class _CountSolve:
    """The CP-SAT stage of :func:`max_placeable`: its start ``t0``, wall-clock ``end``,
    workers, deterministic time and whether a witness is decoded."""

    t0: float
    end: float
    num_workers: int
    deterministic_time: float | None
    witness: bool

    def run(
        self,
        problem: Problem,
        builder: CountModelBuilder,
        greedy: list[Placement],
        bound: int,
        required: int,
    ) -> CountResult:
        """The counting model hinted with ``greedy`` and cut at ``bound``, solved."""
        try:
            cm = builder.build(CpSatSink(), deadline=self.end)
        except OutOfTime:
            return _answer(self.t0, SolveStatus.UNKNOWN, greedy, bound)
        if bound < required:  # a proven cut: CP-SAT stops as soon as it meets it
            cm.sink.add_row(cm.placed, cm.durations, -INF, bound)
        add_hint(problem, cm, greedy)
        solver = make_solver(
            max(self.end - time.perf_counter(), MIN_TIME_LIMIT_S),
            self.num_workers,
            deterministic_time=self.deterministic_time,
        )
        status = status_of(solver.solve(cm.model))
        if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
            best = round(solver.objective_value)
            if status == SolveStatus.OPTIMAL:
                bound = best
            else:
                bound = min(bound, int(solver.best_objective_bound + 1e-6))
            if best > _slots(greedy):  # else the greedy is as good (a feasible hint is kept)
                values = CpSatSink.values(solver)
                placements = decode(problem, cm, values) if self.witness else []
                runtime = time.perf_counter() - self.t0
                return CountResult(status, best, max(best, bound), placements, runtime)
        return _answer(
            self.t0,
            status if status != SolveStatus.INFEASIBLE else SolveStatus.UNKNOWN,
            greedy,
            max(bound, _slots(greedy)),
        )


def relaxation_bound(
    problem: Problem, counts: Sequence[int] | None = None, *, time_limit_s: float
) -> int | None:
    """A proven upper bound on the placeable periods of ``counts`` tasks (default: all): the
    certified bound of the counting model's linear relaxation, ``None`` if none was certified."""
    cm = CountModelBuilder(problem, counts).build(MatrixSink())
    return solve_relaxation(cm.sink, time_limit_s=time_limit_s).bound


def all_fit(
    problem: Problem,
    counts: list[int],
    *,
    time_limit_s: float,
    num_workers: int,
    calibration: Calibration = DEFAULT_CALIBRATION,
    deterministic_time: float | None = None,
) -> bool | None:
    """Whether all ``counts`` tasks fit at once: True / False (proven) / None (time limit, or
    ``deterministic_time`` of CP-SAT's work when given).

    A greedy packing of everything proves True and a safe relaxation bound below the required
    periods proves False; only the rest goes to CP-SAT.
    """
    if not any(counts):
        return True
    t0 = time.perf_counter()
    required = sum(g.duration * c for g, c in zip(problem.groups, counts, strict=True))
    end = t0 + max(time_limit_s, calibration.min_work_s)
    if _slots(best_fit_decreasing(problem, counts, PACK_ORDERS[0], end)) == required:
        return True
    bound = relaxation_bound(
        problem, counts, time_limit_s=max(end - time.perf_counter(), MIN_TIME_LIMIT_S)
    )
    if bound is not None and bound < required:
        return False
    cm = CountModelBuilder(problem, counts, place_all=True).build(CpSatSink())
    solver = make_solver(
        max(time_limit_s - (time.perf_counter() - t0), MIN_TIME_LIMIT_S),
        num_workers,
        deterministic_time=deterministic_time,
    )
    status = status_of(solver.solve(cm.model))
    if status == SolveStatus.INFEASIBLE:
        return False
    if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return True
    return None


def min_extra_days(
    problem: Problem, *, time_limit_s: float, num_workers: int, infeasible: bool = False
) -> tuple[int | None, bool]:
    """Smallest number of empty days to append so that every scope task fits.

    Returns ``(days, proven)``; ``(None, True)`` means no number of extra days suffices (a task's
    class window ends before the window does, or its banned periods leave no run long enough).
    ``infeasible``: the caller has proven that ``problem`` does not place everything (then,
    when no task may take an appended day, no number suffices without another proof).
    """
    upper = problem.task_count  # one task per extra day always suffices, if anything does
    if upper == 0:
        return 0, True
    t0 = time.perf_counter()
    if infeasible and not any(
        g.rule.allows_day(problem.num_days + 1, problem.num_days) for g in problem.groups
    ):
        return None, True  # appended days are room no task may take
    found = _min_extra_days_cheap(problem, upper, t0 + time_limit_s)
    if found is not None:
        return found
    return _min_extra_days_exact(
        problem, upper, max(time_limit_s - (time.perf_counter() - t0), 0.0), num_workers
    )


def with_extra_days(problem: Problem, days: int) -> Problem:
    """``problem`` with ``days`` empty days appended: as many free runs of a whole day, each on
    day ``num_days + 1`` (what the counting model's extra-day type stands for: the rules allow
    every appended day alike, :meth:`.problem.Rule.allows_day`)."""
    extra = Bin(problem.num_days + 1, 1, problem.slots_per_day)
    return replace(problem, runs=[*problem.runs, *([extra] * days)])


def _min_extra_days_cheap(
    problem: Problem, upper: int, end: float
) -> tuple[int | None, bool] | None:
    """:func:`min_extra_days` without CP-SAT when cheap proofs settle it, else ``None``: the
    fewest appended days with which a greedy packing places everything (binary search), proven
    least when the relaxation's certified bound shows one day fewer cannot place everything
    (fitting only gets easier with more days); ``(None, True)`` when even ``upper`` days leave
    the relaxation's bound below the required periods."""
    required = problem.required_slots

    def packs(days: int) -> bool:
        placed = best_fit_decreasing(with_extra_days(problem, days), None, PACK_ORDERS[0], None)
        return _slots(placed) == required

    def short(days: int) -> bool:
        left = end - time.perf_counter()
        if left <= 0:
            return False
        bound = relaxation_bound(with_extra_days(problem, days), time_limit_s=left)
        return bound is not None and bound < required

    if packs(0):
        return 0, True
    if not packs(upper):
        return (None, True) if short(upper) else None
    # the periods missing, a day's worth per day: the first guess (the proof does not rest on it)
    missing = required - problem.free_slots - problem.embed_slots
    guess = min(upper, max(1, -(-missing // problem.slots_per_day)))
    lo, hi = 0, guess  # not packs(lo); packs(hi) is found below
    step = 1
    while hi < upper and not packs(hi):
        if time.perf_counter() > end:
            return None
        lo, hi, step = hi, min(upper, hi + step), 2 * step
    while hi - lo > 1:
        if time.perf_counter() > end:
            return None
        mid = (lo + hi) // 2
        if packs(mid):
            hi = mid
        else:
            lo = mid
    return (hi, True) if short(hi - 1) else None


def _min_extra_days_exact(
    problem: Problem, upper: int, time_limit_s: float, num_workers: int
) -> tuple[int | None, bool]:
    """:func:`min_extra_days` by the CP-SAT counting model (its extra days a variable,
    minimised)."""
    t0 = time.perf_counter()
    cm = build(problem, place_all=True, extra_days_max=upper)
    solver = make_solver(
        max(time_limit_s - (time.perf_counter() - t0), MIN_TIME_LIMIT_S), num_workers
    )
    status = status_of(solver.solve(cm.model))
    if status == SolveStatus.INFEASIBLE:
        return None, True
    if status == SolveStatus.OPTIMAL:
        return int(CpSatSink.values(solver)[cm.extra_days or 0]), True
    return None, False
