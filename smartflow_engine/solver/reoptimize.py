"""Re-optimising write tools' solver side: ``spread_even`` and ``min_context_switch``.

Each re-places a subset of placed tasks with the placement model of :mod:`.submodel` (all of
them stay placed, everything else stays put) under an extra primary objective, warm-started from
the current places, and returns the moves as data. The adapter applies them atomically.

The time limit covers the whole call, model building and the checks after the solve included
(issues 12 and 24): a model not built in time answers ``unknown`` with no move; the solve stops
early enough for the checks of its moves (health, switches), whose cost grows with the window
(``post_solve_per_task_s`` of the :class:`.budget.Calibration` both entry points take); moves
those checks have no time for are dropped, and a result the wall clock cut says so
(``wall_limited``). ``min_context_switch`` counts switches as ``analyze_context`` does
(:mod:`.switches`) and keeps its moves only when that count drops.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..health_facts import gaps_of, largest_gap
from ..rules import Level
from ..state import Request, ScheduleState, relocate
from ._cpsat import OutOfTime, SolveStatus, at_deadline, make_solver, status_of, time_left
from .budget import DEFAULT_CALIBRATION, Calibration
from .health_eval import HealthCounts, HealthEvaluator
from .objective import evaluate, resolve_weights
from .order import keep_order
from .problem import Placement, Problem, build_problem, movable
from .submodel import Lin, SubModel, WindowData
from .switches import switches

ReoptimizationStatus = Literal["improved", "unchanged", "unknown", "empty"]


@dataclass(frozen=True)
class Reoptimization:
    """The outcome of a re-optimisation: ``moves`` as ``(before, after)`` pairs.

    ``status``: ``improved`` (moves make the primary measure or the soft terms better),
    ``unchanged`` (the current places are already the best found), ``unknown`` (the time limit
    ran out while the model was built: nothing moves, nothing is proven) or ``empty`` (nothing
    in scope). ``before`` / ``after`` hold the primary measure and the soft terms; ``proven``
    says the model was solved to optimality with the real weights.
    """

    status: ReoptimizationStatus
    moves: list[tuple[Placement, Placement]]
    before: dict[str, float]
    after: dict[str, float]
    task_ids: list[int] = field(default_factory=list)
    proven: bool = False
    runtime_s: float = 0.0
    # True when the wall clock, not the deterministic budget, ended the search (or left no time
    # to check its moves, which are then dropped): the same seed may then answer differently.
    wall_limited: bool = False


def _buckets(first: int, last: int, n: int) -> list[tuple[int, int]]:
    """Split days ``first..last`` into ``min(n, width)`` consecutive, near-equal buckets."""
    width = last - first + 1
    count = max(1, min(n, width))
    edges = [first + (i * width) // count for i in range(count + 1)]
    return [(edges[i], edges[i + 1] - 1) for i in range(count)]


def spread_measure(days: list[int], first: int, last: int) -> float:
    """Σ over buckets of |tasks in bucket − its even share| (0 = perfectly even)."""
    n = len(days)
    width = last - first + 1
    if n == 0 or width <= 0:
        return 0.0
    total = 0.0
    for a, b in _buckets(first, last, n):
        count = sum(1 for d in days if a <= d <= b)
        total += abs(count - n * (b - a + 1) / width)
    return total


def spread_even(
    state: ScheduleState,
    category: str,
    time_limit_s: float = 2.0,
    seed: int = 0,
    num_workers: int = 1,
    weights: Mapping[str, float] | None = None,
    work_limit_s: float | None = None,
    *,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> Reoptimization:
    """Spread one category's movable placed tasks evenly over their allowed days.

    The days (the class window, or the whole window) are cut into as many near-equal buckets as
    there are tasks (or days, if fewer); the primary objective is Σ |tasks in bucket − even
    share|, then the proposal's soft terms, then the number of tasks moved. ``work_limit_s``:
    the limit the deterministic budget is computed from (default ``time_limit_s``; a tool passes
    its asked limit while the wall clock gets what the call has left).
    """
    hosts = state.guests_by_host()
    ids = [
        t.state_id
        for t in state.tasks
        if t.category == category and t.status != "pending" and movable(state, t, hosts)
    ]
    return _reoptimize(
        state,
        ids,
        "spread",
        time_limit_s,
        seed,
        num_workers,
        weights,
        work_limit_s=work_limit_s,
        calibration=calibration,
    )


def min_context_switch(
    state: ScheduleState,
    day_from: int | None = None,
    day_to: int | None = None,
    allow_cross_day: bool = False,
    time_limit_s: float = 2.0,
    seed: int = 0,
    num_workers: int = 1,
    weights: Mapping[str, float] | None = None,
    work_limit_s: float | None = None,
    *,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> Reoptimization:
    """Regroup the movable placed tasks of days ``day_from..day_to`` to cut subject switches.

    By default each task stays on its day (only the order within the day changes), which keeps
    the spacing between study days that P1 warns about; ``allow_cross_day`` lets tasks move
    between the days of the range.
    """
    first = 1 if day_from is None else day_from
    last = state.num_days if day_to is None else day_to
    hosts = state.guests_by_host()
    ids = [
        t.state_id
        for t in state.tasks
        if t.status != "pending" and movable(state, t, hosts) and first <= t.slots[0].day <= last
    ]
    mode = "switch_cross" if allow_cross_day else "switch"
    return _reoptimize(
        state,
        ids,
        mode,
        time_limit_s,
        seed,
        num_workers,
        weights,
        days=(first, last),
        work_limit_s=work_limit_s,
        calibration=calibration,
    )


@dataclass
class _Scope:
    """What a re-optimisation works on: the problem of the scope tasks, their current places,
    the days ``first..last`` the measures read and the days the model may place on."""

    problem: Problem
    current: list[Placement]
    first: int
    last: int
    day_range: list[int]
    group_of: dict[int, int]


def _scope(
    state: ScheduleState, ids: list[int], mode: str, days: tuple[int, int] | None
) -> _Scope | None:
    """The scope of ``ids`` (None when there is no day to re-place on)."""
    problem = build_problem(state, by_subject=True, task_ids=ids)
    current = list(problem.current.values())
    if days is None:
        first = min(g.rule.start_day for g in problem.groups)
        last = max(g.rule.end_day for g in problem.groups)
    else:
        first, last = days
    if last < first:  # no day to re-place on (loading refuses such a class; kept as a guard)
        return None
    day_range = list(range(first, last + 1))
    if mode == "switch":  # tasks keep their days: the other days only add constants
        day_range = sorted({pl.day for pl in problem.current.values()})
    return _Scope(problem, current, first, last, day_range, problem.group_of())


def _extra_terms(scope: _Scope, mode: str, n: int, cal: Calibration) -> Callable[[SubModel], None]:
    """The model's extra terms: a small reward per variable at a current place, then the
    mode's primary term (spread) or its day counts (switch)."""
    problem, current, group_of = scope.problem, scope.current, scope.group_of
    origin: dict[tuple[int, int], int] = defaultdict(int)  # (group, day) -> tasks there now
    for pl in current:
        origin[(group_of[pl.task_id], pl.day)] += 1

    def extra(sub: SubModel) -> None:
        d_scale = problem.num_days
        # Moving costs a little: reward each variable at a current place.
        here = {
            (pl.day, pl.slot_start, group_of[pl.task_id]) for pl in current if pl.embed_host is None
        }
        for (ri, gi, s), var in sub.x.items():
            if (problem.runs[ri].day, s, gi) in here:
                sub.cost.append((var, -round(sub.win.scale * cal.move_weight * d_scale)))
        if mode == "spread":
            _add_spread(sub, scope.first, scope.last, n, cal.spread_weight)
        elif mode == "switch":
            _keep_days(sub, origin)

    return extra


def _build_model(
    scope: _Scope,
    mode: str,
    n: int,
    w: Mapping[str, float],
    deadline: float,
    cal: Calibration,
) -> tuple[WindowData, SubModel, int | None]:
    """The placement model warm-started at the current places, and its hinted objective
    (raises :class:`OutOfTime` when ``deadline`` passes while it is built)."""
    problem, current = scope.problem, scope.current
    model_w = dict(w)
    if mode != "spread":
        model_w["context_switch"] = cal.switch_weight
    free_now = sum(pl.length for pl in current if pl.embed_host is None)
    win = WindowData.build(
        problem,
        model_w,
        free_now,
        (cal.move_weight, cal.spread_weight),
        deadline=deadline - cal.deadline_margin_s,
    )
    extra = _extra_terms(scope, mode, n, cal)
    groups = [g.count for g in problem.groups]
    sub = SubModel(win, scope.day_range, groups, problem.required_slots, extra, free_slots=free_now)
    return win, sub, sub.hint(current)


def _solved_places(
    scope: _Scope, mode: str, sub: SubModel, solver: Any, status: SolveStatus, hinted: int | None
) -> list[Placement]:
    """The places of the solution when it beats the hint, else the current ones."""
    problem, current = scope.problem, scope.current
    if (
        status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE)
        and hinted is not None
        and solver.objective_value < hinted - 1e-9
    ):
        pool = {gi: list(g.task_ids) for gi, g in enumerate(problem.groups)}
        before_map = {pl.task_id: pl for pl in current}
        fresh = sub.placements(solver, pool, before_map)
        return _same_day(fresh, before_map, scope.group_of) if mode == "switch" else fresh
    return current


def _checked_moves(
    state: ScheduleState,
    scope: _Scope,
    mode: str,
    moves: list[tuple[Placement, Placement]],
    after_places: list[Placement],
    before: dict[str, float],
    w: Mapping[str, float],
) -> tuple[list[tuple[Placement, Placement]], dict[str, float]]:
    """``moves`` and the measures after them, or none when they worsen analyze_health's
    (critical, warning) or (min_context_switch) do not cut the student's switches."""
    first, last = scope.first, scope.last
    if moves and health_worse(state, moves):  # (critical, warning) rank first (issue 10)
        moves = []
    after = _measures(scope.problem, after_places, w, mode, first, last) if moves else dict(before)
    if moves and mode != "spread":
        # The student's switch count (analyze_context's, see .switches) must drop, else
        # nothing moves: the model's own switch term also counts courses and fixed neighbours.
        moved = _switches_after(state, moves, first, last)
        if moved is None or moved >= before["context_switch"]:
            moves, after = [], dict(before)
        else:
            after["context_switch_term"] = after["context_switch"]
            after["context_switch"] = float(moved)
    return moves, after


def _reoptimize(
    state: ScheduleState,
    ids: list[int],
    mode: str,
    time_limit_s: float,
    seed: int,
    num_workers: int,
    weights: Mapping[str, float] | None,
    days: tuple[int, int] | None = None,
    work_limit_s: float | None = None,
    *,
    calibration: Calibration,
) -> Reoptimization:
    t0 = time.perf_counter()
    cal = calibration
    w = resolve_weights(weights)
    scope = _scope(state, ids, mode, days) if ids else None
    if scope is None:
        return Reoptimization("empty", [], {}, {}, [], True, time.perf_counter() - t0)
    current = scope.current
    before = _measures(scope.problem, current, w, mode, scope.first, scope.last, state)
    # The wall clock holds the whole call, model building included (issue 12), and the checks
    # of the moves after the solve (issue 24): the solve stops that much earlier.
    deadline = t0 + max(time_limit_s, cal.min_work_s)
    post = min(0.5 * time_limit_s, cal.post_solve_per_task_s * len(state.tasks))
    try:
        win, sub, hinted = _build_model(scope, mode, len(ids), w, deadline, cal)
    except OutOfTime:
        elapsed = time.perf_counter() - t0
        return Reoptimization(
            "unknown", [], before, dict(before), sorted(ids), False, elapsed, wall_limited=True
        )
    effort = time_limit_s if work_limit_s is None else work_limit_s
    solve_until = deadline - post
    solver = make_solver(
        time_left(solve_until),
        num_workers,
        seed=seed,
        exact=False,
        deterministic_time=cal.reoptimize_det_share * effort,
    )
    status = status_of(solver.solve(sub.model))
    wall_limited = status != SolveStatus.OPTIMAL and at_deadline(solve_until)
    after_places = _solved_places(scope, mode, sub, solver, status, hinted)
    if after_places is not current:  # the item order among the moved tasks (issue 42)
        kept, dropped = keep_order(state, after_places, ids, calibration=cal)
        after_places = current if dropped else kept
    moves = _moves(current, after_places)
    # ``post`` is about twice the checks' measured cost: half of it must still fit.
    if moves and time.perf_counter() + 0.5 * post > deadline:  # no time left to check them
        moves, wall_limited = [], True
    moves, after = _checked_moves(state, scope, mode, moves, after_places, before, w)
    return Reoptimization(
        status="improved" if moves else "unchanged",
        moves=moves,
        before=before,
        after=after,
        task_ids=sorted(ids),
        # Proven only when the model's integer weights are the real ones (see .objective).
        proven=status == SolveStatus.OPTIMAL and win.exact,
        runtime_s=time.perf_counter() - t0,
        wall_limited=wall_limited,
    )


def _switches_after(
    state: ScheduleState, moves: list[tuple[Placement, Placement]], first: int, last: int
) -> int | None:
    """The study-layer switches on days ``first..last`` once ``moves`` are made (applied to a
    copy through the write path the tool uses); None if the write path refuses them."""
    copy = state.copy_state()
    requests = [Request(after.task_id, after.day, after.slot_start) for _, after in moves]
    if not relocate(copy, requests, op="min_context_switch", placed_only=True).ok:
        return None
    return switches(copy, first, last)


def _add_spread(sub: SubModel, first: int, last: int, n: int, weight: float) -> None:
    """Primary term: Σ_b |width·count_b − n·len_b| (= width · Σ |count − even share|), at
    ``weight`` per task of deviation."""
    p = sub.p
    width = last - first + 1
    coef = max(1, round(sub.win.scale * weight * p.num_days / width))
    by_day: dict[int, list[Any]] = defaultdict(list)
    for (ri, _, _), var in sub.x.items():
        by_day[p.runs[ri].day].append(var)
    for (hi, _), var in sub.y.items():
        by_day[p.hosts[hi].day].append(var)
    for a, b in _buckets(first, last, n):
        vars_ = [v for d in range(a, b + 1) for v in by_day.get(d, [])]
        share = n * (b - a + 1)
        dev = sub.model.new_int_var(0, width * n + share, f"spread_dev_d{a}_{b}")
        up = Lin([(v, width) for v in vars_], -share)
        down = Lin([(v, -width) for v in vars_], share)
        sub.add_max(dev, [up, down], coef)


def _keep_days(sub: SubModel, origin: Mapping[tuple[int, int], int]) -> None:
    """Each group keeps as many tasks on each day as it has now."""
    p = sub.p
    per: dict[tuple[int, int], list[Any]] = defaultdict(list)
    for (ri, gi, _), var in sub.x.items():
        per[(gi, p.runs[ri].day)].append(var)
    for (hi, gi), var in sub.y.items():
        per[(gi, p.hosts[hi].day)].append(var)
    for key, vars_ in per.items():
        sub.model.add(sum(vars_) == origin.get(key, 0))


def _same_day(
    fresh: list[Placement], before: Mapping[int, Placement], group_of: Mapping[int, int]
) -> list[Placement]:
    """Re-assign task ids so that each task keeps its day (the model kept the counts)."""
    by_key: dict[tuple[int, int], list[int]] = defaultdict(list)
    for tid, pl in sorted(before.items()):
        by_key[(group_of[tid], pl.day)].append(tid)
    stays = {
        tid
        for tid, pl in before.items()
        if any(f.task_id == tid and f.day == pl.day for f in fresh)
    }
    out: list[Placement] = []
    for f in fresh:
        key = (group_of[f.task_id], f.day)
        if f.task_id in stays:
            by_key[key].remove(f.task_id)
            out.append(f)
    for f in fresh:
        if f.task_id in stays:
            continue
        key = (group_of[f.task_id], f.day)
        tid = by_key[key].pop(0)
        out.append(Placement(tid, f.day, f.slot_start, f.slot_end, f.embed_host))
    return out


def _moves(before: list[Placement], after: list[Placement]) -> list[tuple[Placement, Placement]]:
    old = {pl.task_id: pl for pl in before}
    out = []
    for pl in sorted(after, key=lambda p: p.task_id):
        prev = old[pl.task_id]
        if (prev.day, prev.slot_start, prev.embed_host) != (pl.day, pl.slot_start, pl.embed_host):
            out.append((prev, pl))
    return out


def _measures(
    problem: Problem,
    places: list[Placement],
    w: Mapping[str, float],
    mode: str,
    first: int,
    last: int,
    state: ScheduleState | None = None,
) -> dict[str, float]:
    """The soft terms of ``places``; for min_context_switch (given the ``state`` the places
    are current in) ``context_switch`` is the student's count of :mod:`.switches` on days
    ``first..last``, the one analyze_context reports (the solver's own term is kept as
    ``context_switch_term``)."""
    out = evaluate(problem, places, w)
    if state is not None and mode != "spread":
        out["context_switch_term"] = out["context_switch"]
        out["context_switch"] = float(switches(state, first, last))
    if mode == "spread":
        days = sorted(pl.day for pl in places)
        out["spread_deviation"] = spread_measure(days, first, last)
        out["days_used"] = float(len(set(days)))
        out["max_gap"] = float(largest_gap(gaps_of(sorted(set(days)))) or 0)
    return out


# ------------------------------------------------- the re-optimisers' health check (issue 10)
def health_of_moves(
    state: ScheduleState, moves: Sequence[tuple[Placement, Placement]], level: Level = "normal"
) -> tuple[HealthCounts, HealthCounts]:
    """analyze_health's (critical, warning) before and after ``moves`` ((before, after) places
    of placed tasks), feasibility issue aside: the re-optimising tools rank these first."""
    ev = HealthEvaluator(state, {before.task_id for before, _ in moves}, level)
    ev.set_placements([before for before, _ in moves])
    start = ev.counts_now()
    ev.set_placements([after for _, after in moves])
    return start, ev.counts_now()


def health_worse(
    state: ScheduleState, moves: Sequence[tuple[Placement, Placement]], level: Level = "normal"
) -> bool:
    """``moves`` leave analyze_health's (critical, warning) lexicographically worse: a
    re-optimising tool (spread_even, min_context_switch) then keeps the current places, since
    its own measure only ranks after (critical, warning)."""
    before, after = health_of_moves(state, moves, level)
    return after.key > before.key
