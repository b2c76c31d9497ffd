"""A cohort of windows at once: feasibility, proposals and health for thousands of students, from
files or the database, on a local process pool or Ray, as one pandas table.

Sits above :mod:`~smartflow_engine.solver` and :mod:`~smartflow_engine.analyzers` (it calls only
their public entry points) and below the adapters; the database is reached through
:class:`~smartflow_engine.store.Store` only. Needs the ``batch`` extra (pandas, pyarrow); the
``ray`` engine needs the ``ray`` extra.

Quick use::

    from smartflow_engine.batch import run_batch, write_table
    df = run_batch("windows/", jobs=("feasibility", "proposal"), time_limit_s=1.0, seed=0)
    write_table(df, "results.parquet")
"""

from .engines import ENGINES, EngineError, default_workers, ray_init
from .jobs import JOBS, JobConfig, WindowResult, column_dtype, columns, run_window
from .run import default_chunk_size, from_db, run_batch
from .sinks import read_table, write_table
from .sources import (
    FileSource,
    JsonlSource,
    ListSource,
    SourceError,
    StoreSource,
    WindowItem,
    WindowSource,
    open_source,
    parse_range,
)
from .writeback import COMMIT_STATUSES, commit_result

__all__ = [
    "COMMIT_STATUSES",
    "ENGINES",
    "JOBS",
    "EngineError",
    "FileSource",
    "JobConfig",
    "JsonlSource",
    "ListSource",
    "SourceError",
    "StoreSource",
    "WindowItem",
    "WindowResult",
    "WindowSource",
    "column_dtype",
    "columns",
    "commit_result",
    "default_chunk_size",
    "default_workers",
    "from_db",
    "open_source",
    "parse_range",
    "ray_init",
    "read_table",
    "run_batch",
    "run_window",
    "write_table",
]
