"""Small seeded cohorts for the batch tests (7-day windows: every solve is proven in well under a
second, so the tables are the same on any engine however busy the machine)."""

from __future__ import annotations

from smartflow_engine import ScheduleState
from smartflow_engine.state.synthetic import VARIANTS, synthetic_window

TIME_LIMIT = 3.0  # proofs on these windows take milliseconds; the margin is for a busy machine
# The proposals' work budget wherever tables are compared: each job's wall clock is TIME_LIMIT
# (issue 24), so a table is the same on every engine only when the work budget, not the wall
# clock, ends every search; 30x below the limit keeps a loaded 2-core machine out.
WORK_LIMIT = 0.1


def tiny_cohort(n: int = 9) -> list[ScheduleState]:
    """Mixed variants, every other window with task classes; seed 4 is proven infeasible."""
    return [
        synthetic_window(i, 7, variant=VARIANTS[i % 3], pending=5, with_task_classes=i % 2 == 0)
        for i in range(n)
    ]


def runtime_columns(columns: list[str]) -> list[str]:
    """The wall-clock columns (the only ones allowed to differ between runs)."""
    return [c for c in columns if c.endswith("_s")]
