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
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._cpsat import SolveStatus, cp_model, make_solver, status_of
from .baselines import best_pack
from .patterns import MAX_PATTERNS, KindSpec, count_patterns, run_patterns
from .problem import Bin, Placement, Problem


@dataclass
class RunType:
    """One run type of a built model: its bins, kinds, patterns and pattern variables."""

    bins: list[Bin]
    spec: KindSpec
    counts: np.ndarray  # (patterns, kinds)
    layouts: tuple[tuple[int, ...], ...]
    p: list[Any]  # per pattern: IntVar, copies taking it (pattern encoding)
    x: list[tuple[int, int, Any]] = field(default_factory=list)  # (kind, offset, var) coverage
    kind_of: dict[int, int] = field(default_factory=dict)  # group -> kind index


@dataclass
class CountModel:
    """A built counting model and the handles needed to read a solution back.

    ``split`` rows ``(type, kind, group, var)``: tasks of ``group`` placed in copies of run type
    ``type`` as kind ``kind``; ``host_y`` rows ``(type, group, var)``: guests of ``group`` in
    host blocks of host type ``type``.
    """

    model: Any
    counts: list[int]
    placed: list[Any]  # per group: IntVar, number placed
    run_types: list[RunType] = field(default_factory=list)
    split: list[tuple[int, int, int, Any]] = field(default_factory=list)
    host_y: list[tuple[int, int, Any]] = field(default_factory=list)
    host_types: list[list[Bin]] = field(default_factory=list)
    extra_days: Any | None = None  # IntVar: number of appended empty days


@dataclass
class CountResult:
    status: SolveStatus
    best: int  # best placed slots found (a lower bound on the maximum)
    bound: int  # proven upper bound on the maximum
    witness: list[Placement]
    runtime_s: float

    @property
    def proven(self) -> bool:
        return self.status.proven or self.best == self.bound


def _relative(banned: tuple[int, ...], b: Bin) -> tuple[int, ...]:
    return tuple(p - b.slot_start for p in banned if b.slot_start <= p <= b.slot_end)


def build(
    problem: Problem,
    counts: list[int] | None = None,
    *,
    place_all: bool = False,
    extra_days_max: int = 0,
) -> CountModel:
    """Build the counting model.

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
    cpm = cp_model()
    model = cpm.CpModel()
    groups = problem.groups
    counts = [g.count for g in groups] if counts is None else list(counts)
    active = [gi for gi, c in enumerate(counts) if c > 0]
    rules = list(dict.fromkeys(groups[gi].rule for gi in active))
    banned_sets = list(dict.fromkeys(r.banned for r in rules if r.banned))
    num_days = problem.num_days

    def key(b: Bin) -> tuple[Any, ...]:
        sig = tuple(r.allows_day(b.day, num_days) for r in rules)
        return (b.length, sig, tuple(_relative(bs, b) for bs in banned_sets))

    run_groups: dict[tuple[Any, ...], list[Bin]] = defaultdict(list)
    for b in problem.runs:
        run_groups[key(b)].append(b)
    host_groups: dict[tuple[Any, ...], list[Bin]] = defaultdict(list)
    for b in problem.hosts:
        host_groups[key(b)].append(b)

    terms: list[list[Any]] = [[] for _ in groups]
    cm = CountModel(model, counts, [])

    def add_run_type(bins: list[Bin], mult: Any, mult_max: int) -> None:
        t = len(cm.run_types)
        proto = bins[0] if bins else Bin(num_days + 1, 1, problem.slots_per_day)
        by_kind: dict[tuple[int, tuple[int, ...]], list[int]] = defaultdict(list)
        for gi in active:
            g = groups[gi]
            starts = problem.starts(g, proto)
            if starts:
                offsets = tuple(s - proto.slot_start for s in starts)
                by_kind[(g.duration, offsets)].append(gi)
        if not by_kind:
            return
        spec: KindSpec = tuple(sorted(by_kind))
        supplies: list[Any]
        caps: list[int]
        pattern_count = count_patterns(proto.length, spec)
        if pattern_count <= MAX_PATTERNS:
            pat_counts, layouts = run_patterns(proto.length, spec)
            ps = [model.new_int_var(0, mult_max, "") for _ in layouts]
            rt = RunType(bins, spec, pat_counts, layouts, ps)
            if len(ps) > 1 or not isinstance(mult, int):
                model.add(sum(ps) <= mult)
            supplies, caps = [], []
            for k in range(len(spec)):
                col = pat_counts[:, k].tolist()
                supplies.append(sum(c * ps[i] for i, c in enumerate(col) if c))
                caps.append(max(col) * mult_max)
        else:
            rt = RunType(bins, spec, np.zeros((0, len(spec)), dtype=np.int64), (), [])
            cover: dict[int, list[Any]] = defaultdict(list)
            supplies, caps = [], []
            for k, (d, offsets) in enumerate(spec):
                xs = []
                for off in offsets:
                    var = model.new_int_var(0, mult_max, "")
                    rt.x.append((k, off, var))
                    xs.append(var)
                    for q in range(off, off + d):
                        cover[q].append(var)
                supplies.append(sum(xs))
                caps.append(mult_max * (proto.length // d))
            for vars_ in cover.values():
                if len(vars_) > 1 or not isinstance(mult, int):
                    model.add(sum(vars_) <= mult)
        cm.run_types.append(rt)
        for k, kind in enumerate(spec):
            zs = []
            for gi in by_kind[kind]:
                z = model.new_int_var(0, min(counts[gi], caps[k]), "")
                rt.kind_of[gi] = k
                cm.split.append((t, k, gi, z))
                terms[gi].append(z)
                zs.append(z)
            model.add(sum(zs) <= supplies[k])

    for bins in run_groups.values():
        add_run_type(bins, len(bins), len(bins))
    if extra_days_max > 0:
        cm.extra_days = model.new_int_var(0, extra_days_max, "extra_days")
        add_run_type([], cm.extra_days, extra_days_max)

    for bins in host_groups.values():
        t = len(cm.host_types)
        cm.host_types.append(bins)
        ys = []
        for gi in active:
            if problem.starts(groups[gi], bins[0]):
                var = model.new_int_var(0, min(len(bins), counts[gi]), "")
                cm.host_y.append((t, gi, var))
                terms[gi].append(var)
                ys.append(var)
        if len(ys) > 1:
            model.add(sum(ys) <= len(bins))

    for gi, c in enumerate(counts):
        var = model.new_int_var(c if place_all else 0, c, f"placed_{gi}")
        model.add(var == sum(terms[gi]))
        cm.placed.append(var)
    if place_all:
        if cm.extra_days is not None:
            model.minimize(cm.extra_days)
    else:
        model.maximize(sum(g.duration * v for g, v in zip(groups, cm.placed, strict=True)))
    return cm


def decode(problem: Problem, cm: CountModel, solver: Any) -> list[Placement]:
    """Turn a solution's pattern and split counts into placements of concrete tasks."""
    queues = [list(g.task_ids) for g in problem.groups]
    out: list[Placement] = []
    items: dict[tuple[int, int], list[tuple[Bin, int]]] = defaultdict(list)  # (type, kind)
    for t, rt in enumerate(cm.run_types):
        if not rt.bins:
            continue
        intervals = sorted((off, off + rt.spec[k][0] - 1, k)
                           for k, off, var in rt.x for _ in range(int(solver.value(var))))
        last_end = [-1] * len(rt.bins)
        for s0, e0, k in intervals:
            # Interval-graph colouring by start: a copy whose last interval ended is always free.
            c = next(i for i, end in enumerate(last_end) if end < s0)
            last_end[c] = e0
            items[(t, k)].append((rt.bins[c], s0))
        copy = 0
        for i, var in enumerate(rt.p):
            for _ in range(int(solver.value(var))):
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
        for _ in range(int(solver.value(z))):
            b, off = pool.pop()
            s = b.slot_start + off
            out.append(Placement(queues[gi].pop(0), b.day, s, s + d - 1))
    used: dict[int, int] = defaultdict(int)
    for t, gi, var in cm.host_y:
        g = problem.groups[gi]
        for _ in range(int(solver.value(var))):
            b = cm.host_types[t][used[t]]
            used[t] += 1
            s = problem.starts(g, b)[0]
            out.append(Placement(queues[gi].pop(0), b.day, s, s + g.duration - 1, b.host))
    out.sort(key=lambda p: (p.day, p.slot_start, p.task_id))
    return out


def add_hint(problem: Problem, cm: CountModel, placements: list[Placement]) -> None:
    """Hint every variable of ``cm`` with the counts of a concrete (partial) placement."""
    where = {(b.day, b.slot_start): (t, b) for t, rt in enumerate(cm.run_types) for b in rt.bins}
    run_starts: dict[int, list[int]] = defaultdict(list)
    for b in problem.runs:
        run_starts[b.day].append(b.slot_start)
    host_type = {(b.day, b.slot_start, b.host): t
                 for t, bins in enumerate(cm.host_types) for b in bins}
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
            hb = next(b for b in host_blocks[(p.day, p.embed_host)]
                      if b.slot_start <= p.slot_start and p.slot_end <= b.slot_end)
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
    model = cm.model
    for t, rt in enumerate(cm.run_types):
        used_copies = sum(v for (tt, _), v in ps.items() if tt == t)
        free_copies = len(rt.bins) - used_copies
        for i, var in enumerate(rt.p):
            # Unused copies take the first pattern: harmless, supply may exceed demand.
            extra = free_copies if i == 0 else 0
            model.add_hint(var, ps.get((t, i), 0) + extra)
        for k, off, var in rt.x:
            model.add_hint(var, xs.get((t, k, off), 0))
    for t, k, gi, z in cm.split:
        model.add_hint(z, zs.get((t, k, gi), 0))
    for t, gi, var in cm.host_y:
        model.add_hint(var, ys.get((t, gi), 0))
    for gi, var in enumerate(cm.placed):
        model.add_hint(var, placed[gi])


def max_placeable(
    problem: Problem,
    *,
    time_limit_s: float,
    num_workers: int,
    counts: list[int] | None = None,
    witness: bool = True,
    deterministic: bool = False,
    deterministic_time: float | None = None,
) -> CountResult:
    """The exact maximum of placeable periods (``best == bound`` when proven).

    Best-fit-decreasing greedies run first: when one places everything, its placement proves
    feasibility and CP-SAT is not called; otherwise the best is the CP-SAT model's hint.
    ``deterministic`` also bounds CP-SAT's deterministic time (half the limit), so a search cut
    short ends at the same point on a busy machine (proposals rely on it); ``deterministic_time``
    sets that bound explicitly instead.
    """
    t0 = time.perf_counter()
    counts = [g.count for g in problem.groups] if counts is None else counts
    required = sum(g.duration * c for g, c in zip(problem.groups, counts, strict=True))
    if required == 0:
        return CountResult(SolveStatus.OPTIMAL, 0, 0, [], time.perf_counter() - t0)
    greedy = best_pack(problem, counts)
    greedy_slots = sum(p.length for p in greedy)
    if greedy_slots == required:
        return CountResult(SolveStatus.OPTIMAL, required, required, greedy,
                           time.perf_counter() - t0)
    cm = build(problem, counts)
    add_hint(problem, cm, greedy)
    solver = make_solver(time_limit_s, num_workers, deterministic=deterministic,
                         deterministic_time=deterministic_time)
    status = status_of(solver.solve(cm.model))
    if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        best = round(solver.objective_value)
        bound = min(required, int(solver.best_objective_bound + 1e-6))
        if status == SolveStatus.OPTIMAL:
            bound = best
        placements = decode(problem, cm, solver) if witness else []
        if best < greedy_slots:  # cannot happen with a feasible hint; kept as a guard
            best, placements = greedy_slots, greedy
    else:
        best, bound, placements = greedy_slots, required, greedy
    return CountResult(status, best, max(best, bound), placements, time.perf_counter() - t0)


def all_fit(
    problem: Problem, counts: list[int], *, time_limit_s: float, num_workers: int
) -> bool | None:
    """Whether all ``counts`` tasks fit at once: True / False (proven) / None (time limit)."""
    if not any(counts):
        return True
    cm = build(problem, counts, place_all=True)
    solver = make_solver(time_limit_s, num_workers)
    status = status_of(solver.solve(cm.model))
    if status == SolveStatus.INFEASIBLE:
        return False
    if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return True
    return None


def min_extra_days(
    problem: Problem, *, time_limit_s: float, num_workers: int
) -> tuple[int | None, bool]:
    """Smallest number of empty days to append so that every scope task fits.

    Returns ``(days, proven)``; ``(None, True)`` means no number of extra days suffices (a task's
    class window ends before the window does, or its banned periods leave no run long enough).
    """
    upper = problem.task_count  # one task per extra day always suffices, if anything does
    if upper == 0:
        return 0, True
    cm = build(problem, place_all=True, extra_days_max=upper)
    solver = make_solver(time_limit_s, num_workers)
    status = status_of(solver.solve(cm.model))
    if status == SolveStatus.INFEASIBLE:
        return None, True
    if status == SolveStatus.OPTIMAL:
        return int(solver.value(cm.extra_days)), True
    return None, False
