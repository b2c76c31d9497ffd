"""Ordered-model benchmark (issue 42): the exact maximum under the item order, old and new.

``check_feasibility(state, time_limit_s=L, include_suggested=scope, explain=False)`` on the
upstream-shaped windows ``synthetic_window(500 + seed, days, variant=v, upstream=True)``,
seeds 0-1, variants fragmented / plain / tight, 13 / 30 / 60 days, both scopes
(``include_suggested`` False: the check's own call; True: what ``analyze_health`` re-plans),
at two limits (5 s, the check's default; 2 s, about what ``analyze_health`` gives it). Per
window the exact ordered model (:mod:`smartflow_engine.solver.ordered`, reached when the
counting model's witness cannot keep the order) runs in two formulations in the same run, one
after the other on the same window and limit:

- ``old``: the big-M running frontier (an int var per order group,
  ``start + big * (1 - placed) >= frontier + 1``), the model before this benchmark, kept here
  only as the peer (:class:`BigMOrderedModel`);
- ``new``: :class:`~smartflow_engine.solver.ordered.OrderedModel`, the order-encoded boolean
  frontier with the prefix symmetry of interchangeable items.

Reported: proven or not, ``feasible_slots_bounds`` (best, bound), the counting bound and the
check's wall time; medians and counts of proven per scope and limit. A proven maximum that
differs between the two, or a bound below a best, stops the run with an error (one of them
would be wrong). Run ``python -m benchmarks.bench_ordered [--quick]`` (``--quick``: 13 and 30
days, the 5 s limit only).
"""

from __future__ import annotations

import functools
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from smartflow_engine.solver import feasibility, ordered
from smartflow_engine.solver.ordered import OrderedModel, max_placeable_ordered
from smartflow_engine.state import ScheduleState
from smartflow_engine.state.synthetic import synthetic_window

VARIANTS = ("fragmented", "plain", "tight")
DAYS = (13, 30, 60)
SEEDS = (0, 1)
LIMITS = (5.0, 2.0)


class BigMOrderedModel(OrderedModel):
    """The old formulation of the item order (the peer of the benchmark): a running frontier
    int var per order group, ``F_g >= end`` of each of its items (an unplaced item's end is 0)
    and ``F_g >= F_(g-1)``; an item of group g, when placed, starts after ``F_(g-1)`` through
    a big-M (``start + big * (1 - placed) >= F_(g-1) + 1``). No symmetry, no chain caps, no
    dynamic programme for one class's chain, and CP-SAT's parameters as they were (:func:`~smartflow_engine.solver._cpsat.make_solver`'s)."""

    solver_params: ClassVar[dict[str, int]] = {}
    chain_dp: ClassVar[bool] = False

    def add_precedence(self, state: ScheduleState) -> bool:
        for items in self.items_by_class(state):
            if self._late():
                return False
            self._big_m_frontier(sorted(items))
        return True

    def _big_m_frontier(self, items: list[tuple[int, int]]) -> None:
        weighted = self.cp.LinearExpr.weighted_sum
        frontier: Any = None
        last: int | None = None
        nxt: Any = None
        for order, tid in [*items, (None, None)]:
            if order != last and nxt is not None:
                if frontier is not None:
                    self.model.add(nxt >= frontier)
                frontier = nxt
                nxt = None
            if tid is None:
                break
            if order != last:
                nxt = self.model.new_int_var(0, self.big, f"frontier{tid}")
                last = order
            here = self.chosen[tid]
            vs = [v for v, _ in here]
            start = weighted(vs, [self.index(p.day, p.slot_start) for _, p in here])
            end = weighted(vs, [self.index(p.day, p.slot_end) for _, p in here])
            if frontier is not None:
                self.model.add(start + self.big * (1 - sum(vs)) >= frontier + 1)
            self.model.add(nxt >= end)


MODELS: dict[str, type[OrderedModel]] = {"old": BigMOrderedModel, "new": OrderedModel}


@dataclass(frozen=True)
class Row:
    """One window, scope, limit and model."""

    days: int
    variant: str
    seed: int
    scope: bool
    limit: float
    model: str
    proven: bool
    best: int
    bound: int
    counting: int
    wall_s: float


def measure(
    state: ScheduleState, scope: bool, limit: float, model: type[OrderedModel]
) -> tuple[bool, int, int, float]:
    """(proven, best, bound, wall seconds) of the check with ``model`` as the ordered model,
    the exact chains of :func:`~smartflow_engine.solver.order.keep_order` included (they
    call :func:`~smartflow_engine.solver.ordered.solve_ordered`)."""
    saved = feasibility.max_placeable_ordered, ordered.solve_ordered
    feasibility.max_placeable_ordered = functools.partial(  # type: ignore[assignment]
        max_placeable_ordered, model=model
    )
    ordered.solve_ordered = functools.partial(saved[1], model=model)  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        rep = feasibility.check_feasibility(
            state, time_limit_s=limit, include_suggested=scope, explain=False
        )
        wall = time.perf_counter() - t0
    finally:
        feasibility.max_placeable_ordered, ordered.solve_ordered = saved  # type: ignore[assignment]
    best, bound = rep.feasible_slots_bounds
    return rep.proven, best, bound, wall


def counting_bound(state: ScheduleState, scope: bool) -> int:
    """The counting model's proven bound (the order lifted among the scope's items)."""
    from smartflow_engine.solver.counting import max_placeable
    from smartflow_engine.solver.problem import build_problem

    problem = build_problem(state, include_suggested=scope, subjects=False)
    return max_placeable(problem, time_limit_s=5.0, num_workers=1, witness=False).bound


def collect(quick: bool = False, log: Any = None) -> list[Row]:
    rows: list[Row] = []
    days_set = DAYS[:2] if quick else DAYS
    limits = LIMITS[:1] if quick else LIMITS
    for days in days_set:
        for variant in VARIANTS:
            for seed in SEEDS:
                state = synthetic_window(500 + seed, days, variant=variant, upstream=True)
                for scope in (False, True):
                    count = counting_bound(state, scope)
                    for limit in limits:
                        got: dict[str, tuple[bool, int, int, float]] = {}
                        for name, model in MODELS.items():
                            got[name] = measure(state, scope, limit, model)
                            _, best, bound, _ = got[name]
                            if bound < best:
                                raise RuntimeError(f"{name}: bound {bound} < best {best}")
                            row = Row(
                                days,
                                variant,
                                seed,
                                scope,
                                limit,
                                name,
                                *got[name][:3],
                                count,
                                got[name][3],
                            )
                            rows.append(row)
                            if log:
                                log(rows[-1])
                        _check_agree(got, days, variant, seed)
    return rows


def _check_agree(got: dict[str, tuple[bool, int, int, float]], *where: Any) -> None:
    """Two proven answers differ, or one proves a maximum above the other's bound: an error."""
    for a, b in ((got["old"], got["new"]), (got["new"], got["old"])):
        if a[0] and (a[1] > b[2] or (b[0] and a[1] != b[1])):
            raise RuntimeError(f"old and new disagree on {where}: {got}")


def _cell(r: Row) -> str:
    mark = "✓" if r.proven else "·"
    return f"{mark} ({r.best}, {r.bound}) {r.wall_s:.2f}s"


def render(rows: list[Row], started: str) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    load = os.getloadavg()
    out = [
        "# Ordered-model benchmark (issue 42)",
        "",
        f"Run {started} UTC, commit `{commit}` (+ the working tree), {platform.machine()} "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, load average at the end "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (shared machine: ratios are side by "
        "side, same window and limit, old then new).",
        "",
        "`check_feasibility(state, time_limit_s=L, include_suggested=scope, explain=False)`; "
        "cell: ✓ proven / · unproven, `feasible_slots_bounds` (best, bound), wall time of the "
        "check. `count`: the counting model's bound (the order lifted).",
        "",
    ]
    keys = sorted({(r.scope, r.limit) for r in rows}, key=lambda k: (k[0], -k[1]))
    summary = [
        "| scope | limit | windows | proven old | proven new | median wall old | "
        "median wall new | median wall ratio new/old | sum of (bound - best) old | new |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for scope, limit in keys:
        sel = [r for r in rows if r.scope == scope and r.limit == limit]
        old = [r for r in sel if r.model == "old"]
        new = [r for r in sel if r.model == "new"]
        ratios = [n.wall_s / o.wall_s for o, n in zip(old, new, strict=True)]
        summary.append(
            f"| include_suggested={scope} | {limit:g} s | {len(old)} | "
            f"{sum(r.proven for r in old)} | {sum(r.proven for r in new)} | "
            f"{statistics.median(r.wall_s for r in old):.2f} s | "
            f"{statistics.median(r.wall_s for r in new):.2f} s | "
            f"{statistics.median(ratios):.2f} | {sum(r.bound - r.best for r in old)} | "
            f"{sum(r.bound - r.best for r in new)} |"
        )
    out += ["## Summary", "", *summary, ""]
    for scope, limit in keys:
        out += [
            f"## include_suggested={scope}, {limit:g} s",
            "",
            "| days | variant | seed | count | old | new |",
            "|---|---|---|---|---|---|",
        ]
        sel = [r for r in rows if r.scope == scope and r.limit == limit]
        for o, n in zip(sel[::2], sel[1::2], strict=True):
            out.append(
                f"| {o.days} | {o.variant} | {o.seed} | {o.counting} | {_cell(o)} | {_cell(n)} |"
            )
        out.append("")
    return "\n".join(out)


def run(quick: bool = False) -> str:
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    rows = collect(quick, log=lambda r: print(r, file=sys.stderr, flush=True))
    return render(rows, started)


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
