"""The cheaper ways ``analyze_health`` reaches its figures (issue 40 item 7) give the answers of
the ways they replace: the extra days by greedy packings and the relaxation's bound (else the
CP-SAT model), the bottleneck's short classes without the conflict set, the destination search
without the relocate probes of taken water-course blocks."""

from __future__ import annotations

import time
from typing import Any

import pytest

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.analyzers import destinations as dest
from smartflow_engine.solver import check_feasibility, counting
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import make_state

# (seed, variant, classes, pending, occupancy): answers 5 (settled without CP-SAT), none
# (the classes end before the window does), 8 (left to the CP-SAT model)
EXTRA_DAY_WINDOWS = [
    (902, "fragmented", False, 120, 0.35),
    (901, "plain", True, 240, 0.2),
    (903, "fragmented", False, 120, 0.35),
    (902, "fragmented", False, None, 0.6),
]


@pytest.mark.parametrize(("seed", "variant", "classes", "pending", "occupancy"), EXTRA_DAY_WINDOWS)
def test_min_extra_days_is_the_cpsat_models_answer(
    seed: int, variant: str, classes: bool, pending: int | None, occupancy: float
) -> None:
    """Tests that the extra days the negotiation reports are the exact model's minimum, whether
    the cheap proofs settle them or CP-SAT does, and that the cheap path answers where it can
    (the fewest days a greedy packing fits everything in, proven by the bound one day fewer)."""
    state = synthetic_window(
        seed,
        30,
        variant=variant,  # type: ignore[arg-type]
        with_task_classes=classes,
        pending=pending,
        occupancy=occupancy,
    )
    problem = build_problem(state, include_suggested=True, subjects=False)
    exact = counting._min_extra_days_exact(problem, problem.task_count, 20.0, 1)
    assert exact[1] is True  # proven: the comparison means something
    assert counting.min_extra_days(problem, time_limit_s=20.0, num_workers=1) == exact
    cheap = counting._min_extra_days_cheap(problem, problem.task_count, time.perf_counter() + 20)
    assert cheap in (None, exact)
    if exact[0] is not None and exact[0] > 0:
        days = exact[0]
        assert counting.all_fit(
            counting.with_extra_days(problem, days),
            [g.count for g in problem.groups],
            time_limit_s=20.0,
            num_workers=1,
        )
        assert not counting.all_fit(
            counting.with_extra_days(problem, days - 1),
            [g.count for g in problem.groups],
            time_limit_s=20.0,
            num_workers=1,
        )


def test_the_cheap_path_settles_a_plain_shortage() -> None:
    """Tests that a window short of free periods gets its extra days without CP-SAT."""
    state = synthetic_window(902, 30, variant="fragmented", pending=120, occupancy=0.35)
    problem = build_problem(state, include_suggested=True, subjects=False)
    cheap = counting._min_extra_days_cheap(problem, problem.task_count, time.perf_counter() + 20)
    assert cheap == (5, True)


def test_explaining_only_the_classes_finds_the_same_short_classes() -> None:
    """Tests that ``explain="classes"`` gives the full explanation's short classes, and no
    conflict set."""
    # two days of 4 periods; class 10 may only use day 1 and bans period 4; a second class
    # has room
    state = make_state(
        2,
        4,
        [
            {"duration": 2, "category_id": 10},
            {"duration": 2, "category_id": 10},
            {"duration": 2, "category_id": 11},
        ],
        [
            {"id": 10, "name": "复习", "start_day": 1, "end_day": 1, "excluded_periods": [4]},
            {"id": 11, "name": "预习", "start_day": 1, "end_day": 2},
        ],
    )
    full = check_feasibility(state, time_limit_s=20.0, include_suggested=True)
    only = check_feasibility(state, time_limit_s=20.0, include_suggested=True, explain="classes")
    assert full.is_feasible is False and full.bottleneck is not None
    assert full.bottleneck.conflict_set  # the full one has it
    assert only.bottleneck is not None
    assert [c.class_id for c in only.bottleneck.classes] == [10]
    assert only.bottleneck.classes == full.bottleneck.classes
    assert only.bottleneck.conflict_set == () and only.bottleneck.durations == ()
    assert (only.capacity_gap, only.reason_code) == (full.capacity_gap, full.reason_code)


def test_taken_water_course_blocks_are_not_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that the fixable search on a window whose water courses hold guests calls the
    relocate probe only for blocks it may take, and that skipping the others leaves the reply
    as probing every block gives."""
    from benchmarks.bench_health_read import placed_window

    state = placed_window(30, "tight", False)
    probed: list[Any] = []
    real = dest.relocate

    def spy(work: Any, requests: Any, **kw: Any) -> Any:
        out = real(work, requests, **kw)
        probed.append(out)
        return out

    monkeypatch.setattr(dest, "relocate", spy)
    fast = analyze_health(state).to_dict()
    assert all(r.ok or r.refusal.kind != "embed_taken" for r in probed)

    def nobody(work: Any, block: Any, memo: Any) -> frozenset[int]:
        return frozenset()  # as if every block were free: each one probed

    probed.clear()
    monkeypatch.setattr(dest, "_block_guests", nobody)
    from smartflow_engine.analyzers import evaluator, health

    health._FLOORS.clear()
    health._REPORTS.clear()
    evaluator._CACHE.clear()
    slow = analyze_health(state).to_dict()
    assert any(not r.ok and r.refusal.kind == "embed_taken" for r in probed)
    for reply in (fast, slow):
        reply["feasibility"].pop("runtime_s")
    assert fast == slow
