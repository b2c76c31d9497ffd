"""The soft phase of the one search with weights (issue 26; split out of the search module by
issue 40 item 3): from the best placement of the health phase, moves that keep (critical,
warning) or lower it, taken on the weighted soft terms by late acceptance.

Its operators, drawn by :data:`SOFT_OPERATORS` (each a share of the draw): a scan of one task's
places ranked by the soft terms, a swap of two tasks of one length, a move of one task to a free
place or host block. With the search's reordering moves (issue 42), an ordered item's places past
its class's neighbours are offered too, its class re-seated (:meth:`.moves.Neighbourhood.reorder`). Every candidate is screened on the soft evaluator alone
(``soft_screen_cost`` of an evaluation); the acceptance rule (:func:`late_accepts`, then
:func:`.scoring.accepts` on the counts) decides, and only a candidate the soft terms accept
is counted by the health evaluator.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .health_eval import HealthCounts
from .moves import Candidate, Neighbourhood, OperatorTable, draw_operator
from .problem import Placement
from .scoring import accepts
from .soft_eval import SoftEvaluator

if TYPE_CHECKING:
    from .health_search import Walk

# (the calibration's share of the draw, the operator, the fewest tasks it needs); the last
# entry takes the rest of the draw
SOFT_OPERATORS: OperatorTable = (
    ("soft_scan_share", "scan", 1),
    ("swap_share", "swap", 2),
    (None, "relocate", 1),
)


def late_accepts(value: float, current: float, history: list[float], step: int) -> bool:
    """Late acceptance on the soft terms: a candidate is taken when its soft total is at most
    the current one or the one ``len(history)`` steps back."""
    return value <= max(current, history[step % len(history)]) + 1e-9


class SoftPhase:
    """One soft phase on a search's walk (its evaluator paired with ``soft``)."""

    def __init__(self, walk: Walk, soft: SoftEvaluator) -> None:
        self.walk, self.soft = walk, soft
        self.search: Neighbourhood = walk.search
        self.ev = walk.ev
        self.cal, self.rng = walk.cal, walk.rng
        self.ev.set_placements(list(walk.best.values()))
        self.cur: HealthCounts = self.ev.counts_now()
        self.cur_soft = soft.total()
        self.work = float(walk.evals)

    def screen(self, cand: Candidate) -> float:
        """The soft total after ``cand``, on the soft evaluator alone (left as it was)."""
        soft = self.soft
        olds = [soft.remove(t, refresh=False) for t, _ in cand]
        for _, new in cand:
            soft.place(new, refresh=False)
        days = [pl.day for pl in olds] + [new.day for _, new in cand]
        soft.refresh(days)
        value = soft.total()
        for t, _ in cand:
            soft.remove(t, refresh=False)
        for old in olds:
            soft.place(old, refresh=False)
        soft.refresh(days)
        return value

    def places_of(self, tid: int, days: Sequence[int]) -> list[Placement]:
        """Every free place of ``tid`` on ``days`` but its own."""
        here = self.ev.placed_scope[tid]
        g = self.search.problem.groups[self.search.group_of[tid]]
        out = []
        for day in days:
            for s, host in self.search.starts_on(g, day, (here,)):
                pl = Placement(tid, day, s, s + g.duration - 1, host)
                if pl != here:
                    out.append(pl)
        return out

    def moves_of(self, tid: int, days: Sequence[int]) -> list[Candidate]:
        """Every move of ``tid`` to a free place on ``days`` but its own; with the search's
        reordering moves, a place past its class's neighbours too, the class re-seated
        (:meth:`.moves.Neighbourhood.reorder`; a move no re-seating keeps is left out)."""
        search = self.search
        if not (search.reorders and tid in search.order.key):
            return [[(tid, pl)] for pl in self.places_of(tid, days)]
        here = self.ev.placed_scope[tid]
        g = search.problem.groups[search.group_of[tid]]
        out: list[Candidate] = []
        for day in days:
            for s, host in search.starts_on(g, day, (here,), mover=-1):
                pl = Placement(tid, day, s, s + g.duration - 1, host)
                if pl != here and (cand := search.reorder([(tid, pl)])) is not None:
                    out.append(cand)
        return out

    def attempt(self, cand: Candidate) -> bool:
        """Make ``cand`` and keep it when the counts are not worse (within the move limit)."""
        search = self.search
        changes = search.make(cand)
        if search.max_moves is not None and search.moved() > search.max_moves:
            search.undo(changes)
            return False
        counts = self.ev.counts_now()
        self.work += 1.0
        if accepts((*counts.key, 0.0), (*self.cur.key, 0.0)):
            self.cur, self.cur_soft = counts, self.soft.total()
            self.walk.record(counts)
            return True
        search.undo(changes)
        return False

    def scan(self, tid: int, days: np.ndarray, limit: float = math.inf) -> None:
        """Every place of one task (on at most ``scan_days`` days), best soft first: the first
        of ``soft_scan_tries`` that lowers the soft terms and keeps the counts is made. The
        screening stops at ``limit`` evaluations (the phase's budget holds within a scan)."""
        cal, rng = self.cal, self.rng
        pick = days
        if days.size > cal.scan_days:
            pick = np.sort(rng.choice(days, size=cal.scan_days, replace=False))
        ranked = []
        for cand in self.moves_of(tid, [int(d) for d in pick.tolist()]):
            if self.work >= limit:
                break
            ranked.append((self.screen(cand), float(rng.random()), cand))
            self.work += cal.soft_screen_cost
        ranked.sort(key=lambda e: (e[0], e[1]))
        for value, _, cand in ranked[: cal.soft_scan_tries]:
            if value >= self.cur_soft - 1e-9 or self.attempt(cand):
                break

    def swap(self, tid: int, days: np.ndarray) -> Candidate | None:
        """``tid`` trades places with a random task of another subject and the same length."""
        ev, search, tids = self.ev, self.search, self.walk.tids
        here = ev.placed_scope[tid]
        u = tids[int(self.rng.integers(len(tids)))]
        there = ev.placed_scope[u]
        if (
            u == tid
            or here.length != there.length
            or here.embed_host is not None
            or there.embed_host is not None
            or ev.code_of_task[u] == ev.code_of_task[tid]
        ):
            return None
        na = Placement(tid, there.day, there.slot_start, there.slot_end)
        nb = Placement(u, here.day, here.slot_start, here.slot_end)
        if search.reorders:  # (the trade re-seated when it breaks an order)
            if search.rule_allows(tid, na) and search.rule_allows(u, nb):
                return search.reorder([(tid, na), (u, nb)])
            return None
        return [(tid, na), (u, nb)] if search.allows(tid, na) and search.allows(u, nb) else None

    def relocate(self, tid: int, days: np.ndarray) -> Candidate | None:
        """``tid`` to a random free place on the lighter of two days or on any day."""
        ev, rng = self.ev, self.rng
        if rng.random() < 0.5:
            a, b = (int(v) for v in rng.choice(days, size=2))
            day = a if ev.day_total[a - 1] <= ev.day_total[b - 1] else b
        else:
            day = int(rng.choice(days))
        moves = self.moves_of(tid, [day])
        return moves[int(rng.integers(len(moves)))] if moves else None

    def run(self, limit: int, safety: float) -> int:
        """Walk until ``limit`` evaluations (or the wall clock's ``safety``); returns the
        evaluations spent in all (whole ones, rounded up)."""
        cal, rng, tids = self.cal, self.rng, self.walk.tids
        history = [self.cur_soft] * max(1, cal.soft_history)
        step = 0
        next_check = self.work
        # Steps without a lower soft total before the phase ends (deterministic: counted in
        # steps; a small window's soft terms settle long before its budget is spent).
        patience = max(cal.soft_patience_min, int(cal.soft_patience_per_task * len(tids)))
        best, since = self.cur_soft, 0
        while self.work < limit and since < patience:
            if self.cur_soft < best - 1e-9:
                best, since = self.cur_soft, 0
            since += 1
            if self.work >= next_check:
                next_check = self.work + cal.refresh_every
                if time.perf_counter() > safety:
                    break
            tid = tids[int(rng.integers(len(tids)))]
            days = self.search.allowed_days[self.search.group_of[tid]]
            if days.size == 0:
                self.work += cal.soft_screen_cost
                continue
            operator = draw_operator(SOFT_OPERATORS, float(rng.random()), cal, len(tids))
            if operator == "scan":
                self.scan(tid, days, limit)
                continue
            cand = self.swap(tid, days) if operator == "swap" else self.relocate(tid, days)
            self.work += cal.soft_screen_cost
            if cand is None:
                continue
            if late_accepts(self.screen(cand), self.cur_soft, history, step):
                self.attempt(cand)
            history[step % len(history)] = self.cur_soft
            step += 1
        return math.ceil(self.work)


__all__ = ["SOFT_OPERATORS", "SoftPhase", "late_accepts"]
