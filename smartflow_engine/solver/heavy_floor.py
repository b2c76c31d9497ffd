"""The floor of the ``heavy_adjacent`` rule (issue 42 item 4): heavy pairs no placement parts.

A heavy pair is a context switch between two hard subjects (:func:`..concepts.hard_subjects`)
in a day's study layer (:mod:`..health_facts`). Two adjacent periods held by study tasks that
stay where they are — not movable in the floor's population, neither a guest nor a host a guest
may enter — keep their subjects in every schedule of the population: nothing can be placed
between them and no guest can cover them. So a day's fixed heavy pairs are at most its heavy
pairs in every schedule, and since the rule's bands only grow with the count (``>=`` / ``>``
thresholds, checked here), the severity of the fixed count is a lower bound of the day's
``heavy_adjacent`` issue (each day is its own issue: the bounds add up).

Nothing else is claimed (hard items that must be placed next to each other for want of room
are not counted): a floor of 0 is a valid bound. :func:`.health_floor.health_floor` adds these
days through its rule hook.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..concepts import hard_subjects, subject_of
from ..rules import Level, rule, severity
from ..state import ScheduleState, Task


@dataclass(frozen=True)
class HeavyDay:
    """A day (1-based) whose fixed heavy pairs alone make a ``heavy_adjacent`` issue."""

    day: int
    severity: str
    pairs: int


def _monotone(level: Level) -> bool:
    """The rule at ``level`` reads only ``heavy_adjacent`` with upward conditions (its severity
    never drops when the count grows), bands in decreasing severity."""
    r = rule("context", "heavy_adjacent", level)
    return all(
        c.metric == "heavy_adjacent" and c.op in (">=", ">") for b in r.bands for c in b.conds
    )


def fixed_hard_layer(state: ScheduleState, movable: Callable[[Task], bool]) -> np.ndarray:
    """Days x periods: 1 + the index of the hard subject of a fixed study period no guest can
    cover (the task is not ``movable``, not a guest, not a host), 0 elsewhere (a light subject
    breaks a sequence as a free period does: it is never part of a heavy pair)."""
    hard = sorted(hard_subjects(state))
    out = np.zeros(state.grid.owner.shape, dtype=np.int64)
    if not hard:
        return out
    code = {name: i + 1 for i, name in enumerate(hard)}
    for t in state.tasks:
        name = subject_of(t)
        if name not in code or movable(t) or t.embed_host is not None or t.can_embed:
            continue
        for b in t.slots:
            out[b.day - 1, b.slot_start - 1 : b.slot_end] = code[name]
    return out


def fixed_heavy_days(
    state: ScheduleState, level: Level, movable: Callable[[Task], bool]
) -> list[HeavyDay]:
    """The days whose fixed heavy pairs alone reach a band of the rule at ``level``, with the
    band's severity and the pairs (see the module docstring); none when the rule's severity
    could drop with more pairs (no claim then)."""
    layer = fixed_hard_layer(state, movable)
    if not layer.any() or not _monotone(level):
        return []
    left, right = layer[:, :-1], layer[:, 1:]
    pairs = np.count_nonzero((left > 0) & (right > 0) & (left != right), axis=1)
    heavy = rule("context", "heavy_adjacent", level)
    out: list[HeavyDay] = []
    for d in np.flatnonzero(pairs).tolist():
        n = int(pairs[d])
        sev = severity(heavy, {"heavy_adjacent": n})
        if sev in ("critical", "warning"):
            out.append(HeavyDay(d + 1, sev, n))
    return out


__all__ = ["HeavyDay", "fixed_hard_layer", "fixed_heavy_days"]
