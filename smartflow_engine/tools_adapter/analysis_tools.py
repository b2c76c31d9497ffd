"""Analysis tools (analyze_load, analyze_subjects, analyze_context, analyze_tolerance,
analyze_health): registered as the analyzers land."""

from __future__ import annotations

from .spec import ToolSpec

ANALYSIS_TOOLS: tuple[ToolSpec, ...] = ()
