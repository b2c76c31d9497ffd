"""How the one search scores a placement, beside the evaluators (:mod:`.health_eval`,
:mod:`.soft_eval`; issue 40 item 3): the estimated cost of an evaluation and of the close stage's
set-up (the work budgets count evaluations), the paired evaluator that scores every move on the
health counts and the soft terms at once, and the lexicographic comparison of two placements
(critical, warning, weighted soft terms).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..rules import Level
from ..state import ScheduleState
from .budget import Calibration, too_late
from .health_eval import HealthCounts, HealthEvaluator
from .problem import Placement, Problem
from .soft_eval import SoftEvaluator


def accepts(new: tuple[float, ...], cur: tuple[float, ...], tol: float = 1e-9) -> bool:
    """The search's acceptance rule: a candidate's key (critical, warning, then the guide: the
    guidance slack, or the soft terms) is not above the current one's, the guide within
    ``tol`` (the counts are integers)."""
    return new <= (*cur[:-1], cur[-1] + tol)


def setup_cost(state: ScheduleState, calibration: Calibration) -> float:
    """Estimated seconds of the close stage's set-up on ``state`` (its floor, the evaluator of
    the window, the search's tables), for :func:`.budget.too_late`."""
    return calibration.close_setup_per_task_s * len(state.tasks)


def eval_cost(num_days: int, calibration: Calibration) -> float:
    """Estimated seconds per evaluation on a window of ``num_days`` days."""
    return calibration.eval_cost_s + calibration.eval_cost_per_day_s * max(0, num_days - 30)


class SoftHealth(HealthEvaluator):
    """A :class:`.health_eval.HealthEvaluator` whose updates also update a
    :class:`.soft_eval.SoftEvaluator` of the same scope: every move a search makes is scored on
    both (only the public interface is overridden)."""

    def __init__(
        self,
        state: ScheduleState,
        scope: set[int],
        level: Level,
        feasibility_critical: int,
        soft: SoftEvaluator,
    ) -> None:
        self.soft_terms = soft
        self._bulk = False
        # lazy: the soft evaluator is brought up to date by :meth:`sync` only (the tasks
        # touched since are kept in ``_dirty``)
        self.lazy = False
        self._dirty: set[int] = set()
        super().__init__(state, scope, level, feasibility_critical)

    def place(self, pl: Placement, refresh: bool = True) -> None:
        super().place(pl, refresh)
        if self._bulk:
            return
        if self.lazy:
            self._dirty.add(pl.task_id)
        else:
            self.soft_terms.place(pl, refresh)

    def remove(self, task_id: int, refresh: bool = True) -> Placement:
        pl = super().remove(task_id, refresh)
        if self._bulk:
            return pl
        if self.lazy:
            self._dirty.add(task_id)
        else:
            self.soft_terms.remove(task_id, refresh)
        return pl

    def refresh(self, days: Iterable[int]) -> None:
        days = list(days)
        super().refresh(days)
        if not self._bulk and not self.lazy:
            self.soft_terms.refresh(days)

    def sync(self) -> None:
        """Bring the soft evaluator to the current placement (after lazy updates): every
        touched task's old place removed first, then its new place set."""
        if not self._dirty:
            return
        soft = self.soft_terms
        changed = [t for t in self._dirty if soft.placed_scope.get(t) != self.placed_scope.get(t)]
        self._dirty.clear()
        days = [soft.remove(t, refresh=False).day for t in changed if t in soft.placed_scope]
        for t in changed:
            pl = self.placed_scope.get(t)
            if pl is not None:
                soft.place(pl, refresh=False)
                days.append(pl.day)
        soft.refresh(days)

    def set_placements(self, placements: Sequence[Placement]) -> None:
        self._bulk = True
        try:
            super().set_placements(placements)
        finally:
            self._bulk = False
        self._dirty.clear()
        self.soft_terms.set_placements(placements)


def prefer_lexicographic(
    state: ScheduleState,
    problem: Problem,
    level: Level,
    feasibility_critical: int,
    weights: Mapping[str, float],
    best: tuple[list[Placement], dict[str, float], HealthCounts],
    other: Sequence[Placement],
    deadline: float | None = None,
    *,
    calibration: Calibration,
) -> tuple[list[Placement], dict[str, float], HealthCounts]:
    """``best`` or ``other`` (placing as many periods), whichever is lexicographically smaller
    in (critical, warning, weighted soft total); ``best`` as it is once ``deadline`` (a
    ``time.perf_counter()`` value) has passed on a window whose evaluator is not cheap (see
    :func:`.budget.too_late`)."""
    from .objective import evaluate

    if sum(pl.length for pl in other) != sum(pl.length for pl in best[0]):
        return best
    if too_late(deadline, setup_cost(state, calibration), calibration):
        return best
    ev = HealthEvaluator(
        state, {t for g in problem.groups for t in g.task_ids}, level, feasibility_critical
    )
    ev.set_placements(other)
    counts = ev.counts_now()
    objective = evaluate(problem, other, weights)
    if (*counts.key, objective["weighted_total"]) < (
        *best[2].key,
        best[1]["weighted_total"] - 1e-9,
    ):
        ordered = sorted(other, key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
        return ordered, objective, counts
    return best


__all__ = ["SoftHealth", "accepts", "eval_cost", "prefer_lexicographic", "setup_cost"]
