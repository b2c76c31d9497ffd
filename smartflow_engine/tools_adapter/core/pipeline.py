"""One path for every tool call: look the tool up, parse its arguments, check the state, run the
handler and record what it changed.

:class:`~.toolbox.Toolbox` and :class:`~.session.Session` (and through them MCP and HTTP) call
:func:`lookup`, :func:`parse` and :func:`execute`; no other module parses arguments or appends to
the change log. A refusal decided here comes back as a :class:`CallResult` in the tool's own reply
shape (text, or the JSON envelope with ``success=false`` and a stable ``error_code``).

When the context carries a :class:`~.loop.LoopState` (a :class:`Session` does), :func:`execute`
also applies the loop's rules around the handler: the infeasible gate before a write, rounds and
close rules after ``analyze_health``, and the evidence line and round-log entry after a write.
Last, every reply is capped (:mod:`.cap`): no reply a model reads exceeds 64 KB.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from ...state import Change, SelfCheckError, self_check
from . import disruption
from .args import describe_validation_error, short_name
from .cap import cap_reply
from .freeze import run_handler
from .preview import run_preview, wants_preview
from .render import labelled_days
from .schemas import drop_null_optionals
from .spec import (
    UNKNOWN_WORD,
    ToolContext,
    ToolSpec,
    failure_form,
    failure_text,
    is_refusal,
    refused,
)

log = logging.getLogger(__name__)

Status = Literal["ok", "error", "pending_confirm", "rejected"]


@dataclass(frozen=True)
class CallResult:
    """What one call did.

    ``reply`` is exactly what the model reads. ``status`` is ``ok`` (the tool ran and did what
    was asked), ``error`` (it did not run: unknown or unavailable tool, missing state, bad
    arguments, the infeasible gate, unknown token; or it refused: a conflict, a locked task, ...
    in the spec's words, or a JSON reply with ``success=false``), ``pending_confirm`` (a preview;
    ``confirm_token`` is set) or ``rejected``. ``changes`` are the change-log entries this call
    appended.
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


def refusal(spec: ToolSpec, code: str, msg: str, *, arg: bool = False) -> CallResult:
    """A refusal decided outside the handler, in the tool's own reply shape: for a text tool
    ``X失败：msg`` (``X失败：参数错误，msg`` for an argument), for a JSON tool the envelope with
    ``success=false``, ``error=msg`` and ``error_code=code``."""
    text = (
        failure_text(spec.name, f"参数错误，{msg}" if arg else msg)
        if spec.output == "text"
        else msg
    )
    return CallResult(spec.name, spec.error(code, text), spec.output, "error", code)


def unknown_tool_text(name: str, offered: list[str]) -> str:
    """The one wording of an unknown tool, on every surface (Toolbox, Session, HTTP, MCP, CLI)."""
    names = "、".join(offered) or "无"
    return f"{UNKNOWN_WORD}失败：未知工具 {short_name(str(name))}。可用工具：{names}。"


def refused_result(spec: ToolSpec, reply: str, changes: tuple[Change, ...] = ()) -> CallResult:
    """The result of a reply that :func:`~.spec.is_refusal`: ``status="error"`` with the reply's
    own stable code (a JSON reply's ``error_code``, a text refusal's ``error_code``), or
    ``refused``."""
    data = json.loads(reply) if spec.output == "json" else None
    code = data.get("error_code") if isinstance(data, dict) else getattr(reply, "error_code", "")
    code = code if isinstance(code, str) and code else "refused"
    return CallResult(spec.name, reply, spec.output, "error", code, changes=changes)


def lookup(
    specs: Mapping[str, ToolSpec],
    name: str,
    offered: list[str],
    is_offered: Callable[[str], bool],
    unavailable: str,
) -> ToolSpec | CallResult:
    """The row of ``name``, or the refusal for an unknown tool or one not offered here
    (``unavailable`` says why, e.g. the mode)."""
    spec = specs.get(name)
    if spec is None:
        return CallResult(
            str(name),
            refused(unknown_tool_text(name, offered), "unknown_tool"),
            status="error",
            error_code="unknown_tool",
        )
    if not is_offered(name):
        names = "、".join(offered) or "无"
        return refusal(spec, "not_available", f"工具 {name} {unavailable}。可用工具：{names}。")
    return spec


def parse(spec: ToolSpec, args: Any, ctx: ToolContext) -> tuple[Any, CallResult | None]:
    """``(parsed, None)`` or ``(None, refusal)``: the JSON object check, the state check, the
    argument model (strict-mode ``null`` meaning "not given")."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None, refusal(spec, "invalid_args", "参数应为 JSON 对象。", arg=True)
    if spec.needs_state and ctx.state is None:
        return None, refusal(spec, "no_state", f"当前没有加载日程，无法调用 {spec.name}。")
    try:
        parsed = spec.args_model.model_validate(drop_null_optionals(spec.args_model, args))
    except ValidationError as exc:
        return None, refusal(spec, "invalid_args", describe_validation_error(exc), arg=True)
    return parsed, None


def execute(ctx: ToolContext, spec: ToolSpec, parsed: Any, *, check: bool = False) -> CallResult:
    """Run an already-parsed call: the loop's gate, the handler, the change log, the loop's
    bookkeeping, and (``check``) a full self-check of the state after a write. A write called
    with ``preview=true`` runs all of this on a copy that is then dropped (:mod:`.preview`)."""
    if wants_preview(spec, parsed):
        return run_preview(ctx, spec, parsed, lambda c, s, p: execute(c, s, p, check=check))
    ctx.call_started = time.perf_counter()
    loop = ctx.loop
    if loop is not None:
        blocked = loop.before(ctx, spec, parsed)
        if blocked is not None:
            return refusal(spec, blocked[0], blocked[1], arg=blocked[0] == "invalid_args")
    before = loop.issues_before(ctx, spec) if loop is not None else None
    key = disruption.key_before(ctx, spec)
    ctx.applied, ctx.proposed = [], None
    with labelled_days(ctx.day_labels, lambda: ctx.state):  # the session's day labels
        try:
            reply = run_handler(ctx, spec, parsed)  # honours frozen days (:mod:`.freeze`)
        except SelfCheckError:
            raise
        except Exception as exc:  # a bug must not reach the model as a traceback
            log.exception("tool %s failed", spec.name)
            ctx.applied = []
            return refusal(spec, "internal_error", f"内部错误（{type(exc).__name__}）。")
        applied, ctx.applied = tuple(ctx.applied), []
        ctx.changes.extend(applied)  # the one place the change log grows
        if spec.is_write and check and ctx.state is not None:
            self_check(ctx.state)
        if is_refusal(reply, spec.output):  # the tool refused: nothing was done
            if spec.output == "text":
                reply = failure_form(spec.name, reply)  # one form for every text refusal
            return refused_result(spec, cap_reply(spec, reply), applied)
        reply = disruption.annotate(ctx, reply, applied, key)  # issue 28: how much moved
        if loop is not None:
            reply = loop.after(ctx, spec, parsed, reply, applied, before)
        reply = cap_reply(spec, reply)  # issue 45: what a model reads is bounded, every surface
        if is_refusal(reply, spec.output):  # (a JSON reply no cut brings under the cap)
            return refused_result(spec, reply, applied)
        return CallResult(spec.name, reply, spec.output, changes=applied)
