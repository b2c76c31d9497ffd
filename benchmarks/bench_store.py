"""Storage latency: seed, load_window and commit on SQLite (file and in memory), side by side with
saving / loading the whole state as a JSON file (the store-less baseline), and on the running
PostgreSQL and MariaDB servers (``SMARTFLOW_PG_URL`` / ``SMARTFLOW_MARIADB_URL``, defaulting to
127.0.0.1; a database of the run's own is created and dropped; ``off`` leaves a server out).

Per window size (13, 30, 120 days; seeded plain synthetic windows with task classes) and backend:
``seed_from_state`` of one user (servers: each repeat another user in the same tables),
``load_window`` of the whole window, and ``commit`` of one session's change log (every pending
task placed first-fit plus a few moves, as an agent's coarse pre-scheduling writes it). Medians
over repeats, each commit on its freshly seeded user.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
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
from smartflow_engine.store import models as m

SIZES = (13, 30, 120)
USER = 1
BACKENDS = ("sqlite_file", "sqlite_memory", "postgresql", "mariadb")
T = TypeVar("T")
LABELS = {
    "json": "JSON file (baseline: whole state)",
    "sqlite_file": "SQLite file",
    "sqlite_memory": "SQLite in memory",
    "postgresql": "PostgreSQL (psycopg 3)",
    "mariadb": "MariaDB (PyMySQL)",
}
SERVER_URLS = {
    "postgresql": ("SMARTFLOW_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"),
    "mariadb": (
        "SMARTFLOW_MARIADB_URL",
        "mysql+pymysql://root@127.0.0.1:3306/test?charset=utf8mb4",
    ),
}


@contextmanager
def _server_databases() -> Iterator[dict[str, str]]:
    """A throwaway database on each reachable server (dropped at the end): backend → URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"smartflow_bench_{uuid.uuid4().hex[:10]}"
    made: dict[str, str] = {}
    admins = {}
    for kind, (env, default) in SERVER_URLS.items():
        url = os.environ.get(env, default)
        if url == "off":
            continue
        admin = create_engine(make_url(url), isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f"CREATE DATABASE {name}"))
        except Exception as exc:
            print(
                f"bench_store: {kind} at {url} unreachable ({exc}); not measured", file=sys.stderr
            )
            admin.dispose()
            continue
        admins[kind] = admin
        made[kind] = make_url(url).set(database=name).render_as_string(hide_password=False)
    try:
        yield made
    finally:
        for store in _ENGINES.values():
            store.dispose()
        _ENGINES.clear()
        for kind, admin in admins.items():
            with admin.connect() as conn:
                force = " WITH (FORCE)" if kind == "postgresql" else ""
                conn.execute(text(f"DROP DATABASE IF EXISTS {name}{force}"))
            admin.dispose()


_SERVERS: dict[str, str] = {}
_ENGINES: dict[str, Store] = {}


@contextmanager
def _store(backend: str, tmp: Path, *, empty: bool = True) -> Iterator[Store]:
    """A store of ``backend``: a fresh file / memory database, or the server's tables (emptied
    unless ``empty=False``)."""
    if backend == "sqlite_file":
        path = tmp / f"bench-{time.perf_counter_ns()}.db"
        store = Store.from_url(f"sqlite:///{path}")
    elif backend == "sqlite_memory":
        store = Store.from_url("sqlite://")
    else:
        from sqlalchemy import text

        # One store (engine, pool, compiled-statement cache) per server for the whole run, as
        # in a server process; only the tables are emptied between repeats.
        if backend not in _ENGINES:
            _ENGINES[backend] = Store.from_url(_SERVERS[backend])
        store = _ENGINES[backend]
        names = [t.__tablename__ for t in reversed(m.TABLES) if empty]
        with store.engine.begin() as conn:  # empty tables, ids restarted (no DDL per repeat)
            if backend == "postgresql":
                if names:
                    conn.execute(text(f"TRUNCATE {', '.join(names)} RESTART IDENTITY CASCADE"))
            else:
                conn.execute(text("SET FOREIGN_KEY_CHECKS=0"))
                for table in names:
                    conn.execute(text(f"TRUNCATE TABLE {table}"))
                conn.execute(text("SET FOREIGN_KEY_CHECKS=1"))
    try:
        yield store
    finally:
        if backend.startswith("sqlite"):
            store.dispose()


def _session(state: ScheduleState) -> Toolbox:
    """Every pending task placed first-fit (the first free run its class window and banned
    periods allow), then up to 5 moves (to the last free run the tool accepts)."""
    tb = Toolbox(state)
    assert tb.state is not None
    for task in list(tb.state.pending_tasks()):
        tc = tb.state.task_class(task.category_id) if task.category_id is not None else None
        first = tc.start_day if tc is not None and tc.start_day is not None else 1
        last = tc.end_day if tc is not None and tc.end_day is not None else tb.state.num_days
        for day, start, _ in tb.state.grid.free_runs(min_len=task.need()):
            if not first <= day <= last:
                continue
            before = len(tb.changes)  # the first free run the tool accepts (banned periods)
            tb.call("place", {"task_id": task.state_id, "day": day, "slot_start": start})
            if len(tb.changes) > before:
                break
    moved = 0
    for task in list(tb.state.tasks):
        if moved >= 5 or task.status != "suggested" or task.embed_host is not None:
            continue
        for day, start, _ in reversed(tb.state.grid.free_runs(min_len=task.slots[0].length)):
            before = len(tb.changes)
            tb.call("move", {"task_id": task.state_id, "new_day": day, "new_slot_start": start})
            if len(tb.changes) > before:
                moved += 1
                break
    return tb


def _timed(fn: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def _schedstat(tid: int | str) -> tuple[float, float]:
    """(ms on a CPU, ms waiting for one) of a thread so far (Linux ``schedstat``, ns)."""
    run, wait, _ = Path(f"/proc/{tid}/schedstat").read_text().split()
    return int(run) / 1e6, int(wait) / 1e6


def _server_thread(store: Store) -> int | None:
    """The OS thread serving the pooled connection the next commit will use (the pool holds one
    idle connection between the benchmark's sequential calls): PostgreSQL's backend process,
    MariaDB's connection thread; ``None`` when /proc does not show it."""
    from sqlalchemy import text

    query = {
        "postgresql": "SELECT pg_backend_pid()",
        "mysql": "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
    }.get(store.engine.dialect.name)
    if query is None:
        return None
    with store.engine.connect() as conn:
        tid = int(conn.execute(text(query)).scalar_one())
    return tid if Path(f"/proc/{tid}/schedstat").exists() else None


def _measure(state: ScheduleState, backend: str, repeats: int, tmp: Path) -> dict[str, float]:
    """Per repeat: seed, load and commit one user's window. SQLite: a fresh database each time.
    Servers: the tables are emptied once, then each repeat is another user (ids numbered by the
    database) in the same tables, as users share a production database; emptying them per
    repeat (TRUNCATE recreates the table's file) made every commit pay the file's growth, which
    on MariaDB alone was some 30 ms of a 120-day commit."""
    seeds, loads, commits, cpus = [], [], [], []
    server_cpu, waits = [], []  # the server thread's CPU; both threads' waits for a CPU
    server = not backend.startswith("sqlite")
    for i in range(repeats):
        user = USER + i if server else USER
        with _store(backend, tmp, empty=not server or i == 0) as store:
            ms, _ = _timed(partial(store.seed_from_state, user, state, keep_ids=not server))
            seeds.append(ms)
            ms, loaded = _timed(partial(store.load_window, user, state.window.day_mapping))
            loads.append(ms)
            tb = _session(loaded)
            assert tb.state is not None
            tid = _server_thread(store) if server else None
            me = f"self/task/{threading.get_native_id()}"
            before = (_schedstat(me), _schedstat(tid) if tid else (0.0, 0.0))
            cpu = time.process_time()
            ms, result = _timed(partial(store.commit, user, tb.state, tb.changes))
            cpus.append((time.process_time() - cpu) * 1000)
            after = (_schedstat(me), _schedstat(tid) if tid else (0.0, 0.0))
            commits.append(ms)
            assert result.ok, result
            if tid is not None and _server_thread(store) == tid:
                server_cpu.append(after[1][0] - before[1][0])
                waits.append(after[0][1] - before[0][1] + after[1][1] - before[1][1])
    return {
        "seed": statistics.median(seeds),
        "load": statistics.median(loads),
        "commit": statistics.median(commits),
        "commit_cpu": statistics.median(cpus),
        "commit_min": min(commits),
        "server_cpu": statistics.median(server_cpu) if server_cpu else float("nan"),
        "cpu_wait": statistics.median(waits) if waits else float("nan"),
    }


def _ms(value: float) -> str:
    return "-" if value != value else f"{value:.2f}"  # NaN: not measured


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
    return {
        "seed": statistics.median(saves),
        "load": statistics.median(loads),
        "commit": statistics.median(commits),
        "commit_cpu": float("nan"),
        "commit_min": min(commits),
        "server_cpu": float("nan"),
        "cpu_wait": float("nan"),
    }


def run(quick: bool = False, repeats: int | None = None) -> str:
    """The results table; ``repeats`` overrides the repeat count (15, 3 when ``quick``)."""
    sizes = (13, 30) if quick else SIZES
    repeats = repeats if repeats is not None else 3 if quick else 15
    rows: dict[tuple[str, int], dict[str, float]] = {}
    info: dict[int, tuple[int, int, int]] = {}
    load_before = os.getloadavg()
    with (
        tempfile.TemporaryDirectory() as tmp_dir,
        _server_databases() as servers,
        Progress(transient=True, console=Console(stderr=True)) as progress,
    ):
        _SERVERS.clear()
        _SERVERS.update(servers)
        backends = [b for b in BACKENDS if b.startswith("sqlite") or b in servers]
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
        "of one user (SQLite: a fresh database; servers: one engine for the run, each repeat "
        "another user in the same tables; JSON: write the state file); *load*: `load_window` of the whole "
        "window (JSON: read + validate the file); *commit*: one transaction writing the session's "
        "change log (JSON: rewrite the whole file). Ratios are against the JSON file.",
        "",
        "| days | tasks | stored periods | changes committed |",
        "|---:|---:|---:|---:|",
    ]
    lines += [f"| {d} | {n} | {p} | {c} |" for d, (n, p, c) in info.items()]
    lines += [
        "",
        "| backend | days | seed (ms) | load (ms) | commit (ms) | commit min (ms) "
        "| commit CPU (ms) | server CPU (ms) | waiting for a CPU (ms) | load x JSON "
        "| commit x JSON |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for backend in ("json", *backends):
        for days in sizes:
            r, base = rows[(backend, days)], rows[("json", days)]
            lines.append(
                f"| {LABELS[backend]} | {days} | {r['seed']:.2f} | {r['load']:.2f} | "
                f"{r['commit']:.2f} | {r['commit_min']:.2f} | {_ms(r['commit_cpu'])} | "
                f"{_ms(r['server_cpu'])} | {_ms(r['cpu_wait'])} | "
                f"{r['load'] / base['load']:.1f}x | {r['commit'] / base['commit']:.1f}x |"
            )
    for kind in ("postgresql", "mariadb"):
        if kind not in backends:
            lines += ["", f"{LABELS[kind]} not measured (server unreachable or set off)."]
    lines += [
        "",
        "Reading: a commit writes only what changed (rows of the moved and placed tasks), in one "
        "transaction with optimistic checks; the JSON file rewrites everything and checks nothing. "
        "SQLite file commits include an fsync per transaction. Medians per column. *commit "
        "CPU*: the benchmark process's own CPU time during the commit (Python, SQLAlchemy, the "
        "driver); *server CPU*: the CPU time of the database thread serving the connection "
        "(PostgreSQL backend, MariaDB connection thread; Linux schedstat); *waiting for a CPU*: "
        "the time both threads were runnable but not running (run-queue wait, what other work "
        "on the 2 cores costs the commit). The rest of *commit* is network round trips, the "
        "commit's log flush and the database's other threads.",
        "",
        f"Load average (1/5/15 min) before the run: {' / '.join(f'{x:.2f}' for x in load_before)}"
        f"; after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    # python -m benchmarks.bench_store [--quick] [--repeats N]
    args = sys.argv[1:]
    count = int(args[args.index("--repeats") + 1]) if "--repeats" in args else None
    print(run(quick="--quick" in args, repeats=count))
