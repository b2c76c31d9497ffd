"""The spec's read tools (§4): get_overview, query_range, find_free, list_tasks, get_task_info.

Read tools report facts only, in the spec's layouts; they never change the state.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from ...state import ScheduleState, Task, host_blocks
from ..core.args import Args, Day, Duration, NoArgs, Slot, TaskId
from ..core.render import (
    MAX_INLINE,
    MAX_LINES,
    STATUS_WORDS,
    capped,
    day_span,
    embeddable,
    left_out,
    periods,
    source_word,
    task_tags,
)
from ..core.spec import ToolContext, ToolSpec, refused


def _state(ctx: ToolContext) -> ScheduleState:
    assert ctx.state is not None  # the Toolbox refuses state tools without a state
    return ctx.state


def day_out_of_window(state: ScheduleState, day: int) -> str | None:
    if 1 <= day <= state.num_days:
        return None
    return f"第{day}天超出规划窗口（第1-{state.num_days}天）。"


# ---------------------------------------------------------------------------------- get_overview
def get_overview(ctx: ToolContext, _args: NoArgs) -> str:
    state = _state(ctx)
    grid = state.grid
    spd, days = state.slots_per_day, state.num_days
    loads = grid.day_load()
    used = int(loads.sum())
    total = days * spd
    pending = state.pending_tasks()
    lines = [
        f"规划窗口共{days}天，每天{spd}个时段，总计{total}个时段。",
        f"当前已占用{used}个，空闲{total - used}个。待安排任务{len(pending)}个。",
        "",
        "每日概况：",
    ]
    per_day: dict[int, list[tuple[int, int, str]]] = {}
    for task in state.tasks:
        for b in task.slots:
            span = periods(b.slot_start, b.slot_end)
            if task.embed_host is not None:
                text, order = f"{task.label}(嵌入{span}节)", 1
            elif embeddable(state, task):
                text, order = f"{task.label}({span}节,可嵌入)", 0
            else:
                text, order = f"{task.label}({span}节)", 0
            per_day.setdefault(b.day, []).append((b.slot_start, order, text))
    for day in range(1, days + 1):
        head = f"第{day}天：占{int(loads[day - 1])}/{spd}"
        items = sorted(per_day.get(day, []))
        lines.append(head + (" — " + " ".join(t for _, _, t in items) if items else ""))
    hosts = []
    for host, b, guest in host_blocks(state):
        day, s, e = b.day, b.slot_start, b.slot_end
        taken = f",已嵌入{guest.label}" if guest is not None else ""
        hosts.append(f"第{day}天 {host.label}({periods(s, e)}节{taken})")
    shown, more = capped(hosts, MAX_INLINE)
    lines += [
        "",
        "可嵌入时段："
        + ("、".join(shown) if shown else "无")
        + (left_out(more, "处") if more else ""),
    ]
    shown, more = capped([f"{t.label}(需{t.need()}时段)" for t in pending], MAX_INLINE)
    lines.append(
        "待安排："
        + (" ".join(shown) or "无")
        + (left_out(more, "个", "可用 list_tasks 按类别查看") if more else "")
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- query_range
class QueryRangeArgs(Args):
    day: Day
    slot_start: Slot | None = Field(
        default=None, description="起始节次；不传且不传 slot_end 则查整天"
    )
    slot_end: Slot | None = Field(
        default=None, description="结束节次；只传 slot_start 时查到当天最后一节"
    )


def _cell_text(state: ScheduleState, owner: int, guest: int) -> str:
    if owner == 0:
        return "空"
    task = state.task(owner)
    assert task is not None
    # Exactly the spec's notes (固定, 可嵌入); category and source live in the JSON query
    # tools (DESIGN.md, decisions of turn 3; issue 24 item 10).
    notes = []
    if state.is_locked(task):
        notes.append("固定")
    if embeddable(state, task):
        notes.append("可嵌入")
    text = task.label + (f"（{'，'.join(notes)}）" if notes else "")
    if guest:
        g = state.task(guest)
        text += f"，嵌入 {g.label if g else guest}"
    return text


def query_range(ctx: ToolContext, args: QueryRangeArgs) -> str:
    state = _state(ctx)
    spd = state.slots_per_day
    if msg := day_out_of_window(state, args.day):
        return refused(f"查询失败：{msg}")
    owner = state.grid.owner[args.day - 1]
    guest = state.grid.guest[args.day - 1]
    if args.slot_start is None and args.slot_end is None:
        return _query_day(state, args.day, owner, guest)
    start = args.slot_start if args.slot_start is not None else 1
    end = args.slot_end if args.slot_end is not None else spd
    if end > spd or start > spd:
        return refused(f"查询失败：第{max(start, end)}节超出每天{spd}节的范围。")
    if start > end:
        return refused(f"查询失败：slot_start={start} 大于 slot_end={end}。")
    lines = [f"第{args.day}天 第{periods(start, end)}节：", ""]
    for slot in range(start, end + 1):
        lines.append(f"第{slot}节：{_cell_text(state, int(owner[slot - 1]), int(guest[slot - 1]))}")
    n = end - start + 1
    free = int(np.count_nonzero(owner[start - 1 : end] == 0))
    if free == n:
        summary = f"该范围{n}个时段全部空闲。"
    elif free == 0:
        summary = f"该范围{n}个时段全部已占用。"
    else:
        summary = f"该范围{n}个时段中空闲{free}个，已占用{n - free}个。"
    lines += ["", summary]
    return "\n".join(lines)


def _query_day(state: ScheduleState, day: int, owner: np.ndarray, guest: np.ndarray) -> str:
    spd = state.slots_per_day
    lines = [f"第{day}天 全天：", ""]
    slot = 1
    while slot <= spd:
        o, g = int(owner[slot - 1]), int(guest[slot - 1])
        end = slot
        # A task's run stays whole; free time is split at the standard pairs (1-2, 3-4, ...).
        while (
            end < spd
            and int(owner[end]) == o
            and int(guest[end]) == g
            and not (o == 0 and end % 2 == 0)
        ):
            end += 1
        lines.append(f"第{periods(slot, end)}节：{_cell_text(state, o, g)}")
        slot = end + 1
    runs = state.grid.free_runs(day=day)
    free = "、".join(f"第{periods(s, e)}节({e - s + 1}时段)" for _, s, e in runs)
    lines += ["", "连续空闲区：" + (free or "无")]
    lines.append("可嵌入：" + (_embed_notes(state, day) or "无"))
    return "\n".join(lines)


def _embed_notes(state: ScheduleState, day: int) -> str:
    """The whole-day reply's 可嵌入 line (spec §4.2: ``第1-2节已有[1]高等数学（固定，不可嵌入）``):
    each water-course block of the day (free or holding a guest) and each fixed block (nothing
    embeds into a fixed task), in period order."""
    notes: list[tuple[int, str]] = []
    for task in state.tasks:
        if task.embed_host is not None:
            continue  # a guest is named in its host's note
        locked, host = state.is_locked(task), embeddable(state, task)
        if not (locked or host):
            continue
        for b in task.slots:
            if b.day != day:
                continue
            if locked:
                why = "固定，不可嵌入"
            else:
                guest = next(
                    (g for h, hb, g in host_blocks(state, day) if h is task and hb == b), None
                )
                why = "可嵌入，" + (
                    f"已嵌入{guest.label}" if guest is not None else "当前无嵌入任务"
                )
            notes.append(
                (b.slot_start, f"第{periods(b.slot_start, b.slot_end)}节已有{task.label}（{why}）")
            )
    return "、".join(text for _, text in sorted(notes))


# ---------------------------------------------------------------------------------- find_free
class FindFreeArgs(Args):
    duration: Duration
    day: Day | None = Field(default=None, description="限定某天；不传则搜索全部天")


def find_free(ctx: ToolContext, args: FindFreeArgs) -> str:
    state = _state(ctx)
    spd = state.slots_per_day
    if args.day is not None and (msg := day_out_of_window(state, args.day)):
        return refused(f"查询失败：{msg}")
    if args.duration > spd:
        return refused(f"查询失败：每天只有{spd}个时段，无法满足{args.duration}个连续时段。")
    runs = state.grid.free_runs(min_len=args.duration, day=args.day)
    where = f"第{args.day}天" if args.day is not None else ""
    if runs:
        lines = [f"{where}满足{args.duration}个连续空闲时段的位置：", ""]
        shown, more = capped(runs, MAX_LINES)
        lines += [f"第{d}天 第{periods(s, e)}节（{e - s + 1}时段连续空闲）" for d, s, e in shown]
        if more:
            lines.append(left_out(more, "处", "可用 day 参数限定某天"))
    else:
        lines = [f"{where}没有满足{args.duration}个连续空闲时段的位置。"]
    # Every free water-course block, also those shorter than `duration`, as the spec's
    # duration-3 example lists the 2-period [10]思政 block.
    hosts = [
        f"第{b.day}天 第{periods(b.slot_start, b.slot_end)}节（{host.label}，当前无嵌入任务）"
        for host, b, guest in host_blocks(state, args.day)
        if guest is None
    ]
    shown_hosts, more = capped(hosts, MAX_LINES)
    lines += ["", "可嵌入位置（水课时段，可叠加任务）：" + ("" if hosts else "无")]
    lines += shown_hosts
    if more:
        lines.append(left_out(more, "处", "可用 day 参数限定某天"))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- list_tasks
class ListTasksArgs(Args):
    category: str | None = Field(
        default=None, max_length=64, description="按类别过滤（TaskClass.Name，如“课程”“学习”）"
    )
    status: Literal["existing", "suggested", "pending", "all"] = Field(
        default="all", description="existing=已安排 / suggested=已预排 / pending=待安排 / all=全部"
    )


def _placed_line(state: ScheduleState, task: Task) -> str:
    tags = ",".join([task.category or "未分类", *task_tags(state, task)])
    blocks = " ".join(f"第{b.day}天({periods(b.slot_start, b.slot_end)}节)" for b in task.slots)
    return f"{task.label}({tags}) — {blocks}"


def list_tasks(ctx: ToolContext, args: ListTasksArgs) -> str:
    state = _state(ctx)
    tasks = [t for t in state.tasks if args.category is None or t.category == args.category]
    prefix = f"类别「{args.category}」" if args.category is not None else ""
    groups = {s: [t for t in tasks if t.status == s] for s in ("existing", "suggested", "pending")}
    if args.status != "all":
        chosen = groups[args.status]
        if not chosen:
            return f"{prefix}没有{STATUS_WORDS[args.status]}任务。"
        lines = [f"{prefix}{STATUS_WORDS[args.status]}任务共{len(chosen)}个：", ""]
        shown, more = capped(chosen, MAX_LINES)
        if args.status == "pending":
            lines += [
                f"{t.label} — 需{t.need()}个连续时段，类别：{t.category or '未分类'}" for t in shown
            ]
        else:
            lines += [_placed_line(state, t) for t in shown]
        if more:
            lines.append(left_out(more, "个", "可用 category 参数按类别查看"))
        return "\n".join(lines)
    if not tasks:
        return f"{prefix}没有任务。"
    counts = [f"已安排{len(groups['existing'])}个"]
    if groups["suggested"]:
        counts.append(f"已预排{len(groups['suggested'])}个")
    counts.append(f"待安排{len(groups['pending'])}个")
    lines = [f"{prefix}共{len(tasks)}个任务，{'，'.join(counts)}。"]
    hint = "可用 status、category 参数分组查看"
    for status in ("existing", "suggested"):
        if groups[status]:
            lines += ["", f"{STATUS_WORDS[status]}："]
            shown, more = capped(groups[status], MAX_LINES)
            lines += [f"  {_placed_line(state, t)}" for t in shown]
            lines += [f"  {left_out(more, '个', hint)}"] if more else []
    if groups["pending"]:
        lines += ["", "待安排："]
        shown, more = capped(groups["pending"], MAX_LINES)
        lines += [f"  {t.label}({t.category or '未分类'}) — 需{t.need()}时段" for t in shown]
        lines += [f"  {left_out(more, '个', hint)}"] if more else []
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- get_task_info
class TaskInfoArgs(Args):
    task_id: TaskId


def get_task_info(ctx: ToolContext, args: TaskInfoArgs) -> str:
    state = _state(ctx)
    task = state.task(args.task_id)
    if task is None:
        return refused(f"查询失败：任务 [{args.task_id}] 不存在。")
    status = STATUS_WORDS[task.status] + ("（固定）" if state.is_locked(task) else "")
    lines = [
        task.label,
        f"类别：{task.category or '未分类'} | 状态：{status}",
        f"来源：{source_word(task)}",
    ]
    tc = state.task_class(task.category_id)
    if tc is not None:
        extra = []
        if tc.start_day is not None or tc.end_day is not None:
            extra.append(day_span(tc.start_day or 1, tc.end_day or state.num_days))
        if tc.excluded_slots:
            extra.append("禁排第" + "、".join(str(s) for s in sorted(tc.excluded_slots)) + "节")
        lines.append(
            f"所属任务类：[{tc.id}]{tc.name}" + (f"（{'，'.join(extra)}）" if extra else "")
        )
    if embeddable(state, task):
        lines.append("可嵌入：是（允许在此时段嵌入其他任务）")
    elif task.can_embed:  # a locked water course takes no guest (DESIGN: nothing embeds there)
        lines.append("可嵌入：否（固定，不可嵌入其他任务）")
    if task.status == "pending":
        lines.append(f"需要时段：{task.need()}个连续时段")
        return "\n".join(lines)
    lines.append("占用时段：")
    shown_blocks, more = capped(task.slots, MAX_LINES)
    lines += [f"  第{b.day}天 第{periods(b.slot_start, b.slot_end)}节" for b in shown_blocks]
    lines += [f"  {left_out(more)}"] if more else []
    if task.embed_host is not None:
        host = state.task(task.embed_host)
        lines.append(f"嵌入宿主：{host.label if host else task.embed_host}")
    if embeddable(state, task):
        guests = [state.task(g) for g in state.guests_by_host().get(task.state_id, [])]
        hosted = "、".join(
            f"{g.label}（第{g.slots[0].day}天第{periods(g.slots[0].slot_start, g.slots[0].slot_end)}节）"
            for g in guests
            if g is not None
        )
        lines.append("当前嵌入任务：" + (hosted or "无"))
    return "\n".join(lines)


READ_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "get_overview",
        "read",
        NoArgs,
        get_overview,
        "获取规划窗口总览：总时段、已占用/空闲数、每天的占用与任务、可嵌入时段、待安排任务。"
        "用于建立全局感知，无参数。",
    ),
    ToolSpec(
        "query_range",
        "read",
        QueryRangeArgs,
        query_range,
        "查看某天（或某天某段节次）的细粒度占用：每段由谁占用（括号内为类别、是否固定/可嵌入、"
        "来源 课程表/任务类）、连续空闲区。",
    ),
    ToolSpec(
        "find_free",
        "read",
        FindFreeArgs,
        find_free,
        "查找至少有 duration 个连续空闲时段的位置（可限定某天），并列出可嵌入的水课时段。",
    ),
    ToolSpec(
        "list_tasks",
        "read",
        ListTasksArgs,
        list_tasks,
        "列出任务清单，可按类别和状态（existing/suggested/pending/all）过滤；显示每个任务的类别、"
        "来源（课程表/任务类）、时段或所需时长。",
    ),
    ToolSpec(
        "get_task_info",
        "read",
        TaskInfoArgs,
        get_task_info,
        "查询单个任务的详细信息：类别、状态、是否固定、来源、占用时段、嵌入关系。",
    ),
)
