"""Tests of the MCP server: the SDK's in-memory client, and a real stdio subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters

from smartflow_engine import Toolbox
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.core.schemas import tool_schemas
from smartflow_engine.tools_adapter.core.spec import Mode
from smartflow_engine.tools_adapter.mcp.server import build_server
from smartflow_engine.tools_adapter.sessions.prompts import mcp_rules, prompt_rules
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.adapters import note_tool, specs_with
from tests.helpers.windows import DATA, EXAMPLE_WINDOW, load_window

MOVE = {"task_id": 6, "new_day": 5, "new_slot_start": 3}


def _text(result: Any) -> str:
    text: str = result.content[0].text
    return text


def _run(session: Session, steps, *, client_kwargs=None, **server_kwargs) -> Any:
    """Run ``steps(client)`` against an in-memory client of the session's server."""

    async def go() -> Any:
        async with Client(build_server(session, **server_kwargs), **(client_kwargs or {})) as c:
            return await steps(c)

    return anyio.run(go)


def _answering(action: str, asked: list[str]) -> Any:
    """An elicitation callback (the user's side of the client) that records the question and
    answers with ``action``."""

    async def callback(_context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    return callback


@pytest.mark.parametrize("mode", list(Mode))
def test_lists_the_modes_tools_with_registry_schemas(mode):
    """Tests that the server lists exactly the session's tools, with the registry's schemas and
    the mode's rules as instructions, whose confirm rule says the server asks the user (issue 45
    item 7: they said a confirm-required call returns a token)."""
    session = Session(load_window(), mode=mode)

    async def steps(client: Client) -> Any:
        return client.instructions, (await client.list_tools()).tools

    instructions, tools = _run(session, steps)
    assert instructions == mcp_rules(prompt_rules(mode)) != prompt_rules(mode)
    assert "确认令牌" not in instructions and "请用户确认变更摘要" in instructions
    expected = {e["name"]: e for e in tool_schemas("mcp", mode)}
    assert [t.name for t in tools] == registry.tool_names(mode)
    for tool in tools:
        assert tool.input_schema == expected[tool.name]["inputSchema"]
        assert tool.annotations.read_only_hint is (not registry.is_write_tool(tool.name))


def test_calls_reach_the_session_and_match_the_toolbox():
    """Tests that read and write calls over MCP reply as the Toolbox does and change the
    session's state."""
    session = Session(load_window(), self_check=True)
    direct = Toolbox(load_window(), loop=True)

    async def steps(client: Client) -> Any:
        moved = await client.call_tool("move", MOVE)
        looked = await client.call_tool("query_range", {"day": 5})
        state = await client.read_resource("smartflow://state")
        changes = await client.read_resource("smartflow://changes")
        return moved, looked, state.contents[0].text, changes.contents[0].text

    moved, looked, state_text, changes_text = _run(session, steps)
    assert not moved.is_error and _text(moved) == direct.call("move", MOVE)
    assert _text(looked) == direct.call("query_range", {"day": 5})
    assert state_text == session.state.to_json() == direct.state.to_json()
    assert json.loads(changes_text) == [c.to_dict() for c in session.changes]


BAD_ARGS = [
    ("move", {"task_id": "six", "new_day": 5, "new_slot_start": 3}),  # ill-typed id
    ("move", {"task_id": 6}),  # missing arguments
    ("query_range", {"day": 5, "verbose": True}),  # unknown argument
    ("batch_move", {"moves": []}),  # empty batch
    ("get_task_info", {"task_id": 0}),  # id out of range
]


@pytest.mark.parametrize(("name", "args"), BAD_ARGS)
def test_bad_arguments_are_tool_errors_with_the_toolbox_reply(name, args):
    """Tests that bad arguments come back as isError results the model can read and correct
    (the Toolbox's own reply), never as protocol errors, and change nothing."""
    session = Session(load_window())
    before = session.state.to_json()

    async def steps(client: Client) -> Any:
        return await client.call_tool(name, args)

    result = _run(session, steps)
    assert result.is_error
    assert _text(result) == Toolbox(load_window()).call(name, args)
    assert session.state.to_json() == before


def test_json_tools_return_structured_content():
    """Tests that a JSON tool's reply is also returned as structured content, validated by the
    client against the published output schema."""
    session = Session(None, specs=[note_tool([], confirm=False, output="json")])

    async def steps(client: Client) -> Any:
        tools = (await client.list_tools()).tools
        return tools, await client.call_tool("record_note", {"text": "结构化"})

    tools, result = _run(session, steps)
    assert tools[0].output_schema is not None
    assert not result.is_error
    assert result.structured_content == json.loads(_text(result))
    assert result.structured_content["recorded"] == "结构化"


def test_no_tool_confirms(tmp_path: Path):
    """Tests issue 24 item 4: with confirm-required tools offered (upsert_task_class, commit,
    a test write), the server publishes no tool that confirms or rejects: the model cannot
    approve its own write (today: confirm and reject are tools)."""
    session = Session(None, specs=specs_with(note_tool([])), enabled_tools=["commit"])

    async def steps(client: Client) -> Any:
        return {t.name: t.description for t in (await client.list_tools()).tools}

    described = _run(session, steps)
    assert {"upsert_task_class", "record_note"} <= set(described)
    assert not {"confirm", "reject"} & set(described)
    # the model is told the call asks the user, not that it returns a token to confirm with
    assert "会请用户确认" in described["upsert_task_class"]
    assert "令牌" not in described["upsert_task_class"]


GATE_CASES = [
    # (protocol, the user's answer, isError, error code in the reply)
    ("legacy", "accept", False, None),  # elicitation/create sent mid-call (<= 2025-11-25)
    ("legacy", "decline", True, "user_declined"),
    ("legacy", "cancel", True, "user_cancelled"),
    ("auto", "accept", False, None),  # input_required answered on the retry (2026-07-28)
    ("auto", "decline", True, "user_declined"),
    ("auto", "cancel", True, "user_cancelled"),
]


@pytest.mark.parametrize(("protocol", "action", "is_error", "code"), GATE_CASES)
def test_a_confirm_required_call_asks_the_user(protocol, action, is_error, code):
    """Tests issue 24 item 4 with the official client answering the server's elicitation: the
    question carries the call's summary; the write happens only on accept; decline and cancel
    write nothing and are isError results saying so; nothing stays pending."""
    journal: list[str] = []
    asked: list[str] = []
    session = Session(None, specs=specs_with(note_tool(journal, output="json")))
    kwargs = {"mode": protocol, "elicitation_callback": _answering(action, asked)}

    async def steps(client: Client) -> Any:
        return await client.call_tool("record_note", {"text": "确认我"})

    result = _run(session, steps, client_kwargs=kwargs)
    assert len(asked) == 1 and "record_note" in asked[0] and "确认我" in asked[0], asked
    assert "确认令牌" not in asked[0]
    assert result.is_error is is_error
    reply = json.loads(_text(result))
    if code is None:
        assert journal == ["确认我"] and reply["recorded"] == "确认我"
    else:
        assert journal == [] and reply["error_code"] == code and "没有任何修改" in reply["error"]
    assert session.pending() == []


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
def test_a_client_without_elicitation_gets_a_refusal_saying_how_to_confirm(protocol):
    """Tests issue 24 item 4: a client that declared no elicitation support gets an isError
    refusal naming the ways to confirm (an elicitation client, or the operator's
    --auto-confirm), and nothing is written or left pending."""
    journal: list[str] = []
    session = Session(None, specs=specs_with(note_tool(journal)))

    async def steps(client: Client) -> Any:
        return await client.call_tool("record_note", {"text": "确认我"})

    result = _run(session, steps, client_kwargs={"mode": protocol})
    assert result.is_error and journal == [] and session.pending() == []
    assert "elicitation" in _text(result) and "--auto-confirm" in _text(result)


def test_auto_confirm_lets_the_hosts_approval_stand_for_the_users():
    """Tests issue 24 item 4: a server the operator started with auto_confirm runs a
    confirm-required call when it is made (the host approved the tool call), without asking."""
    journal: list[str] = []
    session = Session(None, specs=specs_with(note_tool(journal)))

    async def steps(client: Client) -> Any:
        return await client.call_tool("record_note", {"text": "直接写"})

    result = _run(session, steps, auto_confirm=True)
    assert not result.is_error and _text(result) == "已记录：直接写" and journal == ["直接写"]


def test_refusals_before_the_gate_are_not_asked():
    """Tests that a confirm-required call refused on its own (bad arguments, no database) is
    answered at once, without asking the user anything."""
    asked: list[str] = []
    session = Session(None)
    kwargs = {"elicitation_callback": _answering("accept", asked)}

    async def steps(client: Client) -> Any:
        bad = await client.call_tool("upsert_task_class", {"task_class": {"name": 5}})
        no_db = await client.call_tool("upsert_task_class", {"task_class": {"name": "复习"}})
        return bad, no_db

    bad, no_db = _run(session, steps, client_kwargs=kwargs)
    assert bad.is_error and json.loads(_text(bad))["error_code"] == "invalid_args"
    assert no_db.is_error and json.loads(_text(no_db))["error_code"] == "no_database"
    assert asked == [] and session.pending() == []


def test_save_path_gets_the_state_after_each_change(tmp_path: Path):
    """Tests that with save_path the state file is rewritten after a write, not after a read."""
    out = tmp_path / "state.json"
    session = Session(load_window())

    async def steps(client: Client) -> Any:
        await client.call_tool("get_overview", {})
        existed_after_read = out.exists()
        await client.call_tool("move", MOVE)
        return existed_after_read

    assert _run(session, steps, save_path=out) is False
    assert out.read_text(encoding="utf-8") == session.state.to_json()


def test_stdio_subprocess_serves_the_state_file(tmp_path: Path):
    """Tests a real `python -m smartflow_engine.tools_adapter.mcp.server --state FILE` process
    driven by the SDK's stdio client: tools listed for the mode, calls answered, state saved."""
    out = tmp_path / "saved.json"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "smartflow_engine.tools_adapter.mcp.server",
            "--state",
            str(DATA / f"{EXAMPLE_WINDOW}.json"),
            "--mode",
            "local_adjust",
            "--save",
            str(out),
        ],
    )

    async def go() -> Any:
        async with Client(params, read_timeout_seconds=60) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            moved = await client.call_tool("move", MOVE)
            bad = await client.call_tool("move", {"task_id": 6})
            return client.instructions, names, moved, bad

    instructions, names, moved, bad = anyio.run(go)
    direct = Toolbox(load_window(), loop=True)
    assert instructions == mcp_rules(prompt_rules(Mode.LOCAL_ADJUST))
    offered = registry.tool_names(Mode.LOCAL_ADJUST)
    assert names == offered
    assert _text(moved) == direct.call("move", MOVE)
    assert bad.is_error and _text(bad) == "移动失败：参数错误，缺少必填参数 new_day。"
    assert out.read_text(encoding="utf-8") == direct.state.to_json()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--state", "/no/such/file.json"], "cannot read state file"),  # a missing file
        (["--state", str(DATA / "spec_example.json"), "--enable", "teleport"], "unknown tool"),
    ],
)
def test_stdio_entry_point_reports_bad_input_in_one_line(argv, message, capsys):
    """Tests that the module's main() exits with code 2 and one line on stderr for bad input."""
    from smartflow_engine.tools_adapter.mcp.server import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _server_params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "smartflow_engine.tools_adapter.mcp.server",
            "--state",
            str(DATA / f"{EXAMPLE_WINDOW}.json"),
            "--mode",
            "local_adjust",
            *extra,
        ],
    )


def test_stdio_refusals_are_errors_and_optional_integers_are_numbers():
    """Tests through the official MCP client over stdio: a conflicting place is isError true with
    the spec's words; a refused move of a locked course too; an optional integer argument
    (find_free.day) is published with a top-level integer type and, sent as a JSON number, works."""

    async def go() -> Any:
        async with Client(_server_params(), read_timeout_seconds=60) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            conflict = await client.call_tool("place", {"task_id": 3, "day": 1, "slot_start": 1})
            locked = await client.call_tool(
                "move", {"task_id": 1, "new_day": 9, "new_slot_start": 1}
            )
            day = tools["find_free"].input_schema["properties"]["day"]
            # what a client converting by the top-level `type` sends: a JSON number
            sent = (
                {"duration": 2, "day": 7}
                if day.get("type") == "integer"
                else {"duration": 2, "day": "7"}
            )
            found = await client.call_tool("find_free", sent)
            placed = await client.call_tool("place", {"task_id": 3, "day": 5, "slot_start": 1})
            return day, conflict, locked, found, placed

    day, conflict, locked, found, placed = anyio.run(go)
    direct = Toolbox(load_window())
    assert conflict.is_error is True
    assert _text(conflict) == direct.call("place", {"task_id": 3, "day": 1, "slot_start": 1})
    assert locked.is_error is True and "不可移动" in _text(locked)
    assert day["type"] == "integer" and "anyOf" not in day
    assert found.is_error is False and _text(found).startswith("第7天满足2个连续空闲时段的位置")
    assert placed.is_error is False and _text(placed).startswith("已将 [3]复习线代 放到第5天")


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        # truncated JSON that carries an id: parse error with that id
        (
            '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_ov',
            -32700,
            7,
        ),
        # a lone surrogate escape (the SDK's parser rejects it as invalid JSON)
        (
            '{"jsonrpc": "2.0", "id": "a-1", "method": "tools/call", "params": {"name": '
            '"get_overview", "arguments": {"x": "\\ud800"}}}',
            -32700,
            "a-1",
        ),
        # valid JSON that is not a JSON-RPC message: invalid request with that id
        ('{"jsonrpc": "2.0", "id": 8, "method": 5}', -32600, 8),
        ('{"jsonrpc": "1.0", "id": 9, "method": "ping"}', -32600, 9),
        # issue 44 item 11: an id that is no id gets the error with id null (before: nothing)
        ('{"jsonrpc": "2.0", "id": [1], "method": "ping"}', -32600, None),
        ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),
        ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),
        ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None),
    ],
)
def test_stdio_malformed_line_with_an_id_gets_an_error(line, code, request_id):
    """Tests that the stdio server answers a malformed JSON-RPC line carrying an id with a
    JSON-RPC error for that id (the SDK alone drops it and the client hangs), and keeps serving:
    a valid request after it is answered too."""
    import json as _json
    import queue
    import subprocess
    import threading

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    lines = [
        _json.dumps(init),
        _json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        line,
        _json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]
    params = _server_params()
    proc = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [replies.put(x) for x in proc.stdout], daemon=True).start()
    by_id: dict[Any, Any] = {}
    try:
        # stdin stays open until both answers arrived (EOF would end the session first)
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        while request_id not in by_id or 2 not in by_id:
            reply = _json.loads(replies.get(timeout=120))
            by_id[reply.get("id")] = reply
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert by_id[request_id]["error"]["code"] == code, by_id
    assert "tools" in by_id[2]["result"]


def test_parse_error_reply_needs_an_id():
    """Tests that malformed lines without a recoverable id (notifications, garbage) get no reply,
    and valid messages are passed through untouched."""
    from smartflow_engine.tools_adapter.mcp.server import parse_error_reply

    assert parse_error_reply('{"jsonrpc": "2.0", "method": 5}') is None  # a notification
    assert parse_error_reply("garbage\n") is None
    assert parse_error_reply("") is None
    assert parse_error_reply('{"jsonrpc": "2.0", "id": true, "method": 5}').id is None
    assert parse_error_reply('{"jsonrpc": "2.0", "id": 3, "method": "ping"}') is None


def test_an_unknown_prompt_is_invalid_params():
    """Tests issue 44 item 11: prompts/get of an unknown prompt is a JSON-RPC invalid-params
    error (-32602) naming it (before: error code 0)."""
    from mcp.shared.exceptions import MCPError

    async def steps(client: Client) -> Any:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("no_such_prompt")
        return raised.value

    error = _run(Session(load_window()), steps)
    assert error.error.code == types.INVALID_PARAMS and "no_such_prompt" in error.error.message
