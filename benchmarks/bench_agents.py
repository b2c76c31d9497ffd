"""Concurrent agents on one server worker (issue 25): analyze_health latency under load.

Eight agents, each with its own session on a seeded 30-day window (task classes, the proposal
applied, study tasks moved onto the busiest days, as bench_loop makes them), call
``analyze_health`` for 70 rounds at once against one ``smartflow serve`` worker; the table gives
the latency percentiles of those calls. Two servers run the same script one after the other:
**ours** (this tree) and **today** (the code before the health evaluator: a checkout named by
``SMARTFLOW_BENCH_PEER``, or ``main``'s worktree when unset). Every call is a round of its
session's request and a request holds 60 rounds, so each agent opens a new session every
:data:`ROUNDS_PER_SESSION` rounds on both sides alike.

``python -m benchmarks.bench_agents [--quick]`` prints the markdown section.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-agents"
AGENTS = 8
ROUNDS = 70
ROUNDS_PER_SESSION = 35
DAYS = 30
GOAL_P99_MS = 100.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _server(root: Path) -> Iterator[str]:
    """One ``smartflow serve`` worker running ``root``'s code (in-memory sessions)."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(root), "SMARTFLOW_API_TOKENS": f"{TOKEN}:bench"}
    env.pop("SMARTFLOW_ACCESS_LOG", None)
    main = "from smartflow_engine.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", main, "serve", "--port", str(port)],
        env=env,
        cwd=root,
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
        else:
            raise RuntimeError(f"server of {root} did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def _agent(client: httpx.AsyncClient, window: dict[str, Any], rounds: int) -> list[float]:
    """``rounds`` analyze_health calls on a session of ``window``; their latencies in ms."""
    latencies: list[float] = []
    sid = ""
    for i in range(rounds):
        if i % ROUNDS_PER_SESSION == 0:
            made = await client.post("/v1/sessions", json={"state": window})
            made.raise_for_status()
            sid = made.json()["session_id"]
        t0 = time.perf_counter()
        out = await client.post(
            f"/v1/sessions/{sid}/calls", json={"tool": "analyze_health", "args": {}}
        )
        latencies.append((time.perf_counter() - t0) * 1000)
        out.raise_for_status()
        if out.json().get("status") != "ok":
            raise RuntimeError(f"analyze_health refused: {out.text[:300]}")
    return latencies


async def _agents(url: str, windows: list[dict[str, Any]], rounds: int) -> list[float]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=len(windows))
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=600, limits=limits) as c:
        await _agent(c, windows[0], 1)  # warm-up: imports, first model
        runs = await asyncio.gather(*(_agent(c, w, rounds) for w in windows))
    return [ms for run in runs for ms in run]


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _peer_root() -> Path | None:
    given = os.environ.get("SMARTFLOW_BENCH_PEER")
    return Path(given) if given else None


def measure(quick: bool = False) -> dict[str, dict[str, float]]:
    from benchmarks.bench_loop import disturbed_window

    agents = 2 if quick else AGENTS
    rounds = 6 if quick else ROUNDS
    windows = [disturbed_window(seed, DAYS, 2.0).to_dict() for seed in range(agents)]
    sides: dict[str, Path | None] = {"ours": ROOT, "today": _peer_root()}
    out: dict[str, dict[str, float]] = {}
    for side, root in sides.items():
        if root is None:
            continue
        with _server(root) as url:
            t0 = time.perf_counter()
            lat = asyncio.run(_agents(url, windows, rounds))
            wall = time.perf_counter() - t0
        out[side] = {
            "calls": len(lat),
            "p50": _p(lat, 0.5),
            "p99": _p(lat, 0.99),
            "max": max(lat),
            "wall_s": wall,
            "load": os.getloadavg()[0],
        }
    return out


def run(quick: bool = False) -> str:
    figures = measure(quick)
    agents, rounds = (2, 6) if quick else (AGENTS, ROUNDS)
    lines = [
        "## Concurrent agents on one worker: analyze_health latency (issue 25)",
        "",
        f"{agents} agents x {rounds} rounds of `analyze_health`, all at once against one "
        f"`smartflow serve` worker (in-memory sessions), each agent on its own seeded {DAYS}-day "
        "window (bench_loop's disturbed windows); a new session every "
        f"{ROUNDS_PER_SESSION} rounds (a request holds 60). Latency in ms, from the client.",
        "",
        "| server | calls | p50 | p99 | max | all agents done (s) | load avg |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for side, f in figures.items():
        mark = "" if side != "ours" else (" ✓" if f["p99"] <= GOAL_P99_MS else " ✗")
        lines.append(
            f"| {side} | {int(f['calls'])} | {f['p50']:.1f} | {f['p99']:.1f}{mark} | "
            f"{f['max']:.1f} | {f['wall_s']:.1f} | {f['load']:.1f} |"
        )
    if "today" in figures:
        ratio = figures["today"]["p99"] / figures["ours"]["p99"]
        lines += ["", f"p99 today ÷ ours: {ratio:.1f}x. Goal: ours p99 ≤ {GOAL_P99_MS:.0f} ms."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
