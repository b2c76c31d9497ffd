"""Helpers of the store tests: fixed windows, user ids, and comparisons of states and tables.

Not a conftest: imported explicitly by the store test modules.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from smartflow_engine import ScheduleState
from smartflow_engine.store import Store
from smartflow_engine.store import models as m

USER = 7
OTHER_USER = 8


def reload(store: Store, state: ScheduleState, user: int = USER) -> ScheduleState:
    """The user's window over the state's day mapping, read back from the tables."""
    return store.load_window(user, state.window.day_mapping, slots_per_day=state.slots_per_day)


def _as_stored(data: dict[str, Any]) -> dict[str, Any]:
    """A task as the backend's tables keep it: ``suggested`` is a session's word (a confirmed
    placement is existing), a placed item's duration is its block, its class order derived."""
    out = dict(data)
    if out.get("status") == "suggested":
        out["status"] = "existing"
    if out.get("status") != "pending":
        out.pop("duration", None)
    out.pop("task_order", None)
    return out


def stored(state: ScheduleState) -> dict[str, Any]:
    """``state.to_dict()`` as the tables keep it (see :func:`_as_stored`)."""
    data = state.to_dict()
    data["tasks"] = [_as_stored(t) for t in data["tasks"]]
    data["window"].pop("semester_start", None)
    return data


def cell_view(state: ScheduleState) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """A state as periods held per task (block boundaries aside) and its task classes.

    Schedule rows store periods, not blocks: two touching blocks of one task on one day come back
    as one block. Everything else must survive a round trip unchanged.
    """
    tasks = {}
    for t in state.tasks:
        data = _as_stored(
            t.model_dump(mode="json", exclude={"slots", "embedded_by"}, exclude_none=True)
        )
        data["cells"] = sorted(
            (b.day, s) for b in t.slots for s in range(b.slot_start, b.slot_end + 1)
        )
        tasks[t.state_id] = data
    classes = [tc.model_dump(mode="json") for tc in state.task_classes]
    return tasks, classes


def table_rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables, as sorted tuples of all columns."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    from sqlalchemy import inspect

    present = set(inspect(store.engine).get_table_names())
    with store.session() as s:
        for table in m.ALL_TABLES:
            if table.__tablename__ not in present:
                continue
            cols = list(table.__table__.columns)
            rows = s.execute(select(*cols)).all()
            out[table.__tablename__] = sorted((tuple(r) for r in rows), key=repr)
    return out


def item_placement(store: Store, item_id: int) -> tuple[int | None, int]:
    """A task item's status (1 unscheduled, 2 applied) and the number of schedule rows of its
    task event."""
    with store.session() as s:
        status = s.scalar(select(m.TaskItem.status).where(m.TaskItem.id == item_id))
        count = s.scalar(
            select(func.count())
            .select_from(m.Schedule)
            .join(m.ScheduleEvent, m.Schedule.event_id == m.ScheduleEvent.id)
            .where(m.ScheduleEvent.rel_id == item_id, m.ScheduleEvent.type == "task")
        )
    return status, int(count or 0)


# An upsert_task_class call that passes validation on the sample window's user.
UPSERT_EXAMPLE: dict[str, Any] = {
    "task_class": {
        "name": "考研英语",
        "start": {"week": 7, "day_of_week": 3},
        "end": {"week": 9, "day_of_week": 7},
        "total_slots": 12,
        "strategy": "steady",
        "tolerance_preference": "normal",
        "excluded_slots": [11, 12],
    },
    "items": [{"content": "背单词", "duration": 2}],
}


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mcp_params(store: Store, *extra: str) -> Any:
    """``smartflow mcp --db URL --user USER --from 7-1 --to 8-7`` as a stdio server."""
    import sys
    from pathlib import Path

    from mcp import StdioServerParameters

    url = store.engine.url.render_as_string(hide_password=False)
    root = Path(__file__).resolve().parents[2]
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from smartflow_engine.cli import main; main()",
            "mcp",
            "--db",
            url,
            "--user",
            str(USER),
            "--from",
            "7-1",
            "--to",
            "8-7",
            "--mode",
            "local_adjust",
            *extra,
        ],
        cwd=str(root),
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
