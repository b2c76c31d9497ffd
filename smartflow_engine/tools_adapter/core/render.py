"""Chinese text pieces shared by every text tool, in the layouts of tool-layer-design.md.

Everything the LLM reads about a day, a range or a task is phrased here once, so the read tools,
the write tools and the solver tools say the same thing the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ...state import Change, ScheduleState, SlotRange, Task

T = TypeVar("T")

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
    """``第5天第1-3节``."""
    return f"第{block.day}天第{periods(block.slot_start, block.slot_end)}节"


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
        return f"第{day}天当前占用：{load}。"
    return f"第{day}天当前占用：{' '.join(items)}，占用{load}。"


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
