"""The loop tools: query_target_tasks and query_available_slots (the local_adjust chain, p1 §5.3),
get_round_log (§5.5), restore_best (P1-E) and resolve_negotiation (P1-F).

The two query tools and the log answer in the p1 JSON envelope; restore_best and
resolve_negotiation are writes with Chinese text replies. The loop state they read lives in the
session (:class:`~.loop.LoopState`); on a bare :class:`Toolbox` the two queries work without
``action_id`` and the other three say they need a session.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, model_validator
from pydantic.json_schema import SkipJsonSchema

from ...analyzers.destinations import (
    movable,
    preferred_days,
    rank_destinations,
    search_targets,
)
from ...analyzers.result import NextAction
from ...calendar_filters import PlaceFilter, TaskFilter, calendar_of, free_places
from ...rules import Level
from ...state import Change, ScheduleState, SlotRange, StateError, Task, rule_refusal
from ...state.calendar import Calendar, parse_date
from ...state.model import MAX_TASK_ID
from ..core.args import Args, Day, Duration, Slot, TaskId
from ..core.calendar_args import (
    DAY_FIELDS,
    SECTION_FIELDS,
    TASK_FIELDS,
    PlaceArgs,
    TaskArgs,
    day_info,
    given,
    place_filter,
    task_filter,
)
from ..core.render import block_text, gap_words
from ..core.spec import ToolContext, ToolSpec, json_error, refused
from ..sessions.loop_state import CHOICES, ROUND_LOG_KEEP, LoopState
from .write import class_rule_text

Name = Annotated[str, Field(min_length=1, max_length=64)]
ActionId = Annotated[
    str, Field(min_length=1, max_length=128, description="最近一次 analyze_health 的 action_id")
]
MAX_EXTRA_DAYS = 60
MAX_LISTED = 50


def _envelope(tool: str, metrics: dict[str, Any]) -> str:
    return json.dumps(
        {
            "tool": tool,
            "success": True,
            "metric_schema": {},
            "metrics": metrics,
            "issues": [],
            "next_actions": [],
            "error": "",
            "error_code": "",
        },
        ensure_ascii=False,
    )


def _action(ctx: ToolContext, action_id: str | None) -> NextAction | str | None:
    """The session's action ``action_id`` as data, or the refusal text."""
    if action_id is None:
        return None
    loop: LoopState | None = ctx.loop
    if loop is None:
        return f"action_id 只在会话中可用（会话记录最近一次 analyze_health 的动作），收到 {action_id}。"
    act = loop.last_actions.get(action_id)
    if act is None:
        offered = "、".join(loop.last_actions) or "无（请先调用 analyze_health）"
        return f"action_id {action_id} 不是最近一次 analyze_health 给出的动作（可用：{offered}）。"
    return NextAction(
        action_id=action_id,
        intent_code=str(act.get("intent_code", "")),
        candidate_scope=dict(act.get("candidate_scope") or {}),
        target_filter=dict(act.get("target_filter") or {}),
        slot_filter=dict(act.get("slot_filter") or {}),
        required_reads=[],
        success_criteria=dict(act.get("success_criteria") or {}),
        candidate_write_tools=list(act.get("candidate_write_tools") or []),
        issue_ids=list(act.get("issue_ids") or []),
    )


def left_places(ctx: ToolContext, task_id: int) -> set[tuple[int, int]]:
    """Where ``task_id`` stood before this session's writes moved it (day, first period): a
    destination there would undo an earlier write (an A→B→A oscillation)."""
    if ctx.loop is None:
        return set()
    return {
        (c.block_before.day, c.block_before.slot_start)
        for c in ctx.changes
        if c.task_id == task_id and c.block_before is not None
    }


def ranked(
    ctx: ToolContext, task_id: int, dests: list[Any], cal: Calendar | None = None
) -> list[dict[str, Any]]:
    """Destinations best first: those that help the action (``helps``: clean and strictly
    better) before the rest, those returning the task to a place it left last; each with its
    day's week and weekday when the window has a calendar."""
    left = left_places(ctx, task_id)
    rows = []
    for d in sorted(dests, key=lambda d: ((d.day, d.slot_start) in left, not d.helps, d.score())):
        row = {**d.to_dict(), **day_info(cal, d.day)}
        if (d.day, d.slot_start) in left:
            row["returns_to_earlier_place"] = True
        rows.append(row)
    return rows


def _level(ctx: ToolContext) -> Level:
    return ctx.loop.level if ctx.loop is not None else "normal"


def class_window(state: ScheduleState, task: Task) -> dict[str, Any] | None:
    """The class rules of ``task`` as the JSON tools show them (from the state's one reading:
    the day window, the banned weekdays and periods, the water-course permission)."""
    rule = state.class_rules.for_task(task)
    if rule is None:
        return None
    return {
        "class_id": rule.class_id,
        "name": rule.name,
        "start_day": rule.first_day,
        "end_day": rule.last_day,
        "excluded_days_of_week": list(rule.banned_weekdays),
        "banned_periods": list(rule.banned_periods),
        "allow_filler_course": rule.allow_filler,
    }


def task_row(state: ScheduleState, task: Task, cal: Calendar | None = None) -> dict[str, Any]:
    """A task as the query tools list it; each block with its week and weekday when the window
    has a calendar."""
    return {
        "task_id": task.state_id,
        "name": task.name,
        "category": task.category,
        "kind": "course" if task.source == "event" else "study",
        "status": task.status,
        "locked": state.is_locked(task),
        "duration": task.need(),
        "blocks": [{**b.model_dump(), **day_info(cal, b.day)} for b in task.slots],
        "embed_host": task.embed_host,
        "class_window": class_window(state, task),
    }


# ---------------------------------------------------------------------------------- query_target_tasks
class TargetFilter(Args):
    kind: Literal["study", "course"] | None = Field(
        default=None, description="study=学习任务 / course=课程（课程表中的课）"
    )
    # The old internal form (task_item / event), accepted quietly, never advertised.
    source: SkipJsonSchema[Name | None] = None
    locked: StrictBool | None = Field(default=None, description="是否固定")
    status: list[Literal["existing", "suggested", "pending"]] | None = Field(
        default=None, max_length=3, description="任务状态"
    )
    categories: list[Name] | None = Field(default=None, max_length=20, description="类别名")
    days: list[Day] | None = Field(
        default=None, max_length=60, description="任务需在这些天之一有时段块"
    )


class CandidateScope(Args):
    day_range: list[Day] | None = Field(
        default=None, min_length=2, max_length=2, description="[起始天, 结束天]"
    )
    categories: list[Name] | None = Field(default=None, max_length=20, description="类别名")
    task_pool: Literal["placed", "pending", "mixed"] | None = Field(
        default=None, description="placed=已落位 / pending=待安排 / mixed=两者"
    )


class TargetArgs(TaskArgs):
    target_filter: TargetFilter | None = Field(default=None, description="覆盖/补充动作的筛选条件")
    candidate_scope: CandidateScope | None = Field(
        default=None, description="覆盖/补充动作的候选范围"
    )
    action_id: ActionId | None = Field(
        default=None, description="按此动作找目标任务（最近一次 analyze_health 的 action_id）"
    )
    limit: int = Field(default=10, strict=True, ge=1, le=MAX_LISTED, description="最多返回任务数")


# The calendar vocabulary of the task query (issue 43): given alone, the query lists the tasks it
# selects; with an action, it narrows the action's targets to them.
TASK_SELECTION = (*DAY_FIELDS, *SECTION_FIELDS, *TASK_FIELDS)


def _query_start(
    ctx: ToolContext, tool: str, action_id: str | None
) -> tuple[ScheduleState, NextAction | None] | str:
    """The state and the session's action ``action_id`` of a query tool, or its failure reply."""
    state = ctx.state
    assert state is not None
    act = _action(ctx, action_id)
    if isinstance(act, str):
        return json_error(tool, "invalid_args", act)
    return state, act


def _day_runs(days: list[int]) -> list[list[int]]:
    """``[[34, 38], [41, 42]]``: the selected days as runs (a reply names what it understood
    without listing a thousand days)."""
    out: list[list[int]] = []
    for d in days:
        if out and out[-1][1] == d - 1:
            out[-1][1] = d
        else:
            out.append([d, d])
    return out


def _selected(where: PlaceFilter, state: ScheduleState, cal: Calendar | None) -> dict[str, Any]:
    """``{"selected_days": runs}`` when a day filter was given (``{}`` otherwise)."""
    if not where.days.active:
        return {}
    return {"selected_days": _day_runs(where.days.days(state.num_days, cal))}


def query_target_tasks_tool(ctx: ToolContext, args: TargetArgs) -> str:
    tool = "query_target_tasks"
    start = _query_start(ctx, tool, args.action_id)
    if isinstance(start, str):
        return start
    state, act = start
    cal = calendar_of(state)
    chosen: TaskFilter | None = None
    if given(args, TASK_SELECTION):
        found = task_filter(args, state)
        if isinstance(found, str):
            return json_error(tool, "invalid_args", f"{found}。")
        chosen = found
    by_action = (
        act is not None or args.target_filter is not None or args.candidate_scope is not None
    )
    if chosen is not None and not by_action:
        return _listing(state, cal, chosen, args)
    tf = args.target_filter.model_dump(exclude_none=True) if args.target_filter else {}
    if chosen is not None:
        tf["task_ids"] = {t.state_id for t in chosen.select(state, cal)}
    sc = args.candidate_scope.model_dump(exclude_none=True) if args.candidate_scope else {}
    level = _level(ctx)
    focus = act.issue_ids if act is not None else ()
    # The same search as the fixable check of analyze_health (same tasks, candidates and
    # budgets), measuring every task within the budget instead of stopping at the first.
    search = search_targets(state, act, level, first_only=False, target_filter=tf, scope=sc)
    tasks = search.targets
    measured: list[tuple[Task, dict[str, Any] | None, tuple[Any, ...]]] = []
    for task, ranking in search.measured:
        listed = ranked(ctx, task.state_id, ranking.destinations, cal)
        best = listed[0] if listed else None
        order: tuple[Any, ...] = (2,)
        if best is not None:
            order = (
                int(bool(best.get("returns_to_earlier_place"))),
                not best["helps"],
                best["critical_delta"],
                best["warning_delta"],
                -len(set(best["resolves"]) & set(focus)),
                len(best["creates"]),
            )
        measured.append((task, best, order))
    measured.sort(key=lambda p: p[2])
    rows = []
    for task, best, _ in measured:
        rows.append({**task_row(state, task, cal), "best_destination": best})
    rows += [{**task_row(state, t, cal), "best_destination": None} for t in tasks[len(measured) :]]
    extra = _selected(chosen.where, state, cal) if chosen is not None else {}
    return _envelope(
        tool,
        {"action_id": args.action_id, "count": len(tasks), "tasks": rows[: args.limit], **extra},
    )


def _listing(
    state: ScheduleState, cal: Calendar | None, chosen: TaskFilter, args: TargetArgs
) -> str:
    """query_target_tasks by the calendar vocabulary alone: the tasks it selects, placed ones by
    their first selected block, then pending ones (nothing is measured)."""
    tasks = chosen.select(state, cal)
    return _envelope(
        "query_target_tasks",
        {
            "action_id": None,
            "count": len(tasks),
            "tasks": [task_row(state, t, cal) for t in tasks[: args.limit]],
            **_selected(chosen.where, state, cal),
        },
    )


# ---------------------------------------------------------------------------------- query_available_slots
DEFAULT_SPAN = 2  # periods a place query without a task asks for (the reference system's default)


class SlotsArgs(PlaceArgs):
    task_id: TaskId | None = None
    duration: Duration | None = Field(default=None, description=f"无 task_id 时默认{DEFAULT_SPAN}")
    span: Duration | None = None  # duration's other name (the reference system's)
    action_id: ActionId | None = Field(
        default=None, description="按此动作的 slot_filter 与判据评估落点"
    )
    day_range: list[Day] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="[起始天, 结束天]；不传时按动作的 slot_filter",
    )
    limit: int = Field(default=10, strict=True, ge=1, le=MAX_LISTED, description="最多返回落点数")

    @model_validator(mode="after")
    def _one_length(self) -> SlotsArgs:
        if self.duration is not None and self.span is not None and self.duration != self.span:
            raise ValueError(f"duration={self.duration} 与其别名 span={self.span} 不一致")
        if self.day_range is not None and given(self, ("day", "day_start", "day_end")):
            raise ValueError("day_range 与 day/day_start/day_end 不能同时给出")
        return self


def query_available_slots_tool(ctx: ToolContext, args: SlotsArgs) -> str:
    tool = "query_available_slots"
    start = _query_start(ctx, tool, args.action_id)
    if isinstance(start, str):
        return start
    state, act = start
    where = place_filter(args, state)
    if isinstance(where, str):
        return json_error(tool, "invalid_args", f"{where}。")
    cal = calendar_of(state)
    days = preferred_days(state, act)
    if args.day_range is not None:
        lo, hi = sorted(args.day_range)
        if hi > state.num_days:
            return json_error(
                tool, "out_of_range", f"第{hi}天超出规划窗口（第1-{state.num_days}天）。"
            )
        days = list(range(lo, hi + 1))
    if where.days.active:
        chosen = set(where.days.days(state.num_days, cal))
        days = [d for d in days if d in chosen]
    need = args.duration if args.duration is not None else args.span
    if args.task_id is None:
        return _free_listing(state, cal, where, days, need or DEFAULT_SPAN, args)
    task = state.task(args.task_id)
    if task is None:
        return json_error(tool, "not_found", f"任务 [{args.task_id}] 不存在。")
    if not movable(state, task):
        return json_error(
            tool,
            "not_movable",
            f"{task.label} 不能移动（固定任务、课程、嵌有任务或同一天有多个时段块的任务）。",
        )
    lengths = sorted({task.need()} if len(task.slots) <= 1 else {b.length for b in task.slots})
    if need is not None and need not in lengths:
        return json_error(
            tool,
            "invalid_args",
            f"{task.label} 需{'或'.join(map(str, lengths))}个连续时段，duration={need} 不符"
            "（给出 task_id 时可不传 duration）。",
        )
    ranking = rank_destinations(
        state,
        task.state_id,
        days=days,
        level=_level(ctx),
        focus=act.issue_ids if act is not None else (),
        budget=400,
        periods=_usable_periods(state, task, where),
    )
    rows = ranked(ctx, task.state_id, ranking.destinations, cal)[: args.limit]
    return _envelope(
        tool,
        {
            "task": task_row(state, task, cal),
            "action_id": args.action_id,
            "count": len(ranking.destinations),
            "complete": ranking.complete,
            "slots": rows,
            **_selected(where, state, cal),
        },
    )


def _usable_periods(state: ScheduleState, task: Task, where: PlaceFilter) -> frozenset[int] | None:
    """The periods the task's places may cover: the section filter's and its class's (the
    state's class rules), so the free runs are cut at both and the ends of what is left are
    tried (a run 1-12 with blocks 1 and 6 banned offers 3-4 and 9-10, not nothing); ``None``
    when every period is usable."""
    usable = where.sections.mask(state.slots_per_day)
    rule = state.class_rules.for_task(task)
    if rule is not None:
        usable = usable & rule.periods
    if usable.all():
        return None
    return frozenset(int(p) + 1 for p in usable.nonzero()[0])


def _free_listing(
    state: ScheduleState,
    cal: Calendar | None,
    where: PlaceFilter,
    days: list[int],
    need: int,
    args: SlotsArgs,
) -> str:
    """query_available_slots without a task: every place of ``need`` free periods on the days
    and periods asked (free runs first, then free water-course blocks), by day and period."""
    places = free_places(state, days, where.sections, need)
    rows = [
        {
            "day": p.day,
            **day_info(cal, p.day),
            "slot_start": p.slot_start,
            "slot_end": p.slot_end,
            "slot_type": p.kind,
            "embed_host": p.embed_host,
        }
        for p in places[: args.limit]
    ]
    return _envelope(
        "query_available_slots",
        {
            "task": None,
            "action_id": args.action_id,
            "duration": need,
            "count": len(places),
            "complete": True,
            "slots": rows,
            **_selected(where, state, cal),
        },
    )


# ---------------------------------------------------------------------------------- get_round_log
ROUND_PAGE = 10  # rounds in one get_round_log page unless ``limit`` says otherwise
MAX_ROUND_PAGE = 50
ROUND_PAGE_CHARS = 32_000  # a page holds fewer rounds than ``limit`` rather than exceed this


class RoundLogArgs(Args):
    offset: int = Field(
        default=0,
        strict=True,
        ge=0,
        le=1_000_000,
        description="跳过最近几轮（下一页用 next_offset）",
    )
    limit: int = Field(
        default=ROUND_PAGE,
        strict=True,
        ge=1,
        le=MAX_ROUND_PAGE,
        description=f"本页最多返回几轮（默认 {ROUND_PAGE}，最多 {MAX_ROUND_PAGE}）",
    )


def get_round_log_tool(ctx: ToolContext, args: RoundLogArgs) -> str:
    tool = "get_round_log"
    if ctx.loop is None:
        return json_error(tool, "no_session", "get_round_log 只在会话中可用（会话才有轮次记录）。")
    metrics = ctx.loop.round_log()
    kept: list[dict[str, Any]] = metrics["rounds"]
    end = max(0, len(kept) - args.offset)
    start, size = end, 0
    while start > max(0, end - args.limit):  # newest first, within the page's size
        size += len(json.dumps(kept[start - 1], ensure_ascii=False))
        if start < end and size > ROUND_PAGE_CHARS:
            break  # at least one round per page, however long
        start -= 1
    metrics["rounds"] = kept[start:end]  # oldest first, like the log
    earlier = metrics.get("earlier_rounds") or {}
    metrics["page"] = {
        "offset": args.offset,
        "limit": args.limit,
        "returned": end - start,
        "rounds_kept": len(kept),
        "rounds_total": len(kept) + int(earlier.get("rounds", 0)),
        "next_offset": args.offset + (end - start) if start > 0 else None,
    }
    return _envelope(tool, metrics)


# ---------------------------------------------------------------------------------- restore_best
def _state_key(task: Task) -> tuple[Any, ...]:
    return (
        task.status,
        [(b.day, b.slot_start, b.slot_end) for b in task.slots],
        task.embed_host,
        task.duration if task.status == "pending" else None,
    )


def restore_changes(current: ScheduleState, best: ScheduleState) -> list[Change] | str:
    """The change-log entries that take ``current`` to ``best`` (or why it cannot)."""
    if current.window.total_days != best.window.total_days or {
        t.state_id for t in current.tasks
    } != {t.state_id for t in best.tasks}:
        return "最佳状态与当前窗口的天数或任务集合不一致。"
    changes: list[Change] = []
    for task in current.tasks:
        target = best.task(task.state_id)
        assert target is not None
        if _state_key(task) == _state_key(target):
            continue
        removed = [b for b in task.slots if b not in target.slots]
        added = [b for b in target.slots if b not in task.slots]
        for i in range(max(len(removed), len(added), 1)):
            changes.append(
                Change(
                    "restore_best",
                    task.state_id,
                    task.status,
                    target.status,
                    removed[i] if i < len(removed) else None,
                    added[i] if i < len(added) else None,
                    task.embed_host,
                    target.embed_host,
                )
            )
    return changes


def adopt(current: ScheduleState, best: ScheduleState, task_ids: set[int]) -> None:
    """Give the tasks ``task_ids`` of ``current`` the places they have in ``best`` (in place)."""
    grid = current.grid
    tasks = [t for t in current.tasks if t.state_id in task_ids]
    for task in tasks:
        for block in task.slots:
            grid.clear(block, as_guest=task.embed_host is not None)
    for task in tasks:
        target = best.task(task.state_id)
        assert target is not None
        task.slots = [SlotRange.model_validate(b.model_dump()) for b in target.slots]
        task.status, task.duration, task.embed_host = (
            target.status,
            target.duration,
            target.embed_host,
        )
    for task in tasks:
        for block in task.slots:
            grid.put(task.state_id, block, as_guest=task.embed_host is not None)


def _in_session(ctx: ToolContext, head: str, keeps: str) -> tuple[ScheduleState, LoopState] | str:
    """The state and the loop of a session-only write, or its refusal (a bare Toolbox)."""
    state, loop = ctx.state, ctx.loop
    assert state is not None
    if loop is None:
        return refused(f"{head}只有会话（Session）{keeps}。")
    return state, loop


class RestoreArgs(Args):
    pass


def restore_best_tool(ctx: ToolContext, _args: RestoreArgs) -> str:
    started = _in_session(ctx, "restore_best 未执行：", "记录各轮的最佳状态")
    if isinstance(started, str):
        return started
    state, loop = started
    if loop.best_state is None:
        return refused(
            "restore_best 未执行：还没有完成任何一轮 analyze_health，没有可恢复的最佳状态。"
        )
    best = ScheduleState.from_json(loop.best_state)
    changes = restore_changes(state, best)
    if isinstance(changes, str):
        return refused(f"restore_best 未执行：{changes}日程未变更。")
    crit, warn, _ = loop.best_key or (0, 0, 0.0)
    head = f"第{loop.best_round}轮的最佳状态（严重{crit}、警告{warn}）"
    if not changes:
        return f"当前已是{head}，日程未变更。"
    adopt(state, best, {c.task_id for c in changes})
    ctx.record(changes)
    moved = sorted({c.task_id for c in changes})
    lines = [f"已恢复到{head}，{len(moved)}个任务回到当时的位置："]
    for tid in moved:
        task = state.task(tid)
        assert task is not None
        where = "、".join(block_text(b) for b in task.slots) or "待安排"
        lines.append(f"  {task.label} → {where}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- resolve_negotiation
class BannedLift(Args):
    class_id: int = Field(strict=True, ge=1, le=MAX_TASK_ID, description="任务类 id")
    slots: list[Slot] | None = Field(
        default=None, max_length=24, description="要解除的禁排节次；不传解除该任务类全部禁排"
    )


class ResolveArgs(Args):
    choice: Literal["expand_window", "relax_constraints", "reduce_scope", "accept_risk", "undo"] = (
        Field(
            description="expand_window 扩展时间窗 / relax_constraints 放松约束 / "
            "reduce_scope 缩小范围 / accept_risk 接受风险收口 / undo 撤销上次窗口调整"
        )
    )
    extra_days: int | None = Field(
        default=None,
        strict=True,
        ge=1,
        le=MAX_EXTRA_DAYS,
        description="expand_window：在窗口末尾新增的空白天数",
    )
    lift_class_windows: list[Annotated[int, Field(strict=True, ge=1, le=MAX_TASK_ID)]] | None = (
        Field(default=None, max_length=50, description="relax_constraints：解除时间窗的任务类 id")
    )
    lift_banned: list[BannedLift] | None = Field(
        default=None, max_length=50, description="relax_constraints：解除的禁排时段"
    )
    task_ids: list[TaskId] | None = Field(
        default=None, max_length=200, description="reduce_scope：移出本轮范围的待安排任务"
    )

    def missing(self) -> str | None:
        """The argument ``choice`` needs and lacks, if any."""
        need = {
            "expand_window": (self.extra_days is not None, "extra_days"),
            "relax_constraints": (
                bool(self.lift_class_windows or self.lift_banned),
                "lift_class_windows 或 lift_banned",
            ),
            "reduce_scope": (bool(self.task_ids), "task_ids"),
            "accept_risk": (True, ""),
            "undo": (True, ""),
        }
        ok, what = need[self.choice]
        return None if ok else what


def _expanded(state: ScheduleState, extra: int) -> dict[str, Any]:
    data = state.to_dict()
    old = state.num_days
    window = data["window"]
    window["total_days"] = old + extra
    mapping = window.get("day_mapping") or []
    if mapping:
        last = mapping[-1]
        week, dow = int(last["week"]), int(last["day_of_week"])
        for i in range(1, extra + 1):
            dow += 1
            if dow > 7:
                week, dow = week + 1, 1
            entry: dict[str, Any] = {"day_index": old + i, "week": week, "day_of_week": dow}
            if "date" in last:  # a window dated day by day stays so
                entry["date"] = (parse_date(last["date"]) + timedelta(days=i)).isoformat()
            mapping.append(entry)
    last_date = state.calendar.date(old)
    for tc in data.get("task_classes", []):
        if tc.get("end_day") == old:  # bounded by the window, not by a deadline of its own
            tc["end_day"] = old + extra
        if last_date is not None and tc.get("end_date") == last_date.isoformat():
            tc["end_date"] = (last_date + timedelta(days=extra)).isoformat()
    return data


def _relaxed(state: ScheduleState, args: ResolveArgs) -> dict[str, Any] | str:
    data = state.to_dict()
    classes = {tc["id"]: tc for tc in data.get("task_classes", [])}
    for cid in args.lift_class_windows or []:
        if cid not in classes:
            return f"任务类 [{cid}] 不存在。"
        for key in ("start_day", "end_day", "start_date", "end_date"):
            classes[cid].pop(key, None)
    for lift in args.lift_banned or []:
        tc = classes.get(lift.class_id)
        rule = state.class_rules.of(lift.class_id)
        if tc is None or rule is None:
            return f"任务类 [{lift.class_id}] 不存在。"
        drop = set(lift.slots) if lift.slots is not None else set(rule.banned_periods)
        # what stays banned, written back as whole half-day blocks and single periods
        left = set(rule.banned_periods) - drop
        spd = state.slots_per_day
        blocks = [
            b for b in rule.banned_blocks if set(range(2 * b - 1, min(2 * b, spd) + 1)) <= left
        ]
        covered = {p for b in blocks for p in range(2 * b - 1, min(2 * b, spd) + 1)}
        tc["excluded_slots"] = blocks
        tc["excluded_periods"] = sorted(left - covered)
        tc.setdefault("allow_filler_course", rule.allow_filler)
    return data


def _lifted_text(state: ScheduleState, args: ResolveArgs) -> str:
    """``解除任务类[3]复习的时间窗；解除任务类[2]阅读的禁排第1、2节``."""
    parts = []
    for cid in args.lift_class_windows or []:
        tc = state.task_class(cid)
        parts.append(f"解除任务类[{cid}]{tc.name if tc else ''}的时间窗")
    for lift in args.lift_banned or []:
        tc = state.task_class(lift.class_id)
        rule = state.class_rules.of(lift.class_id)
        slots = lift.slots if lift.slots is not None else (rule.banned_periods if rule else ())
        parts.append(
            f"解除任务类[{lift.class_id}]{tc.name if tc else ''}的禁排第"
            f"{'、'.join(str(x) for x in sorted(slots)) or '（无）'}节"
        )
    return "；".join(parts)


def _reduced(
    ctx: ToolContext, state: ScheduleState, ids: list[int]
) -> tuple[dict[str, Any], list[dict[str, Any]]] | str:
    logged = {c.task_id for c in ctx.changes}
    for tid in ids:
        task = state.task(tid)
        if task is None:
            return f"任务 [{tid}] 不存在。"
        if task.status != "pending":
            return f"{task.label} 不是待安排任务，只有待安排任务可以移出本轮范围。"
        if tid in logged:
            return f"{task.label} 在本会话中被修改过，不能移出本轮范围。"
    data = state.to_dict()
    aside = [t for t in data["tasks"] if t["state_id"] in set(ids)]
    data["tasks"] = [t for t in data["tasks"] if t["state_id"] not in set(ids)]
    return data, aside


def resolve_negotiation_tool(ctx: ToolContext, args: ResolveArgs) -> str:
    head = "resolve_negotiation 未执行："
    started = _in_session(ctx, head, "记录协商状态")
    if isinstance(started, str):
        return started
    state, loop = started
    if args.choice == "undo":
        return _undo_window_change(ctx, state, loop, head)
    if not loop.gate_open:
        return refused(f"{head}最近一次 analyze_health 没有判定窗口不可行，无需协商。")
    missing = args.missing()
    if missing is not None:
        return refused(f"{head}choice={args.choice} 需要参数 {missing}。协商状态未变。")
    entry: dict[str, Any] = {"tool": "resolve_negotiation", "choice": args.choice, "changes": 0}
    if args.choice == "accept_risk":
        loop.risk_accepted, loop.gate_open = True, False
        loop.log_write(entry)
        gap = loop.negotiation.get("capacity_gap")
        return (
            f"已记录用户选择：接受风险收口（accept_risk）。保留{gap}个时段的缺口；之后的 "
            "analyze_health 不再给出协商选项，close_signal 为 should_close=true、"
            "close_reason=risk_accepted。"
        )
    aside: list[dict[str, Any]] = []
    if args.choice == "expand_window":
        assert args.extra_days is not None
        data: dict[str, Any] | str = _expanded(state, args.extra_days)
        what = (
            f"扩展时间窗（expand_window），新增第{state.num_days + 1}-"
            f"{state.num_days + args.extra_days}天"
        )
    elif args.choice == "relax_constraints":
        data = _relaxed(state, args)
        what = f"放松约束（relax_constraints），{_lifted_text(state, args)}"
    else:
        reduced = _reduced(ctx, state, args.task_ids or [])
        if isinstance(reduced, str):
            return refused(f"{head}{reduced}协商状态未变。")
        data, aside = reduced
        names = "、".join(f"[{t['state_id']}]{t['name']}" for t in aside[:10])
        more = "等" if len(aside) > 10 else ""
        what = f"缩小本轮范围（reduce_scope），移出{len(aside)}个待安排任务（{names}{more}）"
    if isinstance(data, str):
        return refused(f"{head}{data}协商状态未变。")
    try:
        new_state = ScheduleState.from_json(data)
    except StateError as exc:
        return refused(f"{head}调整后的窗口无效（{exc}）。协商状态未变。")
    change = _window_change(loop, args.choice, what, state, aside)
    verdict = _regate(ctx, loop, new_state, entry)
    loop.set_aside.extend(aside)
    loop.window_changes.append(change)
    entry["window_change"] = change["seq"]
    loop.log_write(entry)
    return (
        f"已记录用户选择：{what}。重新判定可行性：{verdict}\n"
        f"这是窗口调整记录 #{change['seq']}（可用 resolve_negotiation 的 choice=undo 撤销）；它只在本会话中生效，"
        "commit 不会把它写入数据库（commit 的预览会逐项说明）。"
    )


def _window_change(
    loop: LoopState, choice: str, what: str, before: ScheduleState, aside: list[dict[str, Any]]
) -> dict[str, Any]:
    """The window-change log entry of ``choice``: what it did and the window before it."""
    data = before.to_dict()
    seq = max((int(w.get("seq", 0)) for w in loop.window_changes), default=0) + 1
    return {
        "seq": seq,
        "choice": choice,
        "summary": what,
        "before": {"window": data["window"], "task_classes": data.get("task_classes", [])},
        "breaks_before": sorted(t.state_id for t, _ in rule_breaks(before)),
        "aside_ids": [t["state_id"] for t in aside],
    }


def _regate(
    ctx: ToolContext, loop: LoopState, new_state: ScheduleState, entry: dict[str, Any]
) -> str:
    """Adopt ``new_state`` (a changed window), re-run the feasibility gate, and say its verdict."""
    from ...solver import check_feasibility

    report = check_feasibility(
        new_state,
        time_limit_s=min(2.0, ctx.max_time_limit_s),
        num_workers=ctx.num_workers,
        calibration=ctx.calibration,
    )
    ctx.state = new_state
    loop.reset_best()
    loop.gate_open = report.is_feasible is False
    entry.update(is_feasible=report.is_feasible, capacity_gap=report.capacity_gap)
    if report.is_feasible is False:
        return (
            f"仍不可行（缺口{gap_words(report.capacity_gap, report.capacity_gap_bounds)}个时段，"
            f"原因 {report.reason_code}），"
            "门禁保持，请再与用户协商。"
        )
    if report.is_feasible is None:
        return "在时限内未能判定（未证明不可行），已解除门禁；请调用 analyze_health 开始新一轮。"
    return "可行（缺口0），已解除门禁；请调用 analyze_health 开始新一轮。"


def rule_breaks(state: ScheduleState) -> list[tuple[Task, str]]:
    """Placed study tasks that break a class rule where they stand (its days, weekdays, banned
    periods, or the order of its items), with the reason."""
    rules = state.class_rules
    out: list[tuple[Task, str]] = []
    for task in state.tasks:
        if task.source == "event" or task.status == "pending":
            continue
        for b in task.slots:
            if breach := rules.breach(task, b.day, b.slot_start, b.slot_end):
                out.append((task, class_rule_text(state, rule_refusal(task, breach)).rstrip("。")))
                break
        else:
            if breach := rules.order_breach(task):
                out.append((task, class_rule_text(state, rule_refusal(task, breach)).rstrip("。")))
    return out


# ---------------------------------------------------------------------------------- undo
def _undo_window_change(ctx: ToolContext, state: ScheduleState, loop: LoopState, head: str) -> str:
    """resolve_negotiation(choice=undo): take back the last window change, if nothing stands on
    what it added; then re-run the gate."""
    if not loop.window_changes:
        return refused(
            f"{head}本会话没有可撤销的窗口调整（expand_window / relax_constraints / "
            "reduce_scope）。"
        )
    change = loop.window_changes[-1]
    before = change["before"]
    old_days = int(before["window"]["total_days"])
    outside = [t for t in state.tasks for b in t.slots if b.day > old_days]
    if outside:
        names = "、".join(dict.fromkeys(t.label for t in outside))
        return refused(
            f"{head}{names} 在要撤销的新增天（第{old_days + 1}天起）上，请先移走或"
            "unplace。窗口未变。"
        )
    data = state.to_dict()
    data["window"], data["task_classes"] = before["window"], before["task_classes"]
    back = [t for t in loop.set_aside if t.get("state_id") in set(change.get("aside_ids") or [])]
    data["tasks"] = data["tasks"] + back
    try:
        new_state = ScheduleState.from_json(data)
    except StateError as exc:
        return refused(f"{head}恢复后的窗口无效（{exc}）。窗口未变。")
    known = set(change.get("breaks_before") or [])
    breaks = [(t, why) for t, why in rule_breaks(new_state) if t.state_id not in known]
    if breaks:
        lines = "；".join(f"{t.label} {why}" for t, why in breaks[:10])
        return refused(f"{head}撤销后这些任务会违反恢复的约束：{lines}。请先移走它们。窗口未变。")
    entry: dict[str, Any] = {
        "tool": "resolve_negotiation",
        "choice": "undo",
        "window_change": change["seq"],
        "changes": 0,
    }
    verdict = _regate(ctx, loop, new_state, entry)
    loop.window_changes.pop()
    loop.set_aside = [t for t in loop.set_aside if t not in back]
    loop.log_write(entry)
    return (
        f"已撤销窗口调整 #{change['seq']}：{change['summary']}。"
        f"窗口恢复为第1-{old_days}天"
        + (f"，{len(back)}个任务回到待安排" if back else "")
        + f"。重新判定可行性：{verdict}"
    )


LOOP_READ_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "query_target_tasks",
        "read",
        TargetArgs,
        query_target_tasks_tool,
        "列出任务。只用日历与 status/category/task_ids 筛选时列出命中的全部任务（count 为总数）；"
        "给出 action_id 时列出该动作可移动的任务，"
        "最有帮助的在前，附最佳落点预览；target_filter/candidate_scope 覆盖筛选，日历筛选再缩小范围。",
        output="json",
    ),
    ToolSpec(
        "query_available_slots",
        "read",
        SlotsArgs,
        query_available_slots_tool,
        "列出落点，可用日历筛选。给出 task_id：该任务的全部合法落点（空闲或可嵌入的水课），"
        "按体检影响排序，带各项增减与 helps（对本动作有帮助且不新增问题）；多块任务逐块给出并带"
        " from_day（move 时传入）。不给 task_id：duration 节的全部空位，count 为总数。",
        output="json",
    ),
    ToolSpec(
        "get_round_log",
        "read",
        RoundLogArgs,
        get_round_log_tool,
        "本会话的轮次日志：每轮严重/警告数、是否进步、收口信号、动作与写操作；"
        f"分页（page.next_offset），最近{ROUND_LOG_KEEP}轮之前的合并为 earlier_rounds。",
        output="json",
    ),
)

LOOP_WRITE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "restore_best",
        "write",
        RestoreArgs,
        restore_best_tool,
        "把日程恢复到本会话 analyze_health 各轮中最好的一轮；记入修改记录。",
    ),
    ToolSpec(
        "resolve_negotiation",
        "write",
        ResolveArgs,
        resolve_negotiation_tool,
        "不可行后记录用户的协商选择（expand_window 用 extra_days，relax_constraints 用 "
        "lift_class_windows/lift_banned，reduce_scope 用 task_ids）；改变窗口的选择重新判定可行性"
        "（只在会话中，commit 不写库）。记录选择前，放置/移动类写操作被拒绝。",
    ),
)

__all__ = ["CHOICES", "LOOP_READ_TOOLS", "LOOP_WRITE_TOOLS"]
