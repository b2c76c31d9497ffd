"""Pure state operations: place, move, swap, batch_move, unplace and the general ``relocate``.

Every operation is all-or-nothing: it checks everything against the state first and either applies
all changes (state and grid together) or none, returning an :class:`OpResult` whose ``refusal``
says, as data, why it refused. Nothing here renders text.

Relocation is simultaneous (DESIGN.md): each request is checked against the state in which every
task being relocated has already left its old place, so two tasks can trade places in one call.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from .class_rules import Breach
from .grid import Grid
from .model import ScheduleState, SlotRange, Status, Task

MAX_BATCH = 50  # moves in one batch_move / placements in one apply


@dataclass(frozen=True)
class Request:
    """Put ``task_id`` (or its block on ``from_day``) at ``day``, starting at ``slot_start``."""

    task_id: int
    day: int
    slot_start: int
    from_day: int | None = None


@dataclass(frozen=True)
class Blocker:
    """A task holding part of a requested range: its id and the overlapping periods."""

    task_id: int
    slot_start: int
    slot_end: int
    moving: bool = False  # the blocker is another task of the same call, at its new place


@dataclass(frozen=True)
class Refusal:
    """Why an operation refused, as data. ``kind`` is one of :data:`REFUSAL_KINDS`."""

    kind: RefusalKind
    task_id: int | None = None
    other_id: int | None = None
    day: int | None = None
    slot_start: int | None = None
    slot_end: int | None = None
    blockers: tuple[Blocker, ...] = ()
    blocks: tuple[SlotRange, ...] = ()
    limit: int | None = None


RefusalKind = Literal[
    "not_found",  # task_id does not exist
    "not_pending",  # place on a task that is not pending
    "pending",  # move / swap / unplace on a pending task
    "locked",  # the task (or, for a guest, its host) is locked
    "multi_block",  # the task has several blocks and no (or no matching) from_day
    "no_block_on_day",  # from_day names a day on which the single-block task has no block
    "no_change",  # a move onto the block's own place (nothing would change)
    "has_guest",  # a host block to move / unplace holds a guest
    "out_of_window",  # day or periods outside the window
    "conflict",  # the target periods are held by other tasks
    "embed_taken",  # the target lies inside a host block that already has a guest
    "multi_block_guest",  # the target lies inside a host block, but the task has several blocks
    "duration_mismatch",  # swap of blocks of different lengths
    "same_task",  # swap of a task with itself
    "duplicate_task",  # the same task twice in one batch
    "empty_batch",
    "batch_too_large",
    "class_window",  # the target day lies outside the task's class days (other_id: class id)
    "banned_weekday",  # the target day is a weekday the task's class excludes (other_id: class)
    "banned_period",  # the target periods include a banned period of the task's class
    "no_filler",  # the target lies in a water course; the task's class may not embed there
    "order_after",  # the task would not start after an earlier item of its class (other_id)
    "order_before",  # the task would not end before a later item of its class (other_id)
    "existing_fixed",  # the task is existing and the request keeps existing entries as facts
]
REFUSAL_KINDS: tuple[RefusalKind, ...] = get_args(RefusalKind)


@dataclass(frozen=True)
class Change:
    """One task's change, for the change log a confirm step writes to the database."""

    op: str
    task_id: int
    status_before: Status
    status_after: Status
    block_before: SlotRange | None
    block_after: SlotRange | None
    embed_host_before: int | None
    embed_host_after: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "op": self.op,
            "task_id": self.task_id,
            "status_before": self.status_before,
            "status_after": self.status_after,
            "block_before": self.block_before.model_dump() if self.block_before else None,
            "block_after": self.block_after.model_dump() if self.block_after else None,
            "embed_host_before": self.embed_host_before,
            "embed_host_after": self.embed_host_after,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Change:
        def block(value: object) -> SlotRange | None:
            return SlotRange.model_validate(value) if value is not None else None

        return cls(
            op=str(data["op"]),
            task_id=int(data["task_id"]),  # type: ignore[call-overload]
            status_before=_status(data["status_before"]),
            status_after=_status(data["status_after"]),
            block_before=block(data.get("block_before")),
            block_after=block(data.get("block_after")),
            embed_host_before=data.get("embed_host_before"),  # type: ignore[arg-type]
            embed_host_after=data.get("embed_host_after"),  # type: ignore[arg-type]
        )


def _status(value: object) -> Status:
    for status in get_args(Status):
        if value == status:
            return status  # type: ignore[no-any-return]
    raise ValueError(f"status {value!r} is not one of {'/'.join(get_args(Status))}")


@dataclass
class OpResult:
    ok: bool
    changes: list[Change] = field(default_factory=list)
    refusal: Refusal | None = None

    @classmethod
    def refuse(cls, kind: RefusalKind, **kw: object) -> OpResult:
        return cls(False, [], Refusal(kind, **kw))  # type: ignore[arg-type]


class SelfCheckError(AssertionError):
    """The incrementally kept grid or the state's invariants disagree with a full recompute."""


# ---------------------------------------------------------------------------------- public ops
def place(state: ScheduleState, task_id: int, day: int, slot_start: int) -> OpResult:
    """Place a pending task (→ ``suggested``), embedding it when the range lies in a free host block."""
    task = state.task(task_id)
    if task is None:
        return OpResult.refuse("not_found", task_id=task_id)
    if task.status != "pending":
        return OpResult.refuse("not_pending", task_id=task_id)
    return relocate(state, [Request(task_id, day, slot_start)], op="place")


def move(
    state: ScheduleState,
    task_id: int,
    new_day: int,
    new_slot_start: int,
    from_day: int | None = None,
    *,
    existing_fixed: bool = False,
) -> OpResult:
    """Move one block of a placed task; status is kept. A move onto the block's own place is
    refused (``no_change``), so the change log records only real changes. ``existing_fixed``:
    an existing task stays (see :func:`relocate`)."""
    return relocate(
        state,
        [Request(task_id, new_day, new_slot_start, from_day)],
        op="move",
        placed_only=True,
        refuse_no_change=True,
        existing_fixed=existing_fixed,
    )


def batch_move(
    state: ScheduleState, moves: Sequence[Request], *, existing_fixed: bool = False
) -> OpResult:
    """Move several placed tasks at once (simultaneous; any failure rolls all back)."""
    if not moves:
        return OpResult.refuse("empty_batch")
    if len(moves) > MAX_BATCH:
        return OpResult.refuse("batch_too_large", limit=MAX_BATCH)
    return relocate(
        state,
        moves,
        op="batch_move",
        placed_only=True,
        refuse_no_change=True,
        existing_fixed=existing_fixed,
    )


def swap(
    state: ScheduleState, task_a: int, task_b: int, *, existing_fixed: bool = False
) -> OpResult:
    """Trade the places of two placed single-block tasks of equal length."""
    if task_a == task_b:
        return OpResult.refuse("same_task", task_id=task_a)
    tasks: list[Task] = []
    for tid in (task_a, task_b):
        task = state.task(tid)
        if task is None:
            return OpResult.refuse("not_found", task_id=tid)
        tasks.append(task)
    # The spec's order of refusals: status and lock (of either task) before shape.
    for task in tasks:
        if refusal := _check_status(state, task, existing_fixed):
            return OpResult(False, [], refusal)
    for task in tasks:
        if len(task.slots) > 1:
            return OpResult.refuse("multi_block", task_id=task.state_id, blocks=tuple(task.slots))
    for task in tasks:
        if refusal := _check_shape(state, task, None, set()):
            return OpResult(False, [], refusal)
    a, b = tasks
    ba, bb = a.slots[0], b.slots[0]
    if ba.length != bb.length:
        return OpResult.refuse("duration_mismatch", task_id=a.state_id, other_id=b.state_id)
    return relocate(
        state,
        [Request(a.state_id, bb.day, bb.slot_start), Request(b.state_id, ba.day, ba.slot_start)],
        op="swap",
        placed_only=True,
        existing_fixed=existing_fixed,
    )


def unplace(state: ScheduleState, task_id: int, *, existing_fixed: bool = False) -> OpResult:
    """Take a placed single-block task out of the grid: → ``pending`` with ``duration`` = length."""
    task = state.task(task_id)
    if task is None:
        return OpResult.refuse("not_found", task_id=task_id)
    if refusal := _check_status(state, task, existing_fixed) or _check_shape(
        state, task, None, set()
    ):
        return OpResult(False, [], refusal)
    if len(task.slots) > 1:
        return OpResult.refuse("multi_block", task_id=task_id, blocks=tuple(task.slots))
    block = task.slots[0]
    as_guest = task.embed_host is not None
    change = Change("unplace", task_id, task.status, "pending", block, None, task.embed_host, None)
    state.grid.clear(block, as_guest=as_guest)
    task.slots = []
    task.duration = block.length
    task.status = "pending"
    task.embed_host = None
    return OpResult(True, [change])


def relocate(
    state: ScheduleState,
    requests: Sequence[Request],
    *,
    op: str,
    placed_only: bool = False,
    status_after: str | None = None,
    refuse_no_change: bool = False,
    allow_late: bool = False,
    existing_fixed: bool = False,
) -> OpResult:
    """Apply several placements / moves simultaneously, all or nothing.

    A pending task is placed (status → ``status_after`` or ``suggested``); a placed one has one
    block moved (status kept unless ``status_after``). With ``placed_only`` a pending task is
    refused (``pending``), as ``move`` and ``batch_move`` require. With ``refuse_no_change`` a
    request that puts a block back on its own place is refused (``no_change``). With
    ``allow_late`` (a proposal the caller asked to run late) a block may lie after its class's
    last day; every other class rule still holds. With ``existing_fixed`` (the host keeps the
    student's existing entries as facts) an ``existing`` task is refused (``existing_fixed``).

    Simultaneous means every check reads the picture after the call: each task has left its
    old place and stands at its new one, whatever the order of the requests. A range wholly
    inside a block of a water course (at the block's place after the call: a host moving in the
    same call takes guests at its new place, its unmoved blocks keep theirs) is an embedding;
    every other range must be free. The class rules (:attr:`ScheduleState.class_rules`) hold
    for every task at its new place, the item order among the places after the call.
    """
    grid = state.grid
    rules = state.class_rules
    num_days, spd = state.num_days, state.slots_per_day
    moving_ids = {r.task_id for r in requests}
    # First every request's task, status and lock (the spec's order of refusals: what a task is
    # before the shape of its blocks), then each request's block and target.
    tasks: list[Task] = []
    seen: set[int] = set()
    for req in requests:
        task = state.task(req.task_id)
        if task is None:
            return OpResult.refuse("not_found", task_id=req.task_id)
        if req.task_id in seen:
            return OpResult.refuse("duplicate_task", task_id=req.task_id)
        seen.add(req.task_id)
        if task.status == "pending":
            if placed_only:
                return OpResult.refuse("pending", task_id=task.state_id)
        elif refusal := _check_status(state, task, existing_fixed):
            return OpResult(False, [], refusal)
        tasks.append(task)
    guests = state.guests_by_host() if len(requests) > 1 else None
    plans: list[tuple[Task, SlotRange | None, SlotRange]] = []  # task, old block, new block
    for req, task in zip(requests, tasks, strict=True):
        old: SlotRange | None = None
        if task.status == "pending":
            length = task.need()
        else:
            if refusal := _check_shape(state, task, req.from_day, moving_ids, guests):
                return OpResult(False, [], refusal)
            old = _pick_block(task, req.from_day)
            length = old.length
            if refuse_no_change and (old.day, old.slot_start) == (req.day, req.slot_start):
                return OpResult.refuse(
                    "no_change",
                    task_id=task.state_id,
                    day=old.day,
                    slot_start=old.slot_start,
                    slot_end=old.slot_end,
                )
        end = req.slot_start + length - 1
        if not (1 <= req.day <= num_days and req.slot_start >= 1 and end <= spd):
            return OpResult.refuse(
                "out_of_window",
                task_id=task.state_id,
                day=req.day,
                slot_start=req.slot_start,
                slot_end=end,
            )
        if breach := rules.breach(task, req.day, req.slot_start, end, allow_late=allow_late):
            return OpResult(False, [], rule_refusal(task, breach))
        plans.append((task, old, SlotRange(day=req.day, slot_start=req.slot_start, slot_end=end)))

    # The picture after the call: every task's blocks, and the item order among them.
    after: dict[int, list[SlotRange]] = {}
    for task, old, new in plans:
        kept = [b for b in task.slots if b is not old] if old is not None else []
        after[task.state_id] = sorted([*kept, new], key=lambda b: (b.day, b.slot_start))
    if found := rules.order_breaches([t for t, _, _ in plans], after):
        return OpResult(False, [], rule_refusal(found[0], found[1], after))

    # Where each range goes: inside a water-course block (a guest), else onto free periods.
    owner = grid.owner.copy()
    guest = grid.guest.copy()
    for task, old, _ in plans:
        if old is not None:
            (guest if task.embed_host is not None else owner)[
                old.day - 1, old.slot_start - 1 : old.slot_end
            ] = 0
    into: dict[int, tuple[int, SlotRange]] = {}  # task id -> (host id, host block after the call)
    moving_hosts = [tid for tid in after if tid in grid.embed_hosts]
    for task, _, new in plans:
        if task.can_embed:
            continue  # no nesting: a host never becomes a guest
        cells = owner[new.day - 1, new.slot_start - 1 : new.slot_end]
        if not moving_hosts and not cells.any():
            continue  # free periods, and no water course arrives: not an embedding
        if guests is None:  # read once per call: it scans every task
            guests = state.guests_by_host()
        if task.state_id in guests:
            continue
        if found_host := _host_block_for(state, grid, task, new, cells, after, moving_hosts):
            into[task.state_id] = found_host
    new_blocks = {task.state_id: new for task, _, new in plans}
    for task, _, new in plans:
        if task.state_id in into:
            continue
        d, s0, s1 = new.day - 1, new.slot_start - 1, new.slot_end
        if owner[d, s0:s1].any():
            return OpResult(False, [], _conflict(task, new, owner, new_blocks))
        owner[d, s0:s1] = task.state_id
    hosts: dict[int, int | None] = {task.state_id: None for task, _, _ in plans}
    for task, _, new in plans:
        if task.state_id not in into:
            continue
        host_id, host_block = into[task.state_id]
        where = {
            "task_id": task.state_id,
            "day": new.day,
            "slot_start": new.slot_start,
            "slot_end": new.slot_end,
            "blockers": (Blocker(host_id, new.slot_start, new.slot_end, host_id in new_blocks),),
        }
        if len(task.slots) > 1:
            # A guest holds exactly one block (the state model's rule): a task that meets
            # several times cannot have one of its blocks embedded.
            return OpResult.refuse("multi_block_guest", blocks=tuple(task.slots), **where)
        if not rules.may_embed(task):
            return OpResult.refuse("no_filler", other_id=task.task_class_id, **where)
        # One guest per host block: the whole block must be free of guests, not just the range.
        d = new.day - 1
        taken = guest[d, host_block.slot_start - 1 : host_block.slot_end]
        if taken.any():
            gid = int(taken[taken != 0][0])
            return OpResult.refuse("embed_taken", other_id=gid, **where)
        guest[d, new.slot_start - 1 : new.slot_end] = task.state_id
        hosts[task.state_id] = host_id

    # Commit: the checks above cannot fail from here on.
    changes: list[Change] = []
    for task, old, _ in plans:
        if old is not None:
            grid.clear(old, as_guest=task.embed_host is not None)
    for task, old, new in plans:
        before_status, before_host = task.status, task.embed_host
        task.slots = after[task.state_id]
        task.embed_host = hosts[task.state_id]
        if status_after is not None:
            task.status = status_after  # type: ignore[assignment]
        elif task.status == "pending":
            task.status = "suggested"
        grid.put(task.state_id, new, as_guest=task.embed_host is not None)
        changes.append(
            Change(
                op,
                task.state_id,
                before_status,
                task.status,
                old,
                new,
                before_host,
                task.embed_host,
            )
        )
    return OpResult(True, changes)


def host_blocks(
    state: ScheduleState, day: int | None = None
) -> list[tuple[Task, SlotRange, Task | None]]:
    """Blocks of unlocked can_embed hosts, by day and period: ``(host, block, guest or None)``."""
    guests: dict[tuple[int, int], list[Task]] = {}
    for g in state.tasks:
        if g.embed_host is not None and g.slots:
            guests.setdefault((g.embed_host, g.slots[0].day), []).append(g)
    out = []
    for host in state.tasks:
        if not host.can_embed or host.locked:
            continue
        for b in host.slots:
            if day is not None and b.day != day:
                continue
            inside = [
                g
                for g in guests.get((host.state_id, b.day), [])
                if b.slot_start <= g.slots[0].slot_start <= b.slot_end
            ]
            out.append((host, b, inside[0] if inside else None))
    out.sort(key=lambda h: (h[1].day, h[1].slot_start))
    return out


# ---------------------------------------------------------------------------------- checks
def self_check(state: ScheduleState) -> None:
    """Recompute the grid and re-validate the state from scratch; raise on any difference."""
    fresh = Grid.build(state)
    if not fresh.equals(state.grid):
        diff = np.argwhere((fresh.owner != state.grid.owner) | (fresh.guest != state.grid.guest))
        where = ", ".join(f"day {d + 1} period {s + 1}" for d, s in diff[:5].tolist())
        raise SelfCheckError(f"grid out of step with the tasks at {where or 'embed hosts'}")
    try:
        ScheduleState.model_validate(state.to_dict())
    except ValueError as exc:
        raise SelfCheckError(f"state invariant broken: {exc}") from exc


def _check_status(state: ScheduleState, task: Task, existing_fixed: bool = False) -> Refusal | None:
    """What the task is: pending (nothing to move), locked (itself or by its host), or existing
    while the request keeps existing entries as facts."""
    if task.status == "pending":
        return Refusal("pending", task_id=task.state_id)
    if state.is_locked(task):
        return Refusal("locked", task_id=task.state_id, other_id=task.embed_host)
    if existing_fixed and task.status == "existing":
        return Refusal("existing_fixed", task_id=task.state_id)
    return None


def _check_shape(
    state: ScheduleState,
    task: Task,
    from_day: int | None,
    moving_ids: set[int],
    guests: dict[int, list[int]] | None = None,
) -> Refusal | None:
    """Which block moves: several blocks need a matching ``from_day``; a block holding a guest
    (not moving in the same call) stays. ``guests`` is the state's guests by host, passed by a
    caller that checks many tasks (one pass over the tasks, not one per task)."""
    if len(task.slots) > 1:
        on_day = [b for b in task.slots if b.day == from_day]
        if from_day is None or len(on_day) != 1:
            return Refusal("multi_block", task_id=task.state_id, blocks=tuple(task.slots))
    elif from_day is not None and task.slots[0].day != from_day:
        # from_day names the block to move: a single-block task must have it on that day
        return Refusal(
            "no_block_on_day", task_id=task.state_id, day=from_day, blocks=tuple(task.slots)
        )
    block = _pick_block(task, from_day)
    if guests is None:
        guests = state.guests_by_host()
    for gid in guests.get(task.state_id, []):
        g = state.task(gid)
        if g is None or gid in moving_ids:
            continue
        gb = g.slots[0]
        if gb.day == block.day and block.slot_start <= gb.slot_start <= block.slot_end:
            return Refusal("has_guest", task_id=task.state_id, other_id=gid)
    return None


def rule_refusal(
    task: Task, breach: Breach, after: dict[int, list[SlotRange]] | None = None
) -> Refusal:
    """The refusal of a broken class rule: the task, the class (``other_id``; for the order
    rule the other item, with its blocks after the call in ``blocks`` and, when it moves in
    the same call, a ``moving`` blocker), the place, the banned periods it covers."""
    kind: RefusalKind = breach.kind
    common = {
        "task_id": task.state_id,
        "day": breach.day,
        "slot_start": breach.slot_start,
        "slot_end": breach.slot_end,
    }
    if kind in ("order_after", "order_before"):
        other = breach.other_id
        assert other is not None
        moving = after is not None and other in after
        return Refusal(
            kind,
            other_id=other,
            blockers=(Blocker(other, 0, 0, moving),),
            blocks=tuple(after[other]) if after is not None and moving else (),
            **common,
        )
    return Refusal(
        kind,
        other_id=breach.class_id,
        blockers=tuple(Blocker(0, p, p) for p in breach.periods),
        **common,  # type: ignore[arg-type]
    )


def _pick_block(task: Task, from_day: int | None) -> SlotRange:
    if len(task.slots) == 1:
        return task.slots[0]
    return next(b for b in task.slots if b.day == from_day)


def _host_block_for(
    state: ScheduleState,
    grid: Grid,
    task: Task,
    new: SlotRange,
    cells: np.ndarray,
    after: dict[int, list[SlotRange]],
    moving_hosts: list[int],
) -> tuple[int, SlotRange] | None:
    """The water course (and its block, at the block's place after the call) wholly containing
    ``new``, if there is one: a host that stays is found by the periods it holds (``cells``:
    ``new``'s periods in the grid with every moving task gone), a host that moves
    (``moving_hosts``) by its blocks in ``after``."""
    ids = np.unique(cells)
    candidates = [int(ids[0])] if len(ids) == 1 and ids[0] != 0 else []
    candidates += moving_hosts
    for host_id in candidates:
        host = state.task(host_id)
        if (
            host is None
            or host_id == task.state_id
            or host_id not in grid.embed_hosts
            or host.embed_host is not None
        ):
            continue
        for b in after.get(host_id, host.slots):
            if b.day == new.day and b.slot_start <= new.slot_start and new.slot_end <= b.slot_end:
                return host_id, b
    return None


def _conflict(
    task: Task,
    new: SlotRange,
    owner: np.ndarray,
    new_blocks: dict[int, SlotRange],
) -> Refusal:
    """``task``'s range ``new`` overlaps what ``owner`` holds: each blocker with its periods,
    flagged ``moving`` when that is the blocker's new place in the same call."""
    row = owner[new.day - 1, new.slot_start - 1 : new.slot_end]
    cuts = [0, *(np.flatnonzero(np.diff(row)) + 1).tolist(), len(row)]
    blockers = []
    for a, b in itertools.pairwise(cuts):
        tid = int(row[a])
        if tid == 0:
            continue
        s0, s1 = new.slot_start + a, new.slot_start + b - 1
        moved = new_blocks.get(tid)
        moving = (
            moved is not None
            and moved.day == new.day
            and moved.slot_start <= s0
            and s1 <= moved.slot_end
        )
        blockers.append(Blocker(tid, s0, s1, moving))
    return Refusal(
        "conflict",
        task_id=task.state_id,
        day=new.day,
        slot_start=new.slot_start,
        slot_end=new.slot_end,
        blockers=tuple(blockers),
    )
