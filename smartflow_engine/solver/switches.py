"""Subject switches as the student sees them: the one definition ``analyze_context`` and
``min_context_switch`` share (issue 12, item 10).

The *study layer* of a window holds, per period, the subject of the study task doing it: the
category of a task that is not a calendar event (``source != "event"``), ``未分类`` when it has
none; a guest replaces its host's period (the student studies there). Courses and free periods
hold no subject and break the sequence. A *switch* is two adjacent periods of one day holding
two different subjects.

It sits in the solver (below the analyzers: data flows analyzers -> solver -> state) so that the
re-optimising tool can count exactly what the analyzer reports.
"""

from __future__ import annotations

import numpy as np

from ..concepts import UNCATEGORISED
from ..state import ScheduleState


def study_layer(state: ScheduleState) -> np.ndarray:
    """``(days, slots)`` subject codes of the study layer (0: no subject), codes from 1 in the
    order the subjects first appear in the task list."""
    grid = state.grid
    code_of: dict[str, int] = {}
    lut = np.zeros(max((t.state_id for t in state.tasks), default=0) + 1, dtype=np.int64)
    for task in state.tasks:
        if task.source == "event":
            continue
        name = task.category or UNCATEGORISED
        lut[task.state_id] = code_of.setdefault(name, len(code_of) + 1)
    study = lut[grid.owner]
    guest = grid.guest
    if guest.any():
        study = np.where(guest != 0, lut[guest], study)
    out: np.ndarray = study
    return out


def switch_mask(study: np.ndarray) -> np.ndarray:
    """``(days, slots - 1)``: whether periods ``q`` and ``q + 1`` hold two different subjects."""
    left, right = study[:, :-1], study[:, 1:]
    out: np.ndarray = (left != 0) & (right != 0) & (left != right)
    return out


def daily_switches(study: np.ndarray) -> np.ndarray:
    """Switches per day of a study layer."""
    out: np.ndarray = np.count_nonzero(switch_mask(study), axis=1)
    return out


def switches(state: ScheduleState, first: int = 1, last: int | None = None) -> int:
    """Switches of the study layer on days ``first..last`` (1-based, inclusive)."""
    last = state.num_days if last is None else last
    return int(daily_switches(study_layer(state))[first - 1 : last].sum())


__all__ = ["UNCATEGORISED", "daily_switches", "study_layer", "switch_mask", "switches"]
