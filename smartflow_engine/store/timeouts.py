"""Time limits and liveness for the server databases (PostgreSQL, MariaDB/MySQL).

A database that is down, restarting or hung must cost a request a few seconds and a clear error,
never a hang, and must not leave the pool holding dead connections:

- **Connect time limit** (default :data:`CONNECT_TIMEOUT_S`): libpq's ``connect_timeout`` for
  psycopg (whole seconds, at least 2, as libpq counts them); pymysql's ``connect_timeout``.
- **Statement time limit** (default :data:`STATEMENT_TIMEOUT_S`): on PostgreSQL the server's
  ``statement_timeout`` (sent as ``options=-c statement_timeout=<ms>``) and, for a server that
  never answers at all, a client-side deadline a second later (:class:`.watchdog.Watchdog`: it shuts the
  connection's socket down, so the driver sees a lost connection, SQLAlchemy invalidates it and
  the error is an ``OperationalError``); on MariaDB/MySQL pymysql's ``read_timeout`` and
  ``write_timeout`` (client side). A new pymysql connection's handshake (greeting,
  authentication, ``SET NAMES``) runs under the connect time limit instead, as libpq's
  ``connect_timeout`` covers PostgreSQL's: a blackholed server costs both the same few seconds.
- **Liveness**: every connection taken from the pool is pinged first (the pessimistic
  ``pool_pre_ping`` check, here a ``checkout`` listener so that the ping runs under the connect
  time limit on both servers); a dead one is replaced by a new connection before the request uses
  it, so a request after an outage never fails on a stale pooled connection.

Values given in the URL's query (``connect_timeout``, ``options``, ``read_timeout``,
``write_timeout``) win over these defaults; ``None`` or ``0`` switches a limit off.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine import URL
from sqlalchemy.exc import DisconnectionError

CONNECT_TIMEOUT_S = 3.0
STATEMENT_TIMEOUT_S = 10.0
# The client-side deadline of a PostgreSQL statement comes this long after the server's own
# statement_timeout would have answered (a server that keeps its time limit is never cut).
CLIENT_GRACE_S = 1.0


def _limit(seconds: float | None) -> float | None:
    return float(seconds) if seconds and seconds > 0 else None


def connect_args(
    url: URL, connect_timeout_s: float | None, statement_timeout_s: float | None
) -> dict[str, Any]:
    """The driver's connect arguments for the two time limits, leaving out any the URL sets."""
    connect, statement = _limit(connect_timeout_s), _limit(statement_timeout_s)
    query = url.query
    out: dict[str, Any] = {}
    if url.get_backend_name() == "postgresql":
        if connect is not None and "connect_timeout" not in query:
            out["connect_timeout"] = max(2, math.ceil(connect))
        if statement is not None and "statement_timeout" not in str(query.get("options", "")):
            option = f"-c statement_timeout={round(statement * 1000)}"
            given = query.get("options")
            out["options"] = f"{given} {option}" if isinstance(given, str) else option
    elif url.get_backend_name() in ("mysql", "mariadb"):
        if connect is not None and "connect_timeout" not in query:
            out["connect_timeout"] = connect
        for key in ("read_timeout", "write_timeout"):
            if statement is not None and key not in query:
                out[key] = statement
    return out


def install_liveness(engine: Engine, params: Mapping[str, Any]) -> None:
    """Ping every connection taken from ``engine``'s pool (replacing a dead one), and on
    PostgreSQL with psycopg bound every round trip by a client-side deadline: the statement
    time limit (plus :data:`CLIENT_GRACE_S`) and, for the ping, the connect time limit, both
    read from the connection parameters ``params`` (the URL's query and the connect
    arguments) so that a limit given in the URL is the one enforced."""
    guarded = engine.dialect.driver == "psycopg"
    mysql = engine.dialect.driver == "pymysql"
    connect = _seconds(params.get("connect_timeout"))
    if mysql and connect is not None:
        _pymysql_handshake_limit(engine, connect)
    statement = _pg_statement_timeout(params.get("options"))
    if guarded:
        from ._psycopg_deadline import guarded_connection

        conn_class = guarded_connection()
        limit = statement + CLIENT_GRACE_S if statement is not None else None

        @event.listens_for(engine, "do_connect")
        def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
            conn = conn_class.connect(*cargs, **cparams)
            conn.deadline_s = limit
            return conn

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        try:
            if guarded:
                with dbapi_conn.deadline(connect):
                    engine.dialect.do_ping(dbapi_conn)
            elif mysql and connect is not None:
                with pymysql_limits(dbapi_conn, connect):
                    engine.dialect.do_ping(dbapi_conn)
            else:
                engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:  # the pool replaces the connection and tries again
            raise DisconnectionError(f"pooled connection is dead: {exc}") from exc


def _pymysql_handshake_limit(engine: Engine, connect: float) -> None:
    """Open pymysql connections with every read and write of the handshake limited to
    ``connect`` seconds, then restore the statement limits (the connection's own read and write
    timeouts) for its life in the pool."""

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        read, write = cparams.get("read_timeout"), cparams.get("write_timeout")
        conn = dialect.loaded_dbapi.connect(
            *cargs, **{**cparams, "read_timeout": connect, "write_timeout": connect}
        )
        _set_pymysql_timeouts(conn, (read, write))
        return conn


@contextmanager
def pymysql_limits(conn: Any, seconds: float) -> Iterator[None]:
    """Inside the block, each read and write of the pymysql connection ``conn`` is limited to
    ``seconds`` (pymysql applies its ``_read_timeout``/``_write_timeout`` to the socket before
    every read and write)."""
    before = _set_pymysql_timeouts(conn, (seconds, seconds))
    try:
        yield
    finally:
        _set_pymysql_timeouts(conn, before)


def _set_pymysql_timeouts(conn: Any, timeouts: tuple[Any, Any]) -> tuple[Any, Any]:
    """Set a pymysql connection's (read, write) timeouts; the previous ones. pymysql has no
    public setter: it applies these attributes to the socket before each read and write."""
    before = conn._read_timeout, conn._write_timeout  # noqa: SLF001 (no public setter)
    conn._read_timeout, conn._write_timeout = timeouts  # noqa: SLF001
    return before


def _seconds(value: Any) -> float | None:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if seconds > 0 else None


_UNITS = {"ms": 0.001, "": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}


def _pg_statement_timeout(options: Any) -> float | None:
    """The ``statement_timeout`` in a libpq ``options`` string, in seconds (``None``: none)."""
    found = re.search(r"statement_timeout\s*=\s*'?(\d+(?:\.\d+)?)\s*(ms|s|min|h|)\b", str(options))
    if found is None:
        return None
    return _seconds(float(found.group(1)) * _UNITS[found.group(2)])
