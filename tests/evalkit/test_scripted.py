"""Tests of the scripted policy (the tools-only agent shared with benchmarks/bench_loop.py)."""

from __future__ import annotations

from smartflow_engine.evalkit import PolicyStats, ScriptedPolicy, load_tasks, run_trial


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


class _MoveOffFrozenDay:
    """A policy that tries to move a study task off a frozen day (and then stops)."""

    name = "move-off-frozen"

    def run(self, task, s):
        state = task.initial_state()
        k = task.request.frozen_days
        t = next(
            t
            for t in state.tasks
            if t.source == "task_item"
            and not state.is_locked(t)
            and t.slots
            and t.slots[0].day <= k
        )
        later = next(r for r in state.grid.free_runs(t.slots[0].length) if r[0] > k)
        s.call("move", {"task_id": t.state_id, "new_day": later[0], "new_slot_start": later[1]})
        return PolicyStats()


def test_a_request_s_frozen_days_reach_the_session():
    """Tests that a task's frozen days are the trial session's: a move off a frozen day is
    refused (``frozen_day``), counted as a refused write, and the frozen goal holds."""
    task = next(t for t in load_tasks() if t.request.frozen_days > 0)
    trial = run_trial(task, _MoveOffFrozenDay())
    assert trial.tool_calls == 1 and trial.refused_writes == 1
    assert "frozen" in trial.details and "frozen" not in trial.failed
