"""Frozen days on the tool surface (issue 28 item 1).

Days ``1..k`` are frozen by the session (``Session(frozen_days=k)``, the HTTP session field
``frozen_days``; kept in :attr:`.spec.ToolContext.frozen_days`, where a request setting can put it
later) or by a call's ``frozen_until_day`` (the larger of the two wins). Then:

- the simple writes (place, move, swap, batch_move, unplace) that would touch a frozen day (take
  a task from it or put one on it) are refused, ``error_code="frozen_day"``, naming the range;
- the solver tools (check_feasibility, propose_placement, apply_proposal, spread_even,
  min_context_switch) run on :func:`~smartflow_engine.state.freeze.frozen_view` of the state, in
  which tasks on frozen days are fixed and the frozen days have no free period; a write's result
  is mapped back with :func:`~smartflow_engine.state.freeze.thaw`.

With the request option ``existing_fixed`` (:attr:`.spec.ToolContext.existing_fixed`, issue 42)
the simple writes refuse to move an existing task (the state operations' own rule) and the solver
tools run on :func:`~smartflow_engine.state.freeze.existing_fixed_view`, in which every existing
task is fixed.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from pydantic import BaseModel, Field, create_model

from ...state.freeze import (
    existing_fixed_view,
    frozen_blocks,
    frozen_count,
    frozen_view,
    task_days,
    thaw,
)
from .args import Day
from .spec import Refused, ToolContext, ToolSpec, failure_head, is_refusal, refused

ERROR_CODE = "frozen_day"
SIMPLE_WRITES: dict[str, str] = {
    name: failure_head(name) for name in ("place", "move", "swap", "batch_move", "unplace")
}
# Writes whose effect is not known from their arguments: tried on a copy first, refused when the
# copy's frozen days changed.
TRIED_WRITES: dict[str, str] = {
    name: failure_head(name) for name in ("restore_best", "resolve_negotiation")
}
# Tools that take ``frozen_until_day`` and run on the frozen view.
SOLVER_TOOLS: frozenset[str] = frozenset(
    {
        "check_feasibility",
        "propose_placement",
        "apply_proposal",
        "spread_even",
        "min_context_switch",
    }
)
FROZEN_DESCRIPTION = "冻结第1..N天；缺省用会话设置"


def with_frozen_arg(spec: ToolSpec) -> ToolSpec:
    """``spec`` with the optional ``frozen_until_day`` argument."""
    base = spec.args_model
    fields: dict[str, Any] = {
        "frozen_until_day": (Day | None, Field(default=None, description=FROZEN_DESCRIPTION)),
    }
    model: type[BaseModel] = create_model(base.__name__, __base__=base, **fields)
    model.__doc__ = base.__doc__
    return dataclasses.replace(spec, args_model=model)


def frozen_days(ctx: ToolContext, parsed: Any) -> int:
    """Days ``1..k`` frozen for this call (0: none)."""
    if ctx.state is None:
        return 0
    asked = getattr(parsed, "frozen_until_day", None) or 0
    return frozen_count(ctx.state, max(int(ctx.frozen_days or 0), int(asked)))


def range_text(k: int) -> str:
    return "第1天" if k == 1 else f"第1-{k}天"


def _touched(ctx: ToolContext, name: str, parsed: Any) -> set[int]:
    state = ctx.state
    assert state is not None
    if name == "place":
        return {parsed.day}
    if name == "move":
        return task_days(state, parsed.task_id, parsed.from_day) | {parsed.new_day}
    if name == "swap":
        return task_days(state, parsed.task_a) | task_days(state, parsed.task_b)
    if name == "unplace":
        return task_days(state, parsed.task_id)
    days: set[int] = set()
    for item in parsed.moves:
        days |= task_days(state, item.task_id, getattr(item, "from_day", None))
        days.add(item.new_day)
    return days


def run_handler(ctx: ToolContext, spec: ToolSpec, parsed: Any) -> str:
    """Run ``spec``'s handler honouring the frozen days and, for the solver tools, the
    request's ``existing_fixed`` (existing tasks stay: the solver sees them locked, see the
    module)."""
    guarded = spec.name in SIMPLE_WRITES or spec.name in SOLVER_TOOLS or spec.name in TRIED_WRITES
    k = frozen_days(ctx, parsed) if guarded else 0
    fixed = ctx.existing_fixed and spec.name in SOLVER_TOOLS and ctx.state is not None
    if k == 0 and not fixed:
        return spec.handler(ctx, parsed)
    if spec.name in TRIED_WRITES:
        return _tried(ctx, spec, parsed, k)
    if spec.name in SIMPLE_WRITES:
        hit = sorted(d for d in _touched(ctx, spec.name, parsed) if 1 <= d <= k)
        if hit:
            days = "、".join(f"第{d}天" for d in hit)
            return refused(
                f"{SIMPLE_WRITES[spec.name]}：{range_text(k)}已冻结（已安排的任务不移动，"
                f"也不放入新任务），本次操作会改动{days}。请选择第{k + 1}天及以后的时段。",
                ERROR_CODE,
            )
        return spec.handler(ctx, parsed)
    real = ctx.state
    assert real is not None
    view = existing_fixed_view(real) if fixed else real
    view = frozen_view(view, k) if k else view
    ctx.state = view
    try:
        reply = spec.handler(ctx, parsed)
    finally:
        ctx.state = real
    if ctx.applied:
        ctx.state = thaw(view, real)
    if k and spec.name == "check_feasibility" and reply.startswith("可行性：不可行"):
        unfrozen = spec.handler(ctx, parsed)
        if unfrozen.startswith("可行性：可行"):
            text = f"{reply}\n{freeze_gap_line(k)}"
            reply = refused(text, reply.error_code) if isinstance(reply, Refused) else text
    return reply


def freeze_gap_line(k: int) -> str:
    """The line saying a gap exists only because of the freeze."""
    return f"冻结说明：不冻结时可行，缺口只因{range_text(k)}已冻结（可减少冻结的天数，或按协商方案处理）。"


def _tried(ctx: ToolContext, spec: ToolSpec, parsed: Any, k: int) -> str:
    """Run ``spec`` on a copy; refuse when it changed a frozen day, else run it for real."""
    real = ctx.state
    assert real is not None
    trial = dataclasses.replace(
        ctx,
        state=real.copy_state(),
        changes=list(ctx.changes),
        loop=copy.deepcopy(ctx.loop),
        applied=[],
    )
    reply = spec.handler(trial, parsed)
    after = trial.state
    changed = after is not None and frozen_blocks(after, k) != frozen_blocks(real, k)
    if changed and not is_refusal(reply, spec.output):
        return refused(
            f"{TRIED_WRITES[spec.name]}：{range_text(k)}已冻结（已安排的任务不移动，"
            "也不放入新任务），本次操作会改动冻结的天，日程未变。",
            ERROR_CODE,
        )
    return spec.handler(ctx, parsed)
