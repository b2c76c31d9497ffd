"""The exact floor of the per-day rules with the item order held (issue 42).

:mod:`.health_model` bounds ``day_utilization``, ``buffer`` and ``free_fragmentation`` over day
patterns: days alike are counted together, which is what makes it fast, and what makes it blind
to the item order (a class's items must follow each other in time, so which items a day takes
depends on the days before it). On upstream-shaped windows the order is what keeps a schedule
from closing: the order-free floor says (0, 0) where no ordered schedule gets there.

This model places every movable block on its own: one boolean per task and place (the places
every class rule allows, :func:`.ordered.place_options`, each start inside a host block too),
the order as :class:`.ordered.OrderedModel`'s frontier, and per day its load (fixed periods
plus the blocks in free periods; a guest adds none), whether a pair of adjacent periods stays
free (the day's buffer: a free run of two), and per period whether it stays free and usable
(free, with a free neighbour: a run of at least two). From those, the three rules' issues
exactly as :mod:`.health_model` counts them, solved in three lexicographic steps (least
criticals, least critical + warning, least warnings at the least criticals). Every bound it
proves holds for every schedule that keeps every class rule (the order included), places every
placed movable task and at least ``pending_min`` pending periods.

It answers only for populations it models exactly (:func:`ordered_days`): every movable task
pending or a suggested one of one block, the placed items in order now (from an ordered state
every write keeps the order); a suggested task standing where its class's rules no longer allow
it may also stay where it is (no write makes it move). An existing task (which may stand
anywhere) makes it claim nothing.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any, ClassVar

import numpy as np

from ..rules import Level
from ..state import ScheduleState, Task
from ._cpsat import SolveStatus, cp_model, make_solver, ran_out, status_of
from .budget import DEFAULT_CALIBRATION, Calibration
from .health_model import ExactDays, rule_tables
from .order import order_kept
from .ordered import OrderedModel, place_options, solve_ordered
from .problem import Placement, Problem, build_problem


def ordered_days(
    state: ScheduleState,
    movable_ids: Collection[int],
    *,
    level: Level,
    pending_min: int,
    count_load: bool,
    count_buffer: bool,
    time_limit_s: float,
    num_workers: int = 1,
    work_s: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> ExactDays:
    """Least (critical, critical + warning) issues of ``day_utilization`` (``count_load``),
    ``buffer`` and ``free_fragmentation`` (``count_buffer``) over every schedule in which the
    ``movable_ids`` tasks move keeping every class rule, the item order included (see the
    module docstring), the answer as :class:`.health_model.ExactDays` (``solution`` None).
    ``time_limit_s`` bounds the whole call, the building included; ``work_s``: CP-SAT's
    deterministic time for the three solves together (one worker: the same answer on any
    machine the clock does not cut; ``wall_cut`` says when it did). Not ``proven`` when the
    population is not one it models, the model is larger than ``ordered_max_options`` places,
    or no bound was found in time."""
    cp_model()  # (the process's one-time import of CP-SAT is not the call's time)
    t0 = time.perf_counter()
    deadline = t0 + time_limit_s

    def nothing(wall: bool = False) -> ExactDays:
        return ExactDays(False, runtime_s=time.perf_counter() - t0, wall_cut=wall)

    problem = build_problem(state, task_ids=movable_ids, subjects=False)
    if {tid for g in problem.groups for tid in g.task_ids} != set(movable_ids):
        return nothing()  # (a movable task the proposals' rules do not move)
    until = t0 + calibration.ordered_build_share * time_limit_s
    options = place_options(
        problem, every_guest_start=True, late=lambda: time.perf_counter() > until
    )
    if options is None:
        return nothing(wall=True)
    if not _modelled(state, options):
        return nothing()
    _add_own_places(state, options)
    if sum(len(o) for o in options.values()) > calibration.ordered_max_options:
        return nothing()
    if time.perf_counter() > until:
        return nothing(wall=True)
    # a start: the most periods in order (its model finds one far sooner than this one would)
    seed_t0 = time.perf_counter()
    seed_s = calibration.ordered_build_share * (deadline - seed_t0)
    seeded, _, _, start = solve_ordered(
        state, options, problem.slots_per_day, problem.num_days, time_limit_s=seed_s,
        num_workers=num_workers, calibration=calibration, host_blocks=problem.hosts,
        work_s=None if work_s is None else calibration.ordered_floor_seed_share * work_s,
    )  # fmt: skip
    if time.perf_counter() > deadline:
        return nothing(wall=True)
    until = time.perf_counter() + calibration.ordered_build_share * (deadline - time.perf_counter())
    model = OrderedDaysModel(problem.slots_per_day, problem.num_days, until)
    model.seat_blocks(problem.hosts)
    if not model.build_days(state, problem, options, level, pending_min, count_load, count_buffer):
        return nothing(wall=True)
    # the clock, not the work, ended the start: what follows may differ on a faster machine
    seed_cut = seeded != SolveStatus.OPTIMAL and ran_out(time.perf_counter() - seed_t0, seed_s)
    model.add_hint(start)
    left = None if work_s is None else (1 - calibration.ordered_floor_seed_share) * work_s
    found = model.solve_days(deadline, num_workers, left, t0)
    if seed_cut and not found.figures.get("complete"):
        found.wall_cut = True
    return found


def _modelled(state: ScheduleState, options: dict[int, list[Placement]]) -> bool:
    """Whether the model holds the population exactly: every movable task is pending or a
    suggested one of one block, and the placed items keep their order now (the writes keep
    it from an ordered state on)."""
    placed: list[Placement] = []
    for t in state.tasks:
        if t.status != "pending" and t.state_id not in options:
            placed += [Placement(t.state_id, b.day, b.slot_start, b.slot_end) for b in t.slots]
    for tid in options:
        task = state.task(tid)
        if task is None:
            return False
        if task.status == "pending":
            continue
        if task.status != "suggested" or len(task.slots) != 1:
            return False
        placed.append(_where(task))
    return order_kept(state, placed)


def _add_own_places(state: ScheduleState, options: dict[int, list[Placement]]) -> None:
    """A suggested task standing where its class's rules no longer allow it may stay there (a
    write never makes it move): its place joins its options."""
    for tid, here in options.items():
        task = state.task(tid)
        if task is not None and task.status == "suggested" and len(task.slots) == 1:
            now = _where(task)
            if now not in here:
                here.append(now)


def _where(task: Task) -> Placement:
    """The place of ``task``'s one block, as an option."""
    b = task.slots[0]
    return Placement(task.state_id, b.day, b.slot_start, b.slot_end, task.embed_host)


class OrderedDaysModel(OrderedModel):
    """:class:`.ordered.OrderedModel`'s places and order frontier (no symmetry: a pending item
    and a placed one are not interchangeable here) with the per-day rules' issues as the
    objective (:meth:`build_days`, :meth:`solve_days`)."""

    # The bounds' solves run with CP-SAT's LP (the load sums' bounds come from it) and its
    # lower-bound tree search (one worker: the search that raises the objective's bound, where
    # the default one looks for better schedules; on the 13-day upstream window it proves the
    # bound of 2 from 15 units of work on, the default did at some budgets only); the first
    # solve, which looks for a schedule, runs with the maximum's parameters
    # (:attr:`.ordered.OrderedModel.solver_params`: implications alone find one far sooner).
    bound_params: ClassVar[dict[str, int]] = {"optimize_with_lb_tree_search": True}

    def build_days(
        self,
        state: ScheduleState,
        problem: Problem,
        options: dict[int, list[Placement]],
        level: Level,
        pending_min: int,
        count_load: bool,
        count_buffer: bool,
    ) -> bool:
        """Places, order, what must be placed, and the rules' terms; False when the build
        time ran out."""
        self.symmetry = False
        if not self.add_places(options) or not self.add_precedence(state) or self._late():
            return False
        self.add_placed(state, pending_min)
        owner = problem.owner
        util_cw, buf_cw, frag_from = rule_tables(
            level, self.spd, owner.shape[0], count_load, count_buffer
        )
        self.add_day_terms(owner, util_cw, buf_cw, frag_from, count_buffer)
        return not self._late()

    def add_placed(self, state: ScheduleState, pending_min: int) -> None:
        """A placed task stays placed; the pending ones place at least ``pending_min``
        periods."""
        pending: list[tuple[Any, int]] = []
        for tid, here in self.chosen.items():
            task = state.task(tid)
            if task is not None and task.status == "pending":
                pending += [(v, p.length) for v, p in here]
            else:
                self.model.add_exactly_one(v for v, _ in here)
        weighted = self.cp.LinearExpr.weighted_sum
        self.pending = weighted([v for v, _ in pending], [w for _, w in pending])
        self.pending_min = pending_min

    def add_day_terms(
        self,
        owner: np.ndarray,
        util_cw: Sequence[tuple[int, int]],
        buf_cw: Sequence[tuple[int, int]],
        frag_from: tuple[int | None, int | None],
        count_buffer: bool,
    ) -> None:
        """Per day its load's ``day_utilization`` terms and its buffer; the window's
        ``buffer`` and ``free_fragmentation`` issues (as :class:`.health_model.ExactDaysModel`
        counts them)."""
        model, weighted = self.model, self.cp.LinearExpr.weighted_sum
        num_days, spd = owner.shape
        on_day: dict[int, list[tuple[Any, int]]] = defaultdict(list)
        on_cell: dict[tuple[int, int], list[Any]] = defaultdict(list)
        for here in self.chosen.values():
            for v, p in here:
                if p.embed_host is None:
                    on_day[p.day].append((v, p.length))
                    for q in range(p.slot_start, p.slot_end + 1):
                        on_cell[(p.day, q)].append(v)
        crit: list[Any] = []
        crit_warn: list[Any] = []
        no_buffer: list[Any] = []
        free_terms: list[Any] = []
        usable_terms: list[Any] = []
        for d in range(1, num_days + 1):
            if self._late():
                return  # (build_days answers False: the building ran out of time)
            row = owner[d - 1] == 0
            placed = on_day.get(d, [])
            load = int(np.count_nonzero(~row)) + weighted(
                [v for v, _ in placed], [w for _, w in placed]
            )
            for col, out in ((0, crit), (1, crit_warn)):
                first = next((x for x in range(spd + 1) if util_cw[x][col]), None)
                if first is None:
                    continue
                over = model.new_bool_var(f"over{col}_{d}")
                model.add(load <= first - 1 + spd * over)
                out.append(over)
            if not count_buffer:
                continue
            free = {q: 1 - sum(on_cell.get((d, q), ())) for q in range(1, spd + 1) if row[q - 1]}
            pairs = []
            for q in free:
                if q + 1 in free:
                    pair = model.new_bool_var(f"pair_{d}_{q}")
                    model.add(pair <= free[q])
                    model.add(pair <= free[q + 1])
                    pairs.append(pair)
            if len(pairs) == 0:
                no_buffer.append(1)
            else:
                lacks = model.new_bool_var(f"no_buffer_{d}")
                model.add(lacks >= 1 - sum(pairs))
                no_buffer.append(lacks)
            for q, f in free.items():
                free_terms.append(f)
                near = [free[r] for r in (q - 1, q + 1) if r in free]
                if near:
                    usable = model.new_bool_var(f"usable_{d}_{q}")
                    model.add(usable <= f)
                    model.add(usable <= sum(near))
                    usable_terms.append(usable)
        if count_buffer:
            nb = sum(no_buffer)
            for col, out in ((0, crit), (1, crit_warn)):
                first = next((n for n in range(num_days + 1) if buf_cw[n][col]), None)
                if first is not None:
                    issue = model.new_bool_var(f"buffer{col}")
                    model.add(nb <= first - 1 + num_days * issue)
                    out.append(issue)
            self._add_fragmentation(free_terms, usable_terms, frag_from, crit, crit_warn)
        self.crit = sum(crit)
        self.crit_warn = sum(crit_warn)

    def _add_fragmentation(
        self,
        free_terms: list[Any],
        usable_terms: list[Any],
        frag_from: tuple[int | None, int | None],
        crit: list[Any],
        crit_warn: list[Any],
    ) -> None:
        """The window's ``free_fragmentation`` issue by its rate (free - usable) / free, as
        :meth:`.health_model.ExactDaysModel.add_fragmentation` writes it."""
        if frag_from == (None, None) or not free_terms:
            return
        model = self.model
        # (as variables: a sum of constants alone would compare to a plain bool)
        most = len(free_terms)
        free_sum = model.new_int_var(0, most, "free_sum")
        usable_sum = model.new_int_var(0, most, "usable_sum")
        model.add(free_sum == sum(free_terms))
        model.add(usable_sum == sum(usable_terms))
        some_free = model.new_bool_var("some_free")
        model.add(free_sum >= 1).only_enforce_if(some_free)
        model.add(free_sum <= 0).only_enforce_if(~some_free)
        for col, (least, out) in enumerate(zip(frag_from, (crit, crit_warn), strict=True)):
            if least is None:
                continue
            issue = model.new_bool_var(f"fragmentation{col}")
            model.add(
                20_000 * (free_sum - usable_sum) - (2 * least + 1) * free_sum <= -1
            ).only_enforce_if([~issue, some_free])
            out.append(issue)

    def solve_days(
        self, deadline: float, num_workers: int, work_s: float | None, t0: float
    ) -> ExactDays:
        """0. a schedule placing ``pending_min`` pending periods (the most pending periods:
        the objective leads the search to one, where a bare feasibility search wanders), then
        held; 1. least criticals; 2. least critical + warning; 3. least warnings at the least
        criticals (when proven). Each solve gets a share of the time and work left and starts
        from the last one's solution."""
        model = self.model
        work_left = work_s
        wall_cut = False
        bounds: list[int] = []
        optimal: list[bool] = []
        variables = [
            model.get_int_var_from_proto_index(i) for i in range(len(model.proto.variables))
        ]
        # during the first solve only: no need to look past ``pending_min``
        capped = model.new_bool_var("capped")
        model.add(self.pending <= self.pending_min).only_enforce_if(capped)
        for step, part in enumerate((0.3, 0.5, 0.6, 1.0)):
            domain = model.proto.variables[capped.index].domain
            domain[0] = domain[1] = int(step == 0)
            if step == 0:
                if self.pending_min <= 0:
                    continue
                model.maximize(self.pending)
            elif step == 1:
                model.add(self.pending >= self.pending_min)
                model.minimize(self.crit)
            elif step == 3:
                if not optimal[0]:
                    break
                model.add(self.crit <= bounds[0])
                model.minimize(self.crit_warn - self.crit)
            else:
                model.minimize(self.crit_warn)
            share = (deadline - time.perf_counter()) * part
            if share <= 0.01:
                wall_cut = True
                break
            det = None if work_left is None else work_left * part
            solver = make_solver(share, num_workers, deterministic_time=det)
            for name, value in (self.solver_params if step == 0 else self.bound_params).items():
                setattr(solver.parameters, name, value)
            t_solve = time.perf_counter()
            status = status_of(solver.solve(model))
            if work_left is not None:
                work_left = max(0.0, work_left - solver.deterministic_time)
            if status.value not in ("optimal", "feasible"):
                wall_cut = wall_cut or ran_out(time.perf_counter() - t_solve, share)
                break
            if step == 0:
                if solver.objective_value < self.pending_min:
                    # (no schedule found placing as many: nothing claimed)
                    wall_cut = wall_cut or ran_out(time.perf_counter() - t_solve, share)
                    break
                self._hint(solver, variables)
                continue
            if status.value != "optimal" and (
                det is None or ran_out(time.perf_counter() - t_solve, share)
            ):
                wall_cut = True
            bounds.append(int(np.ceil(solver.best_objective_bound - 1e-6)))
            optimal.append(status.value == "optimal")
            self._hint(solver, variables)
        runtime = time.perf_counter() - t0
        if not bounds:
            return ExactDays(False, runtime_s=runtime, wall_cut=wall_cut)
        complete = len(bounds) == 3 and all(optimal)
        return ExactDays(
            True,
            critical=bounds[0],
            critical_warning=max(bounds[0], bounds[1]) if len(bounds) > 1 else bounds[0],
            lex_warning=bounds[2] if len(bounds) > 2 else None,
            runtime_s=runtime,
            figures={"complete": complete, "ordered": True},
            wall_cut=wall_cut and not complete,
        )

    def _hint(self, solver: Any, variables: list[Any]) -> None:
        """The next solve starts from ``solver``'s solution."""
        model: Any = self.model  # (the SDK's hint methods are untyped)
        model.clear_hints()
        for v in variables:
            model.add_hint(v, solver.value(v))


__all__ = ["OrderedDaysModel", "ordered_days"]
