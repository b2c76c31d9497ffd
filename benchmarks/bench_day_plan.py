"""The day plan (issue 42, :mod:`smartflow_engine.solver.day_plan`) on the upstream-shaped
windows: ``python -m benchmarks.bench_day_plan plan [work]`` runs it alone on issue 42's three
open first_full windows, hinted with the tool's proposal at its default work;
``python -m benchmarks.bench_day_plan tool [limit]`` runs every upstream window's first_full
proposal as the tools do at ``limit`` seconds (:func:`_works`: the proposal's work, and the
plan's on ordered windows), the proposal and the same proposal deepened by the plan side by
side. Results: benchmarks/results_day_plan.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import SimpleNamespace

from smartflow_engine.solver.day_plan import day_plan
from smartflow_engine.solver.problem import Placement
from smartflow_engine.state import ScheduleState

# ------------------------------------------------------------------------------ measuring
WINDOWS = ((30, "plain", 500), (60, "plain", 501), (60, "plain", 500))


def measure(work_s: float) -> list[str]:
    """Issue 42's open first_full windows: the tool's proposal at its default work (a 30 s
    clock, so the same proposal on any machine), then the day plan hinted with it (one worker, ``work_s`` units), each applied through the write
    path and counted by analyze_health."""
    from smartflow_engine.analyzers import analyze_health
    from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
    from smartflow_engine.solver.placement import propose_placement
    from smartflow_engine.solver.problem import build_problem
    from smartflow_engine.state import Request, relocate
    from smartflow_engine.state.synthetic import synthetic_window
    from smartflow_engine.tools_adapter.tools.solver import proposal_limit

    def counts(state: ScheduleState, placements: Sequence[Placement]) -> tuple[int, int]:
        applied = state.copy_state()
        requests = [Request(p.task_id, p.day, p.slot_start) for p in placements]
        ok = relocate(applied, requests, op="apply_proposal", status_after="suggested").ok
        assert ok, "a placement broke a rule"
        signal = analyze_health(applied, time_limit_s=2.0).metrics["close_signal"]
        return signal["critical"], signal["warning"]

    work_share = DEFAULT_CALIBRATION.work_share
    rows = [
        "| days | variant | seed | proposal (critical, warning) | plan (critical, warning) "
        "| plan objective | solves | work units | plan s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for days, variant, seed in WINDOWS:
        state = synthetic_window(seed, days, variant=variant, upstream=True)
        tool = propose_placement(
            state,
            time_limit_s=30.0,
            work_limit_s=work_share * proposal_limit(days),
            seed=0,
            include_suggested=True,
        )  # (the tool's work at its default limit, under a clock that does not cut it)
        problem = build_problem(state, include_suggested=True)
        t0 = time.perf_counter()
        plan = day_plan(
            state, problem, level="normal", time_limit_s=120.0, work_s=work_s,
            hint=tool.placements,
        )  # fmt: skip
        took = time.perf_counter() - t0
        mine = "–" if plan.placements is None else str(counts(state, plan.placements))
        rows.append(
            f"| {days} | {variant} | {seed} | {counts(state, tool.placements)} | {mine} "
            f"| {plan.objective} | {plan.rounds} | {plan.work_s:.2f} | {took:.1f} |"
        )
    return rows


def measure_tool(limit_s: float) -> list[str]:
    """Every upstream window's first_full proposal with the tools' split of ``limit_s``
    (its work, and the plan's where the window is ordered and the limit leaves time): the
    proposal, then the same proposal deepened by the plan within what is left of the limit."""
    from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
    from smartflow_engine.solver.placement import deepen, propose_placement
    from smartflow_engine.state.synthetic import synthetic_window
    from smartflow_engine.tools_adapter.tools.solver import _works

    cal = DEFAULT_CALIBRATION
    ctx = SimpleNamespace(calibration=cal, num_workers=1)
    rows = [
        f"Limit {limit_s:g} s, first_full scope; counts are the proposal's claims "
        "(analyze_health's, tests/solver/test_day_plan.py).",
        "",
        "| days | variant | seed | before: (critical, warning) | before s | proposal work "
        "| plan work | proposal (critical, warning) | proposal s | with plan | plan s "
        "| closes before / after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    closes = [0, 0]
    closes_old = 0
    for days in (13, 30, 60):
        for variant in ("fragmented", "plain", "tight"):
            for seed in (500, 501):
                state = synthetic_window(seed, days, variant=variant, upstream=True)  # type: ignore[arg-type]
                work, plan_work = _works(ctx, state, limit_s)  # type: ignore[arg-type]
                # (as propose_placement(plan_work_s=...) does: the plan's seconds are kept
                # from the proposal's clock, and the plan runs until the limit)
                plan_s = min(plan_work / cal.exact_det_per_s, limit_s / 2) if plan_work else 0.0
                t0 = time.perf_counter()
                before = propose_placement(
                    state, time_limit_s=limit_s - plan_s, work_limit_s=work, seed=0,
                    include_suggested=True,
                )  # fmt: skip
                t1 = time.perf_counter()
                after = before
                if plan_work > 0:
                    deadline = t0 + limit_s
                    after = deepen(state, before, work_s=plan_work, deadline=deadline)
                t2 = time.perf_counter()
                # the tools before the plan: the whole limit's work to the proposal
                t3 = time.perf_counter()
                whole = propose_placement(
                    state, time_limit_s=limit_s, work_limit_s=cal.work_share * limit_s,
                    seed=0, include_suggested=True,
                )  # fmt: skip
                t4 = time.perf_counter()
                old_key = (whole.critical, whole.warning)
                old_shut = old_key[0] == 0 and old_key[1] is not None and old_key[1] <= 1
                closes_old += int(old_shut)
                keys = [(p.critical, p.warning) for p in (before, after)]
                shut = [k[0] == 0 and k[1] is not None and k[1] <= 1 for k in keys]
                closes = [c + int(x) for c, x in zip(closes, shut, strict=True)]
                planned = " (planned)" if after.planned else ""
                rows.append(
                    f"| {days} | {variant} | {seed} | {old_key} | {t4 - t3:.1f} | {work:.2f} "
                    f"| {plan_work:.2f} | {keys[0]} | {t1 - t0:.1f} | {keys[1]}{planned} "
                    f"| {t2 - t1:.1f} | {'yes' if old_shut else 'no'} / "
                    f"{'yes' if shut[1] else 'no'} |"
                )
    rows += [
        "",
        f"Closes: {closes_old}/18 before (the whole limit's work to the proposal), "
        f"{closes[0]}/18 with the proposal's share alone, {closes[1]}/18 with the plan.",
    ]
    return rows


if __name__ == "__main__":
    import sys

    mode = sys.argv[1] if len(sys.argv) > 1 else "plan"
    figure = float(sys.argv[2]) if len(sys.argv) > 2 else (5.0 if mode == "plan" else 30.0)
    print("\n".join(measure(figure) if mode == "plan" else measure_tool(figure)))
