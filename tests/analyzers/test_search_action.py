"""A read stays a read (issue 40 item 7): when no single move helps while the proven floor lies
below, ``analyze_health`` names the write that searches (``apply_proposal`` with
``keep_placed`` / ``max_moves``, previewed first) instead of running the search itself.

The data file holds a 30-day window after a student's edit (4 study tasks moved onto the busiest
days) and the plateau the scripted agent reached from it with single moves: (0 critical, 1
warning), every action ``fixable: false``, while the proven floor is (0, 0).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.analyzers.health import SEARCH_INTENT, SEARCH_MAX_MOVES
from smartflow_engine.evalkit.scripted import key_of
from smartflow_engine.solver.health_floor import HealthFloor
from smartflow_engine.state import ScheduleState
from smartflow_engine.tools_adapter import Session

FLOOR = importlib.import_module("smartflow_engine.solver.health_floor")
DATA = Path(__file__).resolve().parents[1] / "data" / "escalation_plateau.json"
ACTION_ID = f"na_{SEARCH_INTENT}_window"


def _window(name: str) -> ScheduleState:
    return ScheduleState.from_json(json.loads(DATA.read_text(encoding="utf-8"))[name])


def _health(state: ScheduleState) -> dict[str, Any]:
    out: dict[str, Any] = analyze_health(state, time_limit_s=10.0).to_dict()
    return out


@pytest.fixture
def no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry into the engine's searches raises: a read that runs one fails."""

    def boom(*_: Any, **__: Any) -> None:
        raise AssertionError("analyze_health ran a search")

    for module, name in (
        ("smartflow_engine.solver.health_search", "search_health"),
        ("smartflow_engine.solver.placement", "search_health"),
        ("smartflow_engine.solver.repair", "repair_placement"),
        ("smartflow_engine.solver", "repair_placement"),
        ("smartflow_engine.solver.placement", "propose_placement"),
        ("smartflow_engine.solver", "propose_placement"),
    ):
        monkeypatch.setattr(importlib.import_module(module), name, boom)


def test_plateau_names_the_searching_write_and_runs_no_search(no_search: None) -> None:
    env = _health(_window("plateau"))
    signal = env["metrics"]["close_signal"]
    assert (signal["critical"], signal["warning"]) == (0, 1)
    assert (signal["floor"]["critical"], signal["floor"]["warning"]) == (0, 0)
    first, *rest = env["next_actions"]
    assert first["intent_code"] == SEARCH_INTENT and first["action_id"] == ACTION_ID
    assert first["candidate_write_tools"] == ["apply_proposal"]
    assert first["figures"]["write_args"] == {
        "keep_placed": True,
        "max_moves": SEARCH_MAX_MOVES,
        "preview": True,
    }
    assert (first["figures"]["better_critical"], first["figures"]["better_warning"]) == (0, 0)
    assert "fixable" not in first  # nothing was searched: its effect is the preview's to show
    assert rest and all(a["fixable"] is False for a in rest)  # no single move helps


def test_two_reads_give_the_same_reply() -> None:
    """Tests that the reply is a function of the state (the feasibility step's runtime aside)."""
    state = _window("plateau")
    first, second = _health(state), _health(state)
    for env in (first, second):
        env["feasibility"].pop("runtime_s")
    assert first == second


def test_the_round_closes_on_the_rule_and_the_named_write_improves_the_key() -> None:
    """Issue 40 item 8: the plateau meets the spec's rule (critical=0 && warning<=1), so the
    session's round closes (P1-E), and ``improvable`` tells whoever goes on that a better
    state is proven; in the next request the named write, previewed, then applied, gets there."""
    state = _window("plateau")
    before = key_of(state)
    s = Session(state, mode="local_adjust", max_time_limit_s=10.0)
    env = json.loads(s.call("analyze_health", {}))
    signal = env["metrics"]["close_signal"]
    assert signal["should_close"] is True and signal["close_reason"] == "rules_met"
    assert signal["improvable"] is True
    act = next(a for a in env["next_actions"] if a["intent_code"] == SEARCH_INTENT)
    s.begin_request("local_adjust")  # the user asks to go on
    args = {**act["figures"]["write_args"], "time_limit_s": 5}
    snapshot = s.state.to_dict()
    preview = s.invoke("apply_proposal", args)
    assert preview.status != "error" and s.state.to_dict() == snapshot  # a preview writes nothing
    result = s.invoke("apply_proposal", {**args, "preview": False})
    assert result.status != "error" and result.changes
    assert key_of(s.state) < before


def test_not_offered_when_a_single_move_helps() -> None:
    env = _health(_window("edited"))
    assert any(a["fixable"] is True for a in env["next_actions"])
    assert all(a["intent_code"] != SEARCH_INTENT for a in env["next_actions"])


def test_not_offered_at_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        FLOOR, "health_floor", lambda *a, **k: HealthFloor(critical=0, warning=1, proven=True)
    )
    env = _health(_window("plateau"))
    assert env["metrics"]["close_signal"]["best_achievable"] is True
    assert all(a["intent_code"] != SEARCH_INTENT for a in env["next_actions"])


def test_an_unproven_floor_offers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FLOOR, "health_floor", lambda *a, **k: HealthFloor(proven=False))
    env = _health(_window("plateau"))
    assert all(a["intent_code"] != SEARCH_INTENT for a in env["next_actions"])


def _round(loop: Any, ctx: Any, severities: list[str], fixable: bool | None) -> Any:
    """One fabricated analyze_health round through the session's loop state."""
    from smartflow_engine.analyzers.result import AnalysisResult, Issue, NextAction, Trigger

    trig = Trigger("m", ">=", 1.0, 2.0)
    issues = [
        Issue(f"i{n}", "load", sev, "r", trig, (trig,), 1.0)  # type: ignore[arg-type]
        for n, sev in enumerate(severities)
    ]
    act = NextAction("na_x", "rebalance_load", {}, {}, {}, [], {}, ["move"], ["i0"])
    act.fixable, act.fixable_checked = fixable, True
    crit = severities.count("critical")
    warn = severities.count("warning")
    result = AnalysisResult(
        tool="analyze_health",
        success=True,
        metrics={"close_signal": {"critical": crit, "warning": warn}},
        issues=issues,
        next_actions=[act],
        feasibility={"is_feasible": True},
        has_feasibility=True,
    )
    loop.on_health(ctx, None, result)
    return result


def test_a_round_worse_than_the_requests_start_names_the_repair() -> None:
    """Issue 40 item 7: when no single move helps and the request's starting health is better,
    the session's round names the least-change repair (better = the start), first."""
    from smartflow_engine.tools_adapter.core.spec import ToolContext
    from smartflow_engine.tools_adapter.sessions.loop_state import LoopState

    loop = LoopState()
    ctx = ToolContext(_window("plateau"), loop=loop)
    first = _round(loop, ctx, ["warning", "warning"], fixable=False)
    assert [a.intent_code for a in first.next_actions] == ["rebalance_load"]  # the start itself
    helped = _round(loop, ctx, ["critical", "warning", "warning"], fixable=True)
    assert [a.intent_code for a in helped.next_actions] == ["rebalance_load"]  # a move helps
    worse = _round(loop, ctx, ["critical", "warning", "warning"], fixable=False)
    codes = [a.intent_code for a in worse.next_actions]
    assert codes == [SEARCH_INTENT, "rebalance_load"]
    figures = worse.next_actions[0].figures
    assert (figures["better_critical"], figures["better_warning"]) == (0, 2)
    assert [a.priority for a in worse.next_actions] == [1, 2]
    assert loop.to_dict()["start_key"] == [0, 2]
    assert LoopState.from_dict(loop.to_dict()).start_key == (0, 2)
