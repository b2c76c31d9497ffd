"""Cohort queries for batch runs (``smartflow_engine.batch``): which users have pending work, and
the span of the task classes that work belongs to (the default planning window of a user).

Plain portable SQLAlchemy selects over the four tables, like the rest of the store; the batch
package calls these instead of speaking SQL itself.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import select

from . import models as m
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


def users_with_pending_work(store: Store, users: Collection[int] | None = None) -> list[int]:
    """Ids of users with at least one pending task item or pending event, ascending.

    ``users`` restricts the answer to those ids (``None``: every user).
    """
    item_q = select(m.TaskClassItem.user_id).where(m.TaskClassItem.status == "pending")
    event_q = select(m.ScheduleEvent.user_id).where(m.ScheduleEvent.status == "pending")
    if users is not None:
        wanted = sorted({int(u) for u in users})
        if not wanted:
            return []
        lo, hi = wanted[0], wanted[-1]
        item_q = item_q.where(m.TaskClassItem.user_id.between(lo, hi))
        event_q = event_q.where(m.ScheduleEvent.user_id.between(lo, hi))
    with store.session() as s:
        found = set(s.scalars(item_q.distinct()).all()) | set(s.scalars(event_q.distinct()).all())
    if users is not None:
        found &= {int(u) for u in users}
    return sorted(int(u) for u in found)


def pending_class_spans(store: Store, user_ids: Collection[int]) -> dict[int, ClassSpan]:
    """Per user, the span of the task classes of their pending items (one query for all)."""
    ids = sorted({int(u) for u in user_ids})
    if not ids:
        return {}
    rows: dict[int, list[tuple[int | None, int | None, int | None, int | None]]] = {}
    with store.session() as s:
        result = s.execute(
            select(
                m.TaskClassItem.user_id,
                m.TaskClass.start_week,
                m.TaskClass.start_day_of_week,
                m.TaskClass.end_week,
                m.TaskClass.end_day_of_week,
            )
            .join(m.TaskClass, m.TaskClass.id == m.TaskClassItem.category_id)
            .where(
                m.TaskClassItem.status == "pending",
                m.TaskClassItem.user_id.between(ids[0], ids[-1]),
            )
        ).all()
    wanted = set(ids)
    for user, sw, sd, ew, ed in result:
        if int(user) in wanted:
            rows.setdefault(int(user), []).append((sw, sd, ew, ed))
    spans: dict[int, ClassSpan] = {}
    for user in ids:
        items = rows.get(user, [])
        starts = [(sw, sd) for sw, sd, _, _ in items if sw is not None and sd is not None]
        ends = [(ew, ed) for _, _, ew, ed in items if ew is not None and ed is not None]
        unbounded = sum(1 for sw, sd, ew, ed in items if None in (sw, sd, ew, ed))
        spans[user] = ClassSpan(
            user,
            min(starts) if starts else None,
            max(ends) if ends else None,
            len(items),
            unbounded,
        )
    return spans
