"""A proven floor of ``analyze_health``'s (critical, warning): what no placement can go below.

The population: every placement of the unlocked study tasks (source ``task_item``, not locked,
not the guest of a locked host), the pending ones and the suggested ones now inside their task
classes' day windows kept inside them (as proposals place them), while courses and calendar events (never suggested for a move, p1 §4.3)
and locked tasks stay where they are;
every study task placed now stays placed, and, when a proven feasibility report is given, at
least ``required - capacity_gap`` pending periods are placed (what a proposal places).

Each argument below is a relaxation (periods pour freely into free periods, task boundaries and
subjects forgotten), so each is sound; each yields, for one rule, a lower bound on its critical
issues and on its critical + warning issues. Summed over the rules (disjoint issues) they give
``floor.critical`` ≤ critical and ``floor.critical + floor.warning`` ≤ critical + warning of every
schedule of the population, hence no schedule is lexicographically below the floor.

- ``day_utilization``: a day whose fixed periods alone reach a band (unfixable); and capacity:
  the periods to place that do not fit below the warning (critical) load of the other days
  force that many more days over it (fewest days: the roomiest first), in the whole window and
  in each task-class day window for the tasks confined to it.
- ``context_switch``: switches between fixed study periods (no host block in between) only grow,
  and the day's study periods stay within the periods no course holds for good.
- ``heavy_adjacent``: heavy pairs between fixed study periods stay (:mod:`.heavy_floor`).
- ``buffer``: a day needs two usable free periods; days whose fixed content leaves fewer never
  get them, and the free periods left after placing, halved, bound the days that can.
- ``load_imbalance``: the water-filled daily loads (each day between its fixed load and its
  capacity, the total fixed) have the least sample std-dev and range of all (majorisation);
  where the movable tasks may not all use the same periods (class days, weekdays, banned
  periods, water-course permission, item order), a min-cost flow keeping each task to its own
  periods raises the std-dev (:mod:`.spread_flow`).
- ``budget_lag``: a subject whose fixed and movable periods together stay below its budget
  threshold near its end day lags in every schedule.
- ``subject_gap``: between two days the subject must be present on (a fixed block, or the
  reachable days of a task that stays placed) only its reachable days can fill the gap, at
  most one per movable block: the least largest gap of such a choice (greedy) is forced.
- ``subject_concentration``: with all its blocks placed, the subject's HHI is at least the
  water-filled one (movable periods poured into its reachable days); tight when nothing of it
  moves.

Loads (utilisation, spread) only grow in the free periods some movable task's class allows
(day window, banned periods). ``scope`` narrows the population to a proposal's: only the
pending tasks and the scope move, so the floor is the proposal's own.
- ``free_fragmentation``: a free period alone between fixed periods stays a fragment unless a
  one-period block fills it, and placing only shrinks the free periods.
- ``feasibility``: more periods to place than free periods and host blocks hold.

Each argument is one entry of :data:`FLOOR_RULES` (Timefold's one definition per constraint):
a function ``(pop, out)`` that reads the :class:`_Population` (the facts every rule shares,
computed once) and counts its rule's issues: ``out.issue(rule, severity, **why)`` for one
issue, ``out.add(rule, (critical, critical + warning), why)`` for several. Adding a rule's floor is a local change: write its function beside the
others and add one ``FloorRule(rule, function)`` entry where its binding entries should come
(e.g. ``heavy_adjacent`` after ``context_switch``); a fact several rules read becomes a cached
property of :class:`_Population`.

Where the relaxation is weak (fragmented windows: blocks longer than a day's free runs),
``exact_s`` adds an exact CP-SAT model of ``day_utilization``, ``buffer`` and
``free_fragmentation`` over per-day patterns (:mod:`.health_model`): its proven bound replaces
those rules' part when higher,
and it gives the lexicographic floor :attr:`HealthFloor.least_warning` (issue 26 item 5).
Where the item order binds (issue 42: a class's items follow each other, so which items a day
takes depends on the days before it, which day patterns cannot see), ``ordered_s`` adds the
same rules' model with the order held, each block placed on its own (:mod:`.ordered_floor`).
"""

from __future__ import annotations

import bisect
import itertools
import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..concepts import movable
from ..concepts import subject_of as study_subject  # the subject health_facts counts
from ..health_facts import (
    MIN_BUFFER,
    SubjectCodes,
    buffered,
    day_loads,
    day_switches,
    fragmentation,
    free_runs,
    grid_day_facts,
    subject_codes,
    subject_metrics,
    utilization,
)
from ..rules import (
    IssueDimension,
    IssueRule,
    Level,
    Rule,
    r4,
    rules_for,
    severity,
)
from ..state import ScheduleState, Task, order_key
from ._cpsat import OutOfTime
from .budget import DEFAULT_CALIBRATION, Calibration
from .health_model import ExactDays, Item, exact_days
from .heavy_floor import fixed_heavy_days
from .order_spans import chain_days, fitting_starts
from .ordered import tasks_have_inner_order
from .problem import rule_for
from .spread_flow import Group, least_spread

if TYPE_CHECKING:
    from .feasibility import FeasibilityReport

_EPS = 1e-9


@dataclass
class HealthFloor:
    """``critical``/``warning``: the floor; ``proven``: established by the arguments above (a
    floor is never guessed); ``least_warning``: when known, the lexicographic floor's warnings:
    every schedule has more criticals than ``critical`` or at least ``least_warning`` warnings
    (the exact model's, see :func:`_tighten`; ``None``: only ``warning``'s bound is known);
    ``binding``: the rules that make it, each with its figures;
    ``unfixable``: (rule, day, category) → the severity fixed content alone causes there."""

    critical: int = 0
    warning: int = 0
    proven: bool = True
    least_warning: int | None = None
    # Whether the exact model answered completely (every solve proven optimal) within its
    # limit: None when it did not run (``exact_s`` 0, or no time left), False when it was cut
    # (its proven part stands; more time may give a higher floor).
    exact_complete: bool | None = None
    # Whether the wall clock (not the deterministic budget ``exact_work_s``) ended the exact
    # model before it was complete: a faster machine may then answer with a higher floor.
    exact_wall_cut: bool = False
    binding: list[dict[str, Any]] = field(default_factory=list)
    unfixable: dict[tuple[str, int | None, str | None], str] = field(default_factory=dict)

    def meets(self, critical: int, warning: int) -> bool:
        """``(critical, warning)`` reaches the floor (equals it: nothing goes below, neither in
        criticals and critical + warning nor lexicographically)."""
        if critical > self.critical:
            return False
        if critical + warning <= self.critical + self.warning:
            return True
        return self.least_warning is not None and warning <= self.least_warning

    def to_dict(self) -> dict[str, Any]:
        return {
            "critical": self.critical,
            "warning": self.warning,
            "proven": self.proven,
            "binding": [dict(b) for b in self.binding],
        }


def _sev_cw(sev: str | None) -> tuple[int, int]:
    """(critical lower bound, critical+warning lower bound) of one issue of severity ``sev``."""
    return (1, 1) if sev == "critical" else (0, 1) if sev == "warning" else (0, 0)


def movable_study(state: ScheduleState, task: Task) -> bool:
    """A study task the writes may place or move (unlocked, guest of no locked host):
    :func:`..concepts.movable`."""
    return movable(state, task)


def _ticker(deadline: float | None) -> Callable[[], None]:
    """A check that raises :class:`~._cpsat.OutOfTime` once ``deadline`` has passed (a no-op
    without one)."""
    if deadline is None:
        return _never
    clock = time.perf_counter

    def tick() -> None:
        if clock() > deadline:
            raise OutOfTime

    return tick


def _never() -> None:
    return None


def health_floor(
    state: ScheduleState,
    level: Level = "normal",
    report: FeasibilityReport | None = None,
    dimensions: Sequence[str] = ("load", "subjects", "context", "tolerance"),
    pending_periods: int | None = None,
    scope: Collection[int] | None = None,
    deadline: float | None = None,
    exact_s: float = 0.0,
    num_workers: int = 1,
    exact_work_s: float | None = None,
    task_reach: Mapping[int, tuple[int, int, np.ndarray]] | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
    ordered_s: float = 0.0,
    ordered_work_s: float | None = None,
    task_off_days: Mapping[int, tuple[int, ...]] | None = None,
) -> HealthFloor:
    """The proven floor of ``state`` at ``level`` over the chosen ``dimensions`` (see the
    module docstring): the sum of :data:`FLOOR_RULES`' bounds over one :class:`_Population`.
    ``report``: the feasibility check ``analyze_health`` ran (re-planning
    the suggested tasks), or ``None``; ``pending_periods``: pending periods every schedule of
    the population places (default: from ``report``, else none); ``scope``: when given, only
    the pending tasks and these may move (e.g. a proposal that keeps the suggested tasks where
    they stand: its own floor), every other task stays fixed.

    ``deadline``: a ``time.perf_counter()`` value; past it the computation stops with
    :class:`~._cpsat.OutOfTime` (checked between stages and inside the long loops, so it stops
    within a few milliseconds even on 1000-day windows, where the whole floor takes about a
    second): a floor is all or nothing, never half computed.

    ``exact_s``: when positive, the wall-clock limit of the exact model of the per-day rules
    (:mod:`.health_model`: blocks against each day's free runs, ``day_utilization``,
    ``buffer`` and ``free_fragmentation`` together, model building included; ``num_workers``:
    its CP-SAT workers, set explicitly), which raises those rules' part of the floor to its proven bound and sets
    :attr:`HealthFloor.least_warning` (the lexicographic floor); past its limit (or the
    ``deadline``) it claims nothing and the relaxation's figures stand. Off by default:
    ``analyze_health`` computes a floor on every new key in a millisecond budget, while the
    model takes about 0.05-1 s on 13-60-day windows and 2-10 s on 120-day ones (see
    ``benchmarks/results_close.md``). ``exact_work_s``: when given, the exact model's
    deterministic time (CP-SAT's units), so that one worker answers the same on any machine
    the wall clock does not cut (:attr:`HealthFloor.exact_wall_cut` says when it did).

    ``task_reach``: per task, the (first day, last day, allowed periods) it may take instead of its
    class's, holding every place it may take (a calendar scope, :func:`.scoped.floor_scope`);
    ``task_off_days``: per such task, the days inside that reach it may not take (its rule's
    weekdays; none when not given); the exact model keeps the classes'. ``calibration``: the exact model's building budget
    (:attr:`.budget.Calibration.exact_build_steps_per_work`).

    ``ordered_s``: when positive (and some class's movable items have different orders), the
    wall-clock limit of the exact model of the same rules that holds the item order
    (:mod:`.ordered_floor`: each block placed on its own, no days counted alike; slower, and
    it answers only for populations of pending tasks and one-block suggested ones whose
    placed items keep their order now), which raises that part further when its proven bound
    is higher;
    ``ordered_work_s``: its deterministic time. Off by default."""
    tick = _ticker(deadline)
    limits = _ExactLimits(
        exact_s, deadline, num_workers, exact_work_s, calibration, ordered_s, ordered_work_s
    )
    given: dict[Any, Any] = {("task", k): v for k, v in (task_reach or {}).items()}
    given |= {("task_off", k): v for k, v in (task_off_days or {}).items() if ("task", k) in given}
    pop = _population(state, level, report, dimensions, pending_periods, scope, tick, limits, given)
    out = _Sum(HealthFloor(), dimensions, {r.rule: r.dimension for r in pop.rules.values()})
    out.dimension_of["capacity_gap"] = "feasibility"
    for entry in FLOOR_RULES:
        tick()
        entry.bound(pop, out)
    return out.floor


# -------------------------------------------------------------------------- the population
@dataclass(frozen=True)
class _ExactLimits:
    """The exact model's limits (:func:`health_floor`'s ``exact_s``, ``deadline``,
    ``num_workers``, ``exact_work_s``, ``calibration``)."""

    seconds: float
    deadline: float | None
    num_workers: int
    work_s: float | None
    calibration: Calibration = DEFAULT_CALIBRATION
    ordered_seconds: float = 0.0  # the order-holding model's limit (0: not run)
    ordered_work_s: float | None = None


@dataclass
class _Population:
    """What every rule's floor reads, computed once per floor: the tasks that may move
    (``movable_ids``), the grid without their blocks (``fixed_owner``) and its loads, the free
    periods some movable task may use per day (``reachable``), the unlocked host blocks a
    guest may use, and the periods placed now and pending (``pending_min``: those every
    schedule of the population places)."""

    state: ScheduleState
    level: Level
    dimensions: Sequence[str]
    report: FeasibilityReport | None
    tick: Callable[[], None]
    limits: _ExactLimits
    movable_ids: set[int]
    rules: dict[tuple[str, str], Rule]
    fixed_owner: np.ndarray
    reachable: np.ndarray
    host_blocks: list[tuple[int, int]]  # (day, periods) of each block of an unlocked host
    placed_movable: int  # periods of movable study tasks placed now
    pending_slots: int
    pending_min: int
    movable_by_subject: dict[str, int]
    reach_memo: dict[Any, Any]  # :func:`_reach`'s answers (a calendar scope's given per task)

    def movable(self, t: Task) -> bool:
        return t.state_id in self.movable_ids

    def rule(self, dimension: str, rule: str) -> Rule:
        return self.rules[(dimension, rule)]

    @property
    def num_days(self) -> int:
        return self.state.num_days

    @property
    def spd(self) -> int:
        return self.state.slots_per_day

    @cached_property
    def fixed_load(self) -> np.ndarray:
        return day_loads(self.fixed_owner).astype(np.int64)

    @property
    def free(self) -> np.ndarray:
        out: np.ndarray = self.spd - self.fixed_load
        return out

    @property
    def free_total(self) -> int:
        return int(self.free.sum())

    @property
    def host_room(self) -> int:
        return sum(n for _, n in self.host_blocks)

    @property
    def p_min(self) -> int:
        """Periods placed outside host blocks, at least."""
        return max(0, self.placed_movable + self.pending_min - self.host_room)

    @property
    def p_max(self) -> int:
        return self.placed_movable + self.pending_slots

    @property
    def everything(self) -> bool:
        """Every pending period is placed in every schedule of the population."""
        return self.pending_min == self.pending_slots

    @cached_property
    def codes(self) -> SubjectCodes:
        """The window's subject codes (:func:`..health_facts.subject_codes`)."""
        return subject_codes(self.state.tasks)

    @cached_property
    def usable(self) -> np.ndarray:
        """The usable periods of each day's fixed content (the one health model's day facts)."""
        no_study = np.zeros_like(self.fixed_owner)  # usable periods read the owner layer alone
        facts = grid_day_facts(self.fixed_owner, no_study)
        return np.array([f.usable for f in facts], dtype=np.int64)

    @cached_property
    def subjects(self) -> tuple[dict[str, _Subject], np.ndarray]:
        """:func:`_subjects` of the population (the gap and concentration rules share it)."""
        self.tick()
        out = _subjects(
            self.state, self.movable, self.fixed_owner, self.everything, self.reach_memo
        )
        self.tick()
        return out


def _population(
    state: ScheduleState,
    level: Level,
    report: FeasibilityReport | None,
    dimensions: Sequence[str],
    pending_periods: int | None,
    scope: Collection[int] | None,
    tick: Callable[[], None],
    limits: _ExactLimits,
    given: Mapping[Any, Any] | None = None,
) -> _Population:
    """The :class:`_Population` of :func:`health_floor`'s arguments; ``given``: the reaches
    (``("task", id)``) and off days (``("task_off", id)``) the caller gave, as :func:`_reach`'s
    and :func:`_off_days`' memo holds them."""
    movable_ids = {  # asked of every task in several passes: decided once
        t.state_id
        for t in state.tasks
        if movable_study(state, t)
        and (scope is None or t.status == "pending" or t.state_id in scope)
    }
    rules: dict[tuple[str, str], Rule] = {
        (r.dimension, r.rule): r
        for dim in ("load", "subjects", "context", "tolerance")
        for r in rules_for(dim, level)
    }
    fixed_owner, placed, pending_slots, by_subject = _cleared(state, movable_ids)
    tick()
    pending_min = 0
    if pending_periods is not None:
        pending_min = min(pending_slots, pending_periods)
    elif report is not None and report.proven and report.capacity_gap is not None:
        pending_min = max(0, pending_slots - int(report.capacity_gap))
    # a task's reach given by the caller (a calendar scope) stands for its class's
    reach_memo: dict[Any, Any] = dict(given or {})
    _add_chains(
        state,
        movable_ids,
        fixed_owner,
        pending_slots > 0 and pending_min >= pending_slots,
        reach_memo,
    )
    tick()
    reachable = _reachable(state, movable_ids, fixed_owner, reach_memo)
    tick()
    host_blocks = [
        (b.day, b.length) for t in state.tasks if t.can_embed and not t.locked for b in t.slots
    ]
    return _Population(
        state, level, dimensions, report, tick, limits, movable_ids, rules, fixed_owner,
        reachable, host_blocks, placed, pending_slots, pending_min, by_subject, reach_memo,
    )  # fmt: skip


def _add_chains(
    state: ScheduleState,
    movable_ids: set[int],
    fixed_owner: np.ndarray,
    must_pending: bool,
    reach_memo: dict[Any, Any],
) -> None:
    """The item order in the population (issue 42): each ordered movable task's days as its
    class's chain leaves them (:func:`.order_spans.chain_days`: every placed movable task stays
    placed, and with ``must_pending`` every pending one is placed), for :func:`_reach` to
    narrow its class's days to (a reach the caller gave stays as given)."""
    if not any(order_key(t) is not None for t in state.tasks if t.state_id in movable_ids):
        return  # (no ordered item moves: nothing to bound, no room to build)
    host_room = np.zeros_like(fixed_owner, dtype=bool)
    for t in state.tasks:
        if t.can_embed and not t.locked and t.state_id not in movable_ids:
            for b in t.slots:
                host_room[b.day - 1, b.slot_start - 1 : b.slot_end] = True
    chains = chain_days(state, movable_ids, fixed_owner == 0, host_room, must_pending)
    for tid, days in chains.items():
        if ("task", tid) not in reach_memo:
            reach_memo[("chain", tid)] = days


def _cleared(
    state: ScheduleState, movable_ids: set[int]
) -> tuple[np.ndarray, int, int, dict[str, int]]:
    """The owner layer without the movable tasks' own blocks (a guest's host stays), the
    periods those tasks hold now, their pending periods, and their periods by subject."""
    fixed_owner = state.grid.owner.copy()
    placed_movable = pending_slots = 0
    movable_by_subject: dict[str, int] = {}
    cleared: list[tuple[int, int, int]] = []  # (day, first period, periods), 0-based
    for t in state.tasks:
        if t.state_id not in movable_ids:
            continue
        name = study_subject(t) or ""
        periods = t.need() if t.status == "pending" else sum(b.length for b in t.slots)
        movable_by_subject[name] = movable_by_subject.get(name, 0) + periods
        if t.status == "pending":
            pending_slots += t.need()
            continue
        for b in t.slots:
            placed_movable += b.length
            if t.embed_host is None:
                cleared.append((b.day - 1, b.slot_start - 1, b.length))
    if cleared:  # every period of those blocks at once
        day0, first, count = (np.array(c, dtype=np.int64) for c in zip(*cleared, strict=True))
        offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        fixed_owner[np.repeat(day0, count), np.repeat(first, count) + offset] = 0
    return fixed_owner, placed_movable, pending_slots, movable_by_subject


def _reachable(
    state: ScheduleState, movable_ids: set[int], fixed_owner: np.ndarray, reach_memo: dict[Any, Any]
) -> np.ndarray:
    """Per day, the free periods some movable task may take: inside its class's day window
    (pending tasks and suggested ones standing inside it), off its class's banned weekdays
    (:func:`_off_days`) and banned periods (the loads can only grow there); ``reach_memo``:
    :func:`_reach`'s memo."""
    reach = np.zeros((state.num_days, state.slots_per_day), dtype=bool)
    poured: set[tuple[int, int, int, tuple[int, ...]]] = set()  # (lo, hi, mask, off) OR-ed in
    for t in state.tasks:
        if t.state_id in movable_ids:
            (lo, hi, allowed), off = _reach_off(state, t, reach_memo)
            if (lo, hi, id(allowed), off) not in poured:  # the masks live in reach_memo
                poured.add((lo, hi, id(allowed), off))
                days = np.zeros(state.num_days, dtype=bool)
                days[lo - 1 : hi] = True
                days[[d - 1 for d in off]] = False
                reach[days] |= allowed[None, :]
    out: np.ndarray = np.count_nonzero(reach & (fixed_owner == 0), axis=1).astype(np.int64)
    return out


@dataclass
class _Sum:
    """The floor being summed: each rule's bound counted in (:meth:`add`), with the
    (critical, critical + warning) share of each binding entry."""

    floor: HealthFloor
    dimensions: Sequence[str]
    dimension_of: dict[IssueRule, IssueDimension]
    shares: list[tuple[int, int]] = field(default_factory=list)

    def add(self, rule: IssueRule, cw: tuple[int, int], why: dict[str, Any]) -> None:
        """Count ``cw`` = (critical, critical + warning) issues of ``rule`` into the floor."""
        if cw == (0, 0) or self.dimension_of[rule] not in (*self.dimensions, "feasibility"):
            return
        self.floor.critical += cw[0]
        self.floor.warning += cw[1] - cw[0]
        self.floor.binding.append({"rule": rule, "why": why})
        self.shares.append(cw)

    def issue(self, rule: IssueRule, sev: str | None, **why: Any) -> None:
        """Count one issue of ``rule`` at severity ``sev`` (none below a warning), ``why``:
        its figures."""
        self.add(rule, _sev_cw(sev), why)

    def unfixable(self, rule: IssueRule, day: int, sev: str) -> None:
        """Fixed content alone puts ``day`` at ``sev`` for ``rule`` (when its dimension counts)."""
        if self.dimension_of[rule] in self.dimensions:
            self.floor.unfixable[(rule, day, None)] = sev


# ------------------------------------------------------------------------- the rules' floors
def _utilization_floor(pop: _Population, out: _Sum) -> None:
    """``day_utilization``: days whose fixed periods alone reach a band, then the days the
    periods to place force over the warning (critical) load, in the whole window and in each
    task-class day window for the tasks confined to it."""
    spd = pop.spd
    util = pop.rule("load", "day_utilization")
    band_at = [severity(util, {"utilization": utilization(t, spd)}) for t in range(spd + 1)]
    warn_t = next((t for t in range(spd + 1) if band_at[t] is not None), spd + 1)
    crit_t = next((t for t in range(spd + 1) if band_at[t] == "critical"), spd + 1)
    fixed_days = []
    crit0 = warn0 = 0
    for d, load in enumerate(pop.fixed_load.tolist()):
        sev = band_at[load]
        if sev in ("critical", "warning"):
            fixed_days.append({"day": d + 1, "fixed_periods": load, "severity": sev})
            out.unfixable("day_utilization", d + 1, sev)
            crit0 += sev == "critical"
            warn0 += 1
    forced_w, forced_c, (window, to_place, room_below) = _forced_over(pop, warn_t, crit_t)
    util_cw = (crit0 + forced_c, max(warn0 + forced_w, crit0 + forced_c))
    if fixed_days:
        why = {"kind": "fixed_load", "days": fixed_days, "slots_per_day": spd}
        out.add("day_utilization", (crit0, warn0), why)
    if util_cw == (crit0, warn0):
        return
    why = {
        "kind": "capacity",
        "periods_to_place": to_place,
        "days": window,
        # the periods of tasks whose dates, weekdays or item order keep them to those days
        "confined": window != [1, pop.num_days],
        "room_below_warning": room_below,
        "days_forced_over_warning": forced_w,
        "days_forced_over_critical": forced_c,
        "warning_load": warn_t,
        "critical_load": crit_t,
    }
    out.add("day_utilization", (util_cw[0] - crit0, util_cw[1] - warn0), why)


def _room_below(fixed: np.ndarray, free: np.ndarray, limit: int) -> np.ndarray:
    """Per day, the periods of ``free`` a day of load ``fixed`` takes while it stays below
    ``limit`` (none on a day already at it)."""
    out: np.ndarray = np.minimum(free, np.maximum(0, limit - 1 - fixed))
    return out


def _below(fixed: np.ndarray, free: np.ndarray, limit: int) -> int:
    """The periods ``free`` holds on days of load ``fixed`` while each stays below ``limit``."""
    return int(_room_below(fixed, free, limit)[fixed < limit].sum())


def _forced_over(
    pop: _Population, warn_t: int, crit_t: int
) -> tuple[int, int, tuple[list[int], int, int]]:
    """The days forced over the warning and the critical loads, and the cause that names
    them: (its days, the periods that must go there, their room below the warning load) — the
    whole window, a task-class day window whose confined periods (host blocks there aside)
    must fit in it, the days of some classes with banned weekdays, or a span of days."""
    fixed_load, reachable = pop.fixed_load, pop.reachable
    forced_w = _forced_days(fixed_load, reachable, pop.p_min, warn_t)
    forced_c = _forced_days(fixed_load, reachable, pop.p_min, crit_t)
    cause = ([1, pop.num_days], pop.p_min, _below(fixed_load, reachable, warn_t))
    confined = _confined(pop)
    for lo, hi in dict.fromkeys((a, b) for a, b, _ in confined):
        demand = sum(n for a, b, n in confined if lo <= a and b <= hi)
        room = sum(n for day, n in pop.host_blocks if lo <= day <= hi)
        part = slice(lo - 1, hi)
        need = max(0, demand - room)
        fw = _forced_days(fixed_load[part], reachable[part], need, warn_t)
        fc = _forced_days(fixed_load[part], reachable[part], need, crit_t)
        if fc >= forced_c and fw >= forced_w and fw > 0:  # (a span names the cause)
            cause = ([lo, hi], need, _below(fixed_load[part], reachable[part], warn_t))
        forced_w, forced_c = max(forced_w, fw), max(forced_c, fc)
    for fw, fc, found in _forced_on_class_days(pop, warn_t, crit_t):
        if fc >= forced_c and fw >= forced_w and fw > 0:
            cause = found
        forced_w, forced_c = max(forced_w, fw), max(forced_c, fc)
    for fw, fc, found in _forced_in_spans(pop, warn_t, crit_t):
        if fc >= forced_c and fw >= forced_w and (fc, fw) != (forced_c, forced_w):
            cause = found  # (a span names the cause only where it adds to the others)
        forced_w, forced_c = max(forced_w, fw), max(forced_c, fc)
    return forced_w, forced_c, cause


_SPANS = 32  # spans resolved exactly per band, those of most excess first


def _forced_in_spans(
    pop: _Population, warn_t: int, crit_t: int
) -> list[tuple[int, int, tuple[list[int], int, int]]]:
    """Issue 42: the days forced over the warning and the critical loads in spans of days.
    Each movable task keeps to its reach when placed (its class's day window narrowed to the
    days its item order leaves it, :func:`_reach`): its periods lie in every span of days
    holding that reach. So for a span [a, b], the periods of the tasks whose reach lies
    inside it that every schedule places — the placed ones, and the pending ones less the
    periods the population may leave unplaced — fit below a band on its days (host blocks
    there aside) or force days of it over the band (:func:`_forced_days`). Every span from one reach's first
    day to another's last is screened at once (cumulative sums of the demand by first and
    last day, prefix sums of the host room and of the room below the band); the
    :data:`_SPANS` of most excess per band are resolved (any
    span gives a sound bound: the state alone decides which). Returns (over warning, over
    critical, the cause: the span, the periods that must go there, their room below the
    warning load) per span that forces a day."""
    spans = _task_spans(pop)
    if not spans or all((lo, hi) == (1, pop.num_days) for lo, hi, _, _ in spans):
        return []  # (the whole window alone: :func:`_forced_over`'s own)
    arr = np.array(spans, dtype=np.int64)
    starts, ends = np.unique(arr[:, 0]), np.unique(arr[:, 1])
    rows, cols = np.searchsorted(starts, arr[:, 0]), np.searchsorted(ends, arr[:, 1])
    # inside[k][i, j]: the placed (k = 0) and pending (k = 1) periods of the reaches inside
    # [starts[i], ends[j]]
    inside = np.zeros((2, starts.size, ends.size), dtype=np.int64)
    np.add.at(inside, (arr[:, 3], rows, cols), arr[:, 2])
    inside = np.cumsum(np.cumsum(inside[:, ::-1], axis=1)[:, ::-1], axis=2)
    # at most ``slack`` pending periods stay unplaced: the rest of those inside are placed
    slack = pop.pending_slots - pop.pending_min
    placed = inside[0] + np.maximum(0, inside[1] - slack)
    pop.tick()
    hosts = np.zeros(pop.num_days + 1, dtype=np.int64)
    for day, length in pop.host_blocks:
        hosts[day] += length
    host_sum = np.cumsum(hosts)
    i_idx, j_idx = np.nonzero(starts[:, None] <= ends[None, :])
    a_idx, b_idx = starts[i_idx], ends[j_idx]
    need = np.maximum(0, placed[i_idx, j_idx] - (host_sum[b_idx] - host_sum[a_idx - 1]))
    fixed, free = pop.fixed_load, pop.reachable
    out: dict[tuple[int, int], list[int]] = {}
    needs: dict[tuple[int, int], int] = {}
    for col, limit in enumerate((warn_t, crit_t)):
        below = np.where(fixed >= limit, free, _room_below(fixed, free, limit))
        room = np.concatenate([[0], np.cumsum(below)])
        excess = need - (room[b_idx] - room[a_idx - 1])
        order = np.lexsort((b_idx, a_idx, -excess))[:_SPANS]
        for i in order.tolist():
            if excess[i] <= 0:
                break
            pop.tick()
            a, b = int(a_idx[i]), int(b_idx[i])
            days = _forced_days(fixed[a - 1 : b], free[a - 1 : b], int(need[i]), limit)
            out.setdefault((a, b), [0, 0])[col] = days
            needs[(a, b)] = int(need[i])
    return [
        (w, c, ([a, b], needs[(a, b)], _below(fixed[a - 1 : b], free[a - 1 : b], warn_t)))
        for (a, b), (w, c) in out.items()
        if w or c
    ]


def _task_spans(pop: _Population) -> list[tuple[int, int, int, bool]]:
    """(first day, last day, periods, pending) of the reach of each movable task the
    population keeps within it, narrowed by the item order: the pending ones (placed there
    when placed at all) and the engine's placed ones standing inside their class's days
    (:func:`_confined`'s)."""
    state, memo = pop.state, pop.reach_memo
    out: list[tuple[int, int, int, bool]] = []
    for t in state.tasks:
        if not pop.movable(t) or t.status == "existing":
            continue
        lo, hi, _ = _reach(state, t, memo)
        pending = t.status == "pending"
        if not pending and not all(lo <= b.day <= hi for b in t.slots):
            continue
        periods = t.need() if pending else sum(b.length for b in t.slots)
        out.append((lo, hi, periods, pending))
    return out


_CLASS_SUBSETS = 6  # up to this many distinct class masks, every union of them is tried


def _forced_on_class_days(
    pop: _Population, warn_t: int, crit_t: int
) -> list[tuple[int, int, tuple[list[int], int, int]]]:
    """Issue 42: the days forced over the warning and the critical loads by the tasks whose
    classes ban weekdays. Such a task may only take the free periods of its class's allowed
    days (its day window less its banned weekdays) and allowed periods (every proposal and
    write keeps the class's rules), so for a union D × P of some classes' masks, the periods
    of the tasks whose masks lie inside it (host blocks on D aside) fit in D × P's free periods
    or force days of D over a band (:func:`_forced_days` on D, each day's room its free
    periods in P). Every union of up to :data:`_CLASS_SUBSETS` distinct masks is tried (then
    each mask and each pair). Nothing is claimed on a window without a banned weekday (the
    day windows alone are :func:`_forced_over`'s). Returns (over warning, over critical, the
    union's days) per union that forces a day."""
    entries = _confined_masks(pop)
    if not entries:
        return []
    keys = list(dict.fromkeys((d.tobytes(), p.tobytes()) for d, p, _ in entries))
    masks = {k: (np.frombuffer(k[0], dtype=bool), np.frombuffer(k[1], dtype=bool)) for k in keys}
    if len(keys) <= _CLASS_SUBSETS:
        subsets = [c for r in range(1, len(keys) + 1) for c in itertools.combinations(keys, r)]
    else:
        subsets = [c for r in (1, 2) for c in itertools.combinations(keys, r)]
    free = pop.fixed_owner == 0
    hosts = np.zeros(pop.num_days, dtype=np.int64)
    for day, n in pop.host_blocks:
        hosts[day - 1] += n
    out: list[tuple[int, int, tuple[list[int], int, int]]] = []
    for subset in subsets:
        pop.tick()
        days = np.logical_or.reduce([masks[k][0] for k in subset])
        periods = np.logical_or.reduce([masks[k][1] for k in subset])
        demand = sum(n for d, p, n in entries if not (d & ~days).any() and not (p & ~periods).any())
        need = max(0, demand - int(hosts[days].sum()))
        if need == 0:
            continue
        room = np.count_nonzero(free[days][:, periods], axis=1).astype(np.int64)
        fixed = pop.fixed_load[days]
        fw = _forced_days(fixed, room, need, warn_t)
        fc = _forced_days(fixed, room, need, crit_t)
        if fw or fc:
            idx = np.flatnonzero(days) + 1
            out.append((fw, fc, ([int(idx[0]), int(idx[-1])], need, _below(fixed, room, warn_t))))
    return out


def _confined_masks(pop: _Population) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(allowed days, allowed periods, periods) of each movable task of a class with a banned
    weekday that every schedule of the population keeps inside its class's rule (the tasks
    :func:`_confined` reads, a suggested one standing on its class's days); empty when no such
    class confines a task."""
    state = pop.state
    num_days, spd = pop.num_days, pop.spd
    masks: dict[int | None, tuple[np.ndarray, np.ndarray] | None] = {}
    out: list[tuple[np.ndarray, np.ndarray, int]] = []
    for t in state.tasks:
        if not pop.movable(t) or t.status == "existing":
            continue
        if t.status == "pending" and not pop.everything:
            continue
        if t.category_id not in masks:
            cls = rule_for(state, t)
            if not cls.off_days:
                masks[t.category_id] = None
            else:
                days = np.array([cls.allows_day(d, num_days) for d in range(1, num_days + 1)])
                periods = np.ones(spd, dtype=bool)
                for p in cls.banned:
                    if 1 <= p <= spd:
                        periods[p - 1] = False
                masks[t.category_id] = (days, periods)
        found = masks[t.category_id]
        if found is None:
            continue
        days, periods = found
        if t.status != "pending" and not all(days[b.day - 1] for b in t.slots if b.day <= num_days):
            continue
        n = t.need() if t.status == "pending" else sum(b.length for b in t.slots)
        out.append((days, periods, n))
    return out


def _confined(pop: _Population) -> list[tuple[int, int, int]]:
    """(first day, last day, periods) of each movable task confined to a task-class day
    window narrower than the window. The engine's own tasks keep to their class's days: the
    pending ones (when all of them are placed) and the suggested ones standing inside them
    now. An existing task, or a suggested one left outside by a class change, may stand
    anywhere (DESIGN)."""
    state = pop.state
    confined: list[tuple[int, int, int]] = []
    class_rules: dict[int | None, Any] = {}  # rule_for reads the task's class only
    for t in state.tasks:
        if not pop.movable(t) or t.status == "existing":
            continue
        if t.status == "pending" and not pop.everything:
            continue
        cls = class_rules.get(t.category_id)
        if cls is None:
            cls = class_rules[t.category_id] = rule_for(state, t)
        if t.status != "pending" and not all(
            cls.start_day <= b.day <= cls.end_day for b in t.slots
        ):
            continue
        if (cls.start_day, cls.end_day) != (1, state.num_days):
            periods = t.need() if t.status == "pending" else sum(b.length for b in t.slots)
            confined.append((cls.start_day, cls.end_day, periods))
    return confined


def _context_floor(pop: _Population, out: _Sum) -> None:
    """``context_switch``: switches between fixed study periods (no host block in between)
    only grow, and a day's study periods stay within the periods no course or event holds for
    good (an unlocked water course may host a guest): the day's fragmentation is at least the
    fixed switches over the most study periods it may hold (the metric only grows with more
    switches and fewer periods)."""
    ctx = pop.rule("context", "context_switch")
    switches = day_switches(_fixed_study(pop.state, pop.movable, pop.codes))
    never = np.zeros(pop.num_days, dtype=np.int64)
    for t in pop.state.tasks:
        if study_subject(t) is None and not (t.can_embed and not t.locked):
            for b in t.slots:
                never[b.day - 1] += b.length
    for d in np.flatnonzero(switches).tolist():
        sw = int(switches[d])
        least = fragmentation(sw, pop.spd - int(never[d]))
        sev = severity(ctx, {"switch_count": sw, "fragmentation": least})
        out.issue(
            "context_switch",
            sev,
            kind="fixed_switches",
            day=d + 1,
            fixed_switches=sw,
            min_fragmentation=least,
        )
        if sev in ("critical", "warning"):
            out.unfixable("context_switch", d + 1, sev)


def _heavy_floor(pop: _Population, out: _Sum) -> None:
    """``heavy_adjacent``: heavy pairs between fixed study periods (issue 42,
    :mod:`.heavy_floor`): nothing placed can separate two periods already side by side."""
    for hd in fixed_heavy_days(pop.state, pop.level, pop.movable):
        why = {"kind": "fixed_heavy_pairs", "day": hd.day, "fixed_pairs": hd.pairs}
        out.add("heavy_adjacent", _sev_cw(hd.severity), why)
        out.unfixable("heavy_adjacent", hd.day, hd.severity)


def _buffer_floor(pop: _Population, out: _Sum) -> None:
    """``buffer``: a day needs :data:`..health_facts.MIN_BUFFER` usable free periods; days
    whose fixed content leaves fewer never get them, and the free periods left after placing,
    so divided, bound the days that can."""
    num_days, free_total = pop.num_days, pop.free_total
    hopeless = int(np.count_nonzero(~buffered(pop.usable)))
    can_buffer = min(num_days - hopeless, max(0, free_total - pop.p_min) // MIN_BUFFER)
    no_buffer = num_days - can_buffer
    rule = pop.rule("tolerance", "buffer")
    sev = severity(rule, {"days_without_buffer": no_buffer, "fragmentation_rate": 0.0})
    out.issue(
        "buffer",
        sev,
        kind="capacity",
        days=num_days,
        days_without_room=hopeless,
        free_periods=free_total,
        periods_to_place=pop.p_min,
        buffer_periods=MIN_BUFFER,
        days_without_buffer=no_buffer,
    )


def _fragmentation_floor(pop: _Population, out: _Sum) -> None:
    """``free_fragmentation``: a free period alone between fixed periods (or the day's edge)
    stays a fragment unless a one-period block fills it; placing only shrinks the free
    periods, so the rate is at least (isolated - one-period blocks) / (free - periods placed)."""
    free_total = pop.free_total
    isolated = free_total - int(pop.usable.sum())
    singles = 0  # movable one-period blocks
    for t in pop.state.tasks:
        if pop.movable(t):
            singles += (
                t.need() == 1 if t.status == "pending" else sum(b.length == 1 for b in t.slots)
            )
    free_left = free_total - pop.p_min
    if isolated <= singles or free_left <= 0:
        return
    rate = r4(max(0.0, float((isolated - singles) / free_left) - _EPS))
    rule = pop.rule("tolerance", "free_fragmentation")
    sev = severity(rule, {"days_without_buffer": 0, "fragmentation_rate": rate})
    out.issue(
        "free_fragmentation",
        sev,
        kind="isolated_periods",
        isolated_periods=isolated,
        one_period_blocks=singles,
        free_periods_left_max=free_left,
        min_fragmentation_rate=rate,
    )


def _spread_floor(pop: _Population, out: _Sum) -> None:
    """``load_imbalance``: the water-filled daily loads (each day between its fixed load and
    its reachable room) have the least sample std-dev and range of all (majorisation); std is
    not monotone in the total placed outside hosts, so every total is tried. Where the
    movable tasks may not all use the same periods (their classes' days, weekdays, banned
    periods, water-course permission, item order), the least std-dev of a flow that keeps each
    task to its own periods (:mod:`.spread_flow`) is higher, and stands when it is."""
    totals = np.arange(pop.p_min, pop.p_max + 1)
    stds, spreads = _water_fill(pop.fixed_load, pop.reachable, totals, pop.tick)
    std_lb, range_lb = float(stds.min()), float(spreads.min())
    if not math.isfinite(std_lb):
        return
    kind = "water_filling"
    # where each task keeps to its own periods: each std-dev line of the rule above the
    # water filling's that the flow reaches raises the bound (none reached: nothing changes)
    lines = sorted(
        c.value
        for band in pop.rule("load", "load_imbalance").bands
        if band.severity in ("warning", "critical")
        for c in band.conds
        if c.metric == "load_std_dev" and c.value > std_lb
    )
    flow = _kept_flow(pop) if lines else None
    if flow is not None:
        for line in lines:
            kept = least_spread(*flow, enough=line, tick=pop.tick)
            if kept is None or kept.std < line:
                break
            std_lb, kind = kept.std, "own_periods"
    std_v = r4(max(0.0, std_lb - _EPS))
    range_v = math.ceil(range_lb - _EPS)
    rule = pop.rule("load", "load_imbalance")
    sev = severity(rule, {"load_std_dev": std_v, "load_range": range_v})
    out.issue(
        "load_imbalance",
        sev,
        kind=kind,
        min_load_std_dev=std_v,
        min_load_range=range_v,
        fixed_periods=int(pop.fixed_load.sum()),
        periods_to_place_min=pop.p_min,
    )


def _kept_flow(
    pop: _Population,
) -> tuple[np.ndarray, list[Group], dict[int, int], int, int] | None:
    """:func:`.spread_flow.least_spread`'s arguments for the population: each movable task's
    periods are those its reach (:func:`_reach`: class window, banned periods, item order) and
    its class's weekdays leave free, in runs as long as its shortest block (a placed one may
    also stay where it is), and the water-course blocks of fixed unlocked hosts without a
    guest it may enter (class permission, one block). None where it cannot be tighter than
    water filling (every task may use the same periods) or a movable task is a host (its
    blocks move). Tasks of one reach, length and permission share one computation."""
    state, memo = pop.state, pop.reach_memo
    free = pop.fixed_owner == 0
    movers = [t for t in state.tasks if pop.movable(t)]
    if not movers or any(t.can_embed for t in movers):
        return None
    hosts, taken = _open_host_blocks(pop)
    host_at = np.array(hosts, dtype=np.int64).reshape(-1, 3)
    open_host = np.ones(len(hosts), dtype=bool)
    open_host[list(taken)] = False
    shared: dict[tuple[Any, ...], tuple[np.ndarray, frozenset[int]]] = {}
    groups: dict[tuple[bytes, frozenset[int]], int] = {}
    cells_of: dict[bytes, np.ndarray] = {}
    for t in movers:
        pop.tick()
        reach = _reach(state, t, memo)
        rule = state.class_rules.for_task(t)
        # its weekdays too (the reach holds its day window alone), when the reach is its class's
        own_class = (
            rule is not None
            and ("task", t.state_id) not in memo
            and reach is not memo.get("anywhere")
        )
        shortest = t.need() if t.status == "pending" else min(b.length for b in t.slots)
        guest = (rule is None or rule.allow_filler) and (t.status == "pending" or len(t.slots) == 1)
        key = (reach[0], reach[1], id(reach[2]), own_class and rule, shortest, guest)
        if key not in shared:
            shared[key] = _task_places(reach, rule if own_class else None, shortest, guest, free, host_at, open_host)  # fmt: skip
        cells, seats = shared[key]
        if t.slots and t.embed_host is None:  # a placed task may stay where it is
            cells = cells.copy()
            for b in t.slots:
                cells[b.day - 1, b.slot_start - 1 : b.slot_end] = True
        if t.embed_host is not None:  # a guest may stay in its block
            seats |= {
                i for i, (d, first, length) in enumerate(hosts) if _holds(t, d, first, length)
            }
        periods = t.need() if t.status == "pending" else sum(b.length for b in t.slots)
        group = (cells.tobytes(), seats)
        cells_of[group[0]] = cells
        groups[group] = groups.get(group, 0) + periods
    alike = len(groups) == 1 and not next(iter(groups))[1]
    if alike and np.array_equal(
        np.count_nonzero(cells_of[next(iter(groups))[0]], axis=1), pop.reachable
    ):
        return None  # (one pool, the water filling's own)
    flow_groups = [Group(n, cells_of[c], seats) for (c, seats), n in groups.items()]
    room = {i: length for i, (_, _, length) in enumerate(hosts)}
    return pop.fixed_load, flow_groups, room, pop.placed_movable + pop.pending_min, pop.p_max


def _task_places(
    reach: tuple[int, int, np.ndarray],
    rule: Any,
    shortest: int,
    guest: bool,
    free: np.ndarray,
    host_at: np.ndarray,
    open_host: np.ndarray,
) -> tuple[np.ndarray, frozenset[int]]:
    """The free periods (days × periods) in runs of ``shortest`` a task of ``reach`` (and of
    ``rule``'s grid, when given) may use, and the indices of the open host blocks
    (``host_at``: day, first period, periods) where a run of ``shortest`` of them is allowed
    (``guest``: it may be a guest at all)."""
    lo, hi, mask = reach
    part = slice(lo - 1, hi)
    allow = np.broadcast_to(mask, (hi - lo + 1, mask.size)).copy()
    if rule is not None:
        allow &= rule.grid()[part]
    cells = np.zeros(free.shape, dtype=bool)
    cells[part] = _in_runs(allow & free[part], shortest)
    if not guest or not host_at.size or hi < lo:
        return cells, frozenset()
    starts = fitting_starts(allow, shortest)
    zero = np.zeros((starts.shape[0], 1), dtype=np.int64)
    count = np.concatenate([zero, np.cumsum(starts, axis=1, dtype=np.int64)], axis=1)
    day, first, length = host_at[:, 0], host_at[:, 1], host_at[:, 2]
    ok = open_host & (day >= lo) & (day <= hi) & (length >= shortest)
    at = np.flatnonzero(ok)
    row = day[at] - lo
    inside = count[row, first[at] + length[at] - shortest] - count[row, first[at] - 1]
    return cells, frozenset(at[inside > 0].tolist())


def _open_host_blocks(pop: _Population) -> tuple[list[tuple[int, int, int]], set[int]]:
    """The blocks (day, first period, periods) of the unlocked water courses that stay, and
    the indices of those a guest that stays holds (one guest per block)."""
    blocks = [
        (b.day, b.slot_start, b.length)
        for t in pop.state.tasks
        if t.can_embed and not t.locked and not pop.movable(t)
        for b in t.slots
    ]
    taken = {
        i
        for t in pop.state.tasks
        if t.embed_host is not None and not pop.movable(t)
        for i, (d, first, length) in enumerate(blocks)
        if _holds(t, d, first, length)
    }
    return blocks, taken


def _holds(t: Task, day: int, first: int, length: int) -> bool:
    """Whether guest ``t`` sits inside the block ``(day, first, length)``."""
    return any(
        b.day == day and first <= b.slot_start and b.slot_end <= first + length - 1 for b in t.slots
    )


def _in_runs(cells: np.ndarray, length: int) -> np.ndarray:
    """The cells of ``cells`` (days × periods) that lie in a run of ``length`` of them."""
    starts = fitting_starts(cells, length)
    out = starts.copy()
    for k in range(1, length):
        out[:, k:] |= starts[:, :-k]
    return out


def _budget_floor(pop: _Population, out: _Sum) -> None:
    """``budget_lag``: a subject whose fixed and movable periods together stay below its
    budget threshold near its end day lags in every schedule."""
    state, codes = pop.state, pop.codes
    budget = pop.rule("subjects", "budget_lag")
    fixed_by_subject: dict[str, int] = {}
    for t in state.tasks:
        name = study_subject(t)
        if name is not None and not pop.movable(t) and t.status != "pending":
            fixed_by_subject[name] = fixed_by_subject.get(name, 0) + sum(b.length for b in t.slots)
    for code, name in enumerate(codes.names, start=1):
        total_slots, end_day = codes.budget(state, code)
        if not total_slots or end_day is None:
            continue
        most = fixed_by_subject.get(name, 0) + pop.movable_by_subject.get(name, 0)
        metrics = subject_metrics(None, most, 0, 0, state.num_days, total_slots, end_day)
        row = {
            "budget_progress": metrics["budget_progress"],
            "days_to_end": metrics["days_to_end"],
        }
        sev = severity(budget, row)
        out.issue(
            "budget_lag",
            sev,
            kind="budget",
            category=name,
            max_used_slots=most,
            total_slots=total_slots,
            days_to_end=row["days_to_end"],
        )


def _gap_floor(pop: _Population, out: _Sum) -> None:
    """``subject_gap``: the least largest gap forced by class windows, fixed blocks and full
    days (:func:`_forced_gaps`)."""
    subjects, _ = pop.subjects
    gap_rule = pop.rule("subjects", "subject_gap")
    for name, (least, after_day, before_day) in _forced_gaps(subjects, pop.tick).items():
        sev = severity(gap_rule, {"max_gap": least})
        out.issue(
            "subject_gap",
            sev,
            kind="forced_gap",
            category=name,
            min_max_gap=least,
            after_day=after_day,
            before_day=before_day,
        )


def _concentration_floor(pop: _Population, out: _Sum) -> None:
    """``subject_concentration``: with all its blocks placed, the subject's HHI is at least
    the water-filled one (:func:`_least_concentration`)."""
    subjects, capacity = pop.subjects
    conc_rule = pop.rule("subjects", "subject_concentration")
    for name, sub in subjects.items():
        pop.tick()
        conc = _least_concentration(sub, capacity, pop.num_days)
        sev = severity(conc_rule, {"concentration": r4(conc)}) if conc is not None else None
        out.issue(
            "subject_concentration",
            sev,
            kind="forced_concentration",
            category=name,
            min_concentration=r4(conc or 0.0),
            days_reachable=int(np.count_nonzero(sub.reach | (sub.fixed > 0))),
        )


def _exact_floor(pop: _Population, out: _Sum) -> None:
    """The exact model of the per-day rules (``day_utilization``, ``buffer``,
    ``free_fragmentation``), where the limits allow: :func:`_tighten`; then, where some
    class's movable items have different orders, the one that holds the order:
    :func:`_tighten_ordered`."""
    limits = pop.limits
    if "load" not in pop.dimensions and "tolerance" not in pop.dimensions:
        return
    _within(pop, out, limits.seconds, _tighten)
    if limits.ordered_seconds > 0 and tasks_have_inner_order(
        t for t in pop.state.tasks if t.state_id in pop.movable_ids
    ):
        _within(pop, out, limits.ordered_seconds, _tighten_ordered)


def _within(
    pop: _Population,
    out: _Sum,
    seconds: float,
    tighten: Callable[[_Population, _Sum, float], None],
) -> None:
    """``tighten`` with ``seconds`` of wall time, at most what is left before the floor's
    deadline (none: the floor says the clock cut it); nothing when ``seconds`` is 0."""
    if seconds <= 0:
        return
    limit = seconds
    if pop.limits.deadline is not None:
        limit = min(limit, pop.limits.deadline - time.perf_counter())
    if limit > 0:
        tighten(pop, out, limit)
    else:
        out.floor.exact_wall_cut = True  # (the deadline left it no time)


def _capacity_floor(pop: _Population, out: _Sum) -> None:
    """``capacity_gap`` (feasibility): more study periods than free periods and host blocks
    hold, however they are arranged."""
    room = pop.free_total + pop.host_room
    report = pop.report
    if report is not None and report.is_feasible is False and pop.p_max > room:
        why = {"kind": "capacity", "study_periods": pop.p_max, "room": room}
        out.add("capacity_gap", (1, 1), why)


@dataclass(frozen=True)
class FloorRule:
    """One entry of :data:`FLOOR_RULES`: ``rule`` (or the rules) it bounds and ``bound``,
    which reads the :class:`_Population` and counts its issues into the :class:`_Sum`
    (``out.issue(rule, severity, **why)``, ``out.add(rule, (critical, critical + warning),
    why)``; ``out.unfixable(...)`` for a day fixed content alone decides)."""

    rule: str
    bound: Callable[[_Population, _Sum], None]


# The floor, one definition per rule (each a sound relaxation of its rule alone; their issues
# are disjoint, so the bounds add up). The order is the order of the floor's ``binding``.
# Adding a rule's floor is one entry: write ``_<rule>_floor(pop, out)`` that reads the
# population (add a cached property to :class:`_Population` for a fact several rules share)
# and calls ``out.issue(...)``, then list it here; the exact model's entry raises the part of the
# per-day rules it models, and the feasibility entry comes last.
FLOOR_RULES: tuple[FloorRule, ...] = (
    FloorRule("day_utilization", _utilization_floor),
    FloorRule("context_switch", _context_floor),
    FloorRule("heavy_adjacent", _heavy_floor),
    FloorRule("buffer", _buffer_floor),
    FloorRule("free_fragmentation", _fragmentation_floor),
    FloorRule("load_imbalance", _spread_floor),
    FloorRule("budget_lag", _budget_floor),
    FloorRule("subject_gap", _gap_floor),
    FloorRule("subject_concentration", _concentration_floor),
    FloorRule("day_utilization+buffer+free_fragmentation", _exact_floor),
    FloorRule("capacity_gap", _capacity_floor),
)


# ------------------------------------------------------------------------- the exact model
_EXACT_MEMO: dict[tuple[Any, ...], tuple[tuple[float, float | None], ExactDays]] = {}
_EXACT_MEMO_SIZE = 16
_EXACT_RULES = ("day_utilization", "buffer", "free_fragmentation")


def exact_items(
    state: ScheduleState, movable: Callable[[Task], bool], members: list[list[int]] | None = None
) -> tuple[list[Item], list[tuple[int, int, int]], list[int]]:
    """The movable blocks as :class:`.health_model.Item` (alike ones counted together); the
    host blocks a guest may use where they stay, (day, first period, length), and the lengths
    of those that move (a movable or pending host: it may stand anywhere). A pending task is
    one block of its need; each block of a placed task is an item of its own (they move
    independently in the model: a larger population, so the bound stays sound)."""
    memo: dict[Any, Any] = {}
    of: dict[tuple[Any, ...], list[int]] = {}  # each item's tasks (one per block), in order
    fixed_hosts: list[tuple[int, int, int]] = []
    floating: list[int] = []
    for t in state.tasks:
        if t.can_embed and not t.locked:  # a host block a guest may take
            if movable(t) or t.status == "pending":
                floating += [t.need()] if t.status == "pending" else [b.length for b in t.slots]
            else:
                fixed_hosts += [(b.day, b.slot_start, b.length) for b in t.slots]
        if not movable(t):
            continue
        (lo, hi, allowed), off = _reach_off(state, t, memo)
        mask = tuple(bool(x) for x in allowed.tolist())
        pending = t.status == "pending"
        for n in [t.need()] if pending else [b.length for b in t.slots]:
            of.setdefault((n, lo, hi, mask, pending, not t.can_embed, off), []).append(t.state_id)
    items = [
        Item(n, lo, hi, mask, p, g, len(tids), off)
        for (n, lo, hi, mask, p, g, off), tids in of.items()
    ]
    if members is not None:  # the tasks of each item, in the items' order
        members[:] = list(of.values())
    return items, sorted(fixed_hosts), sorted(floating)


def _off_days(
    state: ScheduleState, t: Task, reach: tuple[int, int, np.ndarray], memo: dict[Any, Any]
) -> tuple[int, ...]:
    """The days of its ``reach`` (:func:`_reach`'s answer) task ``t`` may not take in the
    population (issue 42): for a reach the caller gave, the off days it gave with it; else its
    class's banned weekdays, when that reach is its class's (not an existing task's, nor one
    standing outside its class's days) and, for a placed task, when it stands on none of them
    now (a task on a banned day keeps its place in the population); none otherwise."""
    if ("task", t.state_id) in memo:  # a reach the caller gave: with the off days it gave
        given: tuple[int, ...] = memo.get(("task_off", t.state_id), ())
        return given
    own = memo.get(t.category_id)
    chained = memo.get(("chained", t.state_id))
    if own is None or (reach is not own and reach is not chained):
        return ()
    key = ("off", t.category_id)
    if key not in memo:
        lo, hi = own[0], own[1]  # the class's days (a chain's are inside them)
        memo[key] = tuple(sorted(d for d in rule_for(state, t).off_days if lo <= d <= hi))
    off: tuple[int, ...] = memo[key]
    if off and t.status != "pending" and any(b.day in off for b in t.slots):
        return ()
    return off


def _reach_off(
    state: ScheduleState, t: Task, memo: dict[Any, Any]
) -> tuple[tuple[int, int, np.ndarray], tuple[int, ...]]:
    """:func:`_reach` of task ``t`` and the days inside it it may not take (:func:`_off_days`)."""
    reach = _reach(state, t, memo)
    return reach, _off_days(state, t, reach, memo)


def solve_exact(
    fixed_owner: np.ndarray,
    items: list[Item],
    fixed_hosts: list[tuple[int, int, int]],
    floating: list[int],
    *,
    level: Level,
    pending_min: int,
    count_load: bool,
    count_buffer: bool,
    time_limit_s: float,
    num_workers: int,
    work_s: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> ExactDays:
    """:func:`.health_model.exact_days`, remembered by everything it reads: the floor and
    :func:`.realise.realise` of one population share one solve. A call with a work budget
    (``work_s``) reads only a solve of the same budget the clock did not cut, so its answer is
    the one a fresh process gives; a call without one (the wall clock alone) a complete answer
    or one of no less time."""
    key = (
        level,
        pending_min,
        tuple(fixed_hosts),
        tuple(floating),
        count_load,
        count_buffer,
        tuple(items),
        fixed_owner.shape,
        np.packbits(fixed_owner != 0).tobytes(),
    )
    found = _EXACT_MEMO.get(key)
    if found is not None:
        (limit, work), old = found
        if work_s is not None:
            # a call with a work budget answers what its own solve would: the remembered one
            # of the same budget the clock did not cut (another budget's solve may hold another
            # schedule of the same figures, and the proposal's start reads the schedule)
            if work == work_s and not old.wall_cut:
                return old
        elif old.figures.get("complete") or (limit >= time_limit_s and work is None):
            return old
    result = exact_days(
        fixed_owner,
        items,
        level=level,
        pending_min=pending_min,
        fixed_hosts=fixed_hosts,
        floating_hosts=floating,
        count_load=count_load,
        count_buffer=count_buffer,
        time_limit_s=time_limit_s,
        num_workers=num_workers,
        work_s=work_s,
        calibration=calibration,
    )
    while len(_EXACT_MEMO) >= _EXACT_MEMO_SIZE:
        _EXACT_MEMO.pop(next(iter(_EXACT_MEMO)))
    _EXACT_MEMO[key] = ((time_limit_s, work_s), result)
    return result


def _tighten(pop: _Population, out: _Sum, time_limit_s: float) -> None:
    """Raise the floor's ``day_utilization`` + ``buffer`` + ``free_fragmentation`` part to the
    exact model's proven bound (:mod:`.health_model`) when it is higher; a bound not proven in time changes
    nothing. The model's answers are remembered by everything it reads (a proven one for good,
    an unproven one for calls with no more time)."""
    items, fixed_hosts, floating = exact_items(pop.state, pop.movable)
    result = solve_exact(
        pop.fixed_owner,
        items,
        fixed_hosts,
        floating,
        time_limit_s=time_limit_s,
        work_s=pop.limits.work_s,
        **_model_args(pop),
    )
    floor = out.floor
    floor.exact_complete = bool(result.figures.get("complete"))
    floor.exact_wall_cut = result.wall_cut
    if not result.proven:
        return
    _raise_exact(
        pop,
        out,
        result,
        {
            "kind": "exact_days",
            "periods_to_place": pop.pending_min
            + sum(it.length * it.count for it in items if not it.pending),
            "block_lengths": result.figures.get("lengths", []),
        },
    )


def _model_args(pop: _Population) -> dict[str, Any]:
    """What both exact models of the per-day rules read of the population and its limits."""
    return {
        "level": pop.level,
        "pending_min": pop.pending_min,
        "count_load": "load" in pop.dimensions,
        "count_buffer": "tolerance" in pop.dimensions,
        "num_workers": pop.limits.num_workers,
        "calibration": pop.limits.calibration,
    }


def _tighten_ordered(pop: _Population, out: _Sum, time_limit_s: float) -> None:
    """Raise the same part to the bound of the model that holds the item order
    (:mod:`.ordered_floor`) when it is higher: run when some class's movable items have
    different orders, on its own limits (:func:`health_floor`'s ``ordered_s`` and
    ``ordered_work_s``); it claims nothing for a population it does not model."""
    from .ordered_floor import ordered_days

    result = ordered_days(
        pop.state,
        pop.movable_ids,
        time_limit_s=time_limit_s,
        work_s=pop.limits.ordered_work_s,
        **_model_args(pop),
    )
    floor = out.floor
    floor.exact_wall_cut = floor.exact_wall_cut or result.wall_cut
    if not result.proven:
        return
    placed = sum(
        b.length
        for t in pop.state.tasks
        if t.state_id in pop.movable_ids and t.status != "pending"
        for b in t.slots
    )
    _raise_exact(
        pop,
        out,
        result,
        {"kind": "ordered_days", "periods_to_place": pop.pending_min + placed},
    )


def _raise_exact(pop: _Population, out: _Sum, result: ExactDays, why: dict[str, Any]) -> None:
    """The floor's ``day_utilization`` + ``buffer`` + ``free_fragmentation`` part raised to a
    model's proven ``result`` where it is higher (and the lexicographic floor set), with one
    binding entry carrying ``why`` and the model's figures."""
    floor, shares = out.floor, out.shares
    parts = [i for i, b in enumerate(floor.binding) if b["rule"] in _EXACT_RULES]
    old_c = sum(shares[i][0] for i in parts)
    old_cw = sum(shares[i][1] for i in parts)
    other_w = sum(shares[i][1] - shares[i][0] for i in range(len(shares)) if i not in parts)
    new_c = max(old_c, result.critical)
    new_cw = max(old_cw, result.critical_warning, new_c)
    if result.lex_warning is not None and new_c == result.critical:
        # A schedule with the floor's criticals has every rule at its critical bound, so the
        # rules here at the model's least criticals: their warnings are at least the
        # model's least warnings there, the other rules' at least their own bounds'.
        least = other_w + max(result.lex_warning, new_cw - new_c)
    else:
        least = None
    if new_c > old_c:
        floor.least_warning = None  # (a bound at fewer criticals says nothing at more)
    floor.critical += new_c - old_c
    floor.warning += (new_cw - new_c) - (old_cw - old_c)
    known = floor.least_warning if floor.least_warning is not None else floor.warning
    set_least = least is not None and least > known
    if set_least:
        floor.least_warning = least
    if (new_c, new_cw) == (old_c, old_cw) and not set_least:
        return
    if result.critical >= old_c and result.critical_warning >= old_cw:
        _drop_relaxed(out, parts)
    why = {
        **why,
        "min_critical": new_c,
        "min_issues": new_cw,
        "min_warning_at_min_critical": (None if least is None else least - other_w),
        "days_over_warning": result.figures.get("days_over_warning"),
        "days_over_critical": result.figures.get("days_over_critical"),
    }
    # the entries of these rules that stay (all, or the unfixable days alone): the new
    # entry's share makes their sum the new bound (a later model reads it)
    kept = [i for i, b in enumerate(floor.binding) if b["rule"] in _EXACT_RULES]
    kept_c = sum(shares[i][0] for i in kept)
    kept_cw = sum(shares[i][1] for i in kept)
    floor.binding.append({"rule": "day_utilization", "why": why})
    shares.append((new_c - kept_c, new_cw - kept_cw))


def _drop_relaxed(out: _Sum, parts: list[int]) -> None:
    """The exact model's figures say all the relaxation's entries ``parts`` did, but for the
    days fixed content alone puts over a band (the unfixable ones, named apart): drop the
    others."""
    binding = out.floor.binding
    keep = [
        i for i, b in enumerate(binding) if i not in parts or b["why"].get("kind") == "fixed_load"
    ]
    binding[:] = [binding[i] for i in keep]
    out.shares[:] = [out.shares[i] for i in keep]


# ---------------------------------------------------------------------------------- cache
def floor_key(
    state: ScheduleState,
    level: Level = "normal",
    report: FeasibilityReport | None = None,
    dimensions: Sequence[str] = ("load", "subjects", "context", "tolerance"),
    pending_periods: int | None = None,
    scope: Collection[int] | None = None,
    exact_s: float = 0.0,
) -> tuple[Any, ...]:
    """Everything :func:`health_floor` reads, in one value: equal keys give equal floors.

    The floor reads the arguments, the window's size, the task classes, which periods hold a
    task that stays where it is (the grid with the movable tasks' blocks cleared), every
    fixed task (its facts and blocks), and of each movable task its facts, its blocks' lengths,
    whether it stands inside its class's days (:func:`_reach`) and, for a host, its blocks
    (hosts' room). Where a movable task stands is not read otherwise, so moving it within its
    class's days keeps the key (a session's writes reuse the floor: ``analyzers/health.py``
    remembers floors by it)."""
    scope_set = None if scope is None else frozenset(scope)
    windows: dict[int | None, tuple[int, int]] = {}
    records: list[tuple[Any, ...]] = []
    cleared: list[tuple[int, int, int]] = []
    for t in state.tasks:
        moves = movable_study(state, t) and (
            scope_set is None or t.status == "pending" or t.state_id in scope_set
        )
        blocks = tuple((b.day, b.slot_start, b.slot_end) for b in t.slots)
        facts = (
            t.state_id,
            moves,
            t.source,
            t.status,
            t.locked,
            t.embed_host,
            t.can_embed,
            t.category,
            t.category_id,
            t.duration,
            t.task_class_id,
            t.task_order,  # (the item order bounds the days: :func:`_add_chains`)
        )
        if not moves:
            records.append((*facts, blocks))
            continue
        inside = None
        if t.status not in ("pending", "existing"):
            window = windows.get(t.category_id)
            if window is None:
                cls = rule_for(state, t)
                window = windows[t.category_id] = (cls.start_day, cls.end_day)
            inside = all(window[0] <= b.day <= window[1] for b in t.slots)
        lengths = tuple(b.length for b in t.slots)
        records.append((*facts, lengths, inside, blocks if t.can_embed else None))
        if t.embed_host is None:
            cleared += [(b.day - 1, b.slot_start - 1, b.length) for b in t.slots]
    fixed = state.grid.owner != 0
    if cleared:
        day0, first, count = (np.array(c, dtype=np.int64) for c in zip(*cleared, strict=True))
        offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        fixed[np.repeat(day0, count), np.repeat(first, count) + offset] = False
    return (
        level,
        tuple(dimensions),
        exact_s,
        pending_periods,
        scope_set,
        None if report is None else (report.proven, report.capacity_gap, report.is_feasible),
        state.num_days,
        state.slots_per_day,
        tuple(tc.model_dump_json() for tc in state.task_classes),
        tuple(records),
        fixed.shape,
        np.packbits(fixed).tobytes(),
    )


def _reach(
    state: ScheduleState, t: Task, memo: dict[Any, Any] | None = None
) -> tuple[int, int, np.ndarray]:
    """(first day, last day, allowed periods mask) a movable task may take in the population:
    its class's window and banned periods for a pending task or a suggested one standing inside
    its window; anywhere for the others (DESIGN: an existing task may stand anywhere).
    ``memo``: answers by class, shared by the calls of one floor (the mask is read only)."""
    memo = {} if memo is None else memo
    if (own := memo.get(("task", t.state_id))) is not None:  # given by the caller
        return own  # type: ignore[no-any-return]
    anywhere = memo.get("anywhere")
    if anywhere is None:
        anywhere = memo["anywhere"] = (1, state.num_days, np.ones(state.slots_per_day, dtype=bool))
    if t.status == "existing":
        return anywhere
    found = memo.get(t.category_id)
    if found is None:
        cls = rule_for(state, t)  # a class's rule: the same for every task of it
        spd = state.slots_per_day
        allowed = np.ones(spd, dtype=bool)
        for p in cls.banned:
            if 1 <= p <= spd:
                allowed[p - 1] = False
        found = memo[t.category_id] = (
            max(1, cls.start_day),
            min(state.num_days, cls.end_day),
            allowed,
        )
        memo[("window", t.category_id)] = (cls.start_day, cls.end_day)
    start, end = memo[("window", t.category_id)]
    if t.status != "pending" and not all(start <= b.day <= end for b in t.slots):
        return anywhere
    chain = memo.get(("chain", t.state_id))  # the days its class's item order leaves it
    if chain is None:
        return found
    narrowed = memo.get(("chained", t.state_id))
    if narrowed is None:
        lo, hi = max(found[0], chain[0]), min(found[1], chain[1])
        narrowed = memo[("chained", t.state_id)] = (lo, hi, found[2]) if lo <= hi else found
    return narrowed


@dataclass
class _Subject:
    """What the floor knows of one subject: ``fixed``: periods of its fixed blocks per day
    (0-based days), ``fixed_blocks``; ``reach``: days a movable block of it may take (class
    window, and a free run or an unlocked host block long enough); ``blocks`` / ``periods``:
    its movable blocks and their periods (pending ones included; a fixed study host's blocks
    count as movable ones: a guest may cover them); ``anchors``: for each task that stays
    placed, the first and last day it may take (1-based); ``complete``: the subject's periods
    per day are known but for the movable blocks, all of which every schedule places."""

    fixed: np.ndarray
    reach: np.ndarray
    fixed_blocks: int = 0
    blocks: int = 0
    periods: int = 0
    anchors: list[tuple[int, int]] = field(default_factory=list)
    complete: bool = True


def _subjects(
    state: ScheduleState,
    movable: Callable[[Task], bool],
    fixed_owner: np.ndarray,
    all_pending: bool,
    reach_memo: dict[Any, Any] | None = None,
) -> tuple[dict[str, _Subject], np.ndarray]:
    """Per subject, its :class:`_Subject`; and per day the periods a study block may take at
    most besides the fixed ones (free periods plus unlocked host blocks)."""
    reach_memo = {} if reach_memo is None else reach_memo
    num_days = state.num_days
    free = fixed_owner == 0
    max_host = np.zeros(num_days, dtype=np.int64)
    capacity = np.count_nonzero(fixed_owner == 0, axis=1).astype(np.int64)
    held = [
        (b.day - 1, b.length) for t in state.tasks if t.can_embed and not t.locked for b in t.slots
    ]
    if held:
        host_day = np.array([d for d, _ in held], dtype=np.int64)
        host_len = np.array([n for _, n in held], dtype=np.int64)
        np.maximum.at(max_host, host_day, host_len)
        np.add.at(capacity, host_day, host_len)
    out: dict[str, _Subject] = {}
    days_memo: dict[tuple[Any, ...], tuple[np.ndarray, tuple[int, int] | None]] = {}
    reached: dict[str, set[tuple[Any, ...]]] = {}
    for t in state.tasks:
        name = study_subject(t)
        if name is None or (t.status == "pending" and not movable(t)):
            continue
        sub = out.get(name)
        if sub is None:
            sub = out[name] = _Subject(
                np.zeros(num_days, dtype=np.int64), np.zeros(num_days, dtype=bool)
            )
        if not movable(t) and t.can_embed:
            # a fixed study host: a guest may cover its periods (its subject then leaves the
            # day), so its days are only possible present days, and its periods uncertain
            for b in t.slots:
                sub.reach[b.day - 1] = True
            sub.blocks += len(t.slots)
            sub.complete = False
            continue
        if not movable(t):
            for b in t.slots:
                sub.fixed[b.day - 1] += b.length
            sub.fixed_blocks += len(t.slots)
            continue
        n = t.need()
        key, found = _block_days(state, t, free, max_host, reach_memo, days_memo)
        days, ends = found
        if key not in reached.setdefault(name, set()):
            reached[name].add(key)
            sub.reach |= days
        if t.status == "pending":
            sub.blocks += 1
            sub.periods += n
            sub.complete = sub.complete and all_pending
        else:
            sub.blocks += len(t.slots)
            sub.periods += sum(b.length for b in t.slots)
        if (t.status != "pending" or all_pending) and ends is not None:
            sub.anchors.append(ends)
    return out, capacity


def _block_days(
    state: ScheduleState,
    t: Task,
    free: np.ndarray,
    max_host: np.ndarray,
    reach_memo: dict[Any, Any],
    days_memo: dict[tuple[Any, ...], tuple[np.ndarray, tuple[int, int] | None]],
) -> tuple[tuple[Any, ...], tuple[np.ndarray, tuple[int, int] | None]]:
    """The days a block of movable task ``t`` may take (its reach's days off its class's
    banned weekdays, with a free run of its allowed periods as long as it, or an unlocked host
    block as long when it may be a guest) and the first and last of them (None: none), keyed by
    what they depend on (window, periods, weekdays, length, embeddable): shared in
    ``days_memo`` by the tasks alike."""
    (lo, hi, allowed), off = _reach_off(state, t, reach_memo)
    n = t.need()
    key = (lo, hi, id(allowed), off, n, bool(t.can_embed))
    found = days_memo.get(key)
    if found is None:
        fits = (_longest_runs(free, allowed) >= n) | ((max_host >= n) & (not t.can_embed))
        days = np.zeros(state.num_days, dtype=bool)
        days[lo - 1 : hi] = fits[lo - 1 : hi]
        days[[d - 1 for d in off]] = False
        on = np.flatnonzero(days)
        found = days_memo[key] = (days, (int(on[0]) + 1, int(on[-1]) + 1) if on.size else None)
    return key, found


def _longest_runs(free: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Per day, the longest run of periods both free and ``allowed`` (a period mask)."""
    rows, _, lengths = free_runs(free & allowed[None, :])
    out = np.zeros(free.shape[0], dtype=np.int64)
    np.maximum.at(out, rows, lengths)
    return out


def _forced_gaps(
    subjects: dict[str, _Subject], tick: Callable[[], None] = _never
) -> dict[str, tuple[int, int, int]]:
    """Per subject, the least largest gap (in days) every schedule of the population has,
    with the two days it lies between: (gap, after_day, before_day); only subjects with a
    positive forced gap.

    Present days: the days of the subject's fixed blocks (*forced*), and at most ``k`` days
    (``k``: the movable blocks of the subject) among the days a movable block of it may take
    (its class window, a free run or an unlocked host block long enough). Every task placed
    now stays placed, and so does a pending one when all are placed: each such task anchors a
    present day inside its own reachable days. Between two anchors (the second beginning after
    the first ends) the present days in between are forced days or movable ones, so the
    largest gap there is at least the least largest gap any choice of at most ``k`` reachable
    days gives (greedy, per stretch between forced days): a sound bound."""
    out: dict[str, tuple[int, int, int]] = {}
    for name, sub in subjects.items():
        fixed = (np.flatnonzero(sub.fixed) + 1).tolist()
        marks = [(d, d) for d in fixed] + sub.anchors
        free_days = np.flatnonzero(sub.reach) + 1
        best = (0, 0, 0)
        lows = sorted(lo2 for lo2, _ in marks)
        for _, hi in marks:
            tick()
            at = bisect.bisect_right(lows, hi)  # the first mark beginning after this one ends
            if at == len(lows):
                continue
            right = lows[at]
            gap = _least_max_gap(hi, right, fixed, free_days, sub.blocks)
            best = max(best, (gap, hi, right))
        if best[0] > 0:
            out[name] = best
    return out


def _least_concentration(sub: _Subject, capacity: np.ndarray, num_days: int) -> float | None:
    """A lower bound of the subject's concentration (normalised HHI of its periods per present
    day, :func:`..rules.concentration`) over the population, or None when its periods are not
    fixed in number (some pending blocks may stay unplaced) or it has none.

    The HHI is a convex sum of squares of the per-day periods, whose total and block count are
    fixed; its least value over real daily amounts (fixed periods where they are, movable ones
    poured into reachable days, at most ``capacity`` more a day) is the water-filled one, a
    lower bound of every integer placement's (tight when the subject has no movable block)."""
    total = int(sub.fixed.sum()) + sub.periods
    if not sub.complete or total == 0:
        return None
    n = min(sub.fixed_blocks + sub.blocks, num_days)
    if n <= 1:
        return 0.0
    lo = sub.fixed.astype(float)
    hi = lo + np.where(sub.reach, capacity, 0).astype(float)
    if hi.sum() < total - _EPS:
        return None  # the population is empty: nothing to bound
    x = np.clip(_water_level(lo, hi, float(total)), lo, hi)
    hhi = float(((x / total) ** 2).sum())
    return max(0.0, min(1.0, (hhi - 1.0 / n) / (1.0 - 1.0 / n)) - 1e-7)


def _water_level(lo: np.ndarray, hi: np.ndarray, total: float) -> float:
    """The level ``L`` with ``sum(clip(L, lo, hi)) == total`` (``lo <= hi``, ``sum(lo) <= total
    <= sum(hi)``), exactly: ``f(L) = sum(clip(L, lo, hi))`` is piecewise linear and
    non-decreasing with its breaks at the bounds, each evaluated in O(log n) from sorted bounds
    and prefix sums, and ``L`` interpolated on the segment that holds ``total``."""
    los, his = np.sort(lo), np.sort(hi)
    cum_lo = np.concatenate(([0.0], np.cumsum(los)))
    cum_hi = np.concatenate(([0.0], np.cumsum(his)))
    breaks = np.unique(np.concatenate((lo, hi)))
    below = np.searchsorted(his, breaks, side="left")  # hi < L: those give hi
    inside = np.searchsorted(los, breaks, side="left")  # lo < L: with hi >= L, those give L
    f = cum_hi[below] + (cum_lo[-1] - cum_lo[inside]) + breaks * (inside - below)
    k = int(np.searchsorted(f, total - _EPS, side="left"))
    if k == 0:
        return float(breaks[0])
    if k >= len(breaks):
        return float(breaks[-1])
    a, b, fa, fb = breaks[k - 1], breaks[k], f[k - 1], f[k]
    if fb - fa <= _EPS:
        return float(b)
    return float(a + (b - a) * (total - fa) / (fb - fa))


def _least_max_gap(
    left: int, right: int, fixed: Sequence[int], free_days: np.ndarray, k: int
) -> int:
    """Least largest gap between present days ``left`` < ``right`` when the days strictly
    between them hold the ``fixed`` ones and at most ``k`` of ``free_days``."""
    inner = [d for d in fixed if left < d < right]
    cuts = [left, *inner, right]
    stretches = list(itertools.pairwise(cuts))
    cand = free_days[(free_days > left) & (free_days < right)].tolist()

    def needs(limit: int) -> int | None:
        """Fewest free days keeping every gap <= limit (None: impossible)."""
        total = 0
        for a, b in stretches:
            cur = a
            while b - cur - 1 > limit:
                reach = [d for d in cand if cur < d <= cur + limit + 1]
                if not reach:
                    return None
                cur = reach[-1]
                total += 1
        return total

    lo, hi = 0, right - left - 1  # the gap with nothing in between is always reachable
    while lo < hi:
        mid = (lo + hi) // 2
        got = needs(mid)
        if got is not None and got <= k:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _forced_days(fixed_load: np.ndarray, free: np.ndarray, periods: int, limit: int) -> int:
    """Fewest days that must reach load ``limit`` to hold ``periods`` more periods: days already
    at the limit take their free periods, the others up to ``limit - 1``, then the roomiest of
    them take the rest."""
    over = fixed_load >= limit
    below_room = _room_below(fixed_load, free, limit)
    excess = periods - int(free[over].sum()) - int(below_room[~over].sum())
    if excess <= 0:
        return 0
    extra = np.sort((free - below_room)[~over])[::-1]
    got = np.cumsum(extra)
    idx = int(np.searchsorted(got, excess))
    return idx + 1 if idx < extra.size else int(extra.size)


def _water_fill(
    lo: np.ndarray, room: np.ndarray, periods: np.ndarray, tick: Callable[[], None] = _never
) -> tuple[np.ndarray, np.ndarray]:
    """Least sample std-dev and range of daily loads ``lo + x`` with ``0 <= x <= room`` and
    ``sum(x) = p``, for each ``p`` of ``periods`` (continuous relaxation: a lower bound for
    integer loads; ``inf`` where ``p`` does not fit).

    The least spread pours ``p`` like water: every day at ``clip(L, lo, lo + room)`` for the
    level ``L`` that holds ``sum(lo) + p``. The volume held is piecewise linear in ``L``, with
    kinks at the days' ``lo`` and ``lo + room`` (integers, so at most ``slots_per_day + 1`` of
    them): each level is interpolated exactly between two kinks, and the days are grouped by
    their ``(lo, lo + room)`` pair, so the cost does not grow with the window's days. (It
    replaced a 60-step bisection over every total and day at once: the same values to ~1e-13,
    ~50x faster on a 1000-day window.)"""
    fits = periods <= int(room.sum())
    if lo.size <= 1:
        zero = np.zeros(periods.shape)
        return np.where(fits, zero, np.inf), np.where(fits, zero, np.inf)
    base = lo.astype(np.int64)
    pairs, counts = np.unique(
        np.stack([base, base + room.astype(np.int64)], axis=1), axis=0, return_counts=True
    )
    low, high, weight = pairs[:, 0].astype(float), pairs[:, 1].astype(float), counts.astype(float)
    kinks = np.unique(np.concatenate([low, high]))
    held = (np.clip(kinks[:, None], low, high) * weight).sum(axis=1)  # volume at each kink
    tick()
    target = float(base.sum()) + periods.astype(float)
    k = np.clip(np.searchsorted(held, target, side="left"), 1, max(kinks.size - 1, 1))
    if kinks.size == 1:  # no room anywhere: every day stays at its fixed load
        level = np.full(target.shape, kinks[0])
    else:
        rise = held[k] - held[k - 1]
        part = np.divide(target - held[k - 1], rise, out=np.zeros_like(target), where=rise > 0)
        level = kinks[k - 1] + np.clip(part, 0.0, 1.0) * (kinks[k] - kinks[k - 1])
        level = np.where(target <= held[0], kinks[0], level)
    x = np.clip(level[:, None], low, high)  # each group's load, per total
    days = float(base.size)
    mean = (x * weight).sum(axis=1) / days
    std = np.sqrt((((x - mean[:, None]) ** 2) * weight).sum(axis=1) / (days - 1))
    spread = x.max(axis=1) - x.min(axis=1)
    return np.where(fits, std, np.inf), np.where(fits, spread, np.inf)


def _fixed_study(
    state: ScheduleState, movable: Callable[[Task], bool], codes: SubjectCodes
) -> np.ndarray:
    """The study layer (subject ``codes``, 0 for none) of the fixed study periods no guest
    can cover; 0 elsewhere."""
    owner = state.grid.owner
    out = np.zeros(owner.shape, dtype=np.int64)
    for t in state.tasks:
        code = codes.of_task[t.state_id]
        if not code or movable(t) or t.embed_host is not None or t.can_embed:
            continue
        for b in t.slots:
            out[b.day - 1, b.slot_start - 1 : b.slot_end] = code
    return out


__all__ = ["FLOOR_RULES", "FloorRule", "HealthFloor", "floor_key", "health_floor", "movable_study"]
