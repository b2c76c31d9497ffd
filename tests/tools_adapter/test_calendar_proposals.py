"""Tests of proposals limited by the calendar (issue 43 phase 2): ``apply_proposal`` /
``propose_placement`` with ``tasks`` / ``slots`` (``tools/solver.py``, the solver's hook in
``solver/problem.py`` + ``solver/scoped.py``), each final state checked here from the states
alone: what moved, where it went (week, weekday, periods) and every class rule (read the
reference system's way by ``broken_rules``, written in the eval kit's tests)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartflow_engine.calendar_filters import calendar_of
from smartflow_engine.evalkit.tasks import EvalTask, load_tasks
from smartflow_engine.solver import propose_placement
from smartflow_engine.tools_adapter import Session
from smartflow_engine.tools_adapter.core.calendar_args import SlotsScope, TaskArgs, scope_of
from tests.evalkit.test_calendar_tasks import broken_rules

WEEKEND = next(t for t in load_tasks() if t.id == "21d-log-weekend-to-weekdays")
WEEK17 = next(t for t in load_tasks() if t.id == "42d-log-week17")


def _places(data: dict[str, Any]) -> dict[int, list[tuple[int, int, int]]]:
    return {
        t["state_id"]: [(b["day"], b["slot_start"], b["slot_end"]) for b in t.get("slots") or ()]
        for t in data["tasks"]
    }


def _cal(task: EvalTask) -> dict[int, tuple[int, int]]:
    return {
        m["day_index"]: (m["week"], m["day_of_week"]) for m in task.state["window"]["day_mapping"]
    }


def _weekend_items(task: EvalTask) -> set[int]:
    cal = _cal(task)
    return {
        t["state_id"]
        for t in task.state["tasks"]
        if t.get("source") != "event" and t.get("slots") and cal[t["slots"][0]["day"]][1] >= 6
    }


def test_not_every_selected_task_fits_changes_nothing_and_says_the_proven_maximum():
    """Tests the partial-fit decision: when some selected task has no allowed place (weekend
    items of weeks 13-14 asked onto day 3 in their own week: none exists), apply_proposal
    changes nothing, says 失败, the proven maximum and names each task that cannot move."""
    s = Session(WEEKEND.initial_state(), mode="local_adjust")
    before = s.state.to_json()
    args = {"tasks": {"day_scope": "weekend"}, "slots": {"day": 3, "same_week": True}}
    result = s.invoke("apply_proposal", args)
    assert result.status == "error" and result.reply.startswith("应用方案失败")
    assert "已证明按这些限制最多能放下" in result.reply and "max_moves" in result.reply
    assert s.state.to_json() == before
    cal = _cal(WEEKEND)
    for tid in _weekend_items(WEEKEND):
        task = s.state.task(tid)
        assert task is not None
        if cal[task.slots[0].day][0] != 12:  # no day 3 in its week: it cannot move
            assert task.label in result.reply


def test_max_moves_moves_only_what_fits_and_the_rest_stays():
    """Tests that the same request with max_moves moves at most that many selected tasks, each
    onto an allowed place (day 3, week 12), every other task where it was, every rule held."""
    s = Session(WEEKEND.initial_state(), mode="local_adjust")
    args = {
        "tasks": {"day_scope": "weekend"},
        "slots": {"day": 3, "same_week": True},
        "max_moves": 2,
    }
    result = s.invoke("apply_proposal", args)
    assert result.status == "ok", result.reply
    old, new = _places(WEEKEND.state), _places(s.state.to_dict())
    moved = [tid for tid in old if old[tid] != new[tid]]
    assert 1 <= len(moved) <= 2
    assert set(moved) <= _weekend_items(WEEKEND)
    assert all(new[tid][0][0] == 3 for tid in moved)
    assert broken_rules(s.state.to_dict()) == []


def test_week17_first_call_moves_exactly_the_two_that_may_go_back():
    """Tests "随便挪两个到第12周": only the first items of the two classes that start in week 17
    may go to week 12 under the item order; max_moves=2 moves exactly those, nothing else."""
    s = Session(WEEK17.initial_state(), mode="local_adjust")
    args = {"tasks": {"week": 17}, "slots": {"week": 12}, "max_moves": 2}
    assert s.invoke("apply_proposal", args).status == "ok"
    old, new = _places(WEEK17.state), _places(s.state.to_dict())
    moved = {tid for tid in old if old[tid] != new[tid]}
    firsts = {
        t["state_id"]
        for t in WEEK17.state["tasks"]
        if t.get("category_id") in (6, 7) and t.get("task_order") == 1
    }
    assert moved == firsts
    cal = _cal(WEEK17)
    assert all(cal[new[tid][0][0]][0] == 12 for tid in moved)
    assert broken_rules(s.state.to_dict()) == []


@pytest.mark.parametrize("extra", ["keep_placed", "include_suggested"])
def test_tasks_slots_with_another_scope_argument_are_refused(extra):
    """Tests that tasks/slots with keep_placed or include_suggested (which choose what moves
    another way) is refused as an argument error naming both, 失败, the state unchanged."""
    s = Session(WEEKEND.initial_state(), mode="local_adjust")
    before = s.state.to_json()
    result = s.invoke("apply_proposal", {"tasks": {"day_scope": "weekend"}, extra: False})
    assert result.error_code == "invalid_args"
    assert result.reply.startswith("应用方案失败") and extra in result.reply
    assert s.state.to_json() == before


def test_propose_placement_with_a_scope_writes_nothing_and_keeps_the_limits():
    """Tests that propose_placement takes the same arguments as a read: it writes nothing and
    its plan places every weekend item, on workdays only (the mode that offers it: first_full)."""
    s = Session(WEEKEND.initial_state(), mode="first_full")
    before = s.state.to_json()
    args = {"tasks": {"day_scope": "weekend"}, "slots": {"day_scope": "workday", "same_week": True}}
    result = s.invoke("propose_placement", args)
    assert result.status == "ok" and "粗排方案" in result.reply
    assert f"放置{len(_weekend_items(WEEKEND))}个任务" in result.reply
    cal = _cal(WEEKEND)
    days = [
        int(line.split("第")[1].split("天")[0])
        for line in result.reply.splitlines()[1:]
        if line.startswith("  第")
    ]
    assert days and all(cal[d][1] <= 5 for d in days)
    assert s.state.to_json() == before


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    scope=st.sampled_from(["weekend", "workday", "all"]),
    where=st.sampled_from(["workday", "all"]),
    excluded=st.sets(st.integers(1, 12), max_size=5),
    same_week=st.booleans(),
)
def test_a_scoped_proposal_keeps_every_limit(scope, where, excluded, same_week):
    """Tests the solver's hook on random filters: every placement of ``propose_placement(within=)``
    is a selected task on a place its mask allows (the requested days and periods, its week with
    same_week), the tasks outside the scope are not in the plan, and the applied plan breaks no
    class rule (item order included)."""
    state = WEEKEND.initial_state()
    tasks = TaskArgs(day_scope=scope)
    slots = SlotsScope(
        day_scope=where, exclude_sections=sorted(excluded) or None, same_week=same_week
    )
    within = scope_of(state, tasks, slots)
    assert not isinstance(within, str)
    proposal = propose_placement(state, time_limit_s=1.0, num_workers=1, within=within)
    cal = calendar_of(state)
    assert cal is not None
    data = state.to_dict()
    rows = {t["state_id"]: t for t in data["tasks"]}
    for pl in proposal.placements:
        assert pl.task_id in within.movable
        assert np.all(within.allowed[pl.task_id][pl.day - 1, pl.slot_start - 1 : pl.slot_end])
        home = state.task(pl.task_id).slots[0].day  # type: ignore[union-attr]
        assert not same_week or cal.week(pl.day) == cal.week(home)
        assert not set(range(pl.slot_start, pl.slot_end + 1)) & excluded
        rows[pl.task_id]["slots"] = [
            {"day": pl.day, "slot_start": pl.slot_start, "slot_end": pl.slot_end}
        ]
        if pl.embed_host is not None:
            rows[pl.task_id]["embed_host"] = pl.embed_host
    assert broken_rules(data) == []


def test_a_scoped_plan_at_its_scopes_floor_says_so():
    """Tests that a calendar proposal's health line names its own population's floor and says
    the plan reached it: week 17's items spread onto its workdays once the first call moved
    two back to week 12 (their places from the task's witness) can do no better than the gaps
    that move opened, and the line says so (compared with the whole window's floor it said
    "尚高于此下限")."""
    from tests.solver.test_scoped import _week17_after_the_first_call

    state, _ = _week17_after_the_first_call()
    s = Session(state, mode="first_full")
    args = {"tasks": {"week": 17}, "slots": {"week": 17, "day_scope": "workday"}}
    result = s.invoke("propose_placement", args)
    assert result.status == "ok", result.reply
    line = next(x for x in result.reply.splitlines() if x.startswith("体检"))
    assert "只在指定范围内移动选中的任务、其余不动" in line and "本方案已达此下限" in line


def test_items_left_out_of_a_calendar_plan_hold_the_order_where_they_stay() -> None:
    """Tests the case the property above found under load (scope all, workdays, periods 1-3 and
    8-9 excluded), made deterministic by a fixed small work: the plan left class 3's items 4-6
    out (their masks allow nothing), they stay where they are once the plan is applied, and
    the plan moved item 3 past them (item 3 on day 16, item 4 on day 12). Now an item the
    order step drops stays too, and the step runs again against it: no class rule breaks."""
    state = WEEKEND.initial_state()
    slots = SlotsScope(day_scope="workday", exclude_sections=[1, 2, 3, 8, 9], same_week=False)
    within = scope_of(state, TaskArgs(day_scope="all"), slots)
    assert not isinstance(within, str)
    proposal = propose_placement(
        state, time_limit_s=30.0, work_limit_s=0.01, num_workers=1, within=within
    )
    data = state.to_dict()
    rows = {t["state_id"]: t for t in data["tasks"]}
    for pl in proposal.placements:
        rows[pl.task_id]["slots"] = [
            {"day": pl.day, "slot_start": pl.slot_start, "slot_end": pl.slot_end}
        ]
        if pl.embed_host is not None:
            rows[pl.task_id]["embed_host"] = pl.embed_host
    assert proposal.unplaced  # (the case: some of class 3's items are left out)
    assert broken_rules(data) == []
