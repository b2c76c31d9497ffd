"""What every analyzer reads: numpy arrays derived once from a state, and parameter checks.

Layers (a decision the spec leaves open, see the README):

- the *event layer* ("course" in the metrics) is every period held by a task with
  ``source == "event"`` (courses and other calendar events);
- the *task layer* is every period held by any other task (study tasks, ``source == "task_item"``);
- guests add nothing to occupancy (DESIGN.md), but in the *study layer* a guest's category
  replaces its host's period: the student studies there.

Subjects are the categories of study tasks (``source == "task_item"``), coded as every health
view codes them (:func:`..health_facts.subject_codes`, :func:`..concepts.subject_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..concepts import is_event, movable
from ..health_facts import subject_codes
from ..rules import LEVELS, Level
from ..state import ScheduleState, Task
from .result import ParamError

FREE, COURSE, TASK = 0, 1, 2


def is_course(task: Task) -> bool:
    """An event (course): :func:`..concepts.is_event`."""
    return is_event(task)


@dataclass
class Frame:
    """Arrays over the window, all ``(days, slots)`` with 0-based indices.

    ``kind``: 0 free, 1 event layer, 2 task layer. ``study``: 1-based code into ``subjects``
    of the study task doing the period (guest first), 0 for none.
    """

    state: ScheduleState
    kind: np.ndarray
    study: np.ndarray
    subjects: list[str]
    weeks: np.ndarray  # (days,) week number of each day

    @classmethod
    def build(cls, state: ScheduleState) -> Frame:
        grid = state.grid
        codes = subject_codes(state.tasks)  # the subjects, as every health view codes them
        owner = grid.owner
        owner_code = codes.of_ids(owner)  # every study task has a code >= 1, an event 0
        # FREE 0, COURSE 1 (occupied), TASK 2 (occupied by a task with a subject)
        kind = (owner != 0).view(np.int8) + (owner_code > 0).view(np.int8)
        study = codes.study_layer(owner, grid.guest)
        subjects = codes.names
        return cls(state, kind, study, subjects, week_numbers(state))

    @property
    def num_days(self) -> int:
        return int(self.kind.shape[0])

    @property
    def slots_per_day(self) -> int:
        return int(self.kind.shape[1])


def week_numbers(state: ScheduleState) -> np.ndarray:
    """The week of each day: from ``day_mapping`` when given, else ``1 + (day - 1) // 7``."""
    if state.window.day_mapping:
        return np.array([dm.week for dm in state.window.day_mapping], dtype=np.int64)
    return 1 + np.arange(state.num_days, dtype=np.int64) // 7


# ---------------------------------------------------------------------------------- parameters
def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ParamError(
            "invalid_args", f"参数 {name} 取值无效（可选：{'/'.join(choices)}），收到 {value!r}。"
        )
    return value


def check_level(value: Any) -> Level:
    """``value`` as a level (``strict``, ``normal`` or ``relaxed``), else the refusal."""
    check_choice("threshold", value, LEVELS)  # the refusal of anything else
    return next(level for level in LEVELS if level == value)


def check_int(name: str, value: Any, *, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError("invalid_args", f"参数 {name} 应为整数，收到 {value!r}。")
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParamError("invalid_args", f"参数 {name} 应为布尔值，收到 {value!r}。")
    return value


def check_day(state: ScheduleState, name: str, value: Any) -> int | None:
    day = check_int(name, value)
    if day is not None and not 1 <= day <= state.num_days:
        raise ParamError(
            "out_of_range", f"参数 {name}={day} 超出规划窗口（第1-{state.num_days}天）。"
        )
    return day


SCOPES: tuple[str, ...] = ("full", "week", "day_range")


def resolve_days(
    state: ScheduleState,
    *,
    scope: Any = None,
    week_from: Any = None,
    week_to: Any = None,
    day_from: Any = None,
    day_to: Any = None,
) -> np.ndarray:
    """The selected days, 0-based and ascending.

    ``scope=None`` is inferred from the bounds given (days, then weeks, else ``full``); an explicit
    ``full`` refuses bounds; ``day_range`` needs both days (spec); ``week`` defaults its missing
    bounds to the window's first and last week.
    """
    if scope is not None:
        check_choice("scope", scope, SCOPES)
    d0, d1 = check_day(state, "day_from", day_from), check_day(state, "day_to", day_to)
    w0, w1 = check_int("week_from", week_from), check_int("week_to", week_to)
    has_days, has_weeks = d0 is not None or d1 is not None, w0 is not None or w1 is not None
    if scope is None:
        if has_days and has_weeks:
            raise ParamError("invalid_args", "day_from/day_to 与 week_from/week_to 不能同时给出。")
        scope = "day_range" if has_days else "week" if has_weeks else "full"
        if scope == "day_range":
            d0 = 1 if d0 is None else d0
            d1 = state.num_days if d1 is None else d1
    if scope == "full":
        if has_days or has_weeks:
            raise ParamError(
                "invalid_args", "scope=full 时不接受 day_from/day_to/week_from/week_to。"
            )
        return np.arange(state.num_days)
    if scope == "day_range":
        if has_weeks:
            raise ParamError("invalid_args", "scope=day_range 时不接受 week_from/week_to。")
        if d0 is None or d1 is None:
            raise ParamError("invalid_args", "scope=day_range 时 day_from 和 day_to 必填。")
        if d0 > d1:
            raise ParamError("invalid_args", f"day_from={d0} 大于 day_to={d1}。")
        return np.arange(d0 - 1, d1)
    if has_days:
        raise ParamError("invalid_args", "scope=week 时不接受 day_from/day_to。")
    weeks = week_numbers(state)
    lo, hi = int(weeks.min()), int(weeks.max())
    for name, w in (("week_from", w0), ("week_to", w1)):
        if w is not None and not lo <= w <= hi:
            raise ParamError("out_of_range", f"参数 {name}={w} 超出规划窗口（第{lo}-{hi}周）。")
    w0 = lo if w0 is None else w0
    w1 = hi if w1 is None else w1
    if w0 > w1:
        raise ParamError("invalid_args", f"week_from={w0} 大于 week_to={w1}。")
    return np.flatnonzero((weeks >= w0) & (weeks <= w1))


def movable_study_tasks(state: ScheduleState) -> list[Task]:
    """Placed, unlocked study tasks that hold periods of their own (not guests)."""
    return [
        t
        for t in state.tasks
        if t.status != "pending" and t.embed_host is None and movable(state, t)
    ]


def movable_days(state: ScheduleState) -> dict[int, list[Task]]:
    """Day (1-based) → the movable study tasks with a block there."""
    out: dict[int, list[Task]] = {}
    for task in movable_study_tasks(state):
        for b in task.slots:
            out.setdefault(b.day, []).append(task)
    return out
