"""Helpers of the store tests: fixed windows, user ids, and comparisons of states and tables.

Not a conftest: imported explicitly by the store test modules.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sqlalchemy import select

from smartflow_engine import ScheduleState
from smartflow_engine.store import Store
from smartflow_engine.store import models as m

USER = 7
OTHER_USER = 8


def reload(store: Store, state: ScheduleState, user: int = USER) -> ScheduleState:
    """The user's window over the state's day mapping, read back from the tables."""
    return store.load_window(user, state.window.day_mapping, slots_per_day=state.slots_per_day)


def cell_view(state: ScheduleState) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """A state as periods held per task (block boundaries aside) and its task classes.

    Schedule rows store periods, not blocks: two touching blocks of one task on one day come back
    as one block. Everything else must survive a round trip unchanged.
    """
    tasks = {}
    for t in state.tasks:
        data = t.model_dump(mode="json", exclude={"slots", "embedded_by"}, exclude_none=True)
        data["cells"] = sorted(
            (b.day, s) for b in t.slots for s in range(b.slot_start, b.slot_end + 1)
        )
        tasks[t.state_id] = data
    classes = [tc.model_dump(mode="json") for tc in state.task_classes]
    return tasks, classes


def table_rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the four tables, as sorted tuples of all columns."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with store.session() as s:
        for table in m.TABLES:
            cols = list(table.__table__.columns)
            rows = s.execute(select(*cols)).all()
            out[table.__tablename__] = sorted((tuple(r) for r in rows), key=repr)
    return out


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
