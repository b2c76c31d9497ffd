"""Tests of issue 44 item 4: a commit whose answer was lost after ``COMMIT`` is never reported
rolled back when it was written. A TCP proxy started by the test sits between the engine and the
running PostgreSQL / MariaDB and loses the server's answer to ``COMMIT`` (or the ``COMMIT``
itself) and closes that connection; the reply must match what the tables hold: committed (the
session is committed), rolled back (nothing written, a retry succeeds), or said to be unknown
("提交失败：…", never "已回滚"). Over the session (the HTTP API's path), the HTTP API and MCP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.engine import make_url

from smartflow_engine.store import Store, window_days
from smartflow_engine.store import models as m
from smartflow_engine.store.outcome import MARKERS, create_markers, drop_markers
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.db_servers import SERVER_BACKENDS, database_url, fresh_server_store
from tests.helpers.store import UPSERT_EXAMPLE, USER, item_placement, table_rows
from tests.helpers.tcp_proxy import TcpProxy
from tests.helpers.windows import load_window

PLACE = {"task_id": 11, "day": 6, "slot_start": 1}  # task item 301: three new schedule rows
# The bytes of the COMMIT request in each server's protocol (not "READ COMMITTED" of a new
# connection's set-up): psycopg sends the query as a C string, pymysql as a COM_QUERY packet.
COMMIT_BYTES = {"postgresql": b"COMMIT\x00", "mariadb": b"\x03COMMIT"}
ROLLED_BACK = "已回滚"


class Rig:
    """The server ``kind`` with USER's sample window; ``direct`` reaches it, ``store`` goes
    through ``proxy``."""

    def __init__(self, kind: str, direct: Store, proxy: TcpProxy, store: Store) -> None:
        self.kind, self.direct, self.proxy, self.store = kind, direct, proxy, store

    def session(self) -> Session:
        state = self.store.load_window(USER, window_days((7, 1), (8, 7)))
        return Session(
            state, mode="local_adjust", store=self.store, db_user_id=USER, self_check=True
        )

    def lose(self, **how: Any) -> None:
        """Lose the next COMMIT's answer (see TcpProxy.lose_answer_to). A pooled connection is
        made first: a new MariaDB connection sends a COMMIT of its own (after setting its
        isolation level)."""
        self.store.row_counts(USER)
        self.proxy.lose_answer_to(COMMIT_BYTES[self.kind], **how)

    def confirm_losing(self, **how: Any) -> tuple[Session, Any]:
        """A session places [11] and previews its commit; the next COMMIT is lost (``how``);
        the user confirms. The session and the confirm's result."""
        session = self.session()
        session.call("place", PLACE)
        held = session.invoke("commit", {})
        assert held.status == "pending_confirm", held.reply
        self.lose(**how)
        return session, session.confirm(held.confirm_token or "")

    def placed(self) -> bool:
        """Whether item 301 was written (scheduled, with its three rows)."""
        return item_placement(self.direct, 301) == (2, 3)

    def markers(self) -> int:
        with self.direct.session() as s:
            return int(s.scalar(select(func.count()).select_from(MARKERS)) or 0)


# SQLite runs inside the engine's process: its COMMIT has no network answer to lose (a failed
# SQLite COMMIT wrote nothing and is reported rolled back), so only the servers are rigged.
@pytest.fixture(params=SERVER_BACKENDS)
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    direct = fresh_server_store(request, request.param)
    direct.seed_from_state(USER, load_window("sample_window"))
    url = make_url(database_url(request, request.param))
    proxy = TcpProxy(url.host or "127.0.0.1", int(url.port or 0))
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(False)
    store = Store.from_url(proxied, create=False, connect_timeout_s=2.0, statement_timeout_s=5.0)
    try:
        yield Rig(request.param, direct, proxy, store)
    finally:
        store.dispose()
        proxy.close()


@pytest.fixture
def unmarked(rig: Rig) -> Iterator[Rig]:
    """The rig on tables the store did not create: no marker table."""
    drop_markers(rig.direct.engine)
    rig.store = Store(rig.store.engine, create=False)
    try:
        yield rig
    finally:
        create_markers(rig.direct.engine, schema_is_ours=True)


def test_a_lost_answer_to_commit_is_checked_and_reported_committed(rig: Rig):
    """Tests that when the server's answer to COMMIT is lost (the connection closed after the
    server committed), the confirm is answered ``ok`` "已提交" with a note that it was checked
    (never "已回滚"), the session is committed (its change log emptied; the next commit has
    nothing to write), the rows are in the tables and the commit's marker is gone."""
    markers = rig.markers()
    session, done = rig.confirm_losing()
    assert rig.proxy.lost.is_set()
    assert rig.placed()
    assert done.status == "ok", done.reply
    assert done.reply.startswith("已提交 1 项修改") and "已重新连接核实" in done.reply
    assert ROLLED_BACK not in done.reply
    assert session.changes == [] and session.call("commit", {}) == "没有需要提交的修改。"
    assert rig.markers() == markers


def test_a_lost_commit_request_is_reported_rolled_back_and_a_retry_writes(rig: Rig):
    """Tests that when COMMIT itself never reaches the server (the connection closed as it was
    sent), the check finds nothing written: the reply says rolled back, the tables are as they
    were, the session keeps its change, and confirming again writes it (not ``stale``)."""
    rows = table_rows(rig.direct)
    session, failed = rig.confirm_losing(lose_request=True)
    assert rig.proxy.lost.is_set()
    assert failed.status == "error" and failed.error_code == "db_unavailable", failed.reply
    assert failed.reply.startswith("提交失败：") and ROLLED_BACK in failed.reply
    assert table_rows(rig.direct) == rows and len(session.changes) == 1
    again = session.confirm(session.invoke("commit", {}).confirm_token or "")
    assert again.status == "ok" and again.reply.startswith("已提交 1 项修改"), again.reply
    assert rig.placed()


def test_an_outcome_that_cannot_be_checked_is_said_to_be_unknown(rig: Rig):
    """Tests that when the answer to COMMIT is lost and the server cannot be reached again to
    check, the reply is a refusal saying the outcome is unknown and to reload and check, with
    the code ``outcome_unknown``, never "已回滚" (the rows were written)."""
    session, unknown = rig.confirm_losing(then="cut")
    rig.proxy.restore()
    assert rig.placed()
    assert unknown.status == "error" and unknown.error_code == "outcome_unknown", unknown.reply
    assert unknown.reply.startswith("提交失败：") and "无法确定" in unknown.reply
    assert "reload" in unknown.reply and ROLLED_BACK not in unknown.reply
    assert len(session.changes) == 1  # kept: the user reloads to see what the database holds


def test_without_a_marker_table_a_lost_answer_is_unknown_not_rolled_back(unmarked: Rig):
    """Tests the store on tables it did not create (no marker table is added there): a lost
    answer to a COMMIT that was written is reported unknown (the dry-run check finds the
    session's starting rows gone), never rolled back."""
    rig = unmarked
    _, reply = rig.confirm_losing()
    assert rig.placed()
    assert reply.error_code == "outcome_unknown" and ROLLED_BACK not in reply.reply, reply.reply


def test_without_a_marker_table_a_lost_request_is_checked_rolled_back(unmarked: Rig):
    """Tests that without a marker table a COMMIT that never arrived is still settled: the
    dry-run check (which waits for the lost transaction's row locks) passes on the unchanged
    rows, so the reply says rolled back, truthfully."""
    rig = unmarked
    rows = table_rows(rig.direct)
    _, reply = rig.confirm_losing(lose_request=True)
    assert table_rows(rig.direct) == rows
    assert reply.error_code == "db_unavailable" and ROLLED_BACK in reply.reply, reply.reply


@pytest.mark.parametrize("deployment", ["memory", "redis"])
@pytest.mark.parametrize("then", ["open", "cut"])
def test_the_http_confirm_reports_a_lost_answer_truthfully(
    rig: Rig, then: str, deployment: str, request: pytest.FixtureRequest
):
    """Tests the HTTP API, on one worker with the memory session store and on two workers
    sharing Redis (previewed on one, confirmed on the other): ``/confirm`` of a commit whose
    COMMIT answer is lost answers 200 ``ok`` "已提交" with the session's change log emptied
    (seen from the other worker) when the check can reach the database, and 503
    ``outcome_unknown`` "提交失败：…无法确定…" with the change kept (never "已回滚") when it
    cannot."""
    from fastapi.testclient import TestClient

    from tests.helpers.deployments import worker_apps

    prefix = ""
    if deployment == "redis":
        prefix = f"{request.getfixturevalue('redis_prefix')}:lost-{rig.kind}-{then}"
    apps = worker_apps(deployment, {f"tok-{USER}": str(USER)}, rig.store, prefix)
    first, second = TestClient(apps[0]), TestClient(apps[-1])
    auth = {"Authorization": f"Bearer tok-{USER}"}
    window = {"start": {"week": 7, "day_of_week": 1}, "end": {"week": 8, "day_of_week": 7}}
    made = first.post("/v1/sessions", headers=auth, json={"window": window})
    assert made.status_code == 201, made.text
    calls = f"/v1/sessions/{made.json()['session_id']}"
    placed = first.post(f"{calls}/calls", headers=auth, json={"tool": "place", "args": PLACE})
    assert placed.json()["status"] == "ok", placed.text
    held = first.post(f"{calls}/calls", headers=auth, json={"tool": "commit", "args": {}})
    token = held.json()["confirm_token"]
    rig.lose(then=then)
    done = second.post(f"{calls}/confirm", headers=auth, json={"token": token})
    rig.proxy.restore()
    assert rig.proxy.lost.is_set() and rig.placed()
    body = done.json()
    assert ROLLED_BACK not in body["reply"], body
    kept = first.get(f"{calls}/changes", headers=auth).json()["changes"]
    if then == "open":
        assert done.status_code == 200 and body["status"] == "ok", done.text
        assert body["reply"].startswith("已提交 1 项修改") and kept == []
    else:
        assert done.status_code == 503 and body["error_code"] == "outcome_unknown", done.text
        assert body["reply"].startswith("提交失败：") and "无法确定" in body["reply"]
        assert len(kept) == 1


def test_an_mcp_accept_reports_a_lost_answer_as_committed(rig: Rig):
    """Tests MCP (the in-memory client, the user accepting the elicitation): the commit whose
    COMMIT answer is lost is answered "已提交" and is not an error."""
    import anyio
    import mcp.types as types
    from mcp import Client

    from smartflow_engine.tools_adapter.mcp.server import build_server

    session = rig.session()
    session.call("place", PLACE)

    async def accept(_context: Any, _params: Any) -> types.ElicitResult:
        rig.lose()
        return types.ElicitResult(action="accept", content={})

    async def go() -> Any:
        async with Client(build_server(session), elicitation_callback=accept) as client:
            return await client.call_tool("commit", {})

    done = anyio.run(go)
    assert rig.proxy.lost.is_set() and rig.placed()
    text = done.content[0].text
    assert not done.is_error and text.startswith("已提交 1 项修改"), text
    assert ROLLED_BACK not in text and session.changes == []


@pytest.mark.parametrize(("then", "code"), [("open", ""), ("cut", "outcome_unknown")])
def test_an_upsert_whose_answer_is_lost_is_not_reported_rolled_back(rig: Rig, then: str, code: str):
    """Tests upsert_task_class's transaction (the same wrapper as commit's): a lost answer to
    its COMMIT is settled as saved (``success``) when the database can be asked again, and
    reported unknown (``outcome_unknown``, "无法确定") when it cannot; never "已回滚" while the
    class was written."""
    import json

    def classes() -> list[str]:
        with rig.direct.session() as s:
            return list(s.scalars(select(m.TaskClass.name).where(m.TaskClass.user_id == USER)))

    session = Session(None, store=rig.store, db_user_id=USER)
    held = session.invoke("upsert_task_class", UPSERT_EXAMPLE)
    assert held.status == "pending_confirm", held.reply
    rig.lose(then=then)
    done = session.confirm(held.confirm_token or "")
    rig.proxy.restore()
    assert rig.proxy.lost.is_set() and "考研英语" in classes(), done.reply
    reply = json.loads(done.reply)
    assert ROLLED_BACK not in done.reply, reply
    assert reply["success"] is (code == "") and reply.get("error_code", "") == code, reply
    if code:
        assert "无法确定" in reply["error"]


@pytest.mark.parametrize("kind", SERVER_BACKENDS)
def test_markers_left_behind_are_swept_by_the_next_commit(
    request: pytest.FixtureRequest, kind: str
) -> None:
    """Tests that a marker its commit's delete never removed (older than a day) is swept by the
    next commit, a recent one (a commit possibly being settled) is kept, and the
    commit's own marker is gone after it."""
    direct = fresh_server_store(request, kind)
    direct.seed_from_state(USER, load_window("sample_window"))
    now = datetime.now(UTC).replace(tzinfo=None)
    with direct.engine.begin() as conn:
        conn.execute(insert(MARKERS).values(id="old", created_at=now - timedelta(days=2)))
        conn.execute(insert(MARKERS).values(id="recent", created_at=now - timedelta(hours=1)))
    with direct.session() as s:
        before = set(s.scalars(select(MARKERS.c.id)))  # (other tests' recent ones too)
    store = Store(direct.engine, create=False)
    state = store.load_window(USER, window_days((7, 1), (8, 7)))
    session = Session(state, mode="local_adjust", store=store, db_user_id=USER, self_check=True)
    session.call("place", PLACE)
    done = session.confirm(session.invoke("commit", {}).confirm_token or "")
    assert done.status == "ok", done.reply
    with direct.session() as s:
        assert set(s.scalars(select(MARKERS.c.id))) == before - {"old"}
    assert "recent" in before
