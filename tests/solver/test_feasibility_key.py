"""The feasibility check's key (solver.feasibility.feasibility_key): equal keys give equal
problems, so analyze_health may hand out a remembered proven-feasible report.

The check reads nothing of the state but ``build_problem``'s groups, free runs and host
blocks (``Problem.current``, where the re-planned tasks stand now, it never reads); the
property test changes states in every way a session can and checks that whenever the key
stayed the same, so did the problem and the check's answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.solver.feasibility import check_feasibility, feasibility_key
from smartflow_engine.solver.problem import Problem, build_problem, cleared_layers, scope_tasks
from smartflow_engine.state import Request, batch_move, move, place, swap, unplace
from tests.helpers.analyzer_windows import windows
from tests.helpers.solver_windows import tiny_windows

ANY_WINDOW = st.one_of(windows(), tiny_windows())


def _blockwise(state: ScheduleState, scope: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The layers with each placed scope task's block cleared one slice at a time (how
    build_problem cleared them before ``cleared_layers``)."""
    owner, guest = state.grid.owner.copy(), state.grid.guest.copy()
    for t in scope:
        if t.status == "pending":
            continue
        b = t.slots[0]
        (guest if t.embed_host is not None else owner)[b.day - 1, b.slot_start - 1 : b.slot_end] = 0
    return owner, guest


@settings(max_examples=200, deadline=None)
@given(data=st.data(), state=ANY_WINDOW)
def test_cleared_layers_clear_exactly_the_scope_blocks(
    data: st.DataObject, state: ScheduleState
) -> None:
    """Tests that clearing the scope's ids in one array pass gives the layers of clearing each
    placed scope task's block, for both scopes and random explicit task lists."""
    ids = data.draw(st.lists(st.sampled_from([t.state_id for t in state.tasks] or [1])))
    for scope in (
        scope_tasks(state),
        scope_tasks(state, include_suggested=True),
        scope_tasks(state, task_ids=ids),
    ):
        owner, guest = cleared_layers(state, scope)
        want_owner, want_guest = _blockwise(state, scope)
        assert np.array_equal(owner, want_owner) and np.array_equal(guest, want_guest)


def _problem_facts(problem: Problem) -> tuple[Any, ...]:
    """Everything of a problem the check reads (all but ``current``)."""
    return (
        problem.num_days,
        problem.slots_per_day,
        [(g.duration, g.rule, g.can_guest, g.subject, list(g.task_ids)) for g in problem.groups],
        problem.runs,
        problem.hosts,
        problem.owner.tobytes(),
        sorted(problem.classes.items(), key=lambda kv: kv[0]),
    )


def _answer(state: ScheduleState) -> tuple[Any, ...]:
    r = check_feasibility(state, time_limit_s=5.0, include_suggested=True, explain=False)
    return (
        r.is_feasible,
        r.capacity_gap,
        r.feasible_slots,
        r.required_task_slots,
        r.free_capacity_slots,
        r.task_count,
    )


def change(data: st.DataObject, state: ScheduleState) -> str:
    """One random change a session can make: a write (often a move), a lock, a class."""
    tasks = list(state.tasks)
    if not tasks:
        return "nothing"
    task = data.draw(st.sampled_from(tasks))
    day = data.draw(st.integers(1, state.num_days))
    slot = data.draw(st.integers(1, state.slots_per_day))
    kind = data.draw(
        st.sampled_from(
            ["move", "move", "move", "place", "swap", "batch", "unplace", "lock", "class"]
        )
    )
    if kind == "move":
        from_day = task.slots[0].day if len(task.slots) > 1 else None
        return f"move {move(state, task.state_id, day, slot, from_day=from_day).ok}"
    if kind == "place":
        return f"place {place(state, task.state_id, day, slot).ok}"
    if kind == "swap":
        other = data.draw(st.sampled_from(tasks))
        return f"swap {swap(state, task.state_id, other.state_id).ok}"
    if kind == "batch":
        return f"batch {batch_move(state, [Request(task.state_id, day, slot)]).ok}"
    if kind == "unplace":
        return f"unplace {unplace(state, task.state_id).ok}"
    if kind == "lock":
        task.locked = not task.locked
        state._grid = None  # its embeddable hosts read the lock
        return "lock"
    if state.task_classes:
        tc = data.draw(st.sampled_from(state.task_classes))
        tc.start_day = data.draw(st.integers(1, state.num_days))
        tc.end_day = data.draw(st.integers(tc.start_day, state.num_days))
        tc.excluded_periods = data.draw(
            st.lists(st.integers(1, state.slots_per_day), max_size=2, unique=True)
        )
        state._rules = None  # the class rules are read once per state
        return "class"
    return "none"


@settings(max_examples=150, deadline=None)
@given(data=st.data(), state=ANY_WINDOW)
def test_equal_keys_give_equal_problems_and_answers(
    data: st.DataObject, state: ScheduleState
) -> None:
    """Tests that along random changes, whenever the key of a state equals that of an earlier
    one, the feasibility problem (but where its re-planned tasks stand) and the check's answer
    are the same (the moves of suggested tasks keep the key: the test below)."""
    seen: list[tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]] = []
    for step in range(data.draw(st.integers(1, 6))):
        key = feasibility_key(state, True)
        problem = build_problem(state, include_suggested=True, subjects=False)
        facts, answer = _problem_facts(problem), _answer(state)
        for old_key, old_facts, old_answer in seen:
            if old_key == key:
                assert old_facts == facts and old_answer == answer
        seen.append((key, facts, answer))
        note(f"step {step}: {change(data, state)}")


def test_moving_a_suggested_task_keeps_the_key_and_the_rest_changes_it() -> None:
    """Tests the cases by hand: a suggested task moved between free periods keeps the key
    (the check re-plans it anyway); an existing task moved, a lock and a class's days change
    it."""
    tasks = [
        {"state_id": 1, "name": "a", "source": "task_item", "category": "复习", "category_id": 10,
         "status": "suggested", "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}]},
        {"state_id": 2, "name": "b", "source": "task_item", "category": "作业",
         "status": "existing", "slots": [{"day": 2, "slot_start": 1, "slot_end": 1}]},
        {"state_id": 3, "name": "c", "source": "task_item", "category": "复习", "category_id": 10,
         "status": "pending", "duration": 2},
    ]  # fmt: skip
    state = ScheduleState.model_validate(
        {
            "window": {"total_days": 3, "slots_per_day": 4},
            "tasks": tasks,
            "task_classes": [{"id": 10, "name": "复习", "start_day": 1, "end_day": 3}],
        }
    )
    key = feasibility_key(state, True)
    assert move(state, 1, 3, 3).ok
    assert feasibility_key(state, True) == key
    assert feasibility_key(state, False) != key  # another question
    assert move(state, 2, 3, 1).ok  # an existing task stays where it is: its place is read
    moved = feasibility_key(state, True)
    assert moved != key
    task = state.task(1)
    assert task is not None
    task.locked = True
    assert feasibility_key(state, True) != moved
    task.locked = False
    assert feasibility_key(state, True) == moved
    state.task_classes[0].end_day = 2
    assert feasibility_key(state, True) != moved
