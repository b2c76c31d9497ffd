"""Services around the HTTP API, measured with the running Redis and real ``smartflow serve``
processes on 127.0.0.1 (part of ``bench_adapters``' table):

- session store cost: one request's load + save of a session that a write changed, in memory vs
  in Redis, warm (the worker cached the session: a version check and a compare-and-set) and cold
  (another worker: the snapshot fetched and the session rebuilt);
- requests/s of read-tool calls (``get_overview``) on one session from 8 client threads, with 1
  and with 2 server workers sharing the Redis store;
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
from smartflow_engine.tools_adapter.session_store import MemorySessionStore, RedisSessionStore

REDIS_URL = os.environ.get("SMARTFLOW_REDIS_URL", "redis://127.0.0.1:6379/0")
ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
GOAL_ROUND_TRIP_MS = 2.0
GOAL_WORKER_SPEEDUP = 1.6
GOAL_HEALTH_P99_MS = 50.0


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


def _store_cost(days: int, repeats: int, prefix: str) -> dict[str, float]:
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
    out: dict[str, float] = {}
    stores: dict[str, Any] = {
        "memory": MemorySessionStore(),
        "redis": RedisSessionStore(REDIS_URL, prefix=prefix),
    }
    for name, store in stores.items():
        sid = store.create("u", state.copy_state(), mode="local_adjust").session_id
        flip = [away, there]

        def once(store: Any = store, sid: str = sid, flip: list[Any] = flip) -> None:
            with store.use("u", sid) as session:
                session.call("move", flip[0])
            flip.reverse()

        out[f"{name} warm"] = _median_ms(once, repeats)
        if name == "redis":
            def cold(store: Any = store, sid: str = sid, flip: list[Any] = flip) -> None:
                store._cache.clear()  # another worker: nothing cached
                with store.use("u", sid) as session:
                    session.call("move", flip[0])
                flip.reverse()

            out["redis cold"] = _median_ms(cold, repeats)
        session = store.create("u", state.copy_state(), mode="local_adjust")
        out[f"{name} call only"] = _median_ms(
            lambda s=session, f=[away, there]: (s.call("move", f[0]), f.reverse()), repeats)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _server(*args: str) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SMARTFLOW_API_TOKENS": f"{TOKEN}:bench"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from smartflow_engine.cli import main; main()", "serve",
         "--port", str(port), *args],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _throughput(workers: int, prefix: str, requests: int, threads: int = 8) -> float:
    with _server("--workers", str(workers), "--session-store", REDIS_URL,
                 "--session-prefix", prefix) as url:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        state = synthetic_window(2, 30, variant="plain").to_dict()
        sid = httpx.post(f"{url}/v1/sessions", headers=headers,
                         json={"state": state}).json()["session_id"]
        body = {"tool": "get_overview", "args": {}}
        per = requests // threads

        def client() -> None:
            with httpx.Client(base_url=url, headers=headers) as c:
                for _ in range(per):
                    assert c.post(f"/v1/sessions/{sid}/calls", json=body).status_code == 200

        client()  # warm-up
        started = time.perf_counter()
        pool = [threading.Thread(target=client) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return per * threads / (time.perf_counter() - started)


def _health_under_proposals(solver_processes: int) -> list[float]:
    with _server("--solver-processes", str(solver_processes)) as url:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        windows = [synthetic_window(s, 200, pending=600, slots_per_day=24).to_dict()
                   for s in (12, 13)]
        done = threading.Event()
        left = [len(windows)]
        lock = threading.Lock()

        def propose(window: dict[str, Any]) -> None:
            httpx.post(f"{url}/v1/proposal", headers=headers, timeout=300,
                       json={"state": window, "args": {"time_limit_s": 1.0}})
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
        requests = 200 if quick else 1600
        rps = {w: _throughput(w, f"{prefix}-w{w}", requests) for w in (1, 2)}
        health = {p: _health_under_proposals(p) for p in (1, 0)}
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)
        client.close()
    lines = [
        "## Services: session store, workers, `/health` under load",
        "",
        f"Session store: median ms per request that changes the session (a move inside "
        f"`backend.use(...)`, {repeats} repeats), against the same `Session.call` alone; "
        f"*warm* = the worker had the session cached (a version check + a compare-and-set), "
        f"*cold* = another worker (snapshot fetched, session rebuilt). Goal: Redis round trip "
        f"≤ {GOAL_ROUND_TRIP_MS:.0f} ms on a 30-day window.",
        "",
        "| days | store | request (ms) | call alone (ms) | store cost (ms) |",
        "|---:|---|---:|---:|---:|",
    ]
    for days, c in costs.items():
        for key in ("memory warm", "redis warm", "redis cold"):
            alone = c[f"{key.split()[0]} call only"]
            lines.append(f"| {days} | {key} | {c[key]:.3f} | {alone:.3f} | "
                         f"{c[key] - alone:+.3f} |")
    lines += [
        "",
        f"Requests/s of `get_overview` on one 30-day session, 8 client threads, {requests} "
        "requests, `smartflow serve --session-store redis://...`:",
        "",
        "| workers | requests/s | x 1 worker |",
        "|---:|---:|---:|",
    ]
    lines += [f"| {w} | {r:.0f} | {r / rps[1]:.2f}x |" for w, r in rps.items()]
    lines += [
        "",
        f"Goal: 2 workers ≥ {GOAL_WORKER_SPEEDUP}x one worker.",
        "",
        "`/health` latency (ms) while two proposals run (200-day, 24-period windows, 600 pending "
        "tasks, 1 s limit; their totals kernel holds the GIL for seconds):",
        "",
        "| solver calls | health calls | p50 | p99 | max |",
        "|---|---:|---:|---:|---:|",
    ]
    names = {1: "worker process (ours)", 0: "request thread (peer: before)"}
    for p, lat in health.items():
        lines.append(f"| {names[p]} | {len(lat)} | {_p(lat, 0.5):.1f} | {_p(lat, 0.99):.1f} | "
                     f"{max(lat):.1f} |")
    lines += ["", f"Goal: p99 ≤ {GOAL_HEALTH_P99_MS:.0f} ms."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
