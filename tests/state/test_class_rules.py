"""Tests of the state model's reading of the reference system's state JSON (issue 42): every
field of a task class and a task, the calendar, and the one class-rule API
(:attr:`ScheduleState.class_rules`)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from smartflow_engine.state import ScheduleState, StateError, TaskClass
from smartflow_engine.state.calendar import parse_date
from smartflow_engine.state.class_rules import order_key

DATA = Path(__file__).parent.parent / "data"
ROOT = Path(__file__).parent.parent.parent
UPSTREAM = json.loads((DATA / "upstream_window.json").read_text(encoding="utf-8"))
SPEC = json.loads((DATA / "spec_example.json").read_text(encoding="utf-8"))


def upstream(**window: Any) -> dict[str, Any]:
    data = copy.deepcopy(UPSTREAM)
    data["window"].update(window)
    return data


def dated_upstream() -> ScheduleState:
    """The upstream window, week 3 Monday = 2026-09-21 (week 1's Monday 2026-09-07)."""
    return ScheduleState.from_json(upstream(semester_start="2026-09-07"))


def with_class(**fields: Any) -> ScheduleState:
    """The spec example with one task class (id 10, the pending task's class)."""
    data = copy.deepcopy(SPEC)
    data["task_classes"] = [{"id": 10, "name": "复习", **fields}]
    return ScheduleState.from_json(data)


# ---------------------------------------------------------------------------------- loading
def test_upstream_state_loads_with_every_field():
    """Tests that the reference system's state JSON (TaskClassMeta with Go's null lists, items
    with task_class_id, category_id and task_order, event_type, runtime_queue) loads, each
    field read with its meaning."""
    state = ScheduleState.from_json(UPSTREAM)
    algebra = state.task_class(21)
    assert algebra is not None
    assert (algebra.excluded_slots, algebra.excluded_days_of_week) == ([1, 6], [6, 7])
    assert algebra.allow_filler_course is False and algebra.difficulty_level == "high"
    english = state.task_class(22)
    assert english is not None and english.excluded_slots == [] and english.end_date is None
    item = state.task(5)
    assert item is not None and (item.task_class_id, item.task_order) == (21, 2)
    assert state.task(1).event_type == "course"  # type: ignore[union-attr]
    assert state.runtime_queue == UPSTREAM["runtime_queue"]


def test_upstream_state_round_trips():
    """Tests that an upstream state written out and read back is the same state, the task's
    class under the spec's name category_id."""
    state = dated_upstream()
    out = state.to_dict()
    assert out["tasks"][4]["category_id"] == 21 and "task_class_id" not in out["tasks"][4]
    again = ScheduleState.from_json(state.to_json())
    assert again.to_dict() == out
    assert again.window.semester_start == "2026-09-07"


def test_every_field_is_listed_in_the_decisions():
    """Tests that every field of the state format is named in docs/decisions.md's issue 42
    section (honoured or carrying nothing), so a field cannot be added silently."""
    text = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    section = text[text.index("## Issue 42") :]
    from smartflow_engine.state.model import DayMapping, SlotRange, Task, Window

    models = (ScheduleState, Window, DayMapping, Task, SlotRange, TaskClass)
    named = set(re.findall(r"`([a-z_]+)`", section))
    missing = [f"{m.__name__}.{f}" for m in models for f in m.model_fields if f not in named]
    assert not missing


@pytest.mark.parametrize(
    ("where", "path"),
    [
        ("state", []),
        ("window", ["window"]),
        ("day_mapping entry", ["window", "day_mapping", 0]),
        ("task", ["tasks", 4]),
        ("slot", ["tasks", 0, "slots", 0]),
        ("task class", ["task_classes", 0]),
    ],
)
def test_unknown_field_is_refused_by_name(where, path):
    """Tests that a field the format does not know is refused at load, naming it ({where})."""
    data = upstream()
    node: Any = data
    for key in path:
        node = node[key]
    node["priority_hint"] = 3
    with pytest.raises(StateError, match="unknown field 'priority_hint'"):
        ScheduleState.from_json(data)


def test_old_form_period_bans_are_refused_with_how_to_write_them():
    """Tests that a class in today's (pre-issue-42) form, excluded_slots as single periods and
    no allow_filler_course, is refused with a message saying how to write it either way."""
    data = copy.deepcopy(SPEC)
    data["task_classes"] = [{"id": 10, "name": "复习", "excluded_slots": [11, 12]}]
    with pytest.raises(StateError) as err:
        ScheduleState.from_json(data)
    text = str(err.value)
    assert "[10] 复习" in text and "excluded_periods [11, 12]" in text
    assert "half-day blocks" in text and "allow_filler_course" in text
    data["task_classes"] = [{"id": 10, "name": "复习", "excluded_periods": [11, 12]}]
    rule = ScheduleState.from_json(data).class_rules.of(10)
    assert rule is not None and rule.banned_periods == (11, 12)


def test_old_form_without_bans_keeps_its_meaning():
    """Tests that a class in today's form with no banned periods loads unchanged in meaning
    (its items may still embed in water courses)."""
    state = with_class(start_day=2, end_day=5, excluded_slots=[])
    rule = state.class_rules.of(10)
    assert rule is not None and rule.allow_filler and rule.banned_periods == ()
    assert (rule.first_day, rule.last_day) == (2, 5)


INVALID = [
    ({"excluded_slots": [7], "allow_filler_course": True}, "excluded_slots [7] outside 1-6"),
    ({"excluded_periods": [13]}, "excluded_periods [13] outside 1-12"),
    ({"excluded_days_of_week": [0, 8]}, "excluded_days_of_week [0, 8] outside 1-7"),
    ({"start_date": "2026/09/01"}, "start_date '2026/09/01' is not a date written YYYY-MM-DD"),
    ({"end_date": "2026-02-30"}, "end_date '2026-02-30' is not a real date"),
    ({"start_date": "2026-10-02", "end_date": "2026-10-01"}, "is after end_date"),
    ({"difficulty_level": "extreme"}, "difficulty_level"),
    ({"subject_type": "art"}, "subject_type"),
]


@pytest.mark.parametrize(("fields", "message"), INVALID)
def test_bad_class_values_are_refused(fields, message):
    """Tests that a task class value outside its meaning is refused, naming it."""
    with pytest.raises(StateError, match=re.escape(message)):
        with_class(**fields)


def test_weekday_bans_need_a_day_mapping():
    """Tests that banned weekdays on a window without a day mapping are refused (nothing says
    which day is a Saturday), not ignored."""
    data = copy.deepcopy(SPEC)
    del data["window"]["day_mapping"]
    data["task_classes"] = [{"id": 10, "name": "复习", "excluded_days_of_week": [6]}]
    with pytest.raises(StateError, match=r"needs window\.day_mapping"):
        ScheduleState.from_json(data)


def test_category_id_is_task_class_ids_alias():
    """Tests that category_id and task_class_id name the same field: either is read, equal
    values are fine, different ones refused; task_order 0 means none (as upstream)."""
    base = {"state_id": 9, "name": "x", "status": "pending", "duration": 1}
    data = copy.deepcopy(SPEC)
    data["tasks"].append({**base, "task_class_id": 4, "task_order": 0})
    task = ScheduleState.from_json(data).task(9)
    assert task is not None and task.category_id == 4 and task.task_order is None
    data["tasks"][-1] = {**base, "task_class_id": 4, "category_id": 5}
    with pytest.raises(StateError, match="task_class_id 4 and category_id 5 differ"):
        ScheduleState.from_json(data)


# ---------------------------------------------------------------------------------- calendar
def test_semester_start_dates_every_day():
    """Tests that the date of week 1's Monday dates each day from its (week, weekday)."""
    state = dated_upstream()
    cal = state.calendar
    assert cal.has_dates and cal.source == "semester_start"
    assert cal.date(1) == parse_date("2026-09-21") and cal.weekday(1) == 1
    assert cal.date(14) == parse_date("2026-10-04") and cal.week(14) == 4


def test_dates_per_day_win_and_must_agree():
    """Tests that a date on every day_mapping entry dates the window; a date whose weekday is
    not its entry's, a partial set, or a semester start that disagrees is refused."""
    data = upstream()
    for i, entry in enumerate(data["window"]["day_mapping"]):
        entry["date"] = f"2026-09-{21 + i:02d}" if i < 10 else f"2026-10-{i - 9:02d}"
    state = ScheduleState.from_json(data)
    assert state.calendar.source == "day_mapping" and state.calendar.date(3).day == 23
    bad = copy.deepcopy(data)
    bad["window"]["day_mapping"][2]["date"] = "2026-09-24"
    with pytest.raises(StateError, match="day 3 is dated 2026-09-24"):
        ScheduleState.from_json(bad)
    bad = copy.deepcopy(data)
    del bad["window"]["day_mapping"][5]["date"]
    with pytest.raises(StateError, match="day 6 has no date"):
        ScheduleState.from_json(bad)
    bad = copy.deepcopy(data)
    bad["window"]["semester_start"] = "2026-09-14"
    with pytest.raises(StateError, match="is 2026-09-28"):
        ScheduleState.from_json(bad)
    with pytest.raises(StateError, match="not a Monday"):
        ScheduleState.from_json(upstream(semester_start="2026-09-08"))


def test_unknown_dates_are_said_not_silently_dropped():
    """Tests that class dates on a window without dates are not applied and the rules say so
    (a notice per class), and that giving the semester start applies them."""
    state = ScheduleState.from_json(UPSTREAM)
    notices = {(n.kind, n.class_id) for n in state.class_rules.notices}
    assert notices == {("dates_unknown", 21), ("dates_unknown", 22)}
    assert "cannot be honoured" in state.class_rules.notices[0].text
    assert state.class_rules.of(22).first_day == 1  # type: ignore[union-attr]
    assert state.apply_semester_start("2026-09-07")
    assert not state.class_rules.notices
    assert state.class_rules.of(22).first_day == 3  # type: ignore[union-attr]  # 2026-09-23
    assert not state.apply_semester_start("2026-09-14")  # the window has its own now


# ---------------------------------------------------------------------------------- the grid
def test_allowed_grid_reads_blocks_weekdays_and_dates():
    """Tests the allowed (day, period) grid of a class: half-day blocks 1 and 6 ban periods
    1-2 and 11-12, Saturdays and Sundays are out, and so are days after its end date."""
    state = dated_upstream()
    task = state.task(5)
    assert task is not None
    grid = state.class_rules.allowed(task)
    periods = [p for p in range(1, 13) if grid[0, p - 1]]
    assert periods == list(range(3, 11))
    days = [d for d in range(1, 15) if grid[d - 1].any()]
    assert days == [1, 2, 3, 4, 5, 8, 9, 10, 11, 12]  # 2026-10-02 (day 12) is the end date
    assert not state.class_rules.may_embed(task)
    starts = state.class_rules.allowed_starts(task, 3)
    assert starts[0, 2] and starts[0, 7] and not starts[0, 8]  # 9-11 reaches block 6


def test_breach_names_the_rule_in_order_of_the_day_then_the_periods():
    """Tests that a place breaking a class rule is told apart: outside the class's days, on a
    banned weekday, on banned periods; a legal place breaks nothing."""
    state = dated_upstream()
    task = state.task(5)
    assert task is not None
    rules = state.class_rules
    assert rules.breach(task, 13, 3, 4).kind == "class_window"  # type: ignore[union-attr]
    assert rules.breach(task, 6, 3, 4).kind == "banned_weekday"  # type: ignore[union-attr]
    hit = rules.breach(task, 2, 10, 11)
    assert hit is not None and (hit.kind, hit.periods) == ("banned_period", (11,))
    assert rules.breach(task, 2, 5, 6) is None
    # running late lifts the end date only: day 13 (past it) is then refused as a Saturday
    late = rules.breach(task, 13, 3, 4, allow_late=True)
    assert late is not None and late.kind == "banned_weekday"
    assert rules.breach(task, 12, 1, 2, allow_late=True).kind == "banned_period"  # type: ignore[union-attr]


def test_a_task_without_a_listed_class_has_no_grid_rule():
    """Tests that a task whose class is not listed may go anywhere and embed."""
    state = dated_upstream()
    data = state.to_dict()
    data["task_classes"] = []
    bare = ScheduleState.from_json(data)
    task = bare.task(5)
    assert task is not None and bare.class_rules.allowed(task).all()
    assert bare.class_rules.may_embed(task) and bare.class_rules.breach(task, 6, 1, 2) is None


# ---------------------------------------------------------------------------------- the order
def test_order_window_and_breach():
    """Tests the order rule: a later item must start after every placed earlier one ends and
    end before every placed later one starts, in (day, period) order."""
    state = dated_upstream()
    rules = state.class_rules
    second, third = state.task(5), state.task(6)
    assert second is not None and third is not None
    assert [t.state_id for t in rules.predecessors(third)] == [4, 5]
    after, before = rules.order_window(second)
    assert after == ((1, 4), 4) and before is None  # [4] ends on day 1 period 4
    from smartflow_engine.state import SlotRange

    here = [SlotRange(day=1, slot_start=4, slot_end=5)]
    hit = rules.order_breach(second, {5: here})
    assert hit is not None and (hit.kind, hit.other_id) == ("order_after", 4)
    assert rules.order_breach(second, {5: [SlotRange(day=1, slot_start=5, slot_end=6)]}) is None
    # [6] placed on day 2 and [5] after it: [5] must precede [6]
    where = {
        6: [SlotRange(day=2, slot_start=5, slot_end=6)],
        5: [SlotRange(day=3, slot_start=5, slot_end=6)],
    }
    hit = rules.order_breach(second, where)
    assert hit is not None and (hit.kind, hit.other_id) == ("order_before", 6)


def test_order_holds_only_for_study_items_with_both_fields():
    """Tests that events and items without an order or a class are outside the order rule."""
    state = dated_upstream()
    assert order_key(state.task(1)) is None  # type: ignore[arg-type]
    assert order_key(state.task(5)) == (21, 2)  # type: ignore[arg-type]


def test_rules_are_arrays_the_solver_can_read():
    """Tests that each class's rule exposes its days and periods as boolean arrays of the
    window's shape, read-only."""
    state = dated_upstream()
    for rule in state.class_rules.all():
        assert rule.days.shape == (14,) and rule.periods.shape == (12,)
        assert rule.days.dtype == np.bool_ and not rule.days.flags.writeable
        assert rule.grid().shape == (14, 12)
