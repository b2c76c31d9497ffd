"""Tests of issue 44 items 1 and 2 with the official ``mcp`` client: a confirm-required call
over MCP completes over streamable HTTP (protocol 2026-07-28: the question travels as an
``input_required`` result and the answer comes back on a retry that another worker may serve),
accepting, declining and cancelling; and the user's accept approves exactly the change the
question showed, over HTTP and stdio."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from smartflow_engine.store import Store
from tests.helpers.deployments import worker_apps
from tests.helpers.live_server import live_server
from tests.helpers.store import USER, mcp_params, reload, stored, table_rows
from tests.helpers.windows import load_window

TOKENS = {"tok": str(USER)}
AUTH = {"Authorization": "Bearer tok"}
WINDOW = {"start": {"week": 7, "day_of_week": 1}, "end": {"week": 8, "day_of_week": 7}}
PLACE_A = {"task_id": 11, "day": 6, "slot_start": 1}
PLACE_B = {"task_id": 12, "day": 7, "slot_start": 1}


class _Alternating(httpx2.AsyncBaseTransport):
    """Sends each HTTP request to the next of the workers' ports in turn (a load balancer),
    recording which port got each request."""

    def __init__(self, ports: list[int]) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.ports = ports
        self.served: list[int] = []

    async def handle_async_request(self, request: Any) -> Any:
        port = self.ports[len(self.served) % len(self.ports)]
        self.served.append(port)
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Servers:
    def __init__(self, db: Store, urls: list[str]) -> None:
        self.db, self.urls = db, urls

    def session(self) -> str:
        made = httpx.post(
            f"{self.urls[0]}/v1/sessions",
            headers=AUTH,
            json={"window": WINDOW, "mode": "local_adjust"},
        )
        assert made.status_code == 201, made.text
        sid: str = made.json()["session_id"]
        return sid

    def run(self, sid: str, work: Any, *, mode: str = "auto", callback: Any = None) -> Any:
        ports = [int(u.rsplit(":", 1)[1]) for u in self.urls]
        transport = _Alternating(ports)

        async def main() -> Any:
            async with httpx2.AsyncClient(headers=AUTH, timeout=60, transport=transport) as http:
                connect = streamable_http_client(f"{self.urls[0]}/mcp/{sid}", http_client=http)
                async with Client(
                    connect, mode=mode, elicitation_callback=callback, read_timeout_seconds=60
                ) as client:
                    return await work(client)

        return asyncio.run(main()), transport.served


@pytest.fixture(params=["memory", "redis"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Servers]:
    """The sample window in an SQLite database behind one worker (memory store) or two
    workers sharing Redis, each a real uvicorn server on a loopback port."""
    db = Store.from_url(f"sqlite:///{tmp_path / 'mcp.db'}")
    db.seed_from_state(USER, load_window("sample_window"))
    prefix = f"{request.getfixturevalue('redis_prefix')}:{uuid.uuid4().hex[:8]}"
    apps = worker_apps(request.param, TOKENS, db, prefix)
    with ExitStack() as stack:
        urls = [stack.enter_context(live_server(app)) for app in apps]
        yield Servers(db, urls)
    db.dispose()


def _user(action: str, asked: list[str]) -> Any:
    """The client's elicitation callback: the user reads the question and answers ``action``."""

    async def callback(_context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    return callback


ANSWERS = [
    # (the user's answer, isError, what the reply starts with)
    ("accept", False, "已提交 1 项修改"),
    ("decline", True, "提交失败：用户拒绝了确认"),
    ("cancel", True, "提交失败：用户未确认（已取消）"),
]


@pytest.mark.parametrize(("action", "is_error", "reply"), ANSWERS)
def test_a_commit_over_mcp_http_asks_the_user_and_completes(servers, action, is_error, reply):
    """Tests issue 44 item 2: over /mcp/{session_id} with the official client (protocol
    2026-07-28) commit asks the user with the change summary; accept writes the change (the
    tables equal the session's state), decline and cancel write nothing; the call's rounds were
    served by every worker in turn (before: the accept failed "Invalid or expired requestState"
    and nothing was written)."""
    sid = servers.session()
    asked: list[str] = []
    before = table_rows(servers.db)

    async def work(client: Client) -> Any:
        placed = await client.call_tool("place", PLACE_A)
        assert not placed.is_error
        return await client.call_tool("commit", {})

    result, served = servers.run(sid, work, callback=_user(action, asked))
    assert len(asked) == 1 and "提交 1 项修改" in asked[0] and "预览编号" in asked[0], asked
    assert "确认令牌" not in asked[0]
    assert result.is_error is is_error and result.content[0].text.startswith(reply), result
    assert len(set(served)) == len(servers.urls)
    state_json = httpx.get(f"{servers.urls[0]}/v1/sessions/{sid}/state", headers=AUTH).json()
    from smartflow_engine import ScheduleState

    state = ScheduleState.from_json(state_json["state"])
    if is_error:
        assert table_rows(servers.db) == before
    else:
        assert stored(reload(servers.db, state)) == stored(state)


def test_a_write_while_the_user_reads_is_asked_again_over_http(servers):
    """Tests issue 44 item 1 over MCP HTTP (2026-07-28): while the user reads the question
    about 1 change, another place comes in; the answer does not approve it: the user is asked
    again with the 2 changes there now, and their accept of that question writes the 2 (before:
    with the fixed seal, the accept would have written both after a question about 1)."""
    sid = servers.session()
    asked: list[str] = []
    holder: dict[str, Any] = {}

    async def user(_context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        if len(asked) == 1:  # the model writes again while the user reads
            await holder["client"].call_tool("place", PLACE_B)
        return types.ElicitResult(action="accept", content={})

    async def work(client: Client) -> Any:
        holder["client"] = client
        await client.call_tool("place", PLACE_A)
        return await client.call_tool("commit", {})

    result, _ = servers.run(sid, work, callback=user)
    assert len(asked) == 2 and "提交 1 项修改" in asked[0] and "提交 2 项修改" in asked[1], asked
    assert not result.is_error and result.content[0].text.startswith("已提交 2 项修改"), result


def test_the_legacy_protocol_over_http_says_how_to_confirm(servers):
    """Tests issue 44 item 2's legacy side: a client speaking 2025-11-25 over the stateless HTTP
    endpoint, with an elicitation callback, is told the connection cannot carry the question
    and to connect with 2026-07-28 or use stdio (before: "the client does not support
    elicitation"); nothing is written."""
    sid = servers.session()
    before = table_rows(servers.db)

    async def work(client: Client) -> Any:
        await client.call_tool("place", PLACE_A)
        return await client.call_tool("commit", {})

    result, _ = servers.run(sid, work, mode="legacy", callback=_user("accept", []))
    text = result.content[0].text
    assert result.is_error and "2026-07-28" in text and "stdio" in text, text
    assert "不支持确认请求" not in text
    assert table_rows(servers.db) == before


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_write_while_the_user_reads_is_not_approved_over_stdio(tmp_path: Path, mode: str):
    """Tests issue 44 item 1 over a real stdio server on the database: the user is asked about
    1 change and, while they read, the model places another task. With the legacy protocol
    (the question sent mid-call) the accept is refused preview_changed, nothing written (before:
    "已提交 2 项修改"); with 2026-07-28 the user is asked again about the 2 changes and their
    accept of that writes them."""
    db = Store.from_url(f"sqlite:///{tmp_path / 'stdio.db'}")
    db.seed_from_state(USER, load_window("sample_window"))
    before = table_rows(db)
    asked: list[str] = []
    holder: dict[str, Any] = {}

    async def user(_context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        if len(asked) == 1:
            placed = await holder["client"].call_tool("place", PLACE_B)
            assert not placed.is_error
        return types.ElicitResult(action="accept", content={})

    async def go() -> Any:
        async with Client(
            mcp_params(db), mode=mode, elicitation_callback=user, read_timeout_seconds=120
        ) as client:
            holder["client"] = client
            await client.call_tool("place", PLACE_A)
            return await client.call_tool("commit", {})

    result = anyio.run(go)
    text = result.content[0].text
    if mode == "legacy":
        assert len(asked) == 1 and "提交 1 项修改" in asked[0]
        assert result.is_error and text.startswith("确认失败：") and "[12]写物理实验报告" in text
        assert table_rows(db) == before
    else:
        assert len(asked) == 2 and "提交 2 项修改" in asked[1], asked
        assert not result.is_error and text.startswith("已提交 2 项修改"), text
    db.dispose()
