"""Fixtures for the solver tests: small hand-made windows named after what they are."""

from __future__ import annotations

import pytest

from smartflow_engine import ScheduleState
from tests.helpers.solver_windows import make_state


@pytest.fixture
def fragmented_window() -> ScheduleState:
    """One day of 6 periods, a course at 3-4: two free runs of 2; pending tasks of 3 and 1."""
    return make_state(
        1,
        6,
        [
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 1, "slot_start": 3, "slot_end": 4}],
            },
            {"duration": 3, "category_id": 12},
            {"duration": 1, "category_id": 12},
        ],
    )


@pytest.fixture
def overfull_window() -> ScheduleState:
    """One day of 4 free periods and 5 periods of pending work."""
    return make_state(1, 4, [{"duration": 2}, {"duration": 2}, {"duration": 1}])


@pytest.fixture
def class_window_window() -> ScheduleState:
    """Two empty days of 4 periods; class 10 may only use day 1 and bans period 4."""
    return make_state(
        2,
        4,
        [
            {"duration": 2, "category_id": 10},
            {"duration": 2, "category_id": 10},
        ],
        [{"id": 10, "name": "复习", "start_day": 1, "end_day": 1, "excluded_periods": [4]}],
    )


@pytest.fixture
def embed_window() -> ScheduleState:
    """One day of 4 periods held by an embeddable course (1-2) and a locked one (3-4)."""
    return make_state(
        1,
        4,
        [
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "can_embed": True,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
            },
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 1, "slot_start": 3, "slot_end": 4}],
            },
            {"duration": 2},
            {"duration": 1},
        ],
    )


@pytest.fixture
def roomy_window() -> ScheduleState:
    """One empty day of 6 periods and two pending tasks of 2."""
    return make_state(1, 6, [{"duration": 2}, {"duration": 2}])
