"""The ``SMARTFLOW_SEMESTER_START`` setting on the states a tool surface is given (issue 42)."""

from __future__ import annotations

from ...state import ScheduleState


def dated(state: ScheduleState | None) -> ScheduleState | None:
    """``state`` with the setting (the date of week 1's Monday) written into its window when the
    window states no dates of its own, so its classes' start/end dates hold; ``state`` itself."""
    if state is not None:
        from ...settings import current

        state.apply_semester_start(current().semester_start)
    return state
