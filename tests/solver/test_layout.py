"""Tests of the solver package's layout: modules share public names only, and the searches'
calibration lives in one module (:mod:`smartflow_engine.solver.budget`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import smartflow_engine.solver as solver_package

SOLVER = Path(solver_package.__file__).parent
MODULES = sorted(SOLVER.glob("*.py"))
# Modules whose tuning figures must come from .budget (issue 10, item 7).
BUDGETED = (
    "placement",
    "submodel",
    "neighbourhood",
    "columns",
    "pricing",
    "master",
    "local_search",
    "reoptimize",
    "baselines",
)
# Module-level numbers that are not calibration: the programme's encoding and its infinity.
NOT_CALIBRATION = {"pricing": {"INF", "MAX_MASK_BITS", "FREE_CAND", "FREE_OK", "OCC_NONE", "OCC"}}


def _tree(name: str) -> ast.Module:
    return ast.parse((SOLVER / f"{name}.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_modules_import_no_private_names_from_each_other(path: Path) -> None:
    """Tests that no solver module imports a name with a leading underscore from another module
    of the package (``reoptimize`` once imported the placement model's private classes); the
    private modules themselves (``_cpsat``, ``_kernels``) export public names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    private = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.level >= 1
        and node.module is not None  # ``from . import _kernels``: a module, not a name
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert private == []


def test_reoptimize_uses_the_public_model() -> None:
    """Tests that the re-optimising writes build on the public placement model."""
    imported = {
        alias.name
        for node in ast.walk(_tree("reoptimize"))
        if isinstance(node, ast.ImportFrom) and node.module == "submodel"
        for alias in node.names
    }
    assert {"SubModel", "WindowData", "Lin"} <= imported


def test_budget_imports_nothing_of_ours() -> None:
    """Tests that every solver module can read the budget: it imports no module of ours."""
    relative = [
        node
        for node in ast.walk(_tree("budget"))
        if isinstance(node, ast.ImportFrom) and (node.level or 0) >= 1
    ]
    assert relative == []


@pytest.mark.parametrize("name", BUDGETED)
def test_calibration_constants_live_in_budget(name: str) -> None:
    """Tests that the searches define no module-level numeric constants of their own: every
    share, cost and grace period is read from .budget."""
    allowed = NOT_CALIBRATION.get(name, set())
    numbers = []
    for node in _tree(name).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if (
            isinstance(target, ast.Name)
            and target.id.isupper()
            and target.id not in allowed
            and isinstance(value, ast.Constant)
            and isinstance(value.value, int | float)
            and not isinstance(value.value, bool)
        ):
            numbers.append(target.id)
    assert numbers == []
