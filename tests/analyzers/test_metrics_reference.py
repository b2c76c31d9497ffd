"""Every metric of every analyzer against the slow pure-Python references, on random windows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import (
    analyze_context,
    analyze_load,
    analyze_subjects,
    analyze_tolerance,
    batch_core_metrics,
    stack_kinds,
)
from tests.helpers.analyzer_windows import CATEGORIES, random_window, windows
from tests.helpers.reference import (
    reference_context,
    reference_core,
    reference_load,
    reference_subjects,
    reference_tolerance,
)

LEVELS = st.sampled_from(["strict", "normal", "relaxed"])


def assert_close(actual: Any, expected: Any, path: str = "metrics") -> None:
    """Equal structure and values; floats to the envelope's rounding (4 decimals)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), path
        assert actual.keys() == expected.keys(), (path, sorted(actual), sorted(expected))
        for key in expected:
            assert_close(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_close(a, e, f"{path}[{i}]")
    elif isinstance(expected, float) and not isinstance(expected, bool):
        assert isinstance(actual, float | int) and not isinstance(actual, bool), path
        assert math.isclose(actual, expected, abs_tol=1.01e-4), (path, actual, expected)
    else:
        assert type(actual) is type(expected) and actual == expected, (path, actual, expected)


@st.composite
def day_bounds(draw: st.DrawFn, state: ScheduleState) -> tuple[int, int]:
    lo = draw(st.integers(1, state.num_days))
    return lo, draw(st.integers(lo, state.num_days))


@given(
    data=st.data(),
    state=windows(),
    level=LEVELS,
    granularity=st.sampled_from(["day", "week", "time_of_day"]),
    detail=st.sampled_from(["summary", "full"]),
)
def test_load_metrics_match_reference(
    data: st.DataObject, state: ScheduleState, level: str, granularity: str, detail: str
) -> None:
    """Tests that every load metric (summary, days, weeks, time of day) equals the reference."""
    lo, hi = data.draw(day_bounds(state))
    result = analyze_load(
        state, day_from=lo, day_to=hi, granularity=granularity, detail=detail, threshold=level
    )
    assert result.success, result.error
    expected = reference_load(
        state, list(range(lo, hi + 1)), granularity=granularity, detail=detail, level=level
    )
    assert_close(result.metrics, expected)


@given(
    state=windows(),
    include_pending=st.booleans(),
    detail=st.sampled_from(["summary", "full"]),
    category=st.none() | st.sampled_from([*CATEGORIES[:3], "未分类", "只待办", "没有"]),
)
def test_subject_metrics_match_reference(
    state: ScheduleState, include_pending: bool, detail: str, category: str | None
) -> None:
    """Tests that every subject metric (gaps, concentration, budget, ...) equals the reference."""
    result = analyze_subjects(
        state, category=category, include_pending=include_pending, detail=detail
    )
    assert result.success, result.error
    expected = reference_subjects(
        state, category=category, include_pending=include_pending, detail=detail
    )
    assert_close(result.metrics, expected)


@given(
    data=st.data(),
    state=windows(),
    detail=st.sampled_from(["summary", "day_detail"]),
    hard=st.lists(st.sampled_from([*CATEGORIES[:3], "未分类"]), max_size=3, unique=True),
)
def test_context_metrics_match_reference(
    data: st.DataObject, state: ScheduleState, detail: str, hard: list[str]
) -> None:
    """Tests that every context metric (switches, blocks, heavy pairs, ...) equals the reference."""
    lo, hi = data.draw(day_bounds(state))
    result = analyze_context(state, day_from=lo, day_to=hi, detail=detail, hard_categories=hard)
    assert result.success, result.error
    expected = reference_context(
        state, list(range(lo, hi + 1)), hard_categories=hard, detail=detail
    )
    assert_close(result.metrics, expected)


@given(data=st.data(), state=windows(), detail=st.sampled_from(["summary", "full"]))
def test_tolerance_metrics_match_reference(
    data: st.DataObject, state: ScheduleState, detail: str
) -> None:
    """Tests that every tolerance metric (usable, fragmented, buffers, free blocks) equals the
    reference, for any usable size and buffer within the day."""
    lo, hi = data.draw(day_bounds(state))
    size = data.draw(st.integers(1, state.slots_per_day))
    buffer = data.draw(st.integers(0, state.slots_per_day))
    result = analyze_tolerance(
        state, day_from=lo, day_to=hi, min_usable_size=size, min_daily_buffer=buffer, detail=detail
    )
    assert result.success, result.error
    expected = reference_tolerance(
        state, list(range(lo, hi + 1)), min_usable_size=size, min_daily_buffer=buffer, detail=detail
    )
    assert_close(result.metrics, expected)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 6),
    num_days=st.integers(1, 12),
    spd=st.sampled_from([1, 5, 12, 16, 20]),
    size=st.integers(1, 4),
    buffer=st.integers(0, 4),
)
def test_batch_core_metrics_match_reference(
    seed: int, n: int, num_days: int, spd: int, size: int, buffer: int
) -> None:
    """Tests that the batch entry point equals the per-window reference on a stack of windows,
    on both the lookup-table path (≤16 periods) and the run-based path (20 periods)."""
    states = [random_window(seed + i, num_days, spd, (i + 1) / (n + 1)) for i in range(n)]
    batch = batch_core_metrics(stack_kinds(states), min_usable_size=size, min_daily_buffer=buffer)
    assert len(batch) == n
    for i, state in enumerate(states):
        expected = reference_core(state, min_usable_size=size, min_daily_buffer=buffer)
        got = batch.row(i)
        assert got.keys() == expected.keys()
        for key, value in expected.items():
            assert math.isclose(got[key], value, rel_tol=1e-9, abs_tol=1e-9), (key, got, value)


def test_batch_agrees_with_single_window_analyzers() -> None:
    """Tests that the batch's core metrics are the ones analyze_load / analyze_tolerance report."""
    states = [random_window(seed, 30, 12, 0.4) for seed in range(8)]
    batch = batch_core_metrics(stack_kinds(states))
    for i, state in enumerate(states):
        load = analyze_load(state).metrics["summary"]
        tol = analyze_tolerance(state).metrics["overall"]
        row = batch.row(i)
        assert row["total_used"] == load["total_used"]
        assert row["course_used"] == load["course_used"]
        assert row["load_range"] == load["load_range"]
        assert math.isclose(row["load_std_dev"], load["load_std_dev"], abs_tol=1e-4)
        assert row["usable_slots"] == tol["usable_slots"]
        assert row["days_without_buffer"] == tol["days_without_buffer"]
        assert math.isclose(row["fragmentation_rate"], tol["fragmentation_rate"], abs_tol=1e-4)


def test_stack_kinds_refuses_mixed_shapes() -> None:
    """Tests that windows of different sizes cannot be stacked (a clear ValueError)."""
    with pytest.raises(ValueError, match="shape"):
        stack_kinds([random_window(1, 5, 12, 0.5), random_window(1, 6, 12, 0.5)])
    with pytest.raises(ValueError, match="non-empty"):
        batch_core_metrics(np.zeros((0, 3, 4), dtype=np.int8))


def test_batch_paths_agree_on_a_large_stack() -> None:
    """Tests that the base-3 lookup path (large stacks, ≤12 periods) equals the binary-mask
    path (small stacks), which the property test checks against the reference."""
    rng = np.random.default_rng(5)
    kinds = rng.choice(np.array([0, 1, 2], dtype=np.int8), size=(5_000, 12, 12), p=[0.5, 0.3, 0.2])
    for size, buffer in ((2, 2), (3, 5)):
        whole = batch_core_metrics(kinds, min_usable_size=size, min_daily_buffer=buffer)
        for start in (0, 2_500, 4_900):
            part = batch_core_metrics(
                kinds[start : start + 100], min_usable_size=size, min_daily_buffer=buffer
            )
            for i in range(100):
                assert whole.row(start + i) == pytest.approx(part.row(i))


@pytest.mark.parametrize("value", [-1, 3, 7])  # kinds are 0 free, 1 course, 2 task only
def test_batch_refuses_unknown_kinds(value: int) -> None:
    """Tests that a kind stack with a value other than 0/1/2 is refused, not mis-counted."""
    kinds = np.zeros((2, 3, 4), dtype=np.int8)
    kinds[1, 2, 3] = value
    with pytest.raises(ValueError, match="kinds"):
        batch_core_metrics(kinds)


def test_large_state_ids_take_the_sorted_lookup() -> None:
    """Tests that windows whose state_ids are near 2**31 (too large for a direct lookup table)
    give the same metrics as the reference."""
    for seed in range(5):
        data = random_window(seed, 10, 12, 0.7).to_dict()
        for task in data["tasks"]:
            task["state_id"] += 2_000_000_000
            if "embed_host" in task:
                task["embed_host"] += 2_000_000_000
            task.pop("embedded_by", None)
        state = ScheduleState.model_validate(data)
        days = list(range(1, 11))
        assert_close(
            analyze_load(state, detail="full").metrics, reference_load(state, days, detail="full")
        )
        assert_close(
            analyze_context(state, detail="day_detail").metrics,
            reference_context(state, days, detail="day_detail"),
        )
        assert_close(analyze_subjects(state).metrics, reference_subjects(state))
        assert_close(analyze_tolerance(state).metrics, reference_tolerance(state, days))
