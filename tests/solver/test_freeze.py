"""Tests of frozen days (issue 28 item 1): no write and no proposal touches days ``1..k``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import smartflow_engine
from smartflow_engine import ScheduleState
from smartflow_engine.state.freeze import frozen_view, thaw
from smartflow_engine.state.strategies import windows, write_calls
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.sessions.session import Session, SessionError
from tests.helpers.windows import study_window

SAMPLE = Path(smartflow_engine.__file__).parent / "data" / "sample_window.json"
SOLVER_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("apply_proposal", {"time_limit_s": 1, "seed": 1}),
    ("apply_proposal", {"time_limit_s": 1, "seed": 1, "include_suggested": True}),
    ("spread_even", {"time_limit_s": 1, "seed": 1}),
    ("min_context_switch", {"day_from": 1, "day_to": 3, "time_limit_s": 1, "seed": 1}),
    ("check_feasibility", {}),
]


def _frozen_part(state: ScheduleState, k: int) -> list[tuple[Any, ...]]:
    """Every block on days ``1..k`` (task, status, its blocks there, host). A task's blocks on
    later days are not frozen: ``move`` with ``from_day`` may move one of them (docs/decisions.md,
    issue 28: it counts only that day)."""
    out: list[tuple[Any, ...]] = []
    for t in state.tasks:
        blocks = [(b.day, b.slot_start, b.slot_end) for b in t.slots if b.day <= k]
        if blocks:
            out.append((t.state_id, t.status, tuple(blocks), t.embed_host))
    return sorted(out)


def test_the_frozen_view_thaws_back_to_the_same_state():
    """Tests that thawing an unchanged frozen view gives back the original state exactly."""
    state = ScheduleState.from_json(SAMPLE)
    view = frozen_view(state, 3)
    assert len(view.tasks) > len(state.tasks)
    assert thaw(view, state).to_dict() == state.to_dict()


def test_a_write_on_a_frozen_day_is_refused_naming_the_range():
    """Tests that a place on a frozen day is refused with the frozen_day code and a Chinese
    reply naming the range, and nothing changes; a place after the range works."""
    state = ScheduleState.from_json(SAMPLE)
    session = Session(state, frozen_days=2, self_check=True)
    before = session.state.to_json()
    out = session.invoke("place", {"task_id": 11, "day": 2, "slot_start": 3})
    assert out.status == "error" and out.error_code == "frozen_day"
    assert out.reply.startswith("放置失败：第1-2天已冻结（已安排的任务不移动，也不放入新任务）")
    assert session.state.to_json() == before and session.changes == []
    moved = session.invoke("unplace", {"task_id": 9})  # [9] sits on day 1
    assert moved.error_code == "frozen_day" and "第1天" in moved.reply


def test_frozen_days_must_be_a_whole_number():
    """Tests that a session refuses a negative or non-integer frozen_days."""
    with pytest.raises(SessionError):
        Session(None, frozen_days=-1)


def test_the_solver_tools_take_frozen_until_day():
    """Tests that the proposal tools' schemas carry frozen_until_day and the simple writes do
    not (they follow the session's setting)."""
    for name in ("propose_placement", "apply_proposal", "spread_even", "min_context_switch"):
        assert "frozen_until_day" in registry.REGISTRY[name].args_model.model_fields
    assert "frozen_until_day" not in registry.REGISTRY["place"].args_model.model_fields


def test_a_proposal_with_frozen_days_leaves_them_alone_and_still_places():
    """Tests that apply_proposal with frozen_until_day=4 places the pending tasks on days 5..
    only and keeps every task of days 1-4 where it was."""
    state = ScheduleState.from_json(SAMPLE)
    session = Session(state, self_check=True)
    frozen = _frozen_part(session.state, 4)
    out = session.invoke(
        "apply_proposal",
        {"time_limit_s": 2, "seed": 1, "include_suggested": True, "frozen_until_day": 4},
    )
    assert out.status == "ok", out.reply
    assert _frozen_part(session.state, 4) == frozen
    assert not session.state.pending_tasks()
    for change in out.changes:
        task = session.state.task(change.task_id)
        assert task is not None and all(b.day > 4 for b in task.slots)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(state=windows(min_days=3, max_days=10, pending_per_day=1.5), data=st.data())
def test_frozen_days_are_never_touched_by_any_write_or_proposal(
    state: ScheduleState, data: st.DataObject
):
    """Tests, on random windows, random frozen ranges and random writes and proposals (the
    session's setting or the call's argument), that nothing on the frozen days changes."""
    k = data.draw(st.integers(1, state.num_days - 1))
    by_session = data.draw(st.booleans())
    session = Session(
        state, frozen_days=k if by_session else 0, enabled_tools=("min_context_switch",)
    )
    frozen = _frozen_part(session.state, k)
    for _ in range(4):
        if data.draw(st.booleans()):
            name, args = data.draw(st.sampled_from(SOLVER_CALLS))
            args = dict(args) if by_session else {**args, "frozen_until_day": k}
        else:
            if not by_session:
                session.frozen_days = k  # the simple writes follow the session setting
            name, args = data.draw(write_calls(session.state))
        session.invoke(name, args)
        assert _frozen_part(session.state, k) == frozen, (name, args)


def test_frozen_days_travel_over_http_and_in_the_snapshot():
    """Tests that the HTTP session-create field frozen_days reaches the session (a place on a
    frozen day answers error_code frozen_day), is shown on the session, and survives a
    snapshot and restore."""
    from fastapi.testclient import TestClient

    from smartflow_engine.tools_adapter.api import create_app

    client = TestClient(create_app({"tok": "alice"}))
    auth = {"Authorization": "Bearer tok"}
    body = {"state": ScheduleState.from_json(SAMPLE).to_dict(), "frozen_days": 2}
    created = client.post("/v1/sessions", headers=auth, json=body)
    assert created.status_code == 201 and created.json()["frozen_days"] == 2
    sid = created.json()["session_id"]
    call = {"tool": "place", "args": {"task_id": 11, "day": 2, "slot_start": 3}}
    out = client.post(f"/v1/sessions/{sid}/calls", headers=auth, json=call).json()
    assert (out["status"], out["error_code"]) == ("error", "frozen_day")
    bad = client.post("/v1/sessions", headers=auth, json={**body, "frozen_days": -1})
    assert bad.status_code == 422

    session = Session(ScheduleState.from_json(SAMPLE), frozen_days=3)
    again = Session.restore(session.to_json())
    assert again.frozen_days == 3
    snap = session.snapshot()
    snap["frozen_days"] = "x"
    with pytest.raises(SessionError):
        Session.restore(snap)


def test_restore_best_that_would_change_a_frozen_day_is_refused():
    """Tests that restore_best, whose best state differs from today's on a frozen day, is
    refused with error_code frozen_day and changes nothing; without the freeze it runs."""
    session = Session(ScheduleState.from_json(SAMPLE), self_check=True)
    session.call("analyze_health", {})
    assert session.invoke("unplace", {"task_id": 9}).status == "ok"  # [9] sits on day 1
    session.frozen_days = 1
    before = session.state.to_json()
    out = session.invoke("restore_best", {})
    assert (out.status, out.error_code) == ("error", "frozen_day"), out.reply
    assert out.reply.startswith("恢复最佳状态失败：第1天已冻结")
    assert session.state.to_json() == before
    session.frozen_days = 0
    assert session.invoke("restore_best", {}).status == "ok"


def test_a_gap_that_only_the_freeze_makes_says_so():
    """Tests that check_feasibility honours frozen_until_day (the sample window is feasible,
    frozen up to day 13 it is not) and then says the gap exists only because of the freeze;
    an unfrozen check has no such line."""
    session = Session(ScheduleState.from_json(SAMPLE))
    free = session.call("check_feasibility", {})
    assert free.startswith("可行性：可行") and "冻结说明" not in free
    frozen = session.call("check_feasibility", {"frozen_until_day": 13})
    assert frozen.startswith("可行性：不可行")
    assert frozen.splitlines()[-1] == (
        "冻结说明：不冻结时可行，缺口只因第1-13天已冻结（可减少冻结的天数，或按协商方案处理）。"
    )


def test_analyze_health_fixes_a_frozen_days_tasks_for_its_floor():
    """Tests that analyze_health's floor keeps a frozen day's tasks where they are: a full day of
    movable study tasks has floor critical 0 unfrozen (they can spread out) and a floor with
    that day's critical load once it is frozen, so the request closes as best_achievable; the
    issues themselves are the window's own either way."""
    day = [{"slots": [{"day": 1, "slot_start": s, "slot_end": s + 3}]} for s in (1, 5, 9)]
    state = study_window(4, day)
    free = json.loads(Session(state.copy_state()).call("analyze_health", {}))
    frozen = json.loads(Session(state.copy_state(), frozen_days=1).call("analyze_health", {}))
    assert free["metrics"]["close_signal"]["floor"]["critical"] == 0
    floor = frozen["metrics"]["close_signal"]["floor"]
    assert floor["proven"] and floor["critical"] >= 1
    assert frozen["metrics"]["close_signal"]["close_reason"] == "best_achievable"
    assert [i["issue_id"] for i in free["issues"]] == [i["issue_id"] for i in frozen["issues"]]
    assert frozen["feasibility"]["frozen_days"] == 1
    assert "frozen_days" not in free["feasibility"]


def test_analyze_health_feasibility_says_when_the_gap_is_the_freezes():
    """Tests that analyze_health's feasibility runs on the frozen window (a task that only fits
    on a frozen day makes it infeasible) and says gap_only_from_freeze=true there; false when the
    window is infeasible anyway; null when feasible."""
    state = study_window(
        2,
        [
            {"slots": [{"day": 1, "slot_start": 1, "slot_end": 2}]},
            {"status": "pending", "duration": 12},
        ],
    )
    for k, feasible, only in ((1, True, None), (2, False, True)):
        env = json.loads(Session(state.copy_state(), frozen_days=k).call("analyze_health", {}))
        feas = env["feasibility"]
        assert (feas["is_feasible"], feas["gap_only_from_freeze"]) == (feasible, only), feas
    both = study_window(
        1,
        [
            {"slots": [{"day": 1, "slot_start": 1, "slot_end": 12}], "locked": True},
            {"status": "pending", "duration": 2},
        ],
    )
    env = json.loads(Session(both, frozen_days=1).call("analyze_health", {}))
    assert env["feasibility"]["is_feasible"] is False
    assert env["feasibility"]["gap_only_from_freeze"] is False


def test_the_batch_leaves_frozen_days_alone():
    """Tests that a batch with frozen_days proposes nothing on days 1..k (every placement is
    later), checks feasibility on the frozen window, and records the setting; bad values are
    refused."""
    from smartflow_engine.batch import run_batch
    from smartflow_engine.batch.jobs import JobConfig, run_window
    from smartflow_engine.batch.sources import ListSource

    sample = ScheduleState.from_json(SAMPLE)
    items = list(ListSource([sample.to_json()]))
    config = JobConfig(time_limit_s=5.0, work_limit_s=0.2, keep_placements=True, frozen_days=3)
    result = run_window(items[0], config)
    assert result.row["error"] is None, result.row
    assert result.placements and all(day > 3 for _, day, _ in result.placements)
    assert result.row["health_of"] == "proposal"
    frozen = run_window(items[0], JobConfig(jobs=("feasibility",), frozen_days=13))
    assert frozen.row["is_feasible"] is False  # the sample window frozen to day 13 (see above)
    df = run_batch([sample], jobs=("feasibility",), engine="loop", frozen_days=13)
    assert df.attrs["batch"]["frozen_days"] == 13 and df["is_feasible"].tolist() == [False]
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError):
            run_batch([sample], engine="loop", frozen_days=bad)  # type: ignore[arg-type]
