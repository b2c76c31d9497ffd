"""The feasibility check of the unplaced tasks (issue 40 item 3: it lived in the search
module): whether ``analyze_health`` will add its feasibility issue once a proposal that leaves
tasks unplaced is applied. The proposal and the least-change repair count it in their key.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..state import Request, ScheduleState, relocate
from ._cpsat import OutOfTime, ran_out
from .budget import DEFAULT_CALIBRATION, Calibration, too_late
from .problem import Placement
from .scoring import setup_cost


def unplaced_check(
    state: ScheduleState,
    unplaced: Sequence[int],
    time_limit_s: float,
    num_workers: int,
    deadline: float | None = None,
    placements: Sequence[Placement] = (),
    calibration: Calibration = DEFAULT_CALIBRATION,
    work_s: float | None = None,
) -> tuple[int, bool]:
    """``(critical, cut)``: critical is 1 when ``analyze_health`` will add its feasibility
    issue once the proposal is applied: the same check it runs (suggested tasks re-planned)
    proves the window infeasible.

    Applying a proposal changes nothing that check sees (its scope, every pending and
    re-plannable suggested task, is lifted either way), so it runs on ``state``, except when
    ``placements`` place a pending embeddable host: placed, a host is no longer re-planned (see
    :func:`~smartflow_engine.concepts.movable_by_solver`), so the check runs on the schedule
    with ``placements`` applied; and except when nothing is left unplaced: on the applied
    schedule the check finds every task standing where the rules allow it, in most cases, and
    answers from it with no model (:func:`.feasibility.standing_witness`). It is skipped only
    when nothing is left unplaced and no suggested task exists (the applied schedule is then
    its own witness); a suggested task standing outside its class's days may not fit inside
    them, so with nothing unplaced the window can still be infeasible.

    ``deadline`` (a ``time.perf_counter()`` value) caps the check's limit; once it has passed
    on a window whose close stage is not cheap (see :func:`.budget.too_late`),
    :class:`~._cpsat.OutOfTime` is raised instead of answering 0 unchecked (the counts a caller
    claims would then miss the feasibility issue). ``work_s``: the check's deterministic time
    (:func:`.feasibility.check_feasibility`): unproven within it, the check counts 0 on any
    machine alike. ``cut``: the check's time limit ended it unproven (0 is then what was known,
    not a proof, and a faster machine may count 1)."""
    if not unplaced and not any(t.status == "suggested" for t in state.tasks):
        return 0, False
    from .feasibility import check_feasibility

    if too_late(deadline, setup_cost(state, calibration), calibration):
        raise OutOfTime("no time left for the feasibility check of the unplaced tasks")
    if deadline is not None:
        time_limit_s = min(time_limit_s, deadline - time.perf_counter())
    hosts = [p for p in placements if (t := state.task(p.task_id)) is not None and t.can_embed]
    if hosts or (placements and not unplaced):
        applied = state.copy_state()
        result = relocate(
            applied,
            [Request(p.task_id, p.day, p.slot_start) for p in placements],
            op="apply_proposal",
        )
        if result.ok:
            state = applied
    limit = max(time_limit_s, calibration.min_work_s)
    report = check_feasibility(
        state,
        time_limit_s=limit,
        num_workers=num_workers,
        include_suggested=True,
        explain=False,
        calibration=calibration,
        work_s=work_s,
    )
    # unproven within its work: the same answer anywhere; at its limit: the clock decided
    cut = report.is_feasible is None and (work_s is None or ran_out(report.runtime_s, limit))
    return (1 if report.is_feasible is False else 0), cut


__all__ = ["unplaced_check"]
