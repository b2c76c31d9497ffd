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

from ..concepts import movable_by_solver
from ..concepts import subject_of as concepts_subject_of
from ..state import ScheduleState, Task, TaskClass, runs


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
    """The class constraints of a group: allowed days and banned periods.

    ``extends`` says whether days appended after the window are allowed too: a class whose window
    runs to the window's last day (or has no end day) extends with the window; a class with an
    earlier end day keeps it (its deadline is a constraint of its own).
    """

    class_id: int | None
    start_day: int
    end_day: int
    banned: tuple[int, ...] = ()
    extends: bool = True
    due_day: int | None = None  # with late placement allowed: the class's real end day

    def allows_day(self, day: int, num_days: int) -> bool:
        if day > num_days:  # an appended extra day
            return self.extends
        return self.start_day <= day <= self.end_day


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
        return allowed_starts(
            group.rule.banned, group.duration, b.slot_start, b.slot_end, self.slots_per_day
        )


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
) -> Rule:
    """The class constraints of ``task`` (its category's TaskClass, if any).

    ``allow_late`` keeps the start day and banned periods but lets the task run to the window's
    end, remembering the class's end day as ``due_day``.
    """
    num_days = state.num_days
    tc = state.task_class(task.category_id)
    if tc is None:
        return Rule(None, 1, num_days, (), True)
    start = 1 if lift_windows or tc.start_day is None else tc.start_day
    end = num_days if lift_windows or tc.end_day is None else tc.end_day
    banned = () if lift_banned else tuple(sorted(set(tc.excluded_slots)))
    extends = lift_windows or tc.end_day is None or tc.end_day >= num_days
    if allow_late and end < num_days:
        return Rule(tc.id, start, num_days, banned, True, due_day=end)
    return Rule(tc.id, start, end, banned, extends)


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
    subjects
        Also fill ``subjects``, ``fixed_counts`` and ``task_subjects`` (what the placement
        objective reads). ``False`` leaves them empty (``subjects`` of shape ``(0, 0)``, so a
        reader fails loudly): the counting models of feasibility never read them, and a cohort
        batch checks thousands of windows.
    """
    grid = state.grid
    scope = scope_tasks(state, include_suggested=include_suggested, task_ids=task_ids)
    owner, guest = cleared_layers(state, scope)
    current: dict[int, Placement] = {}
    for t in scope:
        if t.status == "pending":
            continue
        b = t.slots[0]
        current[t.state_id] = Placement(t.state_id, b.day, b.slot_start, b.slot_end, t.embed_host)

    groups: dict[tuple[object, ...], Group] = {}
    # A task's rule depends on its category only; equal rules share one object, so a group's
    # key holds the rule's identity (hashing the rule itself per task was a third of the time).
    rules: dict[int | None, Rule] = {}
    same: dict[Rule, Rule] = {}
    for t in sorted(scope, key=lambda t: t.state_id):
        rule = rules.get(t.category_id)
        if rule is None:
            rule = rule_for(
                state, t, lift_banned=lift_banned, lift_windows=lift_windows, allow_late=allow_late
            )
            rule = rules[t.category_id] = same.setdefault(rule, rule)
        duration = t.need()
        can_guest = not t.can_embed
        subject = subject_of(t) if by_subject else ""
        key = (duration, id(rule), can_guest, subject)
        if key not in groups:
            groups[key] = Group(duration, rule, can_guest, subject)
        groups[key].task_ids.append(t.state_id)

    days, starts, lengths = runs(owner == 0)
    free_bins = [
        Bin(int(d) + 1, int(s) + 1, int(s + n))
        for d, s, n in zip(days.tolist(), starts.tolist(), lengths.tolist(), strict=True)
    ]
    scope_ids = {t.state_id for t in scope}
    hosts: list[Bin] = []
    for t in state.tasks:
        if t.state_id not in grid.embed_hosts or t.state_id in scope_ids:
            continue
        for b in t.slots:
            if not guest[b.day - 1, b.slot_start - 1 : b.slot_end].any():
                hosts.append(Bin(b.day, b.slot_start, b.slot_end, t.state_id))
    hosts.sort(key=lambda b: (b.day, b.slot_start))

    classes = {tc.id: tc for tc in state.task_classes}
    groups_list = list(groups.values())
    if not subjects:
        return Problem(
            state.num_days,
            state.slots_per_day,
            groups_list,
            free_bins,
            hosts,
            owner,
            np.empty((0, 0), dtype=object),
            current,
            {},
            {},
            classes,
        )
    # the study layer of the fixed content (concepts): "" where no subject (a free period, an
    # event), a guest's subject over its host's period
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
    return Problem(
        state.num_days,
        state.slots_per_day,
        groups_list,
        free_bins,
        hosts,
        owner,
        subject_grid,
        current,
        fixed_counts,
        {t.state_id: subj_of_id[t.state_id] for t in scope},
        classes,
    )
