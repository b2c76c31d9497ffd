"""The selection of days, tasks and places by the calendar vocabulary (issue 43).

The spec keeps real dates away from the model: day ``i`` of the window is ``(week,
day_of_week)`` of ``window.day_mapping`` (tool-layer design §2, §3.5; day_of_week 1 = Monday ..
7 = Sunday), as :attr:`ScheduleState.calendar` reads it (:mod:`.state.calendar`). This module
selects by the calendar vocabulary of the reference system's query tools
(``read_filter_tools.go``), one meaning for every tool:

- **days**: ``day`` or ``day_start``..``day_end`` (window days), ``week`` or
  ``week_from``..``week_to`` (teaching weeks), ``day_scope`` (``workday`` = Monday-Friday,
  ``weekend`` = Saturday and Sunday) and ``day_of_week`` (a set of 1..7); a day is selected when
  it passes every filter given (upstream lets ``day_of_week`` replace ``day_scope``; here both
  hold, and the tool layer refuses a pair that leaves no weekday);
- **periods**: a run of periods passes the section filter when every period of it does: not in
  ``exclude_sections``, after ``after_section`` and before ``before_section`` (both strict, as
  upstream: start > after, end < before);
- **tasks**: a placed task passes the day and section filters when one of its blocks lies on a
  selected day within the allowed periods; a pending task (no block) passes only when neither
  filter is given; ``status`` (``all`` or one status), ``category`` (exact) and ``task_ids``
  narrow further;
- **places**: every start of ``duration`` free periods on a selected day within the allowed
  periods (``empty``), and every start inside a free water-course block where the run fits
  (``embedded``, the embedding rule of the writes: wholly inside one block of an unlocked
  ``can_embed`` host that holds no guest).

A proposal's request (``tasks`` / ``slots`` / ``same_week``) becomes a :class:`ProposalScope`:
the placed tasks that may move and, per task, the (day, period) mask of where it may go; the
task-class rules apply on top of it, wherever the solver judges a place.

Filters are plain frozen data, already checked against the window by the tool layer (which
says what is wrong in the model's words); everything here is pure and returns data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .concepts import is_study, movable_by_solver
from .state import ScheduleState, SlotRange, Task
from .state.calendar import Calendar
from .state.ops import host_blocks

DayScope = Literal["all", "workday", "weekend"]
StatusFilter = Literal["all", "existing", "suggested", "pending"]
PlaceType = Literal["empty", "embedded"]
SCOPE_WEEKDAYS: dict[DayScope, frozenset[int]] = {
    "all": frozenset(range(1, 8)),
    "workday": frozenset(range(1, 6)),
    "weekend": frozenset({6, 7}),
}


def calendar_of(state: ScheduleState) -> Calendar | None:
    """The window's calendar when it names weeks and weekdays (a day mapping), else ``None``."""
    cal = state.calendar
    return cal if cal.has_weekdays else None


def week_range(cal: Calendar) -> tuple[int, int]:
    """The window's first and last teaching weeks."""
    weeks = [w for w in cal.weeks if w is not None]
    return min(weeks), max(weeks)


def week_days(cal: Calendar, week: int) -> list[int]:
    """The window's days of teaching week ``week``, in order."""
    return [i + 1 for i, w in enumerate(cal.weeks) if w == week]


@dataclass(frozen=True)
class DayFilter:
    """Which days of the window (see the module docstring); ``None`` / empty: no limit."""

    day_scope: DayScope = "all"
    day_of_week: frozenset[int] = frozenset()
    week_from: int | None = None
    week_to: int | None = None
    day_start: int | None = None
    day_end: int | None = None

    @property
    def needs_calendar(self) -> bool:
        """Whether it names weeks or weekdays (it then needs the window's day mapping)."""
        return (
            self.day_scope != "all"
            or bool(self.day_of_week)
            or self.week_from is not None
            or self.week_to is not None
        )

    @property
    def active(self) -> bool:
        return self.needs_calendar or self.day_start is not None or self.day_end is not None

    def weekdays(self) -> frozenset[int]:
        """The weekdays it lets through (``day_scope`` and ``day_of_week`` together)."""
        allowed = SCOPE_WEEKDAYS[self.day_scope]
        return allowed & self.day_of_week if self.day_of_week else allowed

    def days(self, num_days: int, cal: Calendar | None) -> list[int]:
        """The selected days, in order."""
        lo = self.day_start if self.day_start is not None else 1
        hi = self.day_end if self.day_end is not None else num_days
        days = range(max(1, lo), min(num_days, hi) + 1)
        if not self.needs_calendar:
            return list(days)
        assert cal is not None, "a week or weekday filter needs the window's day mapping"
        weekdays = self.weekdays()
        first, last = week_range(cal)
        w_lo = self.week_from if self.week_from is not None else first
        w_hi = self.week_to if self.week_to is not None else last
        return [
            d for d in days if cal.weekday(d) in weekdays and w_lo <= (cal.week(d) or 0) <= w_hi
        ]


@dataclass(frozen=True)
class SectionFilter:
    """Which periods of a day (see the module docstring); ``None`` / empty: no limit."""

    exclude: frozenset[int] = frozenset()
    after: int | None = None
    before: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.exclude) or self.after is not None or self.before is not None

    def period_ok(self, period: int) -> bool:
        return (
            period not in self.exclude
            and (self.after is None or period > self.after)
            and (self.before is None or period < self.before)
        )

    def allows(self, slot_start: int, slot_end: int) -> bool:
        """Whether every period of ``slot_start..slot_end`` passes."""
        return all(self.period_ok(p) for p in range(slot_start, slot_end + 1))

    def mask(self, slots_per_day: int) -> np.ndarray:
        """Boolean ``(slots_per_day,)``: the periods that pass (index ``period - 1``)."""
        return np.array([self.period_ok(p) for p in range(1, slots_per_day + 1)], dtype=bool)


@dataclass(frozen=True)
class PlaceFilter:
    """Where something may go: the days and, on each, the periods."""

    days: DayFilter = field(default_factory=DayFilter)
    sections: SectionFilter = field(default_factory=SectionFilter)

    @property
    def active(self) -> bool:
        return self.days.active or self.sections.active

    def mask(self, state: ScheduleState, cal: Calendar | None) -> np.ndarray:
        """Boolean ``(days, slots)``: the (day, period) cells that pass."""
        out = np.zeros((state.num_days, state.slots_per_day), dtype=bool)
        periods = self.sections.mask(state.slots_per_day)
        for d in self.days.days(state.num_days, cal):
            out[d - 1] = periods
        return out

    def holds(self, block: SlotRange, days: Iterable[int]) -> bool:
        """Whether ``block`` lies on one of ``days`` (the selected ones) within the periods."""
        return block.day in days and self.sections.allows(block.slot_start, block.slot_end)


@dataclass(frozen=True)
class TaskFilter:
    """Which tasks (see the module docstring)."""

    where: PlaceFilter = field(default_factory=PlaceFilter)
    status: StatusFilter = "all"
    category: str | None = None
    task_ids: frozenset[int] | None = None

    def select(self, state: ScheduleState, cal: Calendar | None) -> list[Task]:
        """The tasks that pass, placed ones by their first passing block (day, period), then
        pending ones, each group by id."""
        days = set(self.where.days.days(state.num_days, cal)) if self.where.active else set()
        found: list[tuple[tuple[int, int, int], Task]] = []
        for task in state.tasks:
            if self.status != "all" and task.status != self.status:
                continue
            if self.category is not None and task.category != self.category:
                continue
            if self.task_ids is not None and task.state_id not in self.task_ids:
                continue
            blocks = [b for b in task.slots if not self.where.active or self.where.holds(b, days)]
            if self.where.active and not blocks:
                continue
            first = min(((b.day, b.slot_start) for b in blocks), default=None)
            key = (0, *first) if first is not None else (1, 0, 0)
            found.append((key, task))
        found.sort(key=lambda kt: (kt[0], kt[1].state_id))
        return [task for _, task in found]


@dataclass(frozen=True)
class Place:
    """A run of ``slot_end - slot_start + 1`` periods one task could take."""

    day: int
    slot_start: int
    slot_end: int
    kind: PlaceType = "empty"
    embed_host: int | None = None


def free_places(
    state: ScheduleState, days: Iterable[int], sections: SectionFilter, duration: int
) -> list[Place]:
    """Every place of ``duration`` periods on ``days`` within the allowed periods: the free
    runs' starts (``empty``) first, then the starts inside free water-course blocks
    (``embedded``), each group by day and period."""
    spd = state.slots_per_day
    if not 1 <= duration <= spd:
        return []
    day_list = sorted(set(days))
    periods = sections.mask(spd)
    free = (state.grid.owner == 0) & periods[None, :]
    # a start s fits when periods s..s+duration-1 all pass: a sliding sum over each day's row
    sums = np.cumsum(np.pad(free.astype(np.int32), ((0, 0), (1, 0))), axis=1)
    fits = (sums[:, duration:] - sums[:, :-duration]) == duration  # (days, spd - duration + 1)
    out = [
        Place(d, int(s) + 1, int(s) + duration)
        for d in day_list
        for s in np.flatnonzero(fits[d - 1])
    ]
    wanted = set(day_list)
    for host, block, guest in host_blocks(state):
        if guest is not None or host.embed_host is not None or block.day not in wanted:
            continue
        for start in range(block.slot_start, block.slot_end - duration + 2):
            if sections.allows(start, start + duration - 1):
                out.append(Place(block.day, start, start + duration - 1, "embedded", host.state_id))
    return out


@dataclass(frozen=True)
class ProposalScope:
    """What a proposal may change: ``movable`` placed tasks (no other placed task moves) and,
    per task in scope, the boolean ``(days, slots)`` mask of the cells it may occupy (only the
    request's limits: the task-class rules hold on top of it)."""

    movable: frozenset[int]
    allowed: Mapping[int, np.ndarray]


def proposal_scope(
    state: ScheduleState,
    cal: Calendar | None,
    tasks: TaskFilter | None,
    slots: PlaceFilter | None,
    same_week: bool,
    pending: Iterable[Task] = (),
) -> ProposalScope:
    """The :class:`ProposalScope` of a request.

    ``tasks`` selects the placed study tasks that may move (those a proposal can re-plan:
    placed with one block, no host, none locked); ``None`` moves none of them. ``pending``
    are the pending tasks the proposal places (its mode decides which). Each gets the mask of
    ``slots`` (everywhere when ``None``); with ``same_week`` a moving placed task's mask keeps
    only the days of the week its block is in (a pending task has no week: unaffected)."""
    hosts = state.guests_by_host()
    moving = [
        t
        for t in (tasks.select(state, cal) if tasks is not None else ())
        if t.is_placed and is_study(t) and movable_by_solver(state, t, hosts)
    ]
    where = slots if slots is not None else PlaceFilter()
    base = where.mask(state, cal)
    allowed: dict[int, np.ndarray] = {t.state_id: base for t in pending if t.status == "pending"}
    for task in moving:
        mask = base
        if same_week:
            assert cal is not None, "same_week needs the window's day mapping"
            week = cal.week(task.slots[0].day)
            keep = np.zeros(state.num_days, dtype=bool)
            keep[[d - 1 for d in week_days(cal, week or 0)]] = True
            mask = base & keep[:, None]
        allowed[task.state_id] = mask
    return ProposalScope(frozenset(t.state_id for t in moving), allowed)


def scope_cells(state: ScheduleState, scope: ProposalScope) -> dict[int, np.ndarray]:
    """Per task in ``scope``: its ``allowed`` mask narrowed by the item order against the items
    that stay (``ClassRules.order_window`` with every scope task taken off the grid): a cell is
    kept when it lies strictly after the latest end of a staying earlier item of the task's
    class and strictly before the earliest start of a staying later one. A block whose cells are
    all kept keeps the order with every staying item; the order among the scope's own items is
    the solver's (see :func:`..solver.scoped.in_item_order`)."""
    leaving: dict[int, list[SlotRange]] = {tid: [] for tid in scope.allowed}
    rules = state.class_rules
    spd = state.slots_per_day
    day_of = np.repeat(np.arange(1, state.num_days + 1), spd).reshape(state.num_days, spd)
    period_of = np.tile(np.arange(1, spd + 1), state.num_days).reshape(state.num_days, spd)
    out: dict[int, np.ndarray] = {}
    for tid, mask in scope.allowed.items():
        task = state.task(tid)
        after, before = rules.order_window(task, leaving) if task is not None else (None, None)
        cells = mask
        if after is not None:
            (d, p), _ = after
            cells = cells & ((day_of > d) | ((day_of == d) & (period_of > p)))
        if before is not None:
            (d, p), _ = before
            cells = cells & ((day_of < d) | ((day_of == d) & (period_of < p)))
        out[tid] = cells
    return out


__all__ = [
    "SCOPE_WEEKDAYS",
    "DayFilter",
    "DayScope",
    "Place",
    "PlaceFilter",
    "ProposalScope",
    "SectionFilter",
    "StatusFilter",
    "TaskFilter",
    "calendar_of",
    "free_places",
    "proposal_scope",
    "scope_cells",
    "week_days",
    "week_range",
]
