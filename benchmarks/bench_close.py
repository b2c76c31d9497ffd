"""Close benchmark (issue 10): does ``analyze_health`` close right after the proposal?

On seeded synthetic windows (13, 30, 60 and, in full runs, 120 days; plain, tight and
fragmented; with and without task classes), for every window the exact feasibility check runs
first, and on the feasible ones four methods get the same time limit:

- ``new``: ``propose_placement`` with its close stage (lexicographic: periods placed, then
  analyze_health's critical, warning, then the six soft terms);
- ``six-term``: the same call with the search's budget set to zero: its best start (the
  soft-term pipeline that this column measured before issue 26 is deleted);
- ``greedy``: the load/category-aware balanced greedy (:func:`balanced_greedy`);
- ``hill``: the six-term proposal at half the limit, then a first-improvement single-move hill
  climb on the exact (critical, warning) counts for the other half (the issue's peer).

Reported: the share of feasible windows whose health closes (``critical=0 && warning<=1``)
after each method; for the new proposal, the share of windows that cannot close where the proven
floor already shows it (floor not closable), the share at ``best_achievable``, the median
distance to the floor (critical + warning issues above it), and runtimes. Run
``python -m benchmarks.bench_close [--quick]``; ``--upstream [--pending-only]`` runs the upstream-shaped set
alone (issue 42: every proposal keeps every class rule); ``--reorder-ab [--seeds N] [--limit S]``
the one search on its 13/30-day windows at fixed work, without and with the moves that carry an
ordered item past its neighbours; ``--push-ab`` the same without and with their push of the
items they pass (``--sizes 13,30`` by default).
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from rich.progress import Progress

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.solver import check_feasibility, propose_placement
from smartflow_engine.solver.baselines import balanced_greedy
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.health_eval import HealthCounts, HealthEvaluator
from smartflow_engine.solver.health_floor import health_floor
from smartflow_engine.solver.problem import Placement, Problem, build_problem, scope_tasks
from smartflow_engine.state import ScheduleState
from smartflow_engine.state.synthetic import synthetic_window

VARIANTS = ("plain", "tight", "fragmented")
METHODS = ("new", "six-term", "greedy", "hill")
# The proposal's start without its search (the soft-term pipeline that stood here before issue
# 10's close stage was deleted by issue 26: its last side-by-side table is in results_close.md)
NO_CLOSE = replace(DEFAULT_CALIBRATION, health_share=0.0, one_search_share=0.0)


@dataclass
class Row:
    days: int
    variant: str
    classes: bool
    seed: int
    feasible: bool | None
    counts: dict[str, tuple[int, int]]
    runtime: dict[str, float]
    floor: tuple[int, int] = (0, 0)  # analyze_health's (every unlocked study task may move)
    floor_blocks_close: bool = False
    best_achievable: bool = False
    # the proposal's own floor: only the pending tasks move, as apply_proposal {} does
    scope_floor: tuple[int, int] = (0, 0)
    scope_blocks_close: bool = False
    scope_meets: bool = False  # the proposal reaches its own floor (HealthFloor.meets)


def _counts(state: ScheduleState, problem: Problem, placements: list[Placement]) -> HealthCounts:
    ev = HealthEvaluator(state, {t for g in problem.groups for t in g.task_ids})
    ev.set_placements(placements)
    return ev.counts_now()


def six_term(state: ScheduleState, limit: float, seed: int = 0) -> Any:
    """The proposal without its search (budget zero): its best start."""
    return propose_placement(state, time_limit_s=limit, seed=seed, calibration=NO_CLOSE)


def hill_climb(
    state: ScheduleState, problem: Problem, start: list[Placement], seconds: float, seed: int = 0
) -> list[Placement]:
    """First-improvement single moves (one task to another allowed free place) on the exact
    (critical, warning), for ``seconds`` of wall time."""
    ev = HealthEvaluator(state, {t for g in problem.groups for t in g.task_ids})
    ev.set_placements(start)
    group_of = problem.group_of()
    rng = np.random.default_rng(seed)
    cur = ev.counts_now().key
    deadline = time.perf_counter() + seconds
    tids = sorted(ev.placed_scope)
    spd = problem.slots_per_day
    improved = True
    while improved and time.perf_counter() < deadline and cur != (0, 0):
        improved = False
        for tid in rng.permutation(tids).tolist():
            if time.perf_counter() > deadline:
                break
            g = problem.groups[group_of[tid]]
            old = ev.remove(tid)
            best = None
            for day in range(1, problem.num_days + 1):
                if not g.rule.allows_day(day, problem.num_days):
                    continue
                row = ev.owner[day - 1]
                for s in range(1, spd - g.duration + 2):
                    if row[s - 1 : s - 1 + g.duration].any() or any(
                        p in g.rule.banned for p in range(s, s + g.duration)
                    ):
                        continue
                    pl = Placement(tid, day, s, s + g.duration - 1)
                    ev.place(pl)
                    key = ev.counts_now().key
                    ev.remove(tid)
                    if key < cur:
                        best = (key, pl)
                        break
                if best is not None:
                    break
            if best is None:
                ev.place(old)
            else:
                cur = best[0]
                ev.place(best[1])
                improved = True
    return list(ev.placed_scope.values())


# The own floor's exact model of the per-day rules (a benchmark's generous limit, and a work
# budget so that the floor is the same on any machine the clock does not cut).
EXACT_FLOOR_S = 20.0
EXACT_FLOOR_WORK = 5.0
# the floor's model that holds the item order (upstream set: where no other floor blocks)
ORDERED_FLOOR_S = 120.0
ORDERED_FLOOR_WORK = 45.0


def bench(quick: bool, progress: Progress) -> list[Row]:
    sizes = (13, 30) if quick else (13, 30, 60, 120)
    seeds = range(1) if quick else range(2)
    limit = 1.0 if quick else 2.0
    propose_placement(synthetic_window(0, 7), time_limit_s=0.2)  # imports and kernels warm
    cells = [(d, v, c, s) for d in sizes for v in VARIANTS for c in (False, True) for s in seeds]
    task = progress.add_task("close", total=len(cells))
    rows: list[Row] = []
    for days, variant, classes, seed in cells:
        state = synthetic_window(
            500 + seed,
            days,
            variant=variant,  # type: ignore[arg-type]
            with_task_classes=classes,
        )
        report = check_feasibility(state, time_limit_s=5.0)
        row = Row(days, variant, classes, seed, report.is_feasible, {}, {})
        rows.append(row)
        progress.advance(task)
        if report.is_feasible is not True:
            continue
        problem = build_problem(state, by_subject=True)
        t = time.perf_counter()
        new = propose_placement(state, time_limit_s=limit, seed=0)
        row.runtime["new"] = time.perf_counter() - t
        row.counts["new"] = _counts(state, problem, new.placements).key
        t = time.perf_counter()
        old = six_term(state, limit)
        row.runtime["six-term"] = time.perf_counter() - t
        row.counts["six-term"] = _counts(state, problem, old.placements).key
        t = time.perf_counter()
        greedy = balanced_greedy(problem)
        row.runtime["greedy"] = time.perf_counter() - t
        row.counts["greedy"] = _counts(state, problem, greedy).key
        t = time.perf_counter()
        half = six_term(state, limit / 2)
        hill = hill_climb(
            state, problem, half.placements, max(0.0, limit - (time.perf_counter() - t))
        )
        row.runtime["hill"] = time.perf_counter() - t
        row.counts["hill"] = _counts(state, problem, hill).key
        applied = state.copy_state()
        from smartflow_engine.state import Request, relocate

        ok = relocate(
            applied,
            [Request(p.task_id, p.day, p.slot_start) for p in new.placements],
            op="apply_proposal",
            status_after="suggested",
        ).ok
        assert ok
        health = analyze_health(applied, time_limit_s=2.0)
        signal = health.metrics["close_signal"]
        assert (signal["critical"], signal["warning"]) == row.counts["new"], "counts differ"
        floor = signal["floor"]
        row.floor = (floor["critical"], floor["warning"])
        row.floor_blocks_close = floor["proven"] and (floor["critical"] > 0 or floor["warning"] > 1)
        row.best_achievable = signal["best_achievable"]
        placed = sum(p.length for p in new.placements if problem.current.get(p.task_id) is None)
        own = health_floor(
            state,
            "normal",
            pending_periods=placed,
            scope={t for g in problem.groups for t in g.task_ids},
            exact_s=EXACT_FLOOR_S,  # the lexicographic floor too (HealthFloor.least_warning)
            exact_work_s=EXACT_FLOOR_WORK,
        )
        if new.max_slots is not None and own.proven:  # level 1 proven: as many periods
            row.scope_floor = (own.critical, own.warning)
            row.scope_blocks_close = own.critical > 0 or own.warning > 1
            row.scope_meets = own.meets(*row.counts["new"])
    return rows


def _closes(key: tuple[int, int]) -> bool:
    return key[0] == 0 and key[1] <= 1


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "–"


def section(rows: list[Row], quick: bool) -> list[str]:
    lines = [
        "## Closing after the proposal (issue 10)",
        "",
        "Feasible windows whose `analyze_health` closes (`critical=0 && warning<=1`) right "
        "after each method, every method given the same time limit "
        f"({'1' if quick else '2'} s); counts are the exact health counts (checked equal to "
        "`analyze_health` on the applied new proposal). Over the windows the new proposal "
        "does not close: `own floor blocks` = the proven floor of the proposal's own "
        "population (placements of the pending tasks placing as many periods, every other "
        "task where it stands, as `apply_proposal {}` does) shows that none of them "
        "closes; `health floor blocks` = the same with analyze_health's floor, whose "
        "population may also move the suggested and existing study tasks; `at floor` = "
        "the proposal meets its own floor (`HealthFloor.meets`: as few criticals, and as few "
        "criticals + warnings or, lexicographically, as few warnings as those criticals allow: "
        "proven best either way); `above floor` = median of (critical + warning) "
        "− (own floor critical + warning). The machine was shared by several engineers "
        "on 2 cores: runtimes are noisy.",
        "",
        "| days | variant | classes | feasible | new | six-term | greedy | hill | "
        "own floor blocks | health floor blocks | at floor | above floor | new s | "
        "six-term s | hill s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[int, str, bool], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.days, r.variant, r.classes), []).append(r)
    totals = {m: 0 for m in METHODS}
    total_feasible = total_open = total_blocked = total_at = total_health = 0
    for (days, variant, classes), group in sorted(groups.items()):
        feas = [r for r in group if r.feasible]
        closes = {m: sum(_closes(r.counts[m]) for r in feas) for m in METHODS}
        for m in METHODS:
            totals[m] += closes[m]
        open_rows = [r for r in feas if not _closes(r.counts["new"])]
        blocked = sum(r.scope_blocks_close for r in open_rows)
        health_blocked = sum(r.floor_blocks_close for r in open_rows)
        at = sum(r.scope_meets for r in open_rows)
        total_feasible += len(feas)
        total_open += len(open_rows)
        total_blocked += blocked
        total_at += at
        total_health += health_blocked
        above = [sum(r.counts["new"]) - sum(r.scope_floor) for r in open_rows]
        med = {
            m: statistics.median([r.runtime[m] for r in feas]) if feas else 0.0
            for m in ("new", "six-term", "hill")
        }
        lines.append(
            f"| {days} | {variant} | {'yes' if classes else 'no'} | {len(feas)}/{len(group)} | "
            + " | ".join(_pct(closes[m], len(feas)) for m in METHODS)
            + f" | {_pct(blocked, len(open_rows))} | {_pct(health_blocked, len(open_rows))} | "
            f"{_pct(at, len(open_rows))} | "
            f"{statistics.median(above) if above else '–'} | {med['new']:.2f} | "
            f"{med['six-term']:.2f} | {med['hill']:.2f} |"
        )
    lines += [
        "",
        "Totals over feasible windows: "
        + ", ".join(f"{m} closes {_pct(totals[m], total_feasible)}" for m in METHODS)
        + f"; of the {total_open} windows the new proposal leaves open, its own proven floor "
        f"shows closing impossible on {_pct(total_blocked, total_open)} (analyze_health's "
        f"floor, moving the suggested tasks too: {_pct(total_health, total_open)}) and the "
        f"proposal is at its own floor on {_pct(total_at, total_open)}.",
    ]
    both = sum(
        1 for r in rows if r.feasible and _closes(r.counts["hill"]) and not _closes(r.counts["new"])
    )
    lines += [f"Windows the hill climb closes but the new proposal does not: {both}."]
    return lines


def run(quick: bool = False) -> str:
    started = time.perf_counter()
    with Progress(transient=True) as progress:
        rows = bench(quick, progress)
    lines = section(rows, quick)
    lines += [
        "",
        f"_Close benchmark wall time: {time.perf_counter() - started:.0f} s "
        f"({'quick' if quick else 'full'} run)._",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------ --fixed-work (issue 40 item 6)
def _instrument() -> tuple[dict[str, int], Any]:
    """Counters of the evaluator builds, ``health_floor`` and ``max_placeable`` calls made by
    the engine (every module's reference is wrapped); returns them and an undo function."""
    from smartflow_engine.solver import counting

    counts = {"evaluator builds": 0, "floor calls": 0, "max_placeable calls": 0}
    real_init = HealthEvaluator.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        counts["evaluator builds"] += 1
        real_init(self, *args, **kwargs)

    wrapped: list[tuple[Any, str, Any]] = []

    def wrap(function: Any, key: str) -> None:
        def counted(*args: Any, **kwargs: Any) -> Any:
            counts[key] += 1
            return function(*args, **kwargs)

        for module in list(sys.modules.values()):
            name = getattr(module, "__name__", "")
            if not name.startswith("smartflow_engine"):
                continue
            for attr, value in list(vars(module).items()):
                if value is function:
                    wrapped.append((module, attr, value))
                    setattr(module, attr, counted)

    HealthEvaluator.__init__ = init  # type: ignore[method-assign]
    wrap(health_floor, "floor calls")
    wrap(counting.max_placeable, "max_placeable calls")

    def undo() -> None:
        HealthEvaluator.__init__ = real_init  # type: ignore[method-assign]
        for module, attr, value in wrapped:
            setattr(module, attr, value)

    return counts, undo


def fixed_work(
    sizes: tuple[int, ...], seeds: int, limit: float, with_counts: bool, wall: float = 100.0
) -> list[dict[str, Any]]:
    """One first_full proposal per seeded window with the work budgets of a ``limit`` s call
    (``work_limit_s``) under a wall limit of ``wall`` times it (100x: a loaded 2-core machine
    runs the soft phase's screening at a fifth of its speed, and 20x was cut): the placements and the proposal's key are a
    function of the window, so two runs (before and after a change that claims "behaviour
    unchanged", or on a busy machine) must print the same lines."""
    import hashlib

    from smartflow_engine.solver import proposal_key

    propose_placement(synthetic_window(0, 7), time_limit_s=0.2)  # (imports, caches)
    out: list[dict[str, Any]] = []
    for days in sizes:
        for variant in VARIANTS:
            for classes in (False, True):
                for seed in range(seeds):
                    state = synthetic_window(
                        600 + seed,
                        days,
                        variant=variant,  # type: ignore[arg-type]
                        with_task_classes=classes,
                    )
                    counts, undo = _instrument() if with_counts else ({}, None)
                    try:
                        t = time.perf_counter()
                        p = propose_placement(
                            state,
                            time_limit_s=wall * limit,
                            work_limit_s=DEFAULT_CALIBRATION.work_share * limit,
                            seed=0,
                        )
                        runtime = time.perf_counter() - t
                    finally:
                        if undo is not None:
                            undo()
                    text = ";".join(
                        f"{pl.task_id}@{pl.day}.{pl.slot_start}-{pl.slot_end}"
                        for pl in sorted(p.placements, key=lambda pl: pl.task_id)
                    )
                    out.append(
                        {
                            "window": f"{days}d {variant} {'classes' if classes else 'plain'} "
                            f"s{seed}",
                            "key": tuple(round(x, 6) for x in proposal_key(state, p)),
                            "placements": hashlib.sha256(text.encode()).hexdigest()[:12],
                            "wall_limited": p.wall_limited,
                            "runtime": runtime,
                            **dict(counts),
                        }
                    )
    return out


def fixed_work_table(rows: list[dict[str, Any]], with_counts: bool) -> str:
    extra = ["evaluator builds", "floor calls", "max_placeable calls"] if with_counts else []
    head = ["window", "key", "placements", "wall_limited", *extra, "runtime"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r[h]) if h != "runtime" else f"{r[h]:.2f}" for h in head]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------- --upstream (issue 42, phase 2)
@dataclass
class UpstreamRow:
    days: int
    variant: str
    seed: int
    feasible: bool | None
    required: int = 0
    placed: int = 0
    kept: bool = True  # the write path (which refuses every class rule's breach) accepts it
    counts: tuple[int, int] = (0, 0)
    floor: tuple[int, int] | None = None  # analyze_health's proven floor (None: unproven)
    # the exact floor of the schedules placing at least the proposal's pending periods (and
    # keeping its re-planned tasks placed): every schedule placing the most is one of them
    own_floor: tuple[int, int] | None = None
    # the lexicographic floor of the same schedules with the model that holds the item order
    # (run only where the window stays open and neither floor above blocks; None: not run or
    # not proven)
    ordered_floor: tuple[int, int] | None = None
    heavy: int = 0  # heavy adjacency (issue 42 item 4) after the proposal
    runtime: float = 0.0


def bench_upstream(
    quick: bool, progress: Progress, limit_s: float | None = None, replan: bool = True
) -> list[UpstreamRow]:
    """Upstream-shaped windows (the reference system's constraints: half-day blocks, weekdays,
    dates, water-course permission, profiles, item order): every proposal applied through the
    write path, which refuses any breach of a class rule. ``replan``: the proposal re-plans
    the suggested tasks too, as the tool's proposal does in first_full (its scope is then the
    one analyze_health's floor and feasibility read); False: the pending tasks alone."""
    from smartflow_engine.analyzers import analyze_context
    from smartflow_engine.state import Request, relocate

    sizes = (13, 30) if quick else (13, 30, 60)
    seeds = range(1) if quick else range(2)
    from smartflow_engine.tools_adapter.tools.solver import proposal_limit

    propose_placement(synthetic_window(0, 7), time_limit_s=0.2)  # imports and kernels warm
    cells = [(d, v, s) for d in sizes for v in VARIANTS for s in seeds]
    task = progress.add_task("upstream", total=len(cells))
    rows: list[UpstreamRow] = []
    for days, variant, seed in cells:
        state = synthetic_window(500 + seed, days, variant=variant, upstream=True)  # type: ignore[arg-type]
        report = check_feasibility(state, time_limit_s=5.0, include_suggested=replan)
        row = UpstreamRow(days, variant, seed, report.is_feasible, report.required_task_slots)
        rows.append(row)
        progress.advance(task)
        t = time.perf_counter()
        # the tool's default limit for the window's size (2 s up to 30 days, 2.8 s at 60)
        limit = limit_s if limit_s is not None else 1.0 if quick else proposal_limit(days)
        new = propose_placement(state, time_limit_s=limit, seed=0, include_suggested=replan)
        row.runtime = time.perf_counter() - t
        row.placed = sum(p.length for p in new.placements)
        applied = state.copy_state()
        result = relocate(
            applied,
            [Request(p.task_id, p.day, p.slot_start) for p in new.placements],
            op="apply_proposal",
            status_after="suggested",
        )
        row.kept = result.ok
        if not result.ok:
            continue
        health = analyze_health(applied, time_limit_s=2.0)
        signal = health.metrics["close_signal"]
        row.counts = (signal["critical"], signal["warning"])
        floor = signal["floor"]
        row.floor = (floor["critical"], floor["warning"]) if floor["proven"] else None
        ctx = analyze_context(applied)
        row.heavy = ctx.metrics.get("overall", {}).get("heavy_adjacent", 0)
        scope = {t.state_id for t in scope_tasks(state, include_suggested=replan)}
        pending = {t.state_id for t in state.pending_tasks()}
        floor_args: dict[str, Any] = {
            "pending_periods": sum(p.length for p in new.placements if p.task_id in pending),
            "scope": scope,
            "exact_s": EXACT_FLOOR_S,
            "exact_work_s": EXACT_FLOOR_WORK,
        }
        own = health_floor(state, "normal", **floor_args)
        if own.proven:
            row.own_floor = (own.critical, own.warning)
        if _closes(row.counts) or _blocks(row.floor) or _blocks(row.own_floor):
            continue
        held = health_floor(
            state,
            "normal",
            ordered_s=ORDERED_FLOOR_S,
            ordered_work_s=ORDERED_FLOOR_WORK,
            **floor_args,
        )
        if held.proven and any(b["why"].get("kind") == "ordered_days" for b in held.binding):
            lex = held.warning if held.least_warning is None else held.least_warning
            row.ordered_floor = (held.critical, lex)
    return rows


def _blocks(floor: tuple[int, int] | None) -> bool:
    return floor is not None and (floor[0] > 0 or floor[1] > 1)


def upstream_section(
    rows: list[UpstreamRow], quick: bool, limit_s: float | None = None, replan: bool = True
) -> list[str]:
    scope = (
        "re-planning the suggested tasks too (`include_suggested=True`, the scope of "
        "first_full's proposal and of `analyze_health`'s feasibility and floor)"
        if replan
        else "placing the pending tasks alone (`include_suggested=False`)"
    )
    lines = [
        "## Upstream-shaped windows: every proposal keeps every rule (issue 42)",
        "",
        "Seeded `synthetic_window(..., upstream=True)` windows (banned half-day blocks and "
        "weekdays, class dates, water-course permission, profiles, item order), one "
        "`propose_placement` each ("
        + (
            f"{limit_s or 1:g} s"
            if limit_s or quick
            else "the tool's default limit: 2 s up to 30 days, 2.8 s at 60"
        )
        + f") {scope}, applied "
        "through the write path "
        "(`relocate`, which refuses any breach of a class rule: `rules kept`). `all placed` "
        "counts the proven-feasible windows whose proposal places every pending period; "
        "`closes` = `analyze_health` on the applied proposal has `critical=0 && warning<=1`; "
        "`floor blocks` = of the windows left open, those whose proven floor shows closing "
        "impossible: `floor` is `analyze_health`'s on the applied proposal, `exact floor` the "
        "floor with its exact model (`health_floor(..., exact_s=20, exact_work_s=5)`) of the "
        "schedules that place at least the proposal's pending periods (every schedule placing "
        "the most does: its blocking is proven whether or not the maximum is); `order floor` "
        "the lexicographic floor of the same schedules with the model that also holds the "
        "item order (`ordered_s=120, ordered_work_s=45`, `solver/ordered_floor.py`), run only "
        "where the window stays open and neither floor before it blocks ('–': not run, or no "
        "bound of its own); `heavy` = heavy-adjacency pairs after the proposal (profiles' hard "
        "classes). Shared 2-core machine: runtimes are noisy.",
        "",
        "| days | variant | windows | feasible / infeasible / unproven | rules kept | "
        "all placed | closes | "
        "floor blocks | heavy (median) | new s | periods placed / pending | "
        "(critical, warning) after | floor | exact floor | order floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[int, str], list[UpstreamRow]] = {}
    for r in rows:
        groups.setdefault((r.days, r.variant), []).append(r)
    tot = {"n": 0, "feas": 0, "kept": 0, "all": 0, "closes": 0, "open": 0, "blocked": 0}
    for (days, variant), group in sorted(groups.items()):
        feas = [r for r in group if r.feasible]
        kept = sum(r.kept for r in group)
        all_placed = sum(r.placed == r.required for r in feas)
        closes = sum(r.kept and _closes(r.counts) for r in group)
        open_rows = [r for r in group if r.kept and not _closes(r.counts)]
        blocked = sum(
            _blocks(r.floor) or _blocks(r.own_floor) or _blocks(r.ordered_floor) for r in open_rows
        )
        for k, v in (
            ("n", len(group)),
            ("feas", len(feas)),
            ("kept", kept),
            ("all", all_placed),
            ("closes", closes),
            ("open", len(open_rows)),
            ("blocked", blocked),
        ):
            tot[k] += v
        lines.append(
            f"| {days} | {variant} | {len(group)} | {len(feas)} / "
            f"{sum(r.feasible is False for r in group)} / "
            f"{sum(r.feasible is None for r in group)} | {_pct(kept, len(group))} | "
            f"{_pct(all_placed, len(feas))} | {_pct(closes, len(group))} | "
            f"{_pct(blocked, len(open_rows))} | "
            f"{statistics.median([r.heavy for r in group])} | "
            f"{statistics.median([r.runtime for r in group]):.2f} | "
            f"{' '.join(f'{r.placed}/{r.required}' for r in group)} | "
            f"{' '.join(str(r.counts) if r.kept else '–' for r in group)} | "
            f"{' '.join(str(r.floor) if r.floor is not None else '–' for r in group)} | "
            f"{' '.join(str(r.own_floor) if r.own_floor is not None else '–' for r in group)} | "
            f"{' '.join(str(r.ordered_floor) if r.ordered_floor is not None else '–' for r in group)} |"
        )
    lines += [
        "",
        f"Totals: {tot['n']} windows, {tot['feas']} proven feasible; rules kept "
        f"{_pct(tot['kept'], tot['n'])}; every pending period placed on "
        f"{_pct(tot['all'], tot['feas'])} of the feasible ones; closes "
        f"{_pct(tot['closes'], tot['n'])}; of the {tot['open']} left open the proven floor "
        f"shows closing impossible on {_pct(tot['blocked'], tot['open'])}.",
    ]
    return lines


def run_upstream(quick: bool = False, limit_s: float | None = None, replan: bool = True) -> str:
    started = time.perf_counter()
    with Progress(transient=True) as progress:
        rows = bench_upstream(quick, progress, limit_s, replan)
    lines = upstream_section(rows, quick, limit_s, replan)
    lines += ["", f"_Upstream set wall time: {time.perf_counter() - started:.0f} s._"]
    return "\n".join(lines)


def upstream_reorder_ab(
    seeds: int = 6,
    budget_s: float = 0.5,
    flag: str = "reorder_items",
    sizes: tuple[int, ...] = (13, 30),
) -> str:
    """The one search on the upstream windows of ``sizes`` days (seeds 500 and 501), from one
    ordered start each (``keep_order`` of the balanced greedy, no exact chain: the same start in every
    run), at a fixed work budget (deterministic: no clock), without and with the moves a
    ``Neighbourhood`` switch turns on (``flag``: ``reorder_items``, the moves that carry an
    item past its class's neighbours; ``push_items``, their push of the items passed); per
    window and search seed, ``(critical, warning)`` without -> with."""
    from smartflow_engine.solver import moves
    from smartflow_engine.solver.health_search import search_health
    from smartflow_engine.solver.objective import resolve_weights
    from smartflow_engine.solver.order import keep_order

    weights = resolve_weights(None)
    lines = [
        f"| window | (critical, warning) without -> with `{flag}`, seeds 0-{seeds - 1} |",
        "|---|---|",
    ]
    totals = {False: [0, 0, 0], True: [0, 0, 0]}  # criticals, warnings, closes
    soft = {False: 0.0, True: 0.0}  # the weighted soft terms, summed
    tally = [0, 0, 0]  # better, equal, worse
    for days in sizes:
        for variant in VARIANTS:
            for base in (500, 501):
                state = synthetic_window(base, days, variant=variant, upstream=True)  # type: ignore[arg-type]
                problem = build_problem(state, by_subject=True)
                start, _ = keep_order(state, balanced_greedy(problem), exact_s=0.0)
                cells = []
                for seed in range(seeds):
                    keys = {}
                    for on in (False, True):
                        setattr(moves.Neighbourhood, flag, on)
                        try:
                            result = search_health(
                                state, problem, start, seed=seed, budget_s=budget_s,
                                weights=weights,
                            )  # fmt: skip
                        finally:
                            setattr(moves.Neighbourhood, flag, True)
                        keys[on] = (result.counts.critical, result.counts.warning)
                        totals[on][0] += keys[on][0]
                        totals[on][1] += keys[on][1]
                        totals[on][2] += _closes(keys[on])
                        soft[on] += result.soft or 0.0
                    old, new = keys[False], keys[True]
                    tally[0 if new < old else 1 if new == old else 2] += 1
                    cells.append(f"{old} -> {new}")
                lines.append(f"| {days} {variant} s{base} | {' '.join(cells)} |")
    lines += [
        "",
        f"Totals over {sum(tally)} searches: criticals {totals[False][0]} -> "
        f"{totals[True][0]}, warnings {totals[False][1]} -> {totals[True][1]}, closes "
        f"(`critical=0 && warning<=1`) {totals[False][2]} -> {totals[True][2]}, weighted soft "
        f"terms {soft[False]:.0f} -> {soft[True]:.0f}; with the "
        f"`{flag}` better (critical, warning) on {tally[0]}, equal on {tally[1]}, "
        f"worse on {tally[2]}; sign test (better against worse, two-sided) "
        f"p = {sign_test(tally[0], tally[2]):.3g}.",
    ]
    return "\n".join(lines)


def sign_test(better: int, worse: int) -> float:
    """The two-sided sign test's p-value of ``better`` against ``worse`` paired outcomes (ties
    left out): how likely a split at least this uneven is when the change does nothing. The
    sums of criticals and warnings move by the search's chaos alone (a placebo that only draws
    one more random number moved them by 11 criticals and 40 warnings over 96 searches); the
    per-search direction is what this reads."""
    from scipy.stats import binomtest

    n = better + worse
    return 1.0 if n == 0 else float(binomtest(better, n, 0.5).pvalue)


def _arg(name: str, default: str) -> str:
    argv = sys.argv[1:]
    return argv[argv.index(name) + 1] if name in argv else default


if __name__ == "__main__":
    ab_flags = {
        "--reorder-ab": "reorder_items",
        "--push-ab": "push_items",
    }
    if any(a in ab_flags for a in sys.argv[1:]):
        flag = next(ab_flags[a] for a in sys.argv[1:] if a in ab_flags)
        sizes = tuple(int(x) for x in _arg("--sizes", "13,30").split(","))
        print(
            upstream_reorder_ab(
                int(_arg("--seeds", "6")), float(_arg("--limit", "0.5")), flag, sizes
            )
        )
    elif "--upstream" in sys.argv[1:]:
        limit = float(_arg("--limit", "0")) or None  # (default: 1 s quick, 2 s full)
        replan = "--pending-only" not in sys.argv[1:]
        print(run_upstream(quick="--quick" in sys.argv[1:], limit_s=limit, replan=replan))
    elif "--fixed-work" in sys.argv[1:]:
        counted = "--counts" in sys.argv[1:]
        print(
            fixed_work_table(
                fixed_work(
                    tuple(int(x) for x in _arg("--sizes", "13,30,60").split(",")),
                    int(_arg("--seeds", "1")),
                    float(_arg("--limit", "1")),
                    counted,
                    float(_arg("--wall", "100")),
                ),
                counted,
            )
        )
    else:
        print(run(quick="--quick" in sys.argv[1:]))
