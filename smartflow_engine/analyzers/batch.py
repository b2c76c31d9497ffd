"""Core load and tolerance metrics for a stack of windows ``(n, days, slots)`` in one pass.

For backends that audit many users at once, and for the benchmarks. Each day becomes one integer
(its periods' kinds as base-3 digits, up to 12 periods; free/course bit masks up to 16), and the
per-day facts (free, course and usable counts for a given ``min_usable_size``) come from lookup
tables over every possible day, built once. The work per window is then a handful of array
operations on ``days`` integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

import numpy as np

from ..state import ScheduleState, runs
from .frame import COURSE, FREE, TASK, Frame

_BASE3_MAX_SLOTS = 12  # 3**12 = 531,441 day codes: one table for free, course and usable counts
_BASE3_MIN_DAYS = 50_000  # below this many day rows the 0.4 s table build does not pay off
_BINARY_MAX_SLOTS = 16  # 2**16 codes per mask; wider days use the run-based path


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
            raise ValueError(
                f"state {i} has shape {(state.num_days, state.slots_per_day)}, "
                f"the first has {shape}"
            )
    return np.stack([Frame.build(s).kind.astype(np.int8) for s in states])


def _digits(slots: int, base: int) -> np.ndarray:
    """Row ``c``: the base-``base`` digits of ``c`` (least significant first), one per period."""
    codes = np.arange(base**slots, dtype=np.int32)
    return ((codes[:, None] // base ** np.arange(slots, dtype=np.int32)) % base).astype(np.int8)


def _usable_of(free: np.ndarray, min_usable_size: int) -> np.ndarray:
    row, _, length = runs(free)
    return np.bincount(
        row, weights=np.where(length >= min_usable_size, length, 0), minlength=free.shape[0]
    ).astype(np.int16)


@cache
def base3_tables(slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Per base-3 day code (digit = kind of a period): free count, course count."""
    digits = _digits(slots, 3)
    return (
        (digits == FREE).sum(axis=1).astype(np.int16),
        (digits == COURSE).sum(axis=1).astype(np.int16),
    )


@cache
def base3_usable(slots: int, min_usable_size: int) -> np.ndarray:
    """Per base-3 day code: free periods in runs at least ``min_usable_size`` long."""
    return _usable_of(_digits(slots, 3) == FREE, min_usable_size)


@cache
def binary_tables(slots: int, min_usable_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per binary day code (bit = period set): set-bit count, periods in long-enough runs."""
    bits = _digits(slots, 2).astype(bool)
    return bits.sum(axis=1).astype(np.int16), _usable_of(bits, min_usable_size)


def _code(mask: np.ndarray, base: int) -> np.ndarray:
    """One integer per day: ``Σ mask[..., s] · base**s`` (a small matrix-vector product)."""
    slots = mask.shape[-1]
    weights = (base ** np.arange(slots)).astype(np.int32)
    return mask.reshape(-1, slots).astype(np.int32) @ weights


def _usable_by_runs(free: np.ndarray, min_usable_size: int) -> np.ndarray:
    n, d, s = free.shape
    return _usable_of(free.reshape(n * d, s), min_usable_size).reshape(n, d).astype(np.int64)


def batch_core_metrics(
    kinds: np.ndarray, *, min_usable_size: int = 2, min_daily_buffer: int = 2
) -> BatchCoreMetrics:
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
    if kinds.min() < FREE or kinds.max() > TASK:
        raise ValueError("kinds holds values other than 0 (free), 1 (course), 2 (task)")
    n, num_days, slots = kinds.shape
    if slots <= _BASE3_MAX_SLOTS and n * num_days >= _BASE3_MIN_DAYS:  # one code, every kind
        code = _code(kinds, 3)
        free_of, course_of = base3_tables(slots)
        day_free = free_of[code].reshape(n, num_days).astype(np.int64)
        day_course = course_of[code].reshape(n, num_days).astype(np.int64)
        day_usable = base3_usable(slots, min_usable_size)[code].reshape(n, num_days)
    elif slots <= _BINARY_MAX_SLOTS:
        count, usable_of = binary_tables(slots, min_usable_size)
        free_code = _code(kinds == FREE, 2)
        day_free = count[free_code].reshape(n, num_days).astype(np.int64)
        day_course = count[_code(kinds == COURSE, 2)].reshape(n, num_days).astype(np.int64)
        day_usable = usable_of[free_code].reshape(n, num_days)
    else:
        free = kinds == FREE
        day_free = np.count_nonzero(free, axis=2)
        day_course = np.count_nonzero(kinds == COURSE, axis=2)
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
