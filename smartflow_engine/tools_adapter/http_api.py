"""HTTP API (FastAPI) for backends: stateless tool calls on a posted state, and sessions.

Every ``/v1`` endpoint needs ``Authorization: Bearer <token>``; the token maps to a user id and a
user reaching another user's session gets 404. Errors are typed JSON bodies
``{"error_code": ..., "error": ...}`` (401, 404, 413, 422, 429); a tool's own refusal is a normal
200 reply with ``status="error"`` that the backend hands to the model. Request size, the number of
sessions and every solver time limit are capped by the server.

Build the app with :func:`create_app`; run it with :func:`serve` (``smartflow serve``), which binds
127.0.0.1 unless told otherwise.
"""


import hmac
import logging
import os
import secrets
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..state import ScheduleState, StateError
from . import registry
from .analysis_tools import ANALYSIS_TOOLS
from .prompts import prompt_rules
from .schemas import FORMATS, tool_schemas
from .session import CallResult, Session, SessionError, SessionLimitError, SessionStore
from .spec import Mode, ToolSpec

log = logging.getLogger(__name__)

TOKENS_ENV = "SMARTFLOW_API_TOKENS"  # "token1:user1,token2:user2"
DEFAULT_MAX_BODY_BYTES = 2_000_000

FEASIBILITY_TOOL = "check_feasibility"
PROPOSAL_TOOL = "propose_placement"

SessionId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
ToolName = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[a-z_]+$")]


# ---------------------------------------------------------------------------------- errors
class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class ErrorBody(BaseModel):
    error_code: str
    error: str


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "malformed JSON body"},
    401: {"model": ErrorBody, "description": "missing or unknown bearer token"},
    413: {"model": ErrorBody, "description": "request body too large"},
    422: {"model": ErrorBody, "description": "invalid request (body, parameters or state)"},
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "unknown session, tool or token"},
}
_LIMIT: dict[int | str, dict[str, Any]] = {
    429: {"model": ErrorBody, "description": "session limit reached"},
}

_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                 405: "method_not_allowed", 413: "request_too_large", 415: "unsupported_media_type",
                 422: "invalid_request", 429: "too_many_sessions"}


def _error(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error_code": code, "error": message}, status_code=status, headers=headers)


# ---------------------------------------------------------------------------------- bodies
class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StateCall(_Body):
    """A stateless call: the state to work on and the tool's arguments."""

    state: dict[str, Any] = Field(description="规划窗口（规格 §3.1 的 JSON）")
    args: dict[str, Any] = Field(default_factory=dict, description="工具参数")


class SessionCreate(_Body):
    state: dict[str, Any] | None = Field(default=None, description="规划窗口；null 表示未加载日程")
    mode: Mode = Mode.FIRST_FULL
    enable_tools: list[Annotated[str, Field(max_length=64)]] = Field(
        default_factory=list, max_length=32, description="在当前模式之外额外开放的工具（如被隐藏的工具）")


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
    status_before: str
    status_after: str
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
        default=None, description="写工具调用后的状态（有变更时返回）")


class PendingOut(BaseModel):
    token: str
    tool: str
    args: dict[str, Any]
    preview: str


class SessionOut(BaseModel):
    session_id: str
    mode: Mode
    has_state: bool
    tools: list[str]
    enabled_tools: list[str]
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
    status: str
    version: str
    tools: int


# ---------------------------------------------------------------------------------- helpers
def _call_out(result: CallResult, cls: type[CallOut] = CallOut, **extra: Any) -> Any:
    return cls(
        tool=result.tool, output=result.output, status=result.status, is_error=result.is_error,
        error_code=result.error_code, reply=result.reply, data=result.data,
        confirm_token=result.confirm_token,
        changes=[ChangeOut.model_validate(c.to_dict()) for c in result.changes], **extra,
    )


def _session_out(session: Session) -> SessionOut:
    with session.lock:
        return SessionOut(
            session_id=session.session_id, mode=session.mode, has_state=session.state is not None,
            tools=session.tool_names(), enabled_tools=list(session.enabled_tools),
            pending=[PendingOut(token=p.token, tool=p.tool, args=p.args, preview=p.preview)
                     for p in session.pending()],
            change_count=len(session.toolbox.changes),
        )


def _load_state(data: dict[str, Any]) -> ScheduleState:
    try:
        return ScheduleState.from_json(data)
    except StateError as exc:
        raise ApiError(422, "invalid_state", f"state: {exc}") from None
    except RecursionError:
        raise ApiError(422, "invalid_state", "state: nested too deeply") from None


def parse_tokens(text: str) -> dict[str, str]:
    """``"tok1:alice,tok2:bob"`` → ``{"tok1": "alice", "tok2": "bob"}`` (a bare token maps to
    user ``default``)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        token, _, user = part.partition(":")
        out[token.strip()] = user.strip() or "default"
    return out


class _BodyLimit:
    """Refuse request bodies larger than ``limit`` bytes with a typed 413, before parsing."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_large = int(value) > self.limit
                except ValueError:
                    too_large = False
                if too_large:
                    await self._refuse(scope, receive, send)
                    return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = _error(413, "request_too_large",
                          f"request body exceeds {self.limit} bytes")
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass


def _allowed_methods(request: Request) -> list[str]:
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


# ---------------------------------------------------------------------------------- app
def create_app(
    tokens: Mapping[str, str] | None = None,
    *,
    store: SessionStore | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_time_limit_s: float = 10.0,
    num_workers: int = 1,
    max_sessions_per_user: int = 32,
    max_sessions: int = 1024,
    idle_ttl_s: float | None = 6 * 3600.0,
    db: Any = None,
    specs: Sequence[ToolSpec] | None = None,
) -> FastAPI:
    """The FastAPI application.

    Parameters
    ----------
    tokens
        Bearer token → user id. ``None`` reads :data:`TOKENS_ENV` (``"tok:user,..."``); an empty
        mapping refuses every ``/v1`` request.
    store
        The session store (default: a new in-memory :class:`SessionStore` with the caps below).
    max_body_bytes
        Larger request bodies get 413.
    max_time_limit_s, num_workers
        Caps on every solver call, whatever a request asks for.
    max_sessions_per_user, max_sessions, idle_ttl_s
        Session caps (429 beyond them) and idle expiry.
    db
        A ``smartflow_engine.store`` backend for tools that write the database (sessions of a
        user whose id is numeric act as that database user).
    specs
        The registry table (default :data:`registry.TOOLS`), for the stateless routes and the
        default store's sessions.
    """
    if tokens is None:
        tokens = parse_tokens(os.environ.get(TOKENS_ENV, ""))
    token_items = [(t.encode(), u) for t, u in tokens.items() if t]
    table = {spec.name: spec for spec in (specs or registry.TOOLS)}
    if store is None:
        store = SessionStore(max_sessions_per_user=max_sessions_per_user,
                             max_sessions=max_sessions, idle_ttl_s=idle_ttl_s,
                             session_kwargs={"max_time_limit_s": max_time_limit_s,
                                             "num_workers": num_workers, "store": db,
                                             "specs": list(table.values())})
    sessions = store

    app = FastAPI(
        title="smartflow-engine",
        version=__version__,
        description="Scheduling engine tools for LLM agents: stateless calls and sessions.",
    )
    app.state.store = sessions
    app.add_middleware(_BodyLimit, limit=max_body_bytes)

    # ------------------------------------------------------------ error handlers
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        parts = []
        for err in errors[:3]:
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{loc}: {err.get('msg', '')}" if loc else str(err.get("msg", "")))
        return _error(422, "invalid_request", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "http_error")
        response = _error(exc.status_code, code, str(exc.detail))
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:  # Starlette lists one route's methods; list every route's
            response.headers["Allow"] = ", ".join(_allowed_methods(request))
        return response

    @app.exception_handler(Exception)
    async def _bug(_request: Request, exc: Exception) -> JSONResponse:  # pragma: no cover
        log.exception("unhandled error")
        return _error(500, "internal_error", f"internal error ({type(exc).__name__})")

    # ------------------------------------------------------------ auth
    bearer = HTTPBearer(auto_error=False)

    # Dependencies are async (they never block): a sync one costs a threadpool hop per request.
    async def current_user(
        creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> str:
        if creds is None or creds.scheme.lower() != "bearer":
            raise ApiError(401, "unauthorized", "missing bearer token")
        given = creds.credentials.encode()
        user = None
        for token, uid in token_items:  # compare every token: no early exit to time
            if hmac.compare_digest(token, given):
                user = uid
        if user is None:
            raise ApiError(401, "unauthorized", "unknown bearer token")
        return user

    User = Annotated[str, Depends(current_user)]

    async def get_session(user: User, session_id: SessionId) -> Session:
        session = sessions.get(user, session_id)
        if session is None:
            raise ApiError(404, "session_not_found", f"no session {session_id}")
        return session

    SessionDep = Annotated[Session, Depends(get_session)]

    def stateless(name: str, body: StateCall) -> StatelessCallOut:
        spec = table.get(name)
        if spec is None:
            raise ApiError(404, "unknown_tool", f"unknown tool {name}")
        if spec.needs_confirm:
            raise ApiError(422, "needs_session",
                           f"{name} needs confirmation: call it inside a session")
        state = _load_state(body.state) if spec.needs_state else None
        # a hidden tool (offered in no mode) stays hidden here too
        session = Session(state, specs=[spec], enabled_tools=[name] if spec.modes else [],
                          max_time_limit_s=max_time_limit_s, num_workers=num_workers)
        result = session.invoke(name, body.args)
        after = session.state.to_dict() if result.changes and session.state is not None else None
        return _call_out(result, StatelessCallOut, state=after)

    # ------------------------------------------------------------ metadata
    @app.get("/health", response_model=HealthOut, tags=["meta"])
    def health() -> HealthOut:
        return HealthOut(status="ok", version=__version__, tools=len(table))

    @app.get("/v1/tools", response_model=ToolsOut, responses=_ERRORS, tags=["meta"])
    def list_tools(
        _user: User,
        fmt: Annotated[Literal["openai", "anthropic", "mcp"], Query()] = "openai",
        mode: Annotated[Mode | None, Query()] = None,
    ) -> ToolsOut:
        assert fmt in FORMATS
        return ToolsOut(mode=mode, format=fmt,
                        tools=tool_schemas(fmt, mode, specs=list(table.values())))

    @app.get("/v1/prompts/{mode}", response_model=RulesOut, responses=_ERRORS, tags=["meta"])
    def get_rules(_user: User, mode: Mode) -> RulesOut:
        return RulesOut(mode=mode, rules=prompt_rules(mode))

    # ------------------------------------------------------------ stateless
    @app.post("/v1/feasibility", response_model=StatelessCallOut,
              responses={**_ERRORS, **_NOT_FOUND}, tags=["stateless"])
    def feasibility(_user: User, body: StateCall) -> StatelessCallOut:
        """Exact feasibility of the posted window (the ``check_feasibility`` tool)."""
        return stateless(FEASIBILITY_TOOL, body)

    @app.post("/v1/proposal", response_model=StatelessCallOut,
              responses={**_ERRORS, **_NOT_FOUND}, tags=["stateless"])
    def proposal(_user: User, body: StateCall) -> StatelessCallOut:
        """A rough placement proposal for the posted window (the ``propose_placement`` tool)."""
        return stateless(PROPOSAL_TOOL, body)

    analyzers = {spec.name for spec in ANALYSIS_TOOLS if spec.name in table}

    @app.post("/v1/analyze/{name}", response_model=StatelessCallOut,
              responses={**_ERRORS, **_NOT_FOUND}, tags=["stateless"])
    def analyze(_user: User, name: ToolName, body: StateCall) -> StatelessCallOut:
        """Any analyzer (``analyze_load``, ..., ``analyze_health``) on the posted window."""
        if name not in analyzers:
            raise ApiError(404, "unknown_tool", f"unknown analyzer {name}")
        return stateless(name, body)

    @app.post("/v1/tools/{name}/call", response_model=StatelessCallOut,
              responses={**_ERRORS, **_NOT_FOUND}, tags=["stateless"])
    def call_stateless(_user: User, name: ToolName, body: StateCall) -> StatelessCallOut:
        """Any registered tool on the posted window; a write returns the state after it."""
        return stateless(name, body)

    # ------------------------------------------------------------ sessions
    @app.post("/v1/sessions", response_model=SessionOut, status_code=201,
              responses={**_ERRORS, **_LIMIT}, tags=["sessions"])
    def create_session(user: User, body: SessionCreate) -> SessionOut:
        state = _load_state(body.state) if body.state is not None else None
        try:
            session = sessions.create(user, state, mode=body.mode, enabled_tools=body.enable_tools)
        except SessionLimitError as exc:
            raise ApiError(429, "too_many_sessions", str(exc)) from None
        except SessionError as exc:
            raise ApiError(422, "invalid_request", str(exc)) from None
        return _session_out(session)

    @app.post("/v1/restore", response_model=SessionOut, status_code=201,
              responses={**_ERRORS, **_LIMIT}, tags=["sessions"])
    def restore_session(user: User, body: SessionRestore) -> SessionOut:
        try:
            session = sessions.restore(user, body.snapshot)
        except SessionLimitError as exc:
            raise ApiError(429, "too_many_sessions", str(exc)) from None
        except SessionError as exc:
            raise ApiError(422, "invalid_snapshot", str(exc)) from None
        except RecursionError:
            raise ApiError(422, "invalid_snapshot", "snapshot nested too deeply") from None
        return _session_out(session)

    @app.get("/v1/sessions", response_model=SessionList, responses=_ERRORS, tags=["sessions"])
    def list_sessions(user: User) -> SessionList:
        return SessionList(sessions=[_session_out(s) for s in sessions.sessions(user)])

    @app.get("/v1/sessions/{session_id}", response_model=SessionOut,
             responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def get_session_info(session: SessionDep) -> SessionOut:
        return _session_out(session)

    @app.delete("/v1/sessions/{session_id}", status_code=204,
                responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def delete_session(user: User, session: SessionDep) -> Response:
        sessions.delete(user, session.session_id)
        return Response(status_code=204)

    @app.put("/v1/sessions/{session_id}/mode", response_model=SessionOut,
             responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def set_mode(session: SessionDep, body: ModeBody) -> SessionOut:
        session.set_mode(body.mode)
        return _session_out(session)

    @app.get("/v1/sessions/{session_id}/tools", response_model=ToolsOut,
             responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def session_tools(
        session: SessionDep,
        fmt: Annotated[Literal["openai", "anthropic", "mcp"], Query()] = "openai",
    ) -> ToolsOut:
        with session.lock:
            return ToolsOut(mode=session.mode, format=fmt, tools=session.schemas(fmt))

    @app.get("/v1/sessions/{session_id}/prompt", response_model=RulesOut,
             responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def session_rules(session: SessionDep) -> RulesOut:
        with session.lock:
            return RulesOut(mode=session.mode, rules=session.rules())

    @app.post("/v1/sessions/{session_id}/calls", response_model=CallOut,
              responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def session_call(session: SessionDep, body: ToolCall) -> CallOut:
        """Run one tool call of the model; a refusal is a 200 reply with ``status="error"``."""
        return _call_out(session.invoke(body.tool, body.args))

    def _token_result(result: CallResult) -> CallOut:
        if result.error_code == "unknown_token":
            raise ApiError(404, "unknown_token", result.reply)
        return _call_out(result)

    @app.post("/v1/sessions/{session_id}/confirm", response_model=CallOut,
              responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def confirm(session: SessionDep, body: TokenBody) -> CallOut:
        """The user confirmed: run the held call."""
        return _token_result(session.confirm(body.token))

    @app.post("/v1/sessions/{session_id}/reject", response_model=CallOut,
              responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def reject(session: SessionDep, body: TokenBody) -> CallOut:
        """The user declined: drop the held call, nothing is written."""
        return _token_result(session.reject(body.token))

    @app.get("/v1/sessions/{session_id}/state", response_model=StateOut,
             responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def session_state(session: SessionDep) -> StateOut:
        with session.lock:
            state = session.state
            return StateOut(state=state.to_dict() if state is not None else None)

    @app.get("/v1/sessions/{session_id}/changes", response_model=ChangesOut,
             responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def session_changes(session: SessionDep) -> ChangesOut:
        with session.lock:
            return ChangesOut(changes=[ChangeOut.model_validate(c.to_dict())
                                       for c in session.toolbox.changes])

    @app.get("/v1/sessions/{session_id}/snapshot", response_model=dict[str, Any],
             responses={**_ERRORS, **_NOT_FOUND}, tags=["sessions"])
    def session_snapshot(session: SessionDep) -> dict[str, Any]:
        return session.snapshot()

    return app


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    tokens: Mapping[str, str] | None = None,
    log_level: str = "info",
    **app_kwargs: Any,
) -> None:
    """Run the API with uvicorn (``smartflow serve``); binds 127.0.0.1 by default.

    Without ``tokens`` and without :data:`TOKENS_ENV`, one random token for user ``local`` is
    generated and printed to stderr, so a local server is never open to everyone.
    """
    import uvicorn

    if tokens is None:
        tokens = parse_tokens(os.environ.get(TOKENS_ENV, ""))
    if not tokens:
        token = secrets.token_urlsafe(24)
        tokens = {token: "local"}
        print(f"smartflow serve: {TOKENS_ENV} not set; bearer token for user 'local': {token}",
              file=sys.stderr)
    app = create_app(tokens, **app_kwargs)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
