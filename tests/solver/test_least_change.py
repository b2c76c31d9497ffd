"""Tests of the disruption level of a proposal's key (issue 28 item 2): health being equal,
fewer changes win (:mod:`smartflow_engine.solver.least_change`)."""

from __future__ import annotations

from typing import Any

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers.destinations import health_result
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.least_change import moved_tasks, send_back
from smartflow_engine.solver.problem import Placement, build_problem


def _window(tasks: list[dict[str, Any]], days: int = 4, classes: Any = None) -> ScheduleState:
    rows = [
        {"state_id": i, "name": f"任务{i}", "source": "task_item", "status": "suggested", **t}
        for i, t in enumerate(tasks, start=1)
    ]
    data: dict[str, Any] = {"window": {"total_days": days, "slots_per_day": 12}, "tasks": rows}
    if classes is not None:
        data["task_classes"] = classes
    return ScheduleState.from_json(data)


def _block(day: int, start: int, end: int) -> list[dict[str, int]]:
    return [{"day": day, "slot_start": start, "slot_end": end}]


def _counts(state: ScheduleState, placements: list[Placement]) -> tuple[int, int]:
    from smartflow_engine.state import Request, relocate

    trial = state.copy_state()

    requests = [Request(p.task_id, p.day, p.slot_start) for p in placements]
    assert relocate(trial, requests, op="apply_proposal").ok
    issues = health_result(trial).issues
    return (
        sum(1 for i in issues if i.severity == "critical"),
        sum(1 for i in issues if i.severity == "warning"),
    )


def test_needless_moves_go_back_and_health_stays():
    """Tests that send_back returns every moved task whose current place is free and whose
    return does not worsen (critical, warning): two tasks moved to equally healthy places come
    home, the counts are unchanged."""
    state = _window(
        [
            {"category": "数学", "slots": _block(1, 1, 2)},
            {"category": "英语", "slots": _block(2, 1, 2)},
            {"category": "物理", "slots": _block(3, 1, 2)},
        ]
    )
    problem = build_problem(state, include_suggested=True, by_subject=True)
    moved = [
        Placement(1, 1, 5, 6, None),  # same day, other periods
        Placement(2, 4, 1, 2, None),  # another day
        Placement(3, 3, 1, 2, None),  # at home
    ]
    assert moved_tasks(problem.current, moved) == 2
    out, change, cut = send_back(state, problem, moved)
    assert not cut and change == (0, 0)
    assert moved_tasks(problem.current, out) == 0
    assert _counts(state, out) == _counts(state, moved)


def test_a_move_health_needs_stays_and_a_home_outside_the_class_is_not_returned():
    """Tests that send_back keeps a move whose return would make health worse (a task moved off
    an overloaded day) and never returns a task to a home its class window no longer allows."""
    full_day = [{"category": "数学", "slots": _block(1, s, s + 3)} for s in (1, 5, 9)]
    state = _window(
        [*full_day, {"category": "英语", "category_id": 1, "slots": _block(4, 1, 2)}],
        classes=[{"id": 1, "name": "英语", "start_day": 1, "end_day": 3}],
    )
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = [
        Placement(1, 2, 1, 4, None),  # off the full day: health needs it
        Placement(2, 1, 5, 8, None),
        Placement(3, 1, 9, 12, None),
        Placement(4, 3, 1, 2, None),  # back inside its class window
    ]
    out, change, _ = send_back(state, problem, start)
    by_id = {pl.task_id: pl for pl in out}
    assert by_id[1].day == 2 and by_id[4].day == 3
    assert change == (0, 0)


def test_a_replanning_proposal_moves_no_more_with_the_disruption_level():
    """Tests that a re-planning proposal (suggested tasks in scope) with the disruption level
    moves at most as many placed tasks as without it, at health at least as good, and reports
    the count; the level never changes a proposal that moves nothing placed."""
    state = _window(
        [
            {"category": "数学", "slots": _block(1, 1, 2)},
            {"category": "英语", "slots": _block(2, 3, 4)},
            {"category": "物理", "slots": _block(3, 5, 6)},
            {"category": "化学", "status": "pending", "duration": 2},
        ]
    )
    kwargs = {"time_limit_s": 30.0, "work_limit_s": 0.2, "seed": 0, "include_suggested": True}
    off = propose_placement(state, disruption_weight=0.0, **kwargs)
    on = propose_placement(state, **kwargs)
    if off.wall_limited or on.wall_limited:  # an overloaded machine: not comparable
        return
    assert on.moved <= off.moved
    assert (on.critical, on.warning) <= (off.critical, off.warning)
    current = build_problem(state, include_suggested=True).current
    assert on.moved == moved_tasks(current, on.placements)
