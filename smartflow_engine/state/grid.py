"""The numpy occupancy grid of a window: ``(days, slots)`` arrays derived from the state.

``owner[d, s]`` is the ``state_id`` of the non-guest task holding period ``s + 1`` of day ``d + 1``
(0 = free); ``guest[d, s]`` is the ``state_id`` of a guest embedded there (0 = none). Indices are
0-based inside the arrays; every function that returns positions says which base it uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the model holds a grid: this module sits below it
    from .model import ScheduleState, SlotRange


@dataclass
class Grid:
    owner: np.ndarray  # (days, slots) int32
    guest: np.ndarray  # (days, slots) int32
    embed_hosts: frozenset[int]  # ids of can_embed, unlocked tasks (may take a guest)

    @classmethod
    def build(cls, state: ScheduleState) -> Grid:
        """Recompute the grid from scratch (also the self-check reference)."""
        shape = (state.num_days, state.slots_per_day)
        owner = np.zeros(shape, dtype=np.int32)
        guest = np.zeros(shape, dtype=np.int32)
        for task in state.tasks:
            target = guest if task.embed_host is not None else owner
            for b in task.slots:
                target[b.day - 1, b.slot_start - 1 : b.slot_end] = task.state_id
        hosts = frozenset(t.state_id for t in state.tasks if t.can_embed and not t.locked)
        return cls(owner, guest, hosts)

    # ------------------------------------------------------------------ updates
    def put(self, task_id: int, block: SlotRange, *, as_guest: bool) -> None:
        target = self.guest if as_guest else self.owner
        target[block.day - 1, block.slot_start - 1 : block.slot_end] = task_id

    def clear(self, block: SlotRange, *, as_guest: bool) -> None:
        target = self.guest if as_guest else self.owner
        target[block.day - 1, block.slot_start - 1 : block.slot_end] = 0

    def equals(self, other: Grid) -> bool:
        return (
            np.array_equal(self.owner, other.owner)
            and np.array_equal(self.guest, other.guest)
            and self.embed_hosts == other.embed_hosts
        )

    # ------------------------------------------------------------------ queries
    @property
    def num_days(self) -> int:
        return int(self.owner.shape[0])

    @property
    def slots_per_day(self) -> int:
        return int(self.owner.shape[1])

    def occupied(self) -> np.ndarray:
        """Boolean ``(days, slots)``: a non-guest task holds the period (guests add nothing)."""
        out: np.ndarray = self.owner != 0
        return out

    def day_load(self) -> np.ndarray:
        """Occupied periods per day, ``(days,)`` int."""
        out: np.ndarray = np.count_nonzero(self.owner, axis=1)
        return out

    def free_runs(self, min_len: int = 1, day: int | None = None) -> list[tuple[int, int, int]]:
        """Maximal runs of free periods, ``(day, slot_start, slot_end)`` 1-based, by day then slot."""
        mask = self.owner == 0
        if day is not None:
            mask = mask[day - 1 : day]
        days, starts, lengths = runs(mask)
        keep = lengths >= min_len
        offset = 1 if day is None else day
        return [
            (int(d) + offset, int(s) + 1, int(s + n))
            for d, s, n in zip(days[keep], starts[keep], lengths[keep], strict=True)
        ]


def runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of ``True`` along the last axis of a 2-D boolean array.

    Returns ``(row, start, length)`` arrays, 0-based, ordered by row then start.
    """
    mask = np.asarray(mask, dtype=bool)
    rows = mask.shape[0]
    padded = np.zeros((rows, mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    diff = np.diff(padded, axis=1)
    r_start, c_start = np.nonzero(diff == 1)
    _, c_end = np.nonzero(diff == -1)
    return r_start, c_start, c_end - c_start
