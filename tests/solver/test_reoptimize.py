"""Tests of the re-optimising tools' solver side and its inputs (issue 12, items 6, 10 and 13):
min_context_switch counts switches exactly as analyze_context does and moves nothing unless
that count drops; a task class without days is refused on load, so spread_even never divides by
zero; synthetic windows with one period a day are valid."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.analyzers import analyze_context
from smartflow_engine.analyzers.frame import Frame
from smartflow_engine.solver import min_context_switch, spread_even
from smartflow_engine.solver.reoptimize import spread_measure
from smartflow_engine.solver.switches import study_layer, switches
from smartflow_engine.state import StateError
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import make_state


def total_switches(state: ScheduleState, first: int, last: int) -> int:
    """analyze_context's total over days ``first..last`` (0 when no study task is placed)."""
    result = analyze_context(state, day_from=first, day_to=last)
    return int(result.metrics.get("total_switches", 0))


@pytest.mark.parametrize("seed", range(6))
def test_study_layer_is_the_analyzers(seed: int) -> None:
    """Tests on synthetic windows (guests included) that the shared study layer is exactly the
    one analyze_context reads, and that the shared count equals its total."""
    state = synthetic_window(seed, 20, variant="fragmented" if seed % 2 else "plain")
    assert np.array_equal(study_layer(state), Frame.build(state).study)
    assert switches(state) == total_switches(state, 1, state.num_days)


def test_spec_window_moves_nothing_when_the_student_sees_no_switch(
    spec_tools_window: ScheduleState,
) -> None:
    """Tests issue 12 item 10 on the spec window: analyze_context reports no switch, so
    min_context_switch reports 0 -> 0 and moves nothing (it used to report 1 -> 0 and move a
    task)."""
    state = spec_tools_window
    n = state.num_days
    assert total_switches(state, 1, n) == 0
    result = min_context_switch(state, time_limit_s=5.0)
    assert result.moves == []
    assert result.before["context_switch"] == 0 == result.after["context_switch"]


@pytest.mark.parametrize("seed", range(8))
def test_moves_always_reduce_the_analyzers_count(seed: int) -> None:
    """Tests on synthetic windows that min_context_switch, applied through the tool, reports
    the before/after counts analyze_context gives, and moves a task only when that count
    drops."""
    state = synthetic_window(seed, 10, pending=4)
    rng = np.random.default_rng(seed)
    first = int(rng.integers(1, 6))
    last = int(rng.integers(first, 11))
    before = total_switches(state, first, last)
    result = min_context_switch(state.copy_state(), first, last, time_limit_s=2.0)
    if result.status == "empty":  # nothing movable on those days
        return
    assert result.before["context_switch"] == before
    tb = Toolbox(state)
    tb.call("min_context_switch", {"day_from": first, "day_to": last, "time_limit_s": 2.0})
    after = total_switches(tb.state, first, last)
    if result.moves:
        assert after == result.after["context_switch"] < before
    else:
        assert after == before


def test_alternating_day_is_regrouped() -> None:
    """Tests that an alternating day of two subjects (3 switches as analyze_context counts
    them) is regrouped to 1 switch."""
    tasks: list[dict[str, Any]] = [
        {
            "status": "suggested",
            "category": name,
            "category_id": cid,
            "slots": [{"day": 1, "slot_start": i + 1, "slot_end": i + 1}],
        }
        for i, (cid, name) in enumerate([(10, "复习"), (11, "作业"), (10, "复习"), (11, "作业")])
    ]
    state = make_state(1, 4, tasks)
    result = min_context_switch(state, time_limit_s=5.0)
    assert (result.before["context_switch"], result.after["context_switch"]) == (3, 1)
    assert len(result.moves) >= 1


@pytest.mark.parametrize(("start", "end"), [(4, 3), (2, 1), (5, 1)])
def test_task_class_without_days_is_refused(start: int, end: int) -> None:
    """Tests that a task class whose start_day is after its end_day (issue 12 item 6: start =
    end + 1 made spread_even divide by zero) is refused on load, naming the class."""
    with pytest.raises((StateError, ValueError), match=r"task class \[10\] 复习: start_day"):
        make_state(
            5,
            4,
            [{"duration": 1, "category_id": 10}],
            [{"id": 10, "name": "复习", "start_day": start, "end_day": end}],
        )


@pytest.mark.parametrize("seed", range(10))
def test_spread_even_on_any_accepted_class_window(seed: int) -> None:
    """Tests spread_even on windows with one-day and full-window classes (and windows of one
    period a day): no error, and the spread measure never grows."""
    rng = np.random.default_rng(seed)
    days = int(rng.integers(1, 6))
    day = int(rng.integers(1, days + 1))
    tasks: list[dict[str, Any]] = [
        {
            "status": "suggested",
            "category": "复习",
            "category_id": 10,
            "slots": [{"day": int(rng.integers(day, days + 1)), "slot_start": s, "slot_end": s}],
        }
        for s in (1, 2)
    ]
    state = make_state(
        days, 2, tasks, [{"id": 10, "name": "复习", "start_day": day, "end_day": days}]
    )
    result = spread_even(state, "复习", time_limit_s=1.0)
    if result.moves:
        assert result.after["spread_deviation"] <= result.before["spread_deviation"]
    assert spread_measure([1], 2, 1) == 0.0  # no day in range: no division


@pytest.mark.parametrize("seed", range(20))
def test_synthetic_window_with_one_period_a_day(seed: int) -> None:
    """Tests issue 12 item 13: synthetic windows of one (and two) periods a day with task
    classes are valid for every seed, and their classes ban no period that does not exist."""
    for spd in (1, 2):
        state = synthetic_window(seed, slots_per_day=spd, with_task_classes=True)
        assert state.task_classes
        assert all(not tc.excluded_periods for tc in state.task_classes)
