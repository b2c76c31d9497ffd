"""Tests of check_feasibility, the bottleneck explanation and the negotiation figures."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, note, settings

from smartflow_engine import ScheduleState
from smartflow_engine.solver import check_feasibility, negotiation_figures
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.state import Request, relocate, self_check, unplace
from smartflow_engine.state.synthetic import synthetic_window
from tests.helpers.solver_windows import apply_placements, make_state, oracle, tiny_windows


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(state=tiny_windows(), include_suggested=...)
def test_agrees_with_brute_force_oracle(state: ScheduleState, include_suggested: bool) -> None:
    """Tests that is_feasible, feasible_slots and capacity_gap equal the brute-force answer on
    tiny windows (host blocks, locked hosts, guests, class windows, banned periods, re-planned
    suggested tasks), and that the witness and the oracle's placement both apply cleanly."""
    note(state.to_json(indent=None))
    truth = oracle(state, include_suggested)
    report = check_feasibility(
        state, time_limit_s=5.0, num_workers=1, include_suggested=include_suggested
    )
    assert report.proven
    assert report.required_task_slots == truth.required
    assert report.feasible_slots == truth.best
    assert report.capacity_gap == truth.required - truth.best
    assert report.is_feasible == (truth.best == truth.required)
    assert sum(p.length for p in report.witness) == truth.best
    apply_placements(state, report.witness, truth.replanned)
    copy = state.copy_state()
    for tid in truth.replanned:
        if tid not in {p[0] for p in truth.placement}:
            assert unplace(copy, tid).ok
    if truth.placement:
        result = relocate(copy, [Request(*p) for p in truth.placement], op="place")
        assert result.ok, result.refusal
    self_check(copy)


def test_check_only_reads_the_state(fragmented_window: ScheduleState) -> None:
    """Tests that a check leaves the state exactly as it was."""
    before = fragmented_window.to_json()
    check_feasibility(fragmented_window, time_limit_s=2.0)
    negotiation_figures(fragmented_window, time_limit_s=2.0)
    assert fragmented_window.to_json() == before


@pytest.mark.parametrize(
    ("fixture", "reason", "gap"),
    [
        ("overfull_window", "insufficient_capacity", 1),  # 5 periods of work, 4 free
        ("fragmented_window", "fragmented", 3),  # 4 free periods, no run of 3
        ("class_window_window", "class_window", 2),  # day 2 free, but the class may not use it
        ("roomy_window", "ok", 0),  # two tasks, a free day
    ],
)
def test_reason_codes(fixture: str, reason: str, gap: int, request: pytest.FixtureRequest) -> None:
    """Tests the reason code and the exact gap on hand-made windows."""
    state = request.getfixturevalue(fixture)
    report = check_feasibility(state, time_limit_s=2.0)
    assert report.reason_code == reason
    assert report.capacity_gap == gap
    assert report.is_feasible is (gap == 0)
    assert report.slack_slots == report.free_capacity_slots - report.required_task_slots


def test_embed_window_places_one_guest_per_host(embed_window: ScheduleState) -> None:
    """Tests that a host block takes exactly one guest: tasks of 2 and 1 periods, one free
    host block of 2 and no free period, so only the 2-period task fits."""
    report = check_feasibility(embed_window, time_limit_s=2.0)
    assert report.free_capacity_slots == 2
    assert report.feasible_slots == 2
    assert report.capacity_gap == 1
    assert [(p.task_id, p.embed_host) for p in report.witness] == [(3, 1)]


def test_duration_bottleneck_and_minimal_conflict(fragmented_window: ScheduleState) -> None:
    """Tests that the explanation names the 3-period task as the duration bottleneck, with no
    run long enough on any day, and that the conflict set is just that task."""
    report = check_feasibility(fragmented_window, time_limit_s=2.0)
    assert report.bottleneck is not None
    (short,) = report.bottleneck.durations
    assert (short.min_duration, short.task_count, short.placeable_slots) == (3, 1, 0)
    assert short.bins == 0 and short.days == ()
    assert report.bottleneck.conflict_set == (2,)
    assert report.bottleneck.conflict_set_minimal


def test_class_bottleneck(class_window_window: ScheduleState) -> None:
    """Tests that a class whose window holds 3 usable periods for 4 periods of work is named,
    with its window, banned periods and capacity."""
    report = check_feasibility(class_window_window, time_limit_s=2.0)
    assert report.bottleneck is not None
    (cls,) = report.bottleneck.classes
    assert (cls.class_id, cls.start_day, cls.end_day, cls.banned) == (10, 1, 1, (4,))
    assert (cls.required_slots, cls.placeable_slots, cls.window_free_slots) == (4, 2, 3)
    assert set(report.bottleneck.conflict_set) == {1, 2}
    assert report.bottleneck.conflict_set_minimal


def test_conflict_set_is_irreducible_on_synthetic_window() -> None:
    """Tests on a tight 13-day window that the conflict set cannot all be placed, but every
    subset missing one of its tasks can (checked with the solver on the reduced window)."""
    state = _infeasible_synthetic()
    report = check_feasibility(state, time_limit_s=10.0)
    assert report.bottleneck is not None and report.bottleneck.conflict_set_minimal
    core = set(report.bottleneck.conflict_set)
    only_core = _keep_pending(state, core)
    assert check_feasibility(only_core, time_limit_s=5.0, explain=False).is_feasible is False
    for tid in sorted(core)[:4]:
        reduced = _keep_pending(state, core - {tid})
        assert check_feasibility(reduced, time_limit_s=5.0, explain=False).is_feasible is True


def _infeasible_synthetic() -> ScheduleState:
    for seed in range(40):
        state = synthetic_window(seed, 13, variant="tight")
        report = check_feasibility(state, time_limit_s=5.0, explain=False)
        if report.is_feasible is False and report.task_count > 10:
            return state
    raise AssertionError("no infeasible tight 13-day window in 40 seeds")


def _keep_pending(state: ScheduleState, keep: set[int]) -> ScheduleState:
    data = state.to_dict()
    data["tasks"] = [t for t in data["tasks"] if t["status"] != "pending" or t["state_id"] in keep]
    return ScheduleState.model_validate(data)


def test_tiny_time_limit_is_unproven_not_wrong() -> None:
    """Tests that a time limit too short for the maximum's proof claims no maximum and no gap,
    and says infeasible only by a proven bound below the requirement (issue 42): then the
    gap's bounds hold the true gap; a feasible window is never called infeasible."""
    # Every call may use min_work_s (50 ms), inside which the relaxation proves even this
    # 1000-day window on a quiet machine (~90 ms in all): without that floor, 1 ms cannot even
    # build the window's problem (~40 ms), on any machine.
    state = synthetic_window(4, 1000, variant="tight", with_task_classes=True)
    no_floor = replace(DEFAULT_CALIBRATION, min_work_s=0.0)
    report = check_feasibility(state, time_limit_s=0.001, explain=False, calibration=no_floor)
    full = check_feasibility(state, time_limit_s=10.0, explain=False)
    assert full.proven and full.is_feasible is False  # the instance needs a real proof
    assert report.proven is False
    assert report.feasible_slots is None and report.capacity_gap is None
    low, high = report.feasible_slots_bounds
    assert low <= full.feasible_slots <= high  # type: ignore[operator]
    if report.is_feasible is None:
        assert report.reason_code == "unknown"
    else:  # a bound below what is required: proven, and the gap's bounds hold the true gap
        assert report.is_feasible is False and high < report.required_task_slots
        least, most = report.capacity_gap_bounds
        assert least <= full.capacity_gap <= most  # type: ignore[operator]
    roomy = synthetic_window(4, 1000, variant="plain")
    quick = check_feasibility(roomy, time_limit_s=0.001, explain=False, calibration=no_floor)
    assert check_feasibility(roomy, time_limit_s=10.0, explain=False).is_feasible is True
    assert quick.is_feasible in (None, True)


def test_no_pending_tasks_is_feasible() -> None:
    """Tests that an empty scope is feasible with nothing required."""
    state = make_state(2, 4, [])
    report = check_feasibility(state)
    assert (report.is_feasible, report.required_task_slots, report.capacity_gap) == (True, 0, 0)


@pytest.mark.parametrize("variant", ["plain", "tight", "fragmented"])
def test_witness_applies_on_synthetic_windows(variant: str) -> None:
    """Tests on 30-day synthetic windows with classes that the witness places exactly
    feasible_slots periods and applies cleanly through relocate."""
    state = synthetic_window(5, 30, variant=variant, with_task_classes=True)
    report = check_feasibility(state, time_limit_s=10.0, explain=False)
    assert report.proven
    assert sum(p.length for p in report.witness) == report.feasible_slots
    apply_placements(state, report.witness)


# ---------------------------------------------------------------------------------- negotiation
def test_extra_days_needed() -> None:
    """Tests that three 4-period tasks on a day with 2 free periods need exactly one extra day."""
    state = make_state(
        1,
        12,
        [
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 10}],
            },
            {"duration": 4},
            {"duration": 4},
            {"duration": 4},
            {"duration": 2},
        ],
    )
    figures = negotiation_figures(state, time_limit_s=5.0)
    assert figures.is_feasible is False and figures.proven
    assert figures.slots_to_cut == 12
    assert figures.extra_days_needed == 1
    assert figures.extra_days_possible is True


def test_extra_days_respect_banned_periods() -> None:
    """Tests that extra days honour banned periods: two 4-period tasks of a class banning 5-8
    and 9-12 need two extra days (one run of 4 each)."""
    state = make_state(
        1,
        12,
        [
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 12}],
            },
            {"duration": 4, "category_id": 10},
            {"duration": 4, "category_id": 10},
        ],
        [{"id": 10, "name": "复习", "excluded_periods": [5, 6, 7, 8, 9, 10, 11, 12]}],
    )
    figures = negotiation_figures(state, time_limit_s=5.0)
    assert figures.extra_days_needed == 2
    assert figures.lifting_banned_suffices is False


def test_deadline_before_window_end_cannot_be_fixed_by_extra_days(
    class_window_window: ScheduleState,
) -> None:
    """Tests that a class ending before the window's end gets no help from extra days, while
    lifting its banned period (day 1 then holds both tasks) suffices."""
    figures = negotiation_figures(class_window_window, time_limit_s=5.0)
    assert figures.extra_days_needed is None and figures.extra_days_possible is False
    assert figures.lifting_banned_suffices is True
    assert figures.lifting_class_constraints_suffices is True
    assert figures.slots_to_cut == 2


def test_lifting_banned_suffices() -> None:
    """Tests that a task fitting only in its class's banned periods is fixed by lifting them."""
    state = make_state(
        1,
        4,
        [
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
            },
            {"duration": 2, "category_id": 10},
        ],
        [{"id": 10, "name": "复习", "excluded_periods": [4]}],
    )
    figures = negotiation_figures(state, time_limit_s=5.0)
    assert figures.lifting_banned_suffices is True
    assert figures.extra_days_needed == 1


def test_feasible_window_needs_nothing(roomy_window: ScheduleState) -> None:
    """Tests the figures of a feasible window: nothing to cut, no extra day."""
    figures = negotiation_figures(roomy_window)
    assert (figures.is_feasible, figures.slots_to_cut, figures.extra_days_needed) == (True, 0, 0)


@pytest.mark.parametrize("variant", ["plain", "tight", "fragmented"])
def test_lifting_class_rules_equals_rebuilding_without_them(variant: str) -> None:
    """Tests that lifting the class rules of a built problem (the reason code's question) gives
    the groups and bins build_problem gives with lift_banned and lift_windows."""
    from smartflow_engine.solver.feasibility import lift_class_rules
    from smartflow_engine.solver.problem import build_problem

    state = synthetic_window(2, 30, variant=variant, with_task_classes=True)
    for include_suggested in (False, True):
        lifted = lift_class_rules(build_problem(state, include_suggested=include_suggested))
        rebuilt = build_problem(
            state, include_suggested=include_suggested, lift_banned=True, lift_windows=True
        )
        assert lifted.groups == rebuilt.groups
        assert (lifted.runs, lifted.hosts) == (rebuilt.runs, rebuilt.hosts)


@settings(max_examples=40, deadline=None)
@given(state=tiny_windows(max_pending=5))
def test_lifting_flags_equal_each_lift_solved_alone(state: ScheduleState) -> None:
    """Tests on tiny windows (class windows, banned periods, hosts) that the two lifting flags,
    which skip the narrower lift when the wider one is proven not to suffice, equal what each
    relaxed window gives when solved on its own."""
    from smartflow_engine.solver.counting import max_placeable
    from smartflow_engine.solver.problem import build_problem

    note(state.to_json(indent=None))
    figures = negotiation_figures(state, time_limit_s=20.0)
    if figures.is_feasible is not False:
        return
    assert figures.proven
    for lift_windows, flag in (
        (False, figures.lifting_banned_suffices),
        (True, figures.lifting_class_constraints_suffices),
    ):
        relaxed = build_problem(state, lift_banned=True, lift_windows=lift_windows)
        res = max_placeable(relaxed, time_limit_s=20.0, num_workers=1, witness=False)
        assert res.proven
        assert flag is (res.best == relaxed.required_slots)
