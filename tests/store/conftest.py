"""Fixtures of the store tests: empty stores on SQLite files in tmp_path, and the sample window
seeded into one.

With ``SMARTFLOW_PG_URL`` set, every test using the ``store`` fixture also runs on PostgreSQL:
either a server URL (``postgresql+psycopg://user@host:port/db``; the tests create and drop a
database of their own there) or ``temp`` to start a throwaway local server (see ``pg_server.py``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from store_helpers import USER, load_window

from smartflow_engine.store import Store

PG_URL = os.environ.get("SMARTFLOW_PG_URL", "")
BACKENDS = ["sqlite", *(["postgresql"] if PG_URL else [])]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "smartflow.db"


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test run (dropped at the end)."""
    stop = None
    server = PG_URL
    if PG_URL == "temp":
        from pg_server import start_temp_server

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
