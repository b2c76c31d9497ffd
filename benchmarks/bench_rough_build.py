"""Rough build (粗排): our exact ``Store.rough_build`` against SmartFlow-Agent's greedy (issue 41
item 6), on the same seeded cohorts in one run.

The greedy is re-implemented here from reading the reference system's
``backend/services/schedule/core/planning/smart_planning.go`` (``SmartPlanningRawItemsMulti``,
``buildTimeGrid``, ``computeAllocation``, ``findNextCandidateFromCursor``,
``chooseSteadyCandidate``), written anew in Python:

- **grid**: per class, the sections of the class's dates (``(week, day_of_week)`` from its start
  to its end) are free, *blocked* (the class's half-day bans ``excluded_slots`` b = sections
  2b-1..2b, and every section of ``excluded_days_of_week``), *occupied* (a schedules row) or
  *filler* (a row of an embeddable course when the class allows water courses);
- **candidates**: the available sections (free or filler) in (week, day, section) order form a
  snapshot list; a candidate is always a two-section block starting on an odd section: two free
  sections, or an aligned pair inside one filler course block (the item is embedded in it);
- **rapid**: a cursor over the snapshot; the first candidate at or after it is taken and the
  cursor moves past the block (gap 0);
- **steady**: for item i of n, the target index ``(i+1)·A/(n+1)`` (A the snapshot's size); every
  candidate is scored ``10·|index − target| + 25·occupied sections of its day + 80 if the day
  keeps fewer than 2 available sections + 180 per item of the class already on that day + 60 per
  item on an adjacent day + index`` and the lowest score wins;
- **all or nothing**: a class needs at least ``2·items`` available sections, and when any item
  finds no candidate the whole call fails (``TimeNotEnoughForAutoScheduling``); classes run in
  the given order, each seeing the previous classes' blocks as occupied.

Where the reference is loose we chose (docs/decisions.md, issue 41): only the asked classes'
pending items are placed, in ``task_order``; a water-course block that already hosts a guest is
occupied (the reference would offer it again); item durations are ignored (the greedy always
places two sections, as upstream). Our rough build places each item with its own duration
(what the loader derives), so three cohorts on the same seeds: plain windows with the synthetic
durations (1-4 sections), plain windows whose items all need two sections, and tight windows
(the free periods filled with pending work) of two-section items, where the greedy's aborts show.

Measured per cohort window: items placed (the greedy's delivered answer is nothing when it
aborts; how far it got before aborting is shown apart), the health after (``analyze_health`` on
the window with the answer applied: critical / warning counts), and the runtime (median of
repeats; the greedy on the state already loaded, ours the whole ``Store.rough_build`` call
including loading).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from itertools import pairwise
from pathlib import Path
from typing import Any

from smartflow_engine.state import ScheduleState
from smartflow_engine.state.synthetic import SEMESTER_START, synthetic_window

FREE, OCCUPIED, BLOCKED, FILLER = 0, 1, 2, 3
SECTIONS = 12
USER = 1

Cell = tuple[int, int, int]  # (week, day_of_week, section)
# (synthetic variant, every pending item of two sections): the cohorts measured, same seeds.
COHORTS = (("plain", False), ("plain", True), ("tight", True))


@dataclass
class GreedyClass:
    """One task class as the greedy reads it: its span, bans, permission, strategy and items."""

    id: int
    start: tuple[int, int]  # (week, day_of_week), inclusive
    end: tuple[int, int]
    excluded_slots: Sequence[int] = ()
    excluded_days_of_week: Sequence[int] = ()
    allow_filler_course: bool = True
    strategy: str = "steady"
    items: Sequence[int] = ()  # task item ids, in the order they are placed


@dataclass
class GreedyAnswer:
    """``placements`` rows ``(task_item_id, week, day_of_week, section_from, section_to,
    embed_course_event_id)``; when ``aborted`` the delivered answer is empty and ``attempted``
    holds what was placed before the failing class gave up (``failed_class``)."""

    placements: list[tuple[int, int, int, int, int, int]] = field(default_factory=list)
    aborted: bool = False
    failed_class: int | None = None
    attempted: int = 0


@dataclass
class _Candidate:
    index: int
    week: int
    day: int
    first: int
    last: int
    host: int


class _Grid:
    """A class's grid (``buildTimeGrid``): status and event id per (week, day, section)."""

    def __init__(self, rows: dict[Cell, tuple[int, bool]], cls: GreedyClass) -> None:
        self.start, self.end = cls.start, cls.end
        self.status: dict[Cell, int] = {}
        self.event: dict[Cell, int] = {}
        for week, day in self.days():
            for s in range(1, SECTIONS + 1):
                if day in cls.excluded_days_of_week or (s + 1) // 2 in cls.excluded_slots:
                    self.status[(week, day, s)] = BLOCKED
        for cell, (event_id, embeddable) in rows.items():
            if self.status.get(cell) == BLOCKED or not self.start[0] <= cell[0] <= self.end[0]:
                continue
            self.status[cell] = FILLER if cls.allow_filler_course and embeddable else OCCUPIED
            self.event[cell] = event_id

    def days(self) -> Iterable[tuple[int, int]]:
        for week in range(self.start[0], self.end[0] + 1):
            for day in range(1, 8):
                if (week, day) < self.start or (week, day) > self.end:
                    continue
                yield week, day

    def available(self, cell: Cell) -> bool:
        return self.status.get(cell, FREE) in (FREE, FILLER)

    def snapshot(self) -> list[Cell]:
        return [
            (w, d, s)
            for w, d in self.days()
            for s in range(1, SECTIONS + 1)
            if self.available((w, d, s))
        ]

    def day_count(self, week: int, day: int, wanted: tuple[int, ...]) -> int:
        return sum(self.status.get((week, day, s), FREE) in wanted for s in range(1, SECTIONS + 1))

    def next_candidate(self, coords: list[Cell], cursor: int) -> _Candidate | None:
        """The first legal two-section block at or after ``cursor`` in the snapshot."""
        for idx in range(cursor, len(coords)):
            w, d, s = coords[idx]
            status = self.status.get((w, d, s), FREE)
            if status == FILLER:
                event = self.event[(w, d, s)]
                same = [
                    t
                    for t in range(1, SECTIONS + 1)
                    if self.status.get((w, d, t)) == FILLER and self.event.get((w, d, t)) == event
                ]
                # the contiguous course block around s
                lo = s
                while lo - 1 in same:
                    lo -= 1
                hi = lo
                while hi + 1 in same:
                    hi += 1
                first = lo if lo % 2 == 1 else lo + 1
                while first + 1 <= hi:
                    if self.available((w, d, first)) and self.available((w, d, first + 1)):
                        return _Candidate(idx, w, d, first, first + 1, event)
                    first += 2
                continue
            if status != FREE or s % 2 == 0 or s >= SECTIONS:
                continue
            if self.available((w, d, s + 1)):
                host = self.event.get((w, d, s + 1), 0)  # a free section then a filler one
                return _Candidate(idx, w, d, s, s + 1, host)
        return None

    def all_candidates(self, coords: list[Cell]) -> list[_Candidate]:
        out: list[_Candidate] = []
        seen: set[tuple[int, int, int, int]] = set()
        cursor = 0
        while cursor < len(coords):
            c = self.next_candidate(coords, cursor)
            if c is None:
                break
            key = (c.week, c.day, c.first, c.last)
            if key not in seen:
                seen.add(key)
                out.append(c)
            cursor = max(cursor + 1, c.index + c.last - c.first + 1)
        return out


def _steady_choice(
    grid: _Grid, coords: list[Cell], target: int, placed_days: list[int]
) -> _Candidate | None:
    best, best_score = None, None
    for c in grid.all_candidates(coords):
        span = c.last - c.first + 1
        score = abs(c.index - target) * 10 + grid.day_count(c.week, c.day, (OCCUPIED,)) * 25
        if grid.day_count(c.week, c.day, (FREE, FILLER)) - span < 2:
            score += 80
        ordinal = c.week * 7 + c.day
        for placed in placed_days:
            diff = abs(ordinal - placed)
            score += 180 if diff == 0 else 60 if diff == 1 else 0
        score += c.index
        if best_score is None or score < best_score:
            best, best_score = c, score
    return best


def _allocate(grid: _Grid, cls: GreedyClass) -> tuple[list[_Candidate], bool]:
    """``computeAllocation``: the blocks of the class's items, and whether all were placed."""
    items = list(cls.items)
    if not items:
        return [], True
    coords = grid.snapshot()
    available, required = len(coords), 2 * len(items)
    if available < required:
        return [], False
    steady = cls.strategy == "steady"
    cursor, out, placed_days = 0, [], []
    for i in range(len(items)):
        if steady:
            target = 0
            if available > 1 and len(items) > 1:
                target = min(available - 1, max(0, (i + 1) * available // (len(items) + 1)))
            c = _steady_choice(grid, coords, target, placed_days)
        else:
            c = grid.next_candidate(coords, cursor) if cursor < available else None
        if c is None:
            return out, False
        for s in range(c.first, c.last + 1):
            grid.status[(c.week, c.day, s)] = OCCUPIED
        if not steady:
            cursor = c.index + c.last - c.first + 1
        placed_days.append(c.week * 7 + c.day)
        out.append(c)
    return out, True


def greedy_rough_build(
    rows: dict[Cell, tuple[int, bool]], classes: Sequence[GreedyClass]
) -> GreedyAnswer:
    """SmartFlow-Agent's multi-class greedy (``SmartPlanningRawItemsMulti``) over the schedules
    rows ``rows`` ((week, day_of_week, section) → (event id, embeddable)): classes in the given
    order, each class's blocks occupied for the next; all or nothing."""
    working = dict(rows)
    answer = GreedyAnswer()
    for cls in classes:
        blocks, ok = _allocate(_Grid(working, cls), cls)
        for item, c in zip(cls.items, blocks, strict=False):
            answer.placements.append((item, c.week, c.day, c.first, c.last, c.host))
            for s in range(c.first, c.last + 1):
                working[(c.week, c.day, s)] = (-1, False)  # a virtual task event
        if not ok:
            answer.attempted = len(answer.placements)
            answer.placements, answer.aborted, answer.failed_class = [], True, cls.id
            return answer
    answer.attempted = len(answer.placements)
    return answer


# ---------------------------------------------------------------------------- the cohorts


def _week_day(text: str, semester: date) -> tuple[int, int]:
    d = date.fromisoformat(text[:10])
    return (d - semester).days // 7 + 1, d.weekday() + 1


def greedy_inputs(
    state: ScheduleState, class_ids: Sequence[int], semester: date
) -> tuple[dict[Cell, tuple[int, bool]], list[GreedyClass]]:
    """The greedy's inputs from a loaded window: the schedules rows (existing tasks and placed
    items; a course hosting a guest is not embeddable) and the asked classes with their pending
    items in ``task_order``."""
    mapping = state.window.day_mapping
    hosting = {t.embed_host for t in state.tasks if t.embed_host is not None}
    rows: dict[Cell, tuple[int, bool]] = {}
    for t in state.tasks:
        if t.status == "pending" or t.embed_host is not None:
            continue
        embeddable = t.can_embed and t.state_id not in hosting
        for b in t.slots:
            day = mapping[b.day - 1]
            for s in range(b.slot_start, b.slot_end + 1):
                rows[(day.week, day.day_of_week, s)] = (t.source_id, embeddable)
    classes = []
    by_id = {c.id: c for c in state.task_classes}
    for cid in class_ids:
        tc = by_id[cid]
        assert tc.start_date and tc.end_date
        items = sorted(
            (t for t in state.tasks if t.status == "pending" and t.task_class_id == cid),
            key=lambda t: (t.task_order or 0, t.source_id),
        )
        classes.append(
            GreedyClass(
                cid,
                _week_day(tc.start_date, semester),
                _week_day(tc.end_date, semester),
                list(tc.excluded_slots),
                list(tc.excluded_days_of_week),
                tc.allow_filler_course is not False,
                tc.strategy or "steady",
                [t.source_id for t in items],
            )
        )
    return rows, classes


def apply_answer(state: ScheduleState, placements: Iterable[Any], length_fixed: bool) -> Any:
    """A copy of ``state`` with the placements applied (rows of the backend's coordinates)."""
    from smartflow_engine.state.model import SlotRange

    out = ScheduleState.from_json(state.to_dict())
    day_of = {(d.week, d.day_of_week): i + 1 for i, d in enumerate(out.window.day_mapping)}
    items = {t.source_id: t for t in out.tasks if t.source == "task_item"}
    events = {t.source_id: t for t in out.tasks if t.source == "event"}
    for p in placements:
        item, week, dow, first, last, host = p
        task = items[item]
        task.slots = [SlotRange(day=day_of[(week, dow)], slot_start=first, slot_end=last)]
        task.status = "suggested"
        if length_fixed:
            task.duration = None
        if host:
            hosting = events[host]
            task.embed_host = hosting.state_id
            prev = hosting.embedded_by
            guests = [] if prev is None else [prev] if isinstance(prev, int) else list(prev)
            hosting.embedded_by = [*guests, task.state_id] if guests else task.state_id
    return out


def order_breaks(state: ScheduleState, class_ids: Iterable[int]) -> int:
    """Pairs of consecutive placed items of a class (by ``task_order``) whose blocks come in the
    other order: the class order rule our rough build keeps and the greedy does not know."""
    breaks = 0
    for cid in class_ids:
        placed = sorted(
            (t.task_order, t.slots[0].day, t.slots[0].slot_start)
            for t in state.tasks
            if t.task_class_id == cid and t.slots and t.task_order is not None
        )
        breaks += sum(a[1:] > b[1:] for a, b in pairwise(placed))
    return breaks


def _health(state: ScheduleState) -> tuple[int, int]:
    from smartflow_engine.analyzers import analyze_health

    res = analyze_health(state, check_feasibility=False, num_workers=1)
    return (
        sum(i.severity == "critical" for i in res.issues),
        sum(i.severity == "warning" for i in res.issues),
    )


def _cohort(n: int, days: int, two_sections: bool, variant: str) -> list[ScheduleState]:
    """The seeded windows; with ``two_sections`` every pending item needs two sections (the
    greedy's block; its class's ``total_slots`` twice its item count), so both methods need the
    same amounts."""
    out = []
    for seed in range(n):
        window = synthetic_window(seed, days, upstream=True, variant=variant)  # type: ignore[arg-type]
        if two_sections:
            for tc in window.task_classes:
                tc.total_slots = 2 * sum(t.task_class_id == tc.id for t in window.tasks)
            for t in window.tasks:
                if t.status == "pending":
                    t.duration = 2
        out.append(window)
    return out


def run(quick: bool = False) -> str:
    """The benchmark's Markdown section (see the module docstring)."""
    n, days, repeats = (3, 21, 1) if quick else (12, 28, 2)
    time_limit = 2.0
    sections: list[str] = []
    before = os.environ.get("SMARTFLOW_SEMESTER_START")
    os.environ["SMARTFLOW_SEMESTER_START"] = SEMESTER_START.isoformat()
    try:
        for variant, two in COHORTS:
            rows_out = _measure(n, days, repeats, time_limit, two, variant)
            sections.append(_report(rows_out, n, days, repeats, time_limit, quick, two, variant))
    finally:
        if before is None:
            os.environ.pop("SMARTFLOW_SEMESTER_START", None)
        else:
            os.environ["SMARTFLOW_SEMESTER_START"] = before
    return "\n".join(sections)


def _measure(
    n: int, days: int, repeats: int, time_limit: float, two: bool, variant: str
) -> list[dict[str, Any]]:
    from smartflow_engine.store import Store
    from smartflow_engine.store.days import window_days

    rows_out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.from_url(f"sqlite:///{Path(tmp) / 'bench.db'}")
        try:
            for seed, window in enumerate(_cohort(n, days, two, variant)):
                user = USER + seed
                store.seed_from_state(user, window, keep_ids=False)
                loaded_all = store.load_window(user, window.window.day_mapping)
                class_ids = sorted(
                    c.id
                    for c in loaded_all.task_classes
                    if c.start_date
                    and c.end_date
                    and any(
                        t.status == "pending" and t.task_class_id == c.id for t in loaded_all.tasks
                    )
                )
                if not class_ids:
                    continue
                ours_times, greedy_times = [], []
                ours = None
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    ours = store.rough_build(user, class_ids, time_limit_s=time_limit)
                    ours_times.append(time.perf_counter() - t0)
                assert ours is not None
                w = ours.window
                state = store.load_window(
                    user,
                    window_days(
                        (w["start_week"], w["start_day_of_week"]),
                        (w["end_week"], w["end_day_of_week"]),
                    ),
                    task_class_ids=class_ids,
                )
                greedy = GreedyAnswer()
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    rows, classes = greedy_inputs(state, class_ids, SEMESTER_START)
                    greedy = greedy_rough_build(rows, classes)
                    greedy_times.append(time.perf_counter() - t0)
                scope = {
                    t.source_id
                    for t in state.tasks
                    if t.status == "pending" and t.task_class_id in class_ids
                }
                state.tasks = [
                    t for t in state.tasks if t.status != "pending" or t.source_id in scope
                ]
                ours_rows = [
                    (
                        p["task_item_id"],
                        p["week"],
                        p["day_of_week"],
                        p["section_from"],
                        p["section_to"],
                        p["embed_course_event_id"],
                    )
                    for p in ours.placements
                ]
                rows_out.append(
                    {
                        "seed": seed,
                        "items": len(scope),
                        "required": ours.required_slots,
                        "ours_sections": ours.placed_slots,
                        "greedy_sections": 2 * len(greedy.placements),
                        "ours_placed": len(ours.placements),
                        "ours_all": ours.all_fit,
                        "ours_health": _health(ours_state := apply_answer(state, ours_rows, False)),
                        "ours_breaks": order_breaks(ours_state, class_ids),
                        "ours_s": statistics.median(ours_times),
                        "greedy_placed": len(greedy.placements),
                        "greedy_attempted": greedy.attempted,
                        "greedy_aborted": greedy.aborted,
                        "greedy_health": _health(
                            greedy_state := apply_answer(state, greedy.placements, True)
                        ),
                        "greedy_breaks": order_breaks(greedy_state, class_ids),
                        "greedy_s": statistics.median(greedy_times),
                    }
                )
        finally:
            store.dispose()
    return rows_out


def _report(
    rows: list[dict[str, Any]],
    n: int,
    days: int,
    repeats: int,
    limit: float,
    quick: bool,
    two: bool,
    variant: str,
) -> str:
    items = sum(r["items"] for r in rows)
    required = sum(r["required"] for r in rows)
    sec_o = sum(r["ours_sections"] for r in rows)
    sec_g = sum(r["greedy_sections"] for r in rows)
    ours = sum(r["ours_placed"] for r in rows)
    greedy = sum(r["greedy_placed"] for r in rows)
    attempted = sum(r["greedy_attempted"] for r in rows)
    aborted = sum(r["greedy_aborted"] for r in rows)
    all_fit = sum(r["ours_all"] for r in rows)
    crit_o = sum(r["ours_health"][0] for r in rows)
    warn_o = sum(r["ours_health"][1] for r in rows)
    crit_g = sum(r["greedy_health"][0] for r in rows)
    warn_g = sum(r["greedy_health"][1] for r in rows)
    br_o = sum(r["ours_breaks"] for r in rows)
    br_g = sum(r["greedy_breaks"] for r in rows)
    t_o = statistics.median(r["ours_s"] for r in rows)
    t_g = statistics.median(r["greedy_s"] for r in rows)
    lines = [
        "## Rough build: exact (`Store.rough_build`) vs SmartFlow-Agent's greedy"
        + f" — {variant} windows, "
        + (
            "items of two sections (the greedy's block)"
            if two
            else "items of their own duration (1-4 sections; the greedy places 2)"
        ),
        "",
        f"{len(rows)} windows of the cohort `synthetic_window(seed, {days}, upstream=True, "
        f"variant={variant!r})`, seeds "
        f"0..{n - 1} (windows whose classes all lack an end date skipped), seeded into one SQLite "
        f"file, each user's classes with dates and pending items asked at once; ours with "
        f"`time_limit_s={limit}` and 1 worker (whole call incl. loading), the greedy on the "
        f"loaded window; runtimes are medians of {repeats} call(s) per window, then the median "
        f"over windows. Health after: `analyze_health` (no feasibility step) on the window "
        f"with the answer applied; an aborted greedy delivers nothing. Class order breaks: "
        f"consecutive items of a class (by task_order) placed in the other order. "
        f"{'Quick run.' if quick else ''}",
        "",
        "| method | items placed | sections placed / needed | windows all placed | aborted | "
        "critical after | warning after | class order breaks | runtime median |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| exact (ours) | {ours}/{items} | {sec_o}/{required} | {all_fit}/{len(rows)} | 0 | "
        f"{crit_o} | {warn_o} | {br_o} | {t_o * 1000:.0f} ms |",
        f"| greedy (upstream) | {greedy}/{items} (got to {attempted} before aborting) | "
        f"{sec_g}/{required} | {len(rows) - aborted}/{len(rows)} | {aborted} | {crit_g} | "
        f"{warn_g} | {br_g} | {t_g * 1000:.1f} ms |",
        f"| ratio ours/greedy | {ours / max(1, greedy):.2f} | {sec_o / max(1, sec_g):.2f} | | | "
        f"{crit_o / max(1, crit_g):.2f} | {warn_o / max(1, warn_g):.2f} | | "
        f"{t_o / max(1e-9, t_g):.0f} |",
        "",
        "Per window (placed / items; critical, warning after; ms):",
        "",
        "| seed | items | ours placed | ours health | ours ms | greedy placed | greedy got to "
        "| greedy aborted | greedy health | greedy ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['seed']} | {r['items']} | {r['ours_placed']} | {r['ours_health'][0]}, "
            f"{r['ours_health'][1]} | {r['ours_s'] * 1000:.0f} | {r['greedy_placed']} | "
            f"{r['greedy_attempted']} | {'yes' if r['greedy_aborted'] else 'no'} | "
            f"{r['greedy_health'][0]}, {r['greedy_health'][1]} | {r['greedy_s'] * 1000:.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    text = run(quick="--quick" in sys.argv)
    print(text)
    if "--quick" not in sys.argv:
        (Path(__file__).parent / "results_rough_build.md").write_text(
            "# Rough build benchmark\n\n" + text, encoding="utf-8"
        )
