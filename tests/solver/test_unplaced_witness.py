"""The close stage's feasibility check of a proposal that places every task reads the applied
schedule, which is its own witness (``feasibility.standing_witness``): no model is built."""

from __future__ import annotations

from typing import Any

import pytest

from smartflow_engine.solver import feasibility
from smartflow_engine.solver.placement import propose_placement
from smartflow_engine.solver.unplaced import unplaced_check
from smartflow_engine.state.synthetic import synthetic_window


def _no_model(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the counting model ran")


def test_a_proposal_placing_everything_is_checked_without_a_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests that with nothing left unplaced the check answers 0, not cut, from the applied
    schedule (the counting model would fail the test), and that the same check with the
    proposal's last task left out runs the model."""
    state = synthetic_window(501, 13, variant="plain", upstream=True)
    proposal = propose_placement(
        state, time_limit_s=30.0, work_limit_s=0.2, include_suggested=True, seed=0
    )
    assert not proposal.unplaced and proposal.placements
    monkeypatch.setattr(feasibility, "max_placeable", _no_model)
    assert unplaced_check(state, [], 10.0, 1, placements=proposal.placements) == (0, False)
    last = proposal.placements[-1]
    with pytest.raises(AssertionError, match="counting model ran"):
        unplaced_check(state, [last.task_id], 10.0, 1, placements=proposal.placements[:-1])
