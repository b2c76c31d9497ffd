"""Tests of issue 24 item 6 for the batch: every job of a window holds the batch's time limit as
its whole wall clock (the proposal had ten times the limit, the negotiation figures a limit of
their own after the check's), and a job its limit cut says so in its row."""

from __future__ import annotations

import time
from typing import Any

import pytest

from smartflow_engine.batch import JobConfig, WindowItem, run_window
from smartflow_engine.batch import jobs as batch_jobs
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.batch_windows import tiny_cohort


def _item(state: Any) -> WindowItem:
    return WindowItem(0, "w0", state.to_json())


def test_the_proposal_job_gets_the_limit_as_its_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that the proposal job calls propose_placement with the batch's limit as its wall
    clock (it had 10 x the limit, so a window could take 38 s at --time-limit 2) and the work
    budget of a call at that limit."""
    import smartflow_engine.solver as solver

    seen: dict[str, Any] = {}
    real = solver.propose_placement

    def spy(state: Any, **kw: Any) -> Any:
        seen.update(kw)
        return real(state, **kw)

    monkeypatch.setattr(solver, "propose_placement", spy)
    result = run_window(_item(tiny_cohort(1)[0]), JobConfig(jobs=("proposal",), time_limit_s=2.0))
    assert result.row["error"] is None
    assert seen["time_limit_s"] == 2.0
    assert seen["work_limit_s"] == pytest.approx(DEFAULT_CALIBRATION.work_share * 2.0)


def test_the_feasibility_job_shares_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that the negotiation figures get what the check left of the feasibility job's
    limit (each had the whole limit)."""
    import smartflow_engine.solver as solver

    seen: list[float] = []
    real_check, real_figures = solver.check_feasibility, solver.negotiation_figures

    def slow_check(*a: Any, **kw: Any) -> Any:
        seen.append(kw["time_limit_s"])
        report = real_check(*a, **kw)
        time.sleep(0.3)  # a check that used 0.3 s of the limit
        return report

    def figures(*a: Any, **kw: Any) -> Any:
        seen.append(kw["time_limit_s"])
        return real_figures(*a, **kw)

    monkeypatch.setattr(solver, "check_feasibility", slow_check)
    monkeypatch.setattr(solver, "negotiation_figures", figures)
    infeasible = tiny_cohort(5)[4]  # proven infeasible (see batch_windows)
    result = run_window(_item(infeasible), JobConfig(jobs=("feasibility",), time_limit_s=1.0))
    assert result.row["is_feasible"] is False and len(seen) == 2
    assert seen[0] <= 1.0 and seen[1] <= 1.0 - 0.3


def test_jobs_hold_the_limit_on_a_long_window() -> None:
    """Tests the feasibility and proposal jobs on a 1000-day window of 24 periods at a 0.5 s
    limit: each stays within a loose bound of the limit and the proposal's row says the wall
    clock cut it (the default jobs took a median 3.5 s a window at --time-limit 2)."""
    state = synthetic_window(12, 1000, pending=3000, slots_per_day=24)
    config = JobConfig(jobs=("feasibility", "proposal"), time_limit_s=0.5)
    row = run_window(_item(state), config).row
    assert row["error"] is None
    assert row["feasibility_s"] <= 0.5 + 2.5
    assert row["proposal_s"] <= 0.5 + 2.5
    assert row["proposal_wall_limited"] is True
    assert row["placed_slots"] > 0


def test_the_batch_timeout_no_longer_waits_for_ten_limits() -> None:
    """Tests that a window's default safety timeout counts each job at its limit (it added the
    proposal's 10 x the limit on top) plus a fixed allowance for analyze_health."""
    config = JobConfig(time_limit_s=2.0)
    assert config.proposal_wall_s() == 2.0
    assert config.timeout() == 60.0 + 6.0 * 2.0 * 3
    assert not hasattr(batch_jobs, "PROPOSAL_WALL_FACTOR")
