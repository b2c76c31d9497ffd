"""Where the windows run: a plain loop in this process, a local process pool, or Ray tasks.

Every engine takes chunks of :class:`~.sources.WindowItem` (so that per-task overhead is paid once
per chunk, not per window) and yields each chunk's results as soon as it finishes, in whatever
order they finish; :func:`~.run.run_batch` puts the rows back in source order. The pool and Ray
share one submission loop, :func:`stream_chunks`: a bounded number of chunks in flight (the source
is read as the batch goes), the next chunk submitted as soon as one comes back.

- ``loop``: :func:`~.jobs.run_chunk` in this process, chunk after chunk (the baseline). Its
  proposals equal the workers' when this process was started with ``PYTHONHASHSEED=0``
  (:data:`HASH_SEED`); otherwise a proposal that a string-hash-order tie decides may differ (a
  solver property, see docs/decisions.md).
- ``local``: :class:`concurrent.futures.ProcessPoolExecutor` with ``workers`` processes (default:
  the machine's cores), ``forkserver`` start method: the server process imports the engine once
  (never running a solver, so it holds no solver threads to fork), and every worker of every
  pool of this process is forked from it, already imported and with the fixed string-hash seed
  :data:`HASH_SEED`; the workers stay up for the whole batch. A worker that dies (a crash in
  native code) breaks the pool: a fresh pool takes over, and the windows of the chunks that were
  in flight are run again at the end one at a time, each in a one-process pool, so only the
  window that kills a worker gets an error row.
- ``ray``: one Ray task per chunk (its workers with :data:`HASH_SEED`) on a local Ray
  (``workers`` CPUs) or on an existing cluster (``address``); the package must be importable on
  the cluster's nodes. Results are collected with ``ray.wait`` as tasks finish. A task that
  fails (its worker died) turns its windows into error rows.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, TypeVar

from .jobs import JobConfig, WindowResult, run_chunk

ENGINES: tuple[str, ...] = ("local", "ray", "loop")
Chunk = list[Any]
ChunkResult = tuple[list[WindowResult], dict[str, Any]]
H = TypeVar("H", bound=Hashable)

# Modules the local pool's forkserver imports once, before forking any worker.
# (The solver imports OR-Tools lazily, on its first solve, and GLOP's wrapper on its first
# relaxation, ~75 ms: preload them too.)
PRELOAD: tuple[str, ...] = (
    "ortools.sat.python.cp_model",
    "ortools.linear_solver.python.model_builder_helper",
    "smartflow_engine.solver",
    "smartflow_engine.analyzers",
    "smartflow_engine.batch.jobs",
)


# Worker processes hash strings with this fixed seed (PYTHONHASHSEED): the solver's proposals
# depend on the interpreter's string-hash seed (a tie broken by set or dict order), so workers
# started with random seeds would not give the same table from run to run or engine to engine.
HASH_SEED = "0"


class EngineError(RuntimeError):
    """The engine cannot start (Ray missing or unreachable, a bad worker count)."""


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def chunked(items: Iterable[Any], size: int) -> Iterator[Chunk]:
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def stream_chunks(
    chunks: Iterable[Chunk],
    submit: Callable[[Chunk], H],
    wait_any: Callable[[list[H]], Iterable[H]],
    in_flight: int,
) -> Iterator[tuple[H, Chunk]]:
    """The shared submission loop of the pool and Ray engines.

    Keeps up to ``in_flight`` chunks submitted (``submit`` returns a handle: a future, an object
    ref), waits for any to finish (``wait_any`` returns the finished handles) and yields
    ``(handle, chunk)`` in the order they finish, topping up from ``chunks`` before each wait.
    Reading the result (and what a failure means) is the caller's.
    """
    source = iter(chunks)
    pending: dict[H, Chunk] = {}
    while True:
        while len(pending) < in_flight and (chunk := next(source, None)) is not None:
            pending[submit(chunk)] = chunk
        if not pending:
            return
        for handle in wait_any(list(pending)):
            yield handle, pending.pop(handle)


def _crashed(item: Any, what: str) -> WindowResult:
    row = {"window_id": item.window_id, "user_id": item.user_id, "error": f"worker_crash: {what}"}
    return WindowResult(
        item.index,
        row,
        user_id=item.user_id,
        fingerprint=item.fingerprint,
        day_mapping=item.day_mapping,
    )


# ---------------------------------------------------------------------------------- loop
def run_loop(chunks: Iterable[Chunk], config: JobConfig) -> Iterator[ChunkResult]:
    _warm(config.jobs)
    for chunk in chunks:
        yield run_chunk(chunk, config)


# ---------------------------------------------------------------------------------- local
def _warm(jobs: tuple[str, ...]) -> None:
    """Pool initializer: import the solver stack once per worker, outside any window's clock
    (a no-op in a worker forked from a preloaded forkserver)."""
    import importlib

    from .. import analyzers, solver  # noqa: F401
    from ..solver._cpsat import cp_model

    cp_model()  # OR-Tools, imported lazily by the solver's first solve
    importlib.import_module("ortools.linear_solver.python.model_builder_helper")  # relaxations


def _context(name: str) -> Any:
    import multiprocessing

    ctx = multiprocessing.get_context(name)
    if name == "forkserver":
        from multiprocessing import forkserver

        ctx.set_forkserver_preload(list(PRELOAD))  # no effect once the server runs
        # The server's hash seed is every forked worker's: start it with the fixed one (a no-op
        # when it already runs, started by an earlier batch of this process).
        previous = os.environ.get("PYTHONHASHSEED")
        os.environ["PYTHONHASHSEED"] = HASH_SEED
        try:
            forkserver.ensure_running()
        finally:
            if previous is None:
                del os.environ["PYTHONHASHSEED"]
            else:
                os.environ["PYTHONHASHSEED"] = previous
    return ctx


def _pool(workers: int, ctx: Any, config: JobConfig) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_warm, initargs=(config.jobs,)
    )


def _wait_futures(futures: list[Future[ChunkResult]]) -> Iterable[Future[ChunkResult]]:
    return wait(futures, return_when=FIRST_COMPLETED)[0]


def run_local(
    chunks: Iterable[Chunk], config: JobConfig, workers: int, mp_context: str = "forkserver"
) -> Iterator[ChunkResult]:
    ctx = _context(mp_context)
    retry: list[Any] = []  # windows of chunks that were in flight when a worker died
    pools = [_pool(workers, ctx, config)]  # the last one takes new chunks
    owner: dict[Future[ChunkResult], ProcessPoolExecutor] = {}

    def replace(broken: ProcessPoolExecutor) -> None:
        if broken is pools[-1]:
            broken.shutdown(wait=False, cancel_futures=True)
            pools.append(_pool(workers, ctx, config))

    def submit(chunk: Chunk) -> Future[ChunkResult]:
        try:
            fut = pools[-1].submit(run_chunk, chunk, config)
        except BrokenProcessPool:  # it broke since the last result came back
            replace(pools[-1])
            fut = pools[-1].submit(run_chunk, chunk, config)
        owner[fut] = pools[-1]
        return fut

    try:
        for fut, chunk in stream_chunks(chunks, submit, _wait_futures, max(2, 2 * workers)):
            pool = owner.pop(fut)
            try:
                yield fut.result()
            except BrokenProcessPool:
                retry.extend(chunk)
                replace(pool)
        if retry:
            yield from _isolate(retry, config, ctx)
    finally:
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)


def _isolate(items: list[Any], config: JobConfig, ctx: Any) -> Iterator[ChunkResult]:
    """Run windows one at a time, each in a one-process pool that is replaced when it dies: the
    window that kills its worker is the only one that gets an error row."""
    pool = _pool(1, ctx, config)
    try:
        for item in sorted(items, key=lambda it: it.index):
            try:
                yield pool.submit(run_chunk, [item], config).result()
            except BrokenProcessPool:
                pool.shutdown(wait=False, cancel_futures=True)
                yield [_crashed(item, "the worker process died on this window")], {}
                pool = _pool(1, ctx, config)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------- ray
def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EngineError("engine 'ray' needs Ray: pip install 'smartflow-engine[ray]'") from None
    return ray


RAY_WORKER_NICENESS = 0
"""How much a local Ray lowers its workers' priority below the process that starts it (Ray's
default, 15, leaves its workers only the CPU that every normal-priority process leaves over:
beside anything else busy on the machine, the driver included, they fall behind the local
pool's workers, which run at the driver's priority)."""


def local_ray_options(workers: int) -> dict[str, Any]:
    """``ray.init`` arguments for the local Ray a batch starts: ``workers`` CPUs, no dashboard,
    workers at :data:`RAY_WORKER_NICENESS`, and this process's ``PYTHONPATH`` (so that the
    workers import the package the way this process did). An existing cluster keeps its own
    settings."""
    options: dict[str, Any] = {
        "num_cpus": workers,
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
        "_system_config": {"worker_niceness": RAY_WORKER_NICENESS},
    }
    pythonpath = os.environ.get("PYTHONPATH")
    if pythonpath:
        options["runtime_env"] = {"env_vars": {"PYTHONPATH": pythonpath}}
    return options


def ray_init(address: str | None = None, workers: int | None = None) -> bool:
    """Connect to ``address`` or start a local Ray with ``workers`` CPUs, unless Ray is already
    initialised in this process. Returns whether this call started the connection (the caller
    then shuts it down)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    if address:
        kwargs: dict[str, Any] = {
            "address": address,
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
    else:
        kwargs = local_ray_options(workers or default_workers())
    try:
        with _quiet_token_banner():
            ray.init(**kwargs)
    except Exception as exc:  # connection refused, bad address, ...
        raise EngineError(
            f"cannot start Ray{' at ' + address if address else ''}: {type(exc).__name__}: {exc}"
        ) from None
    return True


# Ray (2.5x) warns on every ray.init that token authentication is on by default, through a logger
# that, with configure_logging=False, ends on the operator's stderr among the batch's own lines.
# The authentication stays as Ray sets it; only the banner is not shown (issue 45 item 8).
RAY_AUTH_LOGGER = "ray._private.authentication"


@contextmanager
def _quiet_token_banner() -> Iterator[None]:
    logger = logging.getLogger(RAY_AUTH_LOGGER)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


_REMOTE: dict[str, Any] = {}  # the remote function, defined once Ray is imported


def _remote_chunk() -> Any:
    if "chunk" not in _REMOTE:
        ray = _ray()
        _REMOTE["chunk"] = ray.remote(
            num_cpus=1, max_retries=0, runtime_env={"env_vars": {"PYTHONHASHSEED": HASH_SEED}}
        )(run_chunk)
    return _REMOTE["chunk"]


def run_ray(
    chunks: Iterable[Chunk], config: JobConfig, workers: int | None, address: str | None = None
) -> Iterator[ChunkResult]:
    ray = _ray()
    started = ray_init(address, workers)
    try:
        remote = _remote_chunk()
        cpus = int(ray.cluster_resources().get("CPU", workers or 1))
        config_ref = ray.put(config)

        def wait_any(refs: list[Any]) -> list[Any]:
            return list(ray.wait(refs, num_returns=1)[0])

        for ref, chunk in stream_chunks(
            chunks, lambda c: remote.remote(c, config_ref), wait_any, max(2, 2 * cpus)
        ):
            try:
                yield ray.get(ref)
            except Exception as exc:  # the task's worker died, or the task raised
                yield [_crashed(item, _one_line(exc)) for item in chunk], {}
    finally:
        if started:
            ray.shutdown()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def run_engine(
    engine: str,
    chunks: Iterable[Chunk],
    config: JobConfig,
    workers: int | None,
    address: str | None = None,
) -> Iterator[ChunkResult]:
    """Dispatch to one engine (see the module docstring)."""
    if engine == "loop":
        return run_loop(chunks, config)
    if engine == "local":
        return run_local(chunks, config, workers or default_workers())
    if engine == "ray":
        return run_ray(chunks, config, workers, address)
    raise EngineError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


Progress = Callable[[int, int], None]
