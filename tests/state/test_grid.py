"""Tests of the occupancy grid: build, free runs against a naive scan."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from smartflow_engine.state import Grid, runs
from smartflow_engine.state.synthetic import synthetic_window


def _naive_runs(mask):
    out = []
    for r, row in enumerate(mask.tolist()):
        s = None
        for c, v in enumerate([*row, False]):
            if v and s is None:
                s = c
            elif not v and s is not None:
                out.append((r, s, c - s))
                s = None
    return out


@given(st.lists(st.lists(st.booleans(), min_size=12, max_size=12), min_size=1, max_size=20))
def test_runs_match_naive_scan(rows):
    """Tests that the vectorised run detection equals a period-by-period scan."""
    mask = np.array(rows, dtype=bool)
    r, s, n = runs(mask)
    assert list(zip(r.tolist(), s.tolist(), n.tolist(), strict=True)) == _naive_runs(mask)


@given(st.integers(0, 10_000), st.sampled_from([7, 13, 30]))
def test_grid_matches_tasks(seed, days):
    """Tests that the grid holds exactly the periods of every task (guests on their own layer)."""
    state = synthetic_window(seed, days, variant="fragmented")
    grid = Grid.build(state)
    expected = np.zeros_like(grid.owner)
    for task in state.placed_tasks():
        for b in task.slots:
            if task.embed_host is None:
                assert (expected[b.day - 1, b.slot_start - 1 : b.slot_end] == 0).all()
                expected[b.day - 1, b.slot_start - 1 : b.slot_end] = task.state_id
    assert np.array_equal(expected, grid.owner)
    assert grid.day_load().sum() == np.count_nonzero(expected)
    free = grid.free_runs()
    assert sum(e - s + 1 for _, s, e in free) == np.count_nonzero(expected == 0)
    for d, s, e in grid.free_runs(min_len=3):
        assert e - s + 1 >= 3 and (grid.owner[d - 1, s - 1 : e] == 0).all()
