"""Tests of the ``commit`` and ``reload`` tools through a Session opened on the database: the
confirm gate's preview of the net change per table, the one-transaction write (rows checked with
SQL), and stale/conflict replies in Chinese naming what changed with the session state kept."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import select

from smartflow_engine import Toolbox
from smartflow_engine.store import Store, window_days
from smartflow_engine.store import models as m
from smartflow_engine.store.days import StoreError
from smartflow_engine.tools_adapter.sessions.session import CallResult, Session
from tests.helpers.db_servers import SERVER_BACKENDS, fresh_server_store
from tests.helpers.store import (
    UPSERT_EXAMPLE,
    USER,
    item_placement,
    mcp_params,
    reload,
    stored,
    table_rows,
)
from tests.helpers.windows import load_window

MOVE_HOST = {"task_id": 6, "new_day": 6, "new_slot_start": 7, "from_day": 3}
EMBED = {"task_id": 15, "day": 3, "slot_start": 3}


def _open(store: Store) -> Session:
    """A session on USER's sample window, loaded from the database (weeks 7-8)."""
    state = store.load_window(USER, window_days((7, 1), (8, 7)))
    return Session(state, mode="local_adjust", store=store, db_user_id=USER, self_check=True)


def test_commit_previews_then_writes_in_one_transaction(sample_store: Store):
    """Tests that commit first answers a preview naming the net change per table with nothing
    written, and on confirm writes the session's changes (the rows are where the state says) and
    empties the change log."""
    session = _open(sample_store)
    assert session.call("place", {"task_id": 11, "day": 6, "slot_start": 1}).startswith("已将")
    assert session.call("move", MOVE_HOST).startswith("已将")
    rows = table_rows(sample_store)
    held = session.invoke("commit", {})
    assert held.status == "pending_confirm"
    assert "schedule_events：新建1个" in held.reply and "schedules：新增5行，删除2行" in held.reply
    assert table_rows(sample_store) == rows  # the preview wrote nothing
    done = session.confirm(held.confirm_token or "")
    assert done.status == "ok" and done.reply.startswith("已提交 2 项修改"), done.reply
    assert session.changes == []
    with sample_store.session() as s:
        item_event = s.scalars(
            select(m.ScheduleEvent.id).where(m.ScheduleEvent.rel_id == 301)
        ).one()
        cells = sorted(
            s.execute(
                select(m.Schedule.week, m.Schedule.day_of_week, m.Schedule.section).where(
                    m.Schedule.event_id == item_event
                )
            ).all()
        )
        status = s.scalar(select(m.TaskItem.status).where(m.TaskItem.id == 301))
    assert cells == [(7, 6, 1), (7, 6, 2), (7, 6, 3)] and status == 2
    assert session.state is not None
    assert stored(reload(sample_store, session.state)) == stored(session.state)
    # issue 45 item 7: with nothing to write, commit answers at once and holds nothing
    again = session.invoke("commit", {})
    assert (again.status, again.reply, again.confirm_token) == ("ok", "没有需要提交的修改。", None)
    assert session.pending() == []


def test_a_stale_commit_names_what_changed_and_keeps_the_state(sample_store: Store):
    """Tests issue 14 item 2 with issue 12 item 1's race: B embeds [15] into the water course
    block A moves away; B commits first; A's commit (preview and confirm) answers in Chinese
    naming the guest now embedded there, writes nothing, keeps A's state and log; reload with
    discard_changes then shows the database's window."""
    a, b = _open(sample_store), _open(sample_store)
    a.call("move", MOVE_HOST)
    b.call("place", EMBED)
    b_token = b.invoke("commit", {}).confirm_token
    assert b.confirm(b_token or "").reply.startswith("已提交")
    rows = table_rows(sample_store)
    before = a.state.to_dict() if a.state is not None else None
    held = a.invoke("commit", {})
    assert "会失败" in held.reply and "英语听力练习" in held.reply, held.reply
    reply = a.confirm(held.confirm_token or "").reply
    assert reply.startswith("提交失败：数据库在本会话加载之后已被修改。")
    assert "第3天第3-4节" in reply and "「英语听力练习」" in reply, reply
    assert table_rows(sample_store) == rows
    assert a.state is not None and a.state.to_dict() == before and len(a.changes) == 1
    refused = a.call("reload", {})
    assert refused.startswith("重新加载失败：本会话有 1 项未提交的修改")
    assert a.call("reload", {"discard_changes": True}).startswith("已从数据库重新加载第1-14天")
    assert a.changes == [] and a.state is not None
    guest = a.state.task(15)
    assert guest is not None and guest.embed_host == 6


def test_without_a_database_commit_and_reload_refuse():
    """Tests issue 24 item 3: a session not opened on a database refuses commit at once (never
    held for the user's confirm) and reload, both as errors with the stable code no_database;
    the bare Toolbox (the CLI's `call commit --yes`) too; nothing changes."""
    session = Session(load_window("sample_window"), mode="local_adjust")
    session.call("place", EMBED)
    held = session.invoke("commit", {})
    assert (held.status, held.error_code, held.is_error) == ("error", "no_database", True)
    assert held.reply.startswith("提交失败：未配置数据库") and held.confirm_token is None
    assert session.pending() == []
    reloaded = session.invoke("reload", {})
    assert (reloaded.status, reloaded.error_code) == ("error", "no_database")
    assert reloaded.reply.startswith("重新加载失败：未配置数据库")
    assert len(session.changes) == 1
    bare = Toolbox(load_window("sample_window")).invoke("commit", {}, confirm=True)
    assert bare.is_error and bare.text.startswith("提交失败：未配置数据库")


def test_upsert_without_a_database_is_refused_at_once():
    """Tests issue 24 item 3: upsert_task_class in a session without a database is refused at
    once with no_database (nothing held for a confirm that could only fail)."""
    session = Session(None)
    held = session.invoke("upsert_task_class", {"task_class": {"name": "复习"}})
    assert (held.status, held.error_code) == ("error", "no_database")
    assert held.data["success"] is False and session.pending() == []


def test_stale_and_unsaved_reload_are_errors_with_codes(sample_store: Store):
    """Tests issue 24 item 3: a stale commit (confirmed after another session committed) and a
    reload over unsaved changes are results with status error and the codes stale and
    unsaved_changes (today: status ok), and nothing is written."""
    a, b = _open(sample_store), _open(sample_store)
    a.call("move", MOVE_HOST)
    b.call("place", EMBED)
    assert b.confirm(b.invoke("commit", {}).confirm_token or "").status == "ok"
    rows = table_rows(sample_store)
    done = a.confirm(a.invoke("commit", {}).confirm_token or "")
    assert (done.status, done.error_code, done.is_error) == ("error", "stale", True), done
    refused = a.invoke("reload", {})
    assert (refused.status, refused.error_code) == ("error", "unsaved_changes")
    assert table_rows(sample_store) == rows and len(a.changes) == 1


def test_the_losing_side_of_two_conflicting_commits_is_an_error(sample_store: Store):
    """Tests issue 24 item 3: two sessions place different tasks on the same periods and confirm
    their commits at the same moment; exactly one is ok, the other is an error with the code
    conflict or stale, and the database holds the winner's rows only."""
    a, b = _open(sample_store), _open(sample_store)
    a.call("place", {"task_id": 11, "day": 6, "slot_start": 1})
    b.call("place", {"task_id": 12, "day": 6, "slot_start": 1})
    tokens = [s.invoke("commit", {}).confirm_token or "" for s in (a, b)]
    start = threading.Barrier(2)
    results: dict[int, CallResult] = {}

    def confirm(i: int, session: Session) -> None:
        start.wait()
        results[i] = session.confirm(tokens[i])

    threads = [threading.Thread(target=confirm, args=(i, s)) for i, s in enumerate((a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    statuses = sorted((r.status, r.error_code) for r in results.values())
    assert statuses[1] == ("ok", "") and statuses[0][0] == "error", statuses
    assert statuses[0][1] in ("conflict", "stale"), statuses
    with sample_store.session() as s:
        scheduled = s.scalars(select(m.TaskItem.id).where(m.TaskItem.status == 2)).all()
    winner = 301 if results[0].status == "ok" else 302
    assert winner in scheduled and ({301, 302} - {winner}).isdisjoint(scheduled)


def _unreachable(store: Store) -> Store:
    """A store on the same database URL with the port of a closed loopback socket: every
    statement fails to connect, as during an outage."""
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = store.engine.url.set(host="127.0.0.1", port=port)
    return Store.from_url(url.render_as_string(hide_password=False), create=False)


@pytest.mark.parametrize("kind", SERVER_BACKENDS)
def test_commit_and_reload_during_an_outage_are_db_unavailable(request, kind):
    """Tests issue 24 item 3: with the database unreachable, a confirmed commit and a reload are
    errors with the code db_unavailable (today: status ok with 提交失败 in the text); the session
    keeps its state and changes, and the database is untouched."""
    store = fresh_server_store(request, kind)
    store.seed_from_state(USER, load_window("sample_window"))
    session = _open(store)
    session.call("place", {"task_id": 11, "day": 6, "slot_start": 1})
    before = session.state.to_dict() if session.state is not None else None
    rows = table_rows(store)
    down = _unreachable(store)
    session.toolbox.ctx.store = down
    try:
        done = session.confirm(session.invoke("commit", {}).confirm_token or "")
        assert (done.status, done.error_code) == ("error", "db_unavailable"), done
        reloaded = session.invoke("reload", {"discard_changes": True})
        assert (reloaded.status, reloaded.error_code) == ("error", "db_unavailable"), reloaded
    finally:
        down.dispose()
    assert session.state is not None and session.state.to_dict() == before
    assert len(session.changes) == 1 and table_rows(store) == rows


def test_http_answers_failed_database_calls_with_their_status(sample_store: Store):
    """Tests issue 24 item 3 over HTTP: a stale commit's confirm answers 409 with error_code
    stale, a reload over unsaved changes 409 unsaved_changes, and on a session without a database
    commit is refused at once with 422 no_database and nothing pending (today all 200 with
    status ok); the body carries error_code, error and the call's result."""
    from fastapi.testclient import TestClient

    from smartflow_engine.tools_adapter.api import create_app

    client = TestClient(create_app({"tok": str(USER)}, database=sample_store))
    auth = {"Authorization": "Bearer tok"}
    weeks = {"start": {"week": 7, "day_of_week": 1}, "end": {"week": 8, "day_of_week": 7}}

    def session(body: dict[str, Any]) -> str:
        made = client.post("/v1/sessions", headers=auth, json={"mode": "local_adjust", **body})
        assert made.status_code == 201, made.text
        return str(made.json()["session_id"])

    def call(sid: str, tool: str, args: dict[str, Any]) -> Any:
        body = {"tool": tool, "args": args}
        return client.post(f"/v1/sessions/{sid}/calls", headers=auth, json=body)

    a, b = session({"window": weeks}), session({"window": weeks})
    call(a, "move", MOVE_HOST)
    call(b, "place", EMBED)
    token_b = call(b, "commit", {}).json()["confirm_token"]
    won = client.post(f"/v1/sessions/{b}/confirm", headers=auth, json={"token": token_b})
    assert won.status_code == 200 and won.json()["status"] == "ok"
    token_a = call(a, "commit", {}).json()["confirm_token"]
    lost = client.post(f"/v1/sessions/{a}/confirm", headers=auth, json={"token": token_a})
    assert lost.status_code == 409, lost.text
    body = lost.json()
    assert body["error_code"] == "stale" and body["status"] == "error" and body["is_error"]
    assert body["error"] == body["reply"] and body["reply"].startswith("提交失败")
    unsaved = call(a, "reload", {})
    assert unsaved.status_code == 409 and unsaved.json()["error_code"] == "unsaved_changes"
    client = TestClient(create_app({"tok": str(USER)}))  # a server without a database
    plain = session({"state": load_window("sample_window").to_dict()})
    refused = call(plain, "commit", {})
    assert refused.status_code == 422 and refused.json()["error_code"] == "no_database"
    assert client.get(f"/v1/sessions/{plain}", headers=auth).json()["pending"] == []


@pytest.mark.parametrize(
    "start,end,message",
    [
        ((7, 0), (7, 3), "day_of_week 1..7"),  # no day 0 of a week
        ((8, 1), (7, 1), "comes before"),  # reversed
        ((1, 1), (200, 7), "exceeds 1000"),  # too long
    ],
)
def test_window_days_refuses_bad_windows(start, end, message):
    """Tests that a window named by (week, day_of_week) ends is checked with a clear message."""
    with pytest.raises(StoreError, match=message):
        window_days(start, end)


def test_window_days_counts_consecutive_days():
    """Tests that a window from week 7 Monday to week 8 Sunday is 14 days, across the week."""
    days = window_days((7, 6), (8, 2))
    assert [(d.day_index, d.week, d.day_of_week) for d in days] == [
        (1, 7, 6),
        (2, 7, 7),
        (3, 8, 1),
        (4, 8, 2),
    ]


def _user_says(action: str, asked: list[str]) -> Any:
    """The client's elicitation callback: the user reads the question and answers ``action``."""
    import mcp.types as types

    async def callback(_context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    return callback


def test_smartflow_mcp_on_the_database_commits(sample_store: Store):
    """Tests ``smartflow mcp --db URL --user N --from W-D --to W-D`` end to end over stdio, on
    SQLite, PostgreSQL and MariaDB: the window comes from the tables; commit asks the user
    (elicitation) with the net change per table; a decline writes nothing, an accept writes the
    placement (rows checked with SQL); no confirm tool exists (issue 24 item 4)."""
    import anyio
    from mcp import Client

    asked: list[str] = []
    answers = iter(["decline", "accept"])

    async def callback(context: Any, params: Any) -> Any:
        return await _user_says(next(answers), asked)(context, params)

    rows = [table_rows(sample_store)]

    async def go() -> list[Any]:
        params = mcp_params(sample_store)
        async with Client(params, read_timeout_seconds=120, elicitation_callback=callback) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            placed = await c.call_tool("place", {"task_id": 11, "day": 6, "slot_start": 1})
            declined = await c.call_tool("commit", {})
            rows.append(table_rows(sample_store))
            done = await c.call_tool("commit", {})
            return [names, placed, declined, done]

    names, placed, declined, done = anyio.run(go)
    assert "commit" in names and not {"confirm", "reject"} & set(names)
    assert placed.content[0].text.startswith("已将 [11]")
    assert declined.is_error and declined.content[0].text.startswith("提交失败：用户拒绝了确认")
    assert rows[1] == rows[0] and len(asked) == 2 and "schedules：新增3行" in asked[0], asked
    assert not done.is_error and done.content[0].text.startswith("已提交 1 项修改"), done
    assert item_placement(sample_store, 301) == (2, 3)


def test_a_declined_commit_over_mcp_writes_nothing(sample_store: Store):
    """Tests issue 24 item 4 on the database through the in-memory MCP client: the user's
    decline leaves every table as it was and the session's change kept; a stale commit the
    user accepts is an isError result (issue 24 item 3's MCP surface)."""
    import anyio
    from mcp import Client

    from smartflow_engine.tools_adapter.mcp.server import build_server

    a, b = _open(sample_store), _open(sample_store)
    a.call("move", MOVE_HOST)
    rows = table_rows(sample_store)
    asked: list[str] = []

    async def ask(session: Session, action: str) -> Any:
        server = build_server(session)
        async with Client(server, elicitation_callback=_user_says(action, asked)) as client:
            return await client.call_tool("commit", {})

    declined = anyio.run(ask, a, "decline")
    assert declined.is_error and table_rows(sample_store) == rows and len(a.changes) == 1
    b.call("place", EMBED)
    assert b.confirm(b.invoke("commit", {}).confirm_token or "").status == "ok"
    stale = anyio.run(ask, a, "accept")
    assert stale.is_error is True, stale
    assert stale.content[0].text.startswith("提交失败：数据库在本会话加载之后已被修改。")
    assert len(a.changes) == 1 and a.pending() == []


def test_upsert_task_class_over_mcp_asks_the_user(sample_store: Store):
    """Tests issue 24 item 4 for upsert_task_class: over MCP it writes the class only when the
    user accepts the elicitation (the question shows the class), a decline writes nothing."""
    import json

    import anyio
    from mcp import Client

    from smartflow_engine.tools_adapter.mcp.server import build_server

    args = UPSERT_EXAMPLE
    session = Session(None, store=sample_store, db_user_id=USER)
    asked: list[str] = []

    async def ask(action: str) -> Any:
        server = build_server(session)
        async with Client(server, elicitation_callback=_user_says(action, asked)) as client:
            return await client.call_tool("upsert_task_class", args)

    def classes() -> list[str]:
        with sample_store.session() as s:
            return list(s.scalars(select(m.TaskClass.name).where(m.TaskClass.user_id == USER)))

    before = classes()
    declined = anyio.run(ask, "decline")
    assert declined.is_error and json.loads(declined.content[0].text)["error_code"] == (
        "user_declined"
    )
    assert classes() == before
    accepted = anyio.run(ask, "accept")
    assert not accepted.is_error and accepted.structured_content["success"] is True
    assert sorted(classes()) == sorted([*before, "考研英语"])
    assert len(asked) == 2 and "考研英语" in asked[0]
