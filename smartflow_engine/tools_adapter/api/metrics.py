"""``GET /metrics``: the server's figures in the Prometheus text format (prometheus-client).

Each app has its own :class:`~prometheus_client.CollectorRegistry` (two apps in one process, as
in the tests, never share counters). Series:

- ``smartflow_http_requests_total{method, route, http_status}`` and
  ``smartflow_http_request_seconds{method, route}`` (a histogram): every request, by its route
  template (``/v1/sessions/{session_id}/calls``), never by its raw path;
- ``smartflow_tool_call_seconds{tool}``: a histogram of tool calls' latency (session and
  stateless calls, confirm and reject included), from the request's start to the tool's result;
- ``smartflow_tool_calls_total{tool, status}`` and ``smartflow_refusals_total{code}``: tool
  refusals by their ``error_code`` and refused requests (401, 404, 422, ...) by theirs;
- ``smartflow_sessions_open``: the sessions held by the store (a store that cannot count them
  cheaply, such as Redis, reports none);
- ``smartflow_solver_pool_processes``, ``smartflow_solver_pool_in_flight``,
  ``smartflow_solver_pool_queue_depth`` (calls waiting for a free worker) and
  ``smartflow_solver_pool_busy_seconds_total`` (time the workers spent running calls).

``/metrics`` needs no bearer token (a scraper has none); it names no user and no session, and an
operator who does not want it public binds the server to loopback (the default) or turns it off
(``create_app(metrics=False)``).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sized
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from .errors import error_response

if TYPE_CHECKING:
    from .context import ApiContext
    from .request_log import RequestInfo

# Tool calls run from a millisecond (a read) to the solver cap (10 s by default).
TOOL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
METRICS_PATH = "/metrics"


class _ServerCollector(Collector):
    """Figures read at scrape time: sessions open and the solver pool's load."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    def collect(self) -> Iterator[Metric]:
        sessions = self.ctx.sessions
        if isinstance(sessions, Sized):
            yield GaugeMetricFamily(
                "smartflow_sessions_open", "Sessions held by the session store", len(sessions)
            )
        pool = self.ctx.solver
        stats = pool.stats()
        yield GaugeMetricFamily(
            "smartflow_solver_pool_processes", "Worker processes of the solver pool", pool.processes
        )
        yield GaugeMetricFamily(
            "smartflow_solver_pool_in_flight",
            "Solving calls submitted to the pool and not finished",
            stats["in_flight"],
        )
        yield GaugeMetricFamily(
            "smartflow_solver_pool_queue_depth",
            "Solving calls waiting for a free worker process",
            max(0, stats["in_flight"] - pool.processes),
        )
        yield CounterMetricFamily(
            "smartflow_solver_pool_busy_seconds",
            "Seconds the pool's workers spent running calls",
            stats["busy_seconds"],
        )


class Metrics:
    """The app's registry and its series (see the module docstring)."""

    def __init__(self, ctx: ApiContext) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "smartflow_http_requests",
            "HTTP requests by route and status",
            ["method", "route", "http_status"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "smartflow_http_request_seconds",
            "HTTP request latency by route",
            ["method", "route"],
            registry=r,
            buckets=TOOL_BUCKETS,
        )
        self.tool_seconds = Histogram(
            "smartflow_tool_call_seconds",
            "Tool call latency by tool",
            ["tool"],
            registry=r,
            buckets=TOOL_BUCKETS,
        )
        self.tool_calls = Counter(
            "smartflow_tool_calls", "Tool calls by tool and status", ["tool", "status"], registry=r
        )
        self.refusals = Counter(
            "smartflow_refusals",
            "Refused tool calls and refused requests by error code",
            ["code"],
            registry=r,
        )
        r.register(_ServerCollector(ctx))

    def observe_request(
        self, scope: MutableMapping[str, Any], info: RequestInfo, http_status: int, elapsed: float
    ) -> None:
        route = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        method = scope.get("method", "")
        if template == METRICS_PATH:
            return  # scrapes do not count themselves
        self.requests.labels(method, template, str(http_status)).inc()
        self.request_seconds.labels(method, template).observe(elapsed)
        if info.tool_seconds is not None and info.tool is not None:
            self.tool_seconds.labels(info.tool).observe(info.tool_seconds)
            self.tool_calls.labels(info.tool, info.status or "").inc()
        if info.error_code:
            self.refusals.labels(info.error_code).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


router = APIRouter(tags=["meta"])


@router.get(METRICS_PATH, include_in_schema=False)
async def metrics(request: Request) -> Response:
    """The Prometheus text exposition of this app's :class:`Metrics`."""
    found: Metrics | None = getattr(request.app.state, "metrics", None)
    if found is None:
        return error_response(404, "not_found", "metrics are off on this server")
    return Response(found.render(), media_type=CONTENT_TYPE_LATEST)
