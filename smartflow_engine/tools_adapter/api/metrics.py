"""``GET /metrics``: the server's figures in the Prometheus text format (prometheus-client).

Each app has its own :class:`~prometheus_client.CollectorRegistry` (two apps in one process, as
in the tests, never share counters). Series:

- ``smartflow_http_requests_total{method, route, http_status}`` and
  ``smartflow_http_request_seconds{method, route}`` (a histogram): every request, by its route
  template (``/v1/sessions/{session_id}/calls``, ``/mcp/{session_id}``), never by its raw path;
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

The request and tool series are counted in plain dicts and lists under one lock (a request
adds to them in about a microsecond) and handed to prometheus-client as metric families when
``/metrics`` is read (:class:`_SeriesCollector`): prometheus-client's own ``Counter`` and
``Histogram`` take a lock per value, look the labels up and walk the buckets in Python on every
request, several times the cost. The exposition is prometheus-client's, unchanged.

``/metrics`` needs no bearer token (a scraper has none); it names no user and no session, and an
operator who does not want it public binds the server to loopback (the default) or turns it off
(``create_app(metrics=False)``).
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterator, MutableMapping, Sequence, Sized
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from .errors import error_response
from .request_log import route_template

if TYPE_CHECKING:
    from .context import ApiContext
    from .request_log import Record, RequestInfo

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
            "smartflow_solver_pool_processes", "Worker processes of the solver pool", pool.size
        )
        yield GaugeMetricFamily(
            "smartflow_solver_pool_in_flight",
            "Solving calls submitted to the pool and not finished",
            stats["in_flight"],
        )
        yield GaugeMetricFamily(
            "smartflow_solver_pool_queue_depth",
            "Solving calls waiting for a free worker process",
            max(0, stats["in_flight"] - pool.size),
        )
        yield CounterMetricFamily(
            "smartflow_solver_pool_busy_seconds",
            "Seconds the pool's workers spent running calls",
            stats["busy_seconds"],
        )


def _le(bound: float) -> str:
    """A bucket's ``le`` label as prometheus-client writes it (``0.001``, ``1.0``, ``+Inf``)."""
    return "+Inf" if bound == float("inf") else repr(float(bound))


class _Series:
    """Counters and histograms by label values, kept in plain dicts and lists and exposed as
    prometheus-client metric families at scrape time (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], float] = {}
        self.request_seconds: dict[tuple[str, str], list[float]] = {}
        self.tool_seconds: dict[tuple[str], list[float]] = {}
        self.tool_calls: dict[tuple[str, str], float] = {}
        self.refusals: dict[tuple[str], float] = {}

    def observe(self, table: dict[Any, list[float]], key: Any, value: float) -> None:
        """One value into ``table[key]``: its bucket's count (``le`` semantics: the first bound
        at or above it, else +Inf) and the sum, the last item. The caller holds the lock."""
        row = table.get(key)
        if row is None:
            row = table[key] = [0.0] * (len(TOOL_BUCKETS) + 2)
        row[bisect_left(TOOL_BUCKETS, value)] += 1
        row[-1] += value

    def histogram(
        self, name: str, doc: str, labels: list[str], table: dict[Any, list[float]]
    ) -> HistogramMetricFamily:
        family = HistogramMetricFamily(name, doc, labels=labels)
        for key, row in sorted(table.items()):
            cumulative, buckets = 0.0, []
            for bound, count in zip((*TOOL_BUCKETS, float("inf")), row, strict=False):
                cumulative += count
                buckets.append((_le(bound), cumulative))
            family.add_metric(list(key), buckets, row[-1])
        return family

    @staticmethod
    def counter(
        name: str, doc: str, labels: list[str], table: dict[Any, float]
    ) -> CounterMetricFamily:
        family = CounterMetricFamily(name, doc, labels=labels)
        for key, value in sorted(table.items()):
            family.add_metric(list(key), value)
        return family


class _SeriesCollector(Collector):
    """The request and tool series of a :class:`_Series`, read at scrape time."""

    def __init__(self, series: _Series, before: list[Callable[[], None]]) -> None:
        self.series, self.before = series, before

    def collect(self) -> Iterator[Metric]:
        for drain in self.before:  # the requests' records still waiting for their batch
            drain()
        s = self.series
        with s.lock:  # a consistent copy; the families are built outside the lock
            requests, tool_calls, refusals = dict(s.requests), dict(s.tool_calls), dict(s.refusals)
            request_seconds = {k: list(v) for k, v in s.request_seconds.items()}
            tool_seconds = {k: list(v) for k, v in s.tool_seconds.items()}
        yield s.counter(
            "smartflow_http_requests",
            "HTTP requests by route and status",
            ["method", "route", "http_status"],
            requests,
        )
        yield s.histogram(
            "smartflow_http_request_seconds",
            "HTTP request latency by route",
            ["method", "route"],
            request_seconds,
        )
        yield s.histogram(
            "smartflow_tool_call_seconds", "Tool call latency by tool", ["tool"], tool_seconds
        )
        yield s.counter(
            "smartflow_tool_calls", "Tool calls by tool and status", ["tool", "status"], tool_calls
        )
        yield s.counter(
            "smartflow_refusals",
            "Refused tool calls and refused requests by error code",
            ["code"],
            refusals,
        )


class Metrics:
    """The app's registry and its series (see the module docstring)."""

    def __init__(self, ctx: ApiContext) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.series = _Series()
        # called before a scrape reads the series (the request observers' drain)
        self.before_scrape: list[Callable[[], None]] = []
        self.registry.register(_SeriesCollector(self.series, self.before_scrape))
        self.registry.register(_ServerCollector(ctx))
        self.tools = frozenset(ctx.table) | {"confirm", "reject"}
        self._status: dict[int, str] = {}

    def observe_request(
        self, scope: MutableMapping[str, Any], info: RequestInfo, http_status: int
    ) -> None:
        """One finished request (``info.elapsed`` its duration)."""
        path = route_template(scope)
        self.observe_requests(
            [(info, http_status, scope.get("method"), scope.get("path", ""), path, None)]
        )

    def observe_requests(self, records: Sequence[Record]) -> None:
        """Finished requests (:data:`.request_log.Record`) under one lock."""
        s = self.series
        statuses = self._status
        with s.lock:
            for info, http_status, method, _, route_path, _ in records:
                template = route_path or "unmatched"
                if template == METRICS_PATH:
                    continue  # scrapes do not count themselves
                status = statuses.get(http_status) or statuses.setdefault(
                    http_status, str(http_status)
                )
                key = (method or "", template, status)
                s.requests[key] = s.requests.get(key, 0.0) + 1
                s.observe(s.request_seconds, (method or "", template), info.elapsed)
                if info.tool_seconds is not None and info.tool is not None:
                    tool = info.tool if info.tool in self.tools else UNKNOWN_TOOL
                    s.observe(s.tool_seconds, (tool,), info.tool_seconds)
                    tkey = (tool, info.status or "")
                    s.tool_calls[tkey] = s.tool_calls.get(tkey, 0.0) + 1
                if info.error_code:
                    ckey = (info.error_code,)
                    s.refusals[ckey] = s.refusals.get(ckey, 0.0) + 1

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
