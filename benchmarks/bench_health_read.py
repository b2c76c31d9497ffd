"""``analyze_health`` as a read (issue 40 item 7): its first and repeated calls per window size.

On seeded synthetic windows (30 and 120 days; plain, tight and fragmented; with and without task
classes), the balanced greedy's placements are applied as suggested (the state a proposal
leaves), and ``analyze_health`` (defaults: feasibility first, every dimension) is called once
(``first``: nothing of this state is cached) and then ``REPEATS`` times more (``repeated``: the
median). Figures are wall milliseconds and the process's CPU milliseconds (the machine is
shared: CPU time is the steadier figure). The targets (issue 40): at most 25 ms at 30 days and
60 ms at 120 days, first call included. Run ``python -m benchmarks.bench_health_read``.
"""

from __future__ import annotations

import statistics
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


def bench() -> list[dict[str, Any]]:
    # imports and kernels (the feasibility check's relaxation is imported on a tight window),
    # on windows of another seed: nothing of the measured states is cached
    for variant in VARIANTS:
        analyze_health(placed_window(30, variant, True, seed=1))
    rows = []
    for days in SIZES:
        for variant in VARIANTS:
            for classes in (False, True):
                state = placed_window(days, variant, classes)
                first_w, first_c, result = _timed(state)
                again = [_timed(state) for _ in range(REPEATS)]
                signal = result.metrics["close_signal"]
                rows.append(
                    {
                        "days": days,
                        "window": f"{variant} {'classes' if classes else 'plain'}",
                        "first_wall": first_w,
                        "first_cpu": first_c,
                        "again_wall": statistics.median(w for w, _, _ in again),
                        "again_cpu": statistics.median(c for _, c, _ in again),
                        "counts": f"{signal['critical']}/{signal['warning']}",
                        "actions": ",".join(a.intent_code for a in result.next_actions),
                    }
                )
    return rows


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


if __name__ == "__main__":
    print(table(bench()))
