"""Tests of issue 44 items 1, 3 and 5 over HTTP, on the memory store and on Redis with two
workers (two apps sharing one Redis prefix and one database): a confirm writes exactly what
its preview showed, a confirm that wrote the database is answered with that outcome whatever
else writes the session meanwhile, and a posted window offers no commit or reload. Also issue
45 item 7's empty commit, which answers at once."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from smartflow_engine.store import Store
from tests.helpers.deployments import worker_apps
from tests.helpers.store import USER, reload, stored, table_rows
from tests.helpers.windows import load_window

TOKENS = {"tok": str(USER)}
AUTH = {"Authorization": "Bearer tok"}
WINDOW = {"start": {"week": 7, "day_of_week": 1}, "end": {"week": 8, "day_of_week": 7}}
PLACE_A = {"task_id": 11, "day": 6, "slot_start": 1}
PLACE_B = {"task_id": 12, "day": 7, "slot_start": 1}
PLACE_C = {"task_id": 13, "day": 13, "slot_start": 1}


class _DuringCommit:
    """The database with a hook run inside its ``commit``, before the transaction: another
    request arrives while a confirm writes the database."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.hook: Callable[[], None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return self._store.commit(*args, **kwargs)


@dataclass
class Deployment:
    kind: str
    db: Store
    hooked: _DuringCommit
    workers: list[TestClient]

    def create(self, **body: Any) -> str:
        made = self.workers[0].post(
            "/v1/sessions", headers=AUTH, json={"mode": "local_adjust", **body}
        )
        assert made.status_code == 201, made.text
        sid: str = made.json()["session_id"]
        return sid

    def call(self, worker: int, sid: str, tool: str, args: dict[str, Any]) -> Any:
        return self.workers[worker].post(
            f"/v1/sessions/{sid}/calls", headers=AUTH, json={"tool": tool, "args": args}
        )

    def confirm(self, worker: int, sid: str, token: str) -> Any:
        return self.workers[worker].post(
            f"/v1/sessions/{sid}/confirm", headers=AUTH, json={"token": token}
        )

    def state(self, sid: str) -> Any:
        from smartflow_engine import ScheduleState

        got = self.workers[1].get(f"/v1/sessions/{sid}/state", headers=AUTH).json()["state"]
        return ScheduleState.from_json(got)

    def info(self, sid: str) -> dict[str, Any]:
        out: dict[str, Any] = self.workers[0].get(f"/v1/sessions/{sid}", headers=AUTH).json()
        return out


@pytest.fixture(params=["memory", "redis"])
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    """The sample window seeded into an SQLite database, served by one worker with the memory
    store or by two workers sharing Redis."""
    db = Store.from_url(f"sqlite:///{tmp_path / 'confirm.db'}")
    db.seed_from_state(USER, load_window("sample_window"))
    hooked = _DuringCommit(db)
    prefix = f"{request.getfixturevalue('redis_prefix')}:{uuid.uuid4().hex[:8]}"
    apps = worker_apps(request.param, TOKENS, hooked, prefix)
    apps = apps * (3 - len(apps))  # two workers, or the one twice
    clients = [TestClient(app) for app in apps]
    yield Deployment(request.param, db, hooked, clients)
    for client in clients:
        client.close()
    db.dispose()


def test_a_confirm_refuses_changes_made_after_the_preview(deployment: Deployment):
    """Tests issue 44 item 1 over HTTP: place A, commit (the preview says 1 change), place B and
    C through the other worker, confirm: refused with 409 preview_changed naming the two new
    changes, nothing written (before: "已提交 3 项修改", two changes the user never saw); a new
    preview then shows 3 changes and its confirm writes exactly them."""
    d = deployment
    sid = d.create(window=WINDOW)
    assert d.call(0, sid, "place", PLACE_A).json()["status"] == "ok"
    held = d.call(0, sid, "commit", {}).json()
    assert held["status"] == "pending_confirm" and "提交 1 项修改" in held["reply"]
    assert "预览编号" in held["reply"]
    for args in (PLACE_B, PLACE_C):
        assert d.call(1, sid, "place", args).json()["status"] == "ok"
    rows = table_rows(d.db)
    refused = d.confirm(0, sid, held["confirm_token"])
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["error_code"] == "preview_changed" and body["reply"].startswith("确认失败：")
    assert "之后又新增了 2 项" in body["reply"] and "[12]写物理实验报告" in body["reply"]
    assert "没有写入任何内容" in body["reply"]
    assert table_rows(d.db) == rows and d.info(sid)["change_count"] == 3
    again = d.confirm(0, sid, held["confirm_token"])  # the token is spent with the refusal
    assert again.status_code == 404 and again.json()["error_code"] == "unknown_token"
    fresh = d.call(1, sid, "commit", {}).json()
    assert "提交 3 项修改" in fresh["reply"]
    done = d.confirm(0, sid, fresh["confirm_token"])
    assert done.status_code == 200 and done.json()["reply"].startswith("已提交 3 项修改")
    state = d.state(sid)
    assert stored(reload(d.db, state)) == stored(state)


def test_a_confirm_after_a_reload_names_the_replaced_changes(deployment: Deployment):
    """Tests issue 44 item 1 when the previewed changes are gone (a reload discarded them and
    another change came in): the confirm is refused saying the previewed change is no longer in
    the session; nothing is written."""
    d = deployment
    sid = d.create(window=WINDOW)
    d.call(0, sid, "place", PLACE_A)
    held = d.call(0, sid, "commit", {}).json()
    assert d.call(1, sid, "reload", {"discard_changes": True}).json()["status"] == "ok"
    d.call(1, sid, "place", PLACE_B)
    rows = table_rows(d.db)
    refused = d.confirm(0, sid, held["confirm_token"])
    assert refused.status_code == 409 and "预览时的 1 项修改已不在会话中" in refused.json()["reply"]
    assert table_rows(d.db) == rows


def _during_the_commit(d: Deployment, other: Callable[[], Any]) -> list[Any]:
    """Arrange ``other`` (another request) to arrive while the next confirm writes the
    database; its answer lands in the returned list. With Redis it runs to its end before the
    transaction (another worker: nothing waits for this request); with the memory store the
    session's lock makes it wait for the confirm, so it only starts there."""
    answers: list[Any] = []
    runner = threading.Thread(target=lambda: answers.append(other()))
    if d.kind == "redis":
        d.hooked.hook = lambda: (runner.start(), runner.join())
    else:
        d.hooked.hook = runner.start
    answers.append(runner)
    return answers


@pytest.mark.parametrize("other", ["double_click", "read", "write"])
def test_a_confirm_that_wrote_the_database_is_answered_ok(deployment: Deployment, other: str):
    """Tests issue 44 item 3: while a confirmed commit writes the database, another request of
    the session arrives (the same confirm again: a double click; a read; a write) through the
    other worker. The confirm is answered 200 with the commit it made; the other request is
    answered 404 unknown_token, 200, or 409 "nothing of this request was done" (its change is
    then not in the session); the tables hold exactly the session's state, its change log is
    empty and the next commit is not stale (before, on Redis: the confirm that had written the
    database was answered 409 "not kept", the session kept its changes and the next commit was
    refused stale)."""
    d = deployment
    sid = d.create(window=WINDOW)
    d.call(0, sid, "place", PLACE_A)
    held = d.call(0, sid, "commit", {}).json()
    token = held["confirm_token"]
    requests = {
        "double_click": lambda: d.confirm(1, sid, token),
        "read": lambda: d.call(1, sid, "get_overview", {}),
        "write": lambda: d.call(1, sid, "place", PLACE_B),
    }
    answers = _during_the_commit(d, requests[other])
    done = d.confirm(0, sid, token)
    answers[0].join()
    assert done.status_code == 200, done.text
    assert done.json()["reply"].startswith("已提交 1 项修改")
    second = answers[1]
    allowed = {"double_click": {404}, "read": {200, 409}, "write": {200, 409}}[other]
    assert second.status_code in allowed, second.text
    if second.status_code == 409:
        assert second.json()["error_code"] == "session_conflict"
    wrote_b = other == "write" and second.status_code == 200
    assert d.info(sid)["change_count"] == (1 if wrote_b else 0)
    assert d.info(sid)["pending"] == []
    state = d.state(sid)
    on_disk = reload(d.db, state)
    placed = {t.state_id: [b.model_dump() for b in t.slots] for t in on_disk.tasks}
    assert placed[11] == [{"day": 6, "slot_start": 1, "slot_end": 3}]
    if not wrote_b:
        assert stored(on_disk) == stored(state)
    d.call(0, sid, "place", PLACE_C)
    nxt = d.call(0, sid, "commit", {}).json()
    finished = d.confirm(1, sid, nxt["confirm_token"])
    assert finished.status_code == 200 and finished.json()["reply"].startswith("已提交")
    state = d.state(sid)
    assert stored(reload(d.db, state)) == stored(state)


def test_a_posted_window_offers_no_commit_or_reload(deployment: Deployment):
    """Tests issue 44 item 5: on a server with a database, a session on a posted window (tied
    to the token's database user) refuses commit and reload at once with 422
    not_from_database saying why, holds nothing and keeps its state; upsert_task_class still
    asks for the user's confirmation (before: the preview compared the posted window with the
    user's rows, handed out a token, and reload replaced the posted window)."""
    d = deployment
    sid = d.create(state=load_window("sample_window").to_dict())
    d.call(0, sid, "place", PLACE_A)
    rows = table_rows(d.db)
    for tool, args in (("commit", {}), ("reload", {"discard_changes": True})):
        out = d.call(1, sid, tool, args)
        assert out.status_code == 422, out.text
        body = out.json()
        assert body["error_code"] == "not_from_database" and body["confirm_token"] is None
        assert "不是从数据库加载的" in body["reply"]
    info = d.info(sid)
    assert info["pending"] == [] and info["change_count"] == 1
    assert table_rows(d.db) == rows
    upsert = d.call(0, sid, "upsert_task_class", {"task_class": {"name": "复习"}}).json()
    assert upsert["status"] == "pending_confirm"
    from_db = d.create(window=WINDOW)
    assert d.call(0, from_db, "reload", {}).json()["status"] == "ok"


def test_an_empty_commit_answers_at_once(deployment: Deployment):
    """Tests issue 45 item 7: a commit with nothing to write answers "没有需要提交的修改" at once
    and holds no confirmation (before: it opened one)."""
    d = deployment
    sid = d.create(window=WINDOW)
    out = d.call(0, sid, "commit", {}).json()
    assert (out["status"], out["reply"], out["confirm_token"]) == (
        "ok",
        "没有需要提交的修改。",
        None,
    )
    assert d.info(sid)["pending"] == []
