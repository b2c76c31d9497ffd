"""What every route needs: the server's settings and services, and the auth/session
dependencies. Names say which user they mean: the *principal* is the HTTP user a bearer token
stands for; a *database user* (``db_user_id``) is a user id in the scheduling tables."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ...solver.budget import DEFAULT_CALIBRATION, Calibration
from ..core.spec import ToolSpec
from ..sessions.session import Session
from ..sessions.store import (
    SessionBackend,
    SessionConflictError,
    SessionStoreUnavailable,
    run_effect,
)
from .errors import ApiError
from .models import SessionId
from .request_log import note_principal, note_session
from .solver_pool import SolverPool, SolverUnavailable

if TYPE_CHECKING:
    from ...store.protocol import ScheduleStore


def parse_tokens(text: str) -> dict[str, str]:
    """``"tok1:alice,tok2:bob"`` → ``{"tok1": "alice", "tok2": "bob"}`` (a bare token maps to
    principal ``default``)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        token, _, user = part.partition(":")
        out[token.strip()] = user.strip() or "default"
    return out


@dataclass
class ApiContext:
    """The server's settings and services (``app.state.ctx``)."""

    tokens: Mapping[str, str]
    table: dict[str, ToolSpec]
    sessions: SessionBackend
    database: ScheduleStore | None = None
    max_time_limit_s: float = 10.0
    num_workers: int = 1
    solver: SolverPool = field(default_factory=lambda: SolverPool(0))
    calibration: Calibration = DEFAULT_CALIBRATION  # the solver's figures (issue 30 item 3)

    def __post_init__(self) -> None:
        self._token_items = [(t.encode(), u) for t, u in self.tokens.items() if t]

    def principal(self, given: str) -> str | None:
        found = None
        for token, uid in self._token_items:  # compare every token: no early exit to time
            if hmac.compare_digest(token, given.encode()):
                found = uid
        return found

    @contextmanager
    def use(self, principal: str, session_id: str, *, read_only: bool = False) -> Iterator[Session]:
        """The principal's session for one request, written back to the store at the end if it
        changed (``read_only``: the request only reads the state, see
        :meth:`SessionBackend.use`)."""
        try:
            with self.sessions.use(principal, session_id, read_only=read_only) as session:
                if session is None:
                    raise ApiError(404, "session_not_found", f"no session {session_id}")
                note_session(session)
                yield session
        except SessionConflictError as exc:
            raise ApiError(409, "session_conflict", str(exc)) from None
        except SessionStoreUnavailable as exc:
            raise ApiError(503, "session_store_unavailable", str(exc)) from None

    def effect(self, principal: str, session_id: str, act: Callable[[Session], Any]) -> Any:
        """``act(session)`` for a call that may act outside the session (a confirm): run once
        on the stored session, loaded again when another request changed it before the held
        call ran (:func:`~..sessions.store.run_effect`); its result is always the outcome."""

        def noted(session: Session) -> Any:
            note_session(session)
            return act(session)

        try:
            found = run_effect(self.sessions, principal, session_id, noted)
        except SessionConflictError as exc:
            raise ApiError(409, "session_conflict", str(exc)) from None
        except SessionStoreUnavailable as exc:
            raise ApiError(503, "session_store_unavailable", str(exc)) from None
        if found is None:
            raise ApiError(404, "session_not_found", f"no session {session_id}")
        return found

    def reads_only(self, tool: str) -> bool:
        """Whether a call of ``tool`` leaves the session's state as it is (a read tool that
        needs no confirmation; an unknown tool only gets a refusal)."""
        spec = self.table.get(tool)
        return spec is None or (spec.kind == "read" and not spec.needs_confirm)

    def invoke(self, session: Session, name: str, args: Any) -> Any:
        """One tool call of a session: solving tools in the worker pool."""
        if self.solver.handles(name, session):
            try:
                return self.solver.session_call(session, name, args)
            except SolverUnavailable as exc:
                raise ApiError(503, "solver_unavailable", str(exc)) from None
        return session.invoke(name, args)


# Dependencies are async (they never block): a sync one costs a threadpool hop per request.
async def api_context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.ctx
    return ctx


Ctx = Annotated[ApiContext, Depends(api_context)]
_bearer = HTTPBearer(auto_error=False)


async def current_principal(
    ctx: Ctx,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    if creds is None or creds.scheme.lower() != "bearer":
        raise ApiError(401, "unauthorized", "missing bearer token")
    principal = ctx.principal(creds.credentials)
    if principal is None:
        raise ApiError(401, "unauthorized", "unknown bearer token")
    note_principal(principal)  # the access log's user, without reading the token again
    return principal


Principal = Annotated[str, Depends(current_principal)]


@dataclass(frozen=True)
class SessionRef:
    """The principal and the session id of a ``/v1/sessions/{session_id}/...`` request."""

    principal: str
    session_id: str


async def session_ref(principal: Principal, session_id: SessionId) -> SessionRef:
    return SessionRef(principal, session_id)


Ref = Annotated[SessionRef, Depends(session_ref)]
