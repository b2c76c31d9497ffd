"""Tests of the session page's server side: the signed view link and its cookie, who may see
what, that every asset is served by the app, that viewing changes nothing, the round log's
evidence lines and modes, and the page of a posted window."""

from __future__ import annotations

import json
import re
import time

import pytest
from fastapi.testclient import TestClient

from smartflow_engine.store import Store
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.api import page as page_module
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.windows import load_window, window_dict

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
    # issue 44 item 11: the page never carries the pending confirm's token
    pending = client.get(f"/v1/sessions/{sid}", headers=U7).json()["pending"]
    assert pending and all(p["token"] not in html for p in pending)
    assert "确认令牌" not in html


def test_rounds_record_the_mode_they_ran_in():
    """Tests that each round and each write in the round log names the session's mode at the
    time (a mode switch between rounds shows)."""
    from tests.helpers.windows import load_window

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
    from smartflow_engine.analyzers import health
    from smartflow_engine.tools_adapter.api.page_view import state_view
    from tests.helpers.windows import load_window

    def refuse(*_args, **_kwargs):
        raise AssertionError("the page ran the destination search")

    monkeypatch.setattr(health, "make_actionable", refuse)
    view = state_view(load_window(WINDOW))
    assert "floor" in view.close_signal and view.feasibility is not None


def _count(html: str, pattern: str) -> int:
    return len(re.findall(pattern, html))


def test_frozen_days_are_shown(client):
    """Tests that a session's frozen days (set when it is opened, then changed by a new user
    request) are marked on the page: their day headers, every period of theirs and their
    blocks, and the legend and header name the range; a posted window's too."""
    sid, _ = _session(client, STEPS[:1], body={"state": window_dict(WINDOW), "frozen_days": 3})
    html = _page(client, sid)
    slots = 12
    assert _count(html, r'class="dayhead[^"]*\bfrozen\b') == 3
    assert _count(html, r'class="cell[^"]*\bfrozen\b') == 3 * slots
    frozen_days = {
        int(d) for d in re.findall(r'class="cell[^"]*\bfrozen\b[^"]*"[^>]*data-day="(\d+)"', html)
    }
    assert frozen_days == {1, 2, 3}
    blocks = re.findall(r'class="block[^"]*"[^>]*data-day="(\d+)"', html)
    frozen_blocks = re.findall(r'class="block[^"]*\bfrozen\b[^"]*"[^>]*data-day="(\d+)"', html)
    assert frozen_blocks and sorted(frozen_blocks) == sorted(d for d in blocks if int(d) <= 3)
    assert "冻结：第1-3天" in html and 'data-frozen-days="3"' in html

    got = client.post(f"/v1/sessions/{sid}/requests", headers=ALICE, json={"frozen_days": 5})
    assert got.status_code == 200, got.text
    html = _page(client, sid)
    assert _count(html, r'class="dayhead[^"]*\bfrozen\b') == 5 and "冻结：第1-5天" in html
    client.post(f"/v1/sessions/{sid}/requests", headers=ALICE, json={"frozen_days": 0})
    html = _page(client, sid)
    assert _count(html, r'class="[^"]*\bfrozen\b') == 0 and "冻结：" not in html

    posted = client.post(
        "/v1/view", headers=ALICE, json={"state": window_dict(WINDOW), "frozen_days": 2}
    )
    assert posted.status_code == 200
    assert _count(posted.text, r'class="dayhead[^"]*\bfrozen\b') == 2


def test_health_issues_are_drawn_on_their_days_and_subjects():
    """Tests that every health issue with a day marks that day's header (its most severe
    issue's class and the number of its issues) and every issue with a category outlines the
    blocks of that category (its most severe issue's class); whole-window issues are listed
    only. The window's own issues (critical and warning days) plus subject issues of each
    severity (the health check gives them on placed study tasks)."""
    from smartflow_engine.state.synthetic import synthetic_window
    from smartflow_engine.tools_adapter.api.page_html import render_page
    from smartflow_engine.tools_adapter.api.page_view import IssueView, state_view

    state = synthetic_window(3, 14, occupancy=0.7, pending=10, with_task_classes=True)
    view = state_view(state)
    severities = {i.severity for i in view.issues if i.day is not None}
    assert {"critical", "warning"} <= severities, severities
    assert any(i.day is None and i.category is None for i in view.issues)
    cats = view.categories
    assert cats
    extra = [("info", cats[0]), ("warning", cats[0]), ("critical", "无此科目")]
    for n, (sev, cat) in enumerate(extra):
        view.issues.append(IssueView(f"t{n}", sev, "subjects", "subject_gap", None, cat, "x"))
    view.issues.append(IssueView("t9", "info", "load", "x", 2, None, "x"))
    html = render_page(view)
    rank = {"info": 1, "warning": 2, "critical": 3}
    by_day: dict[int, list[str]] = {}
    by_cat: dict[str, list[str]] = {}
    for issue in view.issues:
        if issue.day is not None:
            by_day.setdefault(issue.day, []).append(issue.severity)
        if issue.category is not None:
            by_cat.setdefault(issue.category, []).append(issue.severity)
    assert by_day and by_cat
    heads = {
        int(day): cls
        for cls, day in re.findall(r'<div class="dayhead([^"]*)"[^>]*data-day="(\d+)"', html)
    }
    for day in range(1, view.num_days + 1):
        if day in by_day:
            top = max(by_day[day], key=rank.__getitem__)
            assert f"sev-{top}" in heads[day], (day, heads[day])
            badge = re.search(
                rf'data-day="{day}"><b>{day}<i class="issue-count"[^>]*>(\d+)</i>', html
            )
            assert badge and int(badge.group(1)) == len(by_day[day])
        else:
            assert "sev-" not in heads[day]
    blocks = re.findall(
        r'<div class="(block [^"]*)"[^>]*data-kind="(task|guest)" data-category="([^"]*)"', html
    )
    assert cats[0] in {c for _, _, c in blocks}
    for cls, _kind, category in blocks:
        if category in by_cat:
            top = max(by_cat[category], key=rank.__getitem__)
            assert f"issue-{top}" in cls.split(), (category, cls)
        else:
            assert "issue-" not in cls
    listed = re.findall(r'<li class="issue sev-(\w+)" data-issue-id="([^"]+)"', html)
    assert sorted(listed) == sorted((i.severity, i.issue_id) for i in view.issues)


def test_each_write_lists_the_tasks_it_changed(client):
    """Tests that each write in the round log shows the tasks it changed, exactly the session's
    change log in order (from where to where), and that after the user confirms the commit
    the earlier writes' changes are said to be committed, not invented."""
    from smartflow_engine.tools_adapter.api.page_view import session_view

    steps = [
        ("place", {"task_id": 11, "day": 6, "slot_start": 1}),
        ("analyze_health", {}),
        ("move", {"task_id": 11, "new_day": 7, "new_slot_start": 1}),
        ("apply_proposal", {}),
        ("analyze_health", {}),
    ]
    sid, replies = _session(client, steps, headers=U7, body={"window": WEEKS_7_8})
    assert all(r["status"] == "ok" for r in replies), replies
    snap = client.get(f"/v1/sessions/{sid}/snapshot", headers=U7).json()
    view = session_view(snap)
    writes = [w for r in view.rounds for w in r.writes]
    assert [w.tool for w in writes] == ["place", "move", "apply_proposal"]
    flat = [(m.task_id, m.after) for w in writes for m in w.moves or []]
    assert [c["task_id"] for c in snap["changes"]] == [t for t, _ in flat]
    assert writes[0].moves[0].before == "待安排" and writes[0].moves[0].after == "第6天第1-3节"
    assert (writes[1].moves[0].before, writes[1].moves[0].after) == ("第6天第1-3节", "第7天第1-3节")
    html = _page(client, sid, headers=U7)
    assert "[11] 复习线代：待安排 → 第6天第1-3节" in html

    held = client.post(
        f"/v1/sessions/{sid}/calls", headers=U7, json={"tool": "commit", "args": {}}
    ).json()
    done = client.post(
        f"/v1/sessions/{sid}/confirm", headers=U7, json={"token": held["confirm_token"]}
    )
    assert done.status_code == 200 and done.json()["status"] == "ok", done.text
    snap = client.get(f"/v1/sessions/{sid}/snapshot", headers=U7).json()
    assert snap["changes"] == []
    view = session_view(snap)
    assert all(w.moves is None for r in view.rounds for w in r.writes)
    assert "改动已提交或不在变更记录中" in _page(client, sid, headers=U7)


def test_the_stateless_page_is_self_contained():
    """Tests that the posted window's page references no asset at all (its style and script are
    in the document, so it shows the same in a backend's iframe srcdoc or a saved file), and that
    its CSP lets exactly that script run, by its hash."""
    import base64
    import hashlib

    client = TestClient(create_app(TOKENS))
    got = client.post("/v1/view", headers=ALICE, json={"state": window_dict(WINDOW)})
    assert got.status_code == 200
    html = got.text
    assert not re.findall(r"""(?:src|href)\s*=""", html) and not re.search(r"https?://|url\(", html)
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1 and "<style>" in html
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    csp = got.headers["content-security-policy"]
    assert (
        f"script-src 'sha256-{digest}';" in csp
        and "'self'" not in csp.split("script-src")[1].split(";")[0]
    )
