"""Escalation when single moves cannot help (issue 26 item 4): a batch of moves, found by the
engine's least-change repair, offered as one ``analyze_health`` action.

When no action ``analyze_health`` offers is ``fixable`` (no single move of its targets helps)
while the proven floor says a better (critical, warning) exists, the loop would stall on a
plateau. :func:`compound_batch` then asks the least-change repair (the close stage moving at most
:data:`MAX_BATCH_MOVES` placed tasks, the search behind ``apply_proposal`` with ``keep_placed``)
for a batch, from :data:`SEEDS` different seeds (the close stage is a randomised walk over
plateaus: which seed crosses one varies from window to window), and measures each batch exactly:
it is applied with the write tools' own ``batch_move`` on a copy and judged by the health
evaluator. A batch is kept only when that write is legal and the health key (critical, warning,
total impact) gets strictly better; the best one is offered (fewest critical, then warning
issues, then fewest moves, then total impact: every seed runs, also after one reached (0, 0), so
among equal counts the batch moving fewest tasks is offered). The action names the batch's effect;
``query_target_tasks`` returns the batch itself (the moves, their deltas and ``helps``), and the
agent carries it out with ``batch_move`` (atomic) if it chooses to.

The searches run on a fixed work budget each (deterministic for a state); the wall clock only
stops the portfolio early. The batch found for a schedule is remembered (:data:`_FOUND`), so the
query that follows ``analyze_health`` returns the very batch the action previewed (measured again
on the query's state) whatever either call's clock allowed, and so is a full search that found
none (a round on an unchanged plateau does not search again).
"""

from __future__ import annotations

import threading
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
# Tasks one escalation batch may move (apply_proposal's own max_moves cap): a tighter limit misses
# batches the search finds by moving more tasks on its way (the moves the counts do not need are
# sent back at its end); a looser one (40) found worse batches on the post-edit windows.
MAX_BATCH_MOVES = 20
# The repair's seeds: on the post-edit windows' plateaus 8 seeds of half a second's work each found
# a helping batch on 14 of 17 (seed 0 with 6 and then 20 moves, the first version: 13), with
# better counts on 4 of those 13, for ~0.6 s at 30 days (docs/decisions.md).
SEEDS = 8
SEARCH_S = 0.5  # each repair's time limit (its deterministic work budget follows it)
MIN_SEARCH_S = 0.05  # less time left than this: no further search
FOUND_SIZE = 8  # schedules whose batch is remembered


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


def rank(batch: Batch) -> tuple[int, int, int, float]:
    """The order among helping batches: fewest critical, then warning issues after it, then
    fewest moves (least change), then the larger fall of the total impact."""
    return batch.critical_after, batch.warning_after, len(batch.moves), batch.impact_delta


def _fingerprint(state: ScheduleState, level: Level) -> tuple[Any, ...]:
    """What a batch's search reads of ``state``: the grid and every task's status, lock and host."""
    grid = state.grid
    return (
        id(state),
        level,
        grid.owner.tobytes(),
        grid.guest.tobytes(),
        tuple((t.state_id, t.status, t.locked, t.embed_host, len(t.slots)) for t in state.tasks),
    )


# a schedule's batch, or None when every search ran to its end and none helped
_FOUND: dict[tuple[Any, ...], Batch | None] = {}
_FOUND_LOCK = threading.Lock()
_UNKNOWN = object()


def _remembered(state: ScheduleState, level: Level, key: tuple[Any, ...]) -> Any:
    """The batch found earlier for this very schedule, measured again; None when the full
    search found none; :data:`_UNKNOWN` when there is nothing to go by."""
    with _FOUND_LOCK:
        found = _FOUND.get(key, _UNKNOWN)
    if found is None or found is _UNKNOWN:
        return found
    assert isinstance(found, Batch)
    batch = measure(state, found.moves, level)
    if batch is None or not batch.helps:
        return _UNKNOWN
    return replace(batch, max_moves=found.max_moves)


def _remember(key: tuple[Any, ...], batch: Batch | None) -> None:
    with _FOUND_LOCK:
        while len(_FOUND) >= FOUND_SIZE:
            _FOUND.pop(next(iter(_FOUND)))
        _FOUND[key] = batch


def compound_batch(
    state: ScheduleState, level: Level, deadline: float | None = None
) -> Batch | None:
    """The best helping batch of the least-change repair's searches for ``state`` (see the
    module docstring); None when none is found (no batch, refused writes, none helps), a pending
    study task waits (the repair would place it first: that is the proposal's job) or less than
    :data:`MIN_SEARCH_S` is left before ``deadline`` for the first search."""
    from ..solver import repair_placement

    if any(t.status == "pending" and t.source != "event" for t in state.tasks):
        return None
    key = _fingerprint(state, level)
    remembered = _remembered(state, level, key)
    if remembered is not _UNKNOWN:
        assert remembered is None or isinstance(remembered, Batch)
        return remembered
    best: Batch | None = None
    tried: set[tuple[Request, ...]] = set()
    complete = True  # every search ran on its full work budget
    for seed in range(SEEDS):
        limit = SEARCH_S
        if deadline is not None:
            limit = min(limit, deadline - time.perf_counter())
        if limit < MIN_SEARCH_S:
            complete = False
            break
        complete &= limit == SEARCH_S
        proposal = repair_placement(
            state, max_moves=MAX_BATCH_MOVES, time_limit_s=limit, seed=seed, threshold=level
        )
        complete &= not proposal.wall_limited
        if not proposal.placements or proposal.critical is None:
            continue
        moves = []
        for p in proposal.placements:
            task = state.task(p.task_id)
            if task is None or task.status == "pending" or len(task.slots) != 1:
                break
            moves.append(Request(p.task_id, p.day, p.slot_start))
        else:
            if tuple(moves) in tried:
                continue
            tried.add(tuple(moves))
            batch = measure(state, moves, level)
            if batch is None or not batch.helps:
                continue
            batch = replace(batch, max_moves=MAX_BATCH_MOVES)
            if best is None or rank(batch) < rank(best):
                best = batch
    if best is not None or complete:
        _remember(key, best)
    return best


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
    "rank",
]
