"""The spec's write tools (§5): place, move, swap, batch_move, unplace.

Each runs one all-or-nothing state operation and renders its result (success or refusal) in the
spec's layouts. A refusal leaves the state untouched; a success appends to the change log.
"""

from __future__ import annotations

from pydantic import Field

from ...state import (
    MAX_BATCH,
    OpResult,
    Refusal,
    Request,
    ScheduleState,
    batch_move,
    move,
    place,
    swap,
    unplace,
)
from ...state.calendar import weekday_word
from ..core.args import Args, Day, Slot, TaskId
from ..core.render import (
    applied_lines,
    block_text,
    day_span,
    fixed_word,
    free_periods_text,
    occupancy_line,
    pending_left_line,
    periods,
)
from ..core.spec import Refused, ToolContext, ToolSpec, refused

# What each tool calls itself in a refusal, and the verb a locked task refuses.
_VERBS = {
    "place": ("放置失败", "放置"),
    "move": ("移动失败", "移动"),
    "swap": ("交换失败", "交换"),
    "unplace": ("移除失败", "移除"),
    "batch_move": ("批量移动失败", "移动"),
}


def _label(state: ScheduleState, task_id: int | None) -> str:
    task = state.task(task_id) if task_id is not None else None
    return task.label if task is not None else f"[{task_id}]"


def _blockers_inline(state: ScheduleState, refusal: Refusal) -> str:
    """``第1-2节已被 [4]体育 占用，第3节已被 [9]小组讨论 占用`` (the overlapping periods)."""
    return "，".join(
        f"第{periods(b.slot_start, b.slot_end)}节已被 {_label(state, b.task_id)}"
        f"{'（其新位置）' if b.moving else ''} 占用"
        for b in refusal.blockers
    )


def _blockers_with_blocks(state: ScheduleState, refusal: Refusal) -> str:
    """``[3]复习线代(1-3节)``: each blocker with its own periods on that day (batch layout)."""
    parts = []
    for b in refusal.blockers:
        task = state.task(b.task_id)
        own = "(其新位置)" if b.moving else ""
        if task is not None and not b.moving:
            own = "".join(
                f"({periods(x.slot_start, x.slot_end)}节)"
                for x in task.slots
                if x.day == refusal.day
                and x.slot_start <= b.slot_end
                and b.slot_start <= x.slot_end
            )
        parts.append(f"{_label(state, b.task_id)}{own}")
    return "、".join(parts)


def _day_context(state: ScheduleState, day: int) -> str:
    """``\n第9天当前占用：...，占用2/12。空闲时段：第3-12节。``"""
    return f"\n{occupancy_line(state, day)}{free_periods_text(state, day)}"


RULE_KINDS = frozenset(
    {"class_window", "banned_weekday", "banned_period", "no_filler", "order_after", "order_before"}
)


def class_span_text(state: ScheduleState, class_id: int | None) -> str:
    """``第7-29天`` (and ``，2026-09-13 至 2026-10-05`` when the class has dates the calendar
    honours): the days the class may use, in the student's words."""
    rule = state.class_rules.of(class_id)
    if rule is None:
        return day_span(1, state.num_days)
    if rule.last_day < rule.first_day:
        days = "窗口内没有可用的天"
    else:
        days = day_span(rule.first_day, rule.last_day)
    if rule.start_date or rule.end_date:
        dates = f"{rule.start_date or '不限'} 至 {rule.end_date or '不限'}"
        return f"{days}，{dates}"
    return days


def _place_of(state: ScheduleState, refusal: Refusal) -> str:
    """Where the other item of an order refusal stands (after the call when it moves too)."""
    other = state.task(refusal.other_id) if refusal.other_id is not None else None
    moving = bool(refusal.blockers and refusal.blockers[0].moving)
    blocks = refusal.blocks if moving else tuple(other.slots) if other is not None else ()
    text = "、".join(block_text(b) for b in blocks)
    return f"其新位置：{text}" if moving else text


def class_rule_text(state: ScheduleState, refusal: Refusal) -> str:
    """The class rule a place breaks, in the student's words: the class's days, the weekday,
    the banned periods, the water course, or the item it must follow / precede."""
    kind = refusal.kind
    target = f"第{refusal.day}天第{periods(refusal.slot_start or 0, refusal.slot_end or 0)}节"
    label = _label(state, refusal.task_id)
    if kind in ("order_after", "order_before"):
        task = state.task(refusal.task_id) if refusal.task_id is not None else None
        tc = state.task_class(task.task_class_id) if task is not None else None
        name = tc.name if tc is not None else (task.category if task is not None else "")
        other = _label(state, refusal.other_id)
        if kind == "order_after":
            need = f"必须在 {other}（{_place_of(state, refusal)}）结束之后开始"
            why = f"{other} 排在它前面"
        else:
            need = f"必须在 {other}（{_place_of(state, refusal)}）开始之前结束"
            why = f"{other} 排在它后面"
        return f"{label} 不能放到{target}：它{need}（任务类「{name}」的任务按顺序安排，{why}）。"
    tc = state.task_class(refusal.other_id)
    name = tc.name if tc is not None else str(refusal.other_id)
    if kind == "class_window":
        return f"第{refusal.day}天不在任务类「{name}」的时间窗（{class_span_text(state, refusal.other_id)}）内。"
    if kind == "banned_weekday":
        rule = state.class_rules.of(refusal.other_id)
        banned = "、".join(weekday_word(d) for d in (rule.banned_weekdays if rule else ()))
        weekday = state.calendar.weekday(refusal.day or 0)
        today = weekday_word(weekday) if weekday is not None else "被排除的星期"
        return f"第{refusal.day}天是{today}，任务类「{name}」不安排在{banned}。"
    if kind == "no_filler":
        host = _label(state, refusal.blockers[0].task_id if refusal.blockers else None)
        return f"{target}位于水课 {host} 中，但任务类「{name}」不允许嵌入水课。"
    banned = "、".join(str(b.slot_start) for b in refusal.blockers)
    return f"{target}含任务类「{name}」的禁排时段（第{banned}节）。"


def refusal_text(state: ScheduleState, op: str, refusal: Refusal) -> Refused:
    """The spec's failure reply for ``refusal`` of tool ``op`` (state unchanged)."""
    head, verb = _VERBS[op]
    label = _label(state, refusal.task_id)
    task = state.task(refusal.task_id) if refusal.task_id is not None else None
    kind = refusal.kind
    day_context = ""
    if kind == "conflict" and op != "batch_move":
        assert refusal.day is not None
        reason = f"第{refusal.day}天{_blockers_inline(state, refusal)}。"
        day_context = _day_context(state, refusal.day)
    elif kind == "conflict":
        target = f"第{refusal.day}天第{periods(refusal.slot_start or 0, refusal.slot_end or 0)}节"
        return refused(
            f"{head}，全部回滚，无任何变更。\n冲突：{label} → {target}，该位置已被 "
            f"{_blockers_with_blocks(state, refusal)} 占用。"
        )
    elif kind == "not_found":
        reason = f"任务 [{refusal.task_id}] 不存在。"
    elif kind == "not_pending":
        reason = f"{label} 不是待安排任务，无法放置。"
    elif kind == "pending":
        reason = (
            f"{label} 当前为待安排状态，无需移除。"
            if op == "unplace"
            else f"{label} 当前为待安排状态，请使用 place 放置。"
        )
    elif kind == "locked":
        if task is not None and not task.locked and refusal.other_id is not None:
            host = state.task(refusal.other_id)
            host_word = fixed_word(host) if host is not None else "固定任务"
            reason = (
                f"{label} 嵌入在{host_word} {_label(state, refusal.other_id)} 中，不可单独{verb}。"
            )
        else:
            word = fixed_word(task) if task is not None else "固定任务"
            reason = f"{label} 是{word}，不可{verb}。"
    elif kind == "multi_block":
        blocks = "、".join(block_text(b) for b in refusal.blocks)
        tail = {
            "swap": "只能交换单块任务。",
            "unplace": "无法整体移除。",
        }.get(op, "请用 from_day 指定要移动的块。")
        reason = f"{label} 有{len(refusal.blocks)}个时段块（{blocks}），{tail}"
    elif kind == "no_block_on_day":
        blocks = "、".join(block_text(b) for b in refusal.blocks)
        reason = f"{label} 在第{refusal.day}天没有时段块（它的时段块：{blocks}），from_day 有误。"
    elif kind == "no_change":
        target = f"第{refusal.day}天第{periods(refusal.slot_start or 0, refusal.slot_end or 0)}节"
        reason = f"{label} 已在{target}，无需移动。"
    elif kind == "has_guest":
        reason = f"{label} 当前嵌入了 {_label(state, refusal.other_id)}，请先移走嵌入任务。"
    elif kind == "out_of_window":
        spd, days = state.slots_per_day, state.num_days
        if refusal.day is None or not 1 <= refusal.day <= days:
            reason = f"第{refusal.day}天超出规划窗口（第1-{days}天）。"
        else:
            length = (refusal.slot_end or 0) - (refusal.slot_start or 0) + 1
            reason = (
                f"{label} 需{length}个时段，从第{refusal.slot_start}节开始到第"
                f"{refusal.slot_end}节，超出每天{spd}节。"
            )
    elif kind == "embed_taken":
        host_label = _label(state, refusal.blockers[0].task_id if refusal.blockers else None)
        target = f"第{refusal.day}天第{periods(refusal.slot_start or 0, refusal.slot_end or 0)}节"
        reason = (
            f"{target}位于 {host_label} 的可嵌入时段，但已嵌入 {_label(state, refusal.other_id)}。"
        )
        if op != "batch_move" and refusal.day is not None:
            day_context = _day_context(state, refusal.day)
    elif kind == "multi_block_guest":
        host_label = _label(state, refusal.blockers[0].task_id if refusal.blockers else None)
        target = f"第{refusal.day}天第{periods(refusal.slot_start or 0, refusal.slot_end or 0)}节"
        blocks = "、".join(block_text(b) for b in refusal.blocks)
        reason = (
            f"{target}位于 {host_label} 的可嵌入时段，但 {label} 有{len(refusal.blocks)}个时段块"
            f"（{blocks}），只有单块任务可以嵌入。"
        )
        if op != "batch_move" and refusal.day is not None:
            day_context = _day_context(state, refusal.day)
    elif kind in RULE_KINDS:
        reason = class_rule_text(state, refusal)
    elif kind == "existing_fixed":
        reason = f"{label} 是已安排任务，本次请求保持已安排任务不动，只能{verb}已预排和待安排任务。"
    elif kind == "duration_mismatch":
        a, b = state.task(refusal.task_id or 0), state.task(refusal.other_id or 0)
        la = a.slots[0].length if a and a.slots else 0
        lb = b.slots[0].length if b and b.slots else 0
        reason = (
            f"{label} 占{la}个时段，{_label(state, refusal.other_id)} 占{lb}个时段，"
            f"时长不同无法直接交换。"
        )
    elif kind == "same_task":
        reason = f"{label} 不能与自身交换。"
    elif kind == "duplicate_task":
        reason = f"{label} 在本次批量中出现多次。"
    elif kind == "empty_batch":
        reason = "moves 为空。"
    elif kind == "batch_too_large":
        reason = f"一次最多移动{refusal.limit}个任务。"
    else:  # pragma: no cover - every kind is handled above
        reason = kind
    if op == "batch_move":
        return refused(f"{head}，全部回滚，无任何变更。\n原因：{reason}")
    return refused(f"{head}：{reason}{day_context}")


def _apply(ctx: ToolContext, op: str, result: OpResult) -> OpResult:
    if result.ok:
        ctx.record(result.changes)
    return result


def _days_lines(state: ScheduleState, days: list[int]) -> list[str]:
    seen: list[int] = []
    for d in days:
        if d not in seen:
            seen.append(d)
    return [occupancy_line(state, d) for d in sorted(seen)]


def _embed_note(state: ScheduleState, host_id: int | None) -> str:
    return f"（嵌入宿主：{_label(state, host_id)}）" if host_id is not None else ""


# ---------------------------------------------------------------------------------- place
class PlaceArgs(Args):
    task_id: TaskId
    day: Day
    slot_start: Slot


def place_tool(ctx: ToolContext, args: PlaceArgs) -> str:
    state = ctx.state
    assert state is not None
    result = _apply(ctx, "place", place(state, args.task_id, args.day, args.slot_start))
    if result.refusal is not None:
        return refusal_text(state, "place", result.refusal)
    ch = result.changes[0]
    assert ch.block_after is not None
    label = _label(state, ch.task_id)
    if ch.embed_host_after is not None:
        head = (
            f"已将 {label} 嵌入到{block_text(ch.block_after)}"
            f"（宿主：{_label(state, ch.embed_host_after)}）。"
        )
    else:
        head = f"已将 {label} 放到{block_text(ch.block_after)}。"
    return "\n".join([head, occupancy_line(state, ch.block_after.day), pending_left_line(state)])


# ---------------------------------------------------------------------------------- move
class MoveArgs(Args):
    task_id: TaskId
    new_day: Day
    new_slot_start: Slot
    from_day: Day | None = Field(default=None, description="任务有多个块时：要移动的块所在天")


def move_tool(ctx: ToolContext, args: MoveArgs) -> str:
    state = ctx.state
    assert state is not None
    result = _apply(
        ctx,
        "move",
        move(
            state,
            args.task_id,
            args.new_day,
            args.new_slot_start,
            args.from_day,
            existing_fixed=ctx.existing_fixed,
        ),
    )
    if result.refusal is not None:
        return refusal_text(state, "move", result.refusal)
    ch = result.changes[0]
    assert ch.block_before is not None and ch.block_after is not None
    head = (
        f"已将 {_label(state, ch.task_id)} 从{block_text(ch.block_before)}移至"
        f"{block_text(ch.block_after)}{_embed_note(state, ch.embed_host_after)}。"
    )
    return "\n".join([head, *_days_lines(state, [ch.block_before.day, ch.block_after.day])])


# ---------------------------------------------------------------------------------- swap
class SwapArgs(Args):
    task_a: TaskId
    task_b: TaskId


def swap_tool(ctx: ToolContext, args: SwapArgs) -> str:
    state = ctx.state
    assert state is not None
    result = _apply(
        ctx, "swap", swap(state, args.task_a, args.task_b, existing_fixed=ctx.existing_fixed)
    )
    if result.refusal is not None:
        return refusal_text(state, "swap", result.refusal)
    lines, days = applied_lines(state, result.changes, from_to=True, embed_word="嵌入宿主：")
    return "\n".join(["交换完成：", *lines, *_days_lines(state, days)])


# ---------------------------------------------------------------------------------- batch_move
class MoveItem(Args):
    task_id: TaskId
    new_day: Day
    new_slot_start: Slot
    from_day: Day | None = Field(default=None, description="多时段块任务要移动的块所在天")


class BatchMoveArgs(Args):
    moves: list[MoveItem] = Field(
        min_length=1, max_length=MAX_BATCH, description=f"要同时移动的任务，1-{MAX_BATCH}项"
    )


def batch_move_tool(ctx: ToolContext, args: BatchMoveArgs) -> str:
    state = ctx.state
    assert state is not None
    requests = [Request(m.task_id, m.new_day, m.new_slot_start, m.from_day) for m in args.moves]
    result = _apply(
        ctx, "batch_move", batch_move(state, requests, existing_fixed=ctx.existing_fixed)
    )
    if result.refusal is not None:
        return refusal_text(state, "batch_move", result.refusal)
    lines, _ = applied_lines(state, result.changes, from_to=False)
    days = [ch.block_after.day for ch in result.changes if ch.block_after is not None]
    head = f"批量移动完成，{len(result.changes)}个任务全部成功："
    return "\n".join([head, *lines, *_days_lines(state, days)])


# ---------------------------------------------------------------------------------- unplace
class UnplaceArgs(Args):
    task_id: TaskId


def unplace_tool(ctx: ToolContext, args: UnplaceArgs) -> str:
    state = ctx.state
    assert state is not None
    result = _apply(ctx, "unplace", unplace(state, args.task_id, existing_fixed=ctx.existing_fixed))
    if result.refusal is not None:
        return refusal_text(state, "unplace", result.refusal)
    ch = result.changes[0]
    assert ch.block_before is not None
    return "\n".join(
        [
            f"已将 {_label(state, ch.task_id)} 从{block_text(ch.block_before)}移除，恢复为待安排状态。",
            occupancy_line(state, ch.block_before.day),
            pending_left_line(state),
        ]
    )


WRITE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "place",
        "write",
        PlaceArgs,
        place_tool,
        "把待安排任务放到第 day 天从 slot_start 节起的连续时段，成功后变为已预排；"
        "全落在空闲水课内时自动嵌入。冲突时不做修改。",
    ),
    ToolSpec(
        "move",
        "write",
        MoveArgs,
        move_tool,
        "把已落位任务移到第 new_day 天从 new_slot_start 节起；固定任务不可移动，"
        "多块任务用 from_day 指定块。冲突时不做修改。",
    ),
    ToolSpec(
        "swap",
        "write",
        SwapArgs,
        swap_tool,
        "交换两个已落位的单块任务的位置，两者时长必须相同，均不可为固定任务。",
    ),
    ToolSpec(
        "batch_move",
        "write",
        BatchMoveArgs,
        batch_move_tool,
        "同时移动多个已落位任务（全部成功或全部回滚）。所有任务先离开原位再检查新位置，可互换位置。",
    ),
    ToolSpec(
        "unplace",
        "write",
        UnplaceArgs,
        unplace_tool,
        "把一个已落位的单块任务移出日程，恢复为待安排状态（时长=原时段长度）。固定任务不可移除。",
    ),
)
