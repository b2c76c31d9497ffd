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
from .health_floor import HealthFloor, health_floor
from .objective import DEFAULT_WEIGHTS, TERM_NAMES, TERMS, evaluate
from .placement import Proposal, proposal_key, propose_placement
from .problem import Placement
from .reoptimize import Reoptimization, min_context_switch, spread_even
from .repair import repair_placement

__all__ = [
    "DEFAULT_WEIGHTS",
    "REASON_CODES",
    "TERMS",
    "TERM_NAMES",
    "Bottleneck",
    "ClassShortfall",
    "DurationShortfall",
    "FeasibilityReport",
    "HealthFloor",
    "NegotiationFigures",
    "Placement",
    "Proposal",
    "Reoptimization",
    "SolveStatus",
    "check_feasibility",
    "evaluate",
    "health_floor",
    "min_context_switch",
    "negotiation_figures",
    "proposal_key",
    "propose_placement",
    "repair_placement",
    "spread_even",
]
