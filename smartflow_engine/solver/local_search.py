"""Fast local moves on a complete placement: the polish between the greedy and CP-SAT.

Every soft term of :mod:`.objective` is a sum over days, and with the total load held fixed (the
moves only shift tasks between free periods) the mean day load is a constant, so a move that
touches days ``a`` and ``b`` changes the objective by exactly the change of those two days' terms.
The search keeps each day's row (occupant and subject codes, 0 = free) as Python lists of
``slots_per_day`` ints, recomputes a touched row's isolated-free and switch counts by one scan,
and keeps the load and per-(subject, day) counts incrementally.

Moves (seeded, first acceptance of any non-worsening candidate):

- *relocate*: one task to the best start on a few other days (a load-directed day and random
  ones) or elsewhere on its own day;
- *swap*: two tasks of the same duration and different subjects trade places.

Guests (tasks inside an embeddable host) keep their places: moving one into free periods would
change the total load. The work done is counted in candidate evaluations, which is what bounds the
search (deterministic for a given seed); the wall clock is only a safety net.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .budget import DEFAULT_CALIBRATION, Calibration
from .objective import clustered_subjects, lateness, off_preference, preferred_slots
from .problem import Placement, Problem


@dataclass
class LocalSearchResult:
    placements: list[Placement]
    delta: float  # change of the weighted objective (<= 0)
    moves: int  # moves that gave a new best
    evaluations: int  # candidate places and swaps looked at
    steps: int = 0  # move attempts
    scans: int = 0  # row scans
    work_s: float = 0.0  # estimated seconds (the deterministic work measure)


class _Days:
    """The mutable per-day picture the moves read and change."""

    def __init__(
        self, problem: Problem, w: Mapping[str, float], placements: Sequence[Placement]
    ) -> None:
        self.p = problem
        self.w_load = w["load_imbalance"]
        self.w_same = w["same_category"]
        self.w_iso = w["isolated_free"]
        self.w_sw = w["context_switch"]
        self.w_late = w["late"]
        self.w_tod = w["time_of_day"]
        spd, num_days = problem.slots_per_day, problem.num_days
        self.spd = spd
        self.scans = 0  # row scans: the work measure
        codes: dict[str, int] = {}

        def code(k: str) -> int:
            if k not in codes:
                codes[k] = len(codes) + 1
            return codes[k]

        subj = problem.subjects
        occupied = problem.owner != 0
        self.own: list[list[int]] = []  # 0 free, -1 fixed, task id for a moved-able task
        self.sub: list[list[int]] = []
        for d in range(num_days):
            self.own.append([-1 if occupied[d, q] else 0 for q in range(spd)])
            self.sub.append([code(str(subj[d, q])) if occupied[d, q] else 0 for q in range(spd)])
        self.group_of = problem.group_of()
        self.subject_code = {tid: code(k) for tid, k in problem.task_subjects.items()}
        cluster = clustered_subjects(problem)
        self.cluster_codes = {codes[k] for k in cluster if k in codes}
        scope_codes = {code(k) for k in problem.task_subjects.values()}
        self.counts: dict[int, list[int]] = {k: [0] * (num_days + 1) for k in scope_codes}
        for (k, d), n in problem.fixed_counts.items():
            c = codes.get(k)
            if c in self.counts:
                self.counts[c][d] += n
        self.load = [0] + [int(v) for v in np.count_nonzero(occupied, axis=1).tolist()]
        self.where: dict[int, Placement] = {}  # movable (non-guest) placements
        self.guests: list[Placement] = []
        prefs = {gi: preferred_slots(problem, g.rule) for gi, g in enumerate(problem.groups)}
        self.prefs = [prefs[gi] for gi in range(len(problem.groups))]
        for pl in placements:
            kc = self.subject_code[pl.task_id]
            self.counts[kc][pl.day] += 1
            if pl.embed_host is not None:
                self.guests.append(pl)
                continue
            self.where[pl.task_id] = pl
            self._fill(pl.day, pl.slot_start, pl.slot_end, pl.task_id, kc)
            self.load[pl.day] += pl.length
        self.mean = sum(self.load) / num_days
        self.row_cost = [0.0] + [self._row(d) for d in range(1, num_days + 1)]
        self.banned = []
        for g in problem.groups:
            mask = [False] * (spd + 2)
            for q in g.rule.banned:
                if 1 <= q <= spd:
                    mask[q] = True
            self.banned.append(mask)

    # ------------------------------------------------------------------ row bookkeeping
    def _fill(self, day: int, start: int, end: int, tid: int, k: int) -> None:
        own, sub = self.own[day - 1], self.sub[day - 1]
        for q in range(start - 1, end):
            own[q] = tid
            sub[q] = k

    def _clear(self, day: int, start: int, end: int) -> None:
        own, sub = self.own[day - 1], self.sub[day - 1]
        for q in range(start - 1, end):
            own[q] = 0
            sub[q] = 0

    def _row(self, day: int) -> float:
        """Weighted isolated-free periods and switches of one day's row."""
        self.scans += 1
        own, sub = self.own[day - 1], self.sub[day - 1]
        spd = self.spd
        iso = sw = 0
        prev_free = False
        for q in range(spd):
            free = own[q] == 0
            if free and not prev_free and (q == spd - 1 or own[q + 1] != 0):
                iso += 1
            prev_free = free
            if (
                q
                and sub[q]
                and sub[q - 1]
                and sub[q] != sub[q - 1]
                and (own[q] > 0 or own[q - 1] > 0)
            ):
                sw += 1
        return self.w_iso * iso + self.w_sw * sw

    def same(self, k: int, n: int) -> float:
        if k in self.cluster_codes:
            return self.w_same * (1 if n > 0 else 0)
        return self.w_same * max(0, n - 1)

    def place_cost(self, gi: int, day: int, start: int, end: int) -> float:
        g = self.p.groups[gi]
        c = 0.0
        if self.w_late:
            c += self.w_late * lateness(g.rule, day)
        if self.w_tod:
            c += self.w_tod * off_preference(self.prefs[gi], start, end)
        return c

    def starts_on(self, day: int, duration: int, banned: list[bool]) -> list[int]:
        """Free starts (1-based) for ``duration`` on ``day`` avoiding ``banned``."""
        own = self.own[day - 1]
        out = []
        run = 0
        for q in range(self.spd):
            if own[q] == 0 and not banned[q + 1]:
                run += 1
                if run >= duration:
                    out.append(q - duration + 2)
            else:
                run = 0
        return out

    # ------------------------------------------------------------------ moves
    def try_relocate(self, tid: int, days: Sequence[int], limit: float = 0.0) -> tuple[float, int]:
        """Move ``tid`` to its best start on ``days`` if that worsens the objective by at most
        ``limit``.

        Returns ``(delta, evaluations)``; ``delta`` is 0.0 when nothing changed.
        """
        pl = self.where[tid]
        gi = self.group_of[tid]
        g = self.p.groups[gi]
        k = self.subject_code[tid]
        dur = pl.length
        a = pl.day
        old_place = self.place_cost(gi, a, pl.slot_start, pl.slot_end)
        cnt = self.counts[k]
        self._clear(a, pl.slot_start, pl.slot_end)
        row_a = self._row(a)
        base_a = self.row_cost[a]
        evals = 0
        best: tuple[float, int, int] | None = None
        for b in days:
            if not g.rule.allows_day(b, self.p.num_days):
                continue
            if b == a:
                offset = -base_a
            else:
                la, lb, m = self.load[a], self.load[b], self.mean
                d_load = self.w_load * (
                    abs(la - dur - m) - abs(la - m) + abs(lb + dur - m) - abs(lb - m)
                )
                d_same = (
                    self.same(k, cnt[a] - 1)
                    - self.same(k, cnt[a])
                    + self.same(k, cnt[b] + 1)
                    - self.same(k, cnt[b])
                )
                offset = d_load + d_same + row_a - base_a - self.row_cost[b]
            for s in self.starts_on(b, dur, self.banned[gi]):
                if b == a and s == pl.slot_start:
                    continue
                evals += 1
                e = s + dur - 1
                self._fill(b, s, e, tid, k)
                row_b = self._row(b)
                self._clear(b, s, e)
                delta = offset + row_b + self.place_cost(gi, b, s, e) - old_place
                if best is None or delta < best[0] - 1e-9:
                    best = (delta, b, s)
        if best is None or best[0] > limit + 1e-9:
            self._fill(a, pl.slot_start, pl.slot_end, tid, k)
            return 0.0, evals
        delta, b, s = best
        e = s + dur - 1
        self._fill(b, s, e, tid, k)
        self.row_cost[a] = self._row(a)
        if b != a:
            self.row_cost[b] = self._row(b)
            self.load[a] -= dur
            self.load[b] += dur
            cnt[a] -= 1
            cnt[b] += 1
        self.where[tid] = Placement(tid, b, s, e)
        return delta, evals

    def _best_start(self, tid: int, day: int) -> tuple[int, int] | None:
        """Best start of ``tid`` on ``day`` by that row's terms and the place cost; evaluations."""
        gi, dur = self.group_of[tid], self.where[tid].length
        k = self.subject_code[tid]
        best: tuple[float, int] | None = None
        n = 0
        for s in self.starts_on(day, dur, self.banned[gi]):
            n += 1
            self._fill(day, s, s + dur - 1, tid, k)
            c = self._row(day) + self.place_cost(gi, day, s, s + dur - 1)
            self._clear(day, s, s + dur - 1)
            if best is None or c < best[0] - 1e-9:
                best = (c, s)
        return None if best is None else (best[1], n)

    def _days_cost(self, days: set[int], keys: set[tuple[int, int]]) -> float:
        m = self.mean
        return sum(self.w_load * abs(self.load[d] - m) + self.row_cost[d] for d in days) + sum(
            self.same(k, self.counts[k][d]) for k, d in keys
        )

    def try_exchange(self, t1: int, t2: int, limit: float = 0.0) -> tuple[float, int]:
        """``t1`` goes to ``t2``'s day and ``t2`` to ``t1``'s, each at its best start there once
        both have left (on one day: a re-arrangement of the two). Accepted if the objective
        worsens by at most ``limit``. Returns ``(delta, evaluations)``."""
        p1, p2 = self.where[t1], self.where[t2]
        g1, g2 = self.group_of[t1], self.group_of[t2]
        k1, k2 = self.subject_code[t1], self.subject_code[t2]
        a, b = p1.day, p2.day
        nd = self.p.num_days
        groups = self.p.groups
        if not (groups[g1].rule.allows_day(b, nd) and groups[g2].rule.allows_day(a, nd)):
            return 0.0, 1
        days = {a, b}
        keys = {(k1, a), (k1, b), (k2, a), (k2, b)}
        before = (
            self._days_cost(days, keys)
            + self.place_cost(g1, a, p1.slot_start, p1.slot_end)
            + self.place_cost(g2, b, p2.slot_start, p2.slot_end)
        )
        self._clear(a, p1.slot_start, p1.slot_end)
        self._clear(b, p2.slot_start, p2.slot_end)

        def shift(sign: int) -> None:
            self.load[a] += sign * (p2.length - p1.length)
            self.load[b] += sign * (p1.length - p2.length)
            self.counts[k1][a] -= sign
            self.counts[k1][b] += sign
            self.counts[k2][b] -= sign
            self.counts[k2][a] += sign

        shift(1)
        first = self._best_start(t1, b)
        second: tuple[int, int] | None = None
        if first is not None:
            s1 = first[0]
            self._fill(b, s1, s1 + p1.length - 1, t1, k1)
            second = self._best_start(t2, a)
        evals = (first[1] if first else 0) + (second[1] if second else 0)
        if first is not None and second is not None:
            s2 = second[0]
            self._fill(a, s2, s2 + p2.length - 1, t2, k2)
            rows = {d: self._row(d) for d in days}
            old_rows = {d: self.row_cost[d] for d in days}
            for d, v in rows.items():
                self.row_cost[d] = v
            after = (
                self._days_cost(days, keys)
                + self.place_cost(g1, b, s1, s1 + p1.length - 1)
                + self.place_cost(g2, a, s2, s2 + p2.length - 1)
            )
            delta = after - before
            if (delta <= limit + 1e-9 and (s1, s2) != (p2.slot_start, p1.slot_start)) or (
                delta < -1e-9
            ):
                self.where[t1] = Placement(t1, b, s1, s1 + p1.length - 1)
                self.where[t2] = Placement(t2, a, s2, s2 + p2.length - 1)
                return delta, evals
            for d, v in old_rows.items():
                self.row_cost[d] = v
            self._clear(a, s2, s2 + p2.length - 1)
            self._clear(b, s1, s1 + p1.length - 1)
        elif first is not None:
            self._clear(b, first[0], first[0] + p1.length - 1)
        shift(-1)
        self._fill(a, p1.slot_start, p1.slot_end, t1, k1)
        self._fill(b, p2.slot_start, p2.slot_end, t2, k2)
        return 0.0, max(evals, 1)

    def try_swap(self, t1: int, t2: int, limit: float = 0.0) -> tuple[float, bool]:
        """Let two tasks of the same duration trade places if that worsens the objective by at
        most ``limit``."""
        p1, p2 = self.where[t1], self.where[t2]
        g1, g2 = self.group_of[t1], self.group_of[t2]
        k1, k2 = self.subject_code[t1], self.subject_code[t2]
        if k1 == k2 or p1.length != p2.length:
            return 0.0, False
        rules = self.p.groups
        nd = self.p.num_days
        if not (rules[g1].rule.allows_day(p2.day, nd) and rules[g2].rule.allows_day(p1.day, nd)):
            return 0.0, False
        b1, b2 = self.banned[g1], self.banned[g2]
        if any(b1[q] for q in range(p2.slot_start, p2.slot_end + 1)) or any(
            b2[q] for q in range(p1.slot_start, p1.slot_end + 1)
        ):
            return 0.0, False
        before = self.place_cost(g1, p1.day, p1.slot_start, p1.slot_end) + self.place_cost(
            g2, p2.day, p2.slot_start, p2.slot_end
        )
        after = self.place_cost(g1, p2.day, p2.slot_start, p2.slot_end) + self.place_cost(
            g2, p1.day, p1.slot_start, p1.slot_end
        )
        days = {p1.day, p2.day}
        old_rows = sum(self.row_cost[d] for d in days)
        self._fill(p1.day, p1.slot_start, p1.slot_end, t2, k2)
        self._fill(p2.day, p2.slot_start, p2.slot_end, t1, k1)
        new_rows = {d: self._row(d) for d in days}
        d_same = 0.0
        if p1.day != p2.day:
            c1, c2 = self.counts[k1], self.counts[k2]
            d_same = (
                self.same(k1, c1[p1.day] - 1)
                - self.same(k1, c1[p1.day])
                + self.same(k1, c1[p2.day] + 1)
                - self.same(k1, c1[p2.day])
                + self.same(k2, c2[p2.day] - 1)
                - self.same(k2, c2[p2.day])
                + self.same(k2, c2[p1.day] + 1)
                - self.same(k2, c2[p1.day])
            )
        delta = sum(new_rows.values()) - old_rows + d_same + after - before
        if delta > limit + 1e-9:
            self._fill(p1.day, p1.slot_start, p1.slot_end, t1, k1)
            self._fill(p2.day, p2.slot_start, p2.slot_end, t2, k2)
            return 0.0, False
        for d, v in new_rows.items():
            self.row_cost[d] = v
        if p1.day != p2.day:
            self.counts[k1][p1.day] -= 1
            self.counts[k1][p2.day] += 1
            self.counts[k2][p2.day] -= 1
            self.counts[k2][p1.day] += 1
        self.where[t1] = Placement(t1, p2.day, p2.slot_start, p2.slot_end)
        self.where[t2] = Placement(t2, p1.day, p1.slot_start, p1.slot_end)
        return delta, True


def improve(
    problem: Problem,
    weights: Mapping[str, float],
    placements: Sequence[Placement],
    *,
    budget_s: float,
    seed: int = 0,
    deadline: float | None = None,
    stall_s: float | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> LocalSearchResult:
    """Improve a complete placement by relocate and swap moves; never makes it worse.

    Parameters
    ----------
    weights
        Resolved weights (:func:`.objective.resolve_weights`).
    budget_s
        Work bound in estimated seconds (``calibration.step_cost_s`` per move attempt plus
        ``calibration.scan_cost_s`` per row scan): the search stops there, so the result depends
        only on the seed, never on the machine's speed.
    deadline
        ``time.perf_counter()`` value after which the search stops anyway (safety net).
    stall_s
        Stop early after this much work without a new best (a local optimum).
    calibration
        The solver's figures (:class:`.budget.Calibration`): the work costs, the late-acceptance
        history, the days a relocate move tries.
    """
    if budget_s <= 0 or (deadline is not None and time.perf_counter() > deadline):
        return LocalSearchResult(list(placements), 0.0, 0, 0)
    days = _Days(problem, weights, placements)
    movable = sorted(days.where)
    if not movable or budget_s <= 0:
        return LocalSearchResult(list(placements), 0.0, 0, 0)
    rng = np.random.default_rng(seed)
    num_days = problem.num_days
    cal = calibration
    by_length: dict[int, list[int]] = {}
    for tid in movable:
        by_length.setdefault(days.where[tid].length, []).append(tid)
    evals = moves = 0
    current = best_value = 0.0  # relative to the start
    best = dict(days.where)
    history = [0.0] * cal.history  # late acceptance: the objective cal.history steps ago
    step = 0
    work = last_best = 0.0
    while work < budget_s and (stall_s is None or work - last_best < stall_s):
        step += 1
        work = cal.step_cost_s * step + cal.scan_cost_s * days.scans
        if deadline is not None and step % 64 == 0 and time.perf_counter() > deadline:
            break
        limit = max(0.0, history[step % cal.history] - current)
        tid = movable[int(rng.integers(len(movable)))]
        if rng.random() < 0.6:
            targets = [
                int(v) for v in rng.integers(1, num_days + 1, size=cal.days_per_relocate - 1)
            ]
            targets.append(int(np.argmin(days.load[1:])) + 1)  # the least loaded day
            targets.append(days.where[tid].day)
            delta, n = days.try_relocate(tid, list(dict.fromkeys(targets)), limit)
            evals += max(n, 1)
        elif rng.random() < 0.5:
            peers = by_length[days.where[tid].length]
            other = peers[int(rng.integers(len(peers)))]
            evals += 1
            delta = days.try_swap(tid, other, limit)[0] if other != tid else 0.0
        else:
            other = movable[int(rng.integers(len(movable)))]
            if other == tid:
                evals += 1
                continue
            delta, n = days.try_exchange(tid, other, limit)
            evals += n
        current += delta
        history[step % cal.history] = current
        if current < best_value - 1e-9:
            best_value = current
            best = dict(days.where)
            moves += 1
            last_best = work
    out = [*best.values(), *days.guests]
    out.sort(key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
    work = cal.step_cost_s * step + cal.scan_cost_s * days.scans
    return LocalSearchResult(out, best_value, moves, evals, step, days.scans, work)
