"""The one search of a proposal: a local search on the exact ``analyze_health`` counts.

After level 1 (the most periods, proven), a proposal is judged by the health rule table
(p1 §4.3-§4.7): the agent may close when ``critical=0 && warning<=1``. The search starts from a
placement and moves the placed scope tasks to minimise ``(critical, warning)``
lexicographically, then (with weights) the weighted soft terms, scored exactly by
:class:`.health_eval.HealthEvaluator` (equal to ``analyze_health``'s counts; :mod:`.scoring`
pairs it with the soft evaluator). The set of placed tasks never changes (level 1 stays), nor do
class windows, banned periods, host blocks (one guest each) or anything outside the scope.

- **Operators** (:data:`SCANS`, :data:`MOVES`; the moves themselves in :mod:`.moves`): targeted
  scans (a subject's long gap, a day with an issue) and the scan of one task's places, else a
  gap move, a swap of two tasks of equal length and different subjects, or a relocation.
- **Acceptance** (:func:`.scoring.accepts`): a candidate is taken when its (critical, warning, guidance
  slack) is not above the current one's, so the search crosses the plateaus of the counts on
  the slack (how far metrics sit past their warning thresholds).
- **Stop**: at the proven floor of the scope (:mod:`.scope_floor`, computed once per scope by a
  proposal and passed in), or when the work budget is spent.
- **Soft phase** (:mod:`.soft_phase`, with weights): what is left of the budget lowers the soft
  terms without raising (critical, warning).
- **Send-back** (:func:`.least_change.return_moved`): every moved task whose return to its
  ``origin`` keeps the best key goes back; ``max_moves`` caps how many tasks may end away.

Deterministic for a seed: the work is counted in evaluations, converted to estimated seconds
(:func:`.scoring.eval_cost`); the wall-clock ``deadline`` is only a safety net.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..rules import Level
from ..state import ScheduleState
from ._cpsat import OutOfTime
from .budget import DEFAULT_CALIBRATION, Calibration, too_late
from .health_eval import HealthCounts, HealthEvaluator
from .health_floor import HealthFloor
from .least_change import return_moved
from .moves import Changes, Neighbourhood, OperatorTable, draw_operator, hot_tasks
from .problem import Placement, Problem
from .scope_floor import ScopeFloor, scope_floor
from .scoring import SoftHealth, accepts, eval_cost, setup_cost
from .soft_eval import SoftEvaluator
from .soft_phase import SoftPhase

# The health phase's operators (see :func:`.moves.draw_operator`): one draw picks a targeted
# scan (or none); without a scan, the scan of one task's places (``scan_share``); without that,
# the same draw picks the move.
SCANS: OperatorTable = (
    ("gap_scan_share", "gap", 1),
    ("unload_scan_share", "unload", 1),
    (None, "", 1),
)
MOVES: OperatorTable = (("gap_share", "gap", 1), ("swap_share", "swap", 2), (None, "relocate", 1))


@dataclass(frozen=True)
class HealthSearchResult:
    """``placements`` of the scope tasks; ``counts`` their (critical, warning); ``moved``: tasks
    away from ``origin``; ``evaluations``: the work done; ``work_s`` its estimate in seconds;
    ``floor``: the proven (critical, warning) floor of every placement of this scope placing as
    many pending periods, feasibility issue included, as :meth:`.HealthFloor.meets` reads it
    (critical bounds critical, the sum bounds critical + warning); ``None`` when none was
    computed before the deadline (never claimed unproven); ``floor_least_warning``: when
    known, the lexicographic floor's warnings (every placement has more criticals than
    ``floor[0]`` or at least this many warnings, :attr:`.HealthFloor.least_warning`)."""

    placements: list[Placement]
    counts: HealthCounts
    start_counts: HealthCounts
    moved: int
    evaluations: int
    work_s: float
    floor: tuple[int, int] | None = None
    # True when the deadline stopped the population floor before it was computed: the search
    # then did not stop at it, so the same seed may give another result on a faster machine.
    floor_cut: bool = False
    # With ``weights``: the weighted soft terms of ``placements`` and of the start.
    soft: float | None = None
    start_soft: float | None = None
    floor_least_warning: int | None = None
    # True when the wall clock (the safety net ``deadline``), not the work budget, ended the
    # search or its send-back: the same seed may then answer otherwise on a faster machine.
    wall_cut: bool = False


class Walk:
    """A search's state: its evaluator (paired with ``soft`` when weighted), its moves, the
    current counts, the best placement so far and the work spent."""

    def __init__(
        self,
        ev: HealthEvaluator,
        soft: SoftEvaluator | None,
        search: Neighbourhood,
        placements: Sequence[Placement],
        floor: HealthFloor | None,
        feasibility_critical: int,
        safety: float,
    ) -> None:
        self.ev, self.soft, self.search = ev, soft, search
        self.cal, self.rng = search.cal, search.rng
        self.floor, self.feasibility_critical, self.safety = floor, feasibility_critical, safety
        self.start_placed = list(placements)  # the start as given
        self.start = self.cur = ev.counts_now()
        self.start_soft = self.best_soft = self.soft_now() if soft is not None else 0.0
        self.best_key = (self.start.critical, self.start.warning)
        self.best = dict(ev.placed_scope)
        self.tids = sorted(ev.placed_scope)
        self.hot: list[int] = self.tids
        self.evals = 0
        self.wall_cut = False

    def soft_now(self) -> float:
        """The soft terms of the current placement (the soft evaluator brought up to date)."""
        assert isinstance(self.ev, SoftHealth) and self.soft is not None
        self.ev.sync()
        return self.soft.total()

    def at_floor(self, key: tuple[int, int]) -> bool:
        if self.floor is None:
            return key == (0, 0)
        return self.floor.meets(key[0] - self.feasibility_critical, key[1])

    def record(self, counts: HealthCounts) -> None:
        """Keep the current placement when it is the best so far: on (critical, warning), and
        with weights on (critical, warning, soft)."""
        key = counts.key
        if self.soft is None:
            if key < self.best_key:
                self.best_key, self.best = key, dict(self.ev.placed_scope)
            return
        value = self.soft_now()
        if key < self.best_key or (key == self.best_key and value < self.best_soft - 1e-9):
            self.best_key, self.best_soft, self.best = key, value, dict(self.ev.placed_scope)

    def within_moves(self) -> bool:
        limit = self.search.max_moves
        return limit is None or self.search.moved() <= limit


def search_health(
    state: ScheduleState,
    problem: Problem,
    placements: Sequence[Placement],
    *,
    level: Level = "normal",
    seed: int = 0,
    budget_s: float = 1.0,
    deadline: float | None = None,
    feasibility_critical: int = 0,
    max_moves: int | None = None,
    origin: Sequence[Placement] | None = None,
    floor: tuple[int, int] | HealthFloor | ScopeFloor | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
    weights: Mapping[str, float] | None = None,
    exact_s: float = 0.0,
    num_workers: int = 1,
    exact_work_s: float | None = None,
) -> HealthSearchResult:
    """Minimise ``(critical, warning)`` of ``analyze_health`` over moves of the placed scope
    tasks (``problem.groups``' tasks; everything else stays), from ``placements`` (a place for
    some scope tasks, the others stay unplaced), counted at ``level``.

    ``budget_s``: estimated seconds of work (evaluations × :func:`.scoring.eval_cost`,
    deterministic); ``deadline``: a ``time.perf_counter()`` value after which it stops regardless
    (safety net); ``feasibility_critical``: 1 when ``analyze_health`` adds its feasibility issue
    to every placement of this scope; ``max_moves``: at most this many tasks end away from their
    place in ``origin`` (default: the start; ``None``: no limit).

    ``floor``: the scope's floor computed once (a :class:`.scope_floor.ScopeFloor`, as a proposal
    passes it), or a proven floor (critical, warning), feasibility issue aside, that the search
    combines with the floor of its own population (:func:`.scope_floor.scope_floor`, its exact
    model given ``exact_s`` of wall clock, ``num_workers`` and ``exact_work_s`` of work; a model
    the wall clock cut makes the result say ``floor_cut``). It stops once the floor is met.

    With ``weights`` (the soft terms' of :mod:`.objective`), the key is (critical, warning,
    weighted soft terms) (issue 26): the health phase (stopping at the floor or after
    ``soft_health_part`` times the evaluations) keeps the best on the whole key, then the soft
    phase (:mod:`.soft_phase`) lowers the soft terms with what is left of the budget.

    Returns never worse counts than the start (with weights: never a worse key); among equal
    keys, fewer moved tasks. Raises :class:`~._cpsat.OutOfTime` when ``deadline`` passed before
    the search could count its start (its set-up grows with the window, see
    :func:`.scoring.setup_cost`): it claims nothing (issue 24 item 6).
    """
    cal = calibration
    if too_late(deadline, setup_cost(state, cal), cal):
        raise OutOfTime("the close stage's deadline passed before its set-up")
    if isinstance(floor, ScopeFloor):
        found = floor
    else:
        found = scope_floor(
            state, problem, placements, level=level, known=floor, deadline=deadline,
            exact_s=exact_s, num_workers=num_workers, exact_work_s=exact_work_s, calibration=cal,
        )  # fmt: skip
    if too_late(deadline, setup_cost(state, cal), cal):  # (the floor may have used what was left)
        raise OutOfTime("the close stage's deadline passed before its evaluator was built")
    walk = _start_walk(
        state, problem, placements, level, seed, max_moves, origin, found.floor,
        feasibility_critical, cal, weights, deadline,
    )  # fmt: skip
    cost = eval_cost(problem.num_days, cal) * (cal.soft_eval_factor if weights is not None else 1.0)
    limit = int(budget_s / cost) if budget_s > 0 else 0
    # With weights, the health phase gets at most this share of the evaluations (it stops at
    # the floor; a share above 1 lets a search short of its floor go on past the budget); the
    # soft phase gets what is left of the budget.
    _health_phase(walk, int(limit * cal.soft_health_part) if weights is not None else limit)
    _soft_phase(walk, limit)
    final, final_soft = _send_back(walk)
    return _result(walk, found, final, final_soft, cost)


def _soft_phase(walk: Walk, limit: int) -> None:
    """With weights, the soft phase (:mod:`.soft_phase`) on what is left of ``limit``."""
    if walk.soft is None or not walk.tids or walk.evals >= limit:
        return
    assert isinstance(walk.ev, SoftHealth)
    walk.ev.sync()
    walk.ev.lazy = False
    walk.evals = SoftPhase(walk, walk.soft).run(limit, walk.safety)
    walk.wall_cut = walk.wall_cut or (walk.evals < limit and time.perf_counter() > walk.safety)


def _result(
    walk: Walk, found: ScopeFloor, final: HealthCounts, final_soft: float, cost: float
) -> HealthSearchResult:
    """The search's answer: where the walk ended (after the send-back) and the floor it had."""
    out = sorted(walk.ev.placed_scope.values(), key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
    least, weighted = found.floor, walk.soft is not None
    return HealthSearchResult(
        out,
        final,
        walk.start,
        sum(1 for pl in out if walk.search.origin.get(pl.task_id) != pl),
        walk.evals,
        walk.evals * cost,
        floor=None
        if least is None
        else (least.critical + walk.feasibility_critical, least.warning),
        floor_cut=found.cut,
        soft=final_soft if weighted else None,
        start_soft=walk.start_soft if weighted else None,
        floor_least_warning=None if least is None else least.least_warning,
        wall_cut=walk.wall_cut,
    )


def _start_walk(
    state: ScheduleState,
    problem: Problem,
    placements: Sequence[Placement],
    level: Level,
    seed: int,
    max_moves: int | None,
    origin: Sequence[Placement] | None,
    floor: HealthFloor | None,
    feasibility_critical: int,
    cal: Calibration,
    weights: Mapping[str, float] | None,
    deadline: float | None,
) -> Walk:
    """The search's evaluator (paired with the soft one when weighted) at ``placements``."""
    scope = {tid for g in problem.groups for tid in g.task_ids}
    soft: SoftEvaluator | None = None
    ev: HealthEvaluator
    if weights is not None:
        soft = SoftEvaluator(problem, weights)
        ev = SoftHealth(state, scope, level, feasibility_critical, soft)
    else:
        ev = HealthEvaluator(state, scope, level, feasibility_critical)
    ev.set_placements(placements)
    # The health phase reads the soft terms only on plateaus and for the best: the soft
    # evaluator follows lazily (the scans' candidates never reach it).
    if isinstance(ev, SoftHealth):
        ev.lazy = True
    origin_map = {pl.task_id: pl for pl in (origin if origin is not None else placements)}
    rng = np.random.default_rng(seed)
    search = Neighbourhood(ev, problem, origin_map, rng, max_moves, cal)
    safety = deadline if deadline is not None else float("inf")
    return Walk(ev, soft, search, placements, floor, feasibility_critical, safety)


def _health_phase(walk: Walk, limit: int) -> None:
    """Steps until ``limit`` evaluations, the floor, or the wall clock. With weights: after
    ``soft_kick_per_task`` evaluations per placed task without a better key the walk restarts
    from the best placement kicked by ``soft_kick_moves`` random moves (iterated local search:
    single moves and plateau walks stall in basins a few moves deep)."""
    cal, ev = walk.cal, walk.ev
    kick_after = (
        int(cal.soft_kick_per_task * len(walk.start_placed)) if walk.soft is not None else 0
    )
    next_refresh = 0
    last_best = (walk.best_key, 0)
    # Evaluations without a better key before the phase ends (deterministic; kicks included).
    patience = max(cal.health_patience_min, int(cal.health_patience_per_task * len(walk.tids)))
    improved = (walk.best_key, 0)
    while walk.evals < limit and walk.tids and not walk.at_floor(walk.best_key):
        if walk.evals >= next_refresh:  # (scans spend many evaluations at once)
            next_refresh = walk.evals + cal.refresh_every
            if time.perf_counter() > walk.safety:
                walk.wall_cut = True
                break
            if walk.best_key != improved[0]:
                improved = (walk.best_key, walk.evals)
            elif patience and walk.evals - improved[1] >= patience:
                break
            if walk.best_key != last_best[0]:
                last_best = (walk.best_key, walk.evals)
            elif kick_after and walk.evals - last_best[1] >= kick_after:
                _kick(walk)
                last_best = (walk.best_key, walk.evals)
            walk.hot = hot_tasks(ev, walk.tids) or walk.tids
        if not _scan_step(walk):
            _move_step(walk)


def _kick(walk: Walk) -> None:
    """The best placement, kicked by ``soft_kick_moves`` random relocations."""
    walk.ev.set_placements(list(walk.best.values()))
    for _ in range(walk.cal.soft_kick_moves):
        kicked = walk.search.relocate(walk.tids[int(walk.rng.integers(len(walk.tids)))], "any")
        if kicked is not None and not walk.within_moves():
            walk.search.undo(kicked)
    walk.cur = walk.ev.counts_now()
    walk.evals += walk.cal.soft_kick_moves


def _scan_step(walk: Walk) -> bool:
    """A targeted scan (:data:`SCANS`) or the scan of one hot task's places; False when the
    draws chose neither (the same draw then picks a move)."""
    search, rng, cal = walk.search, walk.rng, walk.cal
    scanned: tuple[Changes | None, int] | None = None
    kind = draw_operator(SCANS, float(rng.random()), cal, len(walk.tids))
    if kind:
        cands = search.gap_candidates() if kind == "gap" else search.unload_candidates()
        if cands:
            scanned = search.scan(cands, search.score(walk.cur))
    if scanned is None and rng.random() < cal.scan_share:
        tid = walk.hot[int(rng.integers(len(walk.hot)))]
        scanned = search.best_relocation(tid, search.score(walk.cur))
    if scanned is None:
        return False
    changes, spent = scanned
    walk.evals += spent
    if changes is not None and walk.within_moves():
        walk.cur = walk.ev.counts_now()
        walk.record(walk.cur)
    elif changes is not None:
        search.undo(changes)
    return True


def _move_step(walk: Walk) -> None:
    """One move of :data:`MOVES`, kept by :func:`.scoring.accepts` (and the move limit)."""
    search, rng, hot, tids = walk.search, walk.rng, walk.hot, walk.tids
    kind = draw_operator(MOVES, float(rng.random()), walk.cal, len(tids))
    changes: Changes | None
    if kind == "gap":
        changes = search.gap_move()
        if changes is None:
            changes = search.relocate(hot[int(rng.integers(len(hot)))], "light")
    elif kind == "swap":
        a = hot[int(rng.integers(len(hot)))]
        b = tids[int(rng.integers(len(tids)))]
        changes = search.swap(a, b) if a != b else None
    else:
        tid = hot[int(rng.integers(len(hot)))] if rng.random() < 0.7 else tids[
            int(rng.integers(len(tids)))
        ]  # fmt: skip
        changes = search.relocate(tid, "light" if rng.random() < 0.5 else "any")
    walk.evals += 1  # (a failed draw still costs a scan)
    if changes is None:
        return
    if not walk.within_moves():
        search.undo(changes)
        return
    cand = walk.ev.counts_now()
    # (plateaus are crossed on the slack alone, with weights too: the soft terms only choose
    # the best among equal counts, see docs/decisions.md)
    if accepts((*cand.key, cand.slack), (*walk.cur.key, walk.cur.slack)):
        walk.cur = cand
        walk.record(cand)
    else:
        search.undo(changes)


def _send_back(walk: Walk) -> tuple[HealthCounts, float]:
    """The best placement with every moved task whose return to its origin keeps the best key
    sent back (:func:`.least_change.return_moved`, one pass); the start when no key is better.
    Returns the counts and soft terms of the result."""
    ev, soft = walk.ev, walk.soft
    ev.set_placements(list(walk.best.values()))

    def key() -> tuple[float, ...]:
        counts = ev.counts_now()
        return (*counts.key, walk.soft_now()) if soft is not None else counts.key

    best, spent, cut = return_moved(ev, walk.search.origin, key, walk.safety, repeat=False)
    walk.evals += spent
    walk.wall_cut = walk.wall_cut or cut
    final = ev.counts_now()
    final_soft = best[-1] if soft is not None else 0.0
    start_soft = walk.start_soft - 1e-9 if soft is not None else 0.0
    if (final.key, final_soft) >= (walk.start.key, start_soft):
        ev.set_placements(walk.start_placed)  # no better key: the start, untouched
        return walk.start, walk.start_soft
    return final, final_soft


__all__ = ["MOVES", "SCANS", "HealthSearchResult", "Walk", "search_health"]
