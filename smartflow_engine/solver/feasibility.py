"""Exact feasibility, capacity gap, bottleneck explanation and negotiation figures (DESIGN.md
"Feasibility", p1-analysis-plan.md §4.7.1 and P1-F).

Contract (the analyzers call these; keep it stable):

``check_feasibility(state, time_limit_s=5.0, num_workers=1, include_suggested=False, explain=True)``
    -> :class:`FeasibilityReport`. Never raises for a valid state; never says infeasible without a
    proof: when the time limit is hit first, ``is_feasible`` is ``None``, ``proven`` is ``False``,
    ``reason_code`` is ``"unknown"`` and ``feasible_slots`` / ``capacity_gap`` are ``None``.

``feasibility_key(state, include_suggested=False)``: everything the check reads of the state,
in one value (``analyze_health`` remembers proven-feasible reports by it).

``negotiation_figures(state, report=None, time_limit_s=5.0, num_workers=1,
include_suggested=False)`` -> :class:`NegotiationFigures`: the numbers behind the four options of
P1-F (extra days needed, whether lifting banned periods suffices, slots to cut).

Both only read the state. The time limit covers everything, model building included (issue
12): past it, the optional solves (the bottleneck explanation, the negotiation figures) are
skipped (a cut explanation is not called minimal, a skipped figure is ``None``); only the
reason code of a proven infeasibility still gets one short solve (``min_solve_s`` of the
``calibration``, :class:`.budget.Calibration`, every function here takes).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar, get_args

from ..state import ScheduleState
from ._cpsat import OutOfTime, SolveStatus
from .budget import DEFAULT_CALIBRATION, Calibration
from .counting import CountResult, all_fit, max_placeable, min_extra_days
from .order import keep_order, order_kept
from .ordered import has_inner_order, max_placeable_ordered
from .problem import (
    Placement,
    Problem,
    Rule,
    build_problem,
    cleared_layers,
    scope_tasks,
    valid_start,
)

ReasonCode = Literal["ok", "insufficient_capacity", "fragmented", "class_window", "unknown"]
REASON_CODES: tuple[ReasonCode, ...] = get_args(ReasonCode)
S = TypeVar("S")


@dataclass(frozen=True)
class DurationShortfall:
    """The tasks of at least ``min_duration`` periods cannot all be placed, even on their own.

    ``min_duration`` is the largest such threshold, so it names the tightest duration bottleneck;
    ``bins`` / ``days`` are the free runs and host blocks long enough for it.
    """

    min_duration: int
    task_count: int
    required_slots: int
    placeable_slots: int
    bins: int
    days: tuple[int, ...]


@dataclass(frozen=True)
class ClassShortfall:
    """The pending tasks of one task class cannot all be placed inside its window, on their own."""

    class_id: int
    name: str
    start_day: int
    end_day: int
    banned: tuple[int, ...]
    task_count: int
    required_slots: int
    placeable_slots: int
    window_free_slots: int  # free periods on its days outside its banned periods


@dataclass(frozen=True)
class Bottleneck:
    """Why it does not fit, in plain data an adapter can phrase for an LLM."""

    durations: tuple[DurationShortfall, ...] = ()
    classes: tuple[ClassShortfall, ...] = ()
    conflict_set: tuple[int, ...] = ()  # pending tasks that cannot all be placed together
    conflict_set_minimal: bool = False  # removing any one of them makes the rest fit (proven)


@dataclass(frozen=True)
class FeasibilityReport:
    """The answer to "does it all fit?" (DESIGN.md "Feasibility")."""

    is_feasible: bool | None
    proven: bool
    required_task_slots: int
    feasible_slots: int | None  # exact maximum placeable; None when unproven
    capacity_gap: int | None  # required - feasible; None when unproven
    free_capacity_slots: int  # free periods + periods of embeddable host blocks
    slack_slots: int  # free_capacity_slots - required_task_slots (may be negative)
    reason_code: ReasonCode
    runtime_s: float
    witness: list[Placement] = field(default_factory=list)  # one placement of the maximum
    feasible_slots_bounds: tuple[int, int] = (0, 0)  # (lower, upper), always known
    task_count: int = 0
    bottleneck: Bottleneck | None = None

    @property
    def capacity_gap_bounds(self) -> tuple[int, int]:
        """(least, most) capacity gap, both proven: ``required_task_slots`` less the upper and
        the lower bound of the maximum. Equal (to ``capacity_gap``) when the maximum is
        proven; apart when only infeasibility is (a bound below what is required, the
        maximum itself unproven: ``is_feasible`` False, ``capacity_gap`` None)."""
        low, high = self.feasible_slots_bounds
        return max(0, self.required_task_slots - high), self.required_task_slots - low

    def snapshot(self) -> dict[str, object]:
        """The ``feasibility`` object of analyze_health (p1 §4.7); where infeasibility is
        proven but the gap is not, its proven bounds too."""
        out: dict[str, object] = {
            "is_feasible": self.is_feasible,
            "capacity_gap": self.capacity_gap,
            "reason_code": self.reason_code,
        }
        if self.is_feasible is False and self.capacity_gap is None:
            out["capacity_gap_bounds"] = list(self.capacity_gap_bounds)
        return out


@dataclass(frozen=True)
class NegotiationFigures:
    """Numbers for the four options of P1-F.

    ``extra_days_needed``: smallest number of empty days appended after the window (honouring
    banned periods and class deadlines before the window's end) that makes everything fit;
    ``None`` with ``extra_days_possible=False`` when no number suffices, ``None`` with
    ``extra_days_possible=None`` when unproven. ``slots_to_cut`` equals the capacity gap.
    """

    is_feasible: bool | None
    slots_to_cut: int | None
    extra_days_needed: int | None
    extra_days_possible: bool | None
    lifting_banned_suffices: bool | None
    lifting_class_constraints_suffices: bool | None
    proven: bool
    runtime_s: float
    # Issue 42: whether lifting the classes' banned weekdays alone / the item order alone lets
    # everything fit (None: no such rule binds the scope, or unproven within the limit).
    lifting_weekdays_suffices: bool | None = None
    lifting_order_suffices: bool | None = None


# ---------------------------------------------------------------------------------- feasibility
def check_feasibility(
    state: ScheduleState,
    time_limit_s: float = 5.0,
    num_workers: int = 1,
    include_suggested: bool = False,
    explain: bool | Literal["classes"] = True,
    relaxation: bool = True,
    *,
    calibration: Calibration = DEFAULT_CALIBRATION,
    problem: Problem | None = None,
    work_s: float | None = None,
) -> FeasibilityReport:
    """Decide exactly whether every pending task fits, and how much does.

    Parameters
    ----------
    state, time_limit_s, num_workers
        The window (only read); the budget of all CP-SAT calls of this check together; CP-SAT
        workers (one is measured best for these models).
    include_suggested
        Also re-plan the movable suggested tasks (their current places count as free).
    explain
        When infeasible, the :class:`Bottleneck` (extra solves, within the budget); ``"classes"``:
        only its short task classes (what ``analyze_health`` reads), no costly conflict set.
    relaxation
        Use the certified linear-relaxation shortcut before CP-SAT (the default; ``False``
        gives the plain greedy-then-CP-SAT path, kept for side-by-side benchmarks).
    calibration
        The solver's figures (:class:`.budget.Calibration`), the least times among them.
    problem
        ``build_problem(state, include_suggested=include_suggested, subjects=False)``, when the
        caller has built it (only read; :func:`negotiation_figures` reads the same one).
    work_s
        The CP-SAT deterministic time of each solve (counting, ordered), so that what it proves
        is the same on any machine the clock does not cut; default: until proven or the limit.

    Returns
    -------
    FeasibilityReport
        ``feasible_slots`` = max Σ duration of scope tasks placeable at once, honouring every
        rule; ``capacity_gap = required_task_slots - feasible_slots``; ``proven``: those are
        (``is_feasible`` may be False without them: ``capacity_gap_bounds``).
    """
    t0 = time.perf_counter()
    deadline = t0 + max(time_limit_s, calibration.min_work_s)
    if problem is None:
        problem = build_problem(state, include_suggested=include_suggested, subjects=False)
    required = problem.required_slots
    capacity = problem.free_slots + problem.embed_slots
    res = _maximum(state, problem, deadline, num_workers, relaxation, calibration, work_s)
    feasible, reason = _verdict(
        problem, res, capacity, deadline, num_workers, relaxation, calibration
    )
    proven = feasible is True or (feasible is False and res.proven)
    bottleneck = None
    if feasible is False and explain:
        bottleneck = explain_bottleneck(
            state, problem, res.best, deadline, num_workers, calibration=calibration,
            only_classes=explain == "classes",
            checks=max(1, round(calibration.shrink_checks_per_s * time_limit_s)),
        )  # fmt: skip
    return FeasibilityReport(
        is_feasible=feasible,
        proven=proven,
        required_task_slots=required,
        feasible_slots=res.best if proven else None,
        capacity_gap=required - res.best if proven else None,
        free_capacity_slots=capacity,
        slack_slots=capacity - required,
        reason_code=reason,
        runtime_s=time.perf_counter() - t0,
        witness=res.witness,
        feasible_slots_bounds=(res.best, res.bound),
        task_count=problem.task_count,
        bottleneck=bottleneck,
    )


def _verdict(
    problem: Problem,
    res: CountResult,
    capacity: int,
    deadline: float,
    num_workers: int,
    relaxation: bool,
    calibration: Calibration,
) -> tuple[bool | None, ReasonCode]:
    """Whether everything fits by the count ``res`` (``None``: unproven), and why not: a
    proven bound below what is required proves that it does not, even when the maximum itself
    is not proven (the ordered model cut before its proof, issue 42)."""
    required = problem.required_slots
    if res.best == required:
        return True, "ok"
    if not res.proven and res.bound >= required:
        return None, "unknown"
    reason = _reason(problem, required, capacity, deadline, num_workers, relaxation, calibration)
    return False, reason


def _maximum(
    state: ScheduleState,
    problem: Problem,
    deadline: float,
    num_workers: int,
    relaxation: bool,
    calibration: Calibration,
    work_s: float | None,
) -> CountResult:
    """The most periods of the scope placeable at once: the schedule as it stands when every
    scope task already stands where the rules allow it (:func:`standing_witness`), else the
    counting model with the item order held (:func:`_with_order`)."""
    standing = standing_witness(state, problem)
    if standing is not None:
        required = problem.required_slots
        return CountResult(SolveStatus.OPTIMAL, required, required, standing, 0.0, "standing")
    res = max_placeable(
        problem, time_limit_s=_left(deadline, calibration), num_workers=num_workers,
        relaxation=relaxation, calibration=calibration, deterministic_time=work_s,
    )  # fmt: skip
    return _with_order(state, problem, res, deadline, num_workers, calibration, work_s=work_s)


def standing_witness(state: ScheduleState, problem: Problem) -> list[Placement] | None:
    """The scope's places now, when they prove that everything fits: every scope task is
    placed (none pending) where :func:`.problem.valid_start` allows it (its group's length,
    days and periods, free periods or a host block), inside its group's order window (the
    class's items outside the scope), and the item order holds among them. Then the schedule
    as it stands is a packing of every scope task, so the maximum is the required periods,
    with no model solved. ``None`` otherwise: the models decide.

    This is what a proposal placing every task leaves behind (every write keeps the rules):
    the check ``analyze_health`` and a proposal's close stage run on it would otherwise rebuild
    the ordered model, about a second at 60 days, to find what the state already shows."""
    if problem.task_count != len(problem.current):
        return None
    here = list(problem.current.values())
    if not valid_start(problem, here, problem.required_slots):
        return None
    rule = {tid: g.rule for g in problem.groups for tid in g.task_ids}
    if not all(rule[p.task_id].order_allows(p.day, p.slot_start, p.slot_end) for p in here):
        return None
    return here if order_kept(state, here) else None


def _with_order(
    state: ScheduleState,
    problem: Problem,
    res: CountResult,
    deadline: float,
    num_workers: int,
    calibration: Calibration,
    inner: bool | None = None,
    work_s: float | None = None,
) -> CountResult:
    """The counting model's answer with the item order among the scope's items held (issue
    42): its maximum bounds the ordered one; a witness that keeps the order once relabelled
    meets it, else the exact model of :mod:`.ordered` decides (unproven past the limit).
    ``inner``: :func:`.ordered.has_inner_order` of the problem's scope, when the caller knows
    it (it reads the scope's tasks only, so every lift of one problem has the same);
    ``work_s``: the ordered model's deterministic time (see :func:`check_feasibility`)."""
    if not (has_inner_order(state, problem) if inner is None else inner):
        return res
    if time.perf_counter() >= deadline:  # no time to hold the order: nothing proven
        return CountResult(SolveStatus.UNKNOWN, 0, res.bound, [], res.runtime_s)
    scope = [tid for g in problem.groups for tid in g.task_ids]
    # (the exact chains a safety net of at most half the time left: the ordered model decides)
    exact_s = max(0.0, min(0.5, (deadline - time.perf_counter()) / 2))
    try:
        kept, dropped = keep_order(
            state, res.witness, scope, exact_s, calibration=calibration, deadline=deadline
        )
    except OutOfTime:  # (the chains' set-up grows with the window: nothing proven in time)
        return CountResult(SolveStatus.UNKNOWN, 0, res.bound, [], res.runtime_s)
    if not dropped:
        return replace(res, witness=kept)
    status, best, bound, placed = max_placeable_ordered(
        state,
        problem,
        time_limit_s=_left(deadline, calibration),
        num_workers=num_workers,
        upper=res.bound,
        hint=kept,
        calibration=calibration,
        work_s=work_s,
    )
    return CountResult(status, best, max(best, min(bound, res.bound)), placed, res.runtime_s)


def feasibility_key(state: ScheduleState, include_suggested: bool = False) -> tuple[Any, ...]:
    """Everything :func:`check_feasibility` reads of ``state``, in one value: equal keys give
    the same :func:`.problem.build_problem` (its scope tasks' durations, classes and guest
    ability, the rules of the task classes, the free runs and the free host blocks left once
    the scope tasks have left their places) but for ``Problem.current`` (where the re-planned
    tasks stand now), which the check never reads. So moving a re-planned task (a suggested
    one, with ``include_suggested``) between free periods keeps the key; placing, unplacing,
    moving any other task, locking, or changing a class changes it."""
    scope = scope_tasks(state, include_suggested=include_suggested)
    owner, guest = cleared_layers(state, scope)
    in_scope = {t.state_id for t in scope}
    hosts = []
    for host_id in sorted(state.grid.embed_hosts - in_scope):
        host = state.task(host_id)
        if host is not None:
            hosts.append((host_id, tuple((b.day, b.slot_start, b.slot_end) for b in host.slots)))
    return (
        include_suggested,
        state.num_days,
        state.slots_per_day,
        tuple(tc.model_dump_json() for tc in state.task_classes),
        tuple((t.state_id, t.need(), t.category_id, t.can_embed) for t in scope),
        tuple(hosts),
        owner.shape,
        owner.tobytes(),
        guest.tobytes(),
    )


def _left(deadline: float, calibration: Calibration) -> float:
    """The time left before ``deadline``, at least ``calibration.min_solve_s``: a solve the
    answer needs (the reason code of a proven infeasibility) still gets that long past the
    deadline; optional ones (the bottleneck, the negotiation figures) are skipped."""
    return max(deadline - time.perf_counter(), calibration.min_solve_s)


def _past(deadline: float) -> bool:
    return time.perf_counter() > deadline


def _reason(
    problem: Problem,
    required: int,
    capacity: int,
    deadline: float,
    num_workers: int,
    relaxation: bool,
    calibration: Calibration,
) -> ReasonCode:
    """Classify a proven infeasibility: count, classes, or fragmentation."""
    if required > capacity:
        return "insufficient_capacity"
    if not any(g.rule.class_id is not None for g in problem.groups):
        return "fragmented"
    res = max_placeable(
        lift_class_rules(problem),
        time_limit_s=_left(deadline, calibration),
        num_workers=num_workers,
        witness=False,
        relaxation=relaxation,
        calibration=calibration,
    )
    return "class_window" if res.best == required else "fragmented"


def lift_class_rules(problem: Problem) -> Problem:
    """``problem`` with every class's day window and banned periods lifted: what
    ``build_problem(state, lift_banned=True, lift_windows=True)`` gives, without reading the
    state again (the bins do not depend on the rules, and every group keeps its tasks)."""
    return lift_rules(problem, lift_banned=True, lift_windows=True)


def lift_rules(
    problem: Problem,
    *,
    lift_banned: bool = False,
    lift_windows: bool = False,
    lift_weekdays: bool = False,
) -> Problem:
    """``problem`` with these lifts of :func:`.problem.build_problem` made, without reading
    the state again: equal to ``build_problem(state, <the problem's own arguments>, <these
    lifts>)``. Each lift drops fields of a class's rule only (:func:`.problem.rule_for`: the
    windows its start and end day, its banned weekdays and makes it extend; the weekdays its
    banned weekdays; the banned its periods), the bins do not depend on the rules, and groups
    stay as they were: rules that were apart stay apart (each keeps its class and its order
    segment, which no lift here touches), so every group keeps its tasks in its order. Not for
    a problem built with ``allow_late`` or ``within`` (their rules are not the class's)."""
    num_days = problem.num_days

    def lifted(rule: Rule) -> Rule:
        if rule.class_id is None:  # no class: nothing to lift (build_problem's rule_for)
            return rule
        if lift_windows:
            # the item order's segments stay: they are no class window (issue 42)
            return Rule(
                rule.class_id,
                1,
                num_days,
                () if lift_banned else rule.banned,
                True,
                after=rule.after,
                before=rule.before,
            )
        return replace(
            rule,
            banned=() if lift_banned else rule.banned,
            off_days=frozenset() if lift_weekdays else rule.off_days,
        )

    if not (lift_banned or lift_windows or lift_weekdays):
        return problem
    return replace(problem, groups=[replace(g, rule=lifted(g.rule)) for g in problem.groups])


def explain_bottleneck(
    state: ScheduleState,
    problem: Problem,
    feasible_slots: int,
    deadline: float,
    num_workers: int,
    *,
    calibration: Calibration = DEFAULT_CALIBRATION,
    only_classes: bool = False,
    checks: int = 60,
) -> Bottleneck:
    """Which durations and which classes cannot fit on their own, and a small conflict set.

    The conflict set is found by a deletion filter over group counts (binary search per group,
    starting from the smallest infeasible candidate); it is irreducible when every check was
    proven within the budget (``checks``: the deletion filter's exact checks at most).
    ``only_classes``: the classes alone (no durations, no conflict set).
    """
    groups = problem.groups
    if only_classes:
        classes, _ = _class_shortfalls(state, problem, deadline, num_workers, calibration)
        return Bottleneck(classes=tuple(c.shortfall for c in classes))
    candidates: list[list[int]] = []
    durations, cut = _duration_shortfall(problem, deadline, num_workers, calibration)
    candidates += [list(d.counts) for d in durations]
    classes, cut_classes = _class_shortfalls(state, problem, deadline, num_workers, calibration)
    candidates += [list(c.counts) for c in classes]
    candidates.append([g.count for g in groups])
    core = min(candidates, key=sum)
    core, minimal = _shrink(problem, core, deadline, num_workers, calibration, checks)
    minimal = minimal and not (cut or cut_classes)
    ids: list[int] = []
    for g, c in zip(groups, core, strict=True):
        ids.extend(g.task_ids[:c])
    return Bottleneck(
        tuple(d.shortfall for d in durations),
        tuple(c.shortfall for c in classes),
        tuple(sorted(ids)),
        minimal,
    )


@dataclass(frozen=True)
class _Found(Generic[S]):
    """A shortfall the explanation found, with the group counts that show it."""

    shortfall: S
    counts: tuple[int, ...]


def _short(
    problem: Problem,
    counts: list[int],
    deadline: float,
    num_workers: int,
    calibration: Calibration,
) -> tuple[int, int] | None:
    """(required, placeable) periods of the groups' ``counts`` when proven not to fit."""
    res = max_placeable(
        problem,
        counts=counts,
        time_limit_s=_left(deadline, calibration),
        num_workers=num_workers,
        witness=False,
        calibration=calibration,
    )
    req = sum(g.duration * c for g, c in zip(problem.groups, counts, strict=True))
    return (req, res.best) if res.proven and res.best < req else None


def _duration_shortfall(
    problem: Problem, deadline: float, num_workers: int, calibration: Calibration
) -> tuple[list[_Found[DurationShortfall]], bool]:
    """The tightest duration threshold whose tasks cannot fit on their own (at most one: the
    largest such threshold), and whether the deadline cut the search."""
    groups = problem.groups
    for d in sorted({g.duration for g in groups}, reverse=True):
        if _past(deadline):
            return [], True
        counts = [g.count if g.duration >= d else 0 for g in groups]
        short = _short(problem, counts, deadline, num_workers, calibration)
        if short is not None:
            bins = [b for b in (*problem.runs, *problem.hosts) if b.length >= d]
            days = tuple(sorted({b.day for b in bins}))
            found = DurationShortfall(d, sum(counts), *short, len(bins), days)
            # smaller thresholds only add tasks: the largest one is the tightest
            return [_Found(found, tuple(counts))], False
    return [], False


def _class_shortfalls(
    state: ScheduleState,
    problem: Problem,
    deadline: float,
    num_workers: int,
    calibration: Calibration,
) -> tuple[list[_Found[ClassShortfall]], bool]:
    """The task classes whose tasks cannot fit on their own, and whether the deadline cut the
    search."""
    groups = problem.groups
    out: list[_Found[ClassShortfall]] = []
    for tc in state.task_classes:
        counts = [g.count if g.rule.class_id == tc.id else 0 for g in groups]
        if not any(counts):
            continue
        if _past(deadline):
            return out, True
        short = _short(problem, counts, deadline, num_workers, calibration)
        if short is None:
            continue
        rule = next(g.rule for g, c in zip(groups, counts, strict=True) if c)
        start, end, banned = rule.start_day, rule.end_day, rule.banned
        free = _window_free(problem, start, end, banned)
        found = ClassShortfall(tc.id, tc.name, start, end, banned, sum(counts), *short, free)
        out.append(_Found(found, tuple(counts)))
    return out, False


def _window_free(problem: Problem, start: int, end: int, banned: tuple[int, ...]) -> int:
    free = problem.owner[start - 1 : end] == 0
    if banned:
        free[:, [p - 1 for p in banned]] = False
    hosts = sum(b.length for b in problem.hosts if start <= b.day <= end)
    return int(free.sum()) + hosts


def _shrink(
    problem: Problem,
    counts: list[int],
    deadline: float,
    num_workers: int,
    calibration: Calibration,
    checks: int,
) -> tuple[list[int], bool]:
    """Deletion filter: the smallest count per group that keeps the set infeasible. A work
    budget bounds it (at most ``checks`` exact checks, each of ``shrink_det_time``
    deterministic time): the set it returns is a function of the problem, not of the time left,
    and the negotiation figures after it keep their time. Past the budget the set is returned
    as far as it was shrunk, not claimed irreducible."""
    counts = list(counts)
    minimal = True
    order = sorted(range(len(counts)), key=lambda i: -problem.groups[i].duration)
    for gi in order:
        lo, hi = 0, counts[gi]
        while lo < hi:
            if time.perf_counter() > deadline or checks <= 0:
                counts[gi] = hi
                return counts, False
            checks -= 1
            mid = (lo + hi) // 2
            trial = list(counts)
            trial[gi] = mid
            fits = all_fit(
                problem,
                trial,
                time_limit_s=_left(deadline, calibration),
                num_workers=num_workers,
                calibration=calibration,
                deterministic_time=calibration.shrink_det_time,
            )
            if fits is False:
                hi = mid
            else:
                if fits is None:
                    minimal = False
                lo = mid + 1
        counts[gi] = hi
    return counts, minimal


# ---------------------------------------------------------------------------------- negotiation
def negotiation_figures(
    state: ScheduleState,
    report: FeasibilityReport | None = None,
    time_limit_s: float = 5.0,
    num_workers: int = 1,
    include_suggested: bool = False,
    *,
    calibration: Calibration = DEFAULT_CALIBRATION,
    problem: Problem | None = None,
) -> NegotiationFigures:
    """The numbers behind P1-F's options (expand window / relax constraints / cut scope / accept).

    Pass the ``report`` of a previous :func:`check_feasibility` on the same state to skip that
    solve, and the ``problem`` it read (``build_problem(state,
    include_suggested=include_suggested, subjects=False)``, only read) to skip building it
    again; given both, the report's reason code settles the wider class lift where it can
    (``class_window``: the check placed everything with every class rule lifted). Each figure is computed by the exact counting model; one that the time limit cut
    short is ``None`` and ``proven`` is ``False``.
    """
    t0 = time.perf_counter()
    deadline = t0 + time_limit_s
    if report is None:
        report = check_feasibility(
            state,
            time_limit_s=time_limit_s,
            num_workers=num_workers,
            include_suggested=include_suggested,
            explain=False,
            calibration=calibration,
            problem=problem,
        )
    if report.is_feasible is True:
        return NegotiationFigures(True, 0, 0, True, True, True, True, time.perf_counter() - t0)
    if report.is_feasible is None:
        return NegotiationFigures(
            None, None, None, None, None, None, False, time.perf_counter() - t0
        )
    given = problem is not None
    if problem is None:
        problem = build_problem(state, include_suggested=include_suggested, subjects=False)
    inner = has_inner_order(state, problem)  # the same for every lift (the same scope)
    days: int | None = None
    days_proven = False
    if not _past(deadline):
        days, days_proven = min_extra_days(
            problem,
            time_limit_s=_left(deadline, calibration),
            num_workers=num_workers,
            infeasible=given,  # the problem the report proved infeasible
        )
    possible: bool | None = (days is not None) if days_proven else None
    lift = functools.partial(
        _lift_suffices, state, include_suggested, deadline, num_workers, calibration, problem, inner
    )
    wide: bool | None = None  # lifting every class rule suffices, known without a solve
    if problem.required_slots > problem.free_slots + problem.embed_slots:
        wide = False  # more periods than room: no lift of a rule makes room
    elif given and report.reason_code == "class_window" and not inner:
        wide = True  # the check's reason: the problem lifted so places everything
    lifts = _class_lifts(deadline, lift, wide)
    rules = {
        f"lifting_{name}_suffices": lift(**entry.lift)
        for name, entry in RULE_LIFTS.items()
        if entry.binds(problem, inner)
    }
    return NegotiationFigures(
        is_feasible=False,
        slots_to_cut=report.capacity_gap,
        extra_days_needed=days,
        extra_days_possible=possible,
        lifting_banned_suffices=lifts[0],
        lifting_class_constraints_suffices=lifts[1],
        proven=days_proven
        and all(v is not None for v in lifts)
        and report.capacity_gap is not None,
        runtime_s=time.perf_counter() - t0,
        **rules,
    )


def _class_lifts(
    deadline: float, lift: Callable[..., bool | None], wide: bool | None = None
) -> list[bool | None]:
    """[lifting the banned periods suffices, lifting them and the class windows suffices].
    Lifting the class windows too relaxes lifting the banned periods alone, so the wider lift
    runs first: when even it cannot place everything (proven), neither can the narrower one.
    ``wide``: the wider lift's answer when known without a solve (``None``: solved)."""
    lifts: list[bool | None] = [None, wide]
    for lift_windows in (True, False):
        if lift_windows and wide is not None:
            continue
        if _past(deadline):
            continue
        if not lift_windows and lifts[1] is False:
            lifts[0] = False
            continue
        lifts[int(lift_windows)] = lift(lift_banned=True, lift_windows=lift_windows)
    return lifts


@dataclass(frozen=True)
class RuleLift:
    """A class rule whose lifting is a negotiation figure of its own (issue 42): ``binds``:
    whether the rule binds the scope of the problem (else the figure stays ``None``);
    ``lift``: the :func:`.problem.build_problem` lift that removes it. ``binds`` reads the
    problem and :func:`.ordered.has_inner_order` of its scope."""

    binds: Callable[[Problem, bool], bool]
    lift: dict[str, bool]


def _order_binds(problem: Problem, inner: bool) -> bool:
    return any(g.rule.after or g.rule.before for g in problem.groups) or inner


# The rules a negotiation figure lifts one at a time, each the figure
# ``NegotiationFigures.lifting_<name>_suffices``: a rule of its own is one entry here (and
# its field there).
RULE_LIFTS: dict[str, RuleLift] = {
    "weekdays": RuleLift(
        lambda problem, _: any(g.rule.off_days for g in problem.groups), {"lift_weekdays": True}
    ),
    "order": RuleLift(_order_binds, {"lift_order": True}),
}


def _lift_suffices(
    state: ScheduleState,
    include_suggested: bool,
    deadline: float,
    num_workers: int,
    calibration: Calibration,
    problem: Problem,
    inner: bool,
    *,
    lift_banned: bool = False,
    lift_windows: bool = False,
    lift_weekdays: bool = False,
    lift_order: bool = False,
) -> bool | None:
    """Whether everything fits once ``lift`` (a :func:`.problem.build_problem` lift) is made:
    the exact maximum under every other rule, the item order included unless lifted (None:
    past the deadline or unproven). ``problem``: the state's unlifted problem, lifted by
    :func:`lift_rules` (the order's lift changes the groups: built again); ``inner``: its
    :func:`.ordered.has_inner_order`."""
    if _past(deadline):
        return None
    if problem.required_slots > problem.free_slots + problem.embed_slots:
        return False  # no lift of a rule adds a free period or a host block
    if lift_order:
        relaxed = build_problem(
            state,
            include_suggested=include_suggested,
            subjects=False,
            lift_banned=lift_banned,
            lift_windows=lift_windows,
            lift_weekdays=lift_weekdays,
            lift_order=lift_order,
        )
    else:
        relaxed = lift_rules(
            problem,
            lift_banned=lift_banned,
            lift_windows=lift_windows,
            lift_weekdays=lift_weekdays,
        )
    res = max_placeable(
        relaxed,
        time_limit_s=_left(deadline, calibration),
        num_workers=num_workers,
        witness=not lift_order,  # the order's check reads the witness
        calibration=calibration,
    )
    if not lift_order:
        res = _with_order(state, relaxed, res, deadline, num_workers, calibration, inner)
    if res.best == relaxed.required_slots:
        return True
    return False if res.proven else None
