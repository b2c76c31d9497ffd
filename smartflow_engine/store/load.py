"""``load_window``: a :class:`ScheduleState` from the four tables (§3.3, §3.4, §3.5).

- Existing/suggested tasks: every ``schedule_events`` row holding periods in the window, with its
  ``schedules`` rows compressed into contiguous runs per day. An event linked to a task item
  (``task_item_id``) is the item's placement and loads as ``source="task_item"``.
- Pending tasks: task items with ``status="pending"`` (their class's time window must meet the
  planning window), and events taken off the timetable (``status="pending"``).
- Task classes: those the loaded tasks refer to, with the time window mapped onto day indexes;
  a class that constrains nothing (no budget, window, banned periods or strategy) is left out.
- ``state_id``: 1.. in the order ``(source_id, source)``, so that writing a session back and
  loading the window again gives every task the id it had.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from ..state import DayMapping, ScheduleState, StateError
from . import models as m
from .days import DayIndex, StoreError, compress, split_for_guests

COURSE_CATEGORY = "课程"
DEFAULT_DURATION = 2  # §3.3: an item's duration when neither it nor its class budget says
_SOURCE_RANK = {"event": 0, "task_item": 1}


@dataclass
class _Placed:
    """The periods one event holds in the window, per day (owner rows) or as a guest."""

    owner: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    guest: dict[tuple[int, int], list[int]] = field(  # (day, host event) -> sections
        default_factory=lambda: defaultdict(list)
    )
    hosted: dict[tuple[int, int], list[int]] = field(  # (day, guest event) -> sections
        default_factory=lambda: defaultdict(list)
    )


def derived_locked(event_type: str, can_be_embedded: bool) -> bool:
    """§3.3: locked = type "course" and not can_be_embedded."""
    return event_type == "course" and not can_be_embedded


def derived_category(event_type: str, class_name: str | None) -> str:
    """§3.3: "课程" for a course, else the related task class's name."""
    return COURSE_CATEGORY if event_type == "course" else (class_name or "")


def class_window(days: DayIndex, row: m.TaskClass) -> tuple[int | None, int | None, bool]:
    """``(start_day, end_day, meets_window)`` of a class's stored window on this planning window.

    Ends beyond the window are clamped to its first/last day; a window that misses the planning
    window entirely gives ``(None, None, False)``.
    """
    start = end = None
    if row.start_week is not None and row.start_day_of_week is not None:
        start = days.first_day_from(row.start_week, row.start_day_of_week)
        if start is None:
            return None, None, False
    if row.end_week is not None and row.end_day_of_week is not None:
        end = days.last_day_until(row.end_week, row.end_day_of_week)
        if end is None:
            return None, None, False
    if start is not None and end is not None and start > end:
        return None, None, False
    return start, end, True


def fallback_duration(total_slots: int | None, item_count: int, slots_per_day: int) -> int:
    """§3.3: an item without a duration gets its class's total_slots / item count, else 2."""
    if total_slots and item_count > 0:
        return max(1, min(slots_per_day, total_slots // item_count))
    return min(DEFAULT_DURATION, slots_per_day)


def load_window(
    session: Session,
    user_id: int,
    day_mapping: Iterable[DayMapping | Mapping[str, Any]],
    *,
    slots_per_day: int = 12,
    task_class_ids: Collection[int] | None = None,
) -> ScheduleState:
    days = DayIndex.build(day_mapping)
    first_week, last_week = days.week_range

    # Periods held in the window (one query, the unique key's index serves it).
    placed: dict[int, _Placed] = defaultdict(_Placed)
    rows = session.execute(
        select(
            m.Schedule.event_id,
            m.Schedule.week,
            m.Schedule.day_of_week,
            m.Schedule.section,
            m.Schedule.embedded_event_id,
        ).where(
            m.Schedule.user_id == user_id,
            m.Schedule.week >= first_week,
            m.Schedule.week <= last_week,
        )
    ).all()
    for event_id, week, dow, section, guest_id in rows:
        day = days.day_of(week, dow)
        if day is None:
            continue
        if not 1 <= section <= slots_per_day:
            raise StoreError(
                f"schedules row of event {event_id} at week {week} day_of_week {dow} "
                f"has section {section}, outside 1-{slots_per_day}"
            )
        placed[event_id].owner[day].append(section)
        if guest_id is not None:
            placed[guest_id].guest[(day, event_id)].append(section)
            placed[event_id].hosted[(day, guest_id)].append(section)

    # Events: the ones holding periods, and the ones waiting to be placed again.
    pending_event_filter = m.ScheduleEvent.status == "pending"
    if task_class_ids is not None:
        pending_event_filter &= m.ScheduleEvent.task_class_id.in_(list(task_class_ids))
    events = session.scalars(
        select(m.ScheduleEvent).where(
            m.ScheduleEvent.user_id == user_id,
            or_(m.ScheduleEvent.id.in_(list(placed)), pending_event_filter),
        )
    ).all()
    missing = set(placed) - {e.id for e in events}
    if missing:
        raise StoreError(f"schedules rows refer to events {sorted(missing)} the user does not own")

    # Items: the placed ones (through their events) and the pending ones.
    linked = [e.task_item_id for e in events if e.task_item_id is not None]
    item_filter = m.TaskClassItem.status == "pending"
    if task_class_ids is not None:
        item_filter &= m.TaskClassItem.category_id.in_(list(task_class_ids))
    items = {
        it.id: it
        for it in session.scalars(
            select(m.TaskClassItem).where(
                m.TaskClassItem.user_id == user_id,
                or_(m.TaskClassItem.id.in_(linked), item_filter),
            )
        )
    }

    class_ids = {it.category_id for it in items.values()}
    class_ids |= {e.task_class_id for e in events if e.task_class_id is not None}
    classes = {
        c.id: c
        for c in session.scalars(
            select(m.TaskClass).where(
                m.TaskClass.user_id == user_id, m.TaskClass.id.in_(list(class_ids))
            )
        )
    }
    counts: dict[int, int] = dict(
        session.execute(
            select(m.TaskClassItem.category_id, func.count())
            .where(m.TaskClassItem.category_id.in_(list(classes)))
            .group_by(m.TaskClassItem.category_id)
        ).all()
    )
    windows = {cid: class_window(days, row) for cid, row in classes.items()}

    tasks: list[dict[str, Any]] = []
    host_of: dict[int, int] = {}  # guest event id -> host event id
    event_of: dict[int, dict[str, Any]] = {}  # event id -> its task
    for event in events:
        item = items.get(event.task_item_id) if event.task_item_id is not None else None
        if event.task_item_id is not None and item is None:
            raise StoreError(
                f"event {event.id} is the placement of task item "
                f"{event.task_item_id}, which the user does not own"
            )
        task = _event_task(event, item, classes, placed.get(event.id), host_of)
        if task is None:
            continue
        tasks.append(task)
        event_of[event.id] = task
    scheduled_items = {e.task_item_id for e in events}
    for item in items.values():
        if item.status != "pending" or item.id in scheduled_items:
            continue
        if not windows.get(item.category_id, (None, None, True))[2]:
            continue  # its class's window misses this planning window
        row = classes.get(item.category_id)
        tasks.append(
            {
                "source": "task_item",
                "source_id": item.id,
                "name": item.content,
                "category": row.name if row is not None else "",
                "status": "pending",
                "duration": min(item.duration, slots_per_day)
                if item.duration
                else fallback_duration(
                    row.total_slots if row is not None else None,
                    counts.get(item.category_id, 0),
                    slots_per_day,
                ),
                "category_id": item.category_id,
            }
        )

    tasks.sort(key=lambda t: (t["source_id"], _SOURCE_RANK[t["source"]]))
    for sid, task in enumerate(tasks, start=1):
        task["state_id"] = sid
    for guest_event, host_event in host_of.items():
        event_of[guest_event]["embed_host"] = event_of[host_event]["state_id"]

    referenced = {t["category_id"] for t in tasks if t.get("category_id") is not None}
    task_classes = []
    for cid in sorted(referenced & set(classes)):
        out = _class_dict(classes[cid], windows[cid])
        if out is not None:
            task_classes.append(out)

    data = {
        "window": {
            "total_days": days.num_days,
            "slots_per_day": slots_per_day,
            "day_mapping": [d.model_dump() for d in days.mapping],
        },
        "tasks": tasks,
        "task_classes": task_classes,
    }
    try:
        return ScheduleState.model_validate(data)
    except (StateError, ValueError) as exc:
        raise StoreError(
            f"the stored window of user {user_id} is not a valid state: {str(exc).splitlines()[0]}"
        ) from None


def _event_task(
    event: m.ScheduleEvent,
    item: m.TaskClassItem | None,
    classes: Mapping[int, m.TaskClass],
    held: _Placed | None,
    host_of: dict[int, int],
) -> dict[str, Any] | None:
    """The state task of one event, or ``None`` when it holds nothing in the window."""
    class_id = item.category_id if item is not None else event.task_class_id
    row = classes.get(class_id) if class_id is not None else None
    task: dict[str, Any] = {
        "source": "task_item" if item is not None else "event",
        "source_id": item.id if item is not None else event.id,
        "name": item.content if item is not None else event.name,
        "category": event.category
        if event.category is not None
        else derived_category(event.type, row.name if row is not None else None),
        "locked": event.locked
        if event.locked is not None
        else derived_locked(event.type, event.can_be_embedded),
    }
    if event.can_be_embedded:
        task["can_embed"] = True
    if class_id is not None:
        task["category_id"] = class_id
    duration = item.duration if item is not None else event.duration
    if duration is not None:
        task["duration"] = duration
    if event.status == "pending":
        if held is not None:
            raise StoreError(
                f"event {event.id} ({event.name}) is pending but holds periods in the window"
            )
        task["status"] = "pending"
        if duration is None:
            task["duration"] = DEFAULT_DURATION
        return task
    if held is None:
        return None
    task["status"] = event.status
    blocks: list[dict[str, int]] = []
    if held.guest:
        for (day, host), sections in sorted(held.guest.items()):
            host_of[event.id] = host
            blocks += [{"day": day, "slot_start": a, "slot_end": b} for a, b in compress(sections)]
    guests_by_day: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (day, _), sections in held.hosted.items():
        guests_by_day[day] += compress(sections)
    for day, sections in sorted(held.owner.items()):
        for run in compress(sections):
            for a, b in split_for_guests(run, guests_by_day.get(day, ())):
                blocks.append({"day": day, "slot_start": a, "slot_end": b})
    task["slots"] = blocks
    return task


def _class_dict(
    row: m.TaskClass, window: tuple[int | None, int | None, bool]
) -> dict[str, Any] | None:
    start, end, _ = window
    out: dict[str, Any] = {
        "id": row.id,
        "name": row.name,
        "total_slots": row.total_slots,
        "start_day": start,
        "end_day": end,
        "excluded_slots": list(row.excluded_slots or []),
        "strategy": row.strategy,
    }
    if row.tolerance_preference is not None:
        out["tolerance_preference"] = row.tolerance_preference
    for key, value in (row.preferences or {}).items():
        out.setdefault(key, value)
    constrains = (
        any(out[k] is not None for k in ("total_slots", "start_day", "end_day", "strategy"))
        or bool(out["excluded_slots"])
        or len(out) > 7
    )
    return out if constrains else None
