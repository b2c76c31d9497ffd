"""The health facts and their judgement, written once (issue 25 item 2).

Both incremental evaluators of health read this module and compute no fact of their own:
``analyzers/evaluator.py`` (the issues ``analyze_health`` reports, kept per entity, with the
deltas of moves) and ``solver/health_eval.py`` (the close stage's ``(critical, warning)`` counts
with the solver's scope lifted out). It sits beside :mod:`.rules` and :mod:`.concepts`, below
the analyzers and the solver (it imports neither), so the two views are one model:

- **subjects** (:class:`SubjectCodes`): the subject of every task as a code, and its budget;

- **day facts** (:class:`DayFacts`, :func:`day_facts`, :func:`grid_day_facts`): a day's load,
  free and usable periods (free runs of at least ``MIN_USABLE``), and its study layer (a
  guest's subject replaces its host's period, :mod:`.concepts`): the periods holding a subject,
  the context switches, the heavy pairs (switches between two hard subjects, issue 42), the
  periods of each subject;
- **subject facts** (:class:`SubjectDays`): a subject's present days, the multiset of gaps
  between consecutive ones (its largest gap), its periods and the sum of their per-day squares
  (the concentration's HHI), kept incrementally as days change;
- **window sums** (:func:`window_sums`, :func:`moved_sums`): the loads' sum, sum of squares and
  histogram (standard deviation and range), free and usable periods, days without a buffer;
- **judgement**: the metric row of each entity from its facts (:func:`day_load_metrics`,
  :func:`day_context_metrics`, :func:`subject_metrics`, :func:`overall_metrics`) and the rules
  of the table that fire on it (:func:`judge`, through :func:`..rules.first_band`), by entity
  (:class:`LevelRules`). The analyzers turn a judgement into issues, the solver into counts.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from .concepts import hard_subjects, subject_of
from .rules import (
    DIMENSIONS,
    Band,
    Level,
    Rule,
    concentration_of,
    first_band,
    r4,
    rules_for,
    sample_std_dev,
    subject_class,
)

if TYPE_CHECKING:
    from .state import ScheduleState, Task

MIN_USABLE = 2  # analyze_health's tolerance parameters (min_usable_size, min_daily_buffer)
MIN_BUFFER = 2
SEVERE = ("critical", "warning")
MEMO_SIZE = 10_000  # judgements an evaluator remembers (by their facts) before starting afresh

# ------------------------------------------------------------------------------ subjects


@dataclass
class SubjectCodes:
    """The subjects of a window's study tasks (:func:`..concepts.subject_of`) as codes 1, 2, ...
    in the order of their first task; 0 stands for no subject (an event, a free period).

    Task ids may be sparse (any id up to 2**31 - 1): ``of_task`` is a mapping and
    :meth:`of_ids` looks arrays of ids up through a direct table only when the ids are dense
    enough, else through the sorted ids, so no table ever grows with the largest id."""

    names: list[str]  # code - 1 -> subject name
    code_of: dict[str, int]  # subject name -> code
    of_task: dict[int, int]  # task id -> code (0: an event), for every task of the window
    class_ids: dict[int, list[int]]  # code -> its tasks' category ids, in order, once each
    _table: tuple[np.ndarray, np.ndarray | None] | None = field(
        default=None, repr=False, compare=False
    )

    def budget(self, state: ScheduleState, code: int) -> tuple[int | None, int | None]:
        """The subject's task class's ``(total_slots, end_day)`` (``None``: no class) by
        :func:`..rules.subject_class`: the budget the ``budget_lag`` rule reads."""
        tc = subject_class(state, self.names[code - 1], self.class_ids[code])
        return (tc.total_slots, tc.end_day) if tc is not None else (None, None)

    def of_ids(self, ids: np.ndarray) -> np.ndarray:
        """The code of every task id of ``ids`` (an int array of any shape; 0, no task, stays 0).
        An id of no task of the window raises ``IndexError``."""
        if self._table is None:
            n = len(self.of_task)
            keys = np.fromiter(self.of_task.keys(), dtype=np.int64, count=n)
            values = np.fromiter(self.of_task.values(), dtype=np.int64, count=n)
            top = int(keys.max()) if n else 0
            if top <= _DENSE_IDS * n + 64:  # a direct table: a few times the tasks at most
                lut = np.full(top + 1, -1, dtype=np.int64)
                lut[0] = 0
                lut[keys] = values
                self._table = (lut, None)
            else:
                order = np.argsort(keys)
                self._table = (keys[order], values[order])
        first, second = self._table
        if second is None:
            out: np.ndarray = first[ids]  # an id beyond the table: numpy's IndexError
            if ids.size and int(out.min()) < 0:
                raise IndexError("a task id the subject codes do not know")
            return out
        if first.size == 0:
            if ids.size and ids.any():
                raise IndexError("a task id the subject codes do not know")
            return np.zeros(ids.shape, dtype=np.int64)
        idx = np.minimum(np.searchsorted(first, ids), first.size - 1)
        known = first[idx] == ids
        if not (known | (ids == 0)).all():
            raise IndexError("a task id the subject codes do not know")
        return np.where(known, second[idx], 0)

    def hard(self, state: ScheduleState) -> frozenset[int]:
        """The codes of the hard subjects of ``state`` (:func:`..concepts.hard_subjects`: the
        classes' profiles, issue 42), whose switches are heavy pairs."""
        named = hard_subjects(state)
        return frozenset(self.code_of[n] for n in named if n in self.code_of)

    def hard_mask(self, hard: Container[int]) -> np.ndarray | None:
        """By code (0 included, never hard), whether it is in ``hard``; ``None`` when none is."""
        codes = [c for c in range(1, len(self.names) + 1) if c in hard]
        if not codes:
            return None
        out = np.zeros(len(self.names) + 1, dtype=bool)
        out[codes] = True
        return out

    def study_layer(self, owner: np.ndarray, guest: np.ndarray) -> np.ndarray:
        """The study layer of an owner and a guest layer (days x periods of task ids):
        :func:`study_layer` with these codes."""
        return study_layer(owner, guest, self.of_ids)


_DENSE_IDS = 4  # ids up to this many times the task count (+ 64) get a direct lookup table


def subject_codes(tasks: Iterable[Task]) -> SubjectCodes:
    """The :class:`SubjectCodes` of ``tasks`` (a window's task list)."""
    names: list[str] = []
    code_of: dict[str, int] = {}
    class_ids: dict[int, list[int]] = {}
    of_task: dict[int, int] = {}
    for t in tasks:
        name = subject_of(t)
        if name is None:
            of_task[t.state_id] = 0
            continue
        code = code_of.get(name)
        if code is None:
            names.append(name)
            code = code_of[name] = len(names)
            class_ids[code] = []
        of_task[t.state_id] = code
        cid = t.category_id
        if cid is not None:
            ids = class_ids[code]
            if cid not in ids:
                ids.append(cid)
    return SubjectCodes(names, code_of, of_task, class_ids)


def study_layer(
    owner: np.ndarray, guest: np.ndarray, code: Callable[[np.ndarray], np.ndarray] | np.ndarray
) -> np.ndarray:
    """The *study layer* (:mod:`.concepts`): per period of ``owner`` / ``guest`` (days x
    periods of task ids, 0 for none) the subject code of the study task doing it, a guest's
    over its host's; 0 for a free period or an event. ``code`` maps an array of task ids to
    their codes (:meth:`SubjectCodes.of_ids`), or is an array of the code of every id."""
    of = code.__getitem__ if isinstance(code, np.ndarray) else code
    study: np.ndarray = of(owner)
    if guest.any():
        study = np.where(guest != 0, of(guest), study)
    return study


# ------------------------------------------------------------------------------ day facts


@dataclass(frozen=True)
class DayFacts:
    """What the day rules and the window sums read of one day."""

    total: int  # occupied periods (guests add none)
    free: int
    usable: int  # free periods in runs of at least MIN_USABLE
    occupied: int  # periods of the study layer holding a subject
    switches: int
    subjects: dict[int, int]  # subject code -> periods of the study layer that day
    # switches between two hard subjects (the ``heavy_adjacent`` pairs, issue 42): 0 in a
    # window without hard subjects
    heavy: int = 0


def day_facts(
    own: Sequence[int],
    gst: Sequence[int],
    code: Sequence[int] | Mapping[int, int],
    spd: int,
    hard: Container[int] = (),
) -> DayFacts:
    """The facts of one day from its owner and guest rows (task ids, 0 for none) and the subject
    code of every task id (0: an event; :attr:`SubjectCodes.of_task`), in plain Python (a day is
    a dozen periods); ``hard``: the codes of the hard subjects (:meth:`SubjectCodes.hard`), whose
    switches are the day's heavy pairs. An id ``code`` does not know raises ``LookupError``."""
    total = usable = run = occupied = switches = heavy = 0
    prev = 0
    subjects: dict[int, int] = {}
    for o, g in zip(own, gst, strict=True):
        if o:
            total += 1
            if run >= MIN_USABLE:
                usable += run
            run = 0
        else:
            run += 1
        c = code[g] if g else code[o] if o else 0
        if c:
            occupied += 1
            subjects[c] = subjects.get(c, 0) + 1
            if prev and prev != c:
                switches += 1
                if hard and prev in hard and c in hard:
                    heavy += 1
        prev = c
    if run >= MIN_USABLE:
        usable += run
    return DayFacts(total, spd - total, usable, occupied, switches, subjects, heavy)


# ------------------------------------------------------------------------------ whole-grid passes
# The per-day facts of a whole grid (days x periods) as arrays: what :func:`grid_day_facts`
# builds its facts from and what the dimension tools' whole-window passes report, so that each
# fact has one definition (issue 25 item 1).


def day_loads(occupied: np.ndarray) -> np.ndarray:
    """Each row's load: its occupied periods (``occupied``: a mask, or task ids with 0 free)."""
    out: np.ndarray = np.count_nonzero(occupied, axis=1)
    return out


def free_runs(free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The maximal runs of free periods along each row of the mask ``free``: ``(row, start,
    length)`` arrays, 0-based, by row then start."""
    padded = np.zeros((free.shape[0], free.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = free
    diff = np.diff(padded, axis=1)
    rows, first = np.nonzero(diff == 1)
    _, end = np.nonzero(diff == -1)
    return rows, first, end - first


def usable_periods(
    rows: np.ndarray, length: np.ndarray, num_days: int, min_usable: int = MIN_USABLE
) -> np.ndarray:
    """Each day's usable periods from its free runs (:func:`free_runs`): the free periods in
    runs of at least ``min_usable``."""
    weights = np.where(length >= min_usable, length, 0)
    out: np.ndarray = np.bincount(rows, weights=weights, minlength=num_days).astype(np.int64)
    return out


def buffered(usable: np.ndarray, min_buffer: int = MIN_BUFFER) -> np.ndarray:
    """Which days have a buffer: usable periods (:func:`usable_periods`) of at least
    ``min_buffer`` (the ``buffer`` rule counts the days without one)."""
    out: np.ndarray = usable >= min_buffer
    return out


def switch_mask(study: np.ndarray) -> np.ndarray:
    """``(days, periods - 1)``: whether periods ``q`` and ``q + 1`` of the study layer (subject
    codes, 0 for none) are a context switch (:func:`..concepts.is_switch`, vectorised)."""
    left, right = study[:, :-1], study[:, 1:]
    out: np.ndarray = (left != 0) & (right != 0) & (left != right)
    return out


def study_periods(study: np.ndarray) -> np.ndarray:
    """Each day's periods of the study layer holding a subject."""
    out: np.ndarray = np.count_nonzero(study, axis=1)
    return out


def heavy_mask(study: np.ndarray, switch: np.ndarray, hard: np.ndarray) -> np.ndarray:
    """The switches ``switch`` (:func:`switch_mask` of ``study``) between two hard subjects
    (``hard``: by subject code, code 0 not hard): the ``heavy_adjacent`` metric's pairs."""
    left, right = study[:, :-1], study[:, 1:]
    out: np.ndarray = switch & hard[left] & hard[right]
    return out


def day_switches(study: np.ndarray) -> np.ndarray:
    """Each day's context switches in the study layer ``study``."""
    out: np.ndarray = np.count_nonzero(switch_mask(study), axis=1)
    return out


def same_subject_runs(study: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of one subject code along each row: ``(row, start, length, code)``, 0-based."""
    rows, spd = study.shape
    padded = np.full((rows, spd + 1), -1, dtype=np.int64)
    padded[:, :spd] = study
    flat = padded.ravel()
    starts = np.concatenate(([0], np.flatnonzero(flat[1:] != flat[:-1]) + 1))
    lengths = np.diff(np.concatenate((starts, [flat.size])))
    codes = flat[starts]
    keep = codes > 0
    starts, lengths, codes = starts[keep], lengths[keep], codes[keep]
    return starts // (spd + 1), starts % (spd + 1), lengths, codes


def grid_day_facts(
    owner: np.ndarray, study: np.ndarray, hard: np.ndarray | None = None
) -> list[DayFacts]:
    """:func:`day_facts` of every row of an owner layer (days x periods of task ids) and its
    study layer (:func:`study_layer` of it and its guests), vectorised; ``hard``: by subject
    code, whether it is hard (:meth:`SubjectCodes.hard_mask`; ``None``: none is)."""
    spd = owner.shape[1]
    total = day_loads(owner)
    switch = switch_mask(study)
    switches = np.count_nonzero(switch, axis=1)
    heavy = (
        np.count_nonzero(heavy_mask(study, switch, hard), axis=1).tolist()
        if hard is not None and hard.any()
        else [0] * owner.shape[0]
    )
    occupied = study_periods(study)
    rows, _, length = free_runs(owner == 0)
    usable = usable_periods(rows, length, owner.shape[0])
    out: list[DayFacts] = []
    study_rows = study.tolist()
    for i, (t, u, o, s) in enumerate(
        zip(
            total.tolist(),
            usable.tolist(),
            occupied.tolist(),
            switches.tolist(),
            strict=True,
        )
    ):
        subjects: dict[int, int] = {}
        if o:
            for c in study_rows[i]:
                if c:
                    subjects[c] = subjects.get(c, 0) + 1
        out.append(DayFacts(t, spd - t, u, o, s, subjects, heavy[i]))
    return out


def row_free_runs(row: Sequence[int], min_len: int = 1) -> list[tuple[int, int]]:
    """``(first, last)`` periods (1-based) of each run of free periods (0) of at least
    ``min_len`` in one day's owner row: :func:`free_run_spans` of one row, in plain Python
    (without numpy's per-call cost, for a search that reads a few days)."""
    out: list[tuple[int, int]] = []
    start = 0
    for q, owner in enumerate(row, start=1):
        if owner:
            if start and q - start >= min_len:
                out.append((start, q - 1))
            start = 0
        elif not start:
            start = q
    if start and len(row) + 1 - start >= min_len:
        out.append((start, len(row)))
    return out


def free_run_spans(owner: np.ndarray) -> list[list[tuple[int, int]]]:
    """Per row of ``owner``, the ``(first, last)`` 1-based periods of each run of zeros."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(owner.shape[0])]
    rows, first, length = free_runs(owner == 0)
    for r, a, n in zip(rows.tolist(), first.tolist(), length.tolist(), strict=True):
        out[r].append((a + 1, a + n))
    return out


# ------------------------------------------------------------------------------ subject facts


@dataclass
class SubjectDays:
    """The study layer's periods of one subject by day, with the sums its rules read: the
    present days in order, the multiset of gaps between consecutive ones, the periods and the
    sum of their per-day squares (the concentration's HHI)."""

    daily: dict[int, int] = field(default_factory=dict)  # 1-based day -> periods
    present: list[int] = field(default_factory=list)
    gaps: dict[int, int] = field(default_factory=dict)  # gap -> how many
    used: int = 0
    squares: int = 0

    @classmethod
    def of(cls, daily: dict[int, int]) -> SubjectDays:
        present = sorted(daily)
        gaps: dict[int, int] = {}
        for g in gaps_of(present):
            gaps[g] = gaps.get(g, 0) + 1
        used = sum(daily.values())
        return cls(daily, present, gaps, used, sum(v * v for v in daily.values()))

    def changed(self, new: dict[int, int]) -> SubjectDays:
        """This subject with the days of ``new`` (1-based day -> periods, 0 for none) replaced;
        the cost is that of the changed days (plus a copy of the present list). Its ``daily``
        is this one's, not yet changed (see :meth:`updated`)."""
        used, squares = self.used, self.squares
        moved: list[int] = []
        for d, n in new.items():
            o = self.daily.get(d, 0)
            used += n - o
            squares += n * n - o * o
            if (o == 0) != (n == 0):
                moved.append(d)
        if not moved:
            return SubjectDays(self.daily, self.present, self.gaps, used, squares)
        gaps = dict(self.gaps)
        present = list(self.present)
        for pairs, sign in ((_pairs_around(present, moved), -1), (None, 1)):
            if pairs is None:
                for d in moved:
                    i = bisect.bisect_left(present, d)
                    if i < len(present) and present[i] == d:
                        del present[i]
                    else:
                        present.insert(i, d)
                pairs = _pairs_around(present, moved)
            for a, b in pairs:
                g = b - a - 1
                k = gaps.get(g, 0) + sign
                if k:
                    gaps[g] = k
                else:
                    gaps.pop(g, None)
        return SubjectDays(self.daily, present, gaps, used, squares)

    def adopt(self, new: dict[int, int]) -> None:
        """Write the days of ``new`` into :attr:`daily` (after :meth:`changed` of them, whose
        result shares this map: the old value is not to be read again)."""
        daily = self.daily
        for d, n in new.items():
            if n:
                daily[d] = n
            else:
                daily.pop(d, None)

    def updated(self, new: dict[int, int]) -> SubjectDays:
        """:meth:`changed` with its ``daily`` map changed too (in place: this value is spent)."""
        out = self.changed(new)
        self.adopt(new)
        return out

    @property
    def max_gap(self) -> int | None:
        return largest_gap(self.gaps)

    def largest_gap_span(self) -> tuple[int, int] | None:
        """The first largest gap as ``(last day before, first day after)`` (1-based), or
        ``None`` without a gap."""
        return largest_gap_span(self.present) if self.gaps else None


def largest_gap(gaps: Iterable[int]) -> int | None:
    """The ``max_gap`` metric (p1 §4.4) of a subject's gaps (a list, or a multiset's keys);
    ``None`` without a gap."""
    return max(gaps, default=None)


def gaps_of(present: Sequence[int]) -> list[int]:
    """The gaps between consecutive present days (ascending, 1-based): the days between them."""
    return [b - a - 1 for a, b in itertools.pairwise(present)]


def largest_gap_span(present: Sequence[int]) -> tuple[int, int] | None:
    """The first largest gap of the present days (ascending) as ``(last day before, first day
    after)``, or ``None`` without a gap."""
    best: tuple[int, int] | None = None
    for a, b in itertools.pairwise(present):
        if best is None or b - a > best[1] - best[0]:
            best = (a, b)
    return best


def subject_day_counts(study: np.ndarray, codes: int) -> np.ndarray:
    """``(days, codes)``: the periods of each subject code (0 to ``codes - 1``) in the study layer
    ``study`` by day (column 0: periods holding no subject)."""
    num_days = study.shape[0]
    keys = (np.arange(num_days)[:, None] * codes + study).ravel()
    out: np.ndarray = np.bincount(keys, minlength=num_days * codes).reshape(num_days, codes)
    return out


def _pairs_around(present: list[int], days: list[int]) -> set[tuple[int, int]]:
    """The consecutive pairs ``(a, b)`` of ``present`` with ``a <= d <= b`` for one of ``days``."""
    out: set[tuple[int, int]] = set()
    n = len(present)
    for d in days:
        i = bisect.bisect_left(present, d)
        if i < n and present[i] == d:
            if i > 0:
                out.add((present[i - 1], d))
            if i + 1 < n:
                out.add((d, present[i + 1]))
        elif 0 < i < n:
            out.add((present[i - 1], present[i]))
    return out


def subject_days(days: Sequence[DayFacts]) -> dict[int, SubjectDays]:
    """Every subject's :class:`SubjectDays` from the facts of every day (0-based, in order)."""
    per: dict[int, dict[int, int]] = {}
    for d, facts in enumerate(days):
        for c, n in facts.subjects.items():
            per.setdefault(c, {})[d + 1] = n
    return {c: SubjectDays.of(v) for c, v in per.items()}


def subject_changes(old: DayFacts, new: DayFacts) -> dict[int, int]:
    """The subjects whose periods differ between two facts of one day: code -> new periods."""
    was, now = old.subjects, new.subjects
    out: dict[int, int] = {}
    for c in was.keys() | now.keys():
        n = now.get(c, 0)
        if was.get(c, 0) != n:
            out[c] = n
    return out


# ------------------------------------------------------------------------------ window sums

Sums = tuple[int, int, int, int, int]  # loads' sum, their squares, free, usable, no-buffer days


def window_sums(days: Sequence[DayFacts], spd: int) -> tuple[Sums, list[int]]:
    """The window-wide sums of the facts of every day, and the histogram of the day loads."""
    hist = [0] * (spd + 1)
    total = sq = free = usable = no_buffer = 0
    for f in days:
        hist[f.total] += 1
        total += f.total
        sq += f.total * f.total
        free += f.free
        usable += f.usable
        no_buffer += f.usable < MIN_BUFFER
    return (total, sq, free, usable, no_buffer), hist


def moved_sums(sums: Sums, hist: list[int], old: DayFacts, new: DayFacts) -> Sums:
    """``sums`` with one day's facts changed from ``old`` to ``new`` (``hist`` changed in
    place)."""
    total, sq, free, usable, no_buffer = sums
    hist[old.total] -= 1
    hist[new.total] += 1
    return (
        total + new.total - old.total,
        sq + new.total * new.total - old.total * old.total,
        free + new.free - old.free,
        usable + new.usable - old.usable,
        no_buffer + (new.usable < MIN_BUFFER) - (old.usable < MIN_BUFFER),
    )


def load_range(hist: Sequence[int]) -> int:
    """The largest day load minus the least, from the loads' histogram (0 without days)."""
    lo, hi = 0, len(hist) - 1
    while lo < hi and not hist[lo]:
        lo += 1
    while hi > lo and not hist[hi]:
        hi -= 1
    return hi - lo


# ------------------------------------------------------------------------------ metric rows


def utilization(total: int, spd: int) -> float:
    """A day's utilization: its load over its periods (the ``day_utilization`` metric)."""
    return r4(total / spd)


def day_load_metrics(total: int, spd: int) -> dict[str, Any]:
    """The day rules' load metrics (p1 §4.3)."""
    return {"utilization": utilization(total, spd)}


def fragmentation(switches: int, occupied: int) -> float:
    """A day's context fragmentation: its switches over the gaps between its ``occupied`` study
    periods (the ``context_switch`` rule's second metric)."""
    return r4(switches / max(occupied - 1, 1))


def day_context_metrics(switches: int, occupied: int, heavy: int = 0) -> dict[str, Any]:
    """The day rules' context metrics of a day whose study layer holds ``occupied`` periods
    and ``heavy`` heavy pairs (:func:`heavy_mask`, issue 42) (p1 §4.5)."""
    return {
        "switch_count": switches,
        "fragmentation": fragmentation(switches, occupied),
        "heavy_adjacent": heavy,
    }


def subject_metrics(
    max_gap: int | None,
    used: int,
    squares: int,
    blocks: int,
    num_days: int,
    budget_total: int | None,
    end_day: int | None,
) -> dict[str, Any]:
    """A subject's metrics (p1 §4.4) from its facts: its largest gap, periods and their per-day
    squares, its placed blocks, and its task class's budget and end day (``None``: no class)."""
    return {
        "max_gap": max_gap,
        "concentration": concentration_of(used, squares, blocks, num_days),
        "budget_progress": r4(used / budget_total) if budget_total else None,
        "days_to_end": end_day - 1 if end_day is not None else None,
    }


def load_spread_metrics(num_days: int, total: int, sq: int, hist: Sequence[int]) -> dict[str, Any]:
    """The ``load_imbalance`` metrics (p1 §4.3) of ``num_days`` day loads from their sum, sum of
    squares and histogram."""
    return {"load_std_dev": r4(sample_std_dev(num_days, total, sq)), "load_range": load_range(hist)}


def load_spread_of(loads: np.ndarray, spd: int) -> dict[str, Any]:
    """:func:`load_spread_metrics` of an array of day loads (each at most ``spd``)."""
    ints = loads.astype(np.int64)
    hist = np.bincount(ints, minlength=spd + 1).tolist()
    return load_spread_metrics(int(ints.size), int(ints.sum()), int((ints * ints).sum()), hist)


def fragmentation_rate(free: int, usable: int) -> float:
    """The share of free periods that are not usable (the ``free_fragmentation`` metric)."""
    return r4((free - usable) / free) if free else 0.0


def overall_metrics(num_days: int, sums: Sums, hist: Sequence[int]) -> dict[str, Any]:
    """The window's metrics (p1 §4.3 load imbalance, §4.6 tolerance) from its sums."""
    total, sq, free, usable, no_buffer = sums
    return {
        **load_spread_metrics(num_days, total, sq, hist),
        "days_without_buffer": no_buffer,
        "fragmentation_rate": fragmentation_rate(free, usable),
    }


# ------------------------------------------------------------------------------ judgement

# the rules that fire on an entity's metric row, each with its band and the row
Judged = tuple[tuple[Rule, Band, Mapping[str, Any]], ...]


def judge(rules: Sequence[Rule], row: Mapping[str, Any]) -> Judged:
    """The rules of ``rules`` that fire on the metric ``row``, in order, with their bands."""
    out = []
    for r in rules:
        band = first_band(r, row)
        if band is not None:
            out.append((r, band, row))
    return tuple(out)


def severe_counts(judged: Judged) -> tuple[int, int]:
    """(critical, warning) of a judgement (one issue per firing rule of one entity)."""
    c = w = 0
    for _, band, _ in judged:
        if band.severity == "critical":
            c += 1
        elif band.severity == "warning":
            w += 1
    return c, w


@dataclass(frozen=True)
class LevelRules:
    """The rule table at one level by the entity it judges (in the analyzers' order)."""

    level: Level
    day_load: tuple[Rule, ...]  # day_utilization
    day_context: tuple[Rule, ...]  # context_switch, heavy_adjacent
    subject: tuple[Rule, ...]  # subject_gap, subject_concentration, budget_lag
    overall: tuple[Rule, ...]  # load_imbalance, buffer, free_fragmentation

    def day(
        self, total: int, occupied: int, switches: int, spd: int, heavy: int = 0
    ) -> tuple[Judged, Judged]:
        """A day's (load, context) judgements (:func:`day_judgement`)."""
        return day_judgement(self.level, total, occupied, switches, spd, heavy)


@cache
def level_rules(level: Level) -> LevelRules:
    """The rule table at ``level`` by entity (cached: the table is immutable)."""
    entity: dict[str, list[Rule]] = {"day": [], "subject": [], "overall": []}
    for dim in DIMENSIONS:
        for r in rules_for(dim, level):
            entity[r.entity].append(r)
    day = entity["day"]
    return LevelRules(
        level,
        tuple(r for r in day if r.dimension == "load"),
        tuple(r for r in day if r.dimension == "context"),
        tuple(entity["subject"]),
        tuple(entity["overall"]),
    )


@cache
def day_judgement(
    level: Level, total: int, occupied: int, switches: int, spd: int, heavy: int = 0
) -> tuple[Judged, Judged]:
    """A day's (load, context) judgements at ``level`` from its facts; the context rules judge
    a day whose study layer holds a subject only. Cached: a day has few distinct facts (its
    load, study periods, switches and heavy pairs are at most its periods), and both views ask
    often."""
    rules = level_rules(level)
    load = judge(rules.day_load, day_load_metrics(total, spd))
    if not occupied:
        return load, ()
    return load, judge(rules.day_context, day_context_metrics(switches, occupied, heavy))


__all__ = [
    "MEMO_SIZE",
    "MIN_BUFFER",
    "MIN_USABLE",
    "SEVERE",
    "DayFacts",
    "Judged",
    "LevelRules",
    "SubjectCodes",
    "SubjectDays",
    "Sums",
    "buffered",
    "day_context_metrics",
    "day_facts",
    "day_judgement",
    "day_load_metrics",
    "day_loads",
    "day_switches",
    "fragmentation",
    "fragmentation_rate",
    "free_run_spans",
    "free_runs",
    "gaps_of",
    "grid_day_facts",
    "heavy_mask",
    "judge",
    "largest_gap",
    "largest_gap_span",
    "level_rules",
    "load_range",
    "load_spread_metrics",
    "load_spread_of",
    "moved_sums",
    "overall_metrics",
    "row_free_runs",
    "same_subject_runs",
    "severe_counts",
    "study_layer",
    "study_periods",
    "subject_changes",
    "subject_codes",
    "subject_day_counts",
    "subject_days",
    "subject_metrics",
    "switch_mask",
    "usable_periods",
    "utilization",
    "window_sums",
]
