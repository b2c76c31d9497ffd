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
from datetime import date
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event, func, inspect, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from ..state import Change, ScheduleState
from . import models as m
from .commit import CommitFailure, CommitResult, backend_batches, commit_changes
from .load import load_window, owned_items
from .outcome import (
    CommitInDoubt,
    Outcome,
    create_markers,
    drop_markers,
    forget_marker,
    new_marker,
    settle,
    uses_markers,
    write_marker,
)
from .protocol import DayMappingLike
from .rough_build import RoughBuild, rough_build
from .schema import prepare
from .seed import SeedResult, seed_from_state
from .task_classes import TaskClassInput, TaskItemInput, UpsertResult, upsert_task_class
from .timeouts import CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_S, connect_args, install_liveness

log = logging.getLogger(__name__)
R = TypeVar("R")


class Store:
    """SQLAlchemy implementation of :class:`ScheduleStore` (SQLite, PostgreSQL, MariaDB/MySQL).

    Parameters
    ----------
    engine
        A SQLAlchemy engine; :meth:`from_url` builds one with the right SQLite settings.
    create
        Create SmartFlow-Agent's four tables and our extension table on a database that holds
        none of the four. On any other database nothing is created or altered: the tables and
        columns are checked (:mod:`.schema`) and a difference raises :class:`StoreError`.
    """

    def __init__(self, engine: Engine, *, create: bool = True, defer: bool = True) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._markers: bool | None = None  # whether commits write a marker (asked once)
        self.has_extension = False
        self._create = create
        self._checked = False
        try:
            self._check()
        except OperationalError as exc:  # the server is down: checked on the first session
            if not defer:  # a command opening --db says so at once (one line, exit 2)
                raise
            log.warning("schema check deferred (database unreachable): %s", _first_line(exc))

    def _open(self) -> Session:
        """A new ORM session, after the schema check if it was deferred."""
        if not self._checked:
            self._check()
        return self._sessions()

    def _check(self) -> None:
        backend = {t.__tablename__ for t in m.TABLES}
        ours = not set(inspect(self.engine).get_table_names()) & backend
        self.has_extension = prepare(self.engine, create=self._create)
        # the commit marker table (:mod:`.outcome`) only where this created the whole schema
        create_markers(self.engine, schema_is_ours=ours and self._create)
        self._markers = None
        self._checked = True

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        create: bool = True,
        defer: bool = True,
        echo: bool = False,
        connect_timeout_s: float | None = CONNECT_TIMEOUT_S,
        statement_timeout_s: float | None = STATEMENT_TIMEOUT_S,
        **engine_kwargs: Any,
    ) -> Store:
        """A store on ``url``: ``sqlite:///path.db``, ``sqlite://`` (in memory, one shared
        connection), ``postgresql+psycopg://...``, ``mysql+pymysql://...`` or ``mariadb://...``
        (``charset=utf8mb4`` is added when the URL names none). Tables are created unless
        ``create=False``. A server that cannot be reached defers the schema check to the first
        session (a server process starts anyway); ``defer=False`` raises at once instead.

        On a database server, connecting is limited to ``connect_timeout_s`` and each
        statement to ``statement_timeout_s`` (``None``: no limit; the URL's own
        ``connect_timeout``, ``options``, ``read_timeout``, ``write_timeout`` win), and every
        connection taken from the pool is checked first (see :mod:`.timeouts`).

        Raises
        ------
        StoreError
            The database holds some of the backend's tables but not the tables and columns the
            engine needs (one line naming what differs; nothing is created or altered)."""
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
        return cls(engine, create=create, defer=defer)

    def create_tables(self) -> None:
        """Create every table (``smartflow db init`` on an empty database); the commit marker
        table (:mod:`.outcome`) only when this creates the whole schema (no table of ours
        existed), or keep the one there is."""
        existing = set(inspect(self.engine).get_table_names())
        ours = not existing & {t.__tablename__ for t in m.TABLES}
        m.Base.metadata.create_all(self.engine)
        create_markers(self.engine, schema_is_ours=ours)
        self._markers = None
        self.has_extension = self._checked = True

    def drop_tables(self) -> None:
        m.Base.metadata.drop_all(self.engine)
        drop_markers(self.engine)
        self._markers = None

    def dispose(self) -> None:
        """Close the pooled connections (the file can then be copied or removed)."""
        self.engine.dispose()

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any exception."""
        with self._open() as s, s.begin():
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
                s,
                user_id,
                day_mapping,
                slots_per_day=slots_per_day,
                task_class_ids=task_class_ids,
                semester_start=_semester_start(),
            )

    def commit(self, user_id: int, state: ScheduleState, changes: Sequence[Change]) -> CommitResult:
        """Write a session's change log in one transaction; on any failure nothing is written
        and ``ok`` is false with an ``error_code`` from :data:`~.commit.COMMIT_ERRORS`."""
        if not changes:
            return CommitResult(ok=True)
        marker = self._new_marker()
        try:
            result = _refusal_or(
                lambda: self._write(
                    lambda s: commit_changes(s, user_id, state, changes), lambda _r: True, marker
                ),
                log_db_errors=True,
            )
        except CommitInDoubt as doubt:
            result = self._settle(doubt, marker, user_id, state, changes)
        if result.ok:
            for state_id, source_id in result.source_ids.items():
                task = state.task(state_id)
                if task is not None:
                    task.source_id = source_id
        return result

    def rough_build(
        self,
        user_id: int,
        task_class_ids: Collection[int],
        *,
        time_limit_s: float = 5.0,
        num_workers: int = 1,
        slots_per_day: int = 12,
    ) -> RoughBuild:
        """SmartFlow-Agent's rough build by the proposal search, in the backend's coordinates;
        nothing is written (see :mod:`.rough_build`).

        Raises
        ------
        StoreError
            A class the user does not own, or classes without a span on teaching weeks.
        """
        return rough_build(
            self,
            user_id,
            task_class_ids,
            time_limit_s=time_limit_s,
            num_workers=num_workers,
            slots_per_day=slots_per_day,
        )

    def batch_payload(
        self, state: ScheduleState, changes: Sequence[Change]
    ) -> list[dict[str, Any]]:
        """The change as SmartFlow-Agent's batch payload (per class ``{task_class_id, items}``),
        for a host that applies changes through its own API; see :func:`.commit.backend_batches`.
        """
        return backend_batches(state, changes)

    def _new_marker(self) -> str | None:
        """A marker for the next write transaction, when this database keeps them (asked once;
        a database that cannot be asked now is asked again next time)."""
        if self._markers is None:
            self._markers = uses_markers(self.engine)
        return new_marker() if self._markers else None

    def _write(
        self, work: Callable[[Session], R], keep: Callable[[R], bool], marker: str | None
    ) -> R:
        """``work`` in one write transaction, committed when ``keep`` says so (else rolled back),
        with ``marker`` written just before ``COMMIT``. A failed ``COMMIT`` on a server raises
        :class:`.outcome.CommitInDoubt`; any failure before it rolls back and raises as is."""
        with self._open() as s:
            s.begin()
            if self.engine.dialect.name == "sqlite":
                s.connection(execution_options={"sqlite_immediate": True})
            result = work(s)
            if not keep(result):
                s.rollback()
                return result
            if marker is not None:
                write_marker(s, marker)
            s.flush()
            try:
                s.commit()
            except SQLAlchemyError as exc:
                if self.engine.dialect.name == "sqlite":
                    raise  # in process, no answer to lose: a failed COMMIT wrote nothing
                raise CommitInDoubt(exc, result) from exc
        if marker is not None:
            forget_marker(self.engine, marker)
        return result

    def _settle(
        self,
        doubt: CommitInDoubt,
        marker: str | None,
        user_id: int,
        state: ScheduleState,
        changes: Sequence[Change],
    ) -> CommitResult:
        """The result of a commit whose ``COMMIT`` failed, from its settled outcome."""

        def dry_run() -> bool | None:
            again = self.preview_commit(user_id, state, changes)
            return True if again.ok else None if again.error_code == "db_error" else False

        outcome: Outcome = settle(self.engine, marker, dry_run)
        log.warning("COMMIT failed (%s); outcome: %s", _first_line(doubt.cause), outcome)
        if outcome == "committed":
            written: CommitResult = doubt.result
            written.detail = {**written.detail, "answer_lost": True}
            return written
        if outcome == "not_committed":
            return CommitResult(ok=False, error_code="db_error", error=_first_line(doubt.cause))
        return CommitResult(ok=False, error_code="outcome_unknown", error=_first_line(doubt.cause))

    def preview_commit(
        self, user_id: int, state: ScheduleState, changes: Sequence[Change]
    ) -> CommitResult:
        """What :meth:`commit` would write now (counts per table), or why it would refuse: the
        same checks and statements in a transaction that is always rolled back. The state is
        not touched."""
        if not changes:
            return CommitResult(ok=True)

        def dry_run() -> CommitResult:
            with self._open() as s, s.begin() as tx:
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
        marker = self._new_marker()
        try:
            return self._write(
                lambda s: upsert_task_class(
                    s, user_id, class_id, task_class, items, source, semester_start=_semester_date()
                ),
                lambda result: result.success,
                marker,
            )
        except CommitInDoubt as doubt:  # no dry run here: without a marker it stays unknown
            outcome = settle(self.engine, marker, lambda: None)
            log.warning("upsert COMMIT failed (%s); outcome: %s", _first_line(doubt.cause), outcome)
            if outcome == "committed":
                kept: UpsertResult = doubt.result
                return kept
            code = "db_error" if outcome == "not_committed" else "outcome_unknown"
            return UpsertResult(
                False, None, False, error_code=code, detail={"error": _first_line(doubt.cause)}
            )
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
                    query = query.where(
                        owned_items(user_id) if table is m.TaskItem else table.user_id == user_id  # type: ignore[union-attr]
                    )
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


def _semester_date() -> date | None:
    from ..settings import current

    return current().semester_start


def _semester_start() -> str | None:
    start = _semester_date()
    return start.isoformat() if start is not None else None


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
