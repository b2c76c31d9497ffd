"""Subject switches as the student sees them, for the re-optimising tool: the health model's
study layer and switches (:mod:`..health_facts`, :func:`..concepts.is_switch`), so that
``reoptimize`` counts exactly what ``analyze_context`` reports (issue 25 item 1).

The *study layer* of a window holds, per period, the subject of the study task doing it
(:func:`..concepts.subject_of`; a guest replaces its host's period); courses and free periods
hold no subject and break the sequence. A *switch* is two adjacent periods of one day holding
two different subjects.
"""

from __future__ import annotations

import numpy as np

from ..concepts import UNCATEGORISED
from ..health_facts import day_switches, subject_codes, switch_mask
from ..state import ScheduleState


def study_layer(state: ScheduleState) -> np.ndarray:
    """``(days, slots)`` subject codes of the study layer (0: no subject), codes from 1 in the
    order the subjects first appear in the task list (:func:`..health_facts.subject_codes`)."""
    grid = state.grid
    return subject_codes(state.tasks).study_layer(grid.owner, grid.guest)


def daily_switches(study: np.ndarray) -> np.ndarray:
    """Switches per day of a study layer (:func:`..health_facts.day_switches`)."""
    return day_switches(study)


def switches(state: ScheduleState, first: int = 1, last: int | None = None) -> int:
    """Switches of the study layer on days ``first..last`` (1-based, inclusive)."""
    last = state.num_days if last is None else last
    return int(day_switches(study_layer(state))[first - 1 : last].sum())


__all__ = ["UNCATEGORISED", "daily_switches", "study_layer", "switch_mask", "switches"]
