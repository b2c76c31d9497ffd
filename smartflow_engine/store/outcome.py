"""A commit whose answer was lost: was it written?

A ``COMMIT`` sent to a database server whose answer never arrives (the connection dropped, the
client-side deadline fired) may have been applied or not; saying "rolled back" then can be false.
An error raised *before* ``COMMIT`` was sent still means "rolled back"; an error raised while
``COMMIT`` was in flight is settled here, on a fresh connection:

- **With a marker** (the store's own schema, see :func:`uses_markers`): each commit inserts a row
  with a random id into :data:`MARKERS` inside its transaction, just before ``COMMIT``. To settle
  the outcome a fresh connection inserts the same id: the primary key makes that insert wait
  while the first transaction is still open, fail if it committed, succeed if it did not (the
  probe is then rolled back). After a commit the marker is deleted (best effort), and with it
  every marker older than :data:`MARKER_TTL`: one left behind (that delete failed, the process
  died first) had its outcome settled, or given up as unknown, within its own request.
- **Without a marker** (tables we did not create): the same commit is tried again as a dry run
  (its checks lock the rows the first transaction locked, so it waits for it to end too). If
  the checks pass, the database still holds what the session started from: nothing was
  written. Otherwise the outcome stays unknown.

Either way a probe that cannot finish (the server still unreachable, a time limit) leaves the
outcome unknown, and the caller says so.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    MetaData,
    String,
    Table,
    delete,
    insert,
    inspect,
    or_,
)
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

Outcome = Literal["committed", "not_committed", "unknown"]

_META = MetaData()
MARKERS = Table(
    "smartflow_txn_markers",
    _META,
    Column("id", String(32), primary_key=True),
    Column("created_at", DateTime, nullable=False),
)


# A marker older than this is no longer read: settling happens within the request that wrote
# it (seconds). A day, so that clocks of different clients some hours apart never sweep a
# marker still being settled.
MARKER_TTL = timedelta(days=1)


class CommitInDoubt(Exception):
    """Raised when ``COMMIT`` itself failed: whether the server applied it is not known.
    ``result`` is what the transaction did before ``COMMIT`` (true if it was committed)."""

    def __init__(self, cause: Exception, result: Any) -> None:
        super().__init__(str(cause))
        self.cause, self.result = cause, result


def new_marker() -> str:
    return uuid.uuid4().hex


def _row(marker: str) -> dict[str, object]:
    return {"id": marker, "created_at": datetime.now(UTC).replace(tzinfo=None)}


def write_marker(session: Session, marker: str) -> None:
    """Insert ``marker`` inside the commit's transaction (just before ``COMMIT``)."""
    session.execute(insert(MARKERS).values(**_row(marker)))


def forget_marker(engine: Engine, marker: str, now: datetime | None = None) -> None:
    """Delete a committed marker and the ones older than :data:`MARKER_TTL` (best effort: a
    left-over row costs nothing but its bytes until the next commit sweeps it)."""
    cutoff = (now or datetime.now(UTC).replace(tzinfo=None)) - MARKER_TTL
    try:
        with engine.begin() as conn:
            conn.execute(
                delete(MARKERS).where(or_(MARKERS.c.id == marker, MARKERS.c.created_at < cutoff))
            )
    except SQLAlchemyError as exc:
        log.info("could not delete commit marker %s: %s", marker, _first_line(exc))


def create_markers(engine: Engine, *, schema_is_ours: bool) -> None:
    """Create the marker table when the store is creating its own schema (``schema_is_ours``);
    never add it to tables someone else created. SQLite needs none (no answer is lost in
    process)."""
    if engine.dialect.name != "sqlite" and schema_is_ours:
        MARKERS.create(engine, checkfirst=True)


def drop_markers(engine: Engine) -> None:
    MARKERS.drop(engine, checkfirst=True)


def uses_markers(engine: Engine) -> bool | None:
    """Whether commits on ``engine`` write a marker: a server database holding the table
    (``None``: the database could not be asked)."""
    if engine.dialect.name == "sqlite":
        return False
    try:
        return inspect(engine).has_table(MARKERS.name)
    except SQLAlchemyError as exc:
        log.info("could not look for the commit marker table: %s", _first_line(exc))
        return None


def settle(engine: Engine, marker: str | None, dry_run: Callable[[], bool | None]) -> Outcome:
    """The outcome of a commit whose ``COMMIT`` failed: by its ``marker`` when it wrote one,
    otherwise by ``dry_run`` (``True``: the same commit's checks pass now, so nothing was
    written; ``False``: they fail; ``None``: the dry run itself failed)."""
    if marker is None:
        passed = dry_run()
        return "not_committed" if passed else "unknown"
    try:
        with engine.connect() as conn:
            try:
                conn.execute(insert(MARKERS).values(**_row(marker)))
            except IntegrityError:
                outcome: Outcome = "committed"
            else:
                outcome = "not_committed"
            conn.rollback()
    except SQLAlchemyError as exc:
        log.warning("the outcome of a commit is unknown: %s", _first_line(exc))
        return "unknown"
    if outcome == "committed":
        forget_marker(engine, marker)
    return outcome


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
