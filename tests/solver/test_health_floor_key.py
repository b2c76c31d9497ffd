"""The floor's cache key (solver.health_floor.floor_key): equal keys give equal floors.

analyze_health remembers floors by this key, so a key that missed something the floor reads
would give a stale floor; the property test changes states in every way a session can (writes,
locks, task classes, categories, durations) and checks that whenever the key stayed the same,
the floor did too.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers.health import cached_health_floor
from smartflow_engine.analyzers.result import DIMENSIONS
from smartflow_engine.solver.feasibility import FeasibilityReport
from smartflow_engine.solver.health_floor import HealthFloor, floor_key, health_floor
from smartflow_engine.state import Request, batch_move, move, place, swap, unplace
from tests.helpers.analyzer_windows import build, windows

LEVELS = st.sampled_from(["strict", "normal", "relaxed"])


def facts(floor: HealthFloor) -> tuple[Any, ...]:
    return floor.to_dict(), sorted(floor.unfixable.items(), key=repr)


def _report(gap: int | None) -> FeasibilityReport | None:
    if gap is None:
        return None
    return FeasibilityReport(
        is_feasible=gap == 0,
        proven=True,
        required_task_slots=10,
        feasible_slots=10 - gap,
        capacity_gap=gap,
        free_capacity_slots=10,
        slack_slots=0,
        reason_code="ok" if gap == 0 else "insufficient_capacity",
        runtime_s=0.0,
    )


def change(data: st.DataObject, state: ScheduleState) -> str:
    """One random change of the state: a write, a lock, a class, a category or a duration."""
    tasks = list(state.tasks)
    if not tasks:
        return "nothing"
    task = data.draw(st.sampled_from(tasks))
    day = data.draw(st.integers(1, state.num_days))
    slot = data.draw(st.integers(1, state.slots_per_day))
    kinds = ["move", "move", "move", "place", "swap", "batch", "unplace", "lock", "class"]
    kind = data.draw(st.sampled_from([*kinds, "category", "duration"]))
    if kind == "move":
        from_day = task.slots[0].day if len(task.slots) > 1 else None
        return f"move {move(state, task.state_id, day, slot, from_day=from_day).ok}"
    if kind == "place":
        return f"place {place(state, task.state_id, day, slot).ok}"
    if kind == "swap":
        other = data.draw(st.sampled_from(tasks))
        return f"swap {swap(state, task.state_id, other.state_id).ok}"
    if kind == "batch":
        reqs = [Request(data.draw(st.sampled_from(tasks)).state_id, day, slot)]
        return f"batch {batch_move(state, reqs).ok}"
    if kind == "unplace":
        return f"unplace {unplace(state, task.state_id).ok}"
    if kind == "lock":
        task.locked = not task.locked
        return "lock"
    if kind == "class" and state.task_classes:
        tc = data.draw(st.sampled_from(state.task_classes))
        tc.start_day = data.draw(st.integers(1, state.num_days))
        tc.end_day = data.draw(st.integers(tc.start_day, state.num_days))
        tc.excluded_periods = data.draw(
            st.lists(st.integers(1, state.slots_per_day), max_size=2, unique=True)
        )
        tc.total_slots = data.draw(st.integers(0, 30))
        state._rules = None  # the class rules are read once per state
        return "class"
    if kind == "category" and task.source != "event":
        task.category = data.draw(st.sampled_from(["复习", "作业", "实验", "阅读"]))
        return "category"
    if kind == "duration" and task.status == "pending":
        task.duration = data.draw(st.integers(1, state.slots_per_day))
        return "duration"
    return "none"


def edit(data: st.DataObject, state: ScheduleState) -> ScheduleState | None:
    """The state with one of its facts changed freely (what no write would do, too): a block
    put anywhere, a flag flipped (locked, can_embed, status), a guest made a task of its own,
    a class's days or banned periods changed. ``None`` when the result is not a valid state."""
    raw = state.to_dict()
    tasks = raw["tasks"]
    if not tasks:
        return None
    task = data.draw(st.sampled_from(tasks))
    kind = data.draw(st.sampled_from(["block", "block", "locked", "can_embed", "status", "guest"]))
    if kind == "block" and task.get("slots"):
        block = data.draw(st.sampled_from(task["slots"]))
        length = block["slot_end"] - block["slot_start"] + 1
        start = data.draw(st.integers(1, max(1, state.slots_per_day - length + 1)))
        block.update(
            day=data.draw(st.integers(1, state.num_days)),
            slot_start=start,
            slot_end=min(state.slots_per_day, start + length - 1),
        )
    elif kind in ("locked", "can_embed"):
        task[kind] = not task.get(kind, False)
    elif kind == "status" and task.get("slots"):
        task["status"] = "existing" if task["status"] == "suggested" else "suggested"
    elif kind == "guest":
        task.pop("embed_host", None)
    for t in tasks:
        t.pop("embedded_by", None)
    try:
        return ScheduleState.model_validate(raw)
    except ValueError:
        return None


@settings(max_examples=300, deadline=None)
@given(data=st.data(), state=windows(max_days=20), level=LEVELS, gap=st.sampled_from([None, 0, 3]))
def test_equal_keys_give_equal_floors_after_free_edits(
    data: st.DataObject, state: ScheduleState, level: str, gap: int | None
) -> None:
    """Tests that when a state is edited freely (a block anywhere, a lock, an embeddable flag,
    a status, a guest leaving its host) and floor_key stays the same, the floor is the same."""
    report = _report(gap)
    other = edit(data, state)
    if other is None:
        return
    if floor_key(other, level, report) == floor_key(state, level, report):  # type: ignore[arg-type]
        assert facts(health_floor(other, level, report)) == facts(  # type: ignore[arg-type]
            health_floor(state, level, report)  # type: ignore[arg-type]
        )


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    state=windows(max_days=30),
    level=LEVELS,
    gap=st.sampled_from([None, 0, 2]),
    scoped=st.booleans(),
)
def test_equal_keys_give_equal_floors(
    data: st.DataObject, state: ScheduleState, level: str, gap: int | None, scoped: bool
) -> None:
    """Tests that after random changes (writes of every kind, locks, task classes, categories,
    durations), whenever floor_key is unchanged the floor is unchanged too (with and without
    a feasibility report and a scope)."""
    report = _report(gap)
    scope = {t.state_id for t in state.tasks[::2]} if scoped else None
    for _ in range(data.draw(st.integers(1, 5))):
        key = floor_key(state, level, report, scope=scope)  # type: ignore[arg-type]
        floor = facts(health_floor(state, level, report, scope=scope))  # type: ignore[arg-type]
        note(change(data, state))
        if floor_key(state, level, report, scope=scope) == key:  # type: ignore[arg-type]
            assert facts(health_floor(state, level, report, scope=scope)) == floor  # type: ignore[arg-type]


def test_a_move_within_the_class_days_keeps_the_key() -> None:
    """Tests that moving a suggested study task to another free place inside its class's days
    keeps the key (the cache serves the next health call after the write) and the floor, and
    that locking it changes the key."""
    state = build(
        10,
        [
            ("course", "课程", 1, 1, 6),
            ("study", "复习", 2, 1, 2),
            ("study", "复习", 5, 3, 4),
            ("study", "作业", 3, 1, 1),
        ],
        classes=[{"id": 7, "name": "复习", "start_day": 1, "end_day": 8, "total_slots": 6}],
    )
    for t in state.tasks:
        if t.category == "复习":
            t.category_id = 7
    key = floor_key(state)
    floor = facts(health_floor(state))
    assert move(state, 2, 7, 5).ok
    assert floor_key(state) == key
    assert facts(health_floor(state)) == floor
    task = state.task(2)
    assert task is not None
    task.locked = True
    assert floor_key(state) != key


def test_the_cache_hands_out_copies() -> None:
    """Tests that the cached floor is the computed one and that changing a floor it handed out
    does not change the next one."""
    state = build(
        6, [("course", "课程", d, 1, 11) for d in range(1, 4)] + [("study", "复习", 4, 1, 2)]
    )
    first = cached_health_floor(state, "normal", None, DIMENSIONS)
    assert facts(first) == facts(health_floor(state))
    first.binding.clear()
    first.unfixable.clear()
    first.critical += 5
    assert facts(cached_health_floor(state, "normal", None, DIMENSIONS)) == facts(
        health_floor(state)
    )


def _gap_window(day_of_second: int) -> ScheduleState:
    """复习's class allows days 1-3; a locked 复习 block stands on day 10; two suggested 复习
    tasks stand on day 1 and on ``day_of_second``."""
    state = build(
        10,
        [
            ("study", "复习", 1, 1, 1),
            ("study", "复习", day_of_second, 2, 2),
            {"name": "fixed", "category": "复习", "status": "existing", "locked": True}
            | {"slots": [{"day": 10, "slot_start": 1, "slot_end": 1}]},
        ],
        classes=[{"id": 7, "name": "复习", "start_day": 1, "end_day": 3}],
    )
    for t in state.tasks:
        if not t.locked:
            t.category_id = 7
    return state


def test_standing_outside_the_class_days_is_in_the_key() -> None:
    """Tests that a suggested task standing outside its class's days (it may stand anywhere in
    the floor's population) gives another floor than the same task inside them (a forced gap
    before the locked block on day 10), and another key."""
    inside, outside = _gap_window(3), _gap_window(8)
    assert facts(health_floor(inside)) != facts(health_floor(outside))
    assert floor_key(inside) != floor_key(outside)
    assert floor_key(_gap_window(2)) == floor_key(inside)  # inside both times: the same key
