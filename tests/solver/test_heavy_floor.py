"""Heavy adjacency in the solver (issue 42 item 4): the proposal's key and the floors count the
``heavy_adjacent`` warnings as analyze_health does, and the heavy floor is never above the true
best (solver/heavy_floor.py, its hook in solver/health_floor.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.rules import LEVELS
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.solver.heavy_floor import fixed_heavy_days
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import apply_placements, make_state
from tests.solver.test_health_search import _floor_vs_exhaustive

PROFILES = st.sampled_from(
    [
        {"difficulty_level": "high"},
        {"cognitive_intensity": "high"},
        {"difficulty_level": "low", "cognitive_intensity": "medium"},
        {},
    ]
)


def _block(day: int, start: int, n: int) -> dict[str, int]:
    return {"day": day, "slot_start": start, "slot_end": start + n - 1}


@st.composite
def heavy_windows(draw: st.DrawFn) -> ScheduleState:
    """1-2 days of 4-6 periods: courses, locked study blocks (fixed, some back to back), movable
    suggested ones, 0-2 pending tasks; classes 10-12 with random profiles (some hard), day
    windows and banned periods."""
    days = draw(st.integers(1, 2))
    spd = draw(st.integers(4, 6))
    tasks: list[dict[str, Any]] = []
    for day in range(1, days + 1):
        slot = 1
        while slot <= spd:
            kind = draw(st.sampled_from(["free", "course", "locked", "locked", "suggested"]))
            n = draw(st.integers(1, min(2, spd - slot + 1)))
            if kind == "free":
                slot += 1
                continue
            if kind == "course":
                row = {"source": "event", "category": "课程", "status": "existing"}
                tasks.append({**row, "locked": True, "slots": [_block(day, slot, n)]})
            else:
                tasks.append(
                    {
                        "status": "existing" if kind == "locked" else "suggested",
                        "locked": kind == "locked",
                        "category_id": draw(st.sampled_from([10, 11, 12])),
                        "slots": [_block(day, slot, n)],
                    }
                )
            slot += n
    for _ in range(draw(st.integers(0, 2))):
        n = draw(st.integers(1, 2))
        tasks.append(
            {"status": "pending", "duration": n, "category_id": draw(st.sampled_from([10, 11, 12]))}
        )
    classes = []
    for cid in (10, 11, 12):
        start = draw(st.integers(1, days))
        classes.append(
            {
                "id": cid,
                "name": f"科目{cid}",
                "start_day": start,
                "end_day": draw(st.integers(start, days)),
                "excluded_periods": draw(st.lists(st.integers(1, spd), unique=True, max_size=1)),
                **draw(PROFILES),
            }
        )
    return make_state(days, spd, tasks, classes)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(state=heavy_windows(), level=st.sampled_from(LEVELS), keep_suggested=st.booleans())
def test_heavy_floor_is_never_above_the_true_best(
    state: ScheduleState, level: str, keep_suggested: bool
) -> None:
    """Tests, against an exhaustive enumeration of every placement of the movable study tasks on
    tiny windows with hard classes and locked study blocks, that no schedule's analyze_health
    key is below the proven floor (critical, and critical + warning): over every movable task,
    and over the pending ones alone (a proposal's own floor)."""
    _floor_vs_exhaustive(state, level, scope=set() if keep_suggested else None, in_hypothesis=True)


def _two_hard_locked(extra: list[dict[str, Any]] | None = None) -> ScheduleState:
    """Day 1 of 6 periods: locked 科目10 at 1-2 then locked 科目11 at 3-4 (both hard), free 5-6."""
    tasks: list[dict[str, Any]] = [
        {"status": "existing", "locked": True, "category_id": 10, "slots": [_block(1, 1, 2)]},
        {"status": "existing", "locked": True, "category_id": 11, "slots": [_block(1, 3, 2)]},
        *(extra or []),
    ]
    classes = [
        {"id": 10, "name": "科目10", "difficulty_level": "high"},
        {"id": 11, "name": "科目11", "cognitive_intensity": "high"},
        {"id": 12, "name": "科目12", "difficulty_level": "low"},
    ]
    return make_state(1, 6, tasks, classes)


@pytest.mark.parametrize("level", LEVELS)
def test_fixed_heavy_pair_is_in_the_floor_and_unfixable(level: str) -> None:
    """Tests that two locked hard blocks back to back are a heavy pair in every schedule: the
    floor counts its warning (at strict and normal; relaxed asks for two pairs), names it, and
    analyze_health marks the issue unfixable; the floor is met (tight)."""
    state = _two_hard_locked([{"status": "pending", "duration": 1, "category_id": 12}])
    floor = health_floor(state, level, pending_periods=1)  # type: ignore[arg-type]
    binding = [b for b in floor.binding if b["rule"] == "heavy_adjacent"]
    if level == "relaxed":
        assert binding == []
        return
    assert binding == [
        {"rule": "heavy_adjacent", "why": {"kind": "fixed_heavy_pairs", "day": 1, "fixed_pairs": 1}}
    ]
    assert floor.unfixable[("heavy_adjacent", 1, None)] == "warning"
    health = analyze_health(state, threshold=level, check_feasibility=False)
    heavy = [i for i in health.issues if i.rule == "heavy_adjacent"]
    assert [(i.day, i.severity, i.fixable) for i in heavy] == [(1, "warning", False)]


def test_a_movable_hard_item_is_not_counted_in_the_floor() -> None:
    """Tests that a heavy pair one of whose items may move (suggested, unlocked) is no floor:
    moving it away parts the pair."""
    state = _two_hard_locked()
    t = state.task(2)
    assert t is not None
    t.locked = False
    t.status = "suggested"
    assert fixed_heavy_days(state, "normal", lambda task: task.state_id == 2) == []
    assert [d.day for d in fixed_heavy_days(state, "normal", lambda task: False)] == [1]


@pytest.mark.parametrize(
    ("seed", "days", "variant", "level"),
    [
        (500, 13, "plain", "normal"),
        (501, 13, "fragmented", "strict"),
        (500, 30, "plain", "relaxed"),
    ],
)
def test_proposal_counts_heavy_pairs_as_analyze_health(
    seed: int, days: int, variant: str, level: str
) -> None:
    """Tests, on upstream-shaped windows (class profiles: hard classes), that the proposal's
    (critical, warning) equals analyze_health's on the applied proposal, its heavy warnings
    included, and that its floor is not above it."""
    state = synthetic_window(seed, days, variant=variant, upstream=True)  # type: ignore[arg-type]
    assert any("high" in (tc.difficulty_level, tc.cognitive_intensity) for tc in state.task_classes)
    proposal = propose_placement(state, time_limit_s=2.0, seed=0, threshold=level)
    applied = apply_placements(state, proposal.placements)
    counts = analyze_health(applied, threshold=level, time_limit_s=5.0).issue_counts()
    assert (proposal.critical, proposal.warning) == (counts["critical"], counts["warning"])
    if proposal.floor is not None:
        assert proposal.floor[0] <= proposal.critical
        assert sum(proposal.floor) <= proposal.critical + proposal.warning


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=heavy_windows(), level=st.sampled_from(LEVELS))
def test_proposal_counts_equal_analyze_health_on_tiny_hard_windows(
    state: ScheduleState, level: str
) -> None:
    """Tests, on tiny windows with hard classes, that the proposal's (critical, warning) equals
    analyze_health's on the applied proposal (feasibility included)."""
    assume(any(t.status == "pending" for t in state.tasks))
    proposal = propose_placement(state, time_limit_s=2.0, seed=0, threshold=level)
    applied = apply_placements(state, proposal.placements)
    counts = analyze_health(applied, threshold=level, time_limit_s=5.0).issue_counts()
    assert (proposal.critical, proposal.warning) == (counts["critical"], counts["warning"])
