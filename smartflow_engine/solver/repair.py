"""Least-change repair (issue 10 item 4): the schedule as it is, at most ``max_moves`` tasks moved.

For local_adjust, after the student changed a few things. A mode of the proposal's pipeline
(:mod:`.placement`, issue 40 item 2), not a second one: its level 1 is the pending tasks' own
proposal (the placed tasks staying put, so the most periods hold), its start the current schedule
with them placed (``current``), then the same floor (the scope's own, once), feasibility check and
one search (:func:`.placement.close_stage`), on the counts alone with at most ``max_moves`` of the
unlocked placed tasks (any status, one block, no host) moved, and the search's send-back of every
move the counts do not need, so among equal counts it moves fewer tasks.
"""

from __future__ import annotations

import time

from ..rules import Level
from ..state import ScheduleState
from .budget import DEFAULT_CALIBRATION, Calibration
from .objective import evaluate
from .placement import Proposal, ProposalStatus, StageResult, close_stage, propose_placement
from .problem import movable
from .run import ScopeRun


def repair_placement(
    state: ScheduleState,
    *,
    max_moves: int = 3,
    time_limit_s: float = 2.0,
    seed: int = 0,
    threshold: Level = "normal",
    num_workers: int = 1,
    calibration: Calibration = DEFAULT_CALIBRATION,
    work_limit_s: float | None = None,
) -> Proposal:
    """Place the pending tasks and move at most ``max_moves`` placed tasks for better health.

    The pending tasks' proposal gets ``calibration.pending_share`` of ``time_limit_s``, the close
    search ``calibration.health_share`` of it (:class:`.budget.Calibration`, handed to both).
    What the searches do is decided by work budgets computed from the arguments alone (issue 40
    item 6: never from the time left on the clock): ``work_limit_s`` (default: the work of a
    ``time_limit_s`` call, ``work_share`` of it) as :func:`.placement.propose_placement` reads
    it; the wall clock only cuts a call that would run past ``time_limit_s``, and the answer then
    says ``wall_limited``.

    Returns
    -------
    Proposal
        ``placements``: only what changes (pending tasks placed, moved tasks at their new place);
        ``critical``/``warning``: analyze_health's counts once applied; ``start_health`` the
        counts with the pending tasks placed and nothing moved; ``local_moves``: tasks moved.
        When ``time_limit_s`` ran out before the close search could count its start, only the
        pending tasks are placed, nothing moves, the counts are ``None`` (not claimed) and
        ``wall_limited`` is set.
    """
    pending = state.pending_tasks()
    hosts = state.guests_by_host()
    ids = [t.state_id for t in pending] + [
        t.state_id for t in state.tasks if movable(state, t, hosts)
    ]
    run = ScopeRun.for_repair(
        state, ids, max_moves=max_moves, time_limit_s=time_limit_s, seed=seed,
        threshold=threshold, num_workers=num_workers, calibration=calibration,
        work_limit_s=work_limit_s,
    )  # fmt: skip
    first = _pending_proposal(run) if pending else None
    placed_pending = first.placements if first is not None else []
    start = list(run.problem.current.values()) + placed_pending
    start_objective = evaluate(run.problem, start, run.weights)
    result = StageResult(start, start_objective, wall_limited=bool(first and first.wall_limited))
    unplaced = first.unplaced if first is not None else []
    close_stage(run, result, unplaced=unplaced, checked=placed_pending)
    return _repair_proposal(run, first, result, start_objective)


def _pending_proposal(run: ScopeRun) -> Proposal:
    """The repair's level 1: the pending tasks' own proposal, ``pending_share`` of the limit
    and of the work."""
    cal = run.calibration
    return propose_placement(
        run.state,
        time_limit_s=cal.pending_share * run.time_limit_s,
        work_limit_s=cal.pending_share * cal.shares_of * run.effort,
        seed=run.seed,
        threshold=run.threshold,
        num_workers=run.num_workers,
        calibration=cal,
    )


def _repair_proposal(
    run: ScopeRun,
    first: Proposal | None,
    result: StageResult,
    start_objective: dict[str, float],
) -> Proposal:
    """The repair's :class:`.placement.Proposal`: what changes, the search's figures."""
    current = run.problem.current
    changed = [pl for pl in result.placements if current.get(pl.task_id) != pl]
    status: ProposalStatus = first.status if first is not None else "optimal"
    close = result.search
    health = result.health
    return Proposal(
        status=status,
        placements=sorted(changed, key=lambda pl: (pl.day, pl.slot_start, pl.task_id)),
        unplaced=first.unplaced if first is not None else [],
        objective=result.objective,
        start_objective=start_objective,
        start="current",
        max_slots=first.max_slots if first is not None else None,
        bound=None,
        weights=run.weights,
        runtime_s=time.perf_counter() - run.t0,
        seed=run.seed,
        iterations=close.evaluations if close is not None else 0,
        local_moves=close.moved if close is not None else 0,
        moved=close.moved if close is not None else 0,
        critical=health[0] if health is not None else None,
        warning=health[1] if health is not None else None,
        threshold=run.threshold,
        start_health=result.start_health,
        floor=result.floor,
        # the wall clock cut the pending tasks' proposal, the feasibility check, the close
        # search or its floor
        wall_limited=result.wall_limited,
    )


__all__ = ["repair_placement"]
