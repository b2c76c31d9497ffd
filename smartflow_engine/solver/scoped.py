"""A proposal limited by the calendar (issue 43): which tasks move and where each may go.

A :class:`~smartflow_engine.calendar_filters.ProposalScope` reaches the solver through the
problem builder only (:func:`.problem.build_problem`'s ``scope``): its tasks are the problem's
scope (the placed ones outside it stay where they are, fixed), and each one's cells (the scope's
mask and the item order against the staying items, :func:`..calendar_filters.scope_cells`)
narrow its class rule (:func:`narrow_rule`). The search reads rules only through
:class:`.problem.Rule` (allowed days, banned periods), so it is untouched.

The order among the scope's own items of one class is kept after the search
(:func:`in_item_order`): tasks of one group are interchangeable (one rule, one length, one
subject), so their places are handed out again in item order, which changes no health count
nor soft term.

The proposal's floor is the scope's own (:func:`floor_scope`): the floor of the population in
which only the scope's tasks move, each within its narrowed rule, so a search that reaches it
stops there (the whole window's floor lets them go anywhere their class allows, which a scope
cannot reach: the search then spent its whole work budget short of it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..state import ScheduleState
from ..state.class_rules import order_key

if TYPE_CHECKING:  # (problem.py imports this module)
    from .problem import Placement, Problem, Rule


def narrow_rule(rule: Rule, cells: np.ndarray, free: np.ndarray) -> Rule:
    """``rule`` within the boolean ``(days, periods)`` ``cells``.

    A rule is a product (allowed days × allowed periods), so a mask that is not one (an order
    bound in the middle of a day) is narrowed to the product inside it that keeps the most
    ``free`` cells, its periods one of the mask's rows: never a cell outside ``cells`` (a
    scope's own mask, days × periods, is kept exactly). Days appended after the window are
    not allowed."""
    num_days = cells.shape[0]
    best: tuple[int, np.ndarray, np.ndarray] | None = None
    for row in np.unique(cells[cells.any(axis=1)], axis=0):
        days = (cells | ~row[None, :]).all(axis=1)  # the days whose row holds all of ``row``
        score = int((free[days][:, row]).sum())
        if best is None or score > best[0]:
            best = (score, days, row)
    if best is None:  # nowhere: no day allowed
        days, row = np.zeros(num_days, dtype=bool), np.ones(cells.shape[1], dtype=bool)
    else:
        days, row = best[1], best[2]
    off = rule.off_days | {int(d) + 1 for d in np.flatnonzero(~days)}
    banned = tuple(sorted(set(rule.banned) | {int(p) + 1 for p in np.flatnonzero(~row)}))
    return dataclasses.replace(rule, off_days=frozenset(off), banned=banned, extends=False)


def in_item_order(
    state: ScheduleState, problem: Problem, placements: Sequence[Placement]
) -> list[Placement]:
    """``placements`` with the places of each group's ordered items (same class: a group has one
    rule) handed out again in item order (``task_order``), so the scope's own items of a class
    keep their order; each task keeps a place its rule allows (the group's)."""
    by_task = {pl.task_id: pl for pl in placements}
    out = dict(by_task)
    for group in problem.groups:
        items = []
        for tid in group.task_ids:
            task = state.task(tid)
            key = order_key(task) if task is not None else None
            if key is not None and tid in by_task:
                items.append((key[1], tid))
        if len(items) < 2:
            continue
        places = sorted((by_task[tid] for _, tid in items), key=lambda pl: (pl.day, pl.slot_start))
        for (_, tid), pl in zip(sorted(items), places, strict=True):
            out[tid] = dataclasses.replace(pl, task_id=tid)
    return sorted(out.values(), key=lambda pl: (pl.day, pl.slot_start, pl.task_id))


def scope_reach(problem: Problem) -> dict[int, tuple[int, int, np.ndarray]]:
    """Per scope task, the (first day, last day, allowed periods) of its group's rule: every
    place the search may give it lies there (the rule's days between, its periods off
    :attr:`.problem.Rule.banned`; the order's cut periods on a boundary day are left in, a
    larger reach)."""
    out: dict[int, tuple[int, int, np.ndarray]] = {}
    for group in problem.groups:
        rule = group.rule
        days = [d for d in range(1, problem.num_days + 1) if rule.allows_day(d, problem.num_days)]
        periods = np.ones(problem.slots_per_day, dtype=bool)
        for p in rule.banned:
            if 1 <= p <= problem.slots_per_day:
                periods[p - 1] = False
        periods.setflags(write=False)
        span = (days[0], days[-1], periods) if days else (1, 0, periods)  # (1, 0): no day
        out.update(dict.fromkeys(group.task_ids, span))
    return out


def scope_off_days(problem: Problem) -> dict[int, tuple[int, ...]]:
    """Per scope task, the days between its :func:`scope_reach` days its group's rule does not
    allow (its class's banned weekdays, and the days a calendar scope leaves out), ascending;
    only tasks that have some."""
    out: dict[int, tuple[int, ...]] = {}
    for group in problem.groups:
        rule = group.rule
        days = {d for d in range(1, problem.num_days + 1) if rule.allows_day(d, problem.num_days)}
        if not days:
            continue
        off = tuple(d for d in range(min(days), max(days) + 1) if d not in days)
        if off:
            out.update(dict.fromkeys(group.task_ids, off))
    return out


def floor_scope(problem: Problem) -> dict[str, Any]:
    """The arguments that make :func:`.health_floor.health_floor` the floor of a scoped
    proposal's population: only ``problem``'s tasks move (``scope``; the other placed tasks
    stay, fixed), each within its group's rule (``task_reach``, :func:`scope_reach`, and the
    days inside it the rule leaves out, ``task_off_days``, :func:`scope_off_days`). The floor's
    exact model keeps the classes' reach (a larger population: still a floor)."""
    return {
        "scope": {tid for g in problem.groups for tid in g.task_ids},
        "task_reach": scope_reach(problem),
        "task_off_days": scope_off_days(problem),
    }


__all__ = ["floor_scope", "in_item_order", "narrow_rule", "scope_off_days", "scope_reach"]
