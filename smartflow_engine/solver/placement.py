"""Rough placement: the orchestration of a lexicographic proposal for the pending tasks.

A proposal is start -> search -> floor -> result (issue 26), read as PyVRP's ``solve()``:

1. **Level 1** places the most periods: exactly the maximum of the counting model
   (:mod:`.counting`) when it is proven.
2. **Starts**: the load/category-aware greedy (:func:`.baselines.balanced_greedy`, with the
   exact repair of its leftovers when it falls short of level 1), the counting model's
   witness, and the exact model's best schedule of the per-day health rules
   (:func:`.health_floor.realise`); the one with the fewest issues, then the lowest soft terms,
   starts the search.
3. **The one search** (:func:`.health_search.search_health`) on the key (critical, warning,
   soft terms), scored by the incremental evaluators (:mod:`.health_eval`,
   :mod:`.soft_eval`); it stops at the proven floor of the proposal's population
   (:mod:`.health_floor`, with the exact model of :mod:`.health_model`).
4. **Result**: never lexicographically worse than the balanced greedy placing as many periods,
   moved suggested tasks sent back where that costs nothing (:mod:`.least_change`).

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

from ..rules import Level
from ..state import ScheduleState
from ._cpsat import OutOfTime, cp_model
from .baselines import balanced_greedy
from .budget import DEFAULT_CALIBRATION, Calibration
from .counting import max_placeable, residual
from .health_eval import HealthEvaluator
from .health_floor import health_floor, realise
from .health_search import prefer_lexicographic, search_health, unplaced_check
from .least_change import moved_tasks, send_back
from .objective import TERM_NAMES, evaluate, resolve_weights
from .problem import Placement, Problem, build_problem
from .progress import report

ProposalStatus = Literal["optimal", "feasible", "unknown"]
# Where a proposal's search started: the first packing order, it with the exact repair of its
# leftovers, the counting model's witness, or (keep_placed's repair) the current schedule.
ProposalStart = Literal["greedy", "greedy+repair", "witness", "current", "exact"]


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
) -> Proposal:
    """Propose places for the pending tasks (and, optionally, re-plan the suggested ones).

    Parameters
    ----------
    time_limit_s
        Budget for everything (level 1, warm start and level 2).
    seed
        Seeds CP-SAT and the neighbourhood choice; same seed + workers -> same proposal.
    weights
        Overrides of :data:`.objective.DEFAULT_WEIGHTS` (unknown names raise ValueError).
    include_suggested
        Re-plan the movable suggested tasks too. A larger scope is never worse than the smaller
        one (issue 26 item 3): when suggested tasks are placed, the call first proposes for the
        pending tasks alone (half the work and wall time), then for both, and answers with the
        lexicographically better plan (:func:`proposal_key`); a plan that would leave a placed
        suggested task unplaced is never chosen over the narrow one.
    allow_late
        Let class tasks go past their class's end day, each day late costing the ``late``
        weight (level 1 then maximises with the end days lifted).
    threshold
        The ``analyze_health`` level whose (critical, warning) counts the close stage minimises
        (lexicographically after the placed periods, before the soft terms).
    work_limit_s
        The deterministic work budget, in estimated seconds of the calibration machine
        (default ``calibration.work_share * time_limit_s``). It alone decides where the search stops, so a
        seed gives the same proposal on any machine that finishes it within ``time_limit_s``;
        ``Proposal.wall_limited`` says when the wall clock cut it instead.
    disruption_weight
        The key's disruption level (issue 28, :mod:`.least_change`): with a positive weight,
        among placements of equal periods and health, fewer moved suggested tasks win before
        the soft terms are compared; ``0`` leaves the soft terms alone to decide. The level is
        lexicographic, so every positive weight orders proposals the same way.
    calibration
        The solver's figures (:class:`.budget.Calibration`: the stages' shares of the limit,
        their work costs); every stage reads the same value.

    Returns
    -------
    Proposal
        Never places fewer periods than the proven maximum; never scores worse than its start;
        with ``include_suggested``, never worse than the pending tasks' own proposal made with
        half its work.
    """
    common: dict[str, Any] = {
        "seed": seed,
        "weights": weights,
        "num_workers": num_workers,
        "allow_late": allow_late,
        "threshold": threshold,
        "disruption_weight": disruption_weight,
        "calibration": calibration,
    }
    suggested = include_suggested and any(t.status == "suggested" and t.slots for t in state.tasks)
    if not suggested:
        return _propose_scope(
            state,
            time_limit_s=time_limit_s,
            include_suggested=include_suggested,
            work_limit_s=work_limit_s,
            **common,
        )
    t0 = time.perf_counter()
    work = (calibration.work_share * time_limit_s if work_limit_s is None else work_limit_s) / 2
    narrow = _propose_scope(
        state, time_limit_s=time_limit_s / 2, include_suggested=False, work_limit_s=work, **common
    )
    if narrow.start_only:  # the window is too big for the limit: nothing left for the wide one
        return narrow
    left = max(0.0, time_limit_s - (time.perf_counter() - t0))
    wide = _propose_scope(
        state, time_limit_s=left, include_suggested=True, work_limit_s=work, **common
    )
    runtime = time.perf_counter() - t0
    # A wide plan that leaves a placed suggested task unplaced would have to take it off the
    # schedule to apply (its periods go to pending tasks): the student's plan is not dropped,
    # so the narrow plan answers then.
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


def _propose_scope(
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
) -> Proposal:
    """One scope's proposal (see :func:`propose_placement`, which chooses between scopes)."""
    # One-time costs are not the search's time: importing CP-SAT and GLOP's wrapper (once per
    # process).
    warm_imports()
    t0 = time.perf_counter()
    report("max periods", t0)
    w = resolve_weights(weights)
    if not (math.isfinite(disruption_weight) and disruption_weight >= 0):
        raise ValueError(f"disruption_weight must be finite and >= 0, got {disruption_weight}")
    problem = build_problem(
        state, include_suggested=include_suggested, by_subject=True, allow_late=allow_late
    )
    cal = calibration
    # ``effort``: the limit the deterministic budgets are computed from (the wall clock's own
    # limit unless the caller fixes the work separately).
    effort = time_limit_s if work_limit_s is None else work_limit_s / cal.work_share
    deadline = t0 + max(time_limit_s, cal.min_work_s)
    # The wall clock holds the whole call, model building included (issue 12): every stage
    # below stops by ``stop`` and the answer says what was proven; the margin is for the answer
    # itself (the lexicographic guard, the evaluation, the Proposal).
    stop = deadline - cal.deadline_margin_s
    level1 = max_placeable(
        problem,
        time_limit_s=time_limit_s * cal.level1_share,
        num_workers=num_workers,
        deterministic_time=effort * cal.level1_share * cal.deterministic_share,
        deadline=stop,
        calibration=cal,
    )
    level1_cut = level1.runtime_s >= time_limit_s * cal.level1_share - 0.01
    target = level1.best
    # When tasks must stay unplaced, the feasibility check analyze_health runs on the result
    # (see .health_search.unplaced_critical) comes after the searches: they leave it its time.
    check_s = cal.unplaced_check_share * time_limit_s if target < problem.required_slots else 0.0
    # The close stage's set-up grows with the window (issue 24): it is kept its time when
    # that fits a share of the limit, and skipped otherwise (its counts are then not claimed).
    close_s = cal.close_per_task_s * len(state.tasks)
    run_close = close_s <= cal.close_max_share * max(time_limit_s, cal.min_work_s)
    search_stop = stop - (check_s + close_s if run_close else 0.0)
    candidates: list[tuple[ProposalStart, list[Placement]]] = [("witness", level1.witness)]
    try:
        # The balanced greedy gets a share of the limit: on 20,000 tasks it needs minutes.
        greedy = balanced_greedy(
            problem,
            w,
            deadline=min(search_stop, time.perf_counter() + cal.greedy_share * time_limit_s),
        )
    except OutOfTime:
        greedy = []
        level1_cut = True  # (the wall clock decided which start the search had)
    greedy_slots = sum(pl.length for pl in greedy)
    if greedy and greedy_slots > target:  # level 1 was cut before it matched the greedy
        target = greedy_slots
        candidates = [("greedy", greedy)]
    elif greedy_slots == target and greedy:
        candidates.insert(0, ("greedy", greedy))
    elif greedy and greedy_slots < target and time.perf_counter() < search_stop:
        # Repair: place the greedy's leftovers exactly in the space it left.
        rest = max_placeable(
            residual(problem, greedy),
            time_limit_s=time_limit_s * cal.repair_share,
            num_workers=num_workers,
            deterministic_time=effort * cal.repair_share * cal.deterministic_share,
            deadline=search_stop,
            calibration=cal,
        )
        level1_cut = level1_cut or rest.runtime_s >= time_limit_s * cal.repair_share - 0.01
        if greedy_slots + rest.best == target:
            candidates.insert(0, ("greedy+repair", greedy + rest.witness))
    if cal.exact_floor_share > 0 and time.perf_counter() < search_stop:
        # Issue 26: the exact model's schedule of the per-day rules (see .health_floor.realise)
        # is a start too; its solve is the one the close stage's floor reads (remembered).
        exact = _exact_start(
            state,
            problem,
            target,
            threshold,
            min(cal.exact_floor_share * time_limit_s, search_stop - time.perf_counter()),
            num_workers,
            cal.exact_floor_share * effort,
            complete_by=min(
                search_stop,
                time.perf_counter()
                + (cal.exact_floor_share + cal.exact_complete_share) * time_limit_s,
            ),
            calibration=cal,
        )
        if exact is not None:
            candidates.append(("exact", exact))
    scored = [(evaluate(problem, c[1], w), c) for c in candidates]
    start_obj, (start_name, start) = min(scored, key=lambda e: e[0]["weighted_total"])
    if len(scored) > 1 and time.perf_counter() < search_stop:
        # The one search minimises (critical, warning) first: it starts from the best start
        # by ``start_rank``.
        ev = HealthEvaluator(state, {t for g in problem.groups for t in g.task_ids}, threshold, 0)

        def start_key(e: tuple[dict[str, float], tuple[ProposalStart, list[Placement]]]) -> Any:
            ev.set_placements(e[1][1])
            return start_rank(e[1][0], ev.counts_now().key, e[0]["weighted_total"])

        start_obj, (start_name, start) = min(scored, key=start_key)
    start_only = time.perf_counter() >= search_stop

    current = {pl.task_id: pl for pl in start}
    # Issue 26: no soft-only stages; the close stage is the one search, on (critical, warning,
    # soft terms), with their work budget and its own.
    report("one search", t0, start_obj["weighted_total"])

    # Every search stops by ``search_stop`` at the latest; one that got that close may have been
    # cut by the wall clock rather than by its deterministic budget.
    wall_limited = level1_cut or time.perf_counter() >= search_stop - 0.01
    placements = sorted(current.values(), key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
    unchanged = {pl.task_id: pl for pl in start} == current
    objective = start_obj if unchanged else evaluate(problem, placements, w)
    if objective["weighted_total"] > start_obj["weighted_total"] + 1e-9:  # guard, never expected
        placements, objective = sorted(start, key=lambda pl: (pl.day, pl.slot_start)), start_obj
    placed = {pl.task_id for pl in placements}
    unplaced = sorted(tid for g in problem.groups for tid in g.task_ids if tid not in placed)
    # 4. The close stage (issue 10): analyze_health's (critical, warning), see .health_search;
    #    it stops at the proven floor of placements of as many periods.
    #    A window too big for the limit answers without it (see ``run_close``): its
    #    evaluation alone costs ~0.4 s on 20,000 tasks.
    health: tuple[int, int] | None = None
    start_health: tuple[int, int] | None = None
    close_floor: tuple[int, int] | None = None
    least_warning: int | None = None
    if run_close:
        try:
            (
                placements,
                objective,
                health,
                start_health,
                (close_floor, least_warning),
                close_cut,
            ) = _close_stage(
                state,
                problem,
                placements,
                objective,
                greedy,
                unplaced,
                level1.proven,
                threshold,
                seed,
                w,
                effort,
                min(cal.unplaced_check_share * time_limit_s, max(0.0, stop - time.perf_counter())),
                stop,
                num_workers,
                cal,
                exact_s=cal.exact_floor_share * time_limit_s,
                exact_work_s=cal.exact_floor_share * effort,
            )
            wall_limited = wall_limited or close_cut
        except OutOfTime:  # no counts known in time: none claimed (``critical`` None)
            wall_limited = True
    if run_close and disruption_weight > 0 and moved_tasks(problem.current, placements):
        back, change, cut = send_back(
            state, problem, placements, level=threshold, deadline=stop, calibration=cal
        )
        if health is not None:
            health = (health[0] + change[0], health[1] + change[1])
        if back != placements:
            placements, objective = back, evaluate(problem, back, w)
        wall_limited = wall_limited or cut
    wall_limited = wall_limited or start_only or time.perf_counter() >= stop - 0.01
    # the close stage may trade a placed task for an unplaced one of the same periods
    placed = {pl.task_id for pl in placements}
    unplaced = sorted(tid for g in problem.groups for tid in g.task_ids if tid not in placed)
    report("done", t0, objective["weighted_total"])
    # Issue 26 item 2: no bound on the soft terms is proven any more (the column generation
    # that proved one is gone); every term is non-negative, so only a total of 0 is a proven
    # optimum of the soft level.
    name: ProposalStatus
    if not level1.proven:
        name = "unknown"
    elif objective["weighted_total"] <= 0:
        name = "optimal"
    else:
        name = "feasible"
    return Proposal(
        status=name,
        placements=placements,
        unplaced=unplaced,
        objective=objective,
        start_objective=start_obj,
        start=start_name,
        max_slots=level1.best if level1.proven else None,
        bound=0.0 if name == "optimal" else None,
        weights=w,
        runtime_s=time.perf_counter() - t0,
        seed=seed,
        iterations=0,
        local_moves=0,
        critical=health[0] if health is not None else None,
        warning=health[1] if health is not None else None,
        threshold=threshold,
        start_health=start_health,
        floor=close_floor,
        floor_least_warning=least_warning,
        wall_limited=wall_limited,
        start_only=start_only,
        moved=moved_tasks(problem.current, placements),
        disruption_weight=float(disruption_weight),
        include_suggested=include_suggested,
    )


def start_rank(
    name: ProposalStart, counts: tuple[int, int], soft: float
) -> tuple[int, bool, int, float]:
    """How a start ranks for the one search (least first): fewest criticals, then the exact
    model's schedule when there are criticals (its days are the model's best for the per-day
    rules, which single moves hardly repair; its extra warnings they do), then the fewest
    warnings and the lowest soft terms."""
    critical, warning = counts
    return (critical, critical > 0 and name != "exact", warning, soft)


def _exact_start(
    state: ScheduleState,
    problem: Problem,
    target: int,
    threshold: Level,
    time_limit_s: float,
    num_workers: int,
    work_s: float | None = None,
    complete_by: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> list[Placement] | None:
    """The exact model's lexicographically best schedule of the per-day rules
    (:func:`.health_floor.realise`) as a start placing ``target`` periods, the scope tasks it
    leaves where they stand (a suggested task outside its class's days) kept there; None when
    the model found none in ``time_limit_s`` (wall clock, model building included) or a block
    is not a valid place of the problem (checked here: every scope task once, its group's
    length, days and periods, free periods or a free part of a host block).

    ``realise`` runs twice (days of a kind spread, and not; the one with the least
    (critical, warning) is the start). It packs each day's blocks by a bounded search and
    puts guests and leftovers by first fit, so it may fall short of ``target`` (a packing not
    found in its steps): what it could not place is then placed exactly in the space left
    (:func:`.counting.max_placeable` on the residual problem, by ``complete_by``; see
    :func:`_complete_start`)."""
    if time_limit_s <= 0.01:
        return None
    t0 = time.perf_counter()
    scope = {t for g in problem.groups for t in g.task_ids}
    tasks = {t.state_id: t for t in state.tasks}
    fixed = sum(tasks[t].need() for t in scope if tasks[t].status != "pending")
    if target < fixed:
        return None
    evaluator = HealthEvaluator(state, scope, threshold, 0)
    starts: list[tuple[tuple[int, int], int, list[Placement]]] = []
    for spread in (True, False):  # (the second reads the first's solve: packing alone)
        dropped: list[int] = []
        found = realise(
            state,
            threshold,
            pending_periods=target - fixed,
            scope=scope,
            time_limit_s=time_limit_s,
            num_workers=num_workers,
            work_s=work_s,
            short_ok=True,
            dropped=dropped,
            calibration=calibration,
            spread=spread,
        )
        if found is None:  # (no solution in time: the other order reads the same solve)
            break
        have = {pl.task_id for pl in found}
        found += [pl for tid, pl in problem.current.items() if tid not in have]
        if sum(pl.length for pl in found if pl.task_id in scope) < target:
            by = t0 + time_limit_s if complete_by is None else complete_by
            found = _complete_start(
                problem,
                found,
                target,
                set(dropped),
                evaluator,
                by,
                num_workers,
                calibration=calibration,
            )
        if found is not None and _valid_start(problem, found, target):
            evaluator.set_placements(found)
            starts.append((evaluator.counts_now().key, len(starts), found))
    return min(starts)[2] if starts else None


def _complete_start(
    problem: Problem,
    placements: list[Placement],
    target: int,
    dropped: set[int],
    evaluator: HealthEvaluator,
    deadline: float,
    num_workers: int,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> list[Placement] | None:
    """``placements`` (short of ``target`` periods) completed by the exact maximum of the
    residual problem (see :func:`_exact_start`; ``dropped``: the days whose pattern did not
    pack): around every block, then without the blocks of the days in ``dropped``, then also
    without every block of the lengths those days wanted. The exact maximum does not look at the
    health rules, so of the tries that reach ``target`` (by ``deadline``) the one with the least
    (critical, warning) by ``evaluator`` is returned; None when none does."""
    if not _valid_start(problem, placements, sum(pl.length for pl in placements)):
        return None
    tries = [placements]
    kept = [pl for pl in placements if pl.day not in dropped]
    if len(kept) < len(placements):
        tries.append(kept)
    # the blocks of the lengths those days wanted, wherever they went (a day's items of one
    # length may be the ones that fit another day's periods)
    duration = {t: g.duration for g in problem.groups for t in g.task_ids}
    missing = duration.keys() - {pl.task_id for pl in placements}
    lengths = {duration[t] for t in missing} | {pl.length for pl in placements if pl.day in dropped}
    wider = [pl for pl in kept if pl.length not in lengths]
    if len(wider) < len(kept):
        tries.append(wider)
    found: list[tuple[tuple[int, int], int, list[Placement]]] = []
    for keep in tries:
        left = deadline - time.perf_counter()
        if left <= 0.01:
            break
        done = sum(pl.length for pl in keep)
        rest = max_placeable(
            residual(problem, keep),
            time_limit_s=left,
            num_workers=num_workers,
            deadline=deadline,
            calibration=calibration,
        )
        if done + rest.best >= target:
            complete = keep + rest.witness
            evaluator.set_placements(complete)
            found.append((evaluator.counts_now().key, len(found), complete))
    return min(found)[2] if found else None


def _valid_start(problem: Problem, placements: list[Placement], target: int) -> bool:
    """``placements`` place ``target`` periods of the scope, each task at most once, each block
    of its group's length on a day and off the periods its rule allows, on free periods (no two
    overlapping) or inside a host block of the problem (no two guests overlapping)."""
    group_of = {tid: g for g in problem.groups for tid in g.task_ids}
    used = problem.owner != 0
    used = used.copy()
    guest_cells: set[tuple[int, int]] = set()
    hosts = {(b.day, b.host): b for b in problem.hosts}
    seen: set[int] = set()
    periods = 0
    for pl in placements:
        g = group_of.get(pl.task_id)
        if g is None or pl.task_id in seen or pl.length != g.duration:
            return False
        seen.add(pl.task_id)
        periods += pl.length
        if not g.rule.allows_day(pl.day, problem.num_days) or pl.day > used.shape[0]:
            return False
        if any(pl.slot_start <= p <= pl.slot_end for p in g.rule.banned):
            return False
        if pl.embed_host is None:
            cells = used[pl.day - 1, pl.slot_start - 1 : pl.slot_end]
            if cells.any():
                return False
            cells[:] = True
            continue
        b = hosts.get((pl.day, pl.embed_host))
        taken = {(pl.day, p) for p in range(pl.slot_start, pl.slot_end + 1)}
        if not g.can_guest or b is None or b.slot_start > pl.slot_start or b.slot_end < pl.slot_end:
            return False
        if taken & guest_cells:
            return False
        guest_cells |= taken
    return periods == target


def warm_imports() -> None:
    """Import what a solver call needs once per process (CP-SAT, GLOP's wrapper). A caller whose
    own clock starts earlier (a tool call's pipeline) calls it before that clock: otherwise a
    process's first proposal spends its limit's first ~0.4 s importing."""
    import importlib

    cp_model()
    importlib.import_module("ortools.linear_solver.python.model_builder_helper")


def _close_stage(
    state: ScheduleState,
    problem: Problem,
    placements: list[Placement],
    objective: dict[str, float],
    greedy: list[Placement],
    unplaced: list[int],
    proven: bool,
    threshold: Level,
    seed: int,
    w: Mapping[str, float],
    effort: float,
    check_s: float,
    stop: float,
    num_workers: int,
    calibration: Calibration,
    exact_s: float = 0.0,
    exact_work_s: float | None = None,
) -> tuple[
    list[Placement],
    dict[str, float],
    tuple[int, int],
    tuple[int, int],
    tuple[tuple[int, int] | None, int | None],
    bool,
]:
    """analyze_health's (critical, warning), see :mod:`.health_search`; it stops at the proven
    floor of placements of as many periods. Returns the placements, their objective, their
    counts, the counts before the stage, the floor (None when not computed in time) and whether
    the wall clock decided part of it (a floor or the feasibility check cut: the same seed may
    then answer otherwise on a faster machine, so the proposal says ``wall_limited``).

    The search's key ends with the weighted soft terms ``w`` (issue 26: the one search), and it
    gets ``one_search_share`` of the limit in estimated work.

    ``exact_s``: the wall-clock limit of the exact floor model in the search's own floor
    (:func:`.health_search.search_health`), at most what is left before ``stop`` after the
    search's set-up; the floor returned is then (floor, lexicographic least warnings);
    ``exact_work_s`` its deterministic time (a model its work ended is not a wall cut).

    Every step checks ``stop`` before it starts (issue 24 item 6): the set-up grows with the
    window. Raises :class:`~._cpsat.OutOfTime` when ``stop`` passed before the counts of the
    start were known (the feasibility check of the unplaced tasks, the search's set-up): the
    proposal then claims no counts."""
    scope_placed = sum(pl.length for pl in placements if problem.current.get(pl.task_id) is None)
    floor = None
    cut = False
    if proven:
        try:
            floor = health_floor(state, threshold, pending_periods=scope_placed, deadline=stop)
        except OutOfTime:  # a floor not computed in time is not claimed
            floor, cut = None, True
    # The check leaves the close search its set-up (it starts only before ``stop``).
    cal = calibration
    setup_s = cal.close_setup_per_task_s * len(state.tasks)
    check_s = min(check_s, stop - setup_s - time.perf_counter())
    feasibility, check_cut = unplaced_check(
        state,
        unplaced,
        check_s,
        num_workers,
        deadline=stop,
        placements=placements,
        calibration=cal,
    )
    close = search_health(
        state,
        problem,
        placements,
        level=threshold,
        seed=seed,
        budget_s=cal.one_search_share * effort,
        deadline=stop,
        feasibility_critical=feasibility,
        floor=(floor.critical, floor.warning) if floor is not None else None,
        calibration=cal,
        weights=w,
        exact_s=max(0.0, min(exact_s, stop - setup_s - time.perf_counter())),
        num_workers=num_workers,
        exact_work_s=exact_work_s,
    )
    if close.soft is not None and close.start_soft is not None:
        better = (close.counts.key, close.soft) < (close.start_counts.key, close.start_soft)
    else:
        better = close.counts.key < close.start_counts.key
    if better:
        placements = close.placements
        objective = evaluate(problem, placements, w)
    # Never lexicographically worse than the balanced greedy placing as many periods.
    counts = close.counts
    if cal.health_share > 0:  # (zero turns the whole close stage off, as benchmarks compare)
        placements, objective, counts = prefer_lexicographic(
            state,
            problem,
            threshold,
            feasibility,
            w,
            (placements, objective, counts),
            greedy,
            deadline=stop,
            calibration=cal,
        )
    cut = cut or check_cut or close.floor_cut or close.lns_cut
    floors = (close.floor, close.floor_least_warning)
    return placements, objective, counts.key, close.start_counts.key, floors, cut


__all__ = ["TERM_NAMES", "Proposal", "proposal_key", "propose_placement"]
