"""The exact ordered model (:mod:`smartflow_engine.solver.ordered`) equals a brute-force maximum
under the item order on tiny windows, whatever its formulation's shortcuts (the order-encoded
frontier, the prefix symmetry of interchangeable items, the per-class chain caps).

The oracle is :func:`tests.solver.test_feasibility_rules.brute_force`, written from the raw
fields: every combination of places, keeping those in which every two placed items of one
class with different orders are in order. A dropped precedence makes the model's maximum
larger than the oracle's, an over-tight one smaller.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.solver._cpsat import SolveStatus
from smartflow_engine.solver.ordered import (
    OrderedModel,
    _chain_max,
    max_placeable_ordered,
    solve_ordered,
)
from smartflow_engine.solver.problem import Placement, build_problem
from smartflow_engine.state import order_key
from tests.helpers.solver_windows import apply_placements
from tests.solver.test_feasibility_rules import brute_force

CLASS_IDS = (10, 11)


@st.composite
def ordered_windows(draw: st.DrawFn) -> dict[str, Any]:
    """1-2 days of 4-6 periods (at most 11 periods), courses and water courses, 3-5 pending
    items of one or two classes, durations 1-2, orders 1-4 (equal orders and runs of alike
    items both occur), a banned period and a class's days sometimes; the raw state data."""
    days = draw(st.integers(1, 2))
    spd = draw(st.integers(4, 6))
    while days * spd > 11:
        spd -= 1
    mapping = [{"day_index": d, "week": 1, "day_of_week": d} for d in range(1, days + 1)]
    tasks: list[dict[str, Any]] = []
    for day in range(1, days + 1):
        for slot in range(1, spd + 1):
            kind = draw(st.sampled_from(["free", "free", "free", "course", "water"]))
            if kind == "free":
                continue
            block = {"day": day, "slot_start": slot, "slot_end": slot}
            tasks.append(
                {
                    "source": "event",
                    "category": "课程",
                    "status": "existing",
                    "locked": kind == "course",
                    "can_embed": kind == "water",
                    "slots": [block],
                }
            )
    classes_used = CLASS_IDS[: draw(st.integers(1, 2))]
    for _ in range(draw(st.integers(3, 5))):
        tasks.append(
            {
                "status": "pending",
                "duration": draw(st.integers(1, 2)),
                "category_id": draw(st.sampled_from(classes_used)),
                "task_order": draw(st.integers(1, 4)),
            }
        )
    classes = []
    for cid in CLASS_IDS:
        start = draw(st.integers(1, days))
        classes.append(
            {
                "id": cid,
                "name": f"c{cid}",
                "start_day": start,
                "end_day": draw(st.integers(start, days)),
                "excluded_periods": draw(st.lists(st.integers(1, spd), unique=True, max_size=1)),
                "allow_filler_course": draw(st.booleans()),
            }
        )
    full = []
    for i, t in enumerate(tasks, start=1):
        row = {"state_id": i, "name": f"t{i}", "source": "task_item", "category": "学习"}
        if "category_id" in t:
            row["category"] = f"科目{t['category_id']}"
        row.update(t)
        full.append(row)
    return {
        "window": {"total_days": days, "slots_per_day": spd, "day_mapping": mapping},
        "tasks": full,
        "task_classes": classes,
    }


def _keeps_order(state: ScheduleState, placements: list[Placement]) -> bool:
    keyed = [(order_key(t), p) for p in placements if (t := state.task(p.task_id)) is not None]
    for (ka, a), (kb, b) in itertools.permutations(keyed, 2):
        same = ka and kb and ka[0] == kb[0] and ka[1] < kb[1]
        if same and not (a.day, a.slot_end) < (b.day, b.slot_start):
            return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=ordered_windows(), use_targets=st.booleans())
def test_ordered_maximum_equals_brute_force(data: dict[str, Any], use_targets: bool) -> None:
    """Tests that the exact ordered model proves the brute-force maximum under the item order
    (with targets too, where the symmetry and the caps are off), that its placements keep the
    order and apply through the write path, and that its bound is its maximum."""
    state = ScheduleState.model_validate(data)
    note(state.to_json(indent=None))
    _, best = brute_force(state.to_dict(), include_suggested=False)
    problem = build_problem(state, subjects=False)
    targets = {tid: (1, 1) for g in problem.groups for tid in g.task_ids} if use_targets else None
    status, got, bound, placements = max_placeable_ordered(
        state, problem, time_limit_s=30.0, num_workers=1, targets=targets
    )
    assert status == SolveStatus.OPTIMAL
    assert got == best
    assert bound == best
    assert sum(p.length for p in placements) == best
    assert _keeps_order(state, placements)
    apply_placements(state, placements)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=ordered_windows(), seed=st.randoms(use_true_random=False))
def test_any_hint_keeps_the_maximum(data: dict[str, Any], seed: Any) -> None:
    """Tests that a hint of any order-keeping placements (a brute-force one relabelled at
    random within its classes' alike items, so that a later alike item may be placed where an
    earlier is not: what the prefix symmetry forbids) leaves the maximum as it is."""
    state = ScheduleState.model_validate(data)
    note(state.to_json(indent=None))
    _, best = brute_force(state.to_dict(), include_suggested=False)
    problem = build_problem(state, subjects=False)
    _, _, _, first = max_placeable_ordered(state, problem, time_limit_s=30.0, num_workers=1)
    hint = [p for p in first if seed.random() < 0.7]  # a subset keeps the order too
    status, got, _, placements = max_placeable_ordered(
        state, problem, time_limit_s=30.0, num_workers=1, hint=hint
    )
    assert status == SolveStatus.OPTIMAL
    assert got == best
    assert _keeps_order(state, placements)


def _one_day(spd: int, free: set[int], items: list[tuple[int, int]]) -> ScheduleState:
    """One day of ``spd`` periods, every period but ``free`` a locked course; pending items
    ``(duration, order)`` of one class."""
    tasks: list[dict[str, Any]] = [
        {
            "source": "event",
            "category": "课程",
            "status": "existing",
            "locked": True,
            "slots": [{"day": 1, "slot_start": p, "slot_end": p}],
        }
        for p in range(1, spd + 1)
        if p not in free
    ]
    tasks += [
        {"status": "pending", "duration": d, "category_id": 10, "task_order": o, "category": "科目"}
        for d, o in items
    ]
    rows = [
        {"state_id": i, "name": f"t{i}", "source": "task_item", "category": "学习", **t}
        for i, t in enumerate(tasks, start=1)
    ]
    return ScheduleState.model_validate(
        {
            "window": {
                "total_days": 1,
                "slots_per_day": spd,
                "day_mapping": [{"day_index": 1, "week": 1, "day_of_week": 1}],
            },
            "tasks": rows,
            "task_classes": [{"id": 10, "name": "科目"}],
        }
    )


@pytest.mark.parametrize(
    ("items", "best"),
    [
        # order 1 takes the double gap (3-4), order 2 has nothing after it: only 2 of 3
        ([(2, 1), (1, 2)], 2),
        # the single period first, then the double: all 3 in order
        ([(1, 1), (2, 2)], 3),
        # equal orders do not constrain each other: all 3
        ([(2, 1), (1, 1)], 3),
        # a run of alike items (orders 1-3, one period each) and a double last: 1, 3, (4-5)
        ([(1, 1), (1, 2), (1, 3), (2, 4)], 4),
    ],
)
def test_the_order_takes_what_it_forbids(items: list[tuple[int, int]], best: int) -> None:
    """Tests, on one day whose free periods are 1 and 3-4 (and 5 with four items), that the
    ordered maximum counts what the order forbids and no more."""
    free = {1, 3, 4} if len(items) < 4 else {1, 3, 4, 5}
    state = _one_day(6, free, items)
    problem = build_problem(state, subjects=False)
    status, got, bound, _ = max_placeable_ordered(state, problem, time_limit_s=10.0, num_workers=1)
    assert (status, got, bound) == (SolveStatus.OPTIMAL, best, best)


@settings(max_examples=200, deadline=None)
@given(
    chain=st.lists(
        st.lists(st.tuples(st.integers(1, 8), st.integers(0, 2)), max_size=4), max_size=4
    )
)
def test_chain_max_equals_enumeration(chain: list[list[tuple[int, int]]]) -> None:
    """Tests that the per-class chain cap (:func:`_chain_max`) is the most periods its items
    place alone in order, by enumerating every choice of a place or none per item."""
    places = [[(s, s + e, e + 1) for s, e in item] for item in chain]
    best = 0
    for pick in itertools.product(*[[None, *item] for item in places]):
        chosen = [p for p in pick if p is not None]
        if all(a[1] < b[0] for a, b in itertools.pairwise(chosen)):
            best = max(best, sum(p[2] for p in chosen))
    assert _chain_max(places, 12) == best


class _NoChainDP(OrderedModel):
    """The CP-SAT model even for one class's chain (the peer of the dynamic programme)."""

    chain_dp = False


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=ordered_windows(), far=st.integers(1, 11), use_targets=st.booleans())
def test_chain_programme_equals_the_model(
    data: dict[str, Any], far: int, use_targets: bool
) -> None:
    """Tests that on one class's items with orders all different (what the exact chains of
    keep_order solve) the dynamic programme gives CP-SAT's optimum: as many periods and, with
    targets, as small a total distance, its placements keeping the order and every rule."""
    state = ScheduleState.model_validate(data)
    problem = build_problem(state, subjects=False)
    options = _options(problem)
    keys = {tid: order_key(state.task(tid)) for tid in options}  # type: ignore[arg-type]
    cls = next(iter(keys.values()))[0] if keys else None  # type: ignore[index]
    chain = {tid: opts for tid, opts in options.items() if keys[tid][0] == cls}  # type: ignore[index]
    orders = [keys[tid][1] for tid in chain]  # type: ignore[index]
    assume(chain and len(set(orders)) == len(orders))
    spd, days = state.slots_per_day, state.num_days
    targets = {tid: (1 + i % days, 1 + (i * far) % spd) for i, tid in enumerate(chain)}
    tg = targets if use_targets else None
    dp = solve_ordered(state, chain, spd, days, time_limit_s=30.0, num_workers=1, targets=tg)
    cp = solve_ordered(
        state, chain, spd, days, time_limit_s=30.0, num_workers=1, targets=tg, model=_NoChainDP
    )
    assert dp[0] == cp[0] == SolveStatus.OPTIMAL
    assert dp[1] == cp[1]
    if use_targets:
        assert _distance(dp[3], targets, spd) == _distance(cp[3], targets, spd)
    assert _keeps_order(state, dp[3])
    apply_placements(state, dp[3])


def _options(problem: Any) -> dict[int, list[Placement]]:
    """Every scope task's places, as :func:`max_placeable_ordered` lists them."""
    out: dict[int, list[Placement]] = {}
    for g in problem.groups:
        for tid in g.task_ids:
            opts = [
                Placement(tid, b.day, s, s + g.duration - 1)
                for b in problem.runs
                for s in problem.starts(g, b)
            ]
            for hb in problem.hosts:
                opts += [
                    Placement(tid, hb.day, hs, hs + g.duration - 1, hb.host)
                    for hs in problem.starts(g, hb)[:1]
                ]
            out[tid] = opts
    return out


def _distance(placements: list[Placement], targets: dict[int, tuple[int, int]], spd: int) -> int:
    def index(day: int, period: int) -> int:
        return (day - 1) * spd + period

    return sum(abs(index(p.day, p.slot_start) - index(*targets[p.task_id])) for p in placements)
