"""What watching the agent costs (issue 29), measured side by side in one run.

- **The session page** for sessions on seeded 30- and 120-day windows (with task classes, held
  in a SQLite database) worked on as an agent would: health, a proposal, health again, a
  commit held for the user. On the server, ``GET /view/{id}`` (the app in process, median wall
  and CPU ms), split into building the view (the page's own health check with feasibility and
  floor, the round log) and writing the HTML; in Debian's Chromium (Playwright against
  ``/usr/bin/chromium``, the app served on loopback), the page's Navigation Timing over
  reloads: the server's answer, DOM ready, first contentful paint and the load event. Peers:
  the JSON state route and the matplotlib picture of the same window.
- **The request log and metrics**: one server process (uvicorn, one worker, as ``smartflow
  serve`` runs) holding three apps: both off, metrics only, access log (to a file) + metrics,
  picked per request by a header, its heap settled as every ``smartflow serve`` worker's is
  (``settle_heap``: start-up objects frozen out of the collector's reach). One process, so
  that the difference is the observers' and not two processes' heaps, hash seeds and caches
  (three processes, measured so before, differ by more than the observers cost). The client
  (this process, keep-alive) sends one request at a time, interleaved: each request once to
  each app, the apps' order rotating, so the apps meet the same moments of the machine. The
  server times each request's app (``time.process_time_ns``, every thread: the tool runs on a
  worker thread) and sums per app and request; the access log's writes at a block's end are
  charged to the logging app. CPU time is the goal's measure: it is the server's own work per
  request, which queueing for a core on a loaded 2-core machine does not inflate; the
  overhead is the median over blocks of each block's paired ratio, with its interquartile
  range to show the noise. (Until 2026-12-05 each app got batches of 40 requests in turn,
  read through a CPU probe: the batches met different moments of a noisy machine, the
  interquartile ranges were ±6-10 points wide.) The observer's own work
  timed alone is beside it.

Run alone: ``python -m benchmarks.bench_observe [--quick]`` (it is also a section of
``results_adapters.md``, via :mod:`.bench_adapters`).
"""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import statistics
import subprocess
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
from smartflow_engine.store import Store
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.api.app import settle_heap
from smartflow_engine.tools_adapter.api.page_html import render_page
from smartflow_engine.tools_adapter.api.page_view import session_view

TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DB_USER = "7"  # a principal that is a number is that database user
PAGE_SIZES = (30, 120)
GOAL_OVERHEAD = 0.05
STEPS = [("analyze_health", {}), ("apply_proposal", {}), ("analyze_health", {}), ("commit", {})]
# the cheapest tool calls there are (the observer's share is largest on them), the loop's own
# call, and the liveness probe (not observed, by decision: its row shows the pass-through)
REQUESTS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("get_overview", "call", {}),
    ("find_free", "call", {"duration": 2}),
    ("get_task_info", "call", {"task_id": 1}),
    ("analyze_health", "call", {}),
    ("GET /health", "health", None),
]
UNOBSERVED = {"GET /health"}
CONFIGS = {
    "off": {"access_log": False, "metrics": False},
    "metrics": {"access_log": False, "metrics": True},
    "log+metrics": {"access_log": True, "metrics": True},
}
CHROMIUM = "/usr/bin/chromium"
PROBE = "/__bench_cpu"


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def _quartiles(samples: list[float]) -> tuple[float, float]:
    if len(samples) < 4:
        return min(samples), max(samples)
    q = statistics.quantiles(samples, n=4)
    return q[0], q[2]


def _time(fn: Any, repeats: int) -> tuple[float, float]:
    """Median wall and CPU ms of this process per call of ``fn``."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return _median(wall) * 1000, _median(cpu) * 1000


# ------------------------------------------------------------------------------------ page
class _Thread:
    """An app on 127.0.0.1 served by uvicorn in a thread of this process."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def _window(state: Any) -> dict[str, Any]:
    first, last = state.window.day_mapping[0], state.window.day_mapping[-1]
    return {
        "start": {"week": first.week, "day_of_week": first.day_of_week},
        "end": {"week": last.week, "day_of_week": last.day_of_week},
    }


def _browser_timing(url: str, sid: str, client: TestClient, repeats: int) -> dict[str, float]:
    """Median Navigation Timing figures (ms) of the page in Chromium over ``repeats`` reloads."""
    from playwright.sync_api import sync_playwright

    link = client.post(f"/v1/sessions/{sid}/view-link", headers=AUTH).json()["url"]
    figures: dict[str, list[float]] = {"server": [], "dom": [], "fcp": [], "load": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(url + link)  # sets the view cookie, lands on /view/{id}
        for i in range(repeats + 1):
            page.reload(wait_until="load")
            # the paint entry may come after the load event: wait for it (buffered observer)
            got = page.evaluate(
                """() => new Promise(resolve => {
                  const n = performance.getEntriesByType('navigation')[0];
                  const done = fcp => resolve({server: n.responseStart - n.requestStart,
                          dom: n.domContentLoadedEventEnd, load: n.loadEventEnd, fcp: fcp});
                  new PerformanceObserver(list => {
                    const p = list.getEntriesByName('first-contentful-paint')[0];
                    if (p) done(p.startTime);
                  }).observe({type: 'paint', buffered: true});
                  setTimeout(() => done(NaN), 2000);
                })"""
            )
            if i:  # the first reload warms up
                for key in figures:
                    figures[key].append(float(got[key]))
        cells = page.locator("#grid .cell").count()
        browser.close()
    out = {k: _median(v) for k, v in figures.items()}
    out["cells"] = float(cells)
    return out


def _page_row(days: int, repeats: int, tmp: Path) -> dict[str, Any]:
    state = synthetic_window(1, days, with_task_classes=True)
    store = Store.from_url(f"sqlite:///{tmp / f'page{days}.db'}")
    store.seed_from_state(int(DB_USER), state)
    app = create_app({TOKEN: DB_USER}, database=store, max_time_limit_s=2.0)
    client = TestClient(app)
    made = client.post("/v1/sessions", headers=AUTH, json={"window": _window(state)})
    sid = made.json()["session_id"]
    for tool, args in STEPS:
        client.post(f"/v1/sessions/{sid}/calls", headers=AUTH, json={"tool": tool, "args": args})
    url = client.post(f"/v1/sessions/{sid}/view-link", headers=AUTH).json()["url"]
    assert client.get(url).status_code == 200  # sets the view cookie

    snapshot = client.get(f"/v1/sessions/{sid}/snapshot", headers=AUTH).json()
    view = session_view(snapshot)
    assert view.pending, "the commit should be held for the user"
    html = render_page(view)
    from smartflow_engine.plot import plot_window

    def picture() -> None:
        plot_window(state).savefig(io.BytesIO(), format="png", dpi=110)

    row: dict[str, Any] = {
        "days": days,
        "page": _time(lambda: client.get(f"/view/{sid}"), repeats),
        "view": _time(lambda: session_view(snapshot), repeats),
        "html": _time(lambda: render_page(view), repeats),
        "state": _time(lambda: client.get(f"/v1/sessions/{sid}/state", headers=AUTH), repeats),
        "png": _time(picture, 3),
        "kib": len(html.encode()) / 1024,
        "rounds": len(view.rounds),
        "blocks": len(view.blocks),
        "cells": view.num_days * view.slots_per_day,
    }
    served = _Thread(app)
    try:
        row["browser"] = _browser_timing(served.url, sid, client, repeats)
    finally:
        served.close()
        store.dispose()
    assert row["browser"]["cells"] == row["cells"]
    return row


# ------------------------------------------------------------------------- log + metrics
CONFIG_HEADER = b"x-bench-config"
REQUEST_HEADER = b"x-bench-request"
TOTALS = "/__bench_totals"  # the server's per-request CPU totals so far (JSON)
FLUSH = "/__bench_flush"  # write the access log's waiting lines now (the end of a block)


def _serve() -> None:
    """The server process (``--serve``): one app per config (both off, metrics only, access log
    + metrics), all in this one process behind a dispatcher that picks the app by the
    ``x-bench-config`` header; prints its port, then serves. One process for the three, so that
    a difference is the observers' and not two processes' heaps, hash seeds or caches.

    The dispatcher times every request it hands to an app: the process's CPU time
    (``time.process_time_ns``, every thread: the tool runs on a worker thread) from the app's
    start to its end, summed per config and request (``x-bench-request``). The client sends one
    request at a time, so nothing else runs in that span but the access log's own timers (see
    :func:`_overhead`). The access log goes where ``smartflow serve --access-log`` sends it,
    stderr (the parent points it at a file); :data:`FLUSH` writes the waiting lines and its CPU
    time is summed apart, to be charged to the logging app's requests. :data:`TOTALS` answers
    the sums so far."""
    apps = {c.encode(): create_app({TOKEN: "bench"}, **CONFIGS[c]) for c in CONFIGS}
    default = apps[b"off"]
    settle_heap()  # as every `smartflow serve` worker does (app_from_env)
    access = logging.getLogger("smartflow.access")
    totals: dict[str, list[int]] = {}  # "config request" -> [count, CPU ns]
    flushed = [0, 0]  # flushes, CPU ns

    async def reply(send: Any, body: bytes) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    async def dispatch(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == FLUSH:
            t0 = time.process_time_ns()
            for handler in access.handlers:
                handler.flush()
            flushed[0] += 1
            flushed[1] += time.process_time_ns() - t0
            await reply(send, b"ok")
            return
        if scope["type"] == "http" and scope["path"] == TOTALS:
            await reply(send, json.dumps({"requests": totals, "flush": flushed}).encode())
            return
        app, key = default, None
        for name, value in scope.get("headers", ()):
            if name == CONFIG_HEADER:
                app = apps[value]
                config = value
            elif name == REQUEST_HEADER:
                key = value
        if key is None:
            await app(scope, receive, send)
            return
        t0 = time.process_time_ns()
        await app(scope, receive, send)
        spent = time.process_time_ns() - t0
        row = totals.setdefault(f"{config.decode()} {key.decode()}", [0, 0])
        row[0] += 1
        row[1] += spent

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(
        uvicorn.Config(dispatch, log_level="warning", lifespan="off", access_log=False)
    )
    server.run(sockets=[sock])


class _Process:
    """The server process and a keep-alive client with one session on each of its apps."""

    def __init__(self, log_dir: str) -> None:
        root = Path(__file__).resolve().parents[1]
        path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path}
        self.log_path = Path(log_dir) / "access.log"
        self.log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_observe", "--serve"],
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=root,
            env=env,
            text=True,
        )
        assert self.proc.stdout is not None
        port = int(self.proc.stdout.readline())
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=AUTH)
        state = synthetic_window(2, 30).to_dict()
        self.sid = {}
        for config in CONFIGS:
            made = self.client.post(
                "/v1/sessions", json={"state": state}, headers={CONFIG_HEADER.decode(): config}
            )
            self.sid[config] = made.json()["session_id"]

    def totals(self) -> dict[str, Any]:
        found: dict[str, Any] = self.client.get(TOTALS).json()
        return found

    def flush(self) -> None:
        self.client.get(FLUSH)

    def send(self, config: str, kind: str, name: str, args: dict[str, Any] | None) -> None:
        headers = {CONFIG_HEADER.decode(): config, REQUEST_HEADER.decode(): name}
        if kind == "health":
            got = self.client.get("/health", headers=headers)
        else:
            got = self.client.post(
                f"/v1/sessions/{self.sid[config]}/calls",
                json={"tool": name, "args": args},
                headers=headers,
            )
        assert got.status_code == 200, got.text

    def close(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


def _overhead(blocks: int, cycles: int) -> dict[str, Any]:
    """Per block, config and request: the app's CPU µs and the client's wall ms per request.

    The requests interleave: a cycle sends each request once to each app, the apps' order
    rotating cycle by cycle, so the three apps meet the same moments of the machine (a busy
    neighbour, a slower core) and a drift cannot favour one of them; a block is ``cycles``
    cycles. At a block's end the access log's waiting lines are written (:data:`FLUSH`, its CPU
    time charged to the logging app's requests of that block, spread evenly): a block lasts less
    than the log's half-second timer, so the lines are written by the requests (a full
    16 KiB buffer, a full batch of records) and by that flush, all of it counted. What the
    timers still do between two flushes is counted in whichever request was running then (any
    app's: it can only shrink the logging app's share)."""
    log_dir = tempfile.mkdtemp()
    served = _Process(log_dir)
    cpu: dict[str, dict[str, list[float]]] = {c: {r[0]: [] for r in REQUESTS} for c in CONFIGS}
    wall: dict[str, dict[str, list[float]]] = {c: {r[0]: [] for r in REQUESTS} for c in CONFIGS}
    order = list(CONFIGS)
    spent = {(c, r[0]): 0.0 for c in CONFIGS for r in REQUESTS}
    try:
        for config in CONFIGS:  # warm-up: imports, first calls, caches
            for name, kind, args in REQUESTS:
                for _ in range(20):
                    served.send(config, kind, name, args)
        served.flush()
        before = served.totals()
        for b in range(blocks):
            for k in range(cycles):
                i = b * cycles + k
                turn = order[i % len(order) :] + order[: i % len(order)]
                for name, kind, args in REQUESTS:
                    for config in turn:
                        t0 = time.perf_counter()
                        served.send(config, kind, name, args)
                        spent[config, name] += time.perf_counter() - t0
            served.flush()
            after = served.totals()
            flush_ns = after["flush"][1] - before["flush"][1]
            logged = sum(
                after["requests"][f"log+metrics {n}"][0] - before["requests"][f"log+metrics {n}"][0]
                for n, _, _ in REQUESTS
                if n not in UNOBSERVED
            )
            for config in CONFIGS:
                for name, _, _ in REQUESTS:
                    key = f"{config} {name}"
                    count = after["requests"][key][0] - before["requests"][key][0]
                    ns = after["requests"][key][1] - before["requests"][key][1]
                    if config == "log+metrics" and name not in UNOBSERVED:
                        ns += flush_ns * count / logged
                    cpu[config][name].append(ns / 1000 / count)
                    wall[config][name].append(spent[config, name] * 1000 / count)
                    spent[config, name] = 0.0
            before = after
    finally:
        served.close()
    text = served.log_path.read_text(encoding="utf-8")
    lines = sum(1 for line in text.splitlines() if line.startswith('{"ts": '))
    return {"cpu": cpu, "wall": wall, "lines": lines}


def observer_cost(n: int = 20000) -> float:
    """The observer's own work per request, timed alone (CPU µs): a request id, the request
    record, the session/result notes, the metrics update and the JSON line (to a file, through
    the handler ``smartflow serve --access-log`` installs)."""
    import secrets

    from smartflow_engine.tools_adapter.api.request_log import (
        RequestInfo,
        RequestObserver,
        _LineHandler,
        current,
    )

    log_file = Path(tempfile.mkdtemp()) / "access.log"
    access = logging.getLogger("smartflow.access")
    # the handler `smartflow serve --access-log` has, writing to a file instead of stderr
    handler = _LineHandler(open(log_file, "w", encoding="utf-8"))  # noqa: SIM115
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
            observer._finish(scope, info, 200, None)
        handler.flush()  # the batched writes are part of the cost
        return (time.process_time() - t0) / n * 1e6
    finally:
        access.removeHandler(handler)
        handler.close()
        handler.stream.close()


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def run(quick: bool = False) -> str:
    load_start = os.getloadavg()
    repeats = 5 if quick else 15
    rows = []
    tmp = Path(tempfile.mkdtemp())
    for days in PAGE_SIZES:
        print(f"bench_observe: page, {days} days", file=sys.stderr, flush=True)
        rows.append(_page_row(days, repeats, tmp))
    blocks, cycles = (10, 20) if quick else (200, 25)
    print(f"bench_observe: log + metrics, {blocks} blocks", file=sys.stderr, flush=True)
    got = _overhead(blocks, cycles)
    observer = [observer_cost(5000 if quick else 20000) for _ in range(3 if quick else 7)]
    load_end = os.getloadavg()

    lines = [
        "## Watching the agent: the session page, the request log and metrics (issue 29)",
        "",
        f"Load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end, "
        f"on {os.cpu_count()} cores.",
        "",
        f"### The session page (medians of {repeats} requests / reloads)",
        "",
        "A session opened on a seeded window with task classes held in SQLite, after "
        "analyze_health, apply_proposal, analyze_health and a commit held for the user. Server: "
        "`GET /view/{id}` with the app in this process (wall and CPU ms; it includes the page's "
        "own health check with feasibility and floor, 1 s limit), then its two parts. Browser: "
        "Chromium's Navigation Timing of the page served on loopback (ms from the navigation's "
        "start). Peers: the JSON state route and the matplotlib picture of the same window.",
        "",
        "| days | cells | blocks | rounds | HTML (KiB) | `GET /view/{id}` wall / CPU (ms) | "
        "build the view CPU (ms) | write the HTML CPU (ms) | browser: server answer (ms) | "
        "browser: DOM ready (ms) | browser: first paint (ms) | browser: load event (ms) | "
        "peer: `GET .../state` wall (ms) | peer: PNG picture wall (ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        b = r["browser"]
        lines.append(
            f"| {r['days']} | {r['cells']} | {r['blocks']} | {r['rounds']} | {r['kib']:.0f} | "
            f"{r['page'][0]:.1f} / {r['page'][1]:.1f} | {r['view'][1]:.1f} | {r['html'][1]:.1f} | "
            f"{b['server']:.1f} | {b['dom']:.1f} | {b['fcp']:.1f} | {b['load']:.1f} | "
            f"{r['state'][0]:.1f} | {r['png'][0]:.0f} |"
        )
    cpu, wall = got["cpu"], got["wall"]
    lines += [
        "",
        "### Request log + metrics: the server's CPU time per request (the goal's measure)",
        "",
        "One server process (uvicorn, one worker) holding the three apps; the client sends one "
        f"request at a time, {blocks} blocks of {cycles} cycles, a cycle being each request once "
        "to each app (the apps' order rotating), so the apps meet the same moments of the "
        "machine. Each cell is the median over blocks of the app's CPU µs per request: the "
        "server process's CPU time (every thread) from the app's start to its end, the access "
        "log's writes at a block's end charged to the logging app's requests. uvicorn's own "
        "HTTP work, the same for every app, is left out of the denominator, so the ratios "
        "overstate the share of a whole request. The ratios are the medians over blocks of the "
        "paired ratio (same block), with their interquartile range; *all blocks* is the ratio of "
        "the sums.",
        "",
        "| request | off (µs) | metrics (µs) | log + metrics (µs) | metrics vs off | "
        "log + metrics vs off | IQR of log + metrics vs off | all blocks: log + metrics vs off |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst = -1.0
    verdicts = []
    for name, _, _ in REQUESTS:
        per = cpu_name = {c: cpu[c][name] for c in CONFIGS}
        met = [m / o - 1 for m, o in zip(per["metrics"], per["off"], strict=True)]
        both = [b / o - 1 for b, o in zip(per["log+metrics"], per["off"], strict=True)]
        q1, q3 = _quartiles(both)
        if name not in UNOBSERVED:
            worst = max(worst, _median(both))
            verdicts.append((name, _median(both)))
        lines.append(
            f"| {name} | {_median(per['off']):.0f} | {_median(per['metrics']):.0f} | "
            f"{_median(per['log+metrics']):.0f} | {_pct(_median(met))} | "
            f"{_pct(_median(both))} | {_pct(q1)} .. {_pct(q3)} | "
            f"{_pct(sum(cpu_name['log+metrics']) / sum(cpu_name['off']) - 1)} |"
        )
    lines += [
        "",
        "### Request log + metrics: wall-clock ms per request at the client (loopback)",
        "",
        "The same requests, timed at the client, per block: includes the client's own work and any wait for "
        "a core (client and server share the 2 cores with whatever else runs), so it is the "
        "noisier figure.",
        "",
        "| request | off (ms) | metrics (ms) | log + metrics (ms) | metrics vs off | "
        "log + metrics vs off | IQR of log + metrics vs off |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, _, _ in REQUESTS:
        per = wall
        met = [m / o - 1 for m, o in zip(per["metrics"][name], per["off"][name], strict=True)]
        both = [b / o - 1 for b, o in zip(per["log+metrics"][name], per["off"][name], strict=True)]
        q1, q3 = _quartiles(both)
        lines.append(
            f"| {name} | {_median(per['off'][name]):.3f} | {_median(per['metrics'][name]):.3f} | "
            f"{_median(per['log+metrics'][name]):.3f} | {_pct(_median(met))} | "
            f"{_pct(_median(both))} | {_pct(q1)} .. {_pct(q3)} |"
        )
    obs = _median(observer)
    cheapest = min(_median(cpu["off"][n]) for n, _, _ in REQUESTS if n not in UNOBSERVED)
    lines += [
        "",
        f"The observer's own work timed alone (request id, record, notes, metrics update, JSON "
        f"line to a file), median of {len(observer)} runs: {obs:.1f} µs of CPU per request "
        f"(runs {min(observer):.1f}-{max(observer):.1f}), {obs / cheapest:.1%} of the cheapest "
        f"request above with both off ({cheapest:.0f} µs of the app's CPU).",
        "",
        f"{got['lines']} access-log lines written by the log + metrics app to the server's stderr, "
        "a file here, as `smartflow serve --access-log` writes them (one per observed request; "
        "the benchmark's own routes bypass the apps, and `GET /health`, the liveness probe, is not observed: "
        "its row shows what passing the observer costs).",
        "",
        "Goal (log + metrics add at most "
        f"{GOAL_OVERHEAD:.0%} per observed request, the app's CPU time): "
        + ("**met**" if worst <= GOAL_OVERHEAD else "**not met**")
        + " — "
        + ", ".join(f"{n} {_pct(v)}" for n, v in verdicts)
        + ".",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        _serve()
    elif "--observer-only" in sys.argv:
        print(f"{observer_cost():.1f} µs of CPU per request")
    else:
        print(run(quick="--quick" in sys.argv))
