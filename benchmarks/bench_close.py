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
``python -m benchmarks.bench_close [--quick]``.
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
from smartflow_engine.solver.problem import Placement, Problem, build_problem
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
        )
        if new.max_slots is not None and own.proven:  # level 1 proven: as many periods
            row.scope_floor = (own.critical, own.warning)
            row.scope_blocks_close = own.critical > 0 or own.warning > 1
    return rows


def _closes(key: tuple[int, int]) -> bool:
    return key[0] == 0 and key[1] <= 1


def _meets(key: tuple[int, int], floor: tuple[int, int]) -> bool:
    return key[0] <= floor[0] and key[0] + key[1] <= floor[0] + floor[1]


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
        "the proposal meets its own floor; `above floor` = median of (critical + warning) "
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
        at = sum(_meets(r.counts["new"], r.scope_floor) for r in open_rows)
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


# ------------------------------------------------------------------ --lns (issue 26 item 1)
def _lex(a: tuple[float, ...], b: tuple[float, ...]) -> int:
    """-1 when ``a`` is lexicographically better (soft terms compared to 1e-9), 1 worse, 0 tie."""
    for x, y in zip(a, b, strict=True):
        if abs(x - y) > 1e-9:
            return -1 if x < y else 1
    return 0


LNS_ON = replace(DEFAULT_CALIBRATION, health_lns_share=0.5)
LNS_OFF = replace(DEFAULT_CALIBRATION, health_lns_share=0.0)
LNS_CONFIGS = {"no LNS": LNS_OFF, "LNS": LNS_ON}


@dataclass
class LnsRow:
    days: int
    variant: str
    classes: bool
    seed: int
    key: dict[str, tuple[float, ...]]  # (unplaced periods, critical, warning, soft)
    above_floor: dict[str, int | None]  # (critical + warning) above the own floor
    floor_met: dict[str, bool]  # the key meets the own (lexicographic) floor
    runtime: dict[str, float]
    steps: dict[str, tuple[int, int, bool]]  # LNS steps run, kept, wall-cut (all searches)


def compare_lns(
    quick: bool, progress: Progress, limit: float, sizes: tuple[int, ...], seeds: int
) -> list[LnsRow]:
    """The proposal (one search, the default) with and without its LNS steps on the same
    seeded windows, each call with the work budgets of a ``limit`` s call (``work_limit_s``)
    under a wall limit of 10x, so the machine's load does not decide where a search stops."""
    from smartflow_engine.solver import placement as placement_module
    from smartflow_engine.solver import proposal_key

    namespace = vars(placement_module)  # (counts the LNS steps of every search it runs)
    real_search = namespace["search_health"]
    seen: list[tuple[int, int, bool]] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        result = real_search(*args, **kwargs)
        seen.append((result.lns_steps, result.lns_accepted, result.lns_cut))
        return result

    namespace["search_health"] = counting
    try:
        propose_placement(synthetic_window(0, 7), time_limit_s=0.2)  # (imports, caches)
        cells = [
            (d, v, c, s)
            for d in sizes
            for v in VARIANTS
            for c in (False, True)
            for s in range(1 if quick else seeds)
        ]
        task = progress.add_task("lns", total=len(cells))
        rows: list[LnsRow] = []
        for days, variant, classes, seed in cells:
            state = synthetic_window(
                600 + seed,
                days,
                variant=variant,  # type: ignore[arg-type]
                with_task_classes=classes,
            )
            problem = build_problem(state, by_subject=True)
            scope = {t for g in problem.groups for t in g.task_ids}
            row = LnsRow(days, variant, classes, seed, {}, {}, {}, {}, {})
            for name, cal in LNS_CONFIGS.items():
                seen.clear()
                t = time.perf_counter()
                p = propose_placement(
                    state,
                    time_limit_s=10.0 * limit,
                    work_limit_s=cal.work_share * limit,
                    seed=0,
                    calibration=cal,
                )
                row.runtime[name] = time.perf_counter() - t
                row.steps[name] = (
                    sum(s for s, _, _ in seen),
                    sum(a for _, a, _ in seen),
                    any(c for _, _, c in seen),
                )
                row.key[name] = proposal_key(state, p)
                placed = sum(
                    pl.length for pl in p.placements if problem.current.get(pl.task_id) is None
                )
                own = health_floor(
                    state, "normal", pending_periods=placed, scope=scope, exact_s=2.0
                )
                if p.critical is None or p.warning is None or not own.proven:
                    row.above_floor[name] = None
                    row.floor_met[name] = False
                else:
                    row.above_floor[name] = p.critical + p.warning - own.critical - own.warning
                    row.floor_met[name] = own.meets(p.critical, p.warning)
            rows.append(row)
            progress.advance(task)
        return rows
    finally:
        namespace["search_health"] = real_search


def lns_section(rows: list[LnsRow], limit: float) -> list[str]:
    old, new = list(LNS_CONFIGS)
    lines = [
        f"### LNS steps on and off, work budgets of a {limit:g} s call",
        "",
        "| days | variant | classes | windows | closes no LNS | closes LNS | wins | losses | "
        "ties | health wins | health losses | at floor no LNS | at floor LNS | "
        "above floor no LNS | above floor LNS | LNS steps (kept) | no LNS s | LNS s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[int, str, bool], list[LnsRow]] = {}
    for r in rows:
        groups.setdefault((r.days, r.variant, r.classes), []).append(r)
    tot = {k: 0 for k in ("n", "co", "cn", "w", "l", "t", "hw", "hl", "fo", "fn", "st", "ac")}
    cut = 0

    def closes(k: tuple[float, ...]) -> bool:
        return k[0] == 0 and k[1] == 0 and k[2] <= 1

    def med(values: list[int | None]) -> str:
        known = [v for v in values if v is not None]
        return f"{statistics.median(known):g}" if known else "–"

    for (days, variant, classes), group in sorted(groups.items()):
        cmp = [_lex(r.key[new], r.key[old]) for r in group]
        hcmp = [_lex(r.key[new][:3], r.key[old][:3]) for r in group]
        counts = {
            "n": len(group),
            "co": sum(closes(r.key[old]) for r in group),
            "cn": sum(closes(r.key[new]) for r in group),
            "w": cmp.count(-1),
            "l": cmp.count(1),
            "t": cmp.count(0),
            "hw": hcmp.count(-1),
            "hl": hcmp.count(1),
            "fo": sum(r.floor_met[old] for r in group),
            "fn": sum(r.floor_met[new] for r in group),
            "st": sum(r.steps[new][0] for r in group),
            "ac": sum(r.steps[new][1] for r in group),
        }
        cut += sum(r.steps[new][2] for r in group)
        for k, v in counts.items():
            tot[k] += v
        lines.append(
            f"| {days} | {variant} | {'yes' if classes else 'no'} | {counts['n']} | "
            f"{counts['co']} | {counts['cn']} | {counts['w']} | {counts['l']} | {counts['t']} | "
            f"{counts['hw']} | {counts['hl']} | {counts['fo']} | {counts['fn']} | "
            f"{med([r.above_floor[old] for r in group])} | "
            f"{med([r.above_floor[new] for r in group])} | {counts['st']} ({counts['ac']}) | "
            f"{statistics.median(r.runtime[old] for r in group):.2f} | "
            f"{statistics.median(r.runtime[new] for r in group):.2f} |"
        )
    all_old = [r.runtime[old] for r in rows]
    all_new = [r.runtime[new] for r in rows]
    lines += [
        "",
        f"Totals over {tot['n']} windows ({limit:g} s budgets): closes {tot['co']} (no LNS) "
        f"against {tot['cn']} (LNS); lexicographic wins {tot['w']}, losses {tot['l']}, ties "
        f"{tot['t']} for LNS; on health alone wins {tot['hw']}, losses {tot['hl']}; at the own "
        f"floor {tot['fo']} against {tot['fn']}; above the own floor: median "
        f"{med([r.above_floor[old] for r in rows])} against "
        f"{med([r.above_floor[new] for r in rows])}. LNS steps {tot['st']}, kept {tot['ac']}, "
        f"windows with a step cut by the wall clock {cut}. Median runtime "
        f"{statistics.median(all_old):.2f} s against {statistics.median(all_new):.2f} s.",
    ]
    return lines


def run_lns(quick: bool, limits: tuple[float, ...], sizes: tuple[int, ...], seeds: int) -> str:
    started = time.perf_counter()
    lines: list[str] = []
    for limit in limits:
        with Progress(transient=True) as progress:
            rows = compare_lns(quick, progress, limit, sizes, seeds)
        lines += [*lns_section(rows, limit), ""]
    lines.append(
        f"_LNS comparison wall time: {time.perf_counter() - started:.0f} s "
        f"({'quick' if quick else 'full'} run)._"
    )
    return "\n".join(lines)


def _arg(name: str, default: str) -> str:
    argv = sys.argv[1:]
    return argv[argv.index(name) + 1] if name in argv else default


if __name__ == "__main__":
    if "--lns" in sys.argv[1:]:
        print(
            run_lns(
                "--quick" in sys.argv[1:],
                tuple(float(x) for x in _arg("--limits", "1,3").split(",")),
                tuple(int(x) for x in _arg("--sizes", "13,30,60").split(",")),
                int(_arg("--seeds", "2")),
            )
        )
    else:
        print(run(quick="--quick" in sys.argv[1:]))
