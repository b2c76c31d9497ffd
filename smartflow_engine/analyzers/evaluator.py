"""The one incremental model of health (issue 25): the issues ``analyze_health`` reports, kept
per entity so that a change is judged by what it touches.

A :class:`HealthEvaluator` is built once for a state and a level. It holds, per day, the facts
the day rules read (load, the study layer's switches, free runs) and the issues of the day; per
subject the periods it has on each day and its task facts, and its issues; and the window-wide
sums the overall rules read (the load's sum, sum of squares and histogram, free and usable
periods, days without a buffer). The facts, their metric rows and the rules that fire on them
are the shared model's (:mod:`..health_facts`, which the solver's close-stage counts read too);
this module keeps them per entity and turns each judgement into issues
(:func:`.common.issue_of`), so an issue here is the very issue ``analyze_health`` reports (the
property test of ``tests/analyzers/test_evaluator.py`` checks it against a full recomputation
on random states and changes).

:meth:`HealthEvaluator.probe` judges a change already applied to the state (a move, a swap, a
batch, a task taken out) given the days and the tasks it touched, in time proportional to those
days and the subjects present on them: it returns a :class:`Delta` (the issues of each touched
entity before and after, the key's change) without keeping it; :meth:`HealthEvaluator.commit`
keeps it. :meth:`HealthEvaluator.sync` brings the evaluator up to date with any change of its
state (it finds the changed days by comparing the grid with its copy, and the changed tasks by
their facts), so a cached evaluator (:func:`evaluator_for`) serves the session's writes.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..health_facts import (
    MEMO_SIZE,
    SEVERE,
    DayFacts,
    Judged,
    SubjectDays,
    Sums,
    day_facts,
    free_run_spans,
    grid_day_facts,
    judge,
    level_rules,
    load_range,
    moved_sums,
    overall_metrics,
    subject_changes,
    subject_codes,
    subject_days,
    subject_metrics,
    window_sums,
)
from ..health_facts import MIN_BUFFER as MIN_BUFFER  # re-exported: analyze_health's defaults
from ..health_facts import MIN_USABLE as MIN_USABLE
from ..rules import Level, is_hard_class
from ..state import ScheduleState, Task
from ..state.ops import Change
from .common import issue_of, sort_issues
from .result import DIMENSIONS, Issue
from .subjects import SubjectTasks


def task_sig(task: Task) -> tuple[Any, ...]:
    """The facts of a task the subject rules read (a change of them touches its subject)."""
    return (
        task.source,
        task.category,
        task.category_id,
        task.status,
        len(task.slots),
        task.need() if task.status == "pending" else 0,
    )


def _add_sig(info: SubjectTasks, sig: tuple[Any, ...], sign: int) -> None:
    _, _, _, status, blocks, need = sig
    info.task_count += sign
    if status == "pending":
        info.pending += sign
        info.pending_slots += sign * need
    else:
        info.placed += sign
        info.blocks += sign * blocks


Entity = tuple[str, int]  # ("day", index0) | ("subject", code) | ("overall", 0)


@dataclass
class Delta:
    """The effect of one change: the issues of every touched entity before and after.

    ``critical`` / ``warning``: the change of the counts; ``before`` / ``after``: the severe
    (critical and warning) issues of the touched entities, by id, in the issues' order."""

    changed: dict[Entity, tuple[tuple[Issue, ...], tuple[Issue, ...]]]
    critical: int
    warning: int
    before: dict[str, Issue]
    after: dict[str, Issue]
    # what commit keeps
    days: dict[int, DayFacts]
    daily: dict[int, SubjectDays]
    infos: dict[int, SubjectTasks]
    sigs: dict[int, tuple[Any, ...]]
    sums: Sums
    hist: list[int]

    @property
    def resolves(self) -> tuple[str, ...]:
        return tuple(i for i in self.before if i not in self.after)

    @property
    def creates(self) -> tuple[str, ...]:
        return tuple(i for i in self.after if i not in self.before)

    @property
    def impact(self) -> float:
        """The change of the total critical/warning impact."""
        return sum(i.impact_score for i in self.after.values()) - sum(
            i.impact_score for i in self.before.values()
        )


@dataclass
class _Local:
    """A change's effect on the days and subjects it touches (:meth:`HealthEvaluator._local`):
    the touched days (0-based, sorted) and their new facts, the touched subjects, their new
    facts and task facts, the touched tasks' new facts, and the new issues of those days and
    subjects (days first, in order)."""

    touched: list[int]
    new_days: dict[int, DayFacts]
    subjects: set[int]
    daily: dict[int, SubjectDays]
    infos: dict[int, SubjectTasks]
    sigs: dict[int, tuple[Any, ...]]
    issues: dict[Entity, tuple[Issue, ...]]


def _severe(issues: Iterable[Issue]) -> dict[str, Issue]:
    return {i.issue_id: i for i in sort_issues(issues) if i.severity in SEVERE}


class HealthEvaluator:
    """The health issues of one state at one level, kept up to date incrementally."""

    def __init__(
        self, state: ScheduleState, level: Level = "normal", dimensions: Sequence[str] = DIMENSIONS
    ) -> None:
        self.state = state
        self.level = level
        self.dimensions = tuple(d for d in DIMENSIONS if d in dimensions)
        self.lock = threading.RLock()
        self.rules = level_rules(level)
        self._build()

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        self._issue_memo: dict[tuple[Any, ...], tuple[Issue, ...]] = {}
        state = self.state
        grid = state.grid
        self.num_days, self.spd = state.num_days, state.slots_per_day
        codes = subject_codes(state.tasks)
        self.names: list[str] = codes.names
        self.code_of = codes.code_of
        self._code_list = codes.of_task  # task id -> subject code (0: event)
        self._hard = codes.hard(state)  # the hard subjects' codes (heavy pairs, issue 42)
        self.sigs: dict[int, tuple[Any, ...]] = {}
        self.infos: dict[int, SubjectTasks] = {
            c: SubjectTasks(class_ids=list(ids)) for c, ids in codes.class_ids.items()
        }
        for task in state.tasks:
            sig = task_sig(task)
            self.sigs[task.state_id] = sig
            code = codes.of_task[task.state_id]
            if code:
                _add_sig(self.infos[code], sig, 1)
        self._classes = self._class_sig()
        self._owner = grid.owner.copy()
        self._guest = grid.guest.copy()
        self._runs: list[list[tuple[int, int]]] | None = None
        # inside_gaps_without's answers (read only by callers); a commit clears them
        self._gap_memo: dict[tuple[int, int | None], set[int] | None] = {}
        # creates_on_day's answers by the day and the facts its rules read; a commit clears them
        self._creates_memo: dict[tuple[int, int, int, int, int], bool] = {}
        self._long_memo: dict[int, list[tuple[int, int]]] = {}  # per subject, its long pairs
        # removal's remembered parts, and the versions of the days and subjects they read
        self._removals: dict[int, tuple[Any, Any, _Local]] = {}
        self._day_version = [0] * self.num_days
        self._subject_version: dict[int, int] = {}
        self.days: list[DayFacts] = grid_day_facts(
            grid.owner, codes.study_layer(grid.owner, grid.guest), codes.hard_mask(self._hard)
        )
        present = subject_days(self.days)
        self.daily: dict[int, SubjectDays] = {
            c: present.get(c) or SubjectDays() for c in self.infos
        }
        self._budget = {c: codes.budget(state, c) for c in self.infos}
        self.sums, self.hist = window_sums(self.days, self.spd)
        self.issues_of: dict[Entity, tuple[Issue, ...]] = {}
        for d, facts in enumerate(self.days):
            self.issues_of[("day", d)] = self._day_issues(d, facts)
        for c in self.infos:
            self.issues_of[("subject", c)] = self._subject_issues(c, self.daily[c], self.infos[c])
        self.issues_of[("overall", 0)] = self._overall_issues(self.sums, self.hist)
        self._refresh()

    def _class_sig(self) -> tuple[Any, ...]:
        return tuple(
            (tc.id, tc.name, tc.total_slots, tc.end_day, is_hard_class(tc))
            for tc in self.state.task_classes
        )

    def _refresh(self) -> None:
        self._severe_all = _severe(i for v in self.issues_of.values() for i in v)
        self.critical = sum(1 for i in self._severe_all.values() if i.severity == "critical")
        self.warning = len(self._severe_all) - self.critical

    def _day_facts(self, d: int) -> DayFacts:
        """The facts of day ``d`` (0-based) as the state's grid holds it."""
        grid = self.state.grid
        return self.facts_of_rows(grid.owner[d].tolist(), grid.guest[d].tolist())

    def free_runs(self, owner: np.ndarray | None = None) -> list[list[tuple[int, int]]] | None:
        """Per day (0-based), the ``(first, last)`` periods (1-based) of each run of free periods
        of the grid as the evaluator last saw it, in order (shared: do not change); ``None`` when
        ``owner`` (a grid's owner layer) is given and differs from it."""
        if owner is not None and not np.array_equal(owner, self._owner):
            return None
        if self._runs is None:
            self._runs = free_run_spans(self._owner)
        return self._runs

    def rows(self, d: int) -> tuple[list[int], list[int]]:
        """Day ``d``'s (0-based) owner and guest rows as the evaluator last saw them."""
        return self._owner[d].tolist(), self._guest[d].tolist()

    def facts_of_rows(self, own: list[int], gst: list[int]) -> DayFacts:
        """The facts of a day from its owner and guest rows (:func:`..health_facts.day_facts`)."""
        try:
            return day_facts(own, gst, self._code_list, self.spd, self._hard)
        except LookupError:  # a task id the evaluator does not know
            raise _Stale from None

    # ------------------------------------------------------------------ rules
    def _memo(self, key: tuple[Any, ...]) -> tuple[Issue, ...] | None:
        return self._issue_memo.get(key)

    def _keep(self, key: tuple[Any, ...], issues: tuple[Issue, ...]) -> tuple[Issue, ...]:
        """Remember the issues of one entity's facts (a search meets the same facts often)."""
        if len(self._issue_memo) > MEMO_SIZE:
            self._issue_memo.clear()
        self._issue_memo[key] = issues
        return issues

    def _day_issues(self, d: int, f: DayFacts) -> tuple[Issue, ...]:
        key = ("day", d, f.total, f.occupied, f.switches, f.heavy)
        found_before = self._memo(key)
        if found_before is not None:
            return found_before
        return self._keep(key, self._day_issues_of(d, f))

    def _day_issues_of(self, d: int, f: DayFacts) -> tuple[Issue, ...]:
        load, context = self.rules.day(f.total, f.occupied, f.switches, self.spd, f.heavy)
        return self._issues(load + context, day=d + 1)

    def _issues(
        self, judged: Judged, *, day: int | None = None, category: str | None = None
    ) -> tuple[Issue, ...]:
        """The issues of one entity's judgement, of the evaluator's dimensions."""
        dims = self.dimensions
        return tuple(
            issue_of(r, band, row, day=day, category=category)
            for r, band, row in judged
            if r.dimension in dims
        )

    def _subject_issues(self, c: int, days: SubjectDays, info: SubjectTasks) -> tuple[Issue, ...]:
        if "subjects" not in self.dimensions or info.task_count <= 0:
            return ()
        key = ("subject", c, days.max_gap, days.used, days.squares, info.blocks)
        found_before = self._memo(key)
        if found_before is not None:
            return found_before
        return self._keep(key, self._subject_issues_of(c, days, info))

    def _subject_issues_of(
        self, c: int, days: SubjectDays, info: SubjectTasks
    ) -> tuple[Issue, ...]:
        total, end_day = self._budget[c]
        row = subject_metrics(
            days.max_gap, days.used, days.squares, info.blocks, self.num_days, total, end_day
        )
        return self._issues(judge(self.rules.subject, row), category=self.names[c - 1])

    def _overall_issues(self, sums: Sums, hist: list[int]) -> tuple[Issue, ...]:
        key = ("overall", *sums, load_range(hist))
        found_before = self._memo(key)
        if found_before is not None:
            return found_before
        row = overall_metrics(self.num_days, sums, hist)
        return self._keep(key, self._issues(judge(self.rules.overall, row)))

    # ------------------------------------------------------------------ reading
    def creates_on_day(self, d: int, facts: DayFacts) -> bool:
        """Day ``d`` (0-based) with new ``facts`` has a critical/warning issue it does not have
        now (a probe of that change counts it in :attr:`Delta.creates`: day issues are named by
        their day)."""
        key = (d, facts.total, facts.occupied, facts.switches, facts.heavy)  # _day_issues'
        found = self._creates_memo.get(key)
        if found is None:
            now = {i.issue_id for i in self.issues_of[("day", d)] if i.severity in SEVERE}
            found = self._creates_memo[key] = any(
                i.severity in SEVERE and i.issue_id not in now for i in self._day_issues(d, facts)
            )
        return found

    def subject_code(self, task_id: int) -> int:
        """The subject code of a task (0: an event, or a task the evaluator does not know)."""
        return self._code_list.get(task_id, 0)

    def inside_gaps_without(self, code: int, day: int | None) -> set[int] | None:
        """Where one new present day of the subject could shrink its largest gap: for its
        present days as they are and (when ``day`` is given) with ``day`` taken out of them,
        the gaps between consecutive present days at least as long as its largest gap today;
        each case gives the days strictly inside its one such gap, none when it has two or more
        (one new day splits only one); the union of the cases, or ``None`` (any day) when a
        case has no such gap or the subject has no gap today."""
        key = (code, day)
        if key in self._gap_memo:
            return self._gap_memo[key]
        found = self._gap_memo[key] = self._inside_gaps_without(code, day)
        return found

    def _inside_gaps_without(self, code: int, day: int | None) -> set[int] | None:
        days = self.daily.get(code)
        if days is None or not days.gaps:
            return None
        most = max(days.gaps)
        long = self._long_memo.get(code)
        if long is None:  # the pairs of the present days as they are: one pass per subject
            long = self._long_memo[code] = [
                (a, b) for a, b in itertools.pairwise(days.present) if b - a - 1 >= most
            ]
        cases = [long]
        if day is not None:
            cases.append(_long_without(days.present, long, day, most))
        out: set[int] = set()
        for pairs in cases:
            if not pairs:
                return None
            if len(pairs) == 1:
                out.update(range(pairs[0][0] + 1, pairs[0][1]))
        return out

    def key(self) -> tuple[int, int]:
        """(critical, warning) of the state."""
        return self.critical, self.warning

    def severe(self) -> dict[str, Issue]:
        """The critical and warning issues by id, in the issues' order (shared: do not change)."""
        return self._severe_all

    def issues(self) -> list[Issue]:
        """Every issue (info included), in ``analyze_health``'s order, as fresh objects."""
        ordered: list[Issue] = []
        days = [e for e in self.issues_of if e[0] == "day"]
        # the analyzers' order before the (stable) sort: load, subjects, context, tolerance
        if "load" in self.dimensions:
            ordered += [i for e in days for i in self.issues_of[e] if i.dimension == "load"]
            ordered += [i for i in self.issues_of[("overall", 0)] if i.dimension == "load"]
        ordered += [i for c in self.infos for i in self.issues_of.get(("subject", c), ())]
        ordered += [i for e in days for i in self.issues_of[e] if i.dimension == "context"]
        ordered += [i for i in self.issues_of[("overall", 0)] if i.dimension == "tolerance"]
        return [replace(i, merged_issue_ids=[]) for i in sort_issues(ordered)]

    # ------------------------------------------------------------------ changes
    def probe(self, days: Iterable[int], tasks: Iterable[int] = ()) -> Delta:
        """The effect of a change already applied to the state: ``days`` (1-based) are the days
        whose periods it changed, ``tasks`` the tasks whose status or blocks it changed (their
        subjects' task facts are read again). Nothing is kept (see :meth:`commit`)."""
        new_days = {d: self._day_facts(d) for d in sorted({int(d) - 1 for d in days})}
        sigs: dict[int, tuple[Any, ...]] = {}
        for tid in tasks:
            task = self.state.task(tid)
            if task is None:
                raise _Stale
            sigs[tid] = task_sig(task)
        return self.probe_facts(new_days, sigs)

    def probe_facts(
        self, new_days: dict[int, DayFacts], new_sigs: dict[int, tuple[Any, ...]]
    ) -> Delta:
        """:meth:`probe` from the new facts of the touched days (0-based) and the new facts of
        the touched tasks (:func:`task_sig`): a change judged without applying it."""
        local = self._local(new_days, new_sigs)
        changed, before, after, sums, hist = self._finish(local)
        crit = sum(1 for i in after.values() if i.severity == "critical") - sum(
            1 for i in before.values() if i.severity == "critical"
        )
        warn = (len(after) - len(before)) - crit
        return Delta(
            changed,
            crit,
            warn,
            before,
            after,
            new_days,
            local.daily,
            local.infos,
            local.sigs,
            sums,
            hist,
        )

    def _local(self, new_days: dict[int, DayFacts], new_sigs: dict[int, tuple[Any, ...]]) -> _Local:
        """What a change does to the touched days and subjects (:meth:`probe_facts`' first
        part): their new facts and issues. It reads the touched days' facts, the touched
        tasks' facts and the touched subjects' facts, nothing window-wide."""
        touched = sorted(new_days)
        # per subject, the touched days whose periods of it changed
        moved: dict[int, dict[int, int]] = {}
        for d in touched:
            for c, n in subject_changes(self.days[d], new_days[d]).items():
                moved.setdefault(c, {})[d + 1] = n
        subjects: set[int] = set(moved)
        sigs: dict[int, tuple[Any, ...]] = {}
        infos: dict[int, SubjectTasks] = {}
        for tid, new in new_sigs.items():
            old = self.sigs.get(tid)
            if old is None:
                raise _Stale
            if new == old:
                continue
            if new[:3] != old[:3]:
                raise _Stale  # a task changed its subject: rebuild
            sigs[tid] = new
            if new[0] == "event":
                continue
            c = self._code_list[tid]
            info = infos.get(c) or self.infos[c].copy()
            _add_sig(info, old, -1)
            _add_sig(info, new, 1)
            infos[c] = info
            subjects.add(c)
        daily: dict[int, SubjectDays] = {}
        for c in subjects:
            days = self.daily[c]
            daily[c] = days.changed(moved[c]) if c in moved else days
        issues: dict[Entity, tuple[Issue, ...]] = {}
        for d in touched:
            issues[("day", d)] = self._day_issues(d, new_days[d])
        for c in subjects:
            info = infos.get(c, self.infos[c])
            issues[("subject", c)] = self._subject_issues(c, daily[c], info)
        return _Local(touched, new_days, subjects, daily, infos, sigs, issues)

    def _finish(
        self, local: _Local, ordered: bool = True
    ) -> tuple[
        dict[Entity, tuple[tuple[Issue, ...], tuple[Issue, ...]]],
        dict[str, Issue],
        dict[str, Issue],
        Sums,
        list[int],
    ]:
        """:meth:`probe_facts`' second part: the window-wide sums and issues after the change,
        and the issues of every entity it changes, before and after (their severe ones by id,
        in the issues' order, or ``ordered=False`` in no particular order)."""
        new_days = local.new_days
        sums = self.sums
        hist = list(self.hist)
        for d in local.touched:
            sums = moved_sums(sums, hist, self.days[d], new_days[d])
        changed: dict[Entity, tuple[tuple[Issue, ...], tuple[Issue, ...]]] = {}
        get = self.issues_of.get
        for entity, new in local.issues.items():
            old = get(entity, ())
            if old != new:
                changed[entity] = (old, new)
        new = self._overall_issues(sums, hist)
        old = get(("overall", 0), ())
        if old != new:
            changed[("overall", 0)] = (old, new)
        if ordered:
            before = _severe(i for old, _ in changed.values() for i in old)
            after = _severe(i for _, new in changed.values() for i in new)
        else:
            before = {
                i.issue_id: i for old, _ in changed.values() for i in old if i.severity in SEVERE
            }
            after = {
                i.issue_id: i for _, new in changed.values() for i in new if i.severity in SEVERE
            }
        return changed, before, after, sums, hist

    def removal(self, task: Task) -> tuple[dict[str, Issue], dict[str, Issue]]:
        """The critical/warning issues of the entities that taking ``task`` out (made
        pending) changes, before and after, by id in no particular order (:attr:`Delta.before`
        / :attr:`Delta.after` of that probe), judged on copies of its days' rows: nothing
        changes. Its day and subject part
        is remembered per task by exactly what it reads (the task's blocks and facts, the
        version of each of its days and touched subjects, which :meth:`commit` bumps), so a
        write elsewhere costs the window-wide part only (a health call screens ~100 removals)."""
        tid = task.state_id
        guest = task.embed_host is not None
        blocks = tuple((b.day, b.slot_start, b.slot_end) for b in task.slots)
        sig = task_sig(task)
        new_sig = (*sig[:3], "pending", 0, task.need())
        facts = (blocks, guest, new_sig, self.sigs.get(tid))
        found = self._removals.get(tid)
        local = None
        if found is not None and found[0] == facts:
            stamp, kept = found[1], found[2]
            if stamp == self._versions(kept):
                local = kept
        if local is None:
            rows: dict[int, tuple[list[int], list[int]]] = {}
            for day, first, last in blocks:
                d = day - 1
                if d not in rows:
                    rows[d] = self.rows(d)
                layer = rows[d][1] if guest else rows[d][0]
                for q in range(first - 1, last):
                    layer[q] = 0
            new_days = {d: self.facts_of_rows(own, gst) for d, (own, gst) in sorted(rows.items())}
            full = self._local(new_days, {tid: new_sig})
            # kept without the subjects' new facts (a removal is never committed)
            local = _Local(full.touched, new_days, full.subjects, {}, {}, {}, full.issues)
            self._removals[tid] = (facts, self._versions(local), local)
        _, before, after, _, _ = self._finish(local, ordered=False)
        return before, after

    def _versions(self, local: _Local) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (
            tuple(self._day_version[d] for d in local.touched),
            tuple(self._subject_version.get(c, 0) for c in local.subjects),
        )

    def commit(self, delta: Delta) -> None:
        """Keep a probed change (the state must still be as it was probed)."""
        grid = self.state.grid
        for d, facts in delta.days.items():
            self.days[d] = facts
            self._day_version[d] += 1
            self._owner[d] = grid.owner[d]
            self._guest[d] = grid.guest[d]
            if self._runs is not None:
                self._runs[d] = free_run_spans(self._owner[d : d + 1])[0]
        for c, days in delta.daily.items():
            self.daily[c].adopt({d + 1: f.subjects.get(c, 0) for d, f in delta.days.items()})
            days.daily = self.daily[c].daily
            self.daily[c] = days
        for c in delta.daily.keys() | delta.infos.keys():
            self._subject_version[c] = self._subject_version.get(c, 0) + 1
        self.infos.update(delta.infos)
        self.sigs.update(delta.sigs)
        self.sums, self.hist = delta.sums, delta.hist
        self._gap_memo.clear()
        self._long_memo.clear()
        self._creates_memo.clear()
        for entity, (_, new) in delta.changed.items():
            self.issues_of[entity] = new
        self._refresh()

    def sync(self) -> None:
        """Catch up with every change made to the state since the last build, probe or sync:
        the days whose grid rows differ, the tasks whose facts differ (a new or removed task, a
        changed subject or task class: rebuilt)."""
        state = self.state
        grid = state.grid
        if (
            grid.owner.shape != self._owner.shape
            or len(state.tasks) != len(self.sigs)
            or self._class_sig() != self._classes
        ):
            self._build()
            return
        rows = np.flatnonzero(
            np.any(grid.owner != self._owner, axis=1) | np.any(grid.guest != self._guest, axis=1)
        )
        tasks = [t.state_id for t in state.tasks if self.sigs.get(t.state_id) != task_sig(t)]
        if not rows.size and not tasks:
            return
        try:
            self.commit(self.probe((rows + 1).tolist(), tasks))
        except _Stale:
            self._build()


def _long_without(
    present: list[int], long: list[tuple[int, int]], day: int, most: int
) -> list[tuple[int, int]]:
    """The consecutive pairs of ``present`` without ``day`` whose gap is at least ``most``,
    from ``long`` (those of ``present``): taking a day out replaces its two pairs by one."""
    i = bisect.bisect_left(present, day)
    if i == len(present) or present[i] != day:
        return long
    gone = set()
    if i > 0:
        gone.add((present[i - 1], day))
    if i + 1 < len(present):
        gone.add((day, present[i + 1]))
    out = [pair for pair in long if pair not in gone]
    if 0 < i < len(present) - 1:
        a, b = present[i - 1], present[i + 1]
        if b - a - 1 >= most:
            bisect.insort(out, (a, b))
    return out


class _Stale(Exception):
    """The state changed in a way a probe cannot follow (a task added or re-categorised)."""


def touched(changes: Iterable[Change]) -> tuple[list[int], list[int]]:
    """``(days, task ids)`` a write's changes touched (1-based days, both sides of each block)."""
    days: set[int] = set()
    tasks: list[int] = []
    for ch in changes:
        tasks.append(ch.task_id)
        for block in (ch.block_before, ch.block_after):
            if block is not None:
                days.add(block.day)
    return sorted(days), list(dict.fromkeys(tasks))


# ---------------------------------------------------------------------------------- cache
_CACHE: dict[tuple[int, str, tuple[str, ...]], HealthEvaluator] = {}
_CACHE_LOCK = threading.Lock()
CACHE_SIZE = 16


def evaluator_for(
    state: ScheduleState, level: Level = "normal", dimensions: Sequence[str] = DIMENSIONS
) -> HealthEvaluator:
    """The cached evaluator of ``state`` at ``level``, brought up to date (:meth:`sync`): a
    session's health, evidence lines and queries share one, so each write costs what it touched.
    The cache holds its states (a key is never a reused ``id``); the oldest entry leaves first."""
    key = (id(state), level, tuple(d for d in DIMENSIONS if d in dimensions))
    with _CACHE_LOCK:
        ev = _CACHE.pop(key, None)
        if ev is not None and ev.state is not state:
            ev = None
        if ev is None:
            while len(_CACHE) >= CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
        else:
            _CACHE[key] = ev
    if ev is None:
        ev = HealthEvaluator(state, level, key[2])
        with _CACHE_LOCK:
            _CACHE[key] = ev
        return ev
    with ev.lock:
        ev.sync()
    return ev


def forget(state: ScheduleState) -> None:
    """Drop ``state``'s evaluators from the cache."""
    with _CACHE_LOCK:
        for key in [k for k, ev in _CACHE.items() if ev.state is state]:
            del _CACHE[key]


__all__ = [
    "DayFacts",
    "Delta",
    "HealthEvaluator",
    "evaluator_for",
    "forget",
    "task_sig",
    "touched",
]
