"""Tests of the day-decomposition lower bound on a proposal's weighted objective."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.bounds import column_bound, day_decomposition_bound
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.pricing import _programme_all
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import tiny_windows


@settings(max_examples=25, deadline=None)
@given(state=tiny_windows(max_pending=4))
def test_bound_never_exceeds_a_proposal(state: ScheduleState) -> None:
    """Tests on tiny windows (hosts, guests, classes, several days) that the bound is proven and
    never above the weighted objective of the proposal placing the same number of periods."""
    note(state.to_json(indent=None))
    proposal = propose_placement(state, time_limit_s=2.0, seed=0)
    problem = build_problem(state, by_subject=True)
    bound = day_decomposition_bound(problem, int(proposal.objective["placed_slots"]))
    assert bound.proven
    assert bound.value <= proposal.objective["weighted_total"] + 1e-9


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_bound_meets_the_optimum_on_one_day_without_hosts(seed: int) -> None:
    """Tests that on a one-day window without embeddable hosts the column bound equals the
    proven optimum of the full placement model (one day: nothing is relaxed but the LP), and
    the decomposition bound (group counts relaxed) is not above it."""
    state = synthetic_window(seed, 1, pending=4, embeddable=0.0)
    # the soft pipeline's own proof (the one search, the default, claims no soft bound)
    pipeline = replace(DEFAULT_CALIBRATION, one_search=False)
    proposal = propose_placement(state, time_limit_s=5.0, seed=0, calibration=pipeline)
    assert proposal.status == "optimal"
    problem = build_problem(state, by_subject=True)
    slots = int(proposal.objective["placed_slots"])
    bound = day_decomposition_bound(problem, slots)
    assert bound.proven
    assert bound.value <= proposal.objective["weighted_total"] + 1e-9
    cb = column_bound(problem, slots, proposal.placements, budget_s=5.0)
    assert cb.value == pytest.approx(proposal.objective["weighted_total"])


@settings(max_examples=40, deadline=None)
@given(
    cost=st.lists(
        st.lists(
            st.one_of(st.just(float("inf")), st.integers(0, 5).map(float)), min_size=4, max_size=4
        ),
        min_size=1,
        max_size=3,
    ),
    fixed=st.lists(st.integers(0, 4), min_size=3, max_size=3),
    total=st.integers(0, 6),
    w_load=st.sampled_from([0.0, 1.0, 2.5]),
)
def test_programme_matches_enumeration(
    cost: list[list[float]], fixed: list[int], total: int, w_load: float
) -> None:
    """Tests that the dynamic programme over days finds the same minimum as trying every split
    of ``total`` periods over the days (infinite cost = impossible count)."""
    arr = np.array(cost)
    fix = np.array(fixed[: len(cost)], dtype=float)
    mean = (fix.sum() + total) / len(cost)
    best = float("inf")
    for split in itertools.product(range(arr.shape[1]), repeat=len(cost)):
        if sum(split) == total:
            value = sum(arr[d, n] + w_load * abs(fix[d] + n - mean) for d, n in enumerate(split))
            best = min(best, value)
    assert _programme_all(arr, fix, [total], w_load, DEFAULT_CALIBRATION)[0][0] == pytest.approx(
        best
    )


def test_bound_is_far_above_zero_on_a_medium_window() -> None:
    """Tests on a 30-day window, where the full-window model's own bound stays near 0, that the
    decomposition bound is proven, positive, and below a proposal's objective."""
    state = synthetic_window(1, 30, variant="fragmented", pending=60, with_task_classes=True)
    proposal = propose_placement(state, time_limit_s=1.0, seed=0)
    problem = build_problem(state, by_subject=True)
    bound = day_decomposition_bound(problem, int(proposal.objective["placed_slots"]))
    assert bound.proven
    assert 0.5 * proposal.objective["weighted_total"] < bound.value
    assert bound.value <= proposal.objective["weighted_total"]
