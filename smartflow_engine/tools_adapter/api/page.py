"""The session page in a browser, reached without a bearer token in any URL.

A browser cannot send the API's ``Authorization`` header from a link, and a token in a URL ends
up in logs and histories. So:

1. the backend (holding the bearer token) asks ``POST /v1/sessions/{id}/view-link`` and gets a
   short-lived link ``/view/{id}?t=…`` (HMAC-signed: principal, session, expiry; valid
   :data:`LINK_TTL_S`), which it hands to the person's browser;
2. ``GET /view/{id}?t=…`` checks the signature, sets an ``HttpOnly`` ``SameSite=Strict``
   cookie for that one session's path (valid :data:`COOKIE_TTL_S`) and redirects to the clean
   ``/view/{id}``, so the signed query leaves the address bar;
3. ``GET /view/{id}`` renders the page from the cookie: the session is read under the token's
   principal (another principal's session is a 404, as in the API), and nothing in it changes.

The signing key is ``SMARTFLOW_VIEW_KEY`` when set, else derived from the server's bearer tokens
(every worker of one deployment shares them; changing the tokens voids the links). A link and a
cookie are signed for different purposes, so one cannot stand for the other.

A stateless window has its page too: ``POST /v1/view`` with ``{"state": …}`` (bearer) answers
the page's HTML, self-contained: its stylesheet and script are written into the document (the
script allowed by its hash in the CSP), so the backend can show it anywhere (an iframe's
``srcdoc``, a saved file, a response of its own) and it makes no further request.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Cookie, FastAPI, Query
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import Field

from ...rules import Level
from ...settings import current
from ...state.model import MAX_DAYS
from .context import ApiContext, Ctx, Principal, Ref
from .errors import CONFLICT, ERRORS, NOT_FOUND, ApiError
from .models import WHOLE, SessionId, _Body
from .page_html import ASSETS, inline_script_hash, render_message, render_page
from .page_view import PAGE_TIME_LIMIT_S, session_view, state_view
from .routes_stateless import load_state

VIEW_KEY_ENV = "SMARTFLOW_VIEW_KEY"
LINK_TTL_S = 120
COOKIE_TTL_S = 3600
COOKIE = "smartflow_view"
# The page's own scripts and styles only: no inline script runs, nothing loads from elsewhere.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self' "
    "'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'self'",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}

router = APIRouter(tags=["page"])


class ViewLinkOut(_Body):
    url: str = Field(description="相对链接：/view/{session_id}?t=…（短时有效，只可查看）")
    expires_in: int


class StateView(_Body):
    state: dict[str, Any] = Field(description="规划窗口（规格 §3.1 的 JSON）")
    level: Level = Field(default="normal", pattern="^(strict|normal|relaxed)$")
    title: str = Field(default="", max_length=100)
    frozen_days: Annotated[int, Field(strict=True, ge=0, le=MAX_DAYS), WHOLE] = Field(
        default=0, description="把第1天到第N天标为冻结（0：不标）"
    )


def static_dir() -> Path:
    return Path(str(resources.files("smartflow_engine") / "tools_adapter" / "api" / "static"))


def view_key(ctx: ApiContext) -> bytes:
    given = current().view_key
    if given:
        return hashlib.sha256(given.encode()).digest()
    material = "\n".join(f"{t}:{u}" for t, u in sorted(ctx.tokens.items()))
    return hmac.new(b"smartflow view link v1", material.encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(ctx: ApiContext, purpose: str, principal: str, session_id: str, ttl_s: int) -> str:
    """``payload.signature`` for ``purpose`` (``link`` or ``cookie``)."""
    body = json.dumps([purpose, principal, session_id, int(time.time()) + ttl_s]).encode()
    mac = hmac.new(view_key(ctx), body, hashlib.sha256).digest()
    return f"{_b64(body)}.{_b64(mac)}"


def verify(ctx: ApiContext, token: str | None, purpose: str, session_id: str) -> str | None:
    """The principal a valid, unexpired ``token`` of ``purpose`` for ``session_id`` names."""
    if not token or len(token) > 2048 or "." not in token:
        return None
    body_text, _, mac_text = token.partition(".")
    try:
        body = base64.urlsafe_b64decode(body_text + "=" * (-len(body_text) % 4))
        mac = base64.urlsafe_b64decode(mac_text + "=" * (-len(mac_text) % 4))
    except ValueError:
        return None
    if not hmac.compare_digest(mac, hmac.new(view_key(ctx), body, hashlib.sha256).digest()):
        return None
    try:
        kind, principal, sid, expires = json.loads(body)
    except (ValueError, TypeError):
        return None
    if kind != purpose or sid != session_id or not isinstance(expires, int):
        return None
    if expires < time.time() or not isinstance(principal, str):
        return None
    return principal


def _html(text: str, status: int = 200, headers: dict[str, str] = HEADERS) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=headers)


def inline_headers() -> dict[str, str]:
    """:data:`HEADERS` for a self-contained page: its one inline script runs by its hash."""
    csp = HEADERS["Content-Security-Policy"].replace(
        "script-src 'self'", f"script-src {inline_script_hash()}"
    )
    return {**HEADERS, "Content-Security-Policy": csp}


@router.post(
    "/v1/sessions/{session_id}/view-link",
    response_model=ViewLinkOut,
    responses={**ERRORS, **NOT_FOUND, **CONFLICT},
)
def view_link(ctx: Ctx, ref: Ref) -> ViewLinkOut:
    """A short-lived link to the session's page, for a browser (no bearer token in it)."""
    with ctx.use(ref.principal, ref.session_id, read_only=True):
        pass  # the session exists and is the caller's
    token = sign(ctx, "link", ref.principal, ref.session_id, LINK_TTL_S)
    return ViewLinkOut(url=f"/view/{ref.session_id}?t={token}", expires_in=LINK_TTL_S)


@router.get("/view/{session_id}", response_class=HTMLResponse, include_in_schema=False)
def view_page(
    ctx: Ctx,
    session_id: SessionId,
    t: Annotated[str | None, Query(max_length=2048)] = None,
    smartflow_view: Annotated[str | None, Cookie(max_length=2048)] = None,
) -> Response:
    """The session's page (see the module docstring for the link → cookie step)."""
    if t is not None:
        principal = verify(ctx, t, "link", session_id)
        if principal is None:
            return _html(render_message("链接无效", "查看链接无效或已过期，请重新获取。"), 401)
        response = RedirectResponse(f"/view/{session_id}", status_code=303, headers=HEADERS)
        response.set_cookie(
            COOKIE,
            sign(ctx, "cookie", principal, session_id, COOKIE_TTL_S),
            max_age=COOKIE_TTL_S,
            path=f"/view/{session_id}",
            httponly=True,
            samesite="strict",
        )
        return response
    principal = verify(ctx, smartflow_view, "cookie", session_id)
    if principal is None:
        return _html(render_message("需要查看链接", "请通过后端获取的查看链接打开本页。"), 401)
    try:
        with ctx.use(principal, session_id, read_only=True) as session:
            snapshot = session.snapshot()
    except ApiError as exc:
        return _html(render_message("无法查看", exc.message), exc.status)
    limit = min(PAGE_TIME_LIMIT_S, ctx.max_time_limit_s)
    return _html(render_page(session_view(snapshot, time_limit_s=limit)))


@router.post(
    "/v1/view",
    response_model=None,
    responses={
        **ERRORS,
        200: {
            "description": "the page (HTML)",
            "content": {"text/html": {"schema": {"type": "string"}}},
        },
    },
)
def view_state(ctx: Ctx, _principal: Principal, body: StateView) -> Response:
    """The page of a posted window (no session): grid, health issues, close signal; one
    self-contained HTML document (style and script inline)."""
    state = load_state(body.state)
    limit = min(PAGE_TIME_LIMIT_S, ctx.max_time_limit_s)
    view = state_view(
        state,
        title=body.title or "规划窗口",
        level=body.level,
        time_limit_s=limit,
        frozen_days=body.frozen_days,
    )
    return _html(render_page(view, inline=True), headers=inline_headers())


def install(app: FastAPI) -> None:
    """Mount the page's assets and add its routes."""
    app.mount(ASSETS, StaticFiles(directory=static_dir()), name="page-assets")
    app.include_router(router)
