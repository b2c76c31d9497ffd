"""The exact-model start (issue 40 item 2: it lived in the floor module): a schedule built from
the exact model's lexicographically best solution of the per-day rules (:mod:`.health_model`).

Each day takes its pattern's blocks (packed into its free periods off each block's banned ones,
by a small search, :meth:`_Layout.pack`), guests go into the host blocks of their day, and what
does not fit so goes to the first place its class allows; the places of an item are then given
to its tasks, each to the one whose subject has waited longest. :mod:`.starts` makes it one of a
proposal's starts.
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from ..concepts import subject_of as study_subject  # the subject health_facts counts
from ..health_facts import free_runs, usable_periods
from ..rules import Level
from ..state import ScheduleState, Task
from .budget import DEFAULT_CALIBRATION, Calibration
from .health_floor import exact_items, movable_study, solve_exact
from .health_model import Item
from .problem import Placement, rule_for

# (start, length, host) of the host blocks that stay, by day
_HostBlocks = dict[int, list[tuple[int, int, int]]]


def realise(
    state: ScheduleState,
    level: Level = "normal",
    *,
    pending_periods: int,
    scope: Collection[int] | None = None,
    time_limit_s: float,
    num_workers: int = 1,
    work_s: float | None = None,
    short_ok: bool = False,
    dropped: list[int] | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
    spread: bool = True,
) -> list[Placement] | None:
    """A schedule of the floor's population built from the exact model's lexicographically best
    solution (:mod:`.health_model`): each day takes its pattern's blocks (packed into its free
    periods off each block's banned ones, by a small search), guests go into the host blocks of
    their day, and what does not fit so goes to the first place its class allows. ``None`` when
    the model found no solution in time, a movable task holds several blocks, or the blocks
    cannot all be placed with ``pending_periods`` pending periods (with ``short_ok``, what could
    be placed is returned instead: the packing search is bounded, guests and leftovers go by
    first fit, and a day past :data:`.health_model.MAX_PATTERNS` is modelled by the union of
    its masks, so a day's blocks may not pack; a caller may complete the rest exactly, as
    :func:`.starts.exact_start` does; ``dropped`` gets the days whose pattern did not pack). A
    suggested task left outside its class's days (the floor lets it go anywhere, the writes
    keep a moved task inside them) stays where it stands. Days of a kind are interchangeable in
    the model: with ``spread``, each pattern's days spread evenly over its kind's days and alike
    items take turns (the one put longest ago first), else they go in the solution's order (the
    subjects then fall otherwise: neither is always better, a caller may try both; the model's
    solve is remembered, so the second costs the packing alone). A reference for benchmarks
    and searches (every placement is checked against the grid): its counts are whatever the
    evaluator says, not the model's."""
    movable_ids = _movable_ids(state, scope)
    tasks = {t.state_id: t for t in state.tasks}
    if any(len(tasks[i].slots) > 1 for i in movable_ids):
        return None
    owner = _lifted(state, tasks, movable_ids)
    members: list[list[int]] = []
    items, fixed_hosts, floating = exact_items(state, lambda t: t.state_id in movable_ids, members)
    pending_slots = sum(tasks[i].need() for i in movable_ids if tasks[i].status == "pending")
    result = solve_exact(  # (the floor's own solve when it ran on this population)
        owner,
        items,
        fixed_hosts,
        floating,
        level=level,
        pending_min=min(pending_slots, pending_periods),
        count_load=True,
        count_buffer=True,
        time_limit_s=time_limit_s,
        num_workers=num_workers,
        work_s=work_s,
        calibration=calibration,
    )
    if result.solution is None:
        return None
    layout = _Layout(items, owner != 0, _host_blocks(state, movable_ids), spread, calibration)
    for days, pats, counts, guests in result.solution["kinds"]:
        layout.put_days(days, pats, counts, dropped)
        layout.put_guests(days, guests)
    layout.left += [k for k, c in result.solution["floating"].items() for _ in range(c)]
    if not layout.put_leftovers():
        return None
    out = give_out(
        layout.spots,
        members,
        lambda t: study_subject(tasks[t]) or "",
        {k: it.length for k, it in enumerate(items)},
        _fixed_days(state, movable_ids),
    )
    done = sum(p.length for p in out if tasks[p.task_id].status == "pending")
    return out if short_ok or done >= pending_periods else None


def _movable_ids(state: ScheduleState, scope: Collection[int] | None) -> set[int]:
    """The tasks the model places: the movable study tasks of the scope (every pending one), a
    suggested task left outside its class's days staying (the writes keep tasks inside)."""
    return {
        t.state_id
        for t in state.tasks
        if movable_study(state, t)
        and (scope is None or t.status == "pending" or t.state_id in scope)
        and (t.status != "suggested" or inside_window(state, t))
    }


def _lifted(state: ScheduleState, tasks: dict[int, Task], movable_ids: set[int]) -> np.ndarray:
    """The grid's owners with the free-standing blocks of the movable tasks lifted."""
    owner = state.grid.owner.copy()
    for i in movable_ids:
        t = tasks[i]
        if t.embed_host is None:
            for b in t.slots:
                owner[b.day - 1, b.slot_start - 1 : b.slot_end] = 0
    return owner


def _host_blocks(state: ScheduleState, movable_ids: set[int]) -> _HostBlocks:
    """The blocks of the unlocked hosts that stay, by day: (start, length, host)."""
    blocks: _HostBlocks = {}
    for t in state.tasks:
        if t.can_embed and not t.locked and t.state_id not in movable_ids:
            for b in t.slots:
                blocks.setdefault(b.day, []).append((b.slot_start, b.length, t.state_id))
    return blocks


def _fixed_days(state: ScheduleState, movable_ids: set[int]) -> dict[str, list[int]]:
    """The days each subject's blocks that stay stand on."""
    fixed: dict[str, list[int]] = {}
    for t in state.tasks:
        name = study_subject(t)
        if name is not None and t.state_id not in movable_ids:
            fixed.setdefault(name, []).extend(b.day for b in t.slots)
    return fixed


class _Layout:
    """The places given to the model's items so far: ``spots`` (item -> (day, 0-based start,
    host)), the periods they hold (``used``), the host blocks taken, and the items whose block
    found no place yet (``left``)."""

    def __init__(
        self,
        items: list[Item],
        used: np.ndarray,
        host_blocks: _HostBlocks,
        spread: bool,
        calibration: Calibration,
    ) -> None:
        self.items = items
        self.used = used
        self.host_blocks = host_blocks
        self.spread = spread
        self.pack_steps = calibration.realise_pack_steps
        self.spd = used.shape[1]
        self.taken_hosts: set[tuple[int, int]] = set()
        self.spots: dict[int, list[tuple[int, int, int | None]]] = {}
        self.last_day: dict[int, int] = {}  # item -> the last day it was put on
        self.left: list[int] = []

    def put(self, k: int, day: int, start: int, host: int | None = None) -> None:
        self.spots.setdefault(k, []).append((day, start, host))
        self.last_day[k] = max(day, self.last_day.get(k, 0))
        if host is None:
            self.used[day - 1, start : start + self.items[k].length] = True

    def put_days(
        self,
        days: list[int],
        pats: dict[Any, int],
        counts: dict[int, int],
        dropped: list[int] | None,
    ) -> None:
        """A kind's days take their patterns' blocks (what does not pack goes to ``left``)."""
        # days alike are interchangeable: each pattern's days spread evenly over the kind's
        # days (in day order), so that no item crowds into the kind's first days
        vecs = [
            vec
            for _, _, vec in sorted(
                ((j + 0.5) / c if self.spread else i, i, vec)
                for i, (vec, c) in enumerate(pats.items())
                for j in range(c)
            )
        ]
        pool = {k: c for k, c in counts.items()}
        for d0, vec in zip(days, vecs, strict=False):
            need = [n for (n, _), m in vec for _ in range(m)]
            placed = self.pack(d0 + 1, need, pool)
            if placed is None and dropped is not None:
                dropped.append(d0 + 1)
            while placed is None and need:  # drop the shortest block (it goes to leftovers)
                need.pop(need.index(min(need)))
                placed = self.pack(d0 + 1, need, pool)
            for k, s in placed or []:
                self.put(k, d0 + 1, s)
        self.left += [k for k, c in pool.items() for _ in range(c)]

    def put_guests(self, days: list[int], guests: dict[int, int]) -> None:
        """A kind's guests into the host blocks of its days, by first fit: the most restricted
        first (fewest allowed periods, then the longest): the model's guests fit the host blocks
        (Hall's condition), a first fit in that order almost always finds the places."""
        items = self.items
        for k, c in sorted(
            guests.items(), key=lambda e: (sum(items[e[0]].allowed), -items[e[0]].length)
        ):
            for _ in range(c):
                ln, allowed = items[k].length, items[k].allowed
                spot = next(
                    (
                        (d0 + 1, s, host)
                        for d0 in days
                        for s0, n, host in self.host_blocks.get(d0 + 1, [])
                        if (d0 + 1, host) not in self.taken_hosts
                        for s in range(s0 - 1, s0 - 1 + n - ln + 1)
                        if all(allowed[s : s + ln])
                    ),
                    None,
                )
                if spot is None:
                    self.left.append(k)
                    continue
                self.taken_hosts.add((spot[0], spot[2]))
                self.put(k, spot[0], spot[1], spot[2])

    def put_leftovers(self) -> bool:
        """Every item of ``left`` at the first place its class allows; False when a placed
        task's block finds none (a pending one is left unplaced)."""
        items, used = self.items, self.used
        for k in sorted(self.left, key=lambda k: (items[k].pending, -items[k].length)):
            it = items[k]
            first = next(
                (
                    (day, s)
                    for day in range(it.lo, it.hi + 1)
                    if day not in it.off
                    for s in range(self.spd - it.length + 1)
                    if not used[day - 1, s : s + it.length].any()
                    and all(it.allowed[s : s + it.length])
                ),
                None,
            )
            if first is None:
                if not it.pending:
                    return False
                continue
            self.put(k, first[0], first[1])
        return True

    def pack(self, day: int, need: list[int], pool: dict[int, int]) -> list[tuple[int, int]] | None:
        """Items of ``pool`` (item -> how many are left) and starts (0-based) for blocks of the
        lengths ``need`` on ``day``, each item in periods its class allows, or None. A small
        search (longest blocks first, the most restricted items first, items alike tried once,
        at most ``calibration.realise_pack_steps`` steps) for the packing that leaves the day
        the most usable free periods, as the model's pattern counts them (its buffer and
        fragmentation follow); the chosen items are taken from ``pool``."""
        # the most restricted items first: a day that can take one should (the others fit
        # more days of the kind); among alike ones, the one placed longest ago (its tasks'
        # subjects wait least)
        candidates = sorted(
            pool,
            key=lambda k: (
                sum(self.items[k].allowed),
                self.last_day.get(k, 0) if self.spread else 0,
            ),
        )
        search = _Packing(self.items, candidates, pool, self.used[day - 1].copy(), need)
        search.go(0, self.pack_steps)
        if search.best is None:
            return None
        for k, _ in search.packing:
            pool[k] -= 1
        return search.packing


class _Packing:
    """The bounded depth-first search of :meth:`_Layout.pack` on one day's ``row``."""

    def __init__(
        self,
        items: list[Item],
        candidates: list[int],
        pool: dict[int, int],
        row: np.ndarray,
        need: list[int],
    ) -> None:
        self.items, self.candidates, self.pool, self.row = items, candidates, pool, row
        self.order = sorted(need, reverse=True)
        self.most = int(np.count_nonzero(~row)) - sum(need)  # free periods left: usable at most
        self.chosen: list[tuple[int, int]] = []
        self.best: int | None = None  # usable periods of ``packing``
        self.packing: list[tuple[int, int]] = []
        self.steps = 0

    def go(self, j: int, pack_steps: int) -> bool:
        """Extend the packing from block ``j``; True: stop (the best possible is found, or the
        steps are spent)."""
        self.steps += 1
        row = self.row
        if j == len(self.order):
            got = usable_periods_of(row)
            if self.best is None or got > self.best:
                self.best, self.packing = got, list(self.chosen)
            return got >= self.most or self.steps >= pack_steps
        if self.steps >= pack_steps:
            return True
        n = self.order[j]
        spd = row.size
        tried: set[tuple[bool, ...]] = set()
        for k in self.candidates:
            it = self.items[k]
            if not self.pool[k] or it.length != n or it.allowed in tried:
                continue
            tried.add(it.allowed)
            allowed = it.allowed
            for s in range(spd - n + 1):
                if not row[s : s + n].any() and all(allowed[s : s + n]):
                    row[s : s + n] = True
                    self.pool[k] -= 1
                    self.chosen.append((k, s))
                    stop = self.go(j + 1, pack_steps)
                    self.chosen.pop()
                    self.pool[k] += 1
                    row[s : s + n] = False
                    if stop:
                        return True
        return False


def inside_window(state: ScheduleState, t: Task) -> bool:
    """Every block of ``t`` stands inside its class's days."""
    cls = rule_for(state, t)
    return all(cls.start_day <= b.day <= cls.end_day for b in t.slots)


def give_out(
    spots: dict[int, list[tuple[int, int, int | None]]],
    members: list[list[int]],
    subject: Callable[[int], str],
    length: dict[int, int],
    fixed_days: dict[str, list[int]],
) -> list[Placement]:
    """The places of each item (``spots``: item -> (day, 0-based start, host)) given to tasks
    of that item (``members``), in day order: each place to the task whose subject has waited
    longest since its last session (its own fixed ones, ``fixed_days``, included; the start of
    the window for a subject not yet seen). Ties: the subject's name, then the task's order.
    (Weighing the wait by each subject's share of the sessions was tried: on the floor
    benchmark's open windows it met the floor on 2 fewer; docs/decisions.md.)"""
    places = sorted(
        ((day, start, host, k) for k, got in spots.items() for day, start, host in got),
        key=lambda p: (p[0], p[1], p[3]),
    )
    # per item, its tasks by subject, each subject's in the tasks' order (the first one left
    # is the one a tie on the subject goes to)
    queues: dict[int, dict[str, collections.deque[int]]] = {}
    for k in spots:
        by = queues[k] = {}
        for t in members[k]:
            by.setdefault(subject(t), collections.deque()).append(t)
    fixed = {name: sorted(days) for name, days in fixed_days.items()}
    last: dict[str, int] = {}
    out = []
    for day, start, host, k in places:
        best: tuple[int, str] | None = None
        for name, queue in queues[k].items():
            if not queue:
                continue
            seen = fixed.get(name, [])
            before = seen[bisect.bisect_right(seen, day) - 1] if seen and seen[0] <= day else 0
            key = (max(last.get(name, 0), before) - day, name)  # longest wait first
            if best is None or key < best:
                best = key
        assert best is not None  # every place has a task of its item
        name = best[1]
        t = queues[k][name].popleft()
        last[name] = day
        out.append(Placement(t, day, start + 1, start + length[k], host))
    return out


def usable_periods_of(taken: np.ndarray) -> int:
    """Usable free periods of a day (``taken``: its periods held), as health_facts counts them."""
    rows, _, lengths = free_runs(~taken[None, :])
    return int(usable_periods(rows, lengths, 1)[0])


__all__ = ["realise"]
