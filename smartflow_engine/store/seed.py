"""``seed_from_state``: import a §3.1 state into the tables (the demo, tests, benchmarks).

Every task becomes rows the loader reads back as the same task, written as SmartFlow-Agent's
backend writes them: an ``event`` task a ``schedule_events`` row (id = ``source_id``); a
``task_item`` task a ``task_items`` row (id = ``source_id``; ``status`` 2 and ``embedded_time``
when placed) plus, when placed in its own sections, its task event; every block one ``schedules``
row per section; a guest's block the ``embedded_task_id`` of its host's rows. Fields without a
column (a pending item's duration, a class's preferences) go to the extension table when there is
one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from ..state import ScheduleState, Task
from . import models as m
from .commit import Clock, _default_clock, insert_rows
from .days import DayIndex, StoreError, expand
from .load import COURSE_CATEGORY, derived_category, derived_locked, has_extension

# The state's task-class fields with a column of their own in task_classes.
_CLASS_COLUMNS = {
    "id",
    "name",
    "strategy",
    "total_slots",
    "allow_filler_course",
    "excluded_slots",
    "excluded_days_of_week",
    "start_date",
    "end_date",
    "subject_type",
    "difficulty_level",
    "cognitive_intensity",
}


@dataclass
class SeedResult:
    """Ids given to the state's rows: old id → stored id (identity with ``keep_ids``)."""

    class_ids: dict[int, int] = field(default_factory=dict)
    item_ids: dict[int, int] = field(default_factory=dict)
    event_ids: dict[int, int] = field(default_factory=dict)
    schedule_rows: int = 0


def _date(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def seed_from_state(
    session: Session,
    user_id: int,
    state: ScheduleState,
    *,
    keep_ids: bool = True,
    clock: Clock | None = None,
) -> SeedResult:
    if not state.window.day_mapping:
        raise StoreError(
            "the state has no window.day_mapping: days cannot be mapped to (week, day_of_week)"
        )
    days = DayIndex.build(state.window.day_mapping)
    times = clock or _default_clock()
    ext_ok = has_extension(session)
    seen: dict[tuple[str, int], Task] = {}
    for task in state.tasks:
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
        if task.source == "event" and task.status == "pending":
            raise StoreError(
                f"task [{task.state_id}] {task.name}: a pending event cannot be stored (the "
                f"backend's tables hold only task items as pending work)"
            )
        if task.embed_host is not None and task.source != "task_item":
            raise StoreError(
                f"task [{task.state_id}] {task.name}: only a task item can be embedded in a "
                f"course (the host's rows carry a task item id)"
            )
    result = SeedResult()

    # Task classes: the state's, plus a bare one for every other class id a task uses.
    class_rows: dict[int, m.TaskClass] = {}
    class_ext: dict[int, dict[str, Any]] = {}
    for tc in state.task_classes:
        class_rows[tc.id] = m.TaskClass(
            user_id=user_id,
            name=tc.name,
            mode="auto",
            strategy=tc.strategy,
            total_slots=tc.total_slots,
            allow_filler_course=tc.allow_filler_course,
            excluded_slots=list(tc.excluded_slots),
            excluded_days_of_week=list(tc.excluded_days_of_week),
            start_date=_date(tc.start_date),
            end_date=_date(tc.end_date),
            subject_type=tc.subject_type,
            difficulty_level=tc.difficulty_level,
            cognitive_intensity=tc.cognitive_intensity,
        )
        extra = tc.model_dump(
            exclude=_CLASS_COLUMNS | {"start_day", "end_day"},
            exclude_none=True,
            exclude_defaults=True,
        )
        # window days as teaching-week days (the loader maps them onto its window)
        for end_name, day in (("start", tc.start_day), ("end", tc.end_day)):
            if day is not None:
                week, dow = days.weekday(day)
                extra[end_name] = {"week": week, "day_of_week": dow}
        if extra:
            class_ext[tc.id] = extra
    for task in state.tasks:
        cid = task.category_id
        if cid is not None and cid not in class_rows:
            class_rows[cid] = m.TaskClass(user_id=user_id, name=task.category, mode="auto")
    for task in state.tasks:
        if task.source == "task_item" and task.category_id is not None:
            name = class_rows[task.category_id].name
            if task.category != name:
                raise StoreError(
                    f"task [{task.state_id}] {task.name}: category {task.category!r} "
                    f"differs from its task class [{task.category_id}] {name!r}"
                )
    _insert(session, m.TaskClass, class_rows, keep_ids, result.class_ids)

    item_rows: dict[int, m.TaskItem] = {}
    item_ext: dict[int, dict[str, Any]] = {}
    for task in state.tasks:
        if task.source != "task_item":
            continue
        assert task.category_id is not None
        placed = task.status != "pending" and bool(task.slots)
        target = None
        if placed:
            week, dow = days.weekday(task.slots[0].day)
            target = {
                "week": week,
                "day_of_week": dow,
                "section_from": task.slots[0].slot_start,
                "section_to": task.slots[0].slot_end,
            }
        item_rows[task.source_id] = m.TaskItem(
            category_id=result.class_ids[task.category_id],
            order=task.task_order,
            content=task.name,
            status=m.ITEM_APPLIED if placed else m.ITEM_UNSCHEDULED,
            embedded_time=target,
        )
        if task.status == "pending" and task.duration is not None:
            item_ext[task.source_id] = {"duration": task.duration}
    _insert(session, m.TaskItem, item_rows, keep_ids, result.item_ids)
    if ext_ok:
        session.add_all(
            [
                m.Extension(kind="task_class", ref_id=result.class_ids[k], data=v)
                for k, v in class_ext.items()
            ]
            + [
                m.Extension(kind="task_item", ref_id=result.item_ids[k], data=v)
                for k, v in item_ext.items()
            ]
        )

    event_rows: dict[int, m.ScheduleEvent] = {}
    for task in state.tasks:
        if task.source == "event":
            kind = task.event_type or (
                "course" if task.category == COURSE_CATEGORY or task.locked else "task"
            )
            event_rows[task.source_id] = m.ScheduleEvent(
                user_id=user_id,
                name=task.name[: m.NAME_LEN],
                location="",
                type=kind,
                task_source_type="",
                can_be_embedded=task.can_embed,
                **_event_times(times, task),
            )
    _insert(session, m.ScheduleEvent, event_rows, keep_ids, result.event_ids)
    if ext_ok:  # a lock or category the backend's derivation would not give
        event_ext = {}
        for task in state.tasks:
            if task.source != "event":
                continue
            row = event_rows[task.source_id]
            deviation: dict[str, Any] = {}
            if task.locked != derived_locked(row.type, row.can_be_embedded):
                deviation["locked"] = task.locked
            if task.category != derived_category(row.type, None):
                deviation["category"] = task.category
            if deviation:
                event_ext[result.event_ids[task.source_id]] = deviation
        session.add_all([m.Extension(kind="event", ref_id=k, data=v) for k, v in event_ext.items()])
    placements: dict[int, m.ScheduleEvent] = {}
    for task in state.tasks:
        if task.source == "task_item" and task.status != "pending" and task.embed_host is None:
            placements[task.state_id] = m.ScheduleEvent(
                user_id=user_id,
                name=task.name[: m.NAME_LEN],
                location="",
                type="task",
                rel_id=result.item_ids[task.source_id],
                task_source_type=m.TASK_SOURCE_ITEM,
                can_be_embedded=False,
                **_event_times(times, task),
            )
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
        for block in task.slots:
            week, dow = days.weekday(block.day)
            session.execute(
                update(m.Schedule)
                .where(
                    m.Schedule.event_id == event_id(host),
                    m.Schedule.week == week,
                    m.Schedule.day_of_week == dow,
                    m.Schedule.section.in_(list(expand(block))),
                )
                .values(embedded_task_id=result.item_ids[task.source_id])
            )
    result.schedule_rows = len(rows)
    return result


def _event_times(clock: Clock, task: Task) -> dict[str, Any]:
    if not task.slots:
        return {}
    block = task.slots[0]
    try:
        start, end = clock(block.slot_start, block.slot_end)
    except ValueError:
        return {}
    return {"start_time": start, "end_time": end}


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
