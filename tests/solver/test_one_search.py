"""Issue 26: the close search on (critical, warning, soft terms) and the one-search path of
propose_placement."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.rules import LEVELS
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.baselines import balanced_greedy
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.counting import max_placeable
from smartflow_engine.solver.health_eval import HealthEvaluator
from smartflow_engine.solver.health_search import eval_cost, search_health
from smartflow_engine.solver.objective import evaluate
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import apply_placements, tiny_windows

ONE_SEARCH = DEFAULT_CALIBRATION  # (the only proposal path since issue 26 item 2)


def health_key(state: ScheduleState, level: str, feasibility: bool = False) -> tuple[int, int]:
    counts = analyze_health(state, threshold=level, check_feasibility=feasibility).issue_counts()
    return counts["critical"], counts["warning"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=tiny_windows(), level=st.sampled_from(LEVELS), seed=st.integers(0, 5))
def test_soft_key_search_is_never_worse_and_reports_true_figures(
    state: ScheduleState, level: str, seed: int
) -> None:
    """Tests that the search with weights ends lexicographically no worse than its start on
    (critical, warning, soft), that its soft figures equal objective.evaluate's and its counts
    analyze_health's on the applied schedule."""
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = list(problem.current.values())
    result = search_health(state, problem, start, level=level, seed=seed, budget_s=0.02, weights={})
    assert result.soft is not None and result.start_soft is not None
    assert result.soft == pytest.approx(evaluate(problem, result.placements)["weighted_total"])
    assert result.start_soft == pytest.approx(evaluate(problem, start)["weighted_total"])
    assert (result.counts.key, result.soft) <= (result.start_counts.key, result.start_soft + 1e-9)
    kept = {p for p in result.placements if problem.current.get(p.task_id) == p}
    moved = [p for p in result.placements if p not in kept]
    applied = apply_placements(
        state, moved, [t for t, p in problem.current.items() if p not in kept]
    )
    assert result.counts.key == health_key(applied, level)


def test_search_with_weights_improves_the_whole_key() -> None:
    """Tests that from the balanced greedy on a plain window the search with weights ends
    strictly better on (critical, warning, soft), with true counts and soft terms."""
    state = synthetic_window(1, 30, variant="plain")
    problem = build_problem(state, by_subject=True)
    start = balanced_greedy(problem)
    result = search_health(state, problem, start, seed=1, budget_s=0.3, weights={})
    ev = HealthEvaluator(state, {t for g in problem.groups for t in g.task_ids})
    ev.set_placements(result.placements)
    assert ev.counts_now().key == result.counts.key
    assert result.soft is not None and result.start_soft is not None
    assert result.soft == pytest.approx(evaluate(problem, result.placements)["weighted_total"])
    assert (result.counts.key, result.soft) < (result.start_counts.key, result.start_soft)


@pytest.mark.parametrize(
    ("seed", "days", "variant", "classes", "level"),
    [
        (1, 13, "plain", False, "normal"),
        (2, 30, "fragmented", True, "strict"),
        (4, 9, "tight", False, "normal"),  # infeasible: the feasibility issue counts too
    ],
)
def test_one_search_proposal_places_the_maximum_and_counts_true(
    seed: int, days: int, variant: str, classes: bool, level: str
) -> None:
    """Tests that the one-search path places the proven maximum of periods, reports the
    (critical, warning) analyze_health finds once applied, and objective.evaluate's terms."""
    state = synthetic_window(seed, days, variant=variant, with_task_classes=classes)  # type: ignore[arg-type]
    proposal = propose_placement(
        state, time_limit_s=2.0, seed=0, threshold=level, calibration=ONE_SEARCH
    )
    problem = build_problem(state, by_subject=True)
    level1 = max_placeable(problem, time_limit_s=5.0, num_workers=1)
    assert level1.proven
    assert sum(p.length for p in proposal.placements) == level1.best == proposal.max_slots
    applied = apply_placements(state, proposal.placements)
    assert (proposal.critical, proposal.warning) == health_key(applied, level, feasibility=True)
    assert proposal.objective == pytest.approx(evaluate(problem, proposal.placements))
    assert proposal.status != "optimal" or proposal.bound is not None


def test_one_search_is_deterministic_for_a_seed() -> None:
    """Tests that a fixed work budget under a generous wall limit gives the same proposal (60 s:
    on 2 loaded cores the soft phase runs ~10x its estimated cost, and 10 s was cut)."""
    state = synthetic_window(7, 20, variant="fragmented")
    runs = [
        propose_placement(
            state, time_limit_s=60.0, work_limit_s=0.2, seed=3, calibration=ONE_SEARCH
        )
        for _ in range(2)
    ]
    assert not runs[0].wall_limited and not runs[1].wall_limited
    assert runs[0].placements == runs[1].placements


def test_the_exact_models_schedule_is_a_valid_start() -> None:
    """Tests, on a 13-day fragmented window where the exact model's schedule has the fewest
    issues of the starts, that the one search starts from it (``start == "exact"``), places
    the proven maximum, reports the counts analyze_health finds once applied and meets its
    own (lexicographic) floor there; and that the start check refuses what is not a valid
    place of the problem."""
    from smartflow_engine.solver.health_floor import HealthFloor
    from smartflow_engine.solver.starts import exact_start, valid_start

    state = synthetic_window(600, 13, variant="fragmented")
    proposal = propose_placement(
        state, time_limit_s=10.0, work_limit_s=0.4, seed=0, calibration=ONE_SEARCH
    )
    assert proposal.start == "exact"
    problem = build_problem(state, by_subject=True)
    level1 = max_placeable(problem, time_limit_s=5.0, num_workers=1)
    assert sum(p.length for p in proposal.placements) == level1.best
    applied = apply_placements(state, proposal.placements)
    c, w = health_key(applied, "normal", feasibility=True)
    assert (proposal.critical, proposal.warning) == (c, w)
    assert proposal.floor is not None and proposal.floor_least_warning is not None
    floor = HealthFloor(*proposal.floor, least_warning=proposal.floor_least_warning)
    assert floor.meets(c, w)

    start, _ = exact_start(state, problem, level1.best, "normal", 5.0, 1)
    assert start is not None and valid_start(problem, start, level1.best)
    first = next(p for p in start if p.embed_host is None)
    rest = [p for p in start if p != first]
    assert not valid_start(problem, rest, level1.best)  # a period short
    assert not valid_start(problem, [*start, first], level1.best + first.length)  # twice
    other = next(p for p in rest if p.embed_host is None and p.day != first.day)
    moved = replace(
        first,
        day=other.day,
        slot_start=other.slot_start,
        slot_end=other.slot_start + first.length - 1,
    )
    assert not valid_start(problem, [moved, *rest], level1.best)  # overlaps another block


@pytest.mark.parametrize("share", [0.8, 1.6])
def test_a_search_short_of_its_floor_works_on_health_for_its_share(share: float) -> None:
    """Tests that with weights the health phase of a search that does not reach its floor
    spends ``soft_health_part`` times the evaluations its budget buys (past the budget when the
    share is above 1) and leaves the soft phase nothing beyond the budget."""
    state = synthetic_window(501, 13, variant="tight")
    problem = build_problem(state, by_subject=True)
    start = max_placeable(problem, time_limit_s=5.0, num_workers=1).witness
    cal = replace(DEFAULT_CALIBRATION, soft_health_part=share)
    budget = 0.2
    nominal = int(budget / (eval_cost(problem.num_days, cal) * cal.soft_eval_factor))
    result = search_health(
        state, problem, start, seed=0, budget_s=budget, weights={}, calibration=cal
    )
    floor = result.floor
    assert floor is not None and result.counts.key != floor  # (short of its floor)
    # a scan spends many evaluations at once: the last step may overrun by a few dozen
    assert int(share * nominal) <= result.evaluations <= max(share, 1.0) * nominal + 100


def test_an_exact_start_keeps_the_first_order_when_the_second_finds_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests that the exact start realises both orders of a kind's days and that a second
    realisation finding nothing (its solve forgotten and out of time) leaves the first one's
    start standing rather than none."""
    from smartflow_engine.solver import starts

    state = synthetic_window(600, 13, variant="fragmented")
    problem = build_problem(state, by_subject=True)
    level1 = max_placeable(problem, time_limit_s=5.0, num_workers=1)
    real = starts.realise
    orders: list[bool] = []

    def first_only(*args: object, **kwargs: object) -> object:
        orders.append(bool(kwargs["spread"]))
        return real(*args, **kwargs) if len(orders) == 1 else None  # type: ignore[arg-type]

    monkeypatch.setattr(starts, "realise", first_only)
    start, _ = starts.exact_start(state, problem, level1.best, "normal", 5.0, 1)
    assert orders == [True, False]
    assert start is not None and starts.valid_start(problem, start, level1.best)
