"""Tests that every refusal of a text tool says 失败 in the spec's form ``X失败：reason`` and
changes nothing (issue 43 item 3), on every surface and for every kind of refusal: argument
errors, unknown tools (one wording everywhere), frozen days, closed requests, the round cap, the
infeasible gate; a JSON tool's refusal keeps ``success: false`` with a stable ``error_code``.
The form is made in one place (``tools_adapter/core/spec.py``: ``failure_head`` /
``failure_form``, used by the call pipeline)."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state.strategies import windows, write_calls
from smartflow_engine.tools_adapter import Session
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.core.pipeline import CallResult
from smartflow_engine.tools_adapter.core.spec import failure_head
from smartflow_engine.tools_adapter.mcp.server import build_server
from smartflow_engine.tools_adapter.sessions.loop_state import ROUND_CAP
from tests.helpers.adapters import example_args
from tests.helpers.windows import load_window, window_dict

TEXT_TOOLS = [s.name for s in registry.TOOLS if s.output == "text"]
JSON_TOOLS = [s.name for s in registry.TOOLS if s.output == "json"]
HIDDEN = [s.name for s in registry.TOOLS if not s.modes]
# The head of a text refusal: a verb and 失败, then the reason (the spec's batch form
# 批量移动失败，全部回滚 has a comma).
HEAD = re.compile(r"^[^\n：]{1,20}失败[：，]")


def head_line(reply: str) -> str:
    """The refusal's head line (a preview's first line is not its head)."""
    lines = reply.split("\n")
    return lines[1] if lines[0].startswith("预览（") and len(lines) > 1 else lines[0]


def assert_refusal_form(result: CallResult) -> None:
    """A refused call's reply: ``X失败：reason`` for a text tool (X the tool's verb when the tool
    names one of its own refusals, or the engine decided it), the envelope with success=false and
    an error_code for a JSON tool."""
    if result.output == "json":
        data = json.loads(result.reply)
        assert data["success"] is False and data["error_code"], data
        assert result.error_code == data["error_code"]
        return
    head = head_line(result.reply)
    assert HEAD.match(head), result.reply
    assert result.error_code, result


# ---------------------------------------------------------------------------------- calls
GARBAGE = st.one_of(
    st.none(),
    st.integers(-5, 2000),
    st.text(max_size=4),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.integers(-2, 20), max_size=3),
    st.dictionaries(st.sampled_from(["day", "x", "week"]), st.integers(-1, 30), max_size=2),
)


@st.composite
def any_call(draw: st.DrawFn, state: ScheduleState) -> tuple[str, Any]:
    """A call of any tool (or of no tool): well-formed examples, the write strategies' calls,
    a tool's own argument names with junk values, and arguments that are not an object."""
    name = draw(st.sampled_from([*TEXT_TOOLS, *JSON_TOOLS, "teleport", "移动", "x" * 80]))
    spec = registry.REGISTRY.get(name)
    kind = draw(st.integers(0, 3))
    if spec is None or kind == 3:
        return name, draw(st.one_of(st.just({}), GARBAGE))
    if kind == 0:
        args = example_args(spec, state)
        if "time_limit_s" in spec.args_model.model_fields:
            args["time_limit_s"] = 0.2
        return name, args
    if kind == 1 and name in ("place", "move", "swap", "batch_move", "unplace"):
        return draw(write_calls(state))
    fields = list(spec.args_model.model_fields) or ["x"]
    return name, draw(st.dictionaries(st.sampled_from(fields), GARBAGE, max_size=3))


def _session_in(situation: str, state: ScheduleState) -> Session:
    """A session over ``state`` whose current request is in ``situation``."""
    s = Session(state, enabled_tools=HIDDEN, max_time_limit_s=0.3)
    loop = s.toolbox.ctx.loop
    if situation == "closed":
        loop.close_reason = "rules_met"
    elif situation == "capped":
        loop.calls = ROUND_CAP
        loop.close_reason = "round_cap"
    elif situation == "gated":
        loop.gate_open = True
        loop.negotiation = {"capacity_gap": 3, "reason_code": "insufficient_capacity"}
    elif situation == "frozen":
        s.frozen_days = max(1, state.num_days // 2)
    return s


@settings(
    max_examples=int(__import__("os").environ.get("SMARTFLOW_REFUSAL_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_every_refusal_says_failed_and_changes_nothing(data):
    """Tests, over random windows, sessions in every request situation (fresh, closed, capped,
    gated by an infeasible verdict, frozen days) and a bare Toolbox, and random calls of every
    tool (good, ill-typed, unknown): a refused text call reads ``X失败：reason``, a refused JSON
    call has success=false and an error_code, and neither changes the state or the change log."""
    state = data.draw(windows(min_days=3, max_days=10, pending_per_day=1.0))
    situation = data.draw(
        st.sampled_from(["toolbox", "fresh", "closed", "capped", "gated", "frozen"])
    )
    caller: Toolbox | Session
    if situation == "toolbox":
        caller = Toolbox(state, enabled_tools=HIDDEN, max_time_limit_s=0.3)
    else:
        caller = _session_in(situation, state)
    for _ in range(data.draw(st.integers(1, 4))):
        name, args = data.draw(any_call(caller.state))
        before, logged = caller.state.to_json(), len(caller.changes)
        if isinstance(caller, Toolbox):
            result = caller.invoke_result(name, args)
        else:
            result = caller.invoke(name, args)
        if result.status == "error" or result.is_error:
            assert_refusal_form(result)
            assert caller.state.to_json() == before, (name, args, result.reply)
            assert len(caller.changes) == logged


# ---------------------------------------------------------------------------------- each kind
def test_the_heads_name_each_tools_verb():
    """Tests that every text tool has its own verb (no tool fails as 调用, the word for a name
    that is no tool), in the spec's words where the spec has them."""
    for name in TEXT_TOOLS:
        assert failure_head(name) != "调用失败", name
    assert [failure_head(n) for n in ("place", "move", "swap", "batch_move", "unplace")] == [
        "放置失败",
        "移动失败",
        "交换失败",
        "批量移动失败",
        "移除失败",
    ]
    assert failure_head("teleport") == "调用失败"


def _gated() -> Session:
    s = Session(load_window())
    s.toolbox.ctx.loop.gate_open = True
    s.toolbox.ctx.loop.negotiation = {"capacity_gap": 2, "reason_code": "insufficient_capacity"}
    return s


MOVE = {"task_id": 6, "new_day": 5, "new_slot_start": 3}
KINDS = [
    # (how the session is set up, the call, its code, words of the reason)
    ("argument", ("move", {"task_id": "六"}), "invalid_args", "移动失败：参数错误，参数 task_id"),
    ("unknown", ("teleport", {}), "unknown_tool", "调用失败：未知工具 teleport。可用工具："),
    (
        "mode",
        ("spread_even", {"category": "复习"}),
        "not_available",
        "均匀分散失败：工具 spread_even",
    ),
    ("frozen", ("move", MOVE), "frozen_day", "移动失败：第1-5天已冻结"),
    ("closed", ("move", MOVE), "request_closed", "移动失败：本次请求已收口"),
    ("capped", ("get_overview", {}), "round_cap", "查询失败：本次请求已用满 60 轮工具调用"),
    ("capped", ("teleport", {}), "round_cap", "调用失败：本次请求已用满 60 轮工具调用"),
    (
        "gated",
        ("place", {"task_id": 3, "day": 5, "slot_start": 1}),
        "negotiation_required",
        "放置失败：最近一次 analyze_health 判定当前窗口不可行",
    ),
    ("session_only", ("restore_best", {}), "refused", "恢复最佳状态失败：还没有完成任何一轮"),
    (
        "preview",
        ("move", {**MOVE, "new_day": 1, "new_slot_start": 1, "preview": True}),
        "refused",
        "移动失败：第1天第1-2节已被",
    ),
    ("confirm", ("commit", {}), "confirm_required", "提交失败："),
]


def _situated(kind: str) -> Toolbox | Session:
    if kind in ("argument", "confirm"):
        return Toolbox(load_window())
    if kind == "mode":
        return Session(load_window(), mode="local_adjust")
    if kind == "gated":
        return _gated()
    if kind == "frozen":
        s = Session(load_window())
        s.frozen_days = 5
        return s
    if kind in ("closed", "capped"):
        return _session_in(kind, load_window())
    return Session(load_window())


@pytest.mark.parametrize(("kind", "call", "code", "words"), KINDS)
def test_each_kind_of_refusal_has_the_form(kind, call, code, words):
    """Tests each kind of refusal (argument, unknown tool, mode, frozen days, closed request,
    round cap, infeasible gate, a handler's own, a preview, the confirm gate): the reply starts
    with its X失败：reason, carries its stable code and leaves the state as it was."""
    caller = _situated(kind)
    before = caller.state.to_json()
    name, args = call
    if isinstance(caller, Toolbox):
        result = caller.invoke_result(name, args)
    else:
        result = caller.invoke(name, args)
    assert result.status == "error" and result.error_code == code, result
    assert words in result.reply and HEAD.match(head_line(result.reply)), result.reply
    assert caller.state.to_json() == before


# ---------------------------------------------------------------------------------- surfaces
def _offered(mode: str = "first_full") -> str:
    return "、".join(Session(load_window(), mode=mode).tool_names())


def test_unknown_tool_has_one_wording_on_every_surface(tmp_path):
    """Tests that an unknown tool gets the same words from the Toolbox, a Session, an HTTP
    session call, the HTTP stateless route (its 404 error), the MCP server (not the SDK's
    "Unknown tool") and the CLI."""
    want = f"调用失败：未知工具 teleport。可用工具：{_offered()}。"
    session = Session(load_window())
    assert session.call("teleport", {}) == want
    assert (
        Toolbox(load_window())
        .call("teleport", {})
        .startswith("调用失败：未知工具 teleport。可用工具：")
    )

    client = TestClient(create_app({"tok": "alice"}))
    auth = {"Authorization": "Bearer tok"}
    sid = client.post("/v1/sessions", headers=auth, json={"state": window_dict()}).json()[
        "session_id"
    ]
    out = client.post(
        f"/v1/sessions/{sid}/calls", headers=auth, json={"tool": "teleport", "args": {}}
    )
    assert out.json()["reply"] == want and out.json()["error_code"] == "unknown_tool"
    stateless = client.post("/v1/tools/teleport/call", headers=auth, json={"state": window_dict()})
    assert stateless.status_code == 404
    assert stateless.json()["error"].startswith("调用失败：未知工具 teleport。可用工具：")

    async def go() -> Any:
        async with Client(build_server(Session(load_window()))) as c:
            return await c.call_tool("teleport", {})

    mcp_result = anyio.run(go)
    assert mcp_result.is_error and mcp_result.content[0].text == want

    from typer.testing import CliRunner

    from smartflow_engine.cli import app
    from tests.helpers.windows import DATA, EXAMPLE_WINDOW

    res = CliRunner().invoke(
        app, ["call", "teleport", "--state", str(DATA / f"{EXAMPLE_WINDOW}.json")]
    )
    assert res.exit_code == 1 and res.stdout.startswith("调用失败：未知工具 teleport。")


def test_mcp_answers_a_tool_of_another_mode_through_the_session():
    """Tests that a tool the MCP server does not publish in the session's mode is refused in the
    session's words (X失败：…不可用), not the SDK's."""
    session = Session(load_window(), mode="local_adjust")

    async def go() -> Any:
        async with Client(build_server(session)) as c:
            return await c.call_tool("spread_even", {"category": "复习"})

    result = anyio.run(go)
    assert result.is_error
    assert result.content[0].text.startswith(
        "均匀分散失败：工具 spread_even 在当前模式（local_adjust）下不可用"
    )


def test_mcp_request_refusals_have_the_form():
    """Tests that a bad _meta request on MCP is refused as X失败：… (invalid_request)."""
    session = Session(load_window())

    async def go() -> Any:
        async with Client(build_server(session)) as c:
            return await c.call_tool("get_overview", {}, meta={"smartflow/request": {"key": ""}})

    result = anyio.run(go)
    assert result.is_error and result.content[0].text.startswith(
        "查询失败：_meta.smartflow/request.key"
    )
