"""Tests of the solver's calibration as a value (issue 30 item 3): one frozen
:class:`~smartflow_engine.solver.budget.Calibration` passed down from every entry point, read by
every stage, and varied by passing a value instead of patching a module."""

from __future__ import annotations

import ast
from dataclasses import FrozenInstanceError, asdict, replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import smartflow_engine.solver as solver_package
from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.solver import budget, propose_placement
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION, Calibration
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.tools import solver as solver_tools
from tests.helpers.windows import window_dict

SOLVER = Path(solver_package.__file__).parent

# The measured figures (module docstring of solver/budget.py: a change is re-measured with
# benchmarks/bench_solver.py, and then this table changes with it).
DOCUMENTED = {
    "min_work_s": 0.05,
    "deterministic_share": 0.5,
    "deadline_margin_s": 0.02,
    "setup_grace_s": 0.05,
    "work_share": 0.1,
    "shares_of": 0.4,
    "level1_share": 0.3,
    "repair_share": 0.1,
    "greedy_share": 0.2,
    "close_per_task_s": 2e-4,
    "close_max_share": 0.4,
    "close_setup_per_task_s": 3e-5,
    "unplaced_check_share": 0.1,
    "health_share": 0.4,
    "greedy_grace_s": 0.1,
    "pack_orders": 4,
    "random_orders": (40, 10),
    "greedy_first_max_bins": 100,
    "eval_cost_s": 150e-6,
    "eval_cost_per_day_s": 0.3e-6,
    "refresh_every": 40,
    "swap_share": 0.2,
    "gap_share": 0.25,
    "scan_share": 0.02,
    "scan_days": 16,
    "gap_scan_share": 0.15,
    "unload_scan_share": 0.05,
    "gap_sources": 4,
    "gap_days": 3,
    "gap_places": 2,
    "unload_tasks": 2,
    "unload_days": 6,
    "unload_exchange_days": 3,
    "push_chain": 8,
    "push_days": 6,
    "pending_share": 0.4,
    "min_solve_s": 0.02,
    "shrink_checks_per_s": 6.0,
    "shrink_det_time": 0.05,
    "reoptimize_det_share": 0.1,
    "spread_weight": 20.0,
    "switch_weight": 10.0,
    "post_solve_per_task_s": 6e-5,
    "move_weight": 0.05,
    "ordered_max_options": 40_000,
    "ordered_build_share": 0.5,
    "ordered_solve_per_build": 1.0,
    "ordered_chain_work": 0.05,
    "ordered_chain_share": 0.1,
    "ordered_max_share": 5.0,
    "ordered_max_work": 0.5,
    "ordered_max_split": 0.7,
    "ordered_floor_seed_share": 0.3,
    "exact_build_steps_per_work": 9e6,
    "one_search_share": 1.0,
    "exact_floor_share": 0.55,
    "exact_det_per_s": 0.45,
    "day_plan_min_extra_s": 8.0,
    "day_plan_extra_share": 0.5,
    "day_plan_max_work": 10.0,
    "day_plan_check_work": 1.0,
    "day_plan_check_share": 0.25,
    "day_plan_pack_items": 6,
    "day_plan_rounds": 12,
    "exact_complete_share": 0.1,
    "realise_pack_steps": 400,
    "soft_eval_factor": 1.3,
    "soft_health_part": 1.6,
    "soft_history": 20,
    "soft_scan_share": 0.1,
    "soft_scan_tries": 3,
    "soft_screen_cost": 0.45,
    "soft_patience_per_task": 50.0,
    "health_patience_per_task": 50.0,
    "health_patience_min": 1500,
    "soft_patience_min": 2000,
    "soft_kick_per_task": 10.0,
    "soft_kick_moves": 3,
}


def test_the_calibration_is_a_frozen_value() -> None:
    """Tests that nothing can change a calibration in place (a figure is varied by passing a
    replaced copy), that copies compare by value and that no figure may be negative."""
    with pytest.raises(FrozenInstanceError):
        DEFAULT_CALIBRATION.health_share = 0.0  # type: ignore[misc]
    assert Calibration() == DEFAULT_CALIBRATION
    assert replace(DEFAULT_CALIBRATION, health_share=0.0) != DEFAULT_CALIBRATION
    assert hash(replace(DEFAULT_CALIBRATION)) == hash(DEFAULT_CALIBRATION)
    with pytest.raises(ValueError, match="work_share"):
        replace(DEFAULT_CALIBRATION, work_share=-0.1)
    with pytest.raises(ValueError, match="pack_orders"):
        replace(DEFAULT_CALIBRATION, pack_orders=0)


def test_the_default_is_the_documented_figures() -> None:
    """Tests that the default calibration holds the measured figures, every one of them."""
    assert asdict(DEFAULT_CALIBRATION) == DOCUMENTED


def test_budget_holds_no_module_level_figure() -> None:
    """Tests that the figures exist only as fields: the budget module has no upper-case global
    but the default value (nothing left to patch)."""
    assert [name for name in vars(budget) if name.isupper()] == ["DEFAULT_CALIBRATION"]
    assert not any(hasattr(budget, name.upper()) for name in DOCUMENTED)


def test_a_proposal_reads_its_calibration() -> None:
    """Tests that a proposal's stages read the calibration they are given: with the close
    search's share at zero the same seed and work reach the same start of the search, and the
    counts stay there, while the default's search improves them on this window."""
    state = synthetic_window(0, 13, variant="plain", with_task_classes=True)
    work = {"time_limit_s": 60.0, "work_limit_s": 0.2, "seed": 0}  # no machine's clock decides
    default = propose_placement(state, **work)
    no_search = replace(DEFAULT_CALIBRATION, health_share=0.0, one_search_share=0.0)
    no_close = propose_placement(state, **work, calibration=no_search)
    assert not default.wall_limited and not no_close.wall_limited
    assert default.start_health == no_close.start_health
    assert no_close.start_health is not None
    assert (no_close.critical, no_close.warning) == no_close.start_health
    assert (default.critical, default.warning) < default.start_health  # type: ignore[operator]


def test_a_tool_hands_its_calibration_to_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that a toolbox's calibration reaches the proposal it runs, and that the proposal's
    work budget is that calibration's share of the asked limit."""
    seen: dict[str, Any] = {}

    def spy(state: ScheduleState, **kw: Any) -> Any:
        seen.update(kw)
        return propose_placement(state, **kw)

    monkeypatch.setattr(solver_tools, "propose_placement", spy)
    calibration = replace(DEFAULT_CALIBRATION, work_share=0.1)
    state = synthetic_window(1, 13, variant="plain")
    Toolbox(state, calibration=calibration).call(
        "propose_placement", {"time_limit_s": 2.0, "seed": 0}
    )
    assert seen["calibration"] is calibration
    assert seen["work_limit_s"] == pytest.approx(0.1 * 2.0)


def test_the_http_app_hands_its_calibration_to_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests that ``create_app(calibration=...)`` reaches the solver through a session's call
    and through a stateless call."""
    seen: list[Calibration] = []
    real = solver_tools.check_feasibility

    def spy(state: ScheduleState, **kw: Any) -> Any:
        seen.append(kw["calibration"])
        return real(state, **kw)

    monkeypatch.setattr(solver_tools, "check_feasibility", spy)
    calibration = replace(DEFAULT_CALIBRATION, min_solve_s=0.03)
    client = TestClient(create_app({"tok": "user"}, calibration=calibration))
    headers = {"Authorization": "Bearer tok"}
    created = client.post("/v1/sessions", headers=headers, json={"state": window_dict()})
    assert created.status_code == 201, created.text
    sid = created.json()["session_id"]
    call = {"tool": "check_feasibility", "args": {"time_limit_s": 1.0}}
    assert client.post(f"/v1/sessions/{sid}/calls", headers=headers, json=call).status_code == 200
    stateless = {"state": window_dict(), "args": {"time_limit_s": 1.0}}
    out = client.post("/v1/tools/check_feasibility/call", headers=headers, json=stateless)
    assert out.status_code == 200, out.text
    assert seen == [calibration, calibration]


# ---------------------------------------------------------------------------------- threading
def _calibrated() -> dict[str, int]:
    """Every solver function (or class, by its ``__init__``) taking ``calibration``: the index
    of that parameter among the positional ones (a large number when keyword-only)."""
    out: dict[str, int] = {}
    for path in SOLVER.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[tuple[str, ast.FunctionDef]] = []
            if isinstance(node, ast.FunctionDef) and node.name != "__init__":
                targets.append((node.name, node))
            elif isinstance(node, ast.ClassDef):
                targets += [
                    (node.name, f)
                    for f in node.body
                    if isinstance(f, ast.FunctionDef) and f.name == "__init__"
                ]
            for name, fn in targets:
                positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
                positional = [a for a in positional if a != "self"]
                keyword = [a.arg for a in fn.args.kwonlyargs]
                if "calibration" in positional:
                    out[name] = min(out.get(name, 99), positional.index("calibration"))
                elif "calibration" in keyword:
                    out.setdefault(name, 99)
    return out


def test_every_solver_call_hands_the_calibration_on() -> None:
    """Tests that inside the solver package every call of a function that takes a calibration
    passes one (by keyword or in its place): a stage left to its default would quietly run with
    the default figures whatever its caller was given."""
    calibrated = _calibrated()
    assert {"propose_placement", "search_health", "unplaced_check", "max_placeable"} <= set(
        calibrated
    )
    missing = []
    for path in sorted(SOLVER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name not in calibrated:
                continue
            by_keyword = any(k.arg in ("calibration", None) for k in node.keywords)
            if not by_keyword and len(node.args) <= calibrated[name]:
                missing.append(f"{path.stem}:{node.lineno} {name}")
    assert missing == []
