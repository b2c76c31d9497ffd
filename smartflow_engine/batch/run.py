"""``run_batch``: a cohort of windows -> one pandas table, on a loop, a process pool or Ray."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .engines import ENGINES, EngineError, chunked, default_workers, run_engine
from .jobs import JOBS, JobConfig, column_dtype, columns
from .sources import SourceError, StoreSource, WindowSource, open_source

if TYPE_CHECKING:
    import pandas as pd

    from ..store import Store

ProgressFn = Callable[[int, int, int], None]  # (windows done, failures, total)
MAX_CHUNK = 32
CHUNKS_PER_WORKER = 16


def default_chunk_size(total: int, workers: int) -> int:
    """About :data:`CHUNKS_PER_WORKER` chunks per worker, at most :data:`MAX_CHUNK` windows.

    Windows vary a hundredfold in cost (a feasible window's check takes milliseconds, an
    infeasible one's proofs and negotiation figures a few hundred), so small chunks keep the
    workers evenly loaded to the end; a chunk's shipping costs about a millisecond, paid once.
    """
    return max(1, min(MAX_CHUNK, math.ceil(total / max(1, CHUNKS_PER_WORKER * workers))))


def _seconds(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and 0 < value <= 600


def _check_args(
    jobs: Sequence[str],
    time_limit_s: float,
    engine: str,
    workers: int | None,
    commit: bool,
    work_limit_s: float | None = None,
) -> tuple[str, ...]:
    if isinstance(jobs, str):
        jobs = [j.strip() for j in jobs.split(",") if j.strip()]
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        raise ValueError(
            f"unknown job(s) {', '.join(map(repr, unknown))}; choose from {', '.join(JOBS)}"
        )
    if not _seconds(time_limit_s):
        raise ValueError(f"time_limit_s must be in (0, 600] seconds, got {time_limit_s!r}")
    if work_limit_s is not None and not _seconds(work_limit_s):
        raise ValueError(f"work_limit_s must be in (0, 600] seconds, got {work_limit_s!r}")
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if commit and "proposal" not in jobs:
        raise ValueError("commit writes proposals back: include the 'proposal' job")
    return tuple(j for j in JOBS if j in jobs)  # canonical order


def run_batch(
    source: Any,
    *,
    jobs: Sequence[str] = JOBS,
    time_limit_s: float = 2.0,
    work_limit_s: float | None = None,
    seed: int = 0,
    negotiation: bool = True,
    frozen_days: int = 0,
    engine: str = "local",
    workers: int | None = None,
    commit: bool = False,
    address: str | None = None,
    chunk_size: int | None = None,
    window_timeout_s: float | None = None,
    store: Store | None = None,
    progress: ProgressFn | None = None,
) -> pd.DataFrame:
    """Run ``jobs`` on every window of ``source``; one row per window, in source order.

    Parameters
    ----------
    source
        A directory or glob of state JSON files, a ``.jsonl`` file of states, a list of states
        (or dicts / JSON texts), or a :class:`~.sources.WindowSource` such as
        :class:`~.sources.StoreSource` (the database; see :func:`from_db`).
    jobs
        Any of ``feasibility``, ``proposal``, ``health`` (always run in that order).
    time_limit_s
        Each job's wall clock (feasibility with its negotiation figures, proposal, health), one
        worker per solver call. Proposals stop on a deterministic work budget, by default the
        one a ``propose_placement`` call with this limit gets, under this wall clock (a row it
        cut says so in ``proposal_wall_limited``).
    work_limit_s
        The proposals' work budget in estimated seconds of the solver's calibration machine
        (default the calibration's ``work_share`` x ``time_limit_s``). For the same table on any
        machine, fix it and give a generous ``time_limit_s``.
    seed
        The proposals' seed: the same seed gives the same table whatever the engine, workers
        and load (runtime columns aside), unless a row says ``clock_cut`` (the wall clock
        ended one of its solver calls: counted in ``attrs["batch"]["clock_cut"]``).
    negotiation
        Whether the feasibility job also computes the negotiation figures (extra days, lifting
        flags, slots to cut) of the infeasible windows. Their exact solves cost several times
        the check's own proof; without them those columns are null and only the check runs.
    frozen_days
        Days ``1..frozen_days`` of every window are frozen (issue 28): the feasibility check,
        its figures and the proposal leave them as they are (nothing placed there moves,
        nothing new lands there) and the health job's feasibility and floor honour them.
    engine
        ``local`` (process pool, default), ``ray`` (Ray tasks) or ``loop`` (this process).
    workers
        Processes (local) or CPUs of a local Ray; default: the machine's cores.
    commit
        Write each feasible proposal back to the database as ``suggested`` (database sources
        only), one transaction per user; a user whose rows changed meanwhile is reported
        ``stale`` in ``commit_status`` and left as it is.
    address
        Ray: an existing cluster's address (default: start a local Ray for this batch, or use
        the one already initialised in this process).
    chunk_size
        Windows per task (default: :func:`default_chunk_size`, about 16 chunks per worker, at
        most 32).
    window_timeout_s
        Wall-clock budget of one window (default: a generous multiple of the solver budget); a
        window over it gets a ``timeout`` error row.
    store
        The store to commit into (default: the source's own store).
    progress
        Called before the first chunk and after each one with ``(windows done, failures,
        total)``.

    Returns
    -------
    pandas.DataFrame
        Columns :func:`~.jobs.columns` with nullable dtypes; ``error`` is null on a good row.
        ``df.attrs["batch"]`` holds the run's figures (wall time, windows/s, CPU seconds spent
        by the workers on their chunks and by this process, peak memory per worker process,
        engine, workers, chunk size, proposal budgets, wall-limited proposals, ``clock_cut``:
        rows a wall clock cut, see :mod:`.jobs`).

    Raises
    ------
    ValueError
        Bad arguments or a source that cannot be opened (:class:`~.sources.SourceError`);
        :class:`~.engines.EngineError` when the engine cannot start. A bad *window* never raises.
    """
    import pandas as pd

    job_tuple = _check_args(jobs, time_limit_s, engine, workers, commit, work_limit_s)
    if isinstance(frozen_days, bool) or not isinstance(frozen_days, int) or frozen_days < 0:
        raise ValueError(f"frozen_days must be a whole number >= 0, got {frozen_days!r}")
    src: WindowSource = open_source(source)
    target_store = (
        store if store is not None else (src.store if isinstance(src, StoreSource) else None)
    )
    if commit and target_store is None:
        raise SourceError("commit needs a database source (or a store to commit into)")
    n_workers = workers or (1 if engine == "loop" else default_workers())
    total = len(src)
    size = chunk_size or default_chunk_size(total, n_workers)
    config = JobConfig(
        jobs=job_tuple,
        time_limit_s=float(time_limit_s),
        seed=int(seed),
        window_timeout_s=window_timeout_s,
        keep_placements=commit,
        work_limit_s=None if work_limit_s is None else float(work_limit_s),
        negotiation=bool(negotiation),
        frozen_days=frozen_days,
    )

    if progress is not None:
        progress(0, 0, total)
    started = time.perf_counter()
    driver_cpu = time.process_time()
    worker_cpu = 0.0
    rows: dict[int, dict[str, Any]] = {}
    peak: dict[int, float] = {}
    failures = 0
    from .writeback import commit_result

    for results, info in run_engine(
        engine,
        chunked(src, size),
        config,
        workers=n_workers if engine != "loop" else None,
        address=address,
    ):
        if info.get("pid") is not None:
            peak[info["pid"]] = max(peak.get(info["pid"], 0.0), info["peak_rss_mb"])
            worker_cpu += info.get("cpu_s", 0.0)
        for res in results:
            if commit and target_store is not None:
                status, detail = commit_result(target_store, res)
                res.row["commit_status"], res.row["commit_detail"] = status, detail
            if res.row.get("error"):
                failures += 1
            rows[res.index] = res.row
        if progress is not None:
            progress(len(rows), failures, total)
    wall = time.perf_counter() - started
    driver_cpu = time.process_time() - driver_cpu - (worker_cpu if engine == "loop" else 0.0)

    cols = columns(commit)
    ordered = [rows[i] for i in sorted(rows)]
    df = (
        pd.DataFrame.from_records(ordered, columns=list(cols))
        if ordered
        else pd.DataFrame(columns=list(cols))
    )
    df = df.astype({c: column_dtype(c) for c in cols})
    df.attrs["batch"] = {
        "engine": engine,
        "workers": n_workers,
        "chunk_size": size,
        "windows": len(df),
        "failures": failures,
        "wall_s": wall,
        "windows_per_s": len(df) / wall if wall else None,
        "peak_rss_mb": dict(sorted(peak.items())),
        "worker_cpu_s": worker_cpu,
        "driver_cpu_s": max(0.0, driver_cpu),
        "jobs": list(job_tuple),
        "negotiation": bool(negotiation),
        "frozen_days": frozen_days,
        "time_limit_s": float(time_limit_s),
        "seed": int(seed),
        "proposal_work_limit_s": config.proposal_work_s() if "proposal" in job_tuple else None,
        "proposal_wall_limit_s": config.proposal_wall_s() if "proposal" in job_tuple else None,
        "wall_limited": int(df["proposal_wall_limited"].fillna(False).sum()),
        "clock_cut": int(df["clock_cut"].fillna(False).sum()),
    }
    return df


def from_db(
    url_or_store: Any,
    users: Iterable[int] | tuple[int, int] | None = None,
    weeks: tuple[int, int] | None = None,
) -> StoreSource:
    """A database source: ``users`` as ids or an inclusive ``(first, last)`` range (``None``:
    every user with pending work); ``weeks`` the window (default: each user's task classes)."""
    from ..store import Store

    store = (
        url_or_store
        if isinstance(url_or_store, Store)
        else Store.from_url(str(url_or_store), create=False)
    )
    ids: Iterable[int] | None = users
    if isinstance(users, tuple) and len(users) == 2 and all(isinstance(u, int) for u in users):
        ids = range(users[0], users[1] + 1)
    return StoreSource(store, ids, weeks)


__all__ = ["EngineError", "default_chunk_size", "from_db", "run_batch"]
