"""Overhead of each adapter over a direct ``Toolbox.call``, measured side by side.

For the same calls on the same seeded windows: ``Toolbox.call`` (the baseline), ``Session.call``
(validation + lock + confirm gate), the HTTP API in process (ASGI, no socket), the HTTP API over a
real loopback socket (uvicorn + a keep-alive httpx client), MCP through the SDK's in-memory client,
and MCP over stdio to a ``python -m smartflow_engine.tools_adapter.mcp.server`` subprocess.
Goal: under 2 ms added per HTTP tool call on loopback. Then the services section
(:mod:`.bench_services`): session load/save in Redis vs memory, requests/s with 1 vs 2 server
workers, and ``/health`` latency while proposals run.
"""

from __future__ import annotations

import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn
from fastapi.testclient import TestClient
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer
from rich.console import Console
from rich.progress import Progress

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.mcp.server import build_server
from smartflow_engine.tools_adapter.sessions.session import Session

SIZES = (13, 30, 120)
GOAL_HTTP_MS = 2.0
TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ADAPTERS = ("toolbox", "session", "http_asgi", "http_loopback", "mcp_memory", "mcp_stdio")
FLOORS = {"http_loopback": "http_floor", "mcp_memory": "mcp_floor"}
LABELS = {
    "toolbox": "`Toolbox.call` (baseline)",
    "session": "`Session.call`",
    "http_asgi": "HTTP, in process (ASGI)",
    "http_loopback": "HTTP, loopback socket",
    "mcp_memory": "MCP, in-memory client",
    "mcp_stdio": "MCP, stdio subprocess",
    "http_floor": "peer: bare FastAPI echo route, loopback",
    "mcp_floor": "peer: bare `MCPServer` echo tool, in-memory",
}

Call = tuple[str, dict[str, Any]]


def _calls(state: ScheduleState) -> list[tuple[str, list[Call]]]:
    """Per label, a cycle of calls that leaves the state as it found it."""
    guests = state.guests_by_host()
    movable = next(
        t
        for t in state.placed_tasks()
        if not state.is_locked(t)
        and len(t.slots) == 1
        and t.embed_host is None
        and t.state_id not in guests
    )
    home = movable.slots[0]
    day, start, _ = state.grid.free_runs(min_len=home.length)[-1]
    tid = movable.state_id
    return [
        ("get_overview", [("get_overview", {})]),
        ("query_range (day)", [("query_range", {"day": home.day})]),
        ("find_free", [("find_free", {"duration": 2})]),
        ("get_task_info", [("get_task_info", {"task_id": tid})]),
        (
            "move there and back",
            [
                ("move", {"task_id": tid, "new_day": day, "new_slot_start": start}),
                ("move", {"task_id": tid, "new_day": home.day, "new_slot_start": home.slot_start}),
            ],
        ),
    ]


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


async def _amedian_ms(fn: Callable[[], Any], repeats: int) -> float:
    await fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


# ---------------------------------------------------------------------------------- adapters
class _Loopback:
    """The HTTP API served by uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self) -> None:
        # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on connections accepted from a
        # socket that says it is TCP; without it every response waits ~40 ms for a delayed ACK.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.bind(("127.0.0.1", 0))
        port = self.sock.getsockname()[1]
        app = create_app({TOKEN: "bench"}, max_sessions_per_user=1000)
        app.post("/bench/echo")(_echo)  # the framework floor, served by the same process
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=AUTH)

    def close(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def _echo(body: dict[str, Any]) -> dict[str, Any]:
    return {"tool": body.get("tool"), "reply": json.dumps(body.get("args"))}


def _http_floor(client: httpx.Client, calls: list[Call]) -> Callable[[], None]:
    def cycle() -> None:
        for name, args in calls:
            response = client.post("/bench/echo", json={"tool": name, "args": args})
            assert response.status_code == 200

    return cycle


def _mcp_floor(cycles: list[tuple[str, list[Call]]], repeats: int) -> dict[str, float]:
    server: MCPServer = MCPServer("floor", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        return text

    async def go() -> dict[str, float]:
        out: dict[str, float] = {}
        async with Client(server) as client:
            for label, calls in cycles:

                async def cycle(calls: list[Call] = calls) -> None:
                    for _name, args in calls:
                        await client.call_tool("echo", {"text": json.dumps(args)})

                out[label] = await _amedian_ms(cycle, repeats) / len(calls)
        return out

    return anyio.run(go)


def _http_cycle(client: Any, state: ScheduleState, calls: list[Call]) -> Callable[[], None]:
    created = client.post("/v1/sessions", headers=AUTH, json={"state": state.to_dict()}).json()
    url = f"/v1/sessions/{created['session_id']}/calls"

    def cycle() -> None:
        for name, args in calls:
            response = client.post(url, headers=AUTH, json={"tool": name, "args": args})
            assert response.status_code == 200 and response.json()["status"] == "ok"

    return cycle


def _mcp_memory(
    state: ScheduleState, cycles: list[tuple[str, list[Call]]], repeats: int
) -> dict[str, float]:
    session = Session(state.copy_state(), self_check=False)

    async def go() -> dict[str, float]:
        out: dict[str, float] = {}
        async with Client(build_server(session)) as client:
            for label, calls in cycles:

                async def cycle(calls: list[Call] = calls) -> None:
                    for name, args in calls:
                        result = await client.call_tool(name, args)
                        assert not result.is_error

                out[label] = await _amedian_ms(cycle, repeats) / len(calls)
        return out

    return anyio.run(go)


def _mcp_stdio(
    state: ScheduleState, cycles: list[tuple[str, list[Call]]], repeats: int
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        path.write_text(state.to_json(), encoding="utf-8")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "smartflow_engine.tools_adapter.mcp.server", "--state", str(path)],
        )

        async def go() -> dict[str, float]:
            out: dict[str, float] = {}
            async with Client(params, read_timeout_seconds=60) as client:
                for label, calls in cycles:

                    async def cycle(calls: list[Call] = calls) -> None:
                        for name, args in calls:
                            result = await client.call_tool(name, args)
                            assert not result.is_error

                    out[label] = await _amedian_ms(cycle, repeats) / len(calls)
            return out

        return anyio.run(go)


def _measure_window(
    state: ScheduleState, repeats: int, loopback: _Loopback, asgi: TestClient
) -> dict[tuple[str, str], float]:
    """Median ms per call, for every (adapter, label), on one window."""
    cycles = _calls(state)
    before = state.to_json()
    out: dict[tuple[str, str], float] = {}
    toolbox = Toolbox(state.copy_state(), self_check=False)
    session = Session(state.copy_state(), self_check=False)
    for label, calls in cycles:

        def direct(calls: list[Call] = calls) -> None:
            for name, args in calls:
                toolbox.call(name, args)

        def through_session(calls: list[Call] = calls) -> None:
            for name, args in calls:
                session.call(name, args)

        per = len(calls)
        out[("toolbox", label)] = _median_ms(direct, repeats) / per
        out[("session", label)] = _median_ms(through_session, repeats) / per
        out[("http_asgi", label)] = _median_ms(_http_cycle(asgi, state, calls), repeats) / per
        out[("http_loopback", label)] = (
            _median_ms(_http_cycle(loopback.client, state, calls), repeats) / per
        )
        out[("http_floor", label)] = _median_ms(_http_floor(loopback.client, calls), repeats) / per
    for label, value in _mcp_memory(state, cycles, repeats).items():
        out[("mcp_memory", label)] = value
    for label, value in _mcp_floor(cycles, repeats).items():
        out[("mcp_floor", label)] = value
    for label, value in _mcp_stdio(state, cycles, max(10, repeats // 4)).items():
        out[("mcp_stdio", label)] = value
    assert toolbox.state is not None and toolbox.state.to_json() == before, (
        "a cycle changed the window"
    )
    return out


# ---------------------------------------------------------------------------------- report
def run(quick: bool = False, services: bool = True) -> str:
    sizes = (13, 30) if quick else SIZES
    seeds = range(1 if quick else 3)
    repeats = 20 if quick else 150
    samples: dict[tuple[str, str, int], list[float]] = {}
    reply_bytes: dict[int, int] = {}
    loopback = _Loopback()
    asgi = TestClient(create_app({TOKEN: "bench"}, max_sessions_per_user=1000))
    asgi.__enter__()  # one event-loop portal for all requests, as a long-lived client has
    try:
        with Progress(transient=True, console=Console(stderr=True)) as progress:
            job = progress.add_task("adapter overhead", total=len(sizes) * len(seeds))
            for days in sizes:
                for seed in seeds:
                    state = synthetic_window(seed, days, variant="plain")
                    reply_bytes[days] = len(Toolbox(state).call("get_overview", {}).encode())
                    for (adapter, label), value in _measure_window(
                        state, repeats, loopback, asgi
                    ).items():
                        samples.setdefault((adapter, label, days), []).append(value)
                    progress.advance(job)
    finally:
        asgi.__exit__(None, None, None)
        loopback.close()

    labels = list(dict.fromkeys(label for _, label, _ in samples))

    def med(adapter: str, label: str, days: int) -> float:
        return statistics.median(samples[(adapter, label, days)])

    def mean_over(adapter: str, days: int) -> float:
        return statistics.mean(med(adapter, label, days) for label in labels)

    lines = [
        "## Adapters (overhead over `Toolbox.call`)",
        "",
        f"Median ms per tool call over {len(seeds)} seeded plain window(s) per size x {repeats} "
        "repeats (stdio: a quarter of the repeats), for the calls get_overview, query_range (day), "
        "find_free, get_task_info and move (there and back). All adapters run in one process on "
        "the same windows; \"added\" is the adapter's median minus `Toolbox.call`'s for the same "
        f"call. Goal: < {GOAL_HTTP_MS:.0f} ms added per HTTP tool call on loopback.",
        "",
        "### Mean over the calls",
        "",
        "| adapter | "
        + " | ".join(f"{d} days (ms)" for d in sizes)
        + " | "
        + " | ".join(f"added {d}d (ms)" for d in sizes)
        + " | "
        + " | ".join(f"x baseline {d}d" for d in sizes)
        + " |",
        "|---|" + "---:|" * (3 * len(sizes)),
    ]
    for adapter in (*ADAPTERS, *FLOORS.values()):
        base = [mean_over("toolbox", d) for d in sizes]
        ours = [mean_over(adapter, d) for d in sizes]
        lines.append(
            f"| {LABELS[adapter]} | "
            + " | ".join(f"{v:.3f}" for v in ours)
            + " | "
            + " | ".join(f"{v - b:+.3f}" for v, b in zip(ours, base, strict=True))
            + " | "
            + " | ".join(f"{v / b:.1f}x" for v, b in zip(ours, base, strict=True))
            + " |"
        )
    days = 30 if 30 in sizes else sizes[-1]
    lines += [
        "",
        f"### Per call, {days} days: added ms over `Toolbox.call`",
        "",
        "| call | Toolbox (ms) | " + " | ".join(LABELS[a] for a in ADAPTERS[1:]) + " |",
        "|---|---:|" + "---:|" * (len(ADAPTERS) - 1),
    ]
    worst_http = 0.0
    for label in labels:
        base = med("toolbox", label, days)
        cells = []
        for adapter in ADAPTERS[1:]:
            added = med(adapter, label, days) - base
            if adapter == "http_loopback":
                worst_http = max(
                    worst_http,
                    max(med(adapter, label, d) - med("toolbox", label, d) for d in sizes),
                )
                flag = " ✗" if added >= GOAL_HTTP_MS else ""
            else:
                flag = ""
            cells.append(f"{added:+.3f}{flag}")
        lines.append(f"| {label} | {base:.3f} | " + " | ".join(cells) + " |")
    sizes_text = ", ".join(f"{d} days {reply_bytes[d] / 1024:.1f} KiB" for d in sizes)
    lines += [
        "",
        "### Against the bare framework (peers: the same stack with no engine behind it)",
        "",
        "| adapter | peer | "
        + " | ".join(f"ours / peer {d}d" for d in sizes)
        + " | "
        + " | ".join(f"ours - peer {d}d (ms)" for d in sizes)
        + " |",
        "|---|---|" + "---:|" * (2 * len(sizes)),
    ]
    for adapter, floor in FLOORS.items():
        ours = [mean_over(adapter, d) for d in sizes]
        peer = [mean_over(floor, d) for d in sizes]
        lines.append(
            f"| {LABELS[adapter]} | {LABELS[floor]} | "
            + " | ".join(f"{o / p:.2f}x" for o, p in zip(ours, peer, strict=True))
            + " | "
            + " | ".join(f"{o - p:+.3f}" for o, p in zip(ours, peer, strict=True))
            + " |"
        )
    lines += [
        "",
        f"get_overview reply size: {sizes_text} (the reply travels JSON-encoded in every adapter).",
        "",
        f"HTTP loopback goal (< {GOAL_HTTP_MS:.0f} ms added per call): "
        + (
            f"met; worst added {worst_http:.2f} ms over every call and size."
            if worst_http < GOAL_HTTP_MS
            else f"missed; worst added {worst_http:.2f} ms (✗)."
        ),
        "",
    ]
    if services:  # Redis session store, 1 vs 2 workers, /health under proposals
        from .bench_services import run as run_services

        lines.append(run_services(quick))
    from .bench_observe import run as run_observe  # the session page, request log + metrics

    lines.append(run_observe(quick))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
