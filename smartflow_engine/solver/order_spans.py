"""The spans the item order leaves a task of a class (issue 42): the low part of
:mod:`.order`, which the problem builder, the exact ordered model and the health floor read
(kept apart so that none imports the module that re-places chains through them): the segment
its class's staying items leave an item (:func:`order_segments`), and the days its class's
chain leaves it in every schedule of a floor's population (:func:`chain_days`)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ..state import order_key

if TYPE_CHECKING:
    from ..state import ScheduleState, Task

Position = tuple[int, int]


def task_of(state: ScheduleState, task_id: int) -> Task:
    task = state.task(task_id)
    if task is None:
        raise KeyError(f"no task {task_id}")
    return task


def order_segments(
    state: ScheduleState, scope: Iterable[Task]
) -> dict[int, tuple[Position | None, Position | None]]:
    """Per ordered scope task: ``(after, before)``, the end of the latest earlier and the start
    of the earliest later item of its class that stays where it is (not in the scope); only
    tasks with a bound are listed."""
    scope = list(scope)
    scope_ids = {t.state_id for t in scope}
    classes = {k[0] for t in scope if (k := order_key(t)) is not None}
    if not classes:
        return {}
    fixed: dict[int, list[tuple[int, Position, Position]]] = defaultdict(list)
    for t in state.tasks:
        key = order_key(t)
        if key is None or key[0] not in classes or t.state_id in scope_ids or not t.slots:
            continue
        first = min((b.day, b.slot_start) for b in t.slots)
        last = max((b.day, b.slot_end) for b in t.slots)
        fixed[key[0]].append((key[1], first, last))
    tables: dict[int, tuple[list[int], list[Position | None], list[Position | None]]] = {}
    for cid, rows in fixed.items():
        rows.sort(key=lambda r: r[0])
        orders = [r[0] for r in rows]
        prefix: list[Position | None] = [None]  # latest end among the first i rows
        for _, _, last in rows:
            prev = prefix[-1]
            prefix.append(last if prev is None or last > prev else prev)
        suffix: list[Position | None] = [None] * (len(rows) + 1)  # earliest start from row i
        for i in range(len(rows) - 1, -1, -1):
            nxt = suffix[i + 1]
            first = rows[i][1]
            suffix[i] = first if nxt is None or first < nxt else nxt
        tables[cid] = (orders, prefix, suffix)
    out: dict[int, tuple[Position | None, Position | None]] = {}
    for t in scope:
        key = order_key(t)
        if key is None or key[0] not in tables:
            continue
        orders, prefix, suffix = tables[key[0]]
        after = prefix[bisect.bisect_left(orders, key[1])]
        before = suffix[bisect.bisect_right(orders, key[1])]
        if after is not None or before is not None:
            out[t.state_id] = (after, before)
    return out


def chain_days(
    state: ScheduleState,
    movable: set[int],
    room: np.ndarray,
    host_room: np.ndarray,
    must_pending: bool,
) -> dict[int, tuple[int, int]]:
    """Per movable ordered task, the first and last day it may take in any schedule that keeps
    its class's item order (issue 42), where every placed movable task stays placed and, with
    ``must_pending``, every pending one is placed too: the earliest place of each item after
    the earliest ends of the items before it that every such schedule places (and of those
    that stay where they are), and the latest place before the latest starts of those after
    it. A place is one of its class's starts (days, weekdays, dates, banned periods) whose
    periods are all in ``room`` (periods no task that stays where it is holds) or, when its
    class lets it sit in a water course, in ``room`` or ``host_room`` (the periods of the water
    courses that stay where they are). Every other item, and every other class's, is forgotten: the bounds hold in every
    such schedule, so a floor may read them. Only classes whose movable items are single
    blocks standing inside their class's grid (or pending) are bounded; an item with no place
    left bounds nothing (its class is skipped)."""
    spd = state.slots_per_day
    classes: dict[int, list[Task]] = defaultdict(list)
    for t in state.tasks:
        key = order_key(t)
        if key is not None:
            classes[key[0]].append(t)
    out: dict[int, tuple[int, int]] = {}
    for items in classes.values():
        found = _class_chain(state, items, movable, room, host_room, must_pending, spd)
        if found is not None:
            out.update(found)
    return out


def _class_chain(
    state: ScheduleState,
    items: list[Task],
    movable: set[int],
    room: np.ndarray,
    host_room: np.ndarray,
    must_pending: bool,
    spd: int,
) -> dict[int, tuple[int, int]] | None:
    """:func:`chain_days` of one class's ``items``; None when it bounds nothing."""
    rules = state.class_rules
    # per order group: (task, kind, places) — kind "fixed" (stays: its span), "must", "may"
    groups: dict[int, list[tuple[Task, str, np.ndarray]]] = defaultdict(list)
    for t in items:
        order = order_key(t)
        assert order is not None
        if t.state_id not in movable:
            if t.slots:  # stays where it is: an anchor
                first = min((b.day - 1) * spd + b.slot_start for b in t.slots)
                last = max((b.day - 1) * spd + b.slot_end for b in t.slots)
                groups[order[1]].append((t, "fixed", np.array([first, last])))
            continue
        if len(t.slots) > 1 or t.status == "existing":
            return None  # (blocks that move apart; an existing task may stand anywhere)
        need = t.need()
        starts = rules.allowed_starts(t, need)
        if t.slots and not starts[t.slots[0].day - 1, t.slots[0].slot_start - 1]:
            return None  # standing outside its class's grid: its reach is not its class's
        cells = room | host_room if rules.may_embed(t) and not t.can_embed else room
        places = starts & fitting_starts(cells, need)
        index = np.flatnonzero(places.ravel()) + 1  # global index of each start (1-based)
        if index.size == 0:
            return None
        kind = "must" if t.slots or must_pending else "may"
        groups[order[1]].append((t, kind, index))
    if not any(kind != "fixed" for g in groups.values() for _, kind, _ in g):
        return None
    orders = sorted(groups)
    first_start = _sweep(orders, groups, forward=True)
    last_start = _sweep(orders[::-1], groups, forward=False)
    if first_start is None or last_start is None:
        return None
    must = {t.state_id for g in groups.values() for t, kind, _ in g if kind == "must"}
    out: dict[int, tuple[int, int]] = {}
    for tid, lo in first_start.items():
        hi = last_start[tid]
        if lo > hi and tid in must:
            return None  # (no schedule keeps every must item: nothing to bound by)
        if lo <= hi:  # (an optional item with no place left is left unbounded)
            out[tid] = ((lo - 1) // spd + 1, (hi - 1) // spd + 1)
    return out


def fitting_starts(room: np.ndarray, need: int) -> np.ndarray:
    """``(days, periods)``: whether the ``need`` periods from each start are all in ``room``
    (a run past the day's end never is)."""
    days, spd = room.shape
    zero = np.zeros((days, 1), dtype=np.int32)
    run = np.concatenate([zero, np.cumsum(room, axis=1, dtype=np.int32)], axis=1)  # prefix sums
    out = np.zeros(room.shape, dtype=bool)
    width = spd - need + 1
    if width > 0:
        out[:, :width] = (run[:, need:] - run[:, :width]) == need
    return out


def _sweep(
    orders: list[int],
    groups: dict[int, list[tuple[Task, str, np.ndarray]]],
    *,
    forward: bool,
) -> dict[int, int] | None:
    """Forward: each movable item's earliest start after the earliest ends of the groups
    before it (their must items and anchors); backward: its latest start ending before the
    latest starts of the groups after it. None when a must item has no place left."""
    frontier = 0 if forward else 1 << 40  # an end before everything / a start after it
    out: dict[int, int] = {}
    for order in orders:
        nxt = frontier
        for t, kind, index in groups[order]:
            if kind == "fixed":
                first, last = int(index[0]), int(index[1])
                nxt = max(nxt, last) if forward else min(nxt, first)
                continue
            need = t.need()
            if forward:
                at = int(np.searchsorted(index, frontier, side="right"))
                if at == index.size:
                    if kind == "must":
                        return None
                    out[t.state_id] = 1 << 40  # no place: lo > hi marks it
                    continue
                start = int(index[at])
                out[t.state_id] = start
                if kind == "must":
                    nxt = max(nxt, start + need - 1)
            else:
                at = int(np.searchsorted(index, frontier - need, side="right")) - 1
                if at < 0:
                    if kind == "must":
                        return None
                    out[t.state_id] = 0
                    continue
                start = int(index[at])
                out[t.state_id] = start
                if kind == "must":
                    nxt = min(nxt, start)
        frontier = nxt
    return out
