"""The schema gate (issue 41): the engine creates the backend's four tables (and its extension
table) only on a database that holds none of them (``smartflow db init``, the demo, seeds, tests);
on any other database it never creates or alters a table: it checks that the tables and columns
it reads and writes are there and refuses with one line naming what differs."""

from __future__ import annotations

from sqlalchemy import Engine, inspect

from . import models as m
from .days import StoreError


def _required() -> dict[str, set[str]]:
    return {t.__tablename__: {c.name for c in t.__table__.columns} for t in m.BACKEND_TABLES}


def schema_difference(engine: Engine) -> str | None:
    """One line naming the first table or columns the database lacks, or ``None``."""
    names = set(inspect(engine).get_table_names())
    for table, columns in _required().items():
        if table not in names:
            return f"table {table} is missing"
        have = {c["name"] for c in inspect(engine).get_columns(table)}
        lacking = sorted(columns - have)
        if lacking:
            return f"table {table} lacks column{'s' if len(lacking) > 1 else ''} " + ", ".join(
                lacking
            )
    return None


def prepare(engine: Engine, *, create: bool) -> bool:
    """Check (and, on a database without any of the four tables, when ``create``, create) the
    schema. Returns whether the extension table is there.

    Raises
    ------
    StoreError
        ``the database does not hold SmartFlow-Agent's schema: table schedules lacks column
        embedded_task_id`` (and so on); nothing was created or altered.
    """
    names = set(inspect(engine).get_table_names())
    backend = {t.__tablename__ for t in m.BACKEND_TABLES}
    if create and not names & backend:
        m.Base.metadata.create_all(engine)
        return True
    diff = schema_difference(engine)
    if diff is not None:
        raise StoreError(
            f"the database does not hold SmartFlow-Agent's schema: {diff} (nothing was created "
            f"or altered; `smartflow db init` creates the schema on an empty database)"
        )
    return m.EXTENSION_TABLE in names
