"""Tests of the eval kit's ``openai`` policy against a REPLAY SERVER: a tiny OpenAI-compatible
chat-completions app on loopback (FastAPI + uvicorn in a thread, ephemeral port) that answers
with recorded tool calls. It is not a model; it tests the plumbing only (the official SDK, the
session's tool schemas sent as given, tool replies fed back, tokens counted, the goals graded)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any, Self

import pytest

fastapi = pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")

from smartflow_engine.evalkit import OpenAIPolicy, load_tasks, run_trial  # noqa: E402
from smartflow_engine.state import place  # noqa: E402
from smartflow_engine.tools_adapter import Session  # noqa: E402


class ReplayServer:
    """Replays ``script`` (one recorded assistant message per request) and keeps the requests."""

    def __init__(self, script: list[dict[str, Any]], app: Any = None) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        served = app
        app = fastapi.FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(body: dict[str, Any]) -> dict[str, Any]:
            self.requests.append(body)
            if not self.script:
                return {"error": {"message": "replay exhausted"}}
            message = self.script.pop(0)
            return {
                "id": f"replay-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", **message},
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }

        config = uvicorn.Config(served or app, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        started = threading.Event()

        def wait() -> None:
            while not self.server.started:
                if not self.thread.is_alive():
                    break
                started.wait(0.01)

        wait()
        assert self.server.started, "the replay server did not start"
        return self

    @property
    def base_url(self) -> str:
        sock = self.server.servers[0].sockets[0]
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{i}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


@pytest.fixture
def negotiate_task():
    return next(t for t in load_tasks() if t.request.type == "negotiate" and t.days <= 21)


def _script() -> list[dict[str, Any]]:
    return [
        {"content": None, "tool_calls": [_call(1, "analyze_health", {})]},
        {
            "content": None,
            "tool_calls": [_call(2, "resolve_negotiation", {"choice": "accept_risk"})],
        },
        {"content": "排不下，已按你的意思接受风险收口。"},
    ]


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(_script()) as server:
        yield server


def test_the_openai_policy_runs_recorded_tool_calls_through_a_session(replay, negotiate_task):
    """Tests that the policy sends the session's own OpenAI tool schemas and the request, runs
    each tool call through the session, feeds the reply back under the call's id, stops at the
    answer without a tool call, counts the endpoint's tokens, and that the trial is graded as
    passed (the negotiation recorded before any write)."""
    policy = OpenAIPolicy("replay-model", base_url=replay.base_url, api_key="test")
    trial = run_trial(negotiate_task, policy)
    assert trial.passed, trial.details
    assert trial.tool_calls == 2
    assert (trial.stats.prompt_tokens, trial.stats.completion_tokens) == (300, 30)
    first, second, third = replay.requests
    expected = Session(negotiate_task.initial_state(), mode="first_full").schemas("openai")
    assert first["tools"] == expected
    assert first["messages"][-1] == {"role": "user", "content": negotiate_task.request.text}
    tool_msg = second["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_1"
    assert json.loads(tool_msg["content"])["feasibility"]["is_feasible"] is False
    assert third["messages"][-1]["tool_call_id"] == "call_2"


def test_a_write_before_the_negotiation_fails_the_trial(negotiate_task):
    """Tests that a recorded model that places a task before any health round (the gate opens
    only after one, so the write lands) and then negotiates fails the negotiation goal."""
    state = negotiate_task.initial_state()
    task_id, day, start = next(
        (t.state_id, d, s)
        for t in state.pending_tasks()
        for d, s, _ in state.grid.free_runs(t.need())
        if place(state.copy_state(), t.state_id, d, s).ok  # a legal place (class window kept)
    )
    script = [
        {
            "content": None,
            "tool_calls": [
                _call(1, "place", {"task_id": task_id, "day": day, "slot_start": start})
            ],
        },
        *_script(),
    ]
    with ReplayServer(script) as server:
        policy = OpenAIPolicy("replay-model", base_url=server.base_url, api_key="test")
        trial = run_trial(negotiate_task, policy)
    assert not trial.passed and trial.refused_writes == 0
    assert "negotiation" in trial.failed


def test_an_endpoint_failure_is_a_failed_trial_with_its_reason(negotiate_task):
    """Tests that an endpoint that cannot be reached gives a failed trial naming the error, not
    a traceback."""
    with ReplayServer([]) as server:
        url = server.base_url
    policy = OpenAIPolicy("replay-model", base_url=url, api_key="test", timeout_s=2.0)
    policy.client = policy.client.with_options(max_retries=0)
    trial = run_trial(negotiate_task, policy)
    assert not trial.passed and "policy_error" in trial.failed
    assert trial.details["policy_error"].startswith("APIConnectionError")


def test_arguments_that_are_not_json_get_the_tools_own_refusal(negotiate_task):
    """Tests that a recorded tool call whose arguments are not JSON reaches the session as text
    and comes back as the tool's clear refusal (fed to the model), not as a crashed trial."""
    bad = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "analyze_health", "arguments": "{oops"},
    }
    script = [{"content": None, "tool_calls": [bad]}, {"content": "好的。"}]
    with ReplayServer(script) as server:
        policy = OpenAIPolicy("replay-model", base_url=server.base_url, api_key="test")
        trial = run_trial(negotiate_task, policy)
        reply = server.requests[1]["messages"][-1]
    assert "policy_error" not in trial.failed and trial.tool_calls == 1
    assert reply["role"] == "tool" and reply["tool_call_id"] == "call_1"
    assert json.loads(reply["content"])["success"] is False


# ---------------------------------------------------------------------------------- the command
def _eval(tmp_path: Any, *args: str) -> Any:
    from typer.testing import CliRunner

    from smartflow_engine.cli import app

    task = next(t for t in load_tasks() if t.request.type == "negotiate" and t.days <= 21)
    return CliRunner().invoke(
        app,
        [
            "eval",
            "--policy",
            "openai",
            "--model",
            "m",
            "--tasks",
            task.id,
            "--out",
            str(tmp_path / "e"),
            *args,
        ],
    )


def _written(tmp_path: Any) -> bool:
    return any(tmp_path.glob("e.*"))


def test_no_api_key_for_openais_own_api_stops_before_any_task(tmp_path, monkeypatch):
    """Tests that ``smartflow eval --policy openai`` with no key in the environment and no
    --base-url (OpenAI's own API, which needs one) exits 2 with one line naming the variable,
    runs no task and writes nothing."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = _eval(tmp_path)
    assert result.exit_code == 2
    assert "no API key: $OPENAI_API_KEY is not set" in result.output
    assert "#1" not in result.output and not _written(tmp_path)


def test_an_unreachable_base_url_stops_before_any_task(tmp_path):
    """Tests that a --base-url nothing listens on exits 2 with one line naming the URL (not a
    table of failed trials with exit 0), runs no task and writes nothing."""
    with ReplayServer([]) as server:
        url = server.base_url  # the port is free again once the server stopped
    result = _eval(tmp_path, "--base-url", url)
    assert result.exit_code == 2
    assert f"cannot reach {url}: " in result.output
    assert "#1" not in result.output and not _written(tmp_path)


def test_a_refused_key_stops_before_any_task(tmp_path, monkeypatch):
    """Tests that an endpoint answering 401 (a wrong key) exits 2 with one line saying the key
    was refused, before any task, writing nothing."""
    app = fastapi.FastAPI()

    @app.post("/v1/chat/completions")
    async def completions() -> Any:
        return fastapi.responses.JSONResponse(
            {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}},
            status_code=401,
        )

    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with ReplayServer([], app=app) as server:
        url = server.base_url
        result = _eval(tmp_path, "--base-url", url)
    assert result.exit_code == 2
    assert f"{url} refused the API key (HTTP 401): " in result.output
    assert "#1" not in result.output and not _written(tmp_path)


def test_a_working_endpoint_runs_and_a_policy_error_mid_run_exits_1(tmp_path, monkeypatch):
    """Tests that an endpoint passing the set-up check runs the task (the check is one extra
    request before it), exits 0 when every trial ran, and exits 1 with the table written and
    one line naming the error when a trial stopped on a policy error (here the endpoint stops
    answering after the check)."""
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ReplayServer([{"content": "pong"}, *_script()]) as server:
        ok = _eval(tmp_path, "--base-url", server.base_url)
        assert server.requests[0]["messages"] == [{"role": "user", "content": "ping"}]
    assert ok.exit_code == 0, ok.output
    assert "#1: pass" in ok.output
    with ReplayServer([{"content": "pong"}]) as server:
        broken = _eval(tmp_path, "--base-url", server.base_url)
    assert broken.exit_code == 1, broken.output
    assert "1 of 1 trials stopped on a policy error (first: the endpoint returned no choice)" in (
        broken.output
    )
    assert (tmp_path / "e.md").exists() and (tmp_path / "e.parquet").exists()
