"""An exact CP-SAT model of the per-day health rules, for a tight floor (issue 26 item 5).

:mod:`.health_floor`'s relaxation pours the periods to place freely into the free periods a class
allows: task lengths against the free runs of a day are forgotten, and each rule is bounded on its
own. On fragmented windows (free runs of one to three periods, blocks of two to four) that is
weak: a block of four cannot go on a day whose free runs are all shorter, so the periods crowd
onto the days with long runs and push them over the utilisation bands, and a day holding a block
may lose its buffer.

This module decides, exactly, which blocks each day can hold: a day's *pattern* is how many
blocks of each *type* it takes (a type: a length and the banned-period masks that allow the
block where it stands), and the patterns a day allows are those whose blocks pack into its free
runs (enumerated per distinct run structure, shared by the days alike; a pattern another one
dominates is left out). An item fills only blocks its mask allows (Hall's condition per kind of
day over the sets of masks), so classes that ban different periods are counted exactly, not by
the union of what they allow; only a day with more patterns than :data:`MAX_PATTERNS` falls
back to that union (bounded per mask by the free periods it allows). Given a pattern
a day's load is known, so its ``day_utilization`` severity is, and whether it can keep a buffer
(two usable free periods: some run keeps two periods once its blocks are pushed to one end).
Every movable block of the population is one *item* (its length, the days its class allows, the
free runs its banned periods leave it, whether it may sit in a host block instead); the model
assigns item counts to days so that each day's counts are one of its patterns, every placed item
stays placed, at least ``pending_min`` pending periods are placed, and guests (items in host
blocks, which add no load) fit the host blocks (Hall's condition over the host blocks of known
places, off each guest's banned periods). It minimises the ``day_utilization``
issues plus the window's ``buffer`` and ``free_fragmentation`` issues, critical ones in one
solve and critical + warning in another. ``free_fragmentation`` reads the window's free periods
(known from the patterns' loads) against its usable ones (each pattern's most, generously), so
the model's rate is never above a real schedule's.

The population it covers contains every schedule :mod:`.health_floor` bounds (blocks of a placed
task move independently, banned periods only restrict the days an item may take, host capacity is
counted generously), so its objective bound, proven by CP-SAT within the wall-clock limit, is a
lower bound on those rules' issues in every schedule. A solve that proves no bound in time
claims nothing (``proven`` false); the caller then keeps its relaxation's figures.
"""

from __future__ import annotations

import itertools
import math
import operator
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..health_facts import buffered, day_loads, free_runs, usable_periods, utilization
from ..rules import Level, rule, severity
from ._cpsat import OutOfTime, cp_model, make_solver, ran_out, status_of
from .budget import DEFAULT_CALIBRATION, Calibration

MAX_PATTERNS = 600  # a day with more patterns than this makes the model give up (no claim)


@dataclass(frozen=True)
class Item:
    """Movable blocks alike: ``length`` periods, days ``lo..hi`` (1-based, inclusive) but
    ``off``,
    ``allowed``: the periods it may take (False: banned), ``pending``: may stay unplaced,
    ``guest``: may sit inside a host block instead (adding no load), ``count``: how many."""

    length: int
    lo: int
    hi: int
    allowed: tuple[bool, ...]
    pending: bool
    guest: bool
    count: int = 1
    # the days of ``lo..hi`` it may not take: its class's banned weekdays (issue 42)
    off: tuple[int, ...] = ()

    def on(self, day: int) -> bool:
        """Whether the item may take ``day`` (1-based)."""
        return self.lo <= day <= self.hi and day not in self.off


@dataclass
class ExactDays:
    """The model's answer: ``proven``: the bounds below hold (CP-SAT proved them within the
    limit); ``critical`` / ``critical_warning``: least critical and least critical + warning
    issues of ``day_utilization``, ``buffer`` and ``free_fragmentation`` together over the
    population;
    ``lex_warning``: least warnings of those schedules whose criticals are ``critical`` (None:
    not proven; computed only when ``critical`` is the proven optimum, not a mere bound);
    ``runtime_s``; ``figures``: what the explanation quotes (the block lengths, one
    lexicographically best schedule's days over the bands); ``solution``: that schedule as
    the model sees it (per kind of day: its days, pattern counts, item counts and guests by
    index in the items given; guests in floating hosts), for :func:`.realise.realise`;
    when the criticals were not proven least in time, the schedule with the fewest criticals
    found (a start, not a claim)."""

    proven: bool
    critical: int = 0
    critical_warning: int = 0
    lex_warning: int | None = None
    solution: dict[str, Any] | None = None
    runtime_s: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)
    # the wall clock ended it before it was complete (building or a solve); False when it is
    # complete, or its deterministic budget (``work_s``) or an unusable model ended it
    wall_cut: bool = False


class OutOfWork(Exception):
    """The model's building passed its work budget: it gives up, claiming nothing (the same
    on any machine, unlike a wall-clock cut)."""


@dataclass
class Meter:
    """The building's work (steps of the pattern enumeration: patterns carried, pruning
    comparisons, patterns put in the model), against ``budget`` (``None``: no budget; raises
    :class:`OutOfWork` past it) and the wall clock's ``deadline`` (a ``time.perf_counter()``
    value; raises OutOfTime past it)."""

    budget: float | None = None
    deadline: float = math.inf
    spent: int = 0

    def tick(self, steps: int) -> None:
        self.spent += steps
        if self.budget is not None and self.spent > self.budget:
            raise OutOfWork
        if time.perf_counter() > self.deadline:
            raise OutOfTime("the exact model's building passed its deadline")


# A block type: (length, the banned-period masks that allow it, as bits of the model's masks).
BlockType = tuple[int, int]
# A pattern: how many blocks of each type, as sorted (type, count) pairs (types a day lacks left
# out).
Pattern = tuple[tuple[BlockType, int], ...]


def _plus(vec: Pattern, kind: BlockType) -> Pattern:
    """``vec`` with one more block of ``kind``."""
    got = dict(vec)
    got[kind] = got.get(kind, 0) + 1
    return tuple(sorted(got.items()))


def _prune(pats: dict[Pattern, int], meter: Meter | None = None) -> dict[Pattern, int]:
    """``pats`` (pattern → usable periods) without the patterns another one dominates: as many
    blocks of each length, at least as many usable periods, and for every set of masks at
    least as many blocks of each length some mask of the set allows (what Hall's condition in
    the model reads: an item fills a block its mask allows). A dominated pattern is never
    needed for an optimum, and a packing of the dominating one exists (it was enumerated).
    ``meter`` gets its steps: a profile entry each, a comparison each (at most the kept ones of
    a member's group)."""
    if len(pats) < 2:
        return pats
    every = 0
    for vec in pats:
        for (_, allowed), _c in vec:
            every |= allowed
    bits = [b for b in range(every.bit_length()) if every >> b & 1]
    if len(bits) > 4:
        if meter is not None:
            meter.tick(len(pats))
        return pats  # (profiles too long to be worth it)
    sets = [
        sum(1 << b for b in sub)
        for r in range(1, len(bits) + 1)
        for sub in itertools.combinations(bits, r)
    ]
    hits: dict[int, list[int]] = {}  # per block type's mask bits: which sets it meets
    groups: dict[tuple[tuple[int, int], ...], list[tuple[int, tuple[int, ...], Pattern]]] = {}
    for vec, usable in pats.items():
        # per length, per set of masks: the blocks of that length some mask of the set allows
        per_set: dict[int, list[int]] = {}
        per_len: dict[int, int] = {}
        for (n, t), c in vec:
            per_len[n] = per_len.get(n, 0) + c
            row = hits.get(t)
            if row is None:
                row = hits[t] = [1 if t & mask else 0 for mask in sets]
            acc = per_set.get(n)
            if acc is None:
                acc = per_set[n] = [0] * len(sets)
            for i, h in enumerate(row):
                if h:
                    acc[i] += c
        profile = tuple(x for n in sorted(per_len) for x in per_set[n])
        groups.setdefault(tuple(sorted(per_len.items())), []).append((usable, profile, vec))
    out: dict[Pattern, int] = {}
    steps = 0
    for members in groups.values():
        steps += len(members) * (1 + len(members[0][1]))
        if len(members) == 1:
            out[members[0][2]] = members[0][0]
            continue
        members.sort(key=lambda m: (-m[0], [-x for x in m[1]]))
        kept: list[tuple[int, tuple[int, ...]]] = []
        for usable, profile, vec in members:
            if any(u >= usable and all(map(operator.ge, pr, profile)) for u, pr in kept):
                continue
            kept.append((usable, profile))
            out[vec] = usable
        steps += len(members) * len(kept)
    if meter is not None:
        meter.tick(steps)
    return out


def _run_patterns(
    allow: Sequence[int],
    lengths: Sequence[int],
    cap: Callable[[Pattern], bool],
    meter: Meter | None = None,
) -> dict[Pattern, int] | None:
    """Every pattern of blocks packing into one free run (``allow``: per period of the run,
    the bits of the masks that allow it; 0: no movable block may take it) → the periods the
    run keeps free with it. A block's type names the masks allowing all of its periods, so an
    item of a mask goes only where its mask allows (exact, not the union of the masks);
    ``cap`` rejects a pattern beyond the supply. ``None`` as soon as the patterns of a prefix
    of the run, dominated ones pruned, are more than :data:`MAX_PATTERNS`: every one of them
    is carried to the run's end (its later periods left free), so the run's own patterns would
    be more than that too, and the enumeration (quadratic pruning) would take seconds on a free
    day of many masks for nothing. Its steps go to ``meter``."""
    meter = meter or Meter()
    run = len(allow)
    at: list[set[Pattern]] = [set() for _ in range(run + 1)]
    at[0].add(())
    for p in range(run):
        # (what is placed from p on does not depend on how: a dominated start stays dominated)
        prefix = _prune(dict.fromkeys(at[p], 0), meter)
        meter.tick(len(prefix) * len(lengths))
        if len(prefix) > MAX_PATTERNS:
            return None
        for vec in prefix:
            at[p + 1].add(vec)  # period p stays free
            for n in lengths:
                if p + n > run:
                    continue
                bits = -1
                for q in range(p, p + n):
                    bits &= allow[q]
                if bits:
                    new = _plus(vec, (n, bits))
                    if cap(new):
                        at[p + n].add(new)
    return _prune({vec: run - sum(n * c for (n, _), c in vec) for vec in at[run]}, meter)


def _merge(a: Pattern, b: Pattern) -> Pattern:
    got = dict(a)
    for kind, c in b:
        got[kind] = got.get(kind, 0) + c
    return tuple(sorted(got.items()))


def day_patterns(
    free_runs: Sequence[Sequence[int]],
    lengths: Sequence[int],
    supply: Mapping[int, int],
    meter: Meter | None = None,
) -> dict[Pattern, int] | None:
    """The patterns of a day: ``free_runs`` holds each free run as the bits of the masks
    allowing each of its periods (:func:`_run_patterns`); pattern → the most usable free
    periods some packing may leave. ``supply``: per length the blocks of the population; no
    pattern holds more blocks of a length than that (per length only, see ``cap``). Counted
    generously: a run keeping ``left`` free periods gives at most
    ``left`` usable ones when ``left`` reaches ``MIN_USABLE`` (none below: its free pieces are
    all shorter); the day may keep a buffer when they reach ``MIN_BUFFER``. ``None`` beyond
    :data:`MAX_PATTERNS`. Its steps go to ``meter`` (see :class:`Meter`)."""

    def cap(vec: Pattern) -> bool:
        # per length only: a pattern's fate must not change when a dominating one replaces it
        # (same blocks per length), or pruning could lose a pattern a schedule needs; what
        # each mask's items may fill is Hall's condition in the model
        total: dict[int, int] = {}
        for (n, _), c in vec:
            total[n] = total.get(n, 0) + c
        return all(c <= supply.get(n, 0) for n, c in total.items())

    meter = meter or Meter()
    acc: dict[Pattern, int] = {(): 0}  # pattern -> most usable periods
    for allow in free_runs:
        options = _run_patterns(allow, lengths, cap, meter)
        if options is None:
            return None
        # the usable periods each option's free periods give (one run each: health_facts')
        lefts = np.fromiter(options.values(), dtype=np.int64, count=len(options))
        kept = usable_periods(np.arange(len(options)), lefts, len(options)).tolist()
        nxt: dict[Pattern, int] = {}
        for vec, usable in acc.items():
            for add, keeps in zip(options, kept, strict=True):
                new = _merge(vec, add) if add else vec
                if add and not cap(new):
                    continue
                got = usable + keeps
                if nxt.get(new, -1) < got:
                    nxt[new] = got
        meter.tick(len(acc) * len(options))
        acc = _prune(nxt, meter)
        if len(acc) > MAX_PATTERNS:
            return None
    return acc


# Day patterns remembered across models (:func:`_patterns`): a proposal's two scopes, its floor
# and a session's next calls read mostly the same days. At most this many, the oldest dropped.
_PATTERNS_KEPT = 1024
_PATTERNS: OrderedDict[tuple[Any, ...], tuple[dict[Pattern, int] | None, int]] = OrderedDict()


def _patterns(
    runs: tuple[tuple[int, ...], ...],
    lengths: tuple[int, ...],
    supply: tuple[tuple[int, int], ...],
    meter: Meter | None = None,
) -> dict[Pattern, int] | None:
    """:func:`day_patterns` of ``runs``, or of :func:`_collapsed` ``runs`` when typed patterns
    are too many; remembered with their steps (a pure function of its arguments; the models
    only read it). A remembered day charges ``meter`` the steps its enumeration took, so a
    model's building gives up at the same day whatever was remembered; a day stopped by the
    meter is not remembered."""
    meter = meter or Meter()
    key = (runs, lengths, supply)
    if key in _PATTERNS:
        _PATTERNS.move_to_end(key)
        found, steps = _PATTERNS[key]
        meter.tick(steps)
        return found
    before = meter.spent
    found = day_patterns(runs, lengths, dict(supply), meter)
    if found is None:
        found = day_patterns(_collapsed(runs), lengths, dict(supply), meter)
    _PATTERNS[key] = (found, meter.spent - before)
    if len(_PATTERNS) > _PATTERNS_KEPT:
        _PATTERNS.popitem(last=False)
    return found


def _collapsed(runs: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """``runs`` with every period any mask allows allowed by all of the day's masks (the
    relaxation the model falls back to when typed patterns are too many: a block's type is
    its length alone, and per-mask room bounds what each mask's items take)."""
    every = 0
    for run in runs:
        for bits in run:
            every |= bits
    return tuple(tuple(every if bits else 0 for bits in run) for run in runs)


def _rate_thresholds(level: Level) -> tuple[int | None, int | None]:
    """The least ``free_fragmentation`` rates (in 1/10000, as the metric is rounded) that are
    critical, and critical or warning, at ``level`` (``None``: no rate is)."""
    frag_rule = rule("tolerance", "free_fragmentation", level)

    def least(ok: Any) -> int | None:
        def sev(k: int) -> str | None:
            return severity(frag_rule, {"days_without_buffer": 0, "fragmentation_rate": k / 10_000})

        if not ok(sev(10_000)):
            return None
        lo, hi = 0, 10_000  # the bands are ">=" thresholds: severity grows with the rate
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(sev(mid)):
                hi = mid
            else:
                lo = mid + 1
        return lo

    return (
        least(lambda s: s == "critical"),
        least(lambda s: s in ("critical", "warning")),
    )


def _fits(free_row: np.ndarray, allowed: np.ndarray, length: int) -> bool:
    """Some ``length`` consecutive periods of the day are free and allowed."""
    ok = (free_row & allowed).astype(np.int64)
    if ok.size < length:
        return False
    window = np.convolve(ok, np.ones(length, dtype=np.int64), mode="valid")
    return bool((window == length).any())


def _fits_host(it: Item, host: tuple[int | None, int]) -> bool:
    """Whether ``it`` fits the host block ``host`` ((0-based start, length); start ``None``: a
    host that may stand anywhere), off its banned periods."""
    start, n = host
    if it.length > n:
        return False
    if start is None:
        return True
    return any(all(it.allowed[s : s + it.length]) for s in range(start, start + n - it.length + 1))


def _hall_subsets(bits_here: Sequence[int]) -> list[tuple[int, ...]]:
    """The sets of masks Hall's condition is written for: every subset up to six masks;
    beyond, single masks and all."""
    if len(bits_here) <= 6:
        return [
            sub
            for r in range(1, len(bits_here) + 1)
            for sub in itertools.combinations(bits_here, r)
        ]
    return [(b,) for b in bits_here] + [tuple(bits_here)]


Cw = list[tuple[int, int]]  # per value: (critical, critical + warning) of it


def rule_tables(
    level: Level, spd: int, num_days: int, count_load: bool, count_buffer: bool
) -> tuple[Cw, Cw, tuple[int | None, int | None]]:
    """Per load, the ``day_utilization`` severity of a day; per count of days without buffer,
    the ``buffer`` severity of the window; the least critical and warning
    ``free_fragmentation`` rates (:func:`_rate_thresholds`). All none for a rule not counted."""
    util = rule("load", "day_utilization", level)
    util_cw = []  # per load: (critical, critical + warning) of the day
    for load in range(spd + 1):
        sev = severity(util, {"utilization": utilization(load, spd)})
        util_cw.append((int(sev == "critical"), int(sev in ("critical", "warning"))))
    if not count_load:
        util_cw = [(0, 0)] * (spd + 1)
    buf_rule = rule("tolerance", "buffer", level)
    buf_cw = []  # per count of days without buffer
    for nb in range(num_days + 1):
        sev = severity(buf_rule, {"days_without_buffer": nb, "fragmentation_rate": 0.0})
        buf_cw.append((int(sev == "critical"), int(sev in ("critical", "warning"))))
    if not count_buffer:
        buf_cw = [(0, 0)] * (num_days + 1)
    frag_from = _rate_thresholds(level) if count_buffer else (None, None)
    return util_cw, buf_cw, frag_from


def exact_days(
    fixed_owner: np.ndarray,
    items: Sequence[Item],
    *,
    level: Level,
    pending_min: int,
    fixed_hosts: Sequence[tuple[int, int, int]] = (),
    floating_hosts: Sequence[int] = (),
    count_load: bool,
    count_buffer: bool,
    time_limit_s: float,
    num_workers: int = 1,
    work_s: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> ExactDays:
    """Least (critical, critical + warning) issues of ``day_utilization`` (when
    ``count_load``), ``buffer`` and ``free_fragmentation`` (the tolerance rules, when
    ``count_buffer``) over every placement of ``items`` on
    the days of ``fixed_owner`` (0: free), see the module docstring. ``time_limit_s`` bounds
    the whole call, the model's building included; ``num_workers``: CP-SAT's workers;
    ``work_s``: when given, CP-SAT's deterministic time for the solves together (each solve
    gets its share of what is left), so that with one worker the answer is the same on any
    machine the wall clock does not cut (``ExactDays.wall_cut`` says when it did); the
    building then has ``calibration.exact_build_steps_per_work`` steps per unit of it
    (:class:`Meter`), past which the model gives up, claiming nothing, on any machine alike.

    Days alike (the same free runs and allowed stretches, fixed load, items that fit and room
    per banned-period mask) are interchangeable, so the model counts how many days of each
    kind take each pattern rather than choosing one per day (the same optimum, far fewer
    symmetric solutions)."""
    cp_model()  # (the process's one-time import of CP-SAT is not the call's time)
    built = ExactDaysModel(
        fixed_owner,
        items,
        level=level,
        count_load=count_load,
        count_buffer=count_buffer,
        time_limit_s=time_limit_s,
        build_work=None if work_s is None else work_s * calibration.exact_build_steps_per_work,
    )
    given_up = built.build(pending_min, fixed_hosts, floating_hosts)
    if given_up is not None:
        return given_up
    return built.solve(num_workers, work_s)


# Per kind of day: its days, (pattern count, pattern), (item, count), (item, guests).
KindVars = tuple[list[int], list[tuple[Any, Pattern]], list[tuple[int, Any]], list[tuple[int, Any]]]


class ExactDaysModel:
    """The CP-SAT model of :func:`exact_days`, built one constraint family at a time (each a
    method, called from :meth:`build` in a fixed order, so a seed gives the same answer), then
    solved in three lexicographic steps by :meth:`solve`. The clock starts at construction:
    ``time_limit_s`` bounds the building and the solves together."""

    def __init__(
        self,
        fixed_owner: np.ndarray,
        items: Sequence[Item],
        *,
        level: Level,
        count_load: bool,
        count_buffer: bool,
        time_limit_s: float,
        build_work: float | None = None,
    ) -> None:
        self.started = time.perf_counter()
        self.deadline = self.started + time_limit_s
        # the building's steps (see :class:`Meter`), bounded by ``build_work`` when given
        self.meter = Meter(budget=build_work, deadline=self.deadline)
        self.num_days, self.spd = fixed_owner.shape
        self.free = fixed_owner == 0
        self.fixed_load = day_loads(~self.free)
        self.util_cw, self.buf_cw, self.frag_from = rule_tables(
            level, self.spd, self.num_days, count_load, count_buffer
        )
        self.placing = [it for it in items if it.count > 0]
        self.lengths = sorted({it.length for it in self.placing})
        masks = sorted({it.allowed for it in self.placing})
        self.mask_arr = [np.array(m, dtype=bool) for m in masks]
        self.bit_of = [masks.index(it.allowed) for it in self.placing]  # per item: its mask's bit
        self.supply: dict[int, int] = {}  # per length: the blocks of the population
        for it in self.placing:
            self.supply[it.length] = self.supply.get(it.length, 0) + it.count
        self.original = [items.index(it) for it in self.placing]  # placing's items in ``items``
        self.model = cp_model().CpModel()
        self.trivially_false = False
        self.memo: dict[tuple[Any, ...], dict[Pattern, int] | None] = {}
        self.crit_terms: list[Any] = []
        self.cw_terms: list[Any] = []
        self.no_buffer: list[Any] = []
        self.usable_terms: list[Any] = []  # the window's usable periods (most) and free periods
        self.free_terms: list[Any] = []
        self.taken: list[list[Any]] = [[] for _ in self.placing]  # per item: per kind of day
        self.guest_of: list[list[Any]] = [[] for _ in self.placing]  # per item: per host pool
        self.loads_of: list[tuple[list[Any], list[int]]] = []
        self.kind_vars: list[KindVars] = []
        self.floating: list[tuple[int, Any]] = []
        self.crit: Any = 0
        self.crit_warn: Any = 0
        # what the solves found (see :class:`ExactDays`)
        self.figures: dict[str, Any] = {}
        self.work_left: float | None = None
        self.crit_opt = self.critical_warning = 0
        self.lex_warning: int | None = None
        self.solution: dict[str, Any] | None = None

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def give_up(self, wall: bool = True) -> ExactDays:
        return ExactDays(False, runtime_s=time.perf_counter() - self.started, wall_cut=wall)

    def add(self, ct: Any) -> None:
        """``model.Add`` for a constraint that may have come out as a plain bool (an empty sum
        compared with a number): a true one is dropped (CP-SAT would add an unnamed constant
        variable for it), a false one makes the model give up (no floor claimed)."""
        if isinstance(ct, bool | np.bool_):
            if not ct:
                self.trivially_false = True
            return
        self.model.Add(ct)

    # ------------------------------------------------------------------ building

    def build(
        self,
        pending_min: int,
        fixed_hosts: Sequence[tuple[int, int, int]],
        floating_hosts: Sequence[int],
    ) -> ExactDays | None:
        """Every constraint family and the objectives' terms, in order; None when built, else
        the answer claiming nothing (the clock ran out, or the model is unusable)."""
        kinds = self.day_kinds(fixed_hosts)
        if kinds is None:
            return self.give_up()
        for c, (key, days) in enumerate(kinds.items()):
            try:
                if not self.add_kind(c, key, days):
                    return self.give_up()
            except OutOfTime:  # (a day's patterns past the deadline)
                return self.give_up()
            except OutOfWork:  # (past the building's work: the same on any machine)
                return self.give_up(wall=False)
        self.floating = self.add_guests(
            "f", [(None, n) for n in sorted(floating_hosts)], [it.guest for it in self.placing], 1
        )
        self.add_placed(pending_min)
        self.add_buffer()
        self.add_fragmentation()
        if self.trivially_false:
            return self.give_up(wall=False)
        if self.left() <= 0.05:
            return self.give_up()
        return None

    def day_kinds(
        self, fixed_hosts: Sequence[tuple[int, int, int]]
    ) -> dict[tuple[Any, ...], list[int]] | None:
        """The days grouped by kind (:meth:`day_key`); None when the clock ran out."""
        host_days: dict[int, list[tuple[int, int]]] = {}  # 0-based day -> its fixed host blocks
        for day, start, n in fixed_hosts:
            host_days.setdefault(day - 1, []).append((start - 1, n))
        for lst in host_days.values():
            lst.sort()
        runs: list[list[tuple[int, int]]] = [[] for _ in range(self.num_days)]
        rows, first, length = free_runs(self.free)
        for r, a, n in zip(rows.tolist(), first.tolist(), length.tolist(), strict=True):
            runs[r].append((a, n))
        kinds: dict[tuple[Any, ...], list[int]] = {}
        for d in range(self.num_days):
            key = self.day_key(d, runs[d], tuple(host_days.get(d, [])))
            kinds.setdefault(key, []).append(d)
            if self.left() <= 0:
                return None
        return kinds

    def day_key(
        self, d: int, runs: Sequence[tuple[int, int]], hosts: tuple[tuple[int, int], ...]
    ) -> tuple[Any, ...]:
        """What makes day ``d`` (0-based; ``runs``: its free runs, (start, length)) alike
        another: its free runs as the bits of the masks allowing each period, its fixed load,
        the items that fit, the room per mask, the items it may host and its host blocks."""
        free_d = self.free[d]
        fit = tuple(
            it.on(d + 1) and _fits(free_d, np.array(it.allowed), it.length) for it in self.placing
        )
        allow = np.zeros(self.spd, dtype=np.int64)  # per period: the bits of the fit items' masks
        for b in sorted({b for ok, b in zip(fit, self.bit_of, strict=True) if ok}):
            allow |= self.mask_arr[b].astype(np.int64) << b
        allow &= np.where(free_d, -1, 0)
        runs_d = tuple(tuple(allow[a : a + n].tolist()) for a, n in runs)
        room = tuple(int(np.count_nonzero(free_d & m)) for m in self.mask_arr)
        inside = tuple(it.guest and it.on(d + 1) for it in self.placing)
        return (runs_d, int(self.fixed_load[d]), fit, room, inside, hosts)

    def add_kind(self, c: int, key: tuple[Any, ...], days: list[int]) -> bool:
        """Kind ``c`` of day: its guests, its patterns and its blocks; False when the model
        gives up (too many patterns, or the clock ran out)."""
        runs_d, load0, fit, room, inside, hosts_here = key
        kind_guests = self.add_guests(str(c), hosts_here, inside, len(days))
        kind_items: list[tuple[int, Any]] = []
        kind_pats: list[tuple[Any, Pattern]] = []
        self.kind_vars.append((days, kind_pats, kind_items, kind_guests))
        pats = self.patterns_of(runs_d)
        if pats is None or self.left() <= 0:
            return False
        self.meter.tick(sum(len(vec) + 1 for vec in pats))  # (the patterns' terms in the model)
        per_type = self.add_patterns(c, len(days), load0, pats, kind_pats)
        self.add_blocks(c, len(days), fit, room, per_type, kind_items)
        return self.left() > 0

    def patterns_of(self, runs_d: tuple[tuple[int, ...], ...]) -> dict[Pattern, int] | None:
        """The patterns of a day with free runs ``runs_d`` (shared by the days alike); when
        typed patterns are too many, every block any fit mask's (:func:`_collapsed`)."""
        key = tuple(sorted(runs_d))
        if key not in self.memo:
            self.memo[key] = _patterns(
                key, tuple(self.lengths), tuple(sorted(self.supply.items())), self.meter
            )
        return self.memo[key]

    def add_guests(
        self,
        tag: str,
        hosts: Sequence[tuple[int | None, int]],
        eligible: Sequence[bool],
        times: int,
    ) -> list[tuple[int, Any]]:
        """Guests of the ``eligible`` items in ``hosts`` ((0-based start, length) of each
        block; start ``None``: a host that may stand anywhere; ``times`` days alike): a guest
        goes into a host block it fits in, off its banned periods. For every length, the guests
        that long or longer fit the hosts that long or longer; with hosts of known places
        (at most eight), Hall's condition over every set of them: the guests that fit none
        but these are at most what these hold. Returns (item, its guests) pairs."""
        if not hosts:
            return []
        gs: list[tuple[Any, int, int]] = []  # guests, their length, the hosts they fit (bits)
        out = []
        for k, (it, ok) in enumerate(zip(self.placing, eligible, strict=True)):
            where = sum(1 << h for h, host in enumerate(hosts) if _fits_host(it, host)) if ok else 0
            if where:
                g = self.model.NewIntVar(0, min(it.count, times * len(hosts)), f"g{tag}_{k}")
                self.guest_of[k].append(g)
                gs.append((g, it.length, where))
                out.append((k, g))
        for n in sorted({ln for _, ln, _ in gs}):
            self.add(
                sum(g for g, ln, _ in gs if ln >= n) <= times * sum(1 for h in hosts if h[1] >= n)
            )
        if len(hosts) <= 8 and any(start is not None for start, _ in hosts):
            for mask in range(1, 1 << len(hosts)):
                inside = [g for g, _, where in gs if where & ~mask == 0]
                if inside:
                    self.add(sum(inside) <= times * bin(mask).count("1"))
        return out

    def add_patterns(
        self,
        c: int,
        size: int,
        load0: int,
        pats: dict[Pattern, int],
        kind_pats: list[tuple[Any, Pattern]],
    ) -> dict[BlockType, list[tuple[Any, int]]]:
        """How many of the ``size`` days of kind ``c`` take each of ``pats`` (pattern → most
        usable periods), each pattern's load, utilization, buffer and free periods; returns per
        block type the (pattern count, blocks) terms."""
        ns = []
        per_type: dict[BlockType, list[tuple[Any, int]]] = {}
        pat_loads = []
        kept = buffered(np.fromiter(pats.values(), dtype=np.int64, count=len(pats))).tolist()
        for j, ((vec, usable), has_buffer) in enumerate(zip(pats.items(), kept, strict=True)):
            n = self.model.NewIntVar(0, size, f"n{c}_{j}")
            ns.append(n)
            kind_pats.append((n, vec))
            for kind, k in vec:
                per_type.setdefault(kind, []).append((n, k))
            load = load0 + sum(k * ln for (ln, _), k in vec)
            pat_loads.append(load)
            self.add_day_terms(n, load, usable, has_buffer)
        self.add(sum(ns) == size)
        self.loads_of.append((ns, pat_loads))
        return per_type

    def add_day_terms(self, n: Any, load: int, usable: int, has_buffer: bool) -> None:
        """The objectives' terms of ``n`` days of ``load`` keeping ``usable`` periods: their
        ``day_utilization`` issues, whether they lack a buffer, their usable and free periods."""
        c0, cw0 = self.util_cw[min(load, self.spd)]
        if c0:
            self.crit_terms.append(c0 * n)
        if cw0:
            self.cw_terms.append(cw0 * n)
        if not has_buffer:
            self.no_buffer.append(n)
        if usable:
            self.usable_terms.append(usable * n)
        if load < self.spd:
            self.free_terms.append((self.spd - load) * n)

    def add_blocks(
        self,
        c: int,
        size: int,
        fit: Sequence[bool],
        room: Sequence[int],
        per_type: dict[BlockType, list[tuple[Any, int]]],
        kind_items: list[tuple[int, Any]],
    ) -> None:
        """The items the ``size`` days of kind ``c`` take: per length, they fill the blocks of
        the patterns (Hall's condition over their masks); per mask, at most its ``room``."""
        by_mask: dict[int, list[tuple[Any, int]]] = {}
        ys: dict[int, dict[int, list[Any]]] = {}  # length -> mask bit -> its items' counts
        for k, (it, ok) in enumerate(zip(self.placing, fit, strict=True)):
            if not ok:
                continue
            y = self.model.NewIntVar(0, min(it.count, size * (self.spd // it.length)), f"y{k}_{c}")
            self.taken[k].append(y)
            kind_items.append((k, y))
            ys.setdefault(it.length, {}).setdefault(self.bit_of[k], []).append(y)
            by_mask.setdefault(self.bit_of[k], []).append((y, it.length))
        for ln in self.lengths:
            blocks = {
                bits: sum(k * n for n, k in terms)
                for (m, bits), terms in per_type.items()
                if m == ln
            }
            self.add_hall(ys.get(ln, {}), blocks)
        for m, terms in by_mask.items():
            self.add(sum(ln * y for y, ln in terms) <= size * room[m])

    def add_hall(self, of: dict[int, list[Any]], blocks: dict[int, Any]) -> None:
        """The items of one length (``of``: mask bit → their counts) fill its ``blocks`` (the
        masks allowing a block, as bits → how many): all of them together, and the items of
        any set of masks at most the blocks some mask of the set allows (Hall's condition)."""
        self.add(sum(y for lst in of.values() for y in lst) == sum(blocks.values()))
        bits_here = sorted(of)
        for sub in _hall_subsets(bits_here):
            mask = sum(1 << b for b in sub)
            if all(bits & mask for bits in blocks) and len(sub) == len(bits_here):
                continue  # (the equality above says it)
            self.add(
                sum(y for b in sub for y in of[b])
                <= sum(v for bits, v in blocks.items() if bits & mask)
            )

    def add_placed(self, pending_min: int) -> None:
        """Every placed item stays placed (on a day or as a guest), a pending one at most
        once, and at least ``pending_min`` pending periods are placed."""
        pending_periods: list[Any] = []
        for k, it in enumerate(self.placing):
            placed = list(self.taken[k]) + self.guest_of[k]
            if it.pending:
                self.add(sum(placed) <= it.count)
                pending_periods.append(it.length * sum(placed))
            else:
                self.add(sum(placed) == it.count)
        if pending_min > 0:
            self.add(sum(pending_periods) >= pending_min)

    def add_buffer(self) -> None:
        """The buffer issue: one for the window, by the days without buffer; starts the
        objectives (criticals, criticals + warnings) with the days' utilization terms."""
        nb = sum(self.no_buffer) if self.no_buffer else 0
        buf_c = self.model.NewBoolVar("buffer_critical")
        buf_w = self.model.NewBoolVar("buffer_issue")
        for b, col in ((buf_c, 0), (buf_w, 1)):
            first = next((n for n in range(self.num_days + 1) if self.buf_cw[n][col]), None)
            if first is None:
                self.add(b == 0)
            else:
                self.add(nb <= first - 1 + self.num_days * b)
        self.crit = sum(self.crit_terms) + buf_c
        self.crit_warn = sum(self.cw_terms) + buf_w

    def add_fragmentation(self) -> None:
        """The free-fragmentation issue: one for the window, by its rate (free - usable) /
        free."""
        if self.frag_from == (None, None) or not self.free_terms:
            return  # (no free period: rate 0, no issue)
        usable_sum, free_sum = sum(self.usable_terms), sum(self.free_terms)
        some_free = self.model.NewBoolVar("some_free")
        self.model.Add(free_sum >= 1).OnlyEnforceIf(some_free)
        self.model.Add(free_sum <= 0).OnlyEnforceIf(some_free.Not())
        frag = []
        for tag, least in zip(("critical", "issue"), self.frag_from, strict=True):
            b = self.model.NewBoolVar(f"fragmentation_{tag}")
            frag.append(b)
            if least is None:
                self.add(b == 0)
                continue
            # a rate below the band's (r4-rounded) threshold least / 10000 is below
            # (k + 0.5) / 10000 unrounded: free - usable < (k + 0.5) / 10000 * free
            self.model.Add(
                20_000 * (free_sum - usable_sum) - (2 * least + 1) * free_sum <= -1
            ).OnlyEnforceIf([b.Not(), some_free])
        self.crit += frag[0]
        self.crit_warn += frag[1]

    # ------------------------------------------------------------------ solving

    def solve(self, num_workers: int, work_s: float | None) -> ExactDays:
        """1. least criticals; 2. least warnings among those (the lexicographic floor); 3. least
        critical + warning. Each solve gets a share of what is left and starts from the last
        one's solution (a hint); the criticals are held at their least only in step 2."""
        build_s = time.perf_counter() - self.started
        self.figures = {"lengths": self.lengths, "build_s": round(build_s, 3), "solve_s": []}
        self.work_left = work_s
        wall_cut = False
        model = self.model
        hold = model.NewBoolVar("hold_least_critical")
        variables = [model.GetIntVarFromProtoIndex(i) for i in range(len(model.Proto().variables))]
        for step, objective in enumerate((self.crit, self.crit_warn - self.crit, self.crit_warn)):
            if step == 1:
                if not self.figures.get("critical_optimal"):
                    continue
                model.Add(self.crit <= self.crit_opt).OnlyEnforceIf(hold)
            domain = model.Proto().variables[hold.Index()].domain
            domain[0] = domain[1] = int(step == 1)
            model.Minimize(objective)
            part = (0.7, 0.6, 1.0)[step]  # the criticals first: their solve gives the start too
            share = self.left() * part
            if share <= 0.01:
                wall_cut = True
                break
            solver, status, cut = self.solve_once(share, part, num_workers)
            wall_cut = wall_cut or cut
            if status.value not in ("optimal", "feasible"):
                break
            bound = int(np.ceil(solver.BestObjectiveBound() - 1e-6))
            model.ClearHints()
            for v in variables:
                model.AddHint(v, solver.Value(v))
            self.record(step, solver, status.value, bound)
        return self.answer(wall_cut)

    def solve_once(self, share: float, part: float, num_workers: int) -> tuple[Any, Any, bool]:
        """One solve within ``share`` seconds (and ``part`` of the work left): the solver, its
        status and whether the wall clock ended it (not the deterministic budget)."""
        det = None if self.work_left is None else self.work_left * part
        solver = make_solver(share, num_workers, deterministic_time=det)
        # One presolve pass: the same answers 15-30 % sooner on 30-120-day windows (presolve
        # took most of a fragmented window's first solve; results_close.md, 2026-12-05).
        solver.parameters.max_presolve_iterations = 1
        t_solve = time.perf_counter()
        status = status_of(solver.Solve(self.model))
        self.figures["solve_s"].append(round(time.perf_counter() - t_solve, 3))
        if self.work_left is not None:
            self.work_left = max(0.0, self.work_left - solver.deterministic_time)
        cut = status.value != "optimal" and (
            det is None or ran_out(time.perf_counter() - t_solve, share)
        )
        return solver, status, cut

    def record(self, step: int, solver: Any, status: str, bound: int) -> None:
        """What solve ``step`` found: its bound, whether proven, and its schedule."""
        figures = self.figures
        if step == 0:
            self.crit_opt = bound
            figures["critical_optimal"] = status == "optimal"
            # the schedule with the fewest criticals found: a start for a search even when
            # the criticals were not proven least in time (the lexicographic step replaces it)
            self.solution = self.snapshot(solver)
        elif step == 2:
            self.critical_warning = bound
            figures["complete"] = (
                status == "optimal"
                and figures["critical_optimal"]
                and bool(figures.get("lexicographic_optimal"))
            )
        else:
            self.lex_warning = bound
            figures["lexicographic_optimal"] = status == "optimal"
            loads = [
                load
                for ns, pl in self.loads_of
                for n, load in zip(ns, pl, strict=True)
                for _ in range(solver.Value(n))
            ]
            util_cw, spd = self.util_cw, self.spd
            figures["days_over_warning"] = sum(util_cw[min(x, spd)][1] for x in loads)
            figures["days_over_critical"] = sum(util_cw[min(x, spd)][0] for x in loads)
            self.solution = self.snapshot(solver)

    def snapshot(self, solver: Any) -> dict[str, Any]:
        """The solver's schedule as the model sees it (see :class:`ExactDays`)."""
        original = self.original
        return {
            "kinds": [
                (
                    days,
                    {vec: solver.Value(n) for n, vec in pats if solver.Value(n)},
                    {original[k]: solver.Value(y) for k, y in its if solver.Value(y)},
                    {original[k]: solver.Value(g) for k, g in gus if solver.Value(g)},
                )
                for days, pats, its, gus in self.kind_vars
            ],
            "floating": {original[k]: solver.Value(g) for k, g in self.floating if solver.Value(g)},
            "lengths": self.lengths,
        }

    def answer(self, wall_cut: bool) -> ExactDays:
        """The bounds the solves proved (none when the criticals' solve found nothing)."""
        if "critical_optimal" not in self.figures:
            return self.give_up(wall_cut)
        if self.figures.get("complete"):
            wall_cut = False
        return ExactDays(
            True,
            wall_cut=wall_cut,
            critical=self.crit_opt,
            critical_warning=max(self.critical_warning, self.crit_opt),
            lex_warning=self.lex_warning,
            solution=self.solution,
            runtime_s=time.perf_counter() - self.started,
            figures=self.figures,
        )


__all__ = ["ExactDays", "ExactDaysModel", "Item", "day_patterns", "exact_days", "rule_tables"]
