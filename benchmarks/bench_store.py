"""Storage latency: seed, load_window and commit on SQLite (file and in memory), side by side with
saving / loading the whole state as a JSON file (the store-less baseline), and PostgreSQL when
``SMARTFLOW_PG_URL`` holds a server URL.

Per window size (13, 30, 120 days; seeded plain synthetic windows with task classes) and backend:
``seed_from_state`` into empty tables, ``load_window`` of the whole window, and ``commit`` of one
session's change log (every pending task placed first-fit plus a few moves, as an agent's coarse
pre-scheduling writes it). Medians over repeats, each commit on freshly seeded tables.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import Progress

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.store import Store

SIZES = (13, 30, 120)
USER = 1
BACKENDS = ("sqlite_file", "sqlite_memory", "postgresql")
T = TypeVar("T")
LABELS = {
    "json": "JSON file (baseline: whole state)",
    "sqlite_file": "SQLite file",
    "sqlite_memory": "SQLite in memory",
    "postgresql": "PostgreSQL (psycopg 3)",
}


def _pg_url() -> str | None:
    url = os.environ.get("SMARTFLOW_PG_URL", "")
    return url if url.startswith("postgresql") else None


@contextmanager
def _store(backend: str, tmp: Path) -> Iterator[Store]:
    """An empty store of ``backend`` (a fresh file / memory database / fresh tables)."""
    if backend == "sqlite_file":
        path = tmp / f"bench-{time.perf_counter_ns()}.db"
        store = Store.from_url(f"sqlite:///{path}")
    elif backend == "sqlite_memory":
        store = Store.from_url("sqlite://")
    else:
        url = _pg_url()
        assert url is not None
        store = Store.from_url(url, create=False)
        store.drop_tables()
        store.create_tables()
    try:
        yield store
    finally:
        store.dispose()


def _session(state: ScheduleState) -> Toolbox:
    """Every pending task placed first-fit (in its class window), then up to 5 moves."""
    tb = Toolbox(state)
    assert tb.state is not None
    for task in list(tb.state.pending_tasks()):
        runs = tb.state.grid.free_runs(min_len=task.need())
        if runs:
            day, start, _ = runs[0]
            tb.call("place", {"task_id": task.state_id, "day": day, "slot_start": start})
    moved = 0
    for task in list(tb.state.tasks):
        if moved >= 5 or task.status != "suggested" or task.embed_host is not None:
            continue
        runs = tb.state.grid.free_runs(min_len=task.slots[0].length)
        if runs:
            day, start, _ = runs[-1]
            before = len(tb.changes)
            tb.call("move", {"task_id": task.state_id, "new_day": day, "new_slot_start": start})
            moved += len(tb.changes) > before
    return tb


def _timed(fn: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def _measure(state: ScheduleState, backend: str, repeats: int, tmp: Path) -> dict[str, float]:
    seeds, loads, commits = [], [], []
    for _ in range(repeats):
        with _store(backend, tmp) as store:
            ms, _ = _timed(partial(store.seed_from_state, USER, state))
            seeds.append(ms)
            ms, loaded = _timed(partial(store.load_window, USER, state.window.day_mapping))
            loads.append(ms)
            tb = _session(loaded)
            assert tb.state is not None
            ms, result = _timed(partial(store.commit, USER, tb.state, tb.changes))
            commits.append(ms)
            assert result.ok, result
    return {"seed": statistics.median(seeds), "load": statistics.median(loads),
            "commit": statistics.median(commits)}


def _save(path: Path, state: ScheduleState) -> int:
    return path.write_text(state.to_json(), encoding="utf-8")


def _measure_json(state: ScheduleState, repeats: int, tmp: Path) -> dict[str, float]:
    path = tmp / "state.json"
    saves, loads, commits = [], [], []
    for _ in range(repeats):
        saves.append(_timed(partial(_save, path, state))[0])
        ms, loaded = _timed(partial(ScheduleState.from_json, path))
        loads.append(ms)
        tb = _session(loaded)
        assert tb.state is not None
        commits.append(_timed(partial(_save, path, tb.state))[0])
    return {"seed": statistics.median(saves), "load": statistics.median(loads),
            "commit": statistics.median(commits)}


def run(quick: bool = False) -> str:
    sizes = (13, 30) if quick else SIZES
    repeats = 3 if quick else 15
    backends = [b for b in BACKENDS if b != "postgresql" or _pg_url()]
    rows: dict[tuple[str, int], dict[str, float]] = {}
    info: dict[int, tuple[int, int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp_dir, Progress(
            transient=True, console=Console(stderr=True)) as progress:
        tmp = Path(tmp_dir)
        job = progress.add_task("store latency", total=len(sizes) * (len(backends) + 1))
        warm = synthetic_window(0, 7, variant="plain", with_task_classes=True)
        _measure_json(warm, 1, tmp)  # imports, SQL compilation caches, first connections
        for backend in backends:
            _measure(warm, backend, 1, tmp)
        for days in sizes:
            state = synthetic_window(days, days, variant="plain", with_task_classes=True)
            changes = len(_session(state.copy_state()).changes)
            periods = sum(b.length for t in state.tasks if t.embed_host is None for b in t.slots)
            info[days] = (len(state.tasks), periods, changes)
            rows[("json", days)] = _measure_json(state, repeats, tmp)
            progress.advance(job)
            for backend in backends:
                rows[(backend, days)] = _measure(state, backend, repeats, tmp)
                progress.advance(job)

    lines = [
        "## Store (SQLAlchemy: seed, load_window, commit)",
        "",
        f"Median ms over {repeats} repeats per window (seeded plain synthetic windows with task "
        "classes), every backend in one process on the same windows. *seed*: `seed_from_state` "
        "into empty tables (JSON: write the state file); *load*: `load_window` of the whole "
        "window (JSON: read + validate the file); *commit*: one transaction writing the session's "
        "change log (JSON: rewrite the whole file). Ratios are against the JSON file.",
        "",
        "| days | tasks | stored periods | changes committed |",
        "|---:|---:|---:|---:|",
    ]
    lines += [f"| {d} | {n} | {p} | {c} |" for d, (n, p, c) in info.items()]
    lines += [
        "",
        "| backend | days | seed (ms) | load (ms) | commit (ms) | load x JSON | commit x JSON |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for backend in ("json", *backends):
        for days in sizes:
            r, base = rows[(backend, days)], rows[("json", days)]
            lines.append(
                f"| {LABELS[backend]} | {days} | {r['seed']:.2f} | {r['load']:.2f} | "
                f"{r['commit']:.2f} | {r['load'] / base['load']:.1f}x | "
                f"{r['commit'] / base['commit']:.1f}x |")
    if "postgresql" not in backends:
        lines += ["", "PostgreSQL not measured (set `SMARTFLOW_PG_URL` to a server URL)."]
    lines += [
        "",
        "Reading: a commit writes only what changed (rows of the moved and placed tasks), in one "
        "transaction with optimistic checks; the JSON file rewrites everything and checks nothing. "
        "SQLite file commits include an fsync per transaction.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
