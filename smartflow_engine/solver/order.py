"""The item order of a task class in the solver's models (issue 42).

For two placed items of one class with orders a < b, a ends strictly before b starts
(:mod:`..state.class_rules`). The models hold it in two parts:

- **order segments** (:func:`order_segments`): the class's ordered items the problem does not
  move bound each scope item to the span between the latest earlier one and the earliest later
  one — a per-task window, part of its :class:`.problem.Rule` (a mask like the class's days);
- **the order among the scope items** (:func:`keep_order`): items of one class that share a
  duration, embeddability and subject are interchangeable for every other rule and every soft
  term, so any placement of them is relabelled, in time order, to keep their order at no cost.
  What relabelling cannot fix (items of different durations placed out of order) is re-placed
  as a chain, in order, near the model's places; an item no place takes is left unplaced, so an
  output never breaks the rule. The exact models hold it as precedence instead (see
  :mod:`.ordered`).
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..state import order_key
from ._cpsat import OutOfTime, SolveStatus, check_deadline, ran_out
from .budget import DEFAULT_CALIBRATION, Calibration

if TYPE_CHECKING:
    from ..state import ScheduleState, Task
    from .counting import CountResult
    from .problem import Placement
    from .run import ScopeRun
    from .starts import Start

from . import ordered as ordered_model  # (read at call time: a benchmark swaps its model)
from .order_spans import Position, fitting_starts, order_segments, task_of

__all__ = [
    "Position",
    "keep_order",
    "order_kept",
    "order_proposal",
    "order_segments",
    "order_start",
    "task_of",
]


def _fits(window: tuple[Position | None, Position | None] | None, pl: Placement) -> bool:
    if window is None:
        return True
    after, before = window
    if after is not None and (pl.day, pl.slot_start) <= after:
        return False
    return before is None or (pl.day, pl.slot_end) < before


def order_kept(state: ScheduleState, placements: Sequence[Placement]) -> bool:
    """Whether ``placements`` keep the order among themselves (the tasks' places outside them
    are the windows' business)."""
    by_class: dict[int, list[tuple[Position, int, Position]]] = defaultdict(list)
    for pl in placements:
        key = order_key(task_of(state, pl.task_id))
        if key is not None:
            by_class[key[0]].append(((pl.day, pl.slot_start), key[1], (pl.day, pl.slot_end)))
    for rows in by_class.values():
        rows.sort()
        best: int | None = None  # the highest order among strictly earlier rows
        for _, order, _ in rows:
            if best is not None and order < best:
                return False
            best = order if best is None else max(best, order)
    # rows sorted by start; placements never overlap, so start order is time order; equal
    # orders may sit in any order
    return True


def keep_order(
    state: ScheduleState,
    placements: Sequence[Placement],
    scope: Collection[int] | None = None,
    exact_s: float = 0.5,
    calibration: Calibration = DEFAULT_CALIBRATION,
    work_s: float | None = None,
    cut: list[bool] | None = None,
    deadline: float | None = None,
) -> tuple[list[Placement], list[int]]:
    """``placements`` with the ordered items of each class relabelled (interchangeable items
    swap places, in time order) so that every order holds, among themselves and against their
    class's items outside the scope ``scope`` (default: the placed tasks); a class whose places
    no relabelling orders is re-placed as a chain (:func:`_chain`). Returns the placements and
    the ids no place took (left unplaced). ``work_s``: the exact chains' CP-SAT deterministic
    time together (default ``calibration.ordered_chain_work``), split evenly among the classes
    that need one: it decides what they find; ``exact_s``: the wall time they may take together
    (a safety net: the greedy chain always runs); when the wall clock decided (an exact chain
    cut or not run for want of time), True is appended to ``cut``; ``calibration``: the exact
    chains' model limits. ``deadline`` (a ``time.perf_counter()`` value, for a caller whose
    answer is unproven without the whole result, the feasibility check): once it has passed,
    no further class is chained and :class:`~._cpsat.OutOfTime` is raised (a class's places
    and its chain take about 0.1 s at 120 days)."""
    placements = list(placements)
    ids = {pl.task_id for pl in placements}
    scope_ids = set(scope) if scope is not None else ids
    tasks = {tid: task_of(state, tid) for tid in scope_ids}
    ordered = {tid for tid, t in tasks.items() if order_key(t) is not None}
    if not ordered & ids:
        return placements, []
    windows = order_segments(state, (tasks[tid] for tid in ordered))
    by_class: dict[int, list[int]] = defaultdict(list)
    for tid in ordered:
        by_class[order_key(tasks[tid])[0]].append(tid)  # type: ignore[index]
    at = {pl.task_id: pl for pl in placements}
    result: dict[int, Placement] = {}
    dropped: list[int] = []
    failing: list[tuple[list[int], list[Placement]]] = []
    # (the classes in the order their items come out of ``ordered``, not by id: which class
    # is chained first decides what the later ones find, and the proposals depend on it)
    for items in by_class.values():
        items.sort(key=lambda tid: (tasks[tid].task_order or 0, tid))
        places = sorted(
            (at[tid] for tid in items if tid in at), key=lambda p: (p.day, p.slot_start)
        )
        relabelled = _relabelled(tasks, items, places, at)
        if all(_fits(windows.get(p.task_id), p) for p in relabelled) and order_kept(
            state, relabelled
        ):
            result.update((p.task_id, p) for p in relabelled)
            continue
        failing.append((items, places))
    # the caller's sequence of places: a relabelled place keeps its slot in the list
    by_place = {(p.day, p.slot_start): p for tid, p in result.items() if tid in ordered}
    final: list[Placement] = []
    failed = {tid for items, _ in failing for tid in items}
    for pl in placements:
        if pl.task_id not in ordered:
            final.append(pl)
        elif pl.task_id not in failed and (new := by_place.get((pl.day, pl.slot_start))):
            final.append(new)
    if failing:
        work = calibration.ordered_chain_work if work_s is None else work_s
        final, dropped = _chain(
            state, final, failing, scope_ids, exact_s, calibration, work / len(failing), cut,
            deadline,
        )  # fmt: skip
    return final, sorted(dropped)


def _relabelled(
    tasks: dict[int, Task],
    items: list[int],
    places: list[Placement],
    at: dict[int, Placement],
) -> list[Placement]:
    """A class's ``places`` in time order relabelled: the k-th place of a kind (length,
    host, category) gets the k-th item of that kind in the class's order (``items``)."""

    def kind(t: Task) -> tuple[object, ...]:
        return (t.need(), t.can_embed, t.category)

    pool: dict[tuple[object, ...], list[int]] = defaultdict(list)
    for tid in items:
        if tid in at:
            pool[kind(tasks[tid])].append(tid)
    taken = {k: 0 for k in pool}
    out: list[Placement] = []
    for pl in places:
        k = kind(tasks[pl.task_id])
        out.append(replace(pl, task_id=pool[k][taken[k]]))
        taken[k] += 1
    return out


def _chain(
    state: ScheduleState,
    placements: list[Placement],
    failing: list[tuple[list[int], list[Placement]]],
    scope_ids: set[int],
    exact_s: float,
    calibration: Calibration,
    work_s: float,
    cut: list[bool] | None,
    deadline: float | None = None,
) -> tuple[list[Placement], list[int]]:
    """Re-place the items of each class whose places no relabelling orders, as a chain: in
    order, each at the first place every rule allows (its class's grid, free periods or a free
    water-course block when permitted) that starts after the previous item ends and inside its
    segment, from the time the model gave the item of its rank on (earlier if nothing later
    fits), so the model's spread is kept where it can be; what no place takes is dropped. The
    exact chain (:func:`.ordered.solve_ordered`, ``work_s`` of CP-SAT deterministic time each,
    within ``exact_s`` of wall time together; True goes to ``cut`` when the clock decided)
    reads the ``calibration``'s limits; past ``deadline`` no further class is chained
    (:class:`~._cpsat.OutOfTime`)."""
    t0 = time.perf_counter()
    cuts = cut if cut is not None else []
    room = _ChainRoom.of(state, placements, scope_ids)
    windows = order_segments(state, (task_of(state, tid) for items, _ in failing for tid in items))
    out = list(placements)
    dropped: list[int] = []
    for items, places in failing:
        check_deadline(deadline)
        placed_ids = {p.task_id for p in places}
        chain = [tid for tid in items if tid in placed_ids]  # the model's others stay unplaced
        options = {tid: room.options(state, tid, windows.get(tid, (None, None))) for tid in chain}
        targets = {tid: (p.day, p.slot_start) for tid, p in zip(chain, places, strict=False)}
        picks = _greedy_chain(chain, options, targets)
        left = exact_s - (time.perf_counter() - t0)
        if len(picks) < len(chain) and ordered_model.is_chain(state, options):
            # the exact chain by its programme (no CP-SAT: neither work nor clock decides)
            exact = ordered_model.solve_ordered(
                state, options, state.slots_per_day, state.num_days, time_limit_s=1.0,
                num_workers=1, hint=picks, targets=targets, calibration=calibration,
            )[3]  # fmt: skip
            if sum(p.length for p in exact) > sum(p.length for p in picks):
                picks = exact
        elif len(picks) < len(chain) and work_s > 0:  # the exact chain: most periods, near targets
            if left <= 0.05:
                cuts.append(True)  # (no time for the chain its work would have run)
            else:
                solve_t0 = time.perf_counter()
                status, _, _, exact = ordered_model.solve_ordered(
                    state,
                    options,
                    state.slots_per_day,
                    state.num_days,
                    time_limit_s=left,
                    num_workers=1,
                    hint=picks,
                    targets=targets,
                    calibration=calibration,
                    work_s=work_s,
                )
                if status != SolveStatus.OPTIMAL and ran_out(time.perf_counter() - solve_t0, left):
                    cuts.append(True)  # (its wall limit, not its work, ended it)
                if sum(p.length for p in exact) > sum(p.length for p in picks):
                    picks = exact
        chosen = {p.task_id for p in picks}
        dropped.extend(tid for tid in chain if tid not in chosen)
        for pick in picks:
            room.take(pick)
            out.append(pick)
    return out, dropped


@dataclass
class _ChainRoom:
    """What a chain may take: the free periods (the scope's tasks lifted, the placements kept
    placed) and the unlocked host blocks no guest outside the scope holds (``hosts``: day ->
    (first period, last period, host), ``taken``: (day, first period) of those with a guest)."""

    free: np.ndarray
    hosts: dict[int, list[tuple[int, int, int]]]
    taken: set[tuple[int, int]]

    @classmethod
    def of(
        cls, state: ScheduleState, placements: Sequence[Placement], scope_ids: set[int]
    ) -> _ChainRoom:
        from .problem import cleared_layers

        owner, guest = cleared_layers(state, [task_of(state, tid) for tid in scope_ids])
        free = owner == 0
        used_hosts: set[tuple[int, int]] = set()  # (day, host block's first period)
        for pl in placements:
            if pl.embed_host is None:
                free[pl.day - 1, pl.slot_start - 1 : pl.slot_end] = False
            else:
                used_hosts.add((pl.day, pl.slot_start))
        hosts: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for t in state.tasks:
            if t.can_embed and not t.locked and t.state_id not in scope_ids:
                for b in t.slots:
                    if not guest[b.day - 1, b.slot_start - 1 : b.slot_end].any():
                        hosts[b.day].append((b.slot_start, b.slot_end, t.state_id))
        taken = {
            (day, hs)
            for day, blocks in hosts.items()
            for hs, he, _ in blocks
            if any(hs <= p0 <= he for (d0, p0) in used_hosts if d0 == day)
        }
        return cls(free, hosts, taken)

    def options(
        self, state: ScheduleState, tid: int, window: tuple[Position | None, Position | None]
    ) -> list[Placement]:
        """Every place task ``tid`` may take now (its class's grid, its segment ``window``,
        free periods or a free water-course block when permitted), in time order."""
        from .problem import Placement as _Placement

        spd, num_days = state.slots_per_day, state.num_days
        task = task_of(state, tid)
        need = task.need()
        after, before = window
        lo = after if after is not None else (0, spd)
        hi = before if before is not None else (num_days + 1, 1)
        d_lo, d_hi, width = max(lo[0], 1), min(hi[0], num_days), spd - need + 1
        if d_lo > d_hi or width < 1:
            return []
        guest_ok = state.class_rules.may_embed(task) and not task.can_embed
        # (day, start) pairs of the class's grid inside the segment, in time order
        day = np.arange(d_lo, d_hi + 1)[:, None]
        s0 = np.arange(1, width + 1)[None, :]
        ok = state.class_rules.allowed_starts(task, need)[d_lo - 1 : d_hi, :width].copy()
        ok &= (day > lo[0]) | ((day == lo[0]) & (s0 > lo[1]))
        ok &= (day < hi[0]) | ((day == hi[0]) & (s0 + need - 1 < hi[1]))
        fits = fitting_starts(self.free[d_lo - 1 : d_hi], need)[:, :width]  # all periods free
        if not guest_ok:
            ok &= fits
        opts: list[Placement] = []
        for r, c in np.argwhere(ok).tolist():
            d, a = d_lo + r, c + 1
            e = a + need - 1
            if fits[r, c]:
                opts.append(_Placement(tid, d, a, e))
                continue
            for hs, he, hid in self.hosts.get(d, ()):
                if hs <= a and e <= he and (d, hs) not in self.taken:
                    opts.append(_Placement(tid, d, a, e, hid))
                    break
        return opts

    def usable(self, pl: Placement) -> bool:
        """Whether ``pl``'s periods are all free (a guest place: its host block's seat)."""
        if pl.embed_host is None:
            return bool(self.free[pl.day - 1, pl.slot_start - 1 : pl.slot_end].all())
        return self.seat(pl) not in self.taken

    def seat(self, pick: Placement) -> tuple[int, int]:
        """The host block a guest place ``pick`` takes: (day, the block's first period)."""
        return next(
            (pick.day, hs)
            for hs, he, hid in self.hosts[pick.day]
            if hid == pick.embed_host and hs <= pick.slot_start <= he
        )

    def take(self, pick: Placement) -> None:
        """``pick``'s periods (or its host block's guest seat) are no longer free."""
        if pick.embed_host is None:
            self.free[pick.day - 1, pick.slot_start - 1 : pick.slot_end] = False
            return
        self.taken.add(self.seat(pick))


def _greedy_chain(
    chain: list[int], options: dict[int, list[Placement]], targets: dict[int, Position]
) -> list[Placement]:
    """Each item of ``chain`` in turn at its first option that starts after the previous pick
    ends (and does not overlap an earlier pick: options are taken from one free grid), from its
    target on, else the earliest one before it."""
    picks: list[Placement] = []
    used: set[tuple[int, int]] = set()
    hosts: set[tuple[int, int | None]] = set()
    prev: Position = (0, 0)
    for tid in chain:
        target = targets.get(tid, prev)
        found: Placement | None = None
        fallback: Placement | None = None
        for pl in options[tid]:
            if (pl.day, pl.slot_start) <= prev:
                continue
            if pl.embed_host is None:
                if any((pl.day, q) in used for q in range(pl.slot_start, pl.slot_end + 1)):
                    continue
            elif (pl.day, pl.embed_host) in hosts:
                continue
            if (pl.day, pl.slot_start) >= target:
                found = pl
                break
            if fallback is None:
                fallback = pl
        pick = found or fallback
        if pick is None:
            continue
        picks.append(pick)
        if pick.embed_host is None:
            used.update((pick.day, q) for q in range(pick.slot_start, pick.slot_end + 1))
        else:
            hosts.add((pick.day, pick.embed_host))
        prev = (pick.day, pick.slot_end)
    return picks


P = TypeVar("P")


def order_proposal(
    state: ScheduleState,
    proposal: P,
    *,
    new_places: bool = True,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> P:
    """A proposal (:class:`.placement.Proposal`) whose placements keep the item order: the
    same proposal when they do, relabelled when that suffices (every figure unchanged: the
    swapped items are interchangeable), else cut by :func:`keep_order` — the dropped items join
    ``unplaced``, the placed periods drop, and the figures no longer describe it are withdrawn
    (``max_slots``, ``bound``, the health counts and floor: never claimed unproven), status
    ``unknown``. ``new_places=False`` keeps only the model's own places (a relabelling); an
    item the chain would put elsewhere is left unplaced instead. ``calibration``: the exact
    chains' model limits (:func:`keep_order`)."""
    placements: list[Placement] | None = getattr(proposal, "placements", None)
    if not placements:  # nothing placed (or a stand-in without placements): nothing to order
        return proposal
    unplaced: list[int] = proposal.unplaced  # type: ignore[attr-defined]
    scope = {p.task_id for p in placements} | set(unplaced)
    kept, dropped = _kept_in_order(state, placements, scope, unplaced, new_places, calibration)

    def places(pls: Sequence[Placement]) -> set[tuple[int, int, int | None]]:
        return {(p.day, p.slot_start, p.embed_host) for p in pls}

    if not dropped and places(kept) == places(placements):
        if kept == placements:
            return proposal
        return replace(proposal, placements=kept)  # type: ignore[type-var]
    # places changed (items put back elsewhere, or left out): the figures are measured again
    # where cheap (the soft terms, the health counts) and withdrawn where not (the proofs)
    from .health_eval import HealthEvaluator
    from .objective import evaluate
    from .problem import build_problem

    wide: bool = getattr(proposal, "include_suggested", False)
    problem = build_problem(state, by_subject=True, include_suggested=wide, task_ids=scope)
    weights = getattr(proposal, "weights", None) or None
    objective = evaluate(problem, kept, weights)
    counts = HealthEvaluator(state, scope, getattr(proposal, "threshold", "normal"))
    counts.set_placements(kept)
    critical, warning = counts.counts_now().key
    return replace(  # type: ignore[type-var]
        proposal,
        placements=kept,
        unplaced=sorted((scope - {p.task_id for p in kept}) | set(dropped)),
        objective=objective,
        status="unknown",
        max_slots=None,
        bound=None,
        critical=critical,
        warning=warning,
        floor=None,
        floor_least_warning=None,
    )


def _kept_in_order(
    state: ScheduleState,
    placements: list[Placement],
    scope: set[int],
    unplaced: list[int],
    new_places: bool,
    calibration: Calibration,
) -> tuple[list[Placement], list[int]]:
    """:func:`order_proposal`'s ordered placements and dropped ids. A task left out that is
    placed now stays where it is once the proposal is applied (only placements are sent), so
    the order holds against it as against an item outside the scope; an item the order step
    drops joins them, and the step runs again until none drops (a calendar proposal broke the
    order: items moved past a later item of their class that its mask kept out of the plan,
    or that the step itself dropped)."""

    def placed_now(ids: Iterable[int]) -> set[int]:
        return {u for u in ids if (t := state.task(u)) is not None and t.slots}

    staying = placed_now(unplaced)
    while True:
        kept, dropped = keep_order(state, placements, scope - staying, calibration=calibration)
        if not new_places:  # only the model's own places (a calendar scope): chained ones drop
            original = {(p.day, p.slot_start, p.embed_host) for p in placements}
            away = {p.task_id for p in kept if (p.day, p.slot_start, p.embed_host) not in original}
            kept = [p for p in kept if p.task_id not in away]
            dropped = [*dropped, *sorted(away)]
        now = placed_now(dropped) - staying
        if not now:
            return kept, sorted({*dropped, *(u for u in staying if u not in unplaced)})
        staying |= now
        placements = [p for p in placements if p.task_id not in now]


def order_start(
    run: ScopeRun,
    start: Start,
    greedy: list[Placement] | None,
    level1: CountResult,
    others: Sequence[tuple[Any, list[Placement]]] = (),
) -> tuple[Start, list[Placement] | None, CountResult, bool]:
    """The one search's start and the greedy it is guarded by (:func:`.placement.close_stage`),
    keeping the item order before the search (issue 42): the search's moves keep it
    (:class:`.moves.ItemOrder`), so the proposal needs no order step after it (which re-placed
    the search's answer and undid its gains). The start is ordered by :func:`keep_order`
    (relabelled, else its classes re-placed as chains; when a chain leaves items out, the
    exact ordered model of the whole scope, :func:`.ordered.max_placeable_ordered`, near the
    start's places, within half of what is left before the search's stop; before it, the
    ``others`` starts (name, placements), chained alike, stand in when one keeps more periods:
    the periods placed come first); the greedy likewise, used only when nothing of it drops.
    When the start's chains leave items out, ``level1`` comes back unproven with the periods
    placed (the proposal then claims no maximum, as :func:`order_proposal` withdraws it).
    Unchanged (the same objects) on a problem without ordered items, and for a calendar scope
    (its order is kept after the search, :func:`.scoped.in_item_order`). The exact chains and
    model have work budgets (shares of the run's effort); the last value says whether the wall
    clock cut one instead."""
    from .objective import evaluate

    if run.within is not None or not run.problem.groups:
        return start, greedy, level1, False
    state, scope = run.state, run.scope()
    cal = run.calibration
    cut: list[bool] = []
    # the exact chains: their work decides; the wall clock (half of what is left before the
    # search's stop) only cuts them, and the proposal then says so
    exact_s = max(0.0, 0.5 * (run.search_stop - time.perf_counter()))
    chain_work = cal.ordered_chain_share * run.effort * cal.exact_det_per_s
    kept, dropped = keep_order(
        state, start.placements, scope, exact_s, cal, work_s=chain_work, cut=cut
    )
    source = start
    if dropped and time.perf_counter() >= run.search_stop:
        cut.append(True)  # (no time to chain the other starts)
    elif dropped:  # another start, once ordered, may keep more periods
        most = sum(pl.length for pl in kept)
        better = _other_starts(run, others, most, cut)
        if better is not None:
            name, placements, kept, dropped = better
            most = sum(pl.length for pl in kept)
            source = replace(start, name=name, placements=list(placements))
        # the chains swept through time, in order from the start (no relabelling to undo)
        swept = _swept(run, scope, level1.best, cut)
        if swept is not None and sum(pl.length for pl in swept[0]) > most:
            kept, dropped = swept
            source = replace(start, name="chains", placements=list(kept))
    if dropped:  # the exact ordered model of the whole scope, near the start's places
        kept, dropped = _ordered_max(run, source.placements, kept, dropped, cut)
    if source is start and not dropped and kept == start.placements:
        new_start = start
    else:
        kept = sorted(kept, key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
        objective = evaluate(run.problem, kept, run.weights)
        new_start = replace(source, placements=kept, objective=objective)
    if dropped:
        placed = sum(pl.length for pl in kept)
        level1 = replace(level1, best=min(level1.best, placed), status=SolveStatus.UNKNOWN)
    if greedy is not None:
        greedy = _ordered_guard(run, greedy, cut)
    return new_start, greedy, level1, bool(cut)


def _other_starts(
    run: ScopeRun,
    others: Sequence[tuple[Any, list[Placement]]],
    most: int,
    cut: list[bool],
) -> tuple[Any, list[Placement], list[Placement], list[int]] | None:
    """Of the ``others`` starts (name, placements), once ordered with neither work nor wall
    time, the first keeping more periods than ``most`` and then each keeping more still:
    (its name, its placements, ordered, the ids it drops); None when none does. Past the
    search's stop no further start is ordered (the clock decided: True goes to ``cut``)."""
    scope, cal = run.scope(), run.calibration
    best = None
    for name, placements in others:
        try:
            alt, lost = keep_order(
                run.state, placements, scope, 0.0, cal, work_s=0.0, deadline=run.search_stop
            )
        except OutOfTime:
            cut.append(True)
            break
        if sum(pl.length for pl in alt) > most:
            most = sum(pl.length for pl in alt)
            best = (name, placements, alt, lost)
    return best


def _ordered_guard(
    run: ScopeRun, greedy: list[Placement], cut: list[bool]
) -> list[Placement] | None:
    """The greedy guard of the close stage with the item order kept (None when that drops a
    task, or the search's stop passes first: the search then goes alone, True in ``cut``)."""
    if time.perf_counter() >= run.search_stop:
        cut.append(True)
        return None
    try:
        ordered, lost = keep_order(
            run.state, greedy, run.scope(), 0.0, run.calibration, work_s=0.0,
            deadline=run.search_stop,
        )  # fmt: skip
    except OutOfTime:
        cut.append(True)
        return None
    return None if lost else ordered


def _ordered_max(
    run: ScopeRun,
    placements: list[Placement],
    kept: list[Placement],
    dropped: list[int],
    cut: list[bool],
) -> tuple[list[Placement], list[int]]:
    """The exact ordered model of ``run``'s scope, hinted with ``kept``, in two solves: the
    most periods (no distance term: the model a feasibility check proves fastest), then,
    only when that places more than ``kept``, the same most periods nearest each task's place
    in ``placements`` (hinted with the first answer, capped at its periods: every answer it
    finds places as many). Its answer when it places more periods than ``kept``, else ``kept``
    and ``dropped``. Their work (``ordered_max_share`` of the effort, at most
    ``ordered_max_work``, shared out by ``ordered_max_split``) decides; the wall clock (half
    of what is left before the search's stop) only cuts, and True then goes to ``cut``."""
    from .ordered import max_placeable_ordered

    cal = run.calibration
    t0 = time.perf_counter()
    limit = 0.5 * (run.search_stop - t0)
    if limit < 0.1:
        cut.append(True)  # (no time for what its work would have found)
        return kept, dropped
    work = min(cal.ordered_max_share * run.effort * cal.exact_det_per_s, cal.ordered_max_work)
    most_work = cal.ordered_max_split * work
    status, best, _, exact = max_placeable_ordered(
        run.state, run.problem, time_limit_s=limit, num_workers=run.num_workers, hint=kept,
        calibration=cal, work_s=most_work,
    )  # fmt: skip
    if status != SolveStatus.OPTIMAL and ran_out(time.perf_counter() - t0, limit):
        cut.append(True)
    if best <= sum(pl.length for pl in kept):
        return kept, dropped
    t1 = time.perf_counter()
    near_limit = limit - (t1 - t0)
    if near_limit >= 0.05:
        status, near_best, _, near = max_placeable_ordered(
            run.state, run.problem, time_limit_s=near_limit, num_workers=run.num_workers,
            hint=exact, calibration=cal, upper=best, work_s=work - most_work,
            targets={pl.task_id: (pl.day, pl.slot_start) for pl in placements},
        )  # fmt: skip
        if status != SolveStatus.OPTIMAL and ran_out(time.perf_counter() - t1, near_limit):
            cut.append(True)
        if near_best >= best:
            exact = near
    else:
        cut.append(True)
    placed = {pl.task_id for pl in exact}
    out = sorted(exact, key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
    return out, sorted(tid for tid in run.scope() if tid not in placed)


def _swept(
    run: ScopeRun, scope: Collection[int], target: int, cut: list[bool]
) -> tuple[list[Placement], list[int]] | None:
    """:func:`sweep_chains` of ``scope`` as an ordered start: its placements and the scope
    tasks it leaves out (none when it places the ``target`` periods, level 1's most: then
    the unordered maximum is met in order). None when the search's stop passed during it
    (True then goes to ``cut``) or it leaves out a task that stands somewhere now (a
    re-planned suggested one): applying the proposal would leave that task where it is,
    where the items placed around it may break its order."""
    state = run.state
    placements = sweep_chains(state, scope, late=lambda: time.perf_counter() > run.search_stop)
    if placements is None:
        cut.append(True)
        return None
    placed = {pl.task_id for pl in placements}
    if any(task_of(state, tid).slots for tid in scope if tid not in placed):
        return None
    if sum(pl.length for pl in placements) >= target:
        return placements, []
    return placements, sorted(tid for tid in scope if tid not in placed)


def sweep_chains(
    state: ScheduleState, scope: Collection[int], late: Callable[[], bool] = lambda: False
) -> list[Placement] | None:
    """The ``scope`` tasks placed in one pass through time, each class's items in their order
    (a start of a proposal whose counting witness the order breaks, issue 42). Each class's
    ordered items are a chain (by order, then id); at each step every chain's next item has its
    earliest place left after its chain's last item (every rule but the order read as
    :func:`_chain`'s room does: the class's grid and segment, free periods or a free
    water-course block where permitted); of those starting within a day of the earliest, the
    one whose latest start (its chain's backward pass over its own places, no other chain in
    the way) comes first takes its place — earliest deadline first, so a class whose dates end
    soon is not crowded out by one with room later. Then each task outside any order, by id,
    at its first place left. A task with no place left is left out. Deterministic, no solver
    (0.005-0.27 s at 13-60 days, docs/decisions.md); None when ``late()`` turns true between
    steps."""
    scope_ids = set(scope)
    tasks = {tid: task_of(state, tid) for tid in sorted(scope_ids)}
    lines, loose = _chains_of(tasks)
    windows = order_segments(state, (tasks[tid] for items in lines for tid in items))
    room = _ChainRoom.of(state, [], scope_ids)
    spd = state.slots_per_day

    def index(day: int, period: int) -> int:
        return (day - 1) * spd + period

    options: dict[int, list[Placement]] = {}
    for tid in tasks:
        if late():
            return None
        options[tid] = room.options(state, tid, windows.get(tid, (None, None)))
    starts = {tid: [index(p.day, p.slot_start) for p in opts] for tid, opts in options.items()}
    latest = _latest_starts(lines, options, index, (state.num_days + 1) * spd + 1)
    usable = room.usable

    def first(tid: int, front: int) -> Placement | None:
        k = bisect.bisect_right(starts[tid], front)
        return next((p for p in options[tid][k:] if usable(p)), None)

    pointer = [0] * len(lines)
    front = [0] * len(lines)  # the global index of each chain's last item's end
    nxt: list[Placement | None] = [None] * len(lines)
    out: list[Placement] = []
    while True:
        if late():
            return None
        for c, items in enumerate(lines):
            while pointer[c] < len(items) and ((p := nxt[c]) is None or not usable(p)):
                nxt[c] = first(items[pointer[c]], front[c])
                if nxt[c] is None:
                    pointer[c] += 1  # (no place left after the chain's last item: left out)
        at = {
            c: index(p.day, p.slot_start)
            for c in range(len(lines))
            if pointer[c] < len(lines[c]) and (p := nxt[c]) is not None
        }
        if not at:
            break
        soonest = min(at.values())
        c = min(
            (c for c in at if at[c] <= soonest + spd),
            key=lambda c: (latest[lines[c][pointer[c]]], at[c], c),
        )
        pick = nxt[c]
        assert pick is not None
        room.take(pick)
        out.append(pick)
        front[c] = index(pick.day, pick.slot_end)
        pointer[c] += 1
        nxt[c] = None
    for tid in loose:
        pick = first(tid, 0)
        if pick is not None:
            room.take(pick)
            out.append(pick)
    return out


def _latest_starts(
    lines: list[list[int]],
    options: dict[int, list[Placement]],
    index: Callable[[int, int], int],
    past: int,
) -> dict[int, int]:
    """Per item of each chain of ``lines`` (task ids in order), its latest start (``index``: the
    global period index of a day's period) with its chain's later items after it, each at its
    own latest (a backward pass over the ``options``, no other chain in the way; ``past``: an
    index past every period). An item no later place of which fits before the next item's gets
    its own latest start."""
    latest: dict[int, int] = {}
    for items in lines:
        after = past
        for tid in reversed(items):
            ends = [(index(p.day, p.slot_start), index(p.day, p.slot_end)) for p in options[tid]]
            fit = [s for s, e in ends if e < after]
            latest[tid] = max(fit) if fit else max((s for s, _ in ends), default=after)
            after = latest[tid] if fit else after
    return latest


def _chains_of(tasks: dict[int, Task]) -> tuple[list[list[int]], list[int]]:
    """Each class's ordered items among ``tasks`` (by order, then id; classes by id), and the
    ids of the tasks outside any order."""
    chains: dict[int, list[int]] = defaultdict(list)
    loose: list[int] = []
    for tid, task in tasks.items():
        okey = order_key(task)
        if okey is None:
            loose.append(tid)
        else:
            chains[okey[0]].append(tid)
    lines = [
        sorted(chains[k], key=lambda tid: (tasks[tid].task_order or 0, tid)) for k in sorted(chains)
    ]
    return lines, loose
