"""Slow, obviously-correct pure-Python references of every analyzer metric.

They read the task list directly (no grid, no numpy) with plain loops over days and periods, and
return the same dicts as the numpy metric functions. The tests compare the two on random windows;
the benchmarks time the two side by side (``reference_*`` + the same issue rules).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from smartflow_engine.analyzers.load import PARTS, load_level
from smartflow_engine.rules import Level
from smartflow_engine.state import ScheduleState, Task


def _r4(x: float) -> float:
    return round(float(x), 4)


def _cells(state: ScheduleState) -> tuple[dict[tuple[int, int], Task], dict[tuple[int, int], Task]]:
    """(owner, guest): the task holding each (day, period), 1-based."""
    owner: dict[tuple[int, int], Task] = {}
    guest: dict[tuple[int, int], Task] = {}
    for task in state.tasks:
        target = guest if task.embed_host is not None else owner
        for block in task.slots:
            for slot in range(block.slot_start, block.slot_end + 1):
                target[(block.day, slot)] = task
    return owner, guest


def _week(state: ScheduleState, day: int) -> int:
    if state.window.day_mapping:
        return state.window.day_mapping[day - 1].week
    return 1 + (day - 1) // 7


def _kind(task: Task | None) -> str:
    if task is None:
        return "free"
    return "course" if task.source == "event" else "task"


def _subject(task: Task) -> str:
    return task.category or "未分类"


def reference_load(
    state: ScheduleState,
    days: Sequence[int],
    *,
    granularity: str = "day",
    detail: str = "summary",
    level: Level = "normal",
) -> dict[str, Any]:
    """``days`` are 1-based, ascending."""
    owner, _ = _cells(state)
    spd = state.slots_per_day

    def counts(day: int) -> tuple[int, int]:
        course = task = 0
        for slot in range(1, spd + 1):
            kind = _kind(owner.get((day, slot)))
            if kind == "course":
                course += 1
            elif kind == "task":
                task += 1
        return course, task

    rows = []
    for day in days:
        course, task = counts(day)
        total = course + task
        row: dict[str, Any] = {
            "day": day,
            "week": _week(state, day),
            "total_used": total,
            "course_used": course,
            "task_used": task,
            "utilization": _r4(total / spd),
        }
        for name, lo, hi in PARTS:
            last = spd if hi is None else min(hi, spd)
            row[name] = sum(1 for s in range(lo, last + 1) if (day, s) in owner)
        if day > 1:
            prev_course, prev_task = counts(day - 1)
            row["delta_from_prev"] = total - (prev_course + prev_task)
        else:
            row["delta_from_prev"] = None
        row["load_level"] = load_level(row["utilization"], level)
        rows.append(row)
    totals = [r["total_used"] for r in rows]
    total_used = sum(totals)
    capacity = len(days) * spd
    pending = [t for t in state.tasks if t.status == "pending"]
    peak = max(rows, key=lambda r: (r["total_used"], -r["day"]))
    valley = min(rows, key=lambda r: (r["total_used"], r["day"]))
    summary = {
        "days": len(days),
        "capacity": capacity,
        "total_used": total_used,
        "course_used": sum(r["course_used"] for r in rows),
        "task_used": sum(r["task_used"] for r in rows),
        "free_slots": capacity - total_used,
        "pending_count": len(pending),
        "pending_slots": sum(t.duration or 0 for t in pending),
        "utilization_rate": _r4(total_used / capacity),
        "mean_daily_load": _r4(total_used / len(days)),
        "peak": {"day": peak["day"], "total_used": peak["total_used"]},
        "valley": {"day": valley["day"], "total_used": valley["total_used"]},
        "load_std_dev": _r4(statistics.stdev(totals)) if len(totals) > 1 else 0.0,
        "load_range": max(totals) - min(totals),
    }
    out: dict[str, Any] = {"summary": summary, "days": rows}
    if granularity == "week" or detail == "full":
        weeks: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            weeks.setdefault(r["week"], []).append(r)
        out["weeks"] = []
        for week in sorted(weeks):
            members = weeks[week]
            used = sum(r["total_used"] for r in members)
            out["weeks"].append(
                {
                    "week": week,
                    "days": len(members),
                    "capacity": len(members) * spd,
                    "total_used": used,
                    "course_used": sum(r["course_used"] for r in members),
                    "task_used": sum(r["task_used"] for r in members),
                    "utilization": _r4(used / (len(members) * spd)),
                }
            )
    if granularity == "time_of_day" or detail == "full":
        tod = {}
        for name, lo, hi in PARTS:
            last = spd if hi is None else min(hi, spd)
            slots = range(lo, last + 1)
            kinds = [_kind(owner.get((d, s))) for d in days for s in slots]
            used = sum(1 for k in kinds if k != "free")
            cap = len(days) * len(slots)
            tod[name] = {
                "used": used,
                "course_used": kinds.count("course"),
                "task_used": kinds.count("task"),
                "capacity": cap,
                "utilization": _r4(used / cap) if cap else 0.0,
            }
        out["time_of_day"] = tod
    return out


def reference_subjects(
    state: ScheduleState,
    *,
    category: str | None = None,
    include_pending: bool = True,
    detail: str = "summary",
) -> dict[str, Any]:
    order: list[str] = []
    tasks: dict[str, list[Task]] = {}
    for task in state.tasks:
        if task.source == "event":
            continue
        name = _subject(task)
        if name not in tasks:
            order.append(name)
            tasks[name] = []
        tasks[name].append(task)
    rows = []
    for name in order:
        if category is not None and name != category:
            continue
        mine = tasks[name]
        placed = [t for t in mine if t.status != "pending"]
        pending = [t for t in mine if t.status == "pending"]
        if not include_pending and not placed:
            continue
        daily: dict[int, int] = {}
        for task in placed:
            for block in task.slots:
                daily[block.day] = daily.get(block.day, 0) + block.length
        present = sorted(daily)
        used = sum(daily.values())
        row: dict[str, Any] = {
            "category": name,
            "task_count": len(mine) if include_pending else len(placed),
            "placed": len(placed),
        }
        if include_pending:
            row["pending"] = len(pending)
        row["used_slots"] = used
        pending_slots = sum(t.duration or 0 for t in pending)
        if include_pending:
            row["pending_slots"] = pending_slots
        row["present_days"] = present
        gaps = [present[i + 1] - present[i] - 1 for i in range(len(present) - 1)]
        row["gaps"] = gaps
        row["avg_gap"] = _r4(statistics.mean(gaps)) if gaps else None
        row["max_gap"] = max(gaps) if gaps else None
        row["min_gap"] = min(gaps) if gaps else None
        row["std_gap"] = (_r4(statistics.stdev(gaps)) if len(gaps) > 1 else 0.0) if gaps else None
        blocks = sum(len(t.slots) for t in placed)
        n = min(blocks, state.num_days)
        if used == 0:
            row["concentration"] = None
        elif n <= 1:
            row["concentration"] = 0.0
        else:
            hhi = sum((v / used) ** 2 for v in daily.values())
            row["concentration"] = _r4(min(1.0, max(0.0, (hhi - 1 / n) / (1 - 1 / n))))
        tc = None
        for task in mine:
            for cls in state.task_classes:
                if tc is None and task.category_id is not None and cls.id == task.category_id:
                    tc = cls
        if tc is None:
            tc = next((c for c in state.task_classes if c.name == name), None)
        total = tc.total_slots if tc else None
        row["task_class_id"] = tc.id if tc else None
        row["total_slots"] = total
        row["budget_progress"] = _r4(used / total) if total else None
        if include_pending:
            row["planned_progress"] = _r4((used + pending_slots) / total) if total else None
        row["end_day"] = tc.end_day if tc else None
        row["days_to_end"] = tc.end_day - 1 if tc and tc.end_day is not None else None
        if detail == "full":
            row["daily_slots"] = [{"day": d, "slots": daily[d]} for d in present]
        rows.append(row)
    if not rows:
        return {}
    summary: dict[str, Any] = {
        "subject_count": len(rows),
        "task_count": sum(r["task_count"] for r in rows),
        "placed": sum(r["placed"] for r in rows),
        "used_slots": sum(r["used_slots"] for r in rows),
    }
    if include_pending:
        summary["pending"] = sum(r["pending"] for r in rows)
    return {"summary": summary, "subjects": rows}


def _study_sequence(
    state: ScheduleState,
    owner: dict[tuple[int, int], Task],
    guest: dict[tuple[int, int], Task],
    day: int,
) -> list[str | None]:
    seq: list[str | None] = []
    for slot in range(1, state.slots_per_day + 1):
        task = guest.get((day, slot)) or owner.get((day, slot))
        seq.append(_subject(task) if task is not None and task.source != "event" else None)
    return seq


def reference_context(
    state: ScheduleState,
    days: Sequence[int],
    *,
    hard_categories: Sequence[str] = (),
    detail: str = "summary",
) -> dict[str, Any]:
    owner, guest = _cells(state)
    hard = set(hard_categories)
    rows = []
    all_blocks: list[tuple[int, str, int, int]] = []  # day, category, start, end
    for day in days:
        seq = _study_sequence(state, owner, guest, day)
        occupied = sum(1 for c in seq if c is not None)
        if occupied == 0:
            continue
        switches = heavy = 0
        pairs = []
        for s in range(len(seq) - 1):
            a, b = seq[s], seq[s + 1]
            if a is not None and b is not None and a != b:
                switches += 1
                is_heavy = a in hard and b in hard
                heavy += is_heavy
                pairs.append({"slot": s + 1, "categories": [a, b], "heavy": is_heavy})
        blocks = []
        s = 0
        while s < len(seq):
            if seq[s] is None:
                s += 1
                continue
            e = s
            while e + 1 < len(seq) and seq[e + 1] == seq[s]:
                e += 1
            blocks.append({"category": seq[s], "slot_start": s + 1, "slot_end": e + 1})
            all_blocks.append((day, str(seq[s]), s + 1, e + 1))
            s = e + 1
        row: dict[str, Any] = {
            "day": day,
            "occupied_slots": occupied,
            "switch_count": switches,
            "fragmentation": _r4(switches / max(occupied - 1, 1)),
            "block_count": len(blocks),
            "heavy_adjacent": heavy,
        }
        if detail == "day_detail":
            row["sequence"] = seq
            row["blocks"] = blocks
            row["adjacent_pairs"] = pairs
        rows.append(row)
    if not rows:
        return {}
    study_slots = sum(r["occupied_slots"] for r in rows)
    total = sum(r["switch_count"] for r in rows)
    longest = max(all_blocks, key=lambda b: b[3] - b[2])  # max() keeps the first of equals
    return {
        "overall": {
            "days": len(days),
            "active_days": len(rows),
            "study_slots": study_slots,
            "total_switches": total,
            "avg_daily_switches": _r4(total / len(rows)),
            "max_daily_switches": max(r["switch_count"] for r in rows),
            "block_count": len(all_blocks),
            "avg_block_length": _r4(study_slots / len(all_blocks)),
            "longest_block": {
                "day": longest[0],
                "category": longest[1],
                "slot_start": longest[2],
                "slot_end": longest[3],
                "length": longest[3] - longest[2] + 1,
            },
            "heavy_adjacent": sum(r["heavy_adjacent"] for r in rows),
        },
        "days": rows,
    }


def reference_tolerance(
    state: ScheduleState,
    days: Sequence[int],
    *,
    min_usable_size: int = 2,
    min_daily_buffer: int = 2,
    detail: str = "summary",
) -> dict[str, Any]:
    owner, _ = _cells(state)
    spd = state.slots_per_day
    rows: list[dict[str, Any]] = []
    for day in days:
        blocks: list[dict[str, Any]] = []
        s = 1
        while s <= spd:
            if (day, s) in owner:
                s += 1
                continue
            e = s
            while e + 1 <= spd and (day, e + 1) not in owner:
                e += 1
            n = e - s + 1
            blocks.append(
                {
                    "slot_start": s,
                    "slot_end": e,
                    "length": n,
                    "usable": n >= min_usable_size,
                    "before": "edge" if s == 1 else _kind(owner[(day, s - 1)]),
                    "after": "edge" if e == spd else _kind(owner[(day, e + 1)]),
                }
            )
            s = e + 1
        free = sum(b["length"] for b in blocks)
        usable = sum(b["length"] for b in blocks if b["usable"])
        row: dict[str, Any] = {
            "day": day,
            "free_slots": free,
            "usable_slots": usable,
            "fragmented_slots": free - usable,
            "largest_free_block": max((b["length"] for b in blocks), default=0),
            "buffer_sufficient": usable >= min_daily_buffer,
        }
        if detail == "full":
            row["free_blocks"] = blocks
        rows.append(row)
    total_free = sum(r["free_slots"] for r in rows)
    usable = sum(r["usable_slots"] for r in rows)
    with_buffer = sum(1 for r in rows if r["buffer_sufficient"])
    return {
        "overall": {
            "days": len(days),
            "total_free": total_free,
            "usable_slots": usable,
            "fragmented_slots": total_free - usable,
            "fragmentation_rate": _r4((total_free - usable) / total_free) if total_free else 0.0,
            "days_without_buffer": len(days) - with_buffer,
            "days_with_buffer": with_buffer,
            "largest_free_block": max(r["largest_free_block"] for r in rows),
            "min_usable_size": min_usable_size,
            "min_daily_buffer": min_daily_buffer,
        },
        "days": rows,
    }


def reference_core(
    state: ScheduleState, *, min_usable_size: int = 2, min_daily_buffer: int = 2
) -> dict[str, Any]:
    """The batch entry point's core metrics of one window, by loops (unrounded)."""
    owner, _ = _cells(state)
    spd = state.slots_per_day
    used, course, free, usable, short = [], 0, 0, 0, 0
    for day in range(1, state.num_days + 1):
        kinds = [_kind(owner.get((day, s))) for s in range(1, spd + 1)]
        used.append(sum(1 for k in kinds if k != "free"))
        course += kinds.count("course")
        run, day_usable = 0, 0
        for k in [*kinds, "end"]:
            if k == "free":
                run += 1
                continue
            if run >= min_usable_size:
                day_usable += run
            run = 0
        free += kinds.count("free")
        usable += day_usable
        short += day_usable < min_daily_buffer
    total = sum(used)
    return {
        "total_used": total,
        "course_used": course,
        "task_used": total - course,
        "utilization_rate": total / (state.num_days * spd),
        "load_std_dev": statistics.stdev(used) if len(used) > 1 else 0.0,
        "load_range": max(used) - min(used),
        "peak_load": max(used),
        "total_free": free,
        "usable_slots": usable,
        "fragmented_slots": free - usable,
        "fragmentation_rate": (free - usable) / free if free else 0.0,
        "days_without_buffer": short,
    }
