"""Tests of the session page in a real browser: Debian's Chromium (/usr/bin/chromium, installed
by the Makefile's set-up) driven by Playwright, against the app served by uvicorn in this
process on a loopback port. A screenshot of each page is saved under tests/artefacts/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from smartflow_engine.store import Store
from smartflow_engine.tools_adapter.api import create_app
from tests.helpers.live_server import live_server
from tests.helpers.windows import load_window, window_dict

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTEFACTS = Path(__file__).resolve().parents[1] / "artefacts"
TOKENS = {"tok-alice": "7"}  # user 7 holds the sample window in the database
WEEKS_7_8 = {"start": {"week": 7, "day_of_week": 1}, "end": {"week": 8, "day_of_week": 7}}
ALICE = {"Authorization": "Bearer tok-alice"}
WINDOW = "sample_window"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium of the system (never a downloaded browser)."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: the Makefile's set-up installs it"
    with sync_playwright() as pw:
        found = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield found
        found.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on a loopback port of this process, with a database (SQLite) where user 7 holds
    the sample window (a commit is held for the user only in a session loaded from one)."""
    store = Store.from_url(f"sqlite:///{tmp_path_factory.mktemp('page') / 'page.db'}")
    store.seed_from_state(7, load_window(WINDOW))
    with live_server(create_app(TOKENS, database=store, max_time_limit_s=2.0)) as url:
        yield url


FROZEN = 2  # the agent's session freezes days 1-2 (issue 28)


def _agent_session(base: str) -> tuple[str, dict[str, Any]]:
    """A session worked on as an agent would, with days 1-2 frozen: health, a write, a
    proposal, health, a commit held for confirmation. Returns its id and the round log the API
    reports."""
    with httpx.Client(base_url=base, headers=ALICE, timeout=60) as client:
        made = client.post("/v1/sessions", json={"window": WEEKS_7_8, "frozen_days": FROZEN})
        sid = made.json()["session_id"]
        for tool, args in [
            ("analyze_health", {}),
            ("place", {"task_id": 11, "day": 6, "slot_start": 1}),
            ("analyze_health", {}),
            ("apply_proposal", {}),
            ("analyze_health", {}),
            ("commit", {}),
        ]:
            got = client.post(f"/v1/sessions/{sid}/calls", json={"tool": tool, "args": args})
            assert got.status_code == 200, got.text
        log = client.post(f"/v1/sessions/{sid}/calls", json={"tool": "get_round_log", "args": {}})
        return sid, json.loads(log.json()["reply"])["metrics"]


def _open(page: Page, base: str, sid: str) -> None:
    link = httpx.post(f"{base}/v1/sessions/{sid}/view-link", headers=ALICE).json()
    page.goto(base + link["url"])
    page.wait_for_selector("#grid")
    assert page.url == f"{base}/view/{sid}"  # the signed query left the address bar


def test_the_session_page_renders_grid_rounds_and_evidence(browser, server):
    """Tests that the session page opened from a view link shows one cell per day and period,
    one block per placed block of the state (tasks with their Chinese names), the frozen days,
    the close signal, the pending commit's preview; that clicking a round shows its writes'
    evidence lines and the tasks they changed; that the difference between the first and the
    last round lists the tasks moved in between; that clicking a health issue marks it in the
    grid; saves a screenshot (every request of the page to the app itself)."""
    sid, log = _agent_session(server)
    state = httpx.get(f"{server}/v1/sessions/{sid}/state", headers=ALICE).json()["state"]
    days, slots = state["window"]["total_days"], state["window"].get("slots_per_day", 12)
    placed_blocks = sum(len(t.get("slots") or []) for t in state["tasks"])
    study_blocks = sum(
        len(t.get("slots") or []) for t in state["tasks"] if t.get("source") != "event"
    )
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(server) else None)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _open(page, server, sid)

    assert page.locator("#grid .cell").count() == days * slots
    assert page.locator("#grid .block").count() == placed_blocks
    tasks = page.locator("#grid .block.kind-task, #grid .block.kind-guest")
    assert tasks.count() == study_blocks
    assert (
        page.locator('#grid .block[data-task-id="11"]')
        .first.inner_text()
        .strip()
        .endswith("复习线代")
    )
    assert page.locator("#grid .block.status-suggested").count() > 0
    assert page.locator("#grid .block.locked").count() > 0
    assert page.locator("#grid .dayhead.frozen").count() == FROZEN
    assert page.locator("#grid .cell.frozen").count() == FROZEN * slots
    assert f"冻结：第1-{FROZEN}天" in page.locator("header").inner_text()
    assert "收口信号" in page.locator("#close").inner_text()
    assert "待确认：commit" in page.locator("#pending").inner_text()
    # the page is styled by its own stylesheet (served by the app): the grid is a CSS grid
    assert page.locator("#grid").evaluate("n => getComputedStyle(n).display") == "grid"

    rounds = page.locator("li.round")
    assert rounds.count() == len(log["rounds"])
    with_writes = [i for i, r in enumerate(log["rounds"]) if r["writes"]]
    target = rounds.nth(with_writes[0])
    detail = target.locator(".round-detail")
    assert detail.is_hidden()
    target.click()
    assert detail.is_visible()
    evidence = detail.locator(".evidence")
    assert evidence.count() == len(log["rounds"][with_writes[0]]["writes"])
    assert evidence.first.inner_text().startswith("证据：解决")
    assert "模式：first_full" in detail.inner_text()
    changes = httpx.get(f"{server}/v1/sessions/{sid}/changes", headers=ALICE).json()["changes"]
    first_write = log["rounds"][with_writes[0]]["writes"][0]
    moves = detail.locator(".write").first.locator(".moves li")
    assert moves.count() == first_write["changes"]
    assert moves.first.get_attribute("data-task-id") == str(changes[0]["task_id"])

    page.select_option("#diff-a", "1")
    page.select_option("#diff-b", str(log["rounds"][-1]["round"]))
    diff = page.locator("#diff-out").inner_text()
    assert "已解决" in diff and "其间的写入" in diff and "变化：严重" in diff
    # the tasks the proposal moved between round 1 and the last round
    net = page.locator("#diff-out .diff-moves li")
    assert net.count() > 0 and "→" in net.first.inner_text()

    issue = page.locator(".issues li.issue[data-where=grid]").first
    if issue.count():
        issue.click()
        assert page.locator("#grid .hl").count() > 0
        issue.click()
        assert page.locator("#grid .hl").count() == 0

    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / "session_page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert failed == [] and outside == [] and errors == []
    page.close()


def test_a_page_without_a_link_or_with_a_forged_one_is_refused(browser, server):
    """Tests that the page refuses a browser without the view cookie and with a link whose
    signature was altered (401 pages, no grid)."""
    sid, _ = _agent_session(server)
    page = browser.new_page()
    got = page.goto(f"{server}/view/{sid}")
    assert got is not None and got.status == 401 and page.locator("#grid").count() == 0
    link = httpx.post(f"{server}/v1/sessions/{sid}/view-link", headers=ALICE).json()["url"]
    forged = link[:-3] + ("AAA" if not link.endswith("AAA") else "BBB")
    got = page.goto(server + forged)
    assert got is not None and got.status == 401
    page.close()


def test_the_stateless_page_shows_a_posted_window(browser, server):
    """Tests the page of a posted window (POST /v1/view, the bearer token in a header): the
    grid's cells and blocks; saves a screenshot."""
    data = window_dict(WINDOW)
    page = browser.new_page(viewport={"width": 1500, "height": 900})

    def as_post(route: Any) -> None:
        route.continue_(
            method="POST",
            headers={**route.request.headers, **ALICE, "content-type": "application/json"},
            post_data=json.dumps({"state": data, "title": "样例窗口"}),
        )

    page.route(f"{server}/v1/view", as_post)
    page.goto(f"{server}/v1/view")
    page.wait_for_selector("#grid")
    days, slots = data["window"]["total_days"], data["window"].get("slots_per_day", 12)
    assert page.locator("#grid .cell").count() == days * slots
    placed = sum(len(t.get("slots") or []) for t in data["tasks"])
    assert page.locator("#grid .block").count() == placed
    assert page.locator("#rounds").count() == 0
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / "window_page.png"), full_page=True)
    page.close()


def test_the_stateless_page_shows_the_same_outside_the_app(browser, server):
    """Tests the posted window's page put into a blank page of another origin (as a backend's
    iframe srcdoc or a saved file shows it): it makes no request at all, is styled, its script
    runs (clicking a health issue marks it in the grid), and its grid is complete."""
    data = window_dict(WINDOW)
    got = httpx.post(
        f"{server}/v1/view", headers=ALICE, json={"state": data, "frozen_days": 1}, timeout=60
    )
    assert got.status_code == 200
    page = browser.new_page(viewport={"width": 1500, "height": 900})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(got.text)
    days, slots = data["window"]["total_days"], data["window"].get("slots_per_day", 12)
    assert page.locator("#grid .cell").count() == days * slots
    assert page.locator("#grid .cell.frozen").count() == slots
    assert page.locator("#grid").evaluate("n => getComputedStyle(n).display") == "grid"
    issue = page.locator(".issues li.issue[data-where=grid]")
    if issue.count():
        issue.first.click()
        assert page.locator("#grid .hl").count() > 0
    assert requests == [] and errors == []
    page.close()


@pytest.mark.parametrize(
    ("path", "ready"), [("/docs", ".opblock"), ("/redoc", "[data-section-id]")]
)
def test_the_api_docs_render_offline(browser, server, path, ready):
    """Tests that /docs (Swagger UI) and /redoc render the API's operations in the browser with
    every request going to the app itself (no CDN, no font host, no validator badge)."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    outside: list[str] = []

    def seen(url: str) -> None:  # blob: and data: URLs (ReDoc's worker) are no network request
        if not url.startswith((server, "blob:", "data:")):
            outside.append(url)

    page.on("request", lambda r: seen(r.url))
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto(server + path)
    page.wait_for_selector(ready, timeout=30_000)
    assert page.locator(ready).count() > 5
    assert "/v1/sessions" in page.locator("body").inner_text()
    page.wait_for_load_state("networkidle")
    assert outside == [] and failed == []
    page.close()
