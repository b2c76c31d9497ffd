"""One scope's proposal call as data (issue 40 item 2): the problem it places, its weights and
threshold, its clocks and its work budgets, read by every stage of :mod:`.placement`'s pipeline
(level 1, :mod:`.starts`, the floor, the search, the send-back).

Work budgets (estimated seconds of the calibration machine) decide what a stage does:
``effort`` is the limit they are computed from (the call's work over ``shares_of``, see
:func:`_effort`). The wall clock only cuts: ``stop`` holds the whole call (its margin is
for the answer itself), ``search_stop`` leaves the close stage and the feasibility check of the
unplaced tasks their time (set once level 1 knows how many periods stay unplaced).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..calendar_filters import ProposalScope
from ..rules import Level
from ..state import ScheduleState
from ._cpsat import ran_out
from .budget import DEFAULT_CALIBRATION, Calibration
from .counting import CountResult, max_placeable
from .health_eval import HealthEvaluator
from .objective import resolve_weights
from .problem import Problem, build_problem


def _effort(time_limit_s: float, work_limit_s: float | None, cal: Calibration) -> float:
    """The limit the stages' shares are computed from: the call's work (``work_limit_s``, by
    default ``work_share`` of its wall-clock limit) over ``shares_of``, never the time left."""
    work = cal.work_share * time_limit_s if work_limit_s is None else work_limit_s
    return work / cal.shares_of


@dataclass
class ScopeRun:
    """A scope's call: ``problem`` (the tasks it may move), the figures every stage reads, and
    ``t0``/``stop``/``search_stop`` (``time.perf_counter()`` values)."""

    state: ScheduleState
    problem: Problem
    weights: dict[str, float]
    threshold: Level
    seed: int
    num_workers: int
    calibration: Calibration
    time_limit_s: float
    effort: float  # the limit the deterministic budgets are computed from
    disruption_weight: float
    include_suggested: bool
    within: ProposalScope | None
    t0: float
    stop: float
    search_stop: float = math.inf
    run_close: bool = True  # the close stage fits a share of the limit (issue 24)
    check_s: float = 0.0  # the feasibility check's limit (0: nothing stays unplaced)
    # The least-change repair's mode (keep_placed, :mod:`.repair`): at most ``max_moves`` placed
    # tasks move, the search scores health alone with ``health_share`` of the work.
    repair: bool = False
    max_moves: int | None = None
    _counter: HealthEvaluator | None = field(default=None, repr=False)

    @classmethod
    def begin(
        cls,
        state: ScheduleState,
        *,
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
    ) -> ScopeRun:
        """The call's problem and clocks (``t0``: now); raises ValueError on bad weights."""
        t0 = time.perf_counter()
        w = resolve_weights(weights)
        if not (math.isfinite(disruption_weight) and disruption_weight >= 0):
            raise ValueError(f"disruption_weight must be finite and >= 0, got {disruption_weight}")
        problem = build_problem(
            state,
            include_suggested=include_suggested,
            by_subject=True,
            allow_late=allow_late,
            within=within,
        )
        cal = calibration
        # The wall clock holds the whole call, model building included (issue 12): every stage
        # stops by ``stop`` and the answer says what was proven; the margin is for the answer
        # itself (the lexicographic guard, the evaluation, the Proposal).
        deadline = t0 + max(time_limit_s, cal.min_work_s)
        return cls(
            state=state,
            problem=problem,
            weights=w,
            threshold=threshold,
            seed=seed,
            num_workers=num_workers,
            calibration=cal,
            time_limit_s=time_limit_s,
            effort=_effort(time_limit_s, work_limit_s, cal),
            disruption_weight=float(disruption_weight),
            include_suggested=include_suggested,
            within=within,
            t0=t0,
            stop=deadline - cal.deadline_margin_s,
        )

    @classmethod
    def for_repair(
        cls,
        state: ScheduleState,
        task_ids: list[int],
        *,
        max_moves: int,
        time_limit_s: float,
        seed: int,
        threshold: Level,
        num_workers: int,
        calibration: Calibration,
        work_limit_s: float | None,
    ) -> ScopeRun:
        """The repair's call: ``task_ids`` (the pending and the movable placed tasks) in its
        problem, its stop 20 ms before the limit (``t0``: now)."""
        t0 = time.perf_counter()
        return cls(
            state=state,
            problem=build_problem(state, by_subject=True, task_ids=task_ids),
            weights=resolve_weights(None),
            threshold=threshold,
            seed=seed,
            num_workers=num_workers,
            calibration=calibration,
            time_limit_s=time_limit_s,
            effort=_effort(time_limit_s, work_limit_s, calibration),
            disruption_weight=0.0,
            include_suggested=False,
            within=None,
            t0=t0,
            stop=t0 + time_limit_s - 0.02,
            repair=True,
            max_moves=max_moves,
        )

    def scope(self) -> set[int]:
        """The tasks this call may move."""
        return {t for g in self.problem.groups for t in g.task_ids}

    def counter(self) -> HealthEvaluator:
        """The (critical, warning) counter of the starts (the scope at ``threshold``, no
        feasibility issue), built once for every start that is counted."""
        if self._counter is None:
            self._counter = HealthEvaluator(self.state, self.scope(), self.threshold, 0)
        return self._counter

    def exact_work(self) -> float:
        """The exact model's work (CP-SAT deterministic time): its share of the effort, converted
        by the calibration's measured rate (see :attr:`.budget.Calibration.exact_det_per_s`)."""
        cal = self.calibration
        return cal.exact_floor_share * self.effort * cal.exact_det_per_s

    def level1(self) -> tuple[CountResult, bool]:
        """Level 1: the most periods (the counting model, its share of the limit and of the
        work), and whether the wall clock ended it. Sets the search's stop: when tasks must stay
        unplaced, the feasibility check analyze_health runs on the result (see
        :func:`.unplaced.unplaced_check`) comes after the searches, and the close stage's set-up
        grows with the window (issue 24): both are kept their time when the close stage fits a
        share of the limit, and the close stage is skipped otherwise (its counts not claimed)."""
        cal, limit = self.calibration, self.time_limit_s
        level1 = max_placeable(
            self.problem,
            time_limit_s=limit * cal.level1_share,
            num_workers=self.num_workers,
            deterministic_time=self.effort * cal.level1_share * cal.deterministic_share,
            deadline=self.stop,
            calibration=cal,
        )
        cut = ran_out(level1.runtime_s, limit * cal.level1_share)
        unplaced = level1.best < self.problem.required_slots
        self.check_s = cal.unplaced_check_share * limit if unplaced else 0.0
        close_s = cal.close_per_task_s * len(self.state.tasks)
        self.run_close = close_s <= cal.close_max_share * max(limit, cal.min_work_s)
        self.search_stop = self.stop - (self.check_s + close_s if self.run_close else 0.0)
        return level1, cut


__all__ = ["ScopeRun"]
