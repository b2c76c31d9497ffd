"""Floor benchmark (issue 26 item 5): how tight is the proven health floor?

On the close benchmark's windows (:mod:`benchmarks.bench_close`: seeds 500-501 of
``synthetic_window``, 13, 30, 60 and 120 days, plain, tight and fragmented, with and without
task classes), for every feasible window:

- the *best known* key: the lexicographically least (critical, warning) of two proposals
  (``propose_placement`` at ``apply_proposal {}``'s default limit for the window's days,
  :func:`~smartflow_engine.tools_adapter.tools.solver.proposal_limit`: 2 s up to 30 days,
  4.5 s at 120; seed 0; and at 6 s, seed 1) and of a *reference*: the exact
  model's lexicographically best day patterns realised as a schedule
  (:func:`~smartflow_engine.solver.realise.realise`, 10 s) then polished by the close
  stage's search (``search_health``, 3 s); every candidate places as many periods, and the
  reference is applied through the real write path (``relocate``) and its counts checked
  equal to ``analyze_health``'s;
- the proposal's own floor (its population: the pending tasks placing as many periods, every
  other task where it stands, as ``apply_proposal {}`` does; ``health_floor(..., scope=...)``)
  computed three ways in the same run: ``old`` = the relaxation alone (today's main,
  ``exact_s=0``), ``new 1 s`` and ``new 10 s`` = with the exact model of the per-day rules
  (:mod:`smartflow_engine.solver.health_model`) at those wall-clock limits (1 worker; its
  answers are forgotten between calls, so each runtime is a cold one).

Reported per cell and in total, over the windows whose best known key does not close: the
default-limit proposal's key and whether it meets the floor its own answer states (the user's
"proven best"), the share
where the floor equals the best known key (``HealthFloor.meets``: no schedule of the population
is lexicographically below, so the best known is proven best), the windows where the new floor
is strictly higher than the old one, and the floors' median runtimes. A floor above the best
known key would be a false floor: the run stops with an error if it ever sees one. Run ``python
-m benchmarks.bench_floor [--quick]``; ``--spread`` times the floor with and without
``load_imbalance``'s flow side by side (:func:`spread_cost`).
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from rich.progress import Progress

from smartflow_engine.analyzers import analyze_health
from smartflow_engine.solver import check_feasibility, propose_placement
from smartflow_engine.solver.health_eval import HealthEvaluator
from smartflow_engine.solver.health_search import search_health
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.solver.realise import realise
from smartflow_engine.state import Request, relocate
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.tools.solver import proposal_limit

floors: Any = importlib.import_module("smartflow_engine.solver.health_floor")

VARIANTS = ("plain", "tight", "fragmented")
LIMITS = {"old": 0.0, "new 1 s": 1.0, "new 10 s": 10.0}


@dataclass
class Row:
    days: int
    variant: str
    classes: bool
    seed: int
    feasible: bool
    best: tuple[int, int] = (0, 0)
    proposal: tuple[int, int] = (0, 0)  # the default-limit proposal's
    own_floor_meets: bool = False  # it meets the floor its own answer states
    proposals: tuple[int, int] = (0, 0)  # the better of the two proposals'
    reference: tuple[int, int] | None = None
    floor: dict[str, tuple[int, int, int | None]] = field(default_factory=dict)
    meets: dict[str, bool] = field(default_factory=dict)
    proposal_meets: dict[str, bool] = field(default_factory=dict)  # the proposal at it
    runtime: dict[str, float] = field(default_factory=dict)


def _key(state: Any, scope: set[int], placements: list[Any]) -> tuple[int, int]:
    ev = HealthEvaluator(state, scope)
    ev.set_placements(placements)
    return ev.counts_now().key


def _applied_key(state: Any, placements: list[Any], key: tuple[int, int]) -> None:
    """The placements through the real write path; analyze_health must count ``key``."""
    applied = state.copy_state()
    result = relocate(
        applied,
        [Request(p.task_id, p.day, p.slot_start) for p in placements],
        op="apply_proposal",
        status_after="suggested",
    )
    assert result.ok, f"the reference is not a valid schedule: {result.refusal}"
    counts = analyze_health(applied, check_feasibility=False).issue_counts()
    assert (counts["critical"], counts["warning"]) == key, "counts differ"


def _check(name: str, floor: Any, best: tuple[int, int], where: str) -> None:
    """Stop on a false floor: the best known key below the floor."""
    c, w = best
    ok = c >= floor.critical and c + w >= floor.critical + floor.warning
    if floor.least_warning is not None and c == floor.critical:
        ok = ok and w >= floor.least_warning
    if not ok:
        raise AssertionError(f"false floor ({name}) on {where}: {floor} above {best}")


def bench(quick: bool, progress: Progress) -> list[Row]:
    sizes = (13, 30) if quick else (13, 30, 60, 120)
    seeds = range(1) if quick else range(2)
    long_s = 3.0 if quick else 6.0
    propose_placement(synthetic_window(0, 7), time_limit_s=0.2)  # imports warm
    cells = [(d, v, c, s) for d in sizes for v in VARIANTS for c in (False, True) for s in seeds]
    task = progress.add_task("floor", total=len(cells))
    rows: list[Row] = []
    for days, variant, classes, seed in cells:
        progress.advance(task)
        state = synthetic_window(
            500 + seed,
            days,
            variant=variant,  # type: ignore[arg-type]
            with_task_classes=classes,
        )
        report = check_feasibility(state, time_limit_s=5.0)
        row = Row(days, variant, classes, seed, report.is_feasible is True)
        rows.append(row)
        if not row.feasible:
            continue
        problem = build_problem(state, by_subject=True)
        scope = {t for g in problem.groups for t in g.task_ids}
        keys = []
        placed = None
        for limit, s in ((proposal_limit(days), 0), (long_s, 1)):
            prop = propose_placement(state, time_limit_s=limit, seed=s)
            n = sum(p.length for p in prop.placements if problem.current.get(p.task_id) is None)
            if placed is None:
                placed = n
                key = _key(state, scope, prop.placements)
                row.own_floor_meets = prop.floor is not None and floors.HealthFloor(
                    *prop.floor, least_warning=prop.floor_least_warning
                ).meets(*key)
            if n == placed:
                keys.append(_key(state, scope, prop.placements))
        row.proposal, row.proposals = keys[0], min(keys)
        reference = realise(state, "normal", pending_periods=placed, scope=scope, time_limit_s=10.0)
        if reference is not None:
            polished = search_health(state, problem, reference, budget_s=3.0, seed=0)
            ref = polished.placements
            n = sum(p.length for p in ref if problem.current.get(p.task_id) is None)
            if n == placed:
                row.reference = _key(state, scope, ref)
                _applied_key(state, ref, row.reference)
                keys.append(row.reference)
        row.best = min(keys)
        where = f"{days} days {variant} classes={classes} seed {500 + seed}"
        for name, limit in LIMITS.items():
            floors._EXACT_MEMO.clear()  # a cold answer every time
            t = time.perf_counter()
            floor = floors.health_floor(
                state, "normal", pending_periods=placed, scope=scope, exact_s=limit, num_workers=1
            )
            row.runtime[name] = time.perf_counter() - t
            _check(name, floor, row.best, where)
            row.floor[name] = (floor.critical, floor.warning, floor.least_warning)
            row.meets[name] = floor.meets(*row.best)
            row.proposal_meets[name] = floor.meets(*row.proposal)
        old, new = row.floor["old"], row.floor["new 10 s"]
        if new[0] < old[0] or new[0] + new[1] < old[0] + old[1]:
            raise AssertionError(f"the new floor is below the old one on {where}")
    return rows


def _closes(key: tuple[int, int]) -> bool:
    return key[0] == 0 and key[1] <= 1


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "–"


def _fmt(f: tuple[int, int, int | None]) -> str:
    return f"({f[0]}, {f[1]})" + (f" lex {f[2]}" if f[2] is not None else "")


def _higher(r: Row, name: str) -> bool:
    o, n = r.floor["old"], r.floor[name]
    return n[0] > o[0] or n[0] + n[1] > o[0] + o[1] or (n[2] is not None and n[2] > o[1])


def section(rows: list[Row]) -> list[str]:
    names = list(LIMITS)
    lines = [
        "| days | variant | classes | open | proposal (default limit) | at its own floor | reference | best known (c, w) | "
        "old floor | new floor (10 s) | "
        + " | ".join(f"{n} = best" for n in names)
        + " | new > old | "
        + " | ".join(f"{n} s" for n in names)
        + " |",
        "|---|---|---|---|---|---|---|---|---|---|"
        + "---|" * len(names)
        + "---|"
        + "---|" * len(names),
    ]
    groups: dict[tuple[int, str, bool], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.days, r.variant, r.classes), []).append(r)
    tot_open = 0
    tot_meets = dict.fromkeys(names, 0)
    tot_higher = 0
    runtimes: dict[str, list[float]] = {n: [] for n in names}
    for (days, variant, classes), group in sorted(groups.items()):
        feas = [r for r in group if r.feasible]
        open_rows = [r for r in feas if not _closes(r.best)]
        tot_open += len(open_rows)
        meets = {n: sum(r.meets[n] for r in open_rows) for n in names}
        for n in names:
            tot_meets[n] += meets[n]
            runtimes[n] += [r.runtime[n] for r in feas]
        higher = sum(_higher(r, "new 10 s") for r in open_rows)
        tot_higher += higher
        med = {n: statistics.median([r.runtime[n] for r in feas]) if feas else 0.0 for n in names}
        lines.append(
            f"| {days} | {variant} | {'yes' if classes else 'no'} | "
            f"{len(open_rows)}/{len(feas)} | "
            + (", ".join(str(r.proposal) for r in open_rows) or "–")
            + " | "
            + (", ".join("yes" if r.own_floor_meets else "no" for r in open_rows) or "–")
            + " | "
            + (", ".join(str(r.reference) for r in open_rows) or "–")
            + " | "
            + (", ".join(str(r.best) for r in open_rows) or "–")
            + " | "
            + (", ".join(_fmt(r.floor["old"]) for r in open_rows) or "–")
            + " | "
            + (", ".join(_fmt(r.floor["new 10 s"]) for r in open_rows) or "–")
            + " | "
            + " | ".join(_pct(meets[n], len(open_rows)) for n in names)
            + f" | {higher} | "
            + " | ".join(f"{med[n]:.3f}" for n in names)
            + " |"
        )
    med_all = {n: statistics.median(runtimes[n]) for n in names}
    opened = [r for r in rows if r.feasible and not _closes(r.best)]
    ref_better = sum(
        r.reference is not None and r.reference == r.best < r.proposals for r in opened
    )
    prop_best = sum(r.proposal == r.best for r in opened)
    prop_at = {n: sum(r.proposal_meets[n] for r in opened) for n in ("old", "new 10 s")}
    own = sum(r.own_floor_meets for r in opened)
    lines += [
        "",
        f"Totals over the {tot_open} feasible windows whose best known key does not close: the "
        "floor equals the best known key (proven best) on "
        + ", ".join(f"{n} {_pct(tot_meets[n], tot_open)}" for n in names)
        + f"; the 10 s floor is strictly higher than the old one on {tot_higher}, never lower, "
        "and never above the best known key (checked on every window). The best known key is the "
        f"reference's (strictly below both proposals) on {ref_better} windows and the "
        f"default-limit proposal's own on {prop_best}; that proposal itself is proven best "
        f"(meets the floor) on {_pct(prop_at['old'], tot_open)} with the old floor and "
        f"{_pct(prop_at['new 10 s'], tot_open)} with the new one, and meets the floor its own "
        f"answer states on {_pct(own, tot_open)}. Median floor runtime "
        "over all feasible windows: "
        + ", ".join(f"{n} {med_all[n]:.3f} s" for n in names)
        + " (ratios new/old: "
        + ", ".join(
            f"{n} {med_all[n] / med_all['old']:.0f}x" for n in names[1:] if med_all["old"] > 0
        )
        + ").",
    ]
    return lines


def run(quick: bool = False) -> str:
    started = time.perf_counter()
    with Progress(transient=True) as progress:
        rows = bench(quick, progress)
    lines = section(rows)
    lines += [
        "",
        f"_Floor benchmark wall time: {time.perf_counter() - started:.0f} s "
        f"({'quick' if quick else 'full'} run)._",
    ]
    return "\n".join(lines)


def spread_cost(repeats: int = 3) -> str:
    """The floor with and without ``load_imbalance``'s flow (:mod:`.spread_flow`: each task
    kept to its own periods; without it, the one-pool water filling alone), side by side in one
    process on the same windows: seeds 500-503 of 13-120-day plain windows, upstream-shaped and
    standard, the proposal's population in first_full's scope (every pending period placed);
    per size and kind the median of ``repeats`` calls per window (warm), the ratio, and the
    windows whose floor the flow raised."""
    from smartflow_engine.solver.problem import scope_tasks

    kept = floors._kept_flow
    lines = [
        "| days | windows | median ms without the flow | with it | ratio | floors raised |",
        "|---|---|---|---|---|---|",
    ]
    for days in (13, 30, 60, 120):
        for upstream in (True, False):
            off: list[float] = []
            on: list[float] = []
            raised = 0
            for seed in range(500, 504):
                state = synthetic_window(seed, days, upstream=upstream)
                scope = {t.state_id for t in scope_tasks(state, include_suggested=True)}
                pending = sum(t.need() for t in state.pending_tasks())
                args = {"pending_periods": pending, "scope": scope}
                floors.health_floor(state, **args)  # (warm: the state's caches)
                found = {}
                for flow in (False, True):
                    floors._kept_flow = kept if flow else (lambda pop: None)
                    try:
                        for _ in range(repeats):
                            t0 = time.perf_counter()
                            found[flow] = floors.health_floor(state, **args)
                            (on if flow else off).append(1000 * (time.perf_counter() - t0))
                    finally:
                        floors._kept_flow = kept
                raised += (found[True].critical, found[True].warning) != (
                    found[False].critical,
                    found[False].warning,
                )
            a, b = statistics.median(off), statistics.median(on)
            kind = "upstream" if upstream else "standard"
            lines.append(f"| {days} {kind} | 4 | {a:.1f} | {b:.1f} | {b / a:.2f} | {raised} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if "--spread" in sys.argv[1:]:
        print(spread_cost())
    else:
        print(run(quick="--quick" in sys.argv[1:]))
