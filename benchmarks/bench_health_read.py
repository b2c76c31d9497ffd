"""``analyze_health`` as a read (issue 40 item 7): its first and repeated calls per window size.

On seeded synthetic windows (30 and 120 days; plain, tight and fragmented; with and without task
classes), the balanced greedy's placements are applied as suggested (the state a proposal
leaves), and ``analyze_health`` (defaults: feasibility first, every dimension) is called once
(``first``: nothing of this state is cached) and then ``REPEATS`` times more (``repeated``: the
median). Figures are wall milliseconds and the process's CPU milliseconds (the machine is
shared: CPU time is the steadier figure). The targets (issue 40): at most 25 ms at 30 days and
60 ms at 120 days, first call included. Run ``python -m benchmarks.bench_health_read``.

Side by side: ``python -m benchmarks.bench_health_read --base TREE`` (``TREE``: a checkout of the
code before a change, e.g. ``git archive <commit> | tar -x -C /tmp/base``) starts one worker
process per tree (this one and ``TREE``), each warmed up as above, and asks them for each window
in turn, alternating which goes first, ``ROUNDS`` times (``--rounds N`` after ``TREE``: ``N``
times): the first call on a freshly built state with the health caches emptied (the floors,
the proven reports, the evaluators), then the repeated calls. The table gives each tree's
median CPU and wall figures over the rounds, the largest first-call CPU figure of the code
after (a full garbage collection of the process's heap, ~10-15 ms, lands in some calls), and
whether the medians of the code after meet the target (first and repeated calls).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.solver.baselines import balanced_greedy
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state import Request, ScheduleState, relocate
from smartflow_engine.state.synthetic import synthetic_window

SIZES = (30, 120)
VARIANTS = ("plain", "tight", "fragmented")
TARGET_MS = {30: 25.0, 120: 60.0}
REPEATS = 5
ROUNDS = 3


def placed_window(days: int, variant: str, classes: bool, seed: int = 0) -> ScheduleState:
    """A seeded window with the greedy's placements applied as suggested."""
    state = synthetic_window(
        700 + seed,
        days,
        variant=variant,  # type: ignore[arg-type]
        with_task_classes=classes,
    )
    placements = balanced_greedy(build_problem(state, by_subject=True))
    ok = relocate(
        state,
        [Request(p.task_id, p.day, p.slot_start) for p in placements],
        op="apply_proposal",
        status_after="suggested",
    ).ok
    assert ok
    return state


def _timed(state: ScheduleState) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    result = analyze_health(state)
    return 1000 * (time.perf_counter() - w), 1000 * (time.process_time() - c), result


def _warm() -> None:
    for variant in VARIANTS:
        analyze_health(placed_window(30, variant, True, seed=1))


def _forget() -> None:
    """Empty the health caches: the next call on a state pays for everything."""
    from smartflow_engine.analyzers import evaluator, health

    health._FLOORS.clear()
    health._REPORTS.clear()
    evaluator._CACHE.clear()


def _measure(days: int, variant: str, classes: bool) -> dict[str, Any]:
    state = placed_window(days, variant, classes)
    _forget()
    first_w, first_c, result = _timed(state)
    again = [_timed(state) for _ in range(REPEATS)]
    signal = result.metrics["close_signal"]
    return {
        "first_wall": first_w,
        "first_cpu": first_c,
        "again_wall": statistics.median(w for w, _, _ in again),
        "again_cpu": statistics.median(c for _, c, _ in again),
        "counts": f"{signal['critical']}/{signal['warning']}",
        "actions": ",".join(a.intent_code for a in result.next_actions),
    }


def bench() -> list[dict[str, Any]]:
    # imports and kernels (the feasibility check's relaxation is imported on a tight window),
    # on windows of another seed; each measured state's first call starts with empty caches
    _warm()
    return [
        {
            "days": days,
            "window": f"{variant} {'classes' if classes else 'plain'}",
            **_measure(days, variant, classes),
        }
        for days in SIZES
        for variant in VARIANTS
        for classes in (False, True)
    ]


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| days | window | first ms (wall) | first ms (CPU) | repeated ms (wall, median) | "
        "repeated ms (CPU, median) | target ms | critical/warning | actions |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['days']} | {r['window']} | {r['first_wall']:.1f} | {r['first_cpu']:.1f} | "
            f"{r['again_wall']:.1f} | {r['again_cpu']:.1f} | {TARGET_MS[r['days']]:g} | "
            f"{r['counts']} | {r['actions']} |"
        )
    for days in SIZES:
        mine = [r for r in rows if r["days"] == days]
        lines.append("")
        lines.append(
            f"{days} days: first call at most {max(r['first_wall'] for r in mine):.1f} ms wall "
            f"({max(r['first_cpu'] for r in mine):.1f} ms CPU), repeated at most "
            f"{max(r['again_wall'] for r in mine):.1f} ms wall; target {TARGET_MS[days]:g} ms."
        )
    return "\n".join(lines)


def worker() -> None:
    """Answer ``days variant classes`` lines with :func:`_measure`'s JSON (side by side)."""
    _warm()
    print("ready", flush=True)
    for line in sys.stdin:
        days, variant, classes = line.split()
        print(json.dumps(_measure(int(days), variant, classes == "1")), flush=True)


def _start(tree: str) -> subprocess.Popen[str]:
    here = os.path.abspath(__file__)
    code = (
        f"import sys; sys.path.insert(0, {os.path.abspath(tree)!r}); "
        f"import runpy; sys.argv = [{here!r}, '--worker']; runpy.run_path({here!r}, "
        "run_name='__main__')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=tree,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _ask(proc: subprocess.Popen[str], line: str) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())  # type: ignore[no-any-return]


def side_by_side(base: str, rounds: int = ROUNDS) -> list[dict[str, Any]]:
    procs = {"before": _start(base), "after": _start(os.getcwd())}
    rows = []
    try:
        for days in SIZES:
            for variant in VARIANTS:
                for classes in (False, True):
                    line = f"{days} {variant} {int(classes)}"
                    got: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
                    for r in range(rounds):
                        order = ("before", "after") if r % 2 == 0 else ("after", "before")
                        for name in order:
                            got[name].append(_ask(procs[name], line))
                    row: dict[str, Any] = {
                        "days": days,
                        "window": f"{variant} {'classes' if classes else 'plain'}",
                    }
                    for name, runs in got.items():
                        for k in ("first_cpu", "first_wall", "again_cpu"):
                            row[f"{name}_{k}"] = statistics.median(x[k] for x in runs)
                        row[f"{name}_first_cpu_max"] = max(x["first_cpu"] for x in runs)
                        row[f"{name}_counts"] = runs[0]["counts"]
                        row[f"{name}_actions"] = runs[0]["actions"]
                    rows.append(row)
    finally:
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
    return rows


def side_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| days | window | first ms CPU before | first ms CPU after | first ms wall before | "
        "first ms wall after | first ms CPU after, largest | repeated ms CPU before | "
        "repeated ms CPU after | target ms | meets target (after) | critical/warning | "
        "actions (after) | same counts and actions |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        same = r["before_counts"] == r["after_counts"] and r["before_actions"] == r["after_actions"]
        target = TARGET_MS[r["days"]]
        meets = r["after_first_cpu"] <= target and r["after_again_cpu"] <= target
        lines.append(
            f"| {r['days']} | {r['window']} | {r['before_first_cpu']:.1f} | "
            f"{r['after_first_cpu']:.1f} | {r['before_first_wall']:.1f} | "
            f"{r['after_first_wall']:.1f} | {r['after_first_cpu_max']:.1f} | "
            f"{r['before_again_cpu']:.1f} | {r['after_again_cpu']:.1f} | {target:g} | "
            f"{'yes' if meets else 'NO'} | {r['after_counts']} | {r['after_actions']} | "
            f"{'yes' if same else 'NO'} |"
        )
    for days in SIZES:
        mine = [r for r in rows if r["days"] == days]
        lines.append("")
        lines.append(
            f"{days} days: first call at most {max(r['before_first_cpu'] for r in mine):.1f} ms "
            f"CPU before, {max(r['after_first_cpu'] for r in mine):.1f} ms CPU after; target "
            f"{TARGET_MS[days]:g} ms."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    elif sys.argv[1:2] == ["--base"]:
        rounds = int(sys.argv[4]) if sys.argv[3:4] == ["--rounds"] else ROUNDS
        print(side_table(side_by_side(sys.argv[2], rounds)))
    else:
        print(table(bench()))
