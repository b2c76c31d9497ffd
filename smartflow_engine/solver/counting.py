"""The aggregated CP-SAT model: place *counts* of interchangeable tasks into *types* of bins.

Exactness. Free runs on different days with the same periods and the same set of allowed groups
(class day windows) are identical bins: one run type with multiplicity ``m``. A variable
``x[t, g, s]`` counts how many copies of type ``t`` hold a group-``g`` task starting at ``s``;
every period of the type is covered at most ``m`` times. Because intervals on a line form a perfect
(interval) graph, a multiset of intervals that covers every point at most ``m`` times splits into
``m`` sets of pairwise disjoint intervals, one per copy, so the counts are exactly realisable
(:func:`decode` does the split greedily by start). Host blocks are typed the same way and take at
most one guest each. The model's size depends on the number of distinct (duration, class
constraints) groups and bin types, not on the number of tasks or of days.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ._cpsat import SolveStatus, cp_model, make_solver, status_of
from .problem import Bin, Placement, Problem


@dataclass
class CountModel:
    """A built counting model and the handles needed to read a solution back."""

    model: Any
    counts: list[int]
    placed: list[Any]  # per group: IntVar, number placed
    run_x: list[tuple[int, int, int, Any]] = field(default_factory=list)  # type, group, start, var
    host_y: list[tuple[int, int, Any]] = field(default_factory=list)  # type, group, var
    run_types: list[list[Bin]] = field(default_factory=list)
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


def _type_key(problem: Problem, b: Bin, rule_idx: dict[Any, int]) -> tuple[Any, ...]:
    sig = tuple(rule.allows_day(b.day, problem.num_days) for rule in rule_idx)
    return (b.slot_start, b.slot_end, sig)


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
    rule_idx: dict[Any, int] = {}
    for g in groups:
        rule_idx.setdefault(g.rule, len(rule_idx))

    run_groups: dict[tuple[Any, ...], list[Bin]] = defaultdict(list)
    for b in problem.runs:
        run_groups[_type_key(problem, b, rule_idx)].append(b)
    host_groups: dict[tuple[Any, ...], list[Bin]] = defaultdict(list)
    for b in problem.hosts:
        host_groups[_type_key(problem, b, rule_idx)].append(b)

    terms: list[list[Any]] = [[] for _ in groups]
    cm = CountModel(model, counts, [])
    active = [gi for gi, c in enumerate(counts) if c > 0]

    def add_run_type(bins: list[Bin], mult: Any, mult_max: int) -> None:
        t = len(cm.run_types)
        cm.run_types.append(bins)
        proto = bins[0] if bins else Bin(problem.num_days + 1, 1, problem.slots_per_day)
        cover: dict[int, list[Any]] = defaultdict(list)
        for gi in active:
            g = groups[gi]
            for s in problem.starts(g, proto):
                var = model.new_int_var(0, min(mult_max, counts[gi]), "")
                cm.run_x.append((t, gi, s, var))
                terms[gi].append(var)
                for p in range(s, s + g.duration):
                    cover[p].append(var)
        for vars_ in cover.values():
            if len(vars_) > 1 or not isinstance(mult, int):
                model.add(sum(vars_) <= mult)

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
    """Split a solution's counts into concrete placements of concrete tasks."""
    queues = [list(g.task_ids) for g in problem.groups]
    out: list[Placement] = []
    by_type: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for t, gi, s, var in cm.run_x:
        n = int(solver.value(var))
        if n and cm.run_types[t]:
            by_type[t].extend([(s, s + problem.groups[gi].duration - 1, gi)] * n)
    for t, intervals in by_type.items():
        bins = cm.run_types[t]
        last_end = [0] * len(bins)
        for s, e, gi in sorted(intervals):
            # Interval-graph colouring by start: a copy whose last interval ended is always free.
            c = next(i for i, end in enumerate(last_end) if end < s)
            last_end[c] = e
            out.append(Placement(queues[gi].pop(0), bins[c].day, s, e))
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


def max_placeable(
    problem: Problem,
    *,
    time_limit_s: float,
    num_workers: int,
    counts: list[int] | None = None,
    witness: bool = True,
) -> CountResult:
    """The exact maximum of placeable periods (``best == bound`` when proven)."""
    t0 = time.perf_counter()
    counts = [g.count for g in problem.groups] if counts is None else counts
    required = sum(g.duration * c for g, c in zip(problem.groups, counts, strict=True))
    if required == 0:
        return CountResult(SolveStatus.OPTIMAL, 0, 0, [], time.perf_counter() - t0)
    cm = build(problem, counts)
    solver = make_solver(time_limit_s, num_workers)
    status = status_of(solver.solve(cm.model))
    if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        best = round(solver.objective_value)
        bound = min(required, int(solver.best_objective_bound + 1e-6))
        if status == SolveStatus.OPTIMAL:
            bound = best
        placements = decode(problem, cm, solver) if witness else []
    else:
        best, bound, placements = 0, required, []
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
