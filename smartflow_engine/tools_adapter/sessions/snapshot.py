"""A session's snapshot: everything needed to resume it elsewhere (another process, Redis).

``version``, ``user_id``, ``session_id``, ``mode``, ``enabled_tools``, ``state``, ``changes``,
``pending`` (held confirmations, each bound to the session it was issued in: a snapshot restored
under another session id drops them; each with the digest of what its preview showed),
``created_at``, ``loop`` (rounds, best state, infeasible gate, last actions and the round log;
absent in snapshots written before the loop existed), ``frozen_days``, ``existing_fixed``,
``day_labels`` (issue 43; absent before it: the setting's default) and ``db_window`` (whether
the window was loaded from the database; ``true`` when absent).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...state import Change, ScheduleState, StateError

if TYPE_CHECKING:
    from .session import Session

SNAPSHOT_VERSION = 1


class SessionError(ValueError):
    """A bad session request (unknown mode, unknown tool to enable, malformed snapshot)."""


@dataclass(frozen=True)
class PendingCall:
    """A confirm-required call waiting for the user: the validated arguments and the preview.

    ``token`` is a random nonce; ``session_id`` the session it was issued in. The pair is the
    token's binding (issue 24 item 9): a session confirms only its own tokens, and a snapshot
    restored under another session id brings none of its pending calls along. ``digest`` binds
    the confirm to what the preview showed (issue 44 item 1): the call, and the window and change
    log it acts on; ``seen`` and ``log`` are the length and digest of that change log (to say
    what changed when a confirm is refused)."""

    token: str
    tool: str
    args: dict[str, Any]
    preview: str
    created_at: float
    session_id: str = ""
    digest: str = ""
    seen: int = 0
    log: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "tool": self.tool,
            "args": self.args,
            "preview": self.preview,
            "created_at": self.created_at,
            "session_id": self.session_id,
            "digest": self.digest,
            "seen": self.seen,
            "log": self.log,
        }

    @classmethod
    def from_dict(cls, data: Any, session_id: str = "") -> PendingCall:
        """The held call of a snapshot entry; ``session_id`` is the snapshot's own, for entries
        written before tokens named their session."""
        if not isinstance(data, dict):
            raise SessionError("snapshot.pending: each entry must be an object")
        try:
            token, tool, args = data["token"], data["tool"], data["args"]
        except KeyError as exc:
            raise SessionError(f"snapshot.pending: missing {exc.args[0]}") from None
        if not isinstance(token, str) or not isinstance(tool, str) or not isinstance(args, dict):
            raise SessionError("snapshot.pending: token and tool must be strings, args an object")
        owner = data.get("session_id") or session_id
        if not isinstance(owner, str):
            raise SessionError("snapshot.pending: session_id must be a string")
        digest, seen, log = data.get("digest", ""), data.get("seen", 0), data.get("log", "")
        if not isinstance(digest, str) or not isinstance(log, str):
            raise SessionError("snapshot.pending: digest and log must be strings")
        if isinstance(seen, bool) or not isinstance(seen, int) or seen < 0:
            raise SessionError("snapshot.pending: seen must be a whole number >= 0")
        return cls(
            token,
            tool,
            args,
            str(data.get("preview", "")),
            float(data.get("created_at", 0.0)),
            owner,
            digest=digest,
            seen=seen,
            log=log,
        )


TOKEN_LINE = "确认令牌："  # the preview's last line, for the host that confirms with it


def without_token(preview: str) -> str:
    """A held call's preview as the user may read it anywhere (a page, MCP's question): without
    the token line, which only the host that confirms needs."""
    return "\n".join(line for line in preview.splitlines() if not line.startswith(TOKEN_LINE))


def take_snapshot(session: Session) -> dict[str, Any]:
    """The snapshot of ``session`` (the caller holds its lock)."""
    state = session.state
    loop = session.toolbox.ctx.loop
    return {
        "version": SNAPSHOT_VERSION,
        "user_id": session.user_id,
        "session_id": session.session_id,
        "mode": session.mode.value,
        "enabled_tools": list(session.enabled_tools),
        "state": state.to_dict() if state is not None else None,
        "changes": [c.to_dict() for c in session.toolbox.changes],
        "pending": [p.to_dict() for p in session.pending()],
        "created_at": session.created_at,
        "loop": loop.to_dict() if loop is not None else None,
        "frozen_days": session.frozen_days,
        "existing_fixed": session.existing_fixed,
        "day_labels": session.day_labels,
        "db_window": session.db_window,
    }


def load_snapshot(snapshot: dict[str, Any] | str) -> dict[str, Any]:
    """The snapshot as a dict, its version checked."""
    if isinstance(snapshot, str):
        try:
            snapshot = json.loads(snapshot)
        except ValueError as exc:
            raise SessionError(f"snapshot is not valid JSON: {exc}") from None
    if not isinstance(snapshot, dict):
        raise SessionError("snapshot must be a JSON object")
    version = snapshot.get("version")
    if version != SNAPSHOT_VERSION:
        raise SessionError(
            f"snapshot version {version!r} is not supported (expected {SNAPSHOT_VERSION})"
        )
    return snapshot


def snapshot_state(data: dict[str, Any]) -> ScheduleState | None:
    state_data = data.get("state")
    if state_data is not None and not isinstance(state_data, dict):
        raise SessionError("snapshot.state must be an object or null")
    try:
        return ScheduleState.from_json(state_data) if state_data is not None else None
    except StateError as exc:
        raise SessionError(f"snapshot.state: {exc}") from None


def snapshot_enabled(data: dict[str, Any]) -> list[str]:
    enabled = data.get("enabled_tools", [])
    if not isinstance(enabled, list) or not all(isinstance(n, str) for n in enabled):
        raise SessionError("snapshot.enabled_tools must be a list of tool names")
    return enabled


def fill_session(session: Session, data: dict[str, Any]) -> None:
    """Put the change log, held confirmations, creation time and loop of ``data`` into the
    freshly built ``session``."""
    from .loop_state import LoopState

    changes = data.get("changes", [])
    pending = data.get("pending", [])
    if not isinstance(changes, list) or not isinstance(pending, list):
        raise SessionError("snapshot.changes and snapshot.pending must be lists")
    try:
        session.toolbox.changes.extend(Change.from_dict(c) for c in changes)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SessionError(f"snapshot.changes: malformed entry ({exc})") from None
    specs = {s.name for s in session.specs}
    issued_in = data.get("session_id")
    for entry in pending:
        held = PendingCall.from_dict(entry, issued_in if isinstance(issued_in, str) else "")
        if held.tool not in specs:
            raise SessionError(f"snapshot.pending: unknown tool {held.tool}")
        if held.session_id != session.session_id:
            continue  # issued in another session (a copy restored under a new id): not ours
        session.hold_call(held)
    created = data.get("created_at")
    if isinstance(created, int | float):
        session.created_at = float(created)
    session.frozen_days = data.get("frozen_days", 0)  # SessionError when malformed
    session.existing_fixed = data.get("existing_fixed", False)
    if "day_labels" in data:  # absent in snapshots written before issue 43: the default
        session.day_labels = data["day_labels"]  # SessionError when malformed
    db_window = data.get("db_window", True)
    if not isinstance(db_window, bool):
        raise SessionError("snapshot.db_window must be true or false")
    session.toolbox.ctx.db_window = db_window
    loop = data.get("loop")
    if loop is not None:
        try:
            session.toolbox.ctx.loop = LoopState.from_dict(loop)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SessionError(f"snapshot.loop: malformed ({exc})") from None
