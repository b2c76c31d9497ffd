"""Tests of load_window on rows of SmartFlow-Agent's tables written directly (not through
seed_from_state): the spec's mapping rules §3.3 as schedule_state.go derives them, section
compression §3.4 and the day mapping §3.5."""

from __future__ import annotations

from typing import Any

import pytest

from smartflow_engine.store import Store, StoreError
from smartflow_engine.store import models as m
from tests.helpers.store import OTHER_USER, USER, stored
from tests.helpers.windows import load_window

WEEK5 = [{"day_index": d, "week": 5, "day_of_week": d} for d in range(1, 8)]


def _add(store: Store, *rows: Any) -> None:
    with store.session(write=True) as s:
        for row in rows:
            s.add(row)
            s.flush()


def _periods(
    store: Store,
    user: int,
    event_id: int,
    week: int,
    dow: int,
    sections: Any,
    guest: int | None = None,
) -> None:
    _add(
        store,
        *[
            m.Schedule(
                user_id=user,
                event_id=event_id,
                week=week,
                day_of_week=dow,
                section=s,
                embedded_task_id=guest,
            )
            for s in sections
        ],
    )


def _cls(id: int, name: str, user: int = USER, **kw: Any) -> m.TaskClass:
    return m.TaskClass(id=id, user_id=user, name=name, mode="auto", **kw)


def _item(
    id: int, cid: int, content: str, status: int | None = 1, duration: int | None = None, **kw: Any
) -> list[Any]:
    rows: list[Any] = [m.TaskItem(id=id, category_id=cid, content=content, status=status, **kw)]
    if duration is not None:
        rows.append(m.Extension(kind="task_item", ref_id=id, data={"duration": duration}))
    return rows


def test_spec_example_rows_load_as_the_spec_state(store: Store):
    """Tests that the rows behind the spec's §3.1 example (courses per period, a pending task
    item of class 学习) load as exactly that JSON."""
    spec = load_window("spec_example")
    _add(
        store,
        _cls(10, "学习"),
        *_item(201, 10, "复习线代", duration=3),
        m.ScheduleEvent(id=101, user_id=USER, name="高等数学", type="course"),
        m.ScheduleEvent(
            id=102, user_id=USER, name="思政（水课）", type="course", can_be_embedded=True
        ),
    )
    for week, dow in [(5, 1), (5, 4), (6, 1)]:
        _periods(store, USER, 101, week, dow, [1, 2])
    _periods(store, USER, 102, 5, 2, [2, 1])  # row order does not matter
    state = store.load_window(USER, spec.window.day_mapping)
    assert stored(state) == stored(spec)


@pytest.mark.parametrize(
    "kind,embeddable,ext,want_locked,want_category",
    [
        ("course", False, None, True, "课程"),  # a course is locked
        ("course", True, None, False, "课程"),  # a water course is not
        ("task", False, None, False, "任务"),  # a task event of no item: the backend's 任务
        ("course", False, {"locked": False}, False, "课程"),  # our extension's lock override
        ("task", False, {"category": "活动"}, False, "活动"),  # our extension's category
    ],
)
def test_locked_and_category_follow_the_spec(
    store: Store,
    kind: str,
    embeddable: bool,
    ext: dict[str, Any] | None,
    want_locked: bool,
    want_category: str,
):
    """Tests §3.3 as schedule_state.go: locked = type course and not can_be_embedded, category
    课程 for a course else 任务; the extension table's override wins when there is one."""
    rows: list[Any] = [
        m.ScheduleEvent(id=40, user_id=USER, name="x", type=kind, can_be_embedded=embeddable)
    ]
    if ext is not None:
        rows.append(m.Extension(kind="event", ref_id=40, data=ext))
    _add(store, *rows)
    _periods(store, USER, 40, 5, 3, [5, 6])
    (task,) = store.load_window(USER, WEEK5).tasks
    assert (task.locked, task.category, task.can_embed) == (want_locked, want_category, embeddable)
    assert [(b.day, b.slot_start, b.slot_end) for b in task.slots] == [(3, 5, 6)]


@pytest.mark.parametrize(
    "duration,total,count,expected",
    [
        (3, 10, 4, 3),  # the item's own duration (our extension)
        (None, 10, 4, 2),  # total_slots / items = 10 // 4
        (None, 9, 2, 4),  # 9 // 2
        (None, 100, 2, 12),  # capped at the periods of a day
        (None, None, 3, 2),  # no budget: fixed 2
    ],
)
def test_pending_duration_follows_the_spec(
    store: Store, duration: int | None, total: int | None, count: int, expected: int
):
    """Tests §3.3: a pending item's duration is its own, else TotalSlots / item count, else 2."""
    _add(store, _cls(1, "复习", total_slots=total))
    _add(store, *[r for i in range(count) for r in _item(10 + i, 1, f"项{i}", duration=duration)])
    state = store.load_window(USER, WEEK5)
    assert [t.duration for t in state.tasks] == [expected] * count
    assert all(t.status == "pending" and t.category == "复习" for t in state.tasks)


def test_sections_compress_to_runs_and_days_map_back(store: Store):
    """Tests §3.4/§3.5: periods 1,2,3 and 5 on (week 6, Tuesday) become blocks 1-3 and 5 on the
    window day that maps to that date; rows outside the window are not loaded."""
    mapping = [
        {"day_index": 1, "week": 5, "day_of_week": 7},
        {"day_index": 2, "week": 6, "day_of_week": 1},
        {"day_index": 3, "week": 6, "day_of_week": 2},
    ]
    _add(store, m.ScheduleEvent(id=5, user_id=USER, name="实验", type="course"))
    _periods(store, USER, 5, 6, 2, [3, 1, 5, 2])
    _periods(store, USER, 5, 6, 3, [1, 2])  # the day after the window
    _periods(store, USER, 5, 5, 6, [1, 2])  # the day before
    (task,) = store.load_window(USER, mapping).tasks
    assert [(b.day, b.slot_start, b.slot_end) for b in task.slots] == [(3, 1, 3), (3, 5, 5)]


def test_an_event_outside_the_window_is_not_loaded(store: Store):
    """Tests that events whose periods all lie outside the window are not part of it."""
    _add(store, m.ScheduleEvent(id=5, user_id=USER, name="下周的课", type="course"))
    _periods(store, USER, 5, 6, 1, [1, 2])
    assert store.load_window(USER, WEEK5).tasks == []


def test_a_host_run_with_two_guests_is_split_between_them(store: Store):
    """Tests that one run of a water course holding two guests (host rows carrying two item
    ids) loads as two host blocks, one guest in each, the guests existing with no event."""
    _add(
        store,
        _cls(1, "复习"),
        *_item(11, 1, "单词", status=2),
        *_item(12, 1, "听力", status=2),
        m.ScheduleEvent(id=1, user_id=USER, name="思政", type="course", can_be_embedded=True),
    )
    _periods(store, USER, 1, 5, 2, [1], guest=11)
    _periods(store, USER, 1, 5, 2, [2, 3])
    _periods(store, USER, 1, 5, 2, [4], guest=12)
    state = store.load_window(USER, WEEK5)
    host, guest_a, guest_b = state.tasks
    assert [(b.slot_start, b.slot_end) for b in host.slots] == [(1, 1), (2, 4)]
    assert (guest_a.source, guest_a.source_id, guest_a.embed_host) == ("task_item", 11, 1)
    assert (guest_b.status, guest_b.slots[0].slot_start, guest_b.embed_host) == ("existing", 4, 1)
    assert state.grid.occupied().sum() == 4  # guests add nothing to occupancy


def test_class_windows_map_to_day_indexes_and_clamp(store: Store):
    """Tests that a class window (our extension's teaching-week days) starting before and ending
    inside the planning window maps to days 1..its end day; a class whose window misses the
    planning window keeps its pending items out; an applied item outside the window is not
    loaded; a class that constrains nothing is not listed."""
    _add(
        store,
        _cls(1, "复习", strategy="steady"),
        _cls(2, "往期"),
        _cls(3, "杂项"),
        m.Extension(
            kind="task_class",
            ref_id=1,
            data={
                "start": {"week": 4, "day_of_week": 3},
                "end": {"week": 5, "day_of_week": 5},
                "excluded_periods": [12],
            },
        ),
        m.Extension(
            kind="task_class",
            ref_id=2,
            data={"start": {"week": 1, "day_of_week": 1}, "end": {"week": 2, "day_of_week": 7}},
        ),
    )
    _add(
        store,
        *_item(1, 1, "a", duration=2),
        *_item(2, 2, "b", duration=2),
        *_item(3, 3, "c", duration=2),
        *_item(
            4,
            1,
            "d",
            status=2,
            embedded_time={"week": 9, "day_of_week": 1, "section_from": 1, "section_to": 2},
        ),
    )
    state = store.load_window(USER, WEEK5)
    assert [t.name for t in state.tasks] == ["a", "c"]
    (tc,) = state.task_classes
    assert (tc.id, tc.start_day, tc.end_day, tc.excluded_periods) == (1, 1, 5, [12])


def test_task_class_filter_limits_pending_work_only(store: Store):
    """Tests that task_class_ids restricts the pending items loaded, while placed tasks of other
    classes still occupy their periods."""
    _add(
        store,
        *[_cls(i, f"类{i}") for i in (1, 2)],
    )
    _add(
        store,
        *_item(1, 1, "a", duration=1),
        *_item(2, 2, "b", duration=1),
        *_item(3, 2, "c", status=2),
        m.ScheduleEvent(
            id=9, user_id=USER, name="c", type="task", rel_id=3, task_source_type="task_item"
        ),
    )
    _periods(store, USER, 9, 5, 1, [1])
    state = store.load_window(USER, WEEK5, task_class_ids=[1])
    assert [(t.name, t.status) for t in state.tasks] == [("a", "pending"), ("c", "existing")]


def test_state_ids_follow_source_ids(store: Store):
    """Tests that state ids are assigned 1.. by (source_id, source), whatever the insert order."""
    _add(
        store,
        _cls(1, "类"),
        *_item(7, 1, "item7", duration=1),
        m.ScheduleEvent(id=9, user_id=USER, name="event9", type="course"),
        m.ScheduleEvent(id=3, user_id=USER, name="event3", type="course"),
        *_item(3, 1, "item3", duration=1),
    )
    _periods(store, USER, 9, 5, 1, [1])
    _periods(store, USER, 3, 5, 1, [2])
    state = store.load_window(USER, WEEK5)
    assert [(t.state_id, t.name) for t in state.tasks] == [
        (1, "event3"),
        (2, "item3"),
        (3, "item7"),
        (4, "event9"),
    ]


def test_other_users_rows_are_invisible(store: Store):
    """Tests that rows of another user in the same weeks never reach this user's window."""
    _add(
        store,
        m.ScheduleEvent(id=1, user_id=OTHER_USER, name="别人的课", type="course"),
        _cls(1, "别人的类", user=OTHER_USER),
    )
    _add(store, *_item(1, 1, "别人的任务"))
    _periods(store, OTHER_USER, 1, 5, 1, [1, 2])
    assert store.load_window(USER, WEEK5).tasks == []
    assert len(store.load_window(OTHER_USER, WEEK5).tasks) == 2


def test_a_section_beyond_the_day_is_refused_on_load(store: Store):
    """Tests that a stored period outside 1..slots_per_day is reported, not silently dropped."""
    _add(store, m.ScheduleEvent(id=1, user_id=USER, name="课", type="course"))
    _periods(store, USER, 1, 5, 2, [12, 13])
    with pytest.raises(StoreError, match="section 13"):
        store.load_window(USER, WEEK5)
