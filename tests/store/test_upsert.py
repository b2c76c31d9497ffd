"""Tests of the upsert_task_class tool and Store.upsert_task_class: create, update, post-write
validation with rollback, another user's id, missing store, argument errors, the confirm gate."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from sqlalchemy import select

from smartflow_engine import Toolbox
from smartflow_engine.store import ISSUE_CODES, Store
from smartflow_engine.store import models as m
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.store import OTHER_USER, USER, table_rows

REPLY_KEYS = {
    "tool",
    "success",
    "task_class_id",
    "created",
    "validation",
    "source",
    "error",
    "error_code",
}
WEEK5_6 = [
    {"day_index": d, "week": 5 + (d - 1) // 7, "day_of_week": (d - 1) % 7 + 1} for d in range(1, 15)
]

VALID: dict[str, Any] = {
    "task_class": {
        "name": "考研英语",
        "start": {"week": 5, "day_of_week": 3},
        "end": {"week": 8, "day_of_week": 7},
        "total_slots": 20,
        "strategy": "steady",
        "tolerance_preference": "normal",
        "excluded_slots": [11, 12],
        "time_of_day": "morning",
        "milestones": ["第6周完成词汇"],
    },
    "items": [
        {"content": "背单词", "duration": 2, "priority": 1},
        {"content": "真题阅读", "duration": 3, "depends_on": ["背单词"]},
        {"content": "作文模板"},  # no duration: total_slots / items = 6
    ],
    "source": "chat",
}


def _call(store: Store | None, args: dict[str, Any], user: int | None = USER) -> dict[str, Any]:
    # The user confirmed: a bare Toolbox runs a confirm-required tool only with confirm=True.
    reply = Toolbox(None, store=store, user_id=user).call("upsert_task_class", args, confirm=True)
    out: dict[str, Any] = json.loads(reply)
    return out


def _create(store: Store, user: int = USER) -> int:
    out = _call(store, VALID, user)
    assert out["success"], out
    class_id: int = out["task_class_id"]
    return class_id


def test_create_writes_the_class_and_its_items(store: Store):
    """Tests that id=0 creates the class and its items in the user's rows and replies with the
    new id, created=true and a passed validation, in the spec's reply shape."""
    out = _call(store, VALID)
    assert set(out) == REPLY_KEYS
    assert (out["success"], out["created"], out["validation"], out["error_code"]) == (
        True,
        True,
        {"ok": True, "issues": []},
        "",
    )
    with store.session() as s:
        row = s.get(m.TaskClass, out["task_class_id"])
        items = s.scalars(
            select(m.TaskItem)
            .where(m.TaskItem.category_id == out["task_class_id"])
            .order_by(m.TaskItem.order)
        ).all()
        ext = _ext(s, "task_class", [out["task_class_id"]])[out["task_class_id"]]
        item_ext = _ext(s, "task_item", [i.id for i in items])
    assert row is not None and row.user_id == USER
    # the backend's columns take what they hold; single banned periods are not half-day blocks
    assert (row.name, row.total_slots, row.strategy, row.excluded_slots, row.mode) == (
        "考研英语",
        20,
        "steady",
        None,
        "auto",
    )
    assert ext == {
        "start": {"week": 5, "day_of_week": 3},
        "end": {"week": 8, "day_of_week": 7},
        "excluded_periods": [11, 12],
        "tolerance_preference": ext["tolerance_preference"],
        "time_of_day": "morning",
        "milestones": ["第6周完成词汇"],
        "source": "chat",
    }
    assert [(i.content, i.status, i.order) for i in items] == [
        ("背单词", 1, 1),
        ("真题阅读", 1, 2),
        ("作文模板", 1, 3),
    ]
    assert [item_ext.get(i.id, {}).get("duration") for i in items] == [2, 3, None]
    assert item_ext[items[1].id]["depends_on"] == ["背单词"]


def _ext(s: Any, kind: str, ids: list[int]) -> dict[int, dict[str, Any]]:
    from smartflow_engine.store.load import extensions

    return extensions(s, kind, ids)


def test_created_class_loads_into_a_window(store: Store):
    """Tests that a created class and its pending items appear in load_window, the window mapped
    onto day indexes (week 5 Wednesday = day 3) and the item without duration given 20 // 3."""
    class_id = _create(store)
    state = store.load_window(USER, WEEK5_6)
    (tc,) = state.task_classes
    assert (tc.id, tc.name, tc.start_day, tc.end_day, tc.excluded_periods) == (
        class_id,
        "考研英语",
        3,
        14,
        [11, 12],
    )
    assert [(t.name, t.status, t.duration) for t in state.tasks] == [
        ("背单词", "pending", 2),
        ("真题阅读", "pending", 3),
        ("作文模板", "pending", 6),
    ]


def test_update_keeps_the_id_and_matches_items(store: Store):
    """Tests that id>0 updates in place: given fields change, others stay; items are matched by
    content (no duplicates), a new one is added, items not sent are kept."""
    class_id = _create(store)
    out = _call(
        store,
        {
            "id": class_id,
            "task_class": {"total_slots": 24, "excluded_slots": []},
            "items": [
                {"content": "真题阅读", "duration": 4},
                {"content": "听力精听", "duration": 2},
            ],
        },
    )
    assert (out["success"], out["task_class_id"], out["created"]) == (True, class_id, False)
    with store.session() as s:
        row = s.get(m.TaskClass, class_id)
        rows = s.execute(
            select(m.TaskItem.id, m.TaskItem.content)
            .where(m.TaskItem.category_id == class_id)
            .order_by(m.TaskItem.order)
        ).all()
        ext = _ext(s, "task_item", [r[0] for r in rows])
        class_ext = _ext(s, "task_class", [class_id])[class_id]
    assert row is not None
    assert (row.name, row.total_slots, class_ext["excluded_periods"], row.strategy) == (
        "考研英语",
        24,
        [],
        "steady",
    )
    items = [(c, ext.get(i, {}).get("duration")) for i, c in rows]
    assert items == [("背单词", 2), ("真题阅读", 4), ("作文模板", None), ("听力精听", 2)]


def test_update_by_item_id_renames(store: Store):
    """Tests that an item given by id is updated (renamed) rather than created."""
    class_id = _create(store)
    with store.session() as s:
        item_id = s.scalars(select(m.TaskItem.id).where(m.TaskItem.content == "作文模板")).one()
    out = _call(
        store,
        {
            "id": class_id,
            "task_class": {},
            "items": [{"id": item_id, "content": "大作文模板", "duration": 2}],
        },
    )
    assert out["success"], out
    with store.session() as s:
        item = s.get(m.TaskItem, item_id)
        count = len(s.scalars(select(m.TaskItem.id)).all())
        duration = _ext(s, "task_item", [item_id])[item_id]["duration"]
    assert item is not None and (item.content, duration) == ("大作文模板", 2) and count == 3


def _with(path: str, value: Any) -> dict[str, Any]:
    """VALID with the value at a dotted path ("task_class.name", "items.0.duration") replaced;
    the value ``...`` deletes the key."""
    args = copy.deepcopy(VALID)
    node: Any = args
    *parents, last = path.split(".")
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is ...:
        del node[int(last) if last.isdigit() else last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return args


INVALID = [
    (_with("task_class.name", "   "), "missing_field", "task_class.name"),  # blank name
    (_with("task_class.start", ...), "missing_field", "task_class.start"),  # no start
    (_with("task_class.total_slots", ...), "missing_field", "task_class.total_slots"),  # no budget
    (_with("task_class.strategy", ...), "missing_field", "task_class.strategy"),  # no strategy
    # key fields of p1 §4.8: no tolerance preference, no banned-period list
    (
        _with("task_class.tolerance_preference", ...),
        "missing_field",
        "task_class.tolerance_preference",
    ),
    (_with("task_class.excluded_slots", ...), "missing_field", "task_class.excluded_slots"),
    (_with("items", []), "missing_field", "items"),  # a class without items
    (
        _with("task_class.end", {"week": 4, "day_of_week": 1}),
        "time_window_reversed",
        "task_class.end",
    ),  # ends before it starts
    (
        _with("task_class.end", {"week": 40, "day_of_week": 1}),
        "time_window_too_long",
        "task_class.end",
    ),  # over half a year
    (
        _with("task_class.total_slots", 6),
        "total_slots_too_small",
        "task_class.total_slots",
    ),  # 6 < 2 + 3 + 6 // 3
    (_with("task_class.total_slots", 0), "invalid_value", "task_class.total_slots"),  # no budget
    (
        _with("task_class.total_slots", 1000),
        "total_slots_exceeds_window",
        "task_class.total_slots",
    ),  # 26 days × 10 allowed periods = 260
    (
        _with("task_class.excluded_slots", [13]),
        "slot_out_of_range",
        "task_class.excluded_slots",
    ),  # a 13th period
    (
        _with("task_class.excluded_slots", [3, 3]),
        "duplicate_value",
        "task_class.excluded_slots",
    ),  # listed twice
    (
        _with("task_class.excluded_slots", list(range(1, 13))),
        "no_allowed_slot",
        "task_class.excluded_slots",
    ),  # every period banned
    (
        _with("task_class.excluded_slots", [3, 6, 9, 12]),
        "duration_exceeds_allowed_run",
        "items[1].duration",
    ),  # 3 periods, longest allowed run 2
    (_with("items.1.content", "背单词"), "duplicate_item_name", "items[1].content"),  # same name
    (_with("items.0.content", " "), "missing_field", "items[0].content"),  # blank item
    (_with("items.0.duration", 13), "invalid_value", "items[0].duration"),  # longer than a day
    (
        _with("items.1.depends_on", ["口语"]),
        "unknown_dependency",
        "items[1].depends_on",
    ),  # no such item
    (_with("items.1.depends_on", ["真题阅读"]), "self_dependency", "items[1].depends_on"),  # itself
    (
        _with("items.0.depends_on", ["真题阅读"]),
        "dependency_cycle",
        "items[1].depends_on",
    ),  # 背单词 ↔ 真题阅读: reported where the cycle closes
]


@pytest.mark.parametrize("args,code,field", INVALID)
def test_validation_failure_rolls_back_with_repairable_issues(
    store: Store, args: dict[str, Any], code: str, field: str
):
    """Tests that a write failing the post-write validation is rolled back (no row written) and
    replies success=false, error_code validation_failed and an issue naming the field to fix."""
    before = table_rows(store)
    out = _call(store, args)
    assert (out["success"], out["error_code"], out["created"]) == (
        False,
        "validation_failed",
        False,
    )
    assert out["validation"]["ok"] is False
    issues = {(i["code"], i["field"]) for i in out["validation"]["issues"]}
    assert (code, field) in issues, out["validation"]["issues"]
    assert all(i["message"] and i["code"] in ISSUE_CODES for i in out["validation"]["issues"])
    assert table_rows(store) == before


def test_duplicate_class_name_is_an_issue(store: Store):
    """Tests that creating a second class with a name the user already uses fails validation,
    while another user may use the same name."""
    _create(store)
    out = _call(store, VALID)
    assert ("duplicate_class_name", "task_class.name") in {
        (i["code"], i["field"]) for i in out["validation"]["issues"]
    }
    assert _call(store, VALID, OTHER_USER)["success"]


def test_failed_update_keeps_the_stored_class(store: Store):
    """Tests that an update failing validation leaves the class and its items as they were and
    names the class in the reply."""
    class_id = _create(store)
    before = table_rows(store)
    out = _call(
        store,
        {
            "id": class_id,
            "task_class": {"total_slots": 3},
            "items": [{"content": "新增项", "duration": 2}],
        },
    )
    assert (out["success"], out["task_class_id"], out["error_code"]) == (
        False,
        class_id,
        "validation_failed",
    )
    assert table_rows(store) == before


def test_another_users_class_reads_as_not_found(store: Store):
    """Tests that updating another user's class replies not_found exactly as for an id that does
    not exist, and changes nothing."""
    theirs = _create(store, OTHER_USER)
    before = table_rows(store)
    out = _call(store, {"id": theirs, "task_class": {"name": "改名"}})
    missing = _call(store, {"id": theirs + 1000, "task_class": {"name": "改名"}})
    assert (out["success"], out["error_code"], out["task_class_id"]) == (False, "not_found", None)
    assert out["error"].replace(str(theirs), "N") == missing["error"].replace(
        str(theirs + 1000), "N"
    )
    assert table_rows(store) == before


def test_an_item_of_another_class_is_not_found(store: Store):
    """Tests that naming an item id outside the class is refused with nothing written."""
    first = _create(store)
    second = _call(store, {**VALID, "task_class": {**VALID["task_class"], "name": "数学"}})
    with store.session() as s:
        foreign = s.scalars(
            select(m.TaskItem.id).where(m.TaskItem.category_id == second["task_class_id"])
        ).first()
    before = table_rows(store)
    out = _call(store, {"id": first, "task_class": {}, "items": [{"id": foreign, "content": "x"}]})
    assert (out["success"], out["error_code"]) == (False, "not_found")
    assert str(foreign) in out["error"]
    assert table_rows(store) == before


@pytest.mark.parametrize(
    "store_given,user,code",
    [
        (False, USER, "no_database"),  # the Toolbox has no database
        (True, None, "no_user"),  # the Toolbox does not know whose data it is
    ],
)
def test_without_store_or_user_nothing_is_written(
    store: Store, store_given: bool, user: int | None, code: str
):
    """Tests that without a configured store or user the tool replies success=false with a
    stable error code, in the same reply shape."""
    before = table_rows(store)
    out = _call(store if store_given else None, VALID, user)
    assert set(out) == REPLY_KEYS
    assert (out["success"], out["error_code"]) == (False, code) and out["error"]
    assert table_rows(store) == before


@pytest.mark.parametrize(
    "args",
    [
        _with("task_class.strategy", "fast"),  # not steady / rapid
        _with("task_class.tolerance_preference", "loose"),  # not strict / normal / relaxed
        _with("task_class.start", {"week": 0, "day_of_week": 1}),  # week 0
        _with("task_class.end", {"week": 5, "day_of_week": 8}),  # no eighth weekday
        _with("task_class.total_slots", "20"),  # a string, not an integer
        _with("task_class.excluded_slots", list(range(25))),  # over 24 entries
        _with("items", [{"content": f"项{i}"} for i in range(51)]),  # over 50 items per call
        _with("items.0.priority", 9),  # priorities are 1-5
        _with("source", "email"),  # chat / memory / web only
        {**VALID, "owner": 3},  # unknown argument
        {"id": -1, "task_class": {}},  # negative id
        {"items": []},  # task_class missing
    ],
)
def test_bad_arguments_are_refused_before_any_write(store: Store, args: dict[str, Any]):
    """Tests that ill-typed or out-of-bound arguments are refused by the argument model with
    error_code invalid_args, and nothing is written."""
    before = table_rows(store)
    out = _call(store, args)
    assert (out["success"], out["error_code"]) == (False, "invalid_args") and out["error"]
    assert table_rows(store) == before


def test_confirm_gate_holds_the_write_until_confirmed(store: Store):
    """Tests that through a session the call is held for confirmation: nothing is written when
    held or rejected, and the class is written once confirmed."""
    session = Session(None, store=store, db_user_id=USER)
    held = session.invoke("upsert_task_class", VALID)
    assert held.status == "pending_confirm" and held.confirm_token
    assert store.row_counts()["task_classes"] == 0
    rejected = session.reject(held.confirm_token)
    assert rejected.status == "rejected" and store.row_counts()["task_classes"] == 0
    again = session.invoke("upsert_task_class", VALID)
    assert again.confirm_token is not None
    done = json.loads(session.confirm(again.confirm_token).reply)
    assert done["success"] and done["created"]
    assert store.row_counts(USER) == {
        "task_classes": 1,
        "task_items": 3,
        "schedule_events": 0,
        "schedules": 0,
    }


def test_works_beside_a_loaded_window(store: Store):
    """Tests that with a window loaded the tool still writes the class and leaves the window's
    state and change log untouched (the class reaches a window on its next load)."""
    state = store.load_window(USER, WEEK5_6)
    tb = Toolbox(state, store=store, user_id=USER, self_check=True)
    before = state.to_dict()
    out = json.loads(tb.call("upsert_task_class", VALID, confirm=True))
    assert out["success"] and tb.changes == [] and state.to_dict() == before
    assert len(store.load_window(USER, WEEK5_6).tasks) == 3


def test_error_reply_has_the_tools_shape():
    """Tests that the tool's error reply (for refusals decided before the handler runs) has the
    same keys as its other replies."""
    from smartflow_engine.tools_adapter.tools.store import error_reply

    out = json.loads(error_reply("invalid_args", "参数错误"))
    assert set(out) == REPLY_KEYS
    assert (out["success"], out["error_code"], out["validation"]) == (
        False,
        "invalid_args",
        {"ok": False, "issues": []},
    )


def test_source_is_echoed(store: Store):
    """Tests that the reply echoes the call's source (p1 §4.9: 用于审计与回显), and null when
    the call gave none."""
    assert _call(store, VALID)["source"] == "chat"
    other = {**VALID, "task_class": {**VALID["task_class"], "name": "数学"}, "source": "memory"}
    assert _call(store, other)["source"] == "memory"
    failed = _call(store, _with("task_class.strategy", ...))
    assert failed["success"] is False and failed["source"] == "chat"
    assert _call(store, {k: v for k, v in VALID.items() if k != "source"})["source"] is None


def test_empty_excluded_slots_is_given(store: Store):
    """Tests that excluded_slots=[] (no banned period) counts as given, and that an update may
    leave both key fields out (the stored values are kept)."""
    out = _call(store, _with("task_class.excluded_slots", []))
    assert out["success"], out
    again = _call(store, {"id": out["task_class_id"], "task_class": {"notes": "更新备注"}})
    assert again["success"] and not again["created"], again


def test_bare_toolbox_needs_confirm(store: Store):
    """Tests that upsert_task_class through a bare Toolbox without confirm=True writes nothing
    and replies, in the tool's shape, that the user's confirmation is needed (with a preview);
    with confirm=True it writes."""
    tb = Toolbox(None, store=store, user_id=USER)
    before = table_rows(store)
    held = tb.invoke("upsert_task_class", VALID)
    out = json.loads(held.text)
    assert held.is_error and held.needs_confirm
    assert set(out) >= REPLY_KEYS and out["preview"]["args"]["task_class"]["name"] == "考研英语"
    assert (out["success"], out["error_code"]) == (False, "confirm_required")
    assert "确认" in out["error"] and table_rows(store) == before
    done = tb.invoke("upsert_task_class", VALID, confirm=True)
    assert not done.is_error and json.loads(done.text)["created"] is True


BACKEND_PAYLOAD: dict[str, Any] = {
    "task_class": {
        "name": "线代复习",
        "mode": "auto",
        "start_date": "2026-03-09",
        "end_date": "2026-03-22",
        "subject_type": "quantitative",
        "difficulty_level": "high",
        "cognitive_intensity": "medium",
        "config": {
            "total_slots": 8,
            "allow_filler_course": False,
            "strategy": "rapid",
            "excluded_slots": [1, 6],
            "excluded_days_of_week": [6, 7],
        },
    },
    "items": [{"order": 1, "content": "行列式"}, {"order": 2, "content": "矩阵"}],
}


def test_the_backends_payload_writes_its_columns_and_loads_with_its_rules(store: Store):
    """Tests issue 41 item 4: SmartFlow-Agent's task-class payload writes task_classes'
    columns (mode, dates, profile, config with half-day blocks and weekdays) and task_items
    (order, content, status 1), and the class loads with those rules; a block outside 1-6 is
    refused by the post-write validation and nothing is written."""
    from datetime import datetime

    from smartflow_engine.store import window_days
    from smartflow_engine.store.task_classes import from_backend

    fields, items = from_backend(BACKEND_PAYLOAD)
    result = store.upsert_task_class(USER, 0, fields, items)
    assert result.success, result
    with store.session() as s:
        row = s.get(m.TaskClass, result.task_class_id)
        stored_items = s.execute(
            select(m.TaskItem.order, m.TaskItem.content, m.TaskItem.status)
            .where(m.TaskItem.category_id == result.task_class_id)
            .order_by(m.TaskItem.order)
        ).all()
    assert row is not None
    assert (row.mode, row.start_date, row.end_date) == (
        "auto",
        datetime(2026, 3, 9),
        datetime(2026, 3, 22),
    )
    assert (row.subject_type, row.difficulty_level, row.cognitive_intensity) == (
        "quantitative",
        "high",
        "medium",
    )
    assert (row.total_slots, row.allow_filler_course, row.strategy) == (8, False, "rapid")
    assert (row.excluded_slots, row.excluded_days_of_week) == ([1, 6], [6, 7])
    assert stored_items == [(1, "行列式", 1), (2, "矩阵", 1)]
    state = store.load_window(USER, window_days((2, 1), (3, 7)))
    (tc,) = state.task_classes
    assert (tc.excluded_slots, tc.excluded_days_of_week, tc.allow_filler_course) == (
        [1, 6],
        [6, 7],
        False,
    )
    assert [(t.name, t.task_order, t.duration) for t in state.tasks] == [
        ("行列式", 1, 4),
        ("矩阵", 2, 4),
    ]
    before = table_rows(store)
    bad = {**BACKEND_PAYLOAD, "task_class": {**BACKEND_PAYLOAD["task_class"], "name": "另一个"}}
    bad["task_class"]["config"] = {**BACKEND_PAYLOAD["task_class"]["config"], "excluded_slots": [7]}
    fields, items = from_backend(bad)
    refused = store.upsert_task_class(USER, 0, fields, items)
    assert not refused.success and refused.error_code == "validation_failed"
    assert [i.code for i in refused.issues] == ["slot_out_of_range"]
    assert table_rows(store) == before


def _backend_columns(store: Store, class_id: int) -> tuple[Any, ...]:
    with store.session() as s:
        row = s.get(m.TaskClass, class_id)
        assert row is not None
        items = s.execute(
            select(m.TaskItem.order, m.TaskItem.content, m.TaskItem.status)
            .where(m.TaskItem.category_id == class_id)
            .order_by(m.TaskItem.order)
        ).all()
        return (
            row.user_id,
            row.name,
            row.mode,
            row.start_date,
            row.end_date,
            row.subject_type,
            row.difficulty_level,
            row.cognitive_intensity,
            row.total_slots,
            row.allow_filler_course,
            row.strategy,
            row.excluded_slots,
            row.excluded_days_of_week,
            [tuple(it) for it in items],
        )


def test_the_tool_takes_the_backends_payload(store: Store):
    """Tests issue 41 item 4 through the tool: SmartFlow-Agent's payload (task_class with mode,
    dates, profile and config; items {order, content}) writes the same task_classes / task_items
    rows as the store's from_backend path (each field in its column, items unscheduled), and
    an update in that shape by id keeps the class and matches its items by content."""
    from datetime import datetime

    out = _call(store, BACKEND_PAYLOAD)
    assert out["success"] and out["created"] and out["validation"]["ok"], out
    class_id = out["task_class_id"]
    assert _backend_columns(store, class_id) == (
        USER,
        "线代复习",
        "auto",
        datetime(2026, 3, 9),
        datetime(2026, 3, 22),
        "quantitative",
        "high",
        "medium",
        8,
        False,
        "rapid",
        [1, 6],
        [6, 7],
        [(1, "行列式", 1), (2, "矩阵", 1)],
    )
    assert store.row_counts(OTHER_USER)["task_classes"] == 0
    update = {
        "id": class_id,
        "task_class": {"config": {"excluded_days_of_week": [7], "total_slots": 12}},
        "items": [{"order": 3, "content": "矩阵"}, {"order": 2, "content": "特征值"}],
    }
    again = _call(store, update)
    assert again["success"] and not again["created"] and again["task_class_id"] == class_id
    columns = _backend_columns(store, class_id)
    assert columns[8] == 12 and columns[11:13] == ([1, 6], [7])
    assert columns[13] == [(1, "行列式", 1), (2, "特征值", 1), (3, "矩阵", 1)]


@pytest.mark.parametrize(
    ("config", "code", "field", "actual"),
    [
        ({"excluded_slots": [1, 7]}, "slot_out_of_range", "config.excluded_slots", [7]),
        ({"excluded_days_of_week": [6, 8]}, "invalid_value", "config.excluded_days_of_week", [8]),
    ],
)
def test_the_backends_bad_block_or_weekday_fails_validation(
    store: Store, config: dict[str, Any], code: str, field: str, actual: list[int]
):
    """Tests that a half-day block outside 1-6 or a weekday outside 1-7 in the backend's
    payload is refused by the post-write validation (a repairable issue naming the field and
    the value), with nothing written."""
    bad = copy.deepcopy(BACKEND_PAYLOAD)
    bad["task_class"]["config"].update(config)
    before = table_rows(store)
    out = _call(store, bad)
    assert (out["success"], out["error_code"]) == (False, "validation_failed"), out
    (issue,) = out["validation"]["issues"]
    assert (issue["code"], issue["field"], issue["actual"]) == (code, f"task_class.{field}", actual)
    assert issue["message"]
    assert table_rows(store) == before


@pytest.mark.parametrize(
    "args",
    [
        # the two payloads are not mixed
        {**BACKEND_PAYLOAD, "task_class": {**BACKEND_PAYLOAD["task_class"], "total_slots": 8}},
        {**BACKEND_PAYLOAD, "items": [{"order": 1, "content": "行列式", "duration": 2}]},
        {**BACKEND_PAYLOAD, "items": [{"content": "行列式"}]},  # the backend's item has order
        {**VALID, "items": [{"order": 1, "content": "背单词"}]},
        # strict types and unknown keys of the backend's own fields
        {**BACKEND_PAYLOAD, "task_class": {**BACKEND_PAYLOAD["task_class"], "mode": "fast"}},
        {**BACKEND_PAYLOAD, "task_class": {**BACKEND_PAYLOAD["task_class"], "config": {"x": 1}}},
        {
            **BACKEND_PAYLOAD,
            "task_class": {**BACKEND_PAYLOAD["task_class"], "config": {"total_slots": "8"}},
        },
        {**BACKEND_PAYLOAD, "task_class": {**BACKEND_PAYLOAD["task_class"], "end_date": "3月"}},
        {**BACKEND_PAYLOAD, "items": [{"order": 0, "content": "行列式"}]},
    ],
)
def test_a_bad_or_mixed_backend_payload_is_refused_before_any_write(
    store: Store, args: dict[str, Any]
):
    """Tests that the backend's payload is checked strictly by the argument model (types,
    unknown keys, bounds) and that mixing it with today's keys is refused (invalid_args),
    with nothing written."""
    before = table_rows(store)
    out = _call(store, args)
    assert (out["success"], out["error_code"]) == (False, "invalid_args"), out
    assert out["error"] and table_rows(store) == before


def test_the_backends_payload_waits_for_the_confirm_gate(store: Store):
    """Tests that the backend's payload through a session is held for confirmation with a
    preview showing what will be written (its config and items), nothing is written when held
    or rejected, and the rows are written once confirmed; today's payload works beside it."""
    session = Session(None, store=store, db_user_id=USER)
    held = session.invoke("upsert_task_class", BACKEND_PAYLOAD)
    assert held.status == "pending_confirm" and held.confirm_token
    for shown in ("2026-03-09", '"excluded_days_of_week": [6, 7]', '"order": 2', "矩阵"):
        assert shown in held.reply, held.reply
    assert store.row_counts()["task_classes"] == 0
    assert session.reject(held.confirm_token).status == "rejected"
    assert store.row_counts()["task_classes"] == 0
    again = session.invoke("upsert_task_class", BACKEND_PAYLOAD)
    assert again.confirm_token is not None
    done = json.loads(session.confirm(again.confirm_token).reply)
    assert done["success"] and done["created"], done
    today = session.invoke("upsert_task_class", VALID)
    assert today.confirm_token is not None
    assert json.loads(session.confirm(today.confirm_token).reply)["success"]
    counts = store.row_counts(USER)
    assert (counts["task_classes"], counts["task_items"], counts["schedules"]) == (2, 5, 0)


def test_the_backends_payload_over_http(store: Store):
    """Tests that the HTTP surface (same registry) takes the backend's payload: held for the
    user's confirm, written once confirmed (201 session, 200 confirm, the class's columns), and
    a bad weekday answers 422 validation_failed with nothing written."""
    from fastapi.testclient import TestClient

    from smartflow_engine.tools_adapter.api import create_app

    client = TestClient(create_app({"tok": str(USER)}, database=store))
    auth = {"Authorization": "Bearer tok"}
    made = client.post("/v1/sessions", headers=auth, json={})
    assert made.status_code == 201, made.text
    sid = made.json()["session_id"]

    def call(args: dict[str, Any]) -> Any:
        body = {"tool": "upsert_task_class", "args": args}
        held = client.post(f"/v1/sessions/{sid}/calls", headers=auth, json=body).json()
        assert held["status"] == "pending_confirm", held
        token = {"token": held["confirm_token"]}
        return client.post(f"/v1/sessions/{sid}/confirm", headers=auth, json=token)

    done = call(BACKEND_PAYLOAD)
    assert done.status_code == 200, done.text
    out = json.loads(done.json()["reply"])
    assert out["success"] and out["created"]
    assert _backend_columns(store, out["task_class_id"])[11:] == (
        [1, 6],
        [6, 7],
        [(1, "行列式", 1), (2, "矩阵", 1)],
    )
    before = table_rows(store)
    bad = copy.deepcopy(BACKEND_PAYLOAD)
    bad["task_class"]["name"] = "另一个"
    bad["task_class"]["config"]["excluded_days_of_week"] = [8]
    refused = call(bad)
    assert refused.status_code == 422 and refused.json()["error_code"] == "validation_failed"
    assert table_rows(store) == before


def test_the_backends_payload_over_mcp(store: Store):
    """Tests that the MCP surface (same registry) takes the backend's payload: the server asks
    the user with the call's summary, and on accept the class's rows are written."""
    import anyio
    import mcp.types as types
    from mcp import Client

    from smartflow_engine.tools_adapter.mcp.server import build_server

    session = Session(None, store=store, db_user_id=USER)
    asked: list[str] = []

    async def accept(_context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    async def go() -> Any:
        async with Client(build_server(session), elicitation_callback=accept) as client:
            return await client.call_tool("upsert_task_class", BACKEND_PAYLOAD)

    result = anyio.run(go)
    out = json.loads(result.content[0].text)
    assert not result.is_error and out["success"] and out["created"], out
    assert len(asked) == 1 and "线代复习" in asked[0]
    columns = _backend_columns(store, out["task_class_id"])
    assert (columns[1], columns[2], columns[11], columns[12]) == (
        "线代复习",
        "auto",
        [1, 6],
        [6, 7],
    )
    assert store.row_counts(USER)["task_items"] == 2
