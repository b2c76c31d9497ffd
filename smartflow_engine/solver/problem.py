"""The solver's view of a window: the tasks to place, grouped, and the bins they may go into.

This is the data model the CP-SAT builders read (PyJobShop's ``ProblemData``): built once from a
:class:`~smartflow_engine.state.ScheduleState`, no solver objects, no text.

Two facts make the models small (issue 4, "Modelling note"):

- pending tasks that share a duration and the same class constraints are interchangeable, so they
  form one :class:`Group` with a count, and the models place counts, never single tasks;
- maximal free runs are independent bins, and so is every embeddable host block (one guest each).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

import numpy as np

from ..calendar_filters import ProposalScope, scope_cells
from ..concepts import movable_by_solver
from ..concepts import subject_of as concepts_subject_of
from ..health_facts import free_runs
from ..state import ScheduleState, Task, TaskClass
from .order_spans import order_segments
from .scoped import narrow_rule


@dataclass(frozen=True)
class Placement:
    """One task at one place: ``day``, periods ``slot_start..slot_end``, inside ``embed_host``."""

    task_id: int
    day: int
    slot_start: int
    slot_end: int
    embed_host: int | None = None

    @property
    def length(self) -> int:
        return self.slot_end - self.slot_start + 1


@dataclass(frozen=True)
class Rule:
    """The class constraints of a group: allowed days and banned periods, as the state's
    :attr:`~smartflow_engine.state.ScheduleState.class_rules` reads them.

    ``start_day``..``end_day`` bound the class's days (its start/end days and dates);
    ``off_days`` are the days inside them it may not use (its banned weekdays); ``banned`` its
    banned periods (half-day blocks expanded, and single periods). ``extends`` says whether days
    appended after the window are allowed too: a class whose window runs to the window's last
    day (or has no end) extends with the window; a class with an earlier end keeps it (its
    deadline is a constraint of its own).
    """

    class_id: int | None
    start_day: int
    end_day: int
    banned: tuple[int, ...] = ()
    extends: bool = True
    due_day: int | None = None  # with late placement allowed: the class's real end day
    off_days: frozenset[int] = frozenset()
    # The item order (issue 42): a task of this rule starts strictly after ``after`` and ends
    # strictly before ``before`` ((day, period)), the places of its class's ordered items that
    # the problem does not move (see :func:`order_segments`); None where nothing binds.
    after: tuple[int, int] | None = None
    before: tuple[int, int] | None = None

    def allows_day(self, day: int, num_days: int) -> bool:
        if day > num_days:  # an appended extra day
            return self.extends and self.before is None
        if self.after is not None and day < self.after[0]:
            return False
        if self.before is not None and day > self.before[0]:
            return False
        return self.start_day <= day <= self.end_day and day not in self.off_days

    def allows(self, day: int, slot_start: int, slot_end: int, num_days: int) -> bool:
        """Whether a task of this rule may take ``day`` periods ``slot_start..slot_end``: its
        day, its periods and its order window (every rule of the class)."""
        if not self.allows_day(day, num_days):
            return False
        if any(slot_start <= p <= slot_end for p in self.banned):
            return False
        return self.order_allows(day, slot_start, slot_end)

    def order_banned(self, day: int, spd: int) -> tuple[int, ...]:
        """The periods of ``day`` the order window takes away (on its bounding days; the days
        beyond them are :meth:`allows_day`'s): with :attr:`banned`, the day's banned periods."""
        out: tuple[int, ...] = ()
        if self.after is not None and day == self.after[0]:
            out += tuple(range(1, min(self.after[1], spd) + 1))
        if self.before is not None and day == self.before[0]:
            out += tuple(range(max(self.before[1], 1), spd + 1))
        return out

    def order_allows(self, day: int, slot_start: int, slot_end: int) -> bool:
        """The order window alone (the periods on its bounding days)."""
        if self.after is not None and (day, slot_start) <= self.after:
            return False
        return self.before is None or (day, slot_end) < self.before


@dataclass
class Group:
    """Interchangeable scope tasks: same duration, rule, guest ability (and subject, if asked)."""

    duration: int
    rule: Rule
    can_guest: bool
    subject: str = ""
    task_ids: list[int] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.task_ids)

    @property
    def slots(self) -> int:
        return self.duration * len(self.task_ids)


@dataclass(frozen=True)
class Bin:
    """A maximal free run (``host is None``) or an embeddable host block, on one day."""

    day: int
    slot_start: int
    slot_end: int
    host: int | None = None

    @property
    def length(self) -> int:
        return self.slot_end - self.slot_start + 1


@dataclass
class Problem:
    """Everything a model needs about one window and its scope.

    ``owner`` is the grid's owner array after the scope tasks have left their places (for the
    re-planned suggested ones); ``subjects`` gives each cell's subject in the study layer (``""``: none, a free
    period or an event's; a fixed guest's over its host's period, see :mod:`..concepts`).
    """

    num_days: int
    slots_per_day: int
    groups: list[Group]
    runs: list[Bin]
    hosts: list[Bin]
    owner: np.ndarray
    subjects: np.ndarray
    current: dict[int, Placement]  # scope tasks that are placed now: where they are
    fixed_counts: dict[tuple[str, int], int] = field(default_factory=dict)  # (subject, day)
    task_subjects: dict[int, str] = field(default_factory=dict)  # scope task -> subject
    classes: dict[int, TaskClass] = field(default_factory=dict)

    @property
    def required_slots(self) -> int:
        return sum(g.slots for g in self.groups)

    @property
    def task_count(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def free_slots(self) -> int:
        return int(np.count_nonzero(self.owner == 0))

    @property
    def embed_slots(self) -> int:
        return sum(b.length for b in self.hosts)

    def bins_by_day(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        """Per day: indices of its free runs and of its host blocks."""
        runs_by_day: dict[int, list[int]] = defaultdict(list)
        for ri, b in enumerate(self.runs):
            runs_by_day[b.day].append(ri)
        hosts_by_day: dict[int, list[int]] = defaultdict(list)
        for hi, b in enumerate(self.hosts):
            hosts_by_day[b.day].append(hi)
        return runs_by_day, hosts_by_day

    def group_of(self) -> dict[int, int]:
        """Task id -> index of its group."""
        return {tid: gi for gi, g in enumerate(self.groups) for tid in g.task_ids}

    def starts(self, group: Group, b: Bin) -> list[int]:
        """Allowed 1-based starts of ``group`` in bin ``b`` (day window, length, banned periods)."""
        if not group.rule.allows_day(b.day, self.num_days) or group.duration > b.length:
            return []
        if b.host is not None and not group.can_guest:
            return []
        out = allowed_starts(
            group.rule.banned, group.duration, b.slot_start, b.slot_end, self.slots_per_day
        )
        rule = group.rule
        if rule.after is not None or rule.before is not None:
            d = group.duration
            out = [s for s in out if rule.order_allows(b.day, s, s + d - 1)]
        return out


def valid_start(problem: Problem, placements: list[Placement], target: int) -> bool:
    """``placements`` place ``target`` periods of the scope, each task at most once, each block
    of its group's length on a day and off the periods its rule allows, on free periods (no two
    overlapping) or inside a host block of the problem (no two guests overlapping)."""
    group_of = {tid: g for g in problem.groups for tid in g.task_ids}
    used = problem.owner != 0
    used = used.copy()
    guest_cells: set[tuple[int, int]] = set()
    hosts = {(b.day, b.host): b for b in problem.hosts}
    seen: set[int] = set()
    periods = 0
    for pl in placements:
        g = group_of.get(pl.task_id)
        if g is None or pl.task_id in seen or pl.length != g.duration:
            return False
        seen.add(pl.task_id)
        periods += pl.length
        if not g.rule.allows_day(pl.day, problem.num_days) or pl.day > used.shape[0]:
            return False
        if any(pl.slot_start <= p <= pl.slot_end for p in g.rule.banned):
            return False
        if pl.embed_host is None:
            cells = used[pl.day - 1, pl.slot_start - 1 : pl.slot_end]
            if cells.any():
                return False
            cells[:] = True
            continue
        b = hosts.get((pl.day, pl.embed_host))
        taken = {(pl.day, p) for p in range(pl.slot_start, pl.slot_end + 1)}
        if not g.can_guest or b is None or b.slot_start > pl.slot_start or b.slot_end < pl.slot_end:
            return False
        if taken & guest_cells:
            return False
        guest_cells |= taken
    return periods == target


def allowed_starts(
    banned: Iterable[int], duration: int, slot_start: int, slot_end: int, spd: int
) -> list[int]:
    """Starts ``s`` in ``slot_start..slot_end-duration+1`` whose periods avoid ``banned``."""
    last = slot_end - duration + 1
    if last < slot_start:
        return []
    bad = np.zeros(spd + 1, dtype=np.int32)
    for p in banned:
        if 1 <= p <= spd:
            bad[p] = 1
    csum = np.cumsum(bad)
    s = np.arange(slot_start, last + 1)
    ok = csum[s + duration - 1] - csum[s - 1] == 0
    return [int(v) for v in s[ok]]


def subject_of(task: Task) -> str:
    """The subject a task counts as for the same-category and context-switch terms: the one
    of :func:`..concepts.subject_of` (a study task's category, ``未分类`` without one), ``""``
    for an event (it has none, as ``analyze_health`` sees it; issue 25 item 3)."""
    return concepts_subject_of(task) or ""


def movable(state: ScheduleState, task: Task, hosts: Container[int] | None = None) -> bool:
    """A placed task the solver may re-plan: unlocked, one block, no guest, not a host itself.

    ``hosts``: the ids of tasks that hold a guest (``state.guests_by_host()``), when the caller
    asks about many tasks of one state (computed here otherwise, a pass over every task)."""
    return movable_by_solver(state, task, hosts)  # the one definition (issue 25)


def rule_for(
    state: ScheduleState,
    task: Task,
    *,
    lift_banned: bool = False,
    lift_windows: bool = False,
    allow_late: bool = False,
    order: tuple[tuple[int, int] | None, tuple[int, int] | None] = (None, None),
    lift_weekdays: bool = False,
) -> Rule:
    """The class constraints of ``task`` (its category's TaskClass, if any).

    ``allow_late`` keeps the start day and banned periods but lets the task run to the window's
    end, remembering the class's end day as ``due_day``. ``order``: the task's order segment
    (:func:`.order.order_segments`), kept whatever is lifted.
    """
    num_days = state.num_days
    cr = state.class_rules.for_task(task)
    after, before = order
    if cr is None:
        return Rule(None, 1, num_days, (), True, after=after, before=before)
    start = 1 if lift_windows else cr.first_day
    end = num_days if lift_windows else cr.last_day
    banned = () if lift_banned else cr.banned_periods
    extends = lift_windows or cr.open_end
    # the class's banned weekdays inside its day window (lifting windows lifts them too)
    off = (
        frozenset()
        if lift_windows or lift_weekdays
        else frozenset(int(d) + 1 for d in np.flatnonzero(~cr.late_days)) - set(range(1, start))
    )
    if allow_late and end < num_days:
        return Rule(
            cr.class_id,
            start,
            num_days,
            banned,
            True,
            due_day=end,
            off_days=off,
            after=after,
            before=before,
        )
    return Rule(cr.class_id, start, end, banned, extends, off_days=off, after=after, before=before)


def scope_tasks(
    state: ScheduleState,
    *,
    include_suggested: bool = False,
    task_ids: Iterable[int] | None = None,
) -> list[Task]:
    """The tasks a problem re-plans, in the state's order (see :func:`build_problem`): the
    pending ones and (``include_suggested``) the movable suggested ones, or the pending and
    movable ones of ``task_ids``."""
    holding = state.guests_by_host()
    if task_ids is not None:
        wanted = set(task_ids)
        return [
            t
            for t in state.tasks
            if t.state_id in wanted and (t.status == "pending" or movable(state, t, holding))
        ]
    return [
        t
        for t in state.tasks
        if t.status == "pending"
        or (include_suggested and t.status == "suggested" and movable(state, t, holding))
    ]


def cleared_layers(state: ScheduleState, scope: Iterable[Task]) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the grid's owner and guest layers with the periods of every scope task
    cleared: where the re-planned tasks may go. The grid holds each placed task's id exactly on
    its blocks (a guest's in the guest layer, a pending task nowhere: the state's invariant),
    so clearing the scope's ids clears their blocks, in one array pass."""
    grid = state.grid
    owner = grid.owner.copy()
    guest = grid.guest.copy()
    ids = np.fromiter((t.state_id for t in scope), dtype=np.int64)
    if ids.size:
        top = max(int(ids.max()), int(owner.max(initial=0)), int(guest.max(initial=0)))
        leaving = np.zeros(top + 1, dtype=bool)
        leaving[ids] = True
        owner[leaving[owner]] = 0
        guest[leaving[guest]] = 0
    return owner, guest


def build_problem(
    state: ScheduleState,
    *,
    include_suggested: bool = False,
    by_subject: bool = False,
    lift_banned: bool = False,
    lift_windows: bool = False,
    allow_late: bool = False,
    task_ids: Iterable[int] | None = None,
    subjects: bool = True,
    lift_order: bool = False,
    lift_weekdays: bool = False,
    within: ProposalScope | None = None,
) -> Problem:
    """Extract the scope, its groups and the bins from ``state`` (the state is not changed).

    Parameters
    ----------
    include_suggested
        Also re-plan the movable suggested tasks (their current places count as free).
    by_subject
        Split groups by subject too (the placement model needs it; feasibility does not).
    lift_banned, lift_windows
        Drop the task classes' banned periods / day windows (negotiation figures).
    allow_late
        Let class tasks run past their class's end day (a soft ``late`` term in proposals).
    task_ids
        Explicit scope instead of the default one (each must be pending or movable).
    lift_weekdays
        Drop the task classes' banned weekdays alone (a negotiation figure).
    lift_order
        Drop the item order's segments (the negotiation's order relaxation): by default each
        ordered scope task keeps to the span its class's unmoved items leave it (a mask in its
        rule, :mod:`.order`); the order among scope tasks is :func:`.order.keep_order`'s.
    subjects
        Also fill ``subjects``, ``fixed_counts`` and ``task_subjects`` (what the placement
        objective reads). ``False`` leaves them empty (``subjects`` of shape ``(0, 0)``, so a
        reader fails loudly): the counting models of feasibility never read them, and a cohort
        batch checks thousands of windows.
    within
        A proposal limited by the calendar (issue 43): its tasks are the scope (instead of
        ``task_ids``; the other placed tasks stay), each one's class rule narrowed to its cells
        (:mod:`.scoped`).
    """
    limits = scope_cells(state, within) if within is not None else None
    if limits is not None:
        task_ids = limits.keys()
    scope = scope_tasks(state, include_suggested=include_suggested, task_ids=task_ids)
    owner, guest = cleared_layers(state, scope)
    current: dict[int, Placement] = {}
    for t in scope:
        if t.status == "pending":
            continue
        b = t.slots[0]
        current[t.state_id] = Placement(t.state_id, b.day, b.slot_start, b.slot_end, t.embed_host)
    lifts = {
        "lift_banned": lift_banned,
        "lift_windows": lift_windows,
        "allow_late": allow_late,
        "lift_weekdays": lift_weekdays,
    }
    segments = {} if lift_order else order_segments(state, scope)
    groups = _groups(state, scope, lifts, segments, limits, owner == 0, by_subject)
    scope_ids = {t.state_id for t in scope}
    free_bins, hosts = _bins(state, scope_ids, owner, guest)
    classes = {tc.id: tc for tc in state.task_classes}
    if not subjects:
        no_subjects = np.empty((0, 0), dtype=object)
        return Problem(
            state.num_days, state.slots_per_day, groups, free_bins, hosts, owner,
            no_subjects, current, {}, {}, classes,
        )  # fmt: skip
    subject_grid, fixed_counts, subj_of_id = _subject_facts(state, scope_ids, owner, guest)
    return Problem(
        state.num_days, state.slots_per_day, groups, free_bins, hosts, owner, subject_grid,
        current, fixed_counts, {t.state_id: subj_of_id[t.state_id] for t in scope}, classes,
    )  # fmt: skip


def _groups(
    state: ScheduleState,
    scope: list[Task],
    lifts: dict[str, bool],
    segments: dict[int, tuple[tuple[int, int] | None, tuple[int, int] | None]],
    limits: dict[int, np.ndarray] | None,
    free: np.ndarray,
    by_subject: bool,
) -> list[Group]:
    """The scope's tasks grouped by what the models tell apart: duration, rule (the class's,
    with ``lifts`` made, the task's order segment, narrowed to a calendar scope's cells
    ``limits``), whether it may be a guest, and (``by_subject``) its subject."""
    groups: dict[tuple[object, ...], Group] = {}
    # A task's rule depends on its category only; equal rules share one object, so a group's
    # key holds the rule's identity (hashing the rule itself per task was a third of the time).
    rules: dict[tuple[object, ...], Rule] = {}
    same: dict[Rule, Rule] = {}
    class_rules = state.class_rules  # read once: a property of the state, not free to read
    for t in sorted(scope, key=lambda t: t.state_id):
        segment = segments.get(t.state_id, (None, None))
        rule = rules.get((t.category_id, segment))
        if rule is None:
            rule = rule_for(state, t, order=segment, **lifts)
            rule = rules[(t.category_id, segment)] = same.setdefault(rule, rule)
        if limits is not None:  # a calendar scope narrows each task's rule to its cells
            narrowed = narrow_rule(rule, limits[t.state_id], free)
            rule = same.setdefault(narrowed, narrowed)
        duration = t.need()
        can_guest = not t.can_embed and class_rules.may_embed(t)
        subject = subject_of(t) if by_subject else ""
        key = (duration, id(rule), can_guest, subject)
        if key not in groups:
            groups[key] = Group(duration, rule, can_guest, subject)
        groups[key].task_ids.append(t.state_id)
    return list(groups.values())


def _bins(
    state: ScheduleState, scope_ids: set[int], owner: np.ndarray, guest: np.ndarray
) -> tuple[list[Bin], list[Bin]]:
    """The free runs of the cleared ``owner`` layer and the host blocks no guest outside the
    scope holds (by day, then period)."""
    days, starts, lengths = free_runs(owner == 0)
    free_bins = [
        Bin(int(d) + 1, int(s) + 1, int(s + n))
        for d, s, n in zip(days.tolist(), starts.tolist(), lengths.tolist(), strict=True)
    ]
    hosts: list[Bin] = []
    embed_hosts = state.grid.embed_hosts
    for t in state.tasks:
        if t.state_id not in embed_hosts or t.state_id in scope_ids:
            continue
        for b in t.slots:
            if not guest[b.day - 1, b.slot_start - 1 : b.slot_end].any():
                hosts.append(Bin(b.day, b.slot_start, b.slot_end, t.state_id))
    hosts.sort(key=lambda b: (b.day, b.slot_start))
    return free_bins, hosts


def _subject_facts(
    state: ScheduleState, scope_ids: set[int], owner: np.ndarray, guest: np.ndarray
) -> tuple[np.ndarray, dict[tuple[str, int], int], dict[int, str]]:
    """The study layer of the fixed content (concepts): "" where no subject (a free period, an
    event), a guest's subject over its host's period; the fixed tasks' periods per (subject,
    day); and every task's subject."""
    subj_of_id = {t.state_id: subject_of(t) for t in state.tasks}
    subject_grid = np.full(owner.shape, "", dtype=object)
    occupied = np.nonzero(owner)
    subject_grid[occupied] = [subj_of_id[int(i)] for i in owner[occupied].tolist()]
    hosted = np.nonzero(guest)
    subject_grid[hosted] = [subj_of_id[int(i)] for i in guest[hosted].tolist()]
    fixed_counts: dict[tuple[str, int], int] = {}
    for t in state.tasks:
        if t.state_id in scope_ids:
            continue
        for b in t.slots:
            where = (subj_of_id[t.state_id], b.day)
            fixed_counts[where] = fixed_counts.get(where, 0) + 1
    return subject_grid, fixed_counts, subj_of_id
