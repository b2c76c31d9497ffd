"""Tests of the calendar scope's narrowing of a class rule (``solver/scoped.py: narrow_rule``):
the rule a proposal's search reads never allows a cell outside the task's cells, and keeps a
product mask (a request's own days × periods) exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine.solver.problem import Rule
from smartflow_engine.solver.scoped import narrow_rule

DAYS, SPD = 6, 8


def _cells(rule: Rule) -> np.ndarray:
    """The (day, period) cells ``rule`` allows, read through its own API."""
    out = np.zeros((DAYS, SPD), dtype=bool)
    for d in range(1, DAYS + 1):
        if rule.allows_day(d, DAYS):
            out[d - 1] = [p not in rule.banned for p in range(1, SPD + 1)]
    return out


masks = st.lists(st.booleans(), min_size=DAYS * SPD, max_size=DAYS * SPD).map(
    lambda v: np.array(v, dtype=bool).reshape(DAYS, SPD)
)
base_rules = st.builds(
    Rule,
    class_id=st.none(),
    start_day=st.integers(1, 2),
    end_day=st.integers(4, DAYS),
    banned=st.lists(st.integers(1, SPD), max_size=3).map(lambda v: tuple(sorted(set(v)))),
    off_days=st.frozensets(st.integers(1, DAYS), max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(rule=base_rules, cells=masks, free=masks)
def test_a_narrowed_rule_allows_no_cell_outside_the_mask_or_the_rule(rule, cells, free):
    """Tests that the narrowed rule allows only cells of both the mask and the class rule, and
    no day appended after the window."""
    narrowed = narrow_rule(rule, cells, free)
    allowed = _cells(narrowed)
    assert not (allowed & ~cells).any()
    assert not (allowed & ~_cells(rule)).any()
    assert not narrowed.allows_day(DAYS + 1, DAYS)


@settings(max_examples=200, deadline=None)
@given(
    days=st.lists(st.booleans(), min_size=DAYS, max_size=DAYS),
    periods=st.lists(st.booleans(), min_size=SPD, max_size=SPD),
    free=masks,
)
def test_a_product_mask_is_kept_exactly(days, periods, free):
    """Tests that a request's own mask (days × periods, as ``PlaceFilter.mask`` makes it) is
    kept exactly on a rule that allows everything."""
    cells = np.array(days, dtype=bool)[:, None] & np.array(periods, dtype=bool)[None, :]
    narrowed = narrow_rule(Rule(None, 1, DAYS), cells, free)
    if cells.any():
        assert (_cells(narrowed) == cells).all()
    else:
        assert not _cells(narrowed).any()


def test_the_balanced_greedy_keeps_a_scoped_rules_days():
    """Tests that the balanced greedy (a start of every proposal) places each task only on a day
    its (narrowed) rule allows: it once read a rule's first and last day only, and put weekend
    items back on the weekend a request ruled out."""
    from smartflow_engine.evalkit.tasks import load_tasks
    from smartflow_engine.solver.baselines import balanced_greedy
    from smartflow_engine.solver.objective import resolve_weights
    from smartflow_engine.solver.problem import build_problem
    from smartflow_engine.tools_adapter.core.calendar_args import SlotsScope, TaskArgs, scope_of

    task = next(t for t in load_tasks() if t.id == "21d-log-weekend-to-weekdays")
    state = task.initial_state()
    scope = scope_of(state, TaskArgs(day_scope="weekend"), SlotsScope(day_scope="workday"))
    assert not isinstance(scope, str) and scope.movable
    problem = build_problem(state, by_subject=True, within=scope)
    group = {tid: g for g in problem.groups for tid in g.task_ids}
    placed = balanced_greedy(problem, resolve_weights(None))
    assert placed
    for pl in placed:
        assert group[pl.task_id].rule.allows_day(pl.day, problem.num_days)
        assert scope.allowed[pl.task_id][pl.day - 1, pl.slot_start - 1 : pl.slot_end].all()


def _week17_after_the_first_call():
    """The week-17 request's window once its first call moved the first items of the two
    classes starting in week 17 back to week 12 (their places taken from the task's witness),
    and the scope of its second call: week 17's items onto week 17's workdays."""
    from smartflow_engine.evalkit.tasks import load_tasks
    from smartflow_engine.state import ScheduleState
    from smartflow_engine.tools_adapter.core.calendar_args import SlotsScope, TaskArgs, scope_of

    task = next(t for t in load_tasks() if t.id == "42d-log-week17")
    week12 = set(range(1, 6))
    back = {
        t["state_id"]: t
        for t in task.witness
        if t.get("slots") and t["slots"][0]["day"] in week12 and t.get("category_id") in (6, 7)
    }
    assert len(back) == 2
    data = dict(task.state)
    data["tasks"] = [back.get(t["state_id"], t) for t in task.state["tasks"]]
    state = ScheduleState.from_json(data)
    scope = scope_of(state, TaskArgs(week=17), SlotsScope(week=17, day_scope="workday"))
    assert not isinstance(scope, str) and len(scope.movable) == 5
    return state, scope


def test_a_scoped_floor_holds_for_every_placement_the_scope_allows():
    """Tests that the scope's floor (``health_floor`` with ``floor_scope``) bounds the counts of
    placements of the scope: 30 random ones (in a random task order, each task at a random free
    place its group's rule allows, checked here), critical and critical + warning alike."""
    import random

    from smartflow_engine.solver.health_eval import HealthEvaluator
    from smartflow_engine.solver.health_floor import health_floor
    from smartflow_engine.solver.problem import Placement, build_problem
    from smartflow_engine.solver.scoped import floor_scope

    state, scope = _week17_after_the_first_call()
    problem = build_problem(state, by_subject=True, within=scope)
    floor = health_floor(state, "normal", pending_periods=0, **floor_scope(problem))
    ids = {tid for g in problem.groups for tid in g.task_ids}
    evaluator = HealthEvaluator(state, ids, "normal", 0)
    rng = random.Random(0)
    free0 = problem.owner == 0
    for trial in range(30):
        free = free0.copy()
        placed: list[Placement] = []
        order = [(g, tid) for g in problem.groups for tid in g.task_ids]
        rng.shuffle(order)
        for group, tid in order:
            spots = [
                (d, s)
                for d in range(1, problem.num_days + 1)
                if group.rule.allows_day(d, problem.num_days)
                for s in range(1, problem.slots_per_day - group.duration + 2)
                if free[d - 1, s - 1 : s - 1 + group.duration].all()
                and not any(s <= p < s + group.duration for p in group.rule.banned)
            ]
            assert spots, f"trial {trial}: no place for [{tid}]"
            d, s = spots[rng.randrange(len(spots))]
            free[d - 1, s - 1 : s - 1 + group.duration] = False
            placed.append(Placement(tid, d, s, s + group.duration - 1))
        evaluator.set_placements(placed)
        critical, warning = evaluator.counts_now().key
        assert critical >= floor.critical and critical + warning >= floor.critical + floor.warning


def test_a_scoped_proposal_at_its_own_floor_says_so_and_stops_its_health_phase():
    """Tests that a calendar proposal compares itself with its own population's floor: the
    week-17 spread starts at (6, 1), which no placement of week 17's items on its workdays can
    beat (the criticals are the gaps the first call opened), so the proposal reports that floor
    and its search spends no evaluation in the health phase: at most the one search's budget
    (the soft phase's) plus one per task sent back. Compared with the whole window's floor it
    reported (2, 0) and spent the health phase's 1.6 times the budget short of it. The work
    budget is small and the wall clock far above it, so the count is the work's alone."""
    import importlib

    from smartflow_engine.solver import propose_placement
    from smartflow_engine.solver.budget import DEFAULT_CALIBRATION as cal

    placement = importlib.import_module("smartflow_engine.solver.placement")
    search = importlib.import_module("smartflow_engine.solver.health_search")
    state, scope = _week17_after_the_first_call()
    spent: list[tuple[int, int]] = []
    real = placement.search_health

    def counting(*args, **kwargs):
        result = real(*args, **kwargs)
        cost = search.eval_cost(state.num_days, cal) * cal.soft_eval_factor
        spent.append((result.evaluations, int(kwargs["budget_s"] / cost)))
        return result

    work = 0.1
    patched = pytest.MonkeyPatch()
    patched.setattr(placement, "search_health", counting)
    try:
        proposal = propose_placement(
            state, time_limit_s=120.0, work_limit_s=work, within=scope, num_workers=1
        )
    finally:
        patched.undo()
    assert not proposal.wall_limited
    assert proposal.floor is not None and proposal.critical is not None
    assert proposal.floor == (proposal.critical, proposal.warning)
    [(evaluations, limit)] = spent
    assert evaluations <= limit + len(scope.allowed)
