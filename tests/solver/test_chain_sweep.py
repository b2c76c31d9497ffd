"""The item order's chains swept through time (``order.sweep_chains``, issue 42): a proposal's
start where the counting witness, once ordered, leaves items out. Its places keep every rule
(judged by the tests' own checker), each class's items in order; its choice among the chains is
earliest deadline first; on the 60-day upstream window whose witness the order breaks, it places
every period and the proposal then does too."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.counting import max_placeable
from smartflow_engine.solver.order import keep_order, sweep_chains
from smartflow_engine.solver.problem import build_problem, scope_tasks
from smartflow_engine.state import ScheduleState, unplace
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import apply_placements, daily_event
from tests.solver.test_upstream_rules import UPSTREAM, breaks


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=UPSTREAM, wide=st.booleans())
def test_the_sweep_keeps_every_rule(state: ScheduleState, wide: bool) -> None:
    """Tests that the sweep's places (pending tasks, and with the suggested ones re-planned:
    those it leaves out taken off the grid, as a proposal's start that leaves one out is never
    used) break no rule of the checker, name each scope task at most once, and apply through
    the write path all at once (no two share a period or a water course's seat)."""
    note(state.to_json(indent=None))
    scope = [t.state_id for t in scope_tasks(state, include_suggested=wide)]
    placements = sweep_chains(state, scope)
    assert placements is not None
    ids = [p.task_id for p in placements]
    assert len(ids) == len(set(ids)) and set(ids) <= set(scope)
    replanned = [tid for tid in scope if state.task(tid).slots]  # type: ignore[union-attr]
    judged = state.copy_state()
    for tid in replanned:
        if tid not in ids:
            assert unplace(judged, tid).ok
    assert not breaks(judged, placements), breaks(judged, placements)
    apply_placements(state, placements, replanned)


def _item(state_id: int, cls: int, name: str, order: int) -> dict[str, Any]:
    return {
        "state_id": state_id,
        "source": "task_item",
        "source_id": 1000 * cls + order,
        "name": f"{name}{order}",
        "category": name,
        "status": "pending",
        "locked": False,
        "duration": 4,
        "task_order": order,
        "category_id": cls,
    }


def _class(cls: int, name: str, end_date: str) -> dict[str, Any]:
    return {
        "id": cls,
        "name": name,
        "strategy": "steady",
        "total_slots": 16,
        "allow_filler_course": False,
        "excluded_slots": [],
        "excluded_days_of_week": [],
        "start_date": "2026-09-07",
        "end_date": end_date,
    }


def _two_classes() -> ScheduleState:
    """A week with periods 9-12 held every day (8 free a day); class 9 "作业" (its dates the
    whole week) and class 10 "复习" (its dates days 1-2 only), four items of 4 periods each:
    复习 needs all 16 free periods of days 1-2."""
    tasks = daily_event()
    tasks += [_item(20 + k, 9, "作业", k + 1) for k in range(4)]
    tasks += [_item(30 + k, 10, "复习", k + 1) for k in range(4)]
    mapping = [{"day_index": d, "week": 1, "day_of_week": d} for d in range(1, 8)]
    data = {
        "window": {
            "total_days": 7,
            "slots_per_day": 12,
            "day_mapping": mapping,
            "semester_start": "2026-09-07",
        },
        "tasks": tasks,
        "task_classes": [_class(9, "作业", "2026-09-13"), _class(10, "复习", "2026-09-08")],
    }
    return ScheduleState.model_validate(data)


def test_the_class_whose_dates_end_first_takes_the_contested_days() -> None:
    """Tests that 复习 (latest start day 2) takes days 1-2 before 作业 (latest start day 7),
    which starts on day 3 although its items could start on day 1: every item placed, each
    class in order. A sweep taking the earliest place first (作业 is the first chain) would
    leave two of 复习's items out."""
    state = _two_classes()
    placements = sweep_chains(state, [t.state_id for t in state.pending_tasks()])
    assert placements is not None and sum(p.length for p in placements) == 32
    at = {p.task_id: (p.day, p.slot_start) for p in placements}
    assert [at[30 + k] for k in range(4)] == [(1, 1), (1, 5), (2, 1), (2, 5)]
    assert [at[20 + k] for k in range(4)] == [(3, 1), (3, 5), (4, 1), (4, 5)]
    assert not breaks(state, placements)


def test_the_sweep_places_the_periods_the_ordered_witness_leaves_out() -> None:
    """Tests that on the 60-day plain upstream window (seed 500, suggested tasks re-planned:
    every one of its 317 periods fits) the counting witness, once ordered, leaves periods out,
    the sweep places all 317, and the proposal (which takes the start placing the most once
    ordered) places them all too."""
    state = synthetic_window(500, 60, variant="plain", upstream=True)
    problem = build_problem(state, include_suggested=True, subjects=False)
    scope = [t.state_id for t in scope_tasks(state, include_suggested=True)]
    counted = max_placeable(problem, time_limit_s=10.0, num_workers=1)
    assert counted.best == problem.required_slots == 317
    kept, dropped = keep_order(state, counted.witness, scope, 0.0, work_s=0.0)
    assert dropped and sum(p.length for p in kept) < 317
    swept = sweep_chains(state, scope)
    assert swept is not None and sum(p.length for p in swept) == 317
    assert not breaks(state, swept)
    # (a small work budget under a wide clock: the work, not a busy machine, decides)
    proposal = propose_placement(
        state, time_limit_s=10.0, work_limit_s=0.03, include_suggested=True
    )
    assert sum(p.length for p in proposal.placements) == 317
    assert proposal.start == "chains"
    assert not breaks(state, proposal.placements)
