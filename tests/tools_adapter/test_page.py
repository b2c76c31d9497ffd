"""Tests of the session page's server side: the signed view link and its cookie, who may see
what, that every asset is served by the app, that viewing changes nothing, the round log's
evidence lines and modes, and the page of a posted window."""

from __future__ import annotations

import json
import re
import time

import pytest
from conftest_adapters import load_window, window_dict
from fastapi.testclient import TestClient

from smartflow_engine.store import Store
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.api import page as page_module
from smartflow_engine.tools_adapter.sessions.session import Session

TOKENS = {"tok-alice": "alice", "tok-bob": "bob", "tok-7": "7"}
ALICE = {"Authorization": "Bearer tok-alice"}
BOB = {"Authorization": "Bearer tok-bob"}
U7 = {"Authorization": "Bearer tok-7"}  # user 7 holds the sample window in the database
WEEKS_7_8 = {"start": {"week": 7, "day_of_week": 1}, "end": {"week": 8, "day_of_week": 7}}
WINDOW = "sample_window"
STEPS = [
    ("analyze_health", {}),
    ("place", {"task_id": 11, "day": 6, "slot_start": 1}),
    ("analyze_health", {}),
    ("apply_proposal", {}),
    ("analyze_health", {}),
    ("commit", {}),
]


@pytest.fixture
def client(tmp_path) -> TestClient:
    """The app with a database (SQLite) where user 7 holds the sample window: a commit is held
    for the user's confirmation only in a session loaded from a database."""
    store = Store.from_url(f"sqlite:///{tmp_path / 'page.db'}")
    store.seed_from_state(7, load_window(WINDOW))
    return TestClient(create_app(TOKENS, database=store, max_time_limit_s=2.0))


def _session(client: TestClient, steps=STEPS, headers=ALICE, body=None) -> tuple[str, list[dict]]:
    body = body if body is not None else {"state": window_dict(WINDOW)}
    sid = client.post("/v1/sessions", headers=headers, json=body).json()["session_id"]
    replies = []
    for tool, args in steps:
        got = client.post(
            f"/v1/sessions/{sid}/calls", headers=headers, json={"tool": tool, "args": args}
        )
        replies.append(got.json())
    return sid, replies


def _page(client: TestClient, sid: str, headers=ALICE) -> str:
    link = client.post(f"/v1/sessions/{sid}/view-link", headers=headers)
    assert link.status_code == 200, link.text
    got = client.get(link.json()["url"])
    assert got.status_code == 200, got.text
    return got.text


def test_every_page_asset_is_served_locally(client):
    """Tests that the page references no outside host and that every script and stylesheet it
    references is served by the app."""
    sid, _ = _session(client, STEPS[:2])
    html = _page(client, sid)
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    assert refs and all(r.startswith("/") and not r.startswith("//") for r in refs), refs
    assert not re.search(r"https?://", html)
    for ref in refs:
        got = client.get(ref)
        assert got.status_code == 200 and got.content, ref


def test_the_link_sets_a_cookie_and_leaves_the_url(client):
    """Tests that the signed link answers with a redirect to the clean page URL and an HttpOnly,
    SameSite=Strict cookie scoped to that session's page."""
    sid, _ = _session(client, STEPS[:1])
    url = client.post(f"/v1/sessions/{sid}/view-link", headers=ALICE).json()["url"]
    assert "tok-alice" not in url
    got = client.get(url, follow_redirects=False)
    assert got.status_code == 303 and got.headers["location"] == f"/view/{sid}"
    cookie = got.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert f"path=/view/{sid}".lower() in cookie


def test_views_are_refused_without_a_valid_link(client, monkeypatch):
    """Tests that the page is refused without a cookie, with a link for another session, with
    an expired link, and with the cookie's token used as a link; and that a user cannot get a
    link to another user's session."""
    sid, _ = _session(client, STEPS[:1])
    other, _ = _session(client, STEPS[:1])
    fresh = TestClient(client.app)
    assert fresh.get(f"/view/{sid}").status_code == 401
    url = client.post(f"/v1/sessions/{other}/view-link", headers=ALICE).json()["url"]
    token = url.split("?t=", 1)[1]
    assert fresh.get(f"/view/{sid}?t={token}").status_code == 401  # another session's link
    ctx = client.app.state.ctx
    cookie_token = page_module.sign(ctx, "cookie", "alice", sid, 60)
    assert fresh.get(f"/view/{sid}?t={cookie_token}").status_code == 401  # wrong purpose
    old = page_module.sign(ctx, "link", "alice", sid, page_module.LINK_TTL_S)
    monkeypatch.setattr(time, "time", lambda: 2**40)
    assert fresh.get(f"/view/{sid}?t={old}").status_code == 401  # expired
    monkeypatch.undo()
    assert client.post(f"/v1/sessions/{sid}/view-link", headers=BOB).status_code == 404
    bob_token = page_module.sign(ctx, "link", "bob", sid, 60)
    got = fresh.get(f"/view/{sid}?t={bob_token}")  # a valid link of bob's: not bob's session
    assert got.status_code == 404


def test_viewing_changes_nothing(client):
    """Tests that opening the page adds no round and leaves the session's snapshot as it was."""
    sid, _ = _session(client)
    before = client.get(f"/v1/sessions/{sid}/snapshot", headers=ALICE).json()
    _page(client, sid)
    after = client.get(f"/v1/sessions/{sid}/snapshot", headers=ALICE).json()
    assert after == before


def test_the_page_shows_each_writes_evidence_line_as_the_model_read_it(client):
    """Tests that the evidence lines on the page are exactly the last lines of the write
    replies the model read, that the pending commit's preview is shown, and the close signal's
    floor (a session loaded from the database, where a commit waits for the user)."""
    sid, replies = _session(client, headers=U7, body={"window": WEEKS_7_8})
    html = _page(client, sid, headers=U7)
    writes = [
        r
        for (tool, _), r in zip(STEPS, replies, strict=True)
        if tool in ("place", "apply_proposal")
    ]
    for reply in writes:
        line = reply["reply"].splitlines()[-1]
        assert line.startswith("证据：")
        assert f'<div class="evidence">{line}</div>' in html.replace("&quot;", '"')
    assert "待确认：commit 尚未执行" in html
    assert "下界（floor）" in html


def test_rounds_record_the_mode_they_ran_in():
    """Tests that each round and each write in the round log names the session's mode at the
    time (a mode switch between rounds shows)."""
    from conftest_adapters import load_window

    session = Session(load_window(WINDOW))
    session.call("analyze_health", {})
    session.call("place", {"task_id": 11, "day": 6, "slot_start": 1})
    session.set_mode("local_adjust")
    session.call("move", {"task_id": 11, "new_day": 7, "new_slot_start": 1})
    session.call("analyze_health", {})
    rounds = json.loads(session.call("get_round_log", {}))["metrics"]["rounds"]
    assert [r["mode"] for r in rounds] == ["first_full", "local_adjust"]
    assert [w["mode"] for w in rounds[0]["writes"]] == ["first_full", "local_adjust"]


def test_names_are_escaped():
    """Tests that a task name holding HTML is shown as text, never as markup."""
    data = window_dict(WINDOW)
    data["tasks"][0]["name"] = '<script>alert("x")</script>'
    client = TestClient(create_app(TOKENS))
    got = client.post("/v1/view", headers=ALICE, json={"state": data})
    assert got.status_code == 200
    assert "<script>alert" not in got.text and "&lt;script&gt;alert" in got.text


def test_the_stateless_page_and_its_refusals():
    """Tests the page of a posted window (grid and issues, no round log) and that a missing
    token, a bad state and a bad level get typed errors."""
    client = TestClient(create_app(TOKENS))
    data = window_dict(WINDOW)
    got = client.post("/v1/view", headers=ALICE, json={"state": data, "title": "样例"})
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/html")
    cells = got.text.count('class="cell')
    assert cells == data["window"]["total_days"] * 12
    assert 'id="rounds"' not in got.text and "复习线代" in got.text
    assert "default-src 'none'" in got.headers["content-security-policy"]
    assert client.post("/v1/view", json={"state": data}).status_code == 401
    bad = client.post("/v1/view", headers=ALICE, json={"state": {"window": {}}})
    assert bad.status_code == 422 and bad.json()["error_code"] == "invalid_state"
    level = client.post("/v1/view", headers=ALICE, json={"state": data, "level": "x"})
    assert level.status_code == 422 and level.json()["error_code"] == "invalid_request"


def test_the_page_runs_no_action_search(monkeypatch):
    """Tests that the page's health check skips the next actions' destination search (hundreds
    of health checks, minutes on a 120-day window; the page shows no actions) yet shows the
    close signal with its floor."""
    from conftest_adapters import load_window

    from smartflow_engine.analyzers import health
    from smartflow_engine.tools_adapter.api.page_view import state_view

    def refuse(*_args, **_kwargs):
        raise AssertionError("the page ran the destination search")

    monkeypatch.setattr(health, "make_actionable", refuse)
    view = state_view(load_window(WINDOW))
    assert "floor" in view.close_signal and view.feasibility is not None
