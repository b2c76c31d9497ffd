"""Large-neighbourhood steps of the one search: the exact model of the health rules over a few
days (solver/health_lns.py) and its use in search_health."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.rules import Level
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.health_eval import HealthEvaluator
from smartflow_engine.solver.health_lns import choose_neighbourhood, liftable, lns_step
from smartflow_engine.solver.health_search import search_health
from smartflow_engine.solver.problem import Placement, Problem, build_problem
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import apply_placements, make_state, tiny_windows

# LNS steps at every refresh of the search (no plateau needed), with all of its budget
FORCED = replace(
    DEFAULT_CALIBRATION, health_lns_share=1.0, health_lns_stall=0.0, health_lns_stall_min=0
)
OFF = replace(DEFAULT_CALIBRATION, health_lns_share=0.0)
# LNS steps as the search would take them (on plateaus) with half the health phase's budget:
# off by default since the benchmark measured no gain (results_close.md, --lns)
ON = replace(DEFAULT_CALIBRATION, health_lns_share=0.5)


def health_key(state: ScheduleState, level: str = "normal") -> tuple[int, int]:
    counts = analyze_health(state, threshold=level, check_feasibility=False).issue_counts()
    return counts["critical"], counts["warning"]


def _course(day: int, period: int) -> dict[str, Any]:
    return {
        "source": "event",
        "category": "课程",
        "status": "existing",
        "locked": True,
        "slots": [{"day": day, "slot_start": period, "slot_end": period}],
    }


def two_day_window() -> tuple[ScheduleState, Problem, list[Placement]]:
    """Two days of 8 periods with a course each at period 2 (and day 2 at period 6); three
    pending study tasks of three subjects (3, 2 and 2 periods) start at (1, 4-6), (2, 7-8),
    (1, 7-8): day 1 holds 6 of 8 periods with a single free period (no buffer) and day 2 has
    its usable periods split. No single move and no swap lowers the issues; the 3-period task
    going to day 2 while a 2-period task comes to day 1 does."""
    tasks = [
        _course(1, 2),
        _course(2, 2),
        _course(2, 6),
        {"category_id": 11, "duration": 3},
        {"category_id": 12, "duration": 2},
        {"category_id": 10, "duration": 2},
    ]
    state = make_state(2, 8, tasks)
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = [Placement(4, 1, 4, 6), Placement(5, 2, 7, 8), Placement(6, 1, 7, 8)]
    return state, problem, start


def free_starts(ev: HealthEvaluator, problem: Problem, tid: int, day: int) -> list[int]:
    """The test's own oracle of a task's places: free periods of the evaluator's grid, off
    the class's banned periods, on its days."""
    g = problem.groups[problem.group_of()[tid]]
    if not g.rule.allows_day(day, ev.num_days):
        return []
    row = ev.owner[day - 1]
    return [
        s
        for s in range(1, ev.spd - g.duration + 2)
        if not row[s - 1 : s - 1 + g.duration].any()
        and not set(range(s, s + g.duration)) & set(g.rule.banned)
    ]


def single_moves_improve(ev: HealthEvaluator, problem: Problem) -> bool:
    """Some move of one task to another free place, or swap of two tasks of one length, gives
    a lexicographically smaller (critical, warning) (brute force)."""
    start = ev.counts_now().key
    for tid in sorted(ev.placed_scope):
        old = ev.remove(tid)
        for day in range(1, ev.num_days + 1):
            for s in free_starts(ev, problem, tid, day):
                pl = Placement(tid, day, s, s + old.length - 1)
                if pl == old:
                    continue
                ev.place(pl)
                better = ev.counts_now().key < start
                ev.remove(tid)
                if better:
                    ev.place(old)
                    return True
        ev.place(old)
    for a, b in itertools.combinations(sorted(ev.placed_scope), 2):
        pa, pb = ev.placed_scope[a], ev.placed_scope[b]
        if pa.length != pb.length:
            continue
        ev.remove(a)
        ev.remove(b)
        ev.place(Placement(a, pb.day, pb.slot_start, pb.slot_end))
        ev.place(Placement(b, pa.day, pa.slot_start, pa.slot_end))
        better = ev.counts_now().key < start
        ev.remove(a)
        ev.remove(b)
        ev.place(pa)
        ev.place(pb)
        if better:
            return True
    return False


def evaluator(state: ScheduleState, problem: Problem, level: Level = "normal") -> HealthEvaluator:
    return HealthEvaluator(state, {t for g in problem.groups for t in g.task_ids}, level)


def random_start(ev: HealthEvaluator, problem: Problem, rng: np.random.Generator) -> None:
    """Every scope task not placed yet at a random free allowed place (if any)."""
    for g in problem.groups:
        for tid in g.task_ids:
            if tid in ev.placed_scope:
                continue
            days = [d for d in range(1, ev.num_days + 1) if g.rule.allows_day(d, ev.num_days)]
            rng.shuffle(days)
            for day in days:
                starts = free_starts(ev, problem, tid, day)
                if starts:
                    s = starts[int(rng.integers(len(starts)))]
                    ev.place(Placement(tid, day, s, s + g.duration - 1))
                    break


def test_lns_step_replans_two_days_where_single_moves_stall() -> None:
    """Tests that on a window where no single move or swap lowers (critical, warning), the
    step over both days finds the two-task re-plan, proven optimal for its model, and that its
    placements applied through the write path give the lower counts."""
    state, problem, start = two_day_window()
    ev = evaluator(state, problem)
    ev.set_placements(start)
    before = ev.counts_now().key
    assert before == health_key(apply_placements(state, start)) == (0, 2)
    assert not single_moves_improve(ev, problem)
    step = lns_step(ev, problem, [1, 2], time_limit_s=30.0, deterministic_time=10.0)
    assert step.placements is not None and step.proven and not step.wall_limited
    assert dict(ev.placed_scope) == {pl.task_id: pl for pl in start}  # (left as it was)
    after = list(step.placements.values())
    moved = [pl for pl in after if pl not in start]
    assert len(moved) >= 2  # a compound move
    assert health_key(apply_placements(state, after)) < before


def plateau_window() -> tuple[ScheduleState, Problem, list[Placement]]:
    """Two days of 8 periods (courses at day 1 period 5, day 2 periods 4-5); two subjects with
    a 3- and a 2-or-1-period task each. From the start (0, 2) the single-move search walks its
    plateau for its whole budget; placing a 3-period and a 2-period task on day 1 afresh and
    the 1-period task on day 2 closes it."""
    tasks = [
        _course(1, 5),
        _course(2, 4),
        _course(2, 5),
        {"category_id": 11, "category": "学习", "duration": 3},
        {"category_id": 12, "category": "学习", "duration": 2},
        {"category_id": 11, "category": "学习", "duration": 3},
        {"category_id": 12, "category": "学习", "duration": 1},
    ]
    state = make_state(2, 8, tasks)
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = [Placement(4, 2, 1, 3), Placement(5, 1, 6, 7), Placement(6, 1, 2, 4)]
    return state, problem, [*start, Placement(7, 1, 1, 1)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_leaves_a_plateau_by_an_lns_step(seed: int) -> None:
    """Tests that with LNS steps on the search, stalled on a plateau, takes an LNS
    step that the evaluator accepts and reaches the floor, while the same search without LNS
    steps (``health_lns_share`` 0) runs none and ends where it started."""
    state, problem, start = plateau_window()
    on = search_health(state, problem, start, seed=seed, budget_s=0.5, calibration=ON)
    assert on.lns_steps >= 1 and on.lns_accepted >= 1 and not on.lns_cut
    assert on.start_counts.key == (0, 2) and on.counts.key == (0, 0)
    assert on.counts.key == health_key(apply_placements(state, on.placements))
    off = search_health(state, problem, start, seed=seed, budget_s=0.5, calibration=OFF)
    assert off.lns_steps == 0 and off.lns_accepted == 0
    assert off.counts.key == (0, 2)


@pytest.mark.parametrize(
    ("seed", "variant", "level", "classes"),
    [
        (0, "plain", "normal", False),
        (1, "fragmented", "strict", True),
        (2, "tight", "normal", True),
        (3, "fragmented", "relaxed", False),
    ],
)
def test_model_sees_every_change_of_the_counts(
    seed: int, variant: Any, level: Level, classes: bool
) -> None:
    """Tests that the model is exact on its days: the change of its (critical, warning)
    between the start (pinned) and its solution equals the change of the whole window's counts
    by the incremental evaluator, on random starts and neighbourhoods of seeded windows (every
    rule of the table: day, subject and window rules)."""
    state = synthetic_window(seed, 13, variant=variant, with_task_classes=classes)
    problem = build_problem(state, include_suggested=True, by_subject=True)
    ev = evaluator(state, problem, level)
    ev.set_placements(list(problem.current.values()))
    rng = np.random.default_rng(seed)
    random_start(ev, problem, rng)
    ev.set_placements(list(ev.placed_scope.values()))
    checked = 0
    for _ in range(3):
        days, tasks = choose_neighbourhood(ev, problem, rng, 3, 8)
        if not tasks:
            continue
        here = {t: ev.placed_scope[t] for t in tasks}
        pinned = lns_step(ev, problem, days, tasks, time_limit_s=30.0, pin=here)
        step = lns_step(ev, problem, days, tasks, time_limit_s=30.0, deterministic_time=2.0)
        assert pinned.model_key is not None and step.model_key is not None
        assert step.placements is not None
        before = ev.counts_now()
        changes = [(t, ev.remove(t, refresh=False), pl) for t, pl in step.placements.items()]
        for _, _, pl in changes:
            ev.place(pl, refresh=False)
        ev.refresh([pl.day for _, old, new in changes for pl in (old, new)])
        after = ev.counts_now()
        assert (
            step.model_key[0] - pinned.model_key[0],
            step.model_key[1] - pinned.model_key[1],
        ) == (after.critical - before.critical, after.warning - before.warning)
        assert after.key <= before.key  # the model starts from (and never leaves for worse) here
        checked += 1
    assert checked


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=tiny_windows(), level=st.sampled_from(["strict", "normal"]), seed=st.integers(0, 3))
def test_lns_steps_never_worse_and_valid(state: ScheduleState, level: Level, seed: int) -> None:
    """Tests that a search taking LNS steps at every refresh (hosts and guests, class windows,
    banned periods) never ends worse than its start and that its placements go through the
    write path with the counts it reports; and that a step's own placements (every lifted
    task on the chosen days) are accepted by the write path."""
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = list(problem.current.values())
    result = search_health(
        state, problem, start, level=level, seed=seed, budget_s=0.2, calibration=FORCED
    )
    assert result.counts.key <= result.start_counts.key
    kept = {p for p in result.placements if problem.current.get(p.task_id) == p}
    moved = [p for p in result.placements if p not in kept]
    applied = apply_placements(
        state, moved, [t for t, p in problem.current.items() if p not in kept]
    )
    assert result.counts.key == health_key(applied, level)
    ev = evaluator(state, problem, level)
    ev.set_placements(start)
    days = list(range(1, ev.num_days + 1))
    step = lns_step(ev, problem, days, time_limit_s=30.0, deterministic_time=2.0)
    if not liftable(ev, problem, days):
        assert step.status == "skipped"
        return
    assert step.placements is not None
    new = [pl for pl in step.placements.values() if problem.current.get(pl.task_id) != pl]
    apply_placements(state, new, [pl.task_id for pl in new])  # relocate accepts them


def test_time_limit_returns_with_flags() -> None:
    """Tests that a step returns rather than hangs: with no time it claims nothing and says the
    wall clock stopped it; with a tiny deterministic time on a larger neighbourhood it returns
    with ``wall_limited`` false (the work budget, not the clock, ended it)."""
    state = synthetic_window(2, 30, variant="tight")
    problem = build_problem(state, include_suggested=True, by_subject=True)
    ev = evaluator(state, problem)
    ev.set_placements(list(problem.current.values()))
    random_start(ev, problem, np.random.default_rng(0))
    days = [5, 6, 7, 8]
    assert liftable(ev, problem, days)
    none = lns_step(ev, problem, days, time_limit_s=0.0)
    assert none.placements is None and none.wall_limited and not none.proven
    tiny = lns_step(ev, problem, days, time_limit_s=60.0, deterministic_time=1e-3)
    assert not tiny.wall_limited
    assert tiny.status in ("optimal", "feasible", "unknown")
    if tiny.status != "optimal":
        assert not tiny.proven


def test_search_with_lns_is_deterministic_for_a_seed() -> None:
    """Tests that two searches with LNS steps, the same seed and no wall deadline give the same
    placements."""
    state = synthetic_window(1, 13, variant="fragmented")
    problem = build_problem(state, include_suggested=True, by_subject=True)
    ev = evaluator(state, problem)
    ev.set_placements(list(problem.current.values()))
    random_start(ev, problem, np.random.default_rng(3))
    start = list(ev.placed_scope.values())
    a = search_health(state, problem, start, seed=5, budget_s=0.3, calibration=FORCED)
    b = search_health(state, problem, start, seed=5, budget_s=0.3, calibration=FORCED)
    assert a.lns_steps >= 1 and not a.lns_cut and not b.lns_cut
    assert a.placements == b.placements and a.counts == b.counts


def test_lns_steps_keep_the_move_limit() -> None:
    """Tests that a search with LNS steps at every refresh and a move limit of one task ends
    with at most one task away from its start (a step moving more is undone), while the same
    search without the limit takes the two-task re-plan."""
    state, problem, start = plateau_window()
    free = search_health(state, problem, start, seed=0, budget_s=0.3, calibration=FORCED)
    assert free.lns_accepted >= 1 and free.moved >= 2
    capped = search_health(
        state, problem, start, seed=0, budget_s=0.3, calibration=FORCED, max_moves=1
    )
    assert capped.lns_steps >= 1 and capped.moved <= 1
    assert capped.counts.key <= capped.start_counts.key
