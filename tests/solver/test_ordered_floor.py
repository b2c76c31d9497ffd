"""The floor's model of the per-day rules that holds the item order
(:mod:`smartflow_engine.solver.ordered_floor`, issue 42): never above the best schedule that
keeps the order (an exhaustive enumeration written here from the raw fields), above the
order-free floor where the order forces a day over its band, and silent on a population it
does not model."""

from __future__ import annotations

import itertools
import random
from typing import Any

from smartflow_engine import ScheduleState
from smartflow_engine.rules import LEVELS, Level
from smartflow_engine.solver.health_eval import HealthEvaluator
from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.solver.ordered import max_placeable_ordered
from smartflow_engine.solver.ordered_floor import ordered_days
from smartflow_engine.solver.problem import Placement, build_problem
from smartflow_engine.tools_adapter.tools.close_text import binding_text
from tests.helpers.solver_windows import locked_course, make_state, random_classes, water_course

SPD = 12
# ordered_days's arguments on :func:`_forced_window` (its three pending periods placed)
_ARGS: dict[str, Any] = {
    "level": "normal",
    "pending_min": 3,
    "count_load": True,
    "count_buffer": True,
}


def _courses(day: int, periods: list[int]) -> list[dict[str, Any]]:
    return [locked_course(day, p, p) for p in periods]


def _forced_window() -> ScheduleState:
    """Day 1: courses on eight periods, its four free periods single ones (1, 3, 5, 7);
    day 2: courses on seven (1-7), its free periods one run (8-12). Class 10's item 1 (two
    periods) fits day 2 alone; its item 2 (one period) fits either day, and must follow item
    1: in order both go to day 2. Out of order, item 2 may take a single period of day 1."""
    day1 = _courses(1, [2, 4, 6, 8, 9, 10, 11, 12])
    day2 = _courses(2, [1, 2, 3, 4, 5, 6, 7])
    items = [
        {"status": "pending", "duration": 2, "category_id": 10, "task_order": 1},
        {"status": "pending", "duration": 1, "category_id": 10, "task_order": 2},
    ]
    return make_state(2, SPD, [*day1, *day2, *items], [{"id": 10, "name": "c10"}])


def test_the_order_raises_the_floor_to_the_best_schedule_in_order() -> None:
    """Tests that on :func:`_forced_window` the floor with the ordered model is the best
    schedule in order exactly (the enumeration's least criticals and least criticals +
    warnings), lexicographically above the floor with the order-free exact model alone, and
    that its entry names the model."""
    state = _forced_window()
    common: dict[str, Any] = {"pending_periods": 3, "exact_s": 10.0, "exact_work_s": 2.0}
    free = health_floor(state, "normal", **common)
    held = health_floor(state, "normal", ordered_s=10.0, ordered_work_s=2.0, **common)
    keys = _ordered_keys(state, "normal")
    assert held.critical == min(c for c, _ in keys)
    assert held.critical + held.warning == min(c + w for c, w in keys)
    assert (held.critical, held.warning) > (free.critical, free.warning)
    entry = next(b for b in held.binding if b["why"]["kind"] == "ordered_days")
    text = binding_text(entry["rule"], entry["why"])
    assert "按顺序" in text and f"至少{entry['why']['min_critical']}个严重" in text


def test_without_the_order_the_same_window_has_no_such_warning() -> None:
    """Tests the control: the same window without item 2's order (no order between the two)
    runs no ordered model, and the two floors agree."""
    state = _forced_window()
    data = state.to_dict()
    data["tasks"][-1]["task_order"] = None
    unordered = ScheduleState.model_validate(data)
    common: dict[str, Any] = {"pending_periods": 3, "exact_s": 10.0, "exact_work_s": 2.0}
    free = health_floor(unordered, "normal", **common)
    held = health_floor(unordered, "normal", ordered_s=10.0, ordered_work_s=2.0, **common)
    assert (held.critical, held.warning) == (free.critical, free.warning)
    assert not any(b["why"]["kind"] == "ordered_days" for b in held.binding)


def _random_window(rng: random.Random) -> ScheduleState:
    """2-3 days of 12 periods mostly held by courses (free runs of 1-4 periods), 2-4 pending
    items of one or two ordered classes (durations 1-3, orders 1-3: equal orders occur), one
    suggested item sometimes, classes with day windows and a banned period sometimes."""
    days = rng.randint(2, 3)
    tasks: list[dict[str, Any]] = []
    free: dict[int, list[int]] = {}
    for day in range(1, days + 1):
        slot, free[day] = 1, []
        while slot <= SPD:
            n = rng.randint(1, 4)
            if rng.random() < 0.4:
                free[day] += list(range(slot, min(SPD, slot + n - 1) + 1))
            else:
                tasks += _courses(day, list(range(slot, min(SPD, slot + n - 1) + 1)))
            slot += n
    classes = random_classes(rng, days, SPD)
    for _ in range(rng.randint(2, 4)):
        tasks.append(
            {
                "status": "pending",
                "duration": rng.randint(1, 3),
                "category_id": rng.choice([10, 11]),
                "task_order": rng.randint(1, 3),
            }
        )
    if rng.random() < 0.4:  # a suggested item on a free run long enough, if any
        n = rng.randint(1, 2)
        spots = [
            (d, s) for d in free for s in free[d] if all(p in free[d] for p in range(s, s + n))
        ]
        if spots:
            d, s = rng.choice(spots)
            tasks.append(
                {
                    "status": "suggested",
                    "category_id": 10,
                    "task_order": rng.randint(1, 3),
                    "slots": [{"day": d, "slot_start": s, "slot_end": s + n - 1}],
                }
            )
    return make_state(days, SPD, tasks, classes)


def _places(state: ScheduleState, t: Any) -> list[tuple[int, int, int]]:
    """Every (day, start, end) the class rules allow a movable item (its class's days and
    allowed periods), and a suggested item's own place."""
    cls = state.task_class(t.category_id)
    n = t.need() if t.status == "pending" else t.slots[0].length
    banned = set(cls.excluded_periods)
    lo, hi = cls.start_day or 1, min(cls.end_day or state.num_days, state.num_days)
    out = [
        (d, s, s + n - 1)
        for d in range(lo, hi + 1)
        for s in range(1, SPD - n + 2)
        if not banned & set(range(s, s + n))
    ]
    if t.status != "pending":
        here = (t.slots[0].day, t.slots[0].slot_start, t.slots[0].slot_end)
        out += [here] if here not in out else []
    return out


def _in_order(chosen: list[tuple[Any, tuple[int, int, int]]]) -> bool:
    """Two items of one class with orders a < b: a ends before b starts."""
    for (ta, pa), (tb, pb) in itertools.permutations(chosen, 2):
        same = ta.category_id == tb.category_id and ta.task_order < tb.task_order
        if same and not (pa[0], pa[2]) < (pb[0], pb[1]):
            return False
    return True


def _ordered_keys(state: ScheduleState, level: Level) -> list[tuple[int, int]]:
    """The (critical, warning) of every schedule placing every movable item where the class
    rules allow it, in order, on free periods."""
    movable = [t for t in state.tasks if t.source == "task_item"]
    ids = {t.state_id for t in movable}
    ev = HealthEvaluator(state, ids, level)
    keys: list[tuple[int, int]] = []
    for combo in itertools.product(*(_places(state, t) for t in movable)):
        cells = [(d, p) for d, s, e in combo for p in range(s, e + 1)]
        if len(cells) != len(set(cells)) or not _in_order(list(zip(movable, combo, strict=True))):
            continue
        if any(int(state.grid.owner[d - 1, p - 1]) not in (0, *ids) for d, p in cells):
            continue  # (a course's period; the movable tasks' own periods are free to them)
        placed = [Placement(t.state_id, *pl) for t, pl in zip(movable, combo, strict=True)]
        ev.set_placements(placed)
        keys.append(ev.counts_now().key)
    return keys


def test_the_ordered_floor_is_never_above_the_best_schedule_in_order() -> None:
    """Tests, on 60 seeded tiny windows at every level, against every schedule that keeps the
    class rules and the order (every pending item placed), that the floor with the ordered
    model is a floor (no schedule has fewer criticals, fewer criticals + warnings, or fewer
    warnings at the floor's criticals than its least warnings) and never below the floor
    without it."""
    rng = random.Random(42)
    checked = 0
    while checked < 60:
        state = _random_window(rng)
        level: Level = rng.choice(LEVELS)
        keys = _ordered_keys(state, level)
        if not keys or len(keys) > 5_000:
            continue
        pending = sum(t.need() for t in state.pending_tasks())
        common: dict[str, Any] = {"pending_periods": pending, "exact_s": 10.0, "exact_work_s": 2.0}
        free = health_floor(state, level, **common)
        held = health_floor(state, level, ordered_s=10.0, ordered_work_s=2.0, **common)
        for c, w in keys:
            assert c >= held.critical, (state.to_json(), level, held)
            assert c + w >= held.critical + held.warning, (state.to_json(), level, held)
            if held.least_warning is not None and c == held.critical:
                assert w >= held.least_warning, (state.to_json(), level, held)
        assert held.critical >= free.critical
        assert held.critical + held.warning >= free.critical + free.warning
        checked += 1


def test_a_population_it_does_not_model_claims_nothing() -> None:
    """Tests that an existing study task among the movable ones (it may stand anywhere), or
    placed items out of their order now, make the model claim nothing."""
    state = _forced_window()
    movable = [t.state_id for t in state.tasks if t.source == "task_item"]
    common = {**_ARGS, "time_limit_s": 10.0, "work_s": 2.0}
    assert ordered_days(state, movable, **common).proven
    data = state.to_dict()
    data["tasks"].append(
        {"state_id": 99, "name": "x", "source": "task_item", "category": "学习",
         "status": "existing", "slots": [{"day": 2, "slot_start": 12, "slot_end": 12}]}
    )  # fmt: skip
    existing = ScheduleState.model_validate(data)
    assert not ordered_days(existing, [*movable, 99], **common).proven
    data = state.to_dict()
    first, second = data["tasks"][-2], data["tasks"][-1]
    first.update(status="suggested", slots=[{"day": 2, "slot_start": 11, "slot_end": 12}])
    second.update(status="suggested", slots=[{"day": 2, "slot_start": 8, "slot_end": 8}])
    swapped = ScheduleState.model_validate(data)
    assert not ordered_days(swapped, movable, **{**common, "pending_min": 0}).proven


def test_a_work_budget_gives_the_same_answer_twice() -> None:
    """Tests that with a work budget (one worker) two calls answer alike."""
    state = _forced_window()
    movable = [t.state_id for t in state.tasks if t.source == "task_item"]
    args = {**_ARGS, "time_limit_s": 30.0, "work_s": 1.0}
    a, b = ordered_days(state, movable, **args), ordered_days(state, movable, **args)
    assert (a.proven, a.critical, a.critical_warning, a.lex_warning) == (
        b.proven,
        b.critical,
        b.critical_warning,
        b.lex_warning,
    )


def test_two_guests_of_one_water_course_on_one_day() -> None:
    """Tests that a water course with two blocks on one day holds a guest in each: two
    items of two classes (the CP-SAT model, not one class's chain programme) that fit nowhere
    else are both placed (one guest per block, not per host and day)."""
    course = water_course(1, (1, 2), (5, 6))
    walls = _courses(1, [3, 4, 7, 8, 9, 10, 11, 12])
    items = [
        {"status": "pending", "duration": 2, "category_id": cid, "task_order": k}
        for cid, k in ((10, 1), (10, 2), (11, 1))
    ]
    classes = [{"id": cid, "name": f"c{cid}", "allow_filler_course": True} for cid in (10, 11)]
    state = make_state(1, SPD, [course, *walls, *items], classes)
    problem = build_problem(state, subjects=False)
    _, best, _, placements = max_placeable_ordered(state, problem, time_limit_s=10.0, num_workers=1)
    assert best == 4, placements
    assert {p.slot_start for p in placements} == {1, 5}


def test_a_start_the_clock_cut_is_reported(monkeypatch: Any) -> None:
    """Tests that when the wall clock, not the work, ends the start's solve (the most periods
    in order), the answer says the clock cut it unless its bounds were all proven optimal
    anyway: on a 13-day upstream window (its bounds not complete in one unit of work) the
    start is replaced by one that uses up its limit and finds nothing; the same call with the
    real start is not cut."""
    import time as clock

    from smartflow_engine.solver import ordered_floor
    from smartflow_engine.solver._cpsat import SolveStatus
    from smartflow_engine.solver.problem import scope_tasks
    from smartflow_engine.state.synthetic import synthetic_window

    def slow_start(*args: Any, time_limit_s: float, **kwargs: Any) -> Any:
        clock.sleep(time_limit_s)
        return SolveStatus.UNKNOWN, 0, 0, []

    state = synthetic_window(500, 13, variant="fragmented", upstream=True)
    movable = [t.state_id for t in scope_tasks(state, include_suggested=True)]
    pending = sum(t.need() for t in state.pending_tasks())
    args = {**_ARGS, "pending_min": pending, "time_limit_s": 30.0, "work_s": 1.0}
    real = ordered_days(state, movable, **args)
    assert not real.wall_cut and not real.figures.get("complete")
    monkeypatch.setattr(ordered_floor, "solve_ordered", slow_start)
    cut = ordered_days(state, movable, **{**args, "time_limit_s": 4.0})
    assert cut.wall_cut


def test_a_first_call_does_not_charge_the_import_to_its_limit() -> None:
    """Tests, in a fresh interpreter (CP-SAT not imported yet: ~0.25 s), that the process's
    one-time import comes before the order floor's clock, as before a proposal's
    (``placement.warm_imports``): a first call limited to 0.1 s answers within its limit plus
    a grace of 0.1 s (it once spent 0.2 s importing inside its limit), cut by the clock."""
    import subprocess
    import sys

    code = """
import sys
from smartflow_engine.solver.ordered_floor import ordered_days
from smartflow_engine.solver.problem import scope_tasks
from smartflow_engine.state.synthetic import synthetic_window
assert not any(m.startswith("ortools") for m in sys.modules)
state = synthetic_window(500, 30, variant="fragmented", upstream=True)
movable = [t.state_id for t in scope_tasks(state, include_suggested=True)]
found = ordered_days(state, movable, level="normal", pending_min=0, count_load=True,
                     count_buffer=True, time_limit_s=0.1)
print(found.runtime_s, found.proven, found.wall_cut)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    runtime, proven, cut = out.stdout.split()
    assert float(runtime) <= 0.1 + 0.1
    assert (proven, cut) == ("False", "True")
