"""``analyze_tolerance`` (p1 §4.6): free time that can absorb the unexpected.

A free period is one no non-guest task holds. Free periods in a run of at least
``min_usable_size`` are *usable*; the rest are *fragmented*. A day has a buffer when its usable
periods reach ``min_daily_buffer``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..health_facts import (
    MIN_BUFFER,
    MIN_USABLE,
    buffered,
    fragmentation_rate,
    free_runs,
    usable_periods,
)
from ..rules import Level, rules_for, threshold
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
from .frame import (
    COURSE,
    FREE,
    Frame,
    check_choice,
    check_int,
    check_level,
    movable_days,
    resolve_days,
)
from .result import AnalysisResult, Issue, NextAction, ParamError
from .schema import metric_schema

TOOL = "analyze_tolerance"
DETAILS = ("summary", "full")


def _side(kind_row: np.ndarray, idx: int) -> str:
    if idx < 0 or idx >= kind_row.size:
        return "edge"
    return "course" if kind_row[idx] == COURSE else "task"


def tolerance_metrics(
    frame: Frame,
    days: np.ndarray,
    *,
    min_usable_size: int = MIN_USABLE,
    min_daily_buffer: int = MIN_BUFFER,
    detail: str = "summary",
) -> dict[str, Any]:
    """The tolerance metrics of the selected ``days``; the metrics the rules read
    (``days_without_buffer``, ``fragmentation_rate``) and the free runs, usable periods and
    buffers under them are those of :mod:`..health_facts`."""
    kind = frame.kind[days]
    free = kind == FREE
    k = int(days.size)
    row, start, length = free_runs(free)
    free_day = np.count_nonzero(free, axis=1)
    usable_day = usable_periods(row, length, k, min_usable_size)
    largest_day = np.zeros(k, dtype=np.int64)
    np.maximum.at(largest_day, row, length)
    frag_day = free_day - usable_day
    has_buffer = buffered(usable_day, min_daily_buffer)
    total_free, usable = int(free_day.sum()), int(usable_day.sum())
    overall = {
        "days": k,
        "total_free": total_free,
        "usable_slots": usable,
        "fragmented_slots": total_free - usable,
        "fragmentation_rate": fragmentation_rate(total_free, usable),
        "days_without_buffer": int(k - np.count_nonzero(has_buffer)),
        "days_with_buffer": int(np.count_nonzero(has_buffer)),
        "largest_free_block": int(largest_day.max()),
        "min_usable_size": min_usable_size,
        "min_daily_buffer": min_daily_buffer,
    }
    rows: list[dict[str, Any]] = [
        {
            "day": d + 1,
            "free_slots": f,
            "usable_slots": u,
            "fragmented_slots": fr,
            "largest_free_block": lg,
            "buffer_sufficient": b,
        }
        for d, f, u, fr, lg, b in zip(
            days.tolist(),
            free_day.tolist(),
            usable_day.tolist(),
            frag_day.tolist(),
            largest_day.tolist(),
            has_buffer.tolist(),
            strict=True,
        )
    ]
    if detail == "full":
        for entry in rows:
            entry["free_blocks"] = []
        for r, s, n in zip(row.tolist(), start.tolist(), length.tolist(), strict=True):
            rows[r]["free_blocks"].append(
                {
                    "slot_start": s + 1,
                    "slot_end": s + n,
                    "length": n,
                    "usable": n >= min_usable_size,
                    "before": _side(kind[r], s - 1),
                    "after": _side(kind[r], s + n),
                }
            )
    return {"overall": overall, "days": rows}


def tolerance_issues(metrics: dict[str, Any], level: Level) -> list[Issue]:
    issues = [evaluate(rule, metrics["overall"]) for rule in rules_for("tolerance", level)]
    return sort_issues(i for i in issues if i is not None)


def tolerance_actions(
    state: ScheduleState, metrics: dict[str, Any], issues: list[Issue], level: Level
) -> list[NextAction]:
    """Move study tasks off days without buffer; merge one-period islands (p1 §4.6)."""
    if not any(i.severity != "info" for i in issues):
        return []
    movable = movable_days(state)
    rows = metrics["days"]
    overall = metrics["overall"]
    buffer = overall["min_daily_buffer"]
    actions: list[NextAction] = []
    for issue in issues:
        if issue.severity == "info":
            continue
        if issue.rule == "buffer":
            short = [r["day"] for r in rows if not r["buffer_sufficient"] and r["day"] in movable]
            roomy = sorted(
                (r for r in rows if r["usable_slots"] >= buffer + 2),
                key=lambda r: (-r["usable_slots"], r["day"]),
            )
            if not short:
                continue
            short = short[:MAX_LISTED_DAYS]
            actions.append(
                action(
                    "increase_tolerance",
                    "buffer",
                    candidate_scope=candidate_scope([r["day"] for r in rows], task_pool="placed"),
                    target_filter={
                        **STUDY_POOL,
                        "days": short,
                        "status": ["suggested", "existing"],
                    },
                    slot_filter={
                        "avoid_days": short,
                        "prefer_days": [r["day"] for r in roomy][:MAX_LISTED_DAYS],
                        "keep_free_run_min": overall["min_usable_size"],
                    },
                    required_reads=reads_for_days(short)
                    + find_free_read(
                        b.length for d in short for t in movable[d] for b in t.slots if b.day == d
                    ),
                    success_criteria={
                        "recheck_tool": TOOL,
                        "conditions": [
                            {
                                "metric": "overall.days_without_buffer",
                                "operator": "<",
                                "value": int(
                                    threshold(
                                        "tolerance",
                                        "buffer",
                                        "warning",
                                        "days_without_buffer",
                                        level,
                                    )
                                ),
                            }
                        ],
                    },
                    candidate_write_tools=["move", "batch_move"],
                    issue_ids=[issue.issue_id],
                )
            )
        elif issue.rule == "free_fragmentation":
            broken = sorted(
                (r for r in rows if r["fragmented_slots"] > 0 and r["day"] in movable),
                key=lambda r: (-r["fragmented_slots"], r["day"]),
            )
            if not broken:
                continue
            days = [r["day"] for r in broken][:MAX_LISTED_DAYS]
            actions.append(
                action(
                    "merge_free_fragments",
                    "days",
                    candidate_scope=candidate_scope(days, task_pool="placed"),
                    target_filter={**STUDY_POOL, "days": days, "status": ["suggested", "existing"]},
                    slot_filter={
                        "days": days,
                        "prefer": "close_single_period_gaps",
                        "keep_free_run_min": overall["min_usable_size"],
                    },
                    required_reads=reads_for_days(days),
                    success_criteria={
                        "recheck_tool": TOOL,
                        "conditions": [
                            {
                                "metric": "overall.fragmentation_rate",
                                "operator": "<",
                                "value": threshold(
                                    "tolerance",
                                    "free_fragmentation",
                                    "warning",
                                    "fragmentation_rate",
                                    level,
                                ),
                            }
                        ],
                    },
                    candidate_write_tools=["move", "swap", "batch_move"],
                    issue_ids=[issue.issue_id],
                )
            )
    return number_actions(order_actions(actions, issues))


def run_tolerance(
    frame: Frame,
    days: np.ndarray,
    min_usable_size: int,
    min_daily_buffer: int,
    detail: str,
    level: Level,
) -> AnalysisResult:
    metrics = tolerance_metrics(
        frame,
        days,
        min_usable_size=min_usable_size,
        min_daily_buffer=min_daily_buffer,
        detail=detail,
    )
    issues = tolerance_issues(metrics, level)
    return AnalysisResult(
        tool=TOOL,
        success=True,
        metric_schema=metric_schema(TOOL),
        metrics=metrics,
        issues=issues,
        next_actions=tolerance_actions(frame.state, metrics, issues, level),
    )


def check_sizes(
    state: ScheduleState, min_usable_size: Any, min_daily_buffer: Any
) -> tuple[int, int]:
    spd = state.slots_per_day
    size = check_int("min_usable_size", min_usable_size, optional=False)
    buffer = check_int("min_daily_buffer", min_daily_buffer, optional=False)
    assert size is not None and buffer is not None
    if size <= 0:
        raise ParamError("invalid_args", f"参数 min_usable_size 应 ≥ 1，收到 {size}。")
    if buffer < 0:
        raise ParamError("invalid_args", f"参数 min_daily_buffer 应 ≥ 0，收到 {buffer}。")
    if size > spd:
        raise ParamError("out_of_range", f"参数 min_usable_size={size} 超过每天时段数 {spd}。")
    if buffer > spd:
        raise ParamError("out_of_range", f"参数 min_daily_buffer={buffer} 超过每天时段数 {spd}。")
    return size, buffer


@guarded(TOOL)
def analyze_tolerance(
    state: ScheduleState,
    *,
    scope: str | None = None,
    week_from: int | None = None,
    week_to: int | None = None,
    day_from: int | None = None,
    day_to: int | None = None,
    min_usable_size: int = MIN_USABLE,
    min_daily_buffer: int = MIN_BUFFER,
    detail: str = "summary",
    threshold: str = "normal",
) -> AnalysisResult:
    """Free-time tolerance of the window or a part of it (p1 §4.6).

    Parameters
    ----------
    scope, week_from, week_to, day_from, day_to
        As in :func:`analyze_load`.
    min_usable_size
        Shortest free run that counts as usable (default 2, 1..slots_per_day).
    min_daily_buffer
        Usable periods a day needs to have a buffer (default 2, 0..slots_per_day).
    detail
        ``summary`` or ``full`` (adds each day's free blocks and their neighbours).
    threshold
        ``strict``, ``normal`` or ``relaxed``.
    """
    days = resolve_days(
        state, scope=scope, week_from=week_from, week_to=week_to, day_from=day_from, day_to=day_to
    )
    size, buffer = check_sizes(state, min_usable_size, min_daily_buffer)
    return run_tolerance(
        Frame.build(state),
        days,
        size,
        buffer,
        check_choice("detail", detail, DETAILS),
        check_level(threshold),
    )
