"""Database-backed tools: ``upsert_task_class`` (p1 §4.9, §6.2).

Creates (``id=0``) or updates (``id>0``) a task class and its items in one transaction through the
session's store (``ctx.store``, for ``ctx.user_id``), validates what was written and keeps it only
when the validation passes. It needs no loaded schedule and always needs the user's confirm (the
session's gate holds the call; this handler writes when it is run). Reply (JSON)::

    {tool, success, task_class_id, created, validation: {ok, issues[]}, source, error, error_code}

``source`` echoes the call's ``source`` (``chat`` / ``memory`` / ``web``, ``null`` when not given),
as §4.9 asks ("用于审计与回显"). ``tolerance_preference`` and ``excluded_slots`` are key fields
(§4.8): creating a class without them fails validation (``missing_field``); ``[]`` is a valid
"no banned periods".

``error_code``: ``no_database``, ``no_user``, ``not_found`` (also for another user's id),
``validation_failed`` (nothing kept; ``validation.issues`` say what to repair),
``db_unavailable`` (the database could not be reached or refused the write; nothing kept).
Without a database or a user the call is refused at once, never held for the user's confirm
(:func:`upsert_preview`).

``commit`` and ``reload`` refuse with the codes of :data:`STORE_ERRORS` (every surface marks them
as errors: the session's ``status="error"``, HTTP's status code, MCP's ``isError``, the CLI's
exit code); ``commit`` on a session without a database is refused at once, not held.
"""

from __future__ import annotations

import json
import logging
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from ...state.model import MAX_TASK_ID
from ..core.args import Args
from ..core.semester import dated
from ..core.spec import NothingToConfirm, ToolContext, ToolSpec, refused

if TYPE_CHECKING:
    from ...store.protocol import ScheduleStore

log = logging.getLogger(__name__)

TOOL = "upsert_task_class"

Text = Annotated[str, Field(max_length=100)]


class WeekDayArg(Args):
    week: int = Field(strict=True, ge=1, le=52, description="教学周")
    day_of_week: int = Field(strict=True, ge=1, le=7, description="星期（1=周一）")


class BackendConfigArgs(Args):
    """SmartFlow-Agent's ``config`` (issue 41 item 4): ``excluded_slots`` are half-day blocks
    1..6 and ``excluded_days_of_week`` weekdays 1..7. The bounds here are loose on purpose: a
    block 7 or a weekday 8 is written and refused by the post-write validation, which names it
    as a repairable issue."""

    total_slots: int | None = Field(default=None, strict=True, ge=0, le=2000)
    allow_filler_course: bool | None = Field(default=None, strict=True)
    strategy: Literal["steady", "rapid"] | None = None
    excluded_slots: list[Annotated[int, Field(strict=True, ge=0, le=24)]] | None = Field(
        default=None, max_length=24
    )
    excluded_days_of_week: list[Annotated[int, Field(strict=True, ge=0, le=14)]] | None = Field(
        default=None, max_length=14
    )


# SmartFlow-Agent's keys of ``task_class`` (besides ``name``): accepted, not published (the
# tool list is read every turn, within its token budget); any of them (or an item's ``order``)
# makes the call that system's payload, which takes none of today's keys below.
BACKEND_KEYS = (
    "mode",
    "start_date",
    "end_date",
    "subject_type",
    "difficulty_level",
    "cognitive_intensity",
    "config",
)
_ORDINARY = (
    "time_of_day",
    "time_of_day_weight",
    "aggregate_same_category",
    "milestones",
    "knowledge_tags",
    "notes",
)
TODAY_KEYS = (
    "start",
    "end",
    "total_slots",
    "strategy",
    "tolerance_preference",
    "excluded_slots",
    *_ORDINARY,
)
TODAY_ITEM_KEYS = ("id", "duration", "priority", "depends_on")


class TaskClassArgs(Args):
    name: str | None = Field(default=None, max_length=64, description="任务类名称（即类别名）")
    # SmartFlow-Agent's payload (hidden from the schema; see BACKEND_KEYS)
    mode: SkipJsonSchema[Literal["auto", "manual"] | None] = None
    start_date: SkipJsonSchema[date | None] = None
    end_date: SkipJsonSchema[date | None] = None
    subject_type: SkipJsonSchema[Annotated[str, Field(max_length=32)] | None] = None
    difficulty_level: SkipJsonSchema[Annotated[str, Field(max_length=16)] | None] = None
    cognitive_intensity: SkipJsonSchema[Annotated[str, Field(max_length=16)] | None] = None
    config: SkipJsonSchema[BackendConfigArgs | None] = None
    start: WeekDayArg | None = Field(default=None, description="时间窗开始（含当天）")
    end: WeekDayArg | None = Field(default=None, description="时间窗结束（含当天）")
    total_slots: int | None = Field(
        default=None, strict=True, ge=0, le=2000, description="总预算：全部任务项合计可用的节数"
    )
    strategy: Literal["steady", "rapid"] | None = Field(
        default=None, description="排布策略：steady=均匀推进，rapid=尽快完成"
    )
    tolerance_preference: Literal["strict", "normal", "relaxed"] | None = Field(
        default=None,
        description="容错偏好：strict 留足余量 / normal 适中 / relaxed 可排满；新建时必填（关键字段）",
    )
    excluded_slots: list[Annotated[int, Field(strict=True, ge=0, le=24)]] | None = Field(
        default=None,
        max_length=24,
        description="每天都不安排的节次（[] 为没有）；新建时必填（关键字段）",
    )
    time_of_day: Literal["morning", "afternoon", "evening", "any"] | None = Field(
        default=None, description="偏好时段"
    )
    time_of_day_weight: float | None = Field(
        default=None, ge=0, le=1, description="偏好时段权重 0-1"
    )
    aggregate_same_category: bool | None = Field(
        default=None, description="是否倾向把同类任务排在一起"
    )
    milestones: list[Annotated[str, Field(max_length=50)]] | None = Field(
        default=None, max_length=10, description="里程碑拆分建议"
    )
    knowledge_tags: list[Annotated[str, Field(max_length=30)]] | None = Field(
        default=None, max_length=20, description="知识标签与学习路径备注"
    )
    notes: str | None = Field(default=None, max_length=500, description="其他备注")


class TaskItemArgs(Args):
    id: int | None = Field(
        default=None,
        strict=True,
        ge=1,
        le=MAX_TASK_ID,
        description="已有任务项 ID（不填则按名称匹配，无则新建）",
    )
    content: Text | None = Field(default=None, description="任务项名称")
    # SmartFlow-Agent's item order (1..), hidden from the schema
    order: SkipJsonSchema[Annotated[int, Field(strict=True, ge=1, le=10000)] | None] = None
    duration: int | None = Field(
        default=None, strict=True, ge=1, le=24, description="需要的连续节数"
    )
    priority: int | None = Field(
        default=None, strict=True, ge=1, le=5, description="优先级 1-5，1 最高"
    )
    depends_on: list[Text] | None = Field(
        default=None, max_length=10, description="需先完成的任务项名称（同一任务类内）"
    )


class UpsertTaskClassArgs(Args):
    id: int = Field(
        default=0,
        strict=True,
        ge=0,
        le=MAX_TASK_ID,
        description="0=新建任务类；>0=更新该 ID 的任务类",
    )
    task_class: TaskClassArgs = Field(description="任务类主体字段；更新时未给出的字段保持原值")
    items: list[TaskItemArgs] = Field(
        default_factory=list,
        max_length=50,
        description="任务项（按 ID 或名称更新，其余新建；未列出的保留）",
    )
    source: Literal["chat", "memory", "web"] | None = Field(
        default=None, description="字段来源（审计用）：chat 对话 / memory 记忆 / web 常识"
    )

    @model_validator(mode="after")
    def _one_payload(self) -> UpsertTaskClassArgs:
        """SmartFlow-Agent's payload and today's are not mixed: a call in that system's shape
        takes its own keys only (each is written to its column as that system writes it)."""
        if not self.is_backend():
            return self
        given = self.task_class.model_fields_set
        mixed = [f"task_class.{k}" for k in TODAY_KEYS if k in given]
        for i, item in enumerate(self.items):
            if item.order is None:
                mixed.append(f"items[{i}].order（缺少）")
            mixed += [f"items[{i}].{k}" for k in TODAY_ITEM_KEYS if k in item.model_fields_set]
        if mixed:
            raise ValueError(
                "后端任务类格式（mode/start_date/end_date/config、items 的 order）不能与本格式的"
                f"字段混用：{'、'.join(mixed[:6])}"
            )
        return self

    def is_backend(self) -> bool:
        """Whether the call is SmartFlow-Agent's payload (one of its keys is given)."""
        given = self.task_class.model_fields_set
        return any(k in given for k in BACKEND_KEYS) or any(
            it.order is not None for it in self.items
        )


# Chinese text of each validation issue code (smartflow_engine.store.ISSUE_CODES).
_ISSUE_TEXT = {
    "missing_field": "缺少必填字段 {field}。",
    "duplicate_class_name": "任务类名称「{actual}」已存在，请换一个名称或更新已有任务类。",
    "time_window_reversed": "时间窗结束早于开始。",
    "time_window_too_long": "时间窗共 {actual} 天，超过上限 {expected} 天。",
    "invalid_value": "{field} 的取值 {actual} 无效，应为 {expected}。",
    "slot_out_of_range": "禁排节次 {actual} 超出范围 {expected}。",
    "duplicate_value": "禁排节次 {actual} 重复。",
    "no_allowed_slot": "全部节次都被禁排，没有可安排的时段。",
    "total_slots_too_small": "总预算 {actual} 节小于任务项时长之和 {expected} 节。",
    "total_slots_exceeds_window": "总预算 {actual} 节超过时间窗内可用的 {expected} 节。",
    "duplicate_item_name": "任务项名称「{actual}」重复。",
    "duration_exceeds_allowed_run": "任务项时长 {actual} 节超过禁排后最长连续可用的 {expected} 节。",
    "unknown_dependency": "依赖的任务项「{actual}」不在该任务类中。",
    "self_dependency": "任务项不能依赖自身。",
    "dependency_cycle": "任务项依赖成环：{actual}。",
    "too_many_items": "任务项共 {actual} 个，超过上限 {expected} 个。",
}


def _issue(issue: Any) -> dict[str, Any]:
    actual = issue.actual
    if issue.code == "dependency_cycle" and isinstance(actual, list):
        actual = " → ".join(str(a) for a in actual)
    if isinstance(actual, dict):
        actual = f"第{actual.get('week')}周周{actual.get('day_of_week')}"
    expected = issue.expected
    if isinstance(expected, list):
        expected = "、".join(str(e) for e in expected)
    template = _ISSUE_TEXT.get(issue.code, "{field} 有误（{code}）。")
    out = {
        "code": issue.code,
        "field": issue.field,
        "message": template.format(
            field=issue.field, actual=actual, expected=expected, code=issue.code
        ),
    }
    if issue.actual is not None:
        out["actual"] = issue.actual
    if issue.expected is not None:
        out["expected"] = issue.expected
    return out


def _reply(
    *,
    success: bool,
    task_class_id: int | None = None,
    created: bool = False,
    issues: list[dict[str, Any]] | None = None,
    validated: bool = False,
    error: str = "",
    error_code: str = "",
    source: str | None = None,
) -> str:
    return json.dumps(
        {
            "tool": TOOL,
            "success": success,
            "task_class_id": task_class_id,
            "created": created,
            "validation": {"ok": validated and not issues, "issues": issues or []},
            "source": source,
            "error": error,
            "error_code": error_code,
        },
        ensure_ascii=False,
    )


def error_reply(error_code: str, error: str) -> str:
    """This tool's reply shape for a failure decided outside the handler (argument errors,
    ``no_state``-style refusals), so that every reply of the tool has the same keys."""
    return _reply(success=False, error=error, error_code=error_code)


def upsert_task_class_tool(ctx: ToolContext, args: UpsertTaskClassArgs) -> str:
    source = args.source
    missing = _upsert_refusal(ctx)
    if missing is not None:
        return _reply(success=False, error=missing[1], error_code=missing[0], source=source)
    from ...store import TaskClassInput, TaskItemInput  # the store pulls in SQLAlchemy
    from ...store.task_classes import from_backend

    tc = args.task_class
    preferences = {k: getattr(tc, k) for k in _ORDINARY if getattr(tc, k) is not None}
    fields = TaskClassInput(
        name=tc.name,
        total_slots=tc.total_slots,
        strategy=tc.strategy,
        tolerance_preference=tc.tolerance_preference,
        excluded_slots=tc.excluded_slots,
        start=tc.start.model_dump() if tc.start else None,
        end=tc.end.model_dump() if tc.end else None,
        preferences=preferences or None,
    )
    items = [
        TaskItemInput.model_validate(it.model_dump(include=set(TODAY_ITEM_KEYS) | {"content"}))
        for it in args.items
    ]
    if args.is_backend():
        fields, items = from_backend(
            {
                "task_class": tc.model_dump(include={"name", *BACKEND_KEYS}, exclude_none=True),
                "items": [it.model_dump(include={"order", "content"}) for it in args.items],
            }
        )
    store, user_id = _db(ctx)
    result = store.upsert_task_class(user_id, args.id, fields, items, source=args.source)
    if result.success:
        return _reply(
            success=True,
            task_class_id=result.task_class_id,
            created=result.created,
            validated=True,
            source=source,
        )
    code = result.error_code
    if code == "not_found":
        if "item_id" in result.detail:
            error = f"任务项 [{result.detail['item_id']}] 不在该任务类中，未做任何修改。"
        else:
            error = f"任务类 [{args.id}] 不存在，未做任何修改。"
        return _reply(
            success=False, task_class_id=None, error=error, error_code=code, source=source
        )
    if code == "validation_failed":
        issues = [_issue(i) for i in result.issues]
        return _reply(
            success=False,
            task_class_id=result.task_class_id,
            issues=issues,
            validated=True,
            error=f"写后校验未通过（{len(issues)} 项），已回滚，未保存任何"
            "修改。请按 validation.issues 修正后重试。",
            error_code=code,
            source=source,
        )
    if code == OUTCOME_UNKNOWN:
        return _reply(
            success=False,
            error="保存失败：提交请求已发出，但数据库的应答在途中丢失，重新连接也未能核实结果，"
            "无法确定任务类是否已保存（要么全部保存，要么完全没有保存）。请不要直接重试（可能重复"
            "创建），先核实数据库中的任务类再决定。",
            error_code=OUTCOME_UNKNOWN,
            source=source,
        )
    return _reply(
        success=False,
        error="数据库写入失败（无法连接或被数据库拒绝），已回滚，未保存任何修改；请稍后重试。",
        error_code=DB_UNAVAILABLE,
        source=source,
    )


def _upsert_refusal(ctx: ToolContext) -> tuple[str, str] | None:
    """``(error_code, text)`` when upsert_task_class cannot run in this session at all."""
    if ctx.store is None:
        return NO_DATABASE, "未配置数据库，无法保存任务类。"
    if ctx.user_id is None:
        return "no_user", "未指定用户，无法保存任务类。"
    return None


def _db(ctx: ToolContext) -> tuple[ScheduleStore, int]:
    """The store and the user of a call that the refusals above let through (both set)."""
    assert ctx.store is not None and ctx.user_id is not None
    return ctx.store, ctx.user_id


def upsert_preview(ctx: ToolContext, args: UpsertTaskClassArgs) -> str:
    """What the confirm gate shows for upsert_task_class: its arguments, or the refusal (in the
    tool's JSON shape) when the session has no database, so nothing is held for the user."""
    missing = _upsert_refusal(ctx)
    if missing is not None:
        return _reply(success=False, error=missing[1], error_code=missing[0], source=args.source)
    shown = json.dumps(
        args.model_dump(mode="json", exclude_unset=True), ensure_ascii=False, sort_keys=True
    )
    return f"参数：{shown}"


# ---------------------------------------------------------------------------------- commit / reload
# tool-layer-design §6 (Confirm 节点统一处理): the session's change log goes to the database in one
# transaction after the user confirms; a database that changed meanwhile is reported in words and
# the session keeps its state (``reload`` fetches the database's current window).

COMMIT_TOOL = "commit"
RELOAD_TOOL = "reload"

NO_DATABASE = "no_database"
NOT_FROM_DATABASE = "not_from_database"
DB_UNAVAILABLE = "db_unavailable"
# issue 44 item 4: COMMIT was sent and its answer lost, and a check could not settle the outcome
OUTCOME_UNKNOWN = "outcome_unknown"
UNKNOWN_OUTCOME_TEXT = (
    "失败：提交请求已发出，但数据库的应答在途中丢失，重新连接也未能核实结果，无法确定这些修改"
    "是否已写入（要么全部写入，要么完全没有写入，不会只写入一部分）。会话中的修改仍然保留；"
    "请不要直接重试提交，先调用 reload（discard_changes=true）重新加载，检查数据库中的日程后"
    "再决定是否重新调整并提交。"
)
ANSWER_LOST_NOTE = "（数据库对提交的应答在途中丢失，已重新连接核实：修改已全部写入）"
# Every way commit, reload and upsert_task_class fail, with the HTTP status the API answers a
# failed call of them with (the body is the call's result, ``error_code`` included).
STORE_ERRORS: dict[str, int] = {
    NO_DATABASE: 422,  # the session was not opened on a database
    NOT_FROM_DATABASE: 422,  # the session's window was posted, not loaded from the database
    "no_user": 422,  # no database user for this session
    "no_day_mapping": 422,  # the window has no (week, day) mapping to find its rows by
    "unsaved_changes": 409,  # reload without discard_changes while changes are uncommitted
    "stale": 409,  # a row the session started from changed in the database meanwhile
    "conflict": 409,  # a target period is held by another event in the database
    "invalid_changes": 422,  # the change log does not fit the state
    "invalid_window": 422,  # the database's rows do not make a valid window (reload)
    "not_found": 404,  # upsert_task_class: no such task class / item for this user
    "validation_failed": 422,  # upsert_task_class: the written class failed validation
    DB_UNAVAILABLE: 503,  # the database could not be reached or refused the transaction
    OUTCOME_UNKNOWN: 503,  # COMMIT's answer was lost and the database could not be asked again
}


class CommitArgs(Args):
    pass


class ReloadArgs(Args):
    discard_changes: bool = Field(
        default=False,
        description="有未提交的修改时，是否丢弃它们并重新加载（默认 false：拒绝重载）",
    )


def _periods(detail: dict[str, Any]) -> str:
    start, end = detail.get("slot_start"), detail.get("slot_end")
    if start is None:
        return f"第{detail['slot']}节" if "slot" in detail else ""
    return f"第{start}节" if start == end else f"第{start}-{end}节"


def _what_changed(ctx: ToolContext, result: Any) -> str:
    """One Chinese sentence naming what changed in the database (from the commit's detail)."""
    detail = result.detail or {}
    reason = detail.get("reason", "")
    task = ctx.state.task(result.task_id) if ctx.state is not None and result.task_id else None
    who = f"[{task.state_id}]{task.name}" if task is not None else "某个任务"
    day = f"第{detail['day']}天" if "day" in detail else ""
    host = ctx.state.task(detail["host"]) if ctx.state is not None and detail.get("host") else None
    host_name = f"[{host.state_id}]{host.name}" if host is not None else "宿主课程"
    texts = {
        "item_gone": f"{who} 对应的任务项已在数据库中被删除。",
        "item_scheduled": f"{who} 在数据库中已被安排（可能来自另一个会话）。",
        "item_unscheduled": f"{who} 在数据库中已不再是已安排状态。",
        "event_gone": f"{who} 对应的日程已在数据库中被删除。",
        "event_status": f"{who} 在数据库中的状态已变为 {detail.get('status', '?')}。",
        "host_gone": f"{who} 所嵌入的{host_name}已不在数据库中的原位置。",
        "periods_changed": f"{who} 原来占用的{day}{_periods(detail)}在数据库中已被修改。",
        "guest_added": f"{who} 原来占用的{day}{_periods(detail)}在数据库中已嵌入"
        f"「{detail.get('guest', '?')}」，移走它会丢失该嵌入。",
        "period_taken": f"{who} 的目标时段{day}{_periods(detail)}在数据库中已被"
        f"「{detail.get('holder', '?')}」占用。",
        "host_not_free": f"{who} 要嵌入的{host_name}在数据库中{day}的时段已不可嵌入（已移走或已有嵌入）。",
    }
    return texts.get(reason, "数据库中的相关数据已被修改。")


def _counts(result: Any) -> str:
    return (
        f"- 日程事件 schedule_events：新建{result.events_created}个，删除{result.events_deleted}个，"
        f"更新{result.events_updated}个\n"
        f"- 日程节次 schedules：新增{result.rows_inserted}行，删除{result.rows_deleted}行\n"
        f"- 任务项 task_items：更新{result.items_updated}个\n"
        f"- 嵌入 embedded：标记{result.guests_marked}节，清除{result.guests_cleared}节"
    )


def _store_refusal(ctx: ToolContext) -> tuple[str, str] | None:
    """``(error_code, text)`` when this session cannot commit or reload at all."""
    if ctx.store is None:
        return NO_DATABASE, "未配置数据库：本会话不是从数据库加载的，无法提交或重新加载。"
    if ctx.user_id is None:
        return "no_user", "未指定数据库用户，无法提交或重新加载。"
    if not ctx.db_window:
        return NOT_FROM_DATABASE, (
            "本会话的日程是调用方提交的窗口，不是从数据库加载的，与数据库中的日程没有对应关系，"
            "无法提交或重新加载；要写回数据库，请从数据库的窗口新建会话。"
        )
    if ctx.state is None or not ctx.state.window.day_mapping:
        return "no_day_mapping", "当前日程没有周次映射（day_mapping），无法与数据库对应。"
    return None


def _failure_code(result: Any) -> str:
    """The tool's code for a failed commit: the store's, except that any other database error
    (the store's ``db_error``: no connection, a timeout, a lock) means "not written, retry"."""
    code = str(result.error_code or "")
    known = ("stale", "conflict", "invalid_changes", OUTCOME_UNKNOWN)
    return code if code in known else DB_UNAVAILABLE


def _failure(ctx: ToolContext, result: Any, word: str) -> str:
    code = _failure_code(result)
    if code in ("stale", "conflict"):
        return (
            f"{word}失败：数据库在本会话加载之后已被修改。{_what_changed(ctx, result)}"
            "没有写入任何内容，会话中的修改仍然保留；请调用 reload（discard_changes=true）"
            "获取最新日程后重新调整，或撤回与之冲突的修改后再提交。"
        )
    if code == "invalid_changes":
        return f"{word}失败：变更记录与当前日程不一致，没有写入任何内容。"
    if code == OUTCOME_UNKNOWN:
        return f"{word}{UNKNOWN_OUTCOME_TEXT}"
    return f"{word}失败：数据库写入出错，已回滚，没有写入任何内容，会话中的修改仍然保留。"


WINDOW_NOTES = {
    "expand_window": "数据库没有保存规划窗口天数的表，新增的天不会写入；放在新增天上的任务会按"
    "周次映射（day_mapping）写成对应日期的日程节次",
    "relax_constraints": "数据库中的任务类时间窗与禁排节次保持原样（需要长期生效请用 "
    "upsert_task_class 修改任务类）；重新加载后约束恢复",
    "reduce_scope": "移出的任务在数据库中保持未安排",
}


def window_note(ctx: ToolContext) -> str:
    """What commit does with the session's window changes (resolve_negotiation): nothing, said
    item by item; empty without any."""
    changes = ctx.loop.window_changes if ctx.loop is not None else []
    if not changes:
        return ""
    lines = [f"注意：本会话的{len(changes)}项窗口调整只在会话中生效，提交不会写入数据库："]
    for w in changes:
        lines.append(
            f"- #{w.get('seq')} {w.get('summary')}：{WINDOW_NOTES.get(w.get('choice'), '')}"
        )
    return "\n".join(lines)


def _with_window_note(ctx: ToolContext, text: str) -> str:
    note = window_note(ctx)
    return f"{text}\n{note}" if note else text


def commit_preview(ctx: ToolContext, _args: CommitArgs) -> str:
    """What confirming would write; a session that cannot commit at all gets the refusal (so the
    gate holds nothing for the user to confirm)."""
    refusal = _store_refusal(ctx)
    if refusal is not None:
        return refused(f"提交失败：{refusal[1]}", refusal[0])
    if not ctx.changes:  # nothing to write: answered at once, nothing held for the user
        return NothingToConfirm("没有需要提交的修改。")
    return _with_window_note(ctx, _commit_preview(ctx))


def _commit_preview(ctx: ToolContext) -> str:
    assert ctx.state is not None
    tasks = len({c.task_id for c in ctx.changes})
    store, user_id = _db(ctx)
    result = store.preview_commit(user_id, ctx.state, ctx.changes)
    if not result.ok:
        return (
            f"将提交 {len(ctx.changes)} 项修改（涉及 {tasks} 个任务），但按数据库当前内容会失败：\n"
            + _failure(ctx, result, "提交")
        )
    return (
        f"将在一个事务中提交 {len(ctx.changes)} 项修改（涉及 {tasks} 个任务），各表净变化：\n"
        + _counts(result)
    )


def commit_tool(ctx: ToolContext, _args: CommitArgs) -> str:
    refusal = _store_refusal(ctx)
    if refusal is not None:
        return refused(f"提交失败：{refusal[1]}", refusal[0])
    if not ctx.changes:
        return _with_window_note(ctx, "没有需要提交的修改。")
    assert ctx.state is not None
    count = len(ctx.changes)
    store, user_id = _db(ctx)
    result = store.commit(user_id, ctx.state, ctx.changes)
    if not result.ok:
        return refused(_failure(ctx, result, "提交"), _failure_code(result))
    ctx.changes.clear()  # the database now holds them; the next commit starts from here
    checked = ANSWER_LOST_NOTE if result.detail.get("answer_lost") else ""
    return _with_window_note(
        ctx, f"已提交 {count} 项修改到数据库（一个事务）{checked}：\n" + _counts(result)
    )


def reload_tool(ctx: ToolContext, args: ReloadArgs) -> str:
    refusal = _store_refusal(ctx)
    if refusal is not None:
        return refused(f"重新加载失败：{refusal[1]}", refusal[0])
    assert ctx.state is not None
    if ctx.changes and not args.discard_changes:
        return refused(
            f"重新加载失败：本会话有 {len(ctx.changes)} 项未提交的修改，重新加载会丢弃它们。"
            "请先 commit，或确认丢弃后以 discard_changes=true 调用 reload。",
            "unsaved_changes",
        )
    from ...store import StoreError

    old = ctx.state
    try:
        store, user_id = _db(ctx)
        state = store.load_window(user_id, old.window.day_mapping, slots_per_day=old.slots_per_day)
    except StoreError as exc:
        return refused(
            f"重新加载失败：数据库中的日程无法构成有效窗口（{exc}）。会话状态未改变。",
            "invalid_window",
        )
    except Exception as exc:  # the database is unreachable: the session keeps its state
        first = (str(exc).splitlines() or [""])[0]
        log.warning("reload failed: %s: %s", type(exc).__name__, first)
        return refused("重新加载失败：数据库读取出错。会话状态未改变。", DB_UNAVAILABLE)
    dropped = len(ctx.changes)
    ctx.state = dated(state)
    ctx.changes.clear()
    if ctx.loop is not None:  # the database's window: the session's window changes are gone
        ctx.loop.window_changes.clear()
        ctx.loop.set_aside.clear()
    pending = sum(1 for t in state.tasks if t.status == "pending")
    note = f"，丢弃了 {dropped} 项未提交的修改" if dropped else ""
    return (
        f"已从数据库重新加载第1-{state.window.total_days}天的日程{note}：共 {len(state.tasks)} 个任务，"
        f"待安排 {pending} 个。"
    )


STORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        TOOL,
        "write",
        UpsertTaskClassArgs,
        upsert_task_class_tool,
        "创建（id=0）或更新（id>0）任务类并写库；亦收后端格式（mode/start_date/config、items"
        " 的 order）。校验不通过则整体回滚并返回可修复的 validation.issues。"
        "关键字段须先经用户确认。不需要已加载的日程。",
        output="json",
        needs_state=False,
        needs_confirm=True,
        error_reply=error_reply,
        preview=upsert_preview,
    ),
    ToolSpec(
        COMMIT_TOOL,
        "write",
        CommitArgs,
        commit_tool,
        "把本会话的全部修改在一个事务中写回数据库：预览列出各表的净变化；若数据库在加载后被他人"
        "修改，提交失败并说明改了什么，会话修改保留，可 reload 后重新调整。",
        needs_confirm=True,
        preview=commit_preview,
    ),
    ToolSpec(
        RELOAD_TOOL,
        "write",
        ReloadArgs,
        reload_tool,
        "从数据库重新加载本会话窗口的最新日程；有未提交修改时需 discard_changes=true 才会丢弃它们。",
    ),
)
