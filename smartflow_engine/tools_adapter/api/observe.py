"""What ``create_app`` adds for people watching the server: the request id, the JSON access log
and ``/metrics`` (:mod:`.request_log`, :mod:`.metrics`), the offline API docs (:mod:`.docs`)
the session page (:mod:`.page`) and MCP over streamable HTTP (:mod:`..mcp_http`)."""

from __future__ import annotations

from fastapi import FastAPI

from ...settings import current
from ..mcp import http as mcp_http
from . import docs, metrics, page
from .context import ApiContext
from .request_log import RequestObserver, configure_access_log


def install(
    app: FastAPI, ctx: ApiContext, *, access_log: bool | None = None, metrics_on: bool = True
) -> None:
    """Register the observers on ``app`` (``access_log=None`` reads :data:`ACCESS_LOG_ENV`)."""
    if access_log is None:
        access_log = current().access_log
    if access_log:
        configure_access_log()
    app.state.metrics = metrics.Metrics(ctx) if metrics_on else None
    app.add_middleware(
        RequestObserver,
        metrics=app.state.metrics,
        log_requests=access_log,
        principal=ctx.principal,
    )
    app.include_router(metrics.router)
    docs.install(app)
    page.install(app)
    mcp_http.install(app, ctx)
