"""The close stage: exact analyze_health counts on the grid, and the search that lowers them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.rules import LEVELS
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.health_eval import HealthEvaluator, health_counts
from smartflow_engine.solver.health_search import search_health
from smartflow_engine.solver.problem import Placement, build_problem
from smartflow_engine.state.strategies import windows
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import (
    apply_placements,
    locked_course,
    make_state,
    tiny_windows,
    water_course,
)


def health_key(state: ScheduleState, level: str, feasibility: bool = False) -> tuple[int, int]:
    counts = analyze_health(state, threshold=level, check_feasibility=feasibility).issue_counts()
    return counts["critical"], counts["warning"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=windows(min_days=3, max_days=21), level=st.sampled_from(LEVELS))
def test_counts_equal_analyze_health(state: ScheduleState, level: str) -> None:
    """Tests that the grid evaluator's (critical, warning) equal analyze_health's on random
    synthetic windows (every variant, with and without task classes) at every level."""
    assert health_counts(state, level).key == health_key(state, level)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=tiny_windows(), level=st.sampled_from(LEVELS), seed=st.integers(0, 5))
def test_search_counts_equal_health_of_the_applied_schedule(
    state: ScheduleState, level: str, seed: int
) -> None:
    """Tests that after the search moved tasks (incremental updates, guests in host blocks,
    class windows, banned periods), the counts it reports equal analyze_health on the schedule
    the placements give through the real write path, and are never worse than the start."""
    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = list(problem.current.values())
    result = search_health(state, problem, start, level=level, seed=seed, budget_s=0.01)
    # Only what the search changed goes through the write path: a suggested task it left where
    # it stands (possibly outside a class window changed since, which a new write would refuse)
    # is already in place.
    kept = {p for p in result.placements if problem.current.get(p.task_id) == p}
    moved = [p for p in result.placements if p not in kept]
    applied = apply_placements(
        state, moved, [t for t, p in problem.current.items() if p not in kept]
    )
    assert result.counts.key == health_key(applied, level)
    assert result.counts.key <= result.start_counts.key
    assert result.start_counts.key == health_key(state, level)


@pytest.mark.parametrize(
    ("seed", "days", "variant", "classes", "level"),
    [
        (1, 13, "plain", False, "normal"),
        (2, 13, "fragmented", True, "strict"),
        (3, 13, "plain", True, "relaxed"),
        (4, 9, "tight", False, "normal"),  # infeasible: the feasibility issue counts too
    ],
)
def test_proposal_counts_equal_health_after_apply(
    seed: int, days: int, variant: Any, classes: bool, level: str
) -> None:
    """Tests that propose_placement's (critical, warning) equal what analyze_health (with its
    feasibility step) reports once the proposal is applied, at the requested level."""
    state = synthetic_window(seed, days, variant=variant, with_task_classes=classes)
    proposal = propose_placement(state, time_limit_s=1.0, seed=0, threshold=level)
    applied = apply_placements(state, proposal.placements)
    assert (proposal.critical, proposal.warning) == health_key(applied, level, feasibility=True)
    assert proposal.start_health is not None
    assert (proposal.critical, proposal.warning) <= proposal.start_health
    # its proven floor (feasibility issue included) is never beaten by the applied schedule;
    # only a proposal the wall clock cut may go without one (no floor is claimed unfinished)
    assert proposal.floor is not None or proposal.wall_limited
    if proposal.floor is not None:
        fc, fw = proposal.floor
        assert proposal.critical >= fc and proposal.critical + proposal.warning >= fc + fw


def test_search_is_deterministic_for_a_seed() -> None:
    """Tests that the same seed and budget give the same placements."""
    state = synthetic_window(7, 20, variant="fragmented")
    problem = build_problem(state, include_suggested=True, by_subject=True)
    proposal = propose_placement(state, time_limit_s=0.5, seed=0)
    runs = [
        search_health(state, problem, proposal.placements, seed=3, budget_s=0.05) for _ in range(2)
    ]
    assert runs[0].placements == runs[1].placements
    assert runs[0].evaluations == runs[1].evaluations


def test_move_limit_is_honoured() -> None:
    """Tests that max_moves caps the tasks that end away from their origin."""
    state = synthetic_window(11, 20, variant="fragmented")
    problem = build_problem(state, include_suggested=True, by_subject=True)
    proposal = propose_placement(state, time_limit_s=0.5, seed=0)
    for k in (0, 1, 3):
        result = search_health(
            state, problem, proposal.placements, seed=0, budget_s=0.05, max_moves=k
        )
        assert result.moved <= k
        if k == 0:
            assert result.placements == sorted(
                proposal.placements, key=lambda pl: (pl.day, pl.slot_start, pl.task_id)
            )


# ------------------------------------------------------------------ each rule avoided when it can
def _study(
    day: int, start: int, end: int, category_id: int = 12, status: str = "suggested", **extra: Any
) -> dict[str, Any]:
    return {
        "status": status,
        "category_id": category_id,
        "category": f"c{category_id}",
        "slots": [{"day": day, "slot_start": start, "slot_end": end}],
        **extra,
    }


def _rules_after(
    state: ScheduleState, level: str = "normal"
) -> tuple[set[str], set[str], tuple[int, int]]:
    before = {
        i.rule
        for i in analyze_health(state, threshold=level, check_feasibility=False).issues
        if i.severity != "info"
    }
    problem = build_problem(state, include_suggested=True, by_subject=True)
    result = search_health(
        state, problem, list(problem.current.values()), level=level, seed=0, budget_s=0.3
    )
    applied = apply_placements(state, result.placements, list(problem.current))
    after = {
        i.rule
        for i in analyze_health(applied, threshold=level, check_feasibility=False).issues
        if i.severity != "info"
    }
    return before, after, result.counts.key


def _day_util_window() -> ScheduleState:
    """Four days of 12; day 1 holds 10 study periods (utilisation 0.83), the rest are empty."""
    return make_state(
        4,
        12,
        [
            _study(1, 1, 2, 10),
            _study(1, 3, 4, 11),
            _study(1, 5, 6, 12),
            _study(1, 7, 8, 10),
            _study(1, 9, 10, 11),
        ],
    )


def _gap_window() -> ScheduleState:
    """Eight days; subject c10 sits on days 1 and 8 (a gap of 6 days) with a block on day 1
    that could fill the gap."""
    return make_state(8, 12, [_study(1, 1, 2, 10), _study(1, 5, 6, 10), _study(8, 1, 2, 10)])


def _switch_window() -> ScheduleState:
    """Two days; day 1 alternates four subjects in one-period blocks (7 switches)."""
    return make_state(2, 12, [_study(1, s, s, 10 + (s - 1) % 4) for s in range(1, 9)])


def _buffer_window() -> ScheduleState:
    """Four days of 6; days 1 and 2 are filled with study blocks (no free run), 3 and 4 empty."""
    return make_state(
        4, 6, [_study(1, 1, 3), _study(1, 4, 6, 11), _study(2, 1, 3, 10), _study(2, 4, 6, 13)]
    )


def _fragment_window() -> ScheduleState:
    """Two days of 8: one-period study blocks every other period on day 1 leave four one-period
    islands; a course holds day 2's periods 1-4."""
    return make_state(
        2,
        8,
        [
            _study(1, 2, 2, 10),
            _study(1, 4, 4, 11),
            _study(1, 6, 6, 12),
            _study(1, 8, 8, 13),
            locked_course(2, 1, 4),
        ],
    )


def _concentration_window() -> ScheduleState:
    """Six days; subject c10's four blocks are all on day 1 besides one on day 2."""
    return make_state(
        6,
        12,
        [
            _study(1, 1, 2, 10),
            _study(1, 3, 4, 10),
            _study(1, 5, 6, 10),
            _study(1, 7, 8, 10),
            _study(2, 1, 1, 10),
        ],
    )


def _imbalance_window() -> ScheduleState:
    """Eight days of 12; day 1 holds 8 study periods, day 2 a locked course of 6, the rest
    empty: std 3.28, range 8 (critical); spread out, std 1.98."""
    return make_state(
        8,
        12,
        [
            _study(1, 1, 2, 10),
            _study(1, 3, 4, 11),
            _study(1, 5, 6, 12),
            _study(1, 7, 8, 13),
            locked_course(2, 1, 6),
        ],
    )


@pytest.mark.parametrize(
    ("rule", "window"),
    [
        ("day_utilization", _day_util_window),
        ("subject_gap", _gap_window),
        ("context_switch", _switch_window),
        ("buffer", _buffer_window),
        ("free_fragmentation", _fragment_window),
        ("subject_concentration", _concentration_window),
        ("load_imbalance", _imbalance_window),
    ],
)
def test_each_rule_is_avoided_when_it_can_be(rule: str, window: Any) -> None:
    """Tests, rule by rule of the table, that the close stage removes an issue a placement of
    the same tasks avoids, and that its counts do not get worse."""
    state = window()
    before, after, key = _rules_after(state)
    assert rule in before
    assert rule not in after
    assert key <= health_key(state, "normal")


def test_evaluator_updates_match_a_rebuild() -> None:
    """Tests that place/remove keep every cached figure equal to a fresh evaluator's."""
    state = synthetic_window(5, 14, variant="plain")
    problem = build_problem(state, include_suggested=True, by_subject=True)
    proposal = propose_placement(state, time_limit_s=0.5, seed=0, include_suggested=True)
    scope = {t for g in problem.groups for t in g.task_ids}
    ev = HealthEvaluator(state, scope)
    ev.set_placements(proposal.placements[:3])
    for pl in proposal.placements[3:]:
        ev.place(pl)
    ev.remove(proposal.placements[0].task_id)
    fresh = HealthEvaluator(state, scope)
    fresh.set_placements(proposal.placements[1:])
    assert ev.counts_now() == fresh.counts_now()


# ------------------------------------------------------------------ the floor
def _schedules(
    state: ScheduleState, pending_min: int, cap: int = 400, fixed: frozenset[int] = frozenset()
) -> list[ScheduleState] | None:
    """Every schedule of the floor's population (movable study tasks anywhere free or inside an
    unlocked fixed host block, inside their class's days, off its banned periods; the tasks of
    ``fixed`` stay), or None beyond ``cap``."""
    from smartflow_engine.solver.health_floor import movable_study
    from smartflow_engine.solver.problem import rule_for

    data = json.loads(state.to_json())
    spd = state.slots_per_day
    movable = [
        t
        for t in state.tasks
        if movable_study(state, t) and len(t.slots) <= 1 and t.state_id not in fixed
    ]
    if any(
        movable_study(state, t) and len(t.slots) > 1 and t.state_id not in fixed
        for t in state.tasks
    ):
        return None
    ids = {t.state_id for t in movable}
    busy = set()
    for t in state.tasks:
        if t.state_id not in ids and t.embed_host is None:
            busy |= {(b.day, s) for b in t.slots for s in range(b.slot_start, b.slot_end + 1)}
    taken_hosts = {
        (b.day, t.embed_host)
        for t in state.tasks
        if t.state_id not in ids and t.embed_host is not None
        for b in t.slots
    }
    hosts = [
        (b.day, b.slot_start, b.slot_end, t.state_id)
        for t in state.tasks
        if t.can_embed and not t.locked and t.state_id not in ids
        for b in t.slots
        if (b.day, t.state_id) not in taken_hosts
    ]
    out: list[list[tuple[int, int, int, int | None] | None]] = []

    def dfs(
        i: int,
        used: set[tuple[int, int]],
        used_hosts: set[int],
        chosen: list[Any],
        pending_placed: int,
    ) -> bool:
        if len(out) > cap:
            return False
        if i == len(movable):
            if pending_placed >= pending_min:
                out.append(list(chosen))
            return True
        t = movable[i]
        n = t.need()
        rule = rule_for(state, t)
        for day in range(rule.start_day, rule.end_day + 1):
            for s in range(1, spd - n + 2):
                if any(p in rule.banned for p in range(s, s + n)):
                    continue
                cells = {(day, p) for p in range(s, s + n)}
                if not cells & (busy | used):
                    chosen.append((t.state_id, day, s, None))
                    dfs(
                        i + 1,
                        used | cells,
                        used_hosts,
                        chosen,
                        pending_placed + (n if t.status == "pending" else 0),
                    )
                    chosen.pop()
                if not t.can_embed:
                    for hi, (hd, hs, he, hid) in enumerate(hosts):
                        if hd == day and hs <= s and s + n - 1 <= he and hi not in used_hosts:
                            chosen.append((t.state_id, day, s, hid))
                            dfs(
                                i + 1,
                                used,
                                used_hosts | {hi},
                                chosen,
                                pending_placed + (n if t.status == "pending" else 0),
                            )
                            chosen.pop()
        if t.status == "pending":
            chosen.append(None)
            dfs(i + 1, used, used_hosts, chosen, pending_placed)
            chosen.pop()
        return True

    dfs(0, set(), set(), [], 0)
    if len(out) > cap:
        return None
    states = []
    for choice in out:
        rows = {
            row["state_id"]: {k: v for k, v in row.items() if k != "embedded_by"}
            for row in data["tasks"]
        }
        for t, c in zip(movable, choice, strict=True):
            row = rows[t.state_id]
            if c is None:
                continue
            _, day, s, host = c
            row["slots"] = [{"day": day, "slot_start": s, "slot_end": s + t.need() - 1}]
            row.pop("duration", None)
            if row["status"] == "pending":
                row["status"] = "suggested"
            if host is None:
                row.pop("embed_host", None)
            else:
                row["embed_host"] = host
        new = dict(data, tasks=list(rows.values()))
        states.append(ScheduleState.from_json(json.dumps(new)))
    return states


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    state=tiny_windows(max_pending=3), level=st.sampled_from(LEVELS), keep_suggested=st.booleans()
)
def test_proven_floor_is_never_beaten(
    state: ScheduleState, level: str, keep_suggested: bool
) -> None:
    """Tests, against exhaustive search over every placement of the movable study tasks on tiny
    windows, that no schedule is below the proven floor (critical, and critical + warning):
    over every movable task, and over the pending ones alone (a proposal's own floor)."""
    _floor_vs_exhaustive(state, level, scope=set() if keep_suggested else None, in_hypothesis=True)


def test_floor_names_fixed_days_and_capacity() -> None:
    """Tests the floor's figures on a window whose locked courses fill day 1 to 11 of 12
    periods (an unfixable critical day, with no action) and days 2-3 to 9."""
    tasks: list[dict[str, Any]] = [locked_course(1, 1, 11)]
    tasks += [locked_course(d, 1, 9) for d in (2, 3)]
    tasks += [{"status": "pending", "duration": 2, "category_id": 10} for _ in range(3)]
    state = make_state(3, 12, tasks)
    result = analyze_health(state)
    signal = result.metrics["close_signal"]
    floor = signal["floor"]
    assert floor["proven"] is True
    whys = [b["why"] for b in floor["binding"] if b["rule"] == "day_utilization"]
    fixed = next(w for w in whys if w["kind"] == "fixed_load")
    assert fixed["days"] == [{"day": 1, "fixed_periods": 11, "severity": "critical"}]
    # days 2 and 3 keep 3 free periods each: two of the 2-period tasks fit (4 periods placed,
    # gap 2); poured freely (day 1 takes 1, days 2-3 stay below 11 with 1 each), one more
    # period forces one of days 2-3 to the critical load of 11
    capacity = next(w for w in whys if w["kind"] == "capacity")
    assert capacity["periods_to_place"] == 4
    assert capacity["days_forced_over_critical"] == 1
    assert floor["critical"] >= 2
    assert signal["acceptable_to_close"] is False
    schedules = _schedules(state, pending_min=4)
    assert schedules
    for sched in schedules:  # exhaustively: nothing below the floor
        c, w = health_key(sched, "normal")
        assert c >= floor["critical"] and c + w >= floor["critical"] + floor["warning"]
    day1 = [i for i in result.issues if i.rule == "day_utilization" and i.day == 1]
    assert day1 and day1[0].fixable is False
    assert all(day1[0].issue_id not in a.issue_ids for a in result.next_actions)


# ------------------------------------------------------------------ least-change repair
def _placed_window(seed: int) -> ScheduleState:
    """A 13-day fragmented window after a proposal was applied (everything placed)."""
    state = synthetic_window(seed, 13, variant="fragmented")
    proposal = propose_placement(state, time_limit_s=0.5, seed=0)
    return apply_placements(state, proposal.placements)


@pytest.mark.parametrize("k", [0, 1, 3])
def test_repair_moves_at_most_k_tasks_and_reports_health(k: int) -> None:
    """Tests that keep_placed repair moves at most k placed tasks, never worsens the counts,
    and reports the counts analyze_health gives once applied."""
    from smartflow_engine.solver import repair_placement

    state = _placed_window(21)
    before = health_key(state, "normal", feasibility=True)
    proposal = repair_placement(state, max_moves=k, time_limit_s=1.0, seed=0)
    moved = [pl for pl in proposal.placements if state.task(pl.task_id).status != "pending"]
    assert len(moved) <= k and proposal.local_moves <= k
    assert (proposal.critical, proposal.warning) <= before
    applied = apply_placements(state, proposal.placements)
    assert (proposal.critical, proposal.warning) == health_key(applied, "normal", feasibility=True)
    if k == 0:
        assert not moved


def test_apply_proposal_keep_placed_tool() -> None:
    """Tests the tools: propose_placement with keep_placed reports the health counts and
    changes nothing; apply_proposal with keep_placed moves at most max_moves tasks, keeps the
    moved tasks' status, and the schedule's health is the reported one."""
    from smartflow_engine import Toolbox

    state = _placed_window(22)
    tb = Toolbox(state)
    before = tb.state.to_json()
    reply = tb.call("propose_placement", {"keep_placed": True, "max_moves": 2, "time_limit_s": 1.0})
    assert "体检（normal档）：应用后 critical" in reply
    assert tb.state.to_json() == before
    statuses = {
        t.state_id: (t.status, [(b.day, b.slot_start) for b in t.slots]) for t in tb.state.tasks
    }
    tb.call("apply_proposal", {"keep_placed": True, "max_moves": 2, "time_limit_s": 1.0})
    changed = [
        t
        for t in tb.state.tasks
        if [(b.day, b.slot_start) for b in t.slots] != statuses[t.state_id][1]
    ]
    assert len(changed) <= 2
    assert all(t.status == statuses[t.state_id][0] for t in changed)
    refused = tb.call("apply_proposal", {"keep_placed": True, "max_moves": 99})
    assert "max_moves" in refused


def test_floor_counts_class_windows() -> None:
    """Tests that tasks confined by their class to day 1 force that day over the critical load
    in the floor (the window as a whole has room), and that exhaustive search agrees."""
    from smartflow_engine.solver import check_feasibility
    from smartflow_engine.solver.health_floor import health_floor

    classes = [{"id": 10, "name": "c10", "start_day": 1, "end_day": 1, "excluded_periods": []}]
    tasks = [{"status": "pending", "duration": 2, "category_id": 10} for _ in range(3)]
    state = make_state(3, 6, tasks, classes)
    report = check_feasibility(state, time_limit_s=2.0, include_suggested=True)
    floor = health_floor(state, "normal", report)
    why = next(b["why"] for b in floor.binding if b["rule"] == "day_utilization")
    assert why["days"] == [1, 1] and why["days_forced_over_critical"] == 1
    assert floor.critical >= 1
    schedules = _schedules(state, pending_min=6)
    assert schedules
    for sched in schedules:
        c, w = health_key(sched, "normal")
        assert c >= floor.critical and c + w >= floor.critical + floor.warning


# ------------------------------------------------------------------ floors of the cross-day rules
@st.composite
def gap_windows(draw: st.DrawFn) -> ScheduleState:
    """6-8 days of 2 periods: locked study blocks of subject c10 on some days, locked courses
    filling others, a class for c10 with a day window, suggested and pending c10 tasks (at most
    two movable), so gaps of 4 days and more are forced or avoidable."""
    days = draw(st.integers(6, 8))
    tasks: list[dict[str, Any]] = []
    ends = {1, days}  # c10 stands near the ends more often, so the middle may have to be bridged
    for day in range(1, days + 1):
        kinds = (
            ["study", "study", "free"]
            if day in ends
            else ["free", "free", "study", "course", "course", "half"]
        )
        kind = draw(st.sampled_from(kinds))
        if kind == "study":
            tasks.append(_study(day, 1, 1, 10, status="existing", locked=True))
        elif kind == "course":
            tasks.append(locked_course(day, 1, 2))
        elif kind == "half":
            tasks.append(locked_course(day, 2, 2))
    start = draw(st.integers(1, days))
    end = draw(st.integers(start, min(days, start + 2)))
    classes = [
        {"id": 10, "name": "c10", "start_day": start, "end_day": end, "excluded_periods": []}
    ]
    movable = draw(st.integers(1, 2))
    for _ in range(movable):
        if draw(st.booleans()):
            tasks.append(
                {
                    "status": "pending",
                    "duration": draw(st.integers(1, 2)),
                    "category_id": 10,
                    "category": "c10",
                }
            )
        else:
            day = draw(st.integers(1, days))
            tasks.append(_study(day, 1, 1, 10))
    try:
        return make_state(days, 2, tasks, classes)
    except Exception:  # a suggested block on a busy period
        assume(False)
        raise


def _floor_vs_exhaustive(
    state: ScheduleState, level: str, scope: set[int] | None = None, in_hypothesis: bool = False
) -> tuple[Any, list[tuple[int, int]]]:
    from smartflow_engine.solver import check_feasibility
    from smartflow_engine.solver.health_floor import health_floor

    report = check_feasibility(state, time_limit_s=2.0, include_suggested=True)
    floor = health_floor(state, level, report, scope=scope)
    pending = sum(t.need() for t in state.pending_tasks())
    pending_min = max(0, pending - int(report.capacity_gap or 0)) if report.proven else 0
    fixed = frozenset(
        t.state_id
        for t in state.tasks
        if t.status != "pending" and scope is not None and t.state_id not in scope
    )
    schedules = _schedules(state, pending_min, fixed=fixed)
    if in_hypothesis:
        assume(schedules)
    assert schedules
    feas = 1 if any(b["rule"] == "capacity_gap" for b in floor.binding) else 0
    keys = []
    for sched in schedules:
        c, w = health_key(sched, level)
        keys.append((c + feas, w))
        assert c + feas >= floor.critical
        assert c + feas + w >= floor.critical + floor.warning
    return floor, keys


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(state=gap_windows(), level=st.sampled_from(LEVELS), keep_suggested=st.booleans())
def test_forced_gap_floor_is_never_beaten(
    state: ScheduleState, level: str, keep_suggested: bool
) -> None:
    """Tests, against exhaustive search over every placement on windows where class windows,
    fixed study blocks and full days force subject gaps, that no schedule is below the proven
    floor: over every movable task, and over the pending ones alone (a proposal's scope)."""
    _floor_vs_exhaustive(state, level, scope=set() if keep_suggested else None, in_hypothesis=True)


def test_gap_forced_by_class_window_is_tight() -> None:
    """Tests that a locked c10 block on day 1 and a pending c10 task confined to days 7-10 force
    a gap of 5 days (a warning), named in the floor, and that a schedule attains the floor."""
    classes = [{"id": 10, "name": "c10", "start_day": 7, "end_day": 10, "excluded_periods": []}]
    tasks = [
        _study(1, 1, 1, 10, status="existing", locked=True),
        {"status": "pending", "duration": 1, "category_id": 10, "category": "c10"},
    ]
    state = make_state(10, 2, tasks, classes)
    floor, keys = _floor_vs_exhaustive(state, "normal")
    why = next(b["why"] for b in floor.binding if b["rule"] == "subject_gap")
    assert (why["min_max_gap"], why["after_day"], why["before_day"]) == (5, 1, 7)
    # tight in critical + warning: the task on day 7 (its day then lacks a buffer too)
    assert min(c + w for c, w in keys) == floor.critical + floor.warning


def test_gap_forced_by_days_without_room() -> None:
    """Tests that days whose free periods are too short for the subject's task force a gap:
    c10 stands on days 1 and 8, only day 2 between has a free run of 2 periods, so the pending
    2-period task leaves a gap of at least 5 days (warning) in every schedule."""
    tasks = [
        _study(1, 1, 1, 10, status="existing", locked=True),
        _study(8, 1, 1, 10, status="existing", locked=True),
    ]
    tasks += [locked_course(d, 2, 2) for d in range(3, 8)]
    tasks.append({"status": "pending", "duration": 2, "category_id": 10, "category": "c10"})
    state = make_state(8, 3, tasks)
    floor, keys = _floor_vs_exhaustive(state, "normal")
    why = next(b["why"] for b in floor.binding if b["rule"] == "subject_gap")
    assert why["min_max_gap"] == 5
    assert floor.critical + floor.warning <= min(c + w for c, w in keys)


def test_banned_periods_force_loads_in_the_floor() -> None:
    """Tests that banned periods shrink the room the floor pours periods into: three 4-period
    tasks whose class bans period 5 of 5 must fill periods 1-4 of each of three days (load
    0.8, a warning each), which the floor counts (free periods alone would allow 2) and no
    schedule beats."""
    classes = [{"id": 10, "name": "c10", "start_day": 1, "end_day": 3, "excluded_periods": [5]}]
    tasks = [
        {"status": "pending", "duration": 4, "category_id": 10, "category": "c10"} for _ in range(3)
    ]
    state = make_state(3, 5, tasks, classes)
    floor, keys = _floor_vs_exhaustive(state, "normal")
    why = next(
        b["why"]
        for b in floor.binding
        if b["rule"] == "day_utilization" and b["why"]["kind"] == "capacity"
    )
    assert why["days_forced_over_warning"] == 3
    assert floor.critical + floor.warning >= 3
    assert all(c + w >= 3 for c, w in keys)


def test_search_stops_at_its_own_floor() -> None:
    """Tests that the close stage stops without work when the start meets the floor of its own
    population: suggested blocks fill day 1 (a critical day the pending-only scope cannot
    change), and the pending task already stands where the floor says it should."""
    tasks = [
        _study(1, 1, 3, 10),
        _study(1, 4, 6, 10),
        {"status": "pending", "duration": 2, "category_id": 11, "category": "c11"},
    ]
    state = make_state(3, 6, tasks)
    problem = build_problem(state, by_subject=True)  # the suggested blocks stay
    start = [Placement(3, 2, 1, 2)]
    result = search_health(state, problem, start, seed=0, budget_s=1.0)
    assert result.evaluations == 0
    assert (
        result.counts.key
        == result.start_counts.key
        == health_key(apply_placements(state, start), "normal")
    )
    # the floor over every movable task (the suggested ones too) is lower: the search works
    moved = build_problem(state, include_suggested=True, by_subject=True)
    again = search_health(
        state, moved, [*moved.current.values(), Placement(3, 2, 1, 2)], seed=0, budget_s=0.05
    )
    assert again.evaluations > 0
    assert again.counts.key < result.counts.key


@st.composite
def concentration_windows(draw: st.DrawFn) -> ScheduleState:
    """3-4 days of 3-4 periods: locked c10 blocks, courses, a short c10 class window, a
    suggested c10 block and pending c10 tasks, so c10's periods may be forced onto few days."""
    days = draw(st.integers(3, 4))
    spd = draw(st.integers(3, 4))
    tasks: list[dict[str, Any]] = []
    for day in range(1, days + 1):
        kind = draw(st.sampled_from(["free", "study", "study2", "course"]))
        if kind == "study":
            tasks.append(_study(day, 1, 1, 10, status="existing", locked=True))
        elif kind == "study2":
            tasks.append(_study(day, 1, 2, 10, status="existing", locked=True))
        elif kind == "course":
            tasks.append(locked_course(day, spd - 1, spd))
    start = draw(st.integers(1, days))
    end = draw(st.integers(start, min(days, start + 1)))
    classes = [
        {"id": 10, "name": "c10", "start_day": start, "end_day": end, "excluded_periods": []}
    ]
    if draw(st.booleans()):
        tasks.append(_study(draw(st.integers(start, end)), spd, spd, 10))
    for _ in range(draw(st.integers(1, 2))):
        tasks.append(
            {
                "status": "pending",
                "duration": draw(st.integers(1, 2)),
                "category_id": 10,
                "category": "c10",
            }
        )
    try:
        return make_state(days, spd, tasks, classes)
    except Exception:  # a suggested block on a busy period
        assume(False)
        raise


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(state=concentration_windows(), level=st.sampled_from(LEVELS), keep_suggested=st.booleans())
def test_forced_concentration_floor_is_never_beaten(
    state: ScheduleState, level: str, keep_suggested: bool
) -> None:
    """Tests, against exhaustive search on windows where class windows and locked blocks force
    a subject onto few days, that no schedule is below the proven floor (over every movable
    task, and over the pending ones alone)."""
    _floor_vs_exhaustive(state, level, scope=set() if keep_suggested else None, in_hypothesis=True)


def test_concentration_forced_by_a_one_day_class_is_tight() -> None:
    """Tests that three c10 blocks confined by their class to day 2 of 3 (N = 3 blocks, all on
    one day: concentration 1.0) give a critical in the floor that every schedule meets."""
    classes = [{"id": 10, "name": "c10", "start_day": 2, "end_day": 2, "excluded_periods": []}]
    tasks = [
        {"status": "pending", "duration": 1, "category_id": 10, "category": "c10"} for _ in range(3)
    ]
    state = make_state(3, 6, tasks, classes)
    floor, keys = _floor_vs_exhaustive(state, "normal")
    why = next(b["why"] for b in floor.binding if b["rule"] == "subject_concentration")
    assert why["min_concentration"] == 1.0 and why["category"] == "c10"
    assert all(c >= 1 for c, _ in keys)
    assert min(keys)[0] == floor.critical  # tight in criticals


def _spread_window() -> ScheduleState:
    """Six days of 4 periods: c10's two suggested blocks on days 1-2; locked courses hold 3 of
    the 4 periods of days 4-6, so the even spread (one block in days 4-6) puts a day at 100 %
    (critical utilisation)."""
    tasks = [_study(1, 1, 1, 10), _study(2, 1, 1, 10)]
    tasks += [locked_course(d, 1, 3) for d in (4, 5, 6)]
    return make_state(6, 4, tasks)


def test_spread_even_ranks_health_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that spread_even keeps the current places when its even spread would add a
    critical issue (critical, warning rank before the spread), and that without that rank it
    would have moved a block onto a full day."""
    import smartflow_engine.solver.reoptimize as reopt
    from smartflow_engine.solver.reoptimize import health_of_moves

    state = _spread_window()
    ranked = reopt.spread_even(state, "c10", time_limit_s=2.0)
    assert ranked.moves == [] and ranked.status == "unchanged"
    monkeypatch.setattr(reopt, "health_worse", lambda *_: False)
    unranked = reopt.spread_even(state, "c10", time_limit_s=2.0)
    assert unranked.moves
    before, after = health_of_moves(state, unranked.moves)
    assert after.key > before.key
    applied = apply_placements(
        state, [after_pl for _, after_pl in unranked.moves], [b.task_id for b, _ in unranked.moves]
    )
    assert after.key == health_key(applied, "normal")


def test_forced_subject_floors_read_in_student_terms() -> None:
    """Tests that the binding entries of the forced gap and concentration floors get a Chinese
    sentence with their figures (not the raw data)."""
    from smartflow_engine.solver.health_floor import health_floor
    from smartflow_engine.tools_adapter.tools.close_text import binding_text

    classes = [{"id": 10, "name": "c10", "start_day": 7, "end_day": 7, "excluded_periods": []}]
    tasks = [_study(1, 1, 1, 10, status="existing", locked=True)]
    tasks += [
        {"status": "pending", "duration": 1, "category_id": 10, "category": "c10"} for _ in range(3)
    ]
    floor = health_floor(make_state(10, 4, tasks, classes), "normal", pending_periods=3)
    texts = {b["rule"]: binding_text(b["rule"], b["why"]) for b in floor.binding}
    assert texts["subject_gap"] == (
        "c10在第1天与第7天之间只能排在任务类时间窗内、有足够空位的日子，最长间隔至少5天。"
    )
    one_day = [{"id": 10, "name": "c10", "start_day": 2, "end_day": 2, "excluded_periods": []}]
    floor = health_floor(make_state(3, 6, tasks[1:], one_day), "normal", pending_periods=3)
    why = next(b["why"] for b in floor.binding if b["rule"] == "subject_concentration")
    assert binding_text("subject_concentration", why) == (
        "c10的任务只能落在1天内（任务类时间窗、固定块或空位所限），集中度至少1.0。"
    )


def test_fragmentation_forced_by_locked_courses_is_tight() -> None:
    """Tests that locked courses at periods 2 and 4 of a 5-period day leave three isolated free
    periods; one one-period task fills one, so every schedule keeps a fragmentation rate of 1.0
    (critical), which the floor proves with its figures."""
    from smartflow_engine.tools_adapter.tools.close_text import binding_text

    tasks = [
        locked_course(1, 2, 2),
        locked_course(1, 4, 4),
        {"status": "pending", "duration": 1, "category_id": 10, "category": "c10"},
    ]
    state = make_state(1, 5, tasks)
    floor, keys = _floor_vs_exhaustive(state, "normal")
    why = next(b["why"] for b in floor.binding if b["rule"] == "free_fragmentation")
    assert (why["isolated_periods"], why["one_period_blocks"], why["min_fragmentation_rate"]) == (
        3,
        1,
        1.0,
    )
    assert "3节孤立的单节空位" in binding_text("free_fragmentation", why)
    assert min(keys)[0] == floor.critical  # tight in criticals


def _search_at_start(state: ScheduleState) -> tuple[Any, list[Placement], HealthEvaluator, Any]:
    """The close stage's search over every movable placed task, standing at the start."""
    import numpy as np

    from smartflow_engine.solver.moves import Neighbourhood

    problem = build_problem(state, include_suggested=True, by_subject=True)
    start = list(problem.current.values())
    ev = HealthEvaluator(state, {t for g in problem.groups for t in g.task_ids})
    ev.set_placements(start)
    origin = {pl.task_id: pl for pl in start}
    search = Neighbourhood(ev, problem, origin, np.random.default_rng(0), None, DEFAULT_CALIBRATION)
    return problem, start, ev, search


def test_gap_scan_moves_a_doubled_block_into_the_gap_middle() -> None:
    """Tests the targeted gap scan: subject c10 stands on day 1 (two blocks) and day 8 (a
    critical gap of 6 days); every candidate moves a c10 block whose day keeps c10 or ends its
    run (a day-1 block, or the lone day-8 one) onto the gap's middlemost days (4 and 5 leave
    gaps of at most 3; one of 3 and 6 completes the three days looked at), and the best one
    removes the gap issue."""
    state = _gap_window()
    _, start, ev, search = _search_at_start(state)
    cur = ev.counts_now()
    cands = search.gap_candidates()
    assert cands
    assert {pl.task_id for pl in start} == {tid for cand in cands for tid, _ in cand}
    assert all(len(cand) == 1 for cand in cands)
    days = {cand[0][1].day for cand in cands}
    assert {4, 5} <= days <= {3, 4, 5, 6} and len(days) == 3
    changes, spent = search.scan(cands, cur)
    assert changes is not None and spent == len(cands)
    applied = apply_placements(
        state, [new for _, _, new in changes], [tid for tid, _, _ in changes]
    )
    assert "subject_gap" not in {
        i.rule
        for i in analyze_health(applied, check_feasibility=False).issues
        if i.severity != "info"
    }
    assert ev.counts_now().key == health_key(applied, "normal")


def test_unload_scan_moves_blocks_off_a_busy_day() -> None:
    """Tests the targeted unload scan: day 1 holds 10 of 12 periods (a utilisation warning);
    its candidates move day-1 blocks to the lightest days (or elsewhere on day 1), and the best
    one removes the warning."""
    state = _day_util_window()
    problem, _, ev, search = _search_at_start(state)
    cands = search.unload_candidates()
    assert cands and all(len(c) == 1 and problem.current[c[0][0]].day == 1 for c in cands)
    assert {c[0][1].day for c in cands} >= {2, 3, 4}
    changes, _ = search.scan(cands, ev.counts_now())
    assert changes is not None
    applied = apply_placements(
        state, [new for _, _, new in changes], [tid for tid, _, _ in changes]
    )
    assert not [
        i
        for i in analyze_health(applied, check_feasibility=False).issues
        if i.rule == "day_utilization"
    ]


def test_unload_scan_trades_for_a_shorter_block() -> None:
    """Tests the unload scan's trade: day 1 holds 8 course periods and a 2-period block (10 of
    12, a warning), day 2 7 course periods and a 1-period block; moving the long block alone
    puts day 2 at 10, while trading the two blocks leaves both days at 9 (no warning)."""
    tasks = [
        locked_course(1, 1, 8),
        locked_course(2, 1, 7),
        _study(1, 9, 10, 10),
        _study(2, 8, 8, 11),
    ]
    state = make_state(2, 12, tasks)
    _, _, ev, search = _search_at_start(state)
    cands = search.unload_candidates()
    trades = [c for c in cands if len(c) == 2]
    assert trades and all({tid for tid, _ in c} == {3, 4} for c in trades)
    changes, _ = search.scan(cands, ev.counts_now())
    assert changes is not None and len(changes) == 2
    applied = apply_placements(
        state, [new for _, _, new in changes], [tid for tid, _, _ in changes]
    )
    assert not [
        i
        for i in analyze_health(applied, check_feasibility=False).issues
        if i.rule == "day_utilization"
    ]


def test_context_switch_critical_forced_by_locked_blocks() -> None:
    """Tests that locked study blocks alternating two subjects over a 6-period day (5 switches,
    fragmentation 1.0) give a critical context-switch floor that no schedule beats and that
    analyze_health marks unfixable; on a 12-period day with 6 periods free the same blocks
    only force a warning (the free periods could lower the fragmentation)."""
    locked = [_study(1, s, s, 10 + s % 2, status="existing", locked=True) for s in range(1, 7)]
    pending = [{"status": "pending", "duration": 1, "category_id": 12, "category": "c12"}]
    state = make_state(2, 6, locked + pending)
    floor, keys = _floor_vs_exhaustive(state, "normal")
    why = next(b["why"] for b in floor.binding if b["rule"] == "context_switch")
    assert (why["fixed_switches"], why["min_fragmentation"]) == (5, 1.0)
    assert floor.unfixable[("context_switch", 1, None)] == "critical"
    assert all(c >= 1 for c, _ in keys)
    day1 = [
        i
        for i in analyze_health(state, check_feasibility=False).issues
        if i.rule == "context_switch" and i.day == 1
    ]
    assert day1 and day1[0].severity == "critical" and day1[0].fixable is False
    wide = make_state(2, 12, locked + pending)
    floor, _ = _floor_vs_exhaustive(wide, "normal")
    assert floor.unfixable[("context_switch", 1, None)] == "warning"


def _water_fill_by_bisection(lo: Any, room: Any, periods: Any) -> tuple[Any, Any]:
    """The reference: bisection on the water level of every total (the floor's old method)."""
    import numpy as np

    lo_f, hi_f = lo.astype(float)[None, :], (lo + room).astype(float)[None, :]
    target = float(lo.sum()) + periods.astype(float)
    a = np.full(periods.shape, float(lo_f.min()))
    b = np.full(periods.shape, float(hi_f.max()))
    for _ in range(80):
        mid = (a + b) / 2
        low = np.clip(mid[:, None], lo_f, hi_f).sum(axis=1) < target
        a, b = np.where(low, mid, a), np.where(low, b, mid)
    x = np.clip(b[:, None], lo_f, hi_f)
    fits = periods <= int(room.sum())
    return (
        np.where(fits, x.std(axis=1, ddof=1), np.inf),
        np.where(fits, x.max(axis=1) - x.min(axis=1), np.inf),
    )


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 24).flatmap(
        lambda spd: st.lists(
            st.tuples(st.integers(0, spd), st.integers(0, spd)), min_size=2, max_size=40
        ).map(lambda days: (spd, days))
    )
)
def test_water_filling_levels_equal_a_bisection(window: Any) -> None:
    """Tests that the floor's exact water-filling (levels interpolated between the volume's
    kinks, days grouped by their bounds) gives the least std-dev and range a bisection on the
    level gives, for every total from nothing to more than fits."""
    import numpy as np

    from smartflow_engine.solver.health_floor import _water_fill

    spd, days = window
    lo = np.array([a for a, _ in days], dtype=np.int64)
    room = np.array([min(r, spd - a) for a, r in days], dtype=np.int64)
    periods = np.arange(0, int(room.sum()) + 3)
    for got, want in zip(
        _water_fill(lo, room, periods), _water_fill_by_bisection(lo, room, periods), strict=True
    ):
        assert (np.isfinite(got) == np.isfinite(want)).all()
        finite = np.isfinite(want)
        assert np.allclose(got[finite], want[finite], rtol=0, atol=1e-9)


def test_a_host_block_with_a_guest_takes_no_second_one() -> None:
    """Tests the one-guest-per-block rule the search's moves and its send-back read: with a
    fixed guest on period 11 of a water course's block 11-12, the block is not free for a
    guest on period 12, while the course's other block that day (5-6) is."""
    state = make_state(
        1,
        12,
        [
            water_course(1, (5, 6), (11, 12), category="水课"),
            {
                "status": "suggested",
                "duration": 1,
                "embed_host": 1,
                "slots": [{"day": 1, "slot_start": 11, "slot_end": 11}],
            },
            {"duration": 1},
        ],
    )
    ev = HealthEvaluator(state, {3})
    assert not ev.host_block_free(Placement(3, 1, 12, 12, 1))
    assert ev.host_block_free(Placement(3, 1, 6, 6, 1))


@pytest.mark.parametrize(("days", "classes"), [(30, False), (120, True)])
def test_apply_proposal_never_puts_two_guests_in_one_block(days: int, classes: bool) -> None:
    """Tests the windows where apply_proposal {} was refused (a water course with two blocks a
    day: the search offered the second block as free when a lifted guest stood in the first,
    and sent a guest back into a block another guest had taken meanwhile): the whole call
    applies its proposal."""
    from smartflow_engine.tools_adapter.sessions.session import Session

    state = synthetic_window(504, days, variant="tight", with_task_classes=classes)
    reply = Session(state).call("apply_proposal", {})
    assert reply.startswith("已应用粗排方案"), reply[:200]
