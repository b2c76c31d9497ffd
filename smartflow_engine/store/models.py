"""The four tables of SmartFlow-Agent's backend (``backend/services/runtime/model/schedule.go`` and
``task-class.go``), column for column, as a SQLAlchemy 2.x ORM (issue 41).

The MariaDB/MySQL types are those the Go models' gorm tags declare (a Go ``int`` is ``BIGINT``, a
``bool`` ``BOOLEAN``, ``time.Time`` ``DATETIME(3)`` unless the tag says ``time``, ``enum(...)`` a
real ``ENUM``); PostgreSQL and SQLite get the nearest equivalents (``VARCHAR`` for an enum). The
engine reads and writes these tables as that backend does:

- ``task_classes``: a user's task class (dates, profile, ``total_slots``, ``allow_filler_course``,
  ``strategy``, ``excluded_slots`` = half-day blocks 1..6, ``excluded_days_of_week``; JSON lists).
- ``task_items``: the items of a class (no ``user_id``: a class's ``user_id`` owns them);
  ``status`` 1 unscheduled / 2 applied, ``embedded_time`` the applied place
  ``{week, day_of_week, section_from, section_to}``.
- ``schedule_events``: a course, or a task event (``type`` task, ``rel_id`` the item,
  ``task_source_type`` ``task_item``).
- ``schedules``: one row per section an event holds; a study item embedded in a water course has
  no event: the host's rows carry it in ``embedded_task_id``.

:class:`Extension` (``smartflow_extensions``) is ours: what the spec needs and those tables cannot
hold (a class's ``tolerance_preference`` and p1 preference fields, an item's duration). It exists
only where the engine created the schema (``smartflow db init``); on a backend's own database it is
absent and those fields are not stored.
"""

from __future__ import annotations

from datetime import datetime, time
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    Time,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Go ``int`` under gorm on MySQL: BIGINT; SQLite only auto-increments an ``INTEGER PRIMARY KEY``.
IdType = BigInteger().with_variant(Integer(), "sqlite")
Int = BigInteger().with_variant(Integer(), "sqlite")


def _enum(*values: str) -> Any:
    """A real ``ENUM`` on MariaDB/MySQL (as gorm creates it), a ``VARCHAR`` elsewhere."""
    width = max(len(v) for v in values)
    return (
        String(width)
        .with_variant(mysql.ENUM(*values), "mysql")
        .with_variant(mysql.ENUM(*values), "mariadb")
    )


EVENT_TYPES = ("course", "task")
TASK_SOURCE_ITEM = "task_item"
ITEM_UNSCHEDULED = 1
ITEM_APPLIED = 2
SCHEDULE_STATUSES = ("normal", "interrupted")
NAME_LEN = 255

# Table options for MariaDB/MySQL (ignored by the other dialects).
MYSQL_OPTIONS = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}


class Base(DeclarativeBase):
    pass


class TaskClass(Base):
    """``task_classes`` (Go ``model.TaskClass``)."""

    __tablename__ = "task_classes"
    __table_args__ = (Index("idx_task_classes_user_id", "user_id"), MYSQL_OPTIONS)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    user_id: Mapped[int | None] = mapped_column(Int)
    name: Mapped[str | None] = mapped_column(String(NAME_LEN))
    mode: Mapped[str | None] = mapped_column(_enum("auto", "manual"))
    start_date: Mapped[datetime | None] = mapped_column(
        DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")
    )
    end_date: Mapped[datetime | None] = mapped_column(
        DateTime().with_variant(mysql.DATETIME(fsp=3), "mysql", "mariadb")
    )
    subject_type: Mapped[str | None] = mapped_column(String(32))
    difficulty_level: Mapped[str | None] = mapped_column(String(16))
    cognitive_intensity: Mapped[str | None] = mapped_column(String(16))
    total_slots: Mapped[int | None] = mapped_column(Int)
    allow_filler_course: Mapped[bool | None] = mapped_column(Boolean, default=True)
    strategy: Mapped[str | None] = mapped_column(_enum("steady", "rapid"))
    excluded_slots: Mapped[list[int] | None] = mapped_column(JSON(none_as_null=True))
    excluded_days_of_week: Mapped[list[int] | None] = mapped_column(JSON(none_as_null=True))


class TaskItem(Base):
    """``task_items`` (Go ``model.TaskClassItem``)."""

    __tablename__ = "task_items"
    __table_args__ = (MYSQL_OPTIONS,)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    category_id: Mapped[int | None] = mapped_column(Int, ForeignKey("task_classes.id"))
    order: Mapped[int | None] = mapped_column("order", Int)
    content: Mapped[str | None] = mapped_column(Text)
    embedded_time: Mapped[dict[str, int] | None] = mapped_column(JSON(none_as_null=True))
    status: Mapped[int | None] = mapped_column(Int)


TaskClassItem = TaskItem  # the Go type's name


class ScheduleEvent(Base):
    """``schedule_events`` (Go ``model.ScheduleEvent``)."""

    __tablename__ = "schedule_events"
    __table_args__ = (
        Index("idx_user_events", "user_id"),
        Index("idx_schedule_event_task_source", "task_source_type"),
        Index("idx_schedule_event_makeup_for", "makeup_for_event_id"),
        Index("idx_schedule_event_active_preview", "active_preview_id"),
        MYSQL_OPTIONS,
    )

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(Int, nullable=False)
    name: Mapped[str] = mapped_column(String(NAME_LEN), nullable=False)
    location: Mapped[str | None] = mapped_column(String(NAME_LEN), default="", server_default="")
    type: Mapped[str] = mapped_column(_enum(*EVENT_TYPES), nullable=False)
    rel_id: Mapped[int | None] = mapped_column(Int)
    task_source_type: Mapped[str] = mapped_column(
        String(32), nullable=False, default="", server_default=""
    )
    makeup_for_event_id: Mapped[int | None] = mapped_column(Int)
    active_preview_id: Mapped[str | None] = mapped_column(String(64))
    can_be_embedded: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    start_time: Mapped[time | None] = mapped_column(Time)
    end_time: Mapped[time | None] = mapped_column(Time)


class Schedule(Base):
    """``schedules`` (Go ``model.Schedule``): one row per section; at most one per user and
    section (``idx_user_slot_atomic``)."""

    __tablename__ = "schedules"
    __table_args__ = (
        UniqueConstraint("user_id", "week", "day_of_week", "section", name="idx_user_slot_atomic"),
        Index("idx_event_id", "event_id"),
        MYSQL_OPTIONS,
    )

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    event_id: Mapped[int] = mapped_column(Int, ForeignKey("schedule_events.id"), nullable=False)
    user_id: Mapped[int] = mapped_column(Int, nullable=False)
    week: Mapped[int] = mapped_column(Int, nullable=False)
    day_of_week: Mapped[int] = mapped_column(Int, nullable=False)
    section: Mapped[int] = mapped_column(Int, nullable=False)
    embedded_task_id: Mapped[int | None] = mapped_column(Int, ForeignKey("task_items.id"))
    status: Mapped[str | None] = mapped_column(
        _enum(*SCHEDULE_STATUSES), default="normal", server_default="normal"
    )


class Extension(Base):
    """``smartflow_extensions`` (ours): ``kind`` ``task_class`` or ``task_item``, ``ref_id`` the
    row's id, ``data`` the fields the backend's tables have no column for."""

    __tablename__ = "smartflow_extensions"
    __table_args__ = (MYSQL_OPTIONS,)

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    ref_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)


BACKEND_TABLES = (TaskClass, TaskItem, ScheduleEvent, Schedule)
TABLES = BACKEND_TABLES
ALL_TABLES = (*BACKEND_TABLES, Extension)  # what ``smartflow db init`` creates
EXTENSION_TABLE = Extension.__tablename__
