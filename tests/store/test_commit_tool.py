"""Tests of the ``commit`` and ``reload`` tools through a Session opened on the database: the
confirm gate's preview of the net change per table, the one-transaction write (rows checked with
SQL), and stale/conflict replies in Chinese naming what changed with the session state kept."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from store_helpers import USER, load_window, reload, table_rows

from smartflow_engine.store import Store, window_days
from smartflow_engine.store import models as m
from smartflow_engine.store.days import StoreError
from smartflow_engine.tools_adapter.session import Session

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
            select(m.ScheduleEvent.id).where(m.ScheduleEvent.task_item_id == 301)
        ).one()
        cells = sorted(
            s.execute(
                select(m.Schedule.week, m.Schedule.day_of_week, m.Schedule.section).where(
                    m.Schedule.event_id == item_event
                )
            ).all()
        )
        status = s.scalar(select(m.TaskClassItem.status).where(m.TaskClassItem.id == 301))
    assert cells == [(7, 6, 1), (7, 6, 2), (7, 6, 3)] and status == "scheduled"
    assert session.state is not None
    assert reload(sample_store, session.state).to_dict() == session.state.to_dict()
    again = session.invoke("commit", {})
    assert "没有未提交的修改" in again.reply
    assert session.confirm(again.confirm_token or "").reply == "没有需要提交的修改。"


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
    """Tests that a session not opened on a database answers commit/reload with a clear reply
    and changes nothing."""
    session = Session(load_window("sample_window"), mode="local_adjust")
    session.call("place", EMBED)
    token = session.invoke("commit", {}).confirm_token
    assert session.confirm(token or "").reply.startswith("提交失败：未配置数据库")
    assert session.call("reload", {}).startswith("重新加载失败：未配置数据库")
    assert len(session.changes) == 1


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


def test_smartflow_mcp_on_the_database_commits(sample_store: Store):
    """Tests ``smartflow mcp --db URL --user N --from W-D --to W-D`` end to end over stdio, on
    SQLite, PostgreSQL and MariaDB: the window comes from the tables, a placement is committed
    through the gate (commit → preview → confirm) and the rows are in the database."""
    import re
    import sys
    from pathlib import Path

    import anyio
    from mcp import Client, StdioServerParameters

    url = sample_store.engine.url.render_as_string(hide_password=False)
    root = Path(__file__).resolve().parents[2]
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from smartflow_engine.cli import main; main()",
            "mcp",
            "--db",
            url,
            "--user",
            str(USER),
            "--from",
            "7-1",
            "--to",
            "8-7",
            "--mode",
            "local_adjust",
        ],
        cwd=str(root),
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )

    async def go() -> list[str]:
        async with Client(params, read_timeout_seconds=120) as client:
            placed = await client.call_tool("place", {"task_id": 11, "day": 6, "slot_start": 1})
            held = await client.call_tool("commit", {})
            text = held.content[0].text
            token = re.search(r"确认令牌：([A-Za-z0-9_-]+)", text)
            assert token is not None, text
            done = await client.call_tool("confirm", {"token": token.group(1)})
            return [placed.content[0].text, text, done.content[0].text]

    placed, preview, done = anyio.run(go)
    assert placed.startswith("已将 [11]") and "schedules：新增3行" in preview
    assert done.startswith("已提交 1 项修改"), done
    with sample_store.session() as s:
        status = s.scalar(select(m.TaskClassItem.status).where(m.TaskClassItem.id == 301))
        rows = s.scalar(
            select(func.count())
            .select_from(m.Schedule)
            .join(m.ScheduleEvent, m.Schedule.event_id == m.ScheduleEvent.id)
            .where(m.ScheduleEvent.task_item_id == 301)
        )
    assert status == "scheduled" and rows == 3
