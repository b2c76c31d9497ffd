"""Schedule state: the validated model, the occupancy grid and the pure write operations.

This sub-package imports nothing else of ``smartflow_engine``.
"""

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
    self_check,
    swap,
    unplace,
)

__all__ = [
    "MAX_BATCH",
    "REFUSAL_KINDS",
    "STATUSES",
    "Blocker",
    "Change",
    "DayMapping",
    "Grid",
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
    "place",
    "relocate",
    "runs",
    "self_check",
    "swap",
    "unplace",
]
