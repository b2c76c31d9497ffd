"""Tests of issue 42 item 5: existing entries kept as facts, a request option on every agent
surface (Session, HTTP, MCP ``_meta``): under it only suggested and pending tasks move, by the
simple writes and by the solver tools; off, the spec's rule (an existing task may move) holds."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from smartflow_engine import ScheduleState
from smartflow_engine.tools_adapter import Session
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.sessions.session import SessionError
from tests.helpers.windows import study_window

TOKENS = {"tok-alice": "alice"}
ALICE = {"Authorization": "Bearer tok-alice"}
MOVE_1 = {"task_id": 1, "new_day": 2, "new_slot_start": 5}  # [1] is existing


def window() -> ScheduleState:
    """Day 1 holds two existing and one suggested study task (periods 1-12 full), day 2-3
    empty: a spread moves work off day 1 when it may."""
    block = [(1, 4), (5, 8), (9, 12)]
    return study_window(
        3,
        [
            {"status": status, "slots": [{"day": 1, "slot_start": s, "slot_end": e}]}
            for status, (s, e) in zip(("existing", "existing", "suggested"), block, strict=True)
        ],
    )


def placed(state: ScheduleState) -> dict[int, tuple[int, int]]:
    return {t.state_id: (t.slots[0].day, t.slots[0].slot_start) for t in state.tasks if t.slots}


def test_session_request_option_fixes_existing_tasks():
    """Tests that Session.begin_request(existing_fixed=True) refuses a move of an existing task
    and allows a suggested one, shows the option in request_info and the snapshot, keeps it for
    the next request unless given, and that False restores the spec's rule."""
    s = Session(window(), mode="local_adjust")
    assert s.request_info()["existing_fixed"] is False
    info = s.begin_request(existing_fixed=True)
    assert info["existing_fixed"] is True and s.existing_fixed
    refused = s.invoke("move", MOVE_1)
    assert refused.status == "error" and "是已安排任务" in refused.reply
    assert s.invoke("move", {"task_id": 3, "new_day": 3, "new_slot_start": 1}).status == "ok"
    assert s.begin_request()["existing_fixed"] is True  # kept until changed
    restored = Session.restore(json.loads(json.dumps(s.snapshot())))
    assert restored.existing_fixed
    assert s.begin_request(existing_fixed=False)["existing_fixed"] is False
    assert s.invoke("move", MOVE_1).status == "ok"
    with pytest.raises(SessionError, match="existing_fixed"):
        s.begin_request(existing_fixed="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("spread_even", {"category": "复习", "time_limit_s": 2.0}),
        ("min_context_switch", {"time_limit_s": 2.0}),
        ("apply_proposal", {"keep_placed": True, "include_suggested": True, "time_limit_s": 2.0}),
    ],
)
def test_solver_tools_leave_existing_tasks_in_place(tool, args):
    """Tests that under existing_fixed the solver tools move no existing task (the flags of the
    real tasks unchanged afterwards)."""
    s = Session(window(), mode="global_reopt", enabled_tools=["min_context_switch"])
    s.begin_request(existing_fixed=True)
    before = placed(s.state)
    s.invoke(tool, args)
    after = placed(s.state)
    assert after[1] == before[1] and after[2] == before[2]
    assert not any(t.locked for t in s.state.tasks)


def test_spread_moves_existing_work_without_the_option():
    """Tests that the same spread moves an existing task when existing entries may move (the
    window above is a fair test: the option is what keeps them)."""
    s = Session(window(), mode="global_reopt")
    before = placed(s.state)
    s.invoke("spread_even", {"category": "复习", "time_limit_s": 2.0})
    after = placed(s.state)
    assert after[1] != before[1] or after[2] != before[2]


def test_http_request_sets_existing_fixed():
    """Tests POST .../requests with existing_fixed: shown in the reply and the current request,
    honoured by the next write, refused with 422 when not a boolean."""
    client = TestClient(create_app(TOKENS))
    made = client.post(
        "/v1/sessions", headers=ALICE, json={"state": window().to_dict(), "mode": "local_adjust"}
    )
    sid = made.json()["session_id"]
    url = f"/v1/sessions/{sid}/requests"
    out = client.post(url, headers=ALICE, json={"existing_fixed": True}).json()
    assert out["existing_fixed"] is True
    call = client.post(
        f"/v1/sessions/{sid}/calls", headers=ALICE, json={"tool": "move", "args": MOVE_1}
    ).json()
    assert call["status"] == "error" and not call["changes"]
    for bad in ({"existing_fixed": "true"}, {"existing_fixed": 1}):
        assert client.post(url, headers=ALICE, json=bad).status_code == 422, bad
    assert client.get(f"{url}/current", headers=ALICE).json()["existing_fixed"] is True


def test_mcp_meta_sets_existing_fixed():
    """Tests that _meta's request may carry existing_fixed (a write of an existing task is then
    an isError result) and that a non-boolean value refuses the call."""
    import anyio
    from mcp import Client

    from smartflow_engine.tools_adapter.mcp.server import REQUEST_META, build_server

    s = Session(window(), mode="local_adjust")

    async def go() -> Any:
        async with Client(build_server(s)) as c:
            fixed = await c.call_tool(
                "move", MOVE_1, meta={REQUEST_META: {"key": "m1", "existing_fixed": True}}
            )
            bad = await c.call_tool(
                "list_tasks", {}, meta={REQUEST_META: {"key": "m2", "existing_fixed": "on"}}
            )
            return fixed, bad

    fixed, bad = anyio.run(go)
    assert fixed.is_error and "是已安排任务" in fixed.content[0].text
    assert s.existing_fixed and s.state.task(1).slots[0].day == 1
    assert bad.is_error and "existing_fixed" in bad.content[0].text
