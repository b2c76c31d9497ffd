"""Tests of the scripted policy (the tools-only agent shared with benchmarks/bench_loop.py)."""

from __future__ import annotations

from smartflow_engine.evalkit import ScriptedPolicy, load_tasks, run_trial


def test_an_infeasible_window_is_negotiated_once_and_closed():
    """Tests that on a proven-infeasible window the agent records the stated choice once and
    stops at the risk_accepted close: check_feasibility, analyze_health, resolve_negotiation,
    analyze_health (it used to resolve again every round until the call cap)."""
    task = load_tasks(ids=["13d-tight-s2-negotiate"])[0]
    trial = run_trial(task, ScriptedPolicy())
    assert trial.passed, trial.details
    assert trial.tool_calls == 4
    assert trial.rounds == 2


def test_a_local_edit_is_made_and_kept():
    """Tests that the agent moves the tasks the student named to the named days and that the
    loop after it leaves them there (they are pinned)."""
    task = load_tasks(ids=["13d-plain-s0-edit1"])[0]
    trial = run_trial(task, ScriptedPolicy())
    assert trial.passed, trial.details
    assert "edit" in trial.details
