"""One floor per scope, computed once and passed in (issue 40 item 2): the proven floor of
``analyze_health``'s (critical, warning) that the one search stops at.

Two floors of :func:`.health_floor.health_floor` bound a scope's placements: the population floor
of the window (every study task movable, as many pending periods placed; only when level 1 is
proven) and the scope's own (only the scope tasks move, the placed ones stay placed; with the
exact model of the per-day rules, :mod:`.health_model`, for ``exact_s``). :func:`scope_floor`
combines them (:func:`higher`); the proposal computes it once per scope and hands it to the search
(:func:`.health_search.search_health`), which computes its own only when called alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..rules import Level
from ..state import ScheduleState
from ._cpsat import OutOfTime
from .budget import DEFAULT_CALIBRATION, Calibration
from .health_floor import HealthFloor, health_floor
from .problem import Placement, Problem
from .scoped import floor_scope


@dataclass(frozen=True)
class ScopeFloor:
    """A scope's floor (None: none computed in time, never claimed unproven); ``cut``: the wall
    clock stopped the scope's own floor (its exact model or all of it), so the search may stop
    elsewhere on a faster machine; ``population_cut``: it stopped the population floor."""

    floor: HealthFloor | None
    cut: bool = False
    population_cut: bool = False


def higher(a: tuple[int, int] | HealthFloor | None, b: HealthFloor) -> HealthFloor:
    """The floor that both floors ``a`` and ``b`` (each bounding critical and critical + warning
    from below, and each maybe lexicographically: :attr:`.HealthFloor.least_warning`) give
    together. A lexicographic floor holds for the placements with its own least criticals: of
    the two, only the one whose criticals are the higher (both on a tie) says something of the
    placements at the combined least criticals."""
    if a is None:
        return b
    if isinstance(a, tuple):
        a = HealthFloor(a[0], a[1])
    critical = max(a.critical, b.critical)
    warning = max(a.critical + a.warning, b.critical + b.warning) - critical
    least = [
        f.least_warning for f in (a, b) if f.critical == critical and f.least_warning is not None
    ]
    lw = max(least) if least else None
    return HealthFloor(
        critical,
        warning,
        least_warning=lw if lw is not None and lw > warning else None,
        exact_complete=b.exact_complete,
    )


def scope_floor(
    state: ScheduleState,
    problem: Problem,
    placements: Sequence[Placement],
    *,
    level: Level,
    known: tuple[int, int] | HealthFloor | None = None,
    deadline: float | None = None,
    exact_s: float = 0.0,
    num_workers: int = 1,
    exact_work_s: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> ScopeFloor:
    """The floor of the scope's own population (only ``problem.groups``' tasks move, as many
    pending periods placed as ``placements``), combined with a ``known`` floor. ``exact_s``,
    ``num_workers``, ``exact_work_s``: ``health_floor``'s exact model (its wall-clock limit,
    workers and deterministic time; a model its work ended is no cut) and ``calibration``."""
    if isinstance(known, tuple):
        known = HealthFloor(known[0], known[1])
    scope = {tid for g in problem.groups for tid in g.task_ids}
    pending_placed = sum(pl.length for pl in placements if problem.current.get(pl.task_id) is None)
    try:
        own = health_floor(
            state,
            level,
            pending_periods=pending_placed,
            scope=scope,
            deadline=deadline,
            exact_s=exact_s,
            num_workers=num_workers,
            exact_work_s=exact_work_s,
            calibration=calibration,
        )
    except OutOfTime:  # no time left for it: the search stops on the clock anyway
        return ScopeFloor(known, cut=True)
    return ScopeFloor(higher(known, own), cut=own.exact_wall_cut)


def proposal_floor(
    state: ScheduleState,
    problem: Problem,
    placements: Sequence[Placement],
    *,
    level: Level,
    proven: bool,
    deadline: float,
    exact_s: float,
    num_workers: int,
    exact_work_s: float | None,
    scoped: bool = False,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> ScopeFloor:
    """A proposal's floor: the population floor of the window placing as many pending periods
    (when level 1 is ``proven``) and the scope's own (:func:`scope_floor`); ``scoped``: a
    calendar scope, whose population is its own (:func:`.scoped.floor_scope`: only its tasks
    move, each within its narrowed rule)."""
    scope_placed = sum(pl.length for pl in placements if problem.current.get(pl.task_id) is None)
    population = None
    population_cut = False
    if proven:
        try:
            population = health_floor(  # a calendar scope's own population, else the window's
                state,
                level,
                pending_periods=scope_placed,
                deadline=deadline,
                **(floor_scope(problem) if scoped else {}),
            )
        except OutOfTime:  # a floor not computed in time is not claimed
            population_cut = True
    found = scope_floor(
        state,
        problem,
        placements,
        level=level,
        known=None if population is None else (population.critical, population.warning),
        deadline=deadline,
        exact_s=exact_s,
        num_workers=num_workers,
        exact_work_s=exact_work_s,
        calibration=calibration,
    )
    return ScopeFloor(found.floor, found.cut, population_cut)


__all__ = ["ScopeFloor", "higher", "proposal_floor", "scope_floor"]
