"""Cognitive load (issue 42 item 4): a class is hard when its difficulty or cognitive
intensity is high; two hard items of different classes back to back on a day are heavy
adjacency, reported by analyze_context and analyze_health at every level's threshold."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_context, analyze_health
from smartflow_engine.analyzers.evaluator import HealthEvaluator as IssuesView
from smartflow_engine.analyzers.evaluator import evaluator_for
from smartflow_engine.concepts import hard_subjects
from smartflow_engine.rules import LEVELS, Level, is_hard_class
from smartflow_engine.solver.health_eval import health_counts
from tests.helpers.analyzer_windows import windows, with_profiles

PROFILES = {
    10: {"difficulty_level": "high", "cognitive_intensity": "low"},  # hard by difficulty
    11: {"difficulty_level": "medium", "cognitive_intensity": "high"},  # hard by intensity
    12: {"difficulty_level": "low", "cognitive_intensity": "medium"},  # not hard
}
NAMES = {10: "高数", 11: "物理", 12: "阅读"}


def window(day_blocks: list[list[tuple[int, int, int]]]) -> ScheduleState:
    """Days of 12 periods; each day's study items as (class id, start, end)."""
    tasks: list[dict[str, Any]] = []
    for day, blocks in enumerate(day_blocks, start=1):
        for cid, start, end in blocks:
            tasks.append(
                {
                    "state_id": len(tasks) + 1,
                    "source": "task_item",
                    "name": f"{NAMES[cid]}{len(tasks) + 1}",
                    "category": NAMES[cid],
                    "category_id": cid,
                    "status": "suggested",
                    "slots": [{"day": day, "slot_start": start, "slot_end": end}],
                }
            )
    classes = [
        {"id": cid, "name": NAMES[cid], "allow_filler_course": True, **profile}
        for cid, profile in PROFILES.items()
    ]
    return ScheduleState.model_validate(
        {
            "window": {"total_days": len(day_blocks), "slots_per_day": 12},
            "tasks": tasks,
            "task_classes": classes,
        }
    )


def heavy_issues(result: Any) -> list[Any]:
    return [i for i in result.issues if i.rule == "heavy_adjacent"]


def test_hard_is_high_difficulty_or_high_intensity() -> None:
    """Tests the class rule and the subjects it makes hard (plus named ones)."""
    state = window([[(10, 1, 2), (11, 3, 4), (12, 5, 6)]])
    assert [is_hard_class(tc) for tc in state.task_classes] == [True, True, False]
    assert hard_subjects(state) == {"高数", "物理"}
    assert hard_subjects(state, ["阅读"]) == {"高数", "物理", "阅读"}


@pytest.mark.parametrize("level", ["strict", "normal", "relaxed"])
def test_two_hard_classes_back_to_back_are_heavy(level: str) -> None:
    """Tests that 高数 then 物理 back to back is one heavy pair on that day (analyze_context
    and analyze_health, without naming hard categories), that a hard item next to a light one
    or with a free period between is not, and that the issue is a warning at the level's
    threshold (one pair fires at strict and normal, relaxed asks for two)."""
    state = window(
        [
            [(10, 1, 2), (11, 3, 4)],  # heavy
            [(10, 1, 2), (12, 3, 4), (11, 5, 6)],  # a light class between: no pair
            [(10, 1, 2), (11, 4, 5)],  # a free period between: no pair
            [(11, 1, 2), (10, 3, 4), (11, 5, 6)],  # two heavy pairs
        ]
    )
    ctx = analyze_context(state, threshold=level)
    assert ctx.metrics["overall"]["heavy_adjacent"] == 3
    per_day = {row["day"]: row["heavy_adjacent"] for row in ctx.metrics["days"]}
    assert per_day == {1: 1, 2: 0, 3: 0, 4: 2}
    expected = {1, 4} if level != "relaxed" else {4}
    assert {i.day for i in heavy_issues(ctx)} == expected
    health = analyze_health(state, threshold=level, check_feasibility=False)
    assert {i.day for i in heavy_issues(health)} == expected
    assert {i.severity for i in heavy_issues(health)} == {"warning"}
    # analyze_context offers to part them: move a hard item of those days
    act = next(a for a in ctx.next_actions if a.intent_code == "separate_hard")
    assert set(act.target_filter["days"]) == expected
    assert act.target_filter["categories"] == ["物理", "高数"]


def test_same_hard_class_back_to_back_is_not_heavy() -> None:
    """Tests that two items of one hard class in a row are no switch, so no heavy pair, and
    that a window without hard profiles reports none unless the caller names the subjects."""
    state = window([[(10, 1, 2), (10, 3, 4)], [(12, 1, 2), (12, 5, 6)]])
    assert analyze_context(state).metrics["overall"]["heavy_adjacent"] == 0
    light = window([[(12, 1, 2)]])
    assert analyze_context(light).metrics["overall"]["heavy_adjacent"] == 0


# The decided thresholds (docs/decisions.md, issue 42: heavy adjacency), written here apart from
# the rule table: the least heavy pairs of a day that make it a warning; no critical band.
HEAVY_WARNING_AT = {"strict": 1, "normal": 1, "relaxed": 2}


def independent_heavy(state: ScheduleState) -> dict[int, int]:
    """Day -> heavy pairs, from the raw fields only: a study task (source other than event) is
    of its category (未分类 without one); a guest's period is the guest's; a class is hard when
    its difficulty_level or cognitive_intensity is "high", and its name and the categories of
    its tasks are hard; a pair is two adjacent periods of different hard subjects."""
    data = state.to_dict()
    hard_ids = {
        c["id"]
        for c in data.get("task_classes", [])
        if "high" in (c.get("difficulty_level"), c.get("cognitive_intensity"))
    }
    hard = {c["name"] for c in data.get("task_classes", []) if c["id"] in hard_ids}
    for t in data["tasks"]:
        if t.get("category_id") in hard_ids and t.get("source") != "event":
            hard.add(t.get("category") or "未分类")
    spd = data["window"]["slots_per_day"]
    cells: dict[tuple[int, int], tuple[bool, str | None]] = {}  # (day, period) -> (guest, subject)
    for t in data["tasks"]:
        subject = None if t.get("source") == "event" else (t.get("category") or "未分类")
        guest = t.get("embed_host") is not None
        for b in t.get("slots") or []:
            for q in range(b["slot_start"], b["slot_end"] + 1):
                if guest or (b["day"], q) not in cells or not cells[(b["day"], q)][0]:
                    cells[(b["day"], q)] = (guest, subject)
    out: dict[int, int] = {}
    for day in range(1, data["window"]["total_days"] + 1):
        row = [cells.get((day, q), (False, None))[1] for q in range(1, spd + 1)]
        out[day] = sum(
            1
            for a, b in itertools.pairwise(row)
            if a is not None and b is not None and a != b and a in hard and b in hard
        )
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=windows(), seed=st.integers(0, 2**32 - 1), level=st.sampled_from(LEVELS))
def test_heavy_count_equals_an_independent_count(
    state: ScheduleState, seed: int, level: Level
) -> None:
    """Tests, on random windows (courses, water courses with guests, locked and multi-block
    tasks, pending ones) with random class profiles, that analyze_context's heavy pairs per day,
    analyze_health's total and its heavy_adjacent warnings equal a count written here from the
    raw fields and the decided thresholds, and that the health key of the analyzers' evaluator
    and of the solver's counts equal analyze_health's."""
    state = with_profiles(state, seed)
    want = independent_heavy(state)
    ctx = analyze_context(state, threshold=level)
    got = {row["day"]: row["heavy_adjacent"] for row in ctx.metrics.get("days", [])}
    assert got == {d: n for d, n in want.items() if d in got}
    assert sum(want.values()) == sum(got.values())
    health = analyze_health(state, threshold=level, check_feasibility=False)
    assert health.metrics.get("context", {}).get("heavy_adjacent", 0) == sum(want.values())
    fired = {i.day: i.severity for i in heavy_issues(health)}
    assert fired == {d: "warning" for d, n in want.items() if n >= HEAVY_WARNING_AT[level]}
    counts = health.issue_counts()
    key = (counts["critical"], counts["warning"])
    assert IssuesView(state, level).key() == key
    assert health_counts(state, level).key == key


def test_a_profile_made_hard_is_seen_by_the_cached_evaluator() -> None:
    """Tests that the session's cached evaluator follows a class whose profile becomes hard (its
    class signature reads the hardness): the heavy warning appears in its key as in
    analyze_health's."""
    state = window([[(10, 1, 2), (12, 3, 4)]])
    ev = evaluator_for(state)
    before = ev.key()
    light = state.task_class(12)
    assert light is not None
    light.difficulty_level = "high"
    after = analyze_health(state, check_feasibility=False).issue_counts()
    assert evaluator_for(state).key() == (after["critical"], after["warning"])
    assert after["warning"] == before[1] + 1
