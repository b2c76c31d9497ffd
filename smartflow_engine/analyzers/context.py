"""``analyze_context`` (p1 §4.5): subject switches, blocks and fragmentation within each day.

The sequence of a day is its study layer (see :mod:`.frame`): study-task categories by period,
guests included; course and free periods hold no subject and break the sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..concepts import hard_subjects, subject_of
from ..health_facts import (
    fragmentation,
    heavy_mask,
    same_subject_runs,
    study_periods,
    switch_mask,
)
from ..rules import Level, r4, rules_for, threshold
from ..state import ScheduleState, Task
from .common import (
    STUDY_POOL,
    action,
    candidate_scope,
    evaluate,
    guarded,
    number_actions,
    order_actions,
    reads_for_days,
    sort_issues,
)
from .frame import Frame, check_choice, check_level, movable_days, resolve_days
from .result import AnalysisResult, Issue, NextAction, ParamError
from .schema import metric_schema

TOOL = "analyze_context"
DETAILS = ("summary", "day_detail")
MAX_HARD = 50
ACTION_DAYS = 3


def context_metrics(
    frame: Frame, days: np.ndarray, *, hard_categories: Sequence[str] = (), detail: str = "summary"
) -> dict[str, Any]:
    """Switch metrics of the selected ``days``; ``{}`` when no study task is placed there. The
    metrics the rules read (each day's ``switch_count``, ``fragmentation``, ``heavy_adjacent``)
    are those of :mod:`..health_facts`."""
    study = frame.study[days]
    occupied = study_periods(study)
    active_days = int(np.count_nonzero(occupied))
    if active_days == 0:
        return {}
    switch = switch_mask(study)
    switches = np.count_nonzero(switch, axis=1)
    hard = np.zeros(len(frame.subjects) + 1, dtype=bool)
    hard[[i + 1 for i, name in enumerate(frame.subjects) if name in set(hard_categories)]] = True
    heavy = heavy_mask(study, switch, hard)
    heavy_count = np.count_nonzero(heavy, axis=1)
    run_row, run_start, run_len, run_code = same_subject_runs(study)
    blocks = np.bincount(run_row, minlength=days.size)
    names = ["", *frame.subjects]
    best = int(np.argmax(run_len))
    study_slots = int(occupied.sum())
    total_switches = int(switches.sum())
    overall = {
        "days": int(days.size),
        "active_days": active_days,
        "study_slots": study_slots,
        "total_switches": total_switches,
        "avg_daily_switches": r4(total_switches / active_days),
        "max_daily_switches": int(switches.max()),
        "block_count": int(run_len.size),
        "avg_block_length": r4(study_slots / run_len.size),
        "longest_block": {
            "day": int(days[run_row[best]]) + 1,
            "category": names[run_code[best]],
            "slot_start": int(run_start[best]) + 1,
            "slot_end": int(run_start[best] + run_len[best]),
            "length": int(run_len[best]),
        },
        "heavy_adjacent": int(heavy_count.sum()),
    }
    rows: list[dict[str, Any]] = []
    occupied_list, switch_list = occupied.tolist(), switches.tolist()
    for i in np.flatnonzero(occupied).tolist():
        row: dict[str, Any] = {
            "day": int(days[i]) + 1,
            "occupied_slots": occupied_list[i],
            "switch_count": switch_list[i],
            "fragmentation": fragmentation(switch_list[i], occupied_list[i]),
            "block_count": int(blocks[i]),
            "heavy_adjacent": int(heavy_count[i]),
        }
        if detail == "day_detail":
            codes = study[i].tolist()
            row["sequence"] = [names[c] if c else None for c in codes]
            mine = run_row == i
            row["blocks"] = [
                {"category": names[c], "slot_start": s + 1, "slot_end": s + n}
                for s, n, c in zip(
                    run_start[mine].tolist(),
                    run_len[mine].tolist(),
                    run_code[mine].tolist(),
                    strict=True,
                )
            ]
            row["adjacent_pairs"] = [
                {
                    "slot": s + 1,
                    "categories": [names[codes[s]], names[codes[s + 1]]],
                    "heavy": bool(heavy[i, s]),
                }
                for s in np.flatnonzero(switch[i]).tolist()
            ]
        rows.append(row)
    return {"overall": overall, "days": rows}


def context_issues(metrics: dict[str, Any], level: Level) -> list[Issue]:
    issues: list[Issue] = []
    rules = rules_for("context", level)
    for row in metrics.get("days", []):
        for rule in rules:
            found = evaluate(rule, row, day=row["day"])
            if found:
                issues.append(found)
    return sort_issues(issues)


def context_actions(
    state: ScheduleState,
    metrics: dict[str, Any],
    issues: list[Issue],
    level: Level,
    hard_categories: Sequence[str] = (),
) -> list[NextAction]:
    """Group same-subject study blocks with move/swap; never ``min_context_switch`` (p1 §4.5).
    Part heavy pairs (two hard subjects back to back, issue 42) by moving a hard item."""
    if not any(i.severity != "info" for i in issues):
        return []
    movable = movable_days(state)
    out = [
        act
        for act in (
            _switch_action(movable, issues, level),
            _heavy_action(state, movable, issues, level, hard_categories),
        )
        if act is not None
    ]
    return number_actions(order_actions(out, issues))


def _switch_action(
    movable: dict[int, list[Task]], issues: list[Issue], level: Level
) -> NextAction | None:
    """Regroup the study blocks of the days with the worst switching."""
    worst = [
        i
        for i in issues
        if i.rule == "context_switch" and i.severity != "info" and i.day in movable
    ]
    if not worst:
        return None
    worst = worst[:ACTION_DAYS]
    days = [i.day for i in worst if i.day is not None]
    categories = {t.category for d in days for t in movable[d]}
    conditions: list[dict[str, Any]] = []
    for d in days:
        conditions.append(
            {
                "metric": "days[].switch_count",
                "day": d,
                "operator": "<",
                "value": int(
                    threshold("context", "context_switch", "warning", "switch_count", level)
                ),
            }
        )
        conditions.append(
            {
                "metric": "days[].fragmentation",
                "day": d,
                "operator": "<",
                "value": threshold("context", "context_switch", "warning", "fragmentation", level),
            }
        )
    return action(
        "reduce_switch",
        "days_" + "_".join(str(d) for d in days),
        candidate_scope=candidate_scope(days, categories=categories, task_pool="placed"),
        target_filter={**STUDY_POOL, "days": days, "status": ["suggested", "existing"]},
        slot_filter={"days": days, "prefer": "adjacent_to_same_category"},
        required_reads=reads_for_days(days),
        success_criteria={"recheck_tool": TOOL, "conditions": conditions},
        candidate_write_tools=["move", "swap", "batch_move"],
        issue_ids=[i.issue_id for i in worst],
    )


def _heavy_action(
    state: ScheduleState,
    movable: dict[int, list[Task]],
    issues: list[Issue],
    level: Level,
    hard_categories: Sequence[str],
) -> NextAction | None:
    """Move a hard item of the days with heavy pairs away from the other hard subject (the same
    day first, any day of the window)."""
    hard = set(hard_categories)
    worst = [
        i
        for i in issues
        if i.rule == "heavy_adjacent"
        and i.severity != "info"
        and any(subject_of(t) in hard for t in movable.get(i.day or 0, ()))
    ][:ACTION_DAYS]
    if not worst:
        return None
    days = [i.day for i in worst if i.day is not None]
    categories = sorted({c for d in days for t in movable[d] if (c := subject_of(t)) in hard})
    limit = int(threshold("context", "heavy_adjacent", "warning", "heavy_adjacent", level))
    return action(
        "separate_hard",
        "days_" + "_".join(str(d) for d in days),
        candidate_scope=candidate_scope(days, categories=categories, task_pool="placed"),
        target_filter={
            **STUDY_POOL,
            "days": days,
            "categories": categories,
            "status": ["suggested", "existing"],
        },
        slot_filter={"prefer_days": days, "day_range": [1, state.num_days]},
        required_reads=reads_for_days(days),
        success_criteria={
            "recheck_tool": TOOL,
            "conditions": [
                {"metric": "days[].heavy_adjacent", "day": d, "operator": "<", "value": limit}
                for d in days
            ],
        },
        candidate_write_tools=["move", "swap", "batch_move"],
        issue_ids=[i.issue_id for i in worst],
    )


def run_context(
    frame: Frame, days: np.ndarray, hard_categories: Sequence[str], detail: str, level: Level
) -> AnalysisResult:
    metrics = context_metrics(frame, days, hard_categories=hard_categories, detail=detail)
    issues = context_issues(metrics, level)
    actions = order_actions(
        context_actions(frame.state, metrics, issues, level, hard_categories), issues
    )
    return AnalysisResult(
        tool=TOOL,
        success=True,
        metric_schema=metric_schema(TOOL),
        metrics=metrics,
        issues=issues,
        next_actions=actions,
    )


def check_categories(name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if (
        not isinstance(value, list | tuple)
        or len(value) > MAX_HARD
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise ParamError(
            "invalid_args", f"参数 {name} 应为最多 {MAX_HARD} 个非空字符串的数组，收到 {value!r}。"
        )
    return tuple(value)


@guarded(TOOL)
def analyze_context(
    state: ScheduleState,
    *,
    day_from: int | None = None,
    day_to: int | None = None,
    detail: str = "summary",
    hard_categories: Sequence[str] | None = None,
    threshold: str = "normal",
) -> AnalysisResult:
    """Context switches of the placed study tasks, day by day (p1 §4.5).

    Parameters
    ----------
    day_from, day_to
        Optional bounds (1-based); the window by default.
    detail
        ``summary`` or ``day_detail`` (adds each day's sequence, blocks and switching pairs).
    hard_categories
        Subjects that are hard besides those of the task classes hard by their profile
        (difficulty or cognitive intensity ``high``, :func:`..concepts.hard_subjects`); two
        adjacent blocks of different hard subjects count as ``heavy_adjacent``.
    threshold
        ``strict``, ``normal`` or ``relaxed``.
    """
    days = resolve_days(state, day_from=day_from, day_to=day_to)
    return run_context(
        Frame.build(state),
        days,
        tuple(sorted(hard_subjects(state, check_categories("hard_categories", hard_categories)))),
        check_choice("detail", detail, DETAILS),
        check_level(threshold),
    )
