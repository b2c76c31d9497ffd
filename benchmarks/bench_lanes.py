"""Solver lanes (issue 44 item 7): how long a small solving call waits while another user's
longest allowed call runs, on one server worker with the old layout against the new.

- *old*: one solver process serves every call (``SolverPool(1, short_lane=False)``, the layout
  before issue 44): a small call queues behind the long one.
- *new*: the default pool: the long lane's process and a short lane of its own for calls whose
  time limit is within ``SHORT_CALL_S`` (``SolverPool(1)``).

Both servers run in this process (FastAPI through its ``TestClient``; the solver calls in their
real worker processes), both up for the whole run and measured alternately, round by round (the
first layout of a round alternates). A round on a layout: user B posts ``/v1/proposal`` on a
seeded 120-day tight window with the server's cap as its limit (the longest call the server
allows); user A's small calls, ``/v1/feasibility`` with ``time_limit_s=0.1`` on seeded 14-day
windows, start at seeded offsets into the long call, each from its own thread; each small
call's latency is its request's round trip. Both layouts get the same windows and offsets.

``python -m benchmarks.bench_lanes [--quick]`` prints the section; the full run also writes
``benchmarks/results_lanes.md``.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.api.solver_pool import SHORT_CALL_S, SolverPool

ROOT = Path(__file__).resolve().parent.parent
TOKENS = {"tok-a": "alice", "tok-b": "bob"}
SMALL_LIMIT_S = 0.1
# Goal: while the longest allowed call runs, a small call's p99 stays within the short lane's
# own bound (a call there waits only for short calls).
GOAL_P99_S = SHORT_CALL_S
LAYOUTS = {"old": False, "new": True}  # short_lane


def _client(short_lane: bool, cap_s: float) -> TestClient:
    app = create_app(TOKENS, solver_processes=1, max_time_limit_s=cap_s)
    app.state.ctx.solver = SolverPool(1, short_lane=short_lane)
    return TestClient(app)


def _post(client: TestClient, token: str, path: str, state: dict[str, Any], limit: float) -> float:
    """Seconds of one stateless solving call (it must succeed)."""
    started = time.perf_counter()
    got = client.post(
        path,
        headers={"Authorization": f"Bearer {token}"},
        json={"state": state, "args": {"time_limit_s": limit}},
    )
    seconds = time.perf_counter() - started
    if got.status_code != 200:
        raise RuntimeError(f"{path}: {got.status_code} {got.text[:200]}")
    return seconds


def _round(
    client: TestClient,
    long_window: dict[str, Any],
    small: list[tuple[float, dict[str, Any]]],
    cap_s: float,
) -> tuple[list[tuple[float, float]], float]:
    """One long call and the small calls at their offsets into it: each small call's offset
    and seconds, and the long call's seconds."""
    latencies: list[tuple[float, float]] = []
    long_s: list[float] = []
    lock = threading.Lock()
    t0 = time.perf_counter()

    def long_call() -> None:
        long_s.append(_post(client, "tok-b", "/v1/proposal", long_window, cap_s))

    def small_call(offset: float, window: dict[str, Any]) -> None:
        time.sleep(max(0.0, t0 + offset - time.perf_counter()))
        seconds = _post(client, "tok-a", "/v1/feasibility", window, SMALL_LIMIT_S)
        with lock:
            latencies.append((offset, seconds))

    threads = [threading.Thread(target=long_call)]
    threads += [threading.Thread(target=small_call, args=s) for s in small]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, long_s[0]


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(quick: bool = False) -> dict[str, Any]:
    """Per layout the small calls' seconds and the long calls' seconds, and the settings."""
    cap_s = 2.0 if quick else 10.0
    rounds, per_round = (2, 5) if quick else (10, 20)
    plans = []
    for r in range(rounds):
        rng = random.Random(r)
        offsets = sorted(rng.uniform(0.05, 0.9) * cap_s for _ in range(per_round))
        small = [
            (o, synthetic_window(1000 + 100 * r + i, 14).to_dict()) for i, o in enumerate(offsets)
        ]
        plans.append((synthetic_window(r, 120, variant="tight").to_dict(), small))
    small_s: dict[str, list[float]] = {name: [] for name in LAYOUTS}
    slowest: dict[str, list[tuple[float, int, float]]] = {name: [] for name in LAYOUTS}
    long_s: dict[str, list[float]] = {name: [] for name in LAYOUTS}
    loads = []
    clients = {name: _client(lane, cap_s) for name, lane in LAYOUTS.items()}
    try:
        for client in clients.values():
            client.__enter__()  # the pool's processes start with the server
            warm = synthetic_window(999, 14).to_dict()
            _post(client, "tok-a", "/v1/feasibility", warm, SMALL_LIMIT_S)  # both lanes warm
            _post(client, "tok-b", "/v1/feasibility", warm, cap_s)
        for r, (long_window, small) in enumerate(plans):
            loads.append(os.getloadavg()[0])
            order = list(LAYOUTS) if r % 2 == 0 else list(reversed(LAYOUTS))
            for name in order:
                latencies, seconds = _round(clients[name], long_window, small, cap_s)
                small_s[name] += [seconds for _, seconds in latencies]
                slowest[name] += [(seconds, r, offset) for offset, seconds in latencies]
                long_s[name].append(seconds)
    finally:
        for client in clients.values():
            client.__exit__(None, None, None)
    return {
        "cap_s": cap_s,
        "rounds": rounds,
        "per_round": per_round,
        "small": small_s,
        "slowest": {name: sorted(v, reverse=True)[:3] for name, v in slowest.items()},
        "long": long_s,
        "loads": loads,
    }


def run(quick: bool = False) -> str:
    m = measure(quick)
    cap_s, small, long_s = m["cap_s"], m["small"], m["long"]
    labels = {
        "old": "old: one process for every call (`short_lane=False`)",
        "new": "new: long lane + short lane (default)",
    }
    lines = [
        "## Solver lanes: a small call while another user's longest call runs",
        "",
        f"One server worker, in-process (FastAPI `TestClient`, solver calls in their worker "
        f"processes), server cap {cap_s:g} s. {m['rounds']} rounds per layout, alternating "
        f"which layout goes first; in each, user B's `/v1/proposal` (120-day tight window, "
        f"`time_limit_s={cap_s:g}`, the longest call the server allows) and {m['per_round']} "
        f"of user A's `/v1/feasibility` calls (`time_limit_s={SMALL_LIMIT_S:g}`, 14-day "
        f"windows) started at seeded offsets of 5-90 % into it. Same seeded windows and "
        f"offsets for both layouts. Small-call latency is the request's round trip (seconds); "
        f"the long call's is its own.",
        "",
        "| layout | small calls | p50 (s) | p99 (s) | max (s) | long call median (s) "
        "| long call max (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label in labels.items():
        s, ls = small[name], long_s[name]
        lines.append(
            f"| {label} | {len(s)} | {statistics.median(s):.3f} | {_p(s, 0.99):.3f} | "
            f"{max(s):.3f} | {statistics.median(ls):.2f} | {max(ls):.2f} |"
        )
    p99 = {name: _p(small[name], 0.99) for name in LAYOUTS}
    p50 = {name: statistics.median(small[name]) for name in LAYOUTS}
    met = p99["new"] <= GOAL_P99_S
    loads = m["loads"]
    worst = "; ".join(
        f"{seconds:.3f} s (round {r + 1}, {offset:.1f} s into the long call)"
        for seconds, r, offset in m["slowest"]["new"]
    )
    lines += [
        "",
        f"Old / new: p50 {p50['old'] / p50['new']:.0f}x, p99 {p99['old'] / p99['new']:.0f}x. "
        f"Goal (p99 of the small call ≤ {GOAL_P99_S:g} s, `SHORT_CALL_S`, while the longest "
        f"call runs): {'met' if met else 'NOT met'} ({p99['new']:.3f} s). The new layout's "
        f"three slowest small calls: {worst}.",
        "",
        f"The long call's limit is {cap_s:g} s; its slowest round trip was "
        f"{max(long_s['old']):.2f} s (old) and {max(long_s['new']):.2f} s (new), the "
        f"request's HTTP, the window's trip to the solver process and back included. "
        f"1-minute load average "
        f"before the rounds: {min(loads):.2f}-{max(loads):.2f} (other engineers' work "
        f"included).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = run(quick="--quick" in sys.argv)
    print(text)
    if "--quick" not in sys.argv:
        (ROOT / "benchmarks" / "results_lanes.md").write_text(text, encoding="utf-8")
