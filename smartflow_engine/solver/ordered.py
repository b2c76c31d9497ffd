"""The exact maximum of placeable periods with the item order as precedence (issue 42).

The counting models (:mod:`.counting`) place counts of interchangeable tasks: they hold every
mask (days, weekdays, dates, periods, water-course permission, the order segments) but not the
order among the items they place. Their maximum is therefore an upper bound; when its witness,
relabelled by :func:`.order.keep_order`, keeps every item, the bound is met and nothing more is
needed. When it does not, this model decides: one boolean per task and place (the places of
:meth:`.problem.Problem.starts`), each free period and host block used at most once, and for
two placed items of one class with orders a < b, ``end(a) < start(b)``.

The order is an order-encoded boolean frontier per class and order group on the global period
index (``f[g][t]``: a placed item of order <= g ends at or after t), tied to the places by
two-literal implications (:meth:`OrderedModel.add_precedence`): exact, and it propagates where
the big-M running frontier it replaced (kept as the peer of ``benchmarks/bench_ordered.py``)
waited for the LP. Three additions, each exact or a proven relaxation: runs of interchangeable
items are placed as a prefix (symmetry), each class's periods are capped by what its chain
places alone in order (:func:`_chain_max`, a dynamic programme), and one class's chain on its
own (the exact chains of :func:`.order.keep_order`) is solved by that programme outright
(:func:`_solve_chain`), with no CP-SAT call.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from ..state import ScheduleState, Task, order_key
from ._cpsat import SolveStatus, make_solver, status_of
from .budget import DEFAULT_CALIBRATION, Calibration
from .order_spans import task_of
from .problem import Bin, Placement, Problem


def has_inner_order(state: ScheduleState, problem: Problem) -> bool:
    """Whether two scope tasks of one class have different orders (the counting models do not
    hold the order between them)."""
    return tasks_have_inner_order(task_of(state, tid) for g in problem.groups for tid in g.task_ids)


def tasks_have_inner_order(tasks: Iterable[Task]) -> bool:
    """Whether two of ``tasks`` are items of one class with different orders."""
    seen: dict[int, int] = {}
    for task in tasks:
        key = order_key(task)
        if key is not None and seen.setdefault(key[0], key[1]) != key[1]:
            return True
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
    model: type[OrderedModel] | None = None,
) -> tuple[SolveStatus, int, int, list[Placement]]:
    """``(status, best, bound, placements)``: the most periods the scope of ``problem`` places
    keeping every rule, the order among the scope's items included. ``upper``: a proven bound
    (the counting model's); ``hint``: an order-keeping placement to start from;
    ``calibration``: the model's limits (:func:`solve_ordered`); ``targets``: per task a place
    to stay near (among the maxima, the least distance; the bound is then not claimed);
    ``work_s``: CP-SAT's deterministic time; ``model``: the model's class (both
    :func:`solve_ordered`)."""
    t0 = time.perf_counter()
    until = t0 + calibration.ordered_build_share * time_limit_s
    options = place_options(problem, late=lambda: time.perf_counter() > until)
    if options is None:  # (the places alone took the building's share)
        best = sum(p.length for p in hint)
        return SolveStatus.UNKNOWN, best, upper if upper is not None else best, list(hint)
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
        model=model,
        host_blocks=problem.hosts,
    )


def place_options(
    problem: Problem, *, every_guest_start: bool = False, late: Callable[[], bool] = lambda: False
) -> dict[int, list[Placement]] | None:
    """Per scope task, the places every rule but the item order allows it: each start of its
    group in the free runs, and in each host block its guests may use the first start (every
    start with ``every_guest_start``: where in the block an item sits matters to its order
    against its class's other items). None when ``late()`` turns true between groups."""
    options: dict[int, list[Placement]] = {}
    for g in problem.groups:
        if late():
            return None
        d = g.duration
        free = [(b.day, s, s + d - 1, None) for b in problem.runs for s in problem.starts(g, b)]
        guest = [
            (hb.day, hs, hs + d - 1, hb.host)
            for hb in problem.hosts
            for hs in (problem.starts(g, hb) if every_guest_start else problem.starts(g, hb)[:1])
        ]
        for tid in g.task_ids:
            options[tid] = [Placement(tid, *place) for place in (*free, *guest)]
    return options


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
    model: type[OrderedModel] | None = None,
    host_blocks: Sequence[Bin] = (),
) -> tuple[SolveStatus, int, int, list[Placement]]:
    """The most periods of ``options`` (per task, the places every other rule allows it)
    placed at once: a task at most once, a free period and a host block's guest seat once, and
    for two placed items a < b of one class ``end(a) < start(b)`` (:class:`OrderedModel`; one
    class's chain alone by :func:`_solve_chain`). ``targets``: per task a ``(day, period)`` it
    should stay near; then among the maxima the least total distance (in periods) wins.
    Returns ``(status, best, bound, placements)``. The model's size and build time are bounded
    by ``calibration`` (``ordered_max_options``, ``ordered_build_share``,
    ``ordered_solve_per_build``); ``work_s``: CP-SAT's deterministic time, so that with one
    worker what it finds is the same on any machine the wall clock (``time_limit_s``) does not
    cut (a caller sees the cut as an answer short of optimal at the end of its limit).
    ``model``: the model's class (the benchmark's peer formulation; default
    :class:`OrderedModel`); ``host_blocks``: the host blocks of the guest places (one guest
    each; without them, one guest per host and day)."""
    t0 = time.perf_counter()

    def unknown(cap: int | None = upper) -> tuple[SolveStatus, int, int, list[Placement]]:
        best = sum(p.length for p in hint)
        return SolveStatus.UNKNOWN, best, max(best, cap) if cap is not None else best, list(hint)

    if sum(len(o) for o in options.values()) > calibration.ordered_max_options:
        return unknown()
    kind = model or OrderedModel
    if kind.chain_dp:
        chain = _chain_of(state, options)
        if chain is not None:  # one class, its orders all different: exact without CP-SAT
            out = _solve_chain(state, chain, options, spd, targets, (num_days + 1) * spd + 1)
            if upper is None or sum(p.length for p in out) <= upper:
                best = sum(p.length for p in out)
                return SolveStatus.OPTIMAL, best, best, out
    # the model's building holds the limit too
    built = kind(spd, num_days, t0 + calibration.ordered_build_share * time_limit_s)
    built.seat_blocks(host_blocks)
    if not built.build(state, options, upper, targets, hint):
        return unknown()
    spent = time.perf_counter() - t0
    if time_limit_s - spent < calibration.ordered_solve_per_build * spent:
        # (no time to load and presolve it: CP-SAT would run past the limit)
        return unknown(upper if targets else built.upper)
    solver = make_solver(
        max(time_limit_s - (time.perf_counter() - t0), 0.05),
        num_workers,
        deterministic_time=work_s,
    )
    for name, value in built.solver_params.items():
        setattr(solver.parameters, name, value)
    status = status_of(solver.solve(built.model))
    if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        return unknown(upper if targets else built.upper)  # (the class caps hold unsolved)
    out = [p for here in built.chosen.values() for v, p in here if solver.value(v)]
    best = sum(p.length for p in out)
    if status == SolveStatus.OPTIMAL:
        bound = best
    elif targets:
        bound = upper if upper is not None else sum(p.length for p in hint) + built.big
    else:
        bound = int(solver.best_objective_bound + 1e-6)
    if built.upper is not None and not targets:
        bound = max(best, min(bound, built.upper))
    return status, best, bound, out


def _programme(chain: list[list[tuple[int, int, int]]], horizon: int) -> list[np.ndarray]:
    """The dynamic programme of one class's chain alone: ``chain``: per item in order, its
    places as (first period, frontier, gain) on the global index below ``horizon`` (the
    frontier: the last period no later item of the chain may take). Returns ``most[i][t]``
    for i = 0..len(chain): the largest total gain of the first i items placed in order with
    every frontier before ``t``."""
    most = [np.zeros(horizon + 1, dtype=np.int64)]
    for places in chain:
        after = most[-1].copy()
        if places:
            first, last, gain = (np.fromiter(c, dtype=np.int64) for c in zip(*places, strict=True))
            np.maximum.at(after, last + 1, most[-1][first] + gain)
        most.append(np.maximum.accumulate(after))
    return most


def _chain_max(chain: list[list[tuple[int, int, int]]], horizon: int) -> int:
    """The most periods a chain of items places alone, in order (each placed item ends before
    the next placed one starts): ``chain``: per item in order, its places as (first period,
    last period, length) on the global index below ``horizon`` (:func:`_programme`)."""
    return int(_programme(chain, horizon)[-1][-1])


def is_chain(state: ScheduleState, options: dict[int, list[Placement]]) -> bool:
    """Whether :func:`solve_ordered` answers ``options`` by its chain programme (one class's
    items, orders all different): exactly, with no CP-SAT call, so no clock or work decides."""
    return _chain_of(state, options) is not None


def _chain_of(state: ScheduleState, options: dict[int, list[Placement]]) -> list[int] | None:
    """The tasks of ``options`` in their item order, when they are one class's items with
    orders all different (a chain), else None."""
    keyed = []
    for tid in options:
        key = order_key(task_of(state, tid))
        if key is None:
            return None
        keyed.append((key, tid))
    if len({k[0] for k, _ in keyed}) != 1 or len({k[1] for k, _ in keyed}) != len(keyed):
        return None
    return [tid for _, tid in sorted(keyed)]


def _solve_chain(
    state: ScheduleState,
    chain: list[int],
    options: dict[int, list[Placement]],
    spd: int,
    targets: dict[int, tuple[int, int]] | None,
    big: int,
) -> list[Placement]:
    """The exact answer of :func:`solve_ordered` for one class's ``chain`` (its tasks in
    order, orders all different), by a dynamic programme over the frontier (as
    :func:`_programme`): most periods, then (with ``targets``) the least total distance, the
    objective of :meth:`OrderedModel.set_objective`. The chain's items are in time order, so
    no two share a free period; a guest's frontier is its host block's end (no later item of
    the chain can use that block's seat, and no free period lies inside it)."""

    def index(day: int, period: int) -> int:
        return (day - 1) * spd + period

    scale = big * max(1, len(options))
    rows: list[list[tuple[int, int, int, Placement]]] = []  # per item: (start, frontier, gain)
    for tid in chain:
        row = []
        for p in options[tid]:
            end = p.slot_end
            if p.embed_host is not None:
                host = task_of(state, p.embed_host)
                end = next(
                    (b.slot_end for b in host.slots
                     if b.day == p.day and b.slot_start <= p.slot_start <= b.slot_end),
                    end,
                )  # fmt: skip
            gain = p.length
            if targets:
                far = (
                    abs(index(p.day, p.slot_start) - index(*targets[tid])) if tid in targets else 0
                )
                gain = p.length * scale - far
            row.append((index(p.day, p.slot_start), index(p.day, end), gain, p))
        rows.append(row)
    most = _programme([[r[:3] for r in row] for row in rows], big + 1)
    out: list[Placement] = []
    t = big + 1  # every frontier so far is below t
    for i in range(len(rows), 0, -1):
        value = most[i][t]
        if value == most[i - 1][t]:
            continue  # (item i unplaced)
        start, _, _, p = next(
            r for r in rows[i - 1] if r[1] + 1 <= t and most[i - 1][r[0]] + r[2] == value
        )
        out.append(p)
        t = start
    return out[::-1]


def _order_groups(items: list[tuple[int, int]]) -> list[list[int]]:
    """One class's ``items`` ((order, task), sorted) as groups of equal order, in order."""
    return [[tid for _, tid in same] for _, same in itertools.groupby(items, key=lambda i: i[0])]


class OrderedModel:
    """The CP-SAT model of :func:`solve_ordered`, built one constraint family at a time (each a
    method: a new rule of the exact ordered model is a method of its own, called from
    :meth:`build`). ``build_until``: a ``time.perf_counter()`` value past which the building
    stops (:meth:`build` then answers False)."""

    # CP-SAT's parameters for this model, over :func:`._cpsat.make_solver`'s: its
    # implications propagate, so the search runs without the LP (``linearization_level`` 0)
    # and a light presolve; measured against the LP levels 1 and 2 and the full presolve on
    # the upstream-shaped windows (benchmarks/bench_ordered.py, docs/decisions.md): these
    # prove the most of them within the check's limits.
    solver_params: ClassVar[dict[str, int]] = {
        "linearization_level": 0,
        "max_presolve_iterations": 1,
        "cp_model_probing_level": 0,
    }

    # Whether each item's places are summed into order-encoded "ends at or after" / "starts at
    # or before" booleans that the frontier reads (else every place implies the frontier
    # itself): more variables, a stronger search (docs/decisions.md).
    aggregate: ClassVar[bool] = True
    # Whether options of one class whose orders all differ (the exact chains of
    # .order.keep_order) are solved by :func:`_solve_chain` instead of CP-SAT.
    chain_dp: ClassVar[bool] = True

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
        self.symmetry = False  # whether interchangeable items are placed as a prefix
        self.runs: list[list[int]] = []  # those items, per run (tasks in order)
        self.classes: list[list[list[int]]] = []  # per class, its order groups (tasks)
        self.upper: int | None = None  # the proven bound the model holds its total to
        # per (day, host): the first periods of its host blocks (a guest seat is one block's)
        self.block_starts: dict[tuple[int, int], list[int]] = {}

    def seat_blocks(self, host_blocks: Sequence[Bin]) -> None:
        """The host blocks the guest places stand in: one guest per block (a water course may
        hold two blocks a day, one guest each); without them, one per host and day."""
        for b in sorted(host_blocks, key=lambda b: (b.day, b.slot_start)):
            if b.host is not None:
                self.block_starts.setdefault((b.day, b.host), []).append(b.slot_start)

    def seat(self, pl: Placement) -> tuple[int, int, int]:
        """The host block a guest place ``pl`` takes: (day, host, the block's index)."""
        assert pl.embed_host is not None
        starts = self.block_starts.get((pl.day, pl.embed_host), [])
        return (pl.day, pl.embed_host, max(0, bisect.bisect_right(starts, pl.slot_start) - 1))

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
        self.symmetry = not targets
        if not self.add_places(options):
            return False
        if not self.add_precedence(state):
            return False
        if self._late():
            return False
        cap = self.add_class_caps()
        if self._late():
            return False
        self.upper = cap if upper is None else min(upper, cap)
        self.set_objective(self.upper, targets)
        self.add_hint(hint)
        return True

    def add_places(self, options: dict[int, list[Placement]]) -> bool:
        """One boolean per task and place, a task at most once, a free period and a host
        block's guest seat at most once."""
        cells: dict[tuple[int, int], list[Any]] = defaultdict(list)
        host_use: dict[tuple[int, int, int], list[Any]] = defaultdict(list)
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
                    host_use[self.seat(pl)].append(v)
                self.gain.append((v, pl.length))
            if here:
                self.model.add_at_most_one(v for v, _ in here)
            self.chosen[tid] = here
        for vs in (*cells.values(), *host_use.values()):
            if len(vs) > 1:
                self.model.add_at_most_one(vs)
        return True

    def items_by_class(self, state: ScheduleState) -> list[list[tuple[int, int]]]:
        """Per class with a place for any of its ordered items: its items as (order, task)."""
        by_class: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for tid, here in self.chosen.items():
            key = order_key(task_of(state, tid))
            if key is not None and here:
                by_class[key[0]].append((key[1], tid))
        return list(by_class.values())

    def add_precedence(self, state: ScheduleState) -> bool:
        """The item order, per class, as an order-encoded frontier on the global period index:
        ``f[g][k]`` = "a placed item of order group <= g ends at or after ``times[k]``" (the
        class's distinct option starts and ends). Four families of two-literal implications:
        ``x[j, p] -> f[g(j)][end(p)]``, ``f[g][k] -> f[g][k-1]``, ``f[g-1][k] -> f[g][k]`` and,
        for an item i of group g+1, ``x[i, p] -> not f[g][start(p)]``: every earlier item ends
        before ``start(p)``. Exact (a placement keeps the order if and only if these hold with
        ``f`` its frontiers). With :attr:`aggregate` an item's places enter through its own
        order-encoded sums ("ends at or after k", "starts at or before k", :meth:`_suffix`,
        :meth:`_prefix`), which the search branches and learns on. Equal orders share a
        group: they do not constrain each other. Without ``targets``, runs of interchangeable
        items (consecutive orders, one item each, the same places) are placed as a prefix
        (:meth:`_prefix_runs`)."""
        for items in self.items_by_class(state):
            if self._late():
                return False
            groups = _order_groups(sorted(items))
            self.classes.append(groups)
            if not self._frontier(groups):
                return False
            if self.symmetry:
                self._prefix_runs(groups)
        return True

    def _frontier(self, groups: list[list[int]]) -> bool:
        """The order-encoded frontiers of one class's order ``groups`` (task ids, in order);
        False when the build time ran out."""
        if len(groups) < 2:
            return True
        idx = self.index
        starts = [
            [idx(p.day, p.slot_start) for tid in group for _, p in self.chosen[tid]]
            for group in groups
        ]
        ends = [
            [idx(p.day, p.slot_end) for tid in group for _, p in self.chosen[tid]]
            for group in groups
        ]
        times = sorted({t for row in (*starts, *ends) for t in row})
        pos = {t: k for k, t in enumerate(times)}
        # f[g] reaches no further than the last start of a later group (nothing beyond it is
        # forbidden) nor the last end of the groups up to g (nothing ends beyond it)
        later = [0] * len(groups)
        for g in range(len(groups) - 2, -1, -1):
            later[g] = max(later[g + 1], max(starts[g + 1], default=-1) + 1)
        reach = 0
        add = self.model.add_implication
        prev: list[Any] = []
        for g in range(len(groups) - 1):
            if self._late():
                return False
            reach = max(reach, max(ends[g], default=-1) + 1)
            top = min(bisect.bisect_left(times, later[g]), bisect.bisect_right(times, reach - 1))
            # (top: how many time points f[g] has, times[0..top-1])
            if top == 0:
                prev = []
                continue
            f = [self.model.new_bool_var(f"f{groups[0][0]}_{g}_{k}") for k in range(top)]
            for k in range(1, top):
                add(f[k], f[k - 1])
            for k in range(min(top, len(prev))):
                add(prev[k], f[k])
            for tid in groups[g]:
                ends_at = [
                    (min(pos[idx(p.day, p.slot_end)], top - 1), v) for v, p in self.chosen[tid]
                ]
                for k, e in self._suffix(ends_at, f"e{tid}") if self.aggregate else ends_at:
                    add(e, f[k])
            for tid in groups[g + 1]:
                starts_at = [(pos[idx(p.day, p.slot_start)], v) for v, p in self.chosen[tid]]
                starts_at = [(k, v) for k, v in starts_at if k < top]
                for k, e in self._prefix(starts_at, f"s{tid}") if self.aggregate else starts_at:
                    add(e, ~f[k])
            prev = f
        return True

    def add_class_caps(self) -> int:
        """Per class whose orders differ item by item, its periods at most the most its items
        place in order on their own (:func:`_chain_max`, every period free to them: a
        relaxation, so a proven bound); returns the bound of the whole these give (every
        other task at its length). The counting model's bound does not hold the order, so
        these caps are what the order alone takes away."""
        weighted = self.cp.LinearExpr.weighted_sum
        total = sum(max((p.length for _, p in here), default=0) for here in self.chosen.values())
        for groups in self.classes:
            if any(len(g) > 1 for g in groups):
                continue  # (equal orders: any order among them; no chain to follow)
            chain = [self.chosen[g[0]] for g in groups]
            most = _chain_max(
                [[(self.index(p.day, p.slot_start), self.index(p.day, p.slot_end), p.length)
                  for _, p in here] for here in chain],
                self.big + 1,
            )  # fmt: skip
            full = sum(max((p.length for _, p in here), default=0) for here in chain)
            if most < full:
                vs = [(v, p.length) for here in chain for v, p in here]
                self.model.add(weighted([v for v, _ in vs], [w for _, w in vs]) <= most)
                total -= full - most
        return total

    def _suffix(self, at: list[tuple[int, Any]], name: str) -> list[tuple[int, Any]]:
        """``(k, e_k)`` with ``e_k`` = "one of the places ``at`` ((time point, chosen)) at or
        after ``k``" (a sum of places of one task: a boolean, named ``name_k``), for every k
        from the last place's down to the first's."""
        return self._running(at, name, upward=False)

    def _prefix(self, at: list[tuple[int, Any]], name: str) -> list[tuple[int, Any]]:
        """``(k, s_k)`` with ``s_k`` = "one of the places ``at`` at or before ``k``" (named
        ``name_k``), from the first place's k to the last's."""
        return self._running(at, name, upward=True)

    def _running(self, at: list[tuple[int, Any]], name: str, upward: bool) -> list[tuple[int, Any]]:
        """The running sums of :meth:`_prefix` (``upward``) and :meth:`_suffix`: one boolean
        per time point holding a place, the one before it carried over the points between."""
        if not at:
            return []
        buckets: dict[int, list[Any]] = defaultdict(list)
        for k, v in at:
            buckets[k].append(v)
        lo, hi = min(buckets), max(buckets)
        out: list[tuple[int, Any]] = []
        last: Any = 0
        for k in range(lo, hi + 1) if upward else range(hi, lo - 1, -1):
            if k not in buckets:
                out.append((k, out[-1][1]))
                continue
            e = self.model.new_bool_var(f"{name}_{k}")
            self.model.add(e == last + sum(buckets[k]))
            out.append((k, e))
            last = e
        return out

    def _prefix_runs(self, groups: list[list[int]]) -> None:
        """Symmetry: two consecutive order groups of one item each whose items have the same
        places are interchangeable but for the order, so when only one of them is placed it
        may as well be the earlier: ``placed(next) <= placed(earlier)``. Not with ``targets``
        (the items' distances differ)."""
        run: list[int] = []
        for a, b in itertools.pairwise(groups):
            if len(a) == 1 and len(b) == 1 and self._same_places(a[0], b[0]):
                self.model.add(
                    sum(v for v, _ in self.chosen[b[0]]) <= sum(v for v, _ in self.chosen[a[0]])
                )
                run = run or [a[0]]
                run.append(b[0])
            elif run:
                self.runs.append(run)
                run = []
        if run:
            self.runs.append(run)

    def _same_places(self, a: int, b: int) -> bool:
        pa = [(p.day, p.slot_start, p.slot_end, p.embed_host) for _, p in self.chosen[a]]
        pb = [(p.day, p.slot_start, p.slot_end, p.embed_host) for _, p in self.chosen[b]]
        return pa == pb

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
        """Start from ``hint`` (every other place off; within a run of interchangeable items,
        its places in time order go to the run's first items, as :meth:`_prefix_runs` asks)."""
        hinted = {
            (p.task_id, p.day, p.slot_start, p.embed_host) for p in _prefixed(hint, self.runs)
        }
        for here in self.chosen.values():
            for v, pl in here:
                self.model.add_hint(v, (pl.task_id, pl.day, pl.slot_start, pl.embed_host) in hinted)


def _prefixed(hint: Sequence[Placement], runs: list[list[int]]) -> list[Placement]:
    """``hint`` with the places of each run's items, in time order, given to the run's first
    items (they have the same places; the order among them is time order)."""
    run_of = {tid: ri for ri, run in enumerate(runs) for tid in run}
    out = [p for p in hint if p.task_id not in run_of]
    taken: dict[int, list[Placement]] = defaultdict(list)
    for p in hint:
        if p.task_id in run_of:
            taken[run_of[p.task_id]].append(p)
    for ri, places in taken.items():
        places.sort(key=lambda p: (p.day, p.slot_start))
        out += [replace(p, task_id=tid) for tid, p in zip(runs[ri], places, strict=False)]
    return out
