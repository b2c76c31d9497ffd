"""Typed error bodies ``{"error_code", "error"}`` and the handlers that make every failure one."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from .models import ErrorBody

log = logging.getLogger(__name__)


class ApiError(Exception):
    """A request the server refuses: HTTP status, stable code, one-line message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_sessions",
    503: "unavailable",
}

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "malformed JSON body"},
    401: {"model": ErrorBody, "description": "missing or unknown bearer token"},
    413: {"model": ErrorBody, "description": "request body too large"},
    422: {"model": ErrorBody, "description": "invalid request (body, parameters or state)"},
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "unknown session, tool or token"},
}
LIMIT: dict[int | str, dict[str, Any]] = {
    429: {"model": ErrorBody, "description": "session limit reached"},
}
UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {
        "model": ErrorBody,
        "description": "a service the request needs is unavailable, retry later "
        "(session_store_unavailable, db_unavailable, solver_unavailable); on a commit or "
        "upsert_task_class, outcome_unknown: the database's answer to COMMIT was lost and "
        "could not be checked, so reload and check before retrying",
    },
}
CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {
        "model": ErrorBody,
        "description": "another request changed the session meanwhile (session_conflict: "
        "nothing of this request was done, retry) or, on confirm, the session changed since "
        "the preview (preview_changed: nothing ran, preview again)",
    },
    **UNAVAILABLE,
}
DATABASE: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorBody, "description": "another database user's window"},
    **UNAVAILABLE,
}


def error_response(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error_code": code, "error": message}, status_code=status, headers=headers)


def _allowed_methods(request: Request) -> list[str]:
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _outages() -> list[tuple[type[Exception], str, str]]:
    """The exceptions that mean a service is out (type, error code, what is out): the session
    store's own, any Redis error, and the database errors SQLAlchemy raises for a lost, refused
    or timed-out connection or statement. Drivers of extras that are not installed are left out."""
    from ..sessions.store import SessionStoreUnavailable

    out: list[tuple[type[Exception], str, str]] = [
        (SessionStoreUnavailable, "session_store_unavailable", "the session store")
    ]
    try:
        from redis.exceptions import RedisError
    except ImportError:  # pragma: no cover - the redis extra is not installed
        pass
    else:
        out.append((RedisError, "session_store_unavailable", "the session store"))
    try:
        from sqlalchemy import exc as sa
    except ImportError:  # pragma: no cover - the db extra is not installed
        pass
    else:
        for kind in (
            sa.OperationalError,
            sa.InterfaceError,
            sa.DisconnectionError,
            sa.TimeoutError,
        ):
            out.append((kind, "db_unavailable", "the database"))
    return out


def install_handlers(app: FastAPI) -> None:
    """Every failure becomes a typed JSON error body; nothing reaches the client as a trace.

    An outage of a service (the Redis session store, the database) is a 503 with a stable code
    (``session_store_unavailable``, ``db_unavailable``) and one log line without a traceback,
    whichever route met it."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        if exc.status >= 500:
            log.warning("%s %s: %s %s", request.method, request.url.path, exc.code, exc.message)
        return error_response(exc.status, exc.code, exc.message)

    def outage(code: str, what: str) -> Any:
        async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
            log.warning(
                "%s %s: %s (%s: %s)",
                request.method,
                request.url.path,
                code,
                type(exc).__name__,
                _first_line(exc),
            )
            message = f"{what} is unavailable ({type(exc).__name__}); retry later"
            return error_response(503, code, message)

        return _unavailable

    for kind, code, what in _outages():
        app.add_exception_handler(kind, outage(code, what))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors()[:3]:
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{loc}: {err.get('msg', '')}" if loc else str(err.get("msg", "")))
        return error_response(422, "invalid_request", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = STATUS_CODES.get(exc.status_code, "http_error")
        response = error_response(exc.status_code, code, str(exc.detail))
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:  # Starlette lists one route's methods; list every route's
            response.headers["Allow"] = ", ".join(_allowed_methods(request))
        return response

    @app.exception_handler(Exception)
    async def _bug(_request: Request, exc: Exception) -> JSONResponse:  # pragma: no cover
        log.exception("unhandled error")
        return error_response(500, "internal_error", f"internal error ({type(exc).__name__})")
