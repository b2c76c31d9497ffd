"""psycopg 3 connections whose every round trip (statement, commit, rollback, liveness ping) has a
client-side deadline, enforced by :data:`.watchdog.WATCHDOG`. libpq has no read time limit of
its own: without this a server that accepts and never answers holds the caller forever."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from .watchdog import WATCHDOG


class DeadlineCursor(psycopg.Cursor[Any]):
    def execute(self, *args: Any, **kwargs: Any) -> Any:
        with self.connection.guard():  # type: ignore[attr-defined]
            return super().execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> Any:
        with self.connection.guard():  # type: ignore[attr-defined]
            return super().executemany(*args, **kwargs)


class DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection with ``deadline_s`` seconds (``None``: none) for each round trip."""

    deadline_s: float | None = None

    @classmethod
    def connect(cls, *args: Any, **kwargs: Any) -> Any:
        given = "cursor_factory" in kwargs
        conn = super().connect(*args, **kwargs)
        if not given:
            conn.cursor_factory = DeadlineCursor
        return conn

    @contextmanager
    def deadline(self, seconds: float | None) -> Iterator[None]:
        """Use ``seconds`` as the deadline inside the block (the liveness ping's)."""
        before = self.deadline_s
        self.deadline_s = seconds
        try:
            yield
        finally:
            self.deadline_s = before

    @contextmanager
    def guard(self) -> Iterator[None]:
        if self.closed or self.deadline_s is None:
            yield
            return
        seconds = self.deadline_s
        with WATCHDOG.guard(self.fileno(), seconds) as armed:
            try:
                yield
            except psycopg.OperationalError as exc:
                if armed.fired:
                    raise psycopg.OperationalError(
                        f"the database server did not answer within {seconds:g} s"
                    ) from exc
                raise

    def commit(self) -> None:
        with self.guard():
            super().commit()

    def rollback(self) -> None:
        with self.guard():
            super().rollback()


def guarded_connection() -> type[DeadlineConnection]:
    return DeadlineConnection
