"""The disruption level of a proposal's key (issue 28 item 2): health being equal, fewer changes.

A proposal is compared lexicographically: the most periods placed (level 1), then
``analyze_health``'s (critical, warning) (the close stage, :mod:`.health_search`), then the
*disruption* — how many scope tasks that are placed now end away from where they stand — and only
then the weighted soft terms (:mod:`.objective`). A re-planning proposal (suggested tasks in its
scope) reaches its soft terms by moving tasks freely; :func:`send_back` then returns every moved
task to its current place whenever that keeps the periods and does not worsen the health counts,
whatever it costs the soft terms, so a student's plan moves only where health asks for it.
A task of an ordered class goes home only where that keeps its class's item order (issue 42):
placements that keep the order come back keeping it.

It is a greedy pass in task-id order, repeated while a return frees another task's place (a
deterministic, bounded amount of work: at most one evaluation per moved task and pass); it does
not prove that fewer moves are impossible. The least-change repair (``keep_placed``,
:mod:`.repair`) has this level already: its close search caps the moves at ``max_moves`` and sends
back every move the counts do not need.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from ..rules import Level
from ..state import ScheduleState
from .budget import DEFAULT_CALIBRATION, Calibration, too_late
from .health_eval import HealthEvaluator
from .moves import ItemOrder, OrderedOrigin
from .problem import Placement, Problem, Rule
from .scoring import accepts, setup_cost


def moved_tasks(current: Mapping[int, Placement], placements: Sequence[Placement]) -> int:
    """How many of ``placements`` put a task that is placed now (``current``) elsewhere."""
    return sum(1 for pl in placements if pl.task_id in current and current[pl.task_id] != pl)


def send_back(
    state: ScheduleState,
    problem: Problem,
    placements: Sequence[Placement],
    *,
    level: Level = "normal",
    deadline: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> tuple[list[Placement], tuple[int, int], bool]:
    """Return moved scope tasks to their current place while the health counts stay as good.

    Parameters
    ----------
    placements
        A placement of the scope tasks (``problem.groups``); ``problem.current`` holds where the
        placed ones stand now.
    level
        The ``analyze_health`` threshold level of the counts.
    deadline
        ``time.perf_counter()`` value after which the pass stops (what was sent back so far keeps
        the counts); a safety net only.

    Returns
    -------
    (placements, change, cut)
        The placements (sorted by day, start, task); how their (critical, warning) differ from
        those of ``placements`` (never positive: ``(0, 0)`` or better; the feasibility issue,
        the same for both, is left out); whether the deadline stopped the pass (a deadline
        passed before it began, on a window whose evaluator is not cheap, returns ``placements``
        as they are, cut).
    """
    if too_late(
        deadline, setup_cost(state, calibration), calibration
    ):  # (its evaluator of the window: not started)
        return sorted(placements, key=lambda pl: (pl.day, pl.slot_start, pl.task_id)), (0, 0), True
    group_of = problem.group_of()
    # A home outside the task's class window or on a banned period is an old suggestion the
    # proposal re-places inside (DESIGN: suggested tasks outside their class): never sent back.
    origin = {
        tid: home
        for tid, home in problem.current.items()
        if tid in group_of and _allowed(problem.groups[group_of[tid]].rule, home, problem.num_days)
    }
    ev = HealthEvaluator(state, set(group_of), level, 0)
    ev.set_placements(list(placements))
    start = ev.counts_now().key
    # An ordered item goes home only while that keeps its class's item order with the other
    # items where they stand then (issue 42): the placements keep it, and so does the result.
    order = ItemOrder(state, problem)
    homes: Mapping[int, Placement] = OrderedOrigin(origin, order, ev) if order else origin

    def key() -> tuple[float, ...]:
        return ev.counts_now().key

    safety = deadline if deadline is not None else float("inf")
    best, _, cut = return_moved(ev, homes, key, safety, repeat=True)
    out = sorted(ev.placed_scope.values(), key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
    return out, (int(best[0]) - start[0], int(best[1]) - start[1]), cut


def return_moved(
    ev: HealthEvaluator,
    origin: Mapping[int, Placement],
    key: Callable[[], tuple[float, ...]],
    deadline: float,
    *,
    repeat: bool,
) -> tuple[tuple[float, ...], int, bool]:
    """The one send-back (issue 40 item 2): in task-id order, every task of ``ev`` away from its
    ``origin`` place goes back when that place is free and the ``key`` of the result (health
    counts, maybe then the soft terms) stays at most the best so far (the last term within
    1e-9); with ``repeat``, passes repeat while a return frees another task's place. Returns
    the best key, the evaluations spent and whether ``deadline`` (a ``time.perf_counter()``
    value) stopped it (what was sent back so far keeps the key)."""
    best = key()
    evaluations = 0
    returned = True
    while returned:
        returned = False
        for tid in sorted(ev.placed_scope):
            home, here = origin.get(tid), ev.placed_scope[tid]
            if home is None or home == here:
                continue
            if time.perf_counter() > deadline:
                return best, evaluations, True
            ev.remove(tid)
            if _free(ev, home):
                ev.place(home)
                after = key()
                evaluations += 1
                if accepts(after, best):
                    best, returned = after, True
                    continue
                ev.remove(tid)
            ev.place(here)
        returned = returned and repeat
    return best, evaluations, False


def _free(ev: HealthEvaluator, home: Placement) -> bool:
    """``home``'s periods (or its host block) are free on ``ev``'s placement."""
    if home.embed_host is None:
        return bool(ev.free_at(home.day, home.slot_start, home.slot_end))
    return bool(ev.host_block_free(home))


def _allowed(rule: Rule, home: Placement, num_days: int) -> bool:
    """Every class rule of the task's group (days, weekdays, periods, its order segment)."""
    return rule.allows(home.day, home.slot_start, home.slot_end, num_days)


__all__ = ["moved_tasks", "return_moved", "send_back"]
