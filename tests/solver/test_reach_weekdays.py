"""The floor's reach holds the classes' banned weekdays and periods (issue 42): a pending item
may only take the days its class allows (``health_floor._subjects``: on a run of free
*allowed* periods as long as it is), and the loads can only grow on those days
(``health_floor._reachable``, which the water filling and the days forced over a band read).
On tiny windows whose every schedule is enumerated the floor is never above the best schedule
keeping every class rule, and the class rule is what makes it bind (the same window without it
has no forced gap).
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import numpy as np

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.solver.problem import Placement, scope_tasks
from smartflow_engine.state import ScheduleState
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import (
    apply_placements,
    best_health,
    class_item,
    daily_event,
    ordered_week,
)
from tests.solver.test_spread_flow import _population
from tests.solver.test_upstream_rules import breaks


def _item(state_id: int, order: int, duration: int, **placed: Any) -> dict[str, Any]:
    row = class_item(state_id, order, duration) | {"source_id": 1000 + state_id}
    if placed:  # a locked existing task of the subject, of no class: a fixed present day
        day, start = placed["day"], placed["start"]
        row |= {"status": "existing", "locked": True, "duration": None}
        del row["task_order"], row["category_id"]
        row["slots"] = [{"day": day, "slot_start": start, "slot_end": start + duration - 1}]
    return row


def _gap_window(
    duration: int,
    events: list[dict[str, Any]],
    banned_weekdays: list[int] | None = None,
    banned_blocks: list[int] | None = None,
    items: int = 2,
) -> ScheduleState:
    """A week: the subject 复习 fixed on Monday and Sunday (locked tasks of no class, periods
    11-12: the class's item order does not reach them) and two pending items of the class
    (orders 1, 2, ...; ``items`` of them) of ``duration`` periods."""
    tasks = [*events, _item(20, 0, 2, day=1, start=11), _item(29, 0, 2, day=7, start=11)]
    tasks += [_item(21 + k, k + 1, duration) for k in range(items)]
    return ordered_week(tasks, banned_weekdays=banned_weekdays, banned_blocks=banned_blocks)


def _best(state: ScheduleState, duration: int, items: int = 2) -> tuple[int, int, int]:
    """Least (critical, critical + warning) over every schedule of the pending items that
    keeps every class rule (the independent checker), and how many there are."""
    held = {
        (b.day, q)
        for t in state.tasks
        for b in t.slots
        for q in range(b.slot_start, b.slot_end + 1)
    }
    places = [
        (d, s)
        for d in range(1, 8)
        for s in range(1, 14 - duration)
        if not any((d, q) in held for q in range(s, s + duration))
    ]
    candidates = (
        [Placement(21 + k, d, s, s + duration - 1) for k, (d, s) in enumerate(combo)]
        for combo in itertools.product(places, repeat=items)
    )
    return best_health(state, candidates, breaks)


def _gap(floor: Any) -> list[dict[str, Any]]:
    return [b for b in floor.binding if b["rule"] == "subject_gap"]


def test_banned_weekdays_force_a_subject_gap() -> None:
    """Tests that with Tuesday-Saturday banned the two items must sit on Monday or Sunday, so
    the subject's days leave a gap of five days (a warning) whatever the schedule; without
    the ban they spread over the week and no gap is forced."""
    state = _gap_window(2, [], banned_weekdays=[2, 3, 4, 5, 6])
    floor = health_floor(state, pending_periods=4)
    free = health_floor(_gap_window(2, []), pending_periods=4)
    assert floor.proven and free.proven
    assert [b["why"]["min_max_gap"] for b in _gap(floor)] == [5]
    assert _gap(free) == []
    best_c, best_cw, count = _best(state, 2)
    assert count > 0
    assert floor.critical <= best_c and floor.critical + floor.warning <= best_cw
    assert best_cw >= 1  # (the gap is there in every schedule)


def test_banned_periods_leave_no_run_long_enough() -> None:
    """Tests that one item of four periods whose class allows periods 1-4 only (half-day
    blocks 3-6 banned) cannot take a day whose periods 1-2 an event holds (Tuesday to
    Saturday: two allowed free periods left), so the subject's days leave the same forced
    gap; with the periods allowed (the free run 3-10 is long enough) none is forced. (One
    item: with two, the item order alone already keeps them apart, at Monday and Sunday.)"""
    events = [e for e in daily_event(1, 2) if e["state_id"] not in (1, 7)]
    state = _gap_window(4, events, banned_blocks=[3, 4, 5, 6], items=1)
    floor = health_floor(state, pending_periods=4)
    free = health_floor(_gap_window(4, events, items=1), pending_periods=4)
    assert floor.proven and free.proven
    assert [b["why"]["min_max_gap"] for b in _gap(floor)] == [5]
    assert _gap(free) == []
    best_c, best_cw, count = _best(state, 4, items=1)
    assert count > 0
    assert floor.critical <= best_c and floor.critical + floor.warning <= best_cw


def test_the_loads_grow_only_on_the_classes_weekdays() -> None:
    """Tests that on the 30-day upstream-shaped window of seed 500 (its classes' dates leave
    the last week to one class, whose Mondays and Fridays are banned) the water filling over
    the periods some task may use proves the ``load_imbalance`` warning once those periods
    leave out each class's banned weekdays (without them it found a std-dev of 1.49), and
    that the proposal's schedule is not below the floor's figure."""
    state = synthetic_window(500, 30, variant="plain", upstream=True)
    scope = {t.state_id for t in scope_tasks(state, include_suggested=True)}
    pending = sum(t.need() for t in state.pending_tasks())
    pool = _population(state, pending, scope)
    floor_module = sys.modules["smartflow_engine.solver.health_floor"]
    totals = np.arange(pool.p_min, pool.p_max + 1)
    water, _ = floor_module._water_fill(pool.fixed_load, pool.reachable, totals)
    assert float(water.min()) >= 2.0
    floor = health_floor(state, pending_periods=pending, scope=scope)
    spread = [b["why"] for b in floor.binding if b["rule"] == "load_imbalance"]
    assert spread and spread[0]["kind"] == "water_filling" and floor.warning >= 1
    new = propose_placement(state, time_limit_s=1.0, seed=0, include_suggested=True)
    applied = apply_placements(state, list(new.placements))
    actual = analyze_health(applied, time_limit_s=2.0).metrics["load"]["load_std_dev"]
    assert actual >= spread[0]["min_load_std_dev"]


def test_a_given_reach_keeps_the_off_days_given_with_it() -> None:
    """Tests that a reach the caller gives (a calendar scope, ``scoped.floor_scope``) keeps
    the days inside it the scope leaves out (``task_off_days``): three items of four periods
    given Monday to Sunday but only Monday and Sunday allowed put twelve periods on two days
    with four periods of the daily event each (a day over the warning load at least), which
    the floor proves; given without the off days it pours them over the week and proves
    nothing there. It is not above the best schedule of that population (enumerated on the
    same window with the class's weekdays banned instead)."""
    from tests.solver.test_weekday_floor import _best as best_of_week
    from tests.solver.test_weekday_floor import _window as week_window

    state = week_window([])
    ids = [10, 11, 12]
    reach = {tid: (1, 7, np.ones(12, dtype=bool)) for tid in ids}
    off = dict.fromkeys(ids, (2, 3, 4, 5, 6))
    held = health_floor(state, pending_periods=12, task_reach=reach, task_off_days=off)
    loose = health_floor(state, pending_periods=12, task_reach=reach)
    util = [b["why"] for b in held.binding if b["rule"] == "day_utilization"]
    assert util and util[0]["days"] == [1, 7] and util[0]["days_forced_over_warning"] >= 1
    assert not [b for b in loose.binding if b["rule"] == "day_utilization"]
    best_c, best_cw, count = best_of_week(week_window([2, 3, 4, 5, 6]))
    assert count > 0 and best_c >= 1
    assert held.critical <= best_c and held.critical + held.warning <= best_cw
