"""Tests of Store.commit: change logs produced by the real Toolbox are written in one
transaction, load_window then shows exactly the new state, and a failing commit writes nothing."""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, select, update

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state import Change, SlotRange
from smartflow_engine.state.strategies import windows, write_calls
from smartflow_engine.store import Store
from smartflow_engine.store import models as m
from tests.helpers.store import OTHER_USER, USER, cell_view, file_digest, reload, stored, table_rows
from tests.helpers.windows import load_window

Call = tuple[str, dict[str, Any]]

# Sample window (weeks 7-8): [9] suggested 1-9..10, [10] existing item 2-11, [6] 思政（水课）
# days 3 and 10 periods 3-4, pending [11] (3 periods), [12] (2), [15] (1).
PLACE: list[Call] = [("place", {"task_id": 11, "day": 6, "slot_start": 1})]
EMBED: list[Call] = [("place", {"task_id": 15, "day": 3, "slot_start": 3})]
MOVE: list[Call] = [("move", {"task_id": 9, "new_day": 7, "new_slot_start": 1})]
SWAP: list[Call] = [
    ("place", {"task_id": 12, "day": 6, "slot_start": 5}),
    ("swap", {"task_a": 9, "task_b": 12}),
]
UNPLACE: list[Call] = [("unplace", {"task_id": 10})]
BATCH: list[Call] = [
    *PLACE,
    (
        "batch_move",
        {
            "moves": [
                {"task_id": 11, "new_day": 7, "new_slot_start": 1},
                {"task_id": 9, "new_day": 6, "new_slot_start": 1},
            ]
        },
    ),
]
COURSE_BLOCK: list[Call] = [
    ("move", {"task_id": 6, "new_day": 6, "new_slot_start": 7, "from_day": 3})
]
ROUND_TRIP: list[Call] = [*MOVE, ("move", {"task_id": 9, "new_day": 1, "new_slot_start": 9})]
PLACE_THEN_UNPLACE: list[Call] = [
    *EMBED,
    ("unplace", {"task_id": 15}),
    *PLACE,
    ("move", {"task_id": 11, "new_day": 7, "new_slot_start": 5}),
]
MIXED: list[Call] = [
    *COURSE_BLOCK,
    ("place", {"task_id": 15, "day": 6, "slot_start": 8}),
    *SWAP,
    *UNPLACE,
    *PLACE,
    ("place", {"task_id": 10, "day": 2, "slot_start": 11}),
]


def _session(store: Store, calls: list[Call]) -> Toolbox:
    """A Toolbox on the user's window as loaded from the store, after ``calls`` (all succeed)."""
    tb = Toolbox(reload(store, load_window("sample_window")), self_check=True)
    for name, args in calls:
        before = len(tb.changes)
        reply = tb.call(name, args)
        assert len(tb.changes) > before, reply
    return tb


@pytest.mark.parametrize(
    "calls",
    [PLACE, EMBED, MOVE, SWAP, UNPLACE, BATCH, COURSE_BLOCK, ROUND_TRIP, PLACE_THEN_UNPLACE, MIXED],
    ids=[
        "place",
        "embed",
        "move",
        "swap",
        "unplace",
        "batch_move",
        "course_block",
        "move_and_back",
        "place_then_unplace",
        "mixed",
    ],
)
def test_committed_session_reloads_as_the_session_state(sample_store: Store, calls: list[Call]):
    """Tests that after commit, load_window gives exactly the session's state (same state ids,
    statuses, blocks, embedding, durations) and a fresh store on the file agrees."""
    tb = _session(sample_store, calls)
    result = sample_store.commit(USER, tb.state, tb.changes)
    assert result.ok, result
    assert result.tasks_written == len({c.task_id for c in tb.changes})
    assert tb.state is not None
    assert stored(reload(sample_store, tb.state)) == stored(tb.state)


def _task_event(s: Any, item_id: int) -> Any:
    return s.scalars(
        select(m.ScheduleEvent).where(
            m.ScheduleEvent.type == "task",
            m.ScheduleEvent.rel_id == item_id,
            m.ScheduleEvent.task_source_type == "task_item",
        )
    ).first()


def test_place_creates_the_items_event_and_rows(sample_store: Store):
    """Tests that placing a pending item writes what SmartFlow-Agent writes for an applied item:
    a task event (rel_id the item, task_source_type task_item, its content as name, start/end
    time from the section clock), one row per section at the mapped (week, day_of_week), and the
    item's status 2 with its embedded_time."""
    from datetime import time

    tb = _session(sample_store, PLACE)  # [11] = item 301 → day 6 (week 7, Saturday) 1-3
    assert sample_store.commit(USER, tb.state, tb.changes).ok
    with sample_store.session() as s:
        item = s.get(m.TaskItem, 301)
        event = _task_event(s, 301)
        rows = s.execute(
            select(m.Schedule.week, m.Schedule.day_of_week, m.Schedule.section).where(
                m.Schedule.event_id == event.id
            )
        ).all()
    assert item is not None and item.status == 2
    assert item.embedded_time == {"week": 7, "day_of_week": 6, "section_from": 1, "section_to": 3}
    assert (event.type, event.user_id, event.name, event.can_be_embedded) == (
        "task",
        USER,
        "复习线代",
        False,
    )
    assert (event.start_time, event.end_time) == (time(8, 0), time(10, 55))
    assert sorted(rows) == [(7, 6, 1), (7, 6, 2), (7, 6, 3)]


@pytest.mark.parametrize(
    "content",
    ['a "quoted" \\ back, {braced} NULL', "it's 100%s %d 50% done", "数据库 😀 复习,第{2}章"],
)
def test_placed_items_keep_names_the_batched_insert_must_escape(sample_store: Store, content: str):
    """Tests that item names holding what array literals, driver placeholders and SQL quoting
    treat specially (quotes, backslash, comma, braces, the word NULL, ``%s``, 4-byte characters)
    reach the new events unchanged, two items placed in one commit (the multi-row insert)."""
    with sample_store.session(write=True) as s:
        s.execute(update(m.TaskItem).where(m.TaskItem.id.in_([301, 302])).values(content=content))
    tb = _session(sample_store, [*PLACE, ("place", {"task_id": 12, "day": 7, "slot_start": 5})])
    assert sample_store.commit(USER, tb.state, tb.changes).ok
    with sample_store.session() as s:
        names = s.execute(
            select(m.ScheduleEvent.rel_id, m.ScheduleEvent.name).where(
                m.ScheduleEvent.rel_id.in_([301, 302])
            )
        ).all()
    assert sorted(names) == [(301, content), (302, content)]
    assert tb.state is not None
    assert stored(reload(sample_store, tb.state)) == stored(tb.state)


def test_unplace_removes_the_items_event(sample_store: Store):
    """Tests that unplacing an applied item deletes its task event and rows and sets the item
    back to status 1 without embedded_time."""
    tb = _session(sample_store, UNPLACE)  # [10] = item 202, day 2 period 11
    before = sample_store.row_counts(USER)
    assert sample_store.commit(USER, tb.state, tb.changes).ok
    after = sample_store.row_counts(USER)
    assert after["schedule_events"] == before["schedule_events"] - 1
    assert after["schedules"] == before["schedules"] - 1
    with sample_store.session() as s:
        item = s.get(m.TaskItem, 202)
        assert item is not None and (item.status, item.embedded_time) == (1, None)
        assert _task_event(s, 202) is None


def test_embedding_is_written_on_the_hosts_rows(sample_store: Store):
    """Tests that a guest placed into a water course is the host's row's embedded_task_id, with
    no event of its own, the item applied with its embedded_time; unplacing clears the mark."""
    tb = _session(sample_store, EMBED)  # [15] = item 305 into 思政 (event 106) day 3 period 3
    assert sample_store.commit(USER, tb.state, tb.changes).ok
    with sample_store.session() as s:
        marked = s.execute(
            select(
                m.Schedule.event_id, m.Schedule.week, m.Schedule.day_of_week, m.Schedule.section
            ).where(m.Schedule.embedded_task_id == 305)
        ).all()
        assert _task_event(s, 305) is None
        item = s.get(m.TaskItem, 305)
        assert item is not None and item.status == 2
        assert item.embedded_time == {
            "week": 7,
            "day_of_week": 3,
            "section_from": 3,
            "section_to": 3,
        }
    assert marked == [(106, 7, 3, 3)]
    tb.changes.clear()
    assert "移除" in tb.call("unplace", {"task_id": 15})
    assert sample_store.commit(USER, tb.state, tb.changes).ok
    with sample_store.session() as s:
        assert (
            s.scalar(select(m.Schedule.id).where(m.Schedule.embedded_task_id.is_not(None))) is None
        )
        item = s.get(m.TaskItem, 305)
        assert item is not None and (item.status, item.embedded_time) == (1, None)


def test_unplacing_a_course_is_refused_and_writes_nothing(sample_store: Store):
    """Tests that taking a water course off the timetable is refused (the backend's tables hold
    no pending event) and leaves every row as it was."""
    week7 = load_window("sample_window").window.day_mapping[:7]
    state = sample_store.load_window(USER, week7)
    tb = Toolbox(state, self_check=True)
    assert "恢复为待安排" in tb.call("unplace", {"task_id": 6})  # 思政, event 106, day 3
    rows = table_rows(sample_store)
    result = sample_store.commit(USER, state, tb.changes)
    assert not result.ok and result.error_code == "invalid_changes"
    assert result.detail["reason"] == "event_unplace"
    assert table_rows(sample_store) == rows


def storable(state: ScheduleState, call: Call) -> bool:
    """Whether the call's writes fit the backend's tables: an event (a course) is never taken
    off the timetable nor embedded in another (only task items are pending work or guests);
    such writes are refused at commit (test_unplacing_a_course_is_refused_and_writes_nothing)."""
    probe = Toolbox(state.model_copy(deep=True))
    probe.call(*call)
    source = {t.state_id: t.source for t in state.tasks}
    return not any(
        source.get(c.task_id) == "event"
        and (c.status_after == "pending" or c.embed_host_after is not None)
        for c in probe.changes
    )


# ---------------------------------------------------------------------------------- failures
FAILING: list[Call] = [*MOVE, ("place", {"task_id": 12, "day": 6, "slot_start": 5}), *EMBED, *PLACE]


def _row_vanished(s: Any) -> None:  # [9]'s old periods (day 1 = week 7 Monday, 9-10)
    s.execute(
        delete(m.Schedule).where(
            m.Schedule.week == 7, m.Schedule.day_of_week == 1, m.Schedule.section == 10
        )
    )


def _period_taken(s: Any) -> None:  # someone else took [11]'s target day 6 period 2
    s.add(m.ScheduleEvent(id=900, user_id=USER, name="临时会议", type="task"))
    s.flush()
    s.add(m.Schedule(user_id=USER, event_id=900, week=7, day_of_week=6, section=2))


def _item_scheduled_meanwhile(s: Any) -> None:  # [12] = item 302 placed by another session
    s.execute(update(m.TaskItem).where(m.TaskItem.id == 302).values(status=2))


def _item_deleted(s: Any) -> None:  # [11] = item 301
    s.execute(delete(m.TaskItem).where(m.TaskItem.id == 301))


def _host_gone(s: Any) -> None:  # 思政's day 3 periods, where [15] embeds
    s.execute(delete(m.Schedule).where(m.Schedule.event_id == 106, m.Schedule.week == 7))


def _guest_place_taken(s: Any) -> None:  # another guest already sits in 思政 day 3
    s.execute(
        update(m.Schedule)
        .where(m.Schedule.event_id == 106, m.Schedule.week == 7)
        .values(embedded_task_id=202)
    )


def _event_moved(s: Any) -> None:  # [9]'s item was unapplied elsewhere (event and rows gone)
    event_ids = select(m.ScheduleEvent.id).where(m.ScheduleEvent.rel_id == 201)
    s.execute(delete(m.Schedule).where(m.Schedule.event_id.in_(event_ids)))
    s.execute(delete(m.ScheduleEvent).where(m.ScheduleEvent.rel_id == 201))
    s.execute(update(m.TaskItem).where(m.TaskItem.id == 201).values(status=1, embedded_time=None))


@pytest.mark.parametrize(
    "sabotage,code",
    [
        (_row_vanished, "stale"),  # a moved task's old row is gone
        (_period_taken, "conflict"),  # a target period is held in the database
        (_item_scheduled_meanwhile, "stale"),  # a placed item is no longer pending
        (_item_deleted, "stale"),  # a placed item vanished
        (_host_gone, "conflict"),  # the host's periods for a guest are gone
        (_guest_place_taken, "conflict"),  # the host's periods already carry a guest
        (_event_moved, "stale"),  # a moved task's placement was taken off meanwhile
    ],
)
def test_failed_commit_leaves_the_database_unchanged(
    sample_store: Store, db_path: Path, sabotage: Any, code: str
):
    """Tests that when any one change of a multi-change session cannot be written, the commit
    reports it and the database is the same row for row and byte for byte."""
    tb = _session(sample_store, FAILING)
    with sample_store.session(write=True) as s:
        sabotage(s)
    rows = table_rows(sample_store)
    digest = file_digest(db_path) if db_path.exists() else ""
    result = sample_store.commit(USER, tb.state, tb.changes)
    assert (result.ok, result.error_code) == (False, code), result
    assert result.error and result.rows_inserted == 0
    assert table_rows(sample_store) == rows
    if sample_store.engine.dialect.name == "sqlite":  # the embedded file is untouched too
        assert file_digest(db_path) == digest


def _unknown_task(changes: list[Change]) -> list[Change]:
    return [*changes, Change("move", 999, "existing", "existing", None, None, None, None)]


def _block_the_state_lacks(changes: list[Change]) -> list[Change]:
    last = changes[-1]
    wrong = SlotRange(day=last.block_after.day, slot_start=10, slot_end=12)  # type: ignore[union-attr]
    return [
        *changes[:-1],
        Change(
            last.op,
            last.task_id,
            last.status_before,
            last.status_after,
            last.block_before,
            wrong,
            None,
            None,
        ),
    ]


@pytest.mark.parametrize(
    "tamper,code",
    [
        (_unknown_task, "invalid_changes"),  # the log names a task the state does not hold
        (_block_the_state_lacks, "invalid_changes"),  # the log and the state disagree
    ],
)
def test_change_logs_that_do_not_fit_the_state_are_refused(
    sample_store: Store, tamper: Any, code: str
):
    """Tests that a change log inconsistent with the state is refused before anything is
    written."""
    tb = _session(sample_store, FAILING)
    rows = table_rows(sample_store)
    result = sample_store.commit(USER, tb.state, tamper(list(tb.changes)))
    assert (result.ok, result.error_code) == (False, code)
    assert table_rows(sample_store) == rows


def test_committing_twice_is_refused_as_stale(sample_store: Store):
    """Tests that replaying a committed log fails the optimistic check and writes nothing."""
    tb = _session(sample_store, MIXED)
    assert sample_store.commit(USER, tb.state, tb.changes).ok
    rows = table_rows(sample_store)
    again = sample_store.commit(USER, tb.state, tb.changes)
    assert (again.ok, again.error_code) == (False, "stale")
    assert table_rows(sample_store) == rows


def test_another_users_commit_finds_nothing_to_change(sample_store: Store):
    """Tests that a session's log committed under another user id touches none of the owner's
    rows (its rows are not found: stale)."""
    tb = _session(sample_store, MOVE)
    rows = table_rows(sample_store)
    result = sample_store.commit(OTHER_USER, tb.state, tb.changes)
    assert (result.ok, result.error_code) == (False, "stale")
    assert table_rows(sample_store) == rows


def test_an_empty_log_commits_nothing(sample_store: Store):
    """Tests that committing no changes succeeds without touching the tables."""
    rows = table_rows(sample_store)
    state = reload(sample_store, load_window("sample_window"))
    assert sample_store.commit(USER, state, []).ok
    assert table_rows(sample_store) == rows


# ---------------------------------------------------------------------------------- property
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_sessions_commit_and_reload(data: st.DataObject):
    """Tests that for random Toolbox write sequences (valid and invalid calls) on synthetic
    windows, two rounds of commit + load_window give back the in-memory state each time."""
    state: ScheduleState = data.draw(windows(min_days=7, max_days=20))
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.from_url(f"sqlite:///{tmp}/prop.db")
        try:
            store.seed_from_state(USER, state)
            tb = Toolbox(reload(store, state), self_check=True)
            for _ in range(2):
                for _ in range(data.draw(st.integers(3, 16), label="calls")):
                    assert tb.state is not None
                    name, args = data.draw(write_calls(tb.state), label="call")
                    if storable(tb.state, (name, args)):
                        tb.call(name, args)
                assert tb.state is not None
                event(f"changes in the round: {min(len(tb.changes), 3)}+")
                result = store.commit(USER, tb.state, tb.changes)
                assert result.ok, result
                tb.changes.clear()
                assert cell_view(reload(store, tb.state)) == cell_view(tb.state)
        finally:
            store.dispose()


def test_a_state_without_day_mapping_cannot_be_committed(sample_store: Store):
    """Tests that a session whose window lost its day mapping is refused (days cannot be turned
    back into weeks) before anything is written."""
    tb = _session(sample_store, MOVE)
    assert tb.state is not None
    tb.state.window.day_mapping = []
    rows = table_rows(sample_store)
    result = sample_store.commit(USER, tb.state, tb.changes)
    assert (result.ok, result.error_code) == (False, "invalid_changes")
    assert "day_mapping" in result.error
    assert table_rows(sample_store) == rows


# ---------------------------------------------------------------------------------- concurrency
HOST_OFF_DAY3: list[Call] = COURSE_BLOCK  # A: water course [6]'s block leaves day 3
GUEST_INTO_DAY3: list[Call] = EMBED  # B: [15] embeds into that very block


def _items_and_events_hold(store: Store) -> None:
    """No task lost: every applied item (status 2) has its task event holding sections or a
    host row carrying it, and every task event holds sections."""
    with store.session() as s:
        applied = s.scalars(select(m.TaskItem.id).where(m.TaskItem.status == 2)).all()
        placed = dict(
            s.execute(
                select(m.ScheduleEvent.rel_id, m.ScheduleEvent.id).where(
                    m.ScheduleEvent.user_id == USER, m.ScheduleEvent.type == "task"
                )
            ).all()
        )
        owners = set(s.scalars(select(m.Schedule.event_id).where(m.Schedule.user_id == USER)))
        guests = set(
            s.scalars(
                select(m.Schedule.embedded_task_id).where(
                    m.Schedule.user_id == USER, m.Schedule.embedded_task_id.is_not(None)
                )
            )
        )
    for item in applied:
        assert (item in placed and placed[item] in owners) or item in guests, (
            f"applied item {item} holds no section"
        )
    for ev in placed.values():
        assert ev in owners, f"task event {ev} holds no section"


@pytest.mark.parametrize(
    "first,second",
    [(GUEST_INTO_DAY3, HOST_OFF_DAY3), (HOST_OFF_DAY3, GUEST_INTO_DAY3)],
    ids=["guest_first", "host_first"],
)
def test_a_guest_committed_meanwhile_is_never_lost(
    sample_store: Store, first: list[Call], second: list[Call]
):
    """Tests issue 12 item 1: two sessions on one loaded window; one moves the water course's
    block off day 3, the other embeds [15] into it. Whichever commits second is refused (the
    host's rows now carry a guest, or the host left), the database keeps the first commit exactly,
    and [15] is still in the window on reload."""
    a, b = _session(sample_store, first), _session(sample_store, second)
    assert sample_store.commit(USER, a.state, a.changes).ok
    rows = table_rows(sample_store)
    refused = sample_store.commit(USER, b.state, b.changes)
    assert not refused.ok and refused.error_code in ("stale", "conflict"), refused
    assert refused.detail["reason"] in ("guest_added", "host_not_free")
    assert table_rows(sample_store) == rows
    assert a.state is not None
    back = reload(sample_store, a.state)
    assert cell_view(back) == cell_view(a.state)
    assert {t.source_id for t in back.tasks if t.source == "task_item"} == {
        t.source_id for t in a.state.tasks if t.source == "task_item"
    }
    _items_and_events_hold(sample_store)


def test_racing_commits_keep_every_task(sample_store: Store):
    """Tests that the two sessions above committed from two threads at once (several rounds,
    the database reset each time) always end with exactly one commit accepted and no task
    lost: the row locks serialise the optimistic checks."""
    base = load_window("sample_window")
    for _ in range(4):
        a, b = _session(sample_store, HOST_OFF_DAY3), _session(sample_store, GUEST_INTO_DAY3)
        with ThreadPoolExecutor(2) as pool:
            done = list(
                pool.map(lambda tb: sample_store.commit(USER, tb.state, tb.changes), [a, b])
            )
        assert sorted(r.ok for r in done) == [False, True], done
        winner = a if done[0].ok else b
        assert winner.state is not None
        assert cell_view(reload(sample_store, winner.state)) == cell_view(winner.state)
        _items_and_events_hold(sample_store)
        _reset(sample_store, base)


def _reset(store: Store, state: ScheduleState) -> None:
    """The user's rows back to ``state`` (rows deleted and seeded again, no DDL)."""
    with store.session(write=True) as s:
        for table in reversed(m.ALL_TABLES):
            s.execute(delete(table))
    store.seed_from_state(USER, state)


def _session_on(state: ScheduleState, calls: list[Call]) -> Toolbox:
    tb = Toolbox(state.model_copy(deep=True), self_check=True)
    for name, args in calls:
        tb.call(name, args)
    return tb


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_concurrent_change_logs_never_lose_or_duplicate_a_task(store: Store, data: st.DataObject):
    """Tests the property of issue 12 item 1 on SQLite, PostgreSQL and MariaDB: two sessions
    load one user's window, make random writes (valid and invalid), and commit in both orders.
    The first commit is always accepted; the second either is accepted or refused with
    ``stale``/``conflict`` leaving the database as the first left it; either way every task item
    of the window is there exactly once on reload and no placed event is left without periods."""
    sample = data.draw(st.booleans(), label="sample window")
    state = (
        load_window("sample_window")
        if sample
        else data.draw(windows(min_days=7, max_days=14), label="window")
    )
    _reset(store, state)
    loaded = reload(store, state)
    # On the sample window the known race (issue 12 item 1) may open the two logs.
    race = sample and data.draw(st.booleans(), label="known race first")
    logs: list[list[Call]] = []
    for label, opening in (("A", HOST_OFF_DAY3), ("B", GUEST_INTO_DAY3)):
        tb = Toolbox(loaded.model_copy(deep=True), self_check=True)
        calls: list[Call] = list(opening) if race else []
        for call in calls:
            tb.call(*call)
        for _ in range(data.draw(st.integers(1, 8), label=f"calls {label}")):
            assert tb.state is not None
            call = data.draw(write_calls(tb.state), label=f"call {label}")
            if storable(tb.state, call):
                calls.append(call)
                tb.call(*call)
        logs.append(calls)
    items = sorted(t.source_id for t in loaded.tasks if t.source == "task_item")
    for order in ((0, 1), (1, 0)):
        if order == (1, 0):
            _reset(store, state)
        first, second = (_session_on(loaded, logs[i]) for i in order)
        assert first.state is not None and second.state is not None
        assert store.commit(USER, first.state, first.changes).ok
        rows = table_rows(store)
        result = store.commit(USER, second.state, second.changes)
        event(f"second commit: {result.error_code or 'ok'}")
        if not result.ok:
            assert result.error_code in ("stale", "conflict"), result
            assert table_rows(store) == rows
            assert cell_view(reload(store, first.state)) == cell_view(first.state)
        back = reload(store, first.state)
        assert sorted(t.source_id for t in back.tasks if t.source == "task_item") == items
        _items_and_events_hold(store)


def test_a_refused_insert_prints_nothing(
    sample_store: Store,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
):
    """Tests issue 12 item 14: when a period is taken between the optimistic check and the insert
    (a concurrent commit; simulated by hiding the database's rows from the check), the database
    refuses the insert, the commit answers ``conflict`` with nothing written, and no driver noise
    (psycopg's "pipeline aborted") reaches stderr or the log."""
    from smartflow_engine.store import commit as commit_module

    tb = _session(sample_store, PLACE)  # [11] → day 6 (week 7, Saturday) periods 1-3
    with sample_store.session(write=True) as s:
        s.add(m.ScheduleEvent(id=900, user_id=USER, name="讲座", type="course"))
        s.flush()
        s.add(m.Schedule(user_id=USER, event_id=900, week=7, day_of_week=6, section=2))
    rows = table_rows(sample_store)
    real_init = commit_module._Rows.__init__

    def blind(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        self.cells.clear()

    monkeypatch.setattr(commit_module._Rows, "__init__", blind)
    capfd.readouterr()
    result = sample_store.commit(USER, tb.state, tb.changes)
    assert (result.ok, result.error_code) == (False, "conflict"), result
    assert table_rows(sample_store) == rows
    assert capfd.readouterr().err == ""
    assert not [r for r in caplog.records if "pipeline" in r.getMessage()]
