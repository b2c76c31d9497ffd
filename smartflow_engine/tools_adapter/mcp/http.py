"""MCP over streamable HTTP, beside stdio: ``/mcp/{session_id}`` of the HTTP API's app.

The same server :func:`~.mcp_server.build_server` makes for stdio (the session's tools in its
mode, ``isError`` on refusals, the P1-C rules as instructions, the state and change log as
resources), published over the ``mcp`` SDK's streamable HTTP transport. Auth and sessions are
the HTTP API's own:

- every request needs ``Authorization: Bearer <token>`` (401 otherwise), checked before the MCP
  layer sees it;
- ``{session_id}`` is a session the token's principal created with ``POST /v1/sessions``
  (another principal's, or an unknown one, is a 404), so a backend opens the session (state,
  mode, database window) over the API and hands the agent an MCP URL for it;
- every tool call runs on that session in the session store, through the same
  :meth:`ApiContext.use` / :meth:`ApiContext.invoke` as ``POST .../calls`` (the solver pool, the
  Redis store's optimistic check and the caps included). A call of the API and a call over MCP
  see each other's changes.

The transport runs in the SDK's *stateless* mode with JSON responses: each HTTP request is
answered on its own, so any server worker can answer it (the session lives in the store, not
in the MCP transport), and nothing is held between requests.

The user's confirmation (issue 44 item 2). With protocol 2026-07-28 a confirm-required call asks
the user through an ``input_required`` result: the client shows the question and sends the call
again with the answer and the server's sealed ``requestState``. That retry is a new HTTP
request, possibly on another worker, answered by a server built for it, so the seal's key is
the deployment's (:meth:`~..sessions.store.SessionBackend.shared_secret`: in Redis for every
worker, or the process's own with the memory store), and its audience names the principal and
the session, so a sealed state answers only the call of that session it was issued for. An
older protocol has no way over a stateless transport to send the question (its
``elicitation/create`` request needs a back channel): such a call is refused saying to connect
with 2026-07-28 or use stdio, nothing written.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import anyio
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..core.spec import failure_text, refused
from ..sessions.session import CallResult, PendingCall

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ..api.context import ApiContext

MCP_PATH = "/mcp/{session_id}"
REQUEST_STATE_SECRET = "mcp-request-state"  # the shared secret's name in the session store
_SESSION = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class StoredSession:
    """A session of the store seen through the :class:`~.session.Session` methods the MCP server
    uses; each call takes the session from the store for that call only."""

    def __init__(self, ctx: ApiContext, principal: str, session_id: str) -> None:
        self.ctx, self.principal, self.session_id = ctx, principal, session_id

    def _refused(self, name: str, exc: Exception) -> CallResult:
        from ..api.errors import ApiError

        if isinstance(exc, ApiError):
            text = refused(failure_text(name, exc.message), exc.code)
            return CallResult(name, text, status="error", error_code=exc.code)
        raise exc

    def invoke(self, name: str, args: Any = None) -> CallResult:
        from ..api.request_log import note_result

        try:
            read_only = self.ctx.reads_only(name)
            with self.ctx.use(self.principal, self.session_id, read_only=read_only) as session:
                result: CallResult = self.ctx.invoke(session, name, args)
        except Exception as exc:
            result = self._refused(name, exc)
        note_result(result)
        return result

    def call(self, name: str, args: Any = None) -> str:
        return self.invoke(name, args).reply

    def confirm(self, token: str) -> CallResult:
        try:
            done: CallResult = self.ctx.effect(
                self.principal, self.session_id, lambda s: s.confirm(token)
            )
        except Exception as exc:
            return self._refused("confirm", exc)
        return done

    def preview_call(self, name: str, args: Any = None) -> PendingCall | CallResult:
        """:meth:`Session.preview_call` on the stored session (written back: a call that needed
        no confirmation has run)."""
        try:
            with self.ctx.use(self.principal, self.session_id) as session:
                found: PendingCall | CallResult = session.preview_call(name, args)
        except Exception as exc:
            return self._refused(name, exc)
        return found

    def confirm_call(self, name: str, args: Any, shown: PendingCall) -> CallResult:
        """:meth:`Session.confirm_call` on the stored session, its database write secured
        against a concurrent request (:meth:`ApiContext.effect`)."""
        from ..api.request_log import note_result

        try:
            result: CallResult = self.ctx.effect(
                self.principal, self.session_id, lambda s: s.confirm_call(name, args, shown)
            )
        except Exception as exc:
            result = self._refused(name, exc)
        note_result(result)
        return result

    def reject(self, token: str) -> CallResult:
        try:
            with self.ctx.use(self.principal, self.session_id) as session:
                return session.reject(token)
        except Exception as exc:
            return self._refused("reject", exc)

    def begin_request(
        self,
        mode: Any = None,
        frozen_days: int | None = None,
        *,
        key: str | None = None,
        existing_fixed: bool | None = None,
    ) -> dict[str, Any]:
        """A new user request on the stored session (written back, as ``POST .../requests``);
        a store failure is a :class:`~.session.SessionError` (the call is then refused)."""
        from ..api.errors import ApiError
        from ..sessions.session import SessionError

        try:
            with self.ctx.use(self.principal, self.session_id) as session:
                return session.begin_request(
                    mode, frozen_days, key=key, existing_fixed=existing_fixed
                )
        except ApiError as exc:
            raise SessionError(exc.message) from None

    def __getattr__(self, name: str) -> Any:
        # Everything else the server reads (visible_specs, rules, state, changes, mode, ...):
        # from the session as it is now.
        with self.ctx.use(self.principal, self.session_id, read_only=True) as session:
            return getattr(session, name)


class McpEndpoint:
    """The ASGI endpoint of :data:`MCP_PATH`."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from ..api.errors import ApiError, error_response
        from ..api.request_log import note_principal

        sid = str(scope.get("path_params", {}).get("session_id", ""))
        principal = self._principal(scope)
        if principal is None:
            await error_response(401, "unauthorized", "missing or unknown bearer token")(
                scope, receive, send
            )
            return
        note_principal(principal)
        if not _SESSION.match(sid):
            await error_response(404, "session_not_found", f"no session {sid}")(
                scope, receive, send
            )
            return
        session = StoredSession(self.ctx, principal, sid)
        try:
            server = await anyio.to_thread.run_sync(_server, session)  # the store may block
        except ApiError as exc:
            await error_response(exc.status, exc.code, exc.message)(scope, receive, send)
            return
        manager = server.session_manager
        async with manager.run():
            await manager.handle_request(scope, receive, send)

    def _principal(self, scope: Scope) -> str | None:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer" and given.strip():
                    return self.ctx.principal(given.strip())
        return None


def _server(session: StoredSession) -> Any:
    """The stdio server's construction, over the stored session, with a stateless transport
    and the deployment's request-state key (see the module docstring)."""
    from mcp.server.request_state import RequestStateSecurity
    from mcp.server.transport_security import TransportSecuritySettings

    from .server import SERVER_NAME, build_server

    sealing = RequestStateSecurity(
        keys=[session.ctx.sessions.shared_secret(REQUEST_STATE_SECRET)],
        audience=f"{SERVER_NAME}:{session.principal}:{session.session_id}",
        bind_principal=None,  # the bearer token is checked before the MCP layer
    )
    server = build_server(session, request_state=sealing)  # type: ignore[arg-type]
    # The bearer token, not the Host header, guards this endpoint; the API's own bind address
    # (loopback by default) decides who reaches it.
    server.streamable_http_app(
        streamable_http_path="/",
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server


def install(app: FastAPI, ctx: ApiContext) -> None:
    """Add :data:`MCP_PATH` to ``app`` (needs the ``mcp`` extra; without it, nothing is added)."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return
    app.router.routes.append(
        Route(MCP_PATH, endpoint=McpEndpoint(ctx), methods=["GET", "POST", "DELETE"])
    )
