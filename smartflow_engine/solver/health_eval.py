"""Exact ``analyze_health`` issue counts of a placement, on the numpy grid, fast and incremental.

:class:`HealthEvaluator` holds the window with the *scope* tasks (the ones a search may place or
move) lifted out, and the scope tasks' places. It evaluates every rule of the rule table
(:mod:`smartflow_engine.rules`) exactly as the analyzers do, on the same rounded metrics:

- per day (cached, recomputed only for the days a move touches): occupancy ``total_used``
  (day utilisation), the free runs (usable periods for the buffer, free and fragmented periods),
  the study-layer sequence (switches, fragmentation) and the subject counts of the day;
- per subject: present days and their largest gap, the normalised HHI concentration over
  ``min(blocks, days)`` days, and budget progress (the budget's class and days to its end are
  constants of the window);
- window-wide: the sample standard deviation and range of the daily loads, days without buffer,
  the fragmentation rate of the free periods.

Issues of ``analyze_health`` merge only when they are the same rule about the same entity, so
the counts are the number of entities per rule at each severity; a proven infeasible window adds
its ``feasibility`` critical issue (``feasibility_critical``). The property test
``tests/solver/test_health_search.py`` checks the counts against ``analyze_health`` on random
windows at every level.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..concepts import subject_of
from ..rules import (
    Dimension,
    Level,
    Metric,
    Rule,
    RuleName,
    concentration,
    r4,
    rules_for,
    severity,
    subject_class,
)
from ..state import ScheduleState, Task
from .problem import Placement

MIN_USABLE = 2  # analyze_health's tolerance defaults (min_usable_size, min_daily_buffer)
MIN_BUFFER = 2
_SEV = {"critical": (1, 0), "warning": (0, 1)}


def _cw(sev: str | None) -> tuple[int, int]:
    return _SEV.get(sev or "", (0, 0))


@dataclass(frozen=True)
class HealthCounts:
    """``critical`` and ``warning`` issues, and ``slack``: a guidance figure for searches (how far
    the metrics are past their warning thresholds; 0 when nothing is near a warning)."""

    critical: int
    warning: int
    slack: float = 0.0

    @property
    def key(self) -> tuple[int, int]:
        return (self.critical, self.warning)

    @property
    def closes(self) -> bool:
        """The spec's close rule ``critical=0 && warning<=1``."""
        return self.critical == 0 and self.warning <= 1


def study_subject(task: Task) -> str | None:
    """The subject the analyzers give a task (``None`` for a course/event):
    :func:`..concepts.subject_of`."""
    return subject_of(task)


class HealthEvaluator:
    """Counts of one window with a movable scope; ``place``/``remove`` update it incrementally.

    Parameters
    ----------
    state
        The window (read only).
    scope_ids
        Tasks lifted out (pending ones are simply not placed); each must hold at most one block.
    level
        ``strict`` / ``normal`` / ``relaxed``.
    feasibility_critical
        1 when ``analyze_health`` would add its ``feasibility`` issue (proven infeasible), else 0.
    """

    def __init__(
        self,
        state: ScheduleState,
        scope_ids: Iterable[int],
        level: Level = "normal",
        feasibility_critical: int = 0,
    ) -> None:
        self.state = state
        self.level = level
        self.feasibility_critical = feasibility_critical
        scope = set(scope_ids)
        self.scope = scope
        grid = state.grid
        num_days, spd = grid.owner.shape
        self.num_days, self.spd = int(num_days), int(spd)
        # subjects: every study task's subject, in the analyzers' order
        names: list[str] = []
        code_of: dict[str, int] = {}
        class_ids: dict[str, list[int]] = {}
        blocks: dict[str, int] = {}
        for t in state.tasks:
            name = study_subject(t)
            if name is None:
                continue
            if name not in code_of:
                names.append(name)
                code_of[name] = len(names)
                class_ids[name] = []
                blocks[name] = 0
            if t.category_id is not None and t.category_id not in class_ids[name]:
                class_ids[name].append(t.category_id)
            if t.status != "pending" and t.state_id not in scope:
                blocks[name] += len(t.slots)
        self.subjects = names
        self.code_of = code_of
        num_codes = len(names) + 1
        self.fixed_blocks = np.array([0] + [blocks[n] for n in names], dtype=np.int64)
        self.budget_total: list[int | None] = [None]
        self.days_to_end: list[int | None] = [None]
        for n in names:
            tc = subject_class(state, n, class_ids[n])
            self.budget_total.append(tc.total_slots if tc is not None else None)
            end = tc.end_day if tc is not None else None
            self.days_to_end.append(end - 1 if end is not None else None)
        # per task: kind (1 event, 2 task), study code (0 for events)
        self.kind_of: dict[int, int] = {}
        self.code_of_task: dict[int, int] = {}
        for t in state.tasks:
            name = study_subject(t)
            self.kind_of[t.state_id] = 1 if name is None else 2
            self.code_of_task[t.state_id] = 0 if name is None else code_of[name]
        owner = grid.owner.copy()
        guest = grid.guest.copy()
        for t in state.tasks:
            if t.state_id in scope:
                for b in t.slots:
                    target = guest if t.embed_host is not None else owner
                    target[b.day - 1, b.slot_start - 1 : b.slot_end] = 0
        self.owner = owner
        self.guest = guest
        ids = np.array([t.state_id for t in state.tasks], dtype=np.int64)
        top = int(ids.max()) if ids.size else 0
        kind_lut = np.zeros(top + 1, dtype=np.int8)
        code_lut = np.zeros(top + 1, dtype=np.int64)
        for t in state.tasks:
            kind_lut[t.state_id] = self.kind_of[t.state_id]
            code_lut[t.state_id] = self.code_of_task[t.state_id]
        self.kind = kind_lut[owner]
        self.own_study = code_lut[owner]
        self.guest_mask = guest != 0
        self.guest_code = code_lut[guest]
        self.num_codes = num_codes
        self.placed_scope: dict[int, Placement] = {}
        self.scope_blocks = np.zeros(num_codes, dtype=np.int64)
        self._tables()
        self.day_total = np.zeros(self.num_days, dtype=np.int64)
        self.day_free = np.zeros(self.num_days, dtype=np.int64)
        self.day_usable = np.zeros(self.num_days, dtype=np.int64)
        self.day_usable_init = np.zeros(self.num_days, dtype=bool)
        self.day_cw = np.zeros((self.num_days, 2), dtype=np.int64)
        self.day_slack = np.zeros(self.num_days, dtype=np.float64)
        self.counts = np.zeros((self.num_days, num_codes), dtype=np.int64)
        self.sum_c = self.sum_w = self.sum_free = self.sum_usable = self.no_buffer = 0
        self.sum_slack = 0.0
        self.totals = [0] * self.num_days
        self.sum_load = self.sum_load_sq = 0
        self.dirty: set[int] = set(range(1, num_codes))
        self.subject_cw: list[tuple[int, int, float]] = [(0, 0, 0.0)] * num_codes
        # per subject: its largest gap as (last day before, first day after), 1-based, or None
        self.gap_span: list[tuple[int, int] | None] = [None] * num_codes
        for d in range(self.num_days):
            self._day(d)

    # ------------------------------------------------------------------ tables
    def _tables(self) -> None:
        """Per-day rule severities as lookup tables over the integer inputs (the analyzers'
        rounding included), and the warning thresholds the slack measures against."""
        level, spd = self.level, self.spd
        rules = {
            (r.dimension, r.rule): r
            for dim in ("load", "subjects", "context", "tolerance")
            for r in rules_for(dim, level)
        }
        self.rules = rules
        self._sev_memo: dict[tuple[object, ...], tuple[int, int]] = {}
        util = rules[("load", "day_utilization")]
        self.util_cw = [_cw(severity(util, {"utilization": r4(t / spd)})) for t in range(spd + 1)]
        warn_total = [t for t in range(spd + 1) if any(self.util_cw[t])]
        self.util_warn_total = warn_total[0] if warn_total else spd + 1
        ctx = rules[("context", "context_switch")]
        heavy = rules[("context", "heavy_adjacent")]
        self.ctx_cw = [[(0, 0)] * (spd + 1) for _ in range(spd + 1)]
        for sw, occ in itertools.product(range(spd + 1), range(1, spd + 1)):
            vals = {
                "switch_count": sw,
                "fragmentation": r4(sw / max(occ - 1, 1)),
                "heavy_adjacent": 0,
            }
            c, w = _cw(severity(ctx, vals))
            hc, hw = _cw(severity(heavy, vals))
            self.ctx_cw[sw][occ] = (c + hc, w + hw)
        self.gap_warn = _first_value(rules[("subjects", "subject_gap")], "max_gap")

    # ------------------------------------------------------------------ per day
    def _day(self, d: int) -> None:
        """Recompute day ``d``'s cached figures (plain Python: a row is a dozen periods)."""
        krow = self.kind[d].tolist()
        gmask = self.guest_mask[d].tolist()
        srow = [
            g if m else o
            for g, m, o in zip(
                self.guest_code[d].tolist(), gmask, self.own_study[d].tolist(), strict=True
            )
        ]
        total = 0
        usable = 0
        run = 0
        for k in krow:
            if k:
                total += 1
                if run >= MIN_USABLE:
                    usable += run
                run = 0
            else:
                run += 1
        if run >= MIN_USABLE:
            usable += run
        occ = 0
        sw = 0
        prev = 0
        day_counts = [0] * self.num_codes
        for v in srow:
            if v:
                occ += 1
                day_counts[v] += 1
                if prev and prev != v:
                    sw += 1
            prev = v
        c, w = self.util_cw[total]
        if occ:
            c2, w2 = self.ctx_cw[sw][occ]
            c, w = c + c2, w + w2
        old_c, old_w = self.day_cw[d].tolist()
        self.sum_c += c - old_c
        self.sum_w += w - old_w
        self.day_cw[d] = (c, w)
        self.sum_free += (self.spd - total) - int(self.day_free[d])
        self.sum_usable += usable - int(self.day_usable[d])
        self.no_buffer += int(usable < MIN_BUFFER) - int(
            self.day_usable_init[d] and self.day_usable[d] < MIN_BUFFER
        )
        self.day_usable_init[d] = True
        old_total = self.totals[d]
        self.sum_load += total - old_total
        self.sum_load_sq += total * total - old_total * old_total
        self.totals[d] = total
        self.day_total[d] = total
        self.day_free[d] = self.spd - total
        self.day_usable[d] = usable
        slack = (
            max(0, total - self.util_warn_total + 1) + max(0, MIN_BUFFER - usable) + max(0, sw - 2)
        )
        self.sum_slack += slack - float(self.day_slack[d])
        self.day_slack[d] = slack
        old = self.counts[d].tolist()
        if old != day_counts:
            for code, (x, y) in enumerate(zip(old, day_counts, strict=True)):
                if x != y:
                    self.dirty.add(code)
            self.counts[d] = day_counts

    # ------------------------------------------------------------------ updates
    def free_at(self, day: int, slot_start: int, slot_end: int) -> bool:
        """No task holds the periods (1-based, inclusive) now."""
        return not self.owner[day - 1, slot_start - 1 : slot_end].any()

    def guest_free(self, day: int, slot_start: int, slot_end: int) -> bool:
        return not self.guest_mask[day - 1, slot_start - 1 : slot_end].any()

    def place(self, pl: Placement, refresh: bool = True) -> None:
        d, a, b = pl.day - 1, pl.slot_start - 1, pl.slot_end
        tid = pl.task_id
        code = self.code_of_task[tid]
        if pl.embed_host is None:
            self.owner[d, a:b] = tid
            self.kind[d, a:b] = self.kind_of[tid]
            self.own_study[d, a:b] = code
        else:
            self.guest[d, a:b] = tid
            self.guest_mask[d, a:b] = True
            self.guest_code[d, a:b] = code
        self.placed_scope[tid] = pl
        self.scope_blocks[code] += 1
        self.dirty.add(code)
        if refresh:
            self._day(d)

    def remove(self, task_id: int, refresh: bool = True) -> Placement:
        pl = self.placed_scope.pop(task_id)
        d, a, b = pl.day - 1, pl.slot_start - 1, pl.slot_end
        if pl.embed_host is None:
            self.owner[d, a:b] = 0
            self.kind[d, a:b] = 0
            self.own_study[d, a:b] = 0
        else:
            self.guest[d, a:b] = 0
            self.guest_mask[d, a:b] = False
            self.guest_code[d, a:b] = 0
        self.scope_blocks[self.code_of_task[task_id]] -= 1
        self.dirty.add(self.code_of_task[task_id])
        if refresh:
            self._day(d)
        return pl

    def refresh(self, days: Iterable[int]) -> None:
        """Recompute the cached figures of ``days`` (1-based) after unrefreshed updates."""
        for day in set(days):
            self._day(day - 1)

    def set_placements(self, placements: Sequence[Placement]) -> None:
        """Replace every scope placement."""
        for tid in list(self.placed_scope):
            self.remove(tid, refresh=False)
        for pl in placements:
            self.place(pl, refresh=False)
        for d in range(self.num_days):
            self._day(d)

    # ------------------------------------------------------------------ counts
    def counts_now(self) -> HealthCounts:
        """The (critical, warning) issues ``analyze_health`` reports on the current placement."""
        crit = self.sum_c + self.feasibility_critical
        warn = self.sum_w
        slack = self.sum_slack
        std = self._std()
        totals = self.totals
        rng = max(totals) - min(totals)
        c, w = self._memo("load_imbalance", std, rng)
        crit, warn = crit + c, warn + w
        slack += max(0.0, std - 1.5)
        total_free, usable = self.sum_free, self.sum_usable
        frag = r4((total_free - usable) / total_free) if total_free else 0.0
        for name in ("buffer", "free_fragmentation"):
            c, w = self._memo(name, self.no_buffer, frag)
            crit, warn = crit + c, warn + w
        slack += 4.0 * max(0.0, frag - 0.3)
        for code in self.dirty:
            if code:
                self.subject_cw[code] = self._subject(code)
        self.dirty.clear()
        for c, w, sl in self.subject_cw:
            crit, warn, slack = crit + c, warn + w, slack + sl
        return HealthCounts(crit, warn, slack)

    def _std(self) -> float:
        """``r4`` of the sample standard deviation of the daily loads, as the analyzers compute
        it (numpy), from exact integer sums: the float square root of the exact variance agrees
        with numpy's to ~1e-15, so their 4-decimal roundings agree unless the value sits within
        1e-7 of a rounding boundary, where numpy itself decides."""
        n = self.num_days
        if n <= 1:
            return 0.0
        s1, s2 = self.sum_load, self.sum_load_sq
        var = (n * s2 - s1 * s1) / (n * (n - 1))
        std = math.sqrt(max(var, 0.0))
        scaled = std * 1e4
        if abs(scaled - math.floor(scaled) - 0.5) < 1e-3:
            return r4(float(np.asarray(self.totals, dtype=np.int64).std(ddof=1)))
        return r4(std)

    def _subject(self, code: int) -> tuple[int, int, float]:
        """(critical, warning, slack) of one subject's rules: gap, concentration, budget."""
        col = self.counts[:, code]
        present = np.flatnonzero(col)
        crit = warn = 0
        slack = 0.0
        self.gap_span[code] = None
        if present.size:
            max_gap: int | None = None
            if present.size > 1:
                steps = np.diff(present)
                i = int(steps.argmax())  # the first largest gap, as the analyzers take it
                max_gap = int(steps[i]) - 1
                self.gap_span[code] = (int(present[i]) + 1, int(present[i + 1]) + 1)
            on_days = col[present].tolist()
            conc = concentration(
                on_days, int(self.fixed_blocks[code] + self.scope_blocks[code]), self.num_days
            )
            used = int(sum(on_days))
        else:
            max_gap, conc, used = None, None, 0
        if max_gap is not None:
            c, w = self._memo("subject_gap", max_gap)
            crit, warn = crit + c, warn + w
            slack += max(0, max_gap - self.gap_warn + 2)
        if conc is not None:
            c, w = self._memo("subject_concentration", conc)
            crit, warn = crit + c, warn + w
            slack += 4.0 * max(0.0, conc - 0.5)
        total = self.budget_total[code]
        if total:
            c, w = _cw(
                severity(
                    self.rules[("subjects", "budget_lag")],
                    {"budget_progress": r4(used / total), "days_to_end": self.days_to_end[code]},
                )
            )
            crit, warn = crit + c, warn + w
        return crit, warn, slack

    def _memo(self, name: str, *values: float) -> tuple[int, int]:
        """(critical, warning) of a one-entity rule on its metric values, memoised (the rule
        table is immutable, so a value's severity never changes)."""
        key = (name, *values)
        got = self._sev_memo.get(key)
        if got is None:
            rule, metrics = _MEMO_RULES[name]
            got = _cw(severity(self.rules[rule], dict(zip(metrics, values, strict=True))))
            self._sev_memo[key] = got
        return got


# rule name -> ((dimension, rule), metric names in the order :meth:`HealthEvaluator._memo` takes)
_MEMO_RULES: dict[str, tuple[tuple[Dimension, RuleName], tuple[Metric, ...]]] = {
    "subject_gap": (("subjects", "subject_gap"), ("max_gap",)),
    "subject_concentration": (("subjects", "subject_concentration"), ("concentration",)),
    "load_imbalance": (("load", "load_imbalance"), ("load_std_dev", "load_range")),
    "buffer": (("tolerance", "buffer"), ("days_without_buffer", "fragmentation_rate")),
    "free_fragmentation": (
        ("tolerance", "free_fragmentation"),
        ("days_without_buffer", "fragmentation_rate"),
    ),
}


def _first_value(rule: Rule, metric: Metric) -> float:
    """The loosest threshold of ``metric`` in ``rule`` (its last band that tests it)."""
    values = [
        c.value for b in rule.bands if b.severity != "info" for c in b.conds if c.metric == metric
    ]
    return values[-1] if values else 0.0


def health_counts(
    state: ScheduleState, level: Level = "normal", feasibility_critical: int = 0
) -> HealthCounts:
    """The counts of ``state`` as it is (no scope)."""
    return HealthEvaluator(state, (), level, feasibility_critical).counts_now()


__all__ = ["HealthCounts", "HealthEvaluator", "health_counts", "study_subject"]
