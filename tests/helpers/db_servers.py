"""The database and Redis servers the tests run against, and one throwaway database per run.

The machines of this project (and CI) run PostgreSQL, MariaDB and Redis on 127.0.0.1; the tests
use them as they are and never install or start a server. Each test run creates its own database
(``smartflow_test_<run id>``) on PostgreSQL and MariaDB and drops it at the end; Redis keys carry a
per-run prefix and are deleted at the end. Override the servers with:

- ``SMARTFLOW_PG_URL`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/test``)
- ``SMARTFLOW_MARIADB_URL`` (default ``mysql+pymysql://root@127.0.0.1:3306/test?charset=utf8mb4``)
- ``SMARTFLOW_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``)

An unreachable server fails every test that needs it, with a message naming the URL: a missing
database is never a silent skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PG_URL = os.environ.get("SMARTFLOW_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MARIADB_URL = os.environ.get(
    "SMARTFLOW_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test?charset=utf8mb4"
)
REDIS_URL = os.environ.get("SMARTFLOW_REDIS_URL", "redis://127.0.0.1:6379/0")
RUN_ID = uuid.uuid4().hex[:10]
SERVER_BACKENDS = ("postgresql", "mariadb")
BACKENDS = ("sqlite", *SERVER_BACKENDS)
_URLS = {"postgresql": PG_URL, "mariadb": MARIADB_URL}
_ENV = {"postgresql": "SMARTFLOW_PG_URL", "mariadb": "SMARTFLOW_MARIADB_URL"}


def _unreachable(kind: str, exc: Exception) -> None:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    pytest.fail(
        f"{kind} at {_URLS[kind]} is unreachable ({first}). The tests use the running "
        f"server of this machine; start it or point {_ENV[kind]} at one.",
        pytrace=False,
    )


def _server_database(kind: str) -> Iterator[str]:
    """Create ``smartflow_test_<run id>`` on the server of ``kind``; yield its URL; drop it."""
    server = make_url(_URLS[kind])
    name = f"smartflow_test_{RUN_ID}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            if kind == "mariadb":
                conn.execute(
                    text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                )
            else:
                conn.execute(text(f"CREATE DATABASE {name}"))
    except Exception as exc:  # any driver error: the server is not there
        admin.dispose()
        _unreachable(kind, exc)
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            force = " WITH (FORCE)" if kind == "postgresql" else ""
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}{force}"))
        admin.dispose()


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test run (dropped at the end)."""
    yield from _server_database("postgresql")


@pytest.fixture(scope="session")
def mariadb_database() -> Iterator[str]:
    """A fresh MariaDB database (utf8mb4, binary collation) for this test run."""
    yield from _server_database("mariadb")


def database_url(request: pytest.FixtureRequest, kind: str) -> str:
    """The per-run database URL of ``kind`` (``sqlite`` is not a server: not handled here)."""
    fixture = {"postgresql": "pg_database", "mariadb": "mariadb_database"}[kind]
    url: str = request.getfixturevalue(fixture)
    return url


@pytest.fixture(scope="session")
def redis_prefix() -> Iterator[str]:
    """A key prefix for this run on the running Redis; every key under it is deleted at the end."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except Exception as exc:
        pytest.fail(
            f"Redis at {REDIS_URL} is unreachable ({exc}). The tests use the running "
            "server of this machine; start it or point SMARTFLOW_REDIS_URL at one.",
            pytrace=False,
        )
    prefix = f"smartflow-test-{RUN_ID}"
    try:
        yield prefix
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)
        client.close()


def empty_tables(engine: Any) -> None:
    """Empty the store's four tables and restart their ids, as freshly created tables would be
    (much faster than dropping and creating them again on MariaDB)."""
    from smartflow_engine.store import models as m

    names = [t.__tablename__ for t in reversed(m.ALL_TABLES)]
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"TRUNCATE {', '.join(names)} RESTART IDENTITY CASCADE"))
        elif engine.dialect.name in ("mysql", "mariadb"):
            conn.execute(text("SET FOREIGN_KEY_CHECKS=0"))
            for name in names:
                conn.execute(text(f"TRUNCATE TABLE {name}"))
            conn.execute(text("SET FOREIGN_KEY_CHECKS=1"))
        else:
            for name in names:
                conn.execute(text(f"DELETE FROM {name}"))


def _drop_every_table(url: str) -> None:
    from sqlalchemy import MetaData, create_engine

    engine = create_engine(url)
    try:
        meta = MetaData()
        meta.reflect(engine)
        meta.drop_all(engine)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def server_stores(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """One store per database server for the whole run (tables created once); tests empty them
    with :func:`empty_tables` (see :func:`fresh_server_store`)."""
    from smartflow_engine.store import Store

    opened: dict[str, Any] = {}

    class _Lazy(dict[str, Any]):
        def __missing__(self, kind: str) -> Any:
            url = database_url(request, kind)
            _drop_every_table(url)  # an earlier run's tables may have another schema
            store = Store.from_url(url)
            opened[kind] = self[kind] = store
            return store

    yield _Lazy()
    for store in opened.values():
        store.dispose()


def fresh_server_store(request: pytest.FixtureRequest, kind: str) -> Any:
    """The run's store on server ``kind`` with its four tables emptied."""
    store = request.getfixturevalue("server_stores")[kind]
    empty_tables(store.engine)
    return store
