"""Sessions: one conversation's planning window, execution mode, change log, confirm gate and loop.

A :class:`Session` belongs to one ``(user, session)`` pair. It owns a :class:`Toolbox` over its own
state, the :class:`Mode` that selects the offered tools and the prompt rules (P1-D), the change log
of applied writes, the calls waiting for the user's confirmation, and the agent loop
(:class:`~.loop.LoopState`: rounds, close rules, the infeasible gate, the round log). Calls to one
session are serialised by its lock. Every call goes through :mod:`.pipeline`; the snapshot lives in
:mod:`.snapshot`, the in-memory store in :mod:`.session_store`.

The confirm gate: a tool with ``needs_confirm=True`` does not act when called; it returns a preview
and a token. :meth:`Session.confirm` runs the stored call, :meth:`Session.reject` drops it; nothing
is written without a confirm. A token is single-use and bound to the session it was issued in (its
id travels with the held call): a snapshot restored under another session id holds no tokens.

Requests (issue 27): a session works on one user request at a time. Creating a session starts
the first request in the given mode; :meth:`Session.begin_request` starts the next one (the host
calls it when the user asks again). Every tool call of the model is a round of the current
request: the :data:`~.loop.ROUND_CAP`-th is the last, later ones are refused (``round_cap``).
Once the request is closed (rules met, best achievable, no progress, round cap, risk accepted)
writes are refused (``request_closed``) until the next request; reads stay allowed (none after
the round cap). Confirming a held write is refused the same way (the token stays pending).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...solver.budget import DEFAULT_CALIBRATION, Calibration
from ...state import Change, ScheduleState
from ..core import pipeline, registry
from ..core.pipeline import CallResult, Status
from ..core.preview import PREVIEW_LINE, takes_preview
from ..core.schemas import tool_schemas, visible_specs
from ..core.spec import Mode, ToolSpec, is_refusal, refused
from ..core.toolbox import Toolbox
from .loop_state import ROUND_CAP, LoopState
from .prompts import prompt_rules
from .snapshot import (
    SNAPSHOT_VERSION,
    PendingCall,
    SessionError,
    fill_session,
    load_snapshot,
    snapshot_enabled,
    snapshot_state,
    take_snapshot,
)

if TYPE_CHECKING:
    from ...store.protocol import ScheduleStore

log = logging.getLogger(__name__)

MAX_PENDING = 20  # confirmations kept per session; the oldest is dropped beyond this

__all__ = [
    "MAX_PENDING",
    "SNAPSHOT_VERSION",
    "CallResult",
    "PendingCall",
    "Session",
    "SessionError",
    "SessionLimitError",
    "Status",
]


class SessionLimitError(SessionError):
    """The store holds as many sessions as it may (per user or in total)."""


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
    self_check, max_time_limit_s, num_workers, calibration
        Passed to the :class:`Toolbox`; the last three are server-side settings of solver tools
        (two caps and the solver's figures, :class:`~smartflow_engine.solver.budget.Calibration`).
    store, db_user_id
        The database backend and the database user for tools that write it
        (``upsert_task_class``); passed to the :class:`Toolbox`.
    frozen_days
        Days ``1..frozen_days`` are frozen (issue 28): writes that touch them are refused and
        proposals leave them as they are (:mod:`.freeze`). The first request's setting;
        :meth:`begin_request` can change it for the next one.
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
        store: ScheduleStore | None = None,
        db_user_id: int | None = None,
        frozen_days: int = 0,
        calibration: Calibration = DEFAULT_CALIBRATION,
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
        self.toolbox = Toolbox(
            state,
            self_check=self_check,
            max_time_limit_s=max_time_limit_s,
            num_workers=num_workers,
            store=store,
            user_id=db_user_id,
            loop=True,
            calibration=calibration,
        )
        self.frozen_days = frozen_days
        self.lock = threading.RLock()
        self._pending: dict[str, PendingCall] = {}
        # Set by a store shared between workers: marks a token used for every worker at once
        # (``False`` when another worker's request already used it); see ``_take``.
        self.claim_token: Callable[[PendingCall], bool] | None = None
        self.created_at = self.last_used = time.time()
        self._loop.request_mode = self._mode.value

    # ------------------------------------------------------------------ properties
    @property
    def state(self) -> ScheduleState | None:
        return self.toolbox.state

    @property
    def changes(self) -> list[Change]:
        """The change log: every applied write, in order."""
        return list(self.toolbox.changes)

    @property
    def frozen_days(self) -> int:
        """Days ``1..frozen_days`` are frozen for every call (0: none)."""
        return self.toolbox.ctx.frozen_days

    @frozen_days.setter
    def frozen_days(self, days: int) -> None:
        if isinstance(days, bool) or not isinstance(days, int) or days < 0:
            raise SessionError(f"frozen_days must be a whole number >= 0, not {days!r}")
        self.toolbox.ctx.frozen_days = days

    @property
    def mode(self) -> Mode:
        return self._mode

    def set_mode(self, mode: Mode | str) -> None:
        """Switch the execution mode (the router does this per user request)."""
        with self.lock:
            self._mode = _parse_mode(mode)
            self._loop.request_mode = self._mode.value  # the request goes on in the new mode
            log.info("session %s mode=%s", self.session_id, self._mode.value)

    @property
    def _loop(self) -> LoopState:
        loop = self.toolbox.ctx.loop
        assert loop is not None  # a session's toolbox always keeps the loop
        out: LoopState = loop
        return out

    def begin_request(
        self,
        mode: Mode | str | None = None,
        frozen_days: int | None = None,
        *,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Start the next user request in ``mode`` and return :meth:`request_info`.

        Without a mode: a window whose study tasks are all pending starts in ``first_full``,
        any other (or no window) in ``local_adjust``; ``global_reopt`` only when asked.
        ``frozen_days``: days ``1..frozen_days`` are frozen for the new request (0 lifts the
        freeze); ``None`` keeps the current setting (a student's lock-ahead lasts until changed).
        ``key``: the host's own id of the request (e.g. its user-message id, 1-64 characters);
        when it is the current request's key nothing starts (a retried or repeated start).

        Raises
        ------
        SessionError
            An unknown mode, a bad ``frozen_days`` or ``key`` (nothing changes).
        """
        if key is not None and not (isinstance(key, str) and 1 <= len(key) <= 64):
            raise SessionError(f"request key must be a string of 1-64 characters, not {key!r}")
        with self.lock:
            if key is not None and key == self._loop.request_key:
                return self.request_info()
            chosen = _parse_mode(mode) if mode is not None else default_mode(self.state)
            if frozen_days is not None:
                self.frozen_days = frozen_days  # SessionError before anything changed
            self._mode = chosen
            self._loop.begin_request(chosen.value, key or "")
            self.last_used = time.time()
            log.info(
                "session %s request=%d mode=%s frozen_days=%d",
                self.session_id,
                self._loop.request,
                chosen,
                self.frozen_days,
            )
            return self.request_info()

    def request_info(self) -> dict[str, Any]:
        """The current request: number, mode, frozen days, rounds used and left, close reason."""
        loop = self._loop
        return {
            "request": loop.request,
            "mode": self._mode.value,
            "frozen_days": self.frozen_days,
            "rounds": loop.calls,
            "rounds_left": max(0, ROUND_CAP - loop.calls),
            "closed": loop.close_reason is not None,
            "close_reason": loop.close_reason,
        }

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
            spec_of = self._specs.get(name) if isinstance(name, str) else None
            stop = self._loop.request_refusal(str(name), spec_of is not None and spec_of.is_write)
            if stop is not None:
                code, msg = stop
                if spec_of is not None and _is_preview(spec_of, args):
                    msg = f"{PREVIEW_LINE}\n{msg}"  # a preview answers what the write would
                return _stopped(spec_of, str(name), code, msg)
            if not (spec_of is not None and _is_preview(spec_of, args)):
                self._loop.count_call()  # a preview changes nothing, the round count included
            found = pipeline.lookup(
                self._specs,
                name,
                self.tool_names(),
                self.is_visible,
                f"在当前模式（{self._mode.value}）下不可用",
            )
            if isinstance(found, CallResult):
                return found
            spec = found
            parsed, refusal = pipeline.parse(spec, args, self.toolbox.ctx)
            if refusal is not None:
                return refusal
            ruled = registry.mode_refusal(self._mode, name, parsed, self.state)
            if ruled is not None:
                return pipeline.refusal(spec, "not_available", ruled)
            log.info("session %s mode=%s tool=%s", self.session_id, self._mode.value, name)
            if spec.needs_confirm:
                return self._hold(spec, parsed)
            return self._run(spec, parsed)

    def _take(self, token: str, action: str, word: str) -> PendingCall | CallResult:
        """The held call of ``token``, removed from the pending ones, or the error reply."""
        self.last_used = time.time()
        held = self._pending.pop(token, None)
        if held is not None and held.session_id != self.session_id:
            log.warning("session %s refused a token issued in another session", self.session_id)
            held = None  # bound to the session it was issued in (issue 24 item 9)
        if held is not None and self.claim_token is not None and not self.claim_token(held):
            log.warning("session %s refused a token another worker used", self.session_id)
            held = None  # single-use across workers: another request confirmed or rejected it
        if held is None:
            return CallResult(
                action,
                f"{word}失败：令牌 {token} 无效或已处理。",
                status="error",
                error_code="unknown_token",
            )
        return held

    def confirm(self, token: str) -> CallResult:
        """Run the held call of ``token`` (arguments are validated again against today's state)."""
        with self.lock:
            waiting = self._pending.get(token)
            if waiting is not None and waiting.tool in self._specs:
                spec_of = self._specs[waiting.tool]
                stop = self._loop.request_refusal(waiting.tool, spec_of.is_write)
                if stop is not None:  # the token stays pending for the next request
                    return _stopped(spec_of, waiting.tool, *stop)
            held = self._take(token, "confirm", "确认")
            if isinstance(held, CallResult):
                return held
            spec = self._specs.get(held.tool)
            if spec is None:
                return CallResult(
                    held.tool,
                    f"确认失败：工具 {held.tool} 已不存在。",
                    status="error",
                    error_code="unknown_tool",
                )
            parsed, refusal = pipeline.parse(spec, held.args, self.toolbox.ctx)
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
                reply = json.dumps(
                    {
                        "tool": held.tool,
                        "success": True,
                        "status": "rejected",
                        "error": "",
                        "error_code": "",
                    },
                    ensure_ascii=False,
                )
                return CallResult(held.tool, reply, "json", status="rejected")
            return CallResult(held.tool, msg, status="rejected")

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> dict[str, Any]:
        """Everything needed to resume: state, mode, change log, pending confirmations, loop."""
        with self.lock:
            return take_snapshot(self)

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
        store: ScheduleStore | None = None,
        db_user_id: int | None = None,
        calibration: Calibration = DEFAULT_CALIBRATION,
    ) -> Session:
        """Rebuild a session from :meth:`snapshot` (a dict or its JSON text).

        ``user_id`` / ``session_id`` override the snapshot's (a server restores under the caller).

        Raises
        ------
        SessionError
            One line naming what is wrong with the snapshot.
        """
        data = load_snapshot(snapshot)
        state = snapshot_state(data)
        enabled = snapshot_enabled(data)
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
            calibration=calibration,
        )
        fill_session(session, data)
        return session

    # ------------------------------------------------------------------ internals
    def hold_call(self, held: PendingCall) -> None:
        """Keep ``held`` among the pending confirmations (the oldest dropped beyond the cap)."""
        while len(self._pending) >= MAX_PENDING:
            self._pending.pop(next(iter(self._pending)))
        self._pending[held.token] = held

    def _run(self, spec: ToolSpec, parsed: Any) -> CallResult:
        loop = self.toolbox.ctx.loop
        mark = loop.mark() if loop is not None else (0, 0)
        result = pipeline.execute(self.toolbox.ctx, spec, parsed, check=self.toolbox.self_check)
        if loop is not None:  # the round log says in which mode each round and write ran
            loop.stamp(mark, mode=self._mode.value)
        return result

    def _hold(self, spec: ToolSpec, parsed: BaseModel) -> CallResult:
        token = secrets.token_urlsafe(9)
        args = parsed.model_dump(mode="json", exclude_unset=True)
        shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
        what = (
            spec.preview(self.toolbox.ctx, parsed) if spec.preview is not None else f"参数：{shown}"
        )
        if is_refusal(what, spec.output):  # it cannot run here at all: nothing to confirm
            return pipeline.refused_result(spec, what)
        preview = (
            f"待确认：{spec.name} 尚未执行，需要用户确认。\n{what}\n"
            f"确认令牌：{token}（用户确认后执行；用户拒绝则丢弃，不做任何修改）。"
        )
        self.hold_call(PendingCall(token, spec.name, args, preview, time.time(), self.session_id))
        if spec.output == "json":
            reply = json.dumps(
                {
                    "tool": spec.name,
                    "success": True,
                    "status": "pending_confirm",
                    "confirm_token": token,
                    "preview": {"tool": spec.name, "args": args},
                    "error": "",
                    "error_code": "",
                },
                ensure_ascii=False,
            )
        else:
            reply = preview
        return CallResult(spec.name, reply, spec.output, "pending_confirm", confirm_token=token)


def default_mode(state: ScheduleState | None) -> Mode:
    """P1-D's routing, the part the engine can do: ``first_full`` when the window has study tasks
    and all of them are pending, else ``local_adjust``."""
    if state is None:
        return Mode.LOCAL_ADJUST
    study = [t for t in state.tasks if t.source == "task_item"]  # study tasks (p1 §3.1)
    if study and all(t.status == "pending" for t in study):
        return Mode.FIRST_FULL
    return Mode.LOCAL_ADJUST


def _stopped(spec: ToolSpec | None, name: str, code: str, msg: str) -> CallResult:
    """A call the request no longer takes, in the tool's reply shape when the tool is known."""
    if spec is not None:
        return pipeline.refusal(spec, code, msg)
    return CallResult(name, refused(msg), status="error", error_code=code)


def _parse_mode(mode: Mode | str) -> Mode:
    try:
        return Mode(mode)
    except ValueError:
        names = ", ".join(m.value for m in Mode)
        raise SessionError(f"unknown mode {mode!r}; expected one of {names}") from None


def _is_preview(spec: ToolSpec, args: Any) -> bool:
    """A call that asks for a preview of a write that takes one (issue 28: not a round)."""
    return isinstance(args, dict) and args.get("preview") is True and takes_preview(spec)
