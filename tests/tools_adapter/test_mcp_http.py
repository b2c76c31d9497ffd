"""Tests of MCP over streamable HTTP (/mcp/{session_id}) with the official ``mcp`` client:
the same tools and replies as the session, the HTTP API's bearer auth and per-user sessions,
and calls of the API and of MCP seeing each other's changes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.live_server import live_server
from tests.helpers.windows import load_window, window_dict

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}
ALICE = {"Authorization": "Bearer tok-alice"}
BOB = {"Authorization": "Bearer tok-bob"}
MOVE = {"task_id": 6, "new_day": 5, "new_slot_start": 3}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with live_server(create_app(TOKENS, max_time_limit_s=2.0)) as url:
        yield url


def _session(base: str, headers: dict[str, str] = ALICE, mode: str = "local_adjust") -> str:
    made = httpx.post(
        f"{base}/v1/sessions", headers=headers, json={"state": window_dict(), "mode": mode}
    )
    assert made.status_code == 201, made.text
    sid: str = made.json()["session_id"]
    return sid


def _run(base: str, sid: str, work: Any, headers: dict[str, str] = ALICE) -> Any:
    async def main() -> Any:
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            transport = streamable_http_client(f"{base}/mcp/{sid}", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as client:
                return await work(client)

    return asyncio.run(main())


def test_the_official_client_calls_a_session_over_http(server):
    """Tests that the mcp client over streamable HTTP lists the session's tools in its mode and
    gets the replies a direct Session gives, a refusal as isError with the same text."""
    sid = _session(server)
    direct = Session(load_window(), mode="local_adjust")

    async def work(client: Client) -> Any:
        tools = await client.list_tools()
        overview = await client.call_tool("get_overview", {})
        moved = await client.call_tool("move", MOVE)
        refused = await client.call_tool(
            "move", {"task_id": 999, "new_day": 1, "new_slot_start": 1}
        )
        return tools, overview, moved, refused

    tools, overview, moved, refused = _run(server, sid, work)
    names = {t.name for t in tools.tools}
    assert set(direct.tool_names()) <= names
    assert overview.content[0].text == direct.call("get_overview", {})
    assert not overview.is_error
    assert moved.content[0].text == direct.call("move", MOVE) and not moved.is_error
    expected = direct.invoke("move", {"task_id": 999, "new_day": 1, "new_slot_start": 1})
    assert refused.is_error and refused.content[0].text == expected.reply


def test_mcp_and_the_api_share_the_session(server):
    """Tests that a write over MCP shows in the API's state and change log, and a write over the
    API shows to the next MCP call."""
    sid = _session(server)

    async def move(client: Client) -> Any:
        return await client.call_tool("move", MOVE)

    _run(server, sid, move)
    changes = httpx.get(f"{server}/v1/sessions/{sid}/changes", headers=ALICE).json()["changes"]
    assert [c["task_id"] for c in changes] == [6]
    httpx.post(
        f"{server}/v1/sessions/{sid}/calls",
        headers=ALICE,
        json={"tool": "move", "args": {"task_id": 6, "new_day": 4, "new_slot_start": 7}},
    )

    async def info(client: Client) -> Any:
        return await client.call_tool("get_task_info", {"task_id": 6})

    direct = Session(load_window(), mode="local_adjust")
    direct.call("move", MOVE)
    direct.call("move", {"task_id": 6, "new_day": 4, "new_slot_start": 7})
    assert _run(server, sid, info).content[0].text == direct.call("get_task_info", {"task_id": 6})


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),  # no token
        ({"Authorization": "Bearer nope"}, 401),  # unknown token
        ({"Authorization": "Basic dG9rLWFsaWNl"}, 401),  # not a bearer token
        (BOB, 404),  # another user's session: as if it did not exist
    ],
)
def test_mcp_over_http_needs_the_owners_bearer_token(server, headers, status):
    """Tests that /mcp/{session_id} refuses a missing, unknown or foreign token with the API's
    typed errors before the MCP layer sees the request."""
    sid = _session(server)
    got = httpx.post(f"{server}/mcp/{sid}", headers={**headers, **ACCEPT}, json=INIT)
    assert got.status_code == status
    assert got.json()["error_code"] == ("unauthorized" if status == 401 else "session_not_found")


def test_an_unknown_session_is_404(server):
    """Tests that an MCP URL for no session is a typed 404."""
    got = httpx.post(f"{server}/mcp/nosuchsession", headers={**ALICE, **ACCEPT}, json=INIT)
    assert got.status_code == 404 and got.json()["error_code"] == "session_not_found"


def test_mcp_calls_count_in_the_metrics(server):
    """Tests that a tool call over MCP is counted in /metrics under its tool's name."""
    sid = _session(server)

    def count() -> float:
        text = httpx.get(f"{server}/metrics").text
        for line in text.splitlines():
            if line.startswith('smartflow_tool_call_seconds_count{tool="find_free"}'):
                return float(line.split()[-1])
        return 0.0

    before = count()

    async def work(client: Client) -> Any:
        return await client.call_tool("find_free", {"duration": 2})

    assert not _run(server, sid, work).is_error
    assert count() == before + 1
    assert "tok-alice" not in httpx.get(f"{server}/metrics").text


def test_mcp_requests_are_labelled_with_their_route_in_the_metrics(server):
    """Tests that requests to /mcp/{session_id} are counted under that route template in
    /metrics, not as route="unmatched" (issue 45 item 8), and the session id never appears."""
    sid = _session(server)

    async def work(client: Client) -> Any:
        return await client.call_tool("find_free", {"duration": 2})

    assert not _run(server, sid, work).is_error
    text = httpx.get(f"{server}/metrics").text
    mine = [ln for ln in text.splitlines() if ln.startswith("smartflow_http_requests_total{")]
    assert any('route="/mcp/{session_id}"' in ln and 'method="POST"' in ln for ln in mine)
    assert not any('route="unmatched"' in ln and 'http_status="200"' in ln for ln in mine)
    assert sid not in text
