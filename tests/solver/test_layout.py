"""Tests of the solver package's layout: modules share public names only, and the searches'
calibration is one value (:class:`smartflow_engine.solver.budget.Calibration`), never a module
constant."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import smartflow_engine.solver as solver_package

SOLVER = Path(solver_package.__file__).parent
MODULES = sorted(SOLVER.glob("*.py"))
# Module-level numbers that are not calibration (issue 10 item 7, issue 30 item 3): encodings,
# tolerances and limits of the models' arithmetic, and analyze_health's own defaults.
NOT_CALIBRATION = {
    "_cpsat": {
        "MIN_TIME_LIMIT_S",
        "CUT_MARGIN_S",
    },  # CP-SAT's smallest limit (zero would mean none)
    "patterns": {"MAX_PATTERNS"},  # above it a run type uses the positional encoding
    "health_eval": {"MIN_USABLE", "MIN_BUFFER"},  # analyze_health's tolerance defaults
    # a tolerance; how many answers are kept; how many class masks get every union (2**6: a
    # model-size limit, like MAX_PATTERNS); how many spans of days are resolved (the same kind)
    "health_floor": {"_EPS", "_EXACT_MEMO_SIZE", "_CLASS_SUBSETS", "_SPANS"},
    "health_model": {"MAX_PATTERNS", "_PATTERNS_KEPT"},
    "relaxation": {"DUAL_SCALE", "INTEGRAL_TOL"},  # exact arithmetic of the certified bound
    "objective": {"MAX_SCALE", "MODEL_MAGNITUDE", "FLOAT_MARGIN"},  # exact weights and bounds
}


def _tree(name: str) -> ast.Module:
    return ast.parse((SOLVER / f"{name}.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_modules_import_no_private_names_from_each_other(path: Path) -> None:
    """Tests that no solver module imports a name with a leading underscore from another module
    of the package (``reoptimize`` once imported the placement model's private classes); the
    private modules themselves (``_cpsat``) export public names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    private = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.level >= 1
        and node.module is not None  # ``from . import _cpsat``: a module, not a name
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


def _numeric(node: ast.AST | None) -> bool:
    """A number, a tuple of numbers or arithmetic on numbers only."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    return False


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_no_solver_module_defines_a_calibration_constant(path: Path) -> None:
    """Tests that no solver module (budget included) defines a module-level numeric constant
    other than the listed encodings and tolerances: every share, cost, grace period and search
    figure is a field of :class:`.budget.Calibration`, passed down as a value."""
    allowed = NOT_CALIBRATION.get(path.stem, set())
    numbers = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            targets = [
                e
                for t in node.targets
                for e in (t.elts if isinstance(t, ast.Tuple) else [t])
                if isinstance(e, ast.Name)
            ]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target]
        else:
            continue
        value = node.value
        unpacked = isinstance(value, ast.Tuple) and len(value.elts) == len(targets) > 1
        values = value.elts if unpacked else [value] * len(targets)
        for target, v in zip(targets, values, strict=True):
            if target.id.isupper() and target.id not in allowed and _numeric(v):
                numbers.append(target.id)
    assert numbers == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_no_solver_function_is_longer_than_80_lines(path: Path) -> None:
    """Tests issue 40 item 4 (no function over 80 lines, docstring included): a stage that
    grows past it is split into named steps, as the pipeline's were."""
    long = [
        f"{node.name}: {node.end_lineno - node.lineno + 1}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > 80
    ]
    assert long == []
