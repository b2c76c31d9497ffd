"""``seed_from_state``: import a §3.1 state into the tables (the demo, tests, benchmarks).

Every task becomes rows the loader reads back as the same task: an ``event`` task a
``schedule_events`` row (id = ``source_id``); a ``task_item`` task a ``task_class_items`` row
(id = ``source_id``) plus, when placed, its ``schedule_events`` placement; every block one
``schedules`` row per period; a guest's block the ``embedded_event_id`` of its host's rows.
``locked`` and ``category`` are stored only where they differ from the spec's derivation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from ..state import ScheduleState, Task
from . import models as m
from .commit import insert_rows
from .days import DayIndex, StoreError, expand
from .load import COURSE_CATEGORY, derived_category, derived_locked

_TASK_CLASS_KNOWN = {
    "id",
    "name",
    "total_slots",
    "start_day",
    "end_day",
    "excluded_slots",
    "strategy",
    "tolerance_preference",
}


@dataclass
class SeedResult:
    """Ids given to the state's rows: old id → stored id (identity with ``keep_ids``)."""

    class_ids: dict[int, int] = field(default_factory=dict)
    item_ids: dict[int, int] = field(default_factory=dict)
    event_ids: dict[int, int] = field(default_factory=dict)
    schedule_rows: int = 0


def seed_from_state(
    session: Session, user_id: int, state: ScheduleState, *, keep_ids: bool = True
) -> SeedResult:
    if not state.window.day_mapping:
        raise StoreError(
            "the state has no window.day_mapping: days cannot be mapped to (week, day_of_week)"
        )
    days = DayIndex.build(state.window.day_mapping)
    seen: dict[tuple[str, int], Task] = {}
    for task in state.tasks:
        if task.source not in ("event", "task_item"):
            raise StoreError(
                f"task [{task.state_id}] {task.name}: source {task.source!r} is "
                f"neither 'event' nor 'task_item'"
            )
        key = (task.source, task.source_id)
        if key in seen:
            raise StoreError(
                f"tasks [{seen[key].state_id}] and [{task.state_id}] share source "
                f"{task.source} {task.source_id}"
            )
        seen[key] = task
        if task.source == "task_item" and task.category_id is None:
            raise StoreError(
                f"task [{task.state_id}] {task.name}: a task_item needs a "
                f"category_id (its task class)"
            )
    result = SeedResult()

    # Task classes: the state's, plus a bare one for every other category_id a task uses.
    class_rows: dict[int, m.TaskClass] = {}
    for tc in state.task_classes:
        extras = {k: v for k, v in (tc.model_extra or {}).items() if k not in _TASK_CLASS_KNOWN}
        start = days.weekday(tc.start_day) if tc.start_day is not None else (None, None)
        end = days.weekday(tc.end_day) if tc.end_day is not None else (None, None)
        class_rows[tc.id] = m.TaskClass(
            user_id=user_id,
            name=tc.name,
            total_slots=tc.total_slots,
            start_week=start[0],
            start_day_of_week=start[1],
            end_week=end[0],
            end_day_of_week=end[1],
            excluded_slots=list(tc.excluded_slots),
            strategy=tc.strategy,
            tolerance_preference=(tc.model_extra or {}).get("tolerance_preference"),
            preferences=extras,
            source="seed",
        )
    for task in state.tasks:
        cid = task.category_id
        if cid is not None and cid not in class_rows:
            class_rows[cid] = m.TaskClass(
                user_id=user_id,
                name=task.category,
                excluded_slots=[],
                preferences={},
                source="seed",
            )
    for task in state.tasks:
        if task.source == "task_item" and task.category_id is not None:
            name = class_rows[task.category_id].name
            if task.category != name:
                raise StoreError(
                    f"task [{task.state_id}] {task.name}: category {task.category!r} "
                    f"differs from its task class [{task.category_id}] {name!r}"
                )
    _insert(session, m.TaskClass, class_rows, keep_ids, result.class_ids)

    # Items, then events (explicit ids first, so auto-numbered placements come after them).
    item_rows: dict[int, m.TaskClassItem] = {}
    for pos, task in enumerate(t for t in state.tasks if t.source == "task_item"):
        assert task.category_id is not None
        item_rows[task.source_id] = m.TaskClassItem(
            user_id=user_id,
            category_id=result.class_ids[task.category_id],
            content=task.name,
            duration=task.duration,
            depends_on=[],
            position=pos,
            status="pending" if task.status == "pending" else "scheduled",
        )
    _insert(session, m.TaskClassItem, item_rows, keep_ids, result.item_ids)
    event_rows: dict[int, m.ScheduleEvent] = {}
    for task in state.tasks:
        if task.source == "event":
            event_rows[task.source_id] = _event_row(user_id, task, class_rows, result)
    _insert(session, m.ScheduleEvent, event_rows, keep_ids, result.event_ids)
    placements: dict[int, m.ScheduleEvent] = {}
    for task in state.tasks:
        if task.source == "task_item" and task.status != "pending":
            row = _event_row(user_id, task, class_rows, result)
            row.task_item_id = result.item_ids[task.source_id]
            placements[task.state_id] = row
    session.add_all(placements.values())
    session.flush()

    def event_id(task: Task) -> int:
        if task.source == "event":
            return result.event_ids[task.source_id]
        return placements[task.state_id].id

    rows: list[dict[str, Any]] = []
    for task in state.tasks:
        if task.embed_host is not None or not task.slots:
            continue
        eid = event_id(task)
        for block in task.slots:
            week, dow = days.weekday(block.day)
            rows += [
                {
                    "user_id": user_id,
                    "event_id": eid,
                    "week": week,
                    "day_of_week": dow,
                    "section": s,
                }
                for s in expand(block)
            ]
    insert_rows(session, rows)
    for task in state.tasks:
        if task.embed_host is None:
            continue
        host = state.task(task.embed_host)
        assert host is not None
        block = task.slots[0]
        week, dow = days.weekday(block.day)
        session.execute(
            update(m.Schedule)
            .where(
                m.Schedule.event_id == event_id(host),
                m.Schedule.week == week,
                m.Schedule.day_of_week == dow,
                m.Schedule.section.in_(list(expand(block))),
            )
            .values(embedded_event_id=event_id(task))
        )
    result.schedule_rows = len(rows)
    return result


def _event_row(
    user_id: int, task: Task, class_rows: dict[int, m.TaskClass], result: SeedResult
) -> m.ScheduleEvent:
    if task.source == "task_item":
        kind = "task"
    else:
        kind = "course" if task.category == COURSE_CATEGORY and task.category_id is None else "task"
    class_name = class_rows[task.category_id].name if task.category_id is not None else None
    category = derived_category(kind, class_name)
    locked = derived_locked(kind, task.can_embed)
    return m.ScheduleEvent(
        user_id=user_id,
        name=task.name,
        type=kind,
        can_be_embedded=task.can_embed,
        task_class_id=(
            result.class_ids[task.category_id] if task.category_id is not None else None
        ),
        status=task.status,
        duration=task.duration,
        locked=None if task.locked == locked else task.locked,
        category=None if task.category == category else task.category,
    )


def _insert(
    session: Session,
    table: type[m.Base],
    rows: dict[int, Any],
    keep_ids: bool,
    ids: dict[int, int],
) -> None:
    """Add ``rows`` (keyed by their state id) with that id, or auto-numbered; fill ``ids``."""
    if not rows:
        return
    if keep_ids:
        taken = session.scalars(
            select(table.id).where(table.id.in_(list(rows))).limit(1)  # type: ignore[attr-defined]
        ).first()
        if taken is not None:
            raise StoreError(
                f"{table.__tablename__} id {taken} is already taken; seed with "
                f"keep_ids=False to number the rows afresh"
            )
        for old, row in rows.items():
            row.id = old
    session.add_all(rows.values())
    session.flush()
    for old, row in rows.items():
        ids[old] = row.id
    if keep_ids:
        sync_sequence(session, table)


def sync_sequence(session: Session, table: type[m.Base]) -> None:
    """After rows with explicit ids, move PostgreSQL's id sequence past them (SQLite numbers
    from the largest rowid by itself)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    name = table.__tablename__
    top = session.scalar(select(func.max(table.id)))  # type: ignore[attr-defined]
    if top is not None:
        session.execute(
            text("SELECT setval(pg_get_serial_sequence(:t, 'id'), :v)"), {"t": name, "v": int(top)}
        )
