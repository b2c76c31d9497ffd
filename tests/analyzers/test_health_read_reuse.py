"""What ``analyze_health`` reuses within one call (issue 40 item 7, second pass) gives what
computing it again gives: the check's problem lifted in place equals the problem built with the
lift, and the negotiation figures read from the check's problem equal those built afresh."""

from __future__ import annotations

from typing import Any

import pytest

from smartflow_engine.solver import check_feasibility, negotiation_figures
from smartflow_engine.solver.feasibility import lift_rules
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state.synthetic import synthetic_window

LIFTS = [
    {"lift_banned": True},
    {"lift_windows": True},
    {"lift_banned": True, "lift_windows": True},
    {"lift_weekdays": True},
    {"lift_banned": True, "lift_weekdays": True},
]


@pytest.mark.parametrize("variant", ["plain", "tight", "fragmented"])
@pytest.mark.parametrize("upstream", [False, True])
def test_lifting_a_built_problem_equals_building_it_lifted(variant: str, upstream: bool) -> None:
    """Tests that each lift the negotiation makes of the check's problem (banned periods, class
    windows, banned weekdays, and their pairs) gives the groups (their rules and tasks, in
    order) and bins that build_problem gives with that lift, on windows whose classes have
    banned periods, day windows, banned weekdays and item orders (``upstream``)."""
    state = synthetic_window(
        5,
        30,
        variant=variant,
        with_task_classes=True,
        upstream=upstream,  # type: ignore[arg-type]
    )
    problem = build_problem(state, include_suggested=True, subjects=False)
    assert any(g.rule.class_id is not None for g in problem.groups)
    if upstream:  # the rules the lifts drop are there to drop
        assert any(g.rule.off_days for g in problem.groups)
        assert any(g.rule.banned for g in problem.groups)
    for lift in LIFTS:
        lifted = lift_rules(problem, **lift)
        rebuilt = build_problem(state, include_suggested=True, subjects=False, **lift)
        assert lifted.groups == rebuilt.groups, lift
        assert (lifted.runs, lifted.hosts) == (rebuilt.runs, rebuilt.hosts)
        assert (lifted.owner == rebuilt.owner).all()
    assert lift_rules(problem) is problem  # no lift: the problem itself


@pytest.mark.parametrize("placed", [False, True])
def test_figures_from_the_checks_problem_equal_figures_built_afresh(placed: bool) -> None:
    """Tests on infeasible windows (tight, with classes; pending only, and after the greedy's
    placements were applied as suggested) that the negotiation figures read from the problem
    the check read equal those of a negotiation that builds every problem itself (given the
    time to prove them all)."""
    from benchmarks.bench_health_read import placed_window

    if placed:
        state = placed_window(30, "tight", True, seed=1)
    else:
        state = synthetic_window(13, 30, variant="tight", with_task_classes=True)
    problem = build_problem(state, include_suggested=True, subjects=False)
    report = check_feasibility(
        state, time_limit_s=20.0, include_suggested=True, explain=False, problem=problem
    )
    alone = check_feasibility(state, time_limit_s=20.0, include_suggested=True, explain=False)
    assert (report.is_feasible, report.feasible_slots) == (alone.is_feasible, alone.feasible_slots)
    assert report.is_feasible is False
    shared = negotiation_figures(
        state, report, time_limit_s=20.0, include_suggested=True, problem=problem
    )
    afresh = negotiation_figures(state, report, time_limit_s=20.0, include_suggested=True)
    assert shared.proven and afresh.proven
    strip = {"runtime_s": 0.0}
    assert {**vars(shared), **strip} == {**vars(afresh), **strip}


@pytest.mark.parametrize(("days", "classes"), [(30, False), (120, True)])
def test_rankings_with_taken_blocks_collapsed_equal_rankings_walking_each(
    days: int, classes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests that yielding only the first of consecutive water-course blocks that hold another
    task's guest (and sharing the blocks a task that is no guest tries) gives every task's
    ranking, its judged and skipped counts and whether it is complete, as walking every block
    does, at budgets that run out anywhere among them, pruned or not."""
    from benchmarks.bench_health_read import placed_window
    from smartflow_engine.analyzers import destinations as dest
    from smartflow_engine.analyzers.evaluator import evaluator_for

    state = placed_window(days, "tight", classes)
    ev = evaluator_for(state)
    issues = list(ev.severe())
    tasks = dest.TaskPool.of(state).every[::3]
    real = dest._block_tries

    def rankings() -> list[Any]:
        memo = dest.SearchMemo.of(state)
        # the days of the first water-course blocks: few free starts before the blocks, so
        # the budgets run out among the blocks too (one sequence: the memo keys by it)
        every_day = sorted({b.day for _, b in memo.hosts})[:6]
        out = []
        for task in tasks:
            for budget in range(1, 41):
                for prune in (False, True):
                    r = dest.rank_destinations(
                        state,
                        task.state_id,
                        days=every_day,
                        focus=issues[:3],
                        budget=budget,
                        prune=prune,
                        ev=ev,
                        memo=memo,
                    )
                    out.append((r.destinations, r.complete, r.skipped, r.judged))
        return out

    fast = rankings()
    calls = []

    def every_block(*args: Any) -> Any:
        calls.append(args)
        return real(*args[:7], None, args[8])  # no guests: every block, each checked

    monkeypatch.setattr(dest, "_block_tries", every_block)
    slow = rankings()
    assert calls  # the tasks do try water-course blocks
    assert fast == slow
    assert sum(not c for _, c, _, _ in fast) > 0  # budgets ran out


@pytest.mark.parametrize(
    ("seed", "variant", "classes", "pending", "answer"),
    [(13, "tight", True, None, None), (902, "fragmented", False, 120, 5)],
)
def test_extra_days_of_a_proven_infeasible_problem_are_the_exact_models(
    seed: int, variant: str, classes: bool, pending: int | None, answer: int | None
) -> None:
    """Tests that the extra days of a problem the caller proved infeasible are the CP-SAT
    model's answer: none when no task may take an appended day (every class ends before the
    window does: settled without a solve), else the number the model finds."""
    from smartflow_engine.solver import counting

    state = synthetic_window(
        seed,
        30,
        variant=variant,  # type: ignore[arg-type]
        with_task_classes=classes,
        pending=pending,
    )
    problem = build_problem(state, include_suggested=True, subjects=False)
    report = check_feasibility(state, time_limit_s=20.0, include_suggested=True, explain=False)
    assert report.is_feasible is False
    exact = counting._min_extra_days_exact(problem, problem.task_count, 20.0, 1)
    assert exact == (answer, True)
    got = counting.min_extra_days(problem, time_limit_s=20.0, num_workers=1, infeasible=True)
    assert got == exact
    extends = [g.rule.allows_day(31, 30) for g in problem.groups]
    assert any(extends) == (answer is not None)  # both branches: settled and solved


def test_no_lift_suffices_when_the_periods_outnumber_the_room() -> None:
    """Tests that a window with more pending periods than free ones gets every lifting figure
    false (no lift of a class rule adds room), as solving each lifted problem gives."""
    from smartflow_engine.solver.counting import max_placeable
    from tests.helpers.solver_windows import make_state

    # two days of 4 periods; 10 periods of class 10 (day 1 only, period 4 banned)
    state = make_state(
        2,
        4,
        [{"duration": 2, "category_id": 10} for _ in range(5)],
        [{"id": 10, "name": "复习", "start_day": 1, "end_day": 1, "excluded_periods": [4]}],
    )
    figures = negotiation_figures(state, time_limit_s=20.0)
    assert figures.is_feasible is False and figures.proven
    assert figures.lifting_banned_suffices is False
    assert figures.lifting_class_constraints_suffices is False
    for lift in LIFTS:
        relaxed = build_problem(state, subjects=False, **lift)
        res = max_placeable(relaxed, time_limit_s=20.0, num_workers=1, witness=False)
        assert res.proven and res.best < relaxed.required_slots


@pytest.mark.parametrize(("variant", "classes"), [("fragmented", False), ("fragmented", True)])
def test_rankings_sharing_landed_day_facts_equal_rankings_alone(
    variant: str, classes: bool
) -> None:
    """Tests that the tasks of one search sharing the facts of a day with a piece landed on it
    (by day, periods and subject) rank every destination as a ranking computing its own does,
    with the same measured effects, for the focus issues of each subject."""
    from benchmarks.bench_health_read import placed_window
    from smartflow_engine.analyzers import destinations as dest
    from smartflow_engine.analyzers.evaluator import evaluator_for

    state = placed_window(120, variant, classes)
    ev = evaluator_for(state)
    focus = list(ev.severe())[:4]
    every_day = list(range(1, state.num_days + 1))
    shared = dest.SearchMemo.of(state)
    pool = dest.TaskPool.of(state)
    tasks = [t for ts in pool.by_subject.values() for t in ts[:6]]

    def rank(task_id: int, memo: Any) -> Any:
        r = dest.rank_destinations(
            state, task_id, days=every_day, focus=focus, budget=40, ev=ev, memo=memo
        )
        return r.destinations, r.complete, r.skipped

    together = [rank(t.state_id, shared) for t in tasks]
    assert shared.landed is not None and shared.landed[1]  # the facts were kept and shared
    alone = [rank(t.state_id, dest.SearchMemo.of(state)) for t in tasks]
    assert together == alone
    assert sum(len(d) for d, _, _ in together) > 50  # destinations were measured


def test_remembered_creates_on_day_follows_a_write() -> None:
    """Tests that the evaluator's remembered answers of "would these facts give the day a new
    critical/warning issue" are not served after a write changed the days' issues: after
    moves, the synced evaluator answers as one built afresh on the changed state, for the
    facts of every day before the moves on every day."""
    from benchmarks.bench_health_read import placed_window
    from smartflow_engine.analyzers import destinations as dest
    from smartflow_engine.analyzers.evaluator import HealthEvaluator, evaluator_for
    from smartflow_engine.state import Request, relocate

    state = placed_window(30, "tight", False)
    ev = evaluator_for(state)
    facts = list(ev.days)
    days = range(state.num_days)
    before = [[ev.creates_on_day(d, f) for f in facts] for d in days]  # remembered now
    assert any(any(row) for row in before) and not all(all(row) for row in before)
    runs = ev.free_runs()
    assert runs is not None
    moved = 0
    for task in dest.TaskPool.of(state).every:  # move tasks onto free periods of other days
        if moved == 6 or task.status == "pending" or len(task.slots) != 1:
            continue
        need = task.need()
        place = next(
            (
                (d + 1, a)
                for d, spans in enumerate(runs)
                for a, b in spans
                if b - a + 1 >= need and d + 1 != task.slots[0].day
            ),
            None,
        )
        if (
            place is not None
            and relocate(
                state, [Request(task.state_id, *place)], op="move", status_after="suggested"
            ).ok
        ):
            moved += 1
            runs = HealthEvaluator(state).free_runs()
            assert runs is not None
    assert moved == 6
    synced = evaluator_for(state)
    assert synced is ev  # the same evaluator, brought up to date
    fresh = HealthEvaluator(state)
    after = [[synced.creates_on_day(d, f) for f in facts] for d in days]
    assert after == [[fresh.creates_on_day(d, f) for f in facts] for d in days]
    assert after != before  # the moves changed some answer
