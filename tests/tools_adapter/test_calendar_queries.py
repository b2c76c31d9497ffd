"""Tests of the calendar vocabulary on the two query tools (issue 43 item 1): each filter's reply
against an independent reading of the state (``tests/helpers/calendar_oracle.py``), the task
query's places cut by the section filter, and every argument checked with a clear refusal.
The argument models and their window checks are ``tools_adapter/core/calendar_args.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.calendar_filters import PlaceFilter, SectionFilter, TaskFilter
from smartflow_engine.tools_adapter import Session
from tests.helpers import calendar_oracle as oracle
from tests.helpers.windows import load_window

TARGETS, SLOTS = "query_target_tasks", "query_available_slots"


def _metrics(tb: Toolbox | Session, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    env = json.loads(tb.call(tool, args))
    assert env["success"] is True, env
    out: dict[str, Any] = env["metrics"]
    return out


def _day_args(f: Any) -> dict[str, Any]:
    """A :class:`DayFilter` as the tools' arguments."""
    args: dict[str, Any] = {}
    if f.day_scope != "all":
        args["day_scope"] = f.day_scope
    if f.day_of_week:
        args["day_of_week"] = sorted(f.day_of_week)
    for name in ("week_from", "week_to", "day_start", "day_end"):
        if getattr(f, name) is not None:
            args[name] = getattr(f, name)
    return args


def _section_args(f: SectionFilter) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if f.exclude:
        args["exclude_sections"] = sorted(f.exclude)
    if f.after is not None:
        args["after_section"] = f.after
    if f.before is not None:
        args["before_section"] = f.before
    return args


def _usable(days: Any, sections: SectionFilter) -> bool:
    """Filters the tools accept: a weekday both day filters allow, a period the sections
    leave (the tools refuse the others, as ``test_bad_arguments_are_refused`` shows)."""
    scope = {"all": range(1, 8), "workday": range(1, 6), "weekend": (6, 7)}[days.day_scope]
    if days.day_of_week and not set(days.day_of_week) & set(scope):
        return False
    return any(oracle.oracle_period_ok(sections, p) for p in range(1, 13)) and not (
        sections.after is not None
        and sections.before is not None
        and sections.before - sections.after < 2
    )


# ---------------------------------------------------------------------------------- listings
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_target_query_lists_what_the_filters_select(data):
    """Tests that query_target_tasks with the calendar vocabulary alone lists exactly the tasks an
    independent reading selects, in the stated order, with count the total, each block carrying
    its week and weekday, and selected_days the selected days as runs."""
    state = data.draw(oracle.calendar_windows())
    raw = state.to_dict()
    days, sections = data.draw(oracle.day_filters(state)), data.draw(oracle.section_filters())
    if not _usable(days, sections):
        return
    status = data.draw(st.sampled_from(["all", "existing", "suggested", "pending"]))
    args = {**_day_args(days), **_section_args(sections), "status": status, "limit": 50}
    got = _metrics(Toolbox(state), TARGETS, args)
    want = oracle.oracle_tasks(raw, TaskFilter(PlaceFilter(days, sections), status))
    assert got["count"] == len(want)
    assert [t["task_id"] for t in got["tasks"]] == want[:50]
    mapping = {m["day_index"]: m for m in raw["window"].get("day_mapping", [])}
    for row in got["tasks"]:
        for b in row["blocks"]:
            m = mapping.get(b["day"])
            assert (b.get("week"), b.get("day_of_week")) == (
                (m["week"], m["day_of_week"]) if m else (None, None)
            )
    if days.active:
        chosen = oracle.oracle_days(raw, days)
        assert [d for lo, hi in got["selected_days"] for d in range(lo, hi + 1)] == chosen


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_slot_query_without_a_task_lists_every_free_place(data):
    """Tests that query_available_slots without task_id lists the free places of the duration an
    independent reading finds (empty runs first, then water-course blocks), count the total."""
    state = data.draw(oracle.calendar_windows())
    raw = state.to_dict()
    days, sections = data.draw(oracle.day_filters(state)), data.draw(oracle.section_filters())
    if not _usable(days, sections):
        return
    duration = data.draw(st.integers(1, 4))
    key = data.draw(st.sampled_from(["duration", "span"]))
    args = {**_day_args(days), **_section_args(sections), key: duration, "limit": 50}
    got = _metrics(Toolbox(state), SLOTS, args)
    want = oracle.oracle_places(raw, oracle.oracle_days(raw, days), sections, duration)
    assert got["count"] == len(want) and got["task"] is None and got["duration"] == duration
    rows = [(r["day"], r["slot_start"], r["slot_type"], r["embed_host"]) for r in got["slots"]]
    assert rows == want[:50]
    assert all(r["slot_end"] - r["slot_start"] + 1 == duration for r in got["slots"])


def test_slot_query_defaults_to_two_periods(sample_window: ScheduleState):
    """Tests that a place query without task_id or duration asks for two periods, as the
    reference system's does."""
    got = _metrics(Toolbox(sample_window), SLOTS, {"day": 6})
    assert got["duration"] == 2 and got["count"] == 11  # day 6 is empty: starts 1..11


def run_window() -> ScheduleState:
    """Day 1 (a Monday) free all day; a study task of two periods placed on day 2."""
    return ScheduleState.from_json(
        oracle.remap(
            {
                "window": {"total_days": 7, "slots_per_day": 12},
                "tasks": [
                    {
                        "state_id": 1,
                        "name": "复习",
                        "category": "复习",
                        "status": "suggested",
                        "slots": [{"day": 2, "slot_start": 1, "slot_end": 2}],
                    }
                ],
            },
            5,
            1,
        )
    )


def test_task_places_are_cut_by_the_sections():
    """Tests that a task's places under a section filter are the ends of the runs of allowed free
    periods (a run 1-12 without periods 1-2 and 11-12 gives 3-4 and 9-10), all inside the allowed
    periods: filtering the unfiltered places afterwards would find none on such a day."""
    args = {"task_id": 1, "day": 1, "exclude_sections": [1, 2, 11, 12], "limit": 50}
    got = _metrics(Toolbox(run_window()), SLOTS, args)
    places = {(r["day"], r["slot_start"], r["slot_end"]) for r in got["slots"]}
    assert places == {(1, 3, 4), (1, 9, 10)}
    plain = _metrics(Toolbox(run_window()), SLOTS, {"task_id": 1, "day": 1})
    assert {(r["slot_start"], r["slot_end"]) for r in plain["slots"]} == {(1, 2), (11, 12)}
    assert all(r["week"] == 5 and r["day_of_week"] == 1 for r in got["slots"])


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_task_places_respect_every_filter(data):
    """Tests that every place query_available_slots lists for a task lies on a selected day,
    within the allowed periods, is legal for the task (free or a free water-course block, in its
    class window, off its banned periods) and is as long as the task."""
    state = data.draw(oracle.calendar_windows(max_days=14))
    movable = [
        t
        for t in state.tasks
        if t.source != "event"
        and not state.is_locked(t)
        and len(t.slots) <= 1
        and t.state_id not in state.guests_by_host()
    ]
    if not movable:
        return
    task = data.draw(st.sampled_from(movable))
    days, sections = data.draw(oracle.day_filters(state)), data.draw(oracle.section_filters())
    if not _usable(days, sections):
        return
    args = {**_day_args(days), **_section_args(sections), "task_id": task.state_id, "limit": 50}
    got = _metrics(Toolbox(state), SLOTS, args)
    raw = state.to_dict()
    chosen = set(oracle.oracle_days(raw, days))
    free = {
        (p[0], p[1], p[3]) for p in oracle.oracle_places(raw, sorted(chosen), sections, task.need())
    }
    tc = state.task_class(task.category_id)
    for r in got["slots"]:
        assert r["day"] in chosen
        assert r["slot_end"] - r["slot_start"] + 1 == task.need()
        assert all(
            oracle.oracle_period_ok(sections, p) for p in range(r["slot_start"], r["slot_end"] + 1)
        )
        own = task.slots and (task.slots[0].day, task.slots[0].slot_start) == (
            r["day"],
            r["slot_start"],
        )
        assert (r["day"], r["slot_start"], r["embed_host"]) in free or own
        if tc is not None:
            assert (tc.start_day or 1) <= r["day"] <= (tc.end_day or state.num_days)
            assert not set(tc.excluded_slots) & set(range(r["slot_start"], r["slot_end"] + 1))


# ---------------------------------------------------------------------------------- with an action
def two_heavy_mondays() -> ScheduleState:
    """Two weeks from a Monday; both Mondays (days 1 and 8) full of movable study work."""
    tasks = [
        {
            "state_id": i,
            "name": f"任务{i}",
            "category": "复习",
            "status": "suggested",
            "slots": [{"day": day, "slot_start": start, "slot_end": start + 3}],
        }
        for i, (day, start) in enumerate(((d, s) for d in (1, 8) for s in (1, 5, 9)), start=1)
    ]
    return ScheduleState.from_json(
        oracle.remap({"window": {"total_days": 14, "slots_per_day": 12}, "tasks": tasks}, 1, 1)
    )


def test_calendar_filters_narrow_an_actions_targets():
    """Tests that with action_id the calendar filters narrow the action's movable targets to the
    tasks they select: week 2 leaves the three tasks of day 8 of the six the action lists."""
    s = Session(two_heavy_mondays())
    env = json.loads(s.call("analyze_health", {}))
    aid = env["next_actions"][0]["action_id"]
    alone = _metrics(s, TARGETS, {"action_id": aid, "limit": 50})
    narrowed = _metrics(s, TARGETS, {"action_id": aid, "week": 2, "limit": 50})
    assert sorted(t["task_id"] for t in alone["tasks"]) == [1, 2, 3, 4, 5, 6]
    assert sorted(t["task_id"] for t in narrowed["tasks"]) == [4, 5, 6]
    assert narrowed["count"] == 3 and narrowed["selected_days"] == [[8, 14]]
    assert all(t["best_destination"] is not None for t in narrowed["tasks"])


# ---------------------------------------------------------------------------------- refusals
BAD_ARGS = [
    # a week outside the window (the sample is weeks 7-8)
    (SLOTS, {"week": 9}, "week=9 不在规划窗口内（窗口为第7-8周）"),
    (TARGETS, {"week_to": 6}, "week_to=6 不在规划窗口内"),
    # a reversed range is refused, not swapped
    (SLOTS, {"week_from": 8, "week_to": 7}, "week_from=8 大于 week_to=7"),
    (TARGETS, {"day_start": 9, "day_end": 3}, "day_start=9 大于 day_end=3"),
    # an unknown scope
    (SLOTS, {"day_scope": "weekday"}, "参数 day_scope 取值无效"),
    # a weekday outside 1..7
    (TARGETS, {"day_of_week": [0]}, "参数 day_of_week[0]=0 超出范围"),
    # one thing said twice
    (SLOTS, {"day": 3, "day_start": 1}, "day 与 day_start/day_end 不能同时给出"),
    (TARGETS, {"week": 7, "week_from": 7}, "week 与 week_from/week_to 不能同时给出"),
    (SLOTS, {"day_range": [1, 3], "day": 2}, "day_range 与 day/day_start/day_end 不能同时给出"),
    (SLOTS, {"duration": 2, "span": 3}, "duration=2 与其别名 span=3 不一致"),
    # filters that leave nothing
    (TARGETS, {"day_scope": "weekend", "day_of_week": [1]}, "没有共同的星期"),
    (SLOTS, {"after_section": 5, "before_section": 6}, "之间没有节次"),
    (SLOTS, {"exclude_sections": list(range(1, 13))}, "排除了全部节次"),
    # beyond the window's days and periods
    (SLOTS, {"day": 15}, "day=15 超出规划窗口（第1-14天）"),
    (TARGETS, {"exclude_sections": [13]}, "exclude_sections 含超出每天12节的节次：[13]"),
    (SLOTS, {"after_section": 13}, "after_section=13 超出每天12节的范围"),
    # ids and categories the window does not have
    (TARGETS, {"task_ids": [99]}, "task_ids 含不存在的任务：[99]"),
    (TARGETS, {"category": "体育课"}, "没有类别为「体育课」的任务"),
    (TARGETS, {"status": "done"}, "参数 status 取值无效"),
    # a task's own length
    (SLOTS, {"task_id": 11, "duration": 2}, "[11]复习线代 需3个连续时段，duration=2 不符"),
    # an unknown argument
    (TARGETS, {"enqueue": True}, "未知参数 enqueue"),
]


@pytest.mark.parametrize(("tool", "args", "words"), BAD_ARGS)
def test_bad_arguments_are_refused(sample_window: ScheduleState, tool, args, words):
    """Tests that each bad calendar argument gets success=false, error_code invalid_args (or the
    argument's own code), an error naming it, and leaves the state as it was."""
    before = sample_window.to_json()
    env = json.loads(Toolbox(sample_window).call(tool, args))
    assert env["success"] is False and env["error_code"] == "invalid_args", env
    assert words in env["error"], env["error"]
    assert sample_window.to_json() == before


def test_weeks_need_a_day_mapping():
    """Tests that a week or weekday filter on a window without a day mapping is refused, naming
    the arguments, while day filters still work."""
    data = load_window().to_dict()
    data["window"].pop("day_mapping")
    tb = Toolbox(ScheduleState.from_json(data))
    env = json.loads(tb.call(TARGETS, {"day_scope": "weekend", "week": 5}))
    assert env["success"] is False and "没有日历" in env["error"]
    assert "day_scope、week" in env["error"]
    assert _metrics(tb, TARGETS, {"day_start": 1, "day_end": 2})["selected_days"] == [[1, 2]]


def banned_window() -> ScheduleState:
    """One free Monday; a study item whose class bans half-day blocks 1 and 6 (periods 1-2 and
    11-12: the log's 复习概率论), placed on day 2."""
    data = oracle.remap(
        {
            "window": {"total_days": 7, "slots_per_day": 12},
            "tasks": [
                {
                    "state_id": 1,
                    "name": "第一章 随机事件与概率",
                    "category": "复习概率论",
                    "status": "suggested",
                    "category_id": 2,
                    "task_order": 1,
                    "slots": [{"day": 2, "slot_start": 3, "slot_end": 4}],
                }
            ],
            "task_classes": [
                {
                    "id": 2,
                    "name": "复习概率论",
                    "excluded_slots": [1, 6],
                    "allow_filler_course": True,
                }
            ],
        },
        5,
        1,
    )
    return ScheduleState.from_json(data)


def test_task_places_are_cut_by_the_class_bans():
    """Tests that a task's places on a free day whose two ends its class bans (blocks 1 and 6)
    are the ends of what is left (3-4 and 9-10), read from the state's class rules, and that
    exclude_sections cuts them further."""
    got = _metrics(Toolbox(banned_window()), SLOTS, {"task_id": 1, "day": 1})
    assert {(r["slot_start"], r["slot_end"]) for r in got["slots"]} == {(3, 4), (9, 10)}
    cut = _metrics(
        Toolbox(banned_window()), SLOTS, {"task_id": 1, "day": 1, "exclude_sections": [3, 10]}
    )
    assert {(r["slot_start"], r["slot_end"]) for r in cut["slots"]} == {(4, 5), (8, 9)}
