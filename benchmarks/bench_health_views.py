"""The two views of the one health model, timed beside today's code (issue 25 item 2).

On seeded windows of ``bench_loop`` (task classes, the proposal applied, a few study tasks moved
onto the busiest days; 30 and 120 days), each side in a fresh process on the same saved windows:

- ``counts``: ``solver.health_eval.health_counts`` of the window (the counts view, built once);
- ``close eval``: one close-stage evaluation, as the close stage meets it: a scope task moved to
  a random free place of its length and ``counts_now()`` (µs; the mean over 400 moves there and
  back on an evaluator of the movable single-block study tasks);
- ``evaluator build``: ``analyzers.evaluator.HealthEvaluator`` of the window (the issues view);
- ``sync after a write``: a ``move`` through the state's write path (untimed), then the
  evaluator's ``sync()`` and ``key()`` (µs; median over 300 moves there and back).

Every figure is the worker process's CPU time (``time.process_time``: the shared machine's other
processes inflate wall figures far more). Sides: **ours** (this tree) and **today** (``SMARTFLOW_BENCH_PEER``, else ``git archive main``
into a temporary folder), alternated twice per window (ours, today, ours, today), medians of
each side's figures. Run ``python -m benchmarks.bench_health_views``; ``--loop [--cpu]``
times the loop tools instead (``bench_tools --loop``'s worker and windows, sides alternated
three times, 9 repeats; ``--cpu``: process CPU ms). The worker is
``python benchmarks/bench_health_views.py --worker SPEC.json`` with ``PYTHONPATH`` naming the
code to time (it imports only names both versions have).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SIZES = (30, 120)
SEEDS = (0, 1)
MOVES = 400
WRITES = 300


def _worker(spec_path: str) -> None:
    from smartflow_engine import ScheduleState
    from smartflow_engine.analyzers.evaluator import HealthEvaluator as IssuesView
    from smartflow_engine.solver.health_eval import HealthEvaluator as CountsView
    from smartflow_engine.solver.health_eval import health_counts
    from smartflow_engine.solver.problem import Placement
    from smartflow_engine.state import move

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for path in spec["windows"]:
        state = ScheduleState.from_json(path)
        rng = random.Random(7)
        row: dict[str, float] = {}
        samples = []
        for _ in range(15):
            t0 = time.process_time()
            health_counts(state)
            samples.append(time.process_time() - t0)
        row["counts_ms"] = statistics.median(samples) * 1000
        scope = [
            t
            for t in state.tasks
            if t.source != "event"
            and t.status != "pending"
            and len(t.slots) == 1
            and not t.locked
            and t.embed_host is None
            and not t.can_embed
        ]
        ev = CountsView(state, {t.state_id for t in scope})
        ev.set_placements(
            [
                Placement(t.state_id, t.slots[0].day, t.slots[0].slot_start, t.slots[0].slot_end)
                for t in scope
            ]
        )
        ev.counts_now()
        spd, days = state.slots_per_day, state.num_days
        plan = []
        for _ in range(MOVES):
            t = rng.choice(scope)
            plan.append((t.state_id, rng.randrange(1, days + 1)))
        t0 = time.process_time()
        evaluations = 0
        for tid, day in plan:
            old = ev.remove(tid)
            length = old.slot_end - old.slot_start + 1
            row_free = ev.owner[day - 1].tolist()
            start = next(
                (s for s in range(spd - length + 1) if not any(row_free[s : s + length])), None
            )
            if start is None:
                ev.place(old)
                continue
            ev.place(Placement(tid, day, start + 1, start + length))
            ev.counts_now()
            ev.remove(tid)
            ev.place(old)
            ev.counts_now()
            evaluations += 2
        row["close_eval_us"] = (time.process_time() - t0) / max(evaluations, 1) * 1e6
        samples = []
        for _ in range(7):
            t0 = time.process_time()
            view = IssuesView(state)
            samples.append(time.process_time() - t0)
        row["evaluator_build_ms"] = statistics.median(samples) * 1000
        view = IssuesView(state)
        synced = []
        for _ in range(WRITES):
            t = rng.choice(scope)
            home = (t.slots[0].day, t.slots[0].slot_start)
            there = move(state, t.state_id, rng.randrange(1, days + 1), rng.randrange(1, spd + 1))
            if not there.ok:
                continue
            t0 = time.process_time()
            view.sync()
            view.key()
            t1 = time.process_time()
            back = move(state, t.state_id, *home)
            assert back.ok, back.refusal
            t2 = time.process_time()
            view.sync()
            view.key()
            synced += [t1 - t0, time.process_time() - t2]
        row["write_sync_us"] = statistics.median(synced) * 1e6
        out[Path(path).stem] = row
    print(json.dumps(out))


def _peer_root() -> tuple[Path, tempfile.TemporaryDirectory[str] | None]:
    given = os.environ.get("SMARTFLOW_BENCH_PEER")
    if given:
        return Path(given), None
    here = Path(__file__).resolve().parent.parent
    tmp = tempfile.TemporaryDirectory(prefix="smartflow-peer-")
    archive = subprocess.run(
        ["git", "-C", str(here), "archive", "main"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", tmp.name], input=archive.stdout, check=True)
    return Path(tmp.name), tmp


def _run(root: Path, spec: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", str(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(root),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    from benchmarks.bench_loop import disturbed_window

    folder = Path(tempfile.mkdtemp(prefix="smartflow-views-"))
    paths = []
    for days in SIZES:
        for seed in SEEDS:
            path = folder / f"w{days}s{seed}.json"
            path.write_text(disturbed_window(seed, days, 2.0).to_json(), encoding="utf-8")
            paths.append(str(path))
    spec = folder / "spec.json"
    spec.write_text(json.dumps({"windows": paths}), encoding="utf-8")
    ours = Path(__file__).resolve().parent.parent
    peer, keep = _peer_root()
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "today": []}
    for _ in range(2):
        runs["ours"].append(_run(ours, spec))
        runs["today"].append(_run(peer, spec))
    if keep is not None:
        keep.cleanup()
    print(json.dumps(runs), file=sys.stderr)
    metrics = (
        ("counts_ms", "health_counts of the window (ms)"),
        ("close_eval_us", "close-stage evaluation: a move + counts_now (µs)"),
        ("evaluator_build_ms", "analyzers' HealthEvaluator built (ms)"),
        ("write_sync_us", "the evaluator's sync and key after a move (µs)"),
    )
    print("| figure | days | ours | today | today ÷ ours |")
    print("|---|---:|---:|---:|---:|")
    for key, label in metrics:
        for days in SIZES:
            names = [f"w{days}s{s}" for s in SEEDS]
            mine = statistics.median(r[n][key] for r in runs["ours"] for n in names)
            theirs = statistics.median(r[n][key] for r in runs["today"] for n in names)
            print(f"| {label} | {days} | {mine:.3g} | {theirs:.3g} | {theirs / mine:.2f}x |")


LOOP_SIZES = ((30, 12), (120, 12), (365, 12), (1000, 24))
LOOP_FIGURES = (
    "analyze_health",
    "analyze_health_after_write",
    "query_target_tasks",
    "query_available_slots",
    "write_with_evidence",
)


_CPU = (
    "import runpy, sys, time; time.perf_counter = time.process_time; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _cpu_worker(root: Path, spec: dict[str, Any], folder: Path, name: str) -> dict[str, Any]:
    """``benchmarks/health_worker.py`` timing the process's CPU instead of the wall clock (the
    calls' own time limits still read the wall clock): a loaded machine's other processes
    inflate the wall figures, much less the CPU ones."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    script = Path(__file__).resolve().parent / "health_worker.py"
    done = subprocess.run(
        [sys.executable, "-c", _CPU, str(script), str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=str(root),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def loop(rounds: int = 3, repeats: int = 9, cpu: bool = False) -> None:
    """The loop tools of ``bench_tools --loop`` (its worker, its windows) with more repeats,
    the two sides alternated ``rounds`` times per size: the median over rounds of each side's
    median ms (a loaded machine moves one round's figures by tens of percent); ``cpu``: the
    process's CPU ms instead of wall ms."""
    from benchmarks.bench_loop import disturbed_window
    from benchmarks.bench_tools import _worker

    tools_worker = _cpu_worker if cpu else _worker

    folder = Path(tempfile.mkdtemp(prefix="smartflow-views-loop-"))
    ours = Path(__file__).resolve().parent.parent
    peer, keep = _peer_root()
    table: dict[str, dict[str, list[float]]] = {}
    try:
        for days, spd in LOOP_SIZES:
            name = f"{days}x{spd}"
            path = folder / f"{name}.json"
            path.write_text(disturbed_window(0, days, 2.0, slots_per_day=spd).to_json())
            spec = {"windows": [{"name": name, "path": str(path), "repeats": repeats}]}
            for r in range(rounds):
                for side, root in (("ours", ours), ("today", peer)):
                    got = tools_worker(root, spec, folder, f"{side}-{name}-{r}")[name]
                    for fig in LOOP_FIGURES:
                        if fig in got:
                            table.setdefault(f"{fig}|{side}", {}).setdefault(name, []).append(
                                got[fig]
                            )
                print(name, "done", file=sys.stderr, flush=True)
    finally:
        if keep is not None:
            keep.cleanup()
    print(json.dumps(table), file=sys.stderr)
    names = [f"{d}x{p}" for d, p in LOOP_SIZES]
    print("| tool (median ms) | side | " + " | ".join(names) + " |")
    print("|---|---|" + "---:|" * len(names))
    for fig in LOOP_FIGURES:
        for side in ("ours", "today"):
            cells = [table.get(f"{fig}|{side}", {}).get(n) for n in names]
            text = [f"{statistics.median(c):.1f}" if c else "–" for c in cells]
            print(f"| {fig} | {side} | " + " | ".join(text) + " |")
        mine = [table.get(f"{fig}|ours", {}).get(n) for n in names]
        theirs = [table.get(f"{fig}|today", {}).get(n) for n in names]
        ratio = [
            f"{statistics.median(t) / statistics.median(m):.2f}x" if m and t else "–"
            for m, t in zip(mine, theirs, strict=True)
        ]
        print(f"| {fig}: today ÷ ours | ratio | " + " | ".join(ratio) + " |")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker(sys.argv[sys.argv.index("--worker") + 1])
    elif "--loop" in sys.argv:
        loop(cpu="--cpu" in sys.argv)
    else:
        main()
