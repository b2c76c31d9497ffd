"""The incremental soft terms (solver/soft_eval.py) against objective.evaluate."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.solver.baselines import balanced_greedy
from smartflow_engine.solver.objective import TERM_NAMES, evaluate
from smartflow_engine.solver.problem import Placement, Problem, build_problem
from smartflow_engine.solver.soft_eval import SoftEvaluator
from smartflow_engine.state.strategies import windows

WEIGHTS = st.fixed_dictionaries(
    {name: st.sampled_from([0.0, 0.5, 1.0, 2.0, 0.015, 3.7]) for name in TERM_NAMES}
)


def _free_places(ev: SoftEvaluator, problem: Problem, tid: int) -> list[Placement]:
    """Every place of ``tid`` in free periods or in a host block holding no guest (any day:
    the late term is exercised too)."""
    g = problem.groups[ev.group_of[tid]]
    n = g.duration
    out: list[Placement] = []
    for d in range(problem.num_days):
        row = ev.occupied[d].tolist()
        for s in range(problem.slots_per_day - n + 1):
            if not any(row[s : s + n]):
                out.append(Placement(tid, d + 1, s + 1, s + n))
    if g.can_guest:
        taken = {pl.embed_host for pl in ev.placed_scope.values()}
        for b in problem.hosts:
            if b.length >= n and b.host not in taken:
                out.append(Placement(tid, b.day, b.slot_start, b.slot_start + n - 1, b.host))
    return out


def _check(ev: SoftEvaluator, problem: Problem, weights: dict[str, float]) -> None:
    want = evaluate(problem, list(ev.placed_scope.values()), weights)
    got = ev.terms()
    for name in TERM_NAMES:
        if name == "load_imbalance":
            # exact: D times the term is an integer; evaluate's float agrees up to rounding
            assert Fraction(round(want[name] * problem.num_days)) == ev.load_numerator()
            assert abs(got[name] - want[name]) <= 1e-9 * (1 + want[name])
        else:
            assert got[name] == want[name], name
    assert abs(got["weighted_total"] - want["weighted_total"]) <= 1e-9 * (
        1 + want["weighted_total"]
    )
    assert abs(ev.total() - want["weighted_total"]) <= 1e-9 * (1 + want["weighted_total"])
    assert got["placed_slots"] == want["placed_slots"]
    assert got["unplaced_slots"] == want["unplaced_slots"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    state=windows(min_days=2, max_days=21),
    weights=WEIGHTS,
    ops=st.lists(
        st.tuples(st.sampled_from(["move", "swap", "remove", "place"]), st.integers(0, 10**6)),
        min_size=1,
        max_size=30,
    ),
    refresh_late=st.booleans(),
)
def test_soft_terms_equal_evaluate_after_random_moves(
    state: ScheduleState,
    weights: dict[str, float],
    ops: list[tuple[str, int]],
    refresh_late: bool,
) -> None:
    """Tests that after every random move (to a free place or a free host block), swap,
    removal and placement — the total load, hence the load mean, changes with the last two and
    with moves between a free run and a host block — every soft term equals
    objective.evaluate's on the same placements (the load term exactly, as D times it)."""
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = balanced_greedy(problem, weights)
    ev = SoftEvaluator(problem, weights)
    ev.set_placements(start)
    _check(ev, problem, weights)
    scope = sorted(t for g in problem.groups for t in g.task_ids)
    for op, r in ops:
        placed = sorted(ev.placed_scope)
        unplaced = [t for t in scope if t not in ev.placed_scope]
        if op in ("move", "remove") and placed:
            tid = placed[r % len(placed)]
            old = ev.remove(tid, refresh=not refresh_late)
            if op == "move":
                places = [p for p in _free_places(ev, problem, tid) if p != old]
                new = places[(r // 7) % len(places)] if places else old
                ev.place(new, refresh=not refresh_late)
                if refresh_late:
                    ev.refresh((old.day, new.day))
            elif refresh_late:
                ev.refresh((old.day,))
        elif op == "place" and unplaced:
            tid = unplaced[r % len(unplaced)]
            places = _free_places(ev, problem, tid)
            if places:
                new = places[(r // 7) % len(places)]
                ev.place(new, refresh=not refresh_late)
                if refresh_late:
                    ev.refresh((new.day,))
        elif op == "swap" and len(placed) > 1:
            a, b = placed[r % len(placed)], placed[(r // 13) % len(placed)]
            pa, pb = ev.placed_scope[a], ev.placed_scope[b]
            if a != b and pa.length == pb.length:
                ev.remove(a, refresh=False)
                ev.remove(b, refresh=False)
                ev.place(Placement(a, pb.day, pb.slot_start, pb.slot_end, pb.embed_host), False)
                ev.place(Placement(b, pa.day, pa.slot_start, pa.slot_end, pa.embed_host), False)
                ev.refresh((pa.day, pb.day))
        _check(ev, problem, weights)


def test_set_placements_matches_a_fresh_evaluator() -> None:
    """Tests that replacing every placement gives a fresh evaluator's terms."""
    from smartflow_engine.state.synthetic import synthetic_window

    state = synthetic_window(3, 20, variant="fragmented", with_task_classes=True)
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = balanced_greedy(problem)
    ev = SoftEvaluator(problem)
    ev.set_placements(start)
    ev.set_placements(start[: len(start) // 2])
    fresh = SoftEvaluator(problem)
    fresh.set_placements(start[: len(start) // 2])
    assert ev.terms() == fresh.terms()


def _study_layer_switches(state: ScheduleState, scope: set[int]) -> int:
    """The reference (issue 25 item 3): adjacent periods of one day whose study-layer subjects
    make a context switch by :func:`concepts.is_switch` (a guest's subject over its host's
    period, an event's and a free period's none), at least one of them a scope task's."""
    from smartflow_engine.concepts import is_switch, subject_of

    grid = state.grid
    subject = {t.state_id: subject_of(t) for t in state.tasks}
    total = 0
    for d in range(state.num_days):
        layer, mine = [], []
        for p in range(state.slots_per_day):
            g, o = int(grid.guest[d, p]), int(grid.owner[d, p])
            tid = g or o
            layer.append(subject.get(tid) if tid else None)
            mine.append(tid in scope)
        for p in range(state.slots_per_day - 1):
            if is_switch(layer[p], layer[p + 1]) and (mine[p] or mine[p + 1]):
                total += 1
    return total


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=windows(min_days=2, max_days=14), seed=st.integers(0, 10**6))
def test_context_switch_is_the_concepts_switch(state: ScheduleState, seed: int) -> None:
    """Tests that the solver's ``context_switch`` term (objective.evaluate and the incremental
    SoftEvaluator) counts what :func:`concepts.is_switch` calls a switch in the study layer of
    the schedule the placements make: an event next to a study task is none, a guest's
    subject replaces its host's period."""
    import random

    from smartflow_engine.state import Request, relocate

    # the pending tasks are the scope: those left out stay pending in the applied state too
    problem = build_problem(state, include_suggested=False, by_subject=True)
    start = balanced_greedy(problem)
    rng = random.Random(seed)
    placements = rng.sample(start, rng.randint(0, len(start)))
    after = state.copy_state()
    applied = relocate(
        after,
        [Request(p.task_id, p.day, p.slot_start) for p in placements],
        op="apply_proposal",
        status_after="suggested",
    )
    assert applied.ok, applied
    scope = {p.task_id for p in placements}
    want = _study_layer_switches(after, scope)
    assert evaluate(problem, placements)["context_switch"] == want
    ev = SoftEvaluator(problem)
    ev.set_placements(placements)
    assert ev.terms()["context_switch"] == want


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_per_day_counts_equal_the_shared_definitions(seed: int) -> None:
    """Tests that the evaluator's per-move counts of a day (a Python loop, kept for speed)
    equal health_facts' definitions on random days: the isolated free periods are the free
    runs of length 1 (``free_runs``), the switches the pairs of ``switch_mask`` that touch a
    scope period."""
    import numpy as np

    from smartflow_engine.health_facts import free_runs, switch_mask
    from smartflow_engine.state.synthetic import synthetic_window

    state = synthetic_window(1, 6, variant="fragmented", with_task_classes=True)
    problem = build_problem(state, include_suggested=True, by_subject=True)
    ev = SoftEvaluator(problem)
    rng = np.random.default_rng(seed)
    shape = ev.occupied.shape
    ev.occupied[:] = rng.random(shape) < 0.5
    ev.subj[:] = rng.integers(0, 4, size=shape)
    ev.mine[:] = rng.random(shape) < 0.5
    ev.refresh(range(1, ev.num_days + 1))
    rows, _, lengths = free_runs(~ev.occupied)
    isolated = np.bincount(rows[lengths == 1], minlength=ev.num_days)
    touched = np.zeros((shape[0], shape[1] - 1), dtype=bool)
    for q in range(shape[1] - 1):
        touched[:, q] = ev.mine[:, q] | ev.mine[:, q + 1]
    switches = np.count_nonzero(switch_mask(ev.subj) & touched, axis=1)
    assert ev.day_isolated.tolist() == isolated.tolist()
    assert ev.day_switches.tolist() == switches.tolist()
    assert (ev.isolated, ev.switches) == (int(isolated.sum()), int(switches.sum()))
    assert switches.sum() > 0 or not touched.any()  # not vacuous on most draws
