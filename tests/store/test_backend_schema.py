"""Issue 41: the engine on SmartFlow-Agent's own database.

The test creates the backend's four tables itself, with DDL written by hand from the gorm tags of
``backend/services/runtime/model/schedule.go`` and ``task-class.go`` (not with our models), on
SQLite, PostgreSQL and MariaDB, and inserts fixtures: two users, a locked course, water courses
with and without a guest, applied (task event), embedded (host rows) and embedded_time-only items,
unscheduled items (status 1 and NULL), an item applied outside the window, two classes. Then:
load → the derived state; place, embed, move, unplace → confirm → the rows; reload → the same
window; the schema unchanged throughout (no table created or altered), the other user untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, inspect, text

from smartflow_engine.state import ScheduleState
from smartflow_engine.store import Store, StoreError, window_days
from smartflow_engine.tools_adapter.core.toolbox import Toolbox
from tests.helpers.db_servers import BACKENDS, _drop_every_table, database_url
from tests.helpers.store import stored

USER, OTHER = 1, 2

# --- DDL from the gorm tags (a Go int is BIGINT under gorm; time.Time DATETIME(3) / timestamptz)
MARIADB_DDL = [
    """CREATE TABLE task_classes (
        id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id BIGINT, name VARCHAR(255),
        mode ENUM('auto','manual'), start_date DATETIME(3), end_date DATETIME(3),
        subject_type VARCHAR(32), difficulty_level VARCHAR(16), cognitive_intensity VARCHAR(16),
        total_slots BIGINT, allow_filler_course BOOLEAN DEFAULT TRUE,
        strategy ENUM('steady','rapid'), excluded_slots JSON, excluded_days_of_week JSON,
        KEY idx_task_classes_user_id (user_id)) DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE task_items (
        id BIGINT AUTO_INCREMENT PRIMARY KEY, category_id BIGINT, `order` BIGINT, content TEXT,
        embedded_time JSON, status BIGINT,
        CONSTRAINT fk_task_classes_items FOREIGN KEY (category_id) REFERENCES task_classes(id)
        ) DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE schedule_events (
        id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id BIGINT NOT NULL, name VARCHAR(255) NOT NULL,
        location VARCHAR(255) DEFAULT '', type ENUM('course','task') NOT NULL, rel_id BIGINT,
        task_source_type VARCHAR(32) NOT NULL DEFAULT '', makeup_for_event_id BIGINT,
        active_preview_id VARCHAR(64), can_be_embedded BOOLEAN NOT NULL DEFAULT 0,
        start_time TIME, end_time TIME, KEY idx_user_events (user_id),
        KEY idx_schedule_event_task_source (task_source_type)) DEFAULT CHARSET=utf8mb4""",
    """CREATE TABLE schedules (
        id BIGINT AUTO_INCREMENT PRIMARY KEY, event_id BIGINT NOT NULL, user_id BIGINT NOT NULL,
        week BIGINT NOT NULL, day_of_week BIGINT NOT NULL, section BIGINT NOT NULL,
        embedded_task_id BIGINT, status ENUM('normal','interrupted') DEFAULT 'normal',
        UNIQUE KEY idx_user_slot_atomic (user_id, week, day_of_week, section),
        KEY idx_event_id (event_id),
        CONSTRAINT fk_schedules_event FOREIGN KEY (event_id) REFERENCES schedule_events(id),
        CONSTRAINT fk_schedules_embedded_task FOREIGN KEY (embedded_task_id)
            REFERENCES task_items(id)) DEFAULT CHARSET=utf8mb4""",
]
POSTGRES_DDL = [
    """CREATE TABLE task_classes (
        id BIGSERIAL PRIMARY KEY, user_id BIGINT, name VARCHAR(255), mode VARCHAR(16),
        start_date TIMESTAMPTZ, end_date TIMESTAMPTZ, subject_type VARCHAR(32),
        difficulty_level VARCHAR(16), cognitive_intensity VARCHAR(16), total_slots BIGINT,
        allow_filler_course BOOLEAN DEFAULT TRUE, strategy VARCHAR(16), excluded_slots JSON,
        excluded_days_of_week JSON)""",
    """CREATE TABLE task_items (
        id BIGSERIAL PRIMARY KEY, category_id BIGINT REFERENCES task_classes(id),
        "order" BIGINT, content TEXT, embedded_time JSON, status BIGINT)""",
    """CREATE TABLE schedule_events (
        id BIGSERIAL PRIMARY KEY, user_id BIGINT NOT NULL, name VARCHAR(255) NOT NULL,
        location VARCHAR(255) DEFAULT '', type VARCHAR(8) NOT NULL, rel_id BIGINT,
        task_source_type VARCHAR(32) NOT NULL DEFAULT '', makeup_for_event_id BIGINT,
        active_preview_id VARCHAR(64), can_be_embedded BOOLEAN NOT NULL DEFAULT FALSE,
        start_time TIME, end_time TIME)""",
    """CREATE TABLE schedules (
        id BIGSERIAL PRIMARY KEY, event_id BIGINT NOT NULL REFERENCES schedule_events(id),
        user_id BIGINT NOT NULL, week BIGINT NOT NULL, day_of_week BIGINT NOT NULL,
        section BIGINT NOT NULL, embedded_task_id BIGINT REFERENCES task_items(id),
        status VARCHAR(16) DEFAULT 'normal',
        CONSTRAINT idx_user_slot_atomic UNIQUE (user_id, week, day_of_week, section))""",
]
SQLITE_DDL = [
    """CREATE TABLE task_classes (
        id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, name TEXT, mode TEXT,
        start_date DATETIME, end_date DATETIME, subject_type TEXT, difficulty_level TEXT,
        cognitive_intensity TEXT, total_slots INTEGER, allow_filler_course NUMERIC DEFAULT 1,
        strategy TEXT, excluded_slots JSON, excluded_days_of_week JSON)""",
    """CREATE TABLE task_items (
        id INTEGER PRIMARY KEY AUTOINCREMENT, category_id INTEGER REFERENCES task_classes(id),
        "order" INTEGER, content TEXT, embedded_time JSON, status INTEGER)""",
    """CREATE TABLE schedule_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER NOT NULL, name TEXT NOT NULL,
        location TEXT DEFAULT '', type TEXT NOT NULL, rel_id INTEGER,
        task_source_type TEXT NOT NULL DEFAULT '', makeup_for_event_id INTEGER,
        active_preview_id TEXT, can_be_embedded NUMERIC NOT NULL DEFAULT 0,
        start_time TIME, end_time TIME)""",
    """CREATE TABLE schedules (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id INTEGER NOT NULL REFERENCES schedule_events(id), user_id INTEGER NOT NULL,
        week INTEGER NOT NULL, day_of_week INTEGER NOT NULL, section INTEGER NOT NULL,
        embedded_task_id INTEGER REFERENCES task_items(id), status TEXT DEFAULT 'normal',
        UNIQUE (user_id, week, day_of_week, section))""",
]
DDL = {"sqlite": SQLITE_DDL, "postgresql": POSTGRES_DDL, "mariadb": MARIADB_DDL}

# --- fixtures: week 1 is the window (Monday 2026-03-02); week 5 lies outside it
CLASSES = [
    # id, user, name, total_slots, allow_filler, strategy, excluded_slots, excluded_days, start, end
    (10, USER, "复习", 10, True, "steady", "[6]", "[]", "2026-03-02", "2026-03-08"),
    (11, USER, "作业", 6, False, "rapid", None, "[7]", "2026-03-02", "2026-03-31"),
    (20, OTHER, "其他", 4, True, "steady", "[]", "[]", None, None),
]
ITEMS = [
    # id, class, order, content, embedded_time, status
    (201, 10, 1, "背单词", '{"week":1,"day_of_week":2,"section_from":3,"section_to":4}', 2),
    (202, 10, 2, "复习线代", '{"week":1,"day_of_week":4,"section_from":7,"section_to":8}', 2),
    (203, 10, 3, "整理笔记", '{"week":1,"day_of_week":5,"section_from":1,"section_to":2}', 2),
    (204, 10, 4, "复习高数", None, 1),
    (205, 10, None, "听力练习", None, None),  # no order: bound by none
    (206, 11, 1, "物理作业", None, 1),
    (207, 11, 2, "实验报告", '{"week":5,"day_of_week":1,"section_from":1,"section_to":2}', 2),
    (300, 20, 1, "别人的任务", None, 1),
]
EVENTS = [
    # id, user, name, type, rel_id, task_source_type, can_be_embedded, start, end
    (100, USER, "高等数学", "course", None, "", False, "08:00:00", "09:40:00"),
    (101, USER, "体育（水课）", "course", None, "", True, "10:10:00", "11:50:00"),
    (102, USER, "思政（水课）", "course", None, "", True, "14:00:00", "15:40:00"),
    (103, USER, "复习线代", "task", 202, "task_item", False, "16:10:00", "17:50:00"),
    (104, USER, "实验报告", "task", 207, "task_item", False, "08:00:00", "09:40:00"),
    (200, OTHER, "别人的课", "course", None, "", False, "10:10:00", "11:50:00"),
]
SCHEDULES = [
    # event, user, week, day_of_week, section, embedded_task_id
    (100, USER, 1, 1, 1, None),
    (100, USER, 1, 1, 2, None),
    (101, USER, 1, 2, 3, 201),
    (101, USER, 1, 2, 4, 201),
    (102, USER, 1, 3, 5, None),
    (102, USER, 1, 3, 6, None),
    (103, USER, 1, 4, 7, None),
    (103, USER, 1, 4, 8, None),
    (104, USER, 5, 1, 1, None),
    (104, USER, 5, 1, 2, None),
    (200, OTHER, 1, 1, 3, None),
    (200, OTHER, 1, 1, 4, None),
]


def _stamp(kind: str, day: str | None) -> Any:
    """A date as the driver binds it (SQLite: the text SQLAlchemy's DATETIME reads)."""
    if day is None:
        return None
    return f"{day} 00:00:00.000000" if kind == "sqlite" else datetime.fromisoformat(day)


def _clock(kind: str, value: str) -> Any:
    return f"{value}.000000" if kind == "sqlite" else time.fromisoformat(value)


def _create(engine: Engine, kind: str) -> None:
    with engine.begin() as conn:
        for ddl in DDL[kind]:
            conn.execute(text(ddl))
        order = "`order`" if kind == "mariadb" else '"order"'
        for row in CLASSES:
            conn.execute(
                text(
                    "INSERT INTO task_classes (id, user_id, name, mode, total_slots, "
                    "allow_filler_course, strategy, excluded_slots, excluded_days_of_week, "
                    "start_date, end_date) VALUES (:id, :u, :n, 'auto', :t, :a, :s, :x, :d, "
                    ":sd, :ed)"
                ),
                dict(zip(("id", "u", "n", "t", "a", "s", "x", "d", "sd", "ed"), row, strict=True))
                | {"sd": _stamp(kind, row[8]), "ed": _stamp(kind, row[9])},
            )
        for row in ITEMS:
            conn.execute(
                text(
                    f"INSERT INTO task_items (id, category_id, {order}, content, embedded_time, "
                    "status) VALUES (:id, :c, :o, :t, :e, :s)"
                ),
                dict(zip(("id", "c", "o", "t", "e", "s"), row, strict=True)),
            )
        for row in EVENTS:
            conn.execute(
                text(
                    "INSERT INTO schedule_events (id, user_id, name, type, rel_id, "
                    "task_source_type, can_be_embedded, start_time, end_time) VALUES "
                    "(:id, :u, :n, :ty, :r, :ts, :cb, :st, :et)"
                ),
                dict(zip(("id", "u", "n", "ty", "r", "ts", "cb", "st", "et"), row, strict=True))
                | {"st": _clock(kind, row[7]), "et": _clock(kind, row[8])},
            )
        for row in SCHEDULES:
            conn.execute(
                text(
                    "INSERT INTO schedules (event_id, user_id, week, day_of_week, section, "
                    "embedded_task_id) VALUES (:e, :u, :w, :d, :s, :g)"
                ),
                dict(zip(("e", "u", "w", "d", "s", "g"), row, strict=True)),
            )
        if kind == "postgresql":
            for table in ("task_classes", "task_items", "schedule_events", "schedules"):
                conn.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"(SELECT MAX(id) FROM {table}))"
                    )
                )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``(kind, url)`` of a database holding only the backend's four tables and the fixtures."""
    kind = request.param
    url = (
        f"sqlite:///{tmp_path / 'backend.db'}" if kind == "sqlite" else database_url(request, kind)
    )
    if kind != "sqlite":
        _drop_every_table(url)
    engine = create_engine(url)
    try:
        _create(engine, kind)
    finally:
        engine.dispose()
    yield kind, url
    if kind != "sqlite":  # leave the run's database as the other tests expect it
        _drop_every_table(url)
        Store.from_url(url).dispose()


def _schema(url: str) -> dict[str, list[tuple[str, str, bool]]]:
    engine = create_engine(url)
    try:
        insp = inspect(engine)
        return {
            t: [(c["name"], str(c["type"]), bool(c["nullable"])) for c in insp.get_columns(t)]
            for t in sorted(insp.get_table_names())
        }
    finally:
        engine.dispose()


def _rows(store: Store, sql: str) -> list[tuple[Any, ...]]:
    with store.session() as s:
        return sorted(tuple(r) for r in s.execute(text(sql)).all())


WINDOW = window_days((1, 1), (1, 7))


def _by_source(state: ScheduleState) -> dict[tuple[str, int], Any]:
    return {(t.source, t.source_id): t for t in state.tasks}


def test_load_derives_the_state_as_the_backend_does(backend: tuple[str, str]) -> None:
    """Tests the derivation of schedule_state.go: the locked course, water courses with and
    without their guest (the guest on the host's sections, existing), an item applied through its
    task event, one applied by embedded_time only, pending items (status 1 and NULL) with
    total_slots // items as duration, an item applied outside the window left out, the classes'
    fields, and nothing of the other user."""
    _, url = backend
    store = Store.from_url(url)
    try:
        state = store.load_window(USER, WINDOW)
    finally:
        store.dispose()
    t = _by_source(state)
    assert set(t) == {
        ("event", 100),
        ("event", 101),
        ("event", 102),
        ("task_item", 201),
        ("task_item", 202),
        ("task_item", 203),
        ("task_item", 204),
        ("task_item", 205),
        ("task_item", 206),
    }
    course, water, water2 = t["event", 100], t["event", 101], t["event", 102]
    assert (course.locked, course.category, course.status) == (True, "课程", "existing")
    assert [(b.day, b.slot_start, b.slot_end) for b in course.slots] == [(1, 1, 2)]
    assert (water.locked, water.can_embed, water2.can_embed) == (False, True, True)
    guest = t["task_item", 201]
    assert guest.status == "existing" and guest.embed_host == water.state_id
    assert [(b.day, b.slot_start, b.slot_end) for b in guest.slots] == [(2, 3, 4)]
    applied = t["task_item", 202]
    assert (applied.status, applied.category, applied.task_class_id) == ("existing", "复习", 10)
    assert [(b.day, b.slot_start, b.slot_end) for b in applied.slots] == [(4, 7, 8)]
    assert applied.embed_host is None and applied.task_order == 2
    assert [(b.day, b.slot_start) for b in t["task_item", 203].slots] == [(5, 1)]
    pending = {k[1]: (v.status, v.duration) for k, v in t.items() if v.status == "pending"}
    assert pending == {204: ("pending", 2), 205: ("pending", 2), 206: ("pending", 3)}
    classes = {c.id: c for c in state.task_classes}
    assert set(classes) == {10, 11}
    rev, hw = classes[10], classes[11]
    assert (rev.excluded_slots, rev.strategy, rev.total_slots) == ([6], "steady", 10)
    assert (rev.start_date, rev.end_date) == ("2026-03-02", "2026-03-08")
    assert (hw.allow_filler_course, hw.excluded_days_of_week, hw.excluded_slots) == (
        False,
        [7],
        [],
    )


def test_confirm_writes_rows_as_the_backend_and_reloads_the_same_window(
    backend: tuple[str, str],
) -> None:
    """Tests place, embed, move and unplace through the tools, then one confirm: a task event
    with one row per section for the placed item, the host's rows carrying the embedded item (no
    event), the moved item's event on its new sections, the unplaced guest's mark cleared, every
    item's status and embedded_time; the reload equals the session; the other user's rows and
    the schema are unchanged and no table of ours was created."""
    _, url = backend
    schema = _schema(url)
    store = Store.from_url(url)
    try:
        assert not store.has_extension
        other_before = _rows(
            store,
            f"SELECT event_id, week, day_of_week, section FROM schedules WHERE user_id = {OTHER}",
        )
        state = store.load_window(USER, WINDOW)
        ids = {k: v.state_id for k, v in _by_source(state).items()}
        tb = Toolbox(state, self_check=True)
        out = tb.call("place", {"task_id": ids["task_item", 204], "day": 6, "slot_start": 1})
        assert "失败" not in out, out
        out = tb.call("place", {"task_id": ids["task_item", 205], "day": 3, "slot_start": 5})
        assert "失败" not in out, out
        out = tb.call("move", {"task_id": ids["task_item", 202], "new_day": 4, "new_slot_start": 9})
        assert "失败" not in out, out
        out = tb.call("unplace", {"task_id": ids["task_item", 201]})
        assert "失败" not in out, out
        assert tb.state is not None
        assert tb.state.task(ids["task_item", 205]).embed_host == ids["event", 102]  # type: ignore[union-attr]
        batches = store.batch_payload(tb.state, tb.changes)
        result = store.commit(USER, tb.state, tb.changes)
        assert result.ok, result

        events = _rows(
            store,
            f"SELECT id, type, rel_id, task_source_type, name FROM schedule_events "
            f"WHERE user_id = {USER} AND type = 'task'",
        )
        new_event = [e for e in events if e[2] == 204]
        assert len(new_event) == 1 and new_event[0][1:] == ("task", 204, "task_item", "复习高数")
        assert not [e for e in events if e[2] in (201, 205)]
        cells = _rows(
            store,
            f"SELECT event_id, week, day_of_week, section, embedded_task_id FROM schedules "
            f"WHERE user_id = {USER} AND week = 1",
        )
        assert cells == sorted(
            [
                (100, 1, 1, 1, None),
                (100, 1, 1, 2, None),
                (101, 1, 2, 3, None),
                (101, 1, 2, 4, None),
                (102, 1, 3, 5, 205),
                (102, 1, 3, 6, 205),
                (103, 1, 4, 9, None),
                (103, 1, 4, 10, None),
                (new_event[0][0], 1, 6, 1, None),
                (new_event[0][0], 1, 6, 2, None),
            ]
        )
        times = _rows(store, "SELECT id, start_time, end_time FROM schedule_events WHERE id = 103")
        assert [str(v)[:5] for v in times[0][1:]] == ["19:00", "20:40"]  # sections 9-10
        with store.session() as s:
            items = {
                r[0]: (r[1], r[2])
                for r in s.execute(text("SELECT id, status, embedded_time FROM task_items"))
            }
        import json

        def target(v: Any) -> Any:
            return json.loads(v) if isinstance(v, str) else v

        assert {k: (v[0], target(v[1])) for k, v in items.items() if k in (201, 202, 204, 205)} == {
            201: (1, None),
            202: (2, {"week": 1, "day_of_week": 4, "section_from": 9, "section_to": 10}),
            204: (2, {"week": 1, "day_of_week": 6, "section_from": 1, "section_to": 2}),
            205: (2, {"week": 1, "day_of_week": 3, "section_from": 5, "section_to": 6}),
        }
        assert batches == [
            {
                "task_class_id": 10,
                "items": [
                    {
                        "task_item_id": 202,
                        "week": 1,
                        "day_of_week": 4,
                        "start_section": 9,
                        "end_section": 10,
                        "embed_course_event_id": 0,
                    },
                    {
                        "task_item_id": 204,
                        "week": 1,
                        "day_of_week": 6,
                        "start_section": 1,
                        "end_section": 2,
                        "embed_course_event_id": 0,
                    },
                    {
                        "task_item_id": 205,
                        "week": 1,
                        "day_of_week": 3,
                        "start_section": 5,
                        "end_section": 6,
                        "embed_course_event_id": 102,
                    },
                ],
            }
        ]
        back = store.load_window(USER, WINDOW)
        assert stored(back) == stored(tb.state)
        assert (
            _rows(
                store,
                f"SELECT event_id, week, day_of_week, section FROM schedules WHERE user_id = {OTHER}",
            )
            == other_before
        )
    finally:
        store.dispose()
    assert _schema(url) == schema


def test_a_database_that_differs_is_refused_without_any_change(tmp_path: Path) -> None:
    """Tests that pointed at a database whose schedules table lacks embedded_task_id (the old
    schema's shape), the store refuses with one line naming the table and column, and creates
    or alters nothing (no task_items, no extension table)."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        for ddl in SQLITE_DDL:
            conn.execute(
                text(ddl.replace("embedded_task_id INTEGER REFERENCES task_items(id), ", ""))
            )
    engine.dispose()
    before = _schema(url)
    with pytest.raises(StoreError) as info:
        Store.from_url(url)
    message = str(info.value)
    assert "\n" not in message and "schedules" in message and "embedded_task_id" in message
    assert _schema(url) == before
