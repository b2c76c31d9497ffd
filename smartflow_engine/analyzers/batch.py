"""Core load and tolerance metrics for a stack of windows ``(n, days, slots)`` in one pass.

For backends that audit many users at once, and for the benchmarks. Each day's free periods are
packed into one integer (``np.packbits``), and per-day facts (free count, usable count for a
given ``min_usable_size``) come from a lookup table over every possible day, so the work per
window is a handful of array operations on ``days`` integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

import numpy as np

from ..state import ScheduleState, runs
from .frame import COURSE, FREE, Frame

_LUT_MAX_SLOTS = 16  # 2**16 lookup entries; wider days use the run-based path


@dataclass
class BatchCoreMetrics:
    """One ``(n,)`` array per metric, same formulas as the single-window analyzers."""

    total_used: np.ndarray
    course_used: np.ndarray
    task_used: np.ndarray
    utilization_rate: np.ndarray
    load_std_dev: np.ndarray
    load_range: np.ndarray
    peak_load: np.ndarray
    total_free: np.ndarray
    usable_slots: np.ndarray
    fragmented_slots: np.ndarray
    fragmentation_rate: np.ndarray
    days_without_buffer: np.ndarray

    def __len__(self) -> int:
        return int(self.total_used.shape[0])

    def row(self, i: int) -> dict[str, Any]:
        """Window ``i``'s metrics as plain Python numbers."""
        return {f.name: getattr(self, f.name)[i].item() for f in fields(self)}


def stack_kinds(states: Sequence[ScheduleState]) -> np.ndarray:
    """The ``(n, days, slots)`` int8 stack of 0 free / 1 event layer / 2 task layer."""
    if not states:
        raise ValueError("stack_kinds needs at least one state")
    shape = (states[0].num_days, states[0].slots_per_day)
    for i, state in enumerate(states):
        if (state.num_days, state.slots_per_day) != shape:
            raise ValueError(f"state {i} has shape {(state.num_days, state.slots_per_day)}, "
                             f"the first has {shape}")
    return np.stack([Frame.build(s).kind.astype(np.int8) for s in states])


def _bit_table(slots: int) -> np.ndarray:
    codes = np.arange(1 << slots, dtype=np.int64)
    return ((codes[:, None] >> np.arange(slots)) & 1).astype(bool)


@cache
def popcount_table(slots: int) -> np.ndarray:
    return _bit_table(slots).sum(axis=1).astype(np.int16)


@cache
def usable_table(slots: int, min_usable_size: int) -> np.ndarray:
    """Entry ``c``: periods of day-code ``c`` in runs of set bits at least ``min_usable_size`` long."""
    bits = _bit_table(slots)
    row, _, length = runs(bits)
    return np.bincount(row, weights=np.where(length >= min_usable_size, length, 0),
                       minlength=bits.shape[0]).astype(np.int16)


def _pack(mask: np.ndarray) -> np.ndarray:
    packed = np.packbits(mask, axis=-1, bitorder="little")
    code = packed[..., 0].astype(np.int32)
    if packed.shape[-1] > 1:
        code |= packed[..., 1].astype(np.int32) << 8
    return code


def _usable_by_runs(free: np.ndarray, min_usable_size: int) -> np.ndarray:
    n, d, s = free.shape
    row, _, length = runs(free.reshape(n * d, s))
    usable = np.bincount(row, weights=np.where(length >= min_usable_size, length, 0),
                         minlength=n * d)
    return usable.reshape(n, d).astype(np.int64)


def batch_core_metrics(kinds: np.ndarray, *, min_usable_size: int = 2,
                       min_daily_buffer: int = 2) -> BatchCoreMetrics:
    """Core metrics of every window of a ``(n, days, slots)`` kind stack (see :func:`stack_kinds`).

    Parameters
    ----------
    kinds
        0 free, 1 event layer (courses), 2 task layer, per window, day and period.
    min_usable_size, min_daily_buffer
        As in :func:`~smartflow_engine.analyzers.analyze_tolerance`.
    """
    kinds = np.asarray(kinds)
    if kinds.ndim != 3 or 0 in kinds.shape:
        raise ValueError(f"kinds must be a non-empty (n, days, slots) array, got {kinds.shape}")
    if min_usable_size < 1:
        raise ValueError("min_usable_size must be >= 1")
    n, num_days, slots = kinds.shape
    free = kinds == FREE
    course = kinds == COURSE
    if slots <= _LUT_MAX_SLOTS:
        pop = popcount_table(slots)
        free_code = _pack(free)
        day_free = pop[free_code].astype(np.int64)
        day_course = pop[_pack(course)].astype(np.int64)
        day_usable = usable_table(slots, min_usable_size)[free_code].astype(np.int64)
    else:
        day_free = np.count_nonzero(free, axis=2)
        day_course = np.count_nonzero(course, axis=2)
        day_usable = _usable_by_runs(free, min_usable_size)
    day_used = slots - day_free
    total_used = day_used.sum(axis=1)
    course_used = day_course.sum(axis=1)
    total_free = day_free.sum(axis=1)
    usable = day_usable.sum(axis=1)
    fragmented = total_free - usable
    std = day_used.std(axis=1, ddof=1) if num_days > 1 else np.zeros(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(total_free > 0, fragmented / np.maximum(total_free, 1), 0.0)
    peak = day_used.max(axis=1)
    return BatchCoreMetrics(
        total_used=total_used,
        course_used=course_used,
        task_used=total_used - course_used,
        utilization_rate=total_used / (num_days * slots),
        load_std_dev=std,
        load_range=peak - day_used.min(axis=1),
        peak_load=peak,
        total_free=total_free,
        usable_slots=usable,
        fragmented_slots=fragmented,
        fragmentation_rate=rate,
        days_without_buffer=np.count_nonzero(day_usable < min_daily_buffer, axis=1),
    )


__all__ = ["BatchCoreMetrics", "batch_core_metrics", "stack_kinds"]
