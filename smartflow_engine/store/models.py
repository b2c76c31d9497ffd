"""The four tables of the spec (tool-layer-design §3.3, §6 "数据库交互"), per user, as a
SQLAlchemy 2.x ORM.

Portable by construction: plain column types, ``CHECK`` and ``UNIQUE`` constraints and foreign keys
that SQLite, PostgreSQL and MariaDB/MySQL all enforce (SQLite with ``PRAGMA foreign_keys=ON``, which
:class:`~smartflow_engine.store.sql_store.Store` turns on); no dialect-specific SQL. On MariaDB/MySQL
the tables are InnoDB in ``utf8mb4`` (Chinese names, 4-byte characters) with the binary collation,
so names compare as on SQLite and PostgreSQL (case- and accent-sensitive) and every ``VARCHAR``
stays well inside InnoDB's index limits; the unique key of ``schedules`` is on integers only.

- ``task_classes``: a user's task classes (category, budget, time window, banned periods, ...).
- ``task_class_items``: the items of a class (the work to schedule).
- ``schedule_events``: what appears on the timetable: courses, activities, and one event per
  scheduled task item (``task_item_id``).
- ``schedules``: one row per period an event holds (``week``, ``day_of_week``, ``section``); a
  guest embedded in a host's periods is recorded on the host's rows (``embedded_event_id``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# 64-bit ids on PostgreSQL; SQLite only auto-increments an ``INTEGER PRIMARY KEY``.
IdType = BigInteger().with_variant(Integer(), "sqlite")

EVENT_TYPES = ("course", "task")
EVENT_STATUSES = ("existing", "suggested", "pending")
ITEM_STATUSES = ("pending", "scheduled", "done")
NAME_LEN = 100
CLASS_NAME_LEN = 64


def _now() -> datetime:
    return datetime.now(UTC)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    pass


# Table options for MariaDB/MySQL (ignored by the other dialects).
MYSQL_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


class TaskClass(Base):
    """A task class: ``name`` is the category of its items; the time window is stored as
    ``(week, day_of_week)`` pairs, both ends inclusive; ``excluded_slots`` are banned periods."""

    __tablename__ = "task_classes"
    __table_args__ = (
        Index("ix_task_classes_user_name", "user_id", "name"),
        CheckConstraint("total_slots IS NULL OR total_slots >= 0", name="ck_task_classes_total"),
        MYSQL_OPTIONS,
    )

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    name: Mapped[str] = mapped_column(String(CLASS_NAME_LEN), nullable=False)
    total_slots: Mapped[int | None] = mapped_column(Integer)
    start_week: Mapped[int | None] = mapped_column(SmallInteger)
    start_day_of_week: Mapped[int | None] = mapped_column(SmallInteger)
    end_week: Mapped[int | None] = mapped_column(SmallInteger)
    end_day_of_week: Mapped[int | None] = mapped_column(SmallInteger)
    excluded_slots: Mapped[list[int]] = mapped_column(JSON, nullable=False, default=list)
    strategy: Mapped[str | None] = mapped_column(String(16))
    tolerance_preference: Mapped[str | None] = mapped_column(String(16))
    # Ordinary fields of p1 §4.8 (time-of-day preference, milestones, tags, notes) and any extra
    # keys a state's task class carries.
    preferences: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    source: Mapped[str | None] = mapped_column(String(16))  # chat | memory | web | seed
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=_now, onupdate=_now
    )


class TaskClassItem(Base):
    """One item of a task class. ``status``: ``pending`` (to schedule), ``scheduled`` (it has a
    ``schedule_events`` row), ``done`` (ignored when loading a window)."""

    __tablename__ = "task_class_items"
    __table_args__ = (
        Index("ix_task_class_items_user_status", "user_id", "status"),
        CheckConstraint(_in("status", ITEM_STATUSES), name="ck_task_class_items_status"),
        CheckConstraint("duration IS NULL OR duration >= 1", name="ck_task_class_items_duration"),
        MYSQL_OPTIONS,
    )

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    category_id: Mapped[int] = mapped_column(
        IdType, ForeignKey("task_classes.id", ondelete="CASCADE"), nullable=False, index=True
    )
    content: Mapped[str] = mapped_column(String(NAME_LEN), nullable=False)
    duration: Mapped[int | None] = mapped_column(SmallInteger)
    priority: Mapped[int | None] = mapped_column(SmallInteger)
    depends_on: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="pending")


class ScheduleEvent(Base):
    """A course, an activity, or the placement of a task item (``task_item_id``).

    ``locked`` and ``category`` are NULL unless they differ from the spec's derivation (§3.3:
    locked = course and not can_be_embedded; category = "课程" for a course, else the task class's
    name). ``status`` is ``existing``/``suggested`` while the event holds periods, ``pending`` once
    it was taken off the timetable to be placed again (``duration`` periods).
    """

    __tablename__ = "schedule_events"
    __table_args__ = (
        Index("ix_schedule_events_user_status", "user_id", "status"),
        CheckConstraint(_in("type", EVENT_TYPES), name="ck_schedule_events_type"),
        CheckConstraint(_in("status", EVENT_STATUSES), name="ck_schedule_events_status"),
        MYSQL_OPTIONS,
    )

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    name: Mapped[str] = mapped_column(String(NAME_LEN), nullable=False)
    type: Mapped[str] = mapped_column(String(8), nullable=False)
    can_be_embedded: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    task_class_id: Mapped[int | None] = mapped_column(
        IdType, ForeignKey("task_classes.id", ondelete="SET NULL"), index=True
    )
    task_item_id: Mapped[int | None] = mapped_column(
        IdType, ForeignKey("task_class_items.id", ondelete="CASCADE"), unique=True
    )
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="existing")
    duration: Mapped[int | None] = mapped_column(SmallInteger)
    locked: Mapped[bool | None] = mapped_column(Boolean)
    category: Mapped[str | None] = mapped_column(String(CLASS_NAME_LEN))


class Schedule(Base):
    """One period held by an event. At most one owner per user and period (the unique key);
    a guest embedded there is ``embedded_event_id``."""

    __tablename__ = "schedules"
    __table_args__ = (
        UniqueConstraint(
            "user_id", "week", "day_of_week", "section", name="uq_schedules_user_period"
        ),
        CheckConstraint("day_of_week BETWEEN 1 AND 7", name="ck_schedules_day_of_week"),
        CheckConstraint("section >= 1", name="ck_schedules_section"),
        MYSQL_OPTIONS,
    )

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    event_id: Mapped[int] = mapped_column(
        IdType, ForeignKey("schedule_events.id", ondelete="CASCADE"), nullable=False, index=True
    )
    week: Mapped[int] = mapped_column(SmallInteger, nullable=False)
    day_of_week: Mapped[int] = mapped_column(SmallInteger, nullable=False)
    section: Mapped[int] = mapped_column(SmallInteger, nullable=False)
    embedded_event_id: Mapped[int | None] = mapped_column(
        IdType, ForeignKey("schedule_events.id", ondelete="SET NULL"), index=True
    )


TABLES = (TaskClass, TaskClassItem, ScheduleEvent, Schedule)
