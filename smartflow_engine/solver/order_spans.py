"""The spans the item order leaves a task of a class (issue 42): the low part of
:mod:`.order`, which the problem builder and the exact ordered model read (kept apart so that
neither imports the module that re-places chains through them)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..state import order_key

if TYPE_CHECKING:
    from ..state import ScheduleState, Task

Position = tuple[int, int]


def task_of(state: ScheduleState, task_id: int) -> Task:
    task = state.task(task_id)
    if task is None:
        raise KeyError(f"no task {task_id}")
    return task


def order_segments(
    state: ScheduleState, scope: Iterable[Task]
) -> dict[int, tuple[Position | None, Position | None]]:
    """Per ordered scope task: ``(after, before)``, the end of the latest earlier and the start
    of the earliest later item of its class that stays where it is (not in the scope); only
    tasks with a bound are listed."""
    scope = list(scope)
    scope_ids = {t.state_id for t in scope}
    classes = {k[0] for t in scope if (k := order_key(t)) is not None}
    if not classes:
        return {}
    fixed: dict[int, list[tuple[int, Position, Position]]] = defaultdict(list)
    for t in state.tasks:
        key = order_key(t)
        if key is None or key[0] not in classes or t.state_id in scope_ids or not t.slots:
            continue
        first = min((b.day, b.slot_start) for b in t.slots)
        last = max((b.day, b.slot_end) for b in t.slots)
        fixed[key[0]].append((key[1], first, last))
    tables: dict[int, tuple[list[int], list[Position | None], list[Position | None]]] = {}
    for cid, rows in fixed.items():
        rows.sort(key=lambda r: r[0])
        orders = [r[0] for r in rows]
        prefix: list[Position | None] = [None]  # latest end among the first i rows
        for _, _, last in rows:
            prev = prefix[-1]
            prefix.append(last if prev is None or last > prev else prev)
        suffix: list[Position | None] = [None] * (len(rows) + 1)  # earliest start from row i
        for i in range(len(rows) - 1, -1, -1):
            nxt = suffix[i + 1]
            first = rows[i][1]
            suffix[i] = first if nxt is None or first < nxt else nxt
        tables[cid] = (orders, prefix, suffix)
    out: dict[int, tuple[Position | None, Position | None]] = {}
    for t in scope:
        key = order_key(t)
        if key is None or key[0] not in tables:
            continue
        orders, prefix, suffix = tables[key[0]]
        after = prefix[bisect.bisect_left(orders, key[1])]
        before = suffix[bisect.bisect_right(orders, key[1])]
        if after is not None or before is not None:
            out[t.state_id] = (after, before)
    return out
