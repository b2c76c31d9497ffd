"""What analyze_health remembers between calls and works out lazily gives the answers of a
fresh computation (issue 25, the call right after a write).

- the feasibility step's proven-feasible report, remembered by ``feasibility_key``: a write
  the check cannot see (a suggested task moved) reuses it, a change it reads gives a new one;
- the evaluator's removal judgments (``HealthEvaluator.removal``), remembered per task by the
  versions of the days and subjects they read;
- the removal screen's order (``OrderedTargets``), worked out only as far as it is read;
- the subject-gap days of the search's pruning (``inside_gaps_without``), from the long gaps
  of the subject kept per subject;
- the targets of a days filter, found from the pool's tasks by day.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import smartflow_engine.solver as solver
from smartflow_engine import ScheduleState
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.analyzers import health as health_mod
from smartflow_engine.analyzers.destinations import (
    SCREEN,
    TaskPool,
    _eased,
    _ordered,
    _removed_issues,
    movable,
    target_tasks,
)
from smartflow_engine.analyzers.evaluator import HealthEvaluator, _long_without, evaluator_for
from smartflow_engine.analyzers.health import run_health
from smartflow_engine.analyzers.result import DIMENSIONS, Issue, NextAction
from smartflow_engine.state import move
from tests.analyzers.test_evaluator import random_op
from tests.helpers.analyzer_windows import build, windows

LEVELS = st.sampled_from(["strict", "normal", "relaxed"])


# ---------------------------------------------------------------------------------- feasibility
def _one_day(pending: int) -> ScheduleState:
    """One day of six periods: suggested task 1 (two periods, on 1-2) and a pending task 2
    of ``pending`` periods."""
    return build(
        1,
        [
            ("study", "复习", 1, 1, 2),
            {
                "name": "待办",
                "category": "复习",
                "source": "task_item",
                "status": "pending",
                "duration": pending,
            },
        ],
        spd=6,
    )


@pytest.fixture
def counted_checks(monkeypatch: pytest.MonkeyPatch) -> list[ScheduleState]:
    """The states ``solver.check_feasibility`` ran on (analyze_health reads it at call time)."""
    seen: list[ScheduleState] = []
    real = solver.check_feasibility

    def spy(state: ScheduleState, **kw: Any) -> Any:
        seen.append(state)
        return real(state, **kw)

    monkeypatch.setattr(solver, "check_feasibility", spy)
    health_mod._REPORTS.clear()
    return seen


def test_a_move_the_check_cannot_see_reuses_the_report(counted_checks: list[Any]) -> None:
    """Tests that moving a suggested task (re-planned by the check: its place is free to it)
    reuses the remembered feasible report, with the same answer, and that the report comes
    back with the call's own runtime."""
    state = _one_day(pending=3)
    first = analyze_health(state).feasibility
    assert first is not None and first["is_feasible"] is True and len(counted_checks) == 1
    assert move(state, 1, 1, 3).ok
    again = analyze_health(state).feasibility
    assert len(counted_checks) == 1  # remembered
    assert again is not None
    assert {k: v for k, v in again.items() if k != "runtime_s"} == {
        k: v for k, v in first.items() if k != "runtime_s"
    }


def test_a_change_the_check_reads_gives_a_new_answer(counted_checks: list[Any]) -> None:
    """Tests that locking the moved task (it then stays where it is: on 3-4, leaving two free
    runs of two periods for a pending task of three) is a new key: the check runs again and
    health says infeasible, never the remembered feasible report."""
    state = _one_day(pending=3)
    assert analyze_health(state).feasibility["is_feasible"] is True  # type: ignore[index]
    assert move(state, 1, 1, 3).ok
    task = state.task(1)
    assert task is not None
    task.locked = True
    state._grid = None  # the grid's embeddable hosts read the lock too
    result = analyze_health(state)
    assert len(counted_checks) == 2
    assert result.feasibility is not None and result.feasibility["is_feasible"] is False
    assert any(i.dimension == "feasibility" for i in result.issues)


def test_an_infeasible_report_is_never_remembered(counted_checks: list[Any]) -> None:
    """Tests that a proven-infeasible report (its reason and figures depend on the time the
    check got) is computed again on the same state."""
    state = _one_day(pending=5)
    for _ in range(2):
        assert analyze_health(state).feasibility["is_feasible"] is False  # type: ignore[index]
    assert len(counted_checks) == 2


# ---------------------------------------------------------------------------------- removals
def test_a_remembered_removal_follows_a_write_to_its_subject() -> None:
    """Tests that taking task 1 (复习, day 1) out resolves the subject's gap while 复习 stands
    on days 9 and 10 only otherwise, and no longer once task 2 moved from day 9 to day 4 (a
    gap of 5 stays): the remembered judgment is not served after the write."""
    state = build(
        10,
        [
            ("study", "复习", 1, 1, 1),
            ("study", "复习", 9, 1, 1),
            ("study", "复习", 10, 1, 1),
            ("study", "作业", 5, 1, 1),
        ],
    )
    gap = "issue_subjects_subject_gap_复习"
    task = state.task(1)
    assert task is not None
    ev = evaluator_for(state, "strict")
    before, after = ev.removal(task)
    assert gap in before and gap not in after
    assert move(state, 2, 4, 1).ok
    ev = evaluator_for(state, "strict")
    assert ev.removal(task) == HealthEvaluator(state, "strict").removal(task)
    assert gap not in ev.removal(task)[0]


@settings(max_examples=120, deadline=None)
@given(data=st.data(), state=windows(), level=LEVELS)
def test_remembered_removals_equal_fresh_ones(
    data: st.DataObject, state: ScheduleState, level: str
) -> None:
    """Tests that after random writes the session's evaluator (its removal judgments of every
    movable task remembered before each write) judges every removal as a fresh evaluator does,
    on random states and levels."""
    ev = evaluator_for(state, level)
    for step in range(data.draw(st.integers(1, 4))):
        tasks = [t for t in state.tasks if movable(state, t) and t.status != "pending"]
        for task in tasks:
            ev.removal(task)
        note(f"step {step}: {random_op(data, state)}")
        ev = evaluator_for(state, level)
        fresh = HealthEvaluator(state, level)
        for task in [t for t in state.tasks if movable(state, t) and t.status != "pending"]:
            assert ev.removal(task) == fresh.removal(task), task.state_id


# ---------------------------------------------------------------------------------- the order
def _eager(state: ScheduleState, action: NextAction, level: str) -> list[int]:
    """ordered_targets' order computed as it was: every screened task's key, then a sort."""
    ev = HealthEvaluator(state, level)
    tasks = target_tasks(state, action)
    focus, base = set(action.issue_ids), ev.severe()
    keys: dict[int, tuple[int, int, int]] = {}
    for index, task in enumerate(tasks[:SCREEN]):
        if task.status == "pending":
            keys[task.state_id] = (0, 0, index)
            continue
        after = _removed_issues(ev, task)
        resolves = sum(1 for i in focus if i in base and i not in after)
        creates = sum(1 for i in after if i not in base)
        worsens = sum(1 for i in focus if i in base and i in after and _eased(after[i], base[i]))
        keys[task.state_id] = (-resolves, int(creates > 0 or worsens > 0), index)
    head = sorted(tasks[:SCREEN], key=lambda t: keys[t.state_id])
    return [t.state_id for t in head + tasks[SCREEN:]]


def _actions(state: ScheduleState, level: str) -> list[NextAction]:
    result = run_health(state, list(DIMENSIONS), [], "summary", level, None, None, actionable=False)  # type: ignore[arg-type]
    return result.next_actions


@settings(max_examples=100, deadline=None)
@given(data=st.data(), state=windows(max_days=30), level=LEVELS)
def test_the_lazy_order_is_the_sorted_order(
    data: st.DataObject, state: ScheduleState, level: str
) -> None:
    """Tests that the removal screen's order worked out lazily, read in full or by any
    prefix, is the order of sorting every screened task's key, for every action health
    offers on random states and levels."""
    for action in _actions(state, level):
        want = _eager(state, action, level)
        ev = HealthEvaluator(state, level)
        lazy = _ordered(state, action, level, None, None, None, {}, ev, None)
        assert len(lazy) == len(want) and bool(lazy) == bool(want)
        k = data.draw(st.integers(0, len(want)))
        assert [t.state_id for t in itertools.islice(lazy, k)] == want[:k]
        assert [t.state_id for t in lazy] == want


def test_a_search_that_stops_early_judges_fewer_removals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that reading the first target of an action about one day judges the removals of
    the tasks on that day only (the others cannot resolve its issue), not the whole screen."""
    items: list[Any] = [("study", "复习", 1, s, s) for s in range(1, 11)]  # day 1: 10 of 12
    items += [("study", "作业", d, 1, 1) for d in range(2, 9)]
    state = build(8, items)
    level = "normal"
    action = next(
        a for a in _actions(state, level) if any("utilization_d1" in i for i in a.issue_ids)
    )
    judged: list[int] = []
    real = HealthEvaluator.removal

    def spy(self: HealthEvaluator, task: Any) -> tuple[dict[str, Issue], dict[str, Issue]]:
        judged.append(task.state_id)
        return real(self, task)

    monkeypatch.setattr(HealthEvaluator, "removal", spy)
    tf = {"days": []}  # every movable task, so the screen holds other days' tasks too
    lazy = _ordered(state, action, level, None, tf, None, {}, HealthEvaluator(state, level), None)
    first = lazy[0]
    assert first.slots[0].day == 1
    assert judged and all(state.task(t).slots[0].day == 1 for t in judged)  # type: ignore[union-attr]
    list(lazy)
    assert len(judged) == min(SCREEN, len(lazy))


# ---------------------------------------------------------------------------------- gaps
def _long_pairs(present: list[int], most: int) -> list[tuple[int, int]]:
    return [(a, b) for a, b in itertools.pairwise(present) if b - a - 1 >= most]


@settings(max_examples=500, deadline=None)
@given(
    present=st.lists(st.integers(1, 60), max_size=14, unique=True).map(sorted),
    day=st.integers(0, 61),
    most=st.integers(0, 12),
)
def test_the_long_pairs_without_a_day_equal_a_recount(
    present: list[int], day: int, most: int
) -> None:
    """Tests that the long gaps with one day taken out, derived from the long gaps of the
    present days, are those of the present days without that day counted afresh."""
    without = [d for d in present if d != day]
    assert _long_without(present, _long_pairs(present, most), day, most) == _long_pairs(
        without, most
    )


@settings(max_examples=150, deadline=None)
@given(data=st.data(), state=windows(max_days=40))
def test_inside_gaps_equal_the_plain_count(data: st.DataObject, state: ScheduleState) -> None:
    """Tests that ``inside_gaps_without`` (long gaps kept per subject) gives the days of the
    plain count of every case, for every subject and day, before and after a write."""
    for _ in range(2):
        ev = evaluator_for(state, "normal")
        for code, days in ev.daily.items():
            for day in [None, *range(1, state.num_days + 1)]:
                want: set[int] | None = set()
                if not days.gaps:
                    want = None
                else:
                    most = max(days.gaps)
                    cases = [days.present]
                    if day is not None:
                        cases.append([d for d in days.present if d != day])
                    for present in cases:
                        pairs = _long_pairs(present, most)
                        if not pairs:
                            want = None
                            break
                        if len(pairs) == 1 and want is not None:
                            want.update(range(pairs[0][0] + 1, pairs[0][1]))
                assert ev.inside_gaps_without(code, day) == want, (code, day)
        random_op(data, state)


# ---------------------------------------------------------------------------------- targets
@settings(max_examples=150, deadline=None)
@given(data=st.data(), state=windows())
def test_targets_of_a_days_filter_equal_the_full_scan(
    data: st.DataObject, state: ScheduleState
) -> None:
    """Tests that the targets found from the pool's tasks by day are those of testing every
    task, in the same order, on random days filters (days out of the window, pending tasks),
    statuses and pools."""
    tf: dict[str, Any] = {
        "days": data.draw(st.lists(st.integers(0, state.num_days + 1), min_size=1, max_size=4))
    }
    if data.draw(st.booleans()):
        tf["status"] = data.draw(
            st.lists(st.sampled_from(["existing", "suggested", "pending"]), max_size=3)
        )
    sc: dict[str, Any] = {}
    if data.draw(st.booleans()):
        sc["task_pool"] = data.draw(st.sampled_from(["placed", "pending", "mixed"]))
    plain = target_tasks(state, None, tf, sc)
    pooled = target_tasks(state, None, tf, sc, TaskPool.of(state))
    assert [t.state_id for t in pooled] == [t.state_id for t in plain]
