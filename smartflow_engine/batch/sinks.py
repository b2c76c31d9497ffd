"""Where a batch table goes: Parquet (pyarrow) or CSV, chosen by the file's suffix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..files import atomic_path

if TYPE_CHECKING:
    import pandas as pd

SINKS: dict[str, str] = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def sink_kind(path: str | Path) -> str:
    """``parquet`` or ``csv`` for ``path``; ValueError for another suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in SINKS:
        raise ValueError(f"{path}: write the table to a .parquet or .csv file")
    return SINKS[suffix]


def write_table(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` (without its index); the parent directory is created."""
    target = Path(path)
    kind = sink_kind(target)
    with atomic_path(target) as tmp:  # a kill mid-write leaves the old table
        if kind == "parquet":
            out = df.copy()
            out.attrs = {}  # run figures are not part of the table
            out.to_parquet(tmp, index=False, engine="pyarrow")
        else:
            df.to_csv(tmp, index=False)
    return target


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a table written by :func:`write_table` back with the batch's dtypes."""
    import pandas as pd

    from .jobs import column_dtype

    kind = sink_kind(path)
    df = pd.read_parquet(path, engine="pyarrow") if kind == "parquet" else pd.read_csv(path)
    return df.astype({c: column_dtype(c) for c in df.columns})
