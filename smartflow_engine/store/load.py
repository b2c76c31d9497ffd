"""``load_window``: a :class:`ScheduleState` from the backend's four tables, derived as
SmartFlow-Agent derives it (``backend/services/agent/conv/schedule_state.go``; issue 41).

- Events holding sections in the window are existing tasks (locked = course and not embeddable,
  category "课程" for a course); a task event of a task item (``rel_id``, ``task_source_type``
  ``task_item``) is that item's placement and loads as ``source="task_item"``.
- A task item is placed when it has a task event, a host row carrying it (``schedules.
  embedded_task_id``: a guest in a water course, with the host's sections) or an
  ``embedded_time`` inside the window; otherwise, with ``status`` NULL or 1, it is pending with
  duration ``total_slots // number of items`` (else 2; an extension row's duration wins).
- Task classes: those of the loaded items, with their fields (``excluded_slots`` half-day blocks,
  ``excluded_days_of_week``, ``allow_filler_course``, dates, profile) and extension fields.
- One user's rows only (items through their class's ``user_id``).
- ``state_id``: 1.. in the order ``(source_id, source)``, so that writing a session back and
  loading the window again gives every task the id it had.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import func, inspect, or_, select
from sqlalchemy.orm import Session

from ..state import DayMapping, ScheduleState, StateError
from . import models as m
from .days import DayIndex, StoreError, compress, split_for_guests

COURSE_CATEGORY = "课程"
TASK_CATEGORY = "任务"  # a class without a name (the backend's fallback)
DEFAULT_DURATION = 2  # §3.3: an item's duration when its class budget does not say
_SOURCE_RANK = {"event": 0, "task_item": 1}
PENDING_STATUSES = (None, m.ITEM_UNSCHEDULED)


@dataclass
class _Placed:
    """The sections one event holds in the window, per day, and the items its rows carry."""

    owner: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    hosted: dict[tuple[int, int], list[int]] = field(  # (day, guest item) -> sections
        default_factory=lambda: defaultdict(list)
    )


def derived_locked(event_type: str, can_be_embedded: bool) -> bool:
    """§3.3: locked = type "course" and not can_be_embedded."""
    return event_type == "course" and not can_be_embedded


def derived_category(event_type: str, class_name: str | None) -> str:
    """§3.3: "课程" for a course, else the related task class's name."""
    return COURSE_CATEGORY if event_type == "course" else (class_name or TASK_CATEGORY)


def fallback_duration(total_slots: int | None, item_count: int, slots_per_day: int) -> int:
    """§3.3: an item's duration is its class's total_slots // item count, else 2."""
    if total_slots and item_count > 0 and total_slots // item_count > 0:
        return min(slots_per_day, total_slots // item_count)
    return min(DEFAULT_DURATION, slots_per_day)


def as_date_text(value: date | datetime | str | None) -> str | None:
    """A stored class date as YYYY-MM-DD (``None`` stays ``None``)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)[:10]


def has_extension(session: Session) -> bool:
    """Whether this database holds our extension table."""
    return bool(inspect(session.connection()).has_table(m.EXTENSION_TABLE))


def extensions(session: Session, kind: str, ids: Collection[int]) -> dict[int, dict[str, Any]]:
    """The extension data of rows ``ids`` of ``kind`` (empty without the extension table)."""
    if not ids or not has_extension(session):
        return {}
    return {
        int(ref): dict(data or {})
        for ref, data in session.execute(
            select(m.Extension.ref_id, m.Extension.data).where(
                m.Extension.kind == kind, m.Extension.ref_id.in_(list(ids))
            )
        )
    }


def owned_items(user_id: int) -> Any:
    """``task_items.category_id IN (the user's classes)``: items have no user_id of their own."""
    return m.TaskItem.category_id.in_(select(m.TaskClass.id).where(m.TaskClass.user_id == user_id))


def is_task_event(event: Any) -> bool:
    """A task event placing a task item (``rel_id`` the item)."""
    return (
        event.type == "task"
        and event.rel_id is not None
        and (event.task_source_type or m.TASK_SOURCE_ITEM) == m.TASK_SOURCE_ITEM
    )


def load_window(
    session: Session,
    user_id: int,
    day_mapping: Iterable[DayMapping | Mapping[str, Any]],
    *,
    slots_per_day: int = 12,
    task_class_ids: Collection[int] | None = None,
    semester_start: str | None = None,
) -> ScheduleState:
    days = DayIndex.build(day_mapping)
    first_week, last_week = days.week_range

    # Sections held in the window (one query, the unique key's index serves it).
    placed: dict[int, _Placed] = defaultdict(_Placed)
    rows = session.execute(
        select(
            m.Schedule.event_id,
            m.Schedule.week,
            m.Schedule.day_of_week,
            m.Schedule.section,
            m.Schedule.embedded_task_id,
        ).where(
            m.Schedule.user_id == user_id,
            m.Schedule.week >= first_week,
            m.Schedule.week <= last_week,
        )
    ).all()
    for event_id, week, dow, section, guest_item in rows:
        day = days.day_of(week, dow)
        if day is None:
            continue
        if not 1 <= section <= slots_per_day:
            raise StoreError(
                f"schedules row of event {event_id} at week {week} day_of_week {dow} "
                f"has section {section}, outside 1-{slots_per_day}"
            )
        placed[event_id].owner[day].append(section)
        if guest_item is not None:
            placed[event_id].hosted[(day, int(guest_item))].append(section)

    events = (
        session.scalars(
            select(m.ScheduleEvent).where(
                m.ScheduleEvent.user_id == user_id, m.ScheduleEvent.id.in_(list(placed))
            )
        ).all()
        if placed
        else []
    )
    missing = set(placed) - {e.id for e in events}
    if missing:
        raise StoreError(f"schedules rows refer to events {sorted(missing)} the user does not own")

    # Items: those placed through events or host rows, and the pending ones (of the classes
    # asked for), all of the user's classes.
    linked = {int(e.rel_id or 0) for e in events if is_task_event(e)}
    guests = {g for p in placed.values() for (_, g) in p.hosted}
    item_filter = or_(m.TaskItem.status.is_(None), m.TaskItem.status == m.ITEM_UNSCHEDULED)
    item_filter |= m.TaskItem.embedded_time.is_not(None)
    if task_class_ids is not None:
        item_filter &= m.TaskItem.category_id.in_(list(task_class_ids))
    items = {
        it.id: it
        for it in session.scalars(
            select(m.TaskItem).where(
                owned_items(user_id), or_(m.TaskItem.id.in_(list(linked | guests)), item_filter)
            )
        )
    }
    unknown = sorted((linked | guests) - set(items))
    if unknown:
        raise StoreError(
            f"the user's schedules and events refer to task items {unknown} of no class of the user"
        )

    class_ids = {it.category_id for it in items.values() if it.category_id is not None}
    classes = {
        c.id: c
        for c in session.scalars(
            select(m.TaskClass).where(
                m.TaskClass.user_id == user_id, m.TaskClass.id.in_(list(class_ids))
            )
        )
    }
    counts: dict[int, int] = dict(
        session.execute(  # type: ignore[arg-type]
            select(m.TaskItem.category_id, func.count())
            .where(m.TaskItem.category_id.in_(list(classes)))
            .group_by(m.TaskItem.category_id)
        ).all()
    )
    orders = _orders(session, list(classes))
    class_ext = extensions(session, "task_class", list(classes))
    item_ext = extensions(session, "task_item", list(items))
    event_ext = extensions(session, "event", [e.id for e in events])

    class_dicts = {
        cid: class_dict(row, class_ext.get(cid, {}), days) for cid, row in classes.items()
    }
    tasks: list[dict[str, Any]] = []
    host_of: dict[int, int] = {}  # guest item id -> host event id
    event_task: dict[int, dict[str, Any]] = {}  # event id -> its task
    placed_items: set[int] = set()
    for event in events:
        held = placed[event.id]
        item = items.get(int(event.rel_id or 0)) if is_task_event(event) else None
        task = _event_task(event, item, classes, orders)
        if item is None:  # a lock or category of ours the derivation does not give
            task.update(event_ext.get(event.id, {}))
        blocks: list[dict[str, int]] = []
        guests_by_day: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for (day, guest), sections in held.hosted.items():
            guests_by_day[day] += compress(sections)
            host_of[guest] = event.id
        for day, sections in sorted(held.owner.items()):
            for run in compress(sections):
                for a, b in split_for_guests(run, guests_by_day.get(day, ())):
                    blocks.append({"day": day, "slot_start": a, "slot_end": b})
        task["slots"] = blocks
        tasks.append(task)
        event_task[event.id] = task
        if item is not None:
            placed_items.add(item.id)
    guest_blocks: dict[int, list[dict[str, int]]] = defaultdict(list)
    for event in events:
        for (day, guest), sections in sorted(placed[event.id].hosted.items()):
            guest_blocks[guest] += [
                {"day": day, "slot_start": a, "slot_end": b} for a, b in compress(sections)
            ]

    for item in items.values():
        if item.id in placed_items:
            continue
        row = classes.get(item.category_id) if item.category_id is not None else None
        task = _item_task(item, row, orders)
        ext = item_ext.get(item.id, {})
        if item.id in guest_blocks:
            task["status"] = "existing"
            task["slots"] = guest_blocks[item.id]
        elif (slots := _target_slots(item.embedded_time, days)) is not None:
            task["status"] = "existing"
            task["slots"] = slots
        elif item.status in PENDING_STATUSES:
            if item.category_id in class_dicts and class_dicts[item.category_id].get("_misses"):
                continue  # its class's days miss this window
            task["status"] = "pending"
            duration = ext.get("duration")
            task["duration"] = (
                min(int(duration), slots_per_day)
                if duration
                else fallback_duration(
                    row.total_slots if row is not None else None,
                    counts.get(item.category_id, 0) if item.category_id is not None else 0,
                    slots_per_day,
                )
            )
        else:
            continue  # applied somewhere outside the window
        tasks.append(task)

    tasks.sort(key=lambda t: (t["source_id"], _SOURCE_RANK[t["source"]]))
    by_item = {t["source_id"]: t for t in tasks if t["source"] == "task_item"}
    for sid, task in enumerate(tasks, start=1):
        task["state_id"] = sid
    for guest, host_event in host_of.items():
        if guest in by_item:
            by_item[guest]["embed_host"] = event_task[host_event]["state_id"]

    referenced = {t["category_id"] for t in tasks if t.get("category_id") is not None}
    task_classes = [
        {k: v for k, v in class_dicts[cid].items() if k != "_misses"}
        for cid in sorted(referenced & set(classes))
        if _constrains(class_dicts[cid])
    ]
    window: dict[str, Any] = {
        "total_days": days.num_days,
        "slots_per_day": slots_per_day,
        "day_mapping": [d.model_dump() for d in days.mapping],
    }
    if semester_start is not None:
        window["semester_start"] = semester_start
    data = {"window": window, "tasks": tasks, "task_classes": task_classes}
    try:
        return ScheduleState.model_validate(data)
    except (StateError, ValueError) as exc:
        raise StoreError(
            f"the stored window of user {user_id} is not a valid state: {str(exc).splitlines()[0]}"
        ) from None


def _orders(session: Session, class_ids: list[int]) -> dict[int, int]:
    """Each item's place in its class: its ``order`` when above 0 (an item without one is bound
    by no order; SmartFlow-Agent numbers such legacy rows by position, docs/decisions.md)."""
    if not class_ids:
        return {}
    return {
        int(iid): int(order or 0)
        for iid, order in session.execute(
            select(m.TaskItem.id, m.TaskItem.order).where(
                m.TaskItem.category_id.in_(class_ids), m.TaskItem.order > 0
            )
        )
    }


def _item_task(item: Any, row: Any, orders: Mapping[int, int]) -> dict[str, Any]:
    task: dict[str, Any] = {
        "source": "task_item",
        "source_id": item.id,
        "name": item.content or "",
        "category": (row.name if row is not None and row.name else TASK_CATEGORY),
    }
    if item.category_id is not None:
        task["category_id"] = item.category_id
        if item.id in orders:
            task["task_order"] = orders[item.id]
    return task


def _event_task(
    event: m.ScheduleEvent, item: Any, classes: Mapping[int, m.TaskClass], orders: Mapping[int, int]
) -> dict[str, Any]:
    """The state task of one event holding sections in the window."""
    if item is not None:
        row = classes.get(item.category_id) if item.category_id is not None else None
        task = _item_task(item, row, orders)
    else:
        task = {
            "source": "event",
            "source_id": event.id,
            "name": event.name,
            "category": derived_category(event.type, None),
        }
    task["status"] = "existing"
    task["locked"] = derived_locked(event.type, event.can_be_embedded)
    if event.can_be_embedded:
        task["can_embed"] = True
    return task


def _target_slots(target: Any, days: DayIndex) -> list[dict[str, int]] | None:
    """An item's ``embedded_time`` as one block, when it is well formed and in the window."""
    if not isinstance(target, Mapping):
        return None
    try:
        week, dow = int(target["week"]), int(target["day_of_week"])
        a, b = int(target["section_from"]), int(target["section_to"])
    except (KeyError, TypeError, ValueError):
        return None
    day = days.day_of(week, dow)
    if day is None or a < 1 or b < a:
        return None
    return [{"day": day, "slot_start": a, "slot_end": b}]


_NEUTRAL: dict[str, Any] = {
    "allow_filler_course": True,
    "excluded_slots": [],
    "excluded_days_of_week": [],
}


def _constrains(data: Mapping[str, Any]) -> bool:
    """Whether a class says anything beyond its id and name (a bare class is left out)."""
    return any(
        value != _NEUTRAL.get(key)
        for key, value in data.items()
        if key not in ("id", "name", "_misses")
    )


def class_dict(row: m.TaskClass, ext: Mapping[str, Any], days: DayIndex) -> dict[str, Any]:
    """A stored class as the state's task class (the reference system's TaskClassMeta fields
    plus the extension's; its teaching-week ``start``/``end`` as window days, clamped)."""
    out: dict[str, Any] = {
        "id": row.id,
        "name": row.name or TASK_CATEGORY,
        "strategy": row.strategy,
        "total_slots": row.total_slots,
        "allow_filler_course": True if row.allow_filler_course is None else row.allow_filler_course,
        "excluded_slots": list(row.excluded_slots or []),
        "excluded_days_of_week": list(row.excluded_days_of_week or []),
        "start_date": as_date_text(row.start_date),
        "end_date": as_date_text(row.end_date),
        "subject_type": row.subject_type or None,
        "difficulty_level": row.difficulty_level or None,
        "cognitive_intensity": row.cognitive_intensity or None,
    }
    from ..state.model import TaskClass as StateClass

    start, end = ext.get("start"), ext.get("end")
    first = last = None
    if isinstance(start, Mapping):
        first = days.first_day_from(int(start["week"]), int(start["day_of_week"]))
        out["start_day"] = first
    if isinstance(end, Mapping):
        last = days.last_day_until(int(end["week"]), int(end["day_of_week"]))
        out["end_day"] = last
    misses = (
        (isinstance(start, Mapping) and first is None)
        or (isinstance(end, Mapping) and last is None)
        or (first is not None and last is not None and first > last)
    )
    if misses:  # the class's days miss this window: no bound of ours (its items stay out)
        out["start_day"] = out["end_day"] = None
        out["_misses"] = True

    for key, value in ext.items():
        if (
            key in StateClass.model_fields
            and key not in ("start_day", "end_day")
            and (key not in out or out[key] is None)
        ):
            out[key] = value
    return out


def as_stored(state: ScheduleState) -> dict[str, Any]:
    """A session's state as the backend's tables keep it: ``suggested`` is the session's word
    (a confirmed placement is existing), a placed item's duration is its block; the rest as
    :meth:`ScheduleState.to_dict`. ``as_stored(reload) == as_stored(session)`` after a commit."""
    data = state.to_dict()
    for task in data["tasks"]:
        if task.get("status") == "suggested":
            task["status"] = "existing"
        if task.get("status") != "pending":
            task.pop("duration", None)
    return data
