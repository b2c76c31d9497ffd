"""Targets and destinations of a next action: which tasks it may move, where each may legally go,
and what each destination does to the health issues.

A destination is legal when the write tools would accept it: free periods (or a free block of a
water course, when the task's class permits), where every class rule allows (its days, dates and
weekdays, off its banned periods, in the order of its class's items). Its effect
is measured by the one health evaluator (:mod:`.evaluator`): the task is moved on the state, the
evaluator judges the days and subjects the move touched, and the move is undone, so ``resolves``
/ ``creates`` and the severity deltas are exactly what ``analyze_health`` would report after the
write (no feasibility step), at the cost of what the move touched (issue 25).

Candidate starts per free run are its first and its last fitting start (the two ends keep the
longest free run on the day); embeddable host blocks are tried at their first period.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from ..concepts import movable_by_tools, subject_of
from ..health_facts import row_free_runs
from ..rules import Level, rules_for
from ..state import Request, ScheduleState, SlotRange, Task, relocate
from .criteria import SEVERE
from .evaluator import DayFacts, Delta, HealthEvaluator, evaluator_for, task_sig, touched
from .result import DIMENSIONS, SEVERITY_RANK, AnalysisResult, Issue, NextAction, close_signal

MAX_TARGETS = 30  # tasks an action's search measures (as many as SCREEN orders; the budget binds)
EVAL_BUDGET = 240  # candidates judged per search or ranking (each a probe of what it touches)
PER_TASK = 40  # candidates judged per task within an action's search
SCREEN = 30  # targets whose removal effect orders an action's search


@dataclass(frozen=True)
class Destination:
    """One legal place for a task and its measured effect on the critical/warning issues."""

    day: int
    slot_start: int
    slot_end: int
    embed_host: int | None
    resolves: tuple[str, ...]
    creates: tuple[str, ...]
    critical_delta: int
    warning_delta: int
    impact_after: float
    resolves_focus: int = 0  # how many of the action's own issues it resolves
    impact_delta: float = 0.0  # change of the total critical/warning impact (negative: better)
    eases_focus: int = 0  # the action's issues it resolves, or lowers in severity or impact
    from_day: int | None = None  # the block moved, for a task with several (move's from_day)

    @property
    def helps(self) -> bool:
        """Usable for the action: it resolves or eases one of the action's own issues, creates
        no new critical/warning issue, and the health key (critical, warning, total impact) gets
        strictly (lexicographically) better, so the loop counts the write as progress (a critical
        issue eased to a warning counts one warning more and one critical less)."""
        return (
            self.eases_focus > 0
            and not self.creates
            and (self.critical_delta, self.warning_delta, self.impact_delta) < (0, 0, 0.0)
        )

    def score(self) -> tuple[int, int, int, int, float, int, int]:
        return (
            self.critical_delta,
            self.warning_delta,
            -self.resolves_focus,
            len(self.creates),
            self.impact_after,
            self.day,
            self.slot_start,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "slot_start": self.slot_start,
            "slot_end": self.slot_end,
            "embed_host": self.embed_host,
            "resolves": list(self.resolves),
            "creates": list(self.creates),
            "critical_delta": self.critical_delta,
            "warning_delta": self.warning_delta,
            "impact_delta": self.impact_delta,
            "helps": self.helps,
            **({"from_day": self.from_day} if self.from_day else {}),
        }


@dataclass
class Ranking:
    """Destinations found for one task, best first; ``complete`` when every candidate was tried."""

    task_id: int
    destinations: list[Destination] = field(default_factory=list)
    complete: bool = True
    cut: bool = False  # the time limit stopped it
    # candidates judged without a probe (``prune``): provably not helpful, counted as judged
    skipped: int = 0

    @property
    def judged(self) -> int:
        """Candidates judged: the destinations measured and those pruned."""
        return len(self.destinations) + self.skipped


def health_issues(state: ScheduleState, level: Level = "normal") -> list[Issue]:
    """The merged health issues of ``state`` without the feasibility step (the session's cached
    evaluator, brought up to date: a write costs what it touched)."""
    ev = evaluator_for(state, level)
    with ev.lock:
        return ev.issues()


def health_result(state: ScheduleState, level: Level = "normal") -> AnalysisResult:
    """The health envelope of ``state`` for an evidence line: its issues (as ``analyze_health``
    reports them, without feasibility, the floor and the destination search) and the issue
    counts and close-rule figures of ``metrics.close_signal`` (what ``success_criteria`` read)."""
    issues = health_issues(state, level)
    counts = dict.fromkeys(SEVERITY_RANK, 0)
    for issue in issues:
        counts[issue.severity] += 1
    return AnalysisResult(
        tool="analyze_health",
        success=True,
        metrics={
            "issue_counts": counts,
            "close_signal": close_signal(counts["critical"], counts["warning"]),
        },
        issues=issues,
        has_feasibility=True,
    )


# ---------------------------------------------------------------------------------- targets
def movable(state: ScheduleState, task: Task, hosts: Container[int] | None = None) -> bool:
    """A study task single writes can put elsewhere: :func:`..concepts.movable_by_tools`."""
    return movable_by_tools(state, task, hosts)


def _as_list(value: Any) -> list[Any] | None:
    if value is None:
        return None
    return list(value) if isinstance(value, list | tuple) else [value]


def matches(
    state: ScheduleState, task: Task, target_filter: dict[str, Any], scope: dict[str, Any]
) -> bool:
    """Does ``task`` pass an action's ``target_filter`` and ``candidate_scope``?"""
    kinds = _as_list(target_filter.get("kind"))  # study / course (the model's words)
    if kinds is not None and ("course" if task.source == "event" else "study") not in kinds:
        return False
    sources = _as_list(target_filter.get("source"))  # the old form, still accepted quietly
    if sources is not None and task.source not in sources:
        return False
    locked = target_filter.get("locked")
    if locked is not None and bool(state.is_locked(task)) != bool(locked):
        return False
    statuses = _as_list(target_filter.get("status"))
    if statuses is not None and task.status not in statuses:
        return False
    cats = _as_list(target_filter.get("categories")) or _as_list(target_filter.get("category"))
    scope_cats = scope.get("categories") or None
    for allowed in (cats, scope_cats):
        if allowed and subject_of(task) not in allowed:
            return False
    days = _as_list(target_filter.get("days"))
    if days and task.status != "pending" and not any(b.day in days for b in task.slots):
        return False
    ids = target_filter.get("task_ids")
    if ids is not None and task.state_id not in ids:
        return False
    pool = scope.get("task_pool")
    if pool == "placed" and task.status == "pending":
        return False
    return not (pool == "pending" and task.status != "pending")


def _matcher(
    state: ScheduleState, target_filter: dict[str, Any], scope: dict[str, Any]
) -> Callable[[Task], bool]:
    """:func:`matches` with the filters read once (a search tests every task of the window)."""
    sources = _as_list(target_filter.get("source"))
    locked = target_filter.get("locked")
    statuses = _as_list(target_filter.get("status"))
    cats = _as_list(target_filter.get("categories")) or _as_list(target_filter.get("category"))
    scope_cats = scope.get("categories") or None
    allowed = [set(a) for a in (cats, scope_cats) if a]
    days = set(_as_list(target_filter.get("days")) or ())
    ids = target_filter.get("task_ids")  # a caller's own selection (the calendar filters)
    pool = scope.get("task_pool")

    def fits(task: Task) -> bool:
        if ids is not None and task.state_id not in ids:
            return False
        if sources is not None and task.source not in sources:
            return False
        if statuses is not None and task.status not in statuses:
            return False
        pending = task.status == "pending"
        if (pool == "placed" and pending) or (pool == "pending" and not pending):
            return False
        if allowed and any(subject_of(task) not in a for a in allowed):
            return False
        if days and not pending and not any(b.day in days for b in task.slots):
            return False
        return locked is None or bool(state.is_locked(task)) == bool(locked)

    return fits


@dataclass
class TaskPool:
    """The tasks of a state single writes can move (:func:`movable`), in the state's order and
    by subject: built once for the searches of one health call (the state stays as it is)."""

    every: list[Task]
    by_subject: dict[str, list[Task]]
    _by_day: dict[int, list[Task]] | None = None  # built when a search first asks for days

    @classmethod
    def of(cls, state: ScheduleState) -> TaskPool:
        hosts = state.guests_by_host()
        every = [t for t in state.tasks if movable(state, t, hosts)]
        by_subject: dict[str, list[Task]] = {}
        for t in every:
            name = subject_of(t)
            if name is not None:  # always: a movable task is a study task
                by_subject.setdefault(name, []).append(t)
        return cls(every, by_subject)

    def on_days(self, days: Iterable[Any]) -> list[Task]:
        """The pool's tasks a ``days`` filter lets through (:func:`matches`): the pending ones
        and those with a block on one of ``days``, each once, in no particular order."""
        if self._by_day is None:
            self._by_day = {}
            for t in self.every:
                if t.status == "pending":
                    self._by_day.setdefault(0, []).append(t)  # day 0: pending
                for b in t.slots:
                    self._by_day.setdefault(b.day, []).append(t)
        found: dict[int, Task] = {t.state_id: t for t in self._by_day.get(0, ())}
        for d in days:  # compared as ``b.day in days`` compares them
            for t in self._by_day.get(d, ()):
                found[t.state_id] = t
        return list(found.values())


def target_tasks(
    state: ScheduleState,
    action: NextAction | None = None,
    target_filter: dict[str, Any] | None = None,
    scope: dict[str, Any] | None = None,
    pool: TaskPool | None = None,
) -> list[Task]:
    """Movable tasks passing the filters, those on the action's issue days and longer ones
    first (``pool``: the state's :class:`TaskPool`, when the caller has it)."""
    tf = dict(action.target_filter if action is not None else {})
    tf.update(target_filter or {})
    sc = dict(action.candidate_scope if action is not None else {})
    sc.update(scope or {})
    hot = set(_as_list(tf.get("days")) or ())
    fits = _matcher(state, tf, sc)
    if pool is None:
        hosts = state.guests_by_host()
        found = [t for t in state.tasks if fits(t) and movable(state, t, hosts)]
    else:
        # a task passes the category filters only when its subject is in each of them
        cats = _as_list(tf.get("categories")) or _as_list(tf.get("category"))
        named = cats or sc.get("categories") or None
        some = (
            # only tasks on the filter's days pass (and pending ones): found from the days
            (pool.on_days(hot) if hot else pool.every)
            if not named
            else [t for c in dict.fromkeys(named) for t in pool.by_subject.get(c, ())]
        )
        found = [t for t in some if fits(t)]

    def key(t: Task) -> tuple[int, int, int]:
        on_hot = sum(1 for b in t.slots if b.day in hot)
        return (-on_hot, -t.need(), t.state_id)

    return sorted(found, key=key)


# ---------------------------------------------------------------------------------- destinations
def _pieces(task: Task) -> list[tuple[int | None, int]]:
    """``(from_day, periods)`` of what one write moves: the whole task (``from_day`` None), or
    each block of a task with several."""
    if task.status == "pending" or len(task.slots) <= 1:
        return [(None, task.need())]
    return [(b.day, b.length) for b in task.slots]


def host_blocks(state: ScheduleState) -> list[tuple[int, SlotRange]]:
    """``(host id, block)`` of every block of an unlocked embeddable task (where a guest may
    go), in the state's order."""
    return [
        (host.state_id, b)
        for host in state.tasks
        if host.can_embed and not state.is_locked(host)
        for b in host.slots
    ]


class _Replay:
    """A lazily read sequence shared by several readers: what one reader drew is kept for
    the next, and no reader draws more than it reads."""

    def __init__(self, source: Iterator[tuple[int, tuple[int, ...]]]) -> None:
        self._source = source
        self._seen: list[tuple[int, tuple[int, ...]]] = []

    def __iter__(self) -> Iterator[tuple[int, tuple[int, ...]]]:
        i = 0
        while True:
            if i < len(self._seen):
                yield self._seen[i]
            else:
                item = next(self._source, None)
                if item is None:
                    return
                self._seen.append(item)
                yield item
            i += 1


@dataclass
class SearchMemo:
    """What the rankings of one search (or the searches of one health call) share while the
    state stays as it is (every probe is undone): the host blocks, the tasks holding a guest,
    the free-period starts per (days, class window, banned periods, periods, days taken by the
    task's other blocks) and per (day, periods, banned periods), the evaluator's total impact
    and free runs, and the guests each host block holds."""

    hosts: list[tuple[int, SlotRange]]
    guest_hosts: set[int]
    starts: dict[tuple[Any, ...], _Replay] = field(default_factory=dict)
    day_starts: dict[tuple[Any, ...], tuple[int, ...]] = field(default_factory=dict)
    # the day sequences ``starts`` is keyed by (by id): held, so no id is reused meanwhile
    days_held: list[Sequence[int]] = field(default_factory=list)
    # (evaluator, its total critical/warning impact, its free runs)
    judged: tuple[HealthEvaluator, float, Any] | None = None
    # (evaluator, the facts of a day with a piece landed on its free periods, by (day, first
    # period, periods, the piece's subject code)): tasks of one subject landing alike share them
    landed: tuple[HealthEvaluator, dict[tuple[int, int, int, int], DayFacts]] | None = None
    # per task: its class rule, banned periods, order bounds and the host blocks it may enter
    task_facts: dict[int, _TaskFacts] = field(default_factory=dict)
    # the days a piece may go to, by (days, class, days taken by the task's other blocks)
    day_sets: dict[tuple[Any, ...], frozenset[int]] = field(default_factory=dict)
    # the guests of each host block (by day, first and last period)
    block_guests: dict[tuple[int, int, int], frozenset[int]] = field(default_factory=dict)
    # the host blocks a piece of a task that is no guest tries (:func:`_block_tries`), by
    # (days, the day set, periods, banned periods, order bounds)
    block_tries: dict[tuple[Any, ...], list[tuple[int, int, SlotRange]]] = field(
        default_factory=dict
    )
    # the state's tasks by id and its class rules (each a property read costing microseconds)
    tasks: dict[int, Task] = field(default_factory=dict)
    rules: Any = None

    @classmethod
    def of(cls, state: ScheduleState) -> SearchMemo:
        return cls(
            host_blocks(state),
            set(state.guests_by_host()),
            tasks={t.state_id: t for t in state.tasks},
            rules=state.class_rules,
        )


OrderBound = tuple[int, int] | None  # a (day, period) the order rule bounds a place by


def _order_span(day: int, after: OrderBound, before: OrderBound) -> tuple[int, int] | None:
    """The periods of ``day`` a block may cover under the order rule (it starts after
    ``after`` and ends before ``before``), ``None`` when no period of the day may."""
    lo, hi = 1, 10**6
    if after is not None:
        if day < after[0]:
            return None
        if day == after[0]:
            lo = after[1] + 1
    if before is not None:
        if day > before[0]:
            return None
        if day == before[0]:
            hi = before[1] - 1
    return (lo, hi) if lo <= hi else None


def _free_starts(
    days: Sequence[int],
    day_ok: Any,
    banned: set[int],
    need: int,
    taken: set[int],
    runs: Sequence[Sequence[tuple[int, int]]],
    order: tuple[OrderBound, OrderBound] = (None, None),
    cache: dict[tuple[Any, ...], tuple[int, ...]] | None = None,
) -> Iterator[tuple[int, tuple[int, ...]]]:
    """``(day, starts)``: the first and last fitting start of each free run of each day of
    ``days`` (in order) the task's class allows (``day_ok``: its ``(num_days,)`` bool days, or
    ``None``: every day) and not in ``taken``, off the ``banned`` periods, the runs cut to the
    periods the order rule leaves (``order``: the ``(after, before)`` bounds); days without one
    are left out. ``cache``: each day's starts by (day, periods, banned periods, order cut),
    for the rankings of one state."""
    ban = frozenset(banned)
    after, before = order
    for day in days:
        if day in taken or (
            day_ok is not None and not (1 <= day <= len(day_ok) and day_ok[day - 1])
        ):
            continue
        span = _order_span(day, after, before)
        if span is None:
            continue
        key = (day, need, ban, span)
        found = cache.get(key) if cache is not None else None
        if found is None:
            lo, hi = span
            found = tuple(
                start
                for r0, r1 in runs[day - 1]
                for s0, s1 in ((max(r0, lo), min(r1, hi)),)
                if s1 - s0 >= need - 1
                for start in dict.fromkeys((s0, s1 - need + 1))
                if not banned or not banned & set(range(start, start + need))
            )
            if cache is not None:
                cache[key] = found
        if found:
            yield day, found


def _candidate_starts(
    state: ScheduleState,
    task: Task,
    days: Sequence[int],
    runs: Sequence[Sequence[tuple[int, int]]] | None = None,
    memo: SearchMemo | None = None,
    periods: frozenset[int] | None = None,
    guests: Callable[[SlotRange], frozenset[int]] | None = None,
) -> Iterator[tuple[int, tuple[int, ...], int | None, int, SlotRange | None]]:
    """``(day, starts, from_day, periods, into_host)`` to try, one day's free starts at a
    time (its candidates in order: a search may judge them together; ``into_host`` None) or
    one water-course block (``into_host``: the block): per piece, the first and last fitting
    start of each free run and each free water-course block, where the task's class rules
    allow (its days, dates and weekdays, off its banned periods, into a water course only when
    the class permits, and in the order of its items: :attr:`ScheduleState.class_rules`); a
    block of a multi-block task never onto a
    day holding another of its blocks, nor onto its own place.
    ``runs``: each day's free runs (0-based days, as :meth:`HealthEvaluator.free_runs`) when
    the caller knows them for this state's grid; ``memo``: the search's :class:`SearchMemo`;
    ``periods``: only places whose every period is one of these (a caller's section filter:
    the free runs are cut at the other periods, so their ends are tried). Lazy: a ranking that
    runs out of budget reads no further. ``guests``: the guests each host block holds
    (:func:`_block_guests`); given, of consecutive blocks that hold another task's guest (a
    probe of each is refused, and costs no budget) only the first is yielded: a ranking checks
    its budget and the clock at it, as it would at each of the others, and skips it."""
    facts = memo.task_facts.get(task.state_id) if memo is not None else None
    if facts is None:
        facts = _task_facts(state, task, memo)
        if memo is not None:
            memo.task_facts[task.state_id] = facts
    rule, banned, order, blocks = facts
    day_ok = rule.days if rule is not None else None
    own = {(b.day, b.slot_start) for b in task.slots}
    own_days = {day for day, _ in own}
    for from_day, need in _pieces(task):
        taken = {b.day for b in task.slots if b.day != from_day} if from_day is not None else set()
        kept = [b for b in task.slots if b.day != from_day] if from_day is not None else []
        if kept and not _order_keeps(kept, order):
            continue  # the blocks that stay already break the order: no place helps
        free: Iterable[tuple[int, tuple[int, ...]]]
        if periods is not None:
            every = runs if runs is not None else _LazyRuns(state.grid.owner, 1)
            free = _free_starts(
                days, day_ok, banned, need, taken, _WithinRuns(every, periods), order
            )
        elif runs is None:
            free = _free_starts(
                days, day_ok, banned, need, taken, _LazyRuns(state.grid.owner, need), order
            )
        elif memo is None:
            free = _free_starts(days, day_ok, banned, need, taken, runs, order)
        else:
            cid = rule.class_id if rule is not None else None
            key = (id(days), cid, frozenset(banned), need, frozenset(taken), order)
            shared = memo.starts.get(key)
            if shared is None:
                if not any(held is days for held in memo.days_held):
                    memo.days_held.append(days)
                shared = memo.starts[key] = _Replay(
                    _free_starts(days, day_ok, banned, need, taken, runs, order, memo.day_starts)
                )
            free = shared
        for day, starts in free:
            if day in own_days:
                starts = tuple(start for start in starts if (day, start) not in own)
                if not starts:
                    continue
            yield day, starts, from_day, need, None
        if not blocks:
            continue
        day_set = _day_set(days, day_ok, taken, rule.class_id if rule is not None else None, memo)
        entering: Iterable[tuple[int, int, SlotRange]]
        if memo is not None and guests is not None and periods is None and task.embed_host is None:
            # Not a guest: none of its places is a host block's, and no block holds it, so
            # which blocks it may try depends on the piece's facts alone: shared by the tasks
            # alike (``days`` is held by the memo since ``day_set`` was stored).
            bkey = (id(days), day_set, need, frozenset(banned), order)
            found = memo.block_tries.get(bkey)
            if found is None:
                found = memo.block_tries[bkey] = list(
                    _block_tries(blocks, day_set, need, banned, order, None, set(), guests, set())
                )
            entering = found
        else:
            entering = _block_tries(
                blocks, day_set, need, banned, order, periods, own, guests, {task.state_id}
            )
        for b_day, b_start, b in entering:
            yield b_day, (b_start,), from_day, need, b


def _block_tries(
    blocks: Sequence[tuple[SlotRange, int, int, int]],
    day_set: Container[int],
    need: int,
    banned: set[int],
    order: tuple[OrderBound, OrderBound],
    periods: frozenset[int] | None,
    own: Container[tuple[int, int]],
    guests: Callable[[SlotRange], frozenset[int]] | None,
    mine: set[int],
) -> Iterator[tuple[int, int, SlotRange]]:
    """``(day, first period, block)`` of the host ``blocks`` a piece of ``need`` periods may
    try (:func:`_candidate_starts`): on ``day_set``, long enough, off ``banned``, inside the
    ``order`` span and the ``periods``, not its ``own`` place; with ``guests``, of consecutive
    blocks holding a guest other than ``mine`` only the first."""
    taken_before = False  # the last block yielded holds another task's guest
    for b, b_day, b_start, b_length in blocks:
        if (
            b_day not in day_set
            or b_length < need
            or (b_day, b_start) in own  # its own place: move refuses no_change
            or (banned and not banned.isdisjoint(range(b_start, b_start + need)))
        ):
            continue
        if order != (None, None):
            span = _order_span(b_day, *order)
            if span is None or not (span[0] <= b_start and b_start + need - 1 <= span[1]):
                continue
        if periods is not None and not periods.issuperset(range(b_start, b_start + need)):
            continue
        if guests is not None:
            held = guests(b)
            is_taken = bool(held) and held != mine
            if is_taken and taken_before:
                continue  # refused like the one before it: nothing new to check
            taken_before = is_taken
        yield b_day, b_start, b


# (class rule, banned periods, order bounds, host blocks it may go into: each with its day,
# first period and length)
_TaskFacts = tuple[
    Any, set[int], tuple[OrderBound, OrderBound], list[tuple[SlotRange, int, int, int]]
]


def _task_facts(state: ScheduleState, task: Task, memo: SearchMemo | None) -> _TaskFacts:
    """What :func:`_candidate_starts` reads of ``task``'s class rules and the host blocks,
    kept in ``memo`` per task (the state stays as it is)."""
    rules = memo.rules if memo is not None and memo.rules is not None else state.class_rules
    rule = rules.for_task(task)
    banned = set(rule.banned_periods) if rule is not None else set()
    after, before = rules.order_window(task)
    order = (after[0] if after else None, before[0] if before else None)
    blocks = (
        []
        if task.can_embed or not rules.may_embed(task)
        else [
            (b, b.day, b.slot_start, b.slot_end - b.slot_start + 1)
            for host_id, b in (host_blocks(state) if memo is None else memo.hosts)
            if host_id != task.state_id
        ]
    )
    return rule, banned, order, blocks


def _day_set(
    days: Sequence[int],
    day_ok: Any,
    taken: set[int],
    class_id: int | None,
    memo: SearchMemo | None,
) -> set[int] | frozenset[int]:
    """The days of ``days`` a piece may go to (its class's, not ``taken`` by the task's other
    blocks); kept in ``memo`` by (days, class, days taken)."""
    key = (id(days), class_id, frozenset(taken))
    if memo is not None:
        found = memo.day_sets.get(key)  # ``days`` held since stored: its id is its own
        if found is not None:
            return found
    out = frozenset(
        d
        for d in days
        if d not in taken and (day_ok is None or (1 <= d <= len(day_ok) and day_ok[d - 1]))
    )
    if memo is not None:
        if not any(held is days for held in memo.days_held):
            memo.days_held.append(days)
        memo.day_sets[key] = out
    return out


def _order_keeps(kept: Sequence[SlotRange], order: tuple[OrderBound, OrderBound]) -> bool:
    """Whether the blocks a move leaves in place keep the order rule by themselves."""
    after, before = order
    first = min((b.day, b.slot_start) for b in kept)
    last = max((b.day, b.slot_end) for b in kept)
    return (after is None or first > after) and (before is None or last < before)


class _LazyRuns(Sequence[list[tuple[int, int]]]):
    """Each day's free runs of at least ``need`` periods, read from the grid's owner layer
    when asked (a ranking without the evaluator's runs)."""

    def __init__(self, owner: Any, need: int) -> None:
        self._owner = owner
        self._need = need

    def __len__(self) -> int:
        return int(self._owner.shape[0])

    @overload
    def __getitem__(self, index: int) -> list[tuple[int, int]]: ...

    @overload
    def __getitem__(self, index: slice) -> list[list[tuple[int, int]]]: ...

    def __getitem__(
        self, index: int | slice
    ) -> list[tuple[int, int]] | list[list[tuple[int, int]]]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        return self._row(index)

    def _row(self, index: int) -> list[tuple[int, int]]:
        return row_free_runs(self._owner[index].tolist(), self._need)


class _WithinRuns(_LazyRuns):
    """Each day's free runs of ``runs`` cut at the periods not in ``periods`` (a caller's
    section filter), so a candidate start is an end of a run of allowed free periods."""

    def __init__(self, runs: Sequence[Sequence[tuple[int, int]]], periods: frozenset[int]) -> None:
        self._runs = runs
        self._periods = periods

    def __len__(self) -> int:
        return len(self._runs)

    def _row(self, index: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for s0, s1 in self._runs[index]:
            start = None
            for p in range(s0, s1 + 2):
                if p <= s1 and p in self._periods:
                    start = p if start is None else start
                elif start is not None:
                    out.append((start, p - 1))
                    start = None
        return out


def _judge(
    ev: HealthEvaluator,
    base: dict[str, Issue],
    base_impact: float,
    delta: Delta,
    focus: set[str],
    day: int,
    start: int,
    need: int,
    host: int | None,
    from_day: int | None,
) -> Destination:
    """The destination of a probed move from the evaluator's delta."""
    resolves = delta.resolves
    impact_after = round(base_impact + delta.impact, 4)

    def after(i: str) -> Issue | None:
        return delta.after.get(i) if i in delta.before else base[i]

    return Destination(
        day,
        start,
        start + need - 1,
        host,
        resolves,
        delta.creates,
        delta.critical,
        delta.warning,
        impact_after,
        sum(1 for i in resolves if i in focus),
        round(impact_after - base_impact, 4),
        sum(1 for i in focus if i in base and _eased(base[i], after(i))),
        from_day,
    )


def _evaluator(
    state: ScheduleState, level: Level, work: ScheduleState | None, ev: HealthEvaluator | None
) -> tuple[ScheduleState, HealthEvaluator]:
    """The state probes run on and its evaluator: the caller's, else the state itself with its
    cached evaluator (every probe is undone before anything else reads the state)."""
    if ev is not None:
        return ev.state, ev
    if work is not None and work is not state:
        return work, HealthEvaluator(work, level)
    return state, evaluator_for(state, level)


def rank_destinations(
    state: ScheduleState,
    task_id: int,
    *,
    days: Sequence[int] | None = None,
    level: Level = "normal",
    focus: Iterable[str] = (),
    budget: int = EVAL_BUDGET,
    stop: Callable[[Destination], bool] | None = None,
    work: ScheduleState | None = None,
    ev: HealthEvaluator | None = None,
    deadline: float | None = None,
    prune: bool = False,
    memo: SearchMemo | None = None,
    periods: frozenset[int] | None = None,
) -> Ranking:
    """Legal destinations of ``task_id`` with their measured effect, best first.

    Parameters
    ----------
    days
        Days to try (default: every day of the window), in order of preference.
    focus
        Issue ids the caller wants resolved (counted in ``resolves_focus``, ranked higher).
    budget
        At most this many candidates judged; ``complete`` is ``False`` when it ran out.
    stop
        Stop at the first destination for which this returns True (a fixable test).
    work, ev
        The state the probes run on and its evaluator (default: ``state`` itself and its cached
        evaluator; each probe is undone); the evaluator holds the issues before.
    deadline
        A ``time.perf_counter()`` value: past it the ranking stops (``cut``, not ``complete``).
    prune
        Count a free-period candidate that provably eases none of the ``focus`` issues
        (:func:`_easing_days`), or that gives a day it touches a critical/warning issue that day
        does not have (one it ``creates``), as judged (``skipped``, one of the ``budget``)
        without probing the rest: it could not be :attr:`Destination.helps`, so a search for
        the first helpful one (the fixable check) walks the same candidates with the same
        budget and finds the same one.
    memo
        The :class:`SearchMemo` of a search over many tasks of ``state`` (its ``days`` the same
        sequence object for every ranking).
    periods
        Only destinations whose every period is one of these (``query_available_slots``'
        section filter); ``None``: any.
    """
    task = (memo.tasks.get(task_id) if memo is not None else None) or state.task(task_id)
    ranking = Ranking(task_id)
    if task is None or not movable(state, task, memo.guest_hosts if memo is not None else None):
        return ranking
    work, ev = _evaluator(state, level, work, ev)
    base = ev.severe()
    if memo is not None and memo.judged is not None and memo.judged[0] is ev:
        _, base_impact, runs = memo.judged
    else:
        base_impact = round(sum(i.impact_score for i in base.values()), 4)
        runs = ev.free_runs(state.grid.owner)
        if memo is not None:
            memo.judged = (ev, base_impact, runs)
    focus_set = set(focus)
    wt = task if work is state else work.task(task_id)
    assert wt is not None
    saved = (list(wt.slots), wt.status, wt.duration, wt.embed_host)
    day_list = (
        days
        if memo is not None and days is not None
        else list(days)
        if days is not None
        else list(range(1, state.num_days + 1))
    )
    clock = time.perf_counter
    homes: dict[int | None, tuple[int, list[int], list[int], DayFacts]] = {}
    landed: dict[tuple[int, int, int, int], DayFacts] | None = None
    if memo is not None:
        if memo.landed is None or memo.landed[0] is not ev:
            memo.landed = (ev, {})
        landed = memo.landed[1]
    easing: dict[int | None, set[int] | None] = {}
    stopped = False
    shared = memo if periods is None else None
    for day, starts, from_day, need, into_host in _candidate_starts(
        state,
        task,
        day_list,
        runs,
        shared,
        periods,
        lambda block: _block_guests(work, block, memo),
    ):
        if prune and into_host is None:
            if from_day not in easing:
                easing[from_day] = _easing_days(ev, wt, from_day, focus_set, base, level)
            days_ok = easing[from_day]
            if days_ok is not None and day not in days_ok:
                # none of the day's free starts can ease a focus issue: each is judged
                # without a probe, as one at a time would be (the same budget and counts; the
                # clock is read once for the day)
                if budget <= 0:
                    ranking.complete = False
                    break
                if deadline is not None and clock() > deadline:
                    ranking.complete = False
                    ranking.cut = True
                    break
                if len(starts) > budget:
                    ranking.skipped += budget
                    budget = 0
                    ranking.complete = False
                    break
                ranking.skipped += len(starts)
                budget -= len(starts)
                continue
        for start in starts:
            if budget <= 0:
                ranking.complete = False
                stopped = True
                break
            if deadline is not None and clock() > deadline:
                ranking.complete = False
                ranking.cut = True
                stopped = True
                break
            if into_host is not None:
                # an embedding: the write tools' own rules decide it (relocate on the state,
                # undone). A host block holding another task's guest refuses it
                # (``embed_taken``, or an earlier refusal): known without the call, which is
                # the cost of a ranking on a window whose water courses are mostly taken.
                held = _block_guests(work, into_host, memo)
                if held and held != {task_id}:
                    continue
                result = relocate(work, [Request(task_id, day, start, from_day)], op="probe")
                if not result.ok:
                    continue
                moved = work.task(task_id)
                assert moved is not None
                host = moved.embed_host
                try:
                    days_hit, tasks_hit = touched(result.changes)
                    delta = ev.probe(days_hit, tasks_hit)
                finally:
                    _undo(work, moved, saved)
            else:
                # free periods the class rules allow (days, weekdays, banned periods, the
                # order of its items), on a day without another of its blocks: legal by
                # construction; judged on the rows, never applied
                host = None
                new_days, sigs = _free_move_facts(ev, wt, from_day, day, start, need, homes, landed)
                if prune and any(ev.creates_on_day(d, f) for d, f in new_days.items()):
                    budget -= 1  # a new critical/warning issue on a day it touches: never helps
                    ranking.skipped += 1
                    continue
                delta = ev.probe_facts(new_days, sigs)
            budget -= 1
            dest = _judge(ev, base, base_impact, delta, focus_set, day, start, need, host, from_day)
            ranking.destinations.append(dest)
            if stop is not None and stop(dest):
                ranking.complete = False
                stopped = True
                break
        if stopped:
            break
    ranking.destinations.sort(key=Destination.score)
    return ranking


def _block_guests(work: ScheduleState, block: SlotRange, memo: SearchMemo | None) -> frozenset[int]:
    """The ids the guest layer of ``work`` holds in the host ``block`` (``memo``: kept for
    the searches of a state that stays as it is)."""
    key = (block.day, block.slot_start, block.slot_end)
    found = memo.block_guests.get(key) if memo is not None else None
    if found is None:
        cells = work.grid.guest[block.day - 1, block.slot_start - 1 : block.slot_end]
        found = frozenset(int(g) for g in cells.tolist() if g)
        if memo is not None:
            memo.block_guests[key] = found
    return found


def _free_move_facts(
    ev: HealthEvaluator,
    task: Task,
    from_day: int | None,
    day: int,
    start: int,
    need: int,
    homes: dict[int | None, tuple[int, list[int], list[int], DayFacts]],
    landed: dict[tuple[int, int, int, int], DayFacts] | None = None,
) -> tuple[dict[int, DayFacts], dict[int, tuple[Any, ...]]]:
    """What moving ``task`` (or its block on ``from_day``) onto the free periods
    ``day``/``start``..``start + need - 1`` changes: the new facts of the days it touches
    (0-based) and of the task, computed on copies of the days' rows (:meth:`HealthEvaluator.probe_facts`
    judges them). ``homes`` caches, per piece, its day's rows with the piece taken out and
    their facts; ``landed``: the new day's facts when the piece lands on a day it does not
    leave (the day's rows as the evaluator holds them, the piece's periods its subject's: the
    same for every task of that subject), by (day, first period, periods, subject code)."""
    tid = task.state_id
    sigs = {}
    new_days: dict[int, DayFacts] = {}
    if task.status == "pending":
        sig = task_sig(task)
        sigs[tid] = (*sig[:3], "suggested", len(task.slots) + 1, 0)
        new_days[day - 1] = _landed(ev, tid, day, start, need, landed)
        return new_days, sigs
    home = homes.get(from_day)
    if home is None:
        block = next((b for b in task.slots if b.day == from_day), task.slots[0])
        h_own, h_gst = ev.rows(block.day - 1)
        layer = h_gst if task.embed_host is not None else h_own
        for q in range(block.slot_start - 1, block.slot_end):
            layer[q] = 0
        home = homes[from_day] = (block.day, h_own, h_gst, ev.facts_of_rows(h_own, h_gst))
    home_day, h_own, h_gst, h_facts = home
    if task.embed_host is not None:  # a guest leaving its host: a task of its own now
        sigs[tid] = task_sig(task)
    if home_day != day:
        new_days[home_day - 1] = h_facts
        new_days[day - 1] = _landed(ev, tid, day, start, need, landed)
        return new_days, sigs
    own, gst = list(h_own), h_gst
    for q in range(start - 1, start - 1 + need):
        own[q] = tid
    new_days[day - 1] = ev.facts_of_rows(own, gst)
    return new_days, sigs


def _landed(
    ev: HealthEvaluator,
    tid: int,
    day: int,
    start: int,
    need: int,
    landed: dict[tuple[int, int, int, int], DayFacts] | None,
) -> DayFacts:
    """The facts of ``day`` as the evaluator holds it with task ``tid`` on its free periods
    ``start``..``start + need - 1`` (:func:`_free_move_facts`); kept in ``landed`` by the
    task's subject code (a study task's, never 0: an id the evaluator does not know is
    computed, and refused, as before)."""
    code = ev.subject_code(tid)
    key = (day, start, need, code)
    found = landed.get(key) if landed is not None and code else None
    if found is None:
        own, gst = ev.rows(day - 1)
        for q in range(start - 1, start - 1 + need):
            own[q] = tid
        found = ev.facts_of_rows(own, gst)
        if landed is not None and code:
            landed[key] = found
    return found


def _monotone_gap_rule(level: Level) -> bool:
    """The subject-gap rule at ``level`` reads only ``max_gap``, every condition an upward one
    (``>=`` / ``>``), its bands in strictly decreasing severity: its issue for a larger (or equal)
    largest gap is never lower in severity nor, in the same band, smaller in impact."""
    found = [r for r in rules_for("subjects", level) if r.rule == "subject_gap"]
    if len(found) != 1:
        return False
    ranks = [SEVERITY_RANK[b.severity] for b in found[0].bands]
    return all(a < b for a, b in itertools.pairwise(ranks)) and all(
        c.metric == "max_gap" and c.op in (">=", ">") for b in found[0].bands for c in b.conds
    )


def _easing_days(
    ev: HealthEvaluator,
    task: Task,
    from_day: int | None,
    focus: set[str],
    base: dict[str, Issue],
    level: Level,
) -> set[int] | None:
    """The days a free-period move of ``task`` (its block on ``from_day``) may land on and ease
    one of the ``focus`` issues (:func:`_eased`); ``None``: any day may. A superset, from what a
    free move changes: the rows of its home day and its new day, the subject of the task itself
    (its periods and task facts; the host's subject under a guest reappears: a guest is never
    pruned), and the window-wide sums.

    - an issue of a day other than the two: unchanged, never eased;
    - a subject's issue, the task of another subject: unchanged, never eased;
    - the task's own subject's gap (:func:`_monotone_gap_rule`): with its home day still
      present or emptied (both cases: a superset), every gap at least as long as today's
      largest stays unless the new day lands strictly inside it, and it can split only one, so
      the largest gap shrinks only when there is one such gap and the new day lies inside it
      (any day when a case has none, :meth:`HealthEvaluator.inside_gaps_without`);
    - anything else (window-wide issues, the feasibility issue): any day."""
    if task.embed_host is not None:
        return None
    if task.status == "pending":
        home = None
    else:
        home = from_day if from_day is not None else task.slots[0].day
    code = ev.subject_code(task.state_id)
    days: set[int] = set()
    for iid in focus:
        issue = base.get(iid)
        if issue is None:  # not critical/warning now: ``eases_focus`` does not count it
            continue
        if issue.day is not None and issue.category is None:
            if issue.day == home:
                return None
            days.add(issue.day)
        elif issue.category is not None and issue.day is None:
            if ev.code_of.get(issue.category) != code:
                continue
            if issue.rule != "subject_gap" or not _monotone_gap_rule(level):
                return None
            inside = ev.inside_gaps_without(code, home)
            if inside is None:
                return None
            days |= inside
        else:
            return None
    return days


def _eased(before: Issue, after: Issue | None) -> bool:
    """The issue is gone, or lower in severity, or of the same severity with a smaller impact."""
    if after is None:
        return True
    if after.severity != before.severity:
        return after.severity == "warning"  # critical → warning (both are in ``severe``)
    return after.impact_score < before.impact_score


def _undo(
    work: ScheduleState, task: Task, saved: tuple[list[SlotRange], Any, int | None, int | None]
) -> None:
    """Put a probed task back exactly as it was (even where today's rules would refuse it)."""
    for block in task.slots:
        work.grid.clear(block, as_guest=task.embed_host is not None)
    task.slots, task.status, task.duration, task.embed_host = list(saved[0]), *saved[1:]
    for block in task.slots:
        work.grid.put(task.state_id, block, as_guest=task.embed_host is not None)


def preferred_days(state: ScheduleState, action: NextAction | None) -> list[int]:
    """Days to try for an action: its ``prefer_days`` first, then the rest, never ``avoid_days``."""
    every = list(range(1, state.num_days + 1))
    if action is None:
        return every
    sf = action.slot_filter
    avoid = set(_as_list(sf.get("avoid_days")) or ())
    prefer = [d for d in _as_list(sf.get("prefer_days")) or () if d not in avoid]
    rng = _as_list(sf.get("day_range")) or _as_list(action.candidate_scope.get("day_range"))
    lo, hi = (int(rng[0]), int(rng[1])) if rng and len(rng) == 2 else (1, state.num_days)
    rest = [d for d in every if lo <= d <= hi and d not in avoid and d not in prefer]
    return [d for d in prefer if 1 <= d <= state.num_days] + rest


def _helps(dest: Destination) -> bool:
    """A destination an action can use (:attr:`Destination.helps`)."""
    return dest.helps


def _removed_issues(ev: HealthEvaluator, task: Task) -> dict[str, Issue]:
    """The critical/warning issues of the evaluator's state with ``task`` taken out (made
    pending), judged on copies of its days' rows (the state is never changed;
    :meth:`HealthEvaluator.removal`)."""
    before, after = ev.removal(task)
    out = {i: issue for i, issue in ev.severe().items() if i not in before}
    out.update(after)
    return out


Removal = tuple[dict[str, Issue], dict[str, Issue]]  # HealthEvaluator.removal's (before, after)


def _screen_key(
    removal: Removal, focus: set[str], base: dict[str, Issue], index: int
) -> tuple[int, int, int]:
    """A screened task's key in :func:`ordered_targets` from its removal's changed issues
    (``base`` with ``before`` taken out and ``after`` put in is the state without it): its
    removal resolves how many of the ``focus`` issues; whether it creates an issue or makes one
    of the focus issues worse (only a changed issue can be either)."""
    before, after = removal
    resolves = sum(1 for i in focus if i in base and i in before and i not in after)
    creates = any(i not in base for i in after)
    # leaving makes one of the action's own issues worse (e.g. the gap reopens elsewhere)
    worsens = any(i in base and i in after and _eased(after[i], base[i]) for i in focus)
    return (-resolves, int(creates or worsens), index)


def _removal_bound(ev: HealthEvaluator, task: Task, focus: set[str], base: dict[str, Issue]) -> int:
    """At most how many of the ``focus`` issues taking ``task`` out resolves: a removal changes
    the issues of the task's days, of its subject and the window-wide ones only (a guest's
    removal also its host's subject: then any), so a focus issue of another day or subject
    stays."""
    if task.embed_host is not None:
        return sum(1 for i in focus if i in base)
    days = {b.day for b in task.slots}
    code = ev.subject_code(task.state_id)
    bound = 0
    for iid in focus:
        issue = base.get(iid)
        if issue is None:
            continue
        if issue.day is not None and issue.category is None:
            bound += issue.day in days
        elif issue.category is not None and issue.day is None:
            bound += ev.code_of.get(issue.category) == code
        else:
            bound += 1
    return bound


class OrderedTargets(Sequence[Task]):
    """:func:`ordered_targets`' order, worked out only as far as it is read: a screened
    task's removal is judged when a task placed before it in the order is asked for and its
    bound (:func:`_removal_bound`, taken as "resolves that many, creates nothing") could still
    place it earlier, so a fixable check that stops at its first targets judges a few
    removals, not all ``SCREEN``. The order is the same as sorting every key."""

    def __init__(
        self,
        tasks: list[Task],
        screen: int,
        exact: Callable[[int], tuple[int, int, int]],
        bounds: list[tuple[int, int, int] | None],
    ) -> None:
        self._tasks = tasks
        self._screen = screen
        self._exact = exact
        # (key, exact?, index): a bound is never above the key it stands for, keys are unique
        self._heap: list[tuple[tuple[int, int, int], bool, int]] = [
            (bound, False, i) if bound is not None else ((0, 0, i), True, i)
            for i, bound in enumerate(bounds)
        ]
        heapq.heapify(self._heap)
        self._order: list[Task] = []

    def _grow(self, n: int) -> None:
        """Work the order out to its first ``n`` tasks."""
        while len(self._order) < min(n, self._screen) and self._heap:
            _, exact, i = heapq.heappop(self._heap)
            if exact:
                self._order.append(self._tasks[i])
            else:
                heapq.heappush(self._heap, (self._exact(i), True, i))
        if n > self._screen and len(self._order) < len(self._tasks):
            self._order.extend(self._tasks[len(self._order) :])

    def __len__(self) -> int:
        return len(self._tasks)

    def __bool__(self) -> bool:
        return bool(self._tasks)

    @overload
    def __getitem__(self, index: int) -> Task: ...

    @overload
    def __getitem__(self, index: slice) -> list[Task]: ...

    def __getitem__(self, index: int | slice) -> Task | list[Task]:
        if isinstance(index, slice):
            self._grow(len(self._tasks))
            return self._order[index]
        if index < 0:
            index += len(self._tasks)
        if not 0 <= index < len(self._tasks):
            raise IndexError(index)
        self._grow(index + 1)
        return self._order[index]

    def __iter__(self) -> Iterator[Task]:
        for i in range(len(self._tasks)):
            yield self[i]


def _ordered(
    state: ScheduleState,
    action: NextAction | None,
    level: Level,
    work: ScheduleState | None,
    target_filter: dict[str, Any] | None,
    scope: dict[str, Any] | None,
    removed: dict[int, Removal] | None,
    ev: HealthEvaluator | None,
    pool: TaskPool | None,
) -> OrderedTargets:
    """:func:`ordered_targets` as an :class:`OrderedTargets` (judged as far as it is read)."""
    work, ev = _evaluator(state, level, work, ev)
    tasks = target_tasks(state, action, target_filter, scope, pool)
    removed = {} if removed is None else removed
    focus = set(action.issue_ids) if action is not None else set()
    base = ev.severe()
    head = tasks[:SCREEN]
    shared = ev  # bound once for the closure (mypy: ev is narrowed here)

    def exact(index: int) -> tuple[int, int, int]:
        task = head[index]
        removal = removed.get(task.state_id)
        if removal is None:
            wt = task if work is state else work.task(task.state_id)
            assert wt is not None
            removal = removed[task.state_id] = shared.removal(wt)
        return _screen_key(removal, focus, base, index)

    bounds: list[tuple[int, int, int] | None] = []
    for index, task in enumerate(head):
        wt = task if work is state else work.task(task.state_id)
        if task.status == "pending" or wt is None:
            bounds.append(None)  # not screened: key (0, 0, index)
        else:
            bounds.append((-_removal_bound(ev, wt, focus, base), 0, index))
    return OrderedTargets(tasks, len(head), exact, bounds)


def ordered_targets(
    state: ScheduleState,
    action: NextAction | None,
    level: Level,
    work: ScheduleState | None = None,
    target_filter: dict[str, Any] | None = None,
    scope: dict[str, Any] | None = None,
    removed: dict[int, Removal] | None = None,
    ev: HealthEvaluator | None = None,
    pool: TaskPool | None = None,
) -> list[Task]:
    """:func:`target_tasks`, the first ``SCREEN`` reordered by what taking each out does: those
    whose removal resolves one of the action's issues first, then those whose removal creates no
    new critical/warning issue and makes none of the action's own worse (moving them cannot open
    a new problem where they stood, e.g. a subject gap), then the rest; ties keep
    :func:`target_tasks`' order. ``removed`` caches each task's removal issues across the
    actions of one health call (they do not depend on the action). ``work`` / ``ev``: as in
    :func:`rank_destinations`."""
    return list(_ordered(state, action, level, work, target_filter, scope, removed, ev, pool))


@dataclass
class TargetSearch:
    """The destination search of one action over its ordered targets (see :func:`search_targets`).

    ``measured``: each searched task with its ranking (at most ``PER_TASK`` destinations each,
    stopping at the first helpful one); ``helpful``: the first task and destination that
    :attr:`Destination.helps`; ``partial``: a task's or the whole search's budget ran out before
    every candidate was tried; ``cut``: the time limit stopped it."""

    targets: Sequence[Task]
    measured: list[tuple[Task, Ranking]] = field(default_factory=list)
    helpful: tuple[Task, Destination] | None = None
    partial: bool = False
    cut: bool = False

    @property
    def legal(self) -> int:
        return sum(r.judged for _, r in self.measured)


def search_targets(
    state: ScheduleState,
    action: NextAction | None,
    level: Level,
    work: ScheduleState | None = None,
    before: list[Issue] | None = None,
    *,
    first_only: bool,
    target_filter: dict[str, Any] | None = None,
    scope: dict[str, Any] | None = None,
    removed: dict[int, Removal] | None = None,
    ev: HealthEvaluator | None = None,
    deadline: float | None = None,
    pool: TaskPool | None = None,
    memo: SearchMemo | None = None,
) -> TargetSearch:
    """Search the action's targets in :func:`ordered_targets` order, each on the action's
    preferred days with at most ``PER_TASK`` candidates judged (``EVAL_BUDGET`` in all, at
    most ``MAX_TARGETS`` tasks). ``first_only`` stops at the first helpful task (the fixable
    check); otherwise every task within the budget is measured (``query_target_tasks``). Both
    walk the same tasks and candidates in the same order, so the task the fixable check found
    is the one the query tool shows. ``deadline`` (``time.perf_counter()``): past it the
    search stops and says so (``cut``). ``pool`` / ``memo``: the :class:`TaskPool` and
    :class:`SearchMemo` of the state, shared by the searches of one health call."""
    work, ev = _evaluator(state, level, work, ev)
    lazy = _ordered(state, action, level, work, target_filter, scope, removed, ev, pool)
    # the fixable check reads the order only as far as it searches; the query tool shows it all
    targets: Sequence[Task] = lazy if first_only else list(lazy)
    out = TargetSearch(targets)
    focus = action.issue_ids if action is not None else ()
    days = preferred_days(state, action)
    budget, searched = EVAL_BUDGET, 0
    memo = SearchMemo.of(state) if memo is None else memo
    for task in targets:
        if deadline is not None and time.perf_counter() > deadline:
            out.partial = out.cut = True
            break
        if budget <= 0 or searched >= MAX_TARGETS:
            out.partial = True
            break
        ranking = rank_destinations(
            state,
            task.state_id,
            days=days,
            level=level,
            focus=focus,
            budget=min(PER_TASK, budget),
            stop=_helps,
            work=work,
            ev=ev,
            deadline=deadline,
            prune=first_only,
            memo=memo,
        )
        budget -= ranking.judged
        searched += bool(ranking.judged)  # a task without a legal candidate costs nothing
        out.measured.append((task, ranking))
        found = next((d for d in ranking.destinations if _helps(d)), None)
        if found is not None and out.helpful is None:
            out.helpful = (task, found)
            if first_only:
                return out
        elif found is None and not ranking.complete:
            out.partial = True
            out.cut |= ranking.cut
    return out


CUT_REASON = (
    "体检的时间限制（time_limit_s）用完，本动作的落点查找未完成"
    "（已查{measured}/{targets}个可移动任务、共{legal}个候选落点，未找到合适落点）；"
    "可用 query_target_tasks/query_available_slots 继续查找，或处理下一个动作。"
)


def _check(
    state: ScheduleState,
    act: NextAction,
    level: Level,
    removed: dict[int, Removal],
    ev: HealthEvaluator,
    deadline: float | None,
    pool: TaskPool | None = None,
    memo: SearchMemo | None = None,
) -> None:
    """Set ``act.fixable`` (always a bool) and, when False, ``fixable_reason`` (and
    ``fixable_cut`` when the time limit stopped the search)."""
    act.fixable_checked = True
    if deadline is not None and time.perf_counter() > deadline:
        search = TargetSearch([], cut=True, partial=True)
    else:
        search = search_targets(
            state,
            act,
            level,
            first_only=True,
            removed=removed,
            ev=ev,
            deadline=deadline,
            pool=pool,
            memo=memo,
        )
    if search.helpful is not None:
        act.fixable, act.fixable_reason = True, ""
        return
    act.fixable = False
    if search.cut:
        act.fixable_cut = True
        act.fixable_reason = CUT_REASON.format(
            measured=len(search.measured), targets=len(search.targets), legal=search.legal
        )
    elif not search.targets:
        act.fixable_reason = (
            "范围内没有可移动的任务（固定任务、课程、嵌有任务或同一天有多个时段块的任务不可移动）。"
        )
    elif search.partial:
        act.fixable_reason = (
            f"在检查预算内（{len(search.measured)}/{len(search.targets)}个可移动任务、共"
            f"{search.legal}个候选落点）未找到解决或缓解本动作问题、不新增严重/警告问题且使体检结果变好的落点；"
            "其余候选未检查，可用 query_target_tasks/query_available_slots 换筛选条件继续查找，"
            "或处理下一个动作。"
        )
    elif search.legal == 0:
        act.fixable_reason = (
            "范围内的可移动任务在允许的天里没有合法落点（空闲时段不够长、"
            "超出任务类时间窗或落在禁排时段）。"
        )
    else:
        act.fixable_reason = (
            "范围内每个可移动任务的每个候选落点（每段空闲的首尾起点、可嵌入的水课块）"
            "都解决不了也缓解不了本动作的问题，或会新增严重/警告问题（单次移动"
            "无法改善；可考虑先处理下一个动作）。"
        )


def make_actionable(
    state: ScheduleState,
    actions: list[NextAction],
    issues: list[Issue],
    level: Level,
    keep: int,
    *,
    dimensions: Sequence[str] = DIMENSIONS,
    deadline: float | None = None,
) -> list[NextAction]:
    """The ``keep`` actions health offers, each made actionable.

    Each action's ``required_reads`` point to the two query tools and its ``success_criteria``
    name fields ``analyze_health`` returns (its issues gone, critical not above today's). Actions
    are checked in rank order (at most ``2 * keep``): ``fixable`` is True when one of its target
    tasks has a legal destination resolving or easing one of its issues, creating no new
    critical or warning issue and making the health key strictly better
    (:attr:`Destination.helps`), else False with the reason (naming a search the budget cut
    short, or the time limit ``deadline`` cut it: ``fixable_cut``). Fixable actions are offered
    first, each group in rank order. Candidates are judged by the state's cached evaluator over
    ``dimensions`` (probes on the state itself, each undone).
    """
    if not actions:
        return []
    ev = evaluator_for(state, level, dimensions)
    critical = sum(1 for i in issues if i.severity == "critical")
    checked = actions[: 2 * keep]
    removed: dict[int, Removal] = {}
    pool = TaskPool.of(state)
    memo = SearchMemo.of(state)  # the state stays as it is: every probe is undone
    for act in checked:
        act.required_reads = [
            {"tool": "query_target_tasks", "args": {"action_id": act.action_id}},
            {
                "tool": "query_available_slots",
                "args": {"action_id": act.action_id},
                "needs": ["task_id"],
            },
        ]
        act.success_criteria = {
            "recheck_tool": "analyze_health",
            "conditions": [
                *(
                    {
                        "metric": "issues[].issue_id",
                        "where": {"severity": list(SEVERE)},
                        "operator": "not_contains",
                        "value": iid,
                    }
                    for iid in act.issue_ids
                ),
                {"metric": "metrics.close_signal.critical", "operator": "<=", "value": critical},
            ],
        }
        with ev.lock:
            _check(state, act, level, removed, ev, deadline, pool, memo)
        if sum(1 for a in checked if a.fixable is True) >= keep:
            checked = checked[: checked.index(act) + 1]
            break
    rank = {id(a): i for i, a in enumerate(checked)}
    return sorted(checked, key=lambda a: (a.fixable is not True, rank[id(a)]))[:keep]


__all__ = [
    "SEVERE",
    "Destination",
    "Ranking",
    "TargetSearch",
    "health_issues",
    "health_result",
    "make_actionable",
    "matches",
    "movable",
    "ordered_targets",
    "preferred_days",
    "rank_destinations",
    "search_targets",
    "target_tasks",
]
