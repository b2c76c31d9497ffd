"""The soft terms of :func:`.objective.evaluate`, kept up to date move by move.

:class:`SoftEvaluator` holds one window (a :class:`.problem.Problem`) and the places of its scope
tasks, and updates every soft term when a task is placed or removed, with the interface of
:class:`.health_eval.HealthEvaluator` (``place``/``remove`` with ``refresh``, ``refresh``,
``set_placements``), so that a search can keep both side by side and score a move or a swap on
``(critical, warning, soft)``. The terms are the same as :func:`.objective.evaluate`'s:

- ``load_imbalance``, ``Σ_d |load_d − S / D|`` with ``S`` the total load: the mean moves whenever
  the total does (a task placed, removed, or moved between a free run and a host block), which
  changes every day's term. The evaluator keeps a histogram of the day loads (``0..spd``) and the
  exact integer ``Σ_v hist[v] · |D · v − S|`` (``D`` times the term), ``O(spd)`` per reading;
- ``same_category``: per (subject, day) counters, updated in ``O(1)``;
- ``isolated_free`` and ``context_switch``: per-day figures, recomputed on the days a move
  touches (a row is a dozen periods);
- ``late`` and ``time_of_day``: per-task constants of a place, added and subtracted.

Exact: every term but the load term is an integer, and the load term's numerator is an integer
too (:meth:`SoftEvaluator.load_numerator`); ``tests/solver/test_soft_eval.py`` checks every term
against :func:`.objective.evaluate` after random moves, placements and removals.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..health_facts import day_loads
from .objective import (
    TERM_NAMES,
    clustered_subjects,
    lateness,
    off_preference,
    preferred_slots,
    resolve_weights,
)
from .problem import Placement, Problem, Rule


class SoftEvaluator:
    """The soft terms of one window with a movable scope; ``place``/``remove`` update them."""

    def __init__(self, problem: Problem, weights: Mapping[str, float] | None = None) -> None:
        self.problem = problem
        self.weights = resolve_weights(weights)
        self._w = [self.weights[name] for name in TERM_NAMES]
        owner = np.asarray(problem.owner)
        self.num_days, self.spd = (int(v) for v in owner.shape)
        # subject codes: 0 is "" (no subject: a free period, an event's), a subject another
        names: dict[object, int] = {"": 0}
        subjects = np.asarray(problem.subjects)
        if subjects.shape != owner.shape:  # a problem built without subjects
            subjects = np.full(owner.shape, "", dtype=object)
        cells = subjects.ravel().tolist()
        for value in cells:
            if value not in names:
                names[value] = len(names)
        for k in problem.task_subjects.values():
            names.setdefault(k, len(names))
        self.code = names
        self.subj = np.array([names[v] for v in cells], dtype=np.int64).reshape(owner.shape)
        self.base_subj = self.subj.copy()  # the fixed study layer (what a leaving guest uncovers)
        self.occupied = owner != 0
        self.mine = np.zeros(owner.shape, dtype=bool)
        cluster = clustered_subjects(problem)
        self.cluster = {names[k] for k in cluster if k in names}
        self.counts: dict[tuple[int, int], int] = {}
        scope_subjects = set(problem.task_subjects.values())
        for (k, d), n in problem.fixed_counts.items():
            if k in scope_subjects:
                self.counts[(names[k], d)] = n
        self.same = sum(self._same_term(k, n) for (k, _), n in self.counts.items())
        self.loads = day_loads(self.occupied).astype(np.int64)
        self.hist = np.bincount(self.loads, minlength=self.spd + 1).astype(np.int64)
        self.total_load = int(self.loads.sum())
        self._values = np.arange(self.spd + 1, dtype=np.int64) * self.num_days
        self.day_isolated = np.zeros(self.num_days, dtype=np.int64)
        self.day_switches = np.zeros(self.num_days, dtype=np.int64)
        self.isolated = self.switches = 0
        self.late = self.tod = self.placed_slots = 0
        self.group_of = problem.group_of()
        self._prefs: dict[Rule, frozenset[int] | None] = {}
        self._task_code = {t: names[k] for t, k in problem.task_subjects.items()}
        self.placed_scope: dict[int, Placement] = {}
        for d in range(self.num_days):
            self._day(d)

    # ------------------------------------------------------------------ per term
    def _same_term(self, code: int, n: int) -> int:
        if code in self.cluster:
            return 1 if n > 0 else 0
        return max(0, n - 1)

    def _count(self, code: int, day: int, step: int) -> None:
        key = (code, day)
        n = self.counts.get(key, 0)
        self.same += self._same_term(code, n + step) - self._same_term(code, n)
        self.counts[key] = n + step

    def _place_terms(self, pl: Placement) -> tuple[int, int]:
        """(late days, periods off the preference) of ``pl``."""
        rule = self.problem.groups[self.group_of[pl.task_id]].rule
        if rule not in self._prefs:
            self._prefs[rule] = preferred_slots(self.problem, rule)
        return lateness(rule, pl.day), off_preference(self._prefs[rule], pl.slot_start, pl.slot_end)

    def _set_load(self, d: int, load: int) -> None:
        old = int(self.loads[d])
        self.hist[old] -= 1
        self.hist[load] += 1
        self.total_load += load - old
        self.loads[d] = load

    def _day(self, d: int) -> None:
        """Recompute day ``d``'s isolated free periods and switches.

        The per-move path: one row of a dozen periods, counted in a Python loop, which is
        several times faster on such a row than building arrays for the shared definitions.
        The counts must equal them: the isolated free periods are the runs of length 1 of
        :func:`..health_facts.free_runs` of the free periods, the switches the pairs of
        :func:`..health_facts.switch_mask` of the study layer that touch a scope period
        (``tests/solver/test_soft_eval.py`` compares both on random days)."""
        occ = self.occupied[d].tolist()
        isolated = 0
        run = 0
        for v in [*occ, True]:
            if v:
                isolated += run == 1
                run = 0
            else:
                run += 1
        subj = self.subj[d].tolist()
        mine = self.mine[d].tolist()
        switches = 0
        for i in range(self.spd - 1):
            a, b = subj[i], subj[i + 1]
            if a and b and a != b and (mine[i] or mine[i + 1]):
                switches += 1
        self.isolated += isolated - int(self.day_isolated[d])
        self.switches += switches - int(self.day_switches[d])
        self.day_isolated[d] = isolated
        self.day_switches[d] = switches

    # ------------------------------------------------------------------ updates
    def place(self, pl: Placement, refresh: bool = True) -> None:
        d, a, b = pl.day - 1, pl.slot_start - 1, pl.slot_end
        code = self._task_code[pl.task_id]
        self.subj[d, a:b] = code  # (a guest's subject replaces its host's period)
        self.mine[d, a:b] = True
        if pl.embed_host is None:
            self.occupied[d, a:b] = True
            self._set_load(d, int(self.loads[d]) + pl.length)
        self._count(code, pl.day, 1)
        late, tod = self._place_terms(pl)
        self.late += late
        self.tod += tod
        self.placed_slots += pl.length
        self.placed_scope[pl.task_id] = pl
        if refresh:
            self._day(d)

    def remove(self, task_id: int, refresh: bool = True) -> Placement:
        pl = self.placed_scope.pop(task_id)
        d, a, b = pl.day - 1, pl.slot_start - 1, pl.slot_end
        code = self._task_code[task_id]
        self.subj[d, a:b] = self.base_subj[d, a:b]
        self.mine[d, a:b] = False
        if pl.embed_host is None:
            self.occupied[d, a:b] = False
            self._set_load(d, int(self.loads[d]) - pl.length)
        self._count(code, pl.day, -1)
        late, tod = self._place_terms(pl)
        self.late -= late
        self.tod -= tod
        self.placed_slots -= pl.length
        if refresh:
            self._day(d)
        return pl

    def refresh(self, days: Iterable[int]) -> None:
        """Recompute the per-day figures of ``days`` (1-based) after unrefreshed updates."""
        for day in set(days):
            self._day(day - 1)

    def set_placements(self, placements: Sequence[Placement]) -> None:
        """Replace every scope placement."""
        days = {pl.day for pl in self.placed_scope.values()}
        for tid in list(self.placed_scope):
            self.remove(tid, refresh=False)
        for pl in placements:
            self.place(pl, refresh=False)
        self.refresh(days | {pl.day for pl in placements})

    # ------------------------------------------------------------------ readings
    def load_numerator(self) -> int:
        """``D`` times the load term, exactly: ``Σ_d |D · load_d − S|``."""
        return int((self.hist * np.abs(self._values - self.total_load)).sum())

    def terms(self) -> dict[str, float]:
        """Every soft term, ``weighted_total``, ``placed_slots`` and ``unplaced_slots``, as
        :func:`.objective.evaluate` reports them."""
        values = (
            self.load_numerator() / self.num_days,
            float(self.same),
            float(self.isolated),
            float(self.switches),
            float(self.late),
            float(self.tod),
        )
        out = dict(zip(TERM_NAMES, values, strict=True))
        out["weighted_total"] = sum(w * v for w, v in zip(self._w, values, strict=True))
        out["placed_slots"] = float(self.placed_slots)
        out["unplaced_slots"] = float(self.problem.required_slots - self.placed_slots)
        return out

    def total(self) -> float:
        """The weighted total of the soft terms (what a search compares last)."""
        w = self._w
        return (
            w[0] * (self.load_numerator() / self.num_days)
            + w[1] * self.same
            + w[2] * self.isolated
            + w[3] * self.switches
            + w[4] * self.late
            + w[5] * self.tod
        )


__all__ = ["SoftEvaluator"]
