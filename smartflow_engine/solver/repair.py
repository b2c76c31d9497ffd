"""Least-change repair (issue 10 item 4): the schedule as it is, at most ``max_moves`` tasks moved.

For local_adjust, after the student changed a few things: the pending tasks are placed first (a
proposal over them alone, the placed tasks staying put, so level 1 — the most periods — holds),
then the close stage (:mod:`.health_search`) moves at most ``max_moves`` of the unlocked placed
tasks (any status, one block, no host) to reach the best ``(critical, warning)`` it can, and
sends back every move that the counts do not need, so among equal counts it moves fewer tasks.
"""

from __future__ import annotations

import time

from ..rules import Level
from ..state import ScheduleState
from ._cpsat import OutOfTime
from .budget import DEFAULT_CALIBRATION, Calibration
from .health_search import search_health, unplaced_critical
from .objective import evaluate, resolve_weights
from .placement import Proposal, ProposalStatus, propose_placement
from .problem import Placement, build_problem, movable


def repair_placement(
    state: ScheduleState,
    *,
    max_moves: int = 3,
    time_limit_s: float = 2.0,
    seed: int = 0,
    threshold: Level = "normal",
    num_workers: int = 1,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> Proposal:
    """Place the pending tasks and move at most ``max_moves`` placed tasks for better health.

    The pending tasks' proposal gets ``calibration.pending_share`` of ``time_limit_s``, the close
    search ``calibration.health_share`` of it (:class:`.budget.Calibration`, handed to both).

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
    t0 = time.perf_counter()
    deadline = t0 + time_limit_s
    w = resolve_weights(None)
    pending = state.pending_tasks()
    placed_pending: list[Placement] = []
    unplaced: list[int] = []
    status: ProposalStatus = "optimal"
    max_slots: int | None = None
    cut = False  # the wall clock cut the pending tasks' proposal
    if pending:
        first = propose_placement(
            state,
            time_limit_s=calibration.pending_share * time_limit_s,
            seed=seed,
            threshold=threshold,
            num_workers=num_workers,
            calibration=calibration,
        )
        placed_pending, unplaced = first.placements, first.unplaced
        status, max_slots = first.status, first.max_slots
        cut = first.wall_limited
    hosts = state.guests_by_host()
    ids = [t.state_id for t in pending] + [
        t.state_id for t in state.tasks if movable(state, t, hosts)
    ]
    problem = build_problem(state, by_subject=True, task_ids=ids)
    start = list(problem.current.values()) + placed_pending
    budget = min(
        calibration.health_share * time_limit_s, max(0.0, deadline - time.perf_counter()) * 0.8
    )
    try:
        # Each step starts only before the deadline (issue 24 item 6): the search's set-up
        # (floor, evaluator) grows with the window, ~0.2 s on 20,000 tasks.
        feasibility = unplaced_critical(
            state,
            unplaced,
            0.1 * time_limit_s,
            num_workers,
            deadline=deadline - 0.02,
            placements=placed_pending,
            calibration=calibration,
        )
        result = search_health(
            state,
            problem,
            start,
            level=threshold,
            seed=seed,
            budget_s=budget,
            deadline=deadline - 0.02,
            max_moves=max_moves,
            feasibility_critical=feasibility,
            calibration=calibration,
        )
    except OutOfTime:  # the pending tasks placed, nothing moved, no counts claimed
        objective = evaluate(problem, start, w)
        return Proposal(
            status=status,
            placements=sorted(placed_pending, key=lambda pl: (pl.day, pl.slot_start, pl.task_id)),
            unplaced=unplaced,
            objective=objective,
            start_objective=objective,
            start="current",
            max_slots=max_slots,
            bound=None,
            weights=w,
            runtime_s=time.perf_counter() - t0,
            seed=seed,
            threshold=threshold,
            wall_limited=True,
        )
    final = result.placements
    changed = [pl for pl in final if problem.current.get(pl.task_id) != pl]
    objective = evaluate(problem, final, w)
    return Proposal(
        status=status,
        placements=sorted(changed, key=lambda pl: (pl.day, pl.slot_start, pl.task_id)),
        unplaced=unplaced,
        objective=objective,
        start_objective=evaluate(problem, start, w),
        start="current",
        max_slots=max_slots,
        bound=None,
        weights=w,
        runtime_s=time.perf_counter() - t0,
        seed=seed,
        iterations=result.evaluations,
        local_moves=result.moved,
        moved=result.moved,
        critical=result.counts.critical,
        warning=result.counts.warning,
        threshold=threshold,
        start_health=result.start_counts.key,
        floor=result.floor,
        # the wall clock cut the pending tasks' proposal, or the close search ran to its end
        wall_limited=cut or time.perf_counter() >= deadline - 0.03,
    )


__all__ = ["repair_placement"]
