"""Request and response bodies of the HTTP API (pydantic), and their conversions from sessions."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from fastapi import Path
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ...state.model import MAX_DAYS, Status
from ..core.spec import Mode
from ..sessions.session import CallResult, Session
from .request_log import note_result

SessionId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
ToolName = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[a-z_]+$")]


def _whole_number(value: Any) -> Any:
    """JSON Schema's ``integer`` is any number with a zero fraction (``7.0`` is 7): take it as
    the integer; everything else (``7.5``, ``"7"``, ``true``) is left to the strict check."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Last in an integer field's ``Annotated`` (after its strict ``Field`` with the bounds, which then
# still publish as ``minimum``/``maximum``): the field admits what ``"type": "integer"`` does.
WHOLE = BeforeValidator(_whole_number)


class ErrorBody(BaseModel):
    error_code: str
    error: str


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StateCall(_Body):
    """A stateless call: the state to work on and the tool's arguments."""

    state: dict[str, Any] = Field(description="规划窗口（规格 §3.1 的 JSON）")
    args: dict[str, Any] = Field(default_factory=dict, description="工具参数")


class WeekDay(_Body):
    week: Annotated[int, Field(strict=True, ge=1, le=200), WHOLE] = Field(description="教学周")
    day_of_week: Annotated[int, Field(strict=True, ge=1, le=7), WHOLE] = Field(
        description="星期几，1=周一 … 7=周日"
    )


class DbWindow(_Body):
    """A planning window in the database: consecutive days from ``start`` to ``end``."""

    start: WeekDay
    end: WeekDay
    slots_per_day: Annotated[int, Field(strict=True, ge=1, le=24), WHOLE] = 12


class SessionCreate(_Body):
    """A new session: on a posted ``state``, on a window loaded from the database
    (``window``, for ``db_user_id`` — the database user the bearer token stands for), or on
    nothing (a chat without a schedule). ``state`` and ``window`` exclude each other, and the
    published schema says so."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "not": {
                "required": ["state", "window"],
                "properties": {"state": {"type": "object"}, "window": {"type": "object"}},
            }
        },
    )

    state: dict[str, Any] | None = Field(default=None, description="规划窗口；null 表示未加载日程")
    window: DbWindow | None = Field(
        default=None, description="从数据库加载的窗口（与 state 二选一）"
    )
    db_user_id: Annotated[int, Field(strict=True, ge=1), WHOLE] | None = Field(
        default=None,
        description="数据库用户（默认为令牌对应的用户；不可是他人）",
    )
    mode: Mode = Mode.FIRST_FULL
    enable_tools: list[Annotated[str, Field(max_length=64)]] = Field(
        default_factory=list,
        max_length=32,
        description="在当前模式之外额外开放的工具（如被隐藏的工具）",
    )
    frozen_days: Annotated[int, Field(strict=True, ge=0, le=MAX_DAYS), WHOLE] = Field(
        default=0,
        description="冻结第1天到第N天（0 表示不冻结）：这些天上的任务不移动，也不放入新任务",
    )
    day_labels: Literal["index", "weekday"] | None = Field(
        default=None,
        description="文本回复中天的写法：index（第6天）或 weekday（第6天(星期六)）；"
        "不传为服务器设置（SMARTFLOW_DAY_LABELS）",
    )


class SessionRestore(_Body):
    snapshot: dict[str, Any]


class ToolCall(_Body):
    tool: str = Field(min_length=1, max_length=64)
    args: dict[str, Any] = Field(default_factory=dict)


class TokenBody(_Body):
    token: str = Field(min_length=1, max_length=64)


class ModeBody(_Body):
    mode: Mode


class ChangeOut(BaseModel):
    op: str
    task_id: int
    status_before: Status
    status_after: Status
    block_before: dict[str, int] | None
    block_after: dict[str, int] | None
    embed_host_before: int | None
    embed_host_after: int | None


class CallOut(BaseModel):
    """One tool call: ``reply`` is exactly what the model should read."""

    tool: str
    output: Literal["text", "json"]
    status: Literal["ok", "error", "pending_confirm", "rejected"]
    is_error: bool
    error_code: str
    reply: str
    data: Any = Field(default=None, description="JSON 工具的解析结果（文本工具为 null）")
    confirm_token: str | None = None
    changes: list[ChangeOut]


class StatelessCallOut(CallOut):
    state: dict[str, Any] | None = Field(
        default=None, description="写工具调用后的状态（有变更时返回）"
    )


class PendingOut(BaseModel):
    token: str
    tool: str
    args: dict[str, Any]
    preview: str


class SessionOut(BaseModel):
    session_id: str
    mode: Mode
    has_state: bool
    db_user_id: int | None = None
    tools: list[str]
    enabled_tools: list[str]
    frozen_days: int = 0
    day_labels: Literal["index", "weekday"] = "index"
    pending: list[PendingOut]
    change_count: int


class SessionList(BaseModel):
    sessions: list[SessionOut]


class StateOut(BaseModel):
    state: dict[str, Any] | None


class ChangesOut(BaseModel):
    changes: list[ChangeOut]


class ToolsOut(BaseModel):
    mode: Mode | None
    format: str
    tools: list[dict[str, Any]]


class RulesOut(BaseModel):
    mode: Mode
    rules: str


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    tools: int
    solver_pool: str = Field(
        default="inline",
        description="inline (no worker processes), ok, or 'cannot start: <why>' (then 503)",
    )


_Out = TypeVar("_Out", bound=CallOut)


def call_out(result: CallResult, cls: type[_Out] = CallOut, **extra: Any) -> _Out:  # type: ignore[assignment]
    note_result(result)  # the access log's and the metrics' view of the call
    return cls(
        tool=result.tool,
        output=result.output,
        status=result.status,
        is_error=result.is_error,
        error_code=result.error_code,
        reply=result.reply,
        data=result.data,
        confirm_token=result.confirm_token,
        changes=[ChangeOut.model_validate(c.to_dict()) for c in result.changes],
        **extra,
    )


def session_out(session: Session) -> SessionOut:
    with session.lock:
        return SessionOut(
            session_id=session.session_id,
            mode=session.mode,
            has_state=session.state is not None,
            db_user_id=session.toolbox.ctx.user_id,
            tools=session.tool_names(),
            enabled_tools=list(session.enabled_tools),
            frozen_days=session.frozen_days,
            day_labels=session.day_labels,
            pending=[
                PendingOut(token=p.token, tool=p.tool, args=p.args, preview=p.preview)
                for p in session.pending()
            ],
            change_count=len(session.toolbox.changes),
        )
