"""Policies: who answers the request through the tools.

- :class:`ScriptedPolicy`: the deterministic tools-only agent (:mod:`.scripted`, shared with
  ``benchmarks/bench_loop.py``). It reads the request's edit as data, standing in for the language
  understanding a model brings; everything else it learns from tool replies.
- :class:`OpenAIPolicy`: any OpenAI-compatible chat-completions endpoint with tool calling, given
  the session's own tool schemas (``schemas(fmt="openai")``) and prompt rules; the model's tool
  calls run through the session until it answers without one or the call budget ends.
"""

from __future__ import annotations

import json
from typing import Any

from .runner import BudgetedSession, PolicyStats
from .scripted import AgentRun, health_loop, write_destination
from .tasks import EvalTask

ROUND_CALLS = 5  # a round of the scripted agent: health, target, slots, write, (restore)
MAX_TURNS = 80  # model turns per trial (the tool-call budget usually ends it first)

SYSTEM_PROMPT = (
    "你是一名学习规划助手，只能通过工具查看和修改学生的日程。"
    "每次工具调用都计入本次请求的轮数上限（{cap} 次）。"
    "完成学生的请求后直接用中文回复学生，不再调用工具。\n\n{rules}"
)


class ScriptedPolicy:
    name = "scripted"

    def run(self, task: EvalTask, s: BudgetedSession) -> PolicyStats:
        req = task.request
        pinned: list[int] = []
        if req.type in ("first_full", "negotiate"):
            # check_feasibility first, not analyze_health: a health round before the proposal
            # would become the loop's best state (its key does not count unplaced periods), and
            # restore_best would later return to the empty plan.
            feasible = not s.call("check_feasibility", {}).startswith("可行性：不可行")
            if feasible and any(t.get("status") == "pending" for t in task.state["tasks"]):
                s.call("apply_proposal", {})
        elif req.type == "local_edit" and req.edit is not None:
            pinned = list(req.edit.task_ids)
            self.edit(s, req.edit.task_ids, req.edit.days)
        run = AgentRun()
        health_loop(
            s,
            run,
            pinned=pinned,
            choice=req.choice or "accept_risk",
            out_of_budget=lambda: s.remaining < ROUND_CALLS,
        )
        return PolicyStats()

    @staticmethod
    def edit(s: BudgetedSession, task_ids: list[int], days: list[int]) -> None:
        """Move each task to the best listed destination on the requested days."""
        allowed = set(days)
        for tid in task_ids:
            reply = json.loads(
                s.call(
                    "query_available_slots",
                    {"task_id": tid, "day_range": [min(days), max(days)], "limit": 20},
                )
            )
            if not reply.get("success"):
                continue
            metrics = reply["metrics"]
            listed = [d for d in metrics.get("slots") or [] if d["day"] in allowed]
            if listed:
                write_destination(s, metrics["task"], listed[0])


class OpenAIPolicy:
    """A model behind an OpenAI-compatible endpoint (the official ``openai`` SDK).

    Parameters
    ----------
    model, base_url, api_key
        Passed to ``openai.OpenAI``; ``base_url`` None means the SDK's default.
    temperature
        Sampling temperature (pass^k measures reliability across samples: keep it as deployed).
    client
        An already built client (tests).
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        timeout_s: float = 120.0,
        client: Any = None,
    ) -> None:
        if client is None:
            import openai

            client = openai.OpenAI(
                base_url=base_url, api_key=api_key or "none", timeout=timeout_s, max_retries=2
            )
        self.client = client
        self.model = model
        self.temperature = temperature

    def run(self, task: EvalTask, s: BudgetedSession) -> PolicyStats:
        import openai

        stats = PolicyStats()
        messages: list[dict[str, Any]] = [
            {
                "role": "system",
                "content": SYSTEM_PROMPT.format(cap=task.goal.max_tool_calls, rules=s.rules()),
            },
            {"role": "user", "content": task.request.text},
        ]
        tools = s.schemas("openai")
        extra: dict[str, Any] = {}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        for _ in range(MAX_TURNS):
            try:
                resp = self.client.chat.completions.create(
                    model=self.model, messages=messages, tools=tools, **extra
                )
            except openai.OpenAIError as exc:
                stats.error = f"{type(exc).__name__}: {exc}"
                return stats
            if resp.usage is not None:
                stats.prompt_tokens = (stats.prompt_tokens or 0) + resp.usage.prompt_tokens
                stats.completion_tokens = (
                    stats.completion_tokens or 0
                ) + resp.usage.completion_tokens
            if not resp.choices:
                stats.error = "the endpoint returned no choice"
                return stats
            msg = resp.choices[0].message
            calls = msg.tool_calls or []
            entry: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ]
            messages.append(entry)
            if not calls:
                return stats  # the model answered the student: the request is done
            for c in calls:
                reply = s.call(c.function.name, _arguments(c.function.arguments))
                messages.append({"role": "tool", "tool_call_id": c.id, "content": reply})
            if s.exhausted:
                return stats
        return stats


def _arguments(text: str | None) -> Any:
    """The model's argument text parsed; text that is not JSON goes through as is, so the tool
    answers with its own clear refusal."""
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text
