"""Tests of the HTTP API during outages of its services (issue 24 item 5), against the running
PostgreSQL, MariaDB and Redis through a TCP proxy the tests start on loopback (``tests/tcp_proxy``):
a cut or blackholed service is a 503 with a stable code and one log line, never a 500 or a
traceback; the pools recover without a failed request; time limits bound every wait."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from smartflow_engine.tools_adapter.api import create_app
from tests.helpers.db_servers import REDIS_URL, SERVER_BACKENDS, database_url, fresh_server_store
from tests.helpers.tcp_proxy import TcpProxy
from tests.helpers.windows import load_window, window_dict

TOKENS = {"tok-7": "7"}
U7 = {"Authorization": "Bearer tok-7"}
WEEKS_7_8 = {"start": {"week": 7, "day_of_week": 1}, "end": {"week": 8, "day_of_week": 7}}
ERRORS_LOGGER = "smartflow_engine.tools_adapter.api.errors"


def _client(app: Any) -> TestClient:
    # A server error is answered 500 (as uvicorn would) instead of raised into the test.
    return TestClient(app, raise_server_exceptions=False)


def _proxied(url: str, proxy: TcpProxy) -> str:
    return make_url(url).set(host="127.0.0.1", port=proxy.port).render_as_string(False)


def _assert_outage(response: Any, code: str) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["error_code"] == code and body["error"], body
    assert "Traceback" not in body["error"]


def _assert_one_log_line_each(caplog: pytest.LogCaptureFixture, requests: int) -> None:
    """One warning per refused request, none with a traceback, nothing logged as an error."""
    lines = [r for r in caplog.records if r.name.startswith("smartflow_engine")]
    assert all(r.exc_info is None and r.levelno < logging.ERROR for r in lines), [
        r.getMessage() for r in lines
    ]
    assert len([r for r in lines if r.name == ERRORS_LOGGER]) == requests
    assert all("\n" not in r.getMessage() for r in lines)


# ---------------------------------------------------------------------------------- Redis
@pytest.fixture
def redis_proxy() -> Iterator[TcpProxy]:
    url = make_url(REDIS_URL.replace("redis://", "postgresql://", 1))  # only to parse host/port
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 6379)
    yield proxy
    proxy.close()


def _redis_app(proxy: TcpProxy, prefix: str, query: str = "") -> Any:
    from smartflow_engine.tools_adapter.sessions.store import RedisSessionStore

    url = REDIS_URL.replace(
        REDIS_URL.split("//", 1)[1].split("/", 1)[0], f"127.0.0.1:{proxy.port}", 1
    )
    return create_app(TOKENS, sessions=RedisSessionStore(url + query, prefix=prefix))


def test_a_redis_cut_is_a_503_on_every_session_route(redis_proxy, redis_prefix, caplog):
    """Tests that with the Redis session store cut, creating, listing, deleting and restoring
    sessions and calling a tool each answer 503 ``session_store_unavailable`` with one log line
    and no traceback; after the cut is restored the same routes work again at once."""
    client = _client(_redis_app(redis_proxy, f"{redis_prefix}:cut"))
    made = client.post("/v1/sessions", headers=U7, json={"state": window_dict()})
    assert made.status_code == 201, made.text
    sid = made.json()["session_id"]
    snapshot = client.get(f"/v1/sessions/{sid}/snapshot", headers=U7).json()

    routes = [
        ("post", "/v1/sessions", {"state": window_dict()}),
        ("get", "/v1/sessions", None),
        ("delete", f"/v1/sessions/{sid}", None),
        ("post", "/v1/restore", {"snapshot": snapshot}),
        ("post", f"/v1/sessions/{sid}/calls", {"tool": "get_overview", "args": {}}),
    ]
    redis_proxy.cut()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        for method, path, body in routes:
            kwargs = {"json": body} if body is not None else {}
            _assert_outage(
                client.request(method, path, headers=U7, **kwargs), "session_store_unavailable"
            )
    _assert_one_log_line_each(caplog, len(routes))

    redis_proxy.restore()
    assert client.get("/v1/sessions", headers=U7).status_code == 200
    assert client.post("/v1/restore", headers=U7, json={"snapshot": snapshot}).status_code == 201
    reply = client.post(
        f"/v1/sessions/{sid}/calls", headers=U7, json={"tool": "get_overview", "args": {}}
    )
    assert reply.status_code == 200 and reply.json()["status"] == "ok", reply.text
    assert client.delete(f"/v1/sessions/{sid}", headers=U7).status_code == 204


@pytest.mark.slow
def test_a_blackholed_redis_answers_503_within_its_time_limits(redis_proxy, redis_prefix):
    """Tests that a Redis that accepts connections and never answers holds a request only for
    the client's default time limits (a few seconds), then answers 503: the default client has
    finite connect and read timeouts."""
    client = _client(_redis_app(redis_proxy, f"{redis_prefix}:blackhole"))
    assert client.get("/v1/sessions", headers=U7).status_code == 200  # a pooled connection
    redis_proxy.blackhole()
    for _ in range(2):  # the pooled connection, then a new one
        started = time.monotonic()
        out = client.post("/v1/sessions", headers=U7, json={"state": window_dict()})
        _assert_outage(out, "session_store_unavailable")
        assert time.monotonic() - started < 12.0
    redis_proxy.restore()
    assert client.get("/v1/sessions", headers=U7).status_code == 200


# ---------------------------------------------------------------------------------- databases
@pytest.fixture(params=SERVER_BACKENDS)
def db_proxy(request: pytest.FixtureRequest) -> Iterator[tuple[str, TcpProxy]]:
    """User 7's sample window on a running database server, and a proxy in front of it; yields
    the database URL through the proxy."""
    store = fresh_server_store(request, request.param)
    store.seed_from_state(7, load_window("sample_window"))
    url = make_url(database_url(request, request.param))
    proxy = TcpProxy(url.host or "127.0.0.1", int(url.port or 0))
    yield _proxied(database_url(request, request.param), proxy), proxy
    proxy.close()


def _db_worker(url: str, **timeouts: float) -> tuple[TestClient, Any]:
    """One server worker: its own app with its own store (its own connection pool)."""
    from smartflow_engine.store import Store

    store = Store.from_url(url, create=False, **timeouts)
    return _client(create_app(TOKENS, database=store)), store


def _open_window(client: TestClient) -> Any:
    return client.post("/v1/sessions", headers=U7, json={"window": WEEKS_7_8})


def test_a_database_cut_is_a_503_and_every_worker_recovers(db_proxy, caplog):
    """Tests that with the database cut, opening a session on a database window answers 503
    ``db_unavailable`` with one log line per request and no traceback, on every worker; and
    that once the database is back, the first request of every worker succeeds (including
    workers that saw no request during the cut and hold only stale pooled connections)."""
    url, proxy = db_proxy
    workers = [_db_worker(url) for _ in range(3)]
    try:
        for client, _ in workers:
            assert _open_window(client).status_code == 201  # each pool holds a connection
        proxy.cut()
        caplog.clear()
        with caplog.at_level(logging.INFO):
            for client, _ in workers[:2]:  # the third sees nothing of the outage
                _assert_outage(_open_window(client), "db_unavailable")
                _assert_outage(_open_window(client), "db_unavailable")
        _assert_one_log_line_each(caplog, 4)
        proxy.restore()
        for client, _ in workers:
            made = _open_window(client)
            assert made.status_code == 201, made.text
            assert made.json()["db_user_id"] == 7
    finally:
        for _, store in workers:
            store.dispose()


@pytest.mark.parametrize("statement_s", [2.0, 10.0])
def test_a_blackholed_database_answers_503_within_the_time_limits(db_proxy, statement_s):
    """Tests that a database that accepts connections and never answers holds a request only for
    the connect time limit's deadline, then answers 503 ``db_unavailable``: on a worker whose
    pool holds a connection and on one that must connect; both recover after. At most a
    liveness check and a new connection's handshake, each under the connect limit (2 s), on
    PostgreSQL and MariaDB alike, whatever the statement limit (issue 44 item 11: MariaDB held
    a request 10-20 s, its ping and greeting waiting for the 10 s statement limit). The bound
    asserted is twice that deadline, under the 10 s statement limit."""
    url, proxy = db_proxy
    connect = 2.0
    deadline = 2 * connect
    warm, warm_store = _db_worker(url, connect_timeout_s=connect, statement_timeout_s=statement_s)
    cold, cold_store = _db_worker(url, connect_timeout_s=connect, statement_timeout_s=statement_s)
    try:
        assert _open_window(warm).status_code == 201
        proxy.blackhole()
        for client in (warm, cold):
            started = time.monotonic()
            refused = _open_window(client)
            took = time.monotonic() - started
            _assert_outage(refused, "db_unavailable")
            assert took < 2 * deadline, took
        proxy.restore()
        for client in (warm, cold):
            assert _open_window(client).status_code == 201
    finally:
        warm_store.dispose()
        cold_store.dispose()


def test_a_statement_the_server_never_answers_ends_at_the_statement_limit(db_proxy):
    """Tests that inside a transaction, a statement sent to a server that stopped answering
    fails after the statement time limit (PostgreSQL: the client-side deadline one second after
    it; MariaDB: pymysql's read timeout) with a database error that SQLAlchemy treats as a lost
    connection, and that the store works again once the server answers."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from smartflow_engine.store import Store

    url, proxy = db_proxy
    store = Store.from_url(url, create=False, connect_timeout_s=2.0, statement_timeout_s=1.0)
    try:
        with pytest.raises(OperationalError) as lost, store.session() as s:
            assert s.scalar(text("SELECT 1")) == 1
            proxy.blackhole()
            started = time.monotonic()
            s.scalar(text("SELECT 2"))
        assert time.monotonic() - started < 1.0 + 1.0 + 1.5
        assert lost.value.connection_invalidated
        proxy.restore()
        with store.session() as s:
            assert s.scalar(text("SELECT 3")) == 3
    finally:
        store.dispose()


@contextmanager
def _uvicorn(app: Any) -> Iterator[int]:
    """``app`` served by a real uvicorn on a free loopback port, in a thread of this process."""
    import threading

    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:  # waiting for start-up, not for a result
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_an_outage_leaves_the_http_connection_usable(db_proxy):
    """Tests on a real uvicorn server that a request refused for a database cut leaves the
    client's keep-alive connection open: the next request on the same connection succeeds once
    the database is back (an exception that reached the server made it close the connection
    after its 500, and the client's next request on it was reset)."""
    import http.client
    import json

    from smartflow_engine.store import Store

    url, proxy = db_proxy
    store = Store.from_url(url, create=False)
    body = json.dumps({"window": WEEKS_7_8})
    headers = {**U7, "Content-Type": "application/json"}
    try:
        with _uvicorn(create_app(TOKENS, database=store)) as port:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/v1/sessions", body=body, headers=headers)
            assert conn.getresponse().read() and conn.sock is not None
            proxy.cut()
            conn.request("POST", "/v1/sessions", body=body, headers=headers)
            refused = conn.getresponse()
            refused_body = refused.read()
            sock = conn.sock
            proxy.restore()
            try:
                conn.request("POST", "/v1/sessions", body=body, headers=headers)
                again: Any = conn.getresponse().status
            except (ConnectionError, http.client.HTTPException) as exc:
                again = type(exc).__name__  # the server closed the connection
            reused = conn.sock is sock and sock is not None
            conn.close()
        assert refused.status == 503 and b"db_unavailable" in refused_body, refused_body
        assert again == 201 and reused  # the same connection, not a new one
    finally:
        store.dispose()


# ---------------------------------------------------------------------------------- settings
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgresql+psycopg://u@h/db",
            {"connect_timeout": 3, "options": "-c statement_timeout=10000"},
        ),  # the defaults
        (
            "postgresql+psycopg://u@h/db?connect_timeout=7&options=-c%20search_path%3Dx",
            {"options": "-c search_path=x -c statement_timeout=10000"},
        ),  # the URL's connect_timeout wins; its options are kept
        (
            "postgresql+psycopg://u@h/db?options=-c%20statement_timeout%3D60s",
            {"connect_timeout": 3},
        ),  # the URL's statement_timeout wins
        (
            "mysql+pymysql://u@h/db?read_timeout=30",
            {"connect_timeout": 3.0, "write_timeout": 10.0},
        ),  # MariaDB/MySQL: client-side limits; the URL's read_timeout wins
        ("sqlite:///x.db", {}),  # SQLite: nothing
    ],
)
def test_time_limits_are_settings_with_short_defaults(url, expected):
    """Tests that the connect and statement time limits default to 3 s and 10 s on the server
    databases, in each driver's own parameters, and that a limit given in the URL wins."""
    from smartflow_engine.store.timeouts import connect_args

    assert connect_args(make_url(url), 3.0, 10.0) == expected


def test_the_enforced_deadlines_follow_the_url():
    """Tests that the client-side deadlines on PostgreSQL are read from the connection's own
    parameters (a statement_timeout given in the URL is the one enforced), and that a limit of
    0 or none switches the deadline off."""
    from smartflow_engine.store.timeouts import _pg_statement_timeout

    assert _pg_statement_timeout("-c statement_timeout=10000") == 10.0
    assert _pg_statement_timeout("-c search_path=x -c statement_timeout=60s") == 60.0
    assert _pg_statement_timeout("-c statement_timeout='2min'") == 120.0
    assert _pg_statement_timeout("-c statement_timeout=0") is None
    assert _pg_statement_timeout(None) is None
