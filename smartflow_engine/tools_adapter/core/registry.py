"""The tool registry: one table of :class:`ToolSpec` rows, the only source of tool metadata.

Names, read/write kind, visibility per mode, confirm and schemas all come from this table.

Modes differ in code (p1 §5.3, P1-D): :data:`MODE_TOOLS` says which tools each mode offers and
:data:`MODE_LEAD` which of them come first. first_full and global_reopt lead with analyze_health and
the proposal tools; local_adjust offers the two query tools, the write tools, apply_proposal only
as least-change repair (:func:`mode_refusal`) and analyze_health. A row offered in no mode
(``min_context_switch``) is hidden on every surface unless a caller enables it by name.

Every write that moves tasks takes an optional ``action_id`` (an action of the session's last
health); the argument is added here, once, for the rows in :data:`ACTION_WRITES`. Likewise every
write without a confirm gate takes ``preview`` (:mod:`.preview`, issue 28).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel, Field, create_model

from ..tools.analysis import ANALYSIS_TOOLS
from ..tools.loop import LOOP_READ_TOOLS, LOOP_WRITE_TOOLS, ActionId
from ..tools.read import READ_TOOLS
from ..tools.solver import SOLVER_TOOLS
from ..tools.store import STORE_TOOLS
from ..tools.write import WRITE_TOOLS
from .calendar_args import PROPOSAL_TOOLS, with_scope_args
from .freeze import SOLVER_TOOLS as FROZEN_SOLVER_TOOLS
from .freeze import with_frozen_arg
from .preview import takes_preview, with_preview
from .spec import Mode, ToolSpec

ACTION_WRITES: frozenset[str] = frozenset(
    {
        "place",
        "move",
        "swap",
        "batch_move",
        "unplace",
        "apply_proposal",
        "spread_even",
        "min_context_switch",
    }
)

_READS = ("get_overview", "query_range", "find_free", "list_tasks", "get_task_info")
_MOVES = ("place", "move", "swap", "batch_move", "unplace")
_LOOP = (
    "get_round_log",
    "restore_best",
    "resolve_negotiation",
    "upsert_task_class",
    "commit",
    "reload",
)
_GLOBAL = (
    "analyze_health",
    "check_feasibility",
    "propose_placement",
    "apply_proposal",
    "analyze_load",
    "analyze_subjects",
    "analyze_context",
    "analyze_tolerance",
    *_READS,
    "query_target_tasks",
    "query_available_slots",
    *_MOVES,
    "spread_even",
    *_LOOP,
)
MODE_TOOLS: dict[Mode, frozenset[str]] = {
    Mode.FIRST_FULL: frozenset(_GLOBAL),
    Mode.GLOBAL_REOPT: frozenset(_GLOBAL),
    Mode.LOCAL_ADJUST: frozenset(
        {
            "query_target_tasks",
            "query_available_slots",
            *_READS,
            *_MOVES,
            "apply_proposal",
            "analyze_health",
            *_LOOP,
        }
    ),
}
MODE_LEAD: dict[Mode, tuple[str, ...]] = {
    Mode.FIRST_FULL: ("analyze_health", "check_feasibility", "propose_placement", "apply_proposal"),
    Mode.GLOBAL_REOPT: (
        "analyze_health",
        "check_feasibility",
        "propose_placement",
        "apply_proposal",
    ),
    Mode.LOCAL_ADJUST: ("query_target_tasks", "query_available_slots"),
}


def _with_action_id(spec: ToolSpec) -> ToolSpec:
    base = spec.args_model
    fields: dict[str, Any] = {
        "action_id": (
            ActionId | None,
            Field(
                default=None,
                description="针对的 action_id；回复末行判其成功判据",
            ),
        )
    }
    model: type[BaseModel] = create_model(base.__name__, __base__=base, **fields)
    model.__doc__ = base.__doc__
    return dataclasses.replace(spec, args_model=model)


def _row(spec: ToolSpec) -> ToolSpec:
    modes = frozenset(m for m, names in MODE_TOOLS.items() if spec.name in names)
    if spec.name == "min_context_switch":
        modes = frozenset()  # hidden from the execute model (P1-B)
    out = dataclasses.replace(spec, modes=modes)
    out = with_scope_args(out) if spec.name in PROPOSAL_TOOLS else out
    out = _with_action_id(out) if spec.name in ACTION_WRITES else out
    out = with_frozen_arg(out) if spec.name in FROZEN_SOLVER_TOOLS else out
    return with_preview(out) if takes_preview(out) else out


TOOLS: tuple[ToolSpec, ...] = tuple(
    _row(s)
    for s in (
        *READ_TOOLS,
        *ANALYSIS_TOOLS,
        *WRITE_TOOLS,
        *SOLVER_TOOLS,
        *STORE_TOOLS,
        *LOOP_READ_TOOLS,
        *LOOP_WRITE_TOOLS,
    )
)
REGISTRY: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
assert len(REGISTRY) == len(TOOLS), "duplicate tool name in the registry"


def get_spec(name: str) -> ToolSpec | None:
    return REGISTRY.get(name)


def order_for(mode: Mode, names: list[str]) -> list[str]:
    """``names`` with the mode's leading tools first (the rest in table order)."""
    lead = [n for n in MODE_LEAD[mode] if n in names]
    return lead + [n for n in names if n not in lead]


def tool_names(mode: Mode | str | None = None) -> list[str]:
    """All registered tool names, or those offered in ``mode`` (its leading tools first)."""
    if mode is None:
        return [spec.name for spec in TOOLS]
    m = Mode(mode)
    return order_for(m, [spec.name for spec in TOOLS if m in spec.modes])


def is_write_tool(name: str) -> bool:
    spec = REGISTRY.get(name)
    return bool(spec and spec.is_write)


def mode_refusal(mode: Mode, name: str, parsed: Any, state: Any) -> str | None:
    """A call the mode's rules forbid: in local_adjust, apply_proposal only places pending tasks
    and never re-plans suggested ones (least-change repair)."""
    if mode is not Mode.LOCAL_ADJUST or name != "apply_proposal":
        return None
    if getattr(parsed, "include_suggested", False):
        return (
            "局部调整模式（local_adjust）只允许最少改动的修补，"
            "不能重排已预排任务（include_suggested=true）。"
        )
    for item in getattr(parsed, "placements", None) or ():
        task = state.task(item.task_id) if state is not None else None
        if task is not None and task.status != "pending":
            return (
                f"局部调整模式（local_adjust）下只放置待安排任务，{task.label} 已落位，请用 move。"
            )
    return None
