"""Issue 24 item 6, without timing anything: a stage whose deadline has passed starts no work
that grows with the window, and the answer says what the limit cut.

The clock is faked: a stub of the step before the stage under test moves
:mod:`smartflow_engine.solver.budget`'s clock past the call's deadline, as a slow step on a busy
machine would; the stage must then return at once (the evaluator of the window is never built)
and claim nothing it did not compute. The close stage's set-up is made "expensive" by raising its
per-task estimate, so that the rule for windows of thousands of tasks is tested on small ones.
"""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from smartflow_engine import ScheduleState
from smartflow_engine.batch import JobConfig, WindowItem, run_window
from smartflow_engine.solver import (
    budget,
    health_search,
    least_change,
    placement,
    repair,
    scope_floor,
    scoring,
    unplaced,
)
from smartflow_engine.solver._cpsat import OutOfTime
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state.synthetic import synthetic_window


class FakeClock:
    """``time.perf_counter`` for :mod:`.budget`, moved on by :meth:`jump` (the real clock plus
    an offset, so that the other modules' readings stay consistent before the jump)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def perf_counter(self) -> float:
        return time.perf_counter() + self.offset

    def jump(self, seconds: float = 1000.0) -> None:
        self.offset += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(budget, "time", SimpleNamespace(perf_counter=fake.perf_counter))
    return fake


# Every window's close set-up is estimated as the one of a window of 20,000 tasks.
EXPENSIVE_SETUP = replace(budget.DEFAULT_CALIBRATION, close_setup_per_task_s=1.0)


def forbid_evaluators(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, building an evaluator of the window fails the test."""

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an evaluator of the window was built after the deadline")

    monkeypatch.setattr(health_search, "HealthEvaluator", forbidden)
    monkeypatch.setattr(least_change, "HealthEvaluator", forbidden)
    monkeypatch.setattr(scoring, "HealthEvaluator", forbidden)


@pytest.fixture
def no_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_evaluators(monkeypatch)


def _window() -> ScheduleState:
    return synthetic_window(3, 14, variant="tight")


@pytest.mark.usefixtures("no_evaluator")
def test_the_close_search_does_not_set_up_after_its_deadline() -> None:
    """Tests that search_health raises OutOfTime at once, without building its evaluator, when
    its deadline passed before its set-up (it claims no counts)."""
    state = _window()
    problem = build_problem(state, by_subject=True)
    with pytest.raises(OutOfTime):
        health_search.search_health(
            state,
            problem,
            [],
            budget_s=1.0,
            deadline=time.perf_counter() - 1.0,
            calibration=EXPENSIVE_SETUP,
        )


@pytest.mark.usefixtures("no_evaluator")
def test_a_cheap_set_up_still_runs_after_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests the other side of the rule: on a window whose set-up is cheap the search still
    counts its start past the deadline (so a small window's counts do not depend on the load),
    and returns the start unchanged."""
    monkeypatch.setattr(health_search, "HealthEvaluator", _real_evaluator())
    monkeypatch.setattr(scoring, "HealthEvaluator", _real_evaluator())
    state = _window()
    problem = build_problem(state, by_subject=True)
    start = placement.propose_placement(state, time_limit_s=1.0, seed=0).placements
    result = health_search.search_health(
        state, problem, start, budget_s=1.0, deadline=time.perf_counter() - 1.0
    )
    assert result.evaluations == 0
    assert result.counts.key == result.start_counts.key
    assert sorted(result.placements, key=lambda pl: pl.task_id) == sorted(
        start, key=lambda pl: pl.task_id
    )


def _real_evaluator() -> Any:
    from smartflow_engine.solver.health_eval import HealthEvaluator

    return HealthEvaluator


def test_the_unplaced_check_does_not_start_after_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests that the feasibility check of the unplaced tasks raises OutOfTime instead of
    answering 0 unchecked once its deadline has passed, and never starts the solver."""
    from smartflow_engine.solver import feasibility

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the feasibility check started after the deadline")

    monkeypatch.setattr(feasibility, "check_feasibility", forbidden)
    state = _window()
    pending = [t.state_id for t in state.pending_tasks()]
    with pytest.raises(OutOfTime):
        unplaced.unplaced_check(
            state,
            pending,
            1.0,
            num_workers=1,
            deadline=time.perf_counter() - 1.0,
            calibration=EXPENSIVE_SETUP,
        )
    # nothing unplaced and nothing suggested: the applied schedule is its own witness
    nothing = state.copy_state()
    for task in nothing.tasks:
        if task.status == "suggested":
            task.status = "existing"
    assert unplaced.unplaced_check(nothing, [], 1.0, 1, deadline=0.0) == (0, False)
    with pytest.raises(OutOfTime):  # a suggested task may stand outside its class: checked
        unplaced.unplaced_check(
            state, [], 1.0, 1, deadline=time.perf_counter() - 1.0, calibration=EXPENSIVE_SETUP
        )


@pytest.mark.usefixtures("no_evaluator")
def test_a_proposal_whose_close_stage_is_cut_claims_no_counts(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests that a proposal whose population floor used up its time (the fake clock jumps
    past the deadline there) skips the rest of the close stage (the feasibility check, the
    search's set-up, the comparison with the greedy, the send-back pass), still answers its
    placements, claims no health counts and says the wall clock cut it."""

    def floor_that_takes_all_the_time(*args: Any, **kwargs: Any) -> Any:
        clock.jump()
        raise OutOfTime

    monkeypatch.setattr(scope_floor, "health_floor", floor_that_takes_all_the_time)
    calibration = replace(EXPENSIVE_SETUP, close_per_task_s=0.0)  # the close stage gets its turn
    state = _window()
    proposal = placement.propose_placement(
        state, time_limit_s=5.0, seed=0, include_suggested=True, calibration=calibration
    )
    assert clock.offset > 0  # the close stage began (the floor ran)
    assert proposal.placements
    assert (proposal.critical, proposal.warning, proposal.start_health) == (None, None, None)
    assert proposal.floor is None
    assert proposal.wall_limited


@pytest.mark.usefixtures("no_evaluator")
def test_send_back_past_its_deadline_returns_at_once() -> None:
    """Tests that the least-change pass, its deadline passed, returns the placements as they
    are, changes nothing and says it was cut."""
    state = _window()
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = list(problem.current.values())
    out, change, cut = least_change.send_back(
        state, problem, start, deadline=time.perf_counter() - 1.0, calibration=EXPENSIVE_SETUP
    )
    assert cut and change == (0, 0)
    assert sorted(out, key=lambda pl: pl.task_id) == sorted(start, key=lambda pl: pl.task_id)


def test_a_repair_whose_limit_ran_out_places_the_pending_tasks_and_claims_no_counts(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests that the least-change repair, its limit used up by placing the pending tasks,
    answers those placements only (nothing moved), claims no counts and says it was cut."""
    real = repair.propose_placement
    first: list[Any] = []

    def slow_first_proposal(*args: Any, **kwargs: Any) -> Any:
        first.append(real(*args, **kwargs))
        clock.jump()
        forbid_evaluators(monkeypatch)
        return first[0]

    monkeypatch.setattr(repair, "propose_placement", slow_first_proposal)
    state = _window()
    proposal = repair.repair_placement(
        state, max_moves=3, time_limit_s=5.0, seed=0, calibration=EXPENSIVE_SETUP
    )
    assert first and proposal.placements == sorted(
        first[0].placements, key=lambda pl: (pl.day, pl.slot_start, pl.task_id)
    )
    assert proposal.unplaced == first[0].unplaced
    assert proposal.local_moves == 0 and proposal.moved == 0
    assert (proposal.critical, proposal.warning, proposal.start_health) == (None, None, None)
    assert proposal.wall_limited


def test_the_batch_health_job_answers_within_what_applying_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests that the batch health job hands analyze_health what applying the proposal left of
    the job's limit (the smallest limit when nothing is left), on the window as the proposal
    leaves it, and that its row says a cut floor is not proven."""
    from smartflow_engine import analyzers
    from smartflow_engine.batch import jobs

    seen: list[float] = []
    real = analyzers.analyze_health

    def recording(state: ScheduleState, **kwargs: Any) -> Any:
        seen.append(kwargs["time_limit_s"])
        kwargs["time_limit_s"] = 0.001  # as if applying had used the whole limit
        return real(state, **kwargs)

    real_apply = jobs.apply_placements
    applied: list[Any] = []

    def apply_and_keep(state: ScheduleState, placements: Any) -> Any:
        applied.append(state)
        return real_apply(state, placements)

    monkeypatch.setattr(analyzers, "analyze_health", recording)
    monkeypatch.setattr(jobs, "apply_placements", apply_and_keep)
    state = synthetic_window(5, 20, variant="tight")
    row = run_window(
        WindowItem(0, "w", state.to_json()), JobConfig(time_limit_s=2.0, work_limit_s=0.1)
    ).row
    assert row["error"] is None and row["health_of"] == "proposal"
    assert len(seen) == 1 and 0 < seen[0] <= 2.0
    # the counts are those of the applied window; a floor cut by the limit is never claimed
    expected = real(applied[0], time_limit_s=0.001, num_workers=1).metrics["close_signal"]
    assert (row["critical"], row["warning"]) == (expected["critical"], expected["warning"])
    if expected["floor"].get("proven") is not True:
        assert row["floor_proven"] is not True and row["best_achievable"] is not True


def test_a_first_proposal_does_not_charge_the_imports_to_its_wide_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests that a process's one-time imports (``warm_imports``, ~1 s for CP-SAT on a cold
    process) run before the clock of a proposal that re-plans the suggested tasks: the wide
    scope gets the limit less the narrow scope's time, not less the imports too (they once
    took most of its share, and the first proposal of a process said 时限截断)."""
    imports_s = 1.5
    calls: list[int] = []

    def slow_first_import() -> None:
        if not calls:
            time.sleep(imports_s)  # as a cold process's first import of CP-SAT
        calls.append(1)

    limits: list[tuple[bool, float, float]] = []  # (wide?, its limit, its own runtime)
    real_scope = placement._propose_scope

    def spy(state: ScheduleState, **args: Any) -> Any:
        out = real_scope(state, **args)
        limits.append((args["include_suggested"], args["time_limit_s"], out.runtime_s))
        return out

    monkeypatch.setattr(placement, "warm_imports", slow_first_import)
    monkeypatch.setattr(placement, "_propose_scope", spy)
    state = _window()
    assert any(t.status == "suggested" and t.slots for t in state.tasks)
    placement.propose_placement(state, time_limit_s=4.0, include_suggested=True)
    (narrow_wide, narrow_limit, narrow_s), (wide, wide_limit, _) = limits
    assert not narrow_wide and wide and narrow_limit == 2.0
    # what the wide scope lost: the narrow scope's time and the ordering between, not the imports
    assert wide_limit >= 4.0 - narrow_s - 0.5
