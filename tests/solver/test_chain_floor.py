"""The item order in the health floor (issue 42, ``order_spans.chain_days``): an item of a
class starts after the items before it that every schedule places (and after those that stay
where they are), and ends before those after it, so the floor narrows its days to what the
chain leaves it. On a tiny ordered window whose every schedule is enumerated the floor binds
where the order forces the items together, and is never above the best schedule."""

from __future__ import annotations

import itertools

import numpy as np

from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.solver.order_spans import chain_days
from smartflow_engine.solver.problem import Placement
from smartflow_engine.state import ScheduleState
from tests.helpers.solver_windows import anchored_items, best_health, ordered_week
from tests.solver.test_upstream_rules import breaks


def _window(anchor_day: int) -> ScheduleState:
    """A week of 12 periods: an event holds periods 9-12 every day; class 10's item 1 is locked
    on ``anchor_day`` periods 1-4, its items 2-4 (4 periods each) are pending."""
    return ordered_week(anchored_items(anchor_day))


def _best(state: ScheduleState) -> tuple[int, int, int]:
    """The least (critical, critical + warning) of analyze_health over every schedule placing
    the three pending items keeping every class rule (the independent checker), and how many."""
    places = [(d, s) for d in range(1, 8) for s in range(1, 6)]
    candidates = (
        [Placement(11 + k, d, s, s + 3) for k, (d, s) in enumerate(combo)]
        for combo in itertools.permutations(places, 3)
    )
    return best_health(state, candidates, breaks)


def test_chain_days_follow_the_anchor_and_the_items_before() -> None:
    """Tests the days the chain leaves each pending item after a locked item 1 on day 6
    (periods 1-4): item 2 from day 6 (periods 5-8 are free), item 3 from day 7 (item 2 ends
    on day 6 at the earliest); from the back items 4 and 3 take day 7's eight free periods at
    the latest, so item 2 ends on day 6. With the pending items optional, only the anchor
    bounds them."""
    state = _window(6)
    room = state.grid.owner == 0
    movable = {11, 12, 13}
    none = np.zeros_like(room)
    assert chain_days(state, movable, room, none, must_pending=True) == {
        11: (6, 6),
        12: (7, 7),
        13: (7, 7),
    }
    assert chain_days(state, movable, room, none, must_pending=False) == {
        11: (6, 7),
        12: (6, 7),
        13: (6, 7),
    }


def test_the_order_makes_the_floor_bind_and_it_stays_below_every_schedule() -> None:
    """Tests that with item 1 locked on day 6 the three pending items (12 periods) must go on
    days 6 and 7, which the event fills to 12 of 12: the floor, reading the order, finds a
    day over the critical load (poured over the whole week it finds none), and neither it nor
    its exact model is above the best of every enumerated schedule."""
    state = _window(6)
    floor = health_floor(state, pending_periods=12)
    exact = health_floor(state, pending_periods=12, exact_s=10.0)
    early = health_floor(_window(1), pending_periods=12)
    assert floor.critical >= 1 and exact.critical >= 1
    assert early.critical == 0
    best_c, best_cw, count = _best(state)
    assert count > 0
    for f in (floor, exact):
        assert f.critical <= best_c
        assert f.critical + f.warning <= best_cw
