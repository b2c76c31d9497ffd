"""``GET /metrics``: the server's figures in the Prometheus text format (prometheus-client).

Each app has its own :class:`~prometheus_client.CollectorRegistry` (two apps in one process, as
in the tests, never share counters). Series:

- ``smartflow_http_requests_total{method, route, http_status}`` and
  ``smartflow_http_request_seconds{method, route}`` (a histogram): every request, by its route
  template (``/v1/sessions/{session_id}/calls``), never by its raw path;
- ``smartflow_tool_call_seconds{tool}``: a histogram of tool calls' latency (session and
  stateless calls, confirm and reject included), from the request's start to the tool's result;
- ``smartflow_tool_calls_total{tool, status}`` and ``smartflow_refusals_total{code}``: tool
  refusals by their ``error_code`` and refused requests (401, 404, 422, ...) by theirs. A tool
  name the server does not have (a client may send any) is counted as ``tool="unknown"``, so a
  client cannot grow the series without bound;
- ``smartflow_sessions_open``: the sessions held by the store (a store that cannot count them
  cheaply, such as Redis, reports none);
- ``smartflow_solver_pool_processes``, ``smartflow_solver_pool_in_flight``,
  ``smartflow_solver_pool_queue_depth`` (calls waiting for a free worker) and
  ``smartflow_solver_pool_busy_seconds_total`` (time the workers spent running calls).

Each request touches a handful of labelled children; they are looked up once and kept in plain
dicts (prometheus-client's ``labels()`` takes a lock and validates the labels on every call).

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
UNKNOWN_TOOL = "unknown"


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
        self.tools = frozenset(ctx.table) | {"confirm", "reject"}
        # the labelled children, looked up once (see the module docstring)
        self._http: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._tool: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._refusal: dict[str, Any] = {}

    def observe_request(
        self, scope: MutableMapping[str, Any], info: RequestInfo, http_status: int, elapsed: float
    ) -> None:
        route = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        if template == METRICS_PATH:
            return  # scrapes do not count themselves
        method = scope.get("method", "")
        key = (method, template, http_status)
        http = self._http.get(key)
        if http is None:
            http = self._http[key] = (
                self.requests.labels(method, template, str(http_status)),
                self.request_seconds.labels(method, template),
            )
        http[0].inc()
        http[1].observe(elapsed)
        if info.tool_seconds is not None and info.tool is not None:
            tool = info.tool if info.tool in self.tools else UNKNOWN_TOOL
            tkey = (tool, info.status or "")
            pair = self._tool.get(tkey)
            if pair is None:
                pair = self._tool[tkey] = (
                    self.tool_seconds.labels(tool),
                    self.tool_calls.labels(*tkey),
                )
            pair[0].observe(info.tool_seconds)
            pair[1].inc()
        if info.error_code:
            child = self._refusal.get(info.error_code)
            if child is None:
                child = self._refusal[info.error_code] = self.refusals.labels(info.error_code)
            child.inc()

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
