"""check_feasibility equals a brute-force maximum under every class rule (issue 42): half-day
blocks, single banned periods, weekdays (from the day mapping), the class's days, the
water-course permission, and the item order (between the scope's items and against the
class's items that stay where they are).

The oracle here is written from the raw fields, sharing no code with the solver: it lists each
scope task's places and tries every combination, keeping only those in which every pair of
placed items of one class with different orders is in order.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.solver import check_feasibility, negotiation_figures
from smartflow_engine.solver.feasibility import standing_witness
from smartflow_engine.solver.problem import build_problem
from tests.helpers.solver_windows import apply_placements

CLASS_IDS = (10, 11)


@st.composite
def ruled_windows(draw: st.DrawFn) -> ScheduleState:
    """1-3 days of 4-6 periods with a day mapping; courses, water courses, ordered suggested
    items, pending items of two classes with blocks, periods, weekdays, days, permission and
    orders."""
    days = draw(st.integers(1, 3))
    spd = draw(st.integers(4, 6))
    while days * spd > 14:
        spd -= 1
    first_dow = draw(st.integers(1, 7))
    mapping = [
        {
            "day_index": d,
            "week": 1 + (first_dow - 1 + d - 1) // 7,
            "day_of_week": (first_dow - 1 + d - 1) % 7 + 1,
        }
        for d in range(1, days + 1)
    ]
    tasks: list[dict[str, Any]] = []
    for day in range(1, days + 1):
        slot = 1
        while slot <= spd:
            kind = draw(st.sampled_from(["free", "free", "free", "course", "water", "item"]))
            length = draw(st.integers(1, min(2, spd - slot + 1)))
            block = {"day": day, "slot_start": slot, "slot_end": slot + length - 1}
            if kind == "free":
                slot += 1
                continue
            if kind in ("course", "water"):
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
            else:
                tasks.append(
                    {
                        "status": "suggested",
                        "category_id": draw(st.sampled_from(CLASS_IDS)),
                        "task_order": draw(st.integers(1, 6)),
                        "slots": [block],
                    }
                )
            slot += length
    for _ in range(draw(st.integers(1, 4))):
        tasks.append(
            {
                "status": "pending",
                "duration": draw(st.integers(1, 3)),
                "category_id": draw(st.sampled_from(CLASS_IDS)),
                "task_order": draw(st.integers(1, 6)),
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
                "excluded_slots": draw(st.lists(st.integers(1, spd // 2), unique=True, max_size=1)),
                "excluded_periods": draw(st.lists(st.integers(1, spd), unique=True, max_size=1)),
                "excluded_days_of_week": draw(st.lists(st.integers(1, 7), unique=True, max_size=2)),
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
    data = {
        "window": {"total_days": days, "slots_per_day": spd, "day_mapping": mapping},
        "tasks": full,
        "task_classes": classes,
    }
    return ScheduleState.model_validate(data)


def in_order(cid: int, order: int, first: tuple[int, int], last: tuple[int, int], others) -> bool:
    """Whether an item of class ``cid`` and ``order`` from ``first`` to ``last`` keeps the
    order with each of ``others`` ((class, order, first, last)): a smaller order ends before
    it starts, a larger one starts after it ends."""
    for c, o, f, end in others:
        if c != cid or o == order:
            continue
        if o < order and not end < first:
            return False
        if o > order and not last < f:
            return False
    return True


def scope_options(
    data: dict[str, Any], include_suggested: bool
) -> tuple[
    list[dict[str, Any]], list[list[tuple[int, int, int | None]]], list[int], set[tuple[int, int]]
]:
    """The scope's tasks, each one's places under every rule but the order among the scope
    ((day, start, water-course index or None)), their lengths, and the periods the tasks
    outside the scope take."""
    days = data["window"]["total_days"]
    spd = data["window"]["slots_per_day"]
    weekday = {m["day_index"]: m["day_of_week"] for m in data["window"]["day_mapping"]}
    classes = {c["id"]: c for c in data["task_classes"]}
    tasks = data["tasks"]

    def in_scope(t: dict[str, Any]) -> bool:
        return t["status"] == "pending" or (
            include_suggested and t["status"] == "suggested" and not t.get("locked")
        )

    scope = [t for t in tasks if in_scope(t)]
    fixed = [t for t in tasks if not in_scope(t) and t.get("slots")]
    busy = {
        (b["day"], p)
        for t in fixed
        for b in t["slots"]
        for p in range(b["slot_start"], b["slot_end"] + 1)
    }
    waters = [
        (b["day"], b["slot_start"], b["slot_end"], t["state_id"])
        for t in fixed
        if t.get("can_embed")
        for b in t["slots"]
    ]
    fixed_items = [
        (
            t["category_id"],
            t["task_order"],
            (t["slots"][0]["day"], t["slots"][0]["slot_start"]),
            (t["slots"][0]["day"], t["slots"][0]["slot_end"]),
        )
        for t in fixed
        if t.get("task_order") and t.get("category_id") in classes
    ]

    def durations(t: dict[str, Any]) -> int:
        return (
            t["duration"]
            if t["status"] == "pending"
            else t["slots"][0]["slot_end"] - t["slots"][0]["slot_start"] + 1
        )

    options: list[list[tuple[int, int, int | None]]] = []
    for t in scope:
        c = classes[t["category_id"]]
        d = durations(t)
        banned = {p for b in c.get("excluded_slots") or [] for p in (2 * b - 1, 2 * b)} | set(
            c.get("excluded_periods") or []
        )
        opts: list[tuple[int, int, int | None]] = []
        for day in range(c.get("start_day") or 1, (c.get("end_day") or days) + 1):
            if weekday[day] in (c.get("excluded_days_of_week") or []):
                continue
            for s in range(1, spd - d + 2):
                cells = set(range(s, s + d))
                if cells & banned:
                    continue
                if not in_order(c["id"], t["task_order"], (day, s), (day, s + d - 1), fixed_items):
                    continue
                if not any((day, p) in busy for p in cells):
                    opts.append((day, s, None))
                if c.get("allow_filler_course", True):
                    for hi, (hd, hs, he, _) in enumerate(waters):
                        if hd == day and hs <= s and s + d - 1 <= he:
                            opts.append((day, s, hi))
        options.append(opts)
    return scope, options, [durations(t) for t in scope], busy


def brute_force(data: dict[str, Any], include_suggested: bool) -> tuple[int, int]:
    """(required, best): the most periods of the scope placeable at once under every rule."""
    scope, options, lengths, busy = scope_options(data, include_suggested)
    required = sum(lengths)
    best = 0

    def dfs(i: int, used: set, hosts: set, total: int, placed: list) -> None:
        nonlocal best
        if total + sum(lengths[i:]) <= best:
            return
        if i == len(scope):
            best = total
            return
        t, d = scope[i], lengths[i]
        for day, s, hi in options[i]:
            mine = (t["category_id"], t["task_order"], (day, s), (day, s + d - 1))
            if not in_order(mine[0], mine[1], mine[2], mine[3], placed):
                continue
            if hi is None:
                cells = {(day, p) for p in range(s, s + d)}
                if cells & used:
                    continue
                dfs(i + 1, used | cells, hosts, total + d, [*placed, mine])
            elif hi not in hosts:
                dfs(i + 1, used, hosts | {hi}, total + d, [*placed, mine])
        dfs(i + 1, used, hosts, total, placed)

    dfs(0, set(busy), set(), 0, [])
    return required, best


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=ruled_windows(), include_suggested=st.booleans())
def test_feasibility_equals_brute_force_under_every_rule(
    state: ScheduleState, include_suggested: bool
) -> None:
    """Tests that feasible_slots, capacity_gap and is_feasible equal the brute-force maximum
    under blocks, periods, weekdays, days, water-course permission and item order, and that the
    witness applies through the write path (which refuses any breach)."""
    note(state.to_json(indent=None))
    required, best = brute_force(state.to_dict(), include_suggested)
    report = check_feasibility(
        state, time_limit_s=10.0, num_workers=1, include_suggested=include_suggested
    )
    assert report.proven
    assert report.required_task_slots == required
    assert report.feasible_slots == best
    assert report.capacity_gap == required - best
    assert report.is_feasible == (best == required)
    assert sum(p.length for p in report.witness) == best
    replanned = (
        [t.state_id for t in state.tasks if t.status == "suggested"] if include_suggested else []
    )
    apply_placements(state, report.witness, replanned)


def stands_by_the_rules(data: dict[str, Any]) -> bool:
    """Whether every re-plannable item stands at one of its places under every rule, in order
    with each other (the oracle's reading, from the raw fields)."""
    scope, options, lengths, _ = scope_options(data, include_suggested=True)
    seen: list[tuple[int, int, tuple[int, int], tuple[int, int]]] = []
    for t, opts, d in zip(scope, options, lengths, strict=True):
        if not t.get("slots"):
            return False
        b = t["slots"][0]
        if (b["day"], b["slot_start"], None) not in opts:
            return False
        mine = (
            t["category_id"],
            t["task_order"],
            (b["day"], b["slot_start"]),
            (b["day"], b["slot_start"] + d - 1),
        )
        if not in_order(*mine, seen):
            return False
        seen.append(mine)
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=ruled_windows())
def test_a_schedule_standing_by_the_rules_is_its_own_witness(state: ScheduleState) -> None:
    """Tests that with nothing pending, check_feasibility answers from the schedule as it stands
    exactly when every re-planned item keeps every rule there (no model solved), and equals
    the brute-force maximum either way (items standing out of their class's days, periods,
    weekdays or order send it to the models)."""
    data = state.to_dict()
    data["tasks"] = [t for t in data["tasks"] if t["status"] != "pending"]
    state = ScheduleState.model_validate(data)
    note(state.to_json(indent=None))
    required, best = brute_force(state.to_dict(), include_suggested=True)
    problem = build_problem(state, include_suggested=True, subjects=False)
    standing = standing_witness(state, problem)
    assert (standing is not None) == stands_by_the_rules(state.to_dict())
    report = check_feasibility(state, time_limit_s=10.0, num_workers=1, include_suggested=True)
    assert report.proven
    assert report.feasible_slots == best
    assert report.is_feasible == (best == required)
    if standing is not None:
        assert best == required
        assert sorted(report.witness, key=lambda p: p.task_id) == sorted(
            standing, key=lambda p: p.task_id
        )


def _window(
    days: list[int], spd: int, tasks: list[dict[str, Any]], cls: dict[str, Any]
) -> ScheduleState:
    mapping = [{"day_index": i, "week": 1, "day_of_week": w} for i, w in enumerate(days, start=1)]
    full = [
        {"state_id": i, "name": f"t{i}", "source": "task_item", "category": "复习", **t}
        for i, t in enumerate(tasks, start=1)
    ]
    return ScheduleState.model_validate(
        {
            "window": {"total_days": len(days), "slots_per_day": spd, "day_mapping": mapping},
            "tasks": full,
            "task_classes": [{"id": 10, "name": "复习", **cls}],
        }
    )


def test_negotiation_names_a_binding_weekday() -> None:
    """Tests that when the class's banned Saturday is what leaves a task out, the figures say
    lifting the weekdays suffices (and name no order relaxation: no order binds)."""
    state = _window(
        [1, 6],
        2,
        [{"status": "pending", "duration": 2, "category_id": 10}] * 2,
        {"excluded_days_of_week": [6], "allow_filler_course": True},
    )
    report = check_feasibility(state, time_limit_s=5.0, num_workers=1)
    assert report.is_feasible is False and report.capacity_gap == 2
    figures = negotiation_figures(state, report, time_limit_s=5.0, num_workers=1)
    assert figures.lifting_weekdays_suffices is True
    assert figures.lifting_order_suffices is None


def test_negotiation_names_a_binding_order() -> None:
    """Tests that when item 1 cannot precede item 2 (placed at the day's first period), the
    figures say lifting the order suffices, and that a weekday rule that does not bind is
    reported as not sufficing."""
    state = _window(
        [1],
        4,
        [
            {
                "status": "suggested",
                "category_id": 10,
                "task_order": 2,
                "locked": True,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 1}],
            },
            {"status": "pending", "duration": 1, "category_id": 10, "task_order": 1},
        ],
        {"excluded_days_of_week": [7], "allow_filler_course": True},
    )
    report = check_feasibility(state, time_limit_s=5.0, num_workers=1)
    assert report.is_feasible is False and report.capacity_gap == 1
    figures = negotiation_figures(state, report, time_limit_s=5.0, num_workers=1)
    assert figures.lifting_order_suffices is True
    assert figures.lifting_weekdays_suffices is None  # Sunday is not in the window: no off day


@pytest.mark.parametrize("filler", [True, False])
def test_a_guest_stands_by_the_rules_only_where_its_class_permits_water_courses(
    filler: bool,
) -> None:
    """Tests the standing witness with a suggested item inside a water course and no free
    period left: where its class permits water courses the schedule is its own witness (fits);
    where it does not, the models decide and prove the item cannot be placed."""
    state = _window(
        [1],
        4,
        [
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "can_embed": True,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
                "embedded_by": 3,
            },
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 1, "slot_start": 3, "slot_end": 4}],
            },
            {
                "status": "suggested",
                "category_id": 10,
                "task_order": 1,
                "embed_host": 1,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
            },
        ],
        {"allow_filler_course": filler},
    )
    problem = build_problem(state, include_suggested=True, subjects=False)
    standing = standing_witness(state, problem)
    report = check_feasibility(state, time_limit_s=5.0, num_workers=1, include_suggested=True)
    assert report.proven
    if filler:
        assert standing is not None
        assert [(p.task_id, p.embed_host) for p in standing] == [(3, 1)]
        assert report.is_feasible is True
    else:
        assert standing is None
        assert (report.is_feasible, report.capacity_gap) == (False, 2)
