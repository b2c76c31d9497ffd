"""Schedule state: the validated model, the occupancy grid and the pure write operations.

This sub-package imports nothing else of ``smartflow_engine``.
"""

from .calendar import Calendar, weekday_word
from .class_rules import Breach, ClassRule, ClassRules, Notice, order_key
from .grid import Grid, runs
from .model import (
    STATUSES,
    DayMapping,
    ScheduleState,
    SlotRange,
    StateError,
    Task,
    TaskClass,
    Window,
)
from .ops import (
    MAX_BATCH,
    REFUSAL_KINDS,
    Blocker,
    Change,
    OpResult,
    Refusal,
    Request,
    SelfCheckError,
    batch_move,
    host_blocks,
    move,
    place,
    relocate,
    rule_refusal,
    self_check,
    swap,
    unplace,
)

__all__ = [
    "MAX_BATCH",
    "REFUSAL_KINDS",
    "STATUSES",
    "Blocker",
    "Breach",
    "Calendar",
    "Change",
    "ClassRule",
    "ClassRules",
    "DayMapping",
    "Grid",
    "Notice",
    "OpResult",
    "Refusal",
    "Request",
    "ScheduleState",
    "SelfCheckError",
    "SlotRange",
    "StateError",
    "Task",
    "TaskClass",
    "Window",
    "batch_move",
    "host_blocks",
    "move",
    "order_key",
    "place",
    "relocate",
    "rule_refusal",
    "runs",
    "self_check",
    "swap",
    "unplace",
    "weekday_word",
]
