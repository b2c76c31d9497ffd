"""The domain concepts under the health rules, each defined once (issue 25 item 3).

It sits beside :mod:`.rules` (below the analyzers and the solver; it reads the state model only)
so that every place that asks "is this a study task", "what subject is this", "may this task
move" or "is this a context switch" gets the spec's one answer:

- an **event** is a task with ``source == "event"`` (courses and other calendar events: the
  timetable's fixed content); a **study task** is every other task (``source == "task_item"``);
- the **subject** of a study task is its category, ``未分类`` when it has none; an event has no
  subject (p1 §4.4: subjects are the categories of study tasks);
- a study task is **movable** when a write may place it or move it: it is not locked, by its
  own flag or (a guest) by its host's (lock inheritance). Two named variants narrow it where the
  callers truly differ:

  * :func:`movable_by_tools`: what one ``move`` / ``place`` call can do to it: pending, or placed
    with at most one block a day (a block of a task with several is moved with ``from_day``)
    and holding no guest (a host block with a guest is refused ``has_guest``);
  * :func:`movable_by_solver`: what a proposal may re-plan: placed with exactly one block, not
    an embeddable host, holding no guest;

- a **context switch** is two adjacent periods of one day holding two different subjects in
  the study layer (a guest's subject replaces its host's period; an event or a free period holds
  no subject and breaks the sequence; p1 §4.5).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .state import ScheduleState, Task, TaskClass

UNCATEGORISED = "未分类"  # the subject of a study task without a category


def is_event(task: Task) -> bool:
    """A course or another calendar event (fixed content of the timetable)."""
    return task.source == "event"


def is_study(task: Task) -> bool:
    """A study task (every task that is not an event)."""
    return task.source != "event"


def subject_of(task: Task) -> str | None:
    """The subject of a study task (its category, ``未分类`` without one); ``None`` for an event."""
    if task.source == "event":
        return None
    return task.category or UNCATEGORISED


def movable(state: ScheduleState, task: Task) -> bool:
    """A study task a write may place or move: not locked by its own flag or its host's."""
    return task.source != "event" and not state.is_locked(task)


def movable_by_tools(state: ScheduleState, task: Task, hosts: Container[int] | None = None) -> bool:
    """:func:`movable`, and one ``place`` / ``move`` call can move it: pending, or placed with at
    most one block a day and no guest embedded in it.

    ``hosts``: the ids of tasks that hold a guest (``state.guests_by_host()``), when the caller
    asks about many tasks of one state (computed here otherwise, a pass over every task)."""
    if not movable(state, task):
        return False
    if task.status == "pending":
        return True
    days = [b.day for b in task.slots]
    if not days or len(set(days)) != len(days):
        return False
    return task.state_id not in (state.guests_by_host() if hosts is None else hosts)


def movable_by_solver(
    state: ScheduleState, task: Task, hosts: Container[int] | None = None
) -> bool:
    """:func:`movable`, and a proposal may re-plan it: placed with exactly one block, not an
    embeddable host, no guest embedded in it (``hosts`` as in :func:`movable_by_tools`)."""
    if task.status == "pending" or len(task.slots) != 1 or task.can_embed:
        return False
    if not movable(state, task):
        return False
    return task.state_id not in (state.guests_by_host() if hosts is None else hosts)


def is_switch(left: object | None, right: object | None) -> bool:
    """Adjacent periods holding subjects ``left`` and ``right`` (``None`` / 0: no subject) are a
    context switch: both hold one and they differ."""
    return bool(left) and bool(right) and left != right


__all__ = [
    "UNCATEGORISED",
    "hard_subjects",
    "is_event",
    "is_hard_class",
    "is_study",
    "is_switch",
    "movable",
    "movable_by_solver",
    "movable_by_tools",
    "subject_of",
]


def is_hard_class(tc: TaskClass) -> bool:
    """Cognitive load (issue 42 item 4, the reference system's profile): a task class is hard
    when its ``difficulty_level`` or its ``cognitive_intensity`` is ``high``. Two hard items of
    different subjects back to back on a day are one ``heavy_adjacent`` pair (p1 §4.5);
    :mod:`.rules` re-exports it beside the rule."""
    return tc.difficulty_level == "high" or tc.cognitive_intensity == "high"


def hard_subjects(state: ScheduleState, named: Iterable[str] = ()) -> frozenset[str]:
    """The subjects that are hard (issue 42 item 4): those of a task class that is hard by its
    profile (:func:`is_hard_class`) — the subjects of its tasks and its own name — and
    the subjects ``named`` (a caller's ``hard_categories``)."""
    hard = {tc.id for tc in state.task_classes if is_hard_class(tc)}
    out = set(named)
    if not hard:
        return frozenset(out)
    out.update(tc.name for tc in state.task_classes if tc.id in hard)
    for t in state.tasks:
        if t.task_class_id in hard and (subject := subject_of(t)) is not None:
            out.add(subject)
    return frozenset(out)
