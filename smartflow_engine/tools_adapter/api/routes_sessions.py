"""Session routes: create (on a posted window, on a window from the database, or empty),
restore, list, call tools, confirm/reject, mode, user requests, state, change log, snapshot."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ...state import ScheduleState
from ...state.model import MAX_DAYS
from ..core.spec import Mode
from ..sessions.session import PREVIEW_CHANGED, CallResult, SessionError, SessionLimitError
from ..sessions.store import SessionStoreUnavailable, db_user
from ..tools.store import COMMIT_TOOL, RELOAD_TOOL, STORE_ERRORS
from ..tools.store import TOOL as UPSERT_TOOL
from .context import Ctx, Principal, Ref
from .errors import CONFLICT, DATABASE, ERRORS, LIMIT, NOT_FOUND, UNAVAILABLE, ApiError
from .models import (
    WHOLE,
    CallOut,
    ChangeOut,
    ChangesOut,
    DbWindow,
    ModeBody,
    RulesOut,
    SessionCreate,
    SessionList,
    SessionOut,
    SessionRestore,
    StateOut,
    TokenBody,
    ToolCall,
    ToolsOut,
    call_out,
    session_out,
)
from .routes_stateless import load_state
from .snapshot import check_snapshot

router = APIRouter(tags=["sessions"])
ONE = {**ERRORS, **NOT_FOUND, **CONFLICT}
# A failed commit, reload or upsert_task_class answers its HTTP status (STORE_ERRORS; each is
# among ONE's) with an error body that is also the call's result: ``error_code``, ``error`` (the
# reply) and every CallOut field, so a client that trusts the status never takes it for a success.
DATABASE_TOOLS = frozenset({COMMIT_TOOL, RELOAD_TOOL, UPSERT_TOOL})


def answer(result: CallResult) -> Any:
    """The call's result; a database tool's failure with its HTTP status (see STORE_ERRORS)."""
    out = call_out(result, CallOut)
    status = STORE_ERRORS.get(result.error_code) if result.is_error else None
    if status is None or result.tool not in DATABASE_TOOLS:
        return out
    return JSONResponse({"error": out.reply, **out.model_dump(mode="json")}, status_code=status)


def database_user(principal: str, requested: int | None) -> int:
    """The database user a request acts for: the token's own (a request may name it, never
    another's)."""
    mine = db_user(principal)
    wanted = requested if requested is not None else mine
    if wanted is None:
        raise ApiError(422, "no_db_user", "this token stands for no database user")
    if wanted != mine:
        raise ApiError(403, "forbidden", f"database user {wanted} is not this token's user")
    return wanted


def _from_database(
    ctx: Any, principal: str, body: SessionCreate, window: DbWindow
) -> tuple[ScheduleState, int]:
    from ...store import StoreError, window_days

    if ctx.database is None:
        raise ApiError(422, "no_database", "this server has no database: post a state instead")
    wanted = database_user(principal, body.db_user_id)
    try:
        days = window_days(
            (window.start.week, window.start.day_of_week), (window.end.week, window.end.day_of_week)
        )
        state = ctx.database.load_window(wanted, days, slots_per_day=window.slots_per_day)
    except StoreError as exc:
        raise ApiError(422, "invalid_window", f"window: {exc}") from None
    return state, wanted


@router.post(
    "/v1/sessions",
    response_model=SessionOut,
    status_code=201,
    responses={**ERRORS, **LIMIT, **DATABASE},
)
def create_session(ctx: Ctx, principal: Principal, body: SessionCreate) -> SessionOut:
    """A new session on the posted ``state``, on a ``window`` loaded from the database (the
    tools ``commit`` and ``reload`` then write and read that user's tables), or on nothing."""
    if body.state is not None and body.window is not None:
        raise ApiError(422, "invalid_request", "give either state or window, not both")
    db_id: int | None = None
    if body.window is not None:
        state: ScheduleState | None
        state, db_id = _from_database(ctx, principal, body, body.window)
    else:
        state = load_state(body.state) if body.state is not None else None
    try:
        session = ctx.sessions.create(
            principal,
            state,
            mode=body.mode,
            enabled_tools=body.enable_tools,
            db_user_id=db_id,
            frozen_days=body.frozen_days,
            day_labels=body.day_labels,
            db_window=body.window is not None,  # a posted window is tied to no rows
        )
    except SessionLimitError as exc:
        raise ApiError(429, "too_many_sessions", str(exc)) from None
    except SessionStoreUnavailable as exc:
        raise ApiError(503, "session_store_unavailable", str(exc)) from None
    except SessionError as exc:
        raise ApiError(422, "invalid_request", str(exc)) from None
    return session_out(session)


@router.post(
    "/v1/restore",
    response_model=SessionOut,
    status_code=201,
    responses={**ERRORS, **LIMIT, **UNAVAILABLE},
)
def restore_session(ctx: Ctx, principal: Principal, body: SessionRestore) -> SessionOut:
    """A new session from a snapshot (``GET .../snapshot``), checked field by field first."""
    problem = check_snapshot(body.snapshot)
    if problem is not None:
        raise ApiError(422, "invalid_snapshot", problem)
    try:
        session = ctx.sessions.restore(principal, body.snapshot)
    except SessionLimitError as exc:
        raise ApiError(429, "too_many_sessions", str(exc)) from None
    except SessionStoreUnavailable as exc:
        raise ApiError(503, "session_store_unavailable", str(exc)) from None
    except SessionError as exc:
        raise ApiError(422, "invalid_snapshot", str(exc)) from None
    except RecursionError:
        raise ApiError(422, "invalid_snapshot", "snapshot nested too deeply") from None
    return session_out(session)


@router.get("/v1/sessions", response_model=SessionList, responses={**ERRORS, **UNAVAILABLE})
def list_sessions(ctx: Ctx, principal: Principal) -> SessionList:
    return SessionList(sessions=[session_out(s) for s in ctx.sessions.sessions(principal)])


@router.get("/v1/sessions/{session_id}", response_model=SessionOut, responses=ONE)
def get_session_info(ctx: Ctx, ref: Ref) -> SessionOut:
    with ctx.use(ref.principal, ref.session_id, read_only=True) as session:
        return session_out(session)


@router.delete("/v1/sessions/{session_id}", status_code=204, responses=ONE)
def delete_session(ctx: Ctx, ref: Ref) -> Response:
    if not ctx.sessions.delete(ref.principal, ref.session_id):
        raise ApiError(404, "session_not_found", f"no session {ref.session_id}")
    return Response(status_code=204)


@router.put("/v1/sessions/{session_id}/mode", response_model=SessionOut, responses=ONE)
def set_mode(ctx: Ctx, ref: Ref, body: ModeBody) -> SessionOut:
    with ctx.use(ref.principal, ref.session_id) as session:
        session.set_mode(body.mode)
        return session_out(session)


class RequestBody(BaseModel):
    """A new user request; without ``mode`` the window decides (all study tasks pending:
    first_full, else local_adjust); without ``frozen_days`` the session's freeze stays."""

    model_config = ConfigDict(extra="forbid")
    mode: Mode | None = None
    frozen_days: Annotated[int, Field(strict=True, ge=0, le=MAX_DAYS), WHOLE] | None = Field(
        default=None,
        description="本次请求冻结第1天到第N天（0 解除冻结；不填则沿用会话当前的冻结设置）",
    )
    key: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="宿主自己的请求编号（如用户消息 id）；与当前请求相同则不开始新请求（重试安全）",
    )
    existing_fixed: StrictBool | None = Field(
        default=None,
        description="已安排（existing）的任务作为事实不移动，只调整已预排和待安排任务"
        "（不填则沿用会话当前设置；默认关闭）",
    )


class RequestOut(BaseModel):
    """The session's current user request (issue 27)."""

    request: int
    mode: Mode
    frozen_days: int
    existing_fixed: bool
    rounds: int
    rounds_left: int
    closed: bool
    close_reason: str | None


@router.post("/v1/sessions/{session_id}/requests", response_model=RequestOut, responses=ONE)
def begin_request(ctx: Ctx, ref: Ref, body: RequestBody | None = None) -> RequestOut:
    """The user asked again: start the next request (its rounds count from zero, no close
    holds), in ``mode`` and with ``frozen_days`` when given. The host calls this once per user
    message, before the model's first tool call; with the message's ``key`` a retried POST
    starts nothing new."""
    with ctx.use(ref.principal, ref.session_id) as session:
        try:
            info = session.begin_request(
                body.mode if body is not None else None,
                body.frozen_days if body is not None else None,
                key=body.key if body is not None else None,
                existing_fixed=body.existing_fixed if body is not None else None,
            )
        except SessionError as exc:
            raise ApiError(422, "invalid_request", str(exc)) from None
    return RequestOut.model_validate(info)


@router.get("/v1/sessions/{session_id}/requests/current", response_model=RequestOut, responses=ONE)
def current_request(ctx: Ctx, ref: Ref) -> RequestOut:
    """The current request: its mode, rounds used and left, and whether it is closed."""
    with ctx.use(ref.principal, ref.session_id, read_only=True) as session:
        return RequestOut.model_validate(session.request_info())


@router.get("/v1/sessions/{session_id}/tools", response_model=ToolsOut, responses=ONE)
def session_tools(
    ctx: Ctx,
    ref: Ref,
    fmt: Annotated[Literal["openai", "anthropic", "mcp"], Query()] = "openai",
) -> ToolsOut:
    with ctx.use(ref.principal, ref.session_id, read_only=True) as session:
        return ToolsOut(mode=session.mode, format=fmt, tools=session.schemas(fmt))


@router.get("/v1/sessions/{session_id}/prompt", response_model=RulesOut, responses=ONE)
def session_rules(ctx: Ctx, ref: Ref) -> RulesOut:
    with ctx.use(ref.principal, ref.session_id, read_only=True) as session:
        return RulesOut(mode=session.mode, rules=session.rules())


@router.post("/v1/sessions/{session_id}/calls", response_model=CallOut, responses=ONE)
def session_call(ctx: Ctx, ref: Ref, body: ToolCall) -> Any:
    """Run one tool call of the model; a refusal is a 200 reply with ``status="error"``, except
    that a failed commit, reload or upsert_task_class also carries its HTTP status (409 stale /
    conflict / unsaved changes, 503 database unavailable, 422 no database, ...)."""
    with ctx.use(ref.principal, ref.session_id, read_only=ctx.reads_only(body.tool)) as session:
        result = ctx.invoke(session, body.tool, body.args)
    return answer(result)


def _token_result(result: CallResult) -> Any:
    if result.error_code == "unknown_token":
        raise ApiError(404, "unknown_token", result.reply)
    if result.error_code == PREVIEW_CHANGED:  # nothing ran: the session changed since
        out = call_out(result, CallOut)
        return JSONResponse({"error": out.reply, **out.model_dump(mode="json")}, status_code=409)
    return answer(result)


@router.post("/v1/sessions/{session_id}/confirm", response_model=CallOut, responses=ONE)
def confirm(ctx: Ctx, ref: Ref, body: TokenBody) -> Any:
    """The user confirmed: run the held call if the session still is what its preview showed
    (409 ``preview_changed`` otherwise: nothing ran; preview again). The call's outcome is the
    answer, whatever else writes the session meanwhile (a failed commit or upsert_task_class
    answers its HTTP status, see ``/calls``)."""
    result = ctx.effect(ref.principal, ref.session_id, lambda session: session.confirm(body.token))
    return _token_result(result)


@router.post("/v1/sessions/{session_id}/reject", response_model=CallOut, responses=ONE)
def reject(ctx: Ctx, ref: Ref, body: TokenBody) -> Any:
    """The user declined: drop the held call, nothing is written."""
    with ctx.use(ref.principal, ref.session_id) as session:
        result = session.reject(body.token)
    return _token_result(result)


@router.get("/v1/sessions/{session_id}/state", response_model=StateOut, responses=ONE)
def session_state(ctx: Ctx, ref: Ref) -> StateOut:
    with ctx.use(ref.principal, ref.session_id, read_only=True) as session:
        state = session.state
        return StateOut(state=state.to_dict() if state is not None else None)


@router.get("/v1/sessions/{session_id}/changes", response_model=ChangesOut, responses=ONE)
def session_changes(ctx: Ctx, ref: Ref) -> ChangesOut:
    with ctx.use(ref.principal, ref.session_id, read_only=True) as session:
        return ChangesOut(
            changes=[ChangeOut.model_validate(c.to_dict()) for c in session.toolbox.changes]
        )


@router.get("/v1/sessions/{session_id}/snapshot", response_model=dict[str, Any], responses=ONE)
def session_snapshot(ctx: Ctx, ref: Ref) -> dict[str, Any]:
    with ctx.use(ref.principal, ref.session_id, read_only=True) as session:
        return session.snapshot()
