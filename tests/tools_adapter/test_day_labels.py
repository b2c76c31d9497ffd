"""Tests of the weekday day labels (issue 43 item 2): ``第6天(星期六)``, with the teaching week when
the window spans several (``第8天(第8周星期一)``), as a setting of the Toolbox, the Session (kept
in its snapshot), HTTP sessions, the MCP server, ``smartflow serve``/``mcp`` and
``SMARTFLOW_DAY_LABELS``; the spec's labels stay the default. Labels are made in
``tools_adapter/core/render.py`` (``day_label``)."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.tools_adapter import Session
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.mcp.server import build_server
from tests.helpers.calendar_oracle import remap
from tests.helpers.windows import load_window, window_dict

WEEKDAYS = "一二三四五六日"
LABEL = re.compile(r"第(\d+)天\((?:第(\d+)周)?星期(.)\)")
CALLS = [
    ("get_overview", {}),
    ("query_range", {"day": 6}),
    ("query_range", {"day": 5, "slot_start": 1, "slot_end": 4}),
    ("find_free", {"duration": 2}),
    ("list_tasks", {}),
    ("get_task_info", {"task_id": 1}),
    ("place", {"task_id": 3, "day": 6, "slot_start": 3}),
    ("move", {"task_id": 6, "new_day": 13, "new_slot_start": 5}),
    ("batch_move", {"moves": [{"task_id": 6, "new_day": 9, "new_slot_start": 7}]}),
]


def _expected(data: dict[str, Any], day: int) -> str:
    """The weekday label of ``day``, read off the raw day mapping."""
    mapping = data["window"]["day_mapping"]
    m = mapping[day - 1]
    spans = len({x["week"] for x in mapping}) > 1
    week = f"第{m['week']}周" if spans else ""
    return f"第{day}天({week}星期{WEEKDAYS[m['day_of_week'] - 1]})"


@pytest.mark.parametrize(("tool", "args"), CALLS)
def test_weekday_labels_only_add_the_weekday(tool, args):
    """Tests that with weekday labels each day a reply names carries its week and weekday from
    the day mapping, and that dropping them gives the spec's reply exactly (nothing else changes;
    the default stays the spec's)."""
    data = window_dict()  # weeks 5-6: the labels carry the week
    weekday = Toolbox(ScheduleState.from_json(data), day_labels="weekday").call(tool, args)
    plain = Toolbox(ScheduleState.from_json(data)).call(tool, args)
    assert LABEL.search(plain) is None
    found = LABEL.findall(weekday)
    assert found, weekday
    for day, _week, _dow in found:
        assert _expected(data, int(day)) in weekday
    assert LABEL.sub(lambda m: f"第{m.group(1)}天", weekday) == plain


def test_one_week_windows_leave_the_week_out():
    """Tests that in a window of one teaching week a label is 第6天(星期六), the issue's form,
    and that a window without a day mapping keeps the spec's labels."""
    data = remap(window_dict(), 12, 1)
    data["window"]["total_days"] = 7
    data["window"]["day_mapping"] = data["window"]["day_mapping"][:7]
    data["tasks"] = [
        {**t, "slots": [b for b in t.get("slots", []) if b["day"] <= 7]}
        for t in data["tasks"]
        if t["status"] == "pending" or any(b["day"] <= 7 for b in t.get("slots", []))
    ]
    reply = Toolbox(ScheduleState.from_json(data), day_labels="weekday").call(
        "query_range", {"day": 6}
    )
    assert reply.startswith("第6天(星期六) 全天：")
    bare = window_dict()
    bare["window"].pop("day_mapping")
    reply = Toolbox(ScheduleState.from_json(bare), day_labels="weekday").call(
        "query_range", {"day": 6}
    )
    assert reply.startswith("第6天 全天：")


def test_session_keeps_its_labels_in_the_snapshot():
    """Tests that a session's labels survive its snapshot, a bad value is refused, and a snapshot
    written before the setting existed restores with the default."""
    s = Session(load_window(), day_labels="weekday")
    assert s.call("query_range", {"day": 6}).startswith("第6天(第5周星期六)")
    snap = s.snapshot()
    assert snap["day_labels"] == "weekday"
    assert Session.restore(snap).day_labels == "weekday"
    old = {k: v for k, v in snap.items() if k != "day_labels"}
    assert Session.restore(old).day_labels == "index"
    with pytest.raises(ValueError, match="day_labels must be one of index, weekday"):
        Session(load_window(), day_labels="dates")  # type: ignore[arg-type]


def test_environment_sets_the_default(monkeypatch):
    """Tests that SMARTFLOW_DAY_LABELS sets the default of a Toolbox and a Session, and an
    argument wins over it."""
    monkeypatch.setenv("SMARTFLOW_DAY_LABELS", "weekday")
    assert Toolbox(load_window()).call("query_range", {"day": 6}).startswith("第6天(第5周星期六)")
    assert Session(load_window()).day_labels == "weekday"
    assert Session(load_window(), day_labels="index").day_labels == "index"


def test_http_sessions_take_the_setting():
    """Tests that an HTTP session created with day_labels answers with them and shows the
    setting; without it the server's default holds; a bad value is a typed 422."""
    client = TestClient(create_app({"tok": "alice"}))
    auth = {"Authorization": "Bearer tok"}
    made = client.post(
        "/v1/sessions", headers=auth, json={"state": window_dict(), "day_labels": "weekday"}
    ).json()
    assert made["day_labels"] == "weekday"
    out = client.post(
        f"/v1/sessions/{made['session_id']}/calls",
        headers=auth,
        json={"tool": "query_range", "args": {"day": 6}},
    ).json()
    assert out["reply"].startswith("第6天(第5周星期六)")
    plain = client.post("/v1/sessions", headers=auth, json={"state": window_dict()}).json()
    assert plain["day_labels"] == "index"
    bad = client.post(
        "/v1/sessions", headers=auth, json={"state": window_dict(), "day_labels": "x"}
    )
    assert bad.status_code == 422 and bad.json()["error_code"] == "invalid_request"


def test_mcp_server_answers_with_the_sessions_labels():
    """Tests that the MCP server over a weekday session answers with weekday labels."""

    async def go() -> Any:
        async with Client(build_server(Session(load_window(), day_labels="weekday"))) as c:
            return await c.call_tool("query_range", {"day": 6})

    assert anyio.run(go).content[0].text.startswith("第6天(第5周星期六)")


def test_commands_pass_the_flag_on(monkeypatch, tmp_path):
    """Tests that `smartflow mcp --day-labels` and `smartflow serve --day-labels` hand the setting
    to the server they start, and a value outside index/weekday stops serve with exit 2."""
    from typer.testing import CliRunner

    import smartflow_engine.tools_adapter.api as api
    import smartflow_engine.tools_adapter.mcp.server as mcp_server
    from smartflow_engine.cli import app
    from tests.helpers.windows import DATA, EXAMPLE_WINDOW

    seen: dict[str, Any] = {}
    monkeypatch.setattr(mcp_server, "run_stdio", lambda *a, **k: seen.update(mcp=k["day_labels"]))
    monkeypatch.setattr(api, "serve", lambda **k: seen.update(serve=k["day_labels"]))
    state = str(DATA / f"{EXAMPLE_WINDOW}.json")
    runner = CliRunner()
    assert runner.invoke(app, ["mcp", "--state", state, "--day-labels", "weekday"]).exit_code == 0
    assert runner.invoke(app, ["serve", "--day-labels", "weekday"]).exit_code == 0
    assert seen == {"mcp": "weekday", "serve": "weekday"}
    bad = runner.invoke(app, ["serve", "--day-labels", "dates"])
    assert bad.exit_code == 2


def test_serve_exports_the_setting_to_its_workers(monkeypatch):
    """Tests that the HTTP server's launcher puts the day labels where its worker processes read
    them (SMARTFLOW_DAY_LABELS)."""
    import os

    import uvicorn

    from smartflow_engine.tools_adapter.api import serve

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
    monkeypatch.setattr(os, "environ", os.environ.copy())  # serve() writes the workers' settings
    serve(tokens={"t": "u"}, day_labels="weekday")
    assert os.environ["SMARTFLOW_DAY_LABELS"] == "weekday"


def test_json_replies_are_not_relabelled():
    """Tests that JSON replies keep their day numbers (they carry week and day_of_week fields)."""
    tb = Toolbox(load_window(), day_labels="weekday")
    env = json.loads(tb.call("query_available_slots", {"day": 6}))
    assert all(isinstance(r["day"], int) and "week" in r for r in env["metrics"]["slots"])
