"""Frozen days (issue 28 item 1): days ``1..k`` of a window on which nothing moves and nothing new
lands.

:func:`frozen_view` turns a state into the one a solver should see: every task with a block on a
frozen day is locked, every free period of a frozen day is taken by a locked blocker, and every
host on a frozen day stops taking guests. Any search on the view (feasibility, proposals,
spreading, context switches) therefore treats the frozen days as fixed without knowing about them:
one place blocks the days for all of them. :func:`thaw` maps the view after a write back onto the
real tasks (the blockers dropped, the flags restored). :func:`touched_days` says which days a
simple write would touch, for the refusal of a write on a frozen day.
"""

from __future__ import annotations

from typing import Any

from .model import ScheduleState

BLOCKER_NAME = "冻结时段"
BLOCKER_SOURCE = "event"  # a blocker acts as a locked course (the sources are event and task_item)


def frozen_count(state: ScheduleState, until_day: int | None) -> int:
    """How many days are frozen: ``until_day`` capped to the window (0 when none)."""
    if not until_day or until_day < 1:
        return 0
    return min(int(until_day), state.num_days)


def frozen_view(state: ScheduleState, until_day: int) -> ScheduleState:
    """A copy of ``state`` whose days ``1..until_day`` no solver can change (see the module)."""
    data = state.to_dict()
    frozen = range(1, until_day + 1)
    guests = state.guests_by_host()
    for task in data["tasks"]:
        days = {b["day"] for b in task.get("slots") or ()}
        if not days.intersection(frozen):
            continue
        task["locked"] = True
        if task.get("can_embed") and not guests.get(task["state_id"]):
            task["can_embed"] = False
    next_id = max((t.state_id for t in state.tasks), default=0) + 1
    owner = state.grid.owner
    for day in frozen:
        slot = 1
        while slot <= state.slots_per_day:
            if owner[day - 1, slot - 1] != 0:
                slot += 1
                continue
            end = slot
            while end < state.slots_per_day and owner[day - 1, end] == 0:
                end += 1
            data["tasks"].append(
                {
                    "state_id": next_id,
                    "name": BLOCKER_NAME,
                    "source": BLOCKER_SOURCE,
                    "category": BLOCKER_NAME,
                    "status": "existing",
                    "locked": True,
                    "slots": [{"day": day, "slot_start": slot, "slot_end": end}],
                }
            )
            next_id += 1
            slot = end + 1
    return ScheduleState.model_validate(data)


def existing_fixed_view(state: ScheduleState) -> ScheduleState:
    """A copy of ``state`` in which no solver moves an ``existing`` task (issue 42 item 5: the
    student's existing entries are facts): each is locked, but for a water course, which keeps
    taking guests (no solver moves a water course). :func:`thaw` maps a write back."""
    data = state.to_dict()
    for task in data["tasks"]:
        if task["status"] == "existing" and not task.get("can_embed"):
            task["locked"] = True
    return ScheduleState.model_validate(data)


def thaw(view: ScheduleState, original: ScheduleState) -> ScheduleState:
    """The real state after a write on ``view``: its real tasks where the view put them, with
    the ``locked`` / ``can_embed`` flags of ``original``; the blockers dropped."""
    flags: dict[int, dict[str, Any]] = {t["state_id"]: t for t in original.to_dict()["tasks"]}
    data = view.to_dict()
    tasks = []
    for task in data["tasks"]:
        before = flags.get(task["state_id"])
        if before is None:
            continue  # a blocker
        for key in ("locked", "can_embed"):
            if key in before:
                task[key] = before[key]
            else:
                task.pop(key, None)
        tasks.append(task)
    data["tasks"] = tasks
    return ScheduleState.model_validate(data)


def task_days(state: ScheduleState, task_id: Any, day: Any = None) -> set[int]:
    """The days task ``task_id`` occupies (only ``day`` when given and occupied)."""
    task = state.task(task_id) if isinstance(task_id, int) else None
    if task is None:
        return set()
    days = {b.day for b in task.slots}
    if isinstance(day, int) and day in days:
        return {day}
    return days


def frozen_blocks(state: ScheduleState, until_day: int) -> list[tuple[Any, ...]]:
    """Every task with a block on days ``1..until_day``: id, status, blocks and host (to tell
    whether a write changed anything there)."""
    out: list[tuple[Any, ...]] = []
    for t in state.tasks:
        blocks = tuple((b.day, b.slot_start, b.slot_end) for b in t.slots)
        if any(day <= until_day for day, _, _ in blocks):
            out.append((t.state_id, t.status, blocks, t.embed_host))
    return sorted(out)
