"""The disruption figure of a re-optimising write and of a proposal (issue 28 item 2).

After ``apply_proposal``, ``spread_even`` or ``min_context_switch`` changed the state, the reply
gains one line saying how much of the student's plan moved: the tasks already placed that moved
and their periods, the tasks newly placed, the days touched, and the health key (critical,
warning) before and after. The figures come from the call's change-log entries; the key from
the analyzers' health (the loop's round key without the impact).

``propose_placement`` changes nothing, so its line says what applying the plan would do
(``若应用，改动：…``): the proposal's requests are applied to a copy of the real state (the frozen
view of a frozen session is the solver's only) exactly as ``apply_proposal`` applies them, and the
same figures and key are read from that copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..analyzers.destinations import health_result
from ..state import Change, Request, ScheduleState, relocate
from .spec import ToolContext, ToolSpec

REOPT_WRITES: frozenset[str] = frozenset({"apply_proposal", "spread_even", "min_context_switch"})


def health_key(state: ScheduleState) -> tuple[int, int]:
    """(critical, warning) issue counts of ``state``'s health at the normal level."""
    issues = health_result(state).issues
    critical = sum(1 for i in issues if i.severity == "critical")
    warning = sum(1 for i in issues if i.severity == "warning")
    return critical, warning


def figures(changes: Sequence[Change]) -> dict[str, Any]:
    """Tasks moved (placed before and after, elsewhere), their periods, tasks newly placed, and
    the days touched (left or entered), from one call's change-log entries."""
    moved = [
        c
        for c in changes
        if c.block_before is not None
        and c.block_after is not None
        and (c.block_before != c.block_after or c.embed_host_before != c.embed_host_after)
    ]
    placed = [c for c in changes if c.block_before is None and c.block_after is not None]
    days: set[int] = set()
    for c in changes:
        for block in (c.block_before, c.block_after):
            if block is not None:
                days.add(block.day)
    return {
        "tasks_moved": len({c.task_id for c in moved}),
        "periods_moved": sum(c.block_before.length for c in moved if c.block_before),
        "tasks_placed": len({c.task_id for c in placed}),
        "days_touched": sorted(days),
    }


def disruption_line(
    fig: dict[str, Any], before: tuple[int, int], after: tuple[int, int], lead: str = "改动"
) -> str:
    """``改动：移动已安排任务 2 个（共 5 节），新放置 3 个，涉及第4、6天；体检（严重/警告）1/3 → 0/1。``"""
    days = "、".join(str(d) for d in fig["days_touched"])
    where = f"涉及第{days}天" if days else "未涉及任何一天"
    return (
        f"{lead}：移动已安排任务 {fig['tasks_moved']} 个（共 {fig['periods_moved']} 节），"
        f"新放置 {fig['tasks_placed']} 个，{where}；"
        f"体检（严重/警告）{before[0]}/{before[1]} → {after[0]}/{after[1]}。"
    )


def key_before(ctx: ToolContext, spec: ToolSpec) -> tuple[int, int] | None:
    """The health key before a re-optimising write (``None`` for any other call)."""
    if spec.name not in REOPT_WRITES or ctx.state is None:
        return None
    return health_key(ctx.state)


def annotate(
    ctx: ToolContext,
    reply: str,
    applied: Sequence[Change],
    before: tuple[int, int] | None,
) -> str:
    """``reply`` with the disruption line when a re-optimising write changed something, or
    when a proposal would change something once applied."""
    if ctx.proposed is not None and ctx.state is not None:
        line = proposal_line(ctx.state, *ctx.proposed)
        return f"{reply}\n{line}" if line else reply
    if before is None or not applied or ctx.state is None:
        return reply
    return f"{reply}\n{disruption_line(figures(applied), before, health_key(ctx.state))}"


def proposal_line(
    state: ScheduleState, requests: Sequence[Request], status_after: str | None
) -> str | None:
    """``若应用，改动：…`` for a proposal's ``requests`` on ``state`` (None: nothing would change,
    or the requests do not apply, which ``apply_proposal`` would then say itself)."""
    if not requests:
        return None
    trial = state.copy_state()
    result = relocate(trial, list(requests), op="apply_proposal", status_after=status_after)
    if not result.ok or not result.changes:
        return None
    return disruption_line(
        figures(result.changes), health_key(state), health_key(trial), lead="若应用，改动"
    )
