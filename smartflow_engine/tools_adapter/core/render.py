"""Chinese text pieces shared by every text tool, in the layouts of tool-layer-design.md.

Everything the LLM reads about a day, a range or a task is phrased here once, so the read tools,
the write tools and the solver tools say the same thing the same way.

Day labels (issue 43 item 2). The spec names a day by its index only (``第6天``), as the model
never sees dates. A host whose students speak in weekdays turns on ``weekday`` labels (a session
or server setting, :attr:`.spec.ToolContext.day_labels`): every day a text reply names through
:func:`day_label` then carries its weekday from the window's day mapping, ``第6天(星期六)``, and
its teaching week when the window spans several, ``第34天(第17周星期一)``. The setting of the
running call reaches the renderers through :func:`labelled_days` (a context variable the call
pipeline sets), so no renderer takes it as an argument; the spec's layouts stay the default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, TypeVar

from ...state import Change, ScheduleState, SlotRange, Task
from ...state.calendar import weekday_word

T = TypeVar("T")

DayLabels = Literal["index", "weekday"]
DAY_LABELS: tuple[DayLabels, ...] = ("index", "weekday")
_NAMER: ContextVar[Callable[[int], str] | None] = ContextVar("smartflow_day_namer", default=None)


def weekday_label(state: ScheduleState | None, day: int, spans_weeks: bool) -> str:
    """``第6天(星期六)``, ``第34天(第17周星期一)`` with ``spans_weeks``; ``第6天`` when the
    window has no day mapping (or the day is outside it)."""
    cal = state.calendar if state is not None else None
    dow = cal.weekday(day) if cal is not None else None
    if cal is None or dow is None:
        return f"第{day}天"
    week = f"第{cal.week(day)}周" if spans_weeks else ""
    return f"第{day}天({week}{weekday_word(dow)})"


class _WeekdayNamer:
    """The ``weekday`` labels of the state a call works on (read when a label is made: a call
    may replace its state), whether it spans several weeks decided once per window."""

    def __init__(self, state_of: Callable[[], ScheduleState | None]) -> None:
        self._state_of = state_of
        self._window: object = None
        self._spans = False

    def __call__(self, day: int) -> str:
        state = self._state_of()
        window = state.window if state is not None else None
        if window is not self._window:
            self._window = window
            self._spans = window is not None and len({m.week for m in window.day_mapping}) > 1

        return weekday_label(state, day, self._spans)


@contextmanager
def labelled_days(style: DayLabels, state_of: Callable[[], ScheduleState | None]) -> Iterator[None]:
    """Within the block, :func:`day_label` writes days in ``style`` for the state ``state_of``
    returns (the call pipeline wraps each call in it)."""
    token = _NAMER.set(_WeekdayNamer(state_of) if style == "weekday" else None)
    try:
        yield
    finally:
        _NAMER.reset(token)


def gap_words(gap: int | None, bounds: Sequence[int] | None = None) -> str:
    """The capacity gap for a sentence's "缺口…个时段": its figure, or, where only
    infeasibility is proven (the maximum not), its proven least and most."""
    if gap is not None:
        return str(gap)
    if bounds:
        return f"至少{bounds[0]}、至多{bounds[1]}"
    return "未知"


def day_label(day: int) -> str:
    """``第6天`` (the spec's label), or with the running call's ``weekday`` labels
    ``第6天(星期六)`` / ``第34天(第17周星期一)``."""
    namer = _NAMER.get()
    return f"第{day}天" if namer is None else namer(day)


STATUS_WORDS = {"existing": "已安排", "suggested": "已预排", "pending": "待安排"}
SOURCE_WORDS = {"event": "课程表", "task_item": "任务类"}


def source_word(task: Task) -> str:
    """Where a task comes from, as the read tools write it (``课程表`` / ``任务类``)."""
    return SOURCE_WORDS.get(task.source, task.source)


def periods(start: int, end: int) -> str:
    """``1-2`` or ``3`` (a single period)."""
    return f"{start}-{end}" if end != start else f"{start}"


def day_span(first: int, last: int) -> str:
    """``第3-5天``, or ``第3天`` for one day (never ``第3-3天``)."""
    return f"第{periods(first, last)}天"


def block_text(block: SlotRange) -> str:
    """``第5天第1-3节`` (the day as :func:`day_label` writes it)."""
    return f"{day_label(block.day)}第{periods(block.slot_start, block.slot_end)}节"


def fixed_word(task: Task) -> str:
    """``固定课程`` for a locked course, ``固定任务`` for any other locked task."""
    return "固定课程" if task.category == "课程" or task.source == "event" else "固定任务"


def day_items(state: ScheduleState, day: int) -> list[str]:
    """The day's tasks in period order: ``[4]体育(1-4节)``, guests as ``[7]写实验报告(嵌入1-2节)``."""
    items: list[tuple[int, int, str]] = []
    for task in state.tasks:
        for b in task.slots:
            if b.day != day:
                continue
            span = periods(b.slot_start, b.slot_end)
            if task.embed_host is not None:
                items.append((b.slot_start, 1, f"{task.label}(嵌入{span}节)"))
            else:
                items.append((b.slot_start, 0, f"{task.label}({span}节)"))
    items.sort()
    return [text for _, _, text in items]


def day_load(state: ScheduleState, day: int) -> int:
    return int(state.grid.day_load()[day - 1])


def occupancy_line(state: ScheduleState, day: int) -> str:
    """``第5天当前占用：[3]复习线代(1-3节)，占用3/12。`` (``第5天当前占用：0/12。`` when empty)."""
    items = day_items(state, day)
    load = f"{day_load(state, day)}/{state.slots_per_day}"
    if not items:
        return f"{day_label(day)}当前占用：{load}。"
    return f"{day_label(day)}当前占用：{' '.join(items)}，占用{load}。"


def free_periods_text(state: ScheduleState, day: int) -> str:
    """``空闲时段：第5-12节。`` listing every free run of the day (``无`` when full)."""
    runs = state.grid.free_runs(day=day)
    if not runs:
        return "空闲时段：无。"
    return "空闲时段：" + "、".join(f"第{periods(s, e)}节" for _, s, e in runs) + "。"


def pending_left_line(state: ScheduleState) -> str:
    return f"待安排任务剩余：{len(state.pending_tasks())}个。"


def task_tags(state: ScheduleState, task: Task) -> list[str]:
    """The parenthesised tags of a list line: ``固定``, ``可嵌入``, ``嵌入[10]思政``."""
    tags: list[str] = []
    if state.is_locked(task):
        tags.append("固定")
    if embeddable(state, task):
        tags.append("可嵌入")
    if task.embed_host is not None:
        host = state.task(task.embed_host)
        tags.append(f"嵌入{host.label if host else task.embed_host}")
    return tags


def embeddable(state: ScheduleState, task: Task) -> bool:
    """A water course a guest may go into: ``can_embed``, not locked, not itself a guest."""
    return task.can_embed and not state.is_locked(task) and task.embed_host is None


# Read replies are bounded: a list that grows with the number of tasks shows this many entries
# and then says how many were left out.
MAX_INLINE = 50  # entries of a one-line list (get_overview's 待安排 / 可嵌入时段)
MAX_LINES = 100  # lines of a multi-line list (list_tasks groups, find_free runs, blocks)


def capped(items: Sequence[T], limit: int) -> tuple[list[T], int]:
    """The first ``limit`` items and how many were left out."""
    return list(items[:limit]), max(0, len(items) - limit)


def left_out(count: int, unit: str = "个", hint: str = "") -> str:
    """``……其余120个未列出。`` (with an optional hint on how to see them)."""
    return f"……其余{count}{unit}未列出{('，' + hint) if hint else ''}。"


def applied_lines(
    state: ScheduleState,
    changes: Sequence[Change],
    *,
    from_to: bool,
    limit: int | None = None,
    more_hint: str = "",
    embed_word: str = "嵌入",
) -> tuple[list[str], list[int]]:
    """The one rendering of a set of placements just applied (batch_move, apply_proposal, the
    re-optimising writes): a line per change, ``  [3]复习线代 → 第6天第1-3节`` or with
    ``from_to`` ``  [3]复习线代：第2天第1-3节 → 第6天第1-3节``, a guest's host after it, the
    first ``limit`` changes and a line counting the rest; and the days the changes touched
    (left and entered), for the caller's occupancy lines."""
    lines: list[str] = []
    days: list[int] = []
    for ch in changes:
        if ch.block_before is not None:
            days.append(ch.block_before.day)
        if ch.block_after is not None:
            days.append(ch.block_after.day)
    shown, rest = capped(changes, limit if limit is not None else len(changes))
    for ch in shown:
        assert ch.block_after is not None
        host = state.task(ch.embed_host_after) if ch.embed_host_after is not None else None
        label = host.label if host is not None else f"[{ch.embed_host_after}]"
        embed = f"（{embed_word}{label}）" if ch.embed_host_after else ""
        task = state.task(ch.task_id)
        name = task.label if task is not None else f"[{ch.task_id}]"
        if from_to:
            assert ch.block_before is not None
            head = f"  {name}：{block_text(ch.block_before)} → "
        else:
            head = f"  {name} → "
        lines.append(f"{head}{block_text(ch.block_after)}{embed}")
    if rest:
        lines.append("  " + left_out(rest, "个", more_hint))
    return lines, days
