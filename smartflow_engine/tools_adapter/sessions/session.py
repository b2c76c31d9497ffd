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
A preview that would write nothing (``commit`` without changes) holds nothing: the call runs.

A confirm writes exactly what the user was shown (issue 44 item 1). A held call carries the
digest of what its preview described (:class:`~.snapshot.PendingCall`): the tool and its
arguments and, for a tool that acts on the session's window, the window and the change log.
The preview shows the digest's first characters as its number. A confirm recomputes the digest
under the session's lock and runs the call only when it is the one shown; otherwise it is
refused (``preview_changed``) naming what changed meanwhile (e.g. the writes that came in while
the user read), nothing runs and the token is spent: the model previews again and the user
confirms the new preview. MCP's elicitation binds its question the same way
(:meth:`Session.preview_call` / :meth:`Session.confirm_call`).

Requests (issue 27): a session works on one user request at a time. Creating a session starts
the first request in the given mode; :meth:`Session.begin_request` starts the next one (the host
calls it when the user asks again). Every tool call of the model is a round of the current
request: the :data:`~.loop.ROUND_CAP`-th is the last, later ones are refused (``round_cap``).
Once the request is closed (rules met, best achievable, no progress, round cap, risk accepted)
writes are refused (``request_closed``) until the next request; reads stay allowed (none after
the round cap). Confirming a held write is refused the same way (the token stays pending).
"""

from __future__ import annotations

import hashlib
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
from ..core.args import short_name
from ..core.pipeline import CallResult, Status
from ..core.preview import PREVIEW_LINE, takes_preview
from ..core.render import DayLabels
from ..core.schemas import tool_schemas, visible_specs
from ..core.spec import UNKNOWN_WORD, Mode, NothingToConfirm, ToolSpec, is_refusal, refused
from ..core.toolbox import Toolbox, check_day_labels
from .loop_state import ROUND_CAP, LoopState
from .prompts import prompt_rules
from .snapshot import (
    SNAPSHOT_VERSION,
    TOKEN_LINE,
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
PREVIEW_CHANGED = "preview_changed"  # a confirm refused: the session changed since the preview
_SHOWN_CHANGES = 5  # changes named one by one in a preview_changed refusal

__all__ = [
    "MAX_PENDING",
    "PREVIEW_CHANGED",
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
    day_labels
        How text replies name a day (issue 43): ``index`` (the spec's ``第6天``) or ``weekday``
        (``第6天(星期六)``, with the week when the window spans several); default the
        ``SMARTFLOW_DAY_LABELS`` setting. Kept in the snapshot.
    db_window
        Whether ``state`` was loaded from ``store`` for ``db_user_id`` (the default: a caller
        that passes a store with a window passes that store's window). ``False`` for a window a
        caller posted: ``commit`` and ``reload`` then refuse (``not_from_database``), while
        ``upsert_task_class`` still writes the user's task classes (issue 44 item 5).
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
        day_labels: DayLabels | None = None,
        db_window: bool = True,
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
            day_labels=_labels(day_labels),
        )
        self.frozen_days = frozen_days
        self.toolbox.ctx.db_window = db_window
        self.lock = threading.RLock()
        self._pending: dict[str, PendingCall] = {}
        # Set by a store shared between workers (:class:`~.store.RedisSessionStore`): called
        # right before a confirmed call acts outside the session (a database write). It secures
        # the session's next version for this request, so that the write back after the effect
        # cannot lose (issue 44 item 3), and raises when another request changed the session
        # first (the caller then reloads it and tries again; nothing ran).
        self.before_effect: Callable[[], None] | None = None
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
    def db_window(self) -> bool:
        """Whether the window was loaded from the database (commit and reload act on it)."""
        return bool(self.toolbox.ctx.db_window)

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
    def existing_fixed(self) -> bool:
        """Existing entries are facts (issue 42): only suggested and pending tasks may move."""
        return self.toolbox.ctx.existing_fixed

    @existing_fixed.setter
    def existing_fixed(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise SessionError(f"existing_fixed must be true or false, not {value!r}")
        self.toolbox.ctx.existing_fixed = value

    @property
    def day_labels(self) -> DayLabels:
        """How text replies name a day: ``index`` or ``weekday``."""
        return self.toolbox.ctx.day_labels

    @day_labels.setter
    def day_labels(self, value: DayLabels) -> None:
        labels = _labels(value)
        assert labels is not None
        self.toolbox.ctx.day_labels = labels

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
        existing_fixed: bool | None = None,
    ) -> dict[str, Any]:
        """Start the next user request in ``mode`` and return :meth:`request_info`.

        Without a mode: a window whose study tasks are all pending starts in ``first_full``,
        any other (or no window) in ``local_adjust``; ``global_reopt`` only when asked.
        ``frozen_days``: days ``1..frozen_days`` are frozen for the new request (0 lifts the
        freeze); ``None`` keeps the current setting (a student's lock-ahead lasts until changed).
        ``key``: the host's own id of the request (e.g. its user-message id, 1-64 characters);
        when it is the current request's key nothing starts (a retried or repeated start).
        ``existing_fixed``: existing entries are facts for the new request (only suggested and
        pending tasks move); ``None`` keeps the current setting (off by default: the spec lets
        an existing task move).

        Raises
        ------
        SessionError
            An unknown mode, a bad ``frozen_days``, ``key`` or ``existing_fixed`` (nothing
            changes).
        """
        if key is not None and not (isinstance(key, str) and 1 <= len(key) <= 64):
            raise SessionError(f"request key must be a string of 1-64 characters, not {key!r}")
        with self.lock:
            if key is not None and key == self._loop.request_key:
                return self.request_info()
            chosen = _parse_mode(mode) if mode is not None else default_mode(self.state)
            if existing_fixed is not None and not isinstance(existing_fixed, bool):
                raise SessionError(f"existing_fixed must be true or false, not {existing_fixed!r}")
            if frozen_days is not None:
                self.frozen_days = frozen_days  # SessionError before anything changed
            if existing_fixed is not None:
                self.existing_fixed = existing_fixed
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
            "existing_fixed": self.existing_fixed,
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
            found = self._enter(name, args, count=not self._asks_preview(name, args))
            if isinstance(found, CallResult):
                return found
            spec, parsed = found
            if spec.needs_confirm:
                return self._hold(spec, parsed)
            return self._run(spec, parsed)

    def preview_call(self, name: str, args: Any = None) -> PendingCall | CallResult:
        """What confirming the confirm-required call ``name(args)`` would do, for a surface that
        asks the user itself (MCP's elicitation): the :class:`PendingCall` with its preview and
        digest, not kept (no token is issued, no round is counted); or the call's result when it
        is refused before any confirm, or when it would write nothing (it has then run)."""
        with self.lock:
            found = self._enter(name, args, count=False)
            if isinstance(found, CallResult):
                return found
            spec, parsed = found
            if not spec.needs_confirm:
                return pipeline.refusal(spec, "not_available", f"{name} 不需要用户确认。")
            bound = self._bind(spec, parsed)
            if bound is None:  # nothing to confirm: this is the call's round
                self._loop.count_call()
                return self._run(spec, parsed)
            return bound  # the held call as it would be, or the refusal

    def confirm_call(self, name: str, args: Any, shown: PendingCall) -> CallResult:
        """Run the confirm-required call ``name(args)`` the user approved after seeing ``shown``
        (a :meth:`preview_call`): one round; refused (``preview_changed``, nothing runs) unless
        the call would still do exactly what ``shown`` described."""
        with self.lock:
            found = self._enter(name, args, count=True)
            if isinstance(found, CallResult):
                return found
            spec, parsed = found
            args = parsed.model_dump(mode="json", exclude_unset=True)
            if self._binding(spec, args)[0] != shown.digest or spec.name != shown.tool:
                return self._changed(spec, shown)
            log.info("session %s confirm tool=%s (asked)", self.session_id, name)
            return self._effect(spec, parsed)

    def _enter(
        self, name: str, args: Any, *, count: bool
    ) -> tuple[ToolSpec, BaseModel] | CallResult:
        """The checks every call passes before it runs or is held: the request's state (a
        round counted when ``count``), the tool offered in this mode, its arguments, the mode's
        own rules. The parsed call, or the refusal."""
        self.last_used = time.time()
        spec_of = self._specs.get(name) if isinstance(name, str) else None
        stop = self._loop.request_refusal(
            short_name(str(name)), spec_of is not None and spec_of.is_write
        )
        if stop is not None:
            code, msg = stop
            if spec_of is not None and _is_preview(spec_of, args):
                msg = f"{PREVIEW_LINE}\n{msg}"  # a preview answers what the write would
            return _stopped(spec_of, name, code, msg)
        if count:
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
        return spec, parsed

    def _asks_preview(self, name: Any, args: Any) -> bool:
        spec = self._specs.get(name) if isinstance(name, str) else None
        return spec is not None and _is_preview(spec, args)

    def _take(self, token: str, action: str, word: str) -> PendingCall | CallResult:
        """The held call of ``token``, removed from the pending ones, or the error reply."""
        self.last_used = time.time()
        held = self._pending.pop(token, None)
        if held is not None and held.session_id != self.session_id:
            log.warning("session %s refused a token issued in another session", self.session_id)
            held = None  # bound to the session it was issued in (issue 24 item 9)
        if held is None:
            return CallResult(
                action,
                f"{word}失败：令牌 {token} 无效或已处理。",
                status="error",
                error_code="unknown_token",
            )
        return held

    def confirm(self, token: str) -> CallResult:
        """Run the held call of ``token`` when it still does what its preview showed (arguments
        validated again against today's state; see the module docstring)."""
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
            if self._binding(spec, held.args)[0] != held.digest:
                return self._changed(spec, held)
            log.info("session %s confirm tool=%s", self.session_id, held.tool)
            return self._effect(spec, parsed)

    def _effect(self, spec: ToolSpec, parsed: BaseModel) -> CallResult:
        """Run a confirmed call (it may act outside the session): the store secures the
        session's write back first (:attr:`before_effect`)."""
        if self.before_effect is not None:
            self.before_effect()
        return self._run(spec, parsed)

    def _changed(self, spec: ToolSpec, shown: PendingCall) -> CallResult:
        """The refusal of a confirm whose call no longer does what the user was shown."""
        what = self._drift(shown)
        log.info("session %s confirm of %s refused: %s", self.session_id, spec.name, what)
        text = (
            f"确认失败：{what}用户确认的是之前的预览（编号 {shown.digest[:8]}），"
            f"{spec.name} 未执行，没有写入任何内容。请重新调用 {spec.name} 预览，"
            "并请用户确认新的预览。"
        )
        # Headed 确认失败 (not the tool's 提交失败): what failed is the user's confirmation.
        return CallResult(
            spec.name, spec.error(PREVIEW_CHANGED, text), spec.output, "error", PREVIEW_CHANGED
        )

    def _drift(self, shown: PendingCall) -> str:
        """What changed in the session between the preview ``shown`` and now, in words."""
        changes = self.toolbox.changes
        if len(changes) >= shown.seen and _log_digest(changes[: shown.seen]) == shown.log:
            extra = changes[shown.seen :]
            if not extra:
                return "预览之后日程有了变化（如窗口调整）。"
            named = "；".join(_change_text(self.state, c) for c in extra[:_SHOWN_CHANGES])
            more = f"等 {len(extra)} 项" if len(extra) > _SHOWN_CHANGES else ""
            return (
                f"预览时会话有 {shown.seen} 项未提交的修改，之后又新增了 {len(extra)} 项"
                f"（{named}{more}），现在共 {len(changes)} 项。"
            )
        return (
            f"预览时的 {shown.seen} 项修改已不在会话中（已提交、重新加载或被替换），"
            f"现在有 {len(changes)} 项未提交的修改。"
        )

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

    def _binding(self, spec: ToolSpec, args: dict[str, Any]) -> tuple[str, int, str]:
        """``(digest, changes, log digest)`` of what confirming ``spec(args)`` would act on:
        the call and, for a tool that needs the window, the window and the change log."""
        changes = self.toolbox.changes if spec.needs_state else []
        state = self.state.to_dict() if spec.needs_state and self.state is not None else None
        log_digest = _log_digest(changes)
        digest = _digest({"tool": spec.name, "args": args, "state": state, "log": log_digest})
        return digest, len(changes), log_digest

    def _bind(self, spec: ToolSpec, parsed: BaseModel) -> PendingCall | CallResult | None:
        """The held call ``spec(parsed)`` would be, with its preview and digest (a fresh token,
        kept nowhere yet); ``None`` when the preview says it would write nothing; the refusal
        when the preview says it cannot run here at all."""
        args = parsed.model_dump(mode="json", exclude_unset=True)
        if spec.preview is not None:
            what = spec.preview(self.toolbox.ctx, parsed)
        else:
            what = f"参数：{json.dumps(args, ensure_ascii=False, sort_keys=True)}"
        if isinstance(what, NothingToConfirm):
            return None
        if is_refusal(what, spec.output):
            return pipeline.refused_result(spec, what)
        digest, seen, log_digest = self._binding(spec, args)
        token = secrets.token_urlsafe(9)
        preview = (
            f"待确认：{spec.name} 尚未执行，需要用户确认。\n{what}\n"
            f"预览编号：{digest[:8]}（确认只对这份预览有效；会话之后有变化则需重新预览）\n"
            f"{TOKEN_LINE}{token}（用户确认后执行；用户拒绝则丢弃，不做任何修改）。"
        )
        return PendingCall(
            token,
            spec.name,
            args,
            preview,
            time.time(),
            self.session_id,
            digest=digest,
            seen=seen,
            log=log_digest,
        )

    def _hold(self, spec: ToolSpec, parsed: BaseModel) -> CallResult:
        held = self._bind(spec, parsed)
        if held is None:  # nothing to confirm: the call runs (it writes nothing)
            return self._run(spec, parsed)
        if isinstance(held, CallResult):  # it cannot run here at all: nothing to confirm
            return held
        self.hold_call(held)
        if spec.output == "json":
            reply = json.dumps(
                {
                    "tool": spec.name,
                    "success": True,
                    "status": "pending_confirm",
                    "confirm_token": held.token,
                    "preview": {"tool": spec.name, "args": held.args, "digest": held.digest[:8]},
                    "error": "",
                    "error_code": "",
                },
                ensure_ascii=False,
            )
        else:
            reply = held.preview
        return CallResult(
            spec.name, reply, spec.output, "pending_confirm", confirm_token=held.token
        )


def _digest(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _log_digest(changes: Sequence[Change]) -> str:
    return _digest([c.to_dict() for c in changes])


def _change_text(state: ScheduleState | None, change: Change) -> str:
    """One change of the log in the model's terms: ``move [6]高数复习 → 第5天第3-4节``."""
    task = state.task(change.task_id) if state is not None else None
    who = f"[{change.task_id}]{task.name}" if task is not None else f"[{change.task_id}]"
    block = change.block_after
    if block is None:
        return f"{change.op} {who} → 待安排"
    periods = (
        f"第{block.slot_start}节"
        if block.slot_start == block.slot_end
        else f"第{block.slot_start}-{block.slot_end}节"
    )
    return f"{change.op} {who} → 第{block.day}天{periods}"


def default_mode(state: ScheduleState | None) -> Mode:
    """P1-D's routing, the part the engine can do: ``first_full`` when the window has study tasks
    and all of them are pending, else ``local_adjust``."""
    if state is None:
        return Mode.LOCAL_ADJUST
    study = [t for t in state.tasks if t.source == "task_item"]  # study tasks (p1 §3.1)
    if study and all(t.status == "pending" for t in study):
        return Mode.FIRST_FULL
    return Mode.LOCAL_ADJUST


def _stopped(spec: ToolSpec | None, name: Any, code: str, msg: str) -> CallResult:
    """A call the request no longer takes, in the tool's reply shape when the tool is known
    (``调用失败：`` before the reason for a name that is no tool)."""
    if spec is not None:
        return pipeline.refusal(spec, code, msg)
    text = f"{UNKNOWN_WORD}失败：{msg}"
    return CallResult(str(name), refused(text, code), status="error", error_code=code)


def _labels(value: Any) -> DayLabels | None:
    """``value`` as a day-label style (``None``: the setting's default), or ``SessionError``."""
    if value is None:
        return None
    try:
        return check_day_labels(value)
    except ValueError as exc:
        raise SessionError(str(exc)) from None


def _parse_mode(mode: Mode | str) -> Mode:
    try:
        return Mode(mode)
    except ValueError:
        names = ", ".join(m.value for m in Mode)
        raise SessionError(f"unknown mode {mode!r}; expected one of {names}") from None


def _is_preview(spec: ToolSpec, args: Any) -> bool:
    """A call that asks for a preview of a write that takes one (issue 28: not a round)."""
    return isinstance(args, dict) and args.get("preview") is True and takes_preview(spec)
