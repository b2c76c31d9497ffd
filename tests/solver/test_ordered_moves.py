"""The one search keeps the item order itself (issue 42): every move and trade of
:class:`~smartflow_engine.solver.moves.Neighbourhood` keeps each class's item order (and every
other class rule), judged by the independent checker of ``tests/state/test_rules_property.py``;
a proposal's search answer needs no order step after it.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.health_eval import HealthEvaluator
from smartflow_engine.solver.health_search import search_health
from smartflow_engine.solver.moves import ItemOrder, Neighbourhood
from smartflow_engine.solver.order import keep_order, order_kept
from smartflow_engine.solver.problem import Placement, build_problem
from smartflow_engine.state import ScheduleState
from smartflow_engine.state.synthetic import synthetic_window
from tests.solver.test_upstream_rules import UPSTREAM, breaks


def _ordered_start(state: ScheduleState) -> tuple[object, list[Placement]]:
    from smartflow_engine.solver.baselines import balanced_greedy

    problem = build_problem(state, by_subject=True)
    kept, _ = keep_order(state, balanced_greedy(problem))
    return problem, kept


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=UPSTREAM, seed=st.integers(0, 2**16), steps=st.integers(20, 80))
def test_moves_never_break_the_order(state: ScheduleState, seed: int, steps: int) -> None:
    """Tests that from a start keeping every rule, every operator of the search (relocations,
    swaps, a task's best place, the gap and unload scans, the send-back's returns; the moves
    that carry an item past its neighbours, its class relabelled or rotated, included) leaves
    a placement that keeps every rule, the item order included, after each move."""
    note(state.to_json(indent=None))
    problem, start = _ordered_start(state)
    assert not breaks(state, start)
    scope = {t for g in problem.groups for t in g.task_ids}  # type: ignore[attr-defined]
    ev = HealthEvaluator(state, scope, "normal", 0)
    ev.set_placements(start)
    rng = np.random.default_rng(seed)
    origin = {pl.task_id: pl for pl in start}
    nb = Neighbourhood(ev, problem, origin, rng, None, DEFAULT_CALIBRATION)  # type: ignore[arg-type]
    tids = sorted(ev.placed_scope)
    if not tids:
        return
    for _ in range(steps):
        op = int(rng.integers(6))
        tid = tids[int(rng.integers(len(tids)))]
        if op == 0:
            nb.relocate(tid, "any" if rng.random() < 0.5 else "light")
        elif op == 1:
            other = tids[int(rng.integers(len(tids)))]
            if other != tid:
                nb.swap(tid, other)
        elif op == 2:
            nb.best_relocation(tid, (10**6, 10**6, 1e9))  # any place is "not worse"
        elif op == 3:
            nb.scan(nb.gap_candidates() + nb.unload_candidates(), (10**6, 10**6, 1e9))
        elif op == 4:
            nb.gap_move()
        else:  # the send-back: a task whose origin is offered returns there when it is free
            home, here = nb.origin.get(tid), ev.placed_scope[tid]
            if home is not None and home != here:
                ev.remove(tid)
                if home.embed_host is None:
                    free = ev.free_at(home.day, home.slot_start, home.slot_end)
                else:
                    free = ev.host_block_free(home)
                ev.place(home if free else here)
        placed = list(ev.placed_scope.values())
        assert not breaks(state, placed), (op, breaks(state, placed))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=UPSTREAM, seed=st.integers(0, 100))
def test_search_answer_keeps_the_order(state: ScheduleState, seed: int) -> None:
    """Tests that the one search, started from a placement keeping the order, answers with one
    that keeps every rule: no order step has to re-place it; with the soft terms' weights too
    (the soft phase's moves re-seat a class as the health phase's do)."""
    from smartflow_engine.solver.objective import resolve_weights

    note(state.to_json(indent=None))
    problem, start = _ordered_start(state)
    for weights in (None, resolve_weights(None)):
        result = search_health(
            state,
            problem,  # type: ignore[arg-type]
            start,
            seed=seed,
            budget_s=0.05,
            weights=weights,
        )
        assert order_kept(state, result.placements)
        assert not breaks(state, result.placements)


def test_item_order_window() -> None:
    """Tests ItemOrder's window on a hand-made class: items of orders 1 < 2 < 3, the middle one
    must start after the first ends and end before the third starts; equal orders do not bind."""
    state = synthetic_window(500, 13, variant="plain", upstream=True)
    problem = build_problem(state, by_subject=True)
    order = ItemOrder(state, problem)
    cid, members = next((c, m) for c, m in order.members.items() if len(m) >= 3)
    by_order = sorted(members, key=lambda t: order.key[t][1])
    a, b, c = by_order[0], by_order[1], by_order[-1]
    placed = {a: Placement(a, 2, 3, 4), c: Placement(c, 5, 1, 2)}
    window = order.window(b, placed)
    assert window is not None
    after, before = window
    fixed_after, fixed_before = order.fixed.get(b, (None, None))
    assert after == max(x for x in ((2, 4), fixed_after) if x is not None)
    assert before == min(x for x in ((5, 1), fixed_before) if x is not None)
    assert not ItemOrder.fits(window, 2, 4, 4)  # starts where the earlier one ends
    assert not ItemOrder.fits(window, 5, 1, 1)  # ends where the later one starts
    assert ItemOrder.fits((None, None), 1, 1, 12)
    assert ItemOrder.fits(None, 1, 1, 12)
    assert cid in {order.key[t][0] for t in members}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=UPSTREAM)
def test_order_step_after_the_search_is_a_no_op(state: ScheduleState) -> None:
    """Tests that a proposal's pipeline (ordered start, order-keeping search, guard) answers with
    placements that keep the order, so the order step after it returns the same proposal (it
    used to re-place the search's answer), and that a proposal claiming the proven maximum
    places it."""
    from smartflow_engine.solver.order import order_proposal
    from smartflow_engine.solver.placement import _propose_scope

    note(state.to_json(indent=None))
    proposal = _propose_scope(
        state,
        time_limit_s=1.0,
        include_suggested=False,
        work_limit_s=0.1,
        within=None,
        seed=0,
        weights=None,
        num_workers=1,
        allow_late=False,
        threshold="normal",
        disruption_weight=1.0,
        calibration=DEFAULT_CALIBRATION,
    )
    assert order_kept(state, proposal.placements)
    assert not breaks(state, proposal.placements)
    assert order_proposal(state, proposal) is proposal
    if proposal.max_slots is not None:
        assert sum(pl.length for pl in proposal.placements) == proposal.max_slots
