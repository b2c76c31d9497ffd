"""The close stage: exact analyze_health counts on the grid, and the search that lowers them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from solver_windows import apply_placements, make_state, tiny_windows

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.rules import LEVELS
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.health_eval import HealthEvaluator, health_counts
from smartflow_engine.solver.health_search import search_health
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state.strategies import windows
from smartflow_engine.state.synthetic import synthetic_window


def health_key(state: ScheduleState, level: str, feasibility: bool = False) -> tuple[int, int]:
    counts = analyze_health(state, threshold=level, check_feasibility=feasibility).issue_counts()
    return counts["critical"], counts["warning"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=windows(min_days=3, max_days=21), level=st.sampled_from(LEVELS))
def test_counts_equal_analyze_health(state: ScheduleState, level: str) -> None:
    """Tests that the grid evaluator's (critical, warning) equal analyze_health's on random
    synthetic windows (every variant, with and without task classes) at every level."""
    assert health_counts(state, level).key == health_key(state, level)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=tiny_windows(), level=st.sampled_from(LEVELS), seed=st.integers(0, 5))
def test_search_counts_equal_health_of_the_applied_schedule(state: ScheduleState, level: str,
                                                            seed: int) -> None:
    """Tests that after the search moved tasks (incremental updates, guests in host blocks,
    class windows, banned periods), the counts it reports equal analyze_health on the schedule
    the placements give through the real write path, and are never worse than the start."""
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = list(problem.current.values())
    result = search_health(state, problem, start, level=level, seed=seed, budget_s=0.01)
    applied = apply_placements(state, result.placements, list(problem.current))
    assert result.counts.key == health_key(applied, level)
    assert result.counts.key <= result.start_counts.key
    assert result.start_counts.key == health_key(state, level)


@pytest.mark.parametrize(("seed", "days", "variant", "classes", "level"), [
    (1, 13, "plain", False, "normal"),
    (2, 13, "fragmented", True, "strict"),
    (3, 13, "plain", True, "relaxed"),
    (4, 9, "tight", False, "normal"),  # infeasible: the feasibility issue counts too
])
def test_proposal_counts_equal_health_after_apply(seed: int, days: int, variant: Any,
                                                  classes: bool, level: str) -> None:
    """Tests that propose_placement's (critical, warning) equal what analyze_health (with its
    feasibility step) reports once the proposal is applied, at the requested level."""
    state = synthetic_window(seed, days, variant=variant, with_task_classes=classes)
    proposal = propose_placement(state, time_limit_s=1.0, seed=0, threshold=level)
    applied = apply_placements(state, proposal.placements)
    assert (proposal.critical, proposal.warning) == health_key(applied, level, feasibility=True)
    assert proposal.start_health is not None
    assert (proposal.critical, proposal.warning) <= proposal.start_health


def test_search_is_deterministic_for_a_seed() -> None:
    """Tests that the same seed and budget give the same placements."""
    state = synthetic_window(7, 20, variant="fragmented")
    problem = build_problem(state, include_suggested=True, by_subject=True)
    proposal = propose_placement(state, time_limit_s=0.5, seed=0)
    runs = [search_health(state, problem, proposal.placements, seed=3, budget_s=0.05)
            for _ in range(2)]
    assert runs[0].placements == runs[1].placements
    assert runs[0].evaluations == runs[1].evaluations


def test_move_limit_is_honoured() -> None:
    """Tests that max_moves caps the tasks that end away from their origin."""
    state = synthetic_window(11, 20, variant="fragmented")
    problem = build_problem(state, include_suggested=True, by_subject=True)
    proposal = propose_placement(state, time_limit_s=0.5, seed=0)
    for k in (0, 1, 3):
        result = search_health(state, problem, proposal.placements, seed=0, budget_s=0.05,
                               max_moves=k)
        assert result.moved <= k
        if k == 0:
            assert result.placements == sorted(
                proposal.placements, key=lambda pl: (pl.day, pl.slot_start, pl.task_id))


# ------------------------------------------------------------------ each rule avoided when it can
def _study(day: int, start: int, end: int, category_id: int = 12, status: str = "suggested",
           **extra: Any) -> dict[str, Any]:
    return {"status": status, "category_id": category_id, "category": f"c{category_id}",
            "slots": [{"day": day, "slot_start": start, "slot_end": end}], **extra}


def _course(day: int, start: int, end: int) -> dict[str, Any]:
    return {"source": "event", "category": "课程", "status": "existing", "locked": True,
            "slots": [{"day": day, "slot_start": start, "slot_end": end}]}


def _rules_after(state: ScheduleState, level: str = "normal") -> tuple[set[str], set[str],
                                                                        tuple[int, int]]:
    before = {i.rule for i in analyze_health(state, threshold=level, check_feasibility=False).issues
              if i.severity != "info"}
    problem = build_problem(state, include_suggested=True, by_subject=True)
    result = search_health(state, problem, list(problem.current.values()), level=level, seed=0,
                           budget_s=0.3)
    applied = apply_placements(state, result.placements, list(problem.current))
    after = {i.rule for i in analyze_health(applied, threshold=level,
                                            check_feasibility=False).issues
             if i.severity != "info"}
    return before, after, result.counts.key


def _day_util_window() -> ScheduleState:
    """Four days of 12; day 1 holds 10 study periods (utilisation 0.83), the rest are empty."""
    return make_state(4, 12, [_study(1, 1, 2, 10), _study(1, 3, 4, 11), _study(1, 5, 6, 12),
                              _study(1, 7, 8, 10), _study(1, 9, 10, 11)])


def _gap_window() -> ScheduleState:
    """Eight days; subject c10 sits on days 1 and 8 (a gap of 6 days) with a block on day 1
    that could fill the gap."""
    return make_state(8, 12, [_study(1, 1, 2, 10), _study(1, 5, 6, 10), _study(8, 1, 2, 10)])


def _switch_window() -> ScheduleState:
    """Two days; day 1 alternates four subjects in one-period blocks (7 switches)."""
    return make_state(2, 12, [_study(1, s, s, 10 + (s - 1) % 4) for s in range(1, 9)])


def _buffer_window() -> ScheduleState:
    """Four days of 6; days 1 and 2 are filled with study blocks (no free run), 3 and 4 empty."""
    return make_state(4, 6, [_study(1, 1, 3), _study(1, 4, 6, 11), _study(2, 1, 3, 10),
                             _study(2, 4, 6, 13)])


def _fragment_window() -> ScheduleState:
    """Two days of 8: one-period study blocks every other period on day 1 leave four one-period
    islands; a course holds day 2's periods 1-4."""
    return make_state(2, 8, [_study(1, 2, 2, 10), _study(1, 4, 4, 11), _study(1, 6, 6, 12),
                             _study(1, 8, 8, 13), _course(2, 1, 4)])


def _concentration_window() -> ScheduleState:
    """Six days; subject c10's four blocks are all on day 1 besides one on day 2."""
    return make_state(6, 12, [_study(1, 1, 2, 10), _study(1, 3, 4, 10), _study(1, 5, 6, 10),
                              _study(1, 7, 8, 10), _study(2, 1, 1, 10)])


def _imbalance_window() -> ScheduleState:
    """Eight days of 12; day 1 holds 8 study periods, day 2 a locked course of 6, the rest
    empty: std 3.28, range 8 (critical); spread out, std 1.98."""
    return make_state(8, 12, [_study(1, 1, 2, 10), _study(1, 3, 4, 11), _study(1, 5, 6, 12),
                              _study(1, 7, 8, 13), _course(2, 1, 6)])


@pytest.mark.parametrize(("rule", "window"), [
    ("day_utilization", _day_util_window),
    ("subject_gap", _gap_window),
    ("context_switch", _switch_window),
    ("buffer", _buffer_window),
    ("free_fragmentation", _fragment_window),
    ("subject_concentration", _concentration_window),
    ("load_imbalance", _imbalance_window),
])
def test_each_rule_is_avoided_when_it_can_be(rule: str, window: Any) -> None:
    """Tests, rule by rule of the table, that the close stage removes an issue a placement of
    the same tasks avoids, and that its counts do not get worse."""
    state = window()
    before, after, key = _rules_after(state)
    assert rule in before
    assert rule not in after
    assert key <= health_key(state, "normal")


def test_evaluator_updates_match_a_rebuild() -> None:
    """Tests that place/remove keep every cached figure equal to a fresh evaluator's."""
    state = synthetic_window(5, 14, variant="plain")
    problem = build_problem(state, include_suggested=True, by_subject=True)
    proposal = propose_placement(state, time_limit_s=0.5, seed=0, include_suggested=True)
    scope = {t for g in problem.groups for t in g.task_ids}
    ev = HealthEvaluator(state, scope)
    ev.set_placements(proposal.placements[:3])
    for pl in proposal.placements[3:]:
        ev.place(pl)
    ev.remove(proposal.placements[0].task_id)
    fresh = HealthEvaluator(state, scope)
    fresh.set_placements(proposal.placements[1:])
    assert ev.counts_now() == fresh.counts_now()
