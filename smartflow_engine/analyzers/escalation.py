"""Escalation when single moves cannot help (issue 26 item 4): a batch of moves, found by the
engine's least-change repair, offered as one ``analyze_health`` action.

When no action ``analyze_health`` offers is ``fixable`` (no single move of its targets helps)
while the proven floor says a better (critical, warning) exists, the loop would stall on a
plateau. :func:`compound_batch` then asks the least-change repair (the close stage moving at most
6, then at most 20 placed tasks (:data:`MOVE_LIMITS`), the search behind ``apply_proposal`` with
``keep_placed``) for a batch, and measures it exactly: the batch is applied with the write tools' own
``batch_move`` on a copy and judged by the health evaluator. A batch is offered only when that
write is legal and the health key (critical, warning, total impact) gets strictly better. The
action names the batch's effect; ``query_target_tasks`` returns the batch itself (the moves, their
deltas and ``helps``), and the agent carries it out with ``batch_move`` (atomic) if it chooses to.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..rules import Level, r4
from ..state import Request, ScheduleState, batch_move
from .common import action, candidate_scope
from .criteria import SEVERE, diff_issues
from .destinations import health_issues
from .result import Issue, NextAction

INTENT = "compound_repair"
ACTION_ID = f"na_{INTENT}_batch"
# Tasks one escalation batch may move: the fewest first; the repair with a tight limit can miss a
# batch a wider one finds (its path moves more tasks on the way), so a wider limit follows.
MOVE_LIMITS = (6, 20)
MAX_BATCH_MOVES = MOVE_LIMITS[-1]
SEARCH_S = 1.0  # the repair's time limit (its deterministic work budget follows it)
MIN_SEARCH_S = 0.05  # less time left than this: no escalation is searched


def _key(issues: Sequence[Issue]) -> tuple[int, int, float]:
    crit = sum(1 for i in issues if i.severity == "critical")
    warn = sum(1 for i in issues if i.severity == "warning")
    return crit, warn, r4(sum(i.impact_score for i in issues if i.severity in SEVERE))


@dataclass(frozen=True)
class Batch:
    """A batch of moves of placed tasks and its measured effect on the health issues."""

    moves: tuple[Request, ...]
    resolves: tuple[str, ...]
    creates: tuple[str, ...]
    critical_delta: int
    warning_delta: int
    impact_delta: float
    critical_after: int
    warning_after: int
    max_moves: int = 0  # the repair's limit that found it

    @property
    def helps(self) -> bool:
        """The health key (critical, warning, total impact) gets strictly better."""
        return (self.critical_delta, self.warning_delta, self.impact_delta) < (0, 0, 0.0)

    def to_dict(self, state: ScheduleState) -> dict[str, Any]:
        moves = []
        for r in self.moves:
            task = state.task(r.task_id)
            block = next((b for b in task.slots if b.day == r.from_day), None) if task else None
            block = block or (task.slots[0] if task and task.slots else None)
            moves.append(
                {
                    "task_id": r.task_id,
                    "name": task.name if task else "",
                    "from": None
                    if block is None
                    else {"day": block.day, "slot_start": block.slot_start},
                    "new_day": r.day,
                    "new_slot_start": r.slot_start,
                    **({"from_day": r.from_day} if r.from_day is not None else {}),
                }
            )
        return {
            "write_tool": "batch_move",
            "moves": moves,
            "resolves": list(self.resolves),
            "creates": list(self.creates),
            "critical_delta": self.critical_delta,
            "warning_delta": self.warning_delta,
            "impact_delta": self.impact_delta,
            "critical_after": self.critical_after,
            "warning_after": self.warning_after,
            "helps": self.helps,
        }


def measure(state: ScheduleState, moves: Sequence[Request], level: Level) -> Batch | None:
    """The effect of ``batch_move(moves)`` on ``state`` (applied to a copy), or None when the
    write tool would refuse it."""
    before = health_issues(state, level)
    work = state.copy_state()
    if not batch_move(work, list(moves)).ok:
        return None
    after = health_issues(work, level)
    diff = diff_issues(before, after)
    kb, ka = _key(before), _key(after)
    return Batch(
        tuple(moves),
        diff.resolved,
        diff.created,
        ka[0] - kb[0],
        ka[1] - kb[1],
        r4(ka[2] - kb[2]),
        ka[0],
        ka[1],
    )


def compound_batch(
    state: ScheduleState, level: Level, deadline: float | None = None
) -> Batch | None:
    """The least-change repair's batch for ``state`` when it helps (see the module docstring);
    None when no batch is found, the write would be refused, it does not help, a pending study
    task waits (the repair would place it first: that is the proposal's job) or less than
    :data:`MIN_SEARCH_S` is left before ``deadline``."""
    from ..solver import repair_placement

    if any(t.status == "pending" and t.source != "event" for t in state.tasks):
        return None
    for max_moves in MOVE_LIMITS:
        limit = SEARCH_S
        if deadline is not None:
            limit = min(limit, deadline - time.perf_counter())
        if limit < MIN_SEARCH_S:
            return None
        proposal = repair_placement(state, max_moves=max_moves, time_limit_s=limit, threshold=level)
        if not proposal.placements or proposal.critical is None:
            continue
        moves = []
        for p in proposal.placements:
            task = state.task(p.task_id)
            if task is None or task.status == "pending" or len(task.slots) != 1:
                break
            moves.append(Request(p.task_id, p.day, p.slot_start))
        else:
            batch = measure(state, moves, level)
            if batch is not None and batch.helps:
                return replace(batch, max_moves=max_moves)
    return None


def escalation_action(
    state: ScheduleState, batch: Batch, issues: Sequence[Issue], critical: int
) -> NextAction:
    """The action offering ``batch`` (``fixable``: its measured effect helps)."""
    days = sorted(
        {r.day for r in batch.moves}
        | {b.day for r in batch.moves if (t := state.task(r.task_id)) for b in t.slots}
    )
    ids = [i.issue_id for i in issues if i.severity in SEVERE]
    act = action(
        INTENT,
        "batch",
        candidate_scope=candidate_scope(
            range(days[0], days[-1] + 1) if days else range(1, state.num_days + 1),
            task_pool="placed",
        ),
        target_filter={"kind": "study", "status": ["suggested", "existing"], "locked": False},
        slot_filter={},
        required_reads=[{"tool": "query_target_tasks", "args": {"action_id": ACTION_ID}}],
        success_criteria={
            "recheck_tool": "analyze_health",
            "conditions": [
                {
                    "metric": "metrics.close_signal.critical",
                    "operator": "<=",
                    "value": min(critical, batch.critical_after),
                },
                {
                    "metric": "metrics.close_signal.warning",
                    "operator": "<=",
                    "value": batch.warning_after,
                },
            ],
        },
        candidate_write_tools=["batch_move"],
        issue_ids=[i for i in ids if i in batch.resolves] or ids,
        figures={
            "moves": len(batch.moves),
            "max_moves": batch.max_moves,
            "critical_delta": batch.critical_delta,
            "warning_delta": batch.warning_delta,
            "impact_delta": batch.impact_delta,
            "critical_after": batch.critical_after,
            "warning_after": batch.warning_after,
        },
    )
    act.fixable_checked, act.fixable = True, True
    return act


__all__ = [
    "ACTION_ID",
    "INTENT",
    "MAX_BATCH_MOVES",
    "Batch",
    "compound_batch",
    "escalation_action",
    "measure",
]
