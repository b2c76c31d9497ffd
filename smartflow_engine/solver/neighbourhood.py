"""The large-neighbourhood search of a proposal on long windows: re-solve a few days at a time.

Every soft term of :mod:`.objective` is a sum over days, and a neighbourhood's model
(:class:`.submodel.SubModel` on its days) holds the window's free total fixed, so the mean day load
is a constant and a neighbourhood's change of the objective is exactly the global change. The
search keeps every strict improvement. It is bounded by a deterministic estimate of the seconds
spent (see :mod:`.budget`), the wall-clock deadline being only a safety net, so a seed gives the
same search on any machine that finishes it in time.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from ._cpsat import SolveStatus, make_solver, status_of
from .budget import DEFAULT_CALIBRATION, Calibration
from .problem import Placement
from .submodel import SubModel, WindowData


def neighbourhood_search(
    win: WindowData,
    current: dict[int, Placement],
    stop: float,
    budget: float,
    seed: int,
    num_workers: int,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> tuple[dict[int, Placement], int]:
    """Re-solve two days at a time; keep each strict improvement.

    Half the neighbourhoods pair a heavily loaded day with a lightly loaded one (what load
    balancing needs), the other half are random pairs (switches, isolated periods, categories).
    A pair already solved without improvement is not tried again until one of its days changes.
    ``budget`` is in estimated seconds (the costs of ``calibration``, see :mod:`.budget`); no neighbourhood starts after
    ``stop`` (a ``time.perf_counter()`` value) and none is solved past it. Returns the placement
    and the number of neighbourhoods solved.
    """
    problem = win.problem
    rng = np.random.default_rng(seed)
    group_of = problem.group_of()
    cal = calibration  # ``budget``: estimated seconds, from deterministic measures only
    spent = 0.0
    iterations = 0
    half = max(1, cal.lns_days // 2)
    num_days = problem.num_days
    load = win.fixed_load.astype(float).copy()
    for pl in current.values():
        if pl.embed_host is None:
            load[pl.day - 1] += pl.length
    version = np.zeros(num_days + 1, dtype=np.int64)
    tried: set[tuple[int, ...]] = set()
    quarter = max(1, num_days // 4)
    while spent < budget and time.perf_counter() < stop:
        days: list[int] = []
        for _ in range(20):  # draw until an untried neighbourhood comes up
            if rng.random() < 0.5:
                order = np.argsort(load, kind="stable")
                a = int(order[-1 - rng.integers(quarter)]) + 1
                b = int(order[rng.integers(quarter)]) + 1
            else:
                a, b = (int(v) for v in rng.integers(1, num_days + 1, size=2))
            days = sorted({d for s in (a, b) for d in range(s, min(num_days, s + half - 1) + 1)})
            key = tuple(v for d in days for v in (d, int(version[d])))
            if key not in tried:
                break
        else:
            break  # every drawn neighbourhood is exhausted
        tried.add(key)
        iterations += 1
        day_set = set(days)
        inside = [pl for pl in current.values() if pl.day in day_set]
        pool: dict[int, list[int]] = defaultdict(list)
        for pl in inside:
            pool[group_of[pl.task_id]].append(pl.task_id)
        for gi, g in enumerate(problem.groups):
            pool[gi].extend(tid for tid in g.task_ids if tid not in current)
        counts = [len(pool.get(gi, [])) for gi in range(len(problem.groups))]
        sub = SubModel(
            win,
            days,
            counts,
            sum(pl.length for pl in inside),
            free_slots=sum(pl.length for pl in inside if pl.embed_host is None),
        )
        hinted = sub.hint(inside)
        solver = make_solver(
            max(stop - time.perf_counter(), 0.01),
            num_workers,
            seed=seed + iterations,
            exact=False,
            deterministic_time=cal.lns_step,
        )
        status = status_of(solver.solve(sub.model))
        # Deterministic stand-in for the time spent (calibrated on the CI machine).
        spent += (
            cal.lns_solve_cost
            + cal.wall_per_det * solver.deterministic_time
            + cal.lns_build_cost * (len(sub.x) + len(sub.aux))
        )
        if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE) or hinted is None:
            continue
        if solver.objective_value < hinted - 1e-9:
            fresh = sub.placements(solver, pool, current)
            for pl in inside:
                del current[pl.task_id]
                if pl.embed_host is None:
                    load[pl.day - 1] -= pl.length
            for pl in fresh:
                current[pl.task_id] = pl
                if pl.embed_host is None:
                    load[pl.day - 1] += pl.length
            for d in days:
                version[d] += 1
    return current, iterations


__all__ = ["neighbourhood_search"]
