"""Large-neighbourhood steps of the one search: an exact CP-SAT model of the health rules over a
few days (issue 26 item 1).

Single moves and swaps stall on plateaus where only a re-plan of several tasks at once helps
(a day over its utilisation band whose blocks only fit elsewhere once another day is
re-arranged; a day without a buffer that needs two blocks to trade days). A step here picks a
few days (:func:`choose_neighbourhood`: a day with an issue and days that can take its tasks,
a seeded choice), lifts the movable study tasks of the search's scope standing on them, and
places them again on those days with :func:`lns_step`, a CP-SAT model that minimises the
``(critical, warning)`` issues of the health rules *as they change* with those days, every
other day held fixed:

- the day rules, exactly: ``day_utilization`` by the day's load and ``context_switch`` by its
  switches and study periods (the tables of :mod:`.health_eval`, from the shared judgement);
- the window rules read from the window's sums (:func:`..health_facts.overall_metrics`): the
  days without a buffer (a period is usable when some run of ``MIN_USABLE`` free periods
  holds it; a day has a buffer with ``MIN_BUFFER`` usable ones), the usable periods (the
  fragmentation rate), the loads' sum of squares (their standard deviation) and range;
- the subject rules (:func:`..health_facts.subject_metrics`): a subject's presence on the
  chosen days (its largest gap, the other days' presence fixed) and its per-day periods (the
  concentration's sum of squares).

Each window or subject rule is judged by :func:`..health_facts.judge` on its metric row; the
model never states a threshold of its own. A quantity (a sum of squares, the usable periods,
...) is cut into the intervals where no condition of the rules reading it changes truth value,
so a rule's severity is a constant on every combination of intervals (and presence patterns).
The objective is ``critical``, then ``warning`` (weights that keep the order), then the tasks
moved away from where they stood (least change). The current places are the solver's hint.

Each task takes one block of its length at an allowed start of its class (its class's days and
banned periods) on one of the chosen days, in periods no fixed task holds (or stays where it
stands); guests in host blocks stay fixed, and a task hosting a guest is not lifted. The
model is a local view (the rules of days outside the step are constants); the caller judges the
result with the incremental evaluator on the whole window and keeps it only when the key got
better (:func:`.health_search.search_health`).

Every solve has a wall-clock limit (model building included), explicit ``num_workers``, and with a
work budget a deterministic time, so one worker gives the same answer for a seed unless the
wall clock stopped it (``wall_limited``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..health_facts import (
    MIN_BUFFER,
    MIN_USABLE,
    judge,
    level_rules,
    overall_metrics,
    severe_counts,
    subject_metrics,
)
from ..rules import Cond, Rule
from ._cpsat import cp_model, make_solver, status_of
from .health_eval import HealthEvaluator
from .problem import Placement, Problem

# a quantity with more values than this is not modelled (its rules are left to the evaluator)
MAX_VALUES = 5000


@dataclass(frozen=True)
class LnsStep:
    """One step's answer. ``placements``: the new place of every lifted task (``None`` when
    the model gave no solution); ``days`` and ``freed``: the neighbourhood; ``status``: CP-SAT's
    (``skipped`` when nothing could be lifted, ``unknown`` when building ran out of time);
    ``proven``: the model's optimum was proven; ``wall_limited``: the wall clock (not the
    deterministic time) stopped it; ``model_key``: the model's (critical, warning) of the issues
    it sees, the constants of the other days left out; ``start_key``: the same of the start;
    ``det_time``: the deterministic time the solve used (what a caller charges to its work
    budget: the same for a seed on one worker)."""

    placements: dict[int, Placement] | None
    days: tuple[int, ...]
    freed: tuple[int, ...]
    status: str
    proven: bool
    wall_limited: bool
    model_key: tuple[int, int] | None = None
    start_key: tuple[int, int] | None = None
    runtime_s: float = 0.0
    det_time: float = 0.0  # CP-SAT's deterministic time (the same for a seed on one worker)


def liftable(ev: HealthEvaluator, problem: Problem, days: Sequence[int]) -> list[int]:
    """The scope tasks an LNS step may lift from ``days``: placed there in a free period (not a
    guest), of a subject, hosting no guest, of one of ``problem``'s groups."""
    group_of = problem.group_of()
    wanted = set(days)
    out = []
    for tid, pl in sorted(ev.placed_scope.items()):
        if pl.day not in wanted or pl.embed_host is not None or tid not in group_of:
            continue
        if ev.code_of_task[tid] == 0:
            continue
        if ev.guest[pl.day - 1, pl.slot_start - 1 : pl.slot_end].any():
            continue
        out.append(tid)
    return out


def choose_neighbourhood(
    ev: HealthEvaluator,
    problem: Problem,
    rng: np.random.Generator,
    max_days: int,
    max_tasks: int,
) -> tuple[list[int], list[int]]:
    """(days, tasks) of one step, drawn with ``rng``: an anchor day with a day issue or without
    a buffer that lifting its tasks could give it (else one with guidance slack, else any day
    with tasks to lift), then up to ``max_days - 1``
    days its tasks' classes allow: half the time a second day with an issue, and the lightest
    (with noise); the liftable tasks on those days, at most ``max_tasks`` (the anchor's
    first)."""
    n = ev.num_days
    on_day: dict[int, list[int]] = {}
    for tid in liftable(ev, problem, range(1, n + 1)):
        on_day.setdefault(ev.placed_scope[tid].day, []).append(tid)

    def buffer_possible(day: int) -> bool:
        """Lifting the day's tasks leaves it a buffer (else its lack is the fixed content's)."""
        row = ev.owner[day - 1].copy()
        for t in on_day.get(day, []):
            pl = ev.placed_scope[t]
            row[pl.slot_start - 1 : pl.slot_end] = 0
        run = usable = 0
        for v in [*row.tolist(), 1]:
            if v == 0:
                run += 1
                continue
            usable += run if run >= MIN_USABLE else 0
            run = 0
        return usable >= MIN_BUFFER

    issue = [bool(c or w) for c, w in ev.day_cw.tolist()]
    fixable = [
        d
        for d in sorted(on_day)
        if issue[d - 1] or (ev.day_usable[d - 1] < MIN_BUFFER and buffer_possible(d))
    ]
    slack = [d for d in sorted(on_day) if ev.day_slack[d - 1] > 0]
    anchors = fixable or slack or sorted(on_day)
    if not anchors:
        return [], []
    anchor = anchors[int(rng.integers(len(anchors)))]
    group_of = problem.group_of()
    allowed: set[int] = set()
    for tid in on_day[anchor]:
        rule = problem.groups[group_of[tid]].rule
        allowed |= {d for d in range(1, n + 1) if rule.allows_day(d, n)}
    allowed.discard(anchor)
    others = sorted(allowed)
    picked: list[int] = []
    bad_others = [d for d in anchors if d in allowed]
    if bad_others and max_days >= 3 and rng.random() < 0.5:  # a second day with an issue
        picked.append(bad_others[int(rng.integers(len(bad_others)))])
    light = [d for d in others if d not in picked]
    if light:
        # the light days take the tasks (a seeded choice among the lightest)
        score = np.array([float(ev.day_total[d - 1]) / ev.spd for d in light])
        score += 0.25 * rng.random(len(light))
        order = np.argsort(score, kind="stable").tolist()
        picked += [light[i] for i in order[: max(0, max_days - 1 - len(picked))]]
    days = sorted([anchor, *picked])
    tasks = list(on_day[anchor])
    rest = [t for d in days if d != anchor for t in on_day.get(d, [])]
    order = rng.permutation(len(rest)).tolist()
    tasks += [rest[i] for i in order]
    return days, sorted(tasks[:max_tasks])


# ------------------------------------------------------------------------------ encodings


def _intervals(lo: int, hi: int, signature: Callable[[int], tuple[bool, ...]]) -> list[list[int]]:
    """``[lo, hi]`` cut where ``signature`` changes: ``[first, last]`` of each piece."""
    out: list[list[int]] = []
    prev: tuple[bool, ...] | None = None
    for v in range(lo, hi + 1):
        sig = signature(v)
        if prev is None or sig != prev:
            out.append([v, v])
            prev = sig
        else:
            out[-1][1] = v
    return out


def _conds(rules: Sequence[Rule], metrics: set[str]) -> list[Cond]:
    return [c for r in rules for b in r.bands for c in b.conds if c.metric in metrics]


def _reads(r: Rule) -> set[str]:
    return {c.metric for b in r.bands for c in b.conds}


class _Model:
    """The CP-SAT model of one step (see the module docstring)."""

    def __init__(self) -> None:
        self.cp = cp_model()
        self.m = self.cp.CpModel()
        self.crit: list[Any] = []
        self.warn: list[Any] = []
        self.max_crit = 0
        self.max_warn = 0

    def boolean(self, name: str) -> Any:
        return self.m.NewBoolVar(name)

    def and_(self, a: Any, b: Any, name: str) -> Any:
        """``a and b`` of two 0/1 values (ints or literals)."""
        if isinstance(a, int) and isinstance(b, int):
            return int(a and b)
        if isinstance(a, int):
            return b if a else 0
        if isinstance(b, int):
            return a if b else 0
        y = self.boolean(name)
        self.m.Add(y <= a)
        self.m.Add(y <= b)
        self.m.Add(y >= a + b - 1)
        return y

    def one_hot(self, expr: Any, values: Sequence[int], name: str) -> dict[int, Any]:
        """Literals, one per value of ``values``, exactly one true, ``expr`` equal to it."""
        if len(values) == 1:
            if not isinstance(expr, int):
                self.m.Add(expr == values[0])
            return {values[0]: 1}
        out = {v: self.boolean(f"{name}_{v}") for v in values}
        self.m.AddExactlyOne(list(out.values()))
        self.m.Add(expr == sum(v * b for v, b in out.items()))
        return out

    def pieces(self, expr: Any, pieces: Sequence[Sequence[int]], name: str) -> list[Any]:
        """Literals, one per interval of ``pieces``, exactly one true, ``expr`` inside it."""
        if len(pieces) == 1:
            if not isinstance(expr, int):
                self.m.Add(expr >= pieces[0][0])
                self.m.Add(expr <= pieces[0][1])
            return [1]
        out = [self.boolean(f"{name}_{i}") for i in range(len(pieces))]
        self.m.AddExactlyOne(out)
        for b, (lo, hi) in zip(out, pieces, strict=True):
            self.m.Add(expr >= lo).OnlyEnforceIf(b)
            self.m.Add(expr <= hi).OnlyEnforceIf(b)
        return out

    def cost(self, table: Mapping[tuple[Any, ...], tuple[int, int]], name: str) -> None:
        """Issues as a function of a combination of literals: ``table`` maps a tuple of
        literals (all true) to its (critical, warning); the combinations are exclusive and one
        holds. Adds a critical and a warning term bounded below by the combination's figures
        (minimised, they take them)."""
        top_c = max((c for c, _ in table.values()), default=0)
        top_w = max((w for _, w in table.values()), default=0)
        for which, top, sink in ((0, top_c, self.crit), (1, top_w, self.warn)):
            if top == 0:
                continue
            var = self.m.NewIntVar(0, top, f"{name}_{'cw'[which]}")
            for lits, cw in table.items():
                if cw[which] == 0:
                    continue
                live = [lit for lit in lits if not isinstance(lit, int)]
                if any(isinstance(lit, int) and not lit for lit in lits):
                    continue
                self.m.Add(var >= cw[which] * (sum(live) - len(live) + 1))
            sink.append(var)
            if which == 0:
                self.max_crit += top
            else:
                self.max_warn += top


def _starts(
    own: np.ndarray, banned: tuple[int, ...], duration: int, spd: int
) -> list[int]:  # 1-based starts of a block in free, allowed periods of one day
    ban = set(banned)
    out = []
    for s in range(1, spd - duration + 2):
        if any(own[p - 1] != 0 or p in ban for p in range(s, s + duration)):
            continue
        out.append(s)
    return out


def lns_step(
    ev: HealthEvaluator,
    problem: Problem,
    days: Sequence[int],
    tasks: Sequence[int] | None = None,
    *,
    time_limit_s: float,
    num_workers: int = 1,
    seed: int = 0,
    deterministic_time: float | None = None,
    pin: Mapping[int, Placement] | None = None,
) -> LnsStep:
    """Re-place the liftable ``tasks`` (default: every liftable task) standing on ``days`` by
    the exact model of the health rules over those days (module docstring); ``ev`` holds the
    current placement and is left as it was. ``time_limit_s`` bounds the whole call, building
    included; ``deterministic_time`` bounds the solve's deterministic time. ``pin`` (for tests
    and diagnostics): lifted tasks held at the given places (the model then scores that
    placement)."""
    started = time.perf_counter()
    deadline = started + time_limit_s
    days = sorted(set(days))
    ok = set(liftable(ev, problem, days))
    freed = sorted(ok if tasks is None else ok & set(tasks))
    if not freed or not days:
        return LnsStep(None, tuple(days), tuple(freed), "skipped", False, False)

    def out_of_time() -> LnsStep:
        return LnsStep(
            None,
            tuple(days),
            tuple(freed),
            "unknown",
            False,
            True,
            runtime_s=time.perf_counter() - started,
        )

    spd, n = ev.spd, ev.num_days
    code = ev.code_of_task
    group_of = problem.group_of()
    here = {t: ev.placed_scope[t] for t in freed}
    rows = {d: ev.owner[d - 1].copy() for d in days}
    for pl in here.values():
        rows[pl.day][pl.slot_start - 1 : pl.slot_end] = 0
    guests = {d: ev.guest[d - 1] for d in days}
    mdl = _Model()
    m = mdl.m

    # ---------------------------------------------------------------- placement variables
    x: dict[tuple[int, int, int], Any] = {}
    for t in freed:
        g = problem.groups[group_of[t]]
        opts = []
        for d in days:
            if not g.rule.allows_day(d, n):
                continue
            for s in _starts(rows[d], g.rule.banned, g.duration, spd):
                opts.append((d, s))
        cur = (here[t].day, here[t].slot_start)
        if cur not in opts:  # where it stands is always kept possible
            opts.append(cur)
        for d, s in opts:
            x[t, d, s] = mdl.boolean(f"x{t}_{d}_{s}")
        m.AddExactlyOne([x[t, d, s] for d, s in opts])
        if pin is not None and t in pin:
            m.Add(x[t, pin[t].day, pin[t].slot_start] == 1)
        for d, s in opts:
            m.AddHint(x[t, d, s], int((d, s) == cur))
    length = {t: here[t].length for t in freed}
    # Tasks alike (one group, one subject) are interchangeable: their places are ordered as
    # they stand now (the current placement stays a solution), which removes symmetric ones.
    alike: dict[tuple[int, int], list[int]] = {}
    for t in freed:
        alike.setdefault((group_of[t], code[t]), []).append(t)
    for twins in alike.values():
        if len(twins) < 2:
            continue
        twins.sort(key=lambda t: (here[t].day, here[t].slot_start))
        pos = {
            t: sum((d * (spd + 1) + s) * v for (u, d, s), v in x.items() if u == t) for t in twins
        }
        for a, b in itertools.pairwise(twins):
            m.Add(pos[a] < pos[b])
    days_of = {t: {d for (u, d, _) in x if u == t} for t in freed}
    covers: dict[tuple[int, int], list[tuple[int, Any]]] = {}  # (day, period) -> (task, x)
    for (t, d, s), var in x.items():
        for p in range(s, s + length[t]):
            covers.setdefault((d, p), []).append((t, var))
    if time.perf_counter() > deadline:
        return out_of_time()

    # ---------------------------------------------------------------- per day
    codes_freed = sorted({code[t] for t in freed})
    util_cw, ctx_cw = _tables(ev)
    loads: dict[int, Any] = {}
    load_hot: dict[int, dict[int, Any]] = {}
    usable: dict[int, Any] = {}
    nobuf: dict[int, Any] = {}
    per_subject: dict[tuple[int, int], tuple[int, dict[int, Any]]] = {}  # (day, code)
    fixed_load: dict[int, int] = {}
    load_top: dict[int, int] = {}
    for d in days:
        own, gst = rows[d], guests[d]
        fixed_load[d] = int(np.count_nonzero(own))
        fixed_code = [
            code[int(gst[p])] if gst[p] else code[int(own[p])] if own[p] else 0 for p in range(spd)
        ]
        occ: list[Any] = []  # per period (0-based): 1, 0 or the literal "a lifted task holds it"
        z: list[dict[int, Any]] = []  # per period: code -> 0/1 or literal
        for p in range(spd):
            if own[p]:
                occ.append(1)
                z.append({fixed_code[p]: 1} if fixed_code[p] else {})
                continue
            cov = covers.get((d, p + 1), [])
            if not cov:
                occ.append(0)
                z.append({})
                continue
            m.AddAtMostOne([v for _, v in cov])
            by_code: dict[int, list[Any]] = {}
            for t, v in cov:
                by_code.setdefault(code[t], []).append(v)
            zp: dict[int, Any] = {}
            for k, vs in by_code.items():
                if len(vs) == 1:
                    zp[k] = vs[0]
                else:
                    lit = mdl.boolean(f"z{d}_{p}_{k}")
                    m.Add(lit == sum(vs))
                    zp[k] = lit
            if len(zp) == 1:
                occ.append(next(iter(zp.values())))
            else:
                lit = mdl.boolean(f"o{d}_{p}")
                m.Add(lit == sum(zp.values()))
                occ.append(lit)
            z.append(zp)
        # load: the fixed load plus the lifted tasks' periods
        added = sum(o for o in occ if not isinstance(o, int))
        most = sum(1 for o in occ if not isinstance(o, int))
        top = min(most, sum(length[t] for t in freed if d in days_of[t]))
        hot = mdl.one_hot(added, list(range(top + 1)), f"a{d}")
        load_hot[d] = hot
        load_var = m.NewIntVar(fixed_load[d], fixed_load[d] + top, f"load{d}")
        m.Add(load_var == fixed_load[d] + added)
        loads[d] = load_var
        load_top[d] = fixed_load[d] + top
        # usable periods: in some run of MIN_USABLE free periods
        free = [1 - o for o in occ]
        windows: list[Any] = []
        for j in range(spd - MIN_USABLE + 1):
            part = free[j : j + MIN_USABLE]
            if any(isinstance(f, int) and f == 0 for f in part):
                windows.append(0)
            elif all(isinstance(f, int) for f in part):
                windows.append(1)
            else:
                w = mdl.boolean(f"w{d}_{j}")
                for f in part:
                    m.Add(w <= f)
                m.Add(w >= sum(part) - (MIN_USABLE - 1))
                windows.append(w)
        use: list[Any] = []
        for p in range(spd):
            ws = [
                windows[j] for j in range(max(0, p - MIN_USABLE + 1), min(p, len(windows) - 1) + 1)
            ]
            if any(isinstance(w, int) and w == 1 for w in ws):
                use.append(1)
                continue
            live = [w for w in ws if not isinstance(w, int)]
            if not live:
                use.append(0)
            elif len(live) == 1:
                use.append(live[0])
            else:
                u = mdl.boolean(f"u{d}_{p}")
                for w in live:
                    m.Add(u >= w)
                m.Add(u <= sum(live))
                use.append(u)
        usable[d] = sum(use)
        nb = mdl.boolean(f"nobuf{d}")
        m.Add(usable[d] >= MIN_BUFFER).OnlyEnforceIf(nb.Not())
        m.Add(usable[d] <= MIN_BUFFER - 1).OnlyEnforceIf(nb)
        nobuf[d] = nb
        # switches of the study layer
        switch_terms: list[Any] = []
        for p in range(spd - 1):
            za, zb = z[p], z[p + 1]
            sa, sb = _present(occ[p], za, own[p]), _present(occ[p + 1], zb, own[p + 1])
            if isinstance(occ[p], int) and isinstance(occ[p + 1], int):
                ca = next(iter(za), 0)
                cb = next(iter(zb), 0)
                switch_terms.append(int(bool(ca and cb and ca != cb)))
                continue
            same_terms = [mdl.and_(za[k], zb[k], f"s{d}_{p}_{k}") for k in za.keys() & zb.keys()]
            same = sum(same_terms) if same_terms else 0
            if (isinstance(sa, int) and not sa) or (isinstance(sb, int) and not sb):
                continue
            sw = mdl.boolean(f"sw{d}_{p}")
            m.Add(sw <= sa)
            m.Add(sw <= sb)
            m.Add(sw <= 1 - same)
            m.Add(sw >= sa + sb - 1 - same)
            switch_terms.append(sw)
        sw_expr = sum(switch_terms)
        sw_hot = mdl.one_hot(sw_expr, list(range(spd)), f"swc{d}")
        fixed_occ = sum(1 for p in range(spd) if own[p] and fixed_code[p])
        # day_utilization by the load; context rules by (switches, study periods)
        mdl.cost({(lit,): util_cw[fixed_load[d] + v] for v, lit in hot.items()}, f"util{d}")
        table: dict[tuple[Any, ...], tuple[int, int]] = {}
        for v, la in hot.items():
            occupied = fixed_occ + v
            for s, ls in sw_hot.items():
                if occupied:
                    table[la, ls] = ctx_cw[min(s, spd)][min(occupied, spd)]
        mdl.cost(table, f"ctx{d}")
        # subject periods per day
        for k in codes_freed:
            fixed_k = sum(1 for p in range(spd) if own[p] and fixed_code[p] == k)
            var_terms = [zp[k] for zp in z if k in zp and not isinstance(zp[k], int)]
            top_k = min(len(var_terms), sum(length[t] for t in freed if code[t] == k))
            per_subject[d, k] = (
                fixed_k,
                mdl.one_hot(
                    sum(var_terms) if var_terms else 0, list(range(top_k + 1)), f"n{d}_{k}"
                ),
            )
        if time.perf_counter() > deadline:
            return out_of_time()

    # ---------------------------------------------------------------- window rules
    rules = level_rules(ev.level)
    other = [f for i, f in enumerate(ev.days) if i + 1 not in days]
    total = int(sum(f.total for f in ev.days))
    free_total = n * spd - total
    q_other = sum(f.total * f.total for f in other)
    u_other = sum(f.usable for f in other)
    nb_other = sum(1 for f in other if f.usable < MIN_BUFFER)
    lo_other = min((f.total for f in other), default=None)
    hi_other = max((f.total for f in other), default=None)
    q_expr = q_other + sum(
        (fixed_load[d] + v) ** 2 * lit for d in days for v, lit in load_hot[d].items()
    )
    q_lo = q_other + sum(min((fixed_load[d] + v) ** 2 for v in load_hot[d]) for d in days)
    q_hi = q_other + sum(max((fixed_load[d] + v) ** 2 for v in load_hot[d]) for d in days)
    top_load = max(load_top.values())
    low_load = min(fixed_load[d] for d in days)
    lmax = m.NewIntVar(min(low_load, hi_other or 0), max(top_load, hi_other or 0), "lmax")
    lmin = m.NewIntVar(min(low_load, lo_other if lo_other is not None else spd), spd, "lmin")
    m.AddMaxEquality(lmax, [loads[d] for d in days] + ([hi_other] if hi_other is not None else []))
    m.AddMinEquality(lmin, [loads[d] for d in days] + ([lo_other] if lo_other is not None else []))
    r_expr = lmax - lmin
    quantities: dict[str, tuple[Any, int, int]] = {
        "load_std_dev": (q_expr, q_lo, q_hi),
        "load_range": (r_expr, 0, spd),
        "days_without_buffer": (nb_other + sum(nobuf.values()), nb_other, nb_other + len(days)),
        "fragmentation_rate": (
            u_other + sum(usable.values()),
            u_other,
            u_other + len(days) * spd,
        ),
    }
    current = overall_metrics(n, ev.sums, ev.hist)

    def row_of(values: Mapping[str, int]) -> dict[str, Any]:
        sums = (
            total,
            values.get("load_std_dev", ev.sums[1]),
            free_total,
            values.get("fragmentation_rate", ev.sums[3]),
            values.get("days_without_buffer", ev.sums[4]),
        )
        row = overall_metrics(n, sums, ev.hist)
        row["load_range"] = values.get("load_range", current["load_range"])
        return row

    pieces_of: dict[str, tuple[list[list[int]], list[Any]]] = {}
    for r in rules.overall:
        reads = sorted(_reads(r) & quantities.keys())
        if not reads or len(reads) > 2 or _reads(r) - quantities.keys():
            continue
        for q in reads:
            if q in pieces_of:
                continue
            expr, lo, hi = quantities[q]
            if hi - lo > MAX_VALUES:
                break
            conds = _conds(rules.overall, {q})
            ivs = _intervals(lo, hi, _signature(row_of, q, conds))
            pieces_of[q] = (ivs, mdl.pieces(expr, ivs, f"q_{q}"))
        if any(q not in pieces_of for q in reads):
            continue
        table = {}
        for combo in itertools.product(*(range(len(pieces_of[q][0])) for q in reads)):
            values = {q: pieces_of[q][0][i][0] for q, i in zip(reads, combo, strict=True)}
            lits = tuple(pieces_of[q][1][i] for q, i in zip(reads, combo, strict=True))
            table[lits] = severe_counts(judge((r,), row_of(values)))
        mdl.cost(table, f"overall_{r.rule}")

    # ---------------------------------------------------------------- subject rules
    for k in codes_freed:
        sd = ev.subject_days[k]
        daily_other = {dd: v for dd, v in sd.daily.items() if dd not in days}
        s_other = sum(v * v for v in daily_other.values())
        blocks = int(ev.fixed_blocks[k] + ev.scope_blocks[k])
        s_expr = s_other + sum(
            (per_subject[d, k][0] + v) ** 2 * lit
            for d in days
            for v, lit in per_subject[d, k][1].items()
        )
        s_lo = s_other + sum(
            min((per_subject[d, k][0] + v) ** 2 for v in per_subject[d, k][1]) for d in days
        )
        s_hi = s_other + sum(
            max((per_subject[d, k][0] + v) ** 2 for v in per_subject[d, k][1]) for d in days
        )
        if s_hi - s_lo > MAX_VALUES:
            continue
        # presence patterns on the chosen days
        options: list[tuple[int, ...]] = []
        for d in days:
            fixed_k, hot = per_subject[d, k]
            if fixed_k:
                options.append((1,))
            elif set(hot) == {0}:
                options.append((0,))
            else:
                options.append((0, 1))
        patterns = list(itertools.product(*options))
        pat_lits: list[Any]
        if len(patterns) == 1:
            pat_lits = [1]
        else:
            pat_lits = [mdl.boolean(f"pat{k}_{i}") for i in range(len(patterns))]
            m.AddExactlyOne(pat_lits)
            for j, d in enumerate(days):
                fixed_k, hot = per_subject[d, k]
                if len(options[j]) == 1:
                    continue
                present = 1 - hot[0]
                m.Add(
                    present
                    == sum(lit for lit, pat in zip(pat_lits, patterns, strict=True) if pat[j])
                )

        def gap_of(pat: tuple[int, ...], daily_other: dict[int, int] = daily_other) -> int | None:
            present = sorted([*daily_other, *(d for d, on in zip(days, pat, strict=True) if on)])
            return max((b - a - 1 for a, b in itertools.pairwise(present)), default=None)

        subj_row = _SubjectRow(sd.used, blocks, n, ev.budget_total[k], ev.end_day[k])
        conds = _conds(rules.subject, {"concentration"})
        ivs = _intervals(s_lo, s_hi, subj_row.signature(conds))
        s_lits = mdl.pieces(s_expr, ivs, f"sq{k}")
        table = {}
        for pat, pl in zip(patterns, pat_lits, strict=True):
            gap = gap_of(pat)
            for (lo, _), sl in zip(ivs, s_lits, strict=True):
                table[pl, sl] = severe_counts(judge(rules.subject, subj_row(gap, lo)))
        mdl.cost(table, f"subject{k}")
        if time.perf_counter() > deadline:
            return out_of_time()

    # ---------------------------------------------------------------- objective
    stay = [x[t, here[t].day, here[t].slot_start] for t in freed]
    moved = len(freed) - sum(stay)
    mid = len(freed) + 1
    big = mid * (mdl.max_warn + 1)
    m.Minimize(big * sum(mdl.crit) + mid * sum(mdl.warn) + moved)
    left = deadline - time.perf_counter()
    if left <= 0.005:
        return out_of_time()
    solver = make_solver(
        left, num_workers, seed=seed, exact=True, deterministic_time=deterministic_time
    )
    status = status_of(solver.Solve(m))
    runtime = time.perf_counter() - started
    if status.value not in ("optimal", "feasible"):
        wall = deterministic_time is None or solver.deterministic_time < 0.99 * deterministic_time
        return LnsStep(
            None,
            tuple(days),
            tuple(freed),
            status.value,
            status.proven,
            wall and not status.proven,
            runtime_s=runtime,
            det_time=solver.deterministic_time,
        )
    placements: dict[int, Placement] = {}
    for (t, d, s), var in x.items():
        if solver.Value(var):
            placements[t] = Placement(t, d, s, s + length[t] - 1)
    crit = int(sum(solver.Value(v) for v in mdl.crit))
    warn = int(sum(solver.Value(v) for v in mdl.warn))
    proven = status.value == "optimal"
    det_cut = (
        deterministic_time is not None and solver.deterministic_time >= 0.99 * deterministic_time
    )
    return LnsStep(
        placements,
        tuple(days),
        tuple(freed),
        status.value,
        proven,
        not proven and not det_cut,
        model_key=(crit, warn),
        runtime_s=runtime,
        det_time=solver.deterministic_time,
    )


def _signature(
    row_of: Callable[[Mapping[str, int]], Mapping[str, Any]], q: str, conds: Sequence[Cond]
) -> Callable[[int], tuple[bool, ...]]:
    """The truth values of ``conds`` on the row where quantity ``q`` takes a value."""

    def sig(v: int) -> tuple[bool, ...]:
        row = row_of({q: v})
        return tuple(c.holds(row[c.metric]) for c in conds)

    return sig


@dataclass(frozen=True)
class _SubjectRow:
    """A subject's metric row with its largest gap and sum of squares as the variables."""

    used: int
    blocks: int
    num_days: int
    budget_total: int | None
    end_day: int | None

    def __call__(self, gap: int | None, squares: int) -> dict[str, Any]:
        return subject_metrics(
            gap, self.used, squares, self.blocks, self.num_days, self.budget_total, self.end_day
        )

    def signature(self, conds: Sequence[Cond]) -> Callable[[int], tuple[bool, ...]]:
        def sig(v: int) -> tuple[bool, ...]:
            row = self(None, v)
            return tuple(c.holds(row[c.metric]) for c in conds)

        return sig


def _present(occ: Any, z: Mapping[int, Any], own: int) -> Any:
    """The study layer holds a subject at a period: 0/1 or a literal."""
    if isinstance(occ, int):
        return int(bool(z))
    return occ


def _tables(ev: HealthEvaluator) -> tuple[Any, Any]:
    return ev.util_cw, ev.ctx_cw


__all__ = ["LnsStep", "choose_neighbourhood", "liftable", "lns_step"]
