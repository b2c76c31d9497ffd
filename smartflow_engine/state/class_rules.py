"""The class constraints of a window, read once: where each task may go and in which order.

:attr:`ScheduleState.class_rules <smartflow_engine.state.ScheduleState.class_rules>` is the one
reading of every task-class field that constrains a place (issue 42). Every consumer (the write
operations, destinations, the read tools, the solver, the plot) asks it; none reads the raw
fields. Per task it answers

- the **allowed grid**: the ``(day, period)`` cells its blocks may cover — the class's days
  (``start_day``/``end_day`` and, when the window's calendar gives dates,
  ``start_date``/``end_date``: every bound holds), minus its banned weekdays
  (``excluded_days_of_week``), times the periods off its banned half-day blocks
  (``excluded_slots``, block b = periods 2b−1 and 2b) and single banned periods
  (``excluded_periods``): :meth:`ClassRules.allowed`, :meth:`ClassRules.breach`;
- whether it **may embed** in a water course (``allow_filler_course``): :meth:`ClassRules.may_embed`;
- its **order neighbours**: for two placed items of one class with orders a < b (``task_order``),
  a ends strictly before b starts, in (day, period) order (the reference system's
  ``order_constraints.go``, held between every pair, not only adjacent orders):
  :meth:`ClassRules.order_window`, :meth:`ClassRules.order_breach`.

A task without a class entry (or whose class is not listed) has no day, period or embedding
rule; the order rule needs only ``task_class_id`` and ``task_order`` on study items, as upstream.
The grid rules are static (the classes and the window do not change under a write); the order
rule reads the tasks' current places, or the places a simultaneous write is about to give them.
Rules that need a calendar the window does not state are listed in :attr:`ClassRules.notices`
(the dates) or refused at load (banned weekdays without a day mapping).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from .calendar import Calendar, parse_date

if TYPE_CHECKING:
    from .model import ScheduleState, SlotRange, Task, TaskClass

BreachKind = Literal[
    "class_window",  # the day lies outside the class's days (start/end day or date)
    "banned_weekday",  # the day's weekday is one of the class's excluded_days_of_week
    "banned_period",  # the range covers a banned half-day block or period of the class
    "no_filler",  # the class's items may not be embedded in water courses
    "order_after",  # the item must start after an earlier item of its class ends
    "order_before",  # the item must end before a later item of its class starts
]
NoticeKind = Literal["dates_unknown", "no_day", "no_period"]
Position = tuple[int, int]  # (day, period), compared in that order


@dataclass(frozen=True)
class Breach:
    """A class rule a place would break, as data: ``kind``, the task's class, the place, and
    for ``banned_period`` the banned periods it covers, for the order kinds the other item."""

    kind: BreachKind
    class_id: int | None
    day: int
    slot_start: int
    slot_end: int
    periods: tuple[int, ...] = ()
    other_id: int | None = None


@dataclass(frozen=True)
class Notice:
    """A class rule the engine cannot honour or that leaves nothing: ``dates_unknown`` (the
    class has start/end dates, the window no calendar dates: they are not applied), ``no_day``
    / ``no_period`` (no day / no period of the window is allowed: its items cannot be placed)."""

    kind: NoticeKind
    class_id: int
    name: str

    @property
    def text(self) -> str:
        who = f"task class [{self.class_id}] {self.name}"
        return {
            "dates_unknown": f"{who}: start_date/end_date cannot be honoured: the window states "
            "no dates (give window.semester_start, a date on every day_mapping entry, or set "
            "SMARTFLOW_SEMESTER_START)",
            "no_day": f"{who}: no day of the window is allowed (its days, dates and weekdays "
            "exclude every one): its items cannot be placed",
            "no_period": f"{who}: every period is banned: its items cannot be placed",
        }[self.kind]


@dataclass(frozen=True, eq=False)
class ClassRule:
    """What one task class allows, resolved against the window.

    ``days`` (``(num_days,)`` bool) are the days its items may use; ``late_days`` the same
    without the last-day bounds (a proposal asked to run late); ``periods`` (``(slots_per_day,)``
    bool) the periods they may use on any allowed day. ``first_day`` / ``last_day`` are the
    bounds of its day window (start/end day and date; ``last_day < first_day`` when empty);
    ``open_end``: no end bound inside the window (days appended after it are allowed too).
    """

    class_id: int
    name: str
    days: np.ndarray
    late_days: np.ndarray
    periods: np.ndarray
    allow_filler: bool
    first_day: int
    last_day: int
    open_end: bool
    banned_weekdays: tuple[int, ...]
    banned_blocks: tuple[int, ...]
    banned_periods: tuple[int, ...]  # every banned period: the blocks' and the single ones
    start_date: str | None = None  # as given, for the replies (None: none or not honoured)
    end_date: str | None = None
    _grid: dict[bool, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def day_ok(self, day: int, *, late: bool = False) -> bool:
        mask = self.late_days if late else self.days
        return 1 <= day <= len(mask) and bool(mask[day - 1])

    def grid(self, *, late: bool = False) -> np.ndarray:
        """The allowed ``(days, periods)`` cells (read-only; cached)."""
        out = self._grid.get(late)
        if out is None:
            out = np.outer(self.late_days if late else self.days, self.periods)
            out.setflags(write=False)
            self._grid[late] = out
        return out


class ClassRules:
    """The class constraints of one state (see the module). Built by
    :attr:`ScheduleState.class_rules`; rebuilt when the state is validated again."""

    def __init__(self, state: ScheduleState) -> None:
        self._state = state
        self.calendar = Calendar.of(state.window)
        self.num_days = state.num_days
        self.slots_per_day = state.slots_per_day
        notices: list[Notice] = []
        self._rules: dict[int, ClassRule] = {}
        for tc in state.task_classes:
            self._rules[tc.id] = self._resolve(tc, notices)
        self.notices: tuple[Notice, ...] = tuple(notices)
        ordered: dict[int, list[Task]] = {}
        for t in state.tasks:
            if (key := order_key(t)) is not None:
                ordered.setdefault(key[0], []).append(t)
        for items in ordered.values():
            items.sort(key=lambda t: (t.task_order or 0, t.state_id))
        self._ordered = ordered
        self._free = np.ones((self.num_days, self.slots_per_day), dtype=bool)
        self._free.setflags(write=False)

    # ------------------------------------------------------------------ the grid rules
    def _resolve(self, tc: TaskClass, notices: list[Notice]) -> ClassRule:
        n, spd, cal = self.num_days, self.slots_per_day, self.calendar
        day_no = np.arange(1, n + 1)
        start = (day_no >= tc.start_day) if tc.start_day is not None else np.ones(n, dtype=bool)
        end = (day_no <= tc.end_day) if tc.end_day is not None else np.ones(n, dtype=bool)
        open_end = tc.end_day is None or tc.end_day >= n
        honoured: tuple[str | None, str | None] = (None, None)
        if tc.start_date is not None or tc.end_date is not None:
            if cal.has_dates:
                dates = cal.dates
                if tc.start_date is not None:
                    first = parse_date(tc.start_date)
                    start &= np.array([d is not None and d >= first for d in dates])
                if tc.end_date is not None:
                    last = parse_date(tc.end_date)
                    end &= np.array([d is not None and d <= last for d in dates])
                    open_end = open_end and dates[-1] is not None and last >= dates[-1]
                honoured = (tc.start_date, tc.end_date)
            else:
                notices.append(Notice("dates_unknown", tc.id, tc.name))
        banned_days = tuple(sorted(set(tc.excluded_days_of_week)))
        if banned_days and cal.has_weekdays:
            weekday_ok = np.array([w not in banned_days for w in cal.weekdays])
        else:
            weekday_ok = np.ones(n, dtype=bool)
        periods = np.ones(spd, dtype=bool)
        blocks = tuple(sorted(set(tc.excluded_slots)))
        for b in blocks:
            periods[2 * b - 2 : min(2 * b, spd)] = False
        for p in tc.excluded_periods:
            periods[p - 1] = False
        window = start & end
        inside = np.flatnonzero(window)
        days = window & weekday_ok
        late_days = start & weekday_ok
        for arr in (days, late_days, periods):
            arr.setflags(write=False)
        if not days.any():
            notices.append(Notice("no_day", tc.id, tc.name))
        if not periods.any():
            notices.append(Notice("no_period", tc.id, tc.name))
        return ClassRule(
            tc.id,
            tc.name,
            days,
            late_days,
            periods,
            tc.allow_filler_course,
            int(inside[0]) + 1 if inside.size else 1,
            int(inside[-1]) + 1 if inside.size else 0,
            open_end,
            banned_days,
            blocks,
            tuple(int(p) + 1 for p in np.flatnonzero(~periods)),
            *honoured,
        )

    def of(self, class_id: int | None) -> ClassRule | None:
        """The rule of task class ``class_id`` (``None``: no such class listed)."""
        return self._rules.get(class_id) if class_id is not None else None

    def for_task(self, task: Task) -> ClassRule | None:
        return self._rules.get(task.task_class_id) if task.task_class_id is not None else None

    def all(self) -> list[ClassRule]:
        """Every class's rule, in the state's order."""
        return list(self._rules.values())

    def allowed(self, task: Task, *, allow_late: bool = False) -> np.ndarray:
        """The ``(days, periods)`` cells ``task``'s blocks may cover (read-only; the order
        rule, which depends on the other items' places, is :meth:`order_window`)."""
        rule = self.for_task(task)
        return self._free if rule is None else rule.grid(late=allow_late)

    def allowed_starts(self, task: Task, need: int, *, allow_late: bool = False) -> np.ndarray:
        """``(days, periods)`` bool: a run of ``need`` periods may start there (every period
        of it allowed, all on the day)."""
        grid = self.allowed(task, allow_late=allow_late)
        n, spd = grid.shape
        out = np.zeros((n, spd), dtype=bool)
        if need < 1 or need > spd:
            return out
        csum = np.concatenate([np.zeros((n, 1), dtype=np.int32), np.cumsum(grid, axis=1)], axis=1)
        out[:, : spd - need + 1] = (csum[:, need:] - csum[:, : spd - need + 1]) == need
        return out

    def may_embed(self, task: Task) -> bool:
        """Whether ``task``'s class lets it be embedded in a water course (its structure —
        one block, not a host itself — is the write's own rule)."""
        rule = self.for_task(task)
        return rule is None or rule.allow_filler

    def breach(
        self, task: Task, day: int, slot_start: int, slot_end: int, *, allow_late: bool = False
    ) -> Breach | None:
        """The first grid rule ``task`` would break on ``day`` periods ``slot_start..slot_end``
        (its day window, then its weekdays, then its periods), or ``None``. ``allow_late``
        lifts the last-day bounds (end day and date), nothing else."""
        rule = self.for_task(task)
        if rule is None:
            return None
        if not (rule.late_days if allow_late else rule.days)[day - 1]:
            weekday = self.calendar.weekday(day)
            in_window = rule.first_day <= day and (allow_late or day <= rule.last_day)
            if in_window and weekday is not None and weekday in rule.banned_weekdays:
                return Breach("banned_weekday", rule.class_id, day, slot_start, slot_end)
            return Breach("class_window", rule.class_id, day, slot_start, slot_end)
        hit = tuple(p for p in range(slot_start, slot_end + 1) if not rule.periods[p - 1])
        if hit:
            return Breach("banned_period", rule.class_id, day, slot_start, slot_end, hit)
        return None

    # ------------------------------------------------------------------ the order rule
    def ordered(self, class_id: int) -> list[Task]:
        """The ordered items of class ``class_id`` (placed or not), by ``task_order``."""
        return list(self._ordered.get(class_id, ()))

    def predecessors(self, task: Task) -> list[Task]:
        """The items of ``task``'s class with a smaller order (it must follow each placed one)."""
        key = order_key(task)
        if key is None:
            return []
        return [t for t in self._ordered.get(key[0], ()) if (t.task_order or 0) < key[1]]

    def successors(self, task: Task) -> list[Task]:
        """The items of ``task``'s class with a larger order (it must precede each placed one)."""
        key = order_key(task)
        if key is None:
            return []
        return [t for t in self._ordered.get(key[0], ()) if (t.task_order or 0) > key[1]]

    def order_window(
        self, task: Task, where: Mapping[int, Sequence[SlotRange]] | None = None
    ) -> tuple[tuple[Position, int] | None, tuple[Position, int] | None]:
        """``(after, before)``: ``task`` must start strictly after position ``after[0]`` (the
        latest end of a placed earlier item, ``after[1]`` its id) and end strictly before
        ``before[0]`` (the earliest start of a placed later item); ``None`` where nothing
        binds. ``where`` gives blocks that replace tasks' current ones (a write's new places;
        an empty list: not placed)."""
        after: tuple[Position, int] | None = None
        before: tuple[Position, int] | None = None
        for other in self.predecessors(task):
            blocks = _blocks_of(other, where)
            if blocks:
                end = last_position(blocks)
                if after is None or end > after[0]:
                    after = (end, other.state_id)
        for other in self.successors(task):
            blocks = _blocks_of(other, where)
            if blocks:
                begin = first_position(blocks)
                if before is None or begin < before[0]:
                    before = (begin, other.state_id)
        return after, before

    def order_breach(
        self, task: Task, where: Mapping[int, Sequence[SlotRange]] | None = None
    ) -> Breach | None:
        """The order rule ``task`` breaks at its place (``where``'s blocks for it, else its
        own; ``where`` as in :meth:`order_window`): the earlier item it fails to follow, else
        the later one it fails to precede; ``None`` when it holds or the task is not placed."""
        blocks = _blocks_of(task, where)
        if not blocks or order_key(task) is None:
            return None
        after, before = self.order_window(task, where)
        cid = task.task_class_id
        first = min(blocks, key=lambda b: (b.day, b.slot_start))
        if after is not None and not (first.day, first.slot_start) > after[0]:
            return Breach(
                "order_after", cid, first.day, first.slot_start, first.slot_end, (), after[1]
            )
        last = max(blocks, key=lambda b: (b.day, b.slot_end))
        if before is not None and not (last.day, last.slot_end) < before[0]:
            return Breach(
                "order_before", cid, last.day, last.slot_start, last.slot_end, (), before[1]
            )
        return None

    def order_breaches(
        self, tasks: Iterable[Task], where: Mapping[int, Sequence[SlotRange]]
    ) -> tuple[Task, Breach] | None:
        """The first of ``tasks`` that breaks the order rule with ``where``'s places (a
        write's), and how; ``None`` when every one holds."""
        for task in tasks:
            if breach := self.order_breach(task, where):
                return task, breach
        return None


def order_key(task: Task) -> tuple[int, int] | None:
    """``(class id, order)`` of an item the order rule holds (a study item with both), else
    ``None`` (upstream: ``source == "task_item" && TaskClassID > 0 && TaskOrder > 0``)."""
    if task.source != "task_item" or task.task_class_id is None or task.task_order is None:
        return None
    return task.task_class_id, task.task_order


def first_position(blocks: Sequence[SlotRange]) -> Position:
    """Where the earliest block starts, as ``(day, period)``."""
    return min((b.day, b.slot_start) for b in blocks)


def last_position(blocks: Sequence[SlotRange]) -> Position:
    """Where the latest block ends, as ``(day, period)``."""
    return max((b.day, b.slot_end) for b in blocks)


def _blocks_of(task: Task, where: Mapping[int, Sequence[SlotRange]] | None) -> Sequence[SlotRange]:
    if where is not None and task.state_id in where:
        return where[task.state_id]
    return task.slots
