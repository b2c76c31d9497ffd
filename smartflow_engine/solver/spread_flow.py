"""The least spread of the daily loads when each task keeps to its own days: a min-cost flow.

:func:`.health_floor._water_fill` pours every period to place into any free period some movable
task may use: one pool. Where task classes differ (their date windows, banned weekdays and
half-day blocks, water-course permission, the days their item order leaves them), the pool
is a poor picture: on an upstream-shaped 30-day window only one class may use the last week,
so that week stays light whatever is placed, and the sample std-dev of the loads stays above
the warning line while the one pool says it need not.

This module keeps each task's own periods. Tasks alike (the same periods and water courses
open to them) form a group carrying their periods; a group sends them to the free periods it
may use or to a water-course block it may enter (a guest adds no load); a day's load grows by
the periods it receives, at the convex cost ``(l + 1)**2 - l**2 = 2l + 1`` of each: the least
cost is the least sum of squared loads (integral: a min-cost flow's optimum is). Periods that
need not be placed (an infeasible window places at least ``n_min`` of ``n_max``) bypass.

The sample variance ``(sum(l**2) - S**2 / D) / (D - 1)`` also depends on the total ``S``:
the fixed load plus ``T``, the periods placed outside water courses, and ``-S**2`` falls as
``T`` grows. So ``T`` is searched best first over intervals ``[a, b]``: one flow with
``a <= T <= b`` gives the least sum of squares over the interval; with ``S`` at its largest
(``T = b``) that bounds the variance of every ``T`` in it from below, and a single ``T`` gives
its exact value. The interval of least bound is split until it is a single total (the
minimum), its bound is as high as the caller needs, or the solves run out: the least bound
left is a lower bound of every total's.

Every schedule that keeps its tasks' periods is one such flow (a block's periods are periods
its task may use, a guest sits in a block open to it): the least spread of the flows is at
most the spread of every schedule. Contiguity, the item order between tasks and one guest per
block are relaxed (each only removes schedules).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Group:
    """Tasks alike: ``periods`` to place, the free periods they may use (``cells``, a
    ``(days, slots_per_day)`` bool mask) and the water-course blocks they may enter."""

    periods: int
    cells: np.ndarray
    hosts: frozenset[int]


@dataclass(frozen=True)
class Spread:
    """The least sample std-dev of the daily loads over the flows (``exact``: the minimum
    itself, not only a bound)."""

    std: float
    exact: bool


def least_spread(
    fixed_load: np.ndarray,
    groups: Sequence[Group],
    host_room: Mapping[int, int],
    n_min: int,
    n_max: int,
    *,
    enough: float | None = None,
    tick: Callable[[], None] = lambda: None,
    max_solves: int = 24,
    max_arcs: int = 100_000,
) -> Spread | None:
    """The least sample std-dev of the daily loads ``fixed_load`` plus the periods the
    ``groups`` place (see the module docstring): ``n_max`` periods in all, of which at least
    ``n_min`` placed; ``host_room``: each water-course block's periods.

    Best first: the interval of least bound is split until that bound meets the least
    variance of the flows found (each solve's flow is one: the minimum, ``exact``), reaches
    ``enough`` (a std-dev: the caller needs no more), the flows found show ``enough`` cannot
    be reached, or ``max_solves`` flows were solved; the answer is then the least bound, a
    lower bound of every total's. None when no flow places ``n_min`` periods (the relaxation
    has no schedule: nothing to bound), the window has a single day, or the network would have
    more than ``max_arcs`` arcs between groups and free periods (a year of items each on its
    own days: a solve of seconds, beyond a floor's budget; the state alone decides)."""
    days = int(fixed_load.size)
    if days <= 1 or n_max <= 0:
        return None
    net = _Network(fixed_load, groups, host_room, n_min, n_max, max_arcs)
    if net.too_large:
        return None
    lo, hi = max(0, n_min - net.host_total), min(n_max, net.free_total)
    if lo > hi:
        return None
    stop = math.inf if enough is None else enough * enough
    heap: list[tuple[float, int, int]] = []
    best, solves = math.inf, 0
    parts = [(lo, hi)]
    while True:
        for a, b in parts:
            found = net.bound(a, b)
            solves += 1
            if found is not None:
                heapq.heappush(heap, (found[0], a, b))
                best = min(best, found[1])
        tick()
        if not heap:
            return None  # (no total has a flow: no schedule to bound)
        least, a, b = heap[0]
        exact = least >= best - 1e-9
        hopeless = enough is not None and best < stop  # (a flow below the line: not reached)
        if exact or least >= stop or hopeless or a == b or solves >= max_solves:
            value = best if exact else least
            return Spread(math.sqrt(max(0.0, value)), exact)
        heapq.heappop(heap)
        mid = (a + b) // 2
        parts = [(a, mid), (mid + 1, b)]


class _Network:
    """The flow network of one population (its arcs built once); :meth:`bound` solves it for
    one interval of ``T`` (the day arcs' costs and two capacities change)."""

    def __init__(
        self,
        fixed_load: np.ndarray,
        groups: Sequence[Group],
        host_room: Mapping[int, int],
        n_min: int,
        n_max: int,
        max_arcs: int,
    ) -> None:
        fixed = fixed_load.astype(np.int64)
        self.days = days = int(fixed.size)
        self.n_max = n_max
        groups = [g for g in groups if g.periods > 0]
        # free periods alike: (day, the groups that may use them as a bit set) -> count
        who = np.zeros(groups[0].cells.shape if groups else (days, 1), dtype=object)
        who[:] = 0
        for gi, g in enumerate(groups):
            who[g.cells] += 1 << gi
        cells: dict[tuple[int, int], int] = {}
        for d, p in zip(*np.nonzero(who != 0), strict=True):
            key = (int(d), int(who[d, p]))
            cells[key] = cells.get(key, 0) + 1
        self.too_large = sum(mask.bit_count() for _, mask in cells) > max_arcs
        if self.too_large:
            return
        room = np.zeros(days, dtype=np.int64)
        for (d, _), count in cells.items():
            room[d] += count
        self.free_total = int(room.sum())
        hosts = sorted(h for h in {h for g in groups for h in g.hosts} if host_room.get(h, 0) > 0)
        self.host_total = sum(int(host_room[h]) for h in hosts)
        self.fixed = fixed
        self.total_fixed = int(fixed.sum())
        source, sink, self.other = 0, 1, 2
        group_node = 3
        day_node = group_node + len(groups)
        host_node = {h: day_node + days + i for i, h in enumerate(hosts)}
        cell_node = day_node + days + len(hosts)
        arcs: list[tuple[int, int, int]] = []  # (tail, head, capacity), cost 0
        for gi, g in enumerate(groups):
            arcs.append((source, group_node + gi, g.periods))
            arcs += [(group_node + gi, host_node[h], g.periods) for h in g.hosts if h in host_node]
        for ci, ((d, mask), count) in enumerate(cells.items()):
            arcs += [(group_node + gi, cell_node + ci, count) for gi in _bits(mask)]
            arcs.append((cell_node + ci, day_node + d, count))
        arcs += [(node, self.other, int(host_room[h])) for h, node in host_node.items()]
        arcs.append((source, self.other, n_max - n_min))  # periods left unplaced
        self.static = np.array(arcs, dtype=np.int64).reshape(-1, 3)
        # the k-th period placed on day d (one unit arc each): its load before it
        self.unit_day = np.repeat(np.arange(days), room)
        self.unit_load = fixed[self.unit_day] + (
            np.arange(self.unit_day.size) - np.repeat(np.cumsum(room) - room, room)
        )
        self.day_node, self.source, self.sink = day_node, source, sink
        # a scaled squared distance of a day's load is at most this: |D l - S| <= D spd + S
        reach = days * int((fixed + room).max(initial=0)) + self.total_fixed + n_max
        self.big = days * reach * reach + 1

    def _distance(self, load: np.ndarray, a: int, b: int) -> np.ndarray:
        """``(D * dist(load, [mean at T=a, mean at T=b]))**2``: integers."""
        low, high = self.total_fixed + a, self.total_fixed + b
        scaled = self.days * load.astype(np.int64)
        gap = np.maximum(0, np.maximum(scaled - high, low - scaled))
        out: np.ndarray = gap * gap
        return out

    def bound(self, a: int, b: int) -> tuple[float, float] | None:
        """Over the flows that place ``a <= T <= b`` periods outside water courses: a lower
        bound of their sample variance (exact when ``a == b``) and the variance of the flow
        the solve found (one of them: an upper bound of the least); None: no such flow. For such a flow the mean load ``mu`` lies between its values at ``a`` and
        ``b``, so ``sum((l - mu)**2) >= sum(dist(l, [mu_a, mu_b])**2)``: convex in each day's
        load, a min-cost flow (costs scaled by ``D**2`` to integers)."""
        off = self.n_max - b  # periods that must go elsewhere
        base = int(self._distance(self.fixed, a, b).sum())
        step = self._distance(self.unit_load + 1, a, b) - self._distance(self.unit_load, a, b)
        units = self.unit_day.size
        first_unit = len(self.static)
        tails = np.concatenate([self.static[:, 0], self.day_node + self.unit_day, [self.other] * 2])
        heads = np.concatenate([self.static[:, 1], np.full(units, self.sink), [self.sink] * 2])
        caps = np.concatenate([self.static[:, 2], np.ones(units, np.int64), [off, b - a]])
        costs = np.concatenate([np.zeros(first_unit, np.int64), step, [-self.big, 0]])
        from ortools.graph.python import min_cost_flow  # (lazy: no OR-Tools at import, _cpsat)

        flow = min_cost_flow.SimpleMinCostFlow()
        flow.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
        flow.set_node_supply(self.source, self.n_max)
        flow.set_node_supply(self.sink, -self.n_max)
        forced = len(tails) - 2
        if flow.solve() != flow.OPTIMAL or flow.flow(forced) < off:
            return None
        scaled = base + flow.optimal_cost() + self.big * off
        lower = float(scaled / (self.days * self.days) / (self.days - 1))
        used = flow.flows(np.arange(first_unit, first_unit + units))
        loads = self.fixed + np.bincount(self.unit_day, weights=used, minlength=self.days)
        return lower, float(np.var(loads, ddof=1))


def _bits(mask: int) -> list[int]:
    """The positions of the set bits of ``mask``."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


__all__ = ["Group", "Spread", "least_spread"]
