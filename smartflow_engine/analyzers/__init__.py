"""The five read-only analyzers of p1-analysis-plan.md §4.3-§4.7, computed on the occupancy grid.

Each ``analyze_*(state, **params)`` returns an :class:`AnalysisResult` (the spec's envelope as
data); :func:`batch_core_metrics` computes the core load/tolerance metrics of a stack of windows
in one vectorised pass. Nothing here renders text for the LLM beyond the envelope's own fields.
"""

from ..rules import LEVELS, RULES
from .batch import BatchCoreMetrics, batch_core_metrics, stack_kinds
from .context import analyze_context
from .health import analyze_health
from .load import analyze_load
from .result import AnalysisResult, Issue, NextAction, Trigger
from .subjects import analyze_subjects
from .tolerance import analyze_tolerance

__all__ = [
    "LEVELS",
    "RULES",
    "AnalysisResult",
    "BatchCoreMetrics",
    "Issue",
    "NextAction",
    "Trigger",
    "analyze_context",
    "analyze_health",
    "analyze_load",
    "analyze_subjects",
    "analyze_tolerance",
    "batch_core_metrics",
    "stack_kinds",
]
