"""The pricing side of the column generation over day patterns (see :mod:`.columns`).

A *pattern* is one day's complete filling (which group goes where in each free run, which guest
in each host block). :class:`Pricer` holds each day's data and prices it exactly: a dynamic
programme over one day's periods (compiled: :func:`._kernels.day_kernel`) whose state is the
previous cell (free with/without a free left neighbour, or the subject occupying it, see
``FREE_CAND`` ... ``OCC``), the set of subjects already used that day (for the same-category
term) and the number of free periods filled (for the load duals). Days that look the same share
one programme. The pricing relaxes one thing, the per-day cap of a group's count, which only
enlarges the set of patterns its minimum runs over, so every bound built on it stays valid.

With zero duals the same programme gives each day's least cost per number of free periods, and a
programme over days (:func:`day_decomposition_totals`, compiled:
:func:`._kernels.totals_kernel`) adds the exact load term for each free total: the
day-decomposition bound.

Bounds are computed in floats and lowered by :func:`.objective.float_margin` of the magnitude of
the numbers they sum (``Pricer.summands`` is the longest chain of additions).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._cells import OCC, OCC_NONE
from ._cpsat import check_deadline
from .budget import DEFAULT_CALIBRATION, Calibration
from .objective import (
    clustered_subjects,
    float_margin,
    guest_start,
    lateness,
    off_preference,
    preferred_slots,
)
from .problem import Placement, Problem

INF = math.inf
MAX_MASK_BITS = 7  # subjects per day whose first task is tracked exactly (mask axis 2**7)


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


class Pricer:
    """Day data and the pricing programme for one window."""

    def __init__(
        self,
        problem: Problem,
        weights: Mapping[str, float],
        deadline: float | None = None,
        *,
        calibration: Calibration = DEFAULT_CALIBRATION,
    ) -> None:
        """Raises :class:`._cpsat.OutOfTime` when building passes ``deadline``. ``calibration``
        holds the work measure's figures; the column generation built on this pricer (its
        masters, its bounds) reads them here."""
        self.p = problem
        self.calibration = calibration
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
            data = self._day(
                day,
                sorted(runs_by_day.get(day, []), key=lambda r: problem.runs[r].slot_start),
                sorted(hosts_by_day.get(day, []), key=lambda h: problem.hosts[h].slot_start),
            )
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
        self.ops = calibration.day_setup_ops * problem.num_days
        self.tables: dict[int, np.ndarray] = {}  # the last pricing's values per free periods
        self.kernel_magnitude = 0.0  # of the last programme run (see _programme)
        self.magnitude = 0.0  # of the last pricing's value (see price)
        self.relaxed_totals = 0  # free totals the decomposition programme could not reach
        # Longest chain of float additions in a bound: a day's programme (periods, host blocks,
        # the day's constants) and the sum over days and the multipliers.
        self.summands = (
            2 * problem.num_days
            + 2 * problem.slots_per_day
            + max((len(h) for h in hosts_by_day.values()), default=0)
            + 8
        )

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
            left.append(
                self._subject_state(str(row[b.slot_start - 2])) if b.slot_start > 1 else OCC_NONE
            )
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
                self.prefs[gi], start, start + g.duration - 1
            )
            if g.subject not in self.cluster:  # every task pays; the first of a day gets it back
                cost += w["same_category"]
            return cost

        run_options: list[list[tuple[int, int, int, float]]] = []
        for ri in run_ids:
            b = p.runs[ri]
            opts = [
                (s, gi, g.duration, base(gi, s))
                for gi, g in enumerate(p.groups)
                for s in p.starts(g, b)
            ]
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
        return (
            runs,
            hosts,
            tuple(data.left),
            tuple(data.right),
            round(data.const, 9),
            opts,
            hopts,
            fixed,
        )

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
                self.prefs[gi], s, s + g.duration - 1
            )
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
    def price(
        self,
        rep: int,
        group_dual: np.ndarray,
        period_dual: float,
        day_cost: np.ndarray,
        below: float = -INF,
        extra: int = 0,
    ) -> tuple[float, list[Pattern]]:
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
        self.magnitude = self.kernel_magnitude + abs(data.const) + float(finite.max(initial=0.0))
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

    def _programme(
        self, data: _DayData, group_dual: np.ndarray, period_dual: float
    ) -> tuple[np.ndarray, tuple[Any, ...]]:
        """Run the compiled programme (:func:`._kernels.day_kernel`) under the duals.

        Returns the least value per number of free periods filled (whatever the final mask)
        and the kernel's output, from which :meth:`_pattern` traces a filling back.
        """
        from ._kernels import day_kernel

        kd = self._kernel_data(data)
        opt_cost = kd.opt_base - group_dual[kd.opt_group] - period_dual * kd.opt_len
        hopt_cost = kd.hopt_base - group_dual[kd.hopt_group] - period_dual * kd.hopt_len
        # Largest absolute partial sum the programme can form (for the float margin).
        step = (
            float(np.abs(opt_cost).max(initial=0.0))
            + float(np.abs(hopt_cost).max(initial=0.0))
            + float(np.abs(kd.first_change).max(initial=0.0))
            + abs(self.w["isolated_free"])
            + abs(self.w["context_switch"])
        )
        self.kernel_magnitude = step * (self.p.slots_per_day + len(data.hosts) + 1)
        out = day_kernel(
            kd.num_subjects,
            kd.num_masks,
            self.p.slots_per_day + 1,
            float(self.w["isolated_free"]),
            float(self.w["context_switch"]),
            kd.first_bit,
            kd.first_change,
            kd.run_a,
            kd.run_e,
            kd.run_left,
            kd.run_right,
            kd.run_off,
            kd.opt_lo,
            kd.opt_hi,
            kd.opt_k,
            kd.opt_len,
            opt_cost,
            kd.hopt_lo,
            kd.hopt_hi,
            kd.hopt_k,
            hopt_cost,
        )
        self.ops += 8 + int(out[-1]) // self.calibration.kernel_ops_per_op
        final = out[5][-1]
        return final.min(axis=0), out

    def _kernel_data(self, data: _DayData) -> _KernelData:
        """The day's runs, options and subject numbering as flat arrays (built once)."""
        if data.kernel is not None:
            return data.kernel
        p = self.p
        used = {
            self.subject_index[p.groups[gi].subject]
            for opts in data.run_options
            for _, gi, _, _ in opts
        }
        used |= {
            self.subject_index[p.groups[gi].subject]
            for opts in data.host_options
            for gi, _, _ in opts
        }
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
            num_subjects=num_subjects,
            num_masks=1 << bits,
            first_bit=first_bit,
            first_change=first_change,
            run_a=ints(runs_a),
            run_e=ints(runs_e),
            run_left=ints(left),
            run_right=ints(right),
            run_off=ints(offs),
            opt_lo=opt_lo.astype(np.int64),
            opt_hi=opt_hi.astype(np.int64),
            opt_k=ints([o[1] for o in opts]),
            opt_len=ints([o[2] for o in opts]),
            opt_group=ints([o[3] for o in opts]),
            opt_start=ints([o[4] for o in opts]),
            opt_run=ints([o[5] for o in opts]),
            opt_base=np.array([o[6] for o in opts], dtype=float),
            hopt_lo=ints(hopt_lo),
            hopt_hi=ints(hopt_hi),
            hopt_k=ints([h[1] for h in hopts]),
            hopt_group=ints([h[2] for h in hopts]),
            hopt_len=ints([p.groups[h[2]].duration for h in hopts]),
            hopt_start=ints([h[3] for h in hopts]),
            hopt_base=np.array([h[4] for h in hopts], dtype=float),
            relaxed=relaxed,
        )
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
                    items.append(
                        ("r", int(kd.opt_run[how]), int(kd.opt_group[how]), int(kd.opt_start[how]))
                    )
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
        return Pattern(
            day,
            tuple(items),
            tuple(sorted(counts.items())),
            free,
            periods,
            self.pattern_cost(day, items),
        )

    def move(self, pattern: Pattern, day: int) -> Pattern:
        """The same filling on another day of the same type."""
        if pattern.day == day:
            return pattern
        src, dst = self.days[pattern.day - 1], self.days[day - 1]
        run_map = dict(zip(src.runs, dst.runs, strict=True))
        host_map = dict(zip(src.hosts, dst.hosts, strict=True))
        items = tuple(
            (kind, run_map[i] if kind == "r" else host_map[i], gi, s)
            for kind, i, gi, s in pattern.items
        )
        return Pattern(
            day, items, pattern.counts, pattern.free, pattern.periods, self.pattern_cost(day, items)
        )

    def from_placements(self, placements: Sequence[Placement]) -> list[Pattern]:
        """The patterns of a complete placement, one per day (empty days included)."""
        p = self.p
        group_of = p.group_of()
        by_day: dict[int, list[tuple[str, int, int, int]]] = defaultdict(list)
        run_of = {
            (b.day, q): ri
            for ri, b in enumerate(p.runs)
            for q in range(b.slot_start, b.slot_end + 1)
        }
        host_of = {(b.day, b.host): hi for hi, b in enumerate(p.hosts)}
        for pl in placements:
            gi = group_of[pl.task_id]
            if pl.embed_host is None:
                by_day[pl.day].append(("r", run_of[(pl.day, pl.slot_start)], gi, pl.slot_start))
            else:
                hi = (
                    next(
                        h
                        for h, b in enumerate(p.hosts)
                        if b.day == pl.day
                        and b.host == pl.embed_host
                        and b.slot_start <= pl.slot_start <= b.slot_end
                    )
                    if (pl.day, pl.embed_host) in host_of
                    else -1
                )
                by_day[pl.day].append(("h", hi, gi, pl.slot_start))
        return [self.make(d, by_day.get(d, [])) for d in range(1, p.num_days + 1)]


def pattern_value(pricer: Pricer, patterns: Sequence[Pattern]) -> float:
    """The weighted objective of one pattern per day (load term with the actual mean)."""
    fixed = np.count_nonzero(pricer.p.owner, axis=1).astype(float)
    loads = fixed + np.array([pat.free for pat in patterns], dtype=float)
    return float(
        sum(pat.cost for pat in patterns)
        + pricer.w["load_imbalance"] * np.abs(loads - loads.mean()).sum()
    )


def day_decomposition_totals(
    pricer: Pricer, slots: int, *, max_ops: int = 2**62, deadline: float | None = None
) -> dict[int, float]:
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
    guest_max = min(
        slots,
        sum(max((g.duration for g in p.groups if p.starts(g, b)), default=0) for b in p.hosts),
    )
    candidates = list(range(max(0, slots - guest_max), min(slots, free_cells) + 1))
    values, pricer.relaxed_totals = _programme_all(
        cost, fixed, candidates, pricer.w["load_imbalance"], pricer.calibration, max_ops, deadline
    )
    pricer.ops += num_days * width * max(1, len(candidates) // 10)
    finite = np.abs(cost[np.isfinite(cost)])
    magnitude = num_days * (
        float(finite.max(initial=0.0))
        + pricer.w["load_imbalance"] * (2 * width + float(fixed.max(initial=0.0)))
    )
    return {
        t: v - float_margin(magnitude, pricer.summands)
        for t, v in zip(candidates, values, strict=True)
        if math.isfinite(v)
    }


def _programme_all(
    cost: np.ndarray,
    fixed: np.ndarray,
    totals: Sequence[int],
    w_load: float,
    calibration: Calibration,
    max_ops: int = 2**62,
    deadline: float | None = None,
) -> tuple[list[float], int]:
    """Per total ``T``: min Σ_d cost[d, n_d] + w_load · |fixed_d + n_d − mean_T| subject to
    Σ_d n_d = T (compiled: :func:`._kernels.totals_kernel`), within ``max_ops`` steps and the
    ``deadline`` (checked between calls of at most ``calibration.totals_chunk_s`` estimated seconds); the
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
    chunk = int(calibration.totals_chunk_s * calibration.totals_ops_per_s)
    i = 0
    while i < len(order) and max_ops > 0:
        need = per_step * (order[i] + 1)  # the next total alone
        cap = max_ops
        if deadline is not None:
            cap = min(cap, int((deadline - time.perf_counter()) * calibration.totals_ops_per_s))
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


__all__ = ["INF", "MAX_MASK_BITS", "Pattern", "Pricer", "day_decomposition_totals", "pattern_value"]
