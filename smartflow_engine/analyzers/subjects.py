"""``analyze_subjects`` (p1 §4.4): rhythm, concentration and budget progress of each subject."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..concepts import UNCATEGORISED, subject_of
from ..health_facts import (
    SubjectDays,
    gaps_of,
    largest_gap,
    largest_gap_span,
    subject_day_counts,
    subject_metrics,
)
from ..rules import Level, r4, rules_for, subject_class, threshold
from ..state import ScheduleState, TaskClass
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
    sort_issues,
)
from .frame import (
    Frame,
    check_bool,
    check_choice,
    check_level,
    movable_study_tasks,
)
from .result import AnalysisResult, Issue, NextAction, ParamError
from .schema import metric_schema

TOOL = "analyze_subjects"
DETAILS = ("summary", "full")
MAX_ACTIONS = 5
MAX_GAP_DAYS = 10  # gap days a fill_subject_gap action prefers, from the middle out


@dataclass
class SubjectTasks:
    """Task-level facts of one subject (from the task list, not the grid)."""

    task_count: int = 0
    placed: int = 0
    pending: int = 0
    pending_slots: int = 0
    blocks: int = 0
    class_ids: list[int] = field(default_factory=list)

    def copy(self) -> SubjectTasks:
        # the constructor, not dataclasses.replace: a search copies one per probe
        return SubjectTasks(
            self.task_count,
            self.placed,
            self.pending,
            self.pending_slots,
            self.blocks,
            list(self.class_ids),
        )


def subject_tasks(state: ScheduleState) -> dict[str, SubjectTasks]:
    out: dict[str, SubjectTasks] = {}
    for task in state.tasks:
        if task.source == "event":  # is_course, inlined: this loop is on the hot path
            continue
        name = task.category or UNCATEGORISED
        info = out.get(name)
        if info is None:
            info = out[name] = SubjectTasks()
        info.task_count += 1
        if task.status == "pending":
            info.pending += 1
            info.pending_slots += task.need()
        else:
            info.placed += 1
            info.blocks += len(task.slots)
        if task.category_id is not None and task.category_id not in info.class_ids:
            info.class_ids.append(task.category_id)
    return out


def task_class_for(state: ScheduleState, name: str, info: SubjectTasks) -> TaskClass | None:
    """The subject's task class: by its tasks' ``category_id``, else by name."""
    return subject_class(state, name, info.class_ids)


def gap_stats(gaps: list[int]) -> dict[str, Any]:
    """``gaps`` (:func:`..health_facts.gaps_of`) with their avg/min/sample-std (``None`` without
    gaps; std 0 with one) and ``max_gap``, the rule's metric (:func:`..health_facts.largest_gap`).

    Plain Python: a subject's gap list is a handful of numbers, where numpy's per-call cost
    would dominate.
    """
    if not gaps:
        return {"gaps": [], "avg_gap": None, "max_gap": None, "min_gap": None, "std_gap": None}
    n = len(gaps)
    mean = sum(gaps) / n
    std = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (n - 1)) if n > 1 else 0.0
    return {
        "gaps": gaps,
        "avg_gap": r4(mean),
        "max_gap": largest_gap(gaps),
        "min_gap": min(gaps),
        "std_gap": r4(std),
    }


def budget_fields(
    tc: TaskClass | None,
    info: SubjectTasks,
    used: int,
    include_pending: bool,
    rule_metrics: dict[str, Any],
) -> dict[str, Any]:
    """The budget fields of a subject with task class ``tc``; ``budget_progress`` and
    ``days_to_end`` are the rule's metrics (``rule_metrics``: :func:`..health_facts.subject_metrics`)."""
    total = tc.total_slots if tc is not None else None
    out: dict[str, Any] = {
        "task_class_id": tc.id if tc is not None else None,
        "total_slots": total,
        "budget_progress": rule_metrics["budget_progress"],
    }
    if include_pending:
        out["planned_progress"] = r4((used + info.pending_slots) / total) if total else None
    out["end_day"] = tc.end_day if tc is not None else None
    out["days_to_end"] = rule_metrics["days_to_end"]
    return out


def subjects_metrics(
    frame: Frame,
    *,
    category: str | None = None,
    include_pending: bool = True,
    detail: str = "summary",
    infos: dict[str, SubjectTasks] | None = None,
) -> dict[str, Any]:
    """Per-subject metrics; ``{}`` when no subject matches (p1 §4.4: not a failure). The
    metrics the rules read (``max_gap``, ``concentration``, ``budget_progress``,
    ``days_to_end``) are :func:`..health_facts.subject_metrics` of the subject's facts."""
    state = frame.state
    num_days = frame.num_days
    counts = subject_day_counts(frame.study, len(frame.subjects) + 1)
    present_of = [(np.flatnonzero(col) + 1).tolist() for col in counts.T]  # per code, 1-based
    by_code = counts.T.tolist()
    infos = subject_tasks(state) if infos is None else infos
    rows: list[dict[str, Any]] = []
    names = list(frame.subjects) + [n for n in infos if n not in frame.subjects]
    for name in names:
        if category is not None and name != category:
            continue
        info = infos[name]
        if not include_pending and info.placed == 0:
            continue
        code = frame.subjects.index(name) + 1 if name in frame.subjects else None
        present = present_of[code] if code is not None else []
        daily = by_code[code] if code is not None else [0] * num_days
        on_days = [daily[d - 1] for d in present]
        facts = SubjectDays.of(dict(zip(present, on_days, strict=True)))
        used = facts.used
        tc = task_class_for(state, name, info)
        rule_metrics = subject_metrics(
            facts.max_gap,
            used,
            facts.squares,
            info.blocks,
            num_days,
            tc.total_slots if tc is not None else None,
            tc.end_day if tc is not None else None,
        )
        row: dict[str, Any] = {
            "category": name,
            "task_count": info.task_count if include_pending else info.placed,
            "placed": info.placed,
        }
        if include_pending:
            row["pending"] = info.pending
        row["used_slots"] = used
        if include_pending:
            row["pending_slots"] = info.pending_slots
        row["present_days"] = present
        row.update(gap_stats(gaps_of(present)))
        row["concentration"] = rule_metrics["concentration"]
        row.update(budget_fields(tc, info, used, include_pending, rule_metrics))
        if detail == "full":
            row["daily_slots"] = [
                {"day": d, "slots": v} for d, v in zip(present, on_days, strict=True)
            ]
        rows.append(row)
    if not rows:
        return {}
    summary: dict[str, Any] = {
        "subject_count": len(rows),
        "task_count": sum(r["task_count"] for r in rows),
        "placed": sum(r["placed"] for r in rows),
        "used_slots": sum(r["used_slots"] for r in rows),
    }
    if include_pending:
        summary["pending"] = sum(r["pending"] for r in rows)
    return {"summary": summary, "subjects": rows}


def subjects_issues(metrics: dict[str, Any], level: Level) -> list[Issue]:
    issues: list[Issue] = []
    rules = rules_for("subjects", level)
    for row in metrics.get("subjects", []):
        for rule in rules:
            found = evaluate(rule, row, category=row["category"])
            if found:
                issues.append(found)
    return sort_issues(issues)


def subjects_actions(
    state: ScheduleState,
    metrics: dict[str, Any],
    issues: list[Issue],
    level: Level,
    infos: dict[str, SubjectTasks] | None = None,
) -> list[NextAction]:
    if not any(i.severity != "info" for i in issues):
        return []
    rows = {r["category"]: r for r in metrics.get("subjects", [])}
    infos = subject_tasks(state) if infos is None else infos
    movable: dict[str, dict[int, int]] = {}  # subject -> day -> movable periods there
    needs_placed: dict[str, list[int]] = {}
    for task in movable_study_tasks(state):
        name = subject_of(task)
        if name is None:  # not reached: a movable task is a study task
            continue
        per_day = movable.setdefault(name, {})
        needs_placed.setdefault(name, []).append(task.need())
        for b in task.slots:
            per_day[b.day] = per_day.get(b.day, 0) + b.length
    needs: dict[str, list[int]] = {}  # subject -> periods its pending tasks need
    for task in state.pending_tasks():
        name = subject_of(task)
        if name is not None:
            needs.setdefault(name, []).append(task.need())
    window = range(1, state.num_days + 1)
    actions: list[NextAction] = []
    for issue in issues:
        if issue.severity == "info" or issue.category is None:
            continue
        cat, row = issue.category, rows[issue.category]
        pending = infos[cat].pending > 0
        per_day = movable.get(cat, {})
        moved_days = sorted(per_day)
        if issue.rule == "subject_concentration" and moved_days:
            dense = sorted(moved_days, key=lambda d: (-per_day[d], d))[:MAX_LISTED_DAYS]
            absent = [d for d in window if d not in row["present_days"]]
            actions.append(
                action(
                    "spread_subject",
                    cat,
                    candidate_scope=candidate_scope(window, categories=[cat], task_pool="placed"),
                    target_filter={
                        **STUDY_POOL,
                        "categories": [cat],
                        "days": dense,
                        "status": ["suggested", "existing"],
                    },
                    slot_filter={"avoid_days": dense, "prefer_days": absent[:MAX_LISTED_DAYS]},
                    required_reads=[{"tool": "list_tasks", "args": {"category": cat}}],
                    success_criteria={
                        "recheck_tool": TOOL,
                        "conditions": [
                            {
                                "metric": "subjects[].concentration",
                                "category": cat,
                                "operator": "<",
                                "value": threshold(
                                    "subjects",
                                    "subject_concentration",
                                    "warning",
                                    "concentration",
                                    level,
                                ),
                            }
                        ],
                    },
                    candidate_write_tools=["spread_even", "move", "batch_move"],
                    issue_ids=[issue.issue_id],
                )
            )
        elif issue.rule == "subject_gap" and (pending or moved_days):
            gap = largest_gap_span(row["present_days"])
            if gap is None:
                continue
            lo, hi = gap[0] + 1, gap[1] - 1
            mid = (lo + hi) // 2
            inside = sorted(range(lo, hi + 1), key=lambda d: (abs(d - mid), d))
            # The gap closes by a task moving into it (its middle first) or by the lone task at
            # its edge joining the others (e.g. one left outside its class window), so the
            # scope is the window and the gap's days are only preferred.
            actions.append(
                action(
                    "fill_subject_gap",
                    cat,
                    candidate_scope=candidate_scope(
                        window, categories=[cat], task_pool="pending" if pending else "placed"
                    ),
                    target_filter={
                        **STUDY_POOL,
                        "categories": [cat],
                        "status": ["pending"] if pending else ["suggested", "existing"],
                    },
                    slot_filter={"gap_days": [lo, hi], "prefer_days": inside[:MAX_GAP_DAYS]},
                    required_reads=[
                        {"tool": "list_tasks", "args": {"category": cat}},
                        *find_free_read(needs.get(cat) or needs_placed.get(cat, [])),
                    ],
                    success_criteria={
                        "recheck_tool": TOOL,
                        "conditions": [
                            {
                                "metric": "subjects[].max_gap",
                                "category": cat,
                                "operator": "<",
                                "value": int(
                                    threshold(
                                        "subjects", "subject_gap", "warning", "max_gap", level
                                    )
                                ),
                            }
                        ],
                    },
                    candidate_write_tools=["place"] if pending else ["move"],
                    issue_ids=[issue.issue_id],
                )
            )
        elif issue.rule == "budget_lag" and pending:
            end = row["end_day"] or state.num_days
            actions.append(
                action(
                    "boost_subject_budget",
                    cat,
                    candidate_scope=candidate_scope(
                        range(1, end + 1), categories=[cat], task_pool="pending"
                    ),
                    target_filter={**STUDY_POOL, "categories": [cat], "status": ["pending"]},
                    slot_filter={"day_range": [1, end]},
                    required_reads=[
                        {"tool": "list_tasks", "args": {"category": cat, "status": "pending"}},
                        *find_free_read(needs.get(cat, [])),
                    ],
                    success_criteria={
                        "recheck_tool": TOOL,
                        "conditions": [
                            {
                                "metric": "subjects[].budget_progress",
                                "category": cat,
                                "operator": ">=",
                                "value": threshold(
                                    "subjects", "budget_lag", "critical", "budget_progress", level
                                ),
                            }
                        ],
                    },
                    candidate_write_tools=["place"],
                    issue_ids=[issue.issue_id],
                )
            )
    return number_actions(order_actions(actions, issues), MAX_ACTIONS)


def run_subjects(
    frame: Frame, category: str | None, include_pending: bool, detail: str, level: Level
) -> AnalysisResult:
    infos = subject_tasks(frame.state)
    metrics = subjects_metrics(
        frame, category=category, include_pending=include_pending, detail=detail, infos=infos
    )
    issues = subjects_issues(metrics, level)
    return AnalysisResult(
        tool=TOOL,
        success=True,
        metric_schema=metric_schema(TOOL),
        metrics=metrics,
        issues=issues,
        next_actions=subjects_actions(frame.state, metrics, issues, level, infos),
    )


@guarded(TOOL)
def analyze_subjects(
    state: ScheduleState,
    *,
    category: str | None = None,
    include_pending: bool = True,
    detail: str = "summary",
    threshold: str = "normal",
) -> AnalysisResult:
    """Rhythm, concentration and budget of each subject (p1 §4.4).

    Parameters
    ----------
    category
        One subject (a study task category); ``None`` for all. An unknown one gives an empty result.
    include_pending
        Count pending tasks (``pending``, ``pending_slots``, ``planned_progress``) and list subjects
        that have only pending tasks.
    detail
        ``summary`` or ``full`` (adds ``daily_slots``).
    threshold
        ``strict``, ``normal`` or ``relaxed``.
    """
    if category is not None and (not isinstance(category, str) or not category.strip()):
        raise ParamError("invalid_args", f"参数 category 应为非空字符串，收到 {category!r}。")
    return run_subjects(
        Frame.build(state),
        category,
        check_bool("include_pending", include_pending),
        check_choice("detail", detail, DETAILS),
        check_level(threshold),
    )
