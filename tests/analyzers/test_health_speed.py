"""The fixable search's shortcuts give the answers of the plain search (issue 25's speed goal).

A free-period candidate the search counts as judged without probing it (``prune``) must be one
that cannot ease any of the action's issues, so the search walks the same candidates with the
same budget and finds the same helpful destination, and ``analyze_health`` says the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import destinations as dest_mod
from smartflow_engine.analyzers.destinations import (
    _easing_days,
    _free_move_facts,
    movable,
    rank_destinations,
)
from smartflow_engine.analyzers.evaluator import evaluator_for
from smartflow_engine.analyzers.health import run_health
from smartflow_engine.analyzers.result import DIMENSIONS
from tests.helpers.analyzer_windows import build, windows

LEVELS = st.sampled_from(["strict", "normal", "relaxed"])


@st.composite
def sparse_windows(draw: st.DrawFn) -> ScheduleState:
    """Windows of a few subjects with few blocks over many days (subject gaps, often at the
    window's ends), busy days of courses, some pending tasks and multi-block tasks."""
    num_days = draw(st.integers(6, 40))
    spd = draw(st.sampled_from((4, 6, 12)))
    busy: dict[int, int] = {}
    items: list[Any] = []
    for _ in range(draw(st.integers(0, 6))):  # courses filling days
        day = draw(st.integers(1, num_days))
        n = busy.get(day, 0)
        if n < spd - 1:
            length = draw(st.integers(1, spd - 1 - n))
            items.append(("course", "课程", day, n + 1, n + length))
            busy[day] = n + length
    for subject in draw(
        st.lists(st.sampled_from(["复习", "实验", "阅读"]), min_size=1, max_size=3, unique=True)
    ):
        days = draw(st.lists(st.integers(1, num_days), min_size=1, max_size=5, unique=True))
        for day in days:
            n = busy.get(day, 0)
            if n >= spd:
                continue
            length = draw(st.integers(1, min(2, spd - n)))
            items.append(("study", subject, day, n + 1, n + length))
            busy[day] = n + length
        if draw(st.booleans()):
            items.append(("pending", subject, 0, 1, draw(st.integers(1, 2))))
    if len(days) >= 2 and draw(st.booleans()):  # one multi-block task of the last subject
        blocks = []
        for day in days[:2]:
            n = busy.get(day, 0)
            if n < spd:
                blocks.append({"day": day, "slot_start": n + 1, "slot_end": n + 1})
                busy[day] = n + 1
        if len(blocks) == 2:
            items.append(
                {
                    "name": "multi",
                    "category": subject,
                    "source": "task_item",
                    "status": "suggested",
                    "slots": blocks,
                }
            )
    return build(num_days, items, spd=spd)


ANY_WINDOW = st.one_of(windows(max_days=40), sparse_windows())


@settings(max_examples=400, deadline=None)
@given(data=st.data(), state=ANY_WINDOW, level=LEVELS)
def test_a_pruned_candidate_eases_none_of_the_focus(
    data: st.DataObject, state: ScheduleState, level: str
) -> None:
    """Tests that on random states, levels, tasks and sets of focus issues, every free-period
    destination outside the days ``_easing_days`` allows has ``eases_focus == 0`` in the plain
    (unpruned) ranking, so it is never helpful."""
    tasks = [t for t in state.tasks if movable(state, t)]
    ev = evaluator_for(state, level)
    severe = list(ev.severe())
    if not tasks or not severe:
        return
    task = data.draw(st.sampled_from(tasks))
    focus = set(data.draw(st.lists(st.sampled_from(severe), min_size=1, max_size=4)))
    note(f"task {task.state_id} {task.slots} {task.status}; focus {sorted(focus)}")
    ranking = rank_destinations(state, task.state_id, level=level, focus=focus, budget=400)
    base = ev.severe()
    wrong = []
    for dest in ranking.destinations:
        if dest.embed_host is not None:
            continue
        allowed = _easing_days(ev, task, dest.from_day, focus, base, level)
        if allowed is not None and dest.day not in allowed and dest.eases_focus:
            wrong.append(dest)
    assert wrong == []


@settings(max_examples=200, deadline=None)
@given(data=st.data(), state=ANY_WINDOW, level=LEVELS)
def test_a_new_issue_on_a_touched_day_is_one_the_move_creates(
    data: st.DataObject, state: ScheduleState, level: str
) -> None:
    """Tests that whenever ``creates_on_day`` says a free-period move gives a day it touches a
    new critical/warning issue, the plain ranking's destination lists a created issue (so it is
    never helpful), on random states, levels and tasks."""
    tasks = [t for t in state.tasks if movable(state, t)]
    if not tasks:
        return
    task = data.draw(st.sampled_from(tasks))
    ev = evaluator_for(state, level)
    ranking = rank_destinations(state, task.state_id, level=level, budget=400)
    wrong = []
    for dest in ranking.destinations:
        if dest.embed_host is not None:
            continue
        need = dest.slot_end - dest.slot_start + 1
        days, _ = _free_move_facts(ev, task, dest.from_day, dest.day, dest.slot_start, need, {})
        if any(ev.creates_on_day(d, f) for d, f in days.items()) and not dest.creates:
            wrong.append(dest)
    assert wrong == []


@settings(max_examples=150, deadline=None)
@given(data=st.data(), state=ANY_WINDOW, level=LEVELS)
def test_a_pruned_ranking_judges_the_same_candidates(
    data: st.DataObject, state: ScheduleState, level: str
) -> None:
    """Tests that the pruned ranking stopping at the first helpful destination judges as many
    candidates, finds the same helpful destination and is complete exactly when the plain one
    is, for random budgets."""
    tasks = [t for t in state.tasks if movable(state, t)]
    severe = list(evaluator_for(state, level).severe())
    if not tasks or not severe:
        return
    task = data.draw(st.sampled_from(tasks))
    focus = set(data.draw(st.lists(st.sampled_from(severe), min_size=1, max_size=4)))
    budget = data.draw(st.integers(1, 80))
    out = []
    for prune in (False, True):
        r = rank_destinations(
            state,
            task.state_id,
            level=level,
            focus=focus,
            budget=budget,
            stop=dest_mod._helps,
            prune=prune,
        )
        helpful = [d for d in r.destinations if d.helps]
        out.append((r.judged, r.complete, helpful))
    assert out[0] == out[1]


def _answers(state: ScheduleState, level: str, dims: list[str]) -> list[dict[str, Any]]:
    result = run_health(state, dims, [], "summary", level, None, None)  # type: ignore[arg-type]
    return [a.to_dict() for a in result.next_actions]


@settings(max_examples=80, deadline=None)
@given(
    state=ANY_WINDOW,
    level=LEVELS,
    dims=st.lists(st.sampled_from(DIMENSIONS), min_size=1, max_size=4, unique=True),
)
def test_health_actions_equal_the_plain_search(
    state: ScheduleState, level: str, dims: list[str]
) -> None:
    """Tests that analyze_health's actions (their fixable flags and reasons included) are the
    same with the search's pruning and without it, on random states, levels and dimensions."""
    pruned = _answers(state, level, dims)
    plain_rank = dest_mod.rank_destinations

    def plain(*args: Any, **kwargs: Any) -> Any:
        kwargs["prune"] = False
        return plain_rank(*args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(dest_mod, "rank_destinations", plain)
        assert _answers(state, level, dims) == pruned


def test_a_home_day_that_stays_present_keeps_its_gaps_apart() -> None:
    """Tests the case a superset must cover: 复习 stands on days 1, 2 (twice), 7, 8 and 14
    (largest gap 5, a strict-level issue); taking day 2 out would merge a second gap of 5
    (days 3-6 with day 1), but day 2 keeps its other block, so moving one day-2 block into the
    gap after day 8 eases the issue, and the pruning lets that day be probed."""
    state = build(
        15,
        [("study", "复习", d, s, s) for d, s in ((1, 1), (2, 1), (2, 2), (7, 1), (8, 1), (14, 1))],
    )
    level = "strict"
    ev = evaluator_for(state, level)
    gap = "issue_subjects_subject_gap_复习"
    assert gap in ev.severe()
    task = state.task(3)
    assert task is not None and task.slots[0].day == 2
    ranking = rank_destinations(state, 3, level=level, focus={gap}, budget=400)
    easing = {d.day for d in ranking.destinations if d.eases_focus}
    assert 10 in easing
    allowed = _easing_days(ev, task, None, {gap}, ev.severe(), level)
    assert allowed is None or easing <= allowed
