"""The floor a proposal states (issue 26): the exact model's where it proves it, never above
the true best (tiny windows, exhaustive enumeration)."""

from __future__ import annotations

import random

from smartflow_engine.rules import LEVELS, Level
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.solver.placement import propose_placement
from tests.solver.test_health_model import _exhaustive, _window


def test_a_proposals_floor_is_the_exact_one_and_never_above_the_best() -> None:
    """Tests, on seeded tiny windows of pending tasks that can all be placed (3-5 days of 12
    periods, classes with day windows and banned periods), at every level, that the floor a
    proposal states holds for every placement (exhaustive enumeration: no placement has fewer
    criticals, fewer criticals + warnings, or at the least criticals fewer warnings than its
    lexicographic floor), and that, when its search was not cut by the clock, it equals the
    exact model's floor of the same population (``health_floor`` with a generous limit) where
    that one is complete; and that the exact model tightens the stated floor on some."""
    cal = DEFAULT_CALIBRATION
    rng = random.Random(26)
    checked = equal = tightened = 0
    while checked < 14:
        state = _window(rng)
        if any(t.status == "suggested" for t in state.tasks):
            continue
        level: Level = rng.choice(LEVELS)
        keys = _exhaustive(state, level)
        if keys is None:
            continue
        # the work of a 1 s limit under a wall clock no loaded machine reaches
        proposal = propose_placement(
            state,
            time_limit_s=30.0,
            work_limit_s=cal.work_share,
            seed=0,
            threshold=level,
            calibration=cal,
        )
        if proposal.floor is None:
            continue
        checked += 1
        assert not proposal.unplaced  # every pending task fits (the enumeration found a way)
        fc, fw = proposal.floor
        lw = proposal.floor_least_warning
        for c, w in keys:
            assert c >= fc and c + w >= fc + fw, (state.to_json(), level, proposal.floor, c, w)
            assert lw is None or c > fc or w >= lw, (state.to_json(), level, lw, c, w)
        pending = sum(t.need() for t in state.pending_tasks())
        relaxed = health_floor(state, level, pending_periods=pending)
        exact = health_floor(state, level, pending_periods=pending, exact_s=10.0)
        if exact.exact_complete and not proposal.wall_limited:
            assert (fc, fw, lw) == (exact.critical, exact.warning, exact.least_warning)
            equal += 1
        tightened += (fc, fw, lw) != (relaxed.critical, relaxed.warning, None)
    assert equal >= 10
    assert tightened >= 1
