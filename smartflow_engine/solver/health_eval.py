"""Exact ``analyze_health`` issue counts of a placement, on the numpy grid, fast and incremental.

:class:`HealthEvaluator` holds the window with the *scope* tasks (the ones a search may place or
move) lifted out, and the scope tasks' places. It is the counts view of the one health model
(:mod:`smartflow_engine.health_facts`, below the solver and the analyzers): the day facts, the
subject facts, the window sums, the metric rows and the rules that fire on them are that
module's, so a count here is a count of the issues the analyzers' evaluator reports. This module
only keeps them for a movable scope:

- per day (cached, recomputed only for the days a move touches): the day's facts
  (:class:`..health_facts.DayFacts`, its heavy pairs between the window's hard subjects
  included, issue 42), its (critical, warning) from lookup tables built by the shared judgement
  over every (load, study periods, switches) and every count of heavy pairs, and its subject
  counts;
- per subject (:class:`..health_facts.SubjectDays`, updated with the days): present days and
  their largest gap, the concentration over ``min(blocks, days)`` days, budget progress (the
  budget's class and its end are constants of the window);
- window-wide (:func:`..health_facts.window_sums`): the loads' standard deviation and range,
  days without buffer, the fragmentation rate of the free periods.

Issues of ``analyze_health`` merge only when they are the same rule about the same entity, so
the counts are the number of entities per rule at each severity; a proven infeasible window adds
its ``feasibility`` critical issue (``feasibility_critical``). The property tests
``tests/solver/test_health_search.py`` and ``tests/test_health_views.py`` check the counts
against ``analyze_health`` and the analyzers' evaluator on random windows at every level.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..concepts import subject_of
from ..health_facts import (
    MEMO_SIZE,
    DayFacts,
    SubjectDays,
    day_context_metrics,
    day_facts,
    grid_day_facts,
    judge,
    level_rules,
    load_range,
    moved_sums,
    overall_metrics,
    severe_counts,
    subject_changes,
    subject_codes,
    subject_days,
    subject_metrics,
    window_sums,
)
from ..health_facts import MIN_BUFFER as MIN_BUFFER  # re-exported: analyze_health's defaults
from ..health_facts import MIN_USABLE as MIN_USABLE
from ..rules import Level, Metric, Rule, rules_for
from ..state import ScheduleState, Task
from .problem import Placement


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


Table = tuple[tuple[int, int], ...]


@cache
def _day_tables(level: Level, spd: int) -> tuple[Table, tuple[Table, ...], Table]:
    """The day rules' (critical, warning) by load (``[total]``), by study layer without heavy
    pairs (``[switches][occupied]``) and what ``h`` heavy pairs add (``[h]``: the
    ``heavy_adjacent`` rule reads its own metric alone, so its issue adds to the others'), from
    the shared judgement of every value (cached per level and day length: a table is a few
    hundred judgements)."""
    rules = level_rules(level)
    util = tuple(severe_counts(rules.day(t, 0, 0, spd)[0]) for t in range(spd + 1))
    ctx = tuple(
        tuple(severe_counts(rules.day(0, occ, sw, spd)[1]) for occ in range(spd + 1))
        for sw in range(spd + 1)
    )
    heavy_rules = [
        r
        for r in rules.day_context
        if any(c.metric == "heavy_adjacent" for b in r.bands for c in b.conds)
    ]
    assert all(  # (else the heavy pairs' count would not add to the others')
        c.metric == "heavy_adjacent" for r in heavy_rules for b in r.bands for c in b.conds
    ), "a rule reads heavy_adjacent with another metric"
    heavy = tuple(
        severe_counts(judge(heavy_rules, day_context_metrics(h, h + 1, h))) for h in range(spd + 1)
    )
    return util, ctx, heavy


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
        # subjects: every study task's subject, in the analyzers' order (the shared codes)
        codes = subject_codes(state.tasks)
        self.subjects = codes.names
        self.code_of = codes.code_of
        num_codes = len(codes.names) + 1
        self.num_codes = num_codes
        self._codes = codes
        self.code_of_task = codes.of_task  # per task: its subject code (0 for events)
        self.hard = codes.hard(state)  # the hard subjects' codes (heavy pairs, issue 42)
        self.kind_of: dict[int, int] = {}  # per task: 1 event, 2 study task
        blocks = [0] * num_codes  # per subject: the blocks of its placed tasks outside the scope
        for t in state.tasks:
            code = codes.of_task[t.state_id]
            self.kind_of[t.state_id] = 2 if code else 1
            if code and t.status != "pending" and t.state_id not in scope:
                blocks[code] += len(t.slots)
        self.fixed_blocks = np.array(blocks, dtype=np.int64)
        budgets = [(None, None)] + [codes.budget(state, c) for c in range(1, num_codes)]
        self.budget_total: list[int | None] = [b[0] for b in budgets]
        self.end_day: list[int | None] = [b[1] for b in budgets]
        owner = grid.owner.copy()
        guest = grid.guest.copy()
        for t in state.tasks:
            if t.state_id in scope:
                for b in t.slots:
                    target = guest if t.embed_host is not None else owner
                    target[b.day - 1, b.slot_start - 1 : b.slot_end] = 0
        self.owner = owner
        self.guest = guest
        self.placed_scope: dict[int, Placement] = {}
        self.scope_blocks = np.zeros(num_codes, dtype=np.int64)
        self._tables()
        self._rebuild()

    # ------------------------------------------------------------------ tables
    def _tables(self) -> None:
        """Per-day rule severities as lookup tables over the integer facts (the shared
        judgement's, rounding included), and the warning thresholds the slack measures against."""
        level, spd = self.level, self.spd
        rules = {
            (r.dimension, r.rule): r
            for dim in ("load", "subjects", "context", "tolerance")
            for r in rules_for(dim, level)
        }
        self.rules = rules
        self._rules = level_rules(level)
        self._subject_memo: dict[tuple[Any, ...], tuple[int, int, float]] = {}
        self._overall_memo: dict[tuple[int, ...], tuple[int, int, float]] = {}
        self.util_cw, self.ctx_cw, self.heavy_cw = _day_tables(level, spd)
        warn_total = [t for t in range(spd + 1) if any(self.util_cw[t])]
        self.util_warn_total = warn_total[0] if warn_total else spd + 1
        warn_heavy = [h for h in range(spd + 1) if any(self.heavy_cw[h])]
        self.heavy_warn = warn_heavy[0] if warn_heavy else spd + 1
        self.gap_warn = _first_value(rules[("subjects", "subject_gap")], "max_gap")

    # ------------------------------------------------------------------ per day
    def _rebuild(self) -> None:
        """Every day's and subject's figures from the grid (vectorised)."""
        n, num_codes = self.num_days, self.num_codes
        self.days: list[DayFacts] = grid_day_facts(
            self.owner,
            self._codes.study_layer(self.owner, self.guest),
            self._codes.hard_mask(self.hard),
        )
        self.sums, self.hist = window_sums(self.days, self.spd)
        present = subject_days(self.days)
        self.subject_days: list[SubjectDays] = [
            present.get(c) or SubjectDays() for c in range(num_codes)
        ]
        self.counts = np.zeros((n, num_codes), dtype=np.int64)
        day_cw = [(0, 0)] * n
        day_slack = [0] * n
        for d, f in enumerate(self.days):
            for c, k in f.subjects.items():
                self.counts[d, c] = k
            day_cw[d] = self._day_cw(f)
            day_slack[d] = self._day_slack(f)
        self.day_total = np.array([f.total for f in self.days], dtype=np.int64)
        self.day_free = np.array([f.free for f in self.days], dtype=np.int64)
        self.day_usable = np.array([f.usable for f in self.days], dtype=np.int64)
        self.day_cw = np.array(day_cw, dtype=np.int64).reshape(n, 2)
        self.day_slack = np.array(day_slack, dtype=np.float64)
        self.sum_c = sum(c for c, _ in day_cw)
        self.sum_w = sum(w for _, w in day_cw)
        self.sum_slack = float(sum(day_slack))
        self.dirty: set[int] = set(range(1, num_codes))
        self.subject_cw: list[tuple[int, int, float]] = [(0, 0, 0.0)] * num_codes
        # per subject: its largest gap as (last day before, first day after), 1-based, or None
        self.gap_span: list[tuple[int, int] | None] = [None] * num_codes

    def _day_cw(self, f: DayFacts) -> tuple[int, int]:
        c, w = self.util_cw[f.total]
        if f.occupied:
            c2, w2 = self.ctx_cw[f.switches][f.occupied]
            c, w = c + c2, w + w2
            if f.heavy:
                c2, w2 = self.heavy_cw[f.heavy]
                c, w = c + c2, w + w2
        return c, w

    def _day_slack(self, f: DayFacts) -> int:
        return (
            max(0, f.total - self.util_warn_total + 1)
            + max(0, MIN_BUFFER - f.usable)
            + max(0, f.switches - 2)
            + max(0, f.heavy - self.heavy_warn + 1)
        )

    def _day(self, d: int) -> None:
        """Recompute day ``d``'s cached figures (plain Python: a row is a dozen periods)."""
        new = day_facts(
            self.owner[d].tolist(), self.guest[d].tolist(), self.code_of_task, self.spd, self.hard
        )
        old = self.days[d]
        if new == old:
            return
        self.days[d] = new
        self.sums = moved_sums(self.sums, self.hist, old, new)
        c, w = self._day_cw(new)
        old_c, old_w = self.day_cw[d].tolist()
        self.sum_c += c - old_c
        self.sum_w += w - old_w
        self.day_cw[d] = (c, w)
        self.day_total[d] = new.total
        self.day_free[d] = new.free
        self.day_usable[d] = new.usable
        slack = self._day_slack(new)
        self.sum_slack += slack - float(self.day_slack[d])
        self.day_slack[d] = slack
        for code, k in subject_changes(old, new).items():
            self.counts[d, code] = k
            self.subject_days[code] = self.subject_days[code].updated({d + 1: k})
            self.dirty.add(code)

    # ------------------------------------------------------------------ updates
    def free_at(self, day: int, slot_start: int, slot_end: int) -> bool:
        """No task holds the periods (1-based, inclusive) now."""
        return not self.owner[day - 1, slot_start - 1 : slot_end].any()

    def guest_free(self, day: int, slot_start: int, slot_end: int) -> bool:
        return not self.guest[day - 1, slot_start - 1 : slot_end].any()

    def host_block_free(self, pl: Placement) -> bool:
        """The host block the guest place ``pl`` is in holds no guest (a block holds one: two
        guests on different periods of one block are refused by the writes). The block is the
        run of the host's periods around ``pl`` on its day."""
        row = self.owner[pl.day - 1]
        host = pl.embed_host
        a = pl.slot_start - 1
        while a > 0 and row[a - 1] == host:
            a -= 1
        b = pl.slot_end
        while b < len(row) and row[b] == host:
            b += 1
        return not self.guest[pl.day - 1, a:b].any()

    def place(self, pl: Placement, refresh: bool = True) -> None:
        d, a, b = pl.day - 1, pl.slot_start - 1, pl.slot_end
        tid = pl.task_id
        code = self.code_of_task[tid]
        if pl.embed_host is None:
            self.owner[d, a:b] = tid
        else:
            self.guest[d, a:b] = tid
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
        else:
            self.guest[d, a:b] = 0
        code = self.code_of_task[task_id]
        self.scope_blocks[code] -= 1
        self.dirty.add(code)
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
        self._rebuild()

    # ------------------------------------------------------------------ counts
    def counts_now(self) -> HealthCounts:
        """The (critical, warning) issues ``analyze_health`` reports on the current placement."""
        crit = self.sum_c + self.feasibility_critical
        warn = self.sum_w
        slack = self.sum_slack
        key = (*self.sums, load_range(self.hist))
        found = self._overall_memo.get(key)
        if found is None:
            row = overall_metrics(self.num_days, self.sums, self.hist)
            c, w = severe_counts(judge(self._rules.overall, row))
            sl = max(0.0, row["load_std_dev"] - 1.5) + 4.0 * max(
                0.0, row["fragmentation_rate"] - 0.3
            )
            if len(self._overall_memo) > MEMO_SIZE:
                self._overall_memo.clear()
            found = self._overall_memo[key] = (c, w, sl)
        crit, warn, slack = crit + found[0], warn + found[1], slack + found[2]
        for code in self.dirty:
            if code:
                self.subject_cw[code] = self._subject(code)
        self.dirty.clear()
        for c, w, sl in self.subject_cw:
            crit, warn, slack = crit + c, warn + w, slack + sl
        return HealthCounts(crit, warn, slack)

    def _subject(self, code: int) -> tuple[int, int, float]:
        """(critical, warning, slack) of one subject's rules: gap, concentration, budget."""
        days = self.subject_days[code]
        self.gap_span[code] = days.largest_gap_span()
        blocks = int(self.fixed_blocks[code] + self.scope_blocks[code])
        key = (code, days.max_gap, days.used, days.squares, blocks)
        found = self._subject_memo.get(key)
        if found is not None:
            return found
        row = subject_metrics(
            days.max_gap,
            days.used,
            days.squares,
            blocks,
            self.num_days,
            self.budget_total[code],
            self.end_day[code],
        )
        crit, warn = severe_counts(judge(self._rules.subject, row))
        slack = 0.0
        if row["max_gap"] is not None:
            slack += max(0, row["max_gap"] - self.gap_warn + 2)
        if row["concentration"] is not None:
            slack += 4.0 * max(0.0, row["concentration"] - 0.5)
        if len(self._subject_memo) > MEMO_SIZE:
            self._subject_memo.clear()
        found = self._subject_memo[key] = (crit, warn, slack)
        return found


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
