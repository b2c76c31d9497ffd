"""Services around the HTTP API, measured with the running Redis and real ``smartflow serve``
processes on 127.0.0.1 (part of ``bench_adapters``' table):

- session store cost: one request's load + save of a session that a write changed, in memory vs
  in Redis, warm (the worker cached the session: a version check and a compare-and-set) and cold
  (another worker: the snapshot fetched and the session rebuilt);
- requests/s of read-tool calls (``get_overview``) on one session from a raw asyncio client,
  with 1 and with 2 server workers sharing the Redis store, measured back to back in
  alternating rounds (median ratio, load average per round);
- ``/health`` latency while two proposals run, with the solver calls in a worker process (ours)
  and in the request's thread (the peer: how the server ran before).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.sessions.store import MemorySessionStore, RedisSessionStore

REDIS_URL = os.environ.get("SMARTFLOW_REDIS_URL", "redis://127.0.0.1:6379/0")
ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
GOAL_ROUND_TRIP_MS = 2.0
GOAL_WORKER_SPEEDUP = 1.6
GOAL_HEALTH_P99_MS = 50.0


def _median_ms(
    fn: Callable[[Any], object], repeats: int, setup: Callable[[], Any] = lambda: None
) -> float:
    """Median ms of ``fn(setup())`` (``setup`` untimed, before every sample), less what ``fn``
    returns (seconds spent in the tool call itself, when it says)."""
    fn(setup())
    samples = []
    for _ in range(repeats):
        arg = setup()
        t0 = time.perf_counter()
        inner = fn(arg)
        samples.append(time.perf_counter() - t0 - (inner if isinstance(inner, float) else 0.0))
    return statistics.median(samples) * 1000


HISTORY = 10  # writes a measured session has behind it (its change log and round log)


def _store_cost(days: int, repeats: int, prefix: str) -> dict[str, float]:
    """Per backend, ms of one request on a session with :data:`HISTORY` writes behind it (each
    sample on a fresh copy, restored untimed, so the session does not grow over the samples)."""
    from smartflow_engine.tools_adapter.sessions.session import Session

    state = synthetic_window(1, days, variant="plain")
    moves = []
    for task in state.tasks:
        if task.status == "suggested" and len(task.slots) == 1 and task.embed_host is None:
            moves.append(task)
    task = moves[0]
    block = task.slots[0]
    there = {"task_id": task.state_id, "new_day": block.day, "new_slot_start": block.slot_start}
    free = state.grid.free_runs(min_len=block.length)
    day, start, _ = free[-1]
    away = {"task_id": task.state_id, "new_day": day, "new_slot_start": start}
    base = Session(state, mode="local_adjust")
    for i in range(HISTORY):  # ends where it started: `away` is the next move
        assert base.call("move", (away, there)[i % 2]).startswith("已将")
    snapshot = base.to_json()
    out: dict[str, float] = {}
    stores: dict[str, Any] = {
        "memory": MemorySessionStore(),
        "redis": RedisSessionStore(REDIS_URL, prefix=prefix),
    }

    def write(session: Any) -> None:
        session.call("move", away)

    def read(session: Any) -> None:
        session.call("get_overview", {})

    for name, store in stores.items():
        made: list[str] = []

        def fresh(store: Any = store, made: list[str] = made) -> str:
            while made:
                store.delete("u", made.pop())
            made.append(store.restore("u", snapshot).session_id)
            return made[-1]

        def cold(store: Any = store, fresh: Callable[[], str] = fresh) -> str:
            sid = fresh()
            store._cache.clear()  # another worker: nothing cached
            return sid

        def used(
            sid: str, act: Callable[[Any], None], read_only: bool = False, store: Any = store
        ) -> float:
            """The request; returns the seconds of the call itself (subtracted)."""
            with store.use("u", sid, read_only=read_only) as session:
                t0 = time.perf_counter()
                act(session)
                return time.perf_counter() - t0

        out[f"{name} warm"] = _median_ms(lambda sid, u=used: u(sid, write), repeats, fresh)
        out[f"{name} read"] = _median_ms(lambda sid, u=used: u(sid, read, True), repeats, fresh)
        if name == "redis":
            out["redis cold"] = _median_ms(lambda sid, u=used: u(sid, write), repeats, cold)
        fresh()  # and the last one deleted below
        while made:
            store.delete("u", made.pop())

    def bare() -> Any:
        return Session.restore(snapshot, user_id="u")

    out["memory call only"] = out["redis call only"] = _median_ms(write, repeats, bare)
    out["memory read only"] = out["redis read only"] = _median_ms(read, repeats, bare)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _server(*args: str) -> Iterator[tuple[str, int]]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SMARTFLOW_API_TOKENS": f"{TOKEN}:bench"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from smartflow_engine.cli import main; main()",
            "serve",
            "--port",
            str(port),
            *args,
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and its children (Linux /proc)."""
    total, todo = 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except (OSError, IndexError, ValueError):
            continue
    return total


async def _load(
    port: int, request: bytes, total: int, connections: int, per_connection: int = 16
) -> None:
    """``total`` requests over ``connections`` concurrent keep-alive connections, each closed
    and reopened every ``per_connection`` requests (so a multi-worker server's connections
    spread over its workers). A raw HTTP/1.1 client: a few dozen microseconds per request, so
    the load generator takes little of the CPU the server workers need (httpx in threads took
    about as much as one worker)."""
    import asyncio

    left = [total]

    async def one() -> None:
        while left[0] > 0:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(per_connection):
                if left[0] <= 0:
                    break
                left[0] -= 1
                writer.write(request)
                status = await reader.readline()
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                await reader.readexactly(length)
                if status[9:12] != b"200":
                    raise RuntimeError(f"request failed: {status!r}")
            writer.close()
            await writer.wait_closed()

    await asyncio.gather(*(one() for _ in range(connections)))


def _run_load(port: int, request: bytes, total: int, connections: int) -> float:
    """Seconds for ``total`` requests (on uvloop when installed)."""
    import asyncio

    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    started = time.perf_counter()
    runner(_load(port, request, total, connections))
    return time.perf_counter() - started


@contextmanager
def _session_server(workers: int, prefix: str) -> Iterator[tuple[int, int, bytes]]:
    """A ``smartflow serve --workers N --session-store redis://...`` with one 30-day session:
    its port, pid and the raw request of a ``get_overview`` call on that session."""
    import json

    with _server(
        "--workers", str(workers), "--session-store", REDIS_URL, "--session-prefix", prefix
    ) as (url, pid):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        state = synthetic_window(2, 30, variant="plain").to_dict()
        sid = httpx.post(f"{url}/v1/sessions", headers=headers, json={"state": state}).json()[
            "session_id"
        ]
        body = json.dumps({"tool": "get_overview", "args": {}}).encode()
        port = int(url.rsplit(":", 1)[1])
        request = (
            f"POST /v1/sessions/{sid}/calls HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        yield port, pid, request


def _throughput(
    prefix: str, rounds: int, requests: int, connections: int = 16
) -> list[dict[str, float]]:
    """Back-to-back measurements of one server with 1 worker and one with 2 (both running, each
    idle while the other is measured), alternating which goes first, ``rounds`` times: per
    round the requests/s of each, the server's CPU ms per request, and the 1-minute load
    average before the round."""
    out = []
    with _session_server(1, f"{prefix}-w1") as one, _session_server(2, f"{prefix}-w2") as two:
        servers = {1: one, 2: two}
        for port, _, request in servers.values():  # warm every worker: sessions cached
            _run_load(port, request, 8 * connections, connections)
        for r in range(rounds):
            row: dict[str, float] = {"load": os.getloadavg()[0]}
            for w in (1, 2) if r % 2 == 0 else (2, 1):
                port, pid, request = servers[w]
                cpu = _tree_cpu_s(pid)
                seconds = _run_load(port, request, requests, connections)
                row[f"rps{w}"] = requests / seconds
                row[f"cpu{w}"] = (_tree_cpu_s(pid) - cpu) / requests * 1000
            row["ratio"] = row["rps2"] / row["rps1"]
            out.append(row)
    return out


def _health_under_proposals(solver_processes: int) -> list[float]:
    with _server("--solver-processes", str(solver_processes)) as (url, _):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        windows = [
            synthetic_window(s, 200, pending=600, slots_per_day=24).to_dict() for s in (12, 13)
        ]
        done = threading.Event()
        left = [len(windows)]
        lock = threading.Lock()

        def propose(window: dict[str, Any]) -> None:
            httpx.post(
                f"{url}/v1/proposal",
                headers=headers,
                timeout=300,
                json={"state": window, "args": {"time_limit_s": 1.0}},
            )
            with lock:
                left[0] -= 1
                if not left[0]:
                    done.set()

        pool = [threading.Thread(target=propose, args=(w,)) for w in windows]
        for t in pool:
            t.start()
        latencies = []
        with httpx.Client(base_url=url, timeout=300) as c:
            while not done.is_set():
                t0 = time.perf_counter()
                c.get("/health")
                latencies.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.01)
        for t in pool:
            t.join()
        return latencies


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(quick: bool = False) -> str:
    import redis

    prefix = f"smartflow-bench-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(REDIS_URL)
    try:
        sizes = (30,) if quick else (30, 120)
        repeats = 20 if quick else 200
        costs = {d: _store_cost(d, repeats, prefix) for d in sizes}
        rounds, requests = (3, 300) if quick else (9, 1500)
        rows = _throughput(prefix, rounds, requests)
        health = {p: _health_under_proposals(p) for p in (1, 0)}
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)
        client.close()
    lines = [
        "## Services: session store, workers, `/health` under load",
        "",
        f"Session store: median ms a request spends in `backend.use(...)` outside the tool "
        f"call (load, compare, save; {repeats} repeats, each on a fresh copy of a session with "
        f"{HISTORY} writes behind it); beside it the call itself on a bare `Session`. *write*: a move (the snapshot compared "
        f"and written back); *read*: `get_overview` under `use(read_only=True)` (what a read "
        f"tool's HTTP request does: nothing serialised or written back). *warm* = the worker "
        f"had the session cached (one round trip: version + idle TTL; a write adds the "
        f"compare-and-set), *cold* = another worker (snapshot fetched, session rebuilt). "
        f"Goal: Redis round trip ≤ {GOAL_ROUND_TRIP_MS:.0f} ms on a 30-day window.",
        "",
        "| days | store | store cost (ms) | the call itself (ms, bare session) |",
        "|---:|---|---:|---:|",
    ]
    labels = {
        "memory warm": ("memory, write", "memory call only"),
        "memory read": ("memory, read", "memory read only"),
        "redis warm": ("redis warm, write", "redis call only"),
        "redis read": ("redis warm, read", "redis read only"),
        "redis cold": ("redis cold, write", "redis call only"),
    }
    for days, c in costs.items():
        for key, (label, alone_key) in labels.items():
            lines.append(f"| {days} | {label} | {c[key]:.3f} | {c[alone_key]:.3f} |")
    ratios = [r["ratio"] for r in rows]
    lines += [
        "",
        f"Requests/s of `get_overview` on one 30-day session, `smartflow serve --session-store "
        f"redis://...` with 1 and with 2 workers (uvicorn, no access log, uvloop/httptools when "
        f"installed), both servers up, measured back to back in alternating order, {rounds} "
        f"rounds of {requests} requests over 16 keep-alive connections from a raw asyncio "
        f"client in the benchmark's process. *CPU/request*: the server processes' CPU time "
        f"per request. *load*: the 1-minute load average before the round (2 cores; other "
        f"engineers' work included).",
        "",
        "| round | load | 1 worker (req/s) | 2 workers (req/s) | ratio | CPU/request 1w (ms) "
        "| CPU/request 2w (ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {i + 1} | {r['load']:.2f} | {r['rps1']:.0f} | {r['rps2']:.0f} | "
        f"{r['ratio']:.2f}x | {r['cpu1']:.2f} | {r['cpu2']:.2f} |"
        for i, r in enumerate(rows)
    ]
    lines += [
        "",
        f"Median ratio {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, max "
        f"{max(ratios):.2f}x). Goal: 2 workers ≥ {GOAL_WORKER_SPEEDUP}x one worker.",
        "",
        "`/health` latency (ms) while two proposals run (200-day, 24-period windows, 600 pending "
        "tasks, 1 s limit; their totals kernel holds the GIL for seconds):",
        "",
        "| solver calls | health calls | p50 | p99 | max |",
        "|---|---:|---:|---:|---:|",
    ]
    names = {1: "worker process (ours)", 0: "request thread (peer: before)"}
    for p, lat in health.items():
        lines.append(
            f"| {names[p]} | {len(lat)} | {_p(lat, 0.5):.1f} | {_p(lat, 0.99):.1f} | "
            f"{max(lat):.1f} |"
        )
    lines += ["", f"Goal: p99 ≤ {GOAL_HEALTH_P99_MS:.0f} ms."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
