"""Moves that carry an ordered item past its class's neighbours (issue 42, the search's reach
under the item order): :meth:`~smartflow_engine.solver.moves.Neighbourhood.reorder` relabels a
class's interchangeable items, or rotates its items along their places, so the order holds; and
the send-back (:func:`~smartflow_engine.solver.least_change.send_back`) returns an ordered item
home only where that keeps the order. Every order is judged by the independent checker of
``tests/state/test_rules_property.py`` (through ``tests/solver/test_upstream_rules.breaks``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.health_eval import HealthEvaluator
from smartflow_engine.solver.health_search import search_health
from smartflow_engine.solver.least_change import send_back
from smartflow_engine.solver.moves import Neighbourhood
from smartflow_engine.solver.problem import Placement, build_problem
from smartflow_engine.state import ScheduleState
from tests.helpers.solver_windows import locked_course, ordered_week
from tests.solver.test_upstream_rules import UPSTREAM, breaks


def _week(tasks: list[dict[str, Any]], days: int = 7) -> ScheduleState:
    """A window of ``days`` days of 12 periods with one class (id 10, 复习, every day
    allowed) and ``tasks`` (state ids from 1, ``task_item`` unless given)."""
    rows = [
        {
            "state_id": i,
            "source": "task_item",
            "source_id": 1000 + i,
            "name": f"任务{i}",
            "locked": False,
            **t,
        }
        for i, t in enumerate(tasks, start=1)
    ]
    return ordered_week(rows, days)


def _item(order: int, duration: int = 4) -> dict[str, Any]:
    return {
        "category": "复习",
        "category_id": 10,
        "task_order": order,
        "status": "pending",
        "duration": duration,
    }


def _overloaded_first_day() -> tuple[ScheduleState, list[Placement]]:
    """A week: day 1 holds an event on periods 1-8 and the class's first item (4 periods), a
    full day (critical utilisation, no buffer); items 2 and 3 (the same kind: 4 periods, one
    rule) on days 2 and 3, whose events leave no other run of 4 free periods, nor do days 4-6;
    day 7 has one (periods 1-5). The only order-keeping move, item 3 to day 7, opens a 4-day
    gap in the subject (a warning) and unloads nothing."""
    tasks = [locked_course(1, 1, 8), _item(1), _item(2), _item(3)]
    for day in (2, 3, 7):
        tasks += [locked_course(day, 6, 7), locked_course(day, 10, 11)]
    for day in (4, 5, 6):
        tasks += [locked_course(day, 3, 4), locked_course(day, 7, 8), locked_course(day, 11, 12)]
    state = _week(tasks)
    start = [Placement(2, 1, 9, 12), Placement(3, 2, 1, 4), Placement(4, 3, 1, 4)]
    return state, start


def _counts(state: ScheduleState, placements: list[Placement]) -> tuple[int, int]:
    scope = {pl.task_id for pl in placements}
    ev = HealthEvaluator(state, scope, "normal", 0)
    ev.set_placements(placements)
    c = ev.counts_now()
    return (c.critical, c.warning)


def _order_keeping_single_moves(
    state: ScheduleState, placements: list[Placement]
) -> list[list[Placement]]:
    """Every placement one item's move to another free period run of its length reaches
    keeping every rule (the independent checker), the others where they stand: what the
    order-keeping single moves can reach."""
    out = []
    taken = {
        (b.day, q)
        for t in state.tasks
        if t.source == "event"
        for b in t.slots
        for q in range(b.slot_start, b.slot_end + 1)
    }
    for i, pl in enumerate(placements):
        others = placements[:i] + placements[i + 1 :]
        busy = taken | {(o.day, q) for o in others for q in range(o.slot_start, o.slot_end + 1)}
        for day in range(1, state.num_days + 1):
            for s in range(1, 12 - pl.length + 2):
                new = Placement(pl.task_id, day, s, s + pl.length - 1)
                if new == pl or any((day, q) in busy for q in range(s, s + pl.length)):
                    continue
                trial = [*others, new]
                if not breaks(state, trial):
                    out.append(trial)
    return out


def test_relabelling_reaches_what_order_keeping_moves_cannot() -> None:
    """Tests that on a window where no order-keeping single move of an item lowers the
    (critical, warning) counts (brute force over every free place), the search with the
    reordering moves does (the full first day unloads: item 1's place empties, the class's
    items move one place along, item 3 on a new day), the search without them stays at its
    start, and both answers keep the order by the independent checker."""
    state, start = _overloaded_first_day()
    assert not breaks(state, start)
    at_start = _counts(state, start)
    assert at_start[0] >= 1  # the full day
    reachable = _order_keeping_single_moves(state, start)
    assert reachable  # item 3 and item 2 have places of their own
    assert all(_counts(state, trial) >= at_start for trial in reachable)
    problem = build_problem(state, by_subject=True)

    def search(reorder: bool) -> tuple[tuple[int, int], list[Placement]]:
        Neighbourhood.reorder_items = reorder
        try:
            result = search_health(state, problem, start, seed=1, budget_s=0.05)
        finally:
            Neighbourhood.reorder_items = True
        return (result.counts.critical, result.counts.warning), result.placements

    old, old_placed = search(False)
    new, new_placed = search(True)
    assert old == at_start
    assert new < old
    assert not breaks(state, old_placed) and not breaks(state, new_placed)
    day_one = [pl for pl in new_placed if pl.day == 1]
    assert not day_one  # the item on the full day left it
    by_order = sorted(new_placed, key=lambda pl: pl.task_id)
    assert [(pl.day, pl.slot_start) for pl in by_order] == sorted(
        (pl.day, pl.slot_start) for pl in by_order
    )


def test_reorder_relabels_interchangeable_items_and_rotates_others() -> None:
    """Tests :meth:`Neighbourhood.reorder` on hand-made moves: item 1 moved past items 2 and
    3 of its kind is relabelled (the three items take the three places in order, the lengths
    as they were); an item of another length moved past a neighbour rotates the class (each
    item takes the next place from its start, the last the new place; ending where the place
    ends when its start leaves no room); a move no reseating fits (the rotated item would cover
    an event) pushes the items it passes along (:meth:`Neighbourhood.push`: each to the first
    free place after the item before it), and is refused without the push or past its
    limit; a move that keeps the order is returned as it is; without the
    reordering moves a move past a neighbour is refused."""
    state, start = _overloaded_first_day()
    problem = build_problem(state, by_subject=True)
    ev = HealthEvaluator(state, {pl.task_id for pl in start}, "normal", 0)
    ev.set_placements(start)
    origin = {pl.task_id: pl for pl in start}
    nb = Neighbourhood(ev, problem, origin, np.random.default_rng(0), None, DEFAULT_CALIBRATION)
    moved = nb.reorder([(2, Placement(2, 7, 1, 4))])
    assert moved is not None
    assert sorted(moved) == [
        (2, Placement(2, 2, 1, 4)),
        (3, Placement(3, 3, 1, 4)),
        (4, Placement(4, 7, 1, 4)),
    ]
    assert not breaks(state, [pl for _, pl in moved])
    keep = [(4, Placement(4, 7, 2, 5))]
    assert nb.reorder(keep) == keep

    # items of different lengths (2 periods, then 4 and 4): the rotation
    state = _week([locked_course(4, 3, 12), _item(1, 2), _item(2), _item(3)])
    start = [Placement(2, 1, 1, 2), Placement(3, 2, 1, 4), Placement(4, 3, 1, 4)]
    problem = build_problem(state, by_subject=True)
    ev = HealthEvaluator(state, {pl.task_id for pl in start}, "normal", 0)
    ev.set_placements(start)
    nb = Neighbourhood(
        ev, problem, {pl.task_id: pl for pl in start}, np.random.default_rng(0), None,
        DEFAULT_CALIBRATION,
    )  # fmt: skip
    rotated = nb.reorder([(2, Placement(2, 5, 5, 6))])
    assert rotated is not None
    assert sorted(rotated) == [
        (2, Placement(2, 2, 1, 2)),
        (3, Placement(3, 3, 1, 4)),
        (4, Placement(4, 5, 5, 8)),
    ]
    assert not breaks(state, [pl for _, pl in rotated])
    # item 1 to the day's last two periods: item 3 (4 periods) ends where the place ends
    ending = nb.reorder([(2, Placement(2, 5, 11, 12))])
    assert ending is not None and (4, Placement(4, 5, 9, 12)) in ending
    assert not breaks(state, [pl for _, pl in ending])
    # item 1 to day 4's free periods 1-2: rotated, item 3 (4 periods) would cover the event
    # there; items 2 and 3 are pushed along instead, each to the first free place after the
    # item before it (day 5's periods 1-4, then 5-8)
    pushed = nb.reorder([(2, Placement(2, 4, 1, 2))])
    assert pushed is not None
    assert sorted(pushed) == [
        (2, Placement(2, 4, 1, 2)),
        (3, Placement(3, 5, 1, 4)),
        (4, Placement(4, 5, 5, 8)),
    ]
    assert not breaks(state, [pl for _, pl in pushed])
    Neighbourhood.push_items = False
    try:
        assert nb.reorder([(2, Placement(2, 4, 1, 2))]) is None
    finally:
        Neighbourhood.push_items = True
    # at most one item pushed each way: the move needs two, and is refused
    short = Neighbourhood(
        ev, problem, {pl.task_id: pl for pl in start}, np.random.default_rng(0), None,
        dataclasses.replace(DEFAULT_CALIBRATION, push_chain=1),
    )  # fmt: skip
    assert short.reorder([(2, Placement(2, 4, 1, 2))]) is None
    Neighbourhood.reorder_items = False
    try:
        plain = Neighbourhood(
            ev, problem, {pl.task_id: pl for pl in start}, np.random.default_rng(0), None,
            DEFAULT_CALIBRATION,
        )  # fmt: skip
        assert plain.reorder([(2, Placement(2, 5, 5, 6))]) is None
    finally:
        Neighbourhood.reorder_items = True


def test_send_back_keeps_the_order() -> None:
    """Tests that send_back never returns an ordered item home past its class's other items:
    items 1 and 2 stand on days 3 and 4, a proposal puts them on days 1 and 2 (in order) and
    another task on item 2's home; item 1's home is free and its return would not change the
    counts, but it would put item 1 after item 2, so it stays (the independent checker finds
    no breach) while an unordered task in the same position goes home."""
    rows = [
        {
            **_item(1, 2),
            "status": "suggested",
            "slots": [{"day": 3, "slot_start": 1, "slot_end": 2}],
        },
        {
            **_item(2, 2),
            "status": "suggested",
            "slots": [{"day": 4, "slot_start": 1, "slot_end": 2}],
        },
        {"category": "英语", "status": "pending", "duration": 2},
        {
            "category": "数学",
            "status": "suggested",
            "slots": [{"day": 5, "slot_start": 1, "slot_end": 2}],
        },
    ]
    state = _week(rows)
    problem = build_problem(state, include_suggested=True, by_subject=True)
    proposal = [
        Placement(1, 1, 1, 2),
        Placement(2, 2, 1, 2),
        Placement(3, 4, 1, 2),  # on item 2's home
        Placement(4, 6, 1, 2),  # an unordered task away from home
    ]
    assert not breaks(state, proposal)
    out, change, cut = send_back(state, problem, proposal)
    assert not cut and change[0] <= 0 and sum(change) <= 0
    assert not breaks(state, out), breaks(state, out)
    where = {pl.task_id: pl for pl in out}
    assert where[1] == Placement(1, 1, 1, 2)  # its return would pass item 2
    assert where[4] == Placement(4, 5, 1, 2)  # home
    # the return itself would have been taken: the counts do not change with it
    passed = [Placement(1, 3, 1, 2), where[2], where[3], where[4]]
    assert breaks(state, passed)
    assert _counts(state, passed) == _counts(state, out)


@pytest.mark.parametrize("seed", [0, 1])
def test_reordering_search_keeps_every_rule_on_an_upstream_window(seed: int) -> None:
    """Tests that on an upstream-shaped bench window (every rule: half-day blocks, weekdays,
    water-course permission, item order) the search with the reordering moves answers with a
    placement the independent checker passes."""
    from smartflow_engine.solver.baselines import balanced_greedy
    from smartflow_engine.solver.order import keep_order
    from smartflow_engine.state.synthetic import synthetic_window

    state = synthetic_window(500 + seed, 13, variant="plain", upstream=True)
    problem = build_problem(state, by_subject=True)
    start, _ = keep_order(state, balanced_greedy(problem))
    result = search_health(state, problem, start, seed=seed, budget_s=0.3)
    assert not breaks(state, result.placements)
    assert result.counts.key <= result.start_counts.key


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=UPSTREAM, seed=st.integers(0, 2**16), steps=st.integers(10, 60))
def test_reorder_never_breaks_a_rule(state: ScheduleState, seed: int, steps: int) -> None:
    """Tests that every move :meth:`Neighbourhood.reorder` returns, for random single moves and
    trades past the items' neighbours (any free place of the class's days), keeps every rule by
    the independent checker once made, and that undoing it restores the placement."""
    from smartflow_engine.solver.baselines import balanced_greedy
    from smartflow_engine.solver.order import keep_order

    note(state.to_json(indent=None))
    problem = build_problem(state, by_subject=True)
    start, _ = keep_order(state, balanced_greedy(problem))
    scope = {t for g in problem.groups for t in g.task_ids}
    ev = HealthEvaluator(state, scope, "normal", 0)
    ev.set_placements(start)
    rng = np.random.default_rng(seed)
    nb = Neighbourhood(
        ev, problem, {pl.task_id: pl for pl in start}, rng, None, DEFAULT_CALIBRATION
    )
    ordered = sorted(t for t in ev.placed_scope if t in nb.order.key)
    if not ordered:
        return
    for _ in range(steps):
        tid = ordered[int(rng.integers(len(ordered)))]
        g = problem.groups[nb.group_of[tid]]
        here = ev.placed_scope[tid]
        days = nb.allowed_days[nb.group_of[tid]]
        if days.size == 0:
            continue
        day = int(rng.choice(days))
        places = nb.starts_on(g, day, (here,), mover=-1)
        if not places:
            continue
        s, host = places[int(rng.integers(len(places)))]
        cand = nb.reorder([(tid, Placement(tid, day, s, s + g.duration - 1, host))])
        if cand is None:
            continue
        before = dict(ev.placed_scope)
        changes = nb.make(cand)
        placed = list(ev.placed_scope.values())
        assert not breaks(state, placed), breaks(state, placed)
        if rng.random() < 0.5:
            nb.undo(changes)
            assert ev.placed_scope == before
