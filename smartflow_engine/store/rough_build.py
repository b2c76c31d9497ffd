"""``Store.rough_build``: SmartFlow-Agent's 粗排 (``backend/services/agent/node/rough_build.go``),
answered by the proposal search instead of the greedy (issue 41 item 5).

Given a user and task class ids, the classes' pending items are placed by
:func:`~smartflow_engine.solver.placement.propose_placement` with every rule of the state
(class dates, half-day bans, banned weekdays, water-course permission, item order), on the window
the classes' dates span (``SMARTFLOW_SEMESTER_START`` numbers the weeks; without dates, the
teaching-week days our extension table keeps). The answer is in the backend's coordinates,
``(task_item_id, week, day_of_week, section_from, section_to, embed_course_event_id)``, and
nothing is written. When not everything fits it is not an abort: what fits, the proven maximum,
the capacity gap and the negotiation figures.

The time limit holds for the whole call by the wall clock (issue 41): loading, the proposal
(its order stage included: :func:`~smartflow_engine.solver.order.keep_order` has a wall limit of
its own after the search, kept aside here), the check of the maximum and the negotiation
figures each get what the clock has left, and a step with too little left is skipped. The
answer says so: ``clock_cut`` (the proposal's search was wall-limited, a step was skipped or
ended unproven) and ``skipped`` (the steps not run). The solver's one-time imports are paid
before the clock starts, as a tool call's are.

A class without a start or an end date (the backend's columns are nullable; only its API
requires them) is bounded by the window the other asked classes' dates span: the earliest start
(week 1's Monday when no class has one) and the latest end; a request no class of which has an
end is refused (nothing bounds the window).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from . import models as m
from .days import StoreError, WeekDay, class_week_day, window_days
from .load import extensions

if TYPE_CHECKING:
    from .sql_store import Store

# The search's share of the time the loading left (the rest: the maximum and the figures).
PROPOSAL_SHARE = 0.6
# The wall time the proposal's order stage may take after its search
# (:func:`..solver.order.keep_order`'s ``exact_s``, not bounded by the proposal's limit), with
# its model building's margin.
ORDER_STAGE_S = 0.55
# Kept for the answer itself after the last step.
AFTER_MARGIN_S = 0.03
# Below these a step is skipped (the search needs its own floor, see Calibration.min_work_s).
MIN_PROPOSAL_S = 0.05
MIN_STEP_S = 0.02


@dataclass
class RoughBuild:
    """A rough build's answer (nothing written).

    ``placements`` in the backend's coordinates; ``unplaced`` the item ids left out;
    ``all_fit`` whether every pending item is placed; ``proven`` whether ``max_slots`` (the most
    sections the items can take at once) is proven; ``capacity_gap`` required - maximum (when
    proven); ``negotiation`` the figures of P1-F when not all fit (extra days, lifting bans or
    class rules, sections to cut); ``clock_cut`` whether the time limit cut the call (the
    search ended on the clock, or a step was skipped or left unproven); ``skipped`` the steps
    not run for want of time (``proposal``, ``maximum``, ``negotiation``).
    """

    user_id: int
    task_class_ids: list[int]
    window: dict[str, int]
    placements: list[dict[str, int]] = field(default_factory=list)
    unplaced: list[int] = field(default_factory=list)
    all_fit: bool = True
    required_slots: int = 0
    placed_slots: int = 0
    max_slots: int | None = None
    proven: bool = False
    capacity_gap: int | None = None
    negotiation: dict[str, Any] | None = None
    status: str = "unknown"
    runtime_s: float = 0.0
    num_workers: int = 1
    clock_cut: bool = False
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def class_span(store: Store, user_id: int, class_ids: Collection[int]) -> tuple[Any, Any]:
    """The ``(week, day_of_week)`` span of the user's classes ``class_ids``.

    Raises
    ------
    StoreError
        A class the user does not own, or no class with a start and an end.
    """
    from ..settings import current

    semester_start = current().semester_start
    with store.session() as s:
        rows = s.execute(
            select(m.TaskClass.id, m.TaskClass.start_date, m.TaskClass.end_date).where(
                m.TaskClass.user_id == user_id, m.TaskClass.id.in_(list(class_ids))
            )
        ).all()
        ext = extensions(s, "task_class", [int(r[0]) for r in rows])
    missing = sorted(set(class_ids) - {int(r[0]) for r in rows})
    if missing:
        raise StoreError(f"task classes {missing} are not classes of user {user_id}")
    starts: list[WeekDay] = []
    ends: list[WeekDay] = []
    for cid, start, end in rows:
        e = ext.get(int(cid), {})
        for day, kept, out in ((start, e.get("start"), starts), (end, e.get("end"), ends)):
            if day is None and not isinstance(kept, dict):
                continue  # a NULL date: bounded by the others' window (the module docstring)
            found = class_week_day(day, kept, semester_start)
            if found is None:
                raise StoreError(
                    f"task class {cid} has a start or end the engine cannot place on teaching "
                    "weeks (start_date/end_date need SMARTFLOW_SEMESTER_START, the date of week "
                    "1's Monday)"
                )
            out.append(found)
    if not ends:
        raise StoreError(
            f"task classes {sorted(int(r[0]) for r in rows)} have no end date: nothing bounds "
            "the window (give one of them an end_date)"
        )
    return min(starts) if starts else (1, 1), max(ends)


def rough_build(
    store: Store,
    user_id: int,
    task_class_ids: Collection[int],
    *,
    time_limit_s: float = 5.0,
    num_workers: int = 1,
    slots_per_day: int = 12,
    seed: int = 0,
) -> RoughBuild:
    """See the module docstring. ``time_limit_s`` bounds the whole call (loading, the model
    building and every solve); ``num_workers`` is CP-SAT's worker count."""
    from ..solver.feasibility import check_feasibility, negotiation_figures
    from ..solver.placement import propose_placement, warm_imports

    warm_imports()  # once per process, before the call's clock (as a tool call's)
    t0 = time.perf_counter()
    stop = t0 + time_limit_s

    def left() -> float:
        return stop - time.perf_counter()

    ids = sorted({int(c) for c in task_class_ids})
    if not ids:
        raise StoreError("no task class ids given")
    start, end = class_span(store, user_id, ids)
    state = store.load_window(
        user_id, window_days(start, end), slots_per_day=slots_per_day, task_class_ids=ids
    )
    # Only the asked classes' pending items are placed; other pending items stay out.
    scope = [t for t in state.tasks if t.status == "pending" and t.task_class_id in ids]
    others = {t.state_id for t in state.tasks if t.status == "pending"} - {
        t.state_id for t in scope
    }
    state.tasks = [t for t in state.tasks if t.state_id not in others]
    out = RoughBuild(
        user_id,
        ids,
        {"start_week": start[0], "start_day_of_week": start[1]}
        | {"end_week": end[0], "end_day_of_week": end[1]},
        num_workers=num_workers,
    )
    out.required_slots = sum(t.need() for t in scope)
    if not scope:
        out.proven, out.max_slots, out.capacity_gap, out.status = True, 0, 0, "optimal"
        out.runtime_s = time.perf_counter() - t0
        return out
    # The order stage after the search has its own wall limit (kept aside when an item is
    # ordered); the search gets PROPOSAL_SHARE of what is left, the rest is the figures'.
    reserve = ORDER_STAGE_S if any(t.task_order for t in scope) else 0.0
    budget = min(PROPOSAL_SHARE * left(), left() - reserve - AFTER_MARGIN_S)
    tasks = {t.state_id: t for t in state.tasks}
    if budget < MIN_PROPOSAL_S:  # no time for the search: nothing placed, said so
        out.unplaced = sorted(t.source_id for t in scope)
        out.all_fit, out.clock_cut = False, True
        out.skipped = ["proposal", "maximum", "negotiation"]
        out.runtime_s = time.perf_counter() - t0
        return out
    proposal = propose_placement(state, time_limit_s=budget, seed=seed, num_workers=num_workers)
    out.clock_cut = proposal.wall_limited
    mapping = state.window.day_mapping
    for p in proposal.placements:
        task = tasks[p.task_id]
        day = mapping[p.day - 1]
        host = tasks.get(p.embed_host) if p.embed_host is not None else None
        out.placements.append(
            {
                "task_item_id": task.source_id,
                "week": day.week,
                "day_of_week": day.day_of_week,
                "section_from": p.slot_start,
                "section_to": p.slot_end,
                "embed_course_event_id": host.source_id
                if host is not None and host.source == "event"
                else 0,
            }
        )
    out.placements.sort(key=lambda r: (r["week"], r["day_of_week"], r["section_from"]))
    out.unplaced = sorted(tasks[i].source_id for i in proposal.unplaced)
    out.placed_slots = sum(p.length for p in proposal.placements)
    out.all_fit = not proposal.unplaced
    out.status = proposal.status
    out.max_slots = proposal.max_slots
    out.proven = proposal.status in ("optimal", "feasible") or out.all_fit
    if out.all_fit:
        out.max_slots, out.capacity_gap = out.required_slots, 0
    else:
        _after(state, out, left, num_workers, check_feasibility, negotiation_figures)
    out.runtime_s = time.perf_counter() - t0
    return out


def _after(
    state: Any,
    out: RoughBuild,
    left: Callable[[], float],
    num_workers: int,
    check_feasibility: Callable[..., Any],
    negotiation_figures: Callable[..., Any],
) -> None:
    """The proven maximum and the negotiation figures when not all fit, each within what the
    clock has left (a step with less than :data:`MIN_STEP_S` is skipped, an unproven one is a
    cut: both said in ``out``)."""
    check_s = (left() - AFTER_MARGIN_S) / 2
    if check_s < MIN_STEP_S:
        out.clock_cut = True
        out.skipped += ["maximum", "negotiation"]
        if out.max_slots is not None and out.proven:
            out.capacity_gap = out.required_slots - out.max_slots
        return
    report = check_feasibility(state, time_limit_s=check_s, num_workers=num_workers)
    if report.proven:
        out.max_slots, out.capacity_gap, out.proven = (
            report.feasible_slots,
            report.capacity_gap,
            True,
        )
    else:
        out.clock_cut = True
        if out.max_slots is not None and out.proven:
            out.capacity_gap = out.required_slots - out.max_slots
    figures_s = left() - AFTER_MARGIN_S
    if figures_s < MIN_STEP_S:
        out.clock_cut = True
        out.skipped.append("negotiation")
        return
    figures = negotiation_figures(state, report, time_limit_s=figures_s, num_workers=num_workers)
    out.negotiation = asdict(figures)
    out.clock_cut = out.clock_cut or not figures.proven
