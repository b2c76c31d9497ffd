"""Latency of every read and write tool through ``Toolbox.call`` on 13-, 30- and 120-day windows.

Peer: the same call when the occupancy grid is rebuilt from the task list before every call (what an
engine without an incrementally kept grid does). Goal: median < 0.5 ms per call on 30 days.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
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
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
