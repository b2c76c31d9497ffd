"""The exact model of the per-day health rules (solver/health_model.py) and the floor it tightens
(issue 26 item 5): never above the true best, strictly tighter where the relaxation is weak."""

from __future__ import annotations

import dataclasses
import importlib
import random
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.health_facts import MIN_BUFFER
from smartflow_engine.rules import LEVELS, Level
from smartflow_engine.solver import health_model
from smartflow_engine.solver._cpsat import OutOfTime
from smartflow_engine.solver.health_eval import HealthEvaluator
from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.solver.health_model import day_patterns
from smartflow_engine.solver.health_search import search_health
from smartflow_engine.solver.placement import propose_placement
from smartflow_engine.solver.problem import Placement, build_problem
from smartflow_engine.solver.realise import realise
from smartflow_engine.solver.starts import start_rank
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.tools.close_text import binding_text
from tests.helpers.solver_windows import (
    apply_placements,
    make_state,
    random_classes,
    tiny_windows,
)
from tests.solver.test_health_search import _schedules

SPD = 12


def health_key(state: ScheduleState, level: str) -> tuple[int, int]:
    counts = analyze_health(state, threshold=level, check_feasibility=False).issue_counts()
    return counts["critical"], counts["warning"]


def _window(rng: random.Random) -> ScheduleState:
    """3-5 days of 12 periods, mostly held by courses (free runs of 1-4 periods), 2-5 movable
    study tasks (pending, or suggested inside their class's days), classes with day windows
    and banned periods."""
    days = rng.randint(3, 5)
    tasks: list[dict[str, Any]] = []
    free: dict[int, list[int]] = {}
    for day in range(1, days + 1):
        slot = 1
        free[day] = []
        while slot <= SPD:
            if rng.random() < 0.45:  # a free run
                n = rng.randint(1, 4)
                free[day] += list(range(slot, min(SPD, slot + n - 1) + 1))
                slot += n
                continue
            n = rng.randint(1, min(4, SPD - slot + 1))
            tasks.append(
                {
                    "source": "event",
                    "category": rng.choice(["课程", "课程", "学习"]),
                    "status": "existing",
                    "locked": True,
                    "slots": [{"day": day, "slot_start": slot, "slot_end": slot + n - 1}],
                }
            )
            slot += n
    classes = random_classes(rng, days, SPD, keep=0.6, most_banned=2)
    for _ in range(rng.randint(2, 5)):
        cid = rng.choice([10, 11, 12])
        n = rng.randint(1, 4)
        if rng.random() < 0.35:  # a suggested task on a free run long enough, if any
            spots = [
                (d, s)
                for d in free
                for s in free[d]
                if all(p in free[d] for p in range(s, s + n)) and s + n - 1 <= SPD
            ]
            if spots:
                d, s = rng.choice(spots)
                free[d] = [p for p in free[d] if not s <= p < s + n]
                tasks.append(
                    {
                        "status": "suggested",
                        "category_id": cid,
                        "category": f"c{cid}",
                        "slots": [{"day": d, "slot_start": s, "slot_end": s + n - 1}],
                    }
                )
                continue
        tasks.append(
            {"status": "pending", "duration": n, "category_id": cid, "category": f"c{cid}"}
        )
    return make_state(days, SPD, tasks, classes)


def _places(state: ScheduleState, t: Any) -> list[tuple[int, int]]:
    """Every (day, start) of one movable task in the floor's population (its class's days and
    allowed periods for a pending task or a suggested one standing inside them; anywhere for
    the others), before other movable tasks are placed."""
    cls = state.task_class(t.category_id) if t.category_id is not None else None
    n = t.need() if t.status == "pending" else t.slots[0].length
    lo, hi, banned = 1, state.num_days, set()
    if cls is not None:
        inside = t.status == "pending" or all(
            cls.start_day <= b.day <= cls.end_day for b in t.slots
        )
        if inside:
            lo, hi, banned = (
                cls.start_day,
                min(cls.end_day, state.num_days),
                set(cls.excluded_periods),
            )
    return [
        (d, s)
        for d in range(lo, hi + 1)
        for s in range(1, SPD - n + 2)
        if not banned & set(range(s, s + n))
    ]


def _exhaustive(
    state: ScheduleState, level: Level, cap: int = 3_000
) -> list[tuple[int, int]] | None:
    """The (critical, warning) of every placement of the movable study tasks (every pending
    one placed; the courses stay), or None beyond ``cap`` placements."""
    movable = [t for t in state.tasks if t.source == "task_item"]
    scope = {t.state_id for t in movable}
    ev = HealthEvaluator(state, scope, level)
    ev.set_placements([])
    options = [_places(state, t) for t in movable]
    lengths = [t.need() if t.status == "pending" else t.slots[0].length for t in movable]
    keys: list[tuple[int, int]] = []

    def dfs(i: int) -> bool:
        if len(keys) > cap:
            return False
        if i == len(movable):
            keys.append(ev.counts_now().key)
            return True
        n = lengths[i]
        for d, s in options[i]:
            if ev.free_at(d, s, s + n - 1):
                ev.place(Placement(movable[i].state_id, d, s, s + n - 1))
                ok = dfs(i + 1)
                ev.remove(movable[i].state_id)
                if not ok:
                    return False
        return True

    dfs(0)
    return keys if 0 < len(keys) <= cap else None


def test_exact_floor_is_never_above_the_true_best() -> None:
    """Tests, on 80 seeded tiny windows (3-5 days of 12 periods, 2-5 movable tasks, classes
    with day windows and banned periods) at every level, against an exhaustive enumeration of
    the placements, that the floor with the exact model is a floor: no placement has fewer
    criticals, fewer criticals + warnings, or is lexicographically below its least warnings;
    and that it is never below the relaxation's floor, and above it on several."""
    rng = random.Random(2026)
    checked = raised = 0
    while checked < 80:
        state = _window(rng)
        level: Level = rng.choice(LEVELS)
        keys = _exhaustive(state, level)
        if keys is None:
            continue
        pending = sum(t.need() for t in state.pending_tasks())
        old = health_floor(state, level, pending_periods=pending, exact_s=0.0)
        new = health_floor(state, level, pending_periods=pending, exact_s=10.0)
        best = min(keys)
        for c, w in keys:
            assert c >= new.critical, (state.to_json(), level, new, best)
            assert c + w >= new.critical + new.warning, (state.to_json(), level, new, best)
            if new.least_warning is not None and c == new.critical:
                assert w >= new.least_warning, (state.to_json(), level, new, best)
        assert new.critical >= old.critical
        assert new.critical + new.warning >= old.critical + old.warning
        checked += 1
        raised += (new.critical, new.warning, new.least_warning) != (
            old.critical,
            old.warning,
            None,
        )
    assert raised >= 3  # the model tightens some of them


def test_a_block_longer_than_every_free_run_of_the_quiet_day() -> None:
    """Tests the case the relaxation cannot see: day 1 has six free periods, all single ones,
    day 2 a free run of three and nine fixed periods; a three-period task must go on day 2 (12
    of 12: critical), while pouring periods freely puts them on day 1 (9 of 12: no issue)."""
    tasks: list[dict[str, Any]] = []
    for s in range(1, 13, 2):  # day 1: courses on odd periods
        tasks.append(
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 1, "slot_start": s, "slot_end": s}],
            }
        )
    tasks.append(
        {
            "source": "event",
            "category": "课程",
            "status": "existing",
            "locked": True,
            "slots": [{"day": 2, "slot_start": 4, "slot_end": 12}],
        }
    )
    tasks.append({"status": "pending", "duration": 3, "category_id": 12, "category": "数学"})
    state = make_state(2, SPD, tasks)
    old = health_floor(state, "normal", pending_periods=3, exact_s=0.0)
    new = health_floor(state, "normal", pending_periods=3, exact_s=10.0)
    keys = _exhaustive(state, "normal")
    assert keys is not None
    assert new.critical > old.critical
    assert new.critical <= min(keys)[0]
    entry = next(b for b in new.binding if b["why"]["kind"] == "exact_days")
    text = binding_text(entry["rule"], entry["why"])
    assert "任务块长3节" in text and f"至少{entry['why']['min_critical']}个严重" in text


def test_free_fragmentation_is_part_of_the_exact_model() -> None:
    """Tests the window rule the exact model counts beside the per-day ones: two days whose
    only free run is three periods, two blocks of two to place: each day keeps one isolated
    free period, so every schedule's free periods are all fragments (rate 1, critical). The
    relaxation sees no isolated period before placing; the exact model proves the true best,
    free_fragmentation included."""
    tasks: list[dict[str, Any]] = [
        {
            "source": "event",
            "category": "课程",
            "status": "existing",
            "locked": True,
            "slots": [{"day": d, "slot_start": 4, "slot_end": 12}],
        }
        for d in (1, 2)
    ]
    tasks += [{"status": "pending", "duration": 2, "category_id": 12, "category": "数学"}] * 2
    state = make_state(2, SPD, tasks)
    old = health_floor(state, "normal", pending_periods=4, exact_s=0.0)
    new = health_floor(state, "normal", pending_periods=4, exact_s=10.0)
    keys = _exhaustive(state, "normal")
    assert keys is not None
    best = min(keys)
    assert new.critical == best[0] > old.critical  # the floor is the true best
    applied = apply_placements(
        state,
        [Placement(3, 1, 1, 2), Placement(4, 2, 1, 2)],
    )
    issues = analyze_health(applied, check_feasibility=False).issues
    assert any(i.rule == "free_fragmentation" and i.severity == "critical" for i in issues)


@pytest.mark.parametrize(("days", "classes"), [(30, False), (30, True)])
def test_tighter_on_fragmented_windows_never_lower(days: int, classes: bool) -> None:
    """Tests, on the bench_close fragmented windows where the relaxation was loose (seeds
    500-501), that the exact model's floor is never lower than the relaxation's and strictly
    higher (criticals, critical + warning or lexicographically) on at least one."""
    higher = 0
    for seed in (500, 501):
        state = synthetic_window(seed, days, variant="fragmented", with_task_classes=classes)
        pending = sum(t.need() for t in state.pending_tasks())
        old = health_floor(state, "normal", pending_periods=pending, scope=set(), exact_s=0.0)
        new = health_floor(state, "normal", pending_periods=pending, scope=set(), exact_s=20.0)
        assert new.critical >= old.critical
        assert new.critical + new.warning >= old.critical + old.warning
        higher += (new.critical, new.critical + new.warning) > (
            old.critical,
            old.critical + old.warning,
        ) or (new.least_warning or 0) > old.warning
    assert higher >= 1


def _pattern(*blocks: tuple[int, int, int]) -> tuple[tuple[tuple[int, int], int], ...]:
    """A pattern from (length, mask bits, count) triples."""
    return tuple(sorted(((n, bits), c) for n, bits, c in blocks if c))


def test_day_patterns_pack_blocks_into_runs() -> None:
    """Tests the pattern enumeration: two runs of 3 and 1 hold one block of 3 or one block of 2
    (with a single left), never a block of 4 nor two blocks of 2; a run's free periods are usable
    only when it keeps two of them (the most usable ones any packing keeps)."""
    pats = day_patterns([(1, 1, 1), (1,)], [1, 2, 3, 4], dict.fromkeys((1, 2, 3, 4), 4))
    assert pats is not None
    assert _pattern((4, 1, 1)) not in pats
    assert _pattern((2, 1, 2)) not in pats
    assert pats[()] == 3  # the run of 3 is usable, the single is not
    assert pats[_pattern((3, 1, 1))] == 0
    assert pats[_pattern((2, 1, 1))] == 0
    assert pats[_pattern((1, 1, 1))] == 3  # a single in the short run leaves the run of 3
    assert pats[_pattern((1, 1, 1))] >= MIN_BUFFER  # so that day keeps a buffer
    assert _pattern((1, 1, 2), (2, 1, 1)) in pats
    assert sum(1 for v in pats.values() if v >= MIN_BUFFER) >= 2


def test_day_patterns_keep_each_mask_off_its_banned_periods() -> None:
    """Tests the typed patterns (issue 26: the union of the masks was a relaxation): a run of
    four periods whose last two only mask 1 allows (bits 0b10; the first two both masks,
    0b11) takes two blocks of 2 only as one block any mask may fill and one only mask 1's
    items may fill, never as two blocks mask 0's items could fill; and a pattern another one
    dominates (the same blocks, fewer masks allowed) is left out."""
    pats = day_patterns([(0b11, 0b11, 0b10, 0b10)], [2], {2: 4})
    assert pats is not None
    assert _pattern((2, 0b11, 1), (2, 0b10, 1)) in pats
    assert _pattern((2, 0b11, 2)) not in pats
    # one block: on the first two periods (any mask) dominates the last two (mask 1 only)
    assert _pattern((2, 0b11, 1)) in pats
    assert _pattern((2, 0b10, 1)) not in pats
    # with two blocks of 2 in the population (the cap is per length), both still fit
    only = day_patterns([(0b11, 0b11, 0b10, 0b10)], [2], {2: 2})
    assert only is not None and _pattern((2, 0b11, 1), (2, 0b10, 1)) in only


def test_a_day_of_too_many_typed_patterns_gives_up_early_with_the_same_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tests the early end of the typed enumeration: a free day of 12 periods, each allowed by
    a different pair of four masks, with blocks of 1-4, has more typed patterns than
    MAX_PATTERNS (the full enumeration, the limit lifted, finds them), so ``day_patterns`` says
    None (the model then reads the union of the masks) — as it did when it enumerated them all
    first; a day within the limit gets every pattern, the same with the limit lifted."""
    many = [tuple((0b11, 0b110, 0b1100, 0b1001)[p % 4] | 0b1 for p in range(12))]
    supply = dict.fromkeys((1, 2, 3, 4), 12)
    assert day_patterns(many, [1, 2, 3, 4], supply) is None
    few = [(0b11, 0b11, 0b10, 0b10, 0b11, 0b11)]
    within = day_patterns(few, [1, 2, 3], supply)
    assert within is not None
    monkeypatch.setattr(health_model, "MAX_PATTERNS", 10**9)
    full = day_patterns(many, [1, 2, 3, 4], supply)
    assert full is not None and len(full) > 600
    assert day_patterns(few, [1, 2, 3], supply) == within


def test_day_patterns_past_their_deadline_raise_and_remember_nothing() -> None:
    """Tests that the enumeration of a day's patterns stops at the model's deadline (the
    model's building is inside its time limit) and that a stopped enumeration is not
    remembered: the next model, with time, gets the day's real patterns."""
    runs = ((0b11,) * 8,)
    supply = ((1, 8), (2, 4))
    key = (runs, (1, 2), supply)
    health_model._PATTERNS.pop(key, None)
    with pytest.raises(OutOfTime):
        health_model._patterns(*key, health_model.Meter(deadline=time.perf_counter() - 1.0))
    assert key not in health_model._PATTERNS
    found = health_model._patterns(*key)
    assert found == day_patterns(runs, [1, 2], dict(supply))
    assert health_model._PATTERNS[key][0] == found


def test_the_buildings_work_budget_stops_at_the_same_day_remembered_or_not() -> None:
    """Tests the building's work budget (issue 40 item 6: work, not the time left, decides):
    a day whose enumeration takes more steps than the budget stops it (OutOfWork), whether its
    patterns are remembered or not (a remembered day charges the steps it took), and a budget
    of at least those steps lets it through, charging exactly them."""
    runs = ((0b11,) * 10, (0b01,) * 6)
    supply = ((1, 10), (2, 6), (3, 4))
    key = (runs, (1, 2, 3), supply)
    health_model._PATTERNS.pop(key, None)
    cold = health_model.Meter()
    found = health_model._patterns(*key, cold)
    steps = cold.spent
    assert found is not None and steps > 0 and health_model._PATTERNS[key] == (found, steps)
    health_model._PATTERNS.pop(key)
    for remembered in (False, True):
        assert (key in health_model._PATTERNS) == remembered
        with pytest.raises(health_model.OutOfWork):
            health_model._patterns(*key, health_model.Meter(budget=steps - 1))
        if not remembered:  # (a stopped enumeration is not remembered: fill it for the next)
            health_model._patterns(*key)
    enough = health_model.Meter(budget=steps)
    assert health_model._patterns(*key, enough) == found and enough.spent == steps


def test_the_model_keeps_items_off_their_banned_periods() -> None:
    """Tests the exact model against the union of the masks (issue 26): one day of 12 periods
    whose only free ones are 9-12 and two placed blocks of 2. Blocks of a class that bans 11-12
    cannot both go there (one would sit on 11-12): no schedule exists, and the model claims
    nothing (no floor from an impossible population). With one block of each class they fit;
    and a guest of the banning class does not fit a host block on 11-12 (with a free day it
    goes on the day, adding its load: the model's load issue counts it)."""
    from smartflow_engine.solver.health_model import Item, exact_days

    owner = np.ones((1, SPD), dtype=np.int64)
    owner[0, 8:] = 0
    late_banned = tuple(p < 10 for p in range(SPD))
    anywhere = (True,) * SPD
    common: dict[str, Any] = {"level": "normal", "pending_min": 0, "count_load": True}
    both = [Item(2, 1, 1, late_banned, pending=False, guest=False, count=2)]
    assert not exact_days(owner, both, count_buffer=True, time_limit_s=10.0, **common).proven
    mixed = [
        Item(2, 1, 1, late_banned, pending=False, guest=False, count=1),
        Item(2, 1, 1, anywhere, pending=False, guest=False, count=1),
    ]
    assert exact_days(owner, mixed, count_buffer=True, time_limit_s=10.0, **common).proven
    # a guest and a host block on 11-12 of a day otherwise fixed but for 1-4
    owner = np.ones((1, SPD), dtype=np.int64)
    owner[0, :4] = 0
    for allowed, load_issue in ((anywhere, False), (late_banned, True)):
        guest = [Item(4, 1, 1, allowed, pending=False, guest=True, count=1)]
        found = exact_days(
            owner,
            guest,
            fixed_hosts=[(1, 9, 4)],
            count_buffer=False,
            time_limit_s=10.0,
            **common,
        )
        assert found.proven
        # 8 fixed periods: 2/3 of the day; a block of 4 on the day puts it at 12 of 12
        assert (found.critical > 0) == load_issue


def test_realised_schedules_are_valid_and_never_below_the_floor() -> None:
    """Tests, on 40 seeded tiny windows, that the schedule built from the exact model's
    solution (:func:`realise`) goes through the real write path (every block on free periods,
    off banned ones, inside its class's days, guests in free host blocks), places every
    pending period, and has counts (analyze_health's, on the applied schedule) that the floor
    does not exceed, lexicographically included."""
    rng = random.Random(7)
    realised = 0
    for _ in range(40):
        state = _window(rng)
        pending = sum(t.need() for t in state.pending_tasks())
        placements = realise(state, "normal", pending_periods=pending, time_limit_s=10.0)
        if placements is None:
            continue
        realised += 1
        applied = apply_placements(state, placements)
        assert not applied.pending_tasks()
        c, w = health_key(applied, "normal")
        floor = health_floor(state, "normal", pending_periods=pending, exact_s=10.0)
        assert floor.critical <= c and floor.critical + floor.warning <= c + w
        assert floor.least_warning is None or c > floor.critical or w >= floor.least_warning
    assert realised >= 30


def test_the_realised_schedule_reaches_the_floor_the_proposal_missed() -> None:
    """Tests, on the 13-day tight window (seed 500, task classes) where a 2 s proposal stays
    one critical issue above the floor, that the exact model's schedule polished by the close
    stage's search reaches the floor: the floor is the true best there."""
    state = synthetic_window(500, 13, variant="tight", with_task_classes=True)
    problem = build_problem(state, by_subject=True)
    scope = {t for g in problem.groups for t in g.task_ids}
    pending = sum(t.need() for t in state.pending_tasks())
    floor = health_floor(state, "normal", pending_periods=pending, scope=scope, exact_s=20.0)
    start = realise(state, "normal", pending_periods=pending, scope=scope, time_limit_s=20.0)
    assert start is not None
    result = search_health(state, problem, start, budget_s=3.0, seed=0)
    c, w = health_key(apply_placements(state, result.placements), "normal")
    assert floor.meets(c, w), (floor, (c, w))
    assert (floor.critical, floor.critical + floor.warning) < (c, c + w)  # lexicographic reach


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    state=tiny_windows(max_pending=3), level=st.sampled_from(LEVELS), keep_suggested=st.booleans()
)
def test_exact_floor_is_never_beaten_with_hosts(
    state: ScheduleState, level: Level, keep_suggested: bool
) -> None:
    """Tests, against the exhaustive search of ``test_health_search`` (guests in free host
    blocks, locked hosts, existing guests, classes), that the floor with the exact model is
    never above any schedule: criticals, critical + warning, and lexicographically; over every
    movable task and over the pending ones alone."""
    from smartflow_engine.solver import check_feasibility

    scope = set() if keep_suggested else None
    report = check_feasibility(state, time_limit_s=2.0, include_suggested=True)
    floor = health_floor(state, level, report, scope=scope, exact_s=5.0)
    pending = sum(t.need() for t in state.pending_tasks())
    pending_min = max(0, pending - int(report.capacity_gap or 0)) if report.proven else 0
    fixed = frozenset(
        t.state_id
        for t in state.tasks
        if t.status != "pending" and scope is not None and t.state_id not in scope
    )
    schedules = _schedules(state, pending_min, fixed=fixed)
    assume(schedules)
    assert schedules
    feas = 1 if any(b["rule"] == "capacity_gap" for b in floor.binding) else 0
    for sched in schedules:
        c, w = health_key(sched, level)
        c += feas
        assert c >= floor.critical and c + w >= floor.critical + floor.warning
        assert floor.least_warning is None or c > floor.critical or w >= floor.least_warning


def test_a_work_budget_ends_the_model_without_a_wall_cut() -> None:
    """Tests ``exact_work_s`` (the batch's determinism, issue 24): the same deterministic budget
    gives the same floor on every call and, when it ends the model before it is complete, the
    floor does not say the wall clock cut it; a wall clock too short to build the model does."""
    state = synthetic_window(500, 30, variant="fragmented", with_task_classes=True)
    pending = sum(t.need() for t in state.pending_tasks())
    module = importlib.import_module("smartflow_engine.solver.health_floor")  # (not the function)
    floors = []
    for _ in range(2):
        module._EXACT_MEMO.clear()  # each call solves afresh
        f = health_floor(
            state, "normal", pending_periods=pending, scope=set(), exact_s=60.0, exact_work_s=1e-3
        )
        floors.append((f.critical, f.warning, f.least_warning, f.exact_complete))
        assert f.exact_wall_cut is False
    assert floors[0] == floors[1]
    assert floors[0][3] is False  # (the budget is far too small to complete: the test's point)
    module._EXACT_MEMO.clear()
    cut = health_floor(
        state, "normal", pending_periods=pending, scope=set(), exact_s=1e-4, exact_work_s=10.0
    )
    assert cut.exact_complete is False and cut.exact_wall_cut is True
    module._EXACT_MEMO.clear()
    full = health_floor(state, "normal", pending_periods=pending, scope=set(), exact_s=60.0)
    assert full.exact_complete is True and full.exact_wall_cut is False


def test_the_least_criticals_solve_alone_gives_a_schedule() -> None:
    """Tests that a model whose work budget ends after the least-criticals solve (the
    lexicographic one not finished) still gives its schedule: realise builds a start from it
    (before, only the lexicographic solve kept one, so short budgets gave no start)."""
    state = synthetic_window(500, 60, variant="tight")
    problem = build_problem(state, by_subject=True)
    scope = {t for g in problem.groups for t in g.task_ids}
    need = sum(t.need() for t in state.pending_tasks())
    floors = importlib.import_module("smartflow_engine.solver.health_floor")  # (the module)
    floors._EXACT_MEMO.clear()
    start = realise(
        state, "normal", pending_periods=need, scope=scope, time_limit_s=30.0, work_s=0.2
    )
    answer = next(iter(floors._EXACT_MEMO.values()))[1]
    assert answer.proven and not answer.wall_cut
    assert not answer.figures.get("lexicographic_optimal")  # that solve did not finish
    assert start is not None
    apply_placements(state, start)  # a valid schedule through the write path


def test_the_exact_schedule_starts_the_search_on_a_tie_of_criticals() -> None:
    """Tests the start rule: fewest criticals first; on a tie the exact model's schedule wins
    when there are criticals, even with more warnings and soft terms; with no criticals the
    warnings and soft terms decide."""
    assert start_rank("exact", (14, 6), 30.0) < start_rank("witness", (14, 4), 20.0)
    assert start_rank("greedy", (13, 9), 20.0) < start_rank("exact", (14, 0), 0.0)
    assert start_rank("greedy", (0, 1), 20.0) < start_rank("exact", (0, 2), 0.0)
    assert start_rank("greedy", (0, 1), 10.0) < start_rank("exact", (0, 1), 20.0)


def test_a_proposal_from_the_exact_schedule_reaches_the_floors_criticals() -> None:
    """Tests, on the 13-day tight window (seed 501) where a search from the greedy or the
    counting model's start stays at 15 criticals, that the proposal starts from the exact
    model's schedule and reaches the floor's 14 (the exact model's budget is deterministic)."""
    state = synthetic_window(501, 13, variant="tight")
    proposal = propose_placement(state, time_limit_s=6.0, seed=0)
    assert proposal.start == "exact"
    assert proposal.floor is not None and proposal.critical is not None
    assert proposal.critical == proposal.floor[0] == 14


def test_a_start_whose_days_do_not_pack_is_completed_exactly() -> None:
    """Tests, on the 13-day tight window with task classes (seed 501), whose classes ban
    different periods: the exact model's schedule packs into the periods each class allows
    (the model's blocks are typed by the masks allowing them; with the masks' union it did not
    pack there), so ``realise`` alone places every pending period, with the floor's criticals,
    and the proposal starts from it and reaches the floor (the counting model's start stays at
    15 criticals). When ``realise`` cannot pack its days (its packing search given a single
    step; the 13-day fragmented window with classes, seed 502), it falls short of the pending
    periods (None) and the start completes it exactly (the proven maximum, a valid schedule
    through the write path)."""
    from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
    from smartflow_engine.solver.counting import max_placeable
    from smartflow_engine.solver.starts import exact_start

    state = synthetic_window(501, 13, variant="tight", with_task_classes=True)
    problem = build_problem(state, by_subject=True)
    scope = {t for g in problem.groups for t in g.task_ids}
    pending = sum(t.need() for t in state.pending_tasks())
    assert max_placeable(problem, time_limit_s=5.0, num_workers=1).best == pending
    masks = {tuple(state.task_class(t.category_id).excluded_periods) for t in state.pending_tasks()}
    assert len(masks) > 1  # classes ban different periods
    floor = health_floor(state, "normal", pending_periods=pending, scope=scope, exact_s=10.0)
    whole = realise(state, "normal", pending_periods=pending, scope=scope, time_limit_s=5.0)
    assert whole is not None
    applied = apply_placements(state, whole)  # the write path accepts every block
    assert not applied.pending_tasks()
    assert health_key(applied, "normal")[0] == floor.critical == 14
    proposal = propose_placement(state, time_limit_s=6.0, seed=0)
    assert proposal.start == "exact"
    assert proposal.critical is not None and proposal.warning is not None
    assert floor.meets(proposal.critical, proposal.warning)

    state = synthetic_window(502, 13, variant="fragmented", with_task_classes=True)
    problem = build_problem(state, by_subject=True)
    scope = {t for g in problem.groups for t in g.task_ids}
    pending = sum(t.need() for t in state.pending_tasks())
    assert max_placeable(problem, time_limit_s=5.0, num_workers=1).best == pending
    one_step = dataclasses.replace(DEFAULT_CALIBRATION, realise_pack_steps=1)
    kwargs: dict[str, Any] = {"pending_periods": pending, "scope": scope, "time_limit_s": 5.0}
    assert realise(state, "normal", calibration=one_step, **kwargs) is None
    dropped: list[int] = []
    short = realise(state, "normal", short_ok=True, dropped=dropped, calibration=one_step, **kwargs)
    assert short is not None and dropped
    assert sum(p.length for p in short) < pending
    start, _ = exact_start(state, problem, pending, "normal", 5.0, 1, calibration=one_step)
    assert start is not None and sum(p.length for p in start) == pending
    assert not apply_placements(state, start).pending_tasks()  # through the write path


def test_places_go_to_the_subject_that_waited_longest() -> None:
    """Tests how ``realise`` gives an item's places to its tasks (the model does not see
    subjects): in day order, each to the task whose subject has waited longest, so two subjects
    of three tasks each alternate over six days (handing them out in task order put each
    subject's three on three days in a row, a gap of three days), a subject's own fixed session
    counts as its last one, and every place goes to a task of its own item, once."""
    from smartflow_engine.solver.realise import give_out

    subject = {1: "A", 2: "A", 3: "A", 4: "B", 5: "B", 6: "B", 7: "A", 8: "B"}.__getitem__
    spots = {0: [(d, 0, None) for d in (6, 5, 4, 3, 2, 1)]}
    out = give_out(spots, [[1, 2, 3, 4, 5, 6]], subject, {0: 2}, {})
    by_day = [subject(p.task_id) for p in sorted(out, key=lambda p: p.day)]
    assert by_day in (["A", "B", "A", "B", "A", "B"], ["B", "A", "B", "A", "B", "A"])
    assert sorted(p.task_id for p in out) == [1, 2, 3, 4, 5, 6]
    assert all((p.slot_start, p.slot_end) == (1, 2) for p in out)
    # B studied on day 1 already (a fixed session): A goes first
    out = give_out({0: [(2, 0, None), (3, 0, None)]}, [[7, 8]], subject, {0: 2}, {"B": [1]})
    assert [subject(p.task_id) for p in sorted(out, key=lambda p: p.day)] == ["A", "B"]
    # two items: each place keeps its item's length, and a task never leaves its item
    spots2 = {0: [(1, 0, None), (3, 0, None)], 1: [(2, 4, 9)]}
    out = give_out(spots2, [[1, 4], [2, 5]], subject, {0: 2, 1: 3}, {})
    assert {p.task_id for p in out if p.length == 2} == {1, 4}
    assert len(out) == 3 and {p.task_id for p in out if p.length == 3} <= {2, 5}
    assert next(p for p in out if p.length == 3).embed_host == 9


def test_a_budgeted_solve_is_reused_only_by_a_call_of_the_same_budget() -> None:
    """Tests the exact model's memory (``solve_exact``): a call with a work budget after a
    call with another budget on the same population answers what a fresh process answers with
    its budget (its own solve), and the same budget again reads the remembered solve."""
    state = synthetic_window(500, 30, variant="fragmented", with_task_classes=True)
    problem = build_problem(state, by_subject=True)
    scope = {t for g in problem.groups for t in g.task_ids}
    need = sum(t.need() for t in state.pending_tasks())
    floors = importlib.import_module("smartflow_engine.solver.health_floor")  # (the module)

    def start(work: float) -> list[Placement] | None:
        return realise(
            state, "normal", pending_periods=need, scope=scope, time_limit_s=60.0, work_s=work
        )

    floors._EXACT_MEMO.clear()
    fresh_small = start(0.01)
    floors._EXACT_MEMO.clear()
    fresh_large = start(1.0)
    after_large = start(0.01)  # (the large solve remembered)
    assert after_large == fresh_small
    solves = len(floors._EXACT_MEMO)
    assert start(1.0) == fresh_large and len(floors._EXACT_MEMO) == solves
