"""What each HTTP request did: a request id, one JSON access-log line, and the metrics.

:class:`RequestObserver` is a plain ASGI middleware (no Starlette ``BaseHTTPMiddleware``: that
one costs a task and a queue per request). For every HTTP request it

- takes the client's ``X-Request-ID`` when it is a short token, or makes one, and echoes it in
  the response's ``X-Request-ID`` header;
- keeps a :class:`RequestInfo` in a context variable that the routes fill in as they learn
  things (:func:`note_session` from the session access, :func:`note_result` from the tool
  result), so the line needs no second parse of the body;
- at the end, writes one JSON line to the ``smartflow.access`` logger (when the access log is
  on) and updates the :class:`~.metrics.Metrics`, for 64 requests at a time (see
  :class:`RequestObserver`); ``GET /health``, the liveness probe, is not observed. ``smartflow serve --access-log`` gives that
  logger one handler, to stderr, which writes the lines in batches (:class:`_LineHandler`: at
  most half a second late); a handler of the operator's own gets ordinary log records.

The line's fields: ``ts``, ``request_id``, ``method``, ``path``, ``http_status``, ``user`` (the
principal of the bearer token), ``session``, ``tool``, ``mode``, ``status`` (the tool's status:
ok / error / pending_confirm / rejected, or ``http_error`` for a refused request),
``error_code`` and ``duration_ms``. A bearer token never appears in it; neither does a query
string (a signed view link's signature stays out of the log).
"""

from __future__ import annotations

import collections
import itertools
import json
import logging
import re
import secrets
import threading
import time
import weakref
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
_HEADER_NAME = REQUEST_ID_HEADER.lower().encode()
# The liveness probe a load balancer or orchestrator calls every few seconds: no line, no
# series, no request id (it would flood the log with lines nobody reads; see docs/decisions.md).
UNOBSERVED_PATHS = frozenset({"/health"})
_quote = json.encoder.encode_basestring  # a JSON string, non-ASCII kept (as ensure_ascii=False)
# Request ids: a random prefix per process and a counter (unique across workers and restarts
# in practice; the 16 hex characters of the old secrets.token_hex(8), without a syscall each).
_ID_PREFIX = secrets.token_hex(4)
_ids = itertools.count(1)


def _new_id() -> str:
    return f"{_ID_PREFIX}{next(_ids) & 0xFFFFFFFF:08x}"


def _json(value: str | None) -> str:
    return "null" if value is None else _quote(value)


def _line(
    info: RequestInfo, method: Any, path: str, http_status: int, elapsed: float, ts: float
) -> str:
    """The JSON line, written field by field (the same text ``json.dumps`` gives, made without
    building a dict and walking it); ``ts`` is when the request finished."""
    return (
        f'{{"ts": {ts:.3f}, "request_id": {_quote(info.request_id)}, '
        f'"method": {_json(method)}, "path": {_quote(path)}, "http_status": {http_status}, '
        f'"user": {_json(info.user)}, "session": {_json(info.session)}, '
        f'"tool": {_json(info.tool)}, "mode": {_json(info.mode)}, '
        f'"status": {_json(info.status)}, "error_code": {_quote(info.error_code)}, '
        f'"duration_ms": {elapsed * 1000.0:.3f}}}'
    )


@dataclass(slots=True)
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
    elapsed: float = 0.0  # the request's duration, once it has finished


# A finished request: its info, HTTP status, method, path, route template (None: no route
# matched) and, when the line still needs its user, the request's headers.
Record = tuple[RequestInfo, int, Any, str, str | None, Any]

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
    """The ASGI middleware (see the module's docstring).

    A finished request is kept as a record and the records are handled in batches of
    :data:`BATCH` (the metrics updated, the lines written): handling them one after another
    keeps the observer's code and data hot, where one request's handling between two
    requests' work costs several times its own instructions (measured in
    ``benchmarks/results_adapters.md``). Nothing is lost or late for a reader: a scrape of
    ``/metrics`` handles the waiting records first, a waiting line goes out at the latest
    :data:`_LineHandler.FLUSH_S` seconds after its request (a timer) and at exit (the
    handler's flush), and with a log handler of the operator's own (anything but
    ``smartflow serve --access-log``'s) every request is handled at once, as before.
    """

    BATCH = 64

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
        # finished requests waiting (:data:`Record`); deque appends and pops are atomic, so the
        # request path takes no lock
        self._records: collections.deque[Record] = collections.deque()
        self._lock = threading.Lock()  # one drain at a time (the lines keep their order)
        self._timer: threading.Thread | None = None
        if metrics is not None:
            metrics.before_scrape.append(self.drain)
        if log_requests:
            _observers.add(self)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or (self.metrics is None and not self.log_requests)
            or scope["path"] in UNOBSERVED_PATHS
        ):
            await self.app(scope, receive, send)
            return
        request_id = _given_id(scope) or _new_id()
        info = RequestInfo(request_id, time.perf_counter())
        token = current.set(info)
        http_status = 500
        error_body: list[bytes] | None = None
        header = (_HEADER_NAME, request_id.encode())

        async def send_with_id(message: Message) -> None:
            nonlocal http_status, error_body
            if message["type"] == "http.response.start":
                http_status = message["status"]
                headers = message.get("headers")
                if isinstance(headers, list):  # the response's own list: one request's
                    headers.append(header)
                else:
                    message["headers"] = [*(headers or ()), header]
            elif http_status >= 400 and message["type"] == "http.response.body":
                if error_body is None:
                    error_body = []
                error_body.append(message.get("body", b""))  # a typed error body: small
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            current.reset(token)
            self._finish(scope, info, http_status, error_body)

    def _finish(
        self, scope: Scope, info: RequestInfo, http_status: int, error_body: list[bytes] | None
    ) -> None:
        """Keep the finished request's record (no lock: a deque's append is atomic). The record
        holds what the line and the metrics read, not the scope: 64 scopes kept alive (each with
        the request's routing objects) would make the garbage collector's young generations
        walk them again and again."""
        info.elapsed = time.perf_counter() - info.started
        if http_status >= 400:
            info.status = "http_error"
            info.error_code = _error_code(b"".join(error_body or ())) or str(http_status)
        route = route_template(scope)
        headers = (
            scope.get("headers")
            if info.user is None and self.log_requests and self.principal is not None
            else None
        )
        records = self._records
        records.append((info, http_status, scope.get("method"), scope["path"], route, headers))
        if len(records) >= self.BATCH or (self.log_requests and not _batched_lines()):
            self.drain()  # (an operator's own log handler gets each record at once)
        elif self._timer is None and self.log_requests:
            self._start_timer()

    def _start_timer(self) -> None:
        with self._lock:
            if self._timer is not None:
                return
            self._timer = threading.Thread(
                target=self._drain_soon, name="smartflow-access-records", daemon=True
            )
            self._timer.start()

    def drain(self) -> None:
        """Handle the records waiting (a scrape, the timer, a flush at exit, a full batch)."""
        with self._lock:
            records = []
            pop = self._records.popleft
            try:
                while True:
                    records.append(pop())
            except IndexError:
                pass
            if records:
                self._handle(records)

    def _drain_soon(self) -> None:
        time.sleep(_LineHandler.FLUSH_S)
        with self._lock:
            self._timer = None
        self.drain()
        for handler in access_log.handlers:  # out now, not one handler interval later
            handler.flush()

    def _handle(self, records: list[Record]) -> None:
        """The metrics and the lines of ``records`` (the caller holds ``_lock``)."""
        metrics = self.metrics
        if metrics is not None:
            metrics.observe_requests(records)
        if not self.log_requests or not access_log.isEnabledFor(logging.INFO):
            return
        # wall-clock time of a request's end: its perf_counter end on this batch's offset
        offset = time.time() - time.perf_counter()
        lines = []
        for info, http_status, method, path, _, headers in records:
            # what only the line needs
            if info.session is None:
                found = _SESSION_PATH.match(path)
                if found:
                    info.session = found.group(1)
            if info.tool is None:
                info.tool = _path_tool(path)
            if info.user is None and headers is not None:
                info.user = self._user(headers)
            elapsed = info.elapsed
            ts = offset + info.started + elapsed
            lines.append(_line(info, method, path, http_status, elapsed, ts))
        write_lines(lines)

    def _user(self, headers: Any) -> str | None:
        for name, value in headers:
            if name == b"authorization":
                scheme, _, given = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer" and given:
                    found: str | None = self.principal(given.strip())
                    return found
        return None


# observers whose waiting lines a flush of the access log (at exit, logging.shutdown) writes
_observers: weakref.WeakSet[RequestObserver] = weakref.WeakSet()


def drain_observers() -> None:
    """Handle every observer's waiting records (their lines handed to the access log)."""
    for observer in list(_observers):
        observer.drain()


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


class _LineHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler :func:`configure_access_log` installs: the line as it is, written in batches.

    A write and a flush per request cost as much as the rest of the observer together (a
    system call each), so the lines are buffered, as nginx's ``access_log ... buffer= flush=``
    does: written when :data:`FLUSH_BYTES` have gathered, and at the latest
    :data:`FLUSH_S` seconds after the first of them (a daemon thread), and at exit
    (``logging.shutdown`` flushes every handler). On a terminal every line goes out at once.
    A process killed outright loses at most the last :data:`FLUSH_S` seconds of lines.
    """

    FLUSH_BYTES = 16384
    FLUSH_S = 0.5

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self._lines: list[str] = []
        self._size = 0
        self._timer: threading.Thread | None = None
        try:
            self._direct = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self._direct = False

    def write_line(self, text: str) -> None:
        """Add the line ``text`` (no newline), written as the class docstring says."""
        self.write_lines([text])

    def write_lines(self, texts: list[str]) -> None:
        """Add the lines ``texts`` (no newlines), written as the class docstring says."""
        with self.lock:  # type: ignore[union-attr]
            self._lines += texts
            self._size += sum(map(len, texts)) + len(texts)
            if self._direct or self._size >= self.FLUSH_BYTES:
                self._drain()
            elif self._timer is None:
                self._timer = threading.Thread(
                    target=self._flush_soon, name="smartflow-access-log", daemon=True
                )
                self._timer.start()

    def emit(self, record: logging.LogRecord) -> None:  # a record, e.g. beside another handler
        try:
            self.write_line(self.format(record))
        except Exception:
            self.handleError(record)

    def flush(self) -> None:
        drain_observers()  # the requests' lines still waiting (before this handler's lock)
        with self.lock:  # type: ignore[union-attr]
            self._drain()

    def _drain(self) -> None:
        """Write the gathered lines and flush the stream (the caller holds the lock)."""
        if not self._lines:
            return
        text = "\n".join(self._lines) + "\n"
        self._lines.clear()
        self._size = 0
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:  # as logging does: a broken stream never fails a request
            self.handleError(logging.makeLogRecord({"msg": text}))

    def _flush_soon(self) -> None:
        time.sleep(self.FLUSH_S)
        with self.lock:  # type: ignore[union-attr]
            self._timer = None
            self._drain()


def _batched_lines() -> bool:
    """Whether the access log is ``smartflow serve --access-log``'s alone (its lines may wait
    for a batch); any other set-up gets each request's record at once."""
    handlers = access_log.handlers
    return (
        len(handlers) == 1
        and isinstance(handlers[0], _LineHandler)
        and not access_log.filters
        and not handlers[0].filters
        and handlers[0].level <= logging.INFO
    )


def write_line(text: str) -> None:
    """Hand the line to ``smartflow.access`` (see :func:`write_lines`)."""
    write_lines([text])


def write_lines(texts: list[str]) -> None:
    """Hand the lines to ``smartflow.access``. When the only handler is the one
    :func:`configure_access_log` installed (``smartflow serve --access-log``), the lines are
    written to it directly (no log record: it costs more than the rest of the line); any other
    set-up (a handler or a filter of the operator's) gets an ordinary record per line."""
    if _batched_lines():
        handler = access_log.handlers[0]
        assert isinstance(handler, _LineHandler)
        handler.write_lines(texts)
        return
    for text in texts:
        # the record made directly: Logger.info would also walk the stack for the caller
        access_log.handle(
            access_log.makeRecord(access_log.name, logging.INFO, __file__, 0, text, (), None)
        )


def configure_access_log() -> None:
    """Give ``smartflow.access`` a bare handler to stderr (the line is already JSON), once."""
    if not access_log.handlers:
        handler = _LineHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        access_log.addHandler(handler)
    access_log.setLevel(logging.INFO)
    access_log.propagate = False


def route_template(scope: Scope) -> str | None:
    """The template of the route that served ``scope``: FastAPI's routes put themselves in the
    scope; a plain Starlette route of an ASGI endpoint (MCP over HTTP, ``/mcp/{session_id}``)
    only its endpoint, looked up among the app's routes. ``None``: no route matched."""
    route = scope.get("route")
    if route is not None:
        return str(route.path)
    endpoint, app = scope.get("endpoint"), scope.get("app")
    if endpoint is None or app is None:
        return None
    for candidate in getattr(getattr(app, "router", None), "routes", ()):
        if getattr(candidate, "endpoint", None) is endpoint:
            return str(candidate.path)
    return None
