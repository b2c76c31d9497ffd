"""SQL persistence: load a window from the four tables, commit a session's changes in one
transaction, upsert task classes. The only part of the engine that knows SQL (SQLAlchemy 2.x;
SQLite by default, PostgreSQL in production).

Quick use::

    from smartflow_engine.store import Store
    store = Store.from_url("sqlite:///smartflow.db")        # creates the tables
    store.seed_from_state(user_id=1, state=state)            # import a §3.1 state (demo, tests)
    state = store.load_window(1, state.window.day_mapping)   # §3.3-3.5
    tb = Toolbox(state, store=store, user_id=1)
    ...                                                      # tools change tb.state
    result = store.commit(1, tb.state, tb.changes)           # one transaction, or nothing
"""

from .commit import COMMIT_ERRORS, CommitResult, net_changes
from .days import DayIndex, StoreError, window_days
from .models import Base, Extension, Schedule, ScheduleEvent, TaskClass, TaskClassItem, TaskItem
from .protocol import ScheduleStore
from .seed import SeedResult
from .sql_store import Store
from .task_classes import (
    ISSUE_CODES,
    SOURCES,
    STRATEGIES,
    TOLERANCE_PREFERENCES,
    TaskClassInput,
    TaskItemInput,
    UpsertResult,
    ValidationIssue,
    WeekDayInput,
    validate_task_class,
)

__all__ = [
    "COMMIT_ERRORS",
    "ISSUE_CODES",
    "SOURCES",
    "STRATEGIES",
    "TOLERANCE_PREFERENCES",
    "Base",
    "CommitResult",
    "DayIndex",
    "Extension",
    "Schedule",
    "ScheduleEvent",
    "ScheduleStore",
    "SeedResult",
    "Store",
    "StoreError",
    "TaskClass",
    "TaskClassInput",
    "TaskClassItem",
    "TaskItem",
    "TaskItemInput",
    "UpsertResult",
    "ValidationIssue",
    "WeekDayInput",
    "net_changes",
    "validate_task_class",
    "window_days",
]
