"""Latency of every read and write tool through ``Toolbox.call`` on 13-, 30- and 120-day windows.

Peer: the same call when the occupancy grid is rebuilt from the task list before every call (what an
engine without an incrementally kept grid does). Goal: median < 0.5 ms per call on 30 days.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import Progress

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state import Grid
from smartflow_engine.state.synthetic import synthetic_window

SIZES = (13, 30, 120)
GOAL_MS = 0.5


def _calls(state: ScheduleState) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """Per tool label, a cycle of calls that leaves the state as it found it."""
    pending = state.pending_tasks()[0]
    grid = state.grid
    placed = next(
        t
        for t in state.placed_tasks()
        if not state.is_locked(t)
        and len(t.slots) == 1
        and t.embed_host is None
        and t.state_id not in state.guests_by_host()
    )
    runs = grid.free_runs(min_len=max(pending.need(), placed.slots[0].length))
    (d1, s1, _), (d2, s2, _) = runs[0], runs[-1]
    locked = np.isin(grid.owner, [t.state_id for t in state.tasks if t.locked])
    busy_day = int(locked.sum(axis=1).argmax()) + 1
    busy_slot = int(locked[busy_day - 1].argmax()) + 1
    home = placed.slots[0]
    others = [
        t
        for t in state.placed_tasks()
        if not state.is_locked(t)
        and len(t.slots) == 1
        and t is not placed
        and t.slots[0].length == home.length
        and t.embed_host is None
        and t.state_id not in state.guests_by_host()
    ]
    tid = placed.state_id
    cycles: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
        ("get_overview", [("get_overview", {})]),
        ("query_range (day)", [("query_range", {"day": busy_day})]),
        (
            "query_range (span)",
            [("query_range", {"day": busy_day, "slot_start": 3, "slot_end": 8})],
        ),
        ("find_free", [("find_free", {"duration": 3})]),
        ("list_tasks", [("list_tasks", {})]),
        ("get_task_info", [("get_task_info", {"task_id": tid})]),
        (
            "place + unplace",
            [
                ("place", {"task_id": pending.state_id, "day": d1, "slot_start": s1}),
                ("unplace", {"task_id": pending.state_id}),
            ],
        ),
        (
            "place (conflict)",
            [
                ("place", {"task_id": pending.state_id, "day": busy_day, "slot_start": busy_slot}),
            ],
        ),
        (
            "move there and back",
            [
                ("move", {"task_id": tid, "new_day": d2, "new_slot_start": s2}),
                ("move", {"task_id": tid, "new_day": home.day, "new_slot_start": home.slot_start}),
            ],
        ),
        (
            "batch_move there and back",
            [
                ("batch_move", {"moves": [{"task_id": tid, "new_day": d2, "new_slot_start": s2}]}),
                (
                    "batch_move",
                    {
                        "moves": [
                            {"task_id": tid, "new_day": home.day, "new_slot_start": home.slot_start}
                        ]
                    },
                ),
            ],
        ),
    ]
    if others:
        cycles.append(
            ("swap (twice)", [("swap", {"task_a": tid, "task_b": others[0].state_id})] * 2)
        )
    return cycles


def _time(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


def _measure(
    state: ScheduleState, calls: list[tuple[str, dict[str, Any]]], repeats: int, rebuild: bool
) -> float:
    tb = Toolbox(state, self_check=False)

    def cycle() -> None:
        for name, args in calls:
            if rebuild:
                state._grid = Grid.build(state)
            tb.call(name, args)

    cycle()  # warm-up, and a check that the cycle really restores the state
    return _time(cycle, repeats) / len(calls)


def run(quick: bool = False) -> str:
    sizes = (13, 30) if quick else SIZES
    seeds = range(2 if quick else 5)
    repeats = 20 if quick else 200
    rows: dict[tuple[str, int], tuple[list[float], list[float]]] = {}
    with Progress(transient=True) as progress:
        job = progress.add_task("tool latency", total=len(sizes) * len(seeds))
        for days in sizes:
            for seed in seeds:
                state = synthetic_window(seed, days, variant="plain")
                before = state.to_json()
                for label, calls in _calls(state):
                    ours = _measure(state, calls, repeats, rebuild=False)
                    peer = _measure(state, calls, repeats, rebuild=True)
                    mine, theirs = rows.setdefault((label, days), ([], []))
                    mine.append(ours)
                    theirs.append(peer)
                assert state.to_json() == before, "a benchmark cycle changed the window"
                progress.advance(job)
    lines = [
        "## Read and write tools (`Toolbox.call`)",
        "",
        f"Median ms per call over {len(seeds)} seeded plain windows x {repeats} repeats. Peer: the "
        "grid rebuilt from the tasks before each call. Goal: < 0.5 ms on 30 days.",
        "",
        "| tool | "
        + " | ".join(f"{d} days (ms)" for d in sizes)
        + " | "
        + " | ".join(f"rebuild/ours {d}d" for d in sizes)
        + " |",
        "|---|" + "---:|" * (2 * len(sizes)),
    ]
    labels = list(dict.fromkeys(label for label, _ in rows))
    for label in labels:
        ours_cells, ratio_cells = [], []
        for d in sizes:
            mine, theirs = rows.get((label, d), ([], []))
            if not mine:
                ours_cells.append("–")
                ratio_cells.append("–")
                continue
            m, p = statistics.median(mine), statistics.median(theirs)
            flag = " ✗" if d == 30 and m >= GOAL_MS else ""
            ours_cells.append(f"{m:.3f}{flag}")
            ratio_cells.append(f"{p / m:.1f}x")
        lines.append(
            f"| {label} | " + " | ".join(ours_cells) + " | " + " | ".join(ratio_cells) + " |"
        )
    over = [
        label
        for label in labels
        if rows.get((label, 30)) and statistics.median(rows[(label, 30)][0]) >= GOAL_MS
    ]
    lines += [
        "",
        f"30-day goal (< {GOAL_MS} ms): "
        + ("met by every tool." if not over else "missed by " + ", ".join(over) + " (✗)."),
    ]
    return "\n".join(lines) + "\n\n" + loop_section(quick)


# ---------------------------------------------------------------------------------- loop tools
LOOP_SIZES: tuple[tuple[int, int], ...] = (
    (13, 12),
    (30, 12),
    (60, 12),
    (120, 12),
    (365, 12),
    (1000, 24),
)
LOOP_GOALS_MS = {  # issue 25
    ("analyze_health", 30): 25.0,
    ("analyze_health", 120): 60.0,
    ("analyze_health", 1000): 1000.0,
    ("write_with_evidence", 120): 5.0,
}
LOOP_TOOLS = (
    ("analyze_health", "analyze_health"),
    ("analyze_health_after_write", "analyze_health right after a write (move)"),
    ("four_dimension_tools", "the four dimension tools, one after another"),
    (
        "four_dimension_tools_after_write",
        "the four dimension tools right after a write (interleaved with analyze_health's)",
    ),
    ("query_target_tasks", "query_target_tasks (first action)"),
    ("query_available_slots", "query_available_slots (its first task)"),
    ("write_with_evidence", "a write with its evidence line (move)"),
)


def _peer_root() -> tuple[Path | None, Callable[[], None]]:
    """The checkout of today's code to time beside ours: ``SMARTFLOW_BENCH_PEER``, else a
    temporary git worktree of ``main`` (removed afterwards); ``None`` without git."""
    given = os.environ.get("SMARTFLOW_BENCH_PEER")
    if given:
        return Path(given), lambda: None
    here = Path(__file__).resolve().parent.parent
    tmp = Path(tempfile.mkdtemp(prefix="smartflow-peer-")) / "main"
    made = subprocess.run(
        ["git", "-C", str(here), "worktree", "add", "--detach", str(tmp), "main"],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        return None, lambda: None

    def drop() -> None:
        subprocess.run(
            ["git", "-C", str(here), "worktree", "remove", "--force", str(tmp)],
            capture_output=True,
            check=False,
        )

    return tmp, drop


def _worker(root: Path, spec: dict[str, Any], folder: Path, name: str) -> dict[str, Any]:
    """Run benchmarks/health_worker.py with ``root``'s package on the path."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    script = Path(__file__).resolve().parent / "health_worker.py"
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, str(script), str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(root),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def loop_section(quick: bool = False, sizes: tuple[tuple[int, int], ...] | None = None) -> str:
    """The agent loop's tools by window size, ours beside today's code (one run); each size's
    figures also go to stderr as they come (a long run that fails late keeps them)."""
    from benchmarks.bench_loop import disturbed_window

    sizes = sizes or (LOOP_SIZES[:3] if quick else LOOP_SIZES)
    ours_root = Path(__file__).resolve().parent.parent
    peer_root, drop = _peer_root()
    folder = Path(tempfile.mkdtemp(prefix="smartflow-loop-"))
    results: dict[str, dict[str, dict[str, Any]]] = {"ours": {}, "peer": {}}
    try:
        for days, spd in sizes:
            state = disturbed_window(0, days, 2.0, slots_per_day=spd)
            path = folder / f"w{days}x{spd}.json"
            path.write_text(state.to_json(), encoding="utf-8")
            name = f"{days}x{spd}"
            big = days >= 365
            for side, root in (("ours", ours_root), ("peer", peer_root)):
                if root is None:
                    continue
                spec = {
                    "windows": [
                        {
                            "name": name,
                            "path": str(path),
                            "repeats": 1 if big and side == "peer" else 3 if big else 7,
                        }
                    ]
                }
                results[side].update(_worker(root, spec, folder, f"{side}-{name}"))
                print(json.dumps({side: {name: results[side][name]}}), file=sys.stderr, flush=True)
    finally:
        drop()
    return loop_table(results, sizes)


def loop_table(
    results: dict[str, dict[str, dict[str, Any]]], sizes: tuple[tuple[int, int], ...]
) -> str:
    """The loop tools' table from the workers' figures (``{"ours"|"peer": {"DxP": {...}}}``)."""
    names = [f"{d}x{s}" for d, s in sizes]
    lines = [
        "## The agent loop's tools by window size (issue 25)",
        "",
        "Median ms per call through a `Session` on one seeded window per size (task classes, the "
        "proposal applied, 3-6 study tasks then moved onto the busiest days, as bench_loop makes "
        "them), each side in a fresh process on the same saved window: **ours** (this tree) and "
        "**today** (`main`, or `SMARTFLOW_BENCH_PEER`). A write is `move` with its evidence "
        "line (the mean of a move there and back). analyze_health right after a write: the "
        "call timed after each move there or back (untimed), as the loop meets it; the four "
        "dimension tools are timed the same way, interleaved with it (two moves each in turn), "
        "and the after-a-write ratio compares the two. Repeats: 7 "
        "(3 on 365 days and more; today's code once there). Goals: analyze_health <= 25 ms at 30 days, <= 60 ms at 120 days, "
        "<= 1 s at 1000 x 24, at most 3x the four dimension tools; a write with its evidence "
        "line <= 5 ms at 120 days.",
        "",
        "| tool | side | "
        + " | ".join(n.replace("x12", " d").replace("x24", " d x 24") for n in names)
        + " |",
        "|---|---|" + "---:|" * len(names),
    ]

    def cell(side: str, name: str, key: str) -> float | None:
        value = results[side].get(name, {}).get(key)
        return float(value) if isinstance(value, int | float) else None

    for key, label in LOOP_TOOLS:
        for side in ("ours", "peer"):
            cells = []
            for (days, _), name in zip(sizes, names, strict=True):
                v = cell(side, name, key)
                goal = LOOP_GOALS_MS.get((key, days)) if side == "ours" else None
                flag = " ✗" if goal is not None and v is not None and v > goal else ""
                cells.append("–" if v is None else f"{v:,.1f}{flag}")
            lines.append(
                f"| {label} | {'ours' if side == 'ours' else 'today'} | " + " | ".join(cells) + " |"
            )
    ratio_rows = (
        ("analyze_health: today ÷ ours", "peer", "analyze_health", "ours", "analyze_health"),
        (
            "analyze_health ÷ four dimension tools (ours)",
            "ours",
            "analyze_health",
            "ours",
            "four_dimension_tools",
        ),
        (
            "analyze_health after a write ÷ four dimension tools after a write (ours)",
            "ours",
            "analyze_health_after_write",
            "ours",
            "four_dimension_tools_after_write",
        ),
        (
            "analyze_health ÷ four dimension tools (today)",
            "peer",
            "analyze_health",
            "peer",
            "four_dimension_tools",
        ),
        (
            "query_target_tasks: today ÷ ours",
            "peer",
            "query_target_tasks",
            "ours",
            "query_target_tasks",
        ),
        (
            "query_available_slots: today ÷ ours",
            "peer",
            "query_available_slots",
            "ours",
            "query_available_slots",
        ),
        (
            "write with evidence: today ÷ ours",
            "peer",
            "write_with_evidence",
            "ours",
            "write_with_evidence",
        ),
    )
    for label, s1, k1, s2, k2 in ratio_rows:
        cells = []
        for name in names:
            a, b = cell(s1, name, k1), cell(s2, name, k2)
            cells.append("–" if a is None or not b else f"{a / b:,.1f}x")
        lines.append(f"| {label} | ratio | " + " | ".join(cells) + " |")
    flags = []
    for name in names:
        f_ours = results["ours"].get(name, {}).get("fixable")
        f_peer = results["peer"].get(name, {}).get("fixable")
        flags.append(f"{name}: ours {f_ours}, today {f_peer}")
    lines += [
        "",
        "Fixable flags of the offered actions (same window, both sides): " + "; ".join(flags) + ".",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if "--loop" in sys.argv:
        chosen = None
        if "--sizes" in sys.argv:  # e.g. --sizes 365x12,1000x24
            spec = sys.argv[sys.argv.index("--sizes") + 1]
            chosen = tuple(
                (int(d), int(p)) for d, p in (item.split("x") for item in spec.split(","))
            )
        if "--from-json" in sys.argv:  # tables from the stderr lines of earlier runs
            merged: dict[str, dict[str, dict[str, Any]]] = {"ours": {}, "peer": {}}
            for arg in sys.argv[sys.argv.index("--from-json") + 1 :]:
                for line in Path(arg).read_text(encoding="utf-8").splitlines():
                    if line.startswith("{"):
                        for side, figures in json.loads(line).items():
                            merged[side].update(figures)
            print(loop_table(merged, chosen or LOOP_SIZES))
        else:
            print(loop_section(quick="--quick" in sys.argv, sizes=chosen))
    else:
        print(run(quick="--quick" in sys.argv))
