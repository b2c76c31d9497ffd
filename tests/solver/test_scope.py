"""Tests of a proposal's scope (issue 26 item 3): a larger scope is never worse than a smaller one,
and a proposal is never lexicographically worse than the schedule it starts from.

The key is measured independently of the proposal's own claims: its placements are applied to a
copy through the real write path and ``analyze_health`` counts the issues; the key is (periods
of scope tasks left unplaced, critical, warning), best first."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import smartflow_engine.solver.placement as placement_module
from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.solver import Proposal, proposal_key, propose_placement
from smartflow_engine.state import Request, relocate
from tests.helpers.solver_windows import tiny_windows
from tests.helpers.windows import load_window

# A deterministic work budget under a wall limit no test machine reaches: the proposal for a
# seed is then the same in every run, whatever the load.
WORK_S = 0.4
WALL_S = 60.0


def _key(state: ScheduleState, proposal: Proposal) -> tuple[int, int, int]:
    """(pending and scope periods left unplaced, critical, warning) of ``proposal`` applied."""
    trial = state.copy_state()
    requests = [Request(p.task_id, p.day, p.slot_start) for p in proposal.placements]
    if requests:
        result = relocate(trial, requests, op="apply_proposal")
        assert result.ok, result.refusal
    return _state_key(trial, proposal.critical, proposal.warning)


def _state_key(
    state: ScheduleState, claimed_critical: int | None = None, claimed_warning: int | None = None
) -> tuple[int, int, int]:
    issues = analyze_health(state).issues  # feasibility included, as the proposal counts it
    critical = sum(1 for i in issues if i.severity == "critical")
    warning = sum(1 for i in issues if i.severity == "warning")
    if claimed_critical is not None:  # a proposal's claimed counts are analyze_health's own
        assert (claimed_critical, claimed_warning) == (critical, warning)
    unplaced = sum(t.need() for t in state.tasks if t.status == "pending")
    return unplaced, critical, warning


def _has_placed_suggested(state: ScheduleState) -> bool:
    return any(t.status == "suggested" and t.slots for t in state.tasks)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(state=tiny_windows(max_pending=4), seed=st.integers(0, 3))
def test_a_larger_scope_is_never_worse_than_the_smaller_one(state, seed):
    """Tests on random tiny windows with placed suggested tasks that re-planning pending and
    suggested tasks (work W) is never lexicographically worse than placing the pending tasks
    alone with the half of W the wide call gives that scope; the old code ran one wide search
    and could answer a worse plan than the narrow one."""
    assume(_has_placed_suggested(state))
    narrow = propose_placement(
        state, time_limit_s=WALL_S, work_limit_s=WORK_S / 2, seed=seed, include_suggested=False
    )
    wide = propose_placement(
        state, time_limit_s=WALL_S, work_limit_s=WORK_S, seed=seed, include_suggested=True
    )
    assume(not narrow.wall_limited and not wide.wall_limited)
    assert _key(state, wide) <= _key(state, narrow)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(state=tiny_windows(max_pending=4), seed=st.integers(0, 3), include_suggested=st.booleans())
def test_a_proposal_is_never_worse_than_the_schedule_it_starts_from(state, seed, include_suggested):
    """Tests on random tiny windows that applying the proposal never gives a key worse than the
    schedule as it is (every pending period unplaced, the health it has now)."""
    proposal = propose_placement(
        state,
        time_limit_s=WALL_S,
        work_limit_s=WORK_S,
        seed=seed,
        include_suggested=include_suggested,
    )
    assume(not proposal.wall_limited)
    assert _key(state, proposal) <= _state_key(state)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    derandomize=True,
)
@given(state=tiny_windows(max_pending=3), max_moves=st.integers(0, 3))
def test_a_least_change_repair_is_never_worse_than_the_schedule_it_starts_from(state, max_moves):
    """Tests on random tiny windows that local_adjust's repair (keep_placed, max_moves) never
    gives a key worse than the schedule as it is, and moves at most ``max_moves`` placed
    tasks."""
    from smartflow_engine.solver import repair_placement

    # (a repair has no separate work budget: its work is a share of this limit)
    proposal = repair_placement(state, max_moves=max_moves, time_limit_s=1.0)
    assume(not proposal.wall_limited)
    placed_now = {t.state_id: t.slots[0] for t in state.tasks if t.slots}
    moved = [
        p
        for p in proposal.placements
        if p.task_id in placed_now
        and (placed_now[p.task_id].day, placed_now[p.task_id].slot_start) != (p.day, p.slot_start)
    ]
    assert len(moved) <= max_moves
    assert _key(state, proposal) <= _state_key(state)


def _fake(answers: dict[bool, dict[str, Any]], calls: list[bool]) -> Any:
    def propose(state: Any, **kw: Any) -> Any:
        calls.append(kw["include_suggested"])
        fields = {
            "unplaced": [],
            "critical": 0,
            "objective": {"weighted_total": 1.0},
            "start_only": False,
            "wall_limited": False,
            "runtime_s": 0.0,
            **answers[kw["include_suggested"]],
        }
        return SimpleNamespace(**fields)

    return propose


def _with_a_placed_suggested_task() -> ScheduleState:
    state = load_window()
    result = relocate(state, [Request(9, 1, 7)], op="place", status_after="suggested")
    assert result.ok, result.refusal
    return state


@pytest.fixture
def no_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fakes are not dataclasses: the runtime and wall flags are set on them directly."""

    def set_fields(obj: Any, **kw: Any) -> Any:
        for name, value in kw.items():
            setattr(obj, name, value)
        return obj

    monkeypatch.setattr(placement_module, "replace", set_fields)


def test_the_wide_scope_answers_the_narrow_plan_when_it_is_better(monkeypatch, no_replace):
    """Tests that with suggested tasks placed, include_suggested runs both scopes (each with half
    the work) and answers the narrow plan when it is lexicographically better (here: fewer
    warnings), and the wide one otherwise."""
    calls: list[bool] = []
    works: list[float] = []
    fake = _fake({True: {"warning": 3}, False: {"warning": 2}}, calls)

    def spy(state: Any, **kw: Any) -> Any:
        works.append(kw["work_limit_s"])
        return fake(state, **kw)

    monkeypatch.setattr(placement_module, "_propose_scope", spy)
    state = _with_a_placed_suggested_task()
    chosen = propose_placement(state, include_suggested=True, work_limit_s=1.0)
    assert calls == [False, True] and chosen.warning == 2 and works == [0.5, 0.5]
    calls.clear()
    monkeypatch.setattr(
        placement_module,
        "_propose_scope",
        _fake({True: {"warning": 1}, False: {"warning": 2}}, calls),
    )
    assert propose_placement(state, include_suggested=True).warning == 1
    # Nothing suggested placed, or the narrow scope asked: one search only.
    calls.clear()
    propose_placement(load_window(), include_suggested=True)
    propose_placement(state, include_suggested=False)
    assert calls == [True, False]


def test_the_wide_scope_never_drops_a_placed_suggested_task(monkeypatch, no_replace):
    """Tests that a wide plan leaving a placed suggested task unplaced (its periods given to
    pending tasks: applying it was refused with a conflict on the 20,111-task window) loses to
    the narrow plan, whatever its counts."""
    calls: list[bool] = []
    monkeypatch.setattr(
        placement_module,
        "_propose_scope",
        _fake({True: {"unplaced": [9], "warning": 0}, False: {"warning": 5}}, calls),
    )
    chosen = propose_placement(_with_a_placed_suggested_task(), include_suggested=True)
    assert chosen.unplaced == [] and chosen.warning == 5


def test_proposal_key_orders_unplaced_periods_then_counts_then_soft_terms():
    """Tests the key's order: unplaced periods first, unknown counts after any count."""
    state = load_window()
    need = state.task(9).need()

    def p(unplaced: list[int], c: int | None, w: int | None, soft: float) -> Any:
        return SimpleNamespace(
            unplaced=unplaced, critical=c, warning=w, objective={"weighted_total": soft}
        )

    assert proposal_key(state, p([9], 0, 0, 0.0)) == (float(need), 0.0, 0.0, 0.0)
    assert proposal_key(state, p([], 5, 9, 9.0)) < proposal_key(state, p([9], 0, 0, 0.0))
    assert proposal_key(state, p([], 0, 9, 9.0)) < proposal_key(state, p([], 1, 0, 0.0))
    assert proposal_key(state, p([], 9, 9, 9.0)) < proposal_key(state, p([], None, None, 0.0))


def test_the_counts_of_a_proposal_placing_a_pending_host_are_those_after_it():
    """Tests the window the scope property found: a pending study task that is an embeddable
    host and a pending task that fits only inside it. Placed at once (as apply_proposal places)
    the guest cannot use the host's block, so the window is proven infeasible before; once the
    host is placed, the guest fits in it and analyze_health finds the window feasible. The
    proposal's counts are those analyze_health gives after applying it (no feasibility issue):
    the old code counted the check made before."""
    from smartflow_engine.solver import check_feasibility
    from tests.helpers.solver_windows import make_state

    block = {"day": 1, "slot_start": 1, "slot_end": 3}
    state = make_state(
        3,
        4,
        [
            {"status": "suggested", "category_id": 10, "slots": [block]},
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 3, "slot_start": 2, "slot_end": 4}],
            },
            {"status": "pending", "duration": 2, "category_id": 10},
            {"status": "pending", "duration": 3, "category_id": 10, "can_embed": True},
        ],
    )
    assert check_feasibility(state, time_limit_s=5, include_suggested=True).is_feasible is False
    proposal = propose_placement(state, time_limit_s=WALL_S, work_limit_s=WORK_S)
    assert proposal.unplaced == [3] and proposal.critical is not None
    _key(state, proposal)  # asserts the claimed counts are analyze_health's after applying
    trial = state.copy_state()
    assert relocate(trial, [Request(4, 2, 1)], op="place").ok
    assert check_feasibility(trial, time_limit_s=5, include_suggested=True).is_feasible is True


def test_a_suggested_task_outside_its_class_counts_the_feasibility_issue():
    """Tests the second window the property found: nothing pending, a suggested task standing
    outside its class's single day, where it does not fit. analyze_health re-plans it inside
    and proves the window infeasible, so the proposal (which places nothing) must count that
    critical issue too; the old code skipped the check when nothing was left unplaced."""
    from tests.helpers.solver_windows import make_state

    course = {"source": "event", "category": "课程", "status": "existing", "locked": True}
    state = make_state(
        2,
        6,
        [
            {**course, "slots": [{"day": 1, "slot_start": 3, "slot_end": 3}]},
            {**course, "slots": [{"day": 1, "slot_start": 5, "slot_end": 6}]},
            {
                "status": "suggested",
                "category_id": 10,
                "slots": [{"day": 2, "slot_start": 4, "slot_end": 6}],
            },
        ],
        [{"id": 10, "name": "c10", "start_day": 1, "end_day": 1}],
    )
    proposal = propose_placement(state, time_limit_s=WALL_S, work_limit_s=WORK_S)
    assert not proposal.placements and proposal.critical is not None
    _key(state, proposal)
    assert any(i.rule == "capacity_gap" for i in analyze_health(state).issues)
