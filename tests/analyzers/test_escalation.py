"""Escalation when single moves cannot help (issue 26 item 4).

The data file holds a 30-day window after a student's edit (4 study tasks moved onto the busiest
days) and the plateau the scripted agent reached from it with single moves: (0 critical, 1
warning), the one action ``fixable: false``, while the proven floor is (0, 0).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.analyzers import health as health_mod
from smartflow_engine.analyzers.escalation import ACTION_ID, INTENT, compound_batch
from smartflow_engine.evalkit.scripted import key_of
from smartflow_engine.solver.health_floor import HealthFloor
from smartflow_engine.state import Request, ScheduleState
from smartflow_engine.tools_adapter import Session

FLOOR = importlib.import_module("smartflow_engine.solver.health_floor")
DATA = Path(__file__).resolve().parents[1] / "data" / "escalation_plateau.json"


def _window(name: str) -> ScheduleState:
    return ScheduleState.from_json(json.loads(DATA.read_text(encoding="utf-8"))[name])


def _health(state: ScheduleState) -> dict[str, Any]:
    out: dict[str, Any] = analyze_health(state, time_limit_s=10.0).to_dict()
    return out


def test_plateau_offers_the_batch_first_and_it_improves_the_key() -> None:
    state = _window("plateau")
    env = _health(state)
    signal = env["metrics"]["close_signal"]
    assert (signal["critical"], signal["warning"]) == (0, 1)
    assert (signal["floor"]["critical"], signal["floor"]["warning"]) == (0, 0)
    first, *rest = env["next_actions"]
    assert first["intent_code"] == INTENT and first["action_id"] == ACTION_ID
    assert first["fixable"] is True and first["candidate_write_tools"] == ["batch_move"]
    assert rest and all(a["fixable"] is False for a in rest)  # no single move helps
    figures = first["figures"]
    assert (figures["critical_after"], figures["warning_after"]) < (0, 1)
    assert 1 <= figures["moves"] <= figures["max_moves"]


def test_the_agent_carries_the_batch_out_with_batch_move_through_a_session() -> None:
    state = _window("plateau")
    before = key_of(state)
    s = Session(state, mode="local_adjust", max_time_limit_s=10.0)
    env = json.loads(s.call("analyze_health", {}))
    signal = env["metrics"]["close_signal"]
    # the rules are met, but a proven-better state is offered: the request stays open
    assert signal["acceptable_to_close"] is True
    assert signal["improvable"] is True and signal["should_close"] is False
    targets = json.loads(s.call("query_target_tasks", {"action_id": ACTION_ID}))["metrics"]
    (batch,) = targets["batches"]
    assert batch["helps"] is True and batch["write_tool"] == "batch_move"
    assert {t["task_id"] for t in targets["tasks"]} == {m["task_id"] for m in batch["moves"]}
    moves = [{k: m[k] for k in ("task_id", "new_day", "new_slot_start")} for m in batch["moves"]]
    result = s.invoke("batch_move", {"moves": moves, "action_id": ACTION_ID})
    assert result.status != "error" and result.changes
    assert "成功判据：已满足" in result.reply.splitlines()[-1]
    after = key_of(s.state)
    assert after < before
    assert (after[0] - before[0], after[1] - before[1]) == (
        batch["critical_delta"],
        batch["warning_delta"],
    )
    env = json.loads(s.call("analyze_health", {}))
    assert env["metrics"]["close_signal"]["close_reason"] == "rules_met"
    assert all(a["intent_code"] != INTENT for a in env["next_actions"])


def test_not_offered_when_a_single_move_helps() -> None:
    env = _health(_window("edited"))
    assert any(a["fixable"] is True for a in env["next_actions"])
    assert all(a["intent_code"] != INTENT for a in env["next_actions"])


def test_not_searched_when_the_key_is_at_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _window("plateau")

    def boom(*_: Any, **__: Any) -> None:
        raise AssertionError("no escalation search at the floor")

    monkeypatch.setattr(health_mod, "compound_batch", boom)
    monkeypatch.setattr(
        FLOOR, "health_floor", lambda *a, **k: HealthFloor(critical=0, warning=1, proven=True)
    )
    env = _health(state)
    assert env["metrics"]["close_signal"]["best_achievable"] is True
    assert all(a["intent_code"] != INTENT for a in env["next_actions"])


def test_an_unproven_floor_offers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FLOOR, "health_floor", lambda *a, **k: HealthFloor(proven=False))
    env = _health(_window("plateau"))
    assert all(a["intent_code"] != INTENT for a in env["next_actions"])


def test_a_refused_batch_changes_nothing() -> None:
    """batch_move stays atomic: the batch with one move onto an occupied place is refused whole."""
    state = _window("plateau")
    batch = compound_batch(state, "normal")
    assert batch is not None and batch.helps
    first = batch.moves[0]
    course = next(t for t in state.tasks if t.source == "event" and t.slots)
    bad = Request(first.task_id, course.slots[0].day, course.slots[0].slot_start)
    s = Session(state.copy_state(), mode="local_adjust", max_time_limit_s=10.0)
    snapshot = s.state.to_dict()
    moves = [
        {"task_id": r.task_id, "new_day": r.day, "new_slot_start": r.slot_start}
        for r in (bad, *batch.moves[1:])
    ]
    result = s.invoke("batch_move", {"moves": moves})
    assert result.status == "error" and not result.changes
    assert s.state.to_dict() == snapshot


def test_pending_study_tasks_leave_the_escalation_to_the_proposal() -> None:
    state = _window("plateau")
    task = next(
        t for t in state.tasks if t.source != "event" and t.slots and not state.is_locked(t)
    )
    from smartflow_engine.state import unplace

    assert unplace(state, task.state_id).ok
    assert compound_batch(state, "normal") is None
