"""Tests of the least-concentration bound's water level (solver/health_floor.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine.solver.health_floor import _water_level


@settings(max_examples=300, deadline=None)
@given(
    bounds=st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 8), st.booleans()), min_size=1, max_size=40
    ),
    share=st.floats(0.0, 1.0),
)
def test_water_level_fills_exactly_to_the_total(bounds, share):
    """Tests that the water level's clipped amounts sum to the total and equal what a long
    bisection on the level finds (the least-concentration bound pours movable periods so)."""
    lo = np.array([float(a) for a, _, _ in bounds])
    hi = lo + np.array([float(b) if reach else 0.0 for _, b, reach in bounds])
    total = float(lo.sum() + share * (hi.sum() - lo.sum()))
    x = np.clip(_water_level(lo, hi, total), lo, hi)
    assert abs(x.sum() - total) < 1e-6
    a, b = float(lo.min()), float(hi.max())
    for _ in range(100):
        mid = (a + b) / 2
        a, b = (mid, b) if np.clip(mid, lo, hi).sum() < total else (a, mid)
    assert np.abs(x - np.clip(b, lo, hi)).max() < 1e-6
