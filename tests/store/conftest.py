"""Fixtures of the store tests: stores on SQLite files in tmp_path, and helpers that compare
states and tables.

With ``SMARTFLOW_PG_URL`` set, every test using the ``store`` fixture also runs on PostgreSQL:
either a server URL (``postgresql+psycopg://user@host:port/db``; the tests create and drop a
database of their own there) or ``temp`` to start a throwaway local server (see ``pg.py``).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from smartflow_engine import ScheduleState
from smartflow_engine.store import Store
from smartflow_engine.store import models as m

DATA = Path(__file__).resolve().parents[1] / "data"
USER = 7
OTHER_USER = 8


def load_window(name: str) -> ScheduleState:
    return ScheduleState.from_json(DATA / f"{name}.json")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "smartflow.db"


PG_URL = os.environ.get("SMARTFLOW_PG_URL", "")
BACKENDS = ["sqlite", *(["postgresql"] if PG_URL else [])]


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test run (dropped at the end)."""
    stop = None
    server = PG_URL
    if PG_URL == "temp":
        from pg import start_temp_server

        server, stop = start_temp_server()
    name = f"smartflow_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(make_url(server), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    finally:
        admin.dispose()
        if stop is not None:
            stop()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, db_path: Path) -> Iterator[Store]:
    """An empty store: on an SQLite file, and on PostgreSQL when configured."""
    if request.param == "sqlite":
        s = Store.from_url(f"sqlite:///{db_path}")
    else:
        s = Store.from_url(request.getfixturevalue("pg_database"), create=False)
        s.drop_tables()
        s.create_tables()
    yield s
    s.dispose()


@pytest.fixture
def sample_store(store: Store) -> Store:
    """The bundled sample window seeded for USER."""
    store.seed_from_state(USER, load_window("sample_window"))
    return store


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
        data["cells"] = sorted((b.day, s) for b in t.slots
                               for s in range(b.slot_start, b.slot_end + 1))
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
