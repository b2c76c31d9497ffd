"""Rough placement: the orchestration of a lexicographic proposal for the pending tasks.

A proposal reads as PyVRP's ``solve()`` (issue 40 item 2, :func:`_propose_scope`):

1. **Problem** (:class:`.run.ScopeRun`): the tasks the scope may move, the call's clocks and
   work budgets.
2. **Level 1** places the most periods: exactly the maximum of the counting model
   (:mod:`.counting`) when it is proven.
3. **Starts** (:data:`.starts.START_BUILDERS`): the load/category-aware greedy (with the exact
   repair of its leftovers when it falls short of level 1), the counting model's witness, and
   the exact model's best schedule of the per-day health rules (:mod:`.realise`); the one with
   the fewest issues, then the lowest soft terms, starts the search.
4. **The floor**, once per scope (:mod:`.scope_floor`): the proven floor of the proposal's
   population (:mod:`.health_floor`, with the exact model of :mod:`.health_model`).
5. **The one search** (:func:`.health_search.search_health`) on the key (critical, warning,
   soft terms), scored by the incremental evaluators (:mod:`.scoring`); it stops at that floor.
   The result is never lexicographically worse than the balanced greedy placing as many
   periods.
6. **The send-back** (:mod:`.least_change`): moved suggested tasks go back where that costs no
   health.
7. **The** :class:`Proposal`.

The least-change repair (:mod:`.repair`, ``keep_placed``) is a mode of the same pipeline: the
pending tasks' proposal, then the same floor and search with a move limit.

Deterministic for a given seed and worker count: every stage is bounded by a deterministic
work measure (evaluations, CP-SAT deterministic time), converted to estimated seconds and
capped at shares of the limit (:mod:`.budget`); the wall-clock limit is only a safety net, and
``Proposal.wall_limited`` says when it decided.

The wall clock holds the whole call, model building included (issue 12): the greedies and
every model build check the deadline (:class:`._cpsat.OutOfTime`) and the call answers with the
best complete placement it has, its status saying what is proven (``unknown`` when even the
maximum is not). The search stops early enough for what must follow it (the feasibility check
of tasks left unplaced, the answer itself). One-time costs (importing OR-Tools and GLOP's
wrapper) are paid before the clock starts.

Anytime (issue 24 item 7): the first packing order of level 1 always runs to the end (it is
linear in the window: ~35 ms for 20,000 tasks), so a proposal never places fewer periods than
that greedy start, however small the limit. A call whose deadline passed before any search
began answers with that start and says so (``Proposal.start_only``), skipping the search.

No bound on the soft terms is claimed (issue 26 item 2): the health floor is the proof a
proposal carries; ``optimal`` means both levels proven, which for the soft level is a total of
0.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..calendar_filters import ProposalScope
from ..rules import Level
from ..state import ScheduleState
from ._cpsat import OutOfTime, at_deadline, cp_model
from .budget import DEFAULT_CALIBRATION, Calibration, too_late
from .counting import CountResult
from .day_plan import day_plan
from .health_eval import HealthEvaluator
from .health_search import HealthSearchResult, search_health
from .least_change import moved_tasks, send_back
from .objective import TERM_NAMES, evaluate
from .order import order_proposal, order_start
from .ordered import has_inner_order
from .problem import Placement, build_problem
from .progress import report
from .run import ScopeRun
from .scope_floor import ScopeFloor, proposal_floor
from .scoped import in_item_order
from .scoring import prefer_lexicographic, setup_cost
from .starts import ProposalStart, Start, build_starts, choose_start
from .unplaced import unplaced_check

ProposalStatus = Literal["optimal", "feasible", "unknown"]


@dataclass(frozen=True)
class Proposal:
    """A rough schedule for the scope tasks (the tools render it; apply_proposal applies it).

    ``status``: ``optimal`` (both levels proven: the most periods, and ``weighted_total`` 0,
    the least there is), ``feasible`` (the most periods are proven placed; no bound on the soft
    terms is claimed) or ``unknown`` (the maximum
    itself is not proven). ``objective`` holds each soft term, ``weighted_total``, ``placed_slots`` and
    ``unplaced_slots``; ``start_objective`` the same for the warm start.
    """

    status: ProposalStatus
    placements: list[Placement]
    unplaced: list[int]
    objective: dict[str, float]
    start_objective: dict[str, float]
    start: ProposalStart  # where the search started ("current": keep_placed's repair)
    max_slots: int | None  # the proven maximum of placeable periods
    bound: float | None  # proven lower bound on weighted_total (placements of max_slots)
    weights: dict[str, float] = field(default_factory=dict)
    runtime_s: float = 0.0
    seed: int = 0
    iterations: int = 0
    local_moves: int = 0  # improving moves of the local search
    # Issue 10: analyze_health's (critical, warning) on the applied proposal, at ``threshold``;
    # the close stage (see .health_search) minimises them after the placed periods.
    critical: int | None = None
    warning: int | None = None
    threshold: Level = "normal"
    start_health: tuple[int, int] | None = None  # (critical, warning) before the close stage
    # True when the deadline passed before any search began: the answer is the greedy start
    # (the window is too big for the limit); the close stage did not run (critical, warning
    # and floor are None).
    start_only: bool = False
    # The proven floor of (critical, warning) over every placement of the tasks this proposal
    # may move that places as many periods (critical bounds critical, the sum bounds critical +
    # warning); the proposal is at its floor when it meets both. None when the floor could not
    # be computed within the limit (about a second on 1000-day windows): never claimed unproven.
    floor: tuple[int, int] | None = None
    # The lexicographic floor (issue 26), when proven: every placement of the same population
    # has more criticals than ``floor[0]`` or at least this many warnings (the exact model of
    # the per-day rules, see .health_floor; None: only ``floor``'s componentwise bounds).
    floor_least_warning: int | None = None
    # True when the wall-clock safety net may have cut a stage (a slow or overloaded machine):
    # the same seed then need not give the same proposal. False: every stage stopped on its
    # deterministic work budget, so the proposal is the one this seed always gives.
    wall_limited: bool = False
    # Issue 28: scope tasks placed now that the proposal puts elsewhere (the key's disruption
    # level, after health and before the soft terms, see .least_change) and its weight.
    moved: int = 0
    disruption_weight: float = 1.0
    # The scope the figures above are about (``max_slots``, ``bound``, ``status``, the
    # objective): True when the suggested tasks were re-planned; a call asked to re-plan them
    # answers with the pending tasks' own plan (False) when that one is better (issue 26).
    include_suggested: bool = False
    # True when the day plan (:func:`deepen`, given ``plan_work_s``) replaced the search's
    # answer: the placements are the plan's, the counts its own.
    planned: bool = False


# ---------------------------------------------------------------------------------- entry point
def propose_placement(
    state: ScheduleState,
    time_limit_s: float = 2.0,
    seed: int = 0,
    weights: Mapping[str, float] | None = None,
    include_suggested: bool = False,
    num_workers: int = 1,
    allow_late: bool = False,
    threshold: Level = "normal",
    work_limit_s: float | None = None,
    disruption_weight: float = 1.0,
    calibration: Calibration = DEFAULT_CALIBRATION,
    within: ProposalScope | None = None,
    plan_work_s: float = 0.0,
) -> Proposal:
    """Propose places for the pending tasks (and, optionally, re-plan the suggested ones).

    Parameters
    ----------
    time_limit_s, seed, weights
        The wall-clock budget of everything; the seed of CP-SAT and the search (same seed +
        workers -> same proposal); overrides of :data:`.objective.DEFAULT_WEIGHTS`.
    include_suggested
        Re-plan the movable suggested tasks too. A larger scope is never worse than the smaller
        one (issue 26 item 3, :func:`_better_scope`).
    allow_late
        Let class tasks go past their class's end day, each day late costing the ``late``
        weight (level 1 then maximises with the end days lifted).
    threshold
        The ``analyze_health`` level whose (critical, warning) counts the close stage minimises
        (lexicographically after the placed periods, before the soft terms).
    work_limit_s
        The deterministic work budget, in estimated seconds of the calibration machine (default
        ``calibration.work_share * time_limit_s``). It alone decides where the search stops:
        ``Proposal.wall_limited`` says when the wall clock cut it instead.
    disruption_weight
        The key's disruption level (issue 28, :mod:`.least_change`): with a positive weight,
        among placements of equal periods and health, fewer moved suggested tasks win before
        the soft terms are compared; ``0`` leaves the soft terms alone to decide. The level is
        lexicographic, so every positive weight orders proposals the same way.
    calibration
        The solver's figures (:class:`.budget.Calibration`), read by every stage.
    within
        A proposal limited by the calendar (issue 43, :mod:`.scoped`): exactly its tasks are
        re-planned (``include_suggested`` is then not read), each only on its cells; the
        items of a class keep their order.
    plan_work_s
        CP-SAT deterministic time for the day plan after the proposal (:func:`deepen`, issue
        42); its seconds (at ``exact_det_per_s``) are kept from the proposal's clock.

    Returns
    -------
    Proposal
        Never places fewer periods than the proven maximum; never scores worse than its start;
        with ``include_suggested``, never worse than the pending tasks' own proposal made with
        half its work.
    """
    warm_imports()  # (once per process, before the clocks of both scopes)
    common: dict[str, Any] = {
        "seed": seed,
        "weights": weights,
        "num_workers": num_workers,
        "allow_late": allow_late,
        "threshold": threshold,
        "disruption_weight": disruption_weight,
        "calibration": calibration,
    }
    t0 = time.perf_counter()
    deep = plan_work_s > 0 and within is None and not allow_late
    # (the plan's seconds, its work at the calibration's rate, are kept from the proposal's
    # clock: at most half of it)
    plan_s = min(plan_work_s / calibration.exact_det_per_s, time_limit_s / 2) if deep else 0.0
    chosen = _scopes(state, time_limit_s - plan_s, include_suggested, work_limit_s, within, common)
    if not deep:
        return chosen
    return deepen(
        state, chosen, work_s=plan_work_s, deadline=t0 + time_limit_s, num_workers=num_workers,
        seed=seed, calibration=calibration,
    )  # fmt: skip


def _scopes(
    state: ScheduleState,
    time_limit_s: float,
    include_suggested: bool,
    work_limit_s: float | None,
    within: ProposalScope | None,
    common: dict[str, Any],
) -> Proposal:
    """The proposal of the pending tasks, or the better of it and the one re-planning the
    suggested tasks too (:func:`_better_scope`), with the item order among its placed tasks
    (issue 42, .order)."""
    calibration = common["calibration"]
    suggested = include_suggested and any(t.status == "suggested" and t.slots for t in state.tasks)
    if suggested and within is None:
        work = calibration.work_share * time_limit_s if work_limit_s is None else work_limit_s
        return _better_scope(state, time_limit_s, work / 2, common)
    return order_proposal(  # the item order among the placed tasks (issue 42, .order)
        state,
        _propose_scope(
            state,
            time_limit_s=time_limit_s,
            include_suggested=include_suggested and within is None,
            work_limit_s=work_limit_s,
            within=within,
            **common,
        ),
        new_places=within is None,  # a calendar scope's cells are the model's to keep
        calibration=calibration,
    )


def deepen(
    state: ScheduleState,
    proposal: Proposal,
    *,
    work_s: float,
    deadline: float,
    num_workers: int = 1,
    seed: int = 0,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> Proposal:
    """``proposal`` replaced by the day plan of its scope (:mod:`.day_plan`, ``work_s`` of
    CP-SAT deterministic time, hinted with it) when the plan has fewer (critical, warning)
    issues, counted as the close stage counts them (the proposal's feasibility issue, which
    a plan placing the same tasks keeps, carried over). Unchanged when the proposal leaves a
    scope task unplaced or claims no counts, its scope has no item order, or the plan finds
    nothing better; ``wall_limited`` set when ``deadline`` cut the plan."""
    if proposal.critical is None or proposal.warning is None or proposal.unplaced:
        return proposal
    problem = build_problem(state, include_suggested=proposal.include_suggested)
    placed = sum(pl.length for pl in proposal.placements)
    if placed < problem.required_slots or not has_inner_order(state, problem):
        return proposal
    left = deadline - time.perf_counter()
    if left <= 0:
        return replace(proposal, wall_limited=True)
    plan = day_plan(
        state, problem, level=proposal.threshold, time_limit_s=left, work_s=work_s,
        num_workers=num_workers, seed=seed, calibration=calibration, hint=proposal.placements,
    )  # fmt: skip
    cut = proposal.wall_limited or plan.cut
    if plan.placements is None:
        return replace(proposal, wall_limited=cut)
    scope = {tid for g in problem.groups for tid in g.task_ids}
    ev = HealthEvaluator(state, scope, proposal.threshold, 0)
    ev.set_placements(proposal.placements)
    before = ev.counts_now().key
    ev.set_placements(plan.placements)
    after = ev.counts_now().key
    if after >= before:
        return replace(proposal, wall_limited=cut)
    placements = sorted(plan.placements, key=lambda p: (p.day, p.slot_start, p.task_id))
    return replace(
        proposal,
        placements=placements,
        objective=evaluate(problem, placements, proposal.weights),
        critical=proposal.critical - before[0] + after[0],
        warning=proposal.warning - before[1] + after[1],
        moved=moved_tasks(problem.current, placements),
        wall_limited=cut,
        planned=True,
    )


def _better_scope(
    state: ScheduleState, time_limit_s: float, work: float, common: dict[str, Any]
) -> Proposal:
    """The pending tasks' own proposal (half the limit, ``work``), then the one re-planning the
    suggested tasks too (the time left, ``work``), the lexicographically better answering
    (:func:`proposal_key`). A wide plan that leaves a placed suggested task unplaced would have
    to take it off the schedule to apply (its periods go to pending tasks): the student's plan
    is not dropped, so the narrow plan answers then."""
    t0 = time.perf_counter()
    narrow = order_proposal(
        state,
        _propose_scope(
            state,
            time_limit_s=time_limit_s / 2,
            include_suggested=False,
            work_limit_s=work,
            **common,
        ),
        calibration=common["calibration"],
    )
    if narrow.start_only:  # the window is too big for the limit: nothing left for the wide one
        return narrow
    left = max(0.0, time_limit_s - (time.perf_counter() - t0))
    wide = order_proposal(
        state,
        _propose_scope(
            state, time_limit_s=left, include_suggested=True, work_limit_s=work, **common
        ),
        calibration=common["calibration"],
    )
    runtime = time.perf_counter() - t0
    placed_now = {t.state_id for t in state.tasks if t.slots}
    if any(task_id in placed_now for task_id in wide.unplaced) or proposal_key(
        state, narrow
    ) < proposal_key(state, wide):
        chosen = narrow
    else:
        chosen = wide
    return replace(chosen, runtime_s=runtime, wall_limited=narrow.wall_limited or wide.wall_limited)


def proposal_key(state: ScheduleState, proposal: Proposal) -> tuple[float, ...]:
    """A proposal's lexicographic key, best first: fewest periods left unplaced (a suggested
    task outside the scope stays placed where it is), fewest critical and warning issues
    (counts not claimed sort last), the weighted soft terms."""
    unknown = math.inf
    need = {t.state_id: t.need() for t in state.tasks}
    return (
        float(sum(need.get(t, 0) for t in proposal.unplaced)),
        float(proposal.critical) if proposal.critical is not None else unknown,
        float(proposal.warning) if proposal.warning is not None else unknown,
        float(proposal.objective["weighted_total"]),
    )


def _propose_scope(state: ScheduleState, **args: Any) -> Proposal:
    """One scope's proposal (see :func:`propose_placement`, which chooses between scopes), read
    as PyVRP's ``solve()``: problem, level 1, starts, the floor (once), the one search, the
    send-back, the :class:`Proposal`."""
    warm_imports()  # (one-time costs, once per process, are not the call's time)
    run = ScopeRun.begin(state, **args)
    report("max periods", run.t0)
    level1, level1_cut = run.level1()
    starts = build_starts(run, level1)
    start = choose_start(run, starts)
    # the item order before the search, whose moves keep it (issue 42, .order)
    start, greedy, level1, order_cut = order_start(
        run, start, starts.greedy, level1, starts.candidates
    )
    report("one search", run.t0, start.objective["weighted_total"])
    # Every search stops by ``search_stop`` at the latest; one that got that close may have been
    # cut by the wall clock rather than by its deterministic budget.
    cut = level1_cut or starts.cut or order_cut or at_deadline(run.search_stop)
    result = StageResult(start.placements, start.objective, wall_limited=cut)
    if run.run_close:  # (a window too big for the limit answers without it, see ScopeRun)
        placed = {pl.task_id for pl in result.placements}
        unplaced = sorted(tid for tid in run.scope() if tid not in placed)
        close_stage(
            run, result, unplaced=unplaced, checked=result.placements, proven=level1.proven,
            greedy=greedy,
        )  # fmt: skip
        if run.disruption_weight > 0:
            _send_back(run, result)
    result.wall_limited |= start.start_only or at_deadline(run.stop)
    if run.within is not None:  # a class's items in the scope keep their order (.scoped)
        result.placements = in_item_order(state, run.problem, result.placements)
        result.objective = evaluate(run.problem, result.placements, run.weights)
    report("done", run.t0, result.objective["weighted_total"])
    return _proposal(run, level1, start, result)


@dataclass
class StageResult:
    """What the stages after the start hand on: the placements and their soft terms, the
    (critical, warning) claimed (None: not counted in time), before the close stage, the floor,
    and whether the wall clock decided part of it."""

    placements: list[Placement]
    objective: dict[str, float]
    health: tuple[int, int] | None = None
    start_health: tuple[int, int] | None = None
    floor: tuple[int, int] | None = None
    least_warning: int | None = None
    wall_limited: bool = False
    search: HealthSearchResult | None = None  # the one search's own result


def close_stage(
    run: ScopeRun,
    result: StageResult,
    *,
    unplaced: list[int],
    checked: list[Placement],
    proven: bool = False,
    greedy: list[Placement] | None = None,
) -> None:
    """analyze_health's (critical, warning) (issue 10): the scope's floor (computed once), the
    feasibility check of the ``unplaced`` tasks (on ``state`` with ``checked`` applied, see
    :func:`.unplaced.unplaced_check`), the one search (:mod:`.health_search`) stopping at that
    floor, and the guard: never lexicographically worse than the ``greedy`` placing as many
    periods. A proposal's search is on the key (critical, warning, soft terms) with
    ``one_search_share`` of the work; the repair's (``run.repair``) on the counts alone with
    ``health_share`` of it and at most ``run.max_moves`` moved tasks. Every step checks ``stop``
    before it starts (issue 24 item 6: the set-up grows with the window); when ``stop`` passed
    before the start's counts were known no counts are claimed and the result says
    ``wall_limited``."""
    cal = run.calibration
    try:
        floor = _scope_floor(run, result.placements, proven)
        feasibility, check_cut = unplaced_check(
            run.state, unplaced, _check_limit(run), run.num_workers, deadline=run.stop,
            placements=checked, calibration=cal, work_s=_check_work(run),
        )  # fmt: skip
        close = search_health(
            run.state, run.problem, result.placements, level=run.threshold, seed=run.seed,
            budget_s=(cal.health_share if run.repair else cal.one_search_share) * run.effort,
            deadline=run.stop, max_moves=run.max_moves, feasibility_critical=feasibility,
            floor=floor, calibration=cal, weights=None if run.repair else run.weights,
            num_workers=run.num_workers,
        )  # fmt: skip
    except OutOfTime:  # no counts known in time: none claimed
        result.wall_limited = True
        return
    result.search = close
    if close.soft is not None and close.start_soft is not None:
        better = (close.counts.key, close.soft) < (close.start_counts.key, close.start_soft)
    else:
        better = close.counts.key < close.start_counts.key
    if better or run.repair:
        result.placements = close.placements
        result.objective = evaluate(run.problem, close.placements, run.weights)
    counts = close.counts
    if greedy is not None and cal.health_share > 0:  # (zero: no close stage, for benchmarks)
        result.placements, result.objective, counts = prefer_lexicographic(
            run.state, run.problem, run.threshold, feasibility, run.weights,
            (result.placements, result.objective, counts), greedy, deadline=run.stop,
            calibration=cal,
        )  # fmt: skip
    result.health, result.start_health = counts.key, close.start_counts.key
    result.floor, result.least_warning = close.floor, close.floor_least_warning
    result.wall_limited |= floor.population_cut or check_cut or close.floor_cut or close.wall_cut


def _check_limit(run: ScopeRun) -> float:
    """The feasibility check's wall-clock limit: a share of the call's, leaving the close
    search its set-up (it starts only before ``stop``); the repair's, a tenth of its limit."""
    if run.repair:
        return 0.1 * run.time_limit_s
    cal = run.calibration
    setup_s = cal.close_setup_per_task_s * len(run.state.tasks)
    return min(
        cal.unplaced_check_share * run.time_limit_s, run.stop - setup_s - time.perf_counter()
    )


def _check_work(run: ScopeRun) -> float | None:
    """The feasibility check's work (CP-SAT deterministic time): ``unplaced_check_share`` of a
    proposal's effort, converted as the exact model's; the repair's check keeps its limit."""
    if run.repair:
        return None
    cal = run.calibration
    return cal.unplaced_check_share * run.effort * cal.exact_det_per_s


def _scope_floor(run: ScopeRun, placements: list[Placement], proven: bool) -> ScopeFloor:
    """The scope's floor, once (:func:`.scope_floor.proposal_floor`); a proposal's exact model
    gets ``exact_floor_share`` of the limit (at most what is left before ``stop`` after the
    search's set-up) and of the work, the repair's floor is the relaxation's alone. Raises
    OutOfTime when ``stop`` passed before the search's set-up."""
    cal = run.calibration
    setup_s = setup_cost(run.state, cal)
    if too_late(run.stop, setup_s, cal):
        raise OutOfTime("the close stage's deadline passed before its set-up")
    exact_s = cal.exact_floor_share * run.time_limit_s
    return proposal_floor(
        run.state,
        run.problem,
        placements,
        level=run.threshold,
        proven=proven,
        deadline=run.stop,
        exact_s=0.0
        if run.repair
        else max(0.0, min(exact_s, run.stop - setup_s - time.perf_counter())),
        num_workers=1 if run.repair else run.num_workers,
        exact_work_s=None if run.repair else run.exact_work(),
        scoped=run.within is not None,
        calibration=cal,
    )


def _send_back(run: ScopeRun, result: StageResult) -> None:
    """The disruption level (issue 28, :mod:`.least_change`): moved tasks go back to where they
    stand now while the health counts stay as good."""
    if not moved_tasks(run.problem.current, result.placements):
        return
    back, change, cut = send_back(
        run.state,
        run.problem,
        result.placements,
        level=run.threshold,
        deadline=run.stop,
        calibration=run.calibration,
    )
    if result.health is not None:
        result.health = (result.health[0] + change[0], result.health[1] + change[1])
    if back != result.placements:
        result.placements = back
        result.objective = evaluate(run.problem, back, run.weights)
    result.wall_limited |= cut


def _proposal(run: ScopeRun, level1: CountResult, start: Start, result: StageResult) -> Proposal:
    """The :class:`Proposal` of a scope. No bound on the soft terms is proven (issue 26 item 2);
    every term is non-negative, so only a total of 0 is a proven optimum of the soft level."""
    # the close stage may trade a placed task for an unplaced one of the same periods
    placed = {pl.task_id for pl in result.placements}
    unplaced = sorted(tid for g in run.problem.groups for tid in g.task_ids if tid not in placed)
    name: ProposalStatus
    if not level1.proven:
        name = "unknown"
    elif result.objective["weighted_total"] <= 0:
        name = "optimal"
    else:
        name = "feasible"
    health = result.health
    return Proposal(
        status=name,
        placements=result.placements,
        unplaced=unplaced,
        objective=result.objective,
        start_objective=start.objective,
        start=start.name,
        max_slots=level1.best if level1.proven else None,
        bound=0.0 if name == "optimal" else None,
        weights=run.weights,
        runtime_s=time.perf_counter() - run.t0,
        seed=run.seed,
        critical=health[0] if health is not None else None,
        warning=health[1] if health is not None else None,
        threshold=run.threshold,
        start_health=result.start_health,
        floor=result.floor,
        floor_least_warning=result.least_warning,
        wall_limited=result.wall_limited,
        start_only=start.start_only,
        moved=moved_tasks(run.problem.current, result.placements),
        disruption_weight=run.disruption_weight,
        include_suggested=run.include_suggested,
    )


def warm_imports() -> None:
    """Import what a solver call needs once per process (CP-SAT, GLOP's wrapper). A caller whose
    own clock starts earlier (a tool call's pipeline) calls it before that clock: otherwise a
    process's first proposal spends its limit's first ~0.4 s importing."""
    import importlib

    cp_model()
    importlib.import_module("ortools.linear_solver.python.model_builder_helper")


__all__ = ["TERM_NAMES", "Proposal", "proposal_key", "propose_placement"]
