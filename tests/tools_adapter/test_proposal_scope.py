"""Tests of the proposal's scope following the request's mode (issue 26 item 3): first_full and
global_reopt re-plan pending and suggested tasks, local_adjust repairs with least change, the
bare Toolbox (no mode) places the pending tasks only, and an explicit argument always wins."""

from __future__ import annotations

from typing import Any

import pytest

from smartflow_engine import Toolbox
from smartflow_engine.tools_adapter.sessions.session import Session
from smartflow_engine.tools_adapter.tools import solver as solver_tools
from tests.helpers.windows import load_window


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Record which search the tool ran and with which scope."""
    seen: dict[str, Any] = {}
    full, repair = solver_tools.propose_placement, solver_tools.repair_placement

    def propose(state: Any, **kw: Any) -> Any:
        seen.update(search="propose", include_suggested=kw["include_suggested"])
        return full(state, **kw)

    def least_change(state: Any, **kw: Any) -> Any:
        seen.update(search="repair", max_moves=kw["max_moves"])
        return repair(state, **kw)

    monkeypatch.setattr(solver_tools, "propose_placement", propose)
    monkeypatch.setattr(solver_tools, "repair_placement", least_change)
    return seen


@pytest.mark.parametrize("tool", ["propose_placement", "apply_proposal"])
@pytest.mark.parametrize(
    ("mode", "args", "expected"),
    [
        ("first_full", {}, {"search": "propose", "include_suggested": True}),
        ("global_reopt", {}, {"search": "propose", "include_suggested": True}),
        ("local_adjust", {}, {"search": "repair", "max_moves": 3}),
        (
            "first_full",
            {"include_suggested": False},
            {"search": "propose", "include_suggested": False},
        ),
        ("first_full", {"keep_placed": True}, {"search": "repair", "max_moves": 3}),
        ("local_adjust", {"keep_placed": False}, {"search": "propose", "include_suggested": False}),
        (None, {}, {"search": "propose", "include_suggested": False}),
    ],
)
def test_the_scope_follows_the_mode_unless_the_call_gives_it(
    monkeypatch, tool, mode, args, expected
):
    seen = _spy(monkeypatch)
    call = {"time_limit_s": 2, **args}
    if mode is None:  # the bare engine: no execute loop, no mode
        out = Toolbox(load_window()).invoke_result(tool, call)
    else:
        out = Session(load_window(), mode=mode).invoke(tool, call)
    if mode == "local_adjust" and tool == "propose_placement":  # not offered in local_adjust
        assert out.error_code == "not_available" and seen == {}
        return
    assert out.status == "ok", out.reply
    assert seen == expected


def test_first_full_apply_touches_study_tasks_only_and_local_adjust_keeps_placed_ones():
    """Tests the scope end to end: first_full's apply_proposal {} after the agent placed a study
    task places everything and changes study tasks only (existing courses stay, as the DESIGN
    says); local_adjust's least-change repair with max_moves 0 leaves every placed task where
    it is."""
    state = load_window()
    session = Session(state.copy_state(), mode="first_full")
    placed = session.invoke("place", {"task_id": 9, "day": 1, "slot_start": 7})
    assert placed.status == "ok", placed.reply
    out = session.invoke("apply_proposal", {"time_limit_s": 3})
    assert out.status == "ok", out.reply
    assert not session.state.pending_tasks()
    scope = {ch.task_id for ch in out.changes}
    assert scope <= {3, 7, 9}
    local = Session(state.copy_state(), mode="local_adjust")
    local.invoke("place", {"task_id": 9, "day": 1, "slot_start": 7})
    repaired = local.invoke("apply_proposal", {"time_limit_s": 3, "max_moves": 0})
    assert repaired.status == "ok", repaired.reply
    assert local.state.task(9).slots[0].day == 1  # max_moves 0: nothing placed moves


def test_the_default_scope_is_no_worse_than_the_narrow_one_on_an_eval_window():
    """Tests the guard on the eval kit's 13-day dense window, where re-planning its suggested
    task ends with 3 warnings and placing the pending tasks only with 2 (the proven floor)."""
    import json

    from smartflow_engine.evalkit.tasks import load_tasks

    task = next(t for t in load_tasks() if t.id == "13d-dense-s3-first_full")
    keys = {}
    for name, args in (("default", {}), ("narrow", {"include_suggested": False})):
        session = Session(task.initial_state(), mode="first_full")
        session.call("apply_proposal", {**args, "time_limit_s": 4})
        signal = json.loads(session.call("analyze_health", {}))["metrics"]["close_signal"]
        keys[name] = (signal["critical"], signal["warning"])
    assert keys["default"] <= keys["narrow"]


def test_a_least_change_repair_cut_by_its_limit_says_so(monkeypatch):
    """Tests that keep_placed with nothing to place, whose search the limit cut before it ran,
    does not claim that no adjustment exists: it says none was found within the limit."""
    from types import SimpleNamespace

    def cut(state: Any, **kw: Any) -> Any:
        return SimpleNamespace(
            placements=[],
            unplaced=[],
            start="current",
            start_only=False,
            wall_limited=True,
            critical=None,
            warning=None,
        )

    monkeypatch.setattr(solver_tools, "repair_placement", cut)
    reply = Toolbox(load_window()).call("propose_placement", {"keep_placed": True})
    assert reply.startswith("最少改动修复：时限内未找到能减少体检问题的调整，日程保持不变。")
    assert reply.splitlines()[-1].startswith("注意：搜索被时限截断")
