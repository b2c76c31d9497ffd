"""``analyze_load`` (p1 §4.3): utilisation, course/task split, daily spread, time-of-day split."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..health_facts import day_loads, load_spread_of, utilization
from ..rules import Level, r4, rules_for, threshold
from ..state import ScheduleState
from .common import (
    MAX_LISTED_DAYS,
    STUDY_POOL,
    action,
    candidate_scope,
    evaluate,
    find_free_read,
    guarded,
    number_actions,
    order_actions,
    reads_for_days,
    sort_issues,
)
from .frame import COURSE, TASK, Frame, check_choice, check_level, movable_days, resolve_days
from .result import AnalysisResult, Issue, NextAction
from .schema import metric_schema

TOOL = "analyze_load"
GRANULARITIES = ("day", "week", "time_of_day")
DETAILS = ("summary", "full")
PARTS: tuple[tuple[str, int, int | None], ...] = (  # name, first period, last period (1-based)
    ("morning", 1, 4),
    ("afternoon", 5, 8),
    ("evening", 9, None),
)
LIGHT_LOAD = 0.25  # below this day utilisation a day is "light" (a level label, not an issue)


def load_level(utilization: float, level: Level) -> str:
    if utilization >= threshold("load", "day_utilization", "critical", "utilization", level):
        return "overloaded"
    if utilization >= threshold("load", "day_utilization", "warning", "utilization", level):
        return "high"
    return "light" if utilization < LIGHT_LOAD else "normal"


def load_metrics(
    frame: Frame,
    days: np.ndarray,
    *,
    granularity: str = "day",
    detail: str = "summary",
    level: Level = "normal",
) -> dict[str, Any]:
    """The load metrics of the selected ``days`` (0-based), computed on the grid; the metrics
    the rules read (each day's ``utilization``, ``load_std_dev``, ``load_range``) are those of
    :mod:`..health_facts`."""
    state, spd = frame.state, frame.slots_per_day
    kind = frame.kind[days]
    course = np.count_nonzero(kind == COURSE, axis=1)
    task = np.count_nonzero(kind == TASK, axis=1)
    total = day_loads(kind)
    all_total = day_loads(frame.kind)
    occupied = kind != 0
    parts = {name: np.count_nonzero(occupied[:, lo - 1 : hi], axis=1) for name, lo, hi in PARTS}
    k = int(days.size)
    capacity = k * spd
    total_used, course_used, task_used = int(total.sum()), int(course.sum()), int(task.sum())
    pending = state.pending_tasks()
    peak, valley = int(np.argmax(total)), int(np.argmin(total))
    summary = {
        "days": k,
        "capacity": capacity,
        "total_used": total_used,
        "course_used": course_used,
        "task_used": task_used,
        "free_slots": capacity - total_used,
        "pending_count": len(pending),
        "pending_slots": sum(t.need() for t in pending),
        "utilization_rate": r4(total_used / capacity),
        "mean_daily_load": r4(total_used / k),
        "peak": {"day": int(days[peak]) + 1, "total_used": int(total[peak])},
        "valley": {"day": int(days[valley]) + 1, "total_used": int(total[valley])},
        **load_spread_of(total, spd),
    }
    weeks = frame.weeks[days]
    out: dict[str, Any] = {"summary": summary}
    day_list = days.tolist()
    prev = [int(all_total[d] - all_total[d - 1]) if d > 0 else None for d in day_list]
    rows = zip(
        day_list,
        weeks.tolist(),
        total.tolist(),
        course.tolist(),
        task.tolist(),
        parts["morning"].tolist(),
        parts["afternoon"].tolist(),
        parts["evening"].tolist(),
        prev,
        strict=True,
    )
    out["days"] = [
        {
            "day": d + 1,
            "week": w,
            "total_used": t,
            "course_used": c,
            "task_used": tk,
            "utilization": (u := utilization(t, spd)),
            "morning": m,
            "afternoon": a,
            "evening": e,
            "delta_from_prev": dp,
            "load_level": load_level(u, level),
        }
        for d, w, t, c, tk, m, a, e, dp in rows
    ]
    if granularity == "week" or detail == "full":
        week_ids, inverse = np.unique(weeks, return_inverse=True)
        n_days = np.bincount(inverse)
        sums = {
            name: np.bincount(inverse, weights=arr).astype(int)
            for name, arr in (("total_used", total), ("course_used", course), ("task_used", task))
        }
        out["weeks"] = [
            {
                "week": int(w),
                "days": int(n),
                "capacity": int(n) * spd,
                "total_used": int(sums["total_used"][i]),
                "course_used": int(sums["course_used"][i]),
                "task_used": int(sums["task_used"][i]),
                "utilization": r4(sums["total_used"][i] / (int(n) * spd)),
            }
            for i, (w, n) in enumerate(zip(week_ids.tolist(), n_days.tolist(), strict=True))
        ]
    if granularity == "time_of_day" or detail == "full":
        tod: dict[str, Any] = {}
        for name, lo, hi in PARTS:
            sub = kind[:, lo - 1 : hi]
            cap = k * sub.shape[1]
            used = int(parts[name].sum())
            tod[name] = {
                "used": used,
                "course_used": int(np.count_nonzero(sub == COURSE)),
                "task_used": int(np.count_nonzero(sub == TASK)),
                "capacity": cap,
                "utilization": r4(used / cap) if cap else 0.0,
            }
        out["time_of_day"] = tod
    return out


def load_issues(metrics: dict[str, Any], level: Level) -> list[Issue]:
    issues: list[Issue] = []
    day_rule, spread_rule = rules_for("load", level)
    for row in metrics["days"]:
        found = evaluate(day_rule, row, day=row["day"])
        if found:
            issues.append(found)
    found = evaluate(spread_rule, metrics["summary"])
    if found:
        issues.append(found)
    return sort_issues(issues)


def load_actions(
    state: ScheduleState, metrics: dict[str, Any], issues: list[Issue], level: Level
) -> list[NextAction]:
    """Move study tasks off heavy days onto light ones; never a course (p1 §4.3)."""
    if not any(i.severity != "info" for i in issues):
        return []
    movable = movable_days(state)
    days = metrics["days"]
    by_load = sorted(days, key=lambda r: (r["total_used"], r["day"]))
    actions: list[NextAction] = []
    warn = threshold("load", "day_utilization", "warning", "utilization", level)
    hot = [
        i
        for i in issues
        if i.rule == "day_utilization" and i.severity != "info" and i.day in movable
    ]
    if hot:
        hot_days = [i.day for i in hot if i.day is not None][:MAX_LISTED_DAYS]
        light = [r["day"] for r in by_load if r["utilization"] < warn and r["day"] not in hot_days]
        actions.append(
            action(
                "rebalance_load",
                "peak_days",
                candidate_scope=candidate_scope([r["day"] for r in days], task_pool="placed"),
                target_filter={**STUDY_POOL, "days": hot_days, "status": ["suggested", "existing"]},
                slot_filter={"avoid_days": hot_days, "prefer_days": light[:MAX_LISTED_DAYS]},
                required_reads=reads_for_days(hot_days)
                + find_free_read(
                    b.length for d in hot_days for t in movable[d] for b in t.slots if b.day == d
                ),
                success_criteria={
                    "recheck_tool": TOOL,
                    "conditions": [
                        {"metric": "days[].utilization", "day": d, "operator": "<", "value": warn}
                        for d in hot_days
                    ],
                },
                candidate_write_tools=["move", "batch_move", "spread_even"],
                issue_ids=[i.issue_id for i in hot],
            )
        )
    spread = [i for i in issues if i.rule == "load_imbalance" and i.severity != "info"]
    if spread:
        mean = metrics["summary"]["mean_daily_load"]
        heavy = [
            r["day"] for r in reversed(by_load) if r["total_used"] > mean and r["day"] in movable
        ][:3]
        light = [r["day"] for r in by_load if r["total_used"] < mean][:3]
        if heavy:
            std_warn = threshold("load", "load_imbalance", "warning", "load_std_dev", level)
            actions.append(
                action(
                    "rebalance_load",
                    "spread",
                    candidate_scope=candidate_scope([r["day"] for r in days], task_pool="mixed"),
                    target_filter={
                        **STUDY_POOL,
                        "days": heavy,
                        "status": ["suggested", "existing"],
                    },
                    slot_filter={"avoid_days": heavy, "prefer_days": light},
                    required_reads=reads_for_days([*heavy, *light]),
                    success_criteria={
                        "recheck_tool": TOOL,
                        "conditions": [
                            {"metric": "summary.load_std_dev", "operator": "<", "value": std_warn}
                        ],
                    },
                    candidate_write_tools=["move", "batch_move", "spread_even"],
                    issue_ids=[i.issue_id for i in spread],
                )
            )
    return number_actions(order_actions(actions, issues))


def run_load(
    frame: Frame, days: np.ndarray, granularity: str, detail: str, level: Level
) -> AnalysisResult:
    metrics = load_metrics(frame, days, granularity=granularity, detail=detail, level=level)
    issues = load_issues(metrics, level)
    return AnalysisResult(
        tool=TOOL,
        success=True,
        metric_schema=metric_schema(TOOL),
        metrics=metrics,
        issues=issues,
        next_actions=load_actions(frame.state, metrics, issues, level),
    )


@guarded(TOOL)
def analyze_load(
    state: ScheduleState,
    *,
    scope: str | None = None,
    week_from: int | None = None,
    week_to: int | None = None,
    day_from: int | None = None,
    day_to: int | None = None,
    granularity: str = "day",
    detail: str = "summary",
    threshold: str = "normal",
) -> AnalysisResult:
    """Load of the window or a part of it (p1 §4.3).

    Parameters
    ----------
    scope
        ``full``, ``week`` or ``day_range``; ``None`` infers it from the bounds given.
    week_from, week_to, day_from, day_to
        Bounds for ``week`` / ``day_range`` (1-based days; weeks as in ``day_mapping``).
    granularity
        ``day`` (default), ``week`` (adds ``weeks``) or ``time_of_day`` (adds ``time_of_day``).
    detail
        ``summary`` or ``full`` (adds both ``weeks`` and ``time_of_day``).
    threshold
        ``strict``, ``normal`` or ``relaxed``.
    """
    days = resolve_days(
        state, scope=scope, week_from=week_from, week_to=week_to, day_from=day_from, day_to=day_to
    )
    return run_load(
        Frame.build(state),
        days,
        check_choice("granularity", granularity, GRANULARITIES),
        check_choice("detail", detail, DETAILS),
        check_level(threshold),
    )
