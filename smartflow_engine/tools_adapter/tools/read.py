"""The spec's read tools (§4): get_overview, query_range, find_free, list_tasks, get_task_info.

Read tools report facts only, in the spec's layouts; they never change the state.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from ...state import (
    ScheduleState,
    SlotRange,
    Task,
    host_blocks,
    order_key,
    runs,
    weekday_word,
)
from ..core.args import Args, Day, Duration, NoArgs, Slot, TaskId
from ..core.render import (
    MAX_INLINE,
    MAX_LINES,
    STATUS_WORDS,
    block_text,
    capped,
    day_label,
    embeddable,
    left_out,
    periods,
    source_word,
    task_tags,
)
from ..core.spec import ToolContext, ToolSpec, refused
from .write import class_span_text


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
        head = f"{day_label(day)}：占{int(loads[day - 1])}/{spd}"
        items = sorted(per_day.get(day, []))
        lines.append(head + (" — " + " ".join(t for _, _, t in items) if items else ""))
    hosts = []
    for host, b, guest in host_blocks(state):
        day, s, e = b.day, b.slot_start, b.slot_end
        taken = f",已嵌入{guest.label}" if guest is not None else ""
        hosts.append(f"{day_label(day)} {host.label}({periods(s, e)}节{taken})")
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
    lines += notice_lines(state)
    return "\n".join(lines)


_NOTICE_TEXT = {
    "dates_unknown": "任务类「{name}」的起止日期无法核对：窗口没有日期（需要窗口的 semester_start "
    "或每天的 date），这两个日期暂不生效。",
    "no_day": "任务类「{name}」在规划窗口内没有可用的天，它的任务无法放置。",
    "no_period": "任务类「{name}」的所有节次都被禁排，它的任务无法放置。",
}


def notice_lines(state: ScheduleState) -> list[str]:
    """``注意：…`` lines for the class rules the engine cannot honour or that leave nothing
    (:attr:`ClassRules.notices`); none on a window without such a class (the spec's layout)."""
    return ["注意：" + _NOTICE_TEXT[n.kind].format(name=n.name) for n in state.class_rules.notices]


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
    lines = [f"{day_label(args.day)} 第{periods(start, end)}节：", ""]
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
    lines = [f"{day_label(day)} 全天：", ""]
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
    duration: Duration | None = Field(
        default=None, description="需要的连续时段数；给了 task_id 时可不填（取该任务的时长）"
    )
    day: Day | None = Field(default=None, description="限定某天；不传则搜索全部天")
    task_id: TaskId | None = Field(
        default=None,
        description="只列该任务可合法放的位置（遵守其任务类的全部规则）",
    )


def _task_mask(state: ScheduleState, task: Task) -> np.ndarray:
    """``(days, periods)``: free periods ``task`` may cover (its class's grid and the order
    of its class's items, by the other items' current places)."""
    rules = state.class_rules
    mask: np.ndarray = (state.grid.owner == 0) & rules.allowed(task)
    after, before = rules.order_window(task)
    if after is not None:
        (day, period), _ = after
        mask[: day - 1] = False
        mask[day - 1, :period] = False
    if before is not None:
        (day, period), _ = before
        mask[day:] = False
        mask[day - 1, period - 1 :] = False
    return mask


def _task_runs(
    state: ScheduleState, task: Task, need: int, day: int | None
) -> list[tuple[int, int, int]]:
    """Maximal runs ``(day, start, end)`` of at least ``need`` free periods ``task`` may use."""
    mask = _task_mask(state, task)
    if day is not None:
        mask = mask[day - 1 : day]
    rows, starts, lengths = runs(mask)
    offset = 1 if day is None else day
    return [
        (int(r) + offset, int(a) + 1, int(a + n))
        for r, a, n in zip(rows, starts, lengths, strict=True)
        if n >= need
    ]


def _may_host(state: ScheduleState, task: Task | None, block: SlotRange, need: int) -> bool:
    """Whether ``task`` (any task when ``None``) could be embedded somewhere in ``block``."""
    if task is None:
        return True
    rules = state.class_rules
    if task.can_embed or not rules.may_embed(task) or block.length < need:
        return False
    allowed = rules.allowed_starts(task, need)[block.day - 1]
    after, before = rules.order_window(task)
    for start in range(block.slot_start, block.slot_end - need + 2):
        if not allowed[start - 1]:
            continue
        if after is not None and not (block.day, start) > after[0]:
            continue
        if before is not None and not (block.day, start + need - 1) < before[0]:
            continue
        return True
    return False


def find_free(ctx: ToolContext, args: FindFreeArgs) -> str:
    state = _state(ctx)
    spd = state.slots_per_day
    if args.day is not None and (msg := day_out_of_window(state, args.day)):
        return refused(f"查询失败：{msg}")
    task = state.task(args.task_id) if args.task_id is not None else None
    if args.task_id is not None and task is None:
        return refused(f"查询失败：任务 [{args.task_id}] 不存在。")
    need = args.duration if args.duration is not None else (task.need() if task else None)
    if need is None:
        return refused("查询失败：请给出 duration（需要的连续时段数）或 task_id。")
    if need > spd:
        return refused(f"查询失败：每天只有{spd}个时段，无法满足{need}个连续时段。")
    if task is None:
        found = state.grid.free_runs(min_len=need, day=args.day)
    else:
        found = _task_runs(state, task, need, args.day)
    where = day_label(args.day) if args.day is not None else ""
    who = f"{task.label} 可用的" if task is not None else ""
    if found:
        lines = [f"{where}{who}满足{need}个连续空闲时段的位置：", ""]
        shown, more = capped(found, MAX_LINES)
        lines += [
            f"{day_label(d)} 第{periods(s, e)}节（{e - s + 1}时段连续空闲）" for d, s, e in shown
        ]
        if more:
            lines.append(left_out(more, "处", "可用 day 参数限定某天"))
    else:
        lines = [f"{where}没有{who}满足{need}个连续空闲时段的位置。"]
    if task is not None and (rule := state.class_rules.for_task(task)) is not None:
        lines.append(f"（已按任务类「{rule.name}」的规则筛选）")
    # Every free water-course block, also those shorter than `duration`, as the spec's
    # duration-3 example lists the 2-period [10]思政 block (for a task: those it may enter).
    hosts = [
        f"{day_label(b.day)} 第{periods(b.slot_start, b.slot_end)}节（{host.label}，当前无嵌入任务）"
        for host, b, guest in host_blocks(state, args.day)
        if guest is None and (task is None or _may_host(state, task, b, need))
    ]
    shown_hosts, more = capped(hosts, MAX_LINES)
    lines += ["", "可嵌入位置（水课时段，可叠加任务）：" + ("" if hosts else "无")]
    lines += shown_hosts
    if more:
        lines.append(left_out(more, "处", "可用 day 参数限定某天"))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- list_tasks
class ListTasksArgs(Args):
    category: str | None = Field(default=None, max_length=64, description="类别名")
    status: Literal["existing", "suggested", "pending", "all"] = Field(
        default="all", description="existing=已安排 / suggested=已预排 / pending=待安排 / all=全部"
    )


def _placed_line(state: ScheduleState, task: Task) -> str:
    tags = ",".join([task.category or "未分类", *task_tags(state, task)])
    blocks = " ".join(
        f"{day_label(b.day)}({periods(b.slot_start, b.slot_end)}节)" for b in task.slots
    )
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


def _class_line(state: ScheduleState, task: Task) -> str | None:
    """``所属任务类：[10]复习（第1-14天，不排星期六、星期日，禁排第11、12节，不嵌入水课）``:
    the class's rules in the student's words (only those it sets)."""
    rule = state.class_rules.for_task(task)
    if rule is None:
        return None
    tc = state.task_class(rule.class_id)
    assert tc is not None
    extra = []
    bounded = any(v is not None for v in (tc.start_day, tc.end_day, rule.start_date, rule.end_date))
    if bounded or rule.last_day < rule.first_day:
        extra.append(class_span_text(state, rule.class_id))
    if rule.banned_weekdays:
        extra.append("不排" + "、".join(weekday_word(d) for d in rule.banned_weekdays))
    if rule.banned_periods:
        extra.append("禁排第" + "、".join(str(p) for p in rule.banned_periods) + "节")
    if not rule.allow_filler:
        extra.append("不嵌入水课")
    if any(
        n.kind == "dates_unknown" and n.class_id == rule.class_id for n in state.class_rules.notices
    ):
        extra.append("起止日期无法核对：窗口没有日期")
    return f"所属任务类：[{rule.class_id}]{rule.name}" + (
        f"（{'，'.join(extra)}）" if extra else ""
    )


def _order_line(state: ScheduleState, task: Task) -> str | None:
    """``顺序：第3项，须在 [6]第2章 之后、[8]第4章 之前`` (the nearest placed items of its class
    it must follow and precede; only for an item with an order)."""
    if order_key(task) is None:
        return None
    after, before = state.class_rules.order_window(task)
    parts = [f"顺序：任务类第{task.task_order}项"]
    if after is not None:
        parts.append(f"须在 {_task_label(state, after[1])} 之后")
    if before is not None:
        parts.append(f"须在 {_task_label(state, before[1])} 之前")
    return "，".join(parts)


def _task_label(state: ScheduleState, task_id: int) -> str:
    other = state.task(task_id)
    return other.label if other is not None else f"[{task_id}]"


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
    if (class_line := _class_line(state, task)) is not None:
        lines.append(class_line)
    if (order_line := _order_line(state, task)) is not None:
        lines.append(order_line)
    if embeddable(state, task):
        lines.append("可嵌入：是（允许在此时段嵌入其他任务）")
    elif task.can_embed:  # a locked water course takes no guest (DESIGN: nothing embeds there)
        lines.append("可嵌入：否（固定，不可嵌入其他任务）")
    if task.status == "pending":
        lines.append(f"需要时段：{task.need()}个连续时段")
        return "\n".join(lines)
    lines.append("占用时段：")
    shown_blocks, more = capped(task.slots, MAX_LINES)
    lines += [f"  {day_label(b.day)} 第{periods(b.slot_start, b.slot_end)}节" for b in shown_blocks]
    lines += [f"  {left_out(more)}"] if more else []
    if task.embed_host is not None:
        host = state.task(task.embed_host)
        lines.append(f"嵌入宿主：{host.label if host else task.embed_host}")
    if embeddable(state, task):
        guests = [state.task(g) for g in state.guests_by_host().get(task.state_id, [])]
        hosted = "、".join(
            f"{g.label}（{block_text(g.slots[0])}）" for g in guests if g is not None
        )
        lines.append("当前嵌入任务：" + (hosted or "无"))
    return "\n".join(lines)


READ_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "get_overview",
        "read",
        NoArgs,
        get_overview,
        "规划窗口总览：总时段、占用/空闲数、每天的占用与任务、可嵌入时段、待安排任务。无参数。",
    ),
    ToolSpec(
        "query_range",
        "read",
        QueryRangeArgs,
        query_range,
        "查看某天（或某段节次）的占用：每段由谁占用（类别、是否固定/可嵌入）、连续空闲区。",
    ),
    ToolSpec(
        "find_free",
        "read",
        FindFreeArgs,
        find_free,
        "查找至少有 duration 个连续空闲时段的位置（可限定某天）与可嵌入的水课时段；"
        "给 task_id 时只列该任务的合法位置。",
    ),
    ToolSpec(
        "list_tasks",
        "read",
        ListTasksArgs,
        list_tasks,
        "列出任务，可按类别和状态过滤；每个任务给出类别、是否固定/可嵌入、时段或时长。",
    ),
    ToolSpec(
        "get_task_info",
        "read",
        TaskInfoArgs,
        get_task_info,
        "查询单个任务的详细信息：类别、状态、是否固定、来源、占用时段、嵌入关系。",
    ),
)
