"""Tiny windows for the solver tests: a hypothesis strategy, a brute-force feasibility oracle
and a helper applying placements through the real write path.

The oracle shares no code with the solver: it finds free periods and embeddable host blocks from
the task list itself and tries every combination of places. Its best placement is also applied
through ``relocate`` by the tests, so the oracle is checked against the real write path too.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from smartflow_engine import ScheduleState
from smartflow_engine.solver import Placement
from smartflow_engine.state import Request, relocate, self_check, unplace

CLASS_IDS = (10, 11)
CATEGORY_IDS = (10, 11, 12)  # 12 has no task class


def make_state(
    days: int, spd: int, tasks: list[dict[str, Any]], classes: list[dict[str, Any]] | None = None
) -> ScheduleState:
    """A state from a compact task list (ids, names, sources and, from a ``category_id``, a
    category name filled in)."""
    full = []
    for i, t in enumerate(tasks, start=1):
        row = {
            "state_id": i,
            "name": f"t{i}",
            "source": "task_item",
            "category": "学习",
            "status": "pending",
        }
        if "category_id" in t and "category" not in t:
            # a category's name comes with its id (the subject is the name, concepts.subject_of)
            row["category"] = f"科目{t['category_id']}"
        row.update(t)
        full.append(row)
    data = {
        "window": {"total_days": days, "slots_per_day": spd},
        "tasks": full,
        "task_classes": classes or [],
    }
    return ScheduleState.model_validate(data)


def locked_course(day: int, start: int, end: int) -> dict[str, Any]:
    """A locked course (an ``event``, ``existing``) on ``day``'s periods ``start``-``end``."""
    return {
        "source": "event",
        "category": "课程",
        "status": "existing",
        "locked": True,
        "slots": [{"day": day, "slot_start": start, "slot_end": end}],
    }


def water_course(day: int, *blocks: tuple[int, int], category: str = "课程") -> dict[str, Any]:
    """An unlocked water course (an ``event`` a guest may sit in) on ``day``'s ``blocks``
    (first and last period of each)."""
    return {
        "source": "event",
        "category": category,
        "status": "existing",
        "can_embed": True,
        "slots": [{"day": day, "slot_start": a, "slot_end": b} for a, b in blocks],
    }


def random_classes(
    rng: random.Random, days: int, spd: int, *, keep: float = 1.0, most_banned: int = 1
) -> list[dict[str, Any]]:
    """Classes 10 and 11 (each kept with probability ``keep``: no draw when 1) with a random
    day window in ``1..days`` and up to ``most_banned`` banned periods of ``1..spd``."""
    classes = []
    for cid in (10, 11):
        if keep < 1.0 and rng.random() >= keep:
            continue
        start = rng.randint(1, days)
        classes.append(
            {
                "id": cid,
                "name": f"c{cid}",
                "start_day": start,
                "end_day": rng.randint(start, days),
                "excluded_periods": rng.sample(range(1, spd + 1), rng.randint(0, most_banned)),
            }
        )
    return classes


def ordered_week(
    tasks: list[dict[str, Any]],
    days: int = 7,
    banned_weekdays: list[int] | None = None,
    banned_blocks: list[int] | None = None,
) -> ScheduleState:
    """A state in the reference system's form: ``days`` days of week 1 (12 periods, the
    semester starting Monday 2026-09-07), ``tasks`` as given, and class 10 "复习" of that week
    (no water course, ``banned_weekdays`` and the half-day blocks ``banned_blocks`` excluded)."""
    mapping = [{"day_index": d, "week": 1, "day_of_week": (d - 1) % 7 + 1} for d in range(1, 8)]
    data = {
        "window": {
            "total_days": days,
            "slots_per_day": 12,
            "day_mapping": mapping[:days],
            "semester_start": "2026-09-07",
        },
        "tasks": tasks,
        "task_classes": [
            {
                "id": 10,
                "name": "复习",
                "strategy": "steady",
                "total_slots": 12,
                "allow_filler_course": False,
                "excluded_slots": banned_blocks or [],
                "excluded_days_of_week": banned_weekdays or [],
                "start_date": "2026-09-07",
                "end_date": "2026-09-13",
            }
        ],
    }
    return ScheduleState.model_validate(data)


@st.composite
def tiny_windows(draw: st.DrawFn, *, max_pending: int = 5) -> ScheduleState:
    """1-3 days of 3-6 periods: courses, embeddable hosts (some with guests, some locked),
    movable suggested tasks, task classes with day windows and banned periods, pending tasks."""
    days = draw(st.integers(1, 3))
    spd = draw(st.integers(3, 6))
    while days * spd > 14:
        spd -= 1
    tasks: list[dict[str, Any]] = []
    host_ids: list[int] = []
    for day in range(1, days + 1):
        slot = 1
        while slot <= spd:
            kind = draw(
                st.sampled_from(["free", "free", "course", "host", "locked_host", "suggested"])
            )
            length = draw(st.integers(1, min(3, spd - slot + 1)))
            block = {"day": day, "slot_start": slot, "slot_end": slot + length - 1}
            if kind == "free":
                slot += draw(st.integers(1, 2))
                continue
            if kind == "course":
                tasks.append(
                    {
                        "source": "event",
                        "category": "课程",
                        "status": "existing",
                        "locked": True,
                        "slots": [block],
                    }
                )
            elif kind in ("host", "locked_host"):
                tasks.append(
                    {
                        "source": "event",
                        "category": "课程",
                        "status": "existing",
                        "locked": kind == "locked_host",
                        "can_embed": True,
                        "slots": [block],
                    }
                )
                host_ids.append(len(tasks))
                if kind == "host" and draw(st.booleans()) and draw(st.booleans()):
                    glen = draw(st.integers(1, length))
                    tasks.append(
                        {
                            "status": "existing",
                            "category_id": 12,
                            "embed_host": len(tasks),
                            "slots": [
                                {"day": day, "slot_start": slot, "slot_end": slot + glen - 1}
                            ],
                        }
                    )
            else:
                tasks.append(
                    {
                        "status": "suggested",
                        "category_id": draw(st.sampled_from(CATEGORY_IDS)),
                        "slots": [block],
                    }
                )
            slot += length
    classes = []
    for cid in draw(st.lists(st.sampled_from(CLASS_IDS), unique=True, max_size=2)):
        start = draw(st.integers(1, days))
        end = draw(st.integers(start, days))
        banned = draw(st.lists(st.integers(1, spd), unique=True, max_size=2))
        classes.append(
            {
                "id": cid,
                "name": f"c{cid}",
                "start_day": start,
                "end_day": end,
                "excluded_periods": banned,
            }
        )
    for _ in range(draw(st.integers(0, max_pending))):
        tasks.append(
            {
                "status": "pending",
                "duration": draw(st.integers(1, min(3, spd))),
                "category_id": draw(st.sampled_from(CATEGORY_IDS)),
                "can_embed": draw(st.sampled_from([False, False, False, True])),
            }
        )
    return make_state(days, spd, tasks, classes)


@dataclass
class OracleAnswer:
    best: int
    required: int
    placement: list[tuple[int, int, int]]  # (task_id, day, slot_start)
    replanned: list[int]  # suggested tasks in scope (re-planned; unplaced if not placed)


@dataclass
class Options:
    """Every place of every scope task, found from the task list alone."""

    scope: list[Any]  # the scope tasks, in state order
    durations: list[int]
    options: list[list[tuple[int, int, int | None]]]  # per task: (day, start, host block idx)
    busy: set[tuple[int, int]]
    host_blocks: list[tuple[int, int, int, int]]  # (day, start, end, host task id)


def scope_options(
    state: ScheduleState, include_suggested: bool = False, allow_late: bool = False
) -> Options:
    """The scope (pending tasks, optionally the movable suggested ones) and every place each
    may take: free periods or a free embeddable host block, inside its class's days (to the
    window's end with ``allow_late``) and off its banned periods."""
    num_days, spd = state.window.total_days, state.window.slots_per_day
    guests_of: dict[int, list[int]] = {}
    for t in state.tasks:
        if t.embed_host is not None:
            guests_of.setdefault(t.embed_host, []).append(t.state_id)

    def movable(t: Any) -> bool:
        host = state.task(t.embed_host) if t.embed_host is not None else None
        return (
            t.status == "suggested"
            and not t.locked
            and not (host and host.locked)
            and len(t.slots) == 1
            and not t.can_embed
            and t.state_id not in guests_of
            and t.source != "event"
        )

    scope = [t for t in state.tasks if t.status == "pending" or (include_suggested and movable(t))]
    scope_ids = {t.state_id for t in scope}
    busy: set[tuple[int, int]] = set()
    guest_cells: set[tuple[int, int]] = set()
    for t in state.tasks:
        if t.state_id in scope_ids:
            continue
        for b in t.slots:
            cells = {(b.day, s) for s in range(b.slot_start, b.slot_end + 1)}
            (guest_cells if t.embed_host is not None else busy).update(cells)
    host_blocks = []  # (day, start, end, host)
    for t in state.tasks:
        if t.can_embed and not t.locked and t.state_id not in scope_ids:
            for b in t.slots:
                if not any((b.day, s) in guest_cells for s in range(b.slot_start, b.slot_end + 1)):
                    host_blocks.append((b.day, b.slot_start, b.slot_end, t.state_id))
    classes = {c.id: c for c in state.task_classes}

    options: list[list[tuple[int, int, int | None]]] = []  # per task: (day, start, host idx)
    for t in scope:
        d = t.duration if t.status == "pending" else t.slots[0].length
        c = classes.get(t.category_id) if t.category_id is not None else None
        opts: list[tuple[int, int, int | None]] = []
        for day in range(1, num_days + 1):
            last = num_days if c is None or allow_late else (c.end_day or num_days)
            if c is not None and not ((c.start_day or 1) <= day <= last):
                continue
            for s in range(1, spd - d + 2):
                cells = [(day, p) for p in range(s, s + d)]
                if c is not None and any(p in c.excluded_periods for _, p in cells):
                    continue
                if not any(cell in busy for cell in cells):
                    opts.append((day, s, None))
                if not t.can_embed:
                    for hi, (hd, hs, he, _) in enumerate(host_blocks):
                        if hd == day and hs <= s and s + d - 1 <= he:
                            opts.append((day, s, hi))
        options.append(opts)
    durations = [t.duration if t.status == "pending" else t.slots[0].length for t in scope]
    return Options(scope, durations, options, busy, host_blocks)


def oracle(state: ScheduleState, include_suggested: bool = False) -> OracleAnswer:
    """Maximum placeable periods by trying every combination (tiny windows only)."""
    found = scope_options(state, include_suggested)
    scope, durations, options, busy = found.scope, found.durations, found.options, found.busy
    required = sum(durations)
    best = [-1, []]

    def dfs(
        i: int,
        used: set[tuple[int, int]],
        hosts: set[int],
        total: int,
        chosen: list[tuple[int, int, int]],
    ) -> None:
        if total + sum(durations[i:]) <= best[0]:
            return
        if i == len(scope):
            best[0], best[1] = total, list(chosen)
            return
        d = durations[i]
        for day, s, hi in options[i]:
            if hi is None:
                cells = {(day, p) for p in range(s, s + d)}
                if cells & used:
                    continue
                chosen.append((scope[i].state_id, day, s))
                dfs(i + 1, used | cells, hosts, total + d, chosen)
                chosen.pop()
            elif hi not in hosts:
                chosen.append((scope[i].state_id, day, s))
                dfs(i + 1, used, hosts | {hi}, total + d, chosen)
                chosen.pop()
        dfs(i + 1, used, hosts, total, chosen)

    dfs(0, set(busy), set(), 0, [])
    replanned = [t.state_id for t in scope if t.status != "pending"]
    return OracleAnswer(int(best[0]), required, list(best[1]), replanned)  # type: ignore[arg-type]


def apply_placements(
    state: ScheduleState,
    placements: list[Placement],
    replanned: list[int] | None = None,
    allow_late: bool = False,
) -> ScheduleState:
    """Apply placements to a copy through the real write path (all at once), self-checked.

    Re-planned suggested tasks that the placements leave out are unplaced first; ``allow_late``
    is the write path's own late permission (apply_proposal's ``allow_late``).
    """
    copy = state.copy_state()
    placed = {p.task_id for p in placements}
    for tid in replanned or []:
        if tid not in placed:
            assert unplace(copy, tid).ok
    if placements:
        result = relocate(
            copy,
            [Request(p.task_id, p.day, p.slot_start) for p in placements],
            op="place",
            allow_late=allow_late,
        )
        assert result.ok, result.refusal
        for p, change in zip(placements, result.changes, strict=True):
            assert change.embed_host_after == p.embed_host
            assert change.block_after is not None
            assert change.block_after.slot_end == p.slot_end
    self_check(copy)
    return copy


def maximum_placements(
    state: ScheduleState, include_suggested: bool = False, allow_late: bool = False
) -> tuple[int, list[list[Placement]]]:
    """The most periods the scope can place at once and every placement of that many (tasks
    that are interchangeable for every soft term, pending with the same duration, category and
    embeddability, are enumerated once per combination). Tiny windows only."""
    found = scope_options(state, include_suggested, allow_late)
    scope, durations, options = found.scope, found.durations, found.options
    hosts = found.host_blocks

    def signature(i: int) -> tuple[Any, ...] | None:
        t = scope[i]
        if t.status != "pending":
            return None
        return (durations[i], t.category_id, t.category, t.can_embed)

    same_as_previous = [
        i > 0 and signature(i) is not None and signature(i) == signature(i - 1)
        for i in range(len(scope))
    ]
    suffix = [sum(durations[i:]) for i in range(len(scope) + 1)]
    best = 0
    out: list[list[Placement]] = []

    def dfs(
        i: int,
        used: set[tuple[int, int]],
        taken: set[int],
        total: int,
        chosen: list[Placement],
        last: list[int],
    ) -> None:
        nonlocal best, out
        if total + suffix[i] < best:
            return
        if i == len(scope):
            if total > best:
                best, out = total, []
            out.append(list(chosen))
            return
        d = durations[i]
        tid = scope[i].state_id
        # Symmetry: an interchangeable task takes an option no earlier than its twin's
        # (option index len(options) stands for "left out", the last choice).
        first = last[i - 1] if same_as_previous[i] else 0
        for k in range(first, len(options[i]) + 1):
            last[i] = k
            if k == len(options[i]):
                dfs(i + 1, used, taken, total, chosen, last)
                continue
            day, s, hi = options[i][k]
            if hi is None:
                cells = {(day, p) for p in range(s, s + d)}
                if cells & used:
                    continue
                chosen.append(Placement(tid, day, s, s + d - 1))
                dfs(i + 1, used | cells, taken, total + d, chosen, last)
                chosen.pop()
            elif hi not in taken:
                chosen.append(Placement(tid, day, s, s + d - 1, hosts[hi][3]))
                dfs(i + 1, used, taken | {hi}, total + d, chosen, last)
                chosen.pop()

    dfs(0, set(found.busy), set(), 0, [], [0] * len(scope))
    return best, out


def best_health(
    state: ScheduleState,
    candidates: Iterable[list[Placement]],
    breaks: Callable[[ScheduleState, list[Placement]], list[str]],
) -> tuple[int, int, int]:
    """The least (critical, critical + warning) of analyze_health over the ``candidates``
    (placements of pending tasks) that overlap nowhere and that ``breaks`` (an independent
    checker of the class rules) finds nothing wrong with, and how many there are."""
    from smartflow_engine.analyzers import analyze_health

    best_c, best_cw, count = 10**6, 10**6, 0
    for pls in candidates:
        cells = {(p.day, q) for p in pls for q in range(p.slot_start, p.slot_end + 1)}
        if len(cells) < sum(p.length for p in pls) or breaks(state, pls):
            continue
        applied = state.copy_state()
        requests = [Request(p.task_id, p.day, p.slot_start) for p in pls]
        assert relocate(applied, requests, op="apply_proposal", status_after="suggested").ok
        signal = analyze_health(applied, time_limit_s=1.0).metrics["close_signal"]
        c, w = signal["critical"], signal["warning"]
        count += 1
        best_c, best_cw = min(best_c, c), min(best_cw, c + w)
    return best_c, best_cw, count


def class_item(state_id: int, order: int, duration: int = 4) -> dict[str, Any]:
    """A pending item of :func:`ordered_week`'s class 10 "复习" (``order`` its ``task_order``,
    ``duration`` periods), as a raw task row with source id ``1000 + order - 1``."""
    return {
        "state_id": state_id,
        "source": "task_item",
        "source_id": 1000 + order - 1,
        "name": f"复习{order}",
        "category": "复习",
        "status": "pending",
        "locked": False,
        "duration": duration,
        "task_order": order,
        "category_id": 10,
    }


def anchored_items(anchor_day: int) -> list[dict[str, Any]]:
    """:func:`daily_event` and class 10's items 1-4 (4 periods each): item 1 suggested and
    locked on ``anchor_day`` periods 1-4, items 2-4 pending (for :func:`ordered_week`)."""
    tasks = daily_event() + [class_item(10 + k, k + 1) for k in range(4)]
    tasks[-4].update(
        status="suggested", locked=True, slots=[{"day": anchor_day, "slot_start": 1, "slot_end": 4}]
    )
    return tasks


def daily_event(first: int = 9, last: int = 12, days: int = 7) -> list[dict[str, Any]]:
    """A locked event (a club, "社团") holding periods ``first``-``last`` on each of ``days``
    days, as raw task rows with ids 1..days (for :func:`ordered_week`)."""
    return [
        {
            "state_id": day,
            "source": "event",
            "source_id": 100 + day,
            "name": "社团",
            "category": "课程",
            "status": "existing",
            "locked": True,
            "slots": [{"day": day, "slot_start": first, "slot_end": last}],
        }
        for day in range(1, days + 1)
    ]
