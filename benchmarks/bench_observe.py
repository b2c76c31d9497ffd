"""What watching the agent costs (issue 29), measured side by side in one process.

- **The session page**: ``GET /view/{id}`` (the app in process, ASGI) for sessions on seeded
  30- and 120-day windows worked on as an agent would (health, proposal, a held commit),
  split into building the view (the page's own health check with feasibility and floor, the
  round log) and rendering the HTML; beside it the JSON state route and the matplotlib picture
  of the same window (peers).
- **The request log and metrics**: the same session tool calls over a real loopback socket
  (uvicorn in a thread, a keep-alive httpx client) against three apps in one process: both off,
  metrics only, access log (to a file) + metrics. The apps' requests are interleaved in rounds
  so drift hits all three alike; medians. Goal: log + metrics add at most 5% per request, in
  CPU time of the server's process (the app in process; a loaded machine's queueing for a core
  is not the server's work); the loopback wall clock is reported beside it.

Run alone: ``python -m benchmarks.bench_observe [--quick]`` (it is also a section of
``results_adapters.md``, via :mod:`.bench_adapters`).
"""

from __future__ import annotations

import io
import logging
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import uvicorn
from fastapi.testclient import TestClient

from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.api.page_html import render_page
from smartflow_engine.tools_adapter.api.page_view import session_view

TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAGE_SIZES = (30, 120)
GOAL_OVERHEAD = 0.05
STEPS = [("analyze_health", {}), ("apply_proposal", {}), ("commit", {})]
CALLS = [("get_overview", {}), ("find_free", {"duration": 2}), ("get_task_info", {"task_id": 1})]


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _time(fn: Any, repeats: int) -> float:
    """Median CPU ms of this process per call (``time.process_time``: every thread of the
    process, the in-process app's included; time spent waiting for a core on a loaded machine
    is not counted, so the figure is the work done, not the queueing)."""
    fn()
    samples = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        samples.append(time.process_time() - t0)
    return _median_ms(samples)


# ------------------------------------------------------------------------------------ page
def _page_row(days: int, repeats: int) -> dict[str, Any]:
    client = TestClient(create_app({TOKEN: "bench"}, max_time_limit_s=2.0))
    state = synthetic_window(1, days, with_task_classes=True)
    sid = client.post("/v1/sessions", headers=AUTH, json={"state": state.to_dict()}).json()[
        "session_id"
    ]
    for tool, args in STEPS:
        client.post(f"/v1/sessions/{sid}/calls", headers=AUTH, json={"tool": tool, "args": args})
    url = client.post(f"/v1/sessions/{sid}/view-link", headers=AUTH).json()["url"]
    assert client.get(url).status_code == 200  # sets the view cookie

    snapshot = client.get(f"/v1/sessions/{sid}/snapshot", headers=AUTH).json()
    view = session_view(snapshot)
    html = render_page(view)
    from smartflow_engine.plot import plot_window

    def picture() -> None:
        plot_window(state).savefig(io.BytesIO(), format="png", dpi=110)

    return {
        "days": days,
        "page": _time(lambda: client.get(f"/view/{sid}"), repeats),
        "view": _time(lambda: session_view(snapshot), repeats),
        "html": _time(lambda: render_page(view), repeats),
        "state": _time(lambda: client.get(f"/v1/sessions/{sid}/state", headers=AUTH), repeats),
        "png": _time(picture, 3),
        "kib": len(html.encode()) / 1024,
        "rounds": len(view.rounds),
        "blocks": len(view.blocks),
    }


# ------------------------------------------------------------------------- log + metrics
class _Served:
    """An app on 127.0.0.1 (uvicorn in a thread), with a keep-alive client and one session."""

    def __init__(self, **kwargs: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.bind(("127.0.0.1", 0))
        port = self.sock.getsockname()[1]
        app = create_app({TOKEN: "bench"}, **kwargs)
        self.server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=AUTH)
        state = synthetic_window(2, 30).to_dict()
        self.sid = self.client.post("/v1/sessions", json={"state": state}).json()["session_id"]

    def call(self, tool: str, args: dict[str, Any]) -> None:
        got = self.client.post(f"/v1/sessions/{self.sid}/calls", json={"tool": tool, "args": args})
        assert got.status_code == 200

    def close(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def _cpu_overhead(rounds: int, per_round: int) -> dict[str, dict[str, float]]:
    """CPU ms of this process per call, per config (the app in process through TestClient):
    the median over interleaved rounds of each round's mean."""
    configs = {
        "off": dict(access_log=False, metrics=False),
        "metrics": dict(access_log=False, metrics=True),
        "log+metrics": dict(access_log=True, metrics=True),
    }
    log_file = Path(tempfile.mkdtemp()) / "access.log"
    access = logging.getLogger("smartflow.access")
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access.addHandler(handler)
    clients = {}
    for name, kwargs in configs.items():
        client = TestClient(create_app({TOKEN: "bench"}, **kwargs))
        state = synthetic_window(2, 30).to_dict()
        sid = client.post("/v1/sessions", headers=AUTH, json={"state": state}).json()["session_id"]
        clients[name] = (client, sid)
    samples: dict[str, dict[str, list[float]]] = {c: {n: [] for n, _ in CALLS} for c in configs}
    try:
        for _ in range(rounds + 1):  # the first round warms up
            for config, (client, sid) in clients.items():
                for call, args in CALLS:
                    body = {"tool": call, "args": args}
                    t0 = time.process_time()
                    for _ in range(per_round):
                        client.post(f"/v1/sessions/{sid}/calls", headers=AUTH, json=body)
                    samples[config][call].append((time.process_time() - t0) / per_round)
    finally:
        access.removeHandler(handler)
        handler.close()
    return {c: {n: _median_ms(v[1:]) for n, v in per.items()} for c, per in samples.items()}


def _overhead(rounds: int, per_round: int) -> dict[str, dict[str, float]]:
    """Median ms per call and config; the configs take turns, round after round."""
    log_file = Path(tempfile.mkdtemp()) / "access.log"
    access = logging.getLogger("smartflow.access")
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access.addHandler(handler)  # the line goes to a file, as a server's stderr would
    configs = {
        "off": _Served(access_log=False, metrics=False),
        "metrics": _Served(access_log=False, metrics=True),
        "log+metrics": _Served(access_log=True, metrics=True),
    }
    samples: dict[str, dict[str, list[float]]] = {
        c: {name: [] for name, _ in CALLS} for c in configs
    }
    try:
        for served in configs.values():  # warm-up
            for name, args in CALLS:
                served.call(name, args)
        for _ in range(rounds):
            for config, served in configs.items():
                for name, args in CALLS:
                    for _ in range(per_round):
                        t0 = time.perf_counter()
                        served.call(name, args)
                        samples[config][name].append(time.perf_counter() - t0)
    finally:
        for served in configs.values():
            served.close()
        access.removeHandler(handler)
        handler.close()
    lines = log_file.read_text(encoding="utf-8").count("\n")
    out = {c: {n: _median_ms(v) for n, v in per.items()} for c, per in samples.items()}
    out["_lines"] = {"count": float(lines)}
    return out


def observer_cost(n: int = 20000) -> str:
    """The observer's own work per request, timed alone (CPU µs): a request id, the request
    record, the session/result notes, the metrics update and the JSON line (to a file)."""
    import secrets

    from smartflow_engine.tools_adapter.api.request_log import (
        RequestInfo,
        RequestObserver,
        current,
    )

    log_file = Path(tempfile.mkdtemp()) / "access.log"
    access = logging.getLogger("smartflow.access")
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access.addHandler(handler)  # before the app: it then adds no stderr handler of its own
    app = create_app({TOKEN: "bench"}, access_log=True, metrics=True)
    observer = RequestObserver(
        app, metrics=app.state.metrics, log_requests=True, principal=app.state.ctx.principal
    )
    route = SimpleNamespace(path="/v1/sessions/{session_id}/calls")  # what routing leaves
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/sessions/abc/calls",
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode())],
        "route": route,
    }
    try:
        t0 = time.process_time()
        for _ in range(n):
            info = RequestInfo(secrets.token_hex(8), time.perf_counter())
            token = current.set(info)
            info.session, info.mode = "abc", "first_full"
            info.tool, info.status, info.error_code = "get_overview", "ok", ""
            info.tool_seconds = 0.001
            current.reset(token)
            observer._finish(scope, info, 200, b"")
        per = (time.process_time() - t0) / n * 1e6
    finally:
        access.removeHandler(handler)
        handler.close()
    return (
        f"The observer's own work, timed alone over {n} requests (request id, record, notes, "
        f"metrics update, JSON line to a file): {per:.1f} µs of CPU per request, "
        f"{per / 1000 / 1.43:.1%} of a get_overview call over loopback on a quiet machine "
        "(1.43 ms in the adapters table above)."
    )


def run(quick: bool = False) -> str:
    repeats = 5 if quick else 15
    rows = []
    for days in PAGE_SIZES:
        print(f"bench_observe: page, {days} days", file=sys.stderr, flush=True)
        rows.append(_page_row(days, repeats))
    print("bench_observe: log + metrics overhead", file=sys.stderr, flush=True)
    lines = [
        "## Watching the agent: the session page, the request log and metrics (issue 29)",
        "",
        f"### The session page (median CPU ms of {repeats} requests, the app in process)",
        "",
        "A session on a seeded window with task classes, after analyze_health, apply_proposal and "
        "a held commit. `GET /view/{id}` includes the page's own health check "
        "(feasibility and floor, 1 s limit); peers: the JSON state route and the matplotlib "
        "picture of the same window.",
        "",
        "| days | `GET /view/{id}` (CPU ms) | build the view (CPU ms) | render HTML (CPU ms) | "
        "HTML (KiB) | blocks | rounds | peer: `GET .../state` (CPU ms) | peer: PNG picture "
        "(CPU ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['days']} | {r['page']:.1f} | {r['view']:.1f} | {r['html']:.1f} | "
            f"{r['kib']:.0f} | {r['blocks']} | {r['rounds']} | {r['state']:.1f} | {r['png']:.0f} |"
        )
    rounds, per_round = (6, 10) if quick else (15, 20)
    print("bench_observe: log + metrics, CPU time in process", file=sys.stderr, flush=True)
    cpu = _cpu_overhead(rounds, per_round)
    print("bench_observe: log + metrics, wall clock on loopback", file=sys.stderr, flush=True)
    wall_rounds, wall_per = (4, 10) if quick else (10, 15)
    wall = _overhead(wall_rounds, wall_per)
    count = int(wall.pop("_lines")["count"])
    worst = -1.0
    for title, got, unit in (
        (
            f"CPU ms per request of the process running the app and its in-process client "
            f"({rounds} interleaved rounds x {per_round} calls per config and call; the client's "
            "share is the same in every config; the goal's measure)",
            cpu,
            "CPU ms",
        ),
        (
            f"wall-clock ms per request over a loopback socket ({wall_rounds} interleaved rounds"
            f" x {wall_per} calls; includes waiting for a core, so noisy on a loaded machine)",
            wall,
            "ms",
        ),
    ):
        lines += [
            "",
            f"### Request log + metrics: {title}",
            "",
            f"| call | off ({unit}) | metrics ({unit}) | log + metrics ({unit}) | metrics vs off |"
            " log + metrics vs off |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, _ in CALLS:
            off, met, both = got["off"][name], got["metrics"][name], got["log+metrics"][name]
            if got is cpu:
                worst = max(worst, both / off - 1)
            lines.append(
                f"| {name} | {off:.3f} | {met:.3f} | {both:.3f} | {met / off - 1:+.1%} | "
                f"{both / off - 1:+.1%} |"
            )
    lines += ["", observer_cost(5000 if quick else 20000)]
    verdict = "met" if worst <= GOAL_OVERHEAD else "missed (✗)"
    lines += [
        "",
        f"{count} access-log lines written during the loopback run. Goal (log + metrics add at "
        f"most {GOAL_OVERHEAD:.0%} per request, CPU time): {verdict}; worst {worst:+.1%}. "
        f"Load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(observer_cost() if "--observer-only" in sys.argv else run(quick="--quick" in sys.argv))
