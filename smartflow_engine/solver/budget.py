"""Every calibration constant of the solver's searches, in one place.

The searches are bounded by deterministic work measures (local-move attempts and row scans,
pricing operations, CP-SAT deterministic time, variables built), converted to estimated seconds
of the 2-core CI machine the figures below were calibrated on; the wall clock is only a safety
net. Shares are fractions of a call's time limit. Changing a figure changes which proposal a
seed gives, so every change is re-measured with ``benchmarks/bench_solver.py``.

This module imports nothing of ours: every solver module may read it. The close stage's figures
(``HEALTH_SHARE`` and the move costs of :mod:`.health_search`), the least-change repair's share
(:mod:`.repair`) and the feasibility check's minimum solve time (:mod:`.feasibility`) stay in
their modules for now.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


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


def too_late(deadline: float | None, cost_s: float) -> bool:
    """A step estimated to cost ``cost_s`` must not start: its deadline has passed and it is not
    cheap (issue 24 item 6: set-ups that grow with the window). A cheap step (at most
    :data:`SETUP_GRACE_S`) still runs, so that a small window's answer does not depend on how
    busy the machine is; what it adds to a call stays well inside the limit + 0.5 s."""
    return cost_s > SETUP_GRACE_S and passed(deadline)


# The least wall time the stages of a call get: a smaller limit is rounded up to it for the
# deadline (well inside the limit + 0.5 s every entry point promises), so that a tiny window
# asked with a 1 ms limit can still be solved and proven.
MIN_WORK_S = 0.05
# Deterministic-time budget as a share of the wall-clock limit. Measured on the 2-core CI machine:
# a proposal's neighbourhood search spends 1.3-1.6 s of wall time per deterministic unit (CP-SAT's
# deterministic time plus the model-building stand-in), so half the limit in deterministic units
# ends the search at 65-80 % of the wall-clock limit, which then only acts on a very busy machine.
DETERMINISTIC_SHARE = 0.5
# Every stage of a proposal or re-optimisation stops this long before the call's deadline, so
# that assembling the answer still fits the limit.
DEADLINE_MARGIN_S = 0.02
# Estimated wall seconds per unit of CP-SAT deterministic time (the neighbourhood search and the
# integer master of the column generation).
WALL_PER_DET = 1.5

# ------------------------------------------------------------------------------ the proposal
# (:func:`.placement.propose_placement`) Every stage is bounded by a deterministic work measure,
# converted to estimated seconds of the 2-core CI machine; the wall clock (time_limit_s) is only a
# safety net. The total estimate is WORK_SHARE of the limit, so the wall clock decides only on a
# machine more than 1 / WORK_SHARE times slower than the calibration. No share keeps a loaded
# machine out (on a fresh 2-core machine the estimates ran ~1.5x short of the wall time, and a
# competing busy thread slowed the pure-Python stages 2-7x), so determinism for a seed is
# promised only for a proposal the wall clock did not cut: it says so (``wall_limited``), and a
# caller that needs the same answer everywhere fixes the work (``work_limit_s``) under a generous
# wall limit.
WORK_SHARE = 0.4
LEVEL1_SHARE = 0.3  # of the limit for the counting model's proven maximum (level 1)
REPAIR_SHARE = 0.1  # of the limit for placing the greedy's leftovers exactly
GREEDY_SHARE = 0.2  # of the limit, at most, for the balanced greedy (minutes on 20,000 tasks)
# The close stage's set-up (analyze_health's counts of the start, its floor, the feasibility
# check of unplaced tasks) per task of the window: 0.9-2.7 s on 20,111 tasks and 0.14-1.5 s on
# 3,111 tasks (the latter at a load of 10) on the 2-core machine. The searches leave it this
# much; above CLOSE_MAX_SHARE of the limit the close stage is skipped and the proposal claims
# no health counts.
CLOSE_PER_TASK_S = 2e-4
CLOSE_MAX_SHARE = 0.4
# Of that, the close search's own set-up (its floor, its evaluator of the window and its tables:
# 0.1 s on 3,111 tasks, ~0.25 s on 20,111 on the 2-core machine): the feasibility check of the
# unplaced tasks before it leaves it this much, and a set-up the deadline has passed does not
# start (issue 24 item 6).
CLOSE_SETUP_PER_TASK_S = 3e-5
# A step past its deadline still runs when it costs at most this (see :func:`too_late`): the
# close stage's set-up of a window of up to ~1,600 tasks.
SETUP_GRACE_S = 0.05
UNPLACED_CHECK_SHARE = 0.1  # of the limit for the feasibility check of the unplaced tasks
PRE_LOCAL_SHARE = 0.05  # of the limit for the first burst of local moves
COLUMN_SHARE = 0.35  # of the limit for the column generation (see .columns)
LOCAL_SHARE = 0.35  # share of the limit for the local moves (measured: more effective per
# second than the neighbourhood search, which gets what they leave)
LOCAL_STALL = 0.4  # the local moves stop after this share of their budget without a new best
# The full-window model gets a fixed deterministic budget: measured wall / deterministic time
# of 0.7-1.9 on 13-day windows (plus set-up), so the wall clock stays out by a factor of 3.
FULL_MODEL_DET_SHARE = 0.1
FULL_MODEL_MAX_DAYS = 14  # longer windows are improved by the day-window neighbourhood search

# ------------------------------------------------------------------------------ neighbourhoods
# (:mod:`.neighbourhood`)
LNS_DAYS = 2  # days re-solved per neighbourhood (two random blocks of LNS_DAYS // 2 days)
LNS_STEP = 0.03  # deterministic time per neighbourhood: small ones solve to optimality fast
# Estimated seconds per neighbourhood (calibrated on the 2-core CI machine, 120-day windows):
# LNS_SOLVE_COST per solve call (set-up and presolve, which deterministic time barely counts),
# WALL_PER_DET per unit of CP-SAT deterministic time, LNS_BUILD_COST per variable built in Python.
LNS_SOLVE_COST = 0.010
LNS_BUILD_COST = 4e-5

# ------------------------------------------------------------------------------ local moves
# (:mod:`.local_search`) Work measure: estimated seconds = STEP_COST_S per move attempt +
# SCAN_COST_S per row scan (least squares on 18 windows of 13-120 days on the 2-core CI machine,
# within ±18%, rounded up).
STEP_COST_S = 1.8e-5
SCAN_COST_S = 3e-6
HISTORY = 5  # late-acceptance history length (steps); longer ones wander off (measured)
DAYS_PER_RELOCATE = 3  # target days tried per relocate move (one of them load-directed)

# ------------------------------------------------------------------------------ column generation
# (:mod:`.pricing`, :mod:`.master`, :mod:`.columns`) Estimated seconds per unit of deterministic
# work (calibrated on the 2-core CI machine): per counted operation of the pricing (see
# KERNEL_OPS_PER_OP), per column of the master at each LP solve, and per unit of CP-SAT
# deterministic time of the integer master (WALL_PER_DET).
OP_COST = 5.5e-6
# Steps per second of the two loops over free totals (the decomposition programme, the
# Lagrangian bounds): converts a budget or the time left into their work caps.
TOTALS_OPS_PER_S = 2e8
TOTALS_CHUNK_S = 0.02  # the decomposition programme checks the deadline this often
ROUND_GRACE_S = 0.2  # a pricing round may end this long after the search's deadline
# The decomposition programme's deterministic cap, in budgets: it ran uncapped before the wall
# clock had to hold (issue 12), and it reaches every total up to ~120-day windows within this.
DD_BUDGET_FACTOR = 4.0
DAY_SETUP_OPS = 70  # building one day's data (its options, its signature)
KERNEL_OPS_PER_OP = 200  # kernel row updates (masks x free periods) per counted operation
LP_COLUMN_COST = 1.2e-5
BUILD_COST = 2e-5  # per column added to the LP or to the integer model
EXTRA_COLUMNS = 2  # per day type and round, besides the best: other free-period counts
INTEGER_SHARE = 0.3  # of a master's budget kept for its integer solve
MIN_ROUNDS = 12  # a first master that cannot afford this many rounds is abandoned
INTEGER_PER_DAY = 8  # columns per day in the integer master (least reduced cost first)

# ------------------------------------------------------------------------------ greedy
GREEDY_GRACE_S = 0.1  # how long the first packing order may run past the caller's deadline

# ------------------------------------------------------------------------------ re-optimisation
# (:mod:`.reoptimize`) Integer-model weights of the re-optimising writes, in the soft terms' units.
SPREAD_WEIGHT = 20.0  # per task of deviation from an even spread (primary for spread_even)
SWITCH_WEIGHT = 10.0  # per switch (primary for min_context_switch)
# Wall seconds per task of the window kept after a re-optimisation's solve for checking its
# moves (analyze_health's counts, the switch count on a copy of the state): measured 0.05 and
# 0.03 ms a task on 1000-day windows of 3,111 and 20,111 tasks; at most half the limit.
POST_SOLVE_PER_TASK_S = 6e-5
MOVE_WEIGHT = 0.05  # per task moved: prefer the current place on ties
