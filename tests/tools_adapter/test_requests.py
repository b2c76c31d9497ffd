"""Tests of issue 27: user requests and rounds, and stops that hold on the agent surfaces (the
Session, HTTP and MCP): every tool call is a round of the current request, the call beyond the round
cap is refused, a closed request refuses writes (reads stay allowed), a new request reopens, and
the default mode of a new request follows the window."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.tools_adapter import Session
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.core.spec import Mode
from smartflow_engine.tools_adapter.sessions.loop_state import ROUND_CAP
from smartflow_engine.tools_adapter.sessions.session import SessionError
from tests.helpers.windows import study_window, window_dict

TOKENS = {"tok-alice": "alice"}
ALICE = {"Authorization": "Bearer tok-alice"}


def block(day: int, start: int, end: int) -> list[dict[str, int]]:
    return [{"day": day, "slot_start": start, "slot_end": end}]


def overloaded() -> ScheduleState:
    """Day 1 full of movable study work, days 2-4 empty: critical load, never rules_met."""
    return study_window(
        4, [{"slots": block(1, 1, 4)}, {"slots": block(1, 5, 8)}, {"slots": block(1, 9, 12)}]
    )


def healthy() -> ScheduleState:
    """One short block a day: critical=0, warning<=1 (rules_met at the first health check)."""
    return study_window(4, [{"slots": block(d, 1, 2)} for d in range(1, 5)])


def infeasible() -> ScheduleState:
    """One day, a locked course on every period and a pending task: proven infeasible."""
    course = {
        "source": "event",
        "locked": True,
        "category": "课程",
        "status": "existing",
        "slots": block(1, 1, 12),
    }
    return study_window(1, [course, {"status": "pending", "duration": 2}])


def health(session: Session) -> dict[str, Any]:
    env = json.loads(session.call("analyze_health", {}))
    assert env["success"], env
    return env


MOVE_3 = {"task_id": 3, "new_day": 3, "new_slot_start": 1}


def close_by(kind: str) -> Session:
    """A session whose current request was closed by ``kind``, through the real loop."""
    if kind == "rules_met":
        s = Session(healthy())
        assert health(s)["metrics"]["close_signal"]["close_reason"] == "rules_met"
    elif kind == "no_progress":
        s = Session(overloaded())
        for _ in range(4):
            sig = health(s)["metrics"]["close_signal"]
        assert sig["close_reason"] == "no_progress"
    elif kind == "risk_accepted":
        s = Session(infeasible())
        health(s)
        assert s.invoke("resolve_negotiation", {"choice": "accept_risk"}).status == "ok"
        assert health(s)["metrics"]["close_signal"]["close_reason"] == "risk_accepted"
    elif kind == "best_achievable":
        s = Session(overloaded())
        loop = s.toolbox.ctx.loop
        # the analyzers' verdict, as _close_reason reads it from close_signal
        assert loop._close_reason({"best_achievable": True}) == "best_achievable"
        health(s)
        loop.close_reason = "best_achievable"
    else:  # round_cap
        s = Session(overloaded())
        for _ in range(ROUND_CAP):
            assert s.invoke("get_overview", {}).status == "ok"
        assert s.request_info()["close_reason"] == "round_cap"
    return s


KINDS = ["rules_met", "best_achievable", "no_progress", "round_cap", "risk_accepted"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_write_after_each_kind_of_close_is_refused_on_session(kind):
    """Tests that once a request is closed (each of the five close reasons) a write is refused
    with a stable error_code and a Chinese reply saying why and that a new request goes on, the
    state and change log unchanged; reads stay allowed except after the round cap."""
    s = close_by(kind)
    before, changes = s.state.to_json(), list(s.changes)
    task = 3 if kind != "risk_accepted" else 2
    args = {"task_id": task, "new_day": 1, "new_slot_start": 1}
    result = s.invoke("move", args)
    code = "round_cap" if kind == "round_cap" else "request_closed"
    assert result.status == "error" and result.error_code == code and result.is_error
    assert "未执行" in result.reply and "新的请求" in result.reply
    assert s.state.to_json() == before and s.changes == changes
    read = s.invoke("get_overview", {})
    assert (read.status == "ok") is (kind != "round_cap")
    if kind == "round_cap":
        assert read.error_code == "round_cap"
    # a new request reopens
    s.begin_request()
    assert s.request_info() == {
        "request": 2,
        "mode": s.mode.value,
        "frozen_days": 0,
        "existing_fixed": False,
        "rounds": 0,
        "rounds_left": ROUND_CAP,
        "closed": False,
        "close_reason": None,
    }
    again = s.invoke("move", args)
    assert again.error_code not in ("request_closed", "round_cap"), again.reply


def test_round_61_is_refused_and_every_call_counts():
    """Tests that every tool call of the model (reads, writes, even refused ones) is a round of
    the request: the 60th runs and closes with round_cap, the 61st is refused whatever the tool
    (round_cap), and a new request gives 60 more."""
    s = Session(overloaded())
    assert s.invoke("no_such_tool", {}).status == "error"  # round 1
    assert s.invoke("move", {"task_id": 99}).status == "error"  # round 2 (bad args)
    for n in range(3, ROUND_CAP + 1):
        assert s.invoke("list_tasks", {}).status == "ok", n
    assert s.request_info()["rounds"] == ROUND_CAP
    for tool, args in (("list_tasks", {}), ("analyze_health", {}), ("move", MOVE_3)):
        refused = s.invoke(tool, args)
        assert refused.error_code == "round_cap" and "60" in refused.reply
    refused_unknown = s.invoke("no_such_tool", {})
    assert refused_unknown.error_code == "round_cap"
    assert s.request_info()["rounds"] == ROUND_CAP  # refusals of the cap use no round
    s.begin_request()
    assert s.invoke("move", MOVE_3).status == "ok"
    assert s.request_info()["rounds"] == 1


def test_the_cap_and_the_close_survive_a_snapshot():
    """Tests that the request's number, mode, rounds and close reason are in the snapshot: a
    restored session keeps refusing the write."""
    s = close_by("no_progress")
    restored = Session.restore(json.loads(json.dumps(s.snapshot())))
    assert restored.request_info() == s.request_info()
    assert restored.invoke("move", MOVE_3).error_code == "request_closed"


def test_confirming_a_held_write_after_a_close_is_refused_and_the_token_kept(tmp_path):
    """Tests that the user's confirm of a write held before the close is refused while the
    request is closed (nothing written, the token still pending), and runs in the next request."""
    from smartflow_engine.tools_adapter.core import registry
    from smartflow_engine.tools_adapter.core.spec import ToolSpec

    move = next(t for t in registry.TOOLS if t.name == "move")
    gated = ToolSpec(**{**move.__dict__, "needs_confirm": True})
    specs = [gated if t.name == "move" else t for t in registry.TOOLS]
    s = Session(overloaded(), specs=specs)
    held = s.invoke("move", MOVE_3)
    assert held.status == "pending_confirm" and held.confirm_token
    for _ in range(4):
        health(s)
    assert s.request_info()["close_reason"] == "no_progress"
    before = s.state.to_json()
    refused = s.confirm(held.confirm_token)
    assert refused.error_code == "request_closed" and s.state.to_json() == before
    assert [p.token for p in s.pending()] == [held.confirm_token]
    s.begin_request()
    assert s.confirm(held.confirm_token).status == "ok"


def test_restore_best_stays_allowed_after_a_close():
    """Tests that restore_best (return to the request's best state) is not refused by a close:
    closing a request is where the agent goes back to its best state."""
    s = Session(overloaded())
    health(s)
    assert s.invoke("move", MOVE_3).status == "ok"
    health(s)
    assert s.invoke("move", {"task_id": 3, "new_day": 1, "new_slot_start": 9}).status == "ok"
    for _ in range(3):
        health(s)
    assert s.request_info()["close_reason"] == "no_progress"
    result = s.invoke("restore_best", {})
    assert result.error_code != "request_closed", result.reply


@pytest.mark.parametrize("kind", ["rules_met", "no_progress", "risk_accepted"])
def test_upsert_task_class_stays_allowed_after_a_close(kind):
    """Tests that writing a task class (a user-confirmed database write that changes no
    schedule) is not refused by a close as "不再修改日程": the tool's own checks answer (here: no
    database configured), and the refusal of a schedule write names it among what is still
    allowed (issue 45 item 7)."""
    s = close_by(kind)
    before = s.state.to_json()
    result = s.invoke("upsert_task_class", {"task_class": {"name": "复习"}})
    assert result.error_code == "no_database", result.reply
    assert s.state.to_json() == before
    assert "upsert_task_class" in s.invoke("move", MOVE_3).reply


def test_the_default_mode_follows_the_window():
    """Tests that begin_request without a mode starts first_full on a window whose study tasks
    are all pending, local_adjust on any other (or none), and global_reopt only when asked."""
    pending = study_window(
        3, [{"status": "pending", "duration": 2}, {"status": "pending", "duration": 1}]
    )
    s = Session(pending, mode="local_adjust")
    assert s.begin_request()["mode"] == "first_full" and s.mode is Mode.FIRST_FULL
    placed = study_window(3, [{"status": "pending", "duration": 2}, {"slots": block(1, 1, 2)}])
    s = Session(placed)
    assert s.begin_request()["mode"] == "local_adjust"
    assert s.begin_request("global_reopt")["mode"] == "global_reopt"
    assert Session(None).begin_request()["mode"] == "local_adjust"
    with pytest.raises(SessionError):
        s.begin_request("everything")
    assert s.mode is Mode.GLOBAL_REOPT and s.request_info()["request"] == 3


def test_bare_toolbox_has_no_execute_loop():
    """Tests that the bare Toolbox, the engine without an execute loop, says so and runs past
    the round cap (only the agent surfaces enforce the loop)."""
    assert "without an execute loop" in (Toolbox.__doc__ or "")
    box = Toolbox(overloaded())
    for _ in range(ROUND_CAP + 1):
        box.call("get_overview", {})
    assert box.call("move", MOVE_3).startswith("已将")


# ---------------------------------------------------------------------------------- HTTP
@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(TOKENS))


def _session(client: TestClient, state: dict[str, Any], mode: str = "first_full") -> str:
    made = client.post("/v1/sessions", headers=ALICE, json={"state": state, "mode": mode})
    assert made.status_code == 201, made.text
    sid: str = made.json()["session_id"]
    return sid


def _call(client: TestClient, sid: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    reply = client.post(
        f"/v1/sessions/{sid}/calls", headers=ALICE, json={"tool": tool, "args": args}
    )
    assert reply.status_code == 200, reply.text
    out: dict[str, Any] = reply.json()
    return out


@pytest.mark.parametrize("kind", ["rules_met", "no_progress", "risk_accepted", "round_cap"])
def test_a_write_after_a_close_is_refused_over_http(client, kind):
    """Tests that over HTTP a write after a close (each kind the loop reaches there) is an error
    with the stable error_code, the session's state unchanged, and that POST .../requests starts
    a new request that takes the write."""
    state = {"rules_met": healthy, "risk_accepted": infeasible}.get(kind, overloaded)()
    sid = _session(client, state.to_dict())
    if kind == "round_cap":
        for _ in range(ROUND_CAP):
            assert _call(client, sid, "list_tasks", {})["status"] == "ok"
    elif kind == "risk_accepted":
        _call(client, sid, "analyze_health", {})
        _call(client, sid, "resolve_negotiation", {"choice": "accept_risk"})
        _call(client, sid, "analyze_health", {})
    else:
        for _ in range(4 if kind == "no_progress" else 1):
            _call(client, sid, "analyze_health", {})
    current = client.get(f"/v1/sessions/{sid}/requests/current", headers=ALICE).json()
    assert current["closed"] is True and current["close_reason"] == kind
    before = client.get(f"/v1/sessions/{sid}/state", headers=ALICE).json()
    task = 2 if kind == "risk_accepted" else 3
    args = {"task_id": task, "new_day": 1, "new_slot_start": 1}
    out = _call(client, sid, "move", args)
    code = "round_cap" if kind == "round_cap" else "request_closed"
    assert out["status"] == "error" and out["error_code"] == code and not out["changes"]
    assert client.get(f"/v1/sessions/{sid}/state", headers=ALICE).json() == before
    opened = client.post(f"/v1/sessions/{sid}/requests", headers=ALICE, json={})
    assert opened.status_code == 200, opened.text
    assert opened.json()["request"] == 2 and opened.json()["closed"] is False
    again = _call(client, sid, "move", args)
    assert again["error_code"] not in ("request_closed", "round_cap"), again


def test_http_request_route_takes_a_mode_and_refuses_a_bad_one(client):
    """Tests that POST .../requests without a body follows the window, with a mode uses it, and
    an unknown mode or field is a 422 with the session unchanged."""
    sid = _session(client, window_dict(), mode="global_reopt")
    url = f"/v1/sessions/{sid}/requests"
    assert client.post(url, headers=ALICE).json()["mode"] in ("first_full", "local_adjust")
    out = client.post(url, headers=ALICE, json={"mode": "global_reopt"}).json()
    assert out["mode"] == "global_reopt" and out["request"] == 3
    for bad in ({"mode": "everything"}, {"modes": "first_full"}):
        assert client.post(url, headers=ALICE, json=bad).status_code == 422
    assert client.get(f"{url}/current", headers=ALICE).json()["request"] == 3


def test_a_plan_with_tasks_still_to_place_does_not_close_on_the_rules():
    """Tests that a first_full request on the sample window (every study task pending, the
    window proven to hold them all) is not closed by its first health check, although the empty
    plan meets the close rule (critical=0 && warning<=1): the plan is not done until the tasks
    are in. Once the proposal has placed them, the same rule closes the request."""
    from smartflow_engine.cli import sample_window_path

    s = Session(ScheduleState.from_json(sample_window_path()), mode="first_full")
    first = json.loads(s.call("analyze_health", {}))["metrics"]["close_signal"]
    # the empty plan meets the rule, but tasks that fit are still pending (issue 45 item 1)
    assert first["acceptable_to_close"] is False and first["reason"] == "pending_placeable"
    assert first["should_close"] is False and first["close_reason"] is None  # ... not done
    assert "待安排任务剩余：0个" in s.call("apply_proposal", {})  # the write is still taken
    after = json.loads(s.call("analyze_health", {}))["metrics"]["close_signal"]
    assert after["should_close"] is True and after["close_reason"] == "rules_met"


# ---------------------------------------------------------------------------------- frozen days
ONTO_DAY_1 = {"task_id": 4, "new_day": 1, "new_slot_start": 5}


def test_a_request_sets_lifts_or_keeps_the_frozen_days():
    """Tests that begin_request's frozen_days freezes days 1..k for the new request (a write
    onto day 1 is refused with frozen_day), None keeps the setting, 0 lifts it, and a bad value
    is a SessionError that changes nothing (request, mode, freeze)."""
    s = Session(healthy(), mode="local_adjust")
    assert s.begin_request(frozen_days=2)["frozen_days"] == 2
    refused = s.invoke("move", ONTO_DAY_1)
    assert refused.error_code == "frozen_day" and "第1-2天已冻结" in refused.reply
    assert s.begin_request()["frozen_days"] == 2  # kept
    assert s.invoke("move", ONTO_DAY_1).error_code == "frozen_day"
    info = s.request_info()
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(SessionError):
            s.begin_request("first_full", frozen_days=bad)
    assert s.request_info() == info and s.mode is Mode.LOCAL_ADJUST
    assert s.begin_request(frozen_days=0)["frozen_days"] == 0
    assert s.invoke("move", ONTO_DAY_1).status == "ok"


def test_a_repeated_request_key_starts_nothing():
    """Tests that begin_request with the current request's key is a no-op (a retried start):
    the calls, the close and the mode stay; a new key starts the next request."""
    s = close_by("no_progress")
    first = s.begin_request("local_adjust", key="msg-1")
    assert first["request"] == 2 and not first["closed"]
    s.invoke("list_tasks", {})
    again = s.begin_request("global_reopt", key="msg-1")
    assert again == {**first, "rounds": 1, "rounds_left": ROUND_CAP - 1}
    assert s.begin_request(key="msg-2")["request"] == 3
    for bad in ("", "x" * 65, 7):
        with pytest.raises(SessionError):
            s.begin_request(key=bad)  # type: ignore[arg-type]
    restored = Session.restore(json.loads(json.dumps(s.snapshot())))
    assert restored.begin_request(key="msg-2")["request"] == 3  # the key is in the snapshot


def test_http_request_route_sets_frozen_days_and_takes_a_key(client):
    """Tests that POST .../requests takes frozen_days (shown in the reply, honoured by the next
    write, refused with 422 when out of range or not whole) and a key (a repeated POST with the
    same key starts nothing)."""
    sid = _session(client, healthy().to_dict(), mode="local_adjust")
    url = f"/v1/sessions/{sid}/requests"
    out = client.post(url, headers=ALICE, json={"frozen_days": 2, "key": "m1"}).json()
    assert out["frozen_days"] == 2 and out["request"] == 2
    refused = _call(client, sid, "move", ONTO_DAY_1)
    assert refused["error_code"] == "frozen_day" and not refused["changes"]
    assert client.post(url, headers=ALICE, json={"key": "m1"}).json()["request"] == 2
    for bad in ({"frozen_days": -1}, {"frozen_days": 1.5}, {"frozen_days": "2"}, {"key": ""}):
        assert client.post(url, headers=ALICE, json=bad).status_code == 422, bad
    assert client.get(f"{url}/current", headers=ALICE).json()["frozen_days"] == 2
    lifted = client.post(url, headers=ALICE, json={"frozen_days": 0}).json()
    assert lifted["frozen_days"] == 0 and lifted["request"] == 3
    assert _call(client, sid, "move", ONTO_DAY_1)["status"] == "ok"


# ---------------------------------------------------------------------------------- MCP
def _mcp(session: Session, steps: Any) -> Any:
    import anyio
    from mcp import Client

    from smartflow_engine.tools_adapter.mcp.server import build_server

    async def go() -> Any:
        async with Client(build_server(session)) as c:
            return await steps(c)

    return anyio.run(go)


def _meta(key: Any, **fields: Any) -> dict[str, Any]:
    from smartflow_engine.tools_adapter.mcp.server import REQUEST_META

    return {REQUEST_META: {"key": key, **fields}}


@pytest.mark.parametrize("kind", ["rules_met", "no_progress", "round_cap"])
def test_mcp_a_closed_request_refuses_writes_and_a_new_key_reopens(kind):
    """Tests that over MCP a write after a close is an isError result with the stop's reply,
    that a call whose _meta carries a new request key starts a new request (the write runs), and
    that later calls with the same key do not start another one."""
    s = close_by(kind)
    args = {"task_id": 3, "new_day": 2, "new_slot_start": 5}  # legal on every closed window
    before = s.state.to_json()

    async def steps(c: Any) -> Any:
        refused = await c.call_tool("move", args)
        unchanged = s.state.to_json() == before
        opened = await c.call_tool("move", args, meta=_meta("user-2", mode="local_adjust"))
        info = s.request_info()
        await c.call_tool("list_tasks", {}, meta=_meta("user-2"))
        return refused, unchanged, opened, info, s.request_info()

    refused, unchanged, opened, info, later = _mcp(s, steps)
    stop = "用满" if kind == "round_cap" else "已收口"
    assert (
        refused.is_error
        and stop in refused.content[0].text
        and "新的请求" in refused.content[0].text
    )
    assert unchanged
    assert not opened.is_error, opened.content[0].text
    assert s.state.task(3).slots[0].day == 2  # the reopened request took the write
    assert info["request"] == 2 and info["mode"] == "local_adjust" and info["rounds"] == 1
    assert later["request"] == 2 and later["rounds"] == 2  # the same key started nothing


def test_mcp_request_meta_sets_frozen_days_and_republishes_the_tools():
    """Tests that a request started through _meta with frozen_days freezes those days (a write
    onto them is refused), that a request changing the mode republishes the tool list (the new
    mode's tools), and that a malformed _meta refuses the call (invalid_request) and starts
    nothing."""
    from smartflow_engine.tools_adapter.core import registry

    s = Session(healthy(), mode="global_reopt")

    async def steps(c: Any) -> Any:
        before = [t.name for t in (await c.list_tools()).tools]
        frozen = await c.call_tool(
            "move", ONTO_DAY_1, meta=_meta("m1", mode="local_adjust", frozen_days=2)
        )
        after = [t.name for t in (await c.list_tools()).tools]
        bad = [await c.call_tool("list_tasks", {}, meta=_meta(key)) for key in (None, "", "x" * 65)]
        wrong = await c.call_tool("list_tasks", {}, meta=_meta("m9", mode="everything"))
        extra = await c.call_tool("list_tasks", {}, meta=_meta("m9", modes="first_full"))
        return before, frozen, after, [*bad, wrong, extra]

    before, frozen, after, bad = _mcp(s, steps)
    assert before == registry.tool_names(Mode.GLOBAL_REOPT)
    assert after == registry.tool_names(Mode.LOCAL_ADJUST)
    assert frozen.is_error and "第1-2天已冻结" in frozen.content[0].text
    assert s.request_info()["request"] == 2 and s.frozen_days == 2
    for result in bad:
        assert result.is_error and "_meta" in result.content[0].text, result.content[0].text
    assert s.request_info()["request"] == 2 and s.request_info()["rounds"] == 1
