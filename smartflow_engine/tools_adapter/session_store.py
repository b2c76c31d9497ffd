"""Sessions kept in memory per ``(user, session)``; a user never reaches another user's session."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..state import ScheduleState
from .session import Session, SessionLimitError
from .spec import Mode


def _db_user(user_id: str) -> int | None:
    return int(user_id) if user_id.isascii() and user_id.isdigit() else None


@dataclass
class SessionStore:
    """Sessions keyed by ``(user_id, session_id)``; a user never reaches another user's session.

    Parameters
    ----------
    max_sessions_per_user, max_sessions
        Caps; :meth:`create` raises :class:`SessionLimitError` beyond them (after dropping idle
        sessions).
    idle_ttl_s
        Sessions unused for this long are dropped (``None``: never).
    session_kwargs
        Passed to every :class:`Session` (``max_time_limit_s``, ``num_workers``, ``self_check``,
        ``specs``, ``store``). A numeric user id is also passed as ``db_user_id``.
    """

    max_sessions_per_user: int = 32
    max_sessions: int = 1024
    idle_ttl_s: float | None = 6 * 3600.0
    session_kwargs: dict[str, Any] = field(default_factory=dict)
    _sessions: dict[tuple[str, str], Session] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def create(
        self,
        user_id: str,
        state: ScheduleState | None,
        *,
        mode: Mode | str = Mode.FIRST_FULL,
        enabled_tools: Iterable[str] = (),
    ) -> Session:
        session = Session(state, mode=mode, user_id=user_id, enabled_tools=enabled_tools,
                          db_user_id=_db_user(user_id), **self.session_kwargs)
        self.add(session)
        return session

    def restore(self, user_id: str, snapshot: dict[str, Any] | str) -> Session:
        """Restore a snapshot as a new session of ``user_id`` (a fresh id)."""
        session = Session.restore(snapshot, user_id=user_id, session_id=secrets.token_urlsafe(12),
                                  db_user_id=_db_user(user_id), **self.session_kwargs)
        self.add(session)
        return session

    def add(self, session: Session) -> None:
        with self._lock:
            self._expire()
            mine = sum(1 for (uid, _) in self._sessions if uid == session.user_id)
            if mine >= self.max_sessions_per_user:
                raise SessionLimitError(
                    f"user has {mine} sessions (limit {self.max_sessions_per_user})")
            if len(self._sessions) >= self.max_sessions:
                raise SessionLimitError(f"server holds {len(self._sessions)} sessions "
                                        f"(limit {self.max_sessions})")
            self._sessions[(session.user_id, session.session_id)] = session

    def get(self, user_id: str, session_id: str) -> Session | None:
        with self._lock:
            return self._sessions.get((user_id, session_id))

    def delete(self, user_id: str, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop((user_id, session_id), None) is not None

    def sessions(self, user_id: str) -> list[Session]:
        with self._lock:
            return [s for (uid, _), s in self._sessions.items() if uid == user_id]

    def __len__(self) -> int:
        return len(self._sessions)

    def _expire(self) -> None:
        if self.idle_ttl_s is None:
            return
        cutoff = time.time() - self.idle_ttl_s
        for key in [k for k, s in self._sessions.items() if s.last_used < cutoff]:
            del self._sessions[key]
