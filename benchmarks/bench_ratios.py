"""The quick ratio tier (issue 30 item 4): a few peers measured side by side in one run, each
ratio checked against its committed goal.

Absolute times on the shared 2-core machines say little; a ratio of two methods measured back to
back on the same seeded windows in the same process says what the code is worth. Each entry of
:data:`RATIO_GOALS` is a goal committed with the benchmark whose full table measured it: the
quick tier repeats the measurement on small windows in a few seconds, and the test suite
(``tests/test_bench_ratios.py``) fails when a ratio falls below its goal. The goals sit well
below the full runs' ratios, so a noisy machine does not fail them; a regression of the method
does. ``smartflow bench --quick`` prints the tier with the rest of the quick run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# name -> (the smallest acceptable ratio, what it compares, where the full table is)
RATIO_GOALS: dict[str, tuple[float, str, str]] = {
    "batch_metrics": (
        20.0,
        "pure-Python loop ÷ batch_core_metrics (2,000 stacked 30-day windows; full run: ~360x)",
        "benchmarks/results_analyzers.md",
    ),
    "feasibility": (
        3.0,
        "textbook CP-SAT model (one boolean per task and start, 2 s limit) ÷ our exact "
        "feasibility (counting model), 14-day windows of 25 pending tasks",
        "benchmarks/results_solver.md",
    ),
    "health_probe": (
        5.0,
        "full health of the changed window ÷ the evaluator's probe of one move (30 days)",
        "benchmarks/results_tools.md",
    ),
}


@dataclass(frozen=True)
class Ratio:
    name: str
    ratio: float
    goal: float
    what: str

    @property
    def met(self) -> bool:
        return self.ratio >= self.goal


def _best_s(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs (as ``timeit`` advises: the others measure what else
    the shared machine did; a median let one ratio fall under its goal at a load of 4)."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return min(samples)


def _batch_metrics() -> float:
    from benchmarks.bench_analyzers import python_core, scheduled_window
    from smartflow_engine.analyzers import batch_core_metrics, stack_kinds

    base = stack_kinds([scheduled_window(seed, 30) for seed in range(20)])
    kinds = np.ascontiguousarray(np.resize(base, (2_000, *base.shape[1:])))
    batch_core_metrics(kinds)  # the lookup tables, built once
    ours = _best_s(lambda: batch_core_metrics(kinds), 5)
    rows = kinds[:200].tolist()
    loop = _best_s(lambda: [python_core(w) for w in rows], 3) * 10
    return loop / ours


def _feasibility() -> float:
    from benchmarks.bench_solver import naive_max_slots
    from smartflow_engine.solver import check_feasibility
    from smartflow_engine.solver.problem import build_problem
    from smartflow_engine.state.synthetic import synthetic_window

    ours = theirs = 0.0
    for seed in range(3):
        state = synthetic_window(seed, 14, pending=25)
        check_feasibility(state, time_limit_s=5.0, num_workers=1)  # imports, first model
        problem = build_problem(state)
        ours += _best_s(lambda s=state: check_feasibility(s, time_limit_s=5.0, num_workers=1), 3)
        theirs += _best_s(lambda p=problem: naive_max_slots(p, 2.0), 1)
    return theirs / ours


def _health_probe() -> float:
    from benchmarks.bench_loop import disturbed_window
    from smartflow_engine.analyzers.destinations import health_issues
    from smartflow_engine.analyzers.evaluator import evaluator_for
    from smartflow_engine.state import Request, relocate

    state = disturbed_window(0, 30, 2.0)
    task = next(
        t
        for t in state.tasks
        if t.slots and not t.locked and len(t.slots) == 1 and t.embed_host is None
    )
    home = task.slots[0]
    day, start, _ = next(r for r in state.grid.free_runs(home.length) if r[0] != home.day)
    go = [Request(task.state_id, day, start)]
    back = [Request(task.state_id, home.day, home.slot_start)]
    if not relocate(state, go, op="probe").ok:
        raise RuntimeError("no free move for the probe ratio")
    relocate(state, back, op="probe")
    evaluator = evaluator_for(state, "normal")

    def probe() -> None:
        relocate(state, go, op="probe")
        evaluator.probe([home.day, day], [task.state_id])
        relocate(state, back, op="probe")

    def full() -> None:
        relocate(state, go, op="probe")
        health_issues(state.copy_state(), "normal")
        relocate(state, back, op="probe")

    return _best_s(full, 7) / _best_s(probe, 7)


MEASURES: dict[str, Callable[[], float]] = {
    "batch_metrics": _batch_metrics,
    "feasibility": _feasibility,
    "health_probe": _health_probe,
}


def measure() -> list[Ratio]:
    out = []
    for name, fn in MEASURES.items():
        goal, what, _ = RATIO_GOALS[name]
        out.append(Ratio(name, fn(), goal, what))
    return out


def run(quick: bool = True) -> str:
    """The tier as a Markdown section (the same on a full run)."""
    rows = measure()
    lines = [
        "## Ratio tier (measured side by side; the test suite checks each goal)",
        "",
        "| ratio | measured | goal | met | what |",
        "|---|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.ratio:.1f}x | ≥ {r.goal:.0f}x | {'✓' if r.met else '✗'} | {r.what} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
