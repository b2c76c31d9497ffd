"""Where a proposal's one search starts (issue 40 item 2): :data:`START_BUILDERS`, run in order.

- **greedy**: the load/category-aware greedy (:func:`.baselines.balanced_greedy`), with the exact
  repair of its leftovers when it falls short of level 1 (``greedy+repair``); a greedy that
  places more than a cut level 1 raises the target (and the witness is then no start).
- **witness**: the counting model's witness of level 1.
- **exact**: the exact model's best schedule of the per-day rules (:func:`.realise.realise`),
  completed exactly when its packing falls short (:func:`exact_start`).

:func:`choose_start` takes the one with the lowest soft terms, or, when there are several, the
best by :func:`start_rank` (fewest issues first).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..rules import Level
from ..state import ScheduleState
from ._cpsat import OutOfTime, at_deadline, ran_out
from .baselines import balanced_greedy
from .budget import DEFAULT_CALIBRATION, Calibration
from .counting import CountResult, max_placeable, residual
from .health_eval import HealthEvaluator
from .objective import evaluate
from .problem import Placement, Problem, valid_start
from .realise import realise
from .run import ScopeRun

# Where a proposal's search started: the first packing order, it with the exact repair of its
# leftovers, the counting model's witness, the exact model's schedule, the item order's chains swept
# through time (.order.sweep_chains), or (keep_placed's repair) the current schedule.
ProposalStart = Literal["greedy", "greedy+repair", "witness", "current", "exact", "chains"]


@dataclass
class Starts:
    """The starts built so far (in the order they rank on ties), the periods they place
    (``target``), the greedy's placement (the result is never worse than it) and whether the
    wall clock cut a builder."""

    level1: CountResult
    target: int
    candidates: list[tuple[ProposalStart, list[Placement]]] = field(default_factory=list)
    greedy: list[Placement] = field(default_factory=list)
    cut: bool = False


@dataclass(frozen=True)
class Start:
    """The start the search takes: its name, placements (sorted by day, start, task) and soft
    terms; ``start_only``: the search's stop passed while it was chosen."""

    name: ProposalStart
    placements: list[Placement]
    objective: dict[str, float]
    start_only: bool


def greedy_start(run: ScopeRun, found: Starts) -> None:
    """The balanced greedy (a share of the limit: on 20,000 tasks it needs minutes), repaired
    exactly when it falls short of the target."""
    cal, limit = run.calibration, run.time_limit_s
    try:
        deadline = min(run.search_stop, time.perf_counter() + cal.greedy_share * limit)
        found.greedy = greedy = balanced_greedy(run.problem, run.weights, deadline=deadline)
    except OutOfTime:
        found.cut = True  # (the wall clock decided which start the search had)
        return
    slots = sum(pl.length for pl in greedy)
    if greedy and slots > found.target:  # level 1 was cut before it matched the greedy
        found.target = slots
        found.candidates.append(("greedy", greedy))
    elif slots == found.target and greedy:
        found.candidates.append(("greedy", greedy))
    elif greedy and slots < found.target and time.perf_counter() < run.search_stop:
        # Repair: place the greedy's leftovers exactly in the space it left.
        rest = max_placeable(
            residual(run.problem, greedy),
            time_limit_s=limit * cal.repair_share,
            num_workers=run.num_workers,
            deterministic_time=run.effort * cal.repair_share * cal.deterministic_share,
            deadline=run.search_stop,
            calibration=cal,
        )
        found.cut = found.cut or ran_out(rest.runtime_s, limit * cal.repair_share)
        if slots + rest.best == found.target:
            found.candidates.append(("greedy+repair", greedy + rest.witness))


def witness_start(run: ScopeRun, found: Starts) -> None:
    """Level 1's witness, unless a greedy placed more than it."""
    if found.target == found.level1.best:
        found.candidates.append(("witness", found.level1.witness))


def exact_model_start(run: ScopeRun, found: Starts) -> None:
    """Issue 26: the exact model's schedule of the per-day rules; its solve is the one the
    close stage's floor reads (remembered)."""
    cal, limit = run.calibration, run.time_limit_s
    if cal.exact_floor_share <= 0 or time.perf_counter() >= run.search_stop:
        return
    exact, cut = exact_start(
        run.state,
        run.problem,
        found.target,
        run.threshold,
        min(cal.exact_floor_share * limit, run.search_stop - time.perf_counter()),
        run.num_workers,
        run.exact_work(),
        complete_by=min(
            run.search_stop,
            time.perf_counter() + (cal.exact_floor_share + cal.exact_complete_share) * limit,
        ),
        calibration=cal,
        complete_work_s=cal.exact_complete_share * run.effort,
        evaluator=run.counter(),
    )
    found.cut = found.cut or cut
    if exact is not None:
        found.candidates.append(("exact", exact))


START_BUILDERS: tuple[Callable[[ScopeRun, Starts], None], ...] = (
    greedy_start,
    witness_start,
    exact_model_start,
)


def build_starts(run: ScopeRun, level1: CountResult) -> Starts:
    """Every start of :data:`START_BUILDERS`, in order."""
    found = Starts(level1=level1, target=level1.best)
    for builder in START_BUILDERS:
        builder(run, found)
    return found


def choose_start(run: ScopeRun, found: Starts) -> Start:
    """The start of the one search: the lowest soft terms; of several, the best by
    :func:`start_rank` (the one search minimises (critical, warning) first)."""
    scored = [(evaluate(run.problem, c[1], run.weights), c) for c in found.candidates]
    start_obj, (name, start) = min(scored, key=lambda e: e[0]["weighted_total"])
    if len(scored) > 1 and time.perf_counter() < run.search_stop:
        ev = run.counter()

        def key(e: tuple[dict[str, float], tuple[ProposalStart, list[Placement]]]) -> object:
            ev.set_placements(e[1][1])
            return start_rank(e[1][0], ev.counts_now().key, e[0]["weighted_total"])

        start_obj, (name, start) = min(scored, key=key)  # type: ignore[arg-type]
    start_only = time.perf_counter() >= run.search_stop
    placements = sorted(
        {pl.task_id: pl for pl in start}.values(),
        key=lambda pl: (pl.day, pl.slot_start, pl.task_id),
    )
    return Start(name, placements, start_obj, start_only)


def start_rank(
    name: ProposalStart, counts: tuple[int, int], soft: float
) -> tuple[int, bool, int, float]:
    """How a start ranks for the one search (least first): fewest criticals, then the exact
    model's schedule when there are criticals (its days are the model's best for the per-day
    rules, which single moves hardly repair; its extra warnings they do), then the fewest
    warnings and the lowest soft terms."""
    critical, warning = counts
    return (critical, critical > 0 and name != "exact", warning, soft)


def exact_start(
    state: ScheduleState,
    problem: Problem,
    target: int,
    threshold: Level,
    time_limit_s: float,
    num_workers: int,
    work_s: float | None = None,
    complete_by: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
    complete_work_s: float | None = None,
    evaluator: HealthEvaluator | None = None,
) -> tuple[list[Placement] | None, bool]:
    """The exact model's lexicographically best schedule of the per-day rules
    (:func:`.realise.realise`) as a start placing ``target`` periods, the scope tasks it
    leaves where they stand (a suggested task outside its class's days) kept there; None when
    the model found none in ``time_limit_s`` (wall clock, model building included) or a block
    is not a valid place of the problem (:func:`valid_start`).

    ``realise`` runs twice (days of a kind spread, and not; the one with the least
    (critical, warning) is the start). It packs each day's blocks by a bounded search and
    puts guests and leftovers by first fit, so it may fall short of ``target`` (a packing not
    found in its steps): what it could not place is then placed exactly in the space left
    (:func:`complete_start`, by ``complete_by``, with ``complete_work_s`` of work). Returns the
    start and whether the wall clock cut a completion (issue 40 item 6: the answer then says
    ``wall_limited``). ``evaluator``: the scope's counter at ``threshold`` (built when None)."""
    if time_limit_s <= 0.01:
        return None, True
    t0 = time.perf_counter()
    scope = {t for g in problem.groups for t in g.task_ids}
    tasks = {t.state_id: t for t in state.tasks}
    fixed = sum(tasks[t].need() for t in scope if tasks[t].status != "pending")
    if target < fixed:
        return None, False
    cut = False
    if evaluator is None:
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
            found, completion_cut = complete_start(
                problem, found, target, set(dropped), evaluator, by, num_workers, calibration,
                complete_work_s,
            )  # fmt: skip
            cut = cut or completion_cut
        if found is not None and valid_start(problem, found, target):
            evaluator.set_placements(found)
            starts.append((evaluator.counts_now().key, len(starts), found))
    return (min(starts)[2] if starts else None), cut


def complete_start(
    problem: Problem,
    placements: list[Placement],
    target: int,
    dropped: set[int],
    evaluator: HealthEvaluator,
    deadline: float,
    num_workers: int,
    calibration: Calibration = DEFAULT_CALIBRATION,
    work_s: float | None = None,
) -> tuple[list[Placement] | None, bool]:
    """``placements`` (short of ``target`` periods) completed by the exact maximum of the
    residual problem (see :func:`exact_start`; ``dropped``: the days whose pattern did not
    pack): around every block, then without the blocks of the days in ``dropped``, then also
    without every block of the lengths those days wanted. The exact maximum does not look at the
    health rules, so of the tries that reach ``target`` (by ``deadline``) the one with the least
    (critical, warning) by ``evaluator`` is returned; None when none does. Each try's exact
    maximum gets an equal share of ``work_s`` as CP-SAT deterministic time (issue 40 item 6: the
    work, not the time left, decides what it finds); ``deadline`` only cuts, and the second
    value says whether it did."""
    if not valid_start(problem, placements, sum(pl.length for pl in placements)):
        return None, False
    tries = _completion_tries(problem, placements, dropped)
    found: list[tuple[tuple[int, int], int, list[Placement]]] = []
    cut = False
    det = None if work_s is None else calibration.deterministic_share * work_s / len(tries)
    for keep in tries:
        left = deadline - time.perf_counter()
        if left <= 0.01:
            cut = True
            break
        done = sum(pl.length for pl in keep)
        rest = max_placeable(
            residual(problem, keep),
            time_limit_s=left,
            num_workers=num_workers,
            deadline=deadline,
            calibration=calibration,
            deterministic_time=det,
        )
        cut = cut or (not rest.proven and at_deadline(deadline))
        if done + rest.best >= target:
            complete = keep + rest.witness
            evaluator.set_placements(complete)
            found.append((evaluator.counts_now().key, len(found), complete))
    return (min(found)[2] if found else None), cut


def _completion_tries(
    problem: Problem, placements: list[Placement], dropped: set[int]
) -> list[list[Placement]]:
    """What :func:`complete_start` keeps of ``placements`` in each try: everything, then
    without the blocks of the days in ``dropped``, then also without the blocks of the lengths
    those days wanted, wherever they went (a day's items of one length may be the ones that
    fit another day's periods)."""
    tries = [placements]
    kept = [pl for pl in placements if pl.day not in dropped]
    if len(kept) < len(placements):
        tries.append(kept)
    duration = {t: g.duration for g in problem.groups for t in g.task_ids}
    missing = duration.keys() - {pl.task_id for pl in placements}
    lengths = {duration[t] for t in missing} | {pl.length for pl in placements if pl.day in dropped}
    wider = [pl for pl in kept if pl.length not in lengths]
    if len(wider) < len(kept):
        tries.append(wider)
    return tries


__all__ = [
    "START_BUILDERS",
    "ProposalStart",
    "Start",
    "Starts",
    "build_starts",
    "choose_start",
    "exact_start",
    "start_rank",
    "valid_start",
]
