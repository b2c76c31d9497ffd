"""The day plan (issue 42, smartflow_engine/solver/day_plan.py): one CP-SAT model of the
day-level rules placing a scope's tasks in free runs and water-course blocks, then packed; a
proposal given work of its own for it (``plan_work_s``) takes it when it has fewer issues, and
the tools give it that work on ordered windows when the asked limit leaves time to spare."""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace

import pytest

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.day_plan import day_plan
from smartflow_engine.solver.order import order_kept
from smartflow_engine.solver.placement import deepen, propose_placement
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state import Request, relocate
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.tools.solver import _works, proposal_limit


def _applied_counts(state, placements) -> tuple[int, int]:
    """analyze_health's (critical, warning) once ``placements`` are applied through the write
    path (which refuses any class rule's breach: asserted)."""
    applied = state.copy_state()
    requests = [Request(p.task_id, p.day, p.slot_start) for p in placements]
    assert relocate(applied, requests, op="apply_proposal", status_after="suggested").ok
    signal = analyze_health(applied, time_limit_s=2.0).metrics["close_signal"]
    return signal["critical"], signal["warning"]


@pytest.mark.parametrize(("seed", "variant"), [(500, "plain"), (501, "fragmented")])
def test_a_plan_keeps_every_rule_and_is_the_same_twice(seed: int, variant: str) -> None:
    """Tests two 13-day upstream-shaped windows (bans, weekdays, dates, item order): the plan
    places every scope task, the write path accepts it, the order holds, and a second call
    gives the same placements (one worker, fixed work)."""
    state = synthetic_window(seed, 13, variant=variant, upstream=True)  # type: ignore[arg-type]
    problem = build_problem(state, include_suggested=True)
    plan = day_plan(state, problem, level="normal", time_limit_s=60.0, work_s=1.0)
    assert plan.placements is not None, plan
    assert sum(p.length for p in plan.placements) == problem.required_slots
    assert order_kept(state, plan.placements)
    _applied_counts(state, plan.placements)
    again = day_plan(state, problem, level="normal", time_limit_s=60.0, work_s=1.0)
    assert again.placements == plan.placements


def test_a_passed_deadline_gives_no_plan_and_says_so() -> None:
    """Tests that the plan honours its limit: with no time it answers no plan, cut."""
    state = synthetic_window(500, 13, variant="plain", upstream=True)
    problem = build_problem(state, include_suggested=True)
    t0 = time.perf_counter()
    plan = day_plan(state, problem, level="normal", time_limit_s=0.0, work_s=5.0)
    assert plan.placements is None and plan.cut
    assert time.perf_counter() - t0 < 2.0


def test_the_plan_closes_a_window_the_search_leaves_open() -> None:
    """Tests issue 42's 60-day plain upstream window seed 501: the first_full proposal at the
    tool's default work keeps a critical (a 作业 gap); with 3 units of work of its own the day
    plan replaces it, its counts are analyze_health's on the applied schedule, and it closes
    (critical 0, warning <= 1); without plan work nothing changes."""
    state = synthetic_window(501, 60, variant="plain", upstream=True)
    work = DEFAULT_CALIBRATION.work_share * proposal_limit(60)
    args = {"time_limit_s": 60.0, "work_limit_s": work, "seed": 0, "include_suggested": True}
    plain = propose_placement(state, **args)
    deep = propose_placement(state, **args, plan_work_s=3.0)
    assert not plain.planned and plain.critical is not None and plain.critical >= 1
    assert deep.planned and not deep.wall_limited
    assert (deep.critical, deep.warning) == _applied_counts(state, deep.placements)
    assert deep.critical == 0 and deep.warning is not None and deep.warning <= 1
    assert (deep.critical, deep.warning) < (plain.critical, plain.warning)


def test_deepen_leaves_a_proposal_it_cannot_improve_or_has_no_time_for() -> None:
    """Tests deepen's guards: a deadline already passed leaves the placements and says the
    clock cut it; a window without item order is left as it is (no plan)."""
    state = synthetic_window(501, 13, variant="plain", upstream=True)
    proposal = propose_placement(state, time_limit_s=5.0, seed=0, include_suggested=True)
    late = deepen(state, proposal, work_s=3.0, deadline=time.perf_counter() - 1)
    assert late.placements == proposal.placements and late.wall_limited and not late.planned
    plain = synthetic_window(501, 13, variant="plain")
    flat = propose_placement(plain, time_limit_s=5.0, seed=0, include_suggested=True)
    same = deepen(plain, flat, work_s=3.0, deadline=time.perf_counter() + 30)
    assert same is flat


def test_the_tools_give_the_plan_work_only_beyond_the_default_on_ordered_windows() -> None:
    """Tests the tools' split of an asked limit (``_works``): at the default limit, on a
    window without item order at any limit, and on one proven not to fit, the whole limit's
    work is the proposal's and there is no plan; on an ordered window that fits, a limit 20 s
    above the default gives half of those 20 s to the plan (0.45 units a second) and the
    rest to the proposal."""
    cal = DEFAULT_CALIBRATION
    ctx = SimpleNamespace(calibration=cal, num_workers=1)
    ordered = synthetic_window(500, 30, variant="plain", upstream=True)
    flat = synthetic_window(500, 30, variant="plain")
    base = proposal_limit(30)
    assert _works(ctx, ordered, base) == (cal.work_share * base, 0.0)
    assert _works(ctx, flat, base + 20) == (cal.work_share * (base + 20), 0.0)
    work, plan = _works(ctx, ordered, base + 20)
    assert plan == pytest.approx(cal.exact_det_per_s * 10.0)
    assert work == pytest.approx(cal.work_share * (base + 10))
    capped = replace(cal, day_plan_max_work=1.0)
    assert _works(SimpleNamespace(calibration=capped, num_workers=1), ordered, base + 20)[1] == 1.0
    # a window proven not to fit (its proposal leaves tasks out: no plan possible) keeps the
    # whole limit's work
    tight = synthetic_window(500, 13, variant="tight", upstream=True)
    assert _works(ctx, tight, proposal_limit(13) + 20) == (
        cal.work_share * (proposal_limit(13) + 20),
        0.0,
    )


def test_a_long_limit_buys_the_plan_through_the_tool() -> None:
    """Tests the tool path on the 13-day fragmented upstream window seed 500, on a host that
    allows 30 s (``max_time_limit_s``; 10 by default): asked for 30 s (28 above its default),
    propose_placement's proposal is the plan's, its reply says so and claims no critical issue
    (the search's answer at the same work keeps two). The window is small so that neither
    the proposal (about 2 s) nor its plan (0.1 s) comes near its clock on a busy machine."""
    from smartflow_engine import Toolbox

    state = synthetic_window(500, 13, variant="fragmented", upstream=True)
    box = Toolbox(state, max_time_limit_s=30.0)
    reply = box.call("propose_placement", {"include_suggested": True, "time_limit_s": 30})
    assert "日级规划" in reply, reply[-600:]
    assert "应用后 critical 0 个" in reply, reply[-600:]
