"""Hypothesis strategies for windows and tool calls, reusable by users' own property tests.

Requires the ``dev`` extra (hypothesis). Windows come from the seeded synthetic generator, so a
failing example shrinks to a seed and a size.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .model import ScheduleState
from .ops import host_blocks
from .synthetic import VARIANTS, synthetic_window


@st.composite
def windows(
    draw: st.DrawFn,
    min_days: int = 7,
    max_days: int = 30,
    variants: tuple[str, ...] = VARIANTS,
    pending_per_day: float = 1.0,
    task_classes: bool | None = None,
    movable_courses: float = 0.0,
    embeddable: float = 0.2,
    upstream: bool | None = False,
) -> ScheduleState:
    """A synthetic window of ``min_days..max_days`` days, any variant.

    ``movable_courses`` leaves that share of the locked courses unlocked (tasks with several
    blocks that writes may move block by block); ``embeddable`` is the share of water courses
    (hosts a single-block task may be embedded into); ``upstream`` gives the classes the
    reference system's constraints (half-day blocks, weekdays, dates, water-course permission,
    item order; ``None``: drawn)."""
    days = draw(st.integers(min_days, max_days))
    variant = draw(st.sampled_from(variants))
    classes = draw(st.booleans()) if task_classes is None else task_classes
    seed = draw(st.integers(0, 2**32 - 1))
    shaped = draw(st.booleans()) if upstream is None else upstream
    return synthetic_window(
        seed,
        days,
        variant=variant,  # type: ignore[arg-type]
        pending=max(1, int(days * pending_per_day)),
        with_task_classes=classes,
        movable_courses=movable_courses,
        embeddable=embeddable,
        upstream=shaped,
    )


def _ids(state: ScheduleState) -> st.SearchStrategy[Any]:
    known = [t.state_id for t in state.tasks] or [1]
    return st.one_of(st.sampled_from(known), st.sampled_from(known), st.integers(-2, 10_000))


def _day(state: ScheduleState) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(1, state.num_days), st.integers(-1, state.num_days + 3))


def _slot(state: ScheduleState) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(1, state.slots_per_day), st.integers(-1, state.slots_per_day + 3))


_GARBAGE = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.floats(allow_nan=True),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)


def _targets(state: ScheduleState, length: int) -> st.SearchStrategy[tuple[int, int]]:
    """Starts ``(day, slot)`` where ``length`` periods fit: free runs and free host blocks."""
    starts = [
        (d, s0 + k)
        for d, s0, e in state.grid.free_runs(min_len=length)
        for k in range(e - s0 + 2 - length)
    ]
    hosts = [
        (b.day, b.slot_start)
        for _, b, guest in host_blocks(state)
        if guest is None and b.length >= length
    ]
    # Free host blocks are few beside the free runs: drawn on their own, so embedding is tried
    # about as often as a free place.
    options = [st.sampled_from(x) for x in (starts, hosts) if x]
    return st.one_of(*options, st.tuples(_day(state), _slot(state)))


def _movable(state: ScheduleState) -> list[int]:
    hosts = state.guests_by_host()
    return [
        t.state_id
        for t in state.tasks
        if t.is_placed and not state.is_locked(t) and len(t.slots) == 1 and t.state_id not in hosts
    ]


def _movable_blocks(state: ScheduleState) -> list[tuple[int, int | None, int]]:
    """``(task_id, from_day, length)`` of the blocks a move may take: a single-block task's
    (``from_day`` None) and each block of an unlocked task with several blocks that is alone on
    its day (water courses included: a moving host tests the embedding rules)."""
    out: list[tuple[int, int | None, int]] = []
    single = set(_movable(state))
    for t in state.tasks:
        if t.state_id in single:
            out.append((t.state_id, None, t.slots[0].length))
        elif t.is_placed and not state.is_locked(t) and len(t.slots) > 1:
            days = [b.day for b in t.slots]
            out.extend((t.state_id, b.day, b.length) for b in t.slots if days.count(b.day) == 1)
    return out


@st.composite
def _sensible_call(draw: st.DrawFn, state: ScheduleState) -> tuple[str, dict[str, Any]]:
    """A call that has a fair chance to succeed: real ids and free targets (free runs and free
    water-course blocks, so blocks of tasks with several blocks are tried as guests too)."""
    pending = [t.state_id for t in state.pending_tasks()]
    movable = _movable(state)
    blocks = _movable_blocks(state)
    kinds = (
        (["place"] if pending else [])
        + (["move", "batch_move"] if blocks else [])
        + (["unplace", "swap"] if movable else [])
    )
    if not kinds:
        return "get_overview", {}
    kind = draw(st.sampled_from(kinds))
    if kind == "place":
        tid = draw(st.sampled_from(pending))
        day, slot = draw(_targets(state, state.task(tid).need()))  # type: ignore[union-attr]
        return kind, {"task_id": tid, "day": day, "slot_start": slot}
    if kind == "unplace":
        return kind, {"task_id": draw(st.sampled_from(movable))}
    if kind == "swap":
        a = draw(st.sampled_from(movable))
        length = state.task(a).slots[0].length  # type: ignore[union-attr]
        same = [t for t in movable if state.task(t).slots[0].length == length]  # type: ignore[union-attr]
        return kind, {"task_a": a, "task_b": draw(st.sampled_from(same))}
    picked = draw(
        st.lists(st.sampled_from(blocks), min_size=1, max_size=4, unique_by=lambda b: b[0])
    )
    moves = []
    for tid, from_day, length in picked:
        day, slot = draw(_targets(state, length))
        move: dict[str, Any] = {"task_id": tid, "new_day": day, "new_slot_start": slot}
        if from_day is not None:
            move["from_day"] = from_day
        moves.append(move)
    if kind == "move":
        return kind, moves[0]
    return kind, {"moves": moves}


def sensible_write_calls(state: ScheduleState) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """``(tool name, args)`` of a write tool with real ids and whole-number arguments, aimed at
    free runs and free water-course blocks (a fair share succeed; ``get_overview`` when the
    window has nothing to write)."""
    return _sensible_call(state)


def write_calls(state: ScheduleState) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """``(tool name, args)`` for the write tools: mostly well-formed, sometimes ill-typed."""
    tid, day, slot = _ids(state), _day(state), _slot(state)
    place = st.fixed_dictionaries({"task_id": tid, "day": day, "slot_start": slot})
    move = st.fixed_dictionaries(
        {"task_id": tid, "new_day": day, "new_slot_start": slot},
        optional={"from_day": day},
    )
    swap = st.fixed_dictionaries({"task_a": tid, "task_b": tid})
    unplace = st.fixed_dictionaries({"task_id": tid})
    batch = st.fixed_dictionaries({"moves": st.lists(move, min_size=0, max_size=6)})
    wellformed = st.one_of(
        st.tuples(st.just("place"), place),
        st.tuples(st.just("move"), move),
        st.tuples(st.just("swap"), swap),
        st.tuples(st.just("batch_move"), batch),
        st.tuples(st.just("unplace"), unplace),
    )
    broken = st.tuples(
        st.sampled_from(["place", "move", "swap", "batch_move", "unplace", "no_such_tool"]),
        st.dictionaries(
            st.sampled_from(["task_id", "day", "slot_start", "moves", "task_a", "zzz"]),
            _GARBAGE,
            max_size=3,
        ),
    )
    return st.one_of(_sensible_call(state), _sensible_call(state), wellformed, broken)


@st.composite
def apply_calls(draw: st.DrawFn, state: ScheduleState) -> tuple[str, dict[str, Any]]:
    """``apply_proposal`` with explicit placements: pending or suggested tasks (of any shape,
    so a task with several blocks is tried too) onto free runs and free water-course blocks."""
    movable = [
        t for t in state.tasks if t.status in ("pending", "suggested") and not state.is_locked(t)
    ] or list(state.tasks)
    if not movable:
        return "get_overview", {}
    picked = draw(
        st.lists(st.sampled_from(movable), min_size=1, max_size=3, unique_by=lambda t: t.state_id)
    )
    placements = []
    for task in picked:
        day, slot = draw(_targets(state, max(task.need(), 1)))
        placements.append({"task_id": task.state_id, "day": day, "slot_start": slot})
    return "apply_proposal", {"placements": placements}


def solver_write_calls(state: ScheduleState) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """The solver-backed writes with a short time limit: a computed proposal applied whole (the
    pool's or least-change), ``spread_even`` of a category and ``min_context_switch``."""
    categories = sorted({t.category for t in state.tasks if t.category}) or ["复习"]
    limit = {"time_limit_s": 0.3}
    return st.one_of(
        st.builds(
            lambda inc, keep: (
                "apply_proposal",
                {**limit, "include_suggested": inc, "keep_placed": keep},
            ),
            st.booleans(),
            st.booleans(),
        ),
        st.sampled_from(categories).map(lambda c: ("spread_even", {**limit, "category": c})),
        st.booleans().map(lambda x: ("min_context_switch", {**limit, "allow_cross_day": x})),
    )


@st.composite
def embed_calls(draw: st.DrawFn, state: ScheduleState) -> tuple[str, dict[str, Any]]:
    """A ``move`` or ``batch_move`` of a block (any task's, several-block tasks included) into a
    free water-course block: the calls that decide embedding, drawn on purpose."""
    blocks = _movable_blocks(state)
    hosts = [b for _, b, guest in host_blocks(state) if guest is None]
    if not blocks or not hosts:
        return draw(write_calls(state))
    tid, from_day, _ = draw(st.sampled_from(blocks))
    host = draw(st.sampled_from(hosts))
    move: dict[str, Any] = {"task_id": tid, "new_day": host.day, "new_slot_start": host.slot_start}
    if from_day is not None:
        move["from_day"] = from_day
    if draw(st.booleans()):
        return "move", move
    return "batch_move", {"moves": [move]}
