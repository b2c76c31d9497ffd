"""analyze_health's time limit covers the feasibility step, the floor and the fixable search
(issue 25 item 4)."""

from __future__ import annotations

import time

import pytest

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers.health import analyze_health
from tests.helpers.analyzer_windows import random_window


def window_with_actions() -> ScheduleState:
    """A random window whose health check offers actions that a full search finds fixable."""
    for seed in range(40):
        state = random_window(seed, 20, 12, 0.8)
        result = analyze_health(state, check_feasibility=False)
        if any(a.fixable is True for a in result.next_actions):
            return state
    raise AssertionError("no window with a fixable action")


def test_a_search_cut_by_the_limit_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that when the call's time limit runs out before the fixable search, every action
    it checked says fixable: false (still a bool) with fixable_cut "time_limit" and a reason
    naming the limit, and that the floor it could not finish is reported unproven and cut."""
    state = window_with_actions()
    clock = time.perf_counter
    calls = {"n": 0}

    def late() -> float:  # the clock jumps past any limit once the call has started
        calls["n"] += 1
        return clock() + (0.0 if calls["n"] == 1 else 100.0)

    monkeypatch.setattr(time, "perf_counter", late)
    result = analyze_health(state, check_feasibility=False, time_limit_s=1.0)
    assert result.success
    env = result.to_dict()
    checked = [a for a in env["next_actions"] if "fixable" in a]
    assert checked
    for act in checked:
        assert act["fixable"] is False
        assert act["fixable_cut"] == "time_limit"
        assert "时间限制" in act["fixable_reason"]
    signal = env["metrics"]["close_signal"]
    assert signal["floor_cut"] == "time_limit"
    assert signal["floor"]["proven"] is False
    assert signal["best_achievable"] is False


def test_an_uncut_search_says_nothing_of_the_limit() -> None:
    """Tests that a search the limit did not cut carries no fixable_cut and the floor no
    floor_cut."""
    state = window_with_actions()
    env = analyze_health(state, check_feasibility=False, time_limit_s=30.0).to_dict()
    assert all("fixable_cut" not in a for a in env["next_actions"])
    assert "floor_cut" not in env["metrics"]["close_signal"]
    assert any(a.get("fixable") is True for a in env["next_actions"])


def test_the_limit_is_checked_without_the_feasibility_step() -> None:
    """Tests that time_limit_s is validated even when the feasibility step is skipped (it
    bounds the floor and the search too)."""
    state = random_window(1, 10, 12, 0.5)
    result = analyze_health(state, check_feasibility=False, time_limit_s=0)
    assert not result.success
    assert result.error_code == "invalid_args"
