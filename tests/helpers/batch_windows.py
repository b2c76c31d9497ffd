"""Small seeded cohorts for the batch tests (7-day windows: every solve is proven in well under a
second, so the tables are the same on any engine however busy the machine)."""

from __future__ import annotations

from typing import Any

from smartflow_engine import ScheduleState
from smartflow_engine.batch.jobs import BASE_COLUMNS
from smartflow_engine.state.synthetic import VARIANTS, synthetic_window

# Each job's wall clock, a safety net far above the work (issue 45 item 2): proofs on these
# windows take milliseconds, and a proposal at WORK_LIMIT ~0.45 s of CPU (its close search costs
# ~4x its estimated work), so a job is cut only on a machine giving it < 5% of a core. At 3 s the
# loop's and Ray's tables differed under load (five helpers on two cores): the clock cut the
# close search on one engine only. A job that ends on its proof or work never waits for it.
TIME_LIMIT = 10.0
# The proposals' work budget wherever tables are compared: a table is the same on every engine
# only when the work budget, not the wall clock, ends every search.
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


def same_table(a: Any, b: Any) -> int:
    """Assert two batch tables of one cohort and seed are equal, runtimes aside, except for the
    solver figures of rows marked ``clock_cut`` in either (the wall clock ended one of their
    solver calls: those may differ, issue 45 item 2); every run counts its marked rows in
    ``attrs["batch"]["clock_cut"]``. Returns the number of rows left out."""
    import pandas as pd

    for df in (a, b):
        assert df.attrs["batch"]["clock_cut"] == int(df["clock_cut"].fillna(False).sum())
    cut = (a["clock_cut"].fillna(False) | b["clock_cut"].fillna(False)).to_numpy(dtype=bool)
    runtime = runtime_columns(list(a.columns))
    fixed = [c for c in BASE_COLUMNS if c in a.columns] + ["error"]
    pd.testing.assert_frame_equal(a[fixed], b[fixed])
    pd.testing.assert_frame_equal(
        a.loc[~cut].drop(columns=runtime), b.loc[~cut].drop(columns=runtime)
    )
    return int(cut.sum())
