"""Cohort queries for batch runs (``smartflow_engine.batch``): which users have pending work, and
the span of the task classes that work belongs to (the default planning window of a user).

Plain portable SQLAlchemy selects over SmartFlow-Agent's four tables (items belong to a user
through their class; a class's span comes from its dates on the ``SMARTFLOW_SEMESTER_START``
calendar, else from the teaching-week days our extension table keeps), like the rest of the store; the batch
package calls these instead of speaking SQL itself.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select

from . import models as m
from .days import class_week_day
from .load import extensions
from .sql_store import Store

WeekDay = tuple[int, int]  # (week, day_of_week)


@dataclass(frozen=True)
class ClassSpan:
    """The earliest start and latest end over a user's task classes that hold pending items.

    ``start`` / ``end`` are ``None`` when no such class has that end stored; ``unbounded`` counts
    pending items whose class lacks a start or an end (their window must then be given).
    """

    user_id: int
    start: WeekDay | None
    end: WeekDay | None
    pending_items: int
    unbounded: int


def _pending() -> Any:
    """An item still to schedule, as the backend reads it: status NULL or 1, no place."""
    return (
        or_(m.TaskItem.status.is_(None), m.TaskItem.status == m.ITEM_UNSCHEDULED)
    ) & m.TaskItem.embedded_time.is_(None)


def users_with_pending_work(store: Store, users: Collection[int] | None = None) -> list[int]:
    """Ids of users with at least one pending task item, ascending.

    ``users`` restricts the answer to those ids (``None``: every user).
    """
    query = (
        select(m.TaskClass.user_id)
        .join(m.TaskItem, m.TaskItem.category_id == m.TaskClass.id)
        .where(_pending(), m.TaskClass.user_id.is_not(None))
    )
    if users is not None:
        wanted = sorted({int(u) for u in users})
        if not wanted:
            return []
        query = query.where(m.TaskClass.user_id.between(wanted[0], wanted[-1]))
    with store.session() as s:
        found = {int(u) for u in s.scalars(query.distinct()).all() if u is not None}
    if users is not None:
        found &= {int(u) for u in users}
    return sorted(found)


def pending_class_spans(store: Store, user_ids: Collection[int]) -> dict[int, ClassSpan]:
    """Per user, the span of the task classes of their pending items (one query for all)."""
    from ..settings import current

    ids = sorted({int(u) for u in user_ids})
    if not ids:
        return {}
    semester_start = current().semester_start
    rows: dict[int, list[tuple[WeekDay | None, WeekDay | None]]] = {}
    with store.session() as s:
        result = s.execute(
            select(
                m.TaskClass.id, m.TaskClass.user_id, m.TaskClass.start_date, m.TaskClass.end_date
            )
            .join(m.TaskItem, m.TaskItem.category_id == m.TaskClass.id)
            .where(_pending(), m.TaskClass.user_id.between(ids[0], ids[-1]))
        ).all()
        ext = extensions(s, "task_class", {int(r[0]) for r in result})
    wanted = set(ids)
    for cid, user, start, end in result:
        if user is not None and int(user) in wanted:
            e = ext.get(int(cid), {})
            rows.setdefault(int(user), []).append(
                (
                    class_week_day(start, e.get("start"), semester_start),
                    class_week_day(end, e.get("end"), semester_start),
                )
            )
    spans: dict[int, ClassSpan] = {}
    for user in ids:
        items = rows.get(user, [])
        starts = [a for a, _ in items if a is not None]
        ends = [b for _, b in items if b is not None]
        unbounded = sum(1 for a, b in items if a is None or b is None)
        spans[user] = ClassSpan(
            user,
            min(starts) if starts else None,
            max(ends) if ends else None,
            len(items),
            unbounded,
        )
    return spans
