"""The days forced over a band in spans of days (issue 42, ``health_floor._forced_in_spans``):
a class's items that the item order keeps to a few days must hold their periods there even
when another movable task may use every day (the one pool of the periods some task may use
then spans the week and sees nothing). On a tiny window whose every schedule is enumerated
the floor binds on the span and is never above the best schedule."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, note, settings

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.solver.problem import Placement, scope_tasks
from smartflow_engine.state import ScheduleState
from smartflow_engine.tools_adapter.tools.close_text import binding_text
from tests.helpers.solver_windows import (
    anchored_items,
    apply_placements,
    best_health,
    ordered_week,
)
from tests.solver.test_upstream_rules import UPSTREAM, breaks

FREE = [(d, s) for d in range(1, 8) for s in range(1, 6)]  # 4-period starts off the event


def _window(with_other: bool) -> ScheduleState:
    """A week of 12 periods, an event on periods 9-12 every day; class 10's item 1 locked on
    Saturday (day 6) periods 1-4 and its items 2-4 (4 periods each) pending, so they follow
    it on days 6-7; with ``with_other``, a pending task of no class (4 periods, 阅读) that
    may take any day."""
    tasks = anchored_items(6)
    if with_other:
        tasks.append(
            {
                "state_id": 20,
                "source": "task_item",
                "source_id": 2000,
                "name": "阅读",
                "category": "阅读",
                "status": "pending",
                "locked": False,
                "duration": 4,
            }
        )
    return ordered_week(tasks)


def test_a_span_of_the_order_forces_full_days() -> None:
    """Tests that the three pending items, kept by the order to Saturday and Sunday (four and
    eight free periods), fill both days to 12 of 12 in every schedule, and that the floor
    finds the critical days through the span [6, 7] although the other task may use every
    day of the week (the span's figure binds: ``day_utilization``'s days are 6-7). The
    floor is never above the best of every schedule: the class's items enumerated over
    every place (only days 6-7 keep the order) times every place of the other task."""
    state = _window(with_other=True)
    floor = health_floor(state, pending_periods=16)
    util = [b["why"] for b in floor.binding if b["rule"] == "day_utilization"]
    assert util and util[0]["days"] == [6, 7] and util[0]["days_forced_over_critical"] == 2
    assert floor.critical >= 2
    # the span's own figures: 12 periods, room for 1 + 5 below the warning load (10 periods)
    why = util[0]
    assert why["confined"] and why["periods_to_place"] == 12 and why["room_below_warning"] == 6
    text = binding_text("day_utilization", why)
    assert "第6-7天之间至少要放下12节任务" in text and "只能容纳6节" in text
    # every schedule of the class's items keeping the order lies on days 6-7
    items = [
        [Placement(11 + k, d, s, s + 3) for k, (d, s) in enumerate(combo)]
        for combo in itertools.permutations(FREE, 3)
    ]
    alone = _window(with_other=False)
    kept = [pls for pls in items if not breaks(alone, pls) and _apart(pls)]
    assert kept and all(p.day in (6, 7) for pls in kept for p in pls)
    other = [(d, s) for d, s in FREE if d != 6 or s > 4]  # (off the locked item 1)
    candidates = ([*pls, Placement(20, d, s, s + 3)] for pls in kept for d, s in other)
    best_c, best_cw, count = best_health(state, candidates, breaks)
    assert count > 0
    assert floor.critical <= best_c and floor.critical + floor.warning <= best_cw


def _apart(pls: list[Placement]) -> bool:
    """No two of ``pls`` share a period."""
    cells = [(p.day, q) for p in pls for q in range(p.slot_start, p.slot_end + 1)]
    return len(cells) == len(set(cells))


def test_a_span_counts_the_pending_periods_that_may_stay_unplaced() -> None:
    """Tests the span argument when not every pending period must be placed: with 12 of the
    16 pending periods asked, at most 4 stay unplaced, so at least 8 of the class's 12 (kept
    by the order to Saturday and Sunday) land there, where 6 fit below the warning load: a
    day over it. The floor is never above the best of every schedule placing 12 periods or
    more (any two or three of the class's items on the places that keep the order, with or
    without the other task anywhere)."""
    state = _window(with_other=True)
    floor = health_floor(state, pending_periods=12)
    util = [b["why"] for b in floor.binding if b["rule"] == "day_utilization"]
    assert util and util[0]["days"] == [6, 7] and util[0]["periods_to_place"] == 8
    assert util[0]["days_forced_over_warning"] >= 1
    alone = _window(with_other=False)
    kept: list[list[Placement]] = []
    for size in (2, 3):
        for ids in itertools.combinations((11, 12, 13), size):
            for combo in itertools.permutations(FREE, size):
                pls = [Placement(i, d, s, s + 3) for i, (d, s) in zip(ids, combo, strict=True)]
                if _apart(pls) and not breaks(alone, pls):
                    kept.append(pls)
    other = [(d, s) for d, s in FREE if d != 6 or s > 4]
    candidates = [pls for pls in kept if len(pls) == 3]
    candidates += [[*pls, Placement(20, d, s, s + 3)] for pls in kept for d, s in other]
    best_c, best_cw, count = best_health(state, candidates, breaks)
    assert count > 0
    assert floor.critical <= best_c and floor.critical + floor.warning <= best_cw


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(state=UPSTREAM)
def test_the_floor_stays_below_the_proposals_schedule(state: ScheduleState) -> None:
    """Tests, on random upstream-shaped windows (bans, weekdays, dates, permission, order), in
    both scopes, that the floor of the proposal's population (the pending periods it places,
    its scope moving: the spans, the weekday reach and every other part) is never above the
    counts ``analyze_health`` gives the proposal's own schedule, written through the write
    path (which keeps every class rule)."""
    note(state.to_json(indent=None))
    pending_ids = {t.state_id for t in state.pending_tasks()}
    for replan in (True, False):
        new = propose_placement(state, time_limit_s=0.3, seed=0, include_suggested=replan)
        applied = apply_placements(state, list(new.placements))
        signal = analyze_health(applied, time_limit_s=2.0).metrics["close_signal"]
        scope = {t.state_id for t in scope_tasks(state, include_suggested=replan)}
        placed = sum(p.length for p in new.placements if p.task_id in pending_ids)
        floor = health_floor(state, pending_periods=placed, scope=scope)
        assert floor.critical <= signal["critical"]
        assert floor.critical + floor.warning <= signal["critical"] + signal["warning"]
