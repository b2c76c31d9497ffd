"""The storage backend: the SQLAlchemy implementation of :class:`.protocol.ScheduleStore`.

``Store.from_url("sqlite:///smartflow.db")`` (an embedded file, the default),
``Store.from_url("postgresql+psycopg://user:pw@host/db")`` or
``Store.from_url("mysql+pymysql://user:pw@host/db")`` (MariaDB/MySQL, ``utf8mb4``); the same models
and queries serve all three.

Transactions: SQLite writers take the write lock first (``BEGIN IMMEDIATE``); PostgreSQL runs at
its default READ COMMITTED; MariaDB/MySQL is switched from its default REPEATABLE READ to READ
COMMITTED, so that every statement of a commit sees the rows other commits wrote before it (the
optimistic checks lock the rows they read with ``SELECT ... FOR UPDATE``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from ..state import Change, ScheduleState
from . import models as m
from .commit import CommitFailure, CommitResult, commit_changes
from .load import load_window
from .protocol import DayMappingLike
from .seed import SeedResult, seed_from_state
from .task_classes import TaskClassInput, TaskItemInput, UpsertResult, upsert_task_class
from .timeouts import CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_S, connect_args, install_liveness

log = logging.getLogger(__name__)


class Store:
    """SQLAlchemy implementation of :class:`ScheduleStore` (SQLite, PostgreSQL, MariaDB/MySQL).

    Parameters
    ----------
    engine
        A SQLAlchemy engine; :meth:`from_url` builds one with the right SQLite settings.
    create
        Create the four tables if they are missing.
    """

    def __init__(self, engine: Engine, *, create: bool = True) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        if create:
            self.create_tables()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        create: bool = True,
        echo: bool = False,
        connect_timeout_s: float | None = CONNECT_TIMEOUT_S,
        statement_timeout_s: float | None = STATEMENT_TIMEOUT_S,
        **engine_kwargs: Any,
    ) -> Store:
        """A store on ``url``: ``sqlite:///path.db``, ``sqlite://`` (in memory, one shared
        connection), ``postgresql+psycopg://...``, ``mysql+pymysql://...`` or ``mariadb://...``
        (``charset=utf8mb4`` is added when the URL names none). Tables are created unless
        ``create=False``.

        On a database server, connecting is limited to ``connect_timeout_s`` and each
        statement to ``statement_timeout_s`` (``None``: no limit; the URL's own
        ``connect_timeout``, ``options``, ``read_timeout``, ``write_timeout`` win), and every
        connection taken from the pool is checked first (see :mod:`.timeouts`)."""
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite":
            memory = parsed.database in (None, "", ":memory:")
            kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False}}
            if memory:
                kwargs["poolclass"] = StaticPool
            kwargs.update(engine_kwargs)
            engine = create_engine(parsed, echo=echo, **kwargs)
            _sqlite_transactions(engine)
        else:
            # Connections are recycled well inside the servers' idle timeouts, and checked on
            # every checkout (a round trip): after an outage no request fails on a dead one.
            kwargs = {"pool_recycle": 1800}
            if parsed.get_backend_name() in ("mysql", "mariadb"):
                if "charset" not in parsed.query:
                    parsed = parsed.update_query_dict({"charset": "utf8mb4"})
                kwargs["isolation_level"] = "READ COMMITTED"
            limits = connect_args(parsed, connect_timeout_s, statement_timeout_s)
            kwargs["connect_args"] = {**limits, **engine_kwargs.pop("connect_args", {})}
            kwargs.update(engine_kwargs)
            engine = create_engine(parsed, echo=echo, **kwargs)
            install_liveness(engine, {**parsed.query, **kwargs["connect_args"]})
        return cls(engine, create=create)

    def create_tables(self) -> None:
        m.Base.metadata.create_all(self.engine)

    def drop_tables(self) -> None:
        m.Base.metadata.drop_all(self.engine)

    def dispose(self) -> None:
        """Close the pooled connections (the file can then be copied or removed)."""
        self.engine.dispose()

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any exception."""
        with self._sessions() as s, s.begin():
            if write and self.engine.dialect.name == "sqlite":
                s.connection(execution_options={"sqlite_immediate": True})
            yield s

    # ------------------------------------------------------------------ the protocol
    def load_window(
        self,
        user_id: int,
        day_mapping: DayMappingLike,
        *,
        slots_per_day: int = 12,
        task_class_ids: Collection[int] | None = None,
    ) -> ScheduleState:
        """The user's window over ``day_mapping`` (§3.3-3.5); see :mod:`.load`.

        Raises
        ------
        StoreError
            A bad day mapping, or stored rows that do not make a valid window.
        """
        with self.session() as s:
            return load_window(
                s, user_id, day_mapping, slots_per_day=slots_per_day, task_class_ids=task_class_ids
            )

    def commit(self, user_id: int, state: ScheduleState, changes: Sequence[Change]) -> CommitResult:
        """Write a session's change log in one transaction; on any failure nothing is written
        and ``ok`` is false with an ``error_code`` from :data:`~.commit.COMMIT_ERRORS`."""
        if not changes:
            return CommitResult(ok=True)

        def write() -> CommitResult:
            with self.session(write=True) as s:
                return commit_changes(s, user_id, state, changes)

        result = _refusal_or(write, log_db_errors=True)
        if result.ok:
            for state_id, source_id in result.source_ids.items():
                task = state.task(state_id)
                if task is not None:
                    task.source_id = source_id
        return result

    def preview_commit(
        self, user_id: int, state: ScheduleState, changes: Sequence[Change]
    ) -> CommitResult:
        """What :meth:`commit` would write now (counts per table), or why it would refuse: the
        same checks and statements in a transaction that is always rolled back. The state is
        not touched."""
        if not changes:
            return CommitResult(ok=True)

        def dry_run() -> CommitResult:
            with self._sessions() as s, s.begin() as tx:
                if self.engine.dialect.name == "sqlite":
                    s.connection(execution_options={"sqlite_immediate": True})
                try:
                    return commit_changes(s, user_id, state, changes)
                finally:
                    tx.rollback()

        result = _refusal_or(dry_run, log_db_errors=False)
        result.source_ids = {}
        return result

    def upsert_task_class(
        self,
        user_id: int,
        class_id: int,
        task_class: TaskClassInput,
        items: Sequence[TaskItemInput] = (),
        source: str | None = None,
    ) -> UpsertResult:
        """Create (``class_id=0``) or update a task class and its items; written only when the
        post-write validation passes (otherwise rolled back, ``issues`` say what to repair)."""
        try:
            with self._sessions() as s, s.begin() as tx:
                if self.engine.dialect.name == "sqlite":
                    s.connection(execution_options={"sqlite_immediate": True})
                result = upsert_task_class(s, user_id, class_id, task_class, items, source)
                if not result.success:
                    tx.rollback()
            return result
        except SQLAlchemyError as exc:
            log.warning("upsert_task_class failed: %s", exc)
            return UpsertResult(
                False, None, False, error_code="db_error", detail={"error": _first_line(exc)}
            )

    # ------------------------------------------------------------------ import / inspection
    def seed_from_state(
        self, user_id: int, state: ScheduleState, *, keep_ids: bool = True
    ) -> SeedResult:
        """Import a §3.1 state for ``user_id`` in one transaction (see :mod:`.seed`).

        With ``keep_ids`` the rows keep the state's ``source_id``/``category_id`` values (an id
        already taken raises :class:`StoreError`); otherwise they are numbered afresh and the
        result maps old ids to new ones.
        """
        with self.session(write=True) as s:
            return seed_from_state(s, user_id, state, keep_ids=keep_ids)

    def row_counts(self, user_id: int | None = None) -> dict[str, int]:
        """Rows per table (of one user, or of everyone)."""
        out: dict[str, int] = {}
        with self.session() as s:
            for table in m.TABLES:
                query = select(func.count()).select_from(table)
                if user_id is not None:
                    query = query.where(table.user_id == user_id)
                out[table.__tablename__] = int(s.scalar(query) or 0)
        return out


def _refusal_or(run: Callable[[], CommitResult], *, log_db_errors: bool) -> CommitResult:
    """``run()``'s result, or the refusal a commit's failure means: the commit's own checks
    (``CommitFailure``), a uniqueness violation (``conflict``) or another database error."""
    try:
        return run()
    except CommitFailure as exc:
        return CommitResult(
            ok=False, error_code=exc.code, error=str(exc), task_id=exc.task_id, detail=exc.detail
        )
    except IntegrityError as exc:
        return CommitResult(ok=False, error_code="conflict", error=_first_line(exc))
    except SQLAlchemyError as exc:
        if log_db_errors:
            log.warning("commit failed: %s", exc)
        return CommitResult(ok=False, error_code="db_error", error=_first_line(exc))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _sqlite_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not pysqlite, start transactions (SQLAlchemy's documented recipe), with
    foreign keys enforced and ``BEGIN IMMEDIATE`` for writes: a writer takes the write lock before
    its optimistic checks, so no other writer can slip in between check and write."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
