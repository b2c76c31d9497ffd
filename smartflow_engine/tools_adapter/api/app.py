"""The FastAPI application and ``smartflow serve``."""

from __future__ import annotations

import os
import secrets
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from ... import __version__
from ...settings import current
from ...solver.budget import DEFAULT_CALIBRATION, Calibration
from ..core import registry
from ..core.spec import ToolSpec
from ..sessions.store import MemorySessionStore, SessionBackend, session_backend
from . import observe, routes_meta, routes_rough_build, routes_sessions, routes_stateless, typed
from .context import ApiContext, parse_tokens
from .errors import install_handlers
from .middleware import BodyLimit
from .request_log import ACCESS_LOG_ENV
from .solver_pool import SolverPool

if TYPE_CHECKING:
    from ...store.protocol import ScheduleStore

TOKENS_ENV = "SMARTFLOW_API_TOKENS"  # "token1:user1,token2:user2"
DEFAULT_MAX_BODY_BYTES = 2_000_000


def create_app(
    tokens: Mapping[str, str] | None = None,
    *,
    sessions: SessionBackend | None = None,
    database: ScheduleStore | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_time_limit_s: float = 10.0,
    num_workers: int = 1,
    solver_processes: int = 0,
    max_sessions_per_user: int = 32,
    max_sessions: int = 1024,
    max_session_bytes: int = 2 * 1024**3,
    idle_ttl_s: float | None = 6 * 3600.0,
    specs: Sequence[ToolSpec] | None = None,
    access_log: bool | None = None,
    metrics: bool = True,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> FastAPI:
    """The FastAPI application.

    Parameters
    ----------
    tokens
        Bearer token → principal (the HTTP user). ``None`` reads :data:`TOKENS_ENV`
        (``"tok:user,..."``); an empty mapping refuses every ``/v1`` request. A principal that is
        a decimal number is also that database user for the store tools.
    sessions
        The session store (default: a :class:`MemorySessionStore` with the caps below).
    database
        A ``smartflow_engine.store`` backend: sessions can be opened on a window of it and the
        ``commit``/``reload``/``upsert_task_class`` tools write and read it.
    max_body_bytes
        Larger request bodies get 413.
    max_time_limit_s, num_workers
        Caps on every solver call, whatever a request asks for.
    solver_processes
        Worker processes for solving tool calls (0: in the request's thread); see
        :mod:`.solver_pool`.
    max_sessions_per_user, max_sessions, max_session_bytes, idle_ttl_s
        Caps of the default session store (429 beyond them) and idle expiry.
    specs
        The registry table (default :data:`registry.TOOLS`).
    access_log, metrics
        One JSON line per request (``None`` reads :data:`.request_log.ACCESS_LOG_ENV`) and
        ``/metrics``; see :mod:`.observe`.
    calibration
        The solver's figures every solver call runs with
        (:class:`~smartflow_engine.solver.budget.Calibration`; default the measured ones), in
        sessions, stateless calls and the solver processes.
    """
    if tokens is None:
        tokens = parse_tokens(current().api_tokens)
    table = {spec.name: spec for spec in (specs or registry.TOOLS)}
    if sessions is None:
        sessions = MemorySessionStore(
            max_sessions_per_user=max_sessions_per_user,
            max_sessions=max_sessions,
            max_bytes=max_session_bytes,
            idle_ttl_s=idle_ttl_s,
            session_kwargs={
                "max_time_limit_s": max_time_limit_s,
                "num_workers": num_workers,
                "store": database,
                "specs": list(table.values()),
                "calibration": calibration,
            },
        )
    ctx = ApiContext(
        tokens=dict(tokens),
        table=table,
        sessions=sessions,
        database=database,
        max_time_limit_s=max_time_limit_s,
        num_workers=num_workers,
        solver=SolverPool(solver_processes),
        calibration=calibration,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if ctx.solver.processes > 0:  # spawned and warmed beside serving, not in the
            # first call; /health answers meanwhile
            threading.Thread(target=ctx.solver.start, name="solver-start", daemon=True).start()
        yield
        ctx.solver.shutdown()

    app = FastAPI(
        title="smartflow-engine",
        version=__version__,
        description="Scheduling engine tools for LLM agents: stateless calls and sessions.",
        lifespan=lifespan,
        docs_url=None,  # served offline by .docs
        redoc_url=None,
    )
    app.state.ctx = ctx
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    install_handlers(app)
    for module in (routes_meta, routes_stateless, routes_sessions, routes_rough_build):
        app.include_router(module.router)
    typed.install(app, table)  # one typed route per tool; the window's schema (issue 30)
    _publish_tool_names(app, sorted(table))
    observe.install(app, ctx, access_log=access_log, metrics_on=metrics)
    return app


def _publish_tool_names(app: FastAPI, names: list[str]) -> None:
    """Publish ``enable_tools`` items as the server's tool names (an enum): a session refuses
    any other name, so the schema says so (issue 24 item 13)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        schema = build()
        create = schema.get("components", {}).get("schemas", {}).get("SessionCreate", {})
        items = create.get("properties", {}).get("enable_tools", {}).get("items")
        if isinstance(items, dict):
            items["enum"] = names
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


# ---------------------------------------------------------------------------------- serving
SESSION_STORE_ENV = "SMARTFLOW_SESSION_STORE"  # "memory" or "redis://..."
SESSION_PREFIX_ENV = "SMARTFLOW_SESSION_PREFIX"
DB_URL_ENV = "SMARTFLOW_DB_URL"
MAX_TIME_LIMIT_ENV = "SMARTFLOW_MAX_TIME_LIMIT_S"
SOLVER_PROCESSES_ENV = "SMARTFLOW_SOLVER_PROCESSES"
DAY_LABELS_ENV = "SMARTFLOW_DAY_LABELS"  # the sessions' default day labels (issue 43)


def app_from_env() -> FastAPI:
    """The app of one ``smartflow serve`` worker, configured from the environment the parent
    process set (uvicorn starts each worker with an import string): the ``SMARTFLOW_*``
    variables of :class:`smartflow_engine.settings.Settings`."""
    cfg = current()
    limit = cfg.max_time_limit_s
    database = None
    if cfg.db_url:
        from ...store import Store

        database = Store.from_url(cfg.db_url)
    kwargs = {"max_time_limit_s": limit, "num_workers": 1, "store": database}
    sessions = None
    if cfg.session_store != "memory":
        sessions = session_backend(
            cfg.session_store, prefix=cfg.session_prefix, session_kwargs=kwargs
        )
    app = create_app(
        None,
        sessions=sessions,
        database=database,
        max_time_limit_s=limit,
        solver_processes=cfg.solver_processes,
    )
    settle_heap()
    return app


# Allocations between two youngest-generation collections in a serve worker (CPython's default
# is 700): a tool call allocates tens of thousands of short-lived objects.
GC_GEN0_THRESHOLD = 10_000


def settle_heap() -> None:
    """Freeze what a serve worker has loaded at start-up out of the garbage collector's reach
    (issue 25's server latency). The modules a tool call uses are imported first (the
    analyzers, the solver with OR-Tools), then everything alive is collected once and frozen
    (:func:`gc.freeze`): the full collections that a call's allocations trigger no longer walk
    the whole start-up heap, which is what put the slowest calls at ~2.5x the median with eight
    agents at once (``benchmarks/results_adapters.md``). The youngest generation is collected
    every :data:`GC_GEN0_THRESHOLD` allocations instead of 700."""
    import gc
    import importlib

    for name in (
        "smartflow_engine.analyzers",
        "smartflow_engine.solver",
        "ortools.sat.python.cp_model",
    ):
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, second, third)


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    tokens: Mapping[str, str] | None = None,
    log_level: str = "info",
    workers: int = 1,
    session_store: str | None = None,
    session_prefix: str = "smartflow",
    db_url: str | None = None,
    max_time_limit_s: float = 10.0,
    solver_processes: int = 1,
    access_log: bool = False,
    day_labels: str | None = None,
) -> None:
    """Run the API with uvicorn (``smartflow serve``); binds 127.0.0.1 by default.

    Without ``tokens`` and without :data:`TOKENS_ENV`, one random token for principal ``local``
    is generated and printed to stderr, so a local server is never open to everyone. Several
    ``workers`` need a shared ``session_store`` (``redis://...``).
    """
    import uvicorn

    if tokens is None:
        tokens = parse_tokens(current().api_tokens)
    if not tokens:
        token = secrets.token_urlsafe(24)
        tokens = {token: "local"}
        print(
            f"smartflow serve: {TOKENS_ENV} not set; bearer token for user 'local': {token}",
            file=sys.stderr,
        )
    if workers > 1 and session_store in (None, "", "memory"):
        raise ValueError(
            "several workers need a shared session store: --session-store redis://127.0.0.1:6379/0"
        )
    os.environ[TOKENS_ENV] = ",".join(f"{t}:{u}" for t, u in tokens.items())
    os.environ[SESSION_STORE_ENV] = session_store or "memory"
    os.environ[SESSION_PREFIX_ENV] = session_prefix
    os.environ[MAX_TIME_LIMIT_ENV] = str(max_time_limit_s)
    os.environ[SOLVER_PROCESSES_ENV] = str(solver_processes)
    # Our JSON line per request (uvicorn's own access log stays off); "0" too, so that a
    # --no-access-log wins over a SMARTFLOW_ACCESS_LOG=1 the workers would inherit.
    os.environ[ACCESS_LOG_ENV] = "1" if access_log else "0"
    if day_labels is not None:  # every worker's sessions default to it
        os.environ[DAY_LABELS_ENV] = day_labels
    if db_url:
        os.environ[DB_URL_ENV] = db_url
    else:
        os.environ.pop(DB_URL_ENV, None)
    # No access log (a formatted line per request, written under a lock, costs about as much
    # as a read tool's call); uvicorn takes uvloop and httptools when they are installed (the
    # ``server`` extra), its pure-Python asyncio loop and h11 parser otherwise.
    uvicorn.run(
        "smartflow_engine.tools_adapter.api.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        log_level=log_level,
        workers=workers,
        access_log=False,
    )
