"""Column generation over day patterns: a tight proven bound and near-optimal proposals.

The full-window placement model has a weak relaxation (its bound is ~0 on 30-day windows). Every
soft term but the load term is a sum of per-day pieces, so the window decomposes by day
(Dantzig-Wolfe): a *pattern* is one day's complete filling (which group goes where in each free
run, which guest in each host block), and the master problem picks one pattern per day so that
the group counts and the level-1 total add up, with the load term ``Σ_d |load_d − mean|`` kept in
the master as linear deviations (the mean is linear in the patterns' loads).

- The master's LP relaxation is solved by GLOP; its duals price new patterns.
- Pricing is exact: a dynamic programme over one day's periods (:func:`_price_day`) whose state
  is the previous cell (free with/without a free left neighbour, or the subject occupying it),
  the set of subjects already used that day (for the same-category term) and the number of free
  periods filled (for the load duals). Days that look the same share one programme.
- Every round gives a Lagrangian lower bound (the LP value only when pricing finds nothing), valid
  for any duals: ``Σ_g π_g c_g + μ·slots + Σ_d (α_d − β_d)(fixed_d − F/D) + Σ_d min_p rc_dp``.
  The pricing relaxes one thing, the per-day cap of a group's count, which only enlarges the set
  of patterns the minimum runs over: the bound stays valid.
- The integer master over the generated patterns (CP-SAT, hinted with the start solution's own
  patterns, which are always among the columns) gives a placement never worse than the start.

Objective units are the weighted points of :mod:`.objective`; the integer master scales them by
``S · D`` with the integer scale of :func:`.objective.integer_weights` (a heuristic: its answer
is re-evaluated exactly and only kept when better).

Proofs are exact for any weight (see :mod:`.objective`): every Lagrangian and decomposition bound
is computed in floats and lowered by :func:`.objective.float_margin` of the magnitude of the
numbers it sums before it is stored, the final bound is rounded up to the next achievable value
by :meth:`.objective.Proof.lower`, and ``optimal`` is decided by :meth:`.objective.Proof.meets`
in exact arithmetic.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._cpsat import OutOfTime, SolveStatus, check_deadline, cp_model, make_solver, status_of
from .objective import (
    Proof,
    clustered_subjects,
    evaluate,
    float_margin,
    guest_start,
    integer_weights,
    lateness,
    model_magnitude,
    off_preference,
    preferred_slots,
    resolve_weights,
)
from .problem import Placement, Problem

INF = math.inf
EPS = 1e-7
MAX_MASK_BITS = 7  # subjects per day whose first task is tracked exactly (mask axis 2**7)

# DP cell states (the previous cell, seen from the current one); subjects follow from OCC on.
FREE_CAND = 0  # free, its left neighbour is not free: isolated unless the next cell is free
FREE_OK = 1  # free with a free left neighbour
OCC_NONE = 2  # occupied by something without a subject (or the run's edge)
OCC = 3  # OCC + k: occupied by subject k


@dataclass(frozen=True)
class Pattern:
    """One day's filling: ``items`` are (bin index, group, start) for runs and hosts alike.

    ``cost`` is every weighted term of the day except the load term; ``free`` the periods it
    fills in free runs (its load), ``periods`` all the periods it places (guests included).
    """

    day: int
    items: tuple[tuple[str, int, int, int], ...]  # ("r" | "h", bin, group, start)
    counts: tuple[tuple[int, int], ...]  # (group, tasks)
    free: int
    periods: int
    cost: float


# ---------------------------------------------------------------------------------- day data
@dataclass
class _DayData:
    """What one day's pricing needs, independent of the duals."""

    day: int
    runs: list[int]  # indices into problem.runs, by start
    hosts: list[int]  # indices into problem.hosts, by start
    left: list[int]  # per run: the state of the cell left of it (OCC_NONE or OCC + subject)
    right: list[int]  # per run: subject index right of it, or -1
    const: float  # weighted terms no placement changes (fixed same-category excess)
    # per group: cost of each start, independent of the duals (lateness, time of day, the
    # same-category cost every task of the subject pays)
    run_options: list[list[tuple[int, int, int, float]]]  # per run: (start, group, length, cost)
    host_options: list[list[tuple[int, int, float]]]  # per host: (group, start, cost)
    kernel: _KernelData | None = None  # the programme's arrays (built on first use)


@dataclass
class _KernelData:
    """A day type's programme input that does not depend on the duals (see :mod:`._kernels`)."""

    num_subjects: int
    num_masks: int
    first_bit: np.ndarray
    first_change: np.ndarray
    run_a: np.ndarray
    run_e: np.ndarray
    run_left: np.ndarray
    run_right: np.ndarray
    run_off: np.ndarray
    opt_lo: np.ndarray
    opt_hi: np.ndarray
    opt_k: np.ndarray
    opt_len: np.ndarray
    opt_group: np.ndarray
    opt_start: np.ndarray
    opt_run: np.ndarray
    opt_base: np.ndarray
    hopt_lo: np.ndarray
    hopt_hi: np.ndarray
    hopt_k: np.ndarray
    hopt_group: np.ndarray
    hopt_len: np.ndarray
    hopt_start: np.ndarray
    hopt_base: np.ndarray
    relaxed: bool  # more first-use subjects than MAX_MASK_BITS: the programme is a relaxation


class _Pricer:
    """Day data and the pricing programme for one window."""

    def __init__(self, problem: Problem, weights: Mapping[str, float],
                 deadline: float | None = None) -> None:
        """Raises :class:`._cpsat.OutOfTime` when building passes ``deadline``."""
        self.p = problem
        self.w = dict(weights)
        self.num_days = problem.num_days
        cluster = clustered_subjects(problem)
        scope = sorted({g.subject for g in problem.groups})
        names = sorted(set(scope) | {str(s) for s in np.unique(problem.subjects)} - {""})
        self.subject_index = {k: i for i, k in enumerate(names)}
        self.num_subjects = len(names)
        self.scope = scope
        self.cluster = cluster
        self.prefs = {gi: preferred_slots(problem, g.rule) for gi, g in enumerate(problem.groups)}
        runs_by_day, hosts_by_day = problem.bins_by_day()
        self.days: list[_DayData] = []
        self.type_of: list[int] = []  # day - 1 -> index of its representative in self.reps
        self.reps: list[int] = []  # representative day (1-based) per type
        signatures: dict[tuple[Any, ...], int] = {}
        for day in range(1, problem.num_days + 1):
            check_deadline(deadline)
            data = self._day(day, sorted(runs_by_day.get(day, []),
                                         key=lambda r: problem.runs[r].slot_start),
                             sorted(hosts_by_day.get(day, []),
                                    key=lambda h: problem.hosts[h].slot_start))
            self.days.append(data)
            key = self._signature(data)
            if key not in signatures:
                signatures[key] = len(self.reps)
                self.reps.append(day)
            self.type_of.append(signatures[key])
        self.days_of: dict[int, list[int]] = defaultdict(list)  # type -> its days
        for day, rep in enumerate(self.type_of, start=1):
            self.days_of[rep].append(day)
        # numpy operations of the pricing programme (and stand-ins for the set-up above): the
        # deterministic work measure
        self.ops = DAY_SETUP_OPS * problem.num_days
        self.tables: dict[int, np.ndarray] = {}  # the last pricing's values per free periods
        self.kernel_magnitude = 0.0  # of the last programme run (see _programme)
        self.magnitude = 0.0  # of the last pricing's value (see price)
        self.relaxed_totals = 0  # free totals the decomposition programme could not reach
        # Longest chain of float additions in a bound: a day's programme (periods, host blocks,
        # the day's constants) and the sum over days and the multipliers.
        self.summands = 2 * problem.num_days + 2 * problem.slots_per_day + max(
            (len(h) for h in hosts_by_day.values()), default=0) + 8

    # ------------------------------------------------------------------ building
    def _subject_state(self, subject: str) -> int:
        return OCC + self.subject_index[subject] if subject else OCC_NONE

    def _day(self, day: int, run_ids: list[int], host_ids: list[int]) -> _DayData:
        p, w = self.p, self.w
        spd = p.slots_per_day
        row = p.subjects[day - 1]
        left, right = [], []
        for ri in run_ids:
            b = p.runs[ri]
            left.append(self._subject_state(str(row[b.slot_start - 2])) if b.slot_start > 1
                        else OCC_NONE)
            rs = str(row[b.slot_end]) if b.slot_end < spd else ""
            right.append(self.subject_index[rs] if rs else -1)
        const = 0.0
        for k in self.scope:
            fixed = p.fixed_counts.get((k, day), 0)
            if k in self.cluster:
                const += w["same_category"] if fixed else 0.0
            elif fixed > 1:
                const += w["same_category"] * (fixed - 1)

        def base(gi: int, start: int) -> float:
            g = p.groups[gi]
            cost = w["late"] * lateness(g.rule, day) + w["time_of_day"] * off_preference(
                self.prefs[gi], start, start + g.duration - 1)
            if g.subject not in self.cluster:  # every task pays; the first of a day gets it back
                cost += w["same_category"]
            return cost

        run_options: list[list[tuple[int, int, int, float]]] = []
        for ri in run_ids:
            b = p.runs[ri]
            opts = [(s, gi, g.duration, base(gi, s))
                    for gi, g in enumerate(p.groups) for s in p.starts(g, b)]
            run_options.append(sorted(opts))
        host_options: list[list[tuple[int, int, float]]] = []
        for hi in host_ids:
            b = p.hosts[hi]
            guests: list[tuple[int, int, float]] = []
            for gi, g in enumerate(p.groups):
                starts = p.starts(g, b)
                if starts:
                    s = guest_start(self.prefs[gi], starts, g.duration)
                    guests.append((gi, s, base(gi, s)))
            host_options.append(guests)
        return _DayData(day, run_ids, host_ids, left, right, const, run_options, host_options)

    def _signature(self, data: _DayData) -> tuple[Any, ...]:
        p = self.p
        runs = tuple((p.runs[r].slot_start, p.runs[r].slot_end) for r in data.runs)
        hosts = tuple((p.hosts[h].slot_start, p.hosts[h].slot_end) for h in data.hosts)
        opts = tuple(tuple((s, g, round(c, 9)) for s, g, _, c in o) for o in data.run_options)
        hopts = tuple(tuple((g, s, round(c, 9)) for g, s, c in o) for o in data.host_options)
        fixed = tuple(p.fixed_counts.get((k, data.day), 0) for k in self.scope)
        return (runs, hosts, tuple(data.left), tuple(data.right), round(data.const, 9), opts,
                hopts, fixed)

    def first_use(self, day: int) -> dict[int, tuple[int, float]]:
        """Scope subjects whose first task of the day changes the cost: subject -> (bit, change).

        A non-clustered subject with no fixed task that day gets back the same-category cost its
        first task paid; a clustered one pays the cost once when it first appears.
        """
        out: dict[int, tuple[int, float]] = {}
        w = self.w["same_category"]
        for k in self.scope:
            if self.p.fixed_counts.get((k, day), 0) or not w:
                continue
            out[self.subject_index[k]] = (len(out), w if k in self.cluster else -w)
        return out

    # ------------------------------------------------------------------ evaluation
    def pattern_cost(self, day: int, items: Sequence[tuple[str, int, int, int]]) -> float:
        """Every weighted term of ``day`` but the load term, for the filling ``items``."""
        p, w = self.p, self.w
        spd = p.slots_per_day
        row = [str(v) for v in p.subjects[day - 1]]
        free = (p.owner[day - 1] == 0).tolist()
        mine = [False] * spd
        cost = 0.0
        counts: dict[str, int] = defaultdict(int)
        for k in self.scope:
            counts[k] = p.fixed_counts.get((k, day), 0)
        for kind, _, gi, s in items:
            g = p.groups[gi]
            counts[g.subject] += 1
            cost += w["late"] * lateness(g.rule, day) + w["time_of_day"] * off_preference(
                self.prefs[gi], s, s + g.duration - 1)
            if kind == "r":
                for q in range(s - 1, s - 1 + g.duration):
                    row[q], free[q], mine[q] = g.subject, False, True
        for k, n in counts.items():
            if k in self.cluster:
                cost += w["same_category"] * (1 if n > 0 else 0)
            else:
                cost += w["same_category"] * max(0, n - 1)
        for q in range(spd):
            if free[q] and not (q > 0 and free[q - 1]) and not (q + 1 < spd and free[q + 1]):
                cost += w["isolated_free"]
        for q in range(spd - 1):
            a, b = row[q], row[q + 1]
            if a and b and a != b and (mine[q] or mine[q + 1]):
                cost += w["context_switch"]
        return cost

    # ------------------------------------------------------------------ pricing
    def price(self, rep: int, group_dual: np.ndarray, period_dual: float,
              day_cost: np.ndarray, below: float = -INF,
              extra: int = 0) -> tuple[float, list[Pattern]]:
        """The best pattern of the days of type ``rep`` under the duals.

        ``group_dual[g]`` is subtracted per task of group ``g``, ``period_dual`` per period
        placed, and ``day_cost[n]`` (the load term and the free-period dual) added when ``n``
        free periods are filled. Returns the minimum reduced cost before the day's convexity
        dual, and a pattern reaching it (on the type's representative day), followed by up to
        ``extra`` more: the best fillings of other numbers of free periods whose value is below
        ``below``. Keeps the least value per number of free periods (before ``day_cost``) in
        ``tables[rep]``.
        """
        data = self.days[self.reps[rep] - 1]
        table, back = self._programme(data, group_dual, period_dual)
        values = table + day_cost[: table.shape[0]] + data.const
        finite = np.abs(day_cost[np.isfinite(day_cost)])
        self.magnitude = self.kernel_magnitude + abs(data.const) + float(
            finite.max(initial=0.0))
        order = np.argsort(values, kind="stable")
        self.tables[rep] = table + data.const
        patterns = [self._pattern(data, back, int(order[0]))]
        for n in order[1 : 1 + extra]:
            if values[n] < below:
                patterns.append(self._pattern(data, back, int(n)))
        return float(values[order[0]]), patterns

    def day_minima(self, rep: int) -> np.ndarray:
        """Per number of free periods filled: the least cost of a day of type ``rep`` (every
        term but the load term; ``inf`` where no filling has that many)."""
        data = self.days[self.reps[rep] - 1]
        table, _ = self._programme(data, np.zeros(len(self.p.groups)), 0.0)
        return table + data.const

    def _programme(self, data: _DayData, group_dual: np.ndarray,
                   period_dual: float) -> tuple[np.ndarray, tuple[Any, ...]]:
        """Run the compiled programme (:func:`._kernels.day_kernel`) under the duals.

        Returns the least value per number of free periods filled (whatever the final mask)
        and the kernel's output, from which :meth:`_pattern` traces a filling back.
        """
        from ._kernels import day_kernel

        kd = self._kernel_data(data)
        opt_cost = kd.opt_base - group_dual[kd.opt_group] - period_dual * kd.opt_len
        hopt_cost = kd.hopt_base - group_dual[kd.hopt_group] - period_dual * kd.hopt_len
        # Largest absolute partial sum the programme can form (for the float margin).
        step = (float(np.abs(opt_cost).max(initial=0.0)) + float(np.abs(hopt_cost).max(
            initial=0.0)) + float(np.abs(kd.first_change).max(initial=0.0))
            + abs(self.w["isolated_free"]) + abs(self.w["context_switch"]))
        self.kernel_magnitude = step * (self.p.slots_per_day + len(data.hosts) + 1)
        out = day_kernel(
            kd.num_subjects, kd.num_masks, self.p.slots_per_day + 1,
            float(self.w["isolated_free"]), float(self.w["context_switch"]),
            kd.first_bit, kd.first_change, kd.run_a, kd.run_e, kd.run_left, kd.run_right,
            kd.run_off, kd.opt_lo, kd.opt_hi, kd.opt_k, kd.opt_len, opt_cost,
            kd.hopt_lo, kd.hopt_hi, kd.hopt_k, hopt_cost)
        self.ops += 8 + int(out[-1]) // KERNEL_OPS_PER_OP
        final = out[5][-1]
        return final.min(axis=0), out

    def _kernel_data(self, data: _DayData) -> _KernelData:
        """The day's runs, options and subject numbering as flat arrays (built once)."""
        if data.kernel is not None:
            return data.kernel
        p = self.p
        used = {self.subject_index[p.groups[gi].subject]
                for opts in data.run_options for _, gi, _, _ in opts}
        used |= {self.subject_index[p.groups[gi].subject]
                 for opts in data.host_options for gi, _, _ in opts}
        used |= {left - OCC for left in data.left if left >= OCC}
        used |= {right for right in data.right if right >= 0}
        first = self.first_use(data.day)
        # first-use subjects are numbered first, so the first MAX_MASK_BITS get the mask bits
        ordered = sorted(used, key=lambda k: (k not in first, first.get(k, (0, 0.0))[0], k))
        local = {k: i for i, k in enumerate(ordered)}
        num_subjects = len(ordered)
        first_bit = np.full(num_subjects, -1, dtype=np.int64)
        first_change = np.zeros(num_subjects)
        adjust = np.zeros(num_subjects)  # relaxation of the subjects left without a bit
        relaxed = False
        bits = 0
        for k in ordered:
            if k not in first:
                continue
            change = first[k][1]
            if bits < MAX_MASK_BITS:
                first_bit[local[k]], first_change[local[k]] = bits, change
                bits += 1
            else:
                # No bit left: a lower bound instead. A refund (non-clustered subject) is given
                # to every task of the subject; a first-use charge (clustered) is dropped.
                relaxed = True
                adjust[local[k]] = min(change, 0.0)
        runs_a, runs_e, offs = [], [], [0]
        opts: list[tuple[int, int, int, int, int, int, float]] = []
        for r, ri in enumerate(data.runs):
            b = p.runs[ri]
            runs_a.append(b.slot_start)
            runs_e.append(b.slot_end)
            for s, gi, length, cost in data.run_options[r]:
                k = local[self.subject_index[p.groups[gi].subject]]
                pos = offs[-1] + s - b.slot_start
                opts.append((pos, k, length, gi, s, ri, cost + adjust[k]))
            offs.append(offs[-1] + b.slot_end - b.slot_start + 2)
        opts.sort()
        positions = offs[-1]
        pos_arr = np.array([o[0] for o in opts], dtype=np.int64)
        opt_lo = np.searchsorted(pos_arr, np.arange(positions), side="left")
        opt_hi = np.searchsorted(pos_arr, np.arange(positions), side="right")
        hopts: list[tuple[int, int, int, int, float]] = []
        hopt_lo, hopt_hi = [], []
        for h, options in enumerate(data.host_options):
            hopt_lo.append(len(hopts))
            for gi, s, cost in options:
                k = local[self.subject_index[p.groups[gi].subject]]
                hopts.append((h, k, gi, s, cost + adjust[k]))
            hopt_hi.append(len(hopts))

        def ints(values: Sequence[int]) -> np.ndarray:
            return np.array(values, dtype=np.int64)

        left = [OCC + local[v - OCC] if v >= OCC else v for v in data.left]
        right = [local[v] if v >= 0 else -1 for v in data.right]
        data.kernel = _KernelData(
            num_subjects=num_subjects, num_masks=1 << bits, first_bit=first_bit,
            first_change=first_change, run_a=ints(runs_a), run_e=ints(runs_e),
            run_left=ints(left), run_right=ints(right), run_off=ints(offs),
            opt_lo=opt_lo.astype(np.int64), opt_hi=opt_hi.astype(np.int64),
            opt_k=ints([o[1] for o in opts]), opt_len=ints([o[2] for o in opts]),
            opt_group=ints([o[3] for o in opts]), opt_start=ints([o[4] for o in opts]),
            opt_run=ints([o[5] for o in opts]),
            opt_base=np.array([o[6] for o in opts], dtype=float),
            hopt_lo=ints(hopt_lo), hopt_hi=ints(hopt_hi), hopt_k=ints([h[1] for h in hopts]),
            hopt_group=ints([h[2] for h in hopts]),
            hopt_len=ints([p.groups[h[2]].duration for h in hopts]),
            hopt_start=ints([h[3] for h in hopts]),
            hopt_base=np.array([h[4] for h in hopts], dtype=float), relaxed=relaxed)
        return data.kernel

    def _pattern(self, data: _DayData, out: tuple[Any, ...], n: int) -> Pattern:
        """Follow the kernel's predecessor records back from ``n`` free periods filled."""
        kd = self._kernel_data(data)
        _, p_state, p_mask, p_how, run_end_state, host_value, host_choice, host_mask, _ = out
        mask = int(np.argmin(host_value[-1][:, n]))
        items: list[tuple[str, int, int, int]] = []
        for h in range(len(data.hosts) - 1, -1, -1):
            o = int(host_choice[h, mask, n])
            if o >= 0:
                items.append(("h", data.hosts[h], int(kd.hopt_group[o]), int(kd.hopt_start[o])))
            mask = int(host_mask[h, mask, n])
        for r in range(len(data.runs) - 1, -1, -1):
            i = int(kd.run_off[r] + kd.run_e[r] - kd.run_a[r] + 1)
            st = int(run_end_state[r, mask, n])
            while True:
                how = int(p_how[i, st, mask, n])
                if how == -2:  # the run's entry
                    break
                ps, pm = int(p_state[i, st, mask, n]), int(p_mask[i, st, mask, n])
                if how == -1:  # a free cell
                    i -= 1
                else:
                    items.append(("r", int(kd.opt_run[how]), int(kd.opt_group[how]),
                                  int(kd.opt_start[how])))
                    i -= int(kd.opt_len[how])
                    n -= int(kd.opt_len[how])
                st, mask = ps, pm
        return self.make(data.day, items)

    def make(self, day: int, items: Sequence[tuple[str, int, int, int]]) -> Pattern:
        p = self.p
        items = sorted(items)
        counts: dict[int, int] = defaultdict(int)
        free = periods = 0
        for kind, _, gi, _s in items:
            counts[gi] += 1
            periods += p.groups[gi].duration
            if kind == "r":
                free += p.groups[gi].duration
        return Pattern(day, tuple(items), tuple(sorted(counts.items())), free, periods,
                       self.pattern_cost(day, items))

    def move(self, pattern: Pattern, day: int) -> Pattern:
        """The same filling on another day of the same type."""
        if pattern.day == day:
            return pattern
        src, dst = self.days[pattern.day - 1], self.days[day - 1]
        run_map = dict(zip(src.runs, dst.runs, strict=True))
        host_map = dict(zip(src.hosts, dst.hosts, strict=True))
        items = tuple((kind, run_map[i] if kind == "r" else host_map[i], gi, s)
                      for kind, i, gi, s in pattern.items)
        return Pattern(day, items, pattern.counts, pattern.free, pattern.periods,
                       self.pattern_cost(day, items))

    def from_placements(self, placements: Sequence[Placement]) -> list[Pattern]:
        """The patterns of a complete placement, one per day (empty days included)."""
        p = self.p
        group_of = p.group_of()
        by_day: dict[int, list[tuple[str, int, int, int]]] = defaultdict(list)
        run_of = {(b.day, q): ri for ri, b in enumerate(p.runs)
                  for q in range(b.slot_start, b.slot_end + 1)}
        host_of = {(b.day, b.host): hi for hi, b in enumerate(p.hosts)}
        for pl in placements:
            gi = group_of[pl.task_id]
            if pl.embed_host is None:
                by_day[pl.day].append(("r", run_of[(pl.day, pl.slot_start)], gi, pl.slot_start))
            else:
                hi = next(h for h, b in enumerate(p.hosts) if b.day == pl.day
                          and b.host == pl.embed_host
                          and b.slot_start <= pl.slot_start <= b.slot_end) \
                    if (pl.day, pl.embed_host) in host_of else -1
                by_day[pl.day].append(("h", hi, gi, pl.slot_start))
        return [self.make(d, by_day.get(d, [])) for d in range(1, p.num_days + 1)]


# ---------------------------------------------------------------------------------- master
# Estimated seconds per unit of deterministic work (calibrated on the 2-core CI machine): per
# counted operation of the pricing (see KERNEL_OPS_PER_OP), per column of the master at each LP
# solve, and per unit of CP-SAT deterministic time of the integer master.
OP_COST = 5.5e-6
# Steps per second of the two loops over free totals (the decomposition programme, the
# Lagrangian bounds): converts a budget or the time left into their work caps.
TOTALS_OPS_PER_S = 2e8
TOTALS_CHUNK_S = 0.02  # the decomposition programme checks the deadline this often
ROUND_GRACE_S = 0.2  # a pricing round may end this long after the search's deadline
# The decomposition programme's deterministic cap, in budgets: it ran uncapped before the wall
# clock had to hold (issue 12), and it reaches every total up to ~120-day windows within this.
DD_BUDGET_FACTOR = 4.0
DAY_SETUP_OPS = 70  # building one day's data (its options, its signature)
KERNEL_OPS_PER_OP = 200  # kernel row updates (masks x free periods) per counted operation
LP_COLUMN_COST = 1.2e-5
BUILD_COST = 2e-5  # per column added to the LP or to the integer model
WALL_PER_DET = 1.5
EXTRA_COLUMNS = 2  # per day type and round, besides the best: other free-period counts
INTEGER_SHARE = 0.3  # of a master's budget kept for its integer solve
MIN_ROUNDS = 12  # a first master that cannot afford this many rounds is abandoned
INTEGER_PER_DAY = 8  # columns per day in the integer master (least reduced cost first)


class _Master:
    """The master problem of one free total ``T``: its LP, its columns, its bound."""

    def __init__(self, pricer: _Pricer, slots: int, free_total: int,
                 pool: Sequence[Pattern]) -> None:
        from ortools.linear_solver import pywraplp

        self.pywraplp = pywraplp
        self.pricer = pricer
        p = pricer.p
        self.slots, self.free_total = slots, free_total
        num_days = p.num_days
        self.fixed = np.count_nonzero(p.owner, axis=1).astype(float)
        mean = (float(self.fixed.sum()) + free_total) / num_days
        width = p.slots_per_day + 1
        w_load = pricer.w["load_imbalance"]
        self.load_cost = w_load * np.abs(self.fixed[:, None] + np.arange(width)[None, :] - mean)
        self.counts = np.array([g.count for g in p.groups], dtype=float)
        self.columns: list[Pattern] = []
        self.vars: list[Any] = []
        self.support: list[Pattern] = []  # columns the last LP solution uses
        self.seen: set[tuple[int, tuple[tuple[str, int, int, int], ...]]] = set()
        lp = pywraplp.Solver.CreateSolver("GLOP")
        # Column generation LPs are highly degenerate; the strong guarantee makes GLOP give up
        # (ABNORMAL) on them. Slightly imprecise duals are harmless: any multipliers give a
        # valid Lagrangian bound.
        lp.SetSolverSpecificParametersAsString("provide_strong_optimal_guarantee: false")
        self.lp = lp
        self.conv = [lp.Add(lp.Sum([]) == 1) for _ in range(num_days)]
        self.cnt = [lp.Add(lp.Sum([]) <= float(c)) for c in self.counts]
        self.total = lp.Add(lp.Sum([]) == float(slots))
        self.free_row = lp.Add(lp.Sum([]) == float(free_total))
        self.objective = lp.Objective()
        big = 1e3 * max(1.0, *pricer.w.values())
        # Artificial columns keep the LP feasible at any free total (a start placing another
        # total gives no feasible combination at first); their cost drives them out.
        for row, sign in ((self.total, 1.0), (self.total, -1.0), (self.free_row, 1.0),
                          (self.free_row, -1.0)):
            var = lp.NumVar(0.0, lp.infinity(), "")
            row.SetCoefficient(var, sign)
            self.objective.SetCoefficient(var, big)
        self.objective.SetMinimization()
        for d in range(1, num_days + 1):
            self.add(pricer.make(d, ()))
        for pat in pool:
            self.add(pat)
        self.bound = -INF
        self.lp_value = INF
        self.converged = False
        self.rounds = 0
        self.duals: tuple[np.ndarray, float] | None = None  # (π, μ) of the last round

    def add(self, pat: Pattern) -> bool:
        key = (pat.day, pat.items)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.columns.append(pat)
        self.pricer.ops += round(BUILD_COST / OP_COST)
        var = self.lp.NumVar(0.0, self.lp.infinity(), "")
        self.vars.append(var)
        self.conv[pat.day - 1].SetCoefficient(var, 1.0)
        for gi, c in pat.counts:
            self.cnt[gi].SetCoefficient(var, float(c))
        self.total.SetCoefficient(var, float(pat.periods))
        self.free_row.SetCoefficient(var, float(pat.free))
        self.objective.SetCoefficient(var, self.cost(pat))
        return True

    def cost(self, pat: Pattern) -> float:
        return pat.cost + float(self.load_cost[pat.day - 1, pat.free])

    def round(self, deadline: float | None = None) -> tuple[bool, float]:
        """Solve the LP, price every day type, add the improving patterns.

        Raises :class:`._cpsat.OutOfTime` when the pricing passes ``deadline`` (the round's
        bound is then not used).

        Returns whether it converged (nothing to add, or the bound met the LP value) and the
        estimated seconds of the LP solve (the pricing counts in ``pricer.ops``).
        """
        pricer = self.pricer
        self.rounds += 1
        work = LP_COLUMN_COST * len(self.columns)
        if self.lp.Solve() != self.pywraplp.Solver.OPTIMAL:  # not expected (artificials)
            self.converged = False
            return True, work
        self.lp_value = self.objective.Value()
        self.support = [pat for pat, var in zip(self.columns, self.vars, strict=True)
                        if var.solution_value() > 1e-9]
        pi = np.minimum(np.array([c.dual_value() for c in self.cnt]), 0.0)
        mu, nu = self.total.dual_value(), self.free_row.dual_value()
        sigma = np.array([c.dual_value() for c in self.conv])
        # Lagrangian bound: valid for any multipliers of this sign pattern, since the pricing
        # minimises over (a superset of) every day's fillings.
        lagrange = float(pi @ self.counts) + mu * self.slots + nu * self.free_total
        magnitude = float(np.abs(pi) @ self.counts) + abs(mu) * self.slots + abs(
            nu) * self.free_total
        new = 0
        width = self.load_cost.shape[1]
        for rep, days in pricer.days_of.items():
            check_deadline(deadline)
            day_cost = self.load_cost[days[0] - 1] - nu * np.arange(width)
            below = float(sigma[[d - 1 for d in days]].max()) - 1e-6
            value, patterns = pricer.price(rep, pi, mu, day_cost, below, EXTRA_COLUMNS)
            lagrange += value * len(days)
            magnitude += (pricer.magnitude + abs(value)) * len(days)
            for d in days:
                for pat in patterns:
                    moved = pricer.move(pat, d)
                    rc = self.cost(moved) - float(sum(pi[gi] * c for gi, c in pat.counts)) \
                        - mu * pat.periods - nu * pat.free - sigma[d - 1]
                    if rc < -1e-6 and self.add(moved):
                        new += 1
        self.bound = max(self.bound, lagrange - float_margin(magnitude, pricer.summands))
        self.duals = (pi, mu)
        self.converged = new == 0 or self.lp_value - self.bound <= 1e-6 * max(
            1.0, abs(self.lp_value))
        return self.converged, work

    def integer(self, start: Sequence[Pattern], upper: float, deterministic_time: float,
                wall_s: float, num_workers: int,
                seed: int) -> tuple[list[Pattern] | None, float, float]:
        """The best choice of one generated pattern per day at this free total (CP-SAT), if
        it beats ``upper``.

        With the free total fixed the mean day load is a constant, so each pattern's load term
        is exact in its cost: a pure 0-1 programme whose relaxation is the master LP. Reduced
        cost fixing keeps it small: at the LP optimum every integer solution costs at least
        the LP value plus the reduced costs of its columns, so a column whose reduced cost
        exceeds ``upper − LP`` is in no solution better than ``upper`` and is left out.
        Returns the patterns (or None), their objective and the estimated seconds spent.
        """
        p = self.pricer.p
        work = LP_COLUMN_COST * len(self.columns)
        if self.lp.Solve() != self.pywraplp.Solver.OPTIMAL:
            return None, INF, work
        slack = upper - self.objective.Value()
        if slack <= 1e-9:
            return None, INF, work  # nothing over these columns beats ``upper``
        start_keys = {(pat.day, pat.items) for pat in start}
        # Per day: the start's pattern and the columns of least reduced cost within the slack
        # (the cap keeps the model small; the columns it drops are the least promising).
        per_day: dict[int, list[tuple[float, int, Pattern]]] = defaultdict(list)
        for j, (pat, var) in enumerate(zip(self.columns, self.vars, strict=True)):
            rc = var.reduced_cost()
            if (pat.day, pat.items) in start_keys:
                per_day[pat.day].append((-INF, j, pat))
            elif rc <= slack + 1e-9:
                per_day[pat.day].append((rc, j, pat))
        if len(per_day) < p.num_days:
            return None, INF, work
        kept = [pat for d in sorted(per_day)
                for _, _, pat in sorted(per_day[d], key=lambda e: (e[0], e[1]))[:INTEGER_PER_DAY]]
        lin = cp_model().LinearExpr
        m = cp_model().CpModel()
        num_days = p.num_days
        unit = integer_weights(self.pricer.w, model_magnitude(
            num_days, p.slots_per_day)).scale * num_days
        variables = [m.new_bool_var("") for _ in kept]
        by_day: dict[int, list[Any]] = defaultdict(list)
        by_group: dict[int, tuple[list[Any], list[int]]] = defaultdict(lambda: ([], []))
        for pat, v in zip(kept, variables, strict=True):
            by_day[pat.day].append(v)
            for gi, c in pat.counts:
                by_group[gi][0].append(v)
                by_group[gi][1].append(c)
        for vs in by_day.values():
            m.add_exactly_one(vs)
        for gi, (vs, cs) in by_group.items():
            m.add(lin.weighted_sum(vs, cs) <= p.groups[gi].count)
        m.add(lin.weighted_sum(variables, [pat.periods for pat in kept]) == self.slots)
        m.add(lin.weighted_sum(variables, [pat.free for pat in kept]) == self.free_total)
        m.minimize(lin.weighted_sum(variables, [round(unit * self.cost(pat)) for pat in kept]))
        if sum(pat.free for pat in start) == self.free_total:
            for pat, v in zip(kept, variables, strict=True):
                m.add_hint(v, 1 if (pat.day, pat.items) in start_keys else 0)
        solver = make_solver(wall_s, num_workers, seed=seed, exact=False,
                             deterministic_time=deterministic_time)
        status = status_of(solver.solve(m))
        work += WALL_PER_DET * solver.deterministic_time + BUILD_COST * len(kept)
        if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
            return None, INF, work
        chosen = sorted((pat for pat, v in zip(kept, variables, strict=True)
                         if solver.value(v)), key=lambda pat: pat.day)
        return chosen, self.value(chosen), work

    def value(self, patterns: Sequence[Pattern]) -> float:
        return _value(self.pricer, patterns)


def _value(pricer: _Pricer, patterns: Sequence[Pattern]) -> float:
    """The weighted objective of one pattern per day (load term with the actual mean)."""
    fixed = np.count_nonzero(pricer.p.owner, axis=1).astype(float)
    loads = fixed + np.array([pat.free for pat in patterns], dtype=float)
    return float(sum(pat.cost for pat in patterns)
                 + pricer.w["load_imbalance"] * np.abs(loads - loads.mean()).sum())


@dataclass
class ColumnSearch:
    """What :func:`search` found.

    ``bound`` is a proven lower bound on the weighted objective of every placement of ``slots``
    periods, whatever its free total: the minimum over the free totals of the best bound known
    for each (the master's Lagrangian bound where it ran, the day-decomposition bound
    elsewhere). ``placements`` is the best solution found (never worse than the start);
    ``optimal`` says its objective meets the bound.
    """

    placements: list[Placement]
    objective: float
    bound: float
    optimal: bool
    start_objective: float
    totals: dict[int, float]  # free total -> its lower bound
    explored: list[int]  # free totals whose master ran, in order
    converged: bool  # every master that ran converged (its bound is the exact LP bound)
    rounds: int = 0
    columns: int = 0
    work_s: float = 0.0
    runtime_s: float = 0.0
    # (seconds, best objective, bound) after every round and every integer master
    history: list[tuple[float, float, float]] = field(default_factory=list)
    abandoned: bool = False  # the budget could not pay for the rounds a master needs


def search(
    problem: Problem,
    slots: int,
    start: Sequence[Placement],
    weights: Mapping[str, float] | None = None,
    *,
    budget_s: float,
    deadline: float | None = None,
    num_workers: int = 1,
    seed: int = 0,
    start_value: float | None = None,
) -> ColumnSearch:
    """Branch on the free total, solve each total's master by column generation, keep the best.

    Free totals are taken best bound first (the start's own total first); the search ends when
    the best solution meets every remaining total's bound (proven optimal) or the budget is
    spent. ``budget_s`` is in estimated seconds of deterministic work, so the result does not
    depend on the machine's load; ``deadline`` (``time.perf_counter()`` value) is a safety net.

    Parameters
    ----------
    problem
        Built with ``by_subject=True``.
    slots
        Periods placed in all (the proven maximum); ``start`` places exactly that many.
    start_value
        The start's weighted objective when the caller knows it (saves an evaluation when the
        deadline leaves no time for the search).
    """
    t0 = time.perf_counter()
    if deadline is None:
        deadline = t0 + 10 * budget_s + 1.0
    w = resolve_weights(weights)
    try:
        pricer = _Pricer(problem, w, deadline - 0.01)
    except OutOfTime:  # the window's day data alone does not fit the time limit
        value = evaluate(problem, start, w)["weighted_total"] if start_value is None \
            else start_value
        return ColumnSearch(placements=list(start), objective=value, bound=-INF, optimal=False,
                            start_objective=value, totals={}, explored=[], converged=False,
                            runtime_s=time.perf_counter() - t0, abandoned=True)
    start_patterns = pricer.from_placements(start)
    start_total = sum(pat.free for pat in start_patterns)
    best_patterns = list(start_patterns)
    best = start_value = _value(pricer, best_patterns)
    try:
        totals = day_decomposition_totals(pricer, slots,
                                          max_ops=int(DD_BUDGET_FACTOR * budget_s
                                                      * TOTALS_OPS_PER_S),
                                          deadline=deadline - 0.01)
    except OutOfTime:
        totals = {}
    totals.setdefault(start_total, -INF)  # not expected: the start's total is always covered
    explored: list[int] = []
    solver_work = 0.0  # estimated seconds of LP solves and integer masters

    def work() -> float:
        return OP_COST * pricer.ops + solver_work

    history: list[tuple[float, float, float]] = []
    pool: list[Pattern] = list(start_patterns)
    rounds = 0
    converged = True
    abandoned = False

    def left() -> bool:
        return work() < budget_s and time.perf_counter() < deadline - 0.01

    # A free total is settled when its bound is within ``tol`` of the best: every objective is
    # a multiple of 1 / unit (see .objective.Proof), so a bound above best − 1 / unit rounds up
    # to the best. Settling only ends the search of a total; the bound returned is the minimum
    # over every total, whatever was settled.
    proof = Proof(w, problem.num_days)
    tol = max(1e-9 * abs(best), 0.5 / proof.unit)
    try:
        while left():
            candidates = [t for t in totals if t not in explored and totals[t] < best - tol]
            if not candidates:
                break
            total = start_total if start_total in candidates else min(
                candidates, key=lambda t: (totals[t], abs(t - start_total)))
            explored.append(total)
            master = _Master(pricer, slots, total, pool)
            lp_until = work() + (1 - INTEGER_SHARE) * (budget_s - work())
            while work() < lp_until and time.perf_counter() < deadline - 0.01:
                before = work()
                # A round started before the deadline may finish a little after it (its bound
                # is what the search is for); a longer one is cut (1000-day windows).
                done, step = master.round(deadline + ROUND_GRACE_S)
                solver_work += step
                if explored == [total] and not done and master.rounds <= 3 and (
                        work() - before) * (MIN_ROUNDS - master.rounds) > lp_until - work():
                    # The rounds a first master needs (costlier as columns accumulate) do not fit
                    # the budget: leave it to the caller's other searches rather than spend it on
                    # an unfinished relaxation.
                    abandoned = True
                    break
                open_totals = [t for t in totals if t != total and totals[t] < best - tol]
                cap = int(max(0.0, min(budget_s - work(), deadline - 0.01 - time.perf_counter()))
                          * TOTALS_OPS_PER_S)
                for t, value in lagrange_totals(pricer, master, open_totals, cap).items():
                    totals[t] = max(totals[t], value)
                if master.bound > -INF:
                    totals[total] = max(totals[total], master.bound)
                history.append((time.perf_counter() - t0, best, min(totals.values())))
                if done:
                    break
            rounds += master.rounds
            converged = converged and master.converged
            if abandoned:
                break
            if master.rounds and master.bound > -INF:
                totals[total] = max(totals[total], master.bound)
            if totals[total] < best - tol and left():
                det = max(0.01, (budget_s - work()) / WALL_PER_DET
                          * (0.5 if len(totals) > 1 else 1))
                chosen, value, step = master.integer(
                    best_patterns, best, det, max(0.01, deadline - time.perf_counter()),
                    num_workers, seed)
                solver_work += step
                if chosen is not None and value < best - 1e-9:
                    best, best_patterns = value, chosen
            pool = _useful(master, best_patterns)
            history.append((time.perf_counter() - t0, best, min(totals.values())))
    except OutOfTime:  # the wall clock cut a pricing round: what is stored stays valid
        abandoned, converged = True, False
    bound = proof.lower(min(totals.values()))
    placements = _to_placements(problem, best_patterns, start)
    optimal = math.isfinite(bound) and proof.meets(evaluate(problem, placements, w), bound)
    return ColumnSearch(
        placements=placements, objective=best, bound=bound, optimal=optimal,
        start_objective=start_value, totals=totals, explored=explored, converged=converged,
        rounds=rounds, columns=len(pool), work_s=work(), runtime_s=time.perf_counter() - t0,
        history=history, abandoned=abandoned)


def lagrange_totals(pricer: _Pricer, master: _Master, totals: Sequence[int],
                    max_ops: int = 2**62) -> dict[int, float]:
    """Lagrangian bounds at every free total from the last pricing of ``master``.

    ``max_ops`` caps the kernel's work: the totals with the lowest bounds so far come first,
    the ones left out are not returned.

    The pricing tables hold, per day type and number of free periods ``n``, the least
    ``cost − π·a − μ·s`` of a filling. Only the load term and the free-total multiplier ``ν``
    depend on the free total ``T``, so for any ``T``

        L(T, ν) = π·c + μ·slots + ν·T + Σ_types days · min_n (table[n] + load_T[n] − ν·n)

    is a valid lower bound for every ``ν``; it is concave in ``ν`` and maximised by ternary
    search (any ``ν`` it stops at is still valid). One round at one total bounds all of them.
    """
    if master.duals is None:
        return {}
    pi, mu = master.duals
    p = pricer.p
    num_days = p.num_days
    fixed = master.fixed
    w_load = pricer.w["load_imbalance"]
    reps = list(pricer.days_of)
    width = p.slots_per_day + 1
    table = np.full((len(reps), width), INF)
    for i, rep in enumerate(reps):
        row = pricer.tables[rep]
        table[i, : row.shape[0]] = row
    days = np.array([len(pricer.days_of[rep]) for rep in reps], dtype=float)
    rep_fixed = np.array([fixed[pricer.reps[rep] - 1] for rep in reps])
    base = float(pi @ master.counts) + mu * master.slots
    if not totals:
        return {}
    from ._kernels import lagrange_kernel

    t_arr = np.array(list(totals), dtype=np.int64)
    best = lagrange_kernel(table, days, rep_fixed.astype(float), float(fixed.sum()), num_days,
                           float(w_load), base, t_arr, max_ops)
    pricer.ops += 10 + len(t_arr) * len(reps) // 2
    # Magnitude of the numbers summed: the base, ν·T and the day terms, with |ν| at most the
    # span the kernel searches (its values' range + 1 around 0).
    finite = np.abs(table[np.isfinite(table)])
    big = float(finite.max(initial=0.0)) + w_load * (width + float(fixed.max(initial=0.0))
                                                     + width)
    scale = float(np.abs(pi) @ master.counts) + abs(mu) * master.slots
    out: dict[int, float] = {}
    for t, v in zip(t_arr.tolist(), best.tolist(), strict=True):
        if math.isfinite(v):
            nu_max = 2 * big + 1.0
            magnitude = scale + nu_max * (t + num_days * width) + num_days * big
            out[int(t)] = float(v) - float_margin(magnitude, pricer.summands)
    return out


def _useful(master: _Master, best: Sequence[Pattern]) -> list[Pattern]:
    """Columns worth carrying to the next free total: the best solution's and every column the
    last LP used."""
    return list(best) + master.support


def day_decomposition_totals(pricer: _Pricer, slots: int, *, max_ops: int = 2**62,
                             deadline: float | None = None) -> dict[int, float]:
    """Per free total ``T``: the day-decomposition lower bound (group counts relaxed).

    Each day's least cost per number of free periods comes from the pricing programme with
    zero duals; a programme over days adds the exact load term for the mean of ``T``. Guests
    only add cost, so any ``T`` from ``slots`` minus the most periods the host blocks can take
    up to ``slots`` is possible; the bound of each is returned (``inf`` where none fits).

    The programme over days costs ``D · (slots_per_day + 1) · T`` steps per total ``T``; it runs
    for the totals nearest the middle of the range first while ``max_ops`` steps and the
    ``deadline`` allow. Every other total gets the weaker bound ``Σ_d min_n c_d(n)`` (the load
    term and the total relaxed), valid for every total.
    """
    p = pricer.p
    num_days = p.num_days
    width = p.slots_per_day + 1
    minima = {}
    for rep in pricer.days_of:
        check_deadline(deadline)  # raises OutOfTime: no bound at all without every day
        minima[rep] = pricer.day_minima(rep)
    cost = np.full((num_days, width), INF)
    for rep, days in pricer.days_of.items():
        for d in days:
            cost[d - 1, : minima[rep].shape[0]] = minima[rep]
    fixed = np.count_nonzero(p.owner, axis=1).astype(float)
    free_cells = int(np.count_nonzero(p.owner == 0))
    guest_max = min(slots, sum(max((g.duration for g in p.groups if p.starts(g, b)), default=0)
                               for b in p.hosts))
    candidates = list(range(max(0, slots - guest_max), min(slots, free_cells) + 1))
    values, pricer.relaxed_totals = _programme_all(cost, fixed, candidates,
                                                   pricer.w["load_imbalance"], max_ops, deadline)
    pricer.ops += num_days * width * max(1, len(candidates) // 10)
    finite = np.abs(cost[np.isfinite(cost)])
    magnitude = num_days * (float(finite.max(initial=0.0)) + pricer.w["load_imbalance"] * (
        2 * width + float(fixed.max(initial=0.0))))
    return {t: v - float_margin(magnitude, pricer.summands)
            for t, v in zip(candidates, values, strict=True) if math.isfinite(v)}


def _programme_all(cost: np.ndarray, fixed: np.ndarray, totals: Sequence[int],
                   w_load: float, max_ops: int = 2**62,
                   deadline: float | None = None) -> tuple[list[float], int]:
    """Per total ``T``: min Σ_d cost[d, n_d] + w_load · |fixed_d + n_d − mean_T| subject to
    Σ_d n_d = T (compiled: :func:`._kernels.totals_kernel`), within ``max_ops`` steps and the
    ``deadline`` (checked between calls of at most ``TOTALS_CHUNK_S`` estimated seconds); the
    totals left out get ``Σ_d min_n cost[d, n]``, a bound for every total. Returns the values
    and how many totals were left out."""
    if not totals:
        return [], 0
    from ._kernels import totals_kernel

    cost = np.ascontiguousarray(cost, dtype=float)
    rows = np.where(np.isfinite(cost), cost, np.inf).min(axis=1)
    relaxed = float(rows.sum())
    out = {t: relaxed for t in totals}
    middle = (totals[0] + totals[-1]) / 2
    order = sorted(totals, key=lambda t: (abs(t - middle), t))
    per_step = cost.shape[0] * cost.shape[1]
    chunk = int(TOTALS_CHUNK_S * TOTALS_OPS_PER_S)
    i = 0
    while i < len(order) and max_ops > 0:
        need = per_step * (order[i] + 1)  # the next total alone
        cap = max_ops
        if deadline is not None:
            cap = min(cap, int((deadline - time.perf_counter()) * TOTALS_OPS_PER_S))
        if need > cap:
            break
        if deadline is not None:
            cap = min(cap, max(chunk, need))
        batch = np.array(order[i:], dtype=np.int64)
        values, done = totals_kernel(cost, fixed.astype(float), batch, float(w_load), cap)
        for t, v in zip(batch[:done].tolist(), values[:done].tolist(), strict=True):
            out[t] = float(v)
        max_ops -= sum(per_step * (t + 1) for t in batch[:done].tolist())
        if done == 0:
            break
        i += done
    return [out[t] for t in totals], len(order) - i


def _to_placements(problem: Problem, patterns: Sequence[Pattern],
                   keep: Sequence[Placement] = ()) -> list[Placement]:
    """Task ids for the patterns' places, keeping a task where it already is when a place of
    its group is reused (so a proposal that changes little reads as little change)."""
    group_of = problem.group_of()
    pools = {gi: sorted(g.task_ids) for gi, g in enumerate(problem.groups)}
    where = {(gi, pl.day, pl.slot_start, pl.embed_host): pl.task_id
             for pl in keep for gi in [group_of[pl.task_id]]}
    wanted: list[tuple[int, int, int, int | None]] = []
    for pat in patterns:
        for kind, idx, gi, s in pat.items:
            host = problem.hosts[idx].host if kind == "h" else None
            wanted.append((gi, pat.day, s, host))
    out: list[Placement] = []
    rest = []
    for gi, day, s, host in wanted:
        tid = where.get((gi, day, s, host))
        if tid is not None and tid in pools[gi]:
            pools[gi].remove(tid)
            out.append(Placement(tid, day, s, s + problem.groups[gi].duration - 1, host))
        else:
            rest.append((gi, day, s, host))
    for gi, day, s, host in rest:
        tid = pools[gi].pop(0)
        out.append(Placement(tid, day, s, s + problem.groups[gi].duration - 1, host))
    return sorted(out, key=lambda pl: (pl.day, pl.slot_start, pl.task_id))


__all__ = ["ColumnSearch", "Pattern", "day_decomposition_totals", "search"]
