"""Preview of any write (issue 28 item 3): ``preview: true`` runs the write on a copy.

Every write tool that acts at once (not the confirm-gated ``commit`` / ``upsert_task_class``,
whose gate is already their preview) takes ``preview``. :func:`run_preview` copies what a call
may touch (the state, the change log, the session's loop: rounds, round log, best state, the
negotiation gate), runs the very same call path on the copy without ``preview``, and discards the
copy. The reply is the write's own reply (success or refusal layout, evidence line) under one
first line, :data:`PREVIEW_LINE`; its status and ``error_code`` are the write's. Nothing of the
session changes, so a later real call with the same arguments answers the same. The
re-optimising writes (apply_proposal, spread_even, min_context_switch) keep the preview's plan
(``ToolContext.plans``) and the real call on the unchanged state takes it instead of searching
again: a search cut by the wall clock on a loaded machine could otherwise end elsewhere.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, create_model

from .spec import Refused, ToolContext, ToolSpec, refused

if TYPE_CHECKING:
    from .pipeline import CallResult

PREVIEW_LINE = "预览（未执行，状态未改变）："
# Writes that act at once and so take ``preview``: every write but the confirm-gated ones.
PREVIEW_DESCRIPTION = "true：只预览，不执行"


def takes_preview(spec: ToolSpec) -> bool:
    """Whether ``spec`` gets the ``preview`` argument (a write without a confirm gate)."""
    return spec.is_write and not spec.needs_confirm


def with_preview(spec: ToolSpec) -> ToolSpec:
    """``spec`` with the optional ``preview`` argument added to its argument model."""
    base = spec.args_model
    fields: dict[str, Any] = {
        "preview": (bool, Field(default=False, description=PREVIEW_DESCRIPTION)),
    }
    model: type[BaseModel] = create_model(base.__name__, __base__=base, **fields)
    model.__doc__ = base.__doc__
    return dataclasses.replace(spec, args_model=model)


def wants_preview(spec: ToolSpec, parsed: Any) -> bool:
    return takes_preview(spec) and getattr(parsed, "preview", False) is True


def preview_reply(reply: str) -> str:
    """``reply`` under the preview line, still a refusal (with its code) when it was one."""
    text = f"{PREVIEW_LINE}\n{reply}"
    if isinstance(reply, Refused):
        return refused(text, reply.error_code)
    return text


def run_preview(
    ctx: ToolContext,
    spec: ToolSpec,
    parsed: BaseModel,
    run: Callable[[ToolContext, ToolSpec, Any], CallResult],
) -> CallResult:
    """Run ``spec`` through ``run`` (the pipeline's own execute) on a copy of ``ctx`` and return
    its result under the preview line, with no changes reported (none were made)."""
    shadow = dataclasses.replace(
        ctx,
        state=ctx.state.copy_state() if ctx.state is not None else None,
        changes=list(ctx.changes),
        loop=copy.deepcopy(ctx.loop),
        applied=[],
        previewing=True,
    )
    real = parsed.model_copy(update={"preview": False})
    result = run(shadow, spec, real)
    reply = result.reply
    if result.output == "text":
        reply = preview_reply(reply)
    return dataclasses.replace(result, reply=reply, changes=())
