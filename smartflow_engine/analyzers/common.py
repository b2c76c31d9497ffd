"""Pieces shared by the analyzers: rule evaluation, issue ordering, action scaffolding."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import wraps
from typing import Any, ParamSpec

from ..rules import Band, Rule, first_band, r4
from ..state import ScheduleState
from .result import SEVERITY_RANK, AnalysisResult, Issue, NextAction, ParamError, Trigger

# Write tools an action may name. min_context_switch is never offered (spec P1-B / §4.5).
WRITE_TOOLS: frozenset[str] = frozenset(
    {
        "place",
        "move",
        "swap",
        "batch_move",
        "unplace",
        "spread_even",
        "upsert_task_class",
        "apply_proposal",
    }
)
# "Study tasks" in the model's terms (a task kind), never the internal source field (DESIGN.md,
# decisions of turn 3; issue 24 item 10).
STUDY_POOL: dict[str, Any] = {"kind": "study", "locked": False}
MAX_LISTED_DAYS = 5  # days named in one action's filters


def _number(value: float, integer: bool) -> float:
    return int(value) if integer else value


def evaluate(
    rule: Rule,
    values: Mapping[str, Any],
    *,
    day: int | None = None,
    category: str | None = None,
) -> Issue | None:
    """The issue of the first band of ``rule`` whose conditions all hold on ``values``, if any
    (:func:`..rules.first_band`)."""
    band = first_band(rule, values)
    if band is None:
        return None
    return issue_of(rule, band, values, day=day, category=category)


def issue_of(
    rule: Rule,
    band: Band,
    values: Mapping[str, Any],
    *,
    day: int | None = None,
    category: str | None = None,
) -> Issue:
    """The issue of ``rule`` firing at ``band`` on the metric ``values``."""
    triggers = tuple(
        Trigger(c.metric, c.op, _number(c.value, c.integer), values[c.metric]) for c in band.conds
    )
    return Issue(
        issue_id=issue_id(rule.dimension, rule.rule, day=day, category=category),
        dimension=rule.dimension,
        severity=band.severity,
        rule=rule.rule,
        trigger=triggers[0],
        conditions=triggers,
        impact_score=impact(triggers[0]),
        day=day,
        category=category,
    )


def issue_id(
    dimension: str, rule: str, *, day: int | None = None, category: str | None = None
) -> str:
    out = f"issue_{dimension}_{rule}"
    if day is not None:
        out += f"_d{day}"
    if category is not None:
        out += f"_{category}"
    return out


def impact(trigger: Trigger) -> float:
    """How far past its threshold the trigger is, relative to the threshold (0 at the boundary)."""
    over = (
        trigger.actual - trigger.threshold
        if trigger.operator in (">=", ">")
        else trigger.threshold - trigger.actual
    )
    return r4(over / abs(trigger.threshold)) if trigger.threshold else r4(over)


def issue_sort_key(issue: Issue) -> tuple[int, int, float, int]:
    """severity → feasibility first → impact score (larger first) → recency (earlier day first)."""
    return (
        SEVERITY_RANK[issue.severity],
        0 if issue.dimension == "feasibility" else 1,
        -issue.impact_score,
        issue.day or 0,
    )


def sort_issues(issues: Iterable[Issue]) -> list[Issue]:
    return sorted(issues, key=issue_sort_key)


def candidate_scope(
    days: Iterable[int],
    *,
    categories: Iterable[str] = (),
    task_pool: str = "placed",
) -> dict[str, Any]:
    """``candidate_scope``: the day range spanned by ``days`` (1-based), categories, task pool."""
    listed = list(days)
    span = [min(listed), max(listed)] if listed else []
    return {"day_range": span, "categories": sorted(set(categories)), "task_pool": task_pool}


def reads_for_days(days: Iterable[int], *extra: dict[str, Any]) -> list[dict[str, Any]]:
    out = [{"tool": "query_range", "args": {"day": d}} for d in list(days)[:MAX_LISTED_DAYS]]
    return out + list(extra)


def find_free_read(lengths: Iterable[int]) -> list[dict[str, Any]]:
    """A ``find_free`` read for the shortest of ``lengths`` (none when there are none)."""
    listed = [n for n in lengths if n > 0]
    return [{"tool": "find_free", "args": {"duration": min(listed)}}] if listed else []


def action(intent: str, key: str, **fields: Any) -> NextAction:
    tools = fields.pop("candidate_write_tools")
    assert set(tools) <= WRITE_TOOLS, tools
    return NextAction(
        action_id=f"na_{intent}_{key}", intent_code=intent, candidate_write_tools=tools, **fields
    )


def number_actions(actions: list[NextAction], limit: int | None = None) -> list[NextAction]:
    kept = actions if limit is None else actions[:limit]
    for i, act in enumerate(kept, start=1):
        act.priority = i
    return kept


def order_actions(actions: list[NextAction], issues: list[Issue]) -> list[NextAction]:
    """Actions in the order of the best-ranked issue each addresses."""
    rank = {issue.issue_id: i for i, issue in enumerate(issues)}
    return sorted(
        actions, key=lambda a: min((rank.get(i, len(rank)) for i in a.issue_ids), default=len(rank))
    )


P = ParamSpec("P")


def guarded(tool: str) -> Callable[[Callable[P, AnalysisResult]], Callable[P, AnalysisResult]]:
    """Turn a :class:`ParamError` raised by an analyzer into the ``success=false`` envelope."""

    def wrap(fn: Callable[P, AnalysisResult]) -> Callable[P, AnalysisResult]:
        @wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> AnalysisResult:
            state = args[0] if args else kwargs.get("state")
            if not isinstance(state, ScheduleState):
                return AnalysisResult.failure(tool, "no_state", "当前没有加载日程，无法分析。")
            try:
                return fn(*args, **kwargs)
            except ParamError as exc:
                return AnalysisResult.failure(tool, exc.code, exc.message)

        return inner

    return wrap
