"""The calendar vocabulary's argument models (issue 43 item 1), shared by every tool that selects
tasks or places, with the reference system's names (``read_filter_tools.go``) so that a prompt
written for that system works here:

- days: ``day_scope`` (all | workday | weekend), ``day_of_week`` (1..7), ``week`` or
  ``week_from``/``week_to``, ``day`` or ``day_start``/``day_end``;
- periods: ``exclude_sections``, ``after_section``, ``before_section`` (both strict);
- tasks also: ``status`` (all | existing | suggested | pending), ``category``, ``task_ids``;
- a proposal's place filter also: ``same_week`` (a task stays in the week it is in).

What the arguments mean is :mod:`smartflow_engine.calendar_filters`' (the pure selection); this module
checks them, first alone (the models: types, ranges, pairs that contradict each other), then
against the loaded window (:func:`place_filter`, :func:`task_filter`: the window's days, weeks,
periods, tasks and categories), and says what is wrong in the model's words. Upstream swaps a
reversed week range and ignores what it cannot use; here every such argument is refused, naming
it (a model that misread a range learns it from the reply, not from an empty result).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StrictBool, WithJsonSchema, create_model, model_validator
from pydantic.json_schema import SkipJsonSchema

from ...calendar_filters import (
    SCOPE_WEEKDAYS,
    DayFilter,
    PlaceFilter,
    ProposalScope,
    SectionFilter,
    TaskFilter,
    calendar_of,
    proposal_scope,
    week_range,
)
from ...state import ScheduleState
from ...state.calendar import Calendar
from ...state.model import MAX_DAYS, MAX_SLOTS_PER_DAY, MAX_TASK_ID
from .args import Args
from .spec import ToolContext, ToolSpec, failure_text, refused

# Bare bounds (the fields say what they are: the tool list is read every turn)
Week = Annotated[int, Field(strict=True, ge=1, le=MAX_DAYS)]
Weekday = Annotated[int, Field(strict=True, ge=1, le=7)]
Day = Annotated[int, Field(strict=True, ge=1, le=MAX_DAYS)]
Section = Annotated[int, Field(strict=True, ge=1, le=MAX_SLOTS_PER_DAY)]
TaskId = Annotated[int, Field(strict=True, ge=1, le=MAX_TASK_ID)]

DAY_FIELDS = (
    "day_scope",
    "day_of_week",
    "week",
    "week_from",
    "week_to",
    "day",
    "day_start",
    "day_end",
)
SECTION_FIELDS = ("exclude_sections", "after_section", "before_section")
TASK_FIELDS = ("status", "category", "task_ids")
MAX_TASK_IDS = 200


class DayArgs(Args):
    """Which days (the window's day mapping gives each day's week and weekday)."""

    day_scope: Literal["all", "workday", "weekend"] | None = Field(
        default=None, description="workday=周一至周五，weekend=周六周日"
    )
    day_of_week: list[Weekday] | None = Field(
        default=None, min_length=1, max_length=7, description="1=周一…7=周日"
    )
    week: Week | None = Field(default=None, description="教学周")
    week_from: Week | None = Field(default=None, description="起始周（含）")
    week_to: Week | None = Field(default=None, description="结束周（含）")
    day: Day | None = Field(default=None, description="第几天")
    day_start: Day | None = Field(default=None, description="起始天（含）")
    day_end: Day | None = Field(default=None, description="结束天（含）")

    @model_validator(mode="after")
    def _days_agree(self) -> DayArgs:
        if self.day is not None and (self.day_start is not None or self.day_end is not None):
            raise ValueError("day 与 day_start/day_end 不能同时给出")
        if self.week is not None and (self.week_from is not None or self.week_to is not None):
            raise ValueError("week 与 week_from/week_to 不能同时给出")
        if (
            self.week_from is not None
            and self.week_to is not None
            and self.week_from > self.week_to
        ):
            raise ValueError(f"week_from={self.week_from} 大于 week_to={self.week_to}")
        if (
            self.day_start is not None
            and self.day_end is not None
            and self.day_start > self.day_end
        ):
            raise ValueError(f"day_start={self.day_start} 大于 day_end={self.day_end}")
        if self.day_of_week and not set(self.day_of_week) & SCOPE_WEEKDAYS[self.day_scope or "all"]:
            raise ValueError(
                f"day_of_week {sorted(set(self.day_of_week))} 与 day_scope={self.day_scope} 没有共同的星期"
            )
        return self


class SectionArgs(Args):
    """Which periods of a day."""

    exclude_sections: list[Section] | None = Field(
        default=None, max_length=24, description="排除的节次"
    )
    after_section: Section | None = Field(default=None, description="此节之后（不含）")
    before_section: Section | None = Field(default=None, description="此节之前（不含）")

    @model_validator(mode="after")
    def _sections_agree(self) -> SectionArgs:
        after, before = self.after_section, self.before_section
        if after is not None and before is not None and before - after < 2:
            raise ValueError(
                f"after_section={after} 与 before_section={before} 之间没有节次（两者都不含端点）"
            )
        return self


class PlaceArgs(SectionArgs, DayArgs):
    """Days and periods: where something may go (or where a task's block must lie)."""


class TaskArgs(PlaceArgs):
    """Which tasks: on which days and periods, and of which status, category and ids."""

    status: Literal["all", "existing", "suggested", "pending"] | None = Field(
        default=None, description="任务状态"
    )
    category: str | None = Field(default=None, min_length=1, max_length=64, description="类别名")
    task_ids: list[TaskId] | None = Field(
        default=None, min_length=1, max_length=MAX_TASK_IDS, description="任务 ID"
    )


class SlotsScope(PlaceArgs):
    """A proposal's place filter: ``PlaceArgs`` and ``same_week``."""

    same_week: StrictBool = Field(
        default=False, description="true：每个任务只留在它现在所在的那一周（不越周）"
    )


def given(args: Args, names: tuple[str, ...]) -> bool:
    """Whether the caller gave any of the arguments ``names``."""
    return bool(args.model_fields_set & set(names))


# ---------------------------------------------------------------------------------- the window
def _week_range(cal: Calendar) -> str:
    lo, hi = week_range(cal)
    return f"第{lo}周" if lo == hi else f"第{lo}-{hi}周"


def _day_filter(args: DayArgs, state: ScheduleState, cal: Calendar | None) -> DayFilter | str:
    n = state.num_days
    for name in ("day", "day_start", "day_end"):
        value = getattr(args, name)
        if value is not None and value > n:
            return f"{name}={value} 超出规划窗口（第1-{n}天）"
    week_args = {k: getattr(args, k) for k in ("week", "week_from", "week_to")}
    calendar_args = [k for k in DAY_FIELDS[:5] if getattr(args, k) is not None]
    if calendar_args and cal is None:
        return (
            f"规划窗口没有日历（day_mapping），无法按周或星期筛选（{'、'.join(calendar_args)}）；"
            "请改用 day 或 day_start/day_end"
        )
    for name, value in week_args.items():
        if (
            value is not None
            and cal is not None
            and not week_range(cal)[0] <= value <= week_range(cal)[1]
        ):
            return f"{name}={value} 不在规划窗口内（窗口为{_week_range(cal)}）"
    week_from = args.week if args.week is not None else args.week_from
    week_to = args.week if args.week is not None else args.week_to
    return DayFilter(
        day_scope=args.day_scope or "all",
        day_of_week=frozenset(args.day_of_week or ()),
        week_from=week_from,
        week_to=week_to,
        day_start=args.day if args.day is not None else args.day_start,
        day_end=args.day if args.day is not None else args.day_end,
    )


def _section_filter(args: SectionArgs, state: ScheduleState) -> SectionFilter | str:
    spd = state.slots_per_day
    for name in ("after_section", "before_section"):
        value = getattr(args, name)
        if value is not None and value > spd:
            return f"{name}={value} 超出每天{spd}节的范围"
    out = [s for s in args.exclude_sections or () if s > spd]
    if out:
        return f"exclude_sections 含超出每天{spd}节的节次：{out}"
    sections = SectionFilter(
        frozenset(args.exclude_sections or ()), args.after_section, args.before_section
    )
    if sections.active and not sections.mask(spd).any():
        return "exclude_sections/after_section/before_section 排除了全部节次"
    return sections


def place_filter(args: PlaceArgs, state: ScheduleState) -> PlaceFilter | str:
    """``args`` as a :class:`PlaceFilter` on ``state``'s window, or why they cannot be."""
    cal = calendar_of(state)
    days = _day_filter(args, state, cal)
    if isinstance(days, str):
        return days
    sections = _section_filter(args, state)
    if isinstance(sections, str):
        return sections
    return PlaceFilter(days, sections)


def task_filter(args: TaskArgs, state: ScheduleState) -> TaskFilter | str:
    """``args`` as a :class:`TaskFilter` on ``state``, or why they cannot be (an id that is
    not a task, a category no task has)."""
    where = place_filter(args, state)
    if isinstance(where, str):
        return where
    missing = [tid for tid in args.task_ids or () if state.task(tid) is None]
    if missing:
        return f"task_ids 含不存在的任务：{missing[:10]}"
    if args.category is not None and not any(t.category == args.category for t in state.tasks):
        known = sorted({t.category for t in state.tasks if t.category})
        return f"没有类别为「{args.category}」的任务（现有类别：{'、'.join(known) or '无'}）"
    return TaskFilter(
        where,
        args.status or "all",
        args.category,
        frozenset(args.task_ids) if args.task_ids is not None else None,
    )


def day_info(cal: Calendar | None, day: int) -> dict[str, Any]:
    """``{"week": 17, "day_of_week": 1}`` of ``day`` (nothing without a calendar): the fields the
    JSON replies add to every day they name."""
    if cal is None:
        return {}
    return {"week": cal.week(day), "day_of_week": cal.weekday(day)}


# ---------------------------------------------------------------------------------- proposals
PROPOSAL_TOOLS = frozenset({"propose_placement", "apply_proposal"})
# Published compactly (the tool list is read every turn, within its token budget): on
# apply_proposal only, the keys the logged requests need, each with its type (and enum) and a
# word or two, and its bounds. Every key of the query tools is accepted, on both proposal tools, and
# checked by the strict models (an unknown key is refused by name).
TASKS_TEXT = "要移动的任务，键同 query_target_tasks"
SLOTS_TEXT = "可放位置，键同 query_available_slots"
NOT_WITH_SCOPE = ("placements", "keep_placed", "include_suggested")
PUBLISHED = {
    "day_scope": "星期",
    "week": "周",
    "exclude_sections": "排除节",
    "same_week": "不越周",
}
TASK_KEYS = ("day_scope", "week")
_KEPT = ("type", "enum", "minimum", "maximum", "maxItems")


def _compact_schema(model: type[BaseModel], keys: tuple[str, ...]) -> dict[str, Any]:
    """``model``'s object schema with only ``keys``, each with its type (and enum) and a word
    or two (:data:`PUBLISHED`)."""
    props: dict[str, Any] = {}
    for name, prop in model.model_json_schema()["properties"].items():
        if name not in keys:
            continue
        kinds = prop.get("anyOf", [prop])
        main = next(k for k in kinds if k.get("type") != "null")
        # the type (and enum) and its bounds: every accepted number and list is bounded
        short = {k: v for k, v in main.items() if k in _KEPT}
        if main["type"] == "array":
            short["items"] = {k: v for k, v in main["items"].items() if k in _KEPT}
        props[name] = {**short, "description": PUBLISHED[name]}
    return {"type": "object", "properties": props}


TasksArg = Annotated[TaskArgs | None, WithJsonSchema(_compact_schema(TaskArgs, TASK_KEYS))]
SlotsArg = Annotated[
    SlotsScope | None, WithJsonSchema(_compact_schema(SlotsScope, tuple(PUBLISHED)))
]
HiddenTasks = SkipJsonSchema[TaskArgs | None]
HiddenSlots = SkipJsonSchema[SlotsScope | None]
PUBLISHED_ON = frozenset({"apply_proposal"})  # propose_placement: accepted, not published


def scope_of(
    state: ScheduleState, tasks: TaskArgs | None, slots: SlotsScope | None
) -> ProposalScope | str:
    """A proposal's ``tasks`` / ``slots`` on ``state``: the :class:`ProposalScope` the solver
    takes (the placed study tasks that may move, each task's allowed (day, period) mask), or why
    the arguments cannot be."""
    chosen = task_filter(tasks, state) if tasks is not None else None
    if isinstance(chosen, str):
        return f"tasks：{chosen}"
    where = place_filter(slots, state) if slots is not None else None
    if isinstance(where, str):
        return f"slots：{where}"
    cal = calendar_of(state)
    same_week = slots is not None and slots.same_week
    if same_week and cal is None:
        return "slots：规划窗口没有日历（day_mapping），无法按周限定（same_week）"
    return proposal_scope(state, cal, chosen, where, same_week, state.pending_tasks())


def with_scope_args(spec: ToolSpec) -> ToolSpec:
    """``spec`` (a proposal tool) with the ``tasks`` / ``slots`` arguments (issue 43 item 1).

    They are checked like every calendar argument (alone, then against the window: a bad one is
    refused, naming it) before the tool runs; the tool turns them into the solver's
    :class:`ProposalScope` (``tools/solver.py``). ``placements``, ``keep_placed`` and
    ``include_suggested`` choose what moves another way: given with them, they are refused."""
    base = spec.args_model
    fields: dict[str, Any] = {
        "tasks": (TasksArg, Field(default=None, description=TASKS_TEXT)),
        "slots": (SlotsArg, Field(default=None, description=SLOTS_TEXT)),
    }
    if spec.name not in PUBLISHED_ON:
        fields = {
            "tasks": (HiddenTasks, Field(default=None)),
            "slots": (HiddenSlots, Field(default=None)),
        }
    model: type[BaseModel] = create_model(base.__name__, __base__=base, **fields)
    model.__doc__ = base.__doc__
    inner = spec.handler

    def handler(ctx: ToolContext, parsed: Any) -> str:
        if parsed.tasks is None and parsed.slots is None:
            return inner(ctx, parsed)
        assert ctx.state is not None
        both = [n for n in NOT_WITH_SCOPE if getattr(parsed, n, None) is not None]
        if both:
            reason = f"参数错误，{'/'.join(both)} 与 tasks/slots 不能同时给出。"
            return refused(failure_text(spec.name, reason), "invalid_args")
        scope = scope_of(ctx.state, parsed.tasks, parsed.slots)
        if isinstance(scope, str):
            return refused(failure_text(spec.name, f"参数错误，{scope}。"), "invalid_args")
        return inner(ctx, parsed)

    return dataclasses.replace(spec, args_model=model, handler=handler)


__all__ = [
    "DAY_FIELDS",
    "PROPOSAL_TOOLS",
    "SECTION_FIELDS",
    "TASK_FIELDS",
    "DayArgs",
    "PlaceArgs",
    "SectionArgs",
    "SlotsScope",
    "TaskArgs",
    "day_info",
    "given",
    "place_filter",
    "scope_of",
    "task_filter",
    "with_scope_args",
]
