"""The domain concepts' one home (issue 25 item 3): each with the spec's meaning, and every
other place answers as it does."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings

from smartflow_engine import ScheduleState, concepts, health_facts
from smartflow_engine.analyzers import destinations, frame
from smartflow_engine.analyzers.evaluator import HealthEvaluator
from smartflow_engine.solver import health_eval, problem
from smartflow_engine.solver.health_floor import movable_study
from smartflow_engine.solver.switches import daily_switches, study_layer
from smartflow_engine.state import move
from tests.helpers.analyzer_windows import build, windows


def spec_window() -> ScheduleState:
    """A course, a locked study task, an uncategorised one, a two-block one on two days, one
    with two blocks on one day, a water course with a guest, and a pending task."""
    return build(
        5,
        [
            ("course", "课程", 1, 1, 2),  # 1
            {
                "name": "锁定",
                "category": "复习",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 2, "slot_start": 1, "slot_end": 2}],
            },  # 2
            {
                "name": "无类",
                "category": "",
                "status": "suggested",
                "slots": [{"day": 2, "slot_start": 5, "slot_end": 6}],
            },  # 3
            {
                "name": "两天",
                "category": "作业",
                "status": "suggested",
                "slots": [
                    {"day": 3, "slot_start": 1, "slot_end": 2},
                    {"day": 4, "slot_start": 1, "slot_end": 2},
                ],
            },  # 4
            {
                "name": "同天",
                "category": "作业",
                "status": "suggested",
                "slots": [
                    {"day": 5, "slot_start": 1, "slot_end": 1},
                    {"day": 5, "slot_start": 3, "slot_end": 3},
                ],
            },  # 5
            {
                "name": "水课",
                "category": "课程",
                "status": "existing",
                "source": "event",
                "can_embed": True,
                "slots": [{"day": 1, "slot_start": 5, "slot_end": 6}],
            },  # 6
            {
                "name": "嵌入",
                "category": "阅读",
                "status": "suggested",
                "embed_host": 6,
                "slots": [{"day": 1, "slot_start": 5, "slot_end": 5}],
            },  # 7
            ("pending", "阅读", 0, 1, 2),  # 8
        ],
    )


def test_events_and_study_tasks() -> None:
    """Tests that an event is a task whose source is event and every other task is a study
    task."""
    state = spec_window()
    assert [t.state_id for t in state.tasks if concepts.is_event(t)] == [1, 6]
    assert all(concepts.is_study(t) != concepts.is_event(t) for t in state.tasks)


def test_subject_of_a_task() -> None:
    """Tests that a study task's subject is its category (未分类 without one) and an event has
    none, and that the analyzers', the solver's health model and its soft terms agree."""
    state = spec_window()
    got = {t.state_id: concepts.subject_of(t) for t in state.tasks}
    assert got == {
        1: None,
        2: "复习",
        3: "未分类",
        4: "作业",
        5: "作业",
        6: None,
        7: "阅读",
        8: "阅读",
    }
    for t in state.tasks:
        assert health_eval.study_subject(t) == got[t.state_id]
        # the proposal's soft terms: the same subject, "" (none) for an event
        assert problem.subject_of(t) == (got[t.state_id] or "")
    # the analyzers' frame codes the subjects as the health model does: same names, same study
    # layer (a guest's subject over its host's period)
    codes = health_facts.subject_codes(state.tasks)
    assert codes.names == [n for n in dict.fromkeys(got.values()) if n is not None]
    built = frame.Frame.build(state)
    assert built.subjects == codes.names
    grid = state.grid
    of = np.vectorize(lambda i: codes.of_task[i] if i else 0, otypes=[np.int64])
    want = np.where(grid.guest != 0, of(grid.guest), of(grid.owner))  # period by period
    assert (built.study == want).all()
    assert grid.guest.any() and built.study.any()  # the spec window has a guest and subjects


def test_movable_and_its_named_variants() -> None:
    """Tests that movable means a study task no lock holds; the tools' variant adds one block a
    day and no guest (the host of a guest and a task with two blocks on one day are out); the
    solver's adds exactly one placed block, never a host; and that the floor, the destination
    search and the solver's problem read these very predicates."""
    state = spec_window()
    tasks = {t.state_id: t for t in state.tasks}
    assert {i for i, t in tasks.items() if concepts.movable(state, t)} == {3, 4, 5, 7, 8}
    assert {i for i, t in tasks.items() if concepts.movable_by_tools(state, t)} == {3, 4, 7, 8}
    assert {i for i, t in tasks.items() if concepts.movable_by_solver(state, t)} == {3, 7}
    for t in state.tasks:
        assert movable_study(state, t) == concepts.movable(state, t)
        assert destinations.movable(state, t) == concepts.movable_by_tools(state, t)
        assert problem.movable(state, t) == concepts.movable_by_solver(state, t)
    # the tools' variant is what move accepts: the two-on-one-day task is refused
    refused = move(state.copy_state(), 5, 2, 9)
    assert not refused.ok


@settings(max_examples=60, deadline=None)
@given(state=windows())
def test_context_switches_are_counted_one_way(state: ScheduleState) -> None:
    """Tests that the switches of each day, counted with concepts.is_switch over the study
    layer (guests replace their host's period; events and free periods break the sequence),
    equal the solver's switch counts and the health evaluator's."""
    names: dict[int, str | None] = {t.state_id: concepts.subject_of(t) for t in state.tasks}
    grid = state.grid
    expected = []
    for d in range(state.num_days):
        row = [
            names[int(g)] if g else names[int(o)] if o else None
            for o, g in zip(grid.owner[d].tolist(), grid.guest[d].tolist(), strict=True)
        ]
        expected.append(sum(concepts.is_switch(a, b) for a, b in itertools.pairwise(row)))
    assert daily_switches(study_layer(state)).tolist() == expected
    ev = HealthEvaluator(state)
    assert [f.switches for f in ev.days] == expected
