"""Every calibration figure of the solver's searches, in one frozen value: :class:`Calibration`.

The searches are bounded by deterministic work measures (evaluations of the health and soft
terms, CP-SAT deterministic time), converted to estimated seconds
of the 2-core CI machine the figures below were calibrated on; the wall clock is only a safety
net. Shares are fractions of a call's time limit. Changing a figure changes which proposal a
seed gives, so every change is re-measured with ``benchmarks/bench_solver.py``.

The figures are not module globals (issue 30 item 3): every solver entry point takes
``calibration`` (default :data:`DEFAULT_CALIBRATION`, the measured figures) and hands it to its
stages, which read ``calibration.<figure>``; a test or a benchmark passes
``dataclasses.replace(DEFAULT_CALIBRATION, health_share=0.0)`` instead of patching a module.

This module imports nothing of ours: every solver module may read it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields


# ------------------------------------------------------------------------------ every call
@dataclass(frozen=True)
class Deadline:
    """The wall clock of one whole call (issue 24 item 6): made once, where the call starts
    (the tool pipeline's stamp, a batch job's start), and handed to every stage, so that model
    building, the searches, applying the answer and rendering it all share one limit.

    ``started`` and ``at`` are ``time.perf_counter()`` values.
    """

    started: float
    limit_s: float

    @classmethod
    def start(cls, limit_s: float, started: float | None = None) -> Deadline:
        """A deadline ``limit_s`` after ``started`` (default: now)."""
        return cls(time.perf_counter() if started is None else started, max(0.0, limit_s))

    @property
    def at(self) -> float:
        return self.started + self.limit_s

    def spent(self) -> float:
        """Seconds since the call started."""
        return time.perf_counter() - self.started

    def left(self, reserve_s: float = 0.0) -> float:
        """Seconds left before the deadline, less ``reserve_s`` (never negative)."""
        return max(0.0, self.at - reserve_s - time.perf_counter())

    def passed(self) -> bool:
        return time.perf_counter() >= self.at


def passed(deadline: float | None) -> bool:
    """A stage's deadline (a ``time.perf_counter()`` value, ``None``: none) has passed."""
    return deadline is not None and time.perf_counter() > deadline


def too_late(deadline: float | None, cost_s: float, calibration: Calibration) -> bool:
    """A step estimated to cost ``cost_s`` must not start: its deadline has passed and it is not
    cheap (issue 24 item 6: set-ups that grow with the window). A cheap step (at most
    ``calibration.setup_grace_s``) still runs, so that a small window's answer does not depend on
    how busy the machine is; what it adds to a call stays well inside the limit + 0.5 s."""
    return cost_s > calibration.setup_grace_s and passed(deadline)


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """The solver's calibration: every budget share, work cost and search figure, one frozen
    value passed down from the entry points (``calibration=``) to every stage.

    Shares are fractions of a call's time limit; costs are estimated seconds of the 2-core CI
    machine per unit of deterministic work. Tests and benchmarks vary a figure with
    ``dataclasses.replace(DEFAULT_CALIBRATION, ...)``.
    """

    # -------------------------------------------------------------------------- every call
    # The least wall time the stages of a call get: a smaller limit is rounded up to it for the
    # deadline (well inside the limit + 0.5 s every entry point promises), so that a tiny window
    # asked with a 1 ms limit can still be solved and proven.
    min_work_s: float = 0.05
    # Deterministic-time budget as a share of the wall-clock limit (measured on the 2-core CI
    # machine: 1.3-1.6 s of wall time per deterministic unit, so half the limit in
    # deterministic units ends a solve at 65-80 % of the wall-clock limit, which then only
    # acts on a very busy machine).
    deterministic_share: float = 0.5
    # Every stage of a proposal or re-optimisation stops this long before the call's deadline,
    # so that assembling the answer still fits the limit.
    deadline_margin_s: float = 0.02
    # A step past its deadline still runs when it costs at most this (see :func:`too_late`): the
    # close stage's set-up of a window of up to ~1,600 tasks.
    setup_grace_s: float = 0.05

    # -------------------------------------------------------------------------- the proposal
    # (:func:`.placement.propose_placement`) Every stage is bounded by a deterministic work
    # measure, converted to estimated seconds of the 2-core CI machine; the wall clock
    # (time_limit_s) is only a safety net. A call's work is work_share of its limit (or the
    # caller's ``work_limit_s``), and the stage shares below are fractions of its ``effort`` =
    # work / shares_of (the shares were tuned when a call's work was 0.4 of its limit). Measured
    # on the bench_close windows at their default limits (2026-12-07, results_close.md): with
    # work_share 0.4 every default proposal ran into its limit on a quiet machine (the stages
    # took 1.6-3x the effort), so no default reply was reproducible; at 0.1 (effort a quarter of
    # the limit) the stages take 0.3-0.7 of the limit quietly, which leaves a busy machine its
    # ~2x. A proposal the wall clock did cut says so (``wall_limited``); a caller that needs the
    # same answer everywhere fixes the work (``work_limit_s``) under a generous wall limit.
    work_share: float = 0.1
    shares_of: float = 0.4
    level1_share: float = 0.3  # of the limit for the counting model's proven maximum (level 1)
    repair_share: float = 0.1  # of the limit for placing the greedy's leftovers exactly
    greedy_share: float = 0.2  # of the limit, at most, for the balanced greedy (minutes on 20k)
    # The close stage's set-up (analyze_health's counts of the start, its floor, the feasibility
    # check of unplaced tasks) per task of the window: 0.9-2.7 s on 20,111 tasks and 0.14-1.5 s
    # on 3,111 tasks (the latter at a load of 10) on the 2-core machine. The searches leave it
    # this much; above close_max_share of the limit the close stage is skipped and the proposal
    # claims no health counts.
    close_per_task_s: float = 2e-4
    close_max_share: float = 0.4
    # Of that, the close search's own set-up (its floor, its evaluator of the window and its
    # tables: 0.1 s on 3,111 tasks, ~0.25 s on 20,111 on the 2-core machine): the feasibility
    # check of the unplaced tasks before it leaves it this much, and a set-up the deadline has
    # passed does not start (issue 24 item 6).
    close_setup_per_task_s: float = 3e-5
    unplaced_check_share: float = 0.1  # of the limit for the feasibility check of the unplaced
    # Zero turns the close stage's guards off (the lexicographic comparison with the greedy):
    # with one_search_share zero, benchmarks read the proposal's best start alone.
    health_share: float = 0.4
    # The one search's work budget, a share of the limit in estimated seconds (its evaluations
    # are estimated at eval_cost_s, ~1.5x what they cost on the 2-core machine unloaded, so
    # the wall clock stays a safety net behind the level-1 model, the start and the floor).
    one_search_share: float = 1.0
    # Issue 26: of a proposal's time limit (wall clock, model building included), at most this
    # for the exact model of the per-day rules in the close stage's floor (.health_model): the
    # floor the proposal states is the tight one where the model proves it within that time.
    # 0.55: the model types blocks by the masks allowing them (slower on windows with classes,
    # exact there); measured against 0.4 / 0.5 in results_close.md (2026-12-05, evening).
    exact_floor_share: float = 0.55
    # The exact model's work is CP-SAT deterministic time: exact_floor_share of the effort, in
    # estimated seconds, times this (its solves ran 0.2-0.45 deterministic units per wall second
    # on the bench_close windows, 2026-12-07; the work was passed as deterministic units 1:1
    # before, so a 60-day window's model ran into its wall limit on a quiet machine).
    exact_det_per_s: float = 0.45
    # The day plan (.day_plan, issue 42): a proposal given work of its own for it
    # (``plan_work_s``, CP-SAT deterministic time) runs it after the proposal, hinted with it.
    # The tools give it on windows with an item order when the asked limit exceeds the default
    # proposal's by day_plan_min_extra_s: day_plan_extra_share of the extra seconds go to the
    # plan (exact_det_per_s units each, at most day_plan_max_work units: 5 units took 6-10 s
    # of one core on 30- and 60-day windows), the rest to the proposal's work as before.
    day_plan_min_extra_s: float = 8.0
    day_plan_extra_share: float = 0.5
    day_plan_max_work: float = 10.0
    # Before it, a feasibility check of the window (suggested tasks re-planned) of this much
    # work within this share of the extra seconds: proven infeasible, no plan (it needs every
    # task placed) and the proposal keeps the whole limit's work.
    day_plan_check_work: float = 1.0
    day_plan_check_share: float = 0.25
    # Its packing enumerates the orders of runs of up to day_plan_pack_items tasks; a run no
    # order packs is cut off and the model solved again, day_plan_rounds solves at most.
    day_plan_pack_items: int = 6
    day_plan_rounds: int = 12
    # The exact model's building, in steps of its pattern enumeration (.health_model.Meter), per
    # unit of its solves' work: measured 2026-12-07 at 0.3-2 million steps per second of a
    # cold build on the 2-core machine, i.e. ~4 million per second of this calibration's time
    # (exact_det_per_s units a second). A 2 s proposal's exact start (0.12 units) may take 1.1
    # million steps: every bench window's build (standard ones at most ~140 thousand,
    # upstream-shaped ones with weekdays and bans ~1 million) fits; a larger one is given up
    # the same way on any machine instead of running into the wall clock.
    exact_build_steps_per_work: float = 9e6
    # When the exact model's days do not all pack (see .starts.exact_model_start), the exact
    # maximum of what is left may take up to this share of the limit more (from the search's).
    exact_complete_share: float = 0.1
    # Search steps per day when .realise.realise packs a day's blocks for the most usable
    # free periods (a day holds a dozen periods: the packings are few; the first found counts).
    realise_pack_steps: int = 400

    # -------------------------------------------------------------------------- greedy packing
    # (:mod:`.baselines`, :mod:`.counting`)
    greedy_grace_s: float = 0.1  # how long the first packing order may run past the deadline
    pack_orders: int = 4  # of :data:`.baselines.PACK_ORDERS` tried, in that order (at least 1)
    # Seeded random group orders tried when no fixed order meets the relaxation's bound: so many
    # on the rounding's residual (any order; ~0.1 ms a try), then so many on the whole problem
    # (longest first, ties random; ~0.5 ms a try). On the batch benchmark's 30-day windows the
    # bound met the optimum on every window CP-SAT was called for, and a residual try met it on
    # 11 of 14 of them (the first hit within ~20 tries), a whole-problem try on 2 of the other 3,
    # against 30-180 ms for CP-SAT; a miss costs ~10 ms before CP-SAT runs as before.
    random_orders: tuple[int, int] = (40, 10)
    # Windows with at most this many bins that may fit (work <= capacity) try the other greedy
    # orders before the relaxation (:func:`.counting.max_placeable`): there they cost ~0.7 ms
    # each against ~3-5 ms for the relaxation, and they place everything on most such windows
    # (measured on the benchmark's 30-day tight windows with task classes). Larger windows (the
    # 120-day ones have ~200 bins) go to the relaxation first.
    greedy_first_max_bins: int = 100

    # -------------------------------------------------------------------------- the close stage
    # (:mod:`.health_search`) Estimated seconds per evaluation (process time measured on the
    # shared 2-core machine: 110-160 µs on 13-120-day windows), plus this per day beyond 30.
    eval_cost_s: float = 150e-6
    eval_cost_per_day_s: float = 0.3e-6
    refresh_every: int = 40  # evaluations between refreshes of the targeted task/day lists
    swap_share: float = 0.2  # of the moves that are swaps
    gap_share: float = 0.25  # of the moves that fill a subject's long gap
    scan_share: float = 0.02  # of the steps that scan every place of one task and take the best
    scan_days: int = 16  # days such a scan looks at, at most (a random sample on longer windows)
    gap_scan_share: float = 0.15  # of the steps (while a subject gap warns): gap-filling scans
    unload_scan_share: float = 0.05  # of the steps that scan moves off a day with an issue
    gap_sources: int = 4  # the gap scan's blocks
    gap_days: int = 3  # the gap scan's middle days
    gap_places: int = 2  # the gap scan's places a day
    unload_tasks: int = 2  # the unload scan's blocks
    unload_days: int = 6  # the unload scan's lightest days
    unload_exchange_days: int = 3  # of those, the days where it also trades for a shorter block
    # an ordered item's push (:meth:`.moves.Neighbourhood.push`): at most this many of its
    # class's items pushed along each way, each to a place within this many of its days
    push_chain: int = 8
    push_days: int = 6
    # With the soft terms as the last key (a search given weights, issue 26): an evaluation
    # costs this many times more (the soft evaluator's update and reading); the health phase
    # gets at most soft_health_part times the search's evaluations (it stops at the floor),
    # the soft phase what is left of them, if anything; the soft phase accepts by late
    # acceptance over soft_history steps and scans one task's places on soft_scan_share of
    # its steps. Above 1: a search short of its floor keeps working on health past its
    # nominal budget (the evaluations cost 2-3.5x less than estimated, ~40-110 µs: 0.8 let
    # 13- and 120-day searches stop a warning short with half the limit unused; 1.6 met the
    # floor on 25/31 open windows twice, 0.8 on 24 and 24; results_close.md, 2026-12-05),
    # while one that meets its floor early leaves the soft phase as much as before.
    soft_eval_factor: float = 1.3
    soft_health_part: float = 1.6
    # evaluations per placed task without a better key before a kick (0: never)
    soft_kick_per_task: float = 10.0
    soft_kick_moves: int = 3
    soft_history: int = 20
    soft_scan_share: float = 0.1
    soft_scan_tries: int = 3  # of a scan's places, the best few (by soft terms) tried on health
    # of an evaluation: a candidate screened on the soft terms (measured 60-90 us a screen
    # against the 195 us estimated for a weighted evaluation, 2026-12-07; was 0.2)
    soft_screen_cost: float = 0.45
    # The health phase ends after max(health_patience_min, health_patience_per_task x its tasks)
    # evaluations without a better key (0: only its budget ends it; kicks count).
    health_patience_per_task: float = 50.0
    health_patience_min: int = 1500
    # The soft phase ends after max(soft_patience_min, soft_patience_per_task x its tasks) steps
    # without a lower soft total (a scan is one step).
    soft_patience_per_task: float = 50.0
    soft_patience_min: int = 2000

    # -------------------------------------------------------------------------- the other calls
    # Of a least-change repair's limit for placing the pending tasks (:mod:`.repair`).
    pending_share: float = 0.4
    # A solve the feasibility check's answer needs (the reason code of a proven infeasibility)
    # gets at least this long even past the deadline; optional ones (the bottleneck, the
    # negotiation figures) are skipped (:mod:`.feasibility`).
    min_solve_s: float = 0.02
    # The bottleneck's deletion filter (:mod:`.feasibility`): at most this many exact checks per
    # second of the check's limit, each of this much CP-SAT deterministic time (it used the time
    # left: on the eval kit's infeasible 30- and 120-day windows it took the whole 2 s and left
    # the negotiation figures unproven).
    shrink_checks_per_s: float = 6.0
    shrink_det_time: float = 0.05
    # (:mod:`.reoptimize`) Integer-model weights of the re-optimising writes, in the soft terms'
    # units.
    # The re-optimisers' CP-SAT deterministic time, a share of their work (the tools give them
    # their limit as work); was deterministic_share 0.5, which ran 12 of 24 calls of 2 s on
    # 13-120-day windows into the wall clock (2026-12-07, see docs/decisions.md).
    reoptimize_det_share: float = 0.1
    spread_weight: float = 20.0  # per task of deviation from an even spread (spread_even)
    switch_weight: float = 10.0  # per switch (primary for min_context_switch)
    # Wall seconds per task of the window kept after a re-optimisation's solve for checking its
    # moves (analyze_health's counts, the switch count on a copy of the state): measured 0.05 and
    # 0.03 ms a task on 1000-day windows of 3,111 and 20,111 tasks; at most half the limit.
    post_solve_per_task_s: float = 6e-5
    move_weight: float = 0.05  # per task moved: prefer the current place on ties
    # The exact ordered model (issue 42, solver/ordered.py): more places of all tasks together
    # than this are not built (the answer is unproven), and building stops at this share of the
    # call's limit (the limit holds model building too).
    ordered_max_options: int = 40_000
    ordered_build_share: float = 0.5
    # A built model is solved only when the time left is at least this many times its build
    # time: CP-SAT's loading and presolve of the order-encoded model take about as long as its
    # building (measured 1-1.5x on 30-60-day windows) and do not stop at the wall limit, so a
    # solve started later ran up to 0.6 s past a 2 s check (2026-12-07, docs/decisions.md).
    ordered_solve_per_build: float = 1.0
    # Their work (CP-SAT deterministic time, issue 40 item 6: the work, not the time left,
    # decides what they find; the wall clock only cuts, and the answer says so): the exact
    # chains of one keep_order call together (.order.keep_order; a proposal's start gives them
    # ordered_chain_share of its effort instead), and the whole scope's ordered model before a
    # proposal's search (ordered_max_share of its effort); both converted by exact_det_per_s.
    ordered_chain_work: float = 0.05
    ordered_chain_share: float = 0.1
    ordered_max_share: float = 5.0
    # ...at most ordered_max_work (CP-SAT deterministic time: the stage's wall limit is a
    # second at most, which a larger budget would reach on a busy machine), of which the first
    # solve (the most periods alone) takes ordered_max_split, the second (the same periods
    # nearest the start's places) the rest.
    ordered_max_work: float = 0.5
    ordered_max_split: float = 0.7
    # The floor's model that holds the item order (.ordered_floor.ordered_days): its start (the
    # most periods in order) takes this share of its work, the bounds' solves the rest.
    ordered_floor_seed_share: float = 0.3

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            values = value if isinstance(value, tuple) else (value,)
            if any(v < 0 for v in values):
                raise ValueError(f"calibration figure {f.name} must not be negative: {value!r}")
        if self.pack_orders < 1:
            raise ValueError("calibration figure pack_orders must be at least 1")
        if self.shares_of <= 0:
            raise ValueError("calibration figure shares_of must be positive")


DEFAULT_CALIBRATION = Calibration()
"""The figures measured on the 2-core CI machine: what every entry point uses unless told."""


__all__ = ["DEFAULT_CALIBRATION", "Calibration", "Deadline", "passed", "too_late"]
