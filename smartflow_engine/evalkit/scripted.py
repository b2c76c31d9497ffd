"""The deterministic tools-only agent: the loop of ``benchmarks/bench_loop.py`` and the kit's
``scripted`` policy share this one implementation (issue 11, issue 31).

The agent only calls tools and reads their replies: ``analyze_health`` → the first action whose
two reads (``query_target_tasks`` → ``query_available_slots``) find a destination that helps →
the write with ``action_id`` (for the ``least_change_repair`` action, offered when no single move
helps: ``apply_proposal`` with its ``keep_placed`` / ``max_moves``) → ``analyze_health`` … until ``close_signal.should_close``; on
``no_progress`` / ``round_cap`` it calls ``restore_best`` when the last round was not the best.
On an infeasible window it records the user's choice with ``resolve_negotiation``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

from ..analyzers.destinations import health_result
from ..state import ScheduleState
from ..tools_adapter.core.pipeline import CallResult

MAX_ROUNDS = 60


class ToolCaller(Protocol):
    """What the agent needs of a session: the model's two ways to call a tool."""

    def call(self, name: str, args: Any = None) -> str: ...

    def invoke(self, name: str, args: Any = None) -> CallResult: ...


@dataclass
class AgentRun:
    closed: bool = False
    close_reason: str | None = None
    rounds: int = 0
    actions_seen: int = 0
    actions_actionable: int = 0  # the two reads led to a destination that helps
    actions_unfixable: int = 0  # fixable=false with a reason, and the reads found none either
    fixable_unfound: int = 0  # fixable=true, yet the two reads found no destination that helps
    unfixable_found: int = 0  # fixable=false, yet the two reads found one (a wrong false)
    trades: int = 0  # writes of a destination that does not help but improves the counts
    batches: int = 0  # least-change repairs written with apply_proposal (issue 40 item 7)
    writes: int = 0
    refused: int = 0
    created_issues: int = 0
    oscillations: int = 0
    negotiated_round: int | None = None
    wrote_before_negotiation: bool = False
    seconds: float = 0.0


def key_of(state: ScheduleState) -> tuple[int, int, float]:
    """The loop's key of ``state``: (critical, warning, total impact of both)."""
    issues = health_result(state).issues
    crit = sum(1 for i in issues if i.severity == "critical")
    warn = sum(1 for i in issues if i.severity == "warning")
    impact = round(sum(i.impact_score for i in issues if i.severity != "info"), 4)
    return crit, warn, impact


def closes(key: tuple[int, int, float]) -> bool:
    """The spec's close rule: ``critical=0 && warning<=1``."""
    return key[0] == 0 and key[1] <= 1


def improves(dest: dict[str, Any]) -> bool:
    """The agent's only judgement: a destination is worth writing when the tool says it helps
    the action (resolves or eases one of its issues, creates none, health strictly better), or
    when its reported deltas make the loop's key (critical, warning, total impact) strictly
    better (a trade: it may create an issue while resolving a worse one)."""
    key = (dest["critical_delta"], dest["warning_delta"], dest["impact_delta"])
    return bool(dest["helps"]) or key < (0, 0, 0.0)


def health_loop(
    s: ToolCaller,
    run: AgentRun,
    *,
    max_rounds: int = MAX_ROUNDS,
    pinned: Collection[int] = (),
    choice: str = "accept_risk",
    out_of_budget: Callable[[], bool] | None = None,
) -> None:
    """Drive ``s`` from ``analyze_health`` to the close (see the module docstring).

    ``pinned``: tasks the loop never writes (a student's requested edit, kept where it was put);
    ``choice``: the user's negotiation choice on an infeasible window; ``out_of_budget``: asked
    before each round, true when too few tool calls are left for another one (the loop then
    returns to the best state when that helps, and stops).
    """
    history: dict[int, list[tuple[int, int]]] = {}
    for _ in range(max_rounds + 1):
        if out_of_budget is not None and out_of_budget():
            log = json.loads(s.call("get_round_log", {"limit": 1}))["metrics"]
            if log.get("best_round") != log.get("round"):
                s.call("restore_best", {})
            break
        env = json.loads(s.call("analyze_health", {}))
        if env.get("success") is False:  # every tool call is a round: the request's cap stops it
            run.close_reason = env.get("error_code") or "refused"
            break
        sig = env["metrics"]["close_signal"]
        run.rounds = sig["round"]
        infeasible = (env.get("feasibility") or {}).get("is_feasible") is False
        if infeasible and run.negotiated_round is None:
            # once: the window stays infeasible after the choice, and the next round closes
            # with risk_accepted (resolving again each round ran to the round cap)
            run.negotiated_round = sig["round"]
            s.call("resolve_negotiation", {"choice": choice})
            continue
        if sig["should_close"]:
            run.close_reason = sig["close_reason"]
            if run.close_reason in ("no_progress", "round_cap"):
                s.call("restore_best", {})
            break
        # fixable ones first (health orders them so); an action marked fixable=false may still
        # offer a trade that improves the counts
        for act in env["next_actions"]:
            run.actions_seen += 1
            aid = act["action_id"]
            fixable = act.get("fixable")
            if act.get("intent_code") == "least_change_repair":
                if fixable is False:  # (its write already found nothing on this state)
                    run.actions_unfixable += bool(act.get("fixable_reason"))
                    continue
                # no single move helps (issue 40 item 7): the least-change repair, one write
                run.actions_actionable += 1
                result = write_search(s, act["figures"]["write_args"], aid)
                run.writes += 1
                run.batches += 1
                if result.status == "error" or not result.changes:
                    run.refused += 1
                    continue
                if "新增 0 项" not in result.reply.splitlines()[-1]:
                    run.created_issues += 1
                break
            targets = json.loads(s.call("query_target_tasks", {"action_id": aid}))
            rows = [
                t
                for t in targets["metrics"].get("tasks", [])
                if t.get("best_destination") is not None
                and improves(t["best_destination"])
                and t["task_id"] not in pinned
            ]
            dest, task = None, None
            if rows:
                task = rows[0]
                slots = json.loads(
                    s.call("query_available_slots", {"task_id": task["task_id"], "action_id": aid})
                )
                listed = [d for d in slots["metrics"].get("slots") or [] if improves(d)]
                dest = listed[0] if listed else None
            helped = dest is not None and bool(dest["helps"])
            if helped:
                run.actions_actionable += 1
                run.unfixable_found += fixable is False
            elif fixable is False and act.get("fixable_reason"):
                run.actions_unfixable += 1
            else:
                run.fixable_unfound += 1
            if dest is None or task is None:
                continue
            run.trades += not helped
            result = write_destination(s, task, dest, aid)
            run.writes += 1
            if result.status == "error" or not result.changes:
                run.refused += 1
                continue
            evidence = result.reply.splitlines()[-1]
            if "新增 0 项" not in evidence:
                run.created_issues += 1
            pos = (dest["day"], dest["slot_start"])
            seen = history.setdefault(task["task_id"], [])
            before = [(b["day"], b["slot_start"]) for b in task["blocks"]]
            if len(seen) >= 2 and seen[-2] == pos:
                run.oscillations += 1
            if not seen:
                seen.extend(before)
            seen.append(pos)
            break
        # no write: the next health counts a round without progress


def write_destination(
    s: ToolCaller, task: dict[str, Any], dest: dict[str, Any], action_id: str | None = None
) -> CallResult:
    """``place`` a pending task or ``move`` a placed one to a listed destination."""
    if task["status"] == "pending":
        args: dict[str, Any] = {
            "task_id": task["task_id"],
            "day": dest["day"],
            "slot_start": dest["slot_start"],
        }
    else:
        args = {
            "task_id": task["task_id"],
            "new_day": dest["day"],
            "new_slot_start": dest["slot_start"],
            "from_day": dest.get("from_day"),
        }
    if action_id is not None:
        args["action_id"] = action_id
    return s.invoke("place" if task["status"] == "pending" else "move", args)


def write_search(s: ToolCaller, write_args: dict[str, Any], action_id: str | None) -> CallResult:
    """``apply_proposal`` with the ``least_change_repair`` action's arguments (``keep_placed``,
    ``max_moves``), applied (not previewed)."""
    args: dict[str, Any] = {**write_args, "preview": False}
    if action_id is not None:
        args["action_id"] = action_id
    return s.invoke("apply_proposal", args)


def full_round_log(s: ToolCaller) -> dict[str, Any]:
    """The whole round log, every page read (the log is paged, newest first); rounds folded
    into the summary count as one round holding a write at their first round number."""
    log = json.loads(s.call("get_round_log", {"limit": 50}))["metrics"]
    while log["page"]["next_offset"] is not None:
        older = json.loads(
            s.call("get_round_log", {"offset": log["page"]["next_offset"], "limit": 50})
        )["metrics"]
        older["rounds"] += log["rounds"]
        log = older
    earlier = log.get("earlier_rounds")
    if earlier and earlier.get("writes"):
        log["rounds"].insert(0, {"round": earlier["first_round"], "writes": [{"tool": "?"}]})
    out: dict[str, Any] = log
    return out


def finish_run(s: ToolCaller, state: ScheduleState, run: AgentRun) -> None:
    """Fill ``run.closed`` and ``run.wrote_before_negotiation`` from the session's round log."""
    info = getattr(s, "request_info", None)
    if info is not None and info()["rounds_left"] == 0:
        s.begin_request()  # type: ignore[attr-defined]  # a capped request refuses every call
    log = full_round_log(s)
    run.closed = run.close_reason in ("rules_met", "best_achievable", "risk_accepted") or (
        run.close_reason is not None and closes(key_of(state))
    )
    first_write = next(
        (
            r["round"]
            for r in log["rounds"]
            for w in r["writes"]
            if w["tool"] not in ("resolve_negotiation",)
        ),
        None,
    )
    if run.negotiated_round is not None and first_write is not None:
        run.wrote_before_negotiation = first_write < run.negotiated_round
