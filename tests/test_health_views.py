"""The one health model and its two views (issue 25 item 2).

``smartflow_engine/health_facts.py`` holds the facts the rules read and their judgement; the
analyzers' evaluator (issues) and the solver's evaluator (counts with a scope lifted out) keep
them incrementally. These tests check that the views agree with each other and with a full
``analyze_health`` on random states and writes, that the module's two ways to a day's facts
(one row, a whole grid) agree, and that neither view computes a fact itself.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import numpy as np
from hypothesis import given, note, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState, health_facts
from smartflow_engine.analyzers.evaluator import HealthEvaluator as IssuesView
from smartflow_engine.analyzers.health import run_health
from smartflow_engine.analyzers.result import DIMENSIONS
from smartflow_engine.concepts import movable_by_solver
from smartflow_engine.solver.health_eval import HealthEvaluator as CountsView
from smartflow_engine.solver.health_eval import health_counts
from smartflow_engine.solver.problem import Placement
from smartflow_engine.state import move
from tests.analyzers.test_evaluator import random_op
from tests.helpers.analyzer_windows import windows, with_profiles

ROOT = Path(__file__).resolve().parents[1]
VIEWS = {
    "analyzers": ROOT / "smartflow_engine" / "analyzers" / "evaluator.py",
    "solver": ROOT / "smartflow_engine" / "solver" / "health_eval.py",
}
LEVELS = st.sampled_from(["strict", "normal", "relaxed"])


def _full_key(state: ScheduleState, level: str) -> tuple[int, int]:
    """(critical, warning) of a full analyze_health recomputation (no feasibility, no search)."""
    issues = run_health(
        state, list(DIMENSIONS), [], "summary", level, None, None, actionable=False
    ).issues
    crit = sum(1 for i in issues if i.severity == "critical")
    return crit, sum(1 for i in issues if i.severity == "warning")


def _scope(state: ScheduleState) -> list[int]:
    hosts = state.guests_by_host()
    return [t.state_id for t in state.tasks if movable_by_solver(state, t, hosts)]


def _placement(state: ScheduleState, tid: int) -> Placement:
    task = state.task(tid)
    assert task is not None and len(task.slots) == 1
    b = task.slots[0]
    return Placement(tid, b.day, b.slot_start, b.slot_end, task.embed_host)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), state=windows(), level=LEVELS)
def test_the_two_views_agree_on_random_states(
    data: st.DataObject, state: ScheduleState, level: str
) -> None:
    """Tests that on random states, levels and random writes, the solver's counts (built for the
    state, and kept incrementally with a scope moved by place/remove), the number of
    critical/warning issues of the analyzers' evaluator (kept by sync) and those of a full
    analyze_health are one key, before and after every accepted write; half of the states
    carry random class profiles (hard classes: heavy pairs count, issue 42)."""
    if data.draw(st.booleans()):
        state = with_profiles(state, data.draw(st.integers(0, 2**32 - 1)))
    issues = IssuesView(state, level)
    scope = _scope(state)
    counts = CountsView(state, scope, level)
    counts.set_placements([_placement(state, tid) for tid in scope])
    mismatches = 0
    for _ in range(data.draw(st.integers(1, 5))):
        want = _full_key(state, level)
        mismatches += health_counts(state, level).key != want
        mismatches += issues.key() != want
        mismatches += counts.counts_now().key != want
        if scope and data.draw(st.booleans()):
            tid = data.draw(st.sampled_from(scope))
            result = move(
                state,
                tid,
                data.draw(st.integers(1, state.num_days)),
                data.draw(st.integers(1, state.slots_per_day)),
            )
            if result.ok:
                counts.remove(tid)
                counts.place(_placement(state, tid))
        else:
            result = random_op(data, state)
            if result.ok:  # the scope may have changed: a fresh counts view of the new state
                scope = _scope(state)
                counts = CountsView(state, scope, level)
                counts.set_placements([_placement(state, tid) for tid in scope])
        note(repr(result.refusal) if not result.ok else repr(result.changes))
        issues.sync()
    want = _full_key(state, level)
    mismatches += health_counts(state, level).key != want
    mismatches += issues.key() != want
    mismatches += counts.counts_now().key != want
    assert mismatches == 0


@settings(max_examples=200, deadline=None)
@given(
    days=st.integers(1, 5),
    spd=st.integers(1, 14),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_row_and_the_grid_give_the_same_day_facts(days: int, spd: int, seed: int) -> None:
    """Tests that the plain-Python facts of one day (day_facts, what a move recomputes) equal
    the vectorised facts of the whole grid (grid_day_facts, what a build computes) on random
    owner and guest layers and hard subjects (the heavy pairs), and that the free-run spans cover exactly the free periods (the
    whole grid's and one row's, with or without a least length, alike)."""
    rng = np.random.default_rng(seed)
    code = np.array([0, 0, 1, 2, 2, 3, 0, 1], dtype=np.int64)  # ids 1 and 6: events
    owner = rng.integers(0, code.size, size=(days, spd)) * (rng.random((days, spd)) < 0.7)
    guest = rng.integers(0, code.size, size=(days, spd)) * (rng.random((days, spd)) < 0.2)
    guest = guest * (owner != 0)  # a guest sits in an occupied period
    hard = frozenset(int(c) for c in rng.choice([1, 2, 3], size=int(rng.integers(0, 4))))
    mask = np.array([c in hard for c in range(4)]) if hard else None
    grid = health_facts.grid_day_facts(owner, health_facts.study_layer(owner, guest, code), mask)
    code_list = code.tolist()
    for d in range(days):
        one = health_facts.day_facts(owner[d].tolist(), guest[d].tolist(), code_list, spd, hard)
        assert one == grid[d]
    spans = health_facts.free_run_spans(owner)
    for d in range(days):
        free = {q for a, b in spans[d] for q in range(a, b + 1)}
        assert free == {q + 1 for q in range(spd) if owner[d, q] == 0}
        assert grid[d].usable == sum(b - a + 1 for a, b in spans[d] if b - a + 1 >= 2)
        assert health_facts.row_free_runs(owner[d].tolist()) == spans[d]
        assert health_facts.row_free_runs(owner[d].tolist(), 2) == [
            (a, b) for a, b in spans[d] if b - a + 1 >= 2
        ]


@settings(max_examples=200, deadline=None)
@given(
    daily=st.dictionaries(st.integers(1, 40), st.integers(1, 6), max_size=12),
    new=st.dictionaries(st.integers(1, 40), st.integers(0, 6), max_size=6),
)
def test_subject_days_follow_their_changes(daily: dict[int, int], new: dict[int, int]) -> None:
    """Tests that a subject's facts changed incrementally (updated) equal the facts built
    afresh from its new days, and that its first largest gap is the first of the largest."""
    after = dict(daily)
    for d, n in new.items():
        if n:
            after[d] = n
        else:
            after.pop(d, None)
    got = health_facts.SubjectDays.of(dict(daily)).updated(new)
    fresh = health_facts.SubjectDays.of(after)
    assert (got.daily, got.present, got.gaps, got.used, got.squares) == (
        fresh.daily,
        fresh.present,
        fresh.gaps,
        fresh.used,
        fresh.squares,
    )
    present = sorted(after)
    pairs = list(itertools.pairwise(present))
    want = max(pairs, key=lambda p: (p[1] - p[0], -p[0])) if pairs else None
    assert got.largest_gap_span() == want


# names a view must take from the shared model (its facts, their sums and their judgement)
SHARED = {
    "subject_codes",
    "day_facts",
    "grid_day_facts",
    "SubjectDays",
    "subject_changes",
    "subject_days",
    "window_sums",
    "moved_sums",
    "load_range",
    "subject_metrics",
    "overall_metrics",
    "judge",
    "level_rules",
}
# what computing a fact or judging a rule would call: free runs and switch counts (numpy's
# diff), the metric formulas and the rule evaluation of rules.py
FORBIDDEN_CALLS = {
    "diff",
    "r4",
    "concentration",
    "concentration_of",
    "sample_std_dev",
    "severity",
    "first_band",
    "evaluate",
    "holds",
}


def _calls(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


def test_neither_view_computes_facts_itself() -> None:
    """Tests that both evaluators import the shared fact and judgement functions of
    health_facts, and that neither calls what computing a fact or judging a rule takes (numpy's
    diff for free runs, the rules' metric formulas, a band's evaluation) or compares a free run
    with MIN_USABLE: the facts are written once, below both."""
    for name, path in VIEWS.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "health_facts"
            for alias in node.names
        }
        assert imported >= SHARED, f"{name} view does not import {sorted(SHARED - imported)}"
        called = _calls(tree) & FORBIDDEN_CALLS
        assert not called, f"{name} view computes facts itself: {sorted(called)}"
        assert not _measures_runs(tree), f"{name} view measures free runs itself"
    # the checks are not vacuous: a view that measured a run itself would be caught
    sneaky = ast.parse("x = np.diff(row)\nok = run >= MIN_USABLE\ny = r4(a / b)")
    assert {"diff", "r4"} <= _calls(sneaky)
    assert _measures_runs(sneaky)


def _measures_runs(tree: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Compare) and "MIN_USABLE" in ast.unparse(n) for n in ast.walk(tree)
    )


# the dimension tools' whole-window passes: each module, the metrics its rules read, and the
# health_facts functions those metrics must come from (issue 25 item 1)
ANALYZERS = ROOT / "smartflow_engine" / "analyzers"
TOOL_METRICS = {
    "load.py": ({"utilization"}, {"day_loads", "utilization", "load_spread_of"}),
    "context.py": (
        {"switch_count", "fragmentation", "heavy_adjacent"},
        {"switch_mask", "study_periods", "fragmentation", "heavy_mask"},
    ),
    "tolerance.py": (
        {"fragmentation_rate", "days_without_buffer"},
        {"free_runs", "usable_periods", "buffered", "fragmentation_rate"},
    ),
    "subjects.py": (
        {"max_gap", "concentration", "budget_progress", "days_to_end"},
        {"SubjectDays", "subject_metrics", "gaps_of", "largest_gap", "largest_gap_span"},
    ),
}
# rows of a reply no rule reads (a week's utilization, a part of the day's)
OTHER_ROWS = {"load.py": frozenset({"capacity"})}
# what computing a rule metric afresh would call: the rules' formulas, free runs and switches
TOOL_FORBIDDEN = {"sample_std_dev", "concentration", "concentration_of", "runs", "diff"}


def _from_facts(tree: ast.AST) -> set[str]:
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "health_facts"
        for alias in node.names
    }


def _metric_sources(
    tree: ast.AST,
    shared: set[str],
    metrics: set[str],
    other_rows: frozenset[str] = frozenset(),
    constants: bool = False,
) -> dict[str, bool]:
    """Per rule-metric key of a dict literal in ``tree`` (not one with a key of ``other_rows``:
    a row no rule reads, such as a week's): whether every value it gets reads a health_facts
    name, or a name bound (transitively) from a call of one. ``constants``: a constant value
    is no computation either (a row's placeholder for a metric its rule does not read), as
    ``None`` always is."""
    derived = set(shared)
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.NamedExpr)]
    grew = True
    while grew:
        grew = False
        for n in assigns:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if {x.id for x in ast.walk(n.value) if isinstance(x, ast.Name)} & derived:
                for t in targets:
                    for x in ast.walk(t):
                        if isinstance(x, ast.Name) and x.id not in derived:
                            derived.add(x.id)
                            grew = True
    out: dict[str, bool] = {}
    for node in ast.walk(tree):  # row["metric"] = value
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            key = node.targets[0].slice
            if isinstance(key, ast.Constant) and key.value in metrics:
                if isinstance(node.value, ast.Constant) and node.value.value is None:
                    continue  # no value: not a computation
                names = {x.id for x in ast.walk(node.value) if isinstance(x, ast.Name)}
                out[key.value] = out.get(key.value, True) and bool(names & derived)
    for node in ast.walk(tree):  # {"metric": value}
        if not isinstance(node, ast.Dict):
            continue
        if {k.value for k in node.keys if isinstance(k, ast.Constant)} & other_rows:
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value in metrics:
                if isinstance(value, ast.Constant) and (constants or value.value is None):
                    continue  # no value: not a computation
                names = {x.id for x in ast.walk(value) if isinstance(x, ast.Name)}
                out[key.value] = out.get(key.value, True) and bool(names & derived)
    return out


def test_no_dimension_tool_computes_a_rule_metric_itself() -> None:
    """Tests that the four dimension tools import their rule metrics' functions from
    health_facts, that every rule metric a tool writes into its reply is read from a
    health_facts function (directly or through names bound from one), and that none calls a
    rule formula, numpy's diff or the state's run finder itself: each metric has one
    definition, the one the evaluators judge."""
    for module, (metrics, needed) in TOOL_METRICS.items():
        tree = ast.parse((ANALYZERS / module).read_text(encoding="utf-8"))
        shared = _from_facts(tree)
        assert shared >= needed, f"{module} does not import {sorted(needed - shared)}"
        called = _calls(tree) & TOOL_FORBIDDEN
        assert not called, f"{module} computes a rule metric itself: {sorted(called)}"
        sources = _metric_sources(tree, shared, metrics, OTHER_ROWS.get(module, frozenset()))
        assert set(sources) == metrics - {"load_std_dev", "load_range"}
        own = sorted(k for k, ok in sources.items() if not ok)
        assert not own, f"{module} computes {own} itself"
    # not vacuous: a metric computed in place, or from a name of the module's own, is caught
    sneaky = ast.parse(
        "from ..health_facts import utilization\n"
        "u = t / spd\n"
        "row = {'utilization': r4(u)}\n"
        "row['switch_count'] = int(s.sum())\n"
        "ok = {'utilization': utilization(t, spd)}\n"
    )
    got = _metric_sources(sneaky, _from_facts(sneaky), {"utilization", "switch_count"})
    assert got == {"utilization": False, "switch_count": False}
    fine = ast.parse(
        "from ..health_facts import day_switches\n"
        "s = day_switches(study)\n"
        "sl = s.tolist()\n"
        "row = {'switch_count': sl[i]}\n"
    )
    assert _metric_sources(fine, _from_facts(fine), {"switch_count"}) == {"switch_count": True}


# The solver's models and floor (issue 40 item 5): each module, the health_facts functions it
# must read its facts from, and the rule metrics it computes exactly (the floor judges fixed
# content by the rules: those rows must come from health_facts). The floor's other rows are
# bounds of a relaxation (water-filled loads, forced gaps, isolated periods: see
# solver/health_floor.py), no metric of a schedule, so no health_facts function computes them.
SOLVER = ROOT / "smartflow_engine" / "solver"
SOLVER_FACTS: dict[str, tuple[set[str], set[str]]] = {
    "health_floor.py": (
        {
            "day_loads",
            "day_switches",
            "fragmentation",
            "utilization",
            "buffered",
            "grid_day_facts",
            "free_runs",
            "subject_codes",
            "subject_metrics",
        },
        {
            "utilization",
            "switch_count",
            "fragmentation",
            "days_without_buffer",
            "budget_progress",
            "days_to_end",
        },
    ),
    "health_model.py": (
        {"day_loads", "utilization", "free_runs", "usable_periods", "buffered"},
        {"utilization"},
    ),
    "problem.py": ({"free_runs"}, set()),
    "counting.py": ({"free_runs"}, set()),
    "feasibility.py": (set(), set()),
    "ordered.py": (set(), set()),
    "order.py": (set(), set()),
    "relaxation.py": (set(), set()),
    "objective.py": ({"day_loads", "day_switches", "free_runs"}, set()),
    "baselines.py": ({"day_loads", "free_runs", "switch_mask"}, set()),
    "soft_eval.py": ({"day_loads"}, set()),
    "reoptimize.py": ({"gaps_of", "largest_gap"}, set()),
}
RULE_METRICS = {m for metrics, _ in TOOL_METRICS.values() for m in metrics}


def _shifts_periods(tree: ast.AST) -> bool:
    """Whether ``tree`` slices a layer one period off along its last axis (``x[:, :-1]`` or
    ``x[:, 1:]``): how adjacent periods are compared, which is the switch's definition."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Tuple) and n.slice.elts:
            last = n.slice.elts[-1]
            if isinstance(last, ast.Slice) and ast.unparse(last) in (":-1", "1:"):
                return True
    return False


def test_no_solver_model_computes_a_rule_metric_itself() -> None:
    """Tests that the solver's models and floor read free runs, day loads, switches and the
    rules' metrics from health_facts: each imports what it reads, none calls a rule formula,
    numpy's diff or the state's run finder, compares adjacent periods (a switch written out) or
    measures a free run against MIN_USABLE itself, and every exact rule-metric row of the floor
    is read from a health_facts function (the floor's relaxation bounds aside)."""
    for module, (needed, exact) in SOLVER_FACTS.items():
        tree = ast.parse((SOLVER / module).read_text(encoding="utf-8"))
        shared = _from_facts(tree)
        assert shared >= needed, f"{module} does not import {sorted(needed - shared)}"
        called = _calls(tree) & (TOOL_FORBIDDEN | {"is_switch"})
        assert not called, f"{module} computes a rule metric itself: {sorted(called)}"
        assert not _shifts_periods(tree), f"{module} compares adjacent periods itself"
        assert not _measures_runs(tree), f"{module} measures free runs itself"
        sources = _metric_sources(tree, shared, RULE_METRICS, constants=True)
        assert set(sources) >= exact, f"{module} no longer judges {sorted(exact - set(sources))}"
        own = sorted(k for k in exact if not sources[k])
        assert not own, f"{module} computes {own} itself"
    # not vacuous: a switch written out, a run found by numpy's diff, a ratio are caught
    sneaky = ast.parse("s = (study[:, :-1] != study[:, 1:])\nd = np.diff(x)\nu = r4(t / spd)\n")
    assert _shifts_periods(sneaky)
    assert "diff" in _calls(sneaky)
    row = ast.parse("u = r4(t / spd)\nrow = {'utilization': u, 'fragmentation_rate': 0.0}\n")
    assert _metric_sources(row, set(), {"utilization"}, constants=True) == {"utilization": False}
