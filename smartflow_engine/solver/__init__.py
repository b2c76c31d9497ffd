"""CP-SAT models of the window: exact feasibility and capacity gap, negotiation figures, rough
placement proposals and the re-optimising write tools; a greedy baseline.

Everything here returns data (dataclasses), never text; ortools is imported lazily.
"""

from ._cpsat import SolveStatus
from .feasibility import (
    REASON_CODES,
    Bottleneck,
    ClassShortfall,
    DurationShortfall,
    FeasibilityReport,
    NegotiationFigures,
    check_feasibility,
    negotiation_figures,
)
from .problem import Placement

__all__ = [
    "REASON_CODES",
    "Bottleneck",
    "ClassShortfall",
    "DurationShortfall",
    "FeasibilityReport",
    "NegotiationFigures",
    "Placement",
    "SolveStatus",
    "check_feasibility",
    "negotiation_figures",
]
