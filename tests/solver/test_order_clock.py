"""The exact ordered model before a proposal's search is stopped by its work, not by a fixed
wall-clock cap (issue 42; docs/decisions.md, ninth session): a two-second cap cut it on every
30-60-day tight upstream window whatever the call's limit, so the same call answered
differently on a busier machine."""

from __future__ import annotations

from typing import Any

import pytest

from smartflow_engine.solver import ordered
from smartflow_engine.solver._cpsat import SolveStatus
from smartflow_engine.solver.order import _ordered_max
from smartflow_engine.solver.run import ScopeRun
from smartflow_engine.state.synthetic import synthetic_window


def test_the_ordered_model_gets_half_the_time_left_before_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests that under a long limit the model's wall limit is half of what is left before the
    search's stop (far above the old two seconds), and its work is the calibrated share."""
    state = synthetic_window(501, 13, variant="tight", upstream=True)
    run = ScopeRun.begin(state, time_limit_s=60.0, include_suggested=True)
    run.level1()  # (sets the search's stop)
    seen: list[dict[str, Any]] = []

    def record(*args: Any, **kwargs: Any) -> tuple[SolveStatus, int, int, list[Any]]:
        seen.append(kwargs)
        return SolveStatus.UNKNOWN, 0, 0, []

    monkeypatch.setattr(ordered, "max_placeable_ordered", record)
    cut: list[bool] = []
    kept, dropped = _ordered_max(run, [], [], [1], cut)
    assert (kept, dropped) == ([], [1])  # (nothing better found: the chains' answer stands)
    assert len(seen) == 1
    left = run.search_stop - run.t0
    assert left > 8.0
    assert seen[0]["time_limit_s"] > 0.45 * left
    cal = run.calibration
    work = min(cal.ordered_max_share * run.effort * cal.exact_det_per_s, cal.ordered_max_work)
    assert seen[0]["work_s"] == pytest.approx(cal.ordered_max_split * work)
    assert not cut
