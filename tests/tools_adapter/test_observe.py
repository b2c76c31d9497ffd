"""Tests of what the HTTP server tells the people watching it: the JSON access-log line and the
request id, ``/metrics`` (Prometheus text), and the offline ``/docs`` and ``/redoc`` pages."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from smartflow_engine.tools_adapter.api import app as app_module
from smartflow_engine.tools_adapter.api import create_app, serve
from tests.helpers.windows import window_dict

ALICE = {"Authorization": "Bearer tok-alice"}
TOKENS = {"tok-alice": "alice"}
FIELDS = (
    "request_id",
    "user",
    "session",
    "tool",
    "mode",
    "duration_ms",
    "status",
    "error_code",
    "http_status",
)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(record.getMessage()))


@pytest.fixture
def access_lines() -> Iterator[list[dict]]:
    """The JSON lines written to the ``smartflow.access`` logger during the test."""
    logger = logging.getLogger("smartflow.access")
    handler = _Lines()
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)


def _samples(client: TestClient) -> dict[tuple[str, tuple], float]:
    text = client.get("/metrics").text
    out: dict[tuple[str, tuple], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _session(client: TestClient) -> str:
    made = client.post("/v1/sessions", headers=ALICE, json={"state": window_dict()})
    assert made.status_code == 201, made.text
    sid: str = made.json()["session_id"]
    return sid


def test_a_tool_call_writes_one_log_line_and_moves_the_metrics(access_lines):
    """Tests that a session tool call adds one JSON line naming the request id, user, session,
    tool, mode, status and error code, and that the tool's latency histogram, the call counter
    and the refusals by code move."""
    client = TestClient(create_app(TOKENS, access_log=True))
    sid = _session(client)
    before = _samples(client)
    access_lines.clear()

    ok = client.post(
        f"/v1/sessions/{sid}/calls", headers=ALICE, json={"tool": "get_overview", "args": {}}
    )
    refused = client.post(
        f"/v1/sessions/{sid}/calls", headers=ALICE, json={"tool": "move", "args": {"task_id": 99}}
    )
    after = _samples(client)

    calls = [line for line in access_lines if line["path"].endswith("/calls")]
    assert len(calls) == 2
    first, second = calls
    assert all(set(FIELDS) <= set(line) for line in calls)
    assert first["request_id"] == ok.headers["X-Request-ID"]
    assert second["request_id"] == refused.headers["X-Request-ID"]
    assert first["request_id"] != second["request_id"]
    assert first | {"request_id": 0, "duration_ms": 0, "ts": 0} == {
        "ts": 0,
        "request_id": 0,
        "method": "POST",
        "path": f"/v1/sessions/{sid}/calls",
        "http_status": 200,
        "user": "alice",
        "session": sid,
        "tool": "get_overview",
        "mode": "first_full",
        "status": "ok",
        "error_code": "",
        "duration_ms": 0,
    }
    assert second["tool"] == "move" and second["status"] == "error"
    assert second["error_code"] == "invalid_args" and second["duration_ms"] > 0

    def count(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert count("smartflow_tool_call_seconds_count", tool="get_overview") == 1
    assert count("smartflow_tool_call_seconds_count", tool="move") == 1
    assert count("smartflow_tool_calls_total", tool="move", status="error") == 1
    assert count("smartflow_refusals_total", code="invalid_args") == 1
    route = "/v1/sessions/{session_id}/calls"
    assert (
        count("smartflow_http_requests_total", method="POST", route=route, http_status="200") == 2
    )
    assert after[("smartflow_sessions_open", ())] == 1


def test_refused_requests_are_logged_with_their_code(access_lines):
    """Tests that a refused request (unknown session, missing token) gets a line with
    status http_error and the body's error code, and counts among the refusals."""
    client = TestClient(create_app(TOKENS, access_log=True))
    client.get("/v1/sessions/nope", headers=ALICE)
    client.get("/v1/sessions")
    lines = access_lines[-2:]
    assert [(x["http_status"], x["status"], x["error_code"]) for x in lines] == [
        (404, "http_error", "session_not_found"),
        (401, "http_error", "unauthorized"),
    ]
    assert lines[0]["user"] == "alice" and lines[0]["session"] == "nope"
    assert lines[1]["user"] is None
    samples = _samples(client)
    assert samples[("smartflow_refusals_total", (("code", "session_not_found"),))] == 1
    assert samples[("smartflow_refusals_total", (("code", "unauthorized"),))] == 1


def test_a_stateless_call_names_its_tool(access_lines):
    """Tests that a stateless analyzer call's line names the tool and has no session or mode."""
    client = TestClient(create_app(TOKENS, access_log=True))
    client.post("/v1/analyze/analyze_load", headers=ALICE, json={"state": window_dict()})
    line = access_lines[-1]
    assert (line["tool"], line["session"], line["mode"], line["status"]) == (
        "analyze_load",
        None,
        None,
        "ok",
    )


@pytest.mark.parametrize(
    ("given", "echoed"),
    [
        ("trace-42.a_b", True),  # a tame client id is kept, so logs on both sides join
        ("x" * 65, False),  # too long: replaced
        ("bad id\u00e9", False),  # spaces / non-ASCII: replaced
    ],
)
def test_a_request_id_is_echoed_or_made(given, echoed):
    """Tests that every response carries X-Request-ID: the client's when it is a short token,
    a fresh one otherwise."""
    client = TestClient(create_app(TOKENS))
    sent = {"X-Request-ID": given.encode("utf-8"), **ALICE}
    got = client.get("/v1/sessions", headers=sent).headers
    assert (got["X-Request-ID"] == given) is echoed
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}", got["X-Request-ID"])


def test_the_access_log_is_off_unless_asked(access_lines, monkeypatch):
    """Tests that no line is written by default and that SMARTFLOW_ACCESS_LOG=1 turns it on."""
    monkeypatch.delenv("SMARTFLOW_ACCESS_LOG", raising=False)
    TestClient(create_app(TOKENS)).get("/v1/sessions", headers=ALICE)
    assert access_lines == []
    monkeypatch.setenv("SMARTFLOW_ACCESS_LOG", "1")
    TestClient(create_app(TOKENS)).get("/v1/sessions", headers=ALICE)
    assert [line["path"] for line in access_lines] == ["/v1/sessions"]


def test_the_liveness_probe_is_not_observed(access_lines):
    """Tests that GET /health (called every few seconds by a load balancer) writes no line,
    adds to no series and gets no request id, while the request after it is observed."""
    client = TestClient(create_app(TOKENS, access_log=True))
    before = _samples(client)
    access_lines.clear()
    probe = client.get("/health")
    assert probe.status_code == 200 and "X-Request-ID" not in probe.headers
    assert access_lines == []
    after = _samples(client)
    assert not [k for k in after if "/health" in str(k)]
    assert {k: v for k, v in after.items() if k[0] == "smartflow_http_requests_total"} == {
        k: v for k, v in before.items() if k[0] == "smartflow_http_requests_total"
    }
    access_lines.clear()
    client.get("/v1/sessions", headers=ALICE)
    assert [line["path"] for line in access_lines] == ["/v1/sessions"]


def test_no_bearer_token_or_query_reaches_the_log(access_lines):
    """Tests that the line holds neither the bearer token nor the query string."""
    client = TestClient(create_app(TOKENS, access_log=True))
    client.get("/v1/tools?fmt=openai&secret=s3cr3t", headers=ALICE)
    text = json.dumps(access_lines)
    assert "tok-alice" not in text and "s3cr3t" not in text


def test_serve_access_log_flag_sets_the_environment(monkeypatch):
    """Tests that serve(access_log=True) (``smartflow serve --access-log``) turns on the JSON
    line in the workers (through the environment) and keeps uvicorn's own access log off."""
    import uvicorn

    seen: dict = {}
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: seen.update(kw))
    monkeypatch.delenv("SMARTFLOW_ACCESS_LOG", raising=False)
    monkeypatch.setenv("SMARTFLOW_API_TOKENS", "t:u")
    serve(access_log=True)
    assert seen["access_log"] is False
    import os

    # serve() set it in os.environ itself (for its workers): take it out directly, so that
    # monkeypatch's undo does not put it back for the rest of the run (a server started by a
    # later test would then log every request into a pipe nobody reads, and hang)
    assert os.environ.pop("SMARTFLOW_ACCESS_LOG") == "1"
    assert app_module.ACCESS_LOG_ENV == "SMARTFLOW_ACCESS_LOG"


def test_metrics_can_be_turned_off():
    """Tests that create_app(metrics=False) answers /metrics with a typed 404."""
    out = TestClient(create_app(TOKENS, metrics=False)).get("/metrics")
    assert out.status_code == 404 and out.json()["error_code"] == "not_found"


def test_solver_pool_busy_time_is_measured():
    """Tests that a solving call run in a worker process adds to the pool's busy seconds and
    leaves nothing in flight."""
    with TestClient(create_app(TOKENS, solver_processes=1, max_time_limit_s=2.0)) as client:
        got = client.post(
            "/v1/feasibility", headers=ALICE, json={"state": window_dict(), "args": {}}
        )
        assert got.status_code == 200, got.text
        samples = _samples(client)
    assert samples[("smartflow_solver_pool_busy_seconds_total", ())] > 0
    assert samples[("smartflow_solver_pool_in_flight", ())] == 0
    assert samples[("smartflow_solver_pool_queue_depth", ())] == 0
    assert samples[("smartflow_solver_pool_processes", ())] == 2  # the long lane's and the short


# ----------------------------------------------------------------------------- offline docs
@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_every_docs_asset_is_served_locally(page):
    """Tests that /docs and /redoc reference no outside host and that every script, style and
    icon they reference is served by the app."""
    client = TestClient(create_app(TOKENS))
    html = client.get(page)
    assert html.status_code == 200
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html.text)
    refs += re.findall(r"""url:\s*'([^']+)'""", html.text)  # the OpenAPI document
    assert refs and not [r for r in refs if re.match(r"^(?:https?:)?//", r)], refs
    assert "googleapis" not in html.text and "cdn." not in html.text
    for ref in refs:
        got = client.get(ref)
        assert got.status_code == 200 and len(got.content) > 1000, ref


def test_a_tool_name_the_server_lacks_is_counted_as_unknown(access_lines):
    """Tests that calls of tool names the server does not have (a client may send any) add no
    series of their own: they count under tool="unknown" with their refusal code, while the log
    line keeps the name the client sent."""
    client = TestClient(create_app(TOKENS, access_log=True))
    sid = _session(client)
    for name in ("bogus_a", "bogus_b", "bogus_c"):
        got = client.post(
            f"/v1/sessions/{sid}/calls", headers=ALICE, json={"tool": name, "args": {}}
        )
        assert got.json()["error_code"] == "unknown_tool"
    text = client.get("/metrics").text
    assert "bogus" not in text
    samples = _samples(client)
    assert samples[("smartflow_tool_call_seconds_count", (("tool", "unknown"),))] == 3
    assert samples[("smartflow_refusals_total", (("code", "unknown_tool"),))] == 3
    calls = [line["tool"] for line in access_lines if line["path"].endswith("/calls")]
    assert calls == ["bogus_a", "bogus_b", "bogus_c"]


def test_queue_depth_is_the_calls_beyond_the_workers():
    """Tests the solver pool gauges: in flight as the pool counts it, queue depth the calls
    beyond one per worker process (never negative), busy seconds as a counter."""
    from prometheus_client import CollectorRegistry

    from smartflow_engine.tools_adapter.api.metrics import _ServerCollector

    class Pool:
        size = 2

        def __init__(self, in_flight: int) -> None:
            self.in_flight = in_flight

        def stats(self) -> dict:
            return {"in_flight": self.in_flight, "busy_seconds": 1.5}

    for in_flight, depth in [(0, 0), (1, 0), (2, 0), (5, 3)]:
        ctx = type("Ctx", (), {"sessions": {}, "solver": Pool(in_flight)})()
        registry = CollectorRegistry()
        registry.register(_ServerCollector(ctx))
        assert registry.get_sample_value("smartflow_solver_pool_queue_depth") == depth
        assert registry.get_sample_value("smartflow_solver_pool_in_flight") == in_flight
        assert registry.get_sample_value("smartflow_solver_pool_busy_seconds_total") == 1.5
        assert registry.get_sample_value("smartflow_sessions_open") == 0


def test_the_series_read_as_prometheus_clients_own_would():
    """Tests that the request and tool series (counted in plain dicts, exposed at scrape time)
    give the samples prometheus-client's own Histogram and Counter give for the same values:
    bucket bounds included (a value on a bound counts in that bucket), +Inf, sum and count."""
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from smartflow_engine.tools_adapter.api.metrics import TOOL_BUCKETS, Metrics
    from smartflow_engine.tools_adapter.api.request_log import RequestInfo

    values = [0.0, 0.001, 0.0011, 0.0025, 0.3, 1.0, 7.5, 30.0, 31.0, 1e-6, 0.05]
    ours = Metrics(create_app(TOKENS).state.ctx)
    ref = CollectorRegistry()
    hist = Histogram(
        "smartflow_tool_call_seconds", "x", ["tool"], registry=ref, buckets=TOOL_BUCKETS
    )
    calls = Counter("smartflow_tool_calls", "x", ["tool", "status"], registry=ref)
    route = type("Route", (), {"path": "/v1/sessions/{session_id}/calls"})()
    for n, value in enumerate(values):
        tool = "get_overview" if n % 2 else "move"
        info = RequestInfo("r", 0.0, tool=tool, status="ok", tool_seconds=value, elapsed=value)
        ours.observe_request({"method": "POST", "route": route}, info, 200)
        hist.labels(tool).observe(value)
        calls.labels(tool, "ok").inc()

    def samples(registry: CollectorRegistry, prefix: str) -> dict:
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in registry.collect()
            for s in family.samples
            if s.name.startswith(prefix) and not s.name.endswith("_created")
        }

    for prefix in ("smartflow_tool_call_seconds", "smartflow_tool_calls"):
        got, want = samples(ours.registry, prefix), samples(ref, prefix)
        assert want and got.keys() == want.keys()
        assert all(abs(got[k] - want[k]) < 1e-9 for k in want), (got, want)
    text = ours.render().decode()
    assert 'smartflow_http_request_seconds_bucket{le="+Inf",method="POST"' in text


def test_the_line_is_json_for_any_path(access_lines):
    """Tests that the line (written field by field) parses as JSON and keeps the path as sent,
    quotes, backslashes, control characters and Chinese included."""
    client = TestClient(create_app(TOKENS, access_log=True))
    backslash = chr(92)
    client.get(f'/v1/x"y{backslash}z%09复习', headers=ALICE)
    line = access_lines[-1]
    assert line["path"] == f'/v1/x"y{backslash}z\t复习'
    assert line["http_status"] == 404 and isinstance(line["duration_ms"], float)


def test_serve_access_log_writes_one_line_per_request_to_stderr(monkeypatch):
    """Tests the set-up `smartflow serve --access-log` has (the handler configure_access_log
    installs, writing the lines without a log record, in batches): one JSON line per request on
    stderr, nothing else on it, out within the flush interval, and all of them on a flush (as at
    exit)."""
    import io
    import sys

    from smartflow_engine.tools_adapter.api import request_log

    logger = logging.getLogger("smartflow.access")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    logger.handlers.clear()
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)  # the handler takes sys.stderr when made
    try:
        client = TestClient(create_app(TOKENS, access_log=True))
        assert [type(h) for h in logger.handlers] == [request_log._LineHandler]
        client.get("/health")  # the liveness probe: no line
        client.get("/v1/sessions/nope", headers=ALICE)
        client.get("/v1/sessions", headers=ALICE)
        client.get("/v1/sessions")
        handler = logger.handlers[0]
        waited = time.monotonic()
        while stream.getvalue().count("\n") < 3 and time.monotonic() - waited < 10:
            time.sleep(0.05)  # the lines go out in a batch, at the latest FLUSH_S later
        assert time.monotonic() - waited < handler.FLUSH_S + 1.0
        lines = [json.loads(text) for text in stream.getvalue().splitlines()]
        client.get("/v1/sessions", headers=ALICE)
        handler.flush()  # as logging.shutdown does at exit: the waiting line too
        assert len(stream.getvalue().splitlines()) == 4
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
    assert [(x["path"], x["http_status"], x["user"]) for x in lines] == [
        ("/v1/sessions/nope", 404, "alice"),
        ("/v1/sessions", 200, "alice"),
        ("/v1/sessions", 401, None),
    ]
    assert all(set(FIELDS) <= set(x) for x in lines)


@pytest.mark.parametrize("requests", [1, 63, 64, 150])
def test_a_scrape_counts_every_request_before_it(requests):
    """Tests that the requests' records, handled in batches, are all counted by the next
    scrape: fewer than a batch, exactly one, and several with a part left over."""
    client = TestClient(create_app(TOKENS, access_log=False))
    route = ("http_status", "200"), ("method", "GET"), ("route", "/v1/sessions")
    before = _samples(client).get(("smartflow_http_requests_total", route), 0.0)
    for _ in range(requests):
        client.get("/v1/sessions", headers=ALICE)
    after = _samples(client)
    assert after[("smartflow_http_requests_total", route)] - before == requests
    seconds = (("method", "GET"), ("route", "/v1/sessions"))
    assert after[("smartflow_http_request_seconds_count", seconds)] >= requests
