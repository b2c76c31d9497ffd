"""The exact maximum of placeable periods with the item order as precedence (issue 42).

The counting models (:mod:`.counting`) place counts of interchangeable tasks: they hold every
mask (days, weekdays, dates, periods, water-course permission, the order segments) but not the
order among the items they place. Their maximum is therefore an upper bound; when its witness,
relabelled by :func:`.order.keep_order`, keeps every item, the bound is met and nothing more is
needed. When it does not, this model decides: one boolean per task and place (the places of
:meth:`.problem.Problem.starts`), each free period and host block used at most once, and for
two placed items of one class with orders a < b, ``end(a) < start(b)`` (a big-M precedence on
the global period index).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..state import ScheduleState, order_key
from ._cpsat import SolveStatus, make_solver, status_of
from .budget import DEFAULT_CALIBRATION, Calibration
from .order_spans import task_of
from .problem import Placement, Problem


def has_inner_order(state: ScheduleState, problem: Problem) -> bool:
    """Whether two scope tasks of one class have different orders (the counting models do not
    hold the order between them)."""
    seen: dict[int, int] = {}
    for g in problem.groups:
        for tid in g.task_ids:
            key = order_key(task_of(state, tid))
            if key is None:
                continue
            if key[0] in seen and seen[key[0]] != key[1]:
                return True
            seen.setdefault(key[0], key[1])
    return False


def max_placeable_ordered(
    state: ScheduleState,
    problem: Problem,
    *,
    time_limit_s: float,
    num_workers: int,
    upper: int | None = None,
    hint: Sequence[Placement] = (),
    calibration: Calibration = DEFAULT_CALIBRATION,
    targets: dict[int, tuple[int, int]] | None = None,
    work_s: float | None = None,
) -> tuple[SolveStatus, int, int, list[Placement]]:
    """``(status, best, bound, placements)``: the most periods the scope of ``problem`` places
    keeping every rule, the order among the scope's items included. ``upper``: a proven bound
    (the counting model's); ``hint``: an order-keeping placement to start from;
    ``calibration``: the model's limits (:func:`solve_ordered`); ``targets``: per task a place
    to stay near (among the maxima, the least distance; the bound is then not claimed);
    ``work_s``: CP-SAT's deterministic time (:func:`solve_ordered`)."""
    t0 = time.perf_counter()
    options: dict[int, list[Placement]] = {}
    for g in problem.groups:
        if time.perf_counter() - t0 > calibration.ordered_build_share * time_limit_s:
            best = sum(p.length for p in hint)  # (the places alone took the building's share)
            return SolveStatus.UNKNOWN, best, upper if upper is not None else best, list(hint)
        d = g.duration
        for tid in g.task_ids:
            opts = [
                Placement(tid, b.day, s, s + d - 1)
                for b in problem.runs
                for s in problem.starts(g, b)
            ]
            for hb in problem.hosts:  # one guest per block: its first start stands for all
                opts += [
                    Placement(tid, hb.day, hs, hs + d - 1, hb.host)
                    for hs in problem.starts(g, hb)[:1]
                ]
            options[tid] = opts
    return solve_ordered(
        state,
        options,
        problem.slots_per_day,
        problem.num_days,
        num_workers=num_workers,
        upper=upper,
        hint=hint,
        targets=targets,
        calibration=calibration,
        work_s=work_s,
        time_limit_s=time_limit_s - (time.perf_counter() - t0),
    )


def solve_ordered(
    state: ScheduleState,
    options: dict[int, list[Placement]],
    spd: int,
    num_days: int,
    *,
    time_limit_s: float,
    num_workers: int,
    upper: int | None = None,
    hint: Sequence[Placement] = (),
    targets: dict[int, tuple[int, int]] | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
    work_s: float | None = None,
) -> tuple[SolveStatus, int, int, list[Placement]]:
    """The most periods of ``options`` (per task, the places every other rule allows it)
    placed at once: a task at most once, a free period and a host block's guest seat once, and
    for two placed items a < b of one class ``end(a) < start(b)`` (as a running frontier). ``targets``: per task a
    ``(day, period)`` it should stay near; then among the maxima the least total distance (in
    periods) wins. Returns ``(status, best, bound, placements)``. The model's size and build
    time are bounded by ``calibration`` (``ordered_max_options``, ``ordered_build_share``);
    ``work_s``: CP-SAT's deterministic time, so that with one worker what it finds is the same
    on any machine the wall clock (``time_limit_s``) does not cut (a caller sees the cut as an
    answer short of optimal at the end of its limit)."""
    t0 = time.perf_counter()

    def unknown() -> tuple[SolveStatus, int, int, list[Placement]]:
        best = sum(p.length for p in hint)
        return SolveStatus.UNKNOWN, best, upper if upper is not None else best, list(hint)

    if sum(len(o) for o in options.values()) > calibration.ordered_max_options:
        return unknown()
    # the model's building holds the limit too
    built = OrderedModel(spd, num_days, t0 + calibration.ordered_build_share * time_limit_s)
    if not built.build(state, options, upper, targets, hint):
        return unknown()
    solver = make_solver(
        max(time_limit_s - (time.perf_counter() - t0), 0.05),
        num_workers,
        deterministic_time=work_s,
    )
    status = status_of(solver.solve(built.model))
    if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return unknown()
    out = [p for here in built.chosen.values() for v, p in here if solver.value(v)]
    best = sum(p.length for p in out)
    if status == SolveStatus.OPTIMAL:
        bound = best
    elif targets:
        bound = upper if upper is not None else sum(p.length for p in hint) + built.big
    else:
        bound = int(solver.best_objective_bound + 1e-6)
    return status, best, bound, out


class OrderedModel:
    """The CP-SAT model of :func:`solve_ordered`, built one constraint family at a time (each a
    method: a new rule of the exact ordered model is a method of its own, called from
    :meth:`build`). ``build_until``: a ``time.perf_counter()`` value past which the building
    stops (:meth:`build` then answers False)."""

    def __init__(self, spd: int, num_days: int, build_until: float) -> None:
        from ortools.sat.python import cp_model

        self.cp = cp_model
        self.model = cp_model.CpModel()
        self.spd = spd
        self.big = (num_days + 1) * spd + 1  # past every period index
        self.build_until = build_until
        # per task, (chosen, place) of each of its places
        self.chosen: dict[int, list[tuple[Any, Placement]]] = {}
        self.gain: list[tuple[Any, int]] = []  # (chosen, periods) of every place

    def index(self, day: int, period: int) -> int:
        """The global period index of ``period`` of ``day``."""
        return (day - 1) * self.spd + period

    def _late(self) -> bool:
        return time.perf_counter() > self.build_until

    def build(
        self,
        state: ScheduleState,
        options: dict[int, list[Placement]],
        upper: int | None,
        targets: dict[int, tuple[int, int]] | None,
        hint: Sequence[Placement],
    ) -> bool:
        """Every constraint family and the objective; False when the build time ran out."""
        if not self.add_places(options):
            return False
        if not self.add_precedence(state):
            return False
        if self._late():
            return False
        self.set_objective(upper, targets)
        self.add_hint(hint)
        return True

    def add_places(self, options: dict[int, list[Placement]]) -> bool:
        """One boolean per task and place, a task at most once, a free period and a host
        block's guest seat at most once."""
        cells: dict[tuple[int, int], list[Any]] = defaultdict(list)
        host_use: dict[tuple[int, int], list[Any]] = defaultdict(list)
        for tid, opts in options.items():
            if self._late():
                return False
            here: list[tuple[Any, Placement]] = []
            for pl in opts:
                v = self.model.new_bool_var(f"x{tid}_{pl.day}_{pl.slot_start}_{pl.embed_host}")
                here.append((v, pl))
                if pl.embed_host is None:
                    for p in range(pl.slot_start, pl.slot_end + 1):
                        cells[(pl.day, p)].append(v)
                else:
                    host_use[(pl.day, pl.embed_host)].append(v)
                self.gain.append((v, pl.length))
            if here:
                self.model.add_at_most_one(v for v, _ in here)
            self.chosen[tid] = here
        for vs in (*cells.values(), *host_use.values()):
            if len(vs) > 1:
                self.model.add_at_most_one(vs)
        return True

    def add_precedence(self, state: ScheduleState) -> bool:
        """The item order as a running frontier per class (linear in the items, not in their
        pairs): ``F_g >= end`` of every item of order group g (an unplaced item's end is 0) and
        ``F_g >= F_(g-1)``; an item of group g, when placed, starts after ``F_(g-1)``. Equal
        orders share a group: they do not constrain each other."""
        by_class: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for tid, here in self.chosen.items():
            key = order_key(task_of(state, tid))
            if key is not None and here:
                by_class[key[0]].append((key[1], tid))
        ends: dict[int, tuple[Any, Any, Any]] = {}  # task -> (start, end, placed)
        for items in by_class.values():
            if self._late():
                return False
            for _, tid in items:
                ends[tid] = self._span(tid)
        for items in by_class.values():
            self._frontier(sorted(items), ends)
        return True

    def _span(self, tid: int) -> tuple[Any, Any, Any]:
        """(start, end, placed) of task ``tid`` as linear expressions of its choices."""
        weighted = self.cp.LinearExpr.weighted_sum
        here = self.chosen[tid]
        vs = [v for v, _ in here]
        start = weighted(vs, [self.index(p.day, p.slot_start) for _, p in here])
        end = weighted(vs, [self.index(p.day, p.slot_end) for _, p in here])
        return start, end, self.cp.LinearExpr.sum(vs)

    def _frontier(
        self, items: list[tuple[int, int]], ends: dict[int, tuple[Any, Any, Any]]
    ) -> None:
        """The frontier constraints of one class's ``items`` ((order, task), sorted)."""
        groups: list[list[int]] = []
        last_order: int | None = None
        for order, tid in items:
            if order != last_order:
                groups.append([])
                last_order = order
            groups[-1].append(tid)
        frontier: Any = None
        for group in groups:
            if frontier is not None:
                for tid in group:
                    start, _, placed = ends[tid]
                    self.model.add(start + self.big * (1 - placed) >= frontier + 1)
            nxt = self.model.new_int_var(0, self.big, "")
            for tid in group:
                self.model.add(nxt >= ends[tid][1])
            if frontier is not None:
                self.model.add(nxt >= frontier)
            frontier = nxt

    def set_objective(self, upper: int | None, targets: dict[int, tuple[int, int]] | None) -> None:
        """Most periods placed (at most ``upper``); with ``targets``, then the least total
        distance of each task from its target."""
        weighted = self.cp.LinearExpr.weighted_sum
        total = weighted([v for v, _ in self.gain], [w for _, w in self.gain])
        if upper is not None:
            self.model.add(total <= upper)
        if not targets:
            self.model.maximize(total)
            return
        scale = self.big * max(1, len(self.chosen))
        far = [
            (v, abs(self.index(p.day, p.slot_start) - self.index(*targets[tid])))
            for tid, here in self.chosen.items()
            if tid in targets
            for v, p in here
        ]
        distance = weighted([v for v, _ in far], [d for _, d in far])
        self.model.maximize(scale * total - distance)

    def add_hint(self, hint: Sequence[Placement]) -> None:
        """Start from ``hint`` (every other place off)."""
        hinted = {(p.task_id, p.day, p.slot_start, p.embed_host) for p in hint}
        for here in self.chosen.values():
            for v, pl in here:
                self.model.add_hint(v, (pl.task_id, pl.day, pl.slot_start, pl.embed_host) in hinted)
