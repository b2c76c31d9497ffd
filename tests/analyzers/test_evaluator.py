"""The incremental health evaluator against a full recomputation (issue 25)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.analyzers.evaluator import HealthEvaluator, evaluator_for, touched
from smartflow_engine.analyzers.health import run_health
from smartflow_engine.analyzers.result import DIMENSIONS, Issue
from smartflow_engine.state import Request, batch_move, move, place, swap, unplace
from tests.helpers.analyzer_windows import windows
from tests.helpers.reference import reference_core

LEVELS = st.sampled_from(["strict", "normal", "relaxed"])


def full(state: ScheduleState, level: str, dimensions: list[str] | None = None) -> list[Issue]:
    """The issues of a full ``analyze_health`` recomputation (no feasibility, no search)."""
    dims = list(dimensions or DIMENSIONS)
    return run_health(state, dims, [], "summary", level, None, None, actionable=False).issues


def facts(issues: list[Issue]) -> list[dict[str, Any]]:
    """What an issue says, without the floor's ``fixable`` flag (a separate computation)."""
    out = []
    for issue in issues:
        d = issue.to_dict()
        d.pop("fixable", None)
        out.append(d)
    return out


def key(issues: list[Issue]) -> tuple[int, int]:
    crit = sum(1 for i in issues if i.severity == "critical")
    return crit, sum(1 for i in issues if i.severity == "warning")


def random_op(data: st.DataObject, state: ScheduleState) -> Any:
    """A random write (place, move, swap, batch, unplace); may be refused."""
    tasks = [t for t in state.tasks if t.source != "event"] or state.tasks
    if not tasks:
        return unplace(state, 1)
    pick = st.sampled_from([t.state_id for t in tasks])
    day = st.integers(1, state.num_days)
    slot = st.integers(1, state.slots_per_day)
    kind = data.draw(st.sampled_from(["place", "move", "swap", "batch", "unplace"]))
    if kind == "place":
        return place(state, data.draw(pick), data.draw(day), data.draw(slot))
    if kind == "move":
        tid = data.draw(pick)
        task = state.task(tid)
        from_day = task.slots[0].day if task is not None and len(task.slots) > 1 else None
        return move(state, tid, data.draw(day), data.draw(slot), from_day=from_day)
    if kind == "swap":
        return swap(state, data.draw(pick), data.draw(pick))
    if kind == "unplace":
        return unplace(state, data.draw(pick))
    n = data.draw(st.integers(1, 4))
    reqs = [Request(data.draw(pick), data.draw(day), data.draw(slot)) for _ in range(n)]
    return batch_move(state, reqs)


@settings(max_examples=120, deadline=None)
@given(data=st.data(), state=windows(), level=LEVELS)
def test_evaluator_equals_full_recomputation(
    data: st.DataObject, state: ScheduleState, level: str
) -> None:
    """Tests that on random states, levels and random moves, swaps, batches, placements and
    removals, the evaluator's issues and key equal a full analyze_health recomputation after
    every accepted write, that each write's probed delta (key change, issues resolved and
    created) equals the difference of two full recomputations, and that a cached evaluator
    following the same writes by sync agrees too."""
    ev = HealthEvaluator(state, level)
    assert facts(ev.issues()) == facts(full(state, level))
    cached = evaluator_for(state, level)
    mismatches = 0
    for _ in range(data.draw(st.integers(1, 6))):
        before = full(state, level)
        result = random_op(data, state)
        note(repr(result.refusal) if not result.ok else repr(result.changes))
        if not result.ok:
            continue
        after = full(state, level)
        days, tasks = touched(result.changes)
        delta = ev.probe(days, tasks)
        kb, ka = key(before), key(after)
        sev_b = {i.issue_id for i in before if i.severity != "info"}
        sev_a = {i.issue_id for i in after if i.severity != "info"}
        mismatches += (delta.critical, delta.warning) != (ka[0] - kb[0], ka[1] - kb[1])
        mismatches += set(delta.resolves) != sev_b - sev_a
        mismatches += set(delta.creates) != sev_a - sev_b
        ev.commit(delta)
        mismatches += ev.key() != ka
        mismatches += facts(ev.issues()) != facts(after)
        assert evaluator_for(state, level) is cached
        mismatches += facts(cached.issues()) != facts(after)
    assert mismatches == 0


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    state=windows(),
    level=LEVELS,
    dims=st.lists(st.sampled_from(DIMENSIONS), min_size=1, max_size=4, unique=True),
)
def test_evaluator_on_chosen_dimensions(
    data: st.DataObject, state: ScheduleState, level: str, dims: list[str]
) -> None:
    """Tests that an evaluator over some of the dimensions reports exactly the issues
    analyze_health reports over those dimensions, before and after a random write."""
    ev = HealthEvaluator(state, level, dims)
    assert facts(ev.issues()) == facts(full(state, level, dims))
    result = random_op(data, state)
    if result.ok:
        ev.sync()
        assert facts(ev.issues()) == facts(full(state, level, dims))


@settings(max_examples=60, deadline=None)
@given(state=windows())
def test_reference_analyzers_still_agree(state: ScheduleState) -> None:
    """Tests that the reference analyzers' window-wide figures agree with the evaluator's
    window sums (load spread, free and usable periods, days without a buffer)."""
    ev = HealthEvaluator(state)
    ref = reference_core(state)
    total, _, free, usable, no_buffer = ev.sums
    assert total == sum(f.total for f in ev.days)
    assert abs(ref["load_std_dev"] - _std(ev)) < 1e-9
    assert ref["days_without_buffer"] == no_buffer
    assert ref["total_free"] == free
    assert ref["usable_slots"] == usable


def _std(ev: HealthEvaluator) -> float:
    from smartflow_engine.rules import sample_std_dev

    total, sq, *_ = ev.sums
    return sample_std_dev(ev.num_days, total, sq)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), state=windows(), level=LEVELS)
def test_destination_deltas_equal_full_recomputation(
    data: st.DataObject, state: ScheduleState, level: str
) -> None:
    """Tests that every destination the search measures (moves judged on the rows, embeddings
    through the write rules) reports the critical and warning change, the issues resolved and
    created exactly as a full analyze_health recomputation after the write does, and that the
    state is left exactly as it was."""
    from smartflow_engine.analyzers.destinations import movable, rank_destinations

    tasks = [t for t in state.tasks if movable(state, t)]
    if not tasks:
        return
    task = data.draw(st.sampled_from(tasks))
    snapshot = state.to_json()
    before = full(state, level)
    ranking = rank_destinations(state, task.state_id, level=level, budget=60)
    assert state.to_json() == snapshot
    kb = key(before)
    sev_b = {i.issue_id for i in before if i.severity != "info"}
    mismatches = 0
    for dest in ranking.destinations:
        copy = state.copy_state()
        result = (
            move(copy, task.state_id, dest.day, dest.slot_start, from_day=dest.from_day)
            if task.status != "pending"
            else place(copy, task.state_id, dest.day, dest.slot_start)
        )
        assert result.ok, result.refusal
        after = full(copy, level)
        ka = key(after)
        sev_a = {i.issue_id for i in after if i.severity != "info"}
        mismatches += (dest.critical_delta, dest.warning_delta) != (ka[0] - kb[0], ka[1] - kb[1])
        mismatches += set(dest.resolves) != sev_b - sev_a
        mismatches += set(dest.creates) != sev_a - sev_b
        host = copy.task(task.state_id)
        assert host is not None
        mismatches += dest.embed_host != host.embed_host
    assert mismatches == 0


@settings(max_examples=80, deadline=None)
@given(state=windows(), level=LEVELS)
def test_solver_health_counts_agree_with_the_evaluator(state: ScheduleState, level: str) -> None:
    """Tests that the solver's close-stage counts (solver.health_eval.health_counts) give the
    evaluator's (critical, warning) key on random states and levels: both read the one rule
    table and the one set of concepts."""
    from smartflow_engine.solver.health_eval import health_counts

    counts = health_counts(state, level)
    assert (counts.critical, counts.warning) == HealthEvaluator(state, level).key()


@settings(max_examples=80, deadline=None)
@given(data=st.data(), state=windows())
def test_compiled_target_filter_equals_matches(data: st.DataObject, state: ScheduleState) -> None:
    """Tests that the target filter compiled once per search accepts exactly the tasks
    destinations.matches accepts, on random filters and scopes."""
    from smartflow_engine.analyzers.destinations import _matcher, matches

    tf: dict[str, Any] = {}
    if data.draw(st.booleans()):
        tf["source"] = data.draw(st.sampled_from(["task_item", "event", ["task_item"]]))
    if data.draw(st.booleans()):
        tf["locked"] = data.draw(st.booleans())
    if data.draw(st.booleans()):
        tf["status"] = data.draw(
            st.lists(st.sampled_from(["existing", "suggested", "pending"]), max_size=3)
        )
    if data.draw(st.booleans()):
        tf["categories"] = data.draw(
            st.lists(
                st.sampled_from(["复习", "作业", "实验", "未分类", "阅读", "课程"]), max_size=3
            )
        )
    if data.draw(st.booleans()):
        tf["days"] = data.draw(st.lists(st.integers(1, state.num_days), max_size=3))
    sc: dict[str, Any] = {}
    if data.draw(st.booleans()):
        sc["task_pool"] = data.draw(st.sampled_from(["placed", "pending", "mixed"]))
    if data.draw(st.booleans()):
        sc["categories"] = data.draw(
            st.lists(st.sampled_from(["复习", "作业", "阅读"]), max_size=2)
        )
    fits = _matcher(state, tf, sc)
    for task in state.tasks:
        assert fits(task) == matches(state, task, tf, sc)
