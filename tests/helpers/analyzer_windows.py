"""Random and hand-built windows for the analyzer tests (shared helpers)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from smartflow_engine import ScheduleState

CATEGORIES = ["复习", "作业", "实验", "", "阅读"]
COURSES = ["高等数学", "大学英语", "思政（水课）"]


def random_window(
    seed: int, num_days: int, spd: int, density: float, with_mapping: bool = True
) -> ScheduleState:
    """A window with courses (multi-block, some embeddable), placed study tasks (some locked,
    some multi-block), guests inside water courses, pending tasks and task classes."""
    rng = np.random.default_rng(seed)
    tasks: list[dict[str, Any]] = []
    courses: list[dict[str, Any]] = []
    for i, name in enumerate(COURSES):
        water = i == 2
        course: dict[str, Any] = {
            "state_id": i + 1,
            "source": "event",
            "source_id": 100 + i,
            "name": name,
            "category": "课程",
            "status": "existing",
            "locked": not water,
            "slots": [],
        }
        if water:
            course["can_embed"] = True
        courses.append(course)
    next_id = len(COURSES) + 1
    guests: list[dict[str, Any]] = []
    multi: dict[str, Any] | None = None
    for day in range(1, num_days + 1):
        slot = 1
        while slot <= spd:
            if rng.random() >= density:
                slot += 1
                continue
            length = int(min(rng.integers(1, 5), spd - slot + 1))
            block = {"day": day, "slot_start": slot, "slot_end": slot + length - 1}
            if rng.random() < 0.3:
                course = courses[int(rng.integers(len(courses)))]
                if all(b["day"] != day or b["slot_end"] < slot for b in course["slots"]):
                    course["slots"].append(block)
                    if course.get("can_embed") and rng.random() < 0.6:
                        g0 = slot + int(rng.integers(length))
                        g1 = g0 + int(rng.integers(slot + length - g0))
                        guests.append({"day": day, "slot_start": g0, "slot_end": g1})
                    slot += length
                    continue
            category = CATEGORIES[int(rng.integers(len(CATEGORIES)))]
            if (
                multi is not None
                and multi["category"] == category
                and rng.random() < 0.3
                and all(b["day"] != day for b in multi["slots"])
            ):
                multi["slots"].append(block)
            else:
                task: dict[str, Any] = {
                    "state_id": next_id,
                    "source": "task_item",
                    "source_id": 500 + next_id,
                    "name": f"任务{next_id}",
                    "category": category,
                    "status": "suggested" if rng.random() < 0.7 else "existing",
                    "locked": bool(rng.random() < 0.1),
                    "slots": [block],
                }
                if category:
                    task["category_id"] = 10 + CATEGORIES.index(category)
                tasks.append(task)
                next_id += 1
                if multi is None and rng.random() < 0.2:
                    multi = task
            slot += length
    for course in courses:
        if course["slots"]:
            tasks.append(course)
    for g in guests:
        category = CATEGORIES[int(rng.integers(len(CATEGORIES)))]
        tasks.append(
            {
                "state_id": next_id,
                "source": "task_item",
                "source_id": 500 + next_id,
                "name": f"嵌入{next_id}",
                "category": category,
                "status": "suggested",
                "slots": [g],
                "embed_host": 3,
            }
        )
        next_id += 1
    for _ in range(int(rng.integers(0, 5))):
        category = CATEGORIES[int(rng.integers(len(CATEGORIES)))]
        tasks.append(
            {
                "state_id": next_id,
                "source": "task_item",
                "source_id": 500 + next_id,
                "name": f"待办{next_id}",
                "category": category or "只待办",
                "status": "pending",
                "duration": int(rng.integers(1, spd + 1)),
            }
        )
        next_id += 1
    classes = []
    for i, category in enumerate(CATEGORIES):
        if category and rng.random() < 0.6:
            start = int(rng.integers(1, num_days + 1))
            classes.append(
                {
                    "id": 10 + i,
                    "name": category,
                    "total_slots": int(rng.integers(0, 30)),
                    "start_day": start,
                    "end_day": int(rng.integers(start, num_days + 1)),
                }
            )
    window: dict[str, Any] = {"total_days": num_days, "slots_per_day": spd}
    if with_mapping:
        first_week, first_dow = int(rng.integers(1, 20)), int(rng.integers(1, 8))
        window["day_mapping"] = [
            {
                "day_index": d,
                "week": first_week + (first_dow - 1 + d - 1) // 7,
                "day_of_week": (first_dow - 1 + d - 1) % 7 + 1,
            }
            for d in range(1, num_days + 1)
        ]
    return ScheduleState.model_validate({"window": window, "tasks": tasks, "task_classes": classes})


@st.composite
def windows(
    draw: st.DrawFn, max_days: int = 16, slots: tuple[int, ...] = (1, 3, 4, 6, 12, 16)
) -> ScheduleState:
    """Random windows for the property tests."""
    return random_window(
        draw(st.integers(0, 2**32 - 1)),
        draw(st.integers(1, max_days)),
        draw(st.sampled_from(slots)),
        draw(st.floats(0.0, 1.0)),
        draw(st.booleans()),
    )


def build(
    num_days: int,
    tasks: list[dict[str, Any]],
    *,
    spd: int = 12,
    classes: list[dict[str, Any]] | None = None,
) -> ScheduleState:
    """A hand-built window: ``tasks`` are (kind, category, day, start, end) tuples or dicts."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(tasks, start=1):
        if isinstance(item, dict):
            out.append({"state_id": i, "source_id": i, **item})
            continue
        kind, category, day, start, end = item
        task: dict[str, Any] = {
            "state_id": i,
            "source_id": i,
            "name": f"t{i}",
            "category": category,
            "status": "existing" if kind == "course" else "suggested",
            "source": "event" if kind == "course" else "task_item",
            "locked": kind == "course",
        }
        if kind == "pending":
            task["status"] = "pending"
            task["duration"] = end - start + 1
        else:
            task["slots"] = [{"day": day, "slot_start": start, "slot_end": end}]
        out.append(task)
    return ScheduleState.model_validate(
        {
            "window": {"total_days": num_days, "slots_per_day": spd},
            "tasks": out,
            "task_classes": classes or [],
        }
    )


PROFILE_LEVELS = ("low", "medium", "high", None)


def with_profiles(state: ScheduleState, seed: int) -> ScheduleState:
    """``state`` with a random profile (``difficulty_level`` / ``cognitive_intensity``, some
    high: hard classes, issue 42) on each task class, and a class for each category that has
    none yet (so most subjects may be hard)."""
    rng = np.random.default_rng(seed)
    data = state.to_dict()
    classes = data.setdefault("task_classes", [])
    known = {c["id"] for c in classes}
    for t in data["tasks"]:
        cid = t.get("category_id")
        if cid is not None and cid not in known:
            known.add(cid)
            classes.append({"id": cid, "name": t.get("category") or f"c{cid}"})
    for c in classes:
        for key in ("difficulty_level", "cognitive_intensity"):
            level = PROFILE_LEVELS[int(rng.integers(len(PROFILE_LEVELS)))]
            if level is None:
                c.pop(key, None)
            else:
                c[key] = level
    return ScheduleState.model_validate(data)
