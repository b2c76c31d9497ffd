"""Policies: who answers the request through the tools.

- :class:`ScriptedPolicy`: the deterministic tools-only agent (:mod:`.scripted`, shared with
  ``benchmarks/bench_loop.py``). It reads the request's edit (and a calendar request's one-call
  form) as data, standing in for the language understanding a model brings; everything else it
  learns from tool replies.
- :class:`OpenAIPolicy`: any OpenAI-compatible chat-completions endpoint with tool calling, given
  the session's own tool schemas (``schemas(fmt="openai")``) and prompt rules; the model's tool
  calls run through the session until it answers without one or the call budget ends.
"""

from __future__ import annotations

import json
import re
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


# A move line of a write's reply: "[25]函数与映射…：第37天第7-8节 → 第34天第3-4节" (the day after the arrow)
MOVED = re.compile(r"^\s*\[(\d+)\][^\n]*?→ 第(\d+)天", re.MULTILINE)


def study_days(state: dict[str, Any]) -> dict[int, int]:
    """The day of each placed study task's first block in the window ``state`` (JSON)."""
    return {
        t["state_id"]: t["slots"][0]["day"]
        for t in state["tasks"]
        if t.get("source") != "event" and t.get("slots")
    }


def follow(days: dict[int, int], reply: str) -> None:
    """``days`` updated by the move lines of a write's ``reply`` (what the agent saw happen)."""
    for tid, day in MOVED.findall(reply):
        days[int(tid)] = int(day)


def even_out(s: BudgetedSession, days: dict[int, int], spread: list[int]) -> None:
    """ "均匀化" checked and done: while the study tasks on the fullest of the ``spread`` days
    outnumber those on the emptiest by more than one, one scoped ``apply_proposal`` moves one of
    the fullest day's tasks to the emptiest day (the engine picks which may go, every rule
    kept); it stops on a refusal or when the call budget ends. The proposal balances the days'
    occupied periods, where a task inside a water course adds none, so its spread may leave
    one day two tasks more than another (docs/decisions.md, issue 43)."""
    while s.remaining > 0:
        on = {d: sorted(t for t, day in days.items() if day == d) for d in spread}
        full = max(spread, key=lambda d: len(on[d]))
        empty = min(spread, key=lambda d: len(on[d]))
        if len(on[full]) - len(on[empty]) <= 1:
            return
        args = {"tasks": {"task_ids": on[full]}, "slots": {"day": empty}, "max_moves": 1}
        result = s.invoke("apply_proposal", args)
        if result.status != "ok":
            return
        follow(days, result.reply)


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
        elif req.type == "calendar":
            # the request's own form (issue 43): nothing else is to move, so no health loop
            days = study_days(task.state)
            for call in req.calls:
                follow(days, s.invoke(call.tool, call.args).reply)
            if req.spread_days:
                even_out(s, days, req.spread_days)
            return PolicyStats()
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
        self.base_url = base_url

    def setup_problem(self, timeout_s: float = 20.0) -> str | None:
        """One line naming why the endpoint cannot run a trial, or ``None`` when it can.

        One chat completion ("ping", no tools, the run's temperature) with no retry: it checks
        at once that the endpoint is reachable, accepts the key and serves the model, so a
        broken setup stops the run before any task instead of failing every trial.
        """
        import openai

        where = self.base_url or "the OpenAI API"
        extra: dict[str, Any] = {}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        client = self.client.with_options(max_retries=0, timeout=timeout_s)
        try:
            client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": "ping"}], **extra
            )
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            return f"cannot reach {where}: {type(cause).__name__}: {_first_line(cause)}"
        except openai.AuthenticationError as exc:
            return f"{where} refused the API key (HTTP {exc.status_code}): {_first_line(exc)}"
        except openai.APIStatusError as exc:
            return (
                f"{where} answered HTTP {exc.status_code} for model {self.model!r}: "
                f"{_first_line(exc)}"
            )
        except openai.OpenAIError as exc:
            return f"{where}: {type(exc).__name__}: {_first_line(exc)}"
        return None

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


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _arguments(text: str | None) -> Any:
    """The model's argument text parsed; text that is not JSON goes through as is, so the tool
    answers with its own clear refusal."""
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text
