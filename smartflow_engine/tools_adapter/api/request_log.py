"""What each HTTP request did: a request id, one JSON access-log line, and the metrics.

:class:`RequestObserver` is a plain ASGI middleware (no Starlette ``BaseHTTPMiddleware``: that
one costs a task and a queue per request). For every HTTP request it

- takes the client's ``X-Request-ID`` when it is a short token, or makes one, and echoes it in
  the response's ``X-Request-ID`` header;
- keeps a :class:`RequestInfo` in a context variable that the routes fill in as they learn
  things (:func:`note_session` from the session access, :func:`note_result` from the tool
  result), so the line needs no second parse of the body;
- at the end, writes one JSON line to the ``smartflow.access`` logger (when the access log is
  on) and updates the :class:`~.metrics.Metrics`.

The line's fields: ``ts``, ``request_id``, ``method``, ``path``, ``http_status``, ``user`` (the
principal of the bearer token), ``session``, ``tool``, ``mode``, ``status`` (the tool's status:
ok / error / pending_confirm / rejected, or ``http_error`` for a refused request),
``error_code`` and ``duration_ms``. A bearer token never appears in it; neither does a query
string (a signed view link's signature stays out of the log).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from ..core.pipeline import Status
    from ..sessions.session import CallResult, Session
    from .metrics import Metrics

ACCESS_LOG_ENV = "SMARTFLOW_ACCESS_LOG"  # "1" / "true" / "yes": one JSON line per request
REQUEST_ID_HEADER = "X-Request-ID"
access_log = logging.getLogger("smartflow.access")

_GIVEN_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")  # a client's id is echoed only if this tame
_SESSION_PATH = re.compile(r"^/(?:v1/sessions|view|mcp)/([A-Za-z0-9_-]{1,64})(?:/|$)")
_TOOL_PATH = re.compile(r"^/v1/(?:tools/([a-z_]{1,64})/call|analyze/([a-z_]{1,64}))$")
_FIXED_TOOL = {"/v1/feasibility": "check_feasibility", "/v1/proposal": "propose_placement"}
_encode = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one per line


@dataclass
class RequestInfo:
    """What is known about the request being served (filled in while it runs)."""

    request_id: str
    started: float
    user: str | None = None
    session: str | None = None
    tool: str | None = None
    mode: str | None = None
    status: Status | Literal["http_error"] | None = None
    error_code: str = ""
    tool_seconds: float | None = None


current: ContextVar[RequestInfo | None] = ContextVar("smartflow_request", default=None)


def note_principal(principal: str) -> None:
    info = current.get()
    if info is not None:
        info.user = principal


def note_session(session: Session) -> None:
    """The request works on ``session`` (its id and mode go into the line)."""
    info = current.get()
    if info is not None:
        info.session = session.session_id
        info.mode = session.mode.value


def note_result(result: CallResult) -> None:
    """The request ran a tool call with this result."""
    info = current.get()
    if info is not None:
        info.tool = result.tool
        info.status = result.status
        info.error_code = result.error_code
        info.tool_seconds = time.perf_counter() - info.started


class RequestObserver:
    """The ASGI middleware (see the module's docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: Metrics | None,
        log_requests: bool,
        principal: Any = None,
    ) -> None:
        self.app, self.metrics, self.log_requests = app, metrics, log_requests
        self.principal = principal  # token -> principal (the app's ApiContext.principal)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.metrics is None and not self.log_requests):
            await self.app(scope, receive, send)
            return
        request_id = _given_id(scope) or secrets.token_hex(8)
        info = RequestInfo(request_id, time.perf_counter())
        token = current.set(info)
        http_status = 500
        error_body: list[bytes] = []
        header = (REQUEST_ID_HEADER.lower().encode(), request_id.encode())

        async def send_with_id(message: Message) -> None:
            nonlocal http_status
            if message["type"] == "http.response.start":
                http_status = message["status"]
                message["headers"] = [*message.get("headers", []), header]
            elif message["type"] == "http.response.body" and http_status >= 400:
                error_body.append(message.get("body", b""))  # a typed error body: small
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            current.reset(token)
            self._finish(scope, info, http_status, b"".join(error_body))

    def _finish(self, scope: Scope, info: RequestInfo, http_status: int, body: bytes) -> None:
        elapsed = time.perf_counter() - info.started
        path: str = scope.get("path", "")
        if info.session is None:
            found = _SESSION_PATH.match(path)
            if found:
                info.session = found.group(1)
        if info.tool is None:
            info.tool = _path_tool(path)
        if http_status >= 400:
            info.status = "http_error"
            info.error_code = _error_code(body) or str(http_status)
        if info.user is None and self.principal is not None:
            info.user = self._user(scope)
        if self.metrics is not None:
            self.metrics.observe_request(scope, info, http_status, elapsed)
        if self.log_requests and access_log.isEnabledFor(logging.INFO):
            line = {
                "ts": round(time.time(), 3),
                "request_id": info.request_id,
                "method": scope.get("method"),
                "path": path,
                "http_status": http_status,
                "user": info.user,
                "session": info.session,
                "tool": info.tool,
                "mode": info.mode,
                "status": info.status,
                "error_code": info.error_code,
                "duration_ms": round(elapsed * 1000.0, 3),
            }
            # the record made directly: Logger.info would also walk the stack for the caller
            record = access_log.makeRecord(
                access_log.name, logging.INFO, __file__, 0, _encode(line), (), None
            )
            access_log.handle(record)

    def _user(self, scope: Scope) -> str | None:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer" and given:
                    found: str | None = self.principal(given.strip())
                    return found
        return None


def _given_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            text = value.decode("latin-1")
            return text if _GIVEN_ID.match(text) else None
    return None


def _path_tool(path: str) -> str | None:
    found = _TOOL_PATH.match(path)
    if found:
        return found.group(1) or found.group(2)
    return _FIXED_TOOL.get(path)


def _error_code(body: bytes) -> str:
    if not body or len(body) > 65536:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    code = data.get("error_code") if isinstance(data, dict) else None
    return code if isinstance(code, str) else ""


def configure_access_log() -> None:
    """Give ``smartflow.access`` a bare handler to stderr (the line is already JSON), once."""
    if not access_log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        access_log.addHandler(handler)
    access_log.setLevel(logging.INFO)
    access_log.propagate = False
