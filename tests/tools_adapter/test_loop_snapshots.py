"""The best state's snapshot (sessions.loop_state.StateSnapshots) is ``ScheduleState.to_dict``.

A round that makes progress keeps the state as it is then; the snapshot reuses the objects of
the tasks that did not change since the previous one, so it must notice every change a task's
object is made of: its fields and blocks, its host's lock and its guests.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.tools_adapter import Session
from smartflow_engine.tools_adapter.sessions.loop_state import LoopState, StateSnapshots
from tests.analyzers.test_evaluator import random_op
from tests.helpers.analyzer_windows import windows


def _same(snapshot: dict[str, Any], state: ScheduleState) -> None:
    want = state.to_dict()
    assert snapshot == want
    assert json.dumps(snapshot, ensure_ascii=False) == json.dumps(want, ensure_ascii=False)


def _edit(data: st.DataObject, state: ScheduleState) -> str:
    """A change no write makes but a snapshot must see: a flag, a name, an item's order, a
    host's lock (its guests are written locked), a class."""
    task = data.draw(st.sampled_from(state.tasks))
    kind = data.draw(st.sampled_from(["locked", "name", "order", "host", "class"]))
    if kind == "locked":
        task.locked = not task.locked
    elif kind == "name":
        task.name = task.name + "·"
    elif kind == "order":
        task.task_order = data.draw(st.sampled_from([None, 1, 2]))
    elif kind == "host":
        host = next((t for t in state.tasks if t.can_embed), None)
        if host is not None:
            host.locked = not host.locked
    elif state.task_classes:
        state.task_classes[0].end_day = state.num_days
    return kind


@settings(max_examples=120, deadline=None)
@given(data=st.data(), state=windows())
def test_snapshots_equal_to_dict_along_changes(data: st.DataObject, state: ScheduleState) -> None:
    """Tests that each snapshot taken along random writes and edits equals ``to_dict`` (as
    objects and as JSON text), and that an earlier snapshot is never changed by a later one."""
    snaps = StateSnapshots()
    kept: list[tuple[dict[str, Any], str]] = []
    for step in range(data.draw(st.integers(1, 6))):
        snapshot = snaps.take(state)
        _same(snapshot, state)
        kept.append((snapshot, json.dumps(snapshot, ensure_ascii=False)))
        if state.tasks and data.draw(st.booleans()):
            note(f"step {step}: edit {_edit(data, state)}")
        else:
            note(f"step {step}: {random_op(data, state)}")
    for snapshot, text in kept:
        assert json.dumps(snapshot, ensure_ascii=False) == text


def test_a_copy_of_the_loop_starts_its_snapshots_afresh() -> None:
    """Tests that a copied loop (a preview's) shares no remembered task objects with the
    session's."""
    loop = LoopState()
    state = ScheduleState.model_validate(
        {
            "window": {"total_days": 2, "slots_per_day": 4},
            "tasks": [
                {"state_id": 1, "name": "a", "status": "suggested",
                 "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}]},
            ],
        }
    )  # fmt: skip
    first = loop.snapshots.take(state)
    other = copy.deepcopy(loop)
    assert other.snapshots is not loop.snapshots
    assert other.snapshots.take(state)["tasks"][0] is not first["tasks"][0]
    assert loop.snapshots.take(state)["tasks"][0] is first["tasks"][0]  # reused: unchanged


def test_a_session_keeps_the_best_state_as_it_was() -> None:
    """Tests that the session's best state (taken by the snapshots) is the state of its best
    round even after later writes, and restore_best returns to it."""
    from tests.helpers.analyzer_windows import build

    state = build(4, [("study", "复习", 1, s, s) for s in range(1, 11)])
    s = Session(state, mode="first_full")
    s.call("analyze_health", {})
    loop = s.toolbox.ctx.loop
    assert loop is not None and loop.best_state is not None
    best = state.to_dict()
    assert loop.best_state == best
    assert s.call("move", {"task_id": 1, "new_day": 2, "new_slot_start": 1}).startswith("已将")
    assert loop.best_state == best != state.to_dict()
    s.call("restore_best", {})
    assert state.to_dict() == best
