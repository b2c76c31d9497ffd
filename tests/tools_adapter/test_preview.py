"""Tests of ``preview: true`` on every write (issue 28 item 3): the reply is the write's own
under one preview line, and nothing of the session changes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state.strategies import windows, write_calls
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.core.preview import PREVIEW_LINE
from smartflow_engine.tools_adapter.core.schemas import tool_schemas
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.windows import load_window


def _fingerprint(session: Session) -> str:
    """Everything a preview must leave alone: the snapshot (state, change log, loop with its
    rounds, round log, best state and gate, pending confirmations) minus the clock."""
    snap = session.snapshot()
    snap.pop("created_at", None)
    snap.pop("last_used", None)
    return json.dumps(snap, ensure_ascii=False, sort_keys=True, default=str)


def _a_place_that_works(state: ScheduleState, task_id: int) -> dict[str, Any]:
    for day in range(1, state.num_days + 1):
        for slot in range(1, state.slots_per_day + 1):
            args = {"task_id": task_id, "day": day, "slot_start": slot}
            if not Toolbox(state.copy_state()).invoke("place", args).is_error:
                return args
    raise AssertionError("no free place")


def _check_preview(session: Session, name: str, args: dict[str, Any]) -> None:
    """Preview ``name`` then run it for real: the preview changed nothing and its reply, status
    and error code are the real call's under the preview line."""
    before = _fingerprint(session)
    seen = session.invoke(name, {**args, "preview": True})
    assert _fingerprint(session) == before, seen.reply
    assert seen.changes == ()
    real = session.invoke(name, args)
    if seen.error_code == "invalid_args" and not seen.reply.startswith(PREVIEW_LINE):
        # Arguments the tool cannot parse are refused before anything runs, preview or not.
        assert real.status == "error" and real.error_code == "invalid_args"
        return
    assert seen.reply == f"{PREVIEW_LINE}\n{real.reply}"
    assert (seen.status, seen.error_code, seen.is_error) == (
        real.status,
        real.error_code,
        real.is_error,
    )


def test_every_immediate_write_takes_preview_and_confirm_gated_ones_do_not():
    """Tests that the schema of every write without a confirm gate has ``preview`` (default
    false) and that commit / upsert_task_class, whose gate is their preview, do not."""
    for spec in registry.TOOLS:
        fields = spec.args_model.model_fields
        if spec.is_write and not spec.needs_confirm:
            assert "preview" in fields and fields["preview"].default is False, spec.name
        else:
            assert "preview" not in fields, spec.name
    schemas = {s["name"]: s for s in tool_schemas("mcp")}
    assert "preview" in schemas["move"]["inputSchema"]["properties"]
    assert "preview" not in schemas["commit"]["inputSchema"]["properties"]


def test_a_preview_of_a_place_answers_the_place_and_changes_nothing():
    """Tests that a previewed place answers the place's success layout and evidence line under
    the preview line, leaves state, change log and round log alone, and the real place then
    answers the same."""
    session = Session(load_window(), self_check=True)
    session.call("analyze_health", {})
    task = next(t for t in session.state.tasks if t.status == "pending")
    args = _a_place_that_works(session.state, task.state_id)
    _check_preview(session, "place", args)
    assert session.changes, "the real place ran"


def test_a_refused_preview_is_still_a_refusal_with_its_code():
    """Tests that previewing a conflicting place answers the refusal layout under the preview
    line, with status error and the refusal's code, on the Toolbox too."""
    tb = Toolbox(load_window(), self_check=True)
    before = tb.state.to_json()
    out = tb.invoke_result("place", {"task_id": 3, "day": 1, "slot_start": 1, "preview": True})
    assert out.reply.startswith(f"{PREVIEW_LINE}\n放置失败：第1天第1-2节已被 [1]高等数学 占用")
    assert out.status == "error" and out.is_error
    assert tb.state.to_json() == before and tb.changes == []


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("apply_proposal", {"time_limit_s": 3, "seed": 7}),
        ("spread_even", {"time_limit_s": 3, "seed": 7}),
        ("min_context_switch", {"day_from": 1, "day_to": 7, "time_limit_s": 3, "seed": 7}),
        ("restore_best", {}),
        ("reload", {}),
        ("unplace", {"task_id": 6}),
    ],
)
def test_previewing_a_solver_write_shows_the_plan_that_applying_gives(name, args):
    """Tests that a previewed apply_proposal (and the other re-optimising writes, restore_best
    and reload) changes nothing and that applying it after the preview with the same seed and
    time limit gives exactly the previewed reply (the same plan)."""
    session = Session(load_window(), enabled_tools=("min_context_switch",), self_check=True)
    session.call("analyze_health", {})
    _check_preview(session, name, args)


def test_a_preview_over_http_changes_nothing():
    """Tests that HTTP carries ``preview``: the reply has the preview line and the session's
    state and change log are unchanged."""
    from fastapi.testclient import TestClient

    from smartflow_engine.tools_adapter.api import create_app

    client = TestClient(create_app({"tok": "alice"}))
    auth = {"Authorization": "Bearer tok"}
    created = client.post("/v1/sessions", headers=auth, json={"state": load_window().to_dict()})
    sid = created.json()["session_id"]
    body = {"tool": "unplace", "args": {"task_id": 6, "preview": True}}
    out = client.post(f"/v1/sessions/{sid}/calls", headers=auth, json=body).json()
    assert out["reply"].startswith(PREVIEW_LINE) and out["status"] == "ok"
    state = client.get(f"/v1/sessions/{sid}/state", headers=auth).json()["state"]
    assert state == load_window().to_dict()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(state=windows(min_days=3, max_days=10, pending_per_day=1.5), data=st.data())
def test_a_preview_never_changes_anything_and_answers_as_the_write(
    state: ScheduleState, data: st.DataObject
):
    """Tests, on random windows and random write calls (well-formed and not), that a preview
    never changes the session (state, change log, loop, round log) and that its reply equals
    the real write's reply after the preview line."""
    session = Session(state, self_check=True)
    if data.draw(st.booleans()):
        session.call("analyze_health", {})
    for _ in range(3):
        name, args = data.draw(write_calls(session.state))
        if name not in registry.REGISTRY or not isinstance(args, dict):
            continue
        _check_preview(session, name, args)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    state=windows(min_days=3, max_days=8, pending_per_day=1.5),
    seed=st.integers(0, 1000),
    include_suggested=st.booleans(),
)
def test_applying_a_previewed_proposal_reproduces_it(
    state: ScheduleState, seed: int, include_suggested: bool
):
    """Tests, on random windows and seeds, that apply_proposal after its preview (same seed and
    time limit) applies exactly the previewed plan: the same reply under the preview line."""
    session = Session(state)
    session.call("analyze_health", {})
    args = {"time_limit_s": 2, "seed": seed, "include_suggested": include_suggested}
    _check_preview(session, "apply_proposal", args)


def test_a_preview_is_not_a_round_of_the_request():
    """Tests that a preview leaves the request's round count as it was (issue 28: a preview
    changes nothing, the round count included), while a real call counts one round."""
    from smartflow_engine.tools_adapter import Session

    s = Session(load_window("sample_window"), mode="local_adjust")
    before = s.request_info()["rounds"]
    s.call("place", {"task_id": 11, "day": 6, "slot_start": 1, "preview": True})
    assert s.request_info()["rounds"] == before
    s.call("place", {"task_id": 11, "day": 6, "slot_start": 1})
    assert s.request_info()["rounds"] == before + 1


@pytest.mark.parametrize(
    ("name", "target", "args"),
    [
        # one scope (the default runs two searches once suggested tasks exist)
        ("apply_proposal", "propose_placement", {"time_limit_s": 3, "include_suggested": False}),
        ("apply_proposal", "repair_placement", {"keep_placed": True, "time_limit_s": 3}),
        ("spread_even", "spread_even", {"category": "学习", "time_limit_s": 3}),
        ("min_context_switch", "min_context_switch", {"time_limit_s": 3}),
    ],
)
def test_applying_after_a_preview_takes_the_previewed_plan_not_a_new_search(
    monkeypatch, name, target, args
):
    """Tests that the real call after a preview applies the preview's plan without searching
    again (a search cut by the wall clock may end elsewhere on a loaded machine, issue 28): the
    solver runs once for preview + apply, and again once anything changed the state."""
    from smartflow_engine.tools_adapter.tools import solver as solver_tools

    real = getattr(solver_tools, target)
    calls: list[int] = []

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(solver_tools, target, counted)
    session = Session(load_window(), enabled_tools=("min_context_switch",))
    session.call("analyze_health", {})
    _check_preview(session, name, args)
    assert len(calls) == 1
    # A preview, then another write: the kept plan is stale and the apply searches again.
    session = Session(load_window(), enabled_tools=("min_context_switch",))
    session.call("analyze_health", {})
    session.invoke(name, {**args, "preview": True})
    placed = session.invoke("place", _a_place_that_works(session.state, 9))
    assert placed.status == "ok"
    session.invoke(name, args)
    assert len(calls) == 3
