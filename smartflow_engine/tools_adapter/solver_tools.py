"""Solver-backed tools (check_feasibility, propose_placement, apply_proposal, spread_even,
min_context_switch): registered as the solver lands."""

from __future__ import annotations

from .spec import ToolSpec

SOLVER_TOOLS: tuple[ToolSpec, ...] = ()
