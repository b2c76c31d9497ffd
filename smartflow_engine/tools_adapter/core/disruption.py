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

from ...analyzers.destinations import health_result
from ...solver.budget import Deadline
from ...state import Change, Request, ScheduleState, relocate
from .spec import ToolContext, ToolSpec

REOPT_WRITES: frozenset[str] = frozenset({"apply_proposal", "spread_even", "min_context_switch"})
# apply_proposal's reply when the proposal moves nothing (the session reads it: a least-change
# repair that found nothing on a state is no longer offered as the way forward on that state),
# and the words of a reply whose search the wall clock cut (tools.solver's ``_cut_text``).
NOTHING_TO_APPLY = "粗排方案没有可应用的放置，日程未变更。"
CUT_WORDS = ("搜索被时限截断", "只来得及给出")


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


# At most this many runs of consecutive days are written out; the rest are counted.
MAX_DAY_RUNS = 8
# What the health part of propose_placement's line costs per task of the window (a copy of the
# state, the proposal applied to it, the key read), with a margin for a loaded machine: the
# part is left out when the call's limit has not that much left (issue 24: the limit holds).
PROPOSAL_KEY_PER_TASK_S = 0.25e-3


def days_text(days: Sequence[int]) -> str:
    """``第4、6-9天``: runs of consecutive days as ranges, at most :data:`MAX_DAY_RUNS` of them
    (``第1-3、5天等12段，共40天`` beyond)."""
    runs: list[tuple[int, int]] = []
    for d in sorted(days):
        if runs and d == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], d)
        else:
            runs.append((d, d))
    shown = "、".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:MAX_DAY_RUNS])
    if len(runs) > MAX_DAY_RUNS:
        return f"第{shown}天等{len(runs)}段，共{len(days)}天"
    return f"第{shown}天"


# What a proposal line says of the counts after when the proposal's own health line gave them
# (issue 45 item 1: one statement of the counts after, never "not computed" below them).
AFTER_STATED = "应用后的数目见上文体检行"
# The key's name when the window may be infeasible (a proposal leaves tasks unplaced): the key
# is the dimensions' counts, without analyze_health's feasibility issue (issue 45 item 1).
WITHOUT_FEASIBILITY = "不含可行性问题"


def disruption_line(
    fig: dict[str, Any],
    before: tuple[int, int],
    after: tuple[int, int] | None,
    lead: str = "改动",
    after_text: str = "应用后的数目时限内未计算",
    without_feasibility: bool = False,
) -> str:
    """``改动：移动已安排任务 2 个（共 5 节），新放置 3 个，涉及第4、6天；体检（严重/警告）1/3 → 0/1。``
    (``after`` None: ``after_text`` says why the key after is not given here: not computed
    within the call's limit, or :data:`AFTER_STATED`; ``without_feasibility``: the key is
    named :data:`WITHOUT_FEASIBILITY`, for a window analyze_health may count infeasible)."""
    days = fig["days_touched"]
    where = f"涉及{days_text(days)}" if days else "未涉及任何一天"
    name = (
        f"体检（严重/警告，{WITHOUT_FEASIBILITY}）" if without_feasibility else "体检（严重/警告）"
    )
    health = (
        f"{name}{before[0]}/{before[1]} → {after[0]}/{after[1]}。"
        if after is not None
        else f"{name}现为 {before[0]}/{before[1]}，{after_text}。"
    )
    return (
        f"{lead}：移动已安排任务 {fig['tasks_moved']} 个（共 {fig['periods_moved']} 节），"
        f"新放置 {fig['tasks_placed']} 个，{where}；{health}"
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


def request_figures(state: ScheduleState, requests: Sequence[Request]) -> dict[str, Any]:
    """:func:`figures` of applying ``requests`` to ``state``, read off the requests (each one
    places a pending task or moves a placed one to a block it does not hold already)."""
    moved, periods, placed = set(), 0, set()
    days: set[int] = set()
    for r in requests:
        task = state.task(r.task_id)
        if task is None:
            continue
        if task.slots:
            if (task.slots[0].day, task.slots[0].slot_start) == (r.day, r.slot_start):
                continue
            moved.add(task.state_id)
            periods += sum(b.length for b in task.slots)
            days.update(b.day for b in task.slots)
        else:
            placed.add(task.state_id)
        days.add(r.day)
    return {
        "tasks_moved": len(moved),
        "periods_moved": periods,
        "tasks_placed": len(placed),
        "days_touched": sorted(days),
    }


def proposal_line(
    state: ScheduleState,
    requests: Sequence[Request],
    status_after: str | None,
    deadline: Deadline | None = None,
    after_stated: bool = False,
    unplaced: bool = False,
) -> str | None:
    """``若应用，改动：…`` for a proposal's ``requests`` on ``state`` (None: nothing would change,
    or the requests do not apply, which ``apply_proposal`` would then say itself). The key after
    is read on a copy with the requests applied as ``apply_proposal`` applies them, when the
    call's ``deadline`` leaves time for it; otherwise the line says it was not computed.
    ``after_stated``: the proposal's own health line already gives the counts after (at its
    threshold, the unplaceable tasks' feasibility issue included): the line then refers to it
    instead of a second, maybe different, figure (issue 45 item 1). ``unplaced``: the proposal
    leaves tasks unplaced, so the window may be infeasible, and analyze_health then counts a
    feasibility issue the key (the dimensions' counts) has not: the key is named so."""
    if not requests:
        return None
    fig = request_figures(state, requests)
    if not (fig["tasks_moved"] or fig["tasks_placed"]):
        return None
    if after_stated:
        return disruption_line(
            fig,
            health_key(state),
            None,
            lead="若应用，改动",
            after_text=AFTER_STATED,
            without_feasibility=unplaced,
        )
    cost = PROPOSAL_KEY_PER_TASK_S * len(state.tasks)
    if deadline is not None and deadline.left() < cost:
        return disruption_line(
            fig, health_key(state), None, lead="若应用，改动", without_feasibility=unplaced
        )
    trial = state.copy_state()
    result = relocate(trial, list(requests), op="apply_proposal", status_after=status_after)
    if not result.ok or not result.changes:
        return None
    return disruption_line(
        figures(result.changes),
        health_key(state),
        health_key(trial),
        lead="若应用，改动",
        without_feasibility=unplaced,
    )
