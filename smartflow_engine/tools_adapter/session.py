"""Sessions: one conversation's planning window, execution mode, change log and confirm gate.

A :class:`Session` belongs to one ``(user, session)`` pair. It owns a :class:`Toolbox` over its own
state, the :class:`Mode` that selects the offered tools and the prompt rules (P1-D), the change log
of applied writes, and the calls waiting for the user's confirmation. Calls to one session are
serialised by its lock; a :class:`SessionStore` keeps sessions apart per user.

The confirm gate: a tool with ``needs_confirm=True`` does not act when called; it returns a preview
and a token. :meth:`Session.confirm` runs the stored call, :meth:`Session.reject` drops it; nothing
is written without a confirm.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ..state import Change, ScheduleState, StateError
from . import registry
from .args import describe_validation_error, short_name
from .prompts import prompt_rules
from .schemas import drop_null_optionals, tool_schemas, visible_specs
from .spec import Mode, ToolSpec, is_refusal
from .toolbox import Toolbox

log = logging.getLogger(__name__)

SNAPSHOT_VERSION = 1
MAX_PENDING = 20  # confirmations kept per session; the oldest is dropped beyond this

Status = Literal["ok", "error", "pending_confirm", "rejected"]


class SessionError(ValueError):
    """A bad session request (unknown mode, unknown tool to enable, malformed snapshot)."""


class SessionLimitError(SessionError):
    """The store holds as many sessions as it may (per user or in total)."""


@dataclass(frozen=True)
class PendingCall:
    """A confirm-required call waiting for the user: the validated arguments and the preview."""

    token: str
    tool: str
    args: dict[str, Any]
    preview: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "tool": self.tool, "args": self.args,
                "preview": self.preview, "created_at": self.created_at}

    @classmethod
    def from_dict(cls, data: Any) -> PendingCall:
        if not isinstance(data, dict):
            raise SessionError("snapshot.pending: each entry must be an object")
        try:
            token, tool, args = data["token"], data["tool"], data["args"]
        except KeyError as exc:
            raise SessionError(f"snapshot.pending: missing {exc.args[0]}") from None
        if not isinstance(token, str) or not isinstance(tool, str) or not isinstance(args, dict):
            raise SessionError("snapshot.pending: token and tool must be strings, args an object")
        return cls(token, tool, args, str(data.get("preview", "")),
                   float(data.get("created_at", 0.0)))


@dataclass(frozen=True)
class CallResult:
    """What one call through a session did.

    ``reply`` is exactly what the model reads. ``status`` is ``ok`` (the tool ran and did what
    was asked), ``error`` (it did not run: unknown or unavailable tool, missing state, bad
    arguments, unknown token; or it refused: a conflict, a locked task, ... in the spec's words,
    or a JSON reply with ``success=false``), ``pending_confirm`` (a preview; ``confirm_token`` is set)
    or ``rejected``. ``changes`` are the change-log entries this call appended.
    """

    tool: str
    reply: str
    output: Literal["text", "json"] = "text"
    status: Status = "ok"
    error_code: str = ""
    confirm_token: str | None = None
    changes: tuple[Change, ...] = ()

    @property
    def data(self) -> Any:
        """The parsed reply of a JSON tool (``None`` for text)."""
        if self.output != "json":
            return None
        try:
            return json.loads(self.reply)
        except ValueError:
            return None

    @property
    def is_error(self) -> bool:
        """The call did not run, or a JSON tool answered ``success=false``."""
        if self.status == "error":
            return True
        data = self.data
        return isinstance(data, dict) and data.get("success") is False


class Session:
    """One ``(user, session)``: state, mode, change log and pending confirmations.

    Parameters
    ----------
    state
        The session's window (owned by the session from now on), or ``None`` for a chat without a
        loaded schedule (only ``needs_state=False`` tools then work).
    mode
        The execution mode (P1-D); it selects the offered tools and the prompt rules.
    user_id, session_id
        The owner and the id (a random unguessable id when not given).
    enabled_tools
        Tools offered in addition to the mode's (e.g. the hidden ``min_context_switch``).
    specs
        The registry table (default :data:`registry.TOOLS`); tests inject extra rows here.
    self_check, max_time_limit_s, num_workers
        Passed to the :class:`Toolbox`; the last two are server-side caps for solver tools.
    store, db_user_id
        The database backend and the database user for tools that write it
        (``upsert_task_class``); passed to the :class:`Toolbox`.
    """

    def __init__(
        self,
        state: ScheduleState | None = None,
        *,
        mode: Mode | str = Mode.FIRST_FULL,
        user_id: str = "",
        session_id: str | None = None,
        enabled_tools: Iterable[str] = (),
        specs: Sequence[ToolSpec] | None = None,
        self_check: bool | None = None,
        max_time_limit_s: float = 10.0,
        num_workers: int = 1,
        store: Any = None,
        db_user_id: int | None = None,
    ) -> None:
        self._specs: dict[str, ToolSpec] = {s.name: s for s in (specs or registry.TOOLS)}
        self._mode = _parse_mode(mode)
        enabled = tuple(dict.fromkeys(enabled_tools))
        unknown = [n for n in enabled if n not in self._specs]
        if unknown:
            raise SessionError(f"cannot enable unknown tool(s): {', '.join(unknown)}")
        self.enabled_tools: tuple[str, ...] = enabled
        self.user_id = user_id
        self.session_id = session_id or secrets.token_urlsafe(12)
        self.toolbox = Toolbox(state, self_check=self_check, max_time_limit_s=max_time_limit_s,
                               num_workers=num_workers, store=store, user_id=db_user_id)
        self.lock = threading.RLock()
        self._pending: dict[str, PendingCall] = {}
        self.created_at = self.last_used = time.time()

    # ------------------------------------------------------------------ properties
    @property
    def state(self) -> ScheduleState | None:
        return self.toolbox.state

    @property
    def changes(self) -> list[Change]:
        """The change log: every applied write, in order."""
        return list(self.toolbox.changes)

    @property
    def mode(self) -> Mode:
        return self._mode

    def set_mode(self, mode: Mode | str) -> None:
        """Switch the execution mode (the router does this per user request)."""
        with self.lock:
            self._mode = _parse_mode(mode)
            log.info("session %s mode=%s", self.session_id, self._mode.value)

    @property
    def specs(self) -> list[ToolSpec]:
        return list(self._specs.values())

    def visible_specs(self) -> list[ToolSpec]:
        specs = visible_specs(self.specs, self._mode, self.enabled_tools)
        # Without a loaded schedule only the tools that need none are offered.
        return specs if self.state is not None else [s for s in specs if not s.needs_state]

    def tool_names(self) -> list[str]:
        """The tools offered to the model in the current mode."""
        return [s.name for s in self.visible_specs()]

    def is_visible(self, name: str) -> bool:
        spec = self._specs.get(name)
        return spec is not None and (self._mode in spec.modes or name in self.enabled_tools)

    def schemas(self, fmt: str = "openai") -> list[dict[str, Any]]:
        """Tool definitions of the offered tools, in ``fmt`` (openai / anthropic / mcp)."""
        return tool_schemas(fmt, self._mode, specs=self.visible_specs(), include=self.enabled_tools)

    def rules(self) -> str:
        """The P1-C prompt rules of the current mode."""
        return prompt_rules(self._mode)

    def pending(self) -> list[PendingCall]:
        """Calls waiting for confirmation, oldest first."""
        with self.lock:
            return list(self._pending.values())

    # ------------------------------------------------------------------ calling
    def call(self, name: str, args: Any = None) -> str:
        """Run tool ``name`` (the model's view): always a reply, never an exception for bad input."""
        return self.invoke(name, args).reply

    def invoke(self, name: str, args: Any = None) -> CallResult:
        """Run tool ``name`` and report what happened (see :class:`CallResult`)."""
        with self.lock:
            self.last_used = time.time()
            spec = self._specs.get(name)
            if spec is None:
                names = "、".join(self.tool_names()) or "无"
                return CallResult(name, f"未知工具：{short_name(str(name))}。可用工具：{names}。",
                                  status="error",
                                  error_code="unknown_tool")
            if not self.is_visible(name):
                names = "、".join(self.tool_names()) or "无"
                msg = f"工具 {name} 在当前模式（{self._mode.value}）下不可用。可用工具：{names}。"
                return self._error(spec, "not_available", msg)
            parsed, refusal = self._validate(spec, args)
            if refusal is not None:
                return refusal
            log.info("session %s mode=%s tool=%s", self.session_id, self._mode.value, name)
            if spec.needs_confirm:
                return self._hold(spec, parsed)
            return self._run(spec, parsed)

    def _take(self, token: str, action: str, word: str) -> PendingCall | CallResult:
        """The held call of ``token``, removed from the pending ones, or the error reply."""
        self.last_used = time.time()
        held = self._pending.pop(token, None)
        if held is None:
            return CallResult(action, f"{word}失败：令牌 {token} 无效或已处理。",
                              status="error", error_code="unknown_token")
        return held

    def confirm(self, token: str) -> CallResult:
        """Run the held call of ``token`` (arguments are validated again against today's state)."""
        with self.lock:
            held = self._take(token, "confirm", "确认")
            if isinstance(held, CallResult):
                return held
            spec = self._specs.get(held.tool)
            if spec is None:
                return CallResult(held.tool, f"确认失败：工具 {held.tool} 已不存在。",
                                  status="error", error_code="unknown_tool")
            parsed, refusal = self._validate(spec, held.args)
            if refusal is not None:
                return refusal
            log.info("session %s confirm tool=%s", self.session_id, held.tool)
            return self._run(spec, parsed)

    def reject(self, token: str) -> CallResult:
        """Drop the held call of ``token``; nothing is written."""
        with self.lock:
            held = self._take(token, "reject", "取消")
            if isinstance(held, CallResult):
                return held
            spec = self._specs.get(held.tool)
            msg = f"已取消：{held.tool} 未执行，没有任何修改。"
            if spec is not None and spec.output == "json":
                reply = json.dumps({"tool": held.tool, "success": True, "status": "rejected",
                                    "error": "", "error_code": ""}, ensure_ascii=False)
                return CallResult(held.tool, reply, "json", status="rejected")
            return CallResult(held.tool, msg, status="rejected")

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> dict[str, Any]:
        """Everything needed to resume: state, mode, change log, pending confirmations."""
        with self.lock:
            state = self.state
            return {
                "version": SNAPSHOT_VERSION,
                "user_id": self.user_id,
                "session_id": self.session_id,
                "mode": self._mode.value,
                "enabled_tools": list(self.enabled_tools),
                "state": state.to_dict() if state is not None else None,
                "changes": [c.to_dict() for c in self.toolbox.changes],
                "pending": [p.to_dict() for p in self._pending.values()],
                "created_at": self.created_at,
            }

    def to_json(self) -> str:
        return json.dumps(self.snapshot(), ensure_ascii=False)

    @classmethod
    def restore(
        cls,
        snapshot: dict[str, Any] | str,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        specs: Sequence[ToolSpec] | None = None,
        self_check: bool | None = None,
        max_time_limit_s: float = 10.0,
        num_workers: int = 1,
        store: Any = None,
        db_user_id: int | None = None,
    ) -> Session:
        """Rebuild a session from :meth:`snapshot` (a dict or its JSON text).

        ``user_id`` / ``session_id`` override the snapshot's (a server restores under the caller).

        Raises
        ------
        SessionError
            One line naming what is wrong with the snapshot.
        """
        data = _load_snapshot(snapshot)
        state_data = data.get("state")
        if state_data is not None and not isinstance(state_data, dict):
            raise SessionError("snapshot.state must be an object or null")
        try:
            state = ScheduleState.from_json(state_data) if state_data is not None else None
        except StateError as exc:
            raise SessionError(f"snapshot.state: {exc}") from None
        enabled = data.get("enabled_tools", [])
        if not isinstance(enabled, list) or not all(isinstance(n, str) for n in enabled):
            raise SessionError("snapshot.enabled_tools must be a list of tool names")
        session = cls(
            state,
            mode=data.get("mode", Mode.FIRST_FULL.value),
            user_id=user_id if user_id is not None else str(data.get("user_id", "")),
            session_id=session_id or data.get("session_id") or None,
            enabled_tools=enabled,
            specs=specs,
            self_check=self_check,
            max_time_limit_s=max_time_limit_s,
            num_workers=num_workers,
            store=store,
            db_user_id=db_user_id,
        )
        changes = data.get("changes", [])
        pending = data.get("pending", [])
        if not isinstance(changes, list) or not isinstance(pending, list):
            raise SessionError("snapshot.changes and snapshot.pending must be lists")
        try:
            session.toolbox.changes.extend(Change.from_dict(c) for c in changes)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SessionError(f"snapshot.changes: malformed entry ({exc})") from None
        for entry in pending:
            held = PendingCall.from_dict(entry)
            if held.tool not in session._specs:
                raise SessionError(f"snapshot.pending: unknown tool {held.tool}")
            session._pending[held.token] = held
        created = data.get("created_at")
        if isinstance(created, int | float):
            session.created_at = float(created)
        return session

    # ------------------------------------------------------------------ internals
    def _validate(self, spec: ToolSpec, args: Any) -> tuple[Any, CallResult | None]:
        """Parse ``args`` as the Toolbox does; the replies are the Toolbox's, word for word."""
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return None, self._error(spec, "invalid_args", "参数应为 JSON 对象。", arg=True)
        if spec.needs_state and self.state is None:
            return None, self._error(spec, "no_state", f"当前没有加载日程，无法调用 {spec.name}。")
        try:
            parsed = spec.args_model.model_validate(drop_null_optionals(spec.args_model, args))
        except ValidationError as exc:
            return None, self._error(spec, "invalid_args", describe_validation_error(exc), arg=True)
        return parsed, None

    def _error(self, spec: ToolSpec, code: str, msg: str, *, arg: bool = False) -> CallResult:
        """A refusal decided before the handler, in the tool's own reply shape (as the Toolbox)."""
        text = f"参数错误：{msg}" if arg and spec.output == "text" else msg
        return CallResult(spec.name, spec.error(code, text), spec.output, "error", code)

    def _run(self, spec: ToolSpec, parsed: Any) -> CallResult:
        before = len(self.toolbox.changes)
        reply = self.toolbox.run(spec, parsed)
        applied = tuple(self.toolbox.changes[before:])
        if not is_refusal(reply, spec.output):
            return CallResult(spec.name, reply, spec.output, changes=applied)
        result = CallResult(spec.name, reply, spec.output, "error", "refused", changes=applied)
        data = result.data
        code = data.get("error_code") if isinstance(data, dict) else None
        return replace(result, error_code=code) if isinstance(code, str) and code else result

    def _hold(self, spec: ToolSpec, parsed: BaseModel) -> CallResult:
        token = secrets.token_urlsafe(9)
        args = parsed.model_dump(mode="json", exclude_unset=True)
        shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
        what = (spec.preview(self.toolbox.ctx, parsed) if spec.preview is not None
                else f"参数：{shown}")
        preview = (f"待确认：{spec.name} 尚未执行，需要用户确认。\n{what}\n"
                   f"确认令牌：{token}（用户确认后执行；用户拒绝则丢弃，不做任何修改）。")
        while len(self._pending) >= MAX_PENDING:
            self._pending.pop(next(iter(self._pending)))
        self._pending[token] = PendingCall(token, spec.name, args, preview, time.time())
        if spec.output == "json":
            reply = json.dumps({"tool": spec.name, "success": True, "status": "pending_confirm",
                                "confirm_token": token, "preview": {"tool": spec.name, "args": args},
                                "error": "", "error_code": ""}, ensure_ascii=False)
        else:
            reply = preview
        return CallResult(spec.name, reply, spec.output, "pending_confirm", confirm_token=token)


def _parse_mode(mode: Mode | str) -> Mode:
    try:
        return Mode(mode)
    except ValueError:
        names = ", ".join(m.value for m in Mode)
        raise SessionError(f"unknown mode {mode!r}; expected one of {names}") from None


def _load_snapshot(snapshot: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(snapshot, str):
        try:
            snapshot = json.loads(snapshot)
        except ValueError as exc:
            raise SessionError(f"snapshot is not valid JSON: {exc}") from None
    if not isinstance(snapshot, dict):
        raise SessionError("snapshot must be a JSON object")
    version = snapshot.get("version")
    if version != SNAPSHOT_VERSION:
        raise SessionError(f"snapshot version {version!r} is not supported "
                           f"(expected {SNAPSHOT_VERSION})")
    return snapshot


# ---------------------------------------------------------------------------------- store
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
