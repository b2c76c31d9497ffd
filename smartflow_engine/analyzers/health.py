"""``analyze_health`` (p1 §4.7, P1-E, P1-F): feasibility first, then every dimension, merged.

It calls the dimensions' functions on one shared :class:`Frame`, never the tool registry.
"""

from __future__ import annotations

import copy
import importlib
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..concepts import hard_subjects, subject_of
from ..rules import RULES, Level, Rule, r4
from ..state import ScheduleState
from ..state.freeze import frozen_count, frozen_view
from .common import (
    action,
    candidate_scope,
    guarded,
    number_actions,
    order_actions,
    sort_issues,
)
from .context import run_context
from .criteria import SEVERE
from .destinations import make_actionable
from .frame import Frame, check_bool, check_choice, check_level
from .load import run_load
from .result import (
    DIMENSIONS,
    SEVERITY_RANK,
    AnalysisResult,
    Issue,
    NextAction,
    ParamError,
    Trigger,
    close_signal,
)
from .schema import metric_schema
from .subjects import run_subjects
from .tolerance import run_tolerance

if TYPE_CHECKING:
    from ..solver import FeasibilityReport, NegotiationFigures
    from ..solver.health_floor import HealthFloor
    from ..solver.problem import Problem

TOOL = "analyze_health"
DETAILS = ("summary", "full")
MAX_ACTIONS = 3
MIN_STEP_S = 0.01  # a CP-SAT step started at the limit still gets this (it answers unproven)
# Share of the time left that each CP-SAT step (feasibility, then the negotiation figures) may
# take, so the floor and the fixable search keep the rest of the call's limit.
FEASIBILITY_SHARE = 0.5
# The action naming the write that searches (issue 40 item 7, :func:`search_action`) and the
# move limit it suggests (apply_proposal's own cap: a tighter limit missed batches the search
# finds by moving more tasks on its way, docs/decisions.md issue 26 item 4).
SEARCH_INTENT = "least_change_repair"
SEARCH_MAX_MOVES = 20
NEGOTIATION_INTENTS = (
    "ask_expand_window",
    "ask_relax_constraints",
    "ask_reduce_scope_or_budget",
    "accept_risk_and_close",
)


def check_dimensions(value: Any) -> tuple[list[str], list[str]]:
    """``(valid, ignored)``; all invalid (or an empty list) is an error (p1 §4.7)."""
    if value is None:
        return list(DIMENSIONS), []
    if not isinstance(value, list | tuple):
        raise ParamError("invalid_args", f"参数 dimensions 应为数组，收到 {value!r}。")
    valid = [d for d in DIMENSIONS if d in value]
    ignored = [str(d) for d in value if d not in DIMENSIONS]
    if not valid:
        raise ParamError(
            "invalid_args",
            f"参数 dimensions 没有合法维度（可选：{'/'.join(DIMENSIONS)}），收到 {value!r}。",
        )
    return valid, ignored


_RULES: dict[tuple[str, str], Rule] = {(r.dimension, r.rule): r for r in RULES}


def merge_issues(issues: Sequence[Issue]) -> list[Issue]:
    """Sort, then merge issues that are the same problem: the same dimension and rule about the
    same day, subject or (window-wide) the window (the rule table's merge key); the first, most
    severe, stays and names the others. Different rules never merge, so each rule's count is its
    own (a subject's gap and its concentration are two problems)."""
    kept: dict[tuple[str, str, object], Issue] = {}
    out: list[Issue] = []
    for issue in sort_issues(issues):
        rule = _RULES.get((issue.dimension, issue.rule))
        key = (
            rule.merge_key(issue.day, issue.category)
            if rule is not None
            else (issue.dimension, issue.rule, (issue.day, issue.category))
        )
        first = kept.get(key)
        if first is None:
            kept[key] = issue
            out.append(issue)
        else:
            first.merged_issue_ids.append(issue.issue_id)
    return out


def feasibility_issue(report: FeasibilityReport) -> Issue:
    # the least gap proven where the gap itself is not (issue 42: infeasibility proven by the
    # counting bound, the ordered maximum unproven)
    gap = report.capacity_gap if report.capacity_gap is not None else report.capacity_gap_bounds[0]
    trigger = Trigger("capacity_gap", ">", 0, gap)
    return Issue(
        issue_id="issue_feasibility_capacity_gap",
        dimension="feasibility",
        severity="critical",
        rule="capacity_gap",
        trigger=trigger,
        conditions=(trigger,),
        impact_score=r4(gap / max(report.required_task_slots, 1)),
    )


def negotiation_actions(
    state: ScheduleState, report: FeasibilityReport, figures: NegotiationFigures | None
) -> list[NextAction]:
    """The four options of P1-F, carrying the solver's figures; the user decides, so no writes
    other than a task-class update are named."""
    pending = state.pending_tasks()
    cats = {name for t in pending if (name := subject_of(t)) is not None}
    window = range(1, state.num_days + 1)
    gap = report.capacity_gap
    # where only infeasibility is proven: the gap's proven (least, most) instead of a figure
    bounds = {} if gap is not None else {"capacity_gap_bounds": list(report.capacity_gap_bounds)}
    common: dict[str, Any] = {
        "candidate_scope": candidate_scope(window, categories=cats, task_pool="pending"),
        "target_filter": {"kind": "study", "status": ["pending"]},
        "slot_filter": {},
        "required_reads": [
            {"tool": "get_overview", "args": {}},
            {"tool": "list_tasks", "args": {"status": "pending"}},
        ],
        "issue_ids": ["issue_feasibility_capacity_gap"],
    }
    fixed = {
        "recheck_tool": TOOL,
        "conditions": [{"metric": "feasibility.capacity_gap", "operator": "<=", "value": 0}],
    }
    bottleneck = report.bottleneck
    short = [
        {
            "class_id": c.class_id,
            "name": c.name,
            "required_slots": c.required_slots,
            "placeable_slots": c.placeable_slots,
        }
        for c in (bottleneck.classes if bottleneck is not None else ())
    ]
    f = figures
    return number_actions(
        [
            action(
                "ask_expand_window",
                "feasibility",
                **common,
                success_criteria=fixed,
                candidate_write_tools=[],
                figures={
                    "capacity_gap": gap,
                    **bounds,
                    "extra_days_needed": f.extra_days_needed if f else None,
                    "extra_days_possible": f.extra_days_possible if f else None,
                },
            ),
            action(
                "ask_relax_constraints",
                "feasibility",
                **common,
                success_criteria=fixed,
                candidate_write_tools=["upsert_task_class"],
                figures={
                    "reason_code": report.reason_code,
                    "lifting_banned_suffices": f.lifting_banned_suffices if f else None,
                    "lifting_class_constraints_suffices": f.lifting_class_constraints_suffices
                    if f
                    else None,
                    "short_classes": short,
                },
            ),
            action(
                "ask_reduce_scope_or_budget",
                "feasibility",
                **common,
                success_criteria=fixed,
                candidate_write_tools=["upsert_task_class"],
                figures={
                    "slots_to_cut": f.slots_to_cut if f else gap,
                    **bounds,
                    "required_task_slots": report.required_task_slots,
                    "feasible_slots": report.feasible_slots,
                },
            ),
            action(
                "accept_risk_and_close",
                "feasibility",
                **common,
                success_criteria={"user_confirmed": True},
                candidate_write_tools=[],
                figures={"unplaceable_slots": gap, **bounds},
            ),
        ]
    )


def snapshot(report: FeasibilityReport) -> dict[str, Any]:
    return {
        **report.snapshot(),
        "proven": report.proven,
        "required_task_slots": report.required_task_slots,
        "feasible_slots": report.feasible_slots,
        "free_capacity_slots": report.free_capacity_slots,
        "slack_slots": report.slack_slots,
        "runtime_s": r4(report.runtime_s),
    }


# The floors analyze_health computed, by :func:`..solver.health_floor.floor_key` (the last
# FLOOR_CACHE_SIZE keys): a floor is computed again only when something it reads changed.
_FLOORS: dict[tuple[Any, ...], HealthFloor] = {}
_FLOORS_LOCK = threading.Lock()
FLOOR_CACHE_SIZE = 8


def cached_health_floor(
    state: ScheduleState,
    level: Level,
    report: FeasibilityReport | None,
    dimensions: Sequence[str],
    scope: Sequence[int] | None = None,
    deadline: float | None = None,
) -> HealthFloor:
    """:func:`..solver.health_floor.health_floor`, remembered by its ``floor_key``; each caller
    gets its own copy. Past ``deadline`` it raises ``OutOfTime`` like the computation (a
    remembered floor is not handed out after the limit either)."""
    from ..solver._cpsat import OutOfTime

    # the module (the package's ``health_floor`` name is the function)
    floors = importlib.import_module("..solver.health_floor", __package__)

    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime("no time left for the floor")
    compute = (
        floors.health_floor
    )  # read at call time: a replaced function (a test's) is another key
    key = (compute, *floors.floor_key(state, level, report, dimensions, None, scope))
    with _FLOORS_LOCK:
        found = _FLOORS.get(key)
    if found is None:
        found = compute(state, level, report, dimensions, scope=scope, deadline=deadline)
        with _FLOORS_LOCK:
            while len(_FLOORS) >= FLOOR_CACHE_SIZE:
                _FLOORS.pop(next(iter(_FLOORS)))
            _FLOORS[key] = found
    return copy.deepcopy(found)


# The proven-feasible reports of analyze_health's feasibility step, by the check that gave them
# and :func:`..solver.feasibility.feasibility_key` (the last REPORT_CACHE_SIZE keys): a write
# that leaves the check's problem as it was (a suggested task moved) does not pay it again.
_REPORTS: dict[tuple[Any, ...], FeasibilityReport] = {}
_REPORTS_LOCK = threading.Lock()
REPORT_CACHE_SIZE = 8


def remembered_feasibility(
    state: ScheduleState, *, time_limit_s: float, num_workers: int, include_suggested: bool
) -> tuple[FeasibilityReport, Problem | None]:
    """``solver.check_feasibility`` (read at call time: a replaced function is another key),
    a proven-feasible report remembered by ``feasibility_key``: equal keys give equal problems,
    and where everything fits the answer does not depend on the time the check got
    (``is_feasible``, a zero gap, the counts; the witness is one valid placement of that
    problem). A remembered report comes back with this call's own ``runtime_s``. Infeasible
    and unproven reports are never remembered (their reason code, bottleneck and proof depend
    on the time they got). With it, the problem the check read (``None`` for a remembered
    report): the negotiation figures read the same one."""
    from .. import solver
    from ..solver.feasibility import feasibility_key
    from ..solver.problem import build_problem

    started = time.perf_counter()
    check = solver.check_feasibility
    key = (check, *feasibility_key(state, include_suggested))
    with _REPORTS_LOCK:
        found = _REPORTS.pop(key, None)
        if found is not None:
            _REPORTS[key] = found  # the newest now
    if found is not None:
        again = replace(found, runtime_s=time.perf_counter() - started, witness=list(found.witness))
        return again, None
    problem = build_problem(state, include_suggested=include_suggested, subjects=False)
    report = check(
        state,
        time_limit_s=time_limit_s,
        num_workers=num_workers,
        include_suggested=include_suggested,
        explain="classes",  # the health reply reads the short classes of the bottleneck only
        problem=problem,
    )
    if report.is_feasible is True and report.proven:
        with _REPORTS_LOCK:
            while len(_REPORTS) >= REPORT_CACHE_SIZE:
                _REPORTS.pop(next(iter(_REPORTS)))
            _REPORTS[key] = replace(report, witness=list(report.witness))
    return report, problem


def _subjects_core(metrics: dict[str, Any], issues: list[Issue]) -> dict[str, Any]:
    rows = metrics.get("subjects", [])
    gaps = [r["max_gap"] for r in rows if r["max_gap"] is not None]
    concs = [r["concentration"] for r in rows if r["concentration"] is not None]
    return {
        "subject_count": len(rows),
        "max_gap": max(gaps) if gaps else None,
        "max_concentration": max(concs) if concs else None,
        "lagging_budget": sorted(
            {i.category for i in issues if i.rule == "budget_lag" and i.category is not None}
        ),
    }


def search_action(
    state: ScheduleState,
    issues: Sequence[Issue],
    critical: int,
    warning: int,
    better: tuple[int, int],
) -> NextAction:
    """The action that names the write that searches (issue 40 item 7): ``apply_proposal``
    with ``keep_placed`` and ``max_moves`` runs the least-change repair, and its ``preview``
    shows the effect before anything changes. ``better``: the proven floor's (critical,
    warning), or the request's starting health, below today's. Nothing is searched here: a read
    stays a read."""
    ids = [i.issue_id for i in issues if i.severity in SEVERE]
    return action(
        SEARCH_INTENT,
        "window",
        candidate_scope=candidate_scope(range(1, state.num_days + 1), task_pool="placed"),
        target_filter={"kind": "study", "status": ["suggested", "existing"], "locked": False},
        slot_filter={},
        required_reads=[],
        success_criteria={
            "recheck_tool": "analyze_health",
            "conditions": [
                {"metric": "metrics.close_signal.critical", "operator": "<=", "value": critical},
                {"metric": "metrics.close_signal.warning", "operator": "<=", "value": warning},
            ],
        },
        candidate_write_tools=["apply_proposal"],
        issue_ids=ids,
        figures={
            "write_args": {"keep_placed": True, "max_moves": SEARCH_MAX_MOVES, "preview": True},
            "better_critical": better[0],
            "better_warning": better[1],
        },
    )


def offer_search(
    state: ScheduleState,
    actions: list[NextAction],
    issues: list[Issue],
    floor: HealthFloor,
    dimensions: Sequence[str],
) -> list[NextAction]:
    """``actions`` with :func:`search_action` first when no single move helps (no action is
    ``fixable``) while the proven floor lies below today's (critical, warning). Only on the
    whole check-up (every dimension): the floor is of all of them."""
    if (
        any(a.fixable is True for a in actions)
        or not floor.proven
        or list(dimensions) != list(DIMENSIONS)
    ):
        return actions
    critical = sum(1 for i in issues if i.severity == "critical")
    warning = sum(1 for i in issues if i.severity == "warning")
    if floor.meets(critical, warning):
        return actions
    better = (floor.critical, floor.warning)
    return [search_action(state, issues, critical, warning, better), *actions][:MAX_ACTIONS]


def run_health(
    state: ScheduleState,
    dimensions: list[str],
    ignored: list[str],
    detail: str,
    level: Level,
    report: FeasibilityReport | None,
    figures: NegotiationFigures | None,
    *,
    actionable: bool = True,
    deadline: float | None = None,
    floor_scope: Sequence[int] | None = None,
) -> AnalysisResult:
    """The health envelope; ``deadline`` (``time.perf_counter()``) bounds the floor and the
    fixable search (a floor past it is left unproven, a search past it says so);
    ``floor_scope``: the placed tasks the floor may move (default: every movable one; frozen
    days leave their tasks out)."""
    frame = Frame.build(state)
    everything = np.arange(state.num_days)
    parts: dict[str, AnalysisResult] = {}
    if "load" in dimensions:
        parts["load"] = run_load(frame, everything, "day", detail, level)
    if "subjects" in dimensions:
        parts["subjects"] = run_subjects(frame, None, True, detail, level)
    if "context" in dimensions:
        parts["context"] = run_context(  # the hard subjects: the classes' profiles (issue 42)
            frame,
            everything,
            tuple(sorted(hard_subjects(state))),
            "day_detail" if detail == "full" else "summary",
            level,
        )
    if "tolerance" in dimensions:
        parts["tolerance"] = run_tolerance(frame, everything, 2, 2, detail, level)

    raw = [i for part in parts.values() for i in part.issues]
    infeasible = report is not None and report.is_feasible is False
    if report is not None and infeasible:
        raw.append(feasibility_issue(report))
    issues = merge_issues(raw)
    from ..solver._cpsat import OutOfTime
    from ..solver.health_floor import HealthFloor

    floor_cut = False
    try:
        floor = cached_health_floor(
            state, level, report, dimensions, scope=floor_scope, deadline=deadline
        )
    except OutOfTime:  # no time left for it: an unproven floor (never guessed)
        floor, floor_cut = HealthFloor(proven=False), True
    for issue in issues:
        if floor.unfixable.get((issue.rule, issue.day, issue.category)) == issue.severity:
            issue.fixable = False
    if report is not None and infeasible:
        actions = negotiation_actions(state, report, figures)
    else:
        alias = {m: i.issue_id for i in issues for m in i.merged_issue_ids}
        unfixable = {i.issue_id for i in issues if not i.fixable}
        pool = [a for part in parts.values() for a in part.next_actions]
        for act in pool:
            act.issue_ids = list(dict.fromkeys(alias.get(i, i) for i in act.issue_ids))
        # An issue no write can change gets no action (issue 10).
        pool = [a for a in pool if not a.issue_ids or set(a.issue_ids) - unfixable]
        for act in pool:
            act.issue_ids = [i for i in act.issue_ids if i not in unfixable]
        ordered = order_actions(pool, issues)
        if actionable:
            ordered = make_actionable(
                state, ordered, issues, level, MAX_ACTIONS, dimensions=dimensions, deadline=deadline
            )
            ordered = offer_search(state, ordered, issues, floor, dimensions)
        actions = number_actions(ordered, MAX_ACTIONS)

    counts = {s: 0 for s in SEVERITY_RANK}
    for issue in issues:
        counts[issue.severity] += 1
    metrics: dict[str, Any] = {"dimensions": dimensions}
    if "load" in parts:
        metrics["load"] = parts["load"].metrics["summary"]
    if "subjects" in parts:
        metrics["subjects"] = _subjects_core(parts["subjects"].metrics, parts["subjects"].issues)
    if "context" in parts:
        metrics["context"] = parts["context"].metrics.get("overall", {})
    if "tolerance" in parts:
        metrics["tolerance"] = parts["tolerance"].metrics["overall"]
    metrics["issue_counts"] = counts
    # No pending period that could be placed is left: proven (the capacity gap covers every
    # pending period), not assumed. Only then may the request close (issue 45 item 1: 可收口
    # above 12 pending tasks), and only then is the schedule one of the floor's population
    # (see .solver.health_floor).
    pending = sum(t.need() for t in state.pending_tasks())
    complete = pending == 0 or (
        report is not None
        and report.proven
        and report.capacity_gap is not None
        and pending <= report.capacity_gap
    )
    best = floor.proven and complete and floor.meets(counts["critical"], counts["warning"])
    metrics["close_signal"] = close_signal(
        counts["critical"],
        counts["warning"],
        floor.to_dict(),
        best_achievable=best,
        floor_cut=floor_cut,
        complete=complete,
    )
    if ignored:
        metrics["ignored_dimensions"] = ignored
    if detail == "full":
        metrics["details"] = {name: part.metrics for name, part in parts.items()}
    return AnalysisResult(
        tool=TOOL,
        success=True,
        metric_schema=metric_schema(TOOL),
        metrics=metrics,
        issues=issues,
        next_actions=actions,
        feasibility=snapshot(report) if report is not None else None,
        has_feasibility=True,
    )


@guarded(TOOL)
def analyze_health(
    state: ScheduleState,
    *,
    dimensions: Sequence[str] | None = None,
    threshold: str = "normal",
    detail: str = "summary",
    check_feasibility: bool = True,
    time_limit_s: float = 2.0,
    num_workers: int = 1,
    frozen_days: int = 0,
) -> AnalysisResult:
    """The whole-window check-up (p1 §4.7): feasibility, then the chosen dimensions, merged.

    Parameters
    ----------
    dimensions
        Any of ``load``, ``subjects``, ``context``, ``tolerance`` (default all); unknown names are
        ignored and listed in ``metrics.ignored_dimensions``; none valid is an error.
    threshold
        ``strict``, ``normal`` or ``relaxed``, for every dimension.
    detail
        ``summary`` or ``full`` (adds every dimension's full metrics under ``metrics.details``).
    check_feasibility
        Run the exact feasibility check first (CP-SAT; ``False`` skips it, ``feasibility`` is null).
    time_limit_s, num_workers
        The call's time limit, covering the feasibility step (and the negotiation figures when
        infeasible), the floor and the fixable search together (the call ends within about
        0.5 s of it); a search it cuts says so (``fixable: false`` with ``fixable_cut``).
    frozen_days
        Days ``1..frozen_days`` are frozen (issue 28): the feasibility check and the negotiation
        figures run on :func:`~smartflow_engine.state.freeze.frozen_view` (nothing placed there
        moves, nothing new lands there) and the floor keeps their tasks fixed; the metrics and
        issues are the window's own. ``feasibility`` then also holds ``frozen_days`` and
        ``gap_only_from_freeze`` (true when the frozen window is proven infeasible and the
        unfrozen one proven feasible, false when both are infeasible, null otherwise).

    Notes
    -----
    Infeasible (proven): a ``critical`` ``feasibility`` issue and exactly the four negotiation
    actions of P1-F. Unproven (``is_feasible`` null) is never reported as infeasible. Otherwise
    at most three actions, ranked by the issues they address.
    """
    started = time.perf_counter()
    valid, ignored = check_dimensions(dimensions)
    level = check_level(threshold)
    detail = check_choice("detail", detail, DETAILS)
    report: FeasibilityReport | None = None
    figures: NegotiationFigures | None = None
    if (
        isinstance(time_limit_s, bool)
        or not isinstance(time_limit_s, int | float)
        or not (0 < time_limit_s <= 60)
    ):
        raise ParamError(
            "invalid_args", f"参数 time_limit_s 应在 (0, 60] 内，收到 {time_limit_s!r}。"
        )
    deadline = started + float(time_limit_s)
    if isinstance(frozen_days, bool) or not isinstance(frozen_days, int) or frozen_days < 0:
        raise ParamError(
            "invalid_args", f"参数 frozen_days 应为不小于 0 的整数，收到 {frozen_days!r}。"
        )
    frozen = frozen_count(state, frozen_days)
    fixed = frozen_view(state, frozen) if frozen else state
    floor_scope = (
        [t.state_id for t in state.tasks if not any(b.day <= frozen for b in t.slots)]
        if frozen
        else None
    )
    unfrozen_feasible: bool | None = None
    if check_bool("check_feasibility", check_feasibility):
        from ..solver import check_feasibility as solve
        from ..solver import negotiation_figures

        # The suggested tasks count as movable (include_suggested): after a proposal has placed
        # them, the gap and the negotiation figures keep the meaning they had before.
        report, problem = remembered_feasibility(
            fixed,
            time_limit_s=max(MIN_STEP_S, FEASIBILITY_SHARE * (deadline - time.perf_counter())),
            num_workers=num_workers,
            include_suggested=True,
        )
        if report.is_feasible is False and frozen:  # is the gap the freeze's own?
            unfrozen_feasible = solve(
                state,
                time_limit_s=max(MIN_STEP_S, FEASIBILITY_SHARE * (deadline - time.perf_counter())),
                num_workers=num_workers,
                include_suggested=True,
                explain=False,  # its verdict alone is read
            ).is_feasible
        if report.is_feasible is False:
            figures = negotiation_figures(
                fixed,
                report,
                time_limit_s=max(MIN_STEP_S, FEASIBILITY_SHARE * (deadline - time.perf_counter())),
                num_workers=num_workers,
                include_suggested=True,
                problem=problem,  # the check's own (never remembered: infeasible)
            )
    result = run_health(
        state,
        valid,
        ignored,
        detail,
        level,
        report,
        figures,
        deadline=deadline,
        floor_scope=floor_scope,
    )
    if frozen and result.feasibility is not None:
        gap_only = None
        if report is not None and report.is_feasible is False and unfrozen_feasible is not None:
            gap_only = unfrozen_feasible
        result.feasibility.update(frozen_days=frozen, gap_only_from_freeze=gap_only)
    return result
