"""Fixtures of the store tests: empty stores on SQLite files in tmp_path and on the running
PostgreSQL and MariaDB (a database of this run's own, see ``tests/db_servers.py``), and the sample
window seeded into one. Every test using ``store`` runs on all three."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from smartflow_engine.store import Store
from tests.helpers.db_servers import BACKENDS, fresh_server_store
from tests.helpers.store import USER
from tests.helpers.windows import load_window


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "smartflow.db"


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, db_path: Path) -> Iterator[Store]:
    """An empty store: on an SQLite file, on PostgreSQL and on MariaDB (the run's database, its
    tables emptied for each test)."""
    if request.param == "sqlite":
        s = Store.from_url(f"sqlite:///{db_path}")
        yield s
        s.dispose()
    else:
        yield fresh_server_store(request, request.param)


@pytest.fixture
def sample_store(store: Store) -> Store:
    """The bundled sample window seeded for USER."""
    store.seed_from_state(USER, load_window("sample_window"))
    return store
