"""Greedy placements: benchmark baselines and warm-start hints for the CP-SAT models.

- :func:`first_fit`: each pending task, in id order, at the first free place (day by day, period
  by period) where ``place`` would accept it. What an agent calling ``place`` in a loop does.
- :func:`best_fit_decreasing`: longest and most constrained tasks first, each into the tightest
  free segment (or embeddable host block) that takes it. The feasibility fast path: when it
  places everything, the placement itself proves feasibility.
- :func:`balanced_greedy`: the load/category-aware greedy for proposals: each task goes where a
  score (day load, same category that day, isolated free periods, switches) is lowest.

All work on a :class:`~.problem.Problem` (the scope and its bins) and return placements; none
changes the state.
"""

from __future__ import annotations

import functools
import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..health_facts import day_loads, free_runs, switch_mask
from ..state import ScheduleState
from .budget import DEFAULT_CALIBRATION, Calibration
from .problem import Bin, Group, Placement, Problem, Rule, build_problem


def _banned_mask(group: Group, spd: int) -> np.ndarray:
    mask = np.zeros(spd + 2, dtype=bool)  # 1-based with padding
    for p in group.rule.banned:
        mask[p] = True
    return mask


def _first_start(banned: np.ndarray, duration: int, start: int, end: int) -> int | None:
    """First start in ``start..end-duration+1`` whose periods avoid ``banned`` (1-based)."""
    s = start
    while s + duration - 1 <= end:
        window = banned[s : s + duration]
        if not window.any():
            return s
        s += int(np.flatnonzero(window)[-1]) + 1
    return None


@functools.lru_cache(maxsize=4096)
def _start_table(banned: tuple[int, ...], duration: int, spd: int) -> tuple[int, ...]:
    """``table[s]``: the first start ``>= s`` whose ``duration`` periods avoid ``banned`` and end
    by period ``spd`` (``spd + 1`` past the last one; indices ``0..spd + 1``). A place starting at
    ``s`` and ending by ``e`` exists iff ``table[s] + duration - 1 <= e``."""
    bad = set(banned)
    table = [spd + 1] * (spd + 2)
    for s in range(spd - duration + 1, 0, -1):
        ok = not any(p in bad for p in range(s, s + duration))
        table[s] = s if ok else table[s + 1]
    return tuple(table)


@functools.lru_cache(maxsize=4096)
def _day_table(rule: Rule, last_day: int, num_days: int) -> tuple[bool, ...]:
    """``table[day]``: whether ``rule`` allows ``day`` (``0..last_day``)."""
    return (False, *(rule.allows_day(day, num_days) for day in range(1, last_day + 1)))


def first_fit(state: ScheduleState, *, include_suggested: bool = False) -> list[Placement]:
    """Pending tasks in id order, each at the first place it fits (day, then period order).

    A task may go into free periods or wholly inside a free embeddable host block; class day
    windows and banned periods are honoured.
    """
    problem = build_problem(state, include_suggested=include_suggested)
    spd = problem.slots_per_day
    free = problem.owner == 0
    host_at: dict[tuple[int, int], Bin] = {(b.day, b.slot_start): b for b in problem.hosts}
    used_hosts: set[tuple[int, int]] = set()
    tasks = sorted((tid, g) for g in problem.groups for tid in g.task_ids)
    out: list[Placement] = []
    for tid, g in tasks:
        d = g.duration
        banned = _banned_mask(g, spd)
        done = False
        for day in range(1, problem.num_days + 1):
            if not g.rule.allows_day(day, problem.num_days):
                continue
            row = free[day - 1]
            for s in range(1, spd - d + 2):
                if banned[s : s + d].any() or not g.rule.order_allows(day, s, s + d - 1):
                    continue
                if row[s - 1 : s - 1 + d].all():
                    row[s - 1 : s - 1 + d] = False
                    out.append(Placement(tid, day, s, s + d - 1))
                    done = True
                    break
                host = _host_containing(host_at, day, s, s + d - 1)
                if host is not None and g.can_guest and (day, host.slot_start) not in used_hosts:
                    used_hosts.add((day, host.slot_start))
                    out.append(Placement(tid, day, s, s + d - 1, host.host))
                    done = True
                    break
            if done:
                break
    return out


def _host_containing(host_at: dict[tuple[int, int], Bin], day: int, s: int, e: int) -> Bin | None:
    for (hd, _), b in host_at.items():
        if hd == day and b.slot_start <= s and e <= b.slot_end:
            return b
    return None


def longest_first(g: Group) -> tuple[float, ...]:
    return (-g.duration, g.rule.end_day - g.rule.start_day, -len(g.rule.banned))


def narrowest_first(g: Group) -> tuple[float, ...]:
    return (g.rule.end_day - g.rule.start_day, -len(g.rule.banned), -g.duration)


def ending_first(g: Group) -> tuple[float, ...]:
    return (g.rule.end_day, -g.duration)


def by_density(g: Group) -> tuple[float, ...]:
    width = (g.rule.end_day - g.rule.start_day + 1) * max(1, 12 - len(g.rule.banned))
    return (-g.duration / max(width, 1),)


PACK_ORDERS = (longest_first, narrowest_first, ending_first, by_density)


def best_pack(
    problem: Problem,
    counts: Sequence[int] | None = None,
    deadline: float | None = None,
    *,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> list[Placement]:
    """The best of :func:`best_fit_decreasing` under each of :data:`PACK_ORDERS` (the first
    ``calibration.pack_orders`` of them; stops early when one places everything, and after the
    first order once ``deadline`` has passed)."""
    counts = [g.count for g in problem.groups] if counts is None else counts
    required = sum(g.duration * c for g, c in zip(problem.groups, counts, strict=True))
    best: list[Placement] = []
    best_slots = -1
    for order in PACK_ORDERS[: calibration.pack_orders]:
        # The first order may run a little past the deadline: a complete greedy is worth more
        # to the caller than a cut one (it is the level-1 witness).
        placed = best_fit_decreasing(
            problem,
            counts,
            order,
            None if deadline is None else deadline + calibration.greedy_grace_s,
        )
        slots = sum(p.length for p in placed)
        if slots > best_slots:
            best, best_slots = placed, slots
        if slots == required or (deadline is not None and time.perf_counter() > deadline):
            break
    return best


def best_fit_decreasing(
    problem: Problem,
    counts: Sequence[int] | None = None,
    order: Callable[[Group], tuple[float, ...]] = longest_first,
    deadline: float | None = None,
) -> list[Placement]:
    """Groups in ``order``; each task into the tightest segment (or host block) that takes it.

    Returns the placements made (possibly fewer than the tasks, and the groups left once
    ``deadline`` has passed are not tried); the problem is not changed.
    """
    spd, num_days = problem.slots_per_day, problem.num_days
    counts = [g.count for g in problem.groups] if counts is None else counts
    # Segments are (length, day, start) tuples: the heap compares them in C, and a tuple
    # literal costs a third of a NamedTuple's constructor (~50 per window and call).
    segments: list[tuple[int, int, int]] = [(b.length, b.day, b.slot_start) for b in problem.runs]
    hosts = list(problem.hosts)
    taken: set[int] = set()  # indices of the host blocks used (a set: list.remove was O(n))
    last_day = max((b.day for b in (*problem.runs, *problem.hosts)), default=0)
    out: list[Placement] = []
    for gi in sorted(
        (gi for gi, c in enumerate(counts) if c > 0), key=lambda gi: order(problem.groups[gi])
    ):
        if deadline is not None and time.perf_counter() > deadline:
            break  # what is placed so far is a valid (partial) placement
        g = problem.groups[gi]
        d = g.duration
        ids = g.task_ids[: counts[gi]]
        k = 0
        day_ok = _day_table(g.rule, last_day, num_days)
        first = _start_table(tuple(g.rule.banned), d, spd)
        # Host blocks first, tightest first: a guest costs no free period.
        if g.can_guest:
            cands = sorted(
                (
                    i
                    for i, b in enumerate(hosts)
                    if i not in taken and b.length >= d and day_ok[b.day]
                ),
                key=lambda i: (hosts[i].length, hosts[i].day, hosts[i].slot_start),
            )
            for i in cands:
                if k == len(ids):
                    break
                b = hosts[i]
                s = first[b.slot_start]
                if s + d - 1 <= b.slot_end and g.rule.order_allows(b.day, s, s + d - 1):
                    out.append(Placement(ids[k], b.day, s, s + d - 1, b.host))
                    taken.add(i)
                    k += 1
        if k == len(ids):
            continue
        heap = [seg for seg in segments if seg[0] >= d and day_ok[seg[1]]]
        rest = [seg for seg in segments if not (seg[0] >= d and day_ok[seg[1]])]
        heapq.heapify(heap)
        while heap and k < len(ids):
            length, day, start = heapq.heappop(heap)
            end = start + length - 1
            s = first[start]
            if s + d - 1 > end or not g.rule.order_allows(day, s, s + d - 1):
                rest.append((length, day, start))
                continue
            out.append(Placement(ids[k], day, s, s + d - 1))
            k += 1
            for piece in ((s - start, day, start), (end - (s + d - 1), day, s + d)):
                if piece[0] <= 0:
                    continue
                if piece[0] >= d:
                    heapq.heappush(heap, piece)
                else:
                    rest.append(piece)
        segments = rest + heap
    out.sort(key=lambda p: (p.day, p.slot_start, p.task_id))
    return out


@dataclass
class _GreedyGrid:
    """What :func:`balanced_greedy` updates as it places: free periods, the study layer (as
    subject codes, 0 for none: what :func:`..health_facts.switch_mask` reads), day loads, tasks
    per subject and day, and which host blocks are still free."""

    free: np.ndarray
    study: np.ndarray
    code: dict[str, int]
    load: np.ndarray
    count: dict[str, np.ndarray]
    hosts_free: dict[int, bool]
    hosts_by_day: dict[int, list[int]]


def _greedy_grid(problem: Problem) -> _GreedyGrid:
    num_days = problem.num_days
    code = {"": 0}
    cells = problem.subjects.ravel().tolist()
    for value in cells:
        code.setdefault(value, len(code))
    for g in problem.groups:
        code.setdefault(g.subject, len(code))
    study = np.array([code[v] for v in cells], dtype=np.int64).reshape(problem.subjects.shape)
    load = day_loads(problem.owner).astype(float)
    subjects = sorted({g.subject for g in problem.groups})
    count = {k: np.zeros(num_days) for k in subjects}
    for (k, d), n in problem.fixed_counts.items():
        if k in count:
            count[k][d - 1] += n
    hosts_free = {hi: True for hi in range(len(problem.hosts))}
    hosts_by_day: dict[int, list[int]] = {}
    for hi, b in enumerate(problem.hosts):
        hosts_by_day.setdefault(b.day, []).append(hi)
    return _GreedyGrid(problem.owner == 0, study, code, load, count, hosts_free, hosts_by_day)


def _host_candidates(
    problem: Problem,
    grid: _GreedyGrid,
    day: int,
    banned: np.ndarray,
    d: int,
    pref: frozenset[int] | None,
    w: Mapping[str, float],
) -> list[tuple[float, int, int | None]]:
    """Scored starts in the day's free host blocks: (score, start, host index)."""
    from .objective import off_preference

    out: list[tuple[float, int, int | None]] = []
    for hi in grid.hosts_by_day.get(day, []):
        b = problem.hosts[hi]
        if grid.hosts_free[hi] and b.length >= d:
            hs = _first_start(banned, d, b.slot_start, b.slot_end)
            if hs is not None:
                hc = w["time_of_day"] * off_preference(pref, hs, hs + d - 1)
                # A guest adds no load: credit the day's load term back.
                hc -= w["load_imbalance"] * d
                out.append((hc, hs, hi))
    return out


def _best_place(
    problem: Problem,
    grid: _GreedyGrid,
    g: Group,
    score: np.ndarray,
    banned: np.ndarray,
    pref: frozenset[int] | None,
    w: Mapping[str, float],
) -> tuple[float, int, int, int | None] | None:
    """The best (score, day, start, host) over the best few days by ``score``, or None."""
    d, k = g.duration, g.subject
    best: tuple[float, int, int, int | None] | None = None  # score, day, start, host
    tried = 0
    for di in np.argsort(score, kind="stable").tolist():
        if not np.isfinite(score[di]) or tried >= 3:
            break
        day = di + 1
        # a task without a subject still differs from a neighbour's subject (code -1)
        mine = grid.code[k] if k else -1
        cand = _day_candidates(grid.free[di], grid.study[di], banned, d, mine, pref, w)
        if g.can_guest:
            cand.extend(_host_candidates(problem, grid, day, banned, d, pref, w))
        if g.rule.after is not None or g.rule.before is not None:
            cand = [c for c in cand if g.rule.order_allows(day, c[1], c[1] + d - 1)]
        if not cand:
            continue
        tried += 1
        pick = min(cand)
        total = float(score[di]) + pick[0]
        if best is None or total < best[0]:
            best = (total, day, pick[1], pick[2])
    return best


def _commit(
    problem: Problem, grid: _GreedyGrid, tid: int, g: Group, best: tuple[int, int, int | None]
) -> Placement:
    """Place task ``tid`` at ``best`` (day, start, host index) and update ``grid``."""
    day, s, host_idx = best
    d, k = g.duration, g.subject
    grid.count[k][day - 1] += 1
    # (the study layer: a guest's subject replaces its host's period)
    grid.study[day - 1, s - 1 : s - 1 + d] = grid.code[k]
    if host_idx is not None:
        grid.hosts_free[host_idx] = False
        return Placement(tid, day, s, s + d - 1, problem.hosts[host_idx].host)
    grid.free[day - 1, s - 1 : s - 1 + d] = False
    grid.load[day - 1] += d
    return Placement(tid, day, s, s + d - 1)


def balanced_greedy(
    problem: Problem, weights: Mapping[str, float] | None = None, deadline: float | None = None
) -> list[Placement]:
    """Load/category-aware greedy: longest tasks first, each where a local score is lowest.

    Raises :class:`._cpsat.OutOfTime` once ``deadline`` (a ``time.perf_counter()`` value) has
    passed.

    For each task the days are ranked by load, same-subject presence (or absence, for a class
    that prefers clustering) and lateness; on the best few days every free segment's two
    edge-aligned starts (and any free host block) are scored by the isolated free periods and
    subject switches they would create and by time-of-day preference. Uses the weights of the
    proposal objective so that the greedy and the model aim at the same thing.
    """
    from ._cpsat import check_deadline
    from .objective import clustered_subjects, lateness, preferred_slots
    from .objective import resolve_weights as _resolve

    w = _resolve(weights)
    spd, num_days = problem.slots_per_day, problem.num_days
    grid = _greedy_grid(problem)
    cluster = clustered_subjects(problem)
    day_index = np.arange(1, num_days + 1)
    out: list[Placement] = []
    order = sorted(range(len(problem.groups)), key=lambda gi: longest_first(problem.groups[gi]))
    for gi in order:
        g = problem.groups[gi]
        k = g.subject
        banned = _banned_mask(g, spd)
        pref = preferred_slots(problem, g.rule)
        allowed = np.array([g.rule.allows_day(int(x), num_days) for x in day_index], dtype=bool)
        late = np.array([lateness(g.rule, int(x)) for x in day_index], dtype=float)
        for tid in g.task_ids:
            check_deadline(deadline)
            present = grid.count[k] > 0
            same = (~present if k in cluster else present).astype(float)
            score = (
                w["load_imbalance"] * grid.load + w["same_category"] * spd * same + w["late"] * late
            )
            score = np.where(allowed, score, np.inf)
            best = _best_place(problem, grid, g, score, banned, pref, w)
            if best is not None:
                out.append(_commit(problem, grid, tid, g, best[1:]))
    out.sort(key=lambda p: (p.day, p.slot_start, p.task_id))
    return out


def _day_candidates(
    row_free: np.ndarray,
    row_study: np.ndarray,
    banned: np.ndarray,
    d: int,
    subject: int,
    pref: frozenset[int] | None,
    w: Mapping[str, float],
) -> list[tuple[float, int, int | None]]:
    """Scored edge-aligned starts in the day's free segments: (score, start, None).
    ``row_study``: the day's study layer as subject codes (0 for none), ``subject`` the task's
    code."""
    from .objective import off_preference

    spd = len(row_free)
    out: list[tuple[float, int, int | None]] = []
    _, run_start, run_length = free_runs(row_free[np.newaxis, :])
    for a, n in zip(run_start.tolist(), run_length.tolist(), strict=True):
        seg_start, seg_end = a + 1, a + n  # 1-based inclusive
        if seg_end - seg_start + 1 < d:
            continue
        starts = {seg_start, seg_end - d + 1}
        first = _first_start(banned, d, seg_start, seg_end)
        if first is not None:
            starts.add(first)
        for s in sorted(starts):
            e = s + d - 1
            if s < seg_start or e > seg_end or banned[s : e + 1].any():
                continue
            left, right = s - seg_start, seg_end - e  # free periods left on each side
            iso = (left == 1) + (right == 1)
            # the switches with the neighbours (an event or a day edge holds no subject, 0)
            before = int(row_study[s - 2]) if s >= 2 else 0
            after = int(row_study[e]) if e < spd else 0
            switch = int(np.count_nonzero(switch_mask(np.array([[before, subject, after]]))))
            c = (
                w["isolated_free"] * iso
                + w["context_switch"] * switch
                + w["time_of_day"] * off_preference(pref, s, e)
            )
            out.append((c, s, None))
    return out
