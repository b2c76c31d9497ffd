"""Every CP-SAT variable the solver creates carries a name (issue 30 item 2).

The models are caught where they are solved: ``CpSolver.solve`` is wrapped for the test, and the
public entry points (feasibility with and without its relaxation shortcut, the negotiation
figures, a proposal, the two re-optimising tools) are run on small windows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ortools.sat.python import cp_model

from smartflow_engine import ScheduleState
from smartflow_engine.solver import (
    check_feasibility,
    min_context_switch,
    negotiation_figures,
    propose_placement,
    spread_even,
)
from smartflow_engine.state.synthetic import synthetic_window


@pytest.fixture
def solved_models(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The CP-SAT models solved while the test runs, in order."""
    models: list[Any] = []
    real = cp_model.CpSolver.solve

    def solve(self: Any, model: Any, *args: Any, **kwargs: Any) -> Any:
        models.append(model)
        return real(self, model, *args, **kwargs)

    monkeypatch.setattr(cp_model.CpSolver, "solve", solve)
    return models


def _unnamed(models: list[Any]) -> list[tuple[int, int]]:
    return [
        (m, i)
        for m, model in enumerate(models)
        for i, var in enumerate(model.Proto().variables)
        if not var.name
    ]


def _study_category(state: ScheduleState) -> str:
    return next(t.category for t in state.tasks if t.source == "task_item" and t.is_placed)


RUNS: list[tuple[str, Callable[[], object]]] = [
    (
        "feasibility_cpsat",  # the counting model, no relaxation shortcut; infeasible: explained
        lambda: check_feasibility(
            synthetic_window(2, 10, variant="tight", with_task_classes=True),
            time_limit_s=5.0,
            relaxation=False,
        ),
    ),
    (
        "negotiation",  # the extra-days model (an integer multiplicity variable)
        lambda: negotiation_figures(
            synthetic_window(2, 10, variant="tight", with_task_classes=True), time_limit_s=5.0
        ),
    ),
    (
        "feasibility_ordered",  # the exact ordered model (issue 42: keep_order drops items)
        lambda: check_feasibility(
            synthetic_window(500, 13, variant="tight", upstream=True),
            time_limit_s=2.0,
            explain=False,
        ),
    ),
    (
        "proposal",  # the full window's placement model, the close stage's sub-models
        lambda: propose_placement(synthetic_window(1, 7), time_limit_s=3.0, seed=0),
    ),
]


@pytest.mark.parametrize("name,run", RUNS, ids=[name for name, _ in RUNS])
def test_every_cpsat_variable_is_named(
    name: str, run: Callable[[], object], solved_models: list[Any]
) -> None:
    """Tests that every variable of every CP-SAT model an entry point solves has a name."""
    run()
    assert solved_models, f"{name}: no CP-SAT model was solved"
    assert _unnamed(solved_models) == []


def test_reoptimising_models_name_their_variables(solved_models: list[Any]) -> None:
    """Tests that spread_even's and min_context_switch's models name every variable."""
    state = synthetic_window(1, 7)
    spread_even(state, _study_category(state), time_limit_s=2.0, seed=0)
    min_context_switch(state, time_limit_s=2.0, seed=0)
    assert solved_models
    assert _unnamed(solved_models) == []
    names = {var.name for model in solved_models for var in model.Proto().variables}
    assert any(n.startswith("spread_dev_") for n in names)
    assert any(n.startswith("x_r") for n in names)
