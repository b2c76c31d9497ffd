"""The floor's days forced over a band by classes with banned weekdays (issue 42,
``health_floor._forced_on_class_days``): on a tiny ordered window whose every schedule is
enumerated, the floor is never above the best schedule keeping every class rule, and the
weekday argument is what makes it bind.
"""

from __future__ import annotations

import itertools

from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.state import ScheduleState
from tests.helpers.solver_windows import best_health, class_item, daily_event, ordered_week
from tests.solver.test_upstream_rules import breaks


def _window(banned_weekdays: list[int]) -> ScheduleState:
    """A week of 12 periods: an event holds periods 9-12 every day; one class (weekdays
    ``banned_weekdays`` banned) has three pending items of 4 periods, in order 1, 2, 3."""
    tasks = daily_event() + [class_item(10 + k, k + 1) for k in range(3)]
    return ordered_week(tasks, banned_weekdays=banned_weekdays)


def _best(state: ScheduleState) -> tuple[int, int, int]:
    """The least (critical, critical + warning) of analyze_health over every schedule that
    places the three items keeping every class rule (checked by the independent checker), and
    how many there are."""
    from smartflow_engine.solver.problem import Placement

    places = [(d, s) for d in range(1, 8) for s in range(1, 6)]  # periods 1-8 are free
    # (in time order: the items' order 1, 2, 3; the checker judges the rest)
    candidates = (
        [Placement(10 + k, d, s, s + 3) for k, (d, s) in enumerate(combo)]
        for combo in itertools.combinations(places, 3)
    )
    return best_health(state, candidates, breaks)


def test_weekday_floor_binds_and_stays_below_every_schedule() -> None:
    """Tests that with Monday-Friday banned the class's 12 periods must go on Saturday and
    Sunday (8 free periods each, 4 already held by the event): the floor counts a day forced
    over the warning load there (a floor that ignored the weekdays pours them into the week,
    and finds none), the exact model of the per-day rules a critical day (its blocks typed by
    the weekdays too), and neither is above the best of every enumerated schedule."""
    state = _window([1, 2, 3, 4, 5])
    floor = health_floor(state, pending_periods=12)
    free_week = health_floor(_window([]), pending_periods=12)
    util = [b for b in floor.binding if b["rule"] == "day_utilization"]
    assert util and util[-1]["why"]["days"] == [6, 7]
    assert floor.critical + floor.warning > free_week.critical + free_week.warning
    # the exact model of the per-day rules with the weekdays as masks: a day at 12 of 12
    exact = health_floor(state, pending_periods=12, exact_s=10.0)
    assert exact.exact_complete and exact.critical >= 1
    assert health_floor(_window([]), pending_periods=12, exact_s=10.0).critical == 0
    best_c, best_cw, count = _best(state)
    assert count > 0
    for f in (floor, exact):
        assert f.critical <= best_c
        assert f.critical + f.warning <= best_cw
