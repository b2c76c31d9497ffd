"""Tests of the eval kit's graders: each goal part fails on a final state that breaks it and
passes on the engine's proven final state (the witness shipped with the task)."""

from __future__ import annotations

import pytest

from smartflow_engine.evalkit import CallRecord, Outcome, grade, load_tasks
from smartflow_engine.evalkit.goals import CHECKS, counts
from smartflow_engine.evalkit.tasks import EvalTask
from smartflow_engine.state import ScheduleState, move, unplace

TASKS = load_tasks()


def _task(pred) -> EvalTask:
    return next(t for t in TASKS if pred(t))


def _witness_calls(task: EvalTask) -> list[CallRecord]:
    if task.goal.negotiation is None:
        return []
    return [CallRecord("resolve_negotiation", {"choice": task.goal.negotiation}, "ok")]


def _witness(task: EvalTask) -> Outcome:
    return Outcome(task.witness_state(), _witness_calls(task))


def _overloaded(task: EvalTask) -> Outcome:
    """The witness with study tasks piled onto the days they fit until the close rule (or the
    floor) breaks."""
    state = task.witness_state()
    goal = task.goal.health
    assert goal is not None
    for day in range(1, state.num_days + 1):
        for t in list(state.tasks):
            crit, warn = counts(state)
            if crit > goal.critical or crit + warn > goal.critical + goal.warning:
                return Outcome(state, _witness_calls(task))
            if t.source == "event" or state.is_locked(t) or len(t.slots) != 1:
                continue
            runs = state.grid.free_runs(t.need(), day)
            if runs and t.slots[0].day != day:
                move(state, t.state_id, day, runs[0][1])
    raise AssertionError("could not break the health goal")


def _unplaced(task: EvalTask) -> Outcome:
    state = task.witness_state()
    pending = next(t["state_id"] for t in task.state["tasks"] if t["status"] == "pending")
    assert unplace(state, pending).ok
    return Outcome(state, [])


def _edit_undone(task: EvalTask) -> Outcome:
    return Outcome(task.initial_state(), [])  # the tasks still on the day the student named


def _locked_moved(task: EvalTask) -> Outcome:
    data = task.witness_state().to_dict()
    for t in data["tasks"]:
        if t["state_id"] in task.goal.locked_ids and len(t["slots"]) > 1:
            t["slots"] = t["slots"][1:]  # one meeting of a locked course gone
            return Outcome(ScheduleState.from_json(data), _witness_calls(task))
    raise AssertionError("no locked task with several blocks")


def _frozen_moved(task: EvalTask) -> Outcome:
    """A study task on a frozen day moved to a later day."""
    state = task.witness_state()
    k = task.goal.frozen_days
    for t in state.tasks:
        if t.source == "event" or state.is_locked(t) or len(t.slots) != 1 or t.slots[0].day > k:
            continue
        for day in range(k + 1, state.num_days + 1):
            runs = state.grid.free_runs(t.slots[0].length, day)
            if runs and move(state, t.state_id, day, runs[0][1]).ok:
                return Outcome(state, [])
    raise AssertionError("no study task on a frozen day to move")


def _frozen_landed(task: EvalTask) -> Outcome:
    """A study task from a later day put on a frozen day's free periods."""
    state = task.witness_state()
    k = task.goal.frozen_days
    for t in state.tasks:
        if t.source == "event" or state.is_locked(t) or len(t.slots) != 1 or t.slots[0].day <= k:
            continue
        for day in range(1, k + 1):
            runs = state.grid.free_runs(t.slots[0].length, day)
            if runs and move(state, t.state_id, day, runs[0][1]).ok:
                return Outcome(state, [])
    raise AssertionError("no free run on a frozen day")


def _wrote_first(task: EvalTask) -> Outcome:
    calls = [CallRecord("place", {}, "ok", wrote=True, is_write=True), *_witness_calls(task)]
    return Outcome(task.witness_state(), calls)


def _never_resolved(task: EvalTask) -> Outcome:
    return Outcome(task.witness_state(), [CallRecord("analyze_health", {}, "ok")])


def _other_choice(task: EvalTask) -> Outcome:
    calls = [CallRecord("resolve_negotiation", {"choice": "reduce_scope"}, "ok")]
    return Outcome(task.witness_state(), calls)


def _too_many_calls(task: EvalTask) -> Outcome:
    calls = [CallRecord("get_overview", {}, "ok")] * 61
    return Outcome(task.witness_state(), calls)


def _asked_past_cap(task: EvalTask) -> Outcome:
    return Outcome(task.witness_state(), _witness_calls(task), exhausted=True)


def _edited(task: EvalTask, edit) -> Outcome:
    """The witness with ``edit(data)`` applied to its JSON."""
    data = task.witness_state().to_dict()
    edit(data)
    return Outcome(ScheduleState.from_json(data), _witness_calls(task))


def _by_id(data: dict, tid: int) -> dict:
    return next(t for t in data["tasks"] if t["state_id"] == tid)


def _not_into(task: EvalTask) -> Outcome:
    """The first named task left where it was (a weekend item not moved)."""
    part = task.goal.calendar.into[0]
    before = {t["state_id"]: t for t in task.state["tasks"]}

    def edit(data: dict) -> None:
        for tid in part.task_ids:
            _by_id(data, tid)["slots"] = before[tid].get("slots")
            _by_id(data, tid)["status"] = before[tid]["status"]
            if not before[tid].get("slots"):
                _by_id(data, tid).pop("slots", None)
                _by_id(data, tid).pop("embed_host", None)

    return _edited(task, edit)


def _other_moved(task: EvalTask) -> Outcome:
    """A task that was to stay put moved one period later (onto a free period)."""
    state = task.witness_state()
    for tid in task.goal.calendar.unchanged:
        t = state.task(tid)
        if t is None or state.is_locked(t) or len(t.slots) != 1 or t.source == "event":
            continue
        b = t.slots[0]
        for start in range(1, 13 - b.length + 1):
            if start != b.slot_start and move(state, tid, b.day, start).ok:
                return Outcome(state, [])
    raise AssertionError("no task to move")


def _on_ruled_out(task: EvalTask) -> Outcome:
    """A placed item put on period 1-2 (ruled out by the request)."""
    state = task.witness_state()
    for tid in task.goal.calendar.into[0].task_ids:
        for day in range(1, state.num_days + 1):
            if move(state, tid, day, 1).ok:
                return Outcome(state, [])
    raise AssertionError("no free period 1-2")


def _uneven(task: EvalTask) -> Outcome:
    """The spread items moved onto the first of the days, as far as the write rules let."""
    even = task.goal.calendar.even
    state = task.witness_state()
    for tid in even.task_ids:
        t = state.task(tid)
        if (
            t is None
            or not t.slots
            or t.slots[0].day in (even.days[0],)
            or t.slots[0].day not in even.days
        ):
            continue
        for start in range(1, 12):
            if move(state, tid, even.days[0], start).ok:
                break
    return Outcome(state, [])


def _rule_broken(task: EvalTask) -> Outcome:
    """A placed item put on free periods of a half-day block its class bans (block b: periods
    2b-1 and 2b)."""

    def edit(data: dict) -> None:
        classes = {c["id"]: c for c in data["task_classes"]}
        item = next(
            t
            for t in data["tasks"]
            if t.get("slots") and classes.get(t.get("category_id"), {}).get("excluded_slots")
        )
        block = classes[item["category_id"]]["excluded_slots"][0]
        taken = {
            (b["day"], p)
            for t in data["tasks"]
            for b in t.get("slots") or ()
            for p in range(b["slot_start"], b["slot_end"] + 1)
        }
        day = next(
            d
            for d in range(1, data["window"]["total_days"] + 1)
            if (d, 2 * block - 1) not in taken and (d, 2 * block) not in taken
        )
        item["slots"] = [{"day": day, "slot_start": 2 * block - 1, "slot_end": 2 * block}]
        item.pop("embed_host", None)

    return _edited(task, edit)


BREAKS = [
    # (goal part, which task, the broken final state)
    ("health", lambda t: t.goal.health is not None and t.goal.health.rule == "close", _overloaded),
    ("health", lambda t: t.goal.health is not None and t.goal.health.rule == "floor", _overloaded),
    ("placed", lambda t: t.goal.placed_periods is not None, _unplaced),
    ("edit", lambda t: t.goal.edit is not None, _edit_undone),
    ("locked", lambda t: True, _locked_moved),
    ("frozen", lambda t: t.goal.frozen_days > 0, _frozen_moved),  # moved off a frozen day
    ("frozen", lambda t: t.goal.frozen_days > 0, _frozen_landed),  # put onto a frozen day
    ("negotiation", lambda t: t.goal.negotiation is not None, _wrote_first),  # a write first
    ("negotiation", lambda t: t.goal.negotiation is not None, _never_resolved),  # asked nobody
    ("negotiation", lambda t: t.goal.negotiation is not None, _other_choice),  # not the choice
    ("round_cap", lambda t: True, _too_many_calls),  # 61 calls
    ("round_cap", lambda t: True, _asked_past_cap),  # the policy wanted a 61st
    # the calendar requests (issue 43)
    ("into", lambda t: t.goal.calendar is not None and bool(t.goal.calendar.into), _not_into),
    (
        "unchanged",
        lambda t: t.kind == "calendar" and t.request.mode == "local_adjust",
        _other_moved,
    ),
    (
        "avoid",
        lambda t: t.goal.calendar is not None and bool(t.goal.calendar.avoid_periods),
        _on_ruled_out,
    ),
    ("even", lambda t: t.goal.calendar is not None and t.goal.calendar.even is not None, _uneven),
    ("rules", lambda t: t.goal.calendar is not None, _rule_broken),
]


@pytest.mark.parametrize(("goal", "pick", "broken"), BREAKS)
def test_each_checker_fails_on_a_state_that_breaks_it(goal, pick, broken):
    """Tests that the goal part's checker fails on a final state that breaks only what it
    checks, and that the same task's witness passes it."""
    task = _task(pick)
    passed = {r.goal: r.ok for r in grade(task, _witness(task))}
    assert passed[goal] is True
    results = {r.goal: r for r in grade(task, broken(task))}
    assert results[goal].ok is False, results[goal].detail


def test_every_goal_part_has_a_breaking_case():
    """Tests that the table above covers every checker of the grader."""
    assert {row[0] for row in BREAKS} == set(CHECKS)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_every_shipped_witness_meets_its_whole_goal(task):
    """Tests that each shipped task's proven final state meets every part of its goal (the set
    ships no unreachable goal)."""
    bad = [r for r in grade(task, _witness(task)) if not r.ok]
    assert not bad


def test_the_set_covers_every_kind_size_and_request():
    """Tests that the shipped set holds every kind on windows of 13 to 120 days (each health
    kind on 13-, 30-, 60- and 120-day windows), every kind of request (the logged calendar
    requests too), a request on frozen days, with proofs: proven feasibility and, on
    unclosable windows, a proven floor above the close rule."""
    assert {t.kind for t in TASKS} == {"closable", "unclosable", "infeasible", "calendar"}
    assert {t.request.type for t in TASKS} == {"first_full", "local_edit", "negotiate", "calendar"}
    assert min(t.days for t in TASKS) == 13 and max(t.days for t in TASKS) == 120
    for kind in ("closable", "unclosable", "infeasible"):
        assert {13, 30, 60, 120} <= {t.days for t in TASKS if t.kind == kind}, kind
    assert any(t.goal.frozen_days > 0 for t in TASKS)
    assert all(t.goal.frozen_days == t.request.frozen_days for t in TASKS)
    assert 20 <= len(TASKS) <= 40
    for t in TASKS:
        if "feasibility" in t.proof:
            assert t.proof["feasibility"]["proven"] is True
        if t.kind == "unclosable":
            floor = t.proof["floor"]
            assert floor["proven"] and (floor["critical"] > 0 or floor["warning"] > 1)
        if t.request.type == "local_edit":
            assert t.request.edit == t.goal.edit and t.request.text
