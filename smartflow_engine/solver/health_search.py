"""The close stage of a proposal: a local search on the exact ``analyze_health`` counts.

After level 1 (the most periods, proven) and the weighted soft terms, a proposal is judged by
the health rule table (p1 §4.3-§4.7): the agent may close when ``critical=0 && warning<=1``.
This stage starts from a placement and moves the placed scope tasks (one task to another allowed
place, or two tasks of equal length and different subjects trading places) to minimise
``(critical, warning)`` lexicographically, scored exactly by :class:`.health_eval.HealthEvaluator`
(equal to ``analyze_health``'s counts). Moves that keep the counts and lower a guidance slack
(how far metrics sit past their warning thresholds) are accepted too, so the search crosses the
plateaus of the counts. The set of placed tasks never changes (level 1 stays), nor do class
windows, banned periods, host blocks (one guest each) or anything outside the scope.

Large-neighbourhood steps (issue 26 item 1): when the best key has not improved for a while (a
plateau), a few days are re-planned at once by an exact CP-SAT model of the health rules over
them (:mod:`.health_lns`); the step is kept only when the evaluator says the whole window's key
(critical, warning, then with weights the soft terms) got better. The steps are charged to the
same work budget (their deterministic time), take at most ``health_lns_share`` of it, and run on
one worker, so the search stays deterministic for a seed unless the wall clock cut a step
(``lns_cut``).

Least change: a move limit ``max_moves`` caps how many tasks may end away from their ``origin``;
at the end every moved task whose return keeps the best counts goes back, so among equal counts
the result keeps more of the start (and of its soft terms, level 4).

Deterministic for a seed: the work is counted in evaluations, converted to estimated seconds
(``eval_cost_s`` of the :class:`.budget.Calibration` per evaluation, calibrated on the
2-core CI machine); the wall-clock ``deadline`` is
only a safety net.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..rules import Level
from ..state import Request, ScheduleState, relocate
from ._cpsat import OutOfTime
from .budget import DEFAULT_CALIBRATION, Calibration, too_late
from .health_eval import HealthCounts, HealthEvaluator
from .health_floor import HealthFloor, health_floor
from .health_lns import choose_neighbourhood, lns_step
from .problem import Bin, Group, Placement, Problem, allowed_starts
from .soft_eval import SoftEvaluator


@dataclass(frozen=True)
class HealthSearchResult:
    """``placements`` of the scope tasks; ``counts`` their (critical, warning); ``moved``: tasks
    away from ``origin``; ``evaluations``: the work done; ``work_s`` its estimate in seconds;
    ``floor``: the proven (critical, warning) floor of every placement of this scope placing as
    many pending periods, feasibility issue included, as :meth:`.HealthFloor.meets` reads it
    (critical bounds critical, the sum bounds critical + warning); ``None`` when none was
    computed before the deadline (never claimed unproven); ``floor_least_warning``: when
    known, the lexicographic floor's warnings (every placement has more criticals than
    ``floor[0]`` or at least this many warnings, :attr:`.HealthFloor.least_warning`)."""

    placements: list[Placement]
    counts: HealthCounts
    start_counts: HealthCounts
    moved: int
    evaluations: int
    work_s: float
    floor: tuple[int, int] | None = None
    # True when the deadline stopped the population floor before it was computed: the search
    # then did not stop at it, so the same seed may give another result on a faster machine.
    floor_cut: bool = False
    # With ``weights``: the weighted soft terms of ``placements`` and of the start.
    soft: float | None = None
    start_soft: float | None = None
    floor_least_warning: int | None = None
    # Large-neighbourhood steps (:mod:`.health_lns`): how many ran and were kept, and whether
    # the wall clock (not the deterministic time) stopped one (the same seed may then give
    # another result on a faster machine).
    lns_steps: int = 0
    lns_accepted: int = 0
    lns_cut: bool = False


def setup_cost(state: ScheduleState, calibration: Calibration) -> float:
    """Estimated seconds of the close stage's set-up on ``state`` (its floor, the evaluator of
    the window, the search's tables), for :func:`.budget.too_late`."""
    return calibration.close_setup_per_task_s * len(state.tasks)


def eval_cost(num_days: int, calibration: Calibration) -> float:
    """Estimated seconds per evaluation on a window of ``num_days`` days."""
    return calibration.eval_cost_s + calibration.eval_cost_per_day_s * max(0, num_days - 30)


class _Search:
    def __init__(
        self,
        ev: HealthEvaluator,
        problem: Problem,
        origin: Mapping[int, Placement],
        rng: np.random.Generator,
        max_moves: int | None,
        calibration: Calibration,
    ) -> None:
        self.ev = ev
        self.cal = calibration
        self.problem = problem
        self.origin = origin
        self.rng = rng
        self.max_moves = max_moves
        # set in the soft phase of a search with weights: the third key is then the soft terms
        self.soft: SoftEvaluator | None = None
        self.group_of = problem.group_of()
        self.gap_warn = int(ev.gap_warn)
        self.hosts_by_day: dict[int, list[Bin]] = {}
        for b in problem.hosts:
            self.hosts_by_day.setdefault(b.day, []).append(b)
        spd = problem.slots_per_day
        self.banned: dict[int, list[bool]] = {
            id(g): [p + 1 in set(g.rule.banned) for p in range(spd)] for g in problem.groups
        }
        self.allowed_days: dict[int, np.ndarray] = {}
        for gi, g in enumerate(problem.groups):
            self.allowed_days[gi] = np.array(
                [
                    d
                    for d in range(1, problem.num_days + 1)
                    if g.rule.allows_day(d, problem.num_days)
                ],
                dtype=np.int64,
            )

    # ------------------------------------------------------------------ places
    def free_starts(self, g: Group, day: int, lifted: Sequence[Placement] = ()) -> list[int]:
        """Starts (1-based) of ``g`` in free periods of ``day``, the ``lifted`` places counting
        as free, off the group's banned periods."""
        banned = self.banned[id(g)]
        n = g.duration
        row = self.ev.owner[day - 1].tolist()
        for pl in lifted:
            if pl.day == day and pl.embed_host is None:
                row[pl.slot_start - 1 : pl.slot_end] = [0] * pl.length
        out: list[int] = []
        run = 0
        for i, v in enumerate([*row, 1]):
            if v == 0:
                run += 1
                continue
            if run >= n:  # free periods i-run .. i-1 (0-based)
                out += [s + 1 for s in range(i - run, i - n + 1) if not any(banned[s : s + n])]
            run = 0
        return out

    def starts_on(
        self, g: Group, day: int, lifted: Sequence[Placement] = ()
    ) -> list[tuple[int, int | None]]:
        """Free (start, host) places of ``g`` on ``day`` in the current state (1-based), the
        ``lifted`` places counting as free."""
        ev = self.ev
        banned = self.banned[id(g)]
        n = g.duration
        out: list[tuple[int, int | None]] = [(s, None) for s in self.free_starts(g, day, lifted)]
        if g.can_guest:
            # a host block a lifted guest stands in counts as free: that block, not every block
            # of its host that day (a water course may hold two blocks a day, one guest each)
            own = {
                (pl.embed_host, pl.slot_start)
                for pl in lifted
                if pl.day == day and pl.embed_host is not None
            }
            for b in self.hosts_by_day.get(day, ()):
                mine = any(h == b.host and b.slot_start <= s <= b.slot_end for h, s in own)
                if b.length >= n and (mine or ev.guest_free(day, b.slot_start, b.slot_end)):
                    out += [
                        (s + 1, b.host)
                        for s in range(b.slot_start - 1, b.slot_end - n + 1)
                        if not any(banned[s : s + n])
                    ]
        return out

    def allows(self, tid: int, pl: Placement) -> bool:
        """``tid`` may stand at ``pl``'s place (class days and banned periods; no host check)."""
        g = self.problem.groups[self.group_of[tid]]
        if not g.rule.allows_day(pl.day, self.problem.num_days) or pl.embed_host is not None:
            return False
        return bool(
            allowed_starts(
                g.rule.banned, g.duration, pl.slot_start, pl.slot_end, self.problem.slots_per_day
            )
        )

    def moved(self) -> int:
        return sum(1 for tid, pl in self.ev.placed_scope.items() if self.origin.get(tid) != pl)

    # ------------------------------------------------------------------ moves
    def relocate(
        self, tid: int, day_choice: str | int
    ) -> list[tuple[int, Placement, Placement]] | None:
        """Move ``tid`` to a random allowed free place on a day drawn by ``day_choice``
        (``light``: the lighter of two, ``any``, or a given day); the undo list or None."""
        ev = self.ev
        gi = self.group_of[tid]
        g = self.problem.groups[gi]
        days = self.allowed_days[gi]
        if days.size == 0:
            return None
        if isinstance(day_choice, int):
            day = day_choice
            if not g.rule.allows_day(day, self.problem.num_days):
                return None
        elif day_choice == "light":
            a, b = (int(v) for v in self.rng.choice(days, size=2))
            day = a if ev.day_total[a - 1] <= ev.day_total[b - 1] else b
        else:
            day = int(self.rng.choice(days))
        old = ev.remove(tid, refresh=False)
        places = self.starts_on(g, day)
        places = [
            p
            for p in places
            if not (p[0] == old.slot_start and day == old.day and p[1] == old.embed_host)
        ]
        if not places:
            ev.place(old, refresh=False)
            return None
        if len(places) > 2 and self.rng.random() < 0.7:
            edge = [p for p in places if p[1] is not None or self._touches(day, p[0], g.duration)]
            places = edge or places
        s, host = places[int(self.rng.integers(len(places)))]
        new = Placement(tid, day, s, s + g.duration - 1, host)
        ev.place(new, refresh=False)
        ev.refresh((old.day, day))
        return [(tid, old, new)]

    def gap_move(self) -> list[tuple[int, Placement, Placement]] | None:
        """A task of a subject with a long gap moves into the middle part of that gap (from the
        day where the subject has the most blocks)."""
        ev = self.ev
        spans = [
            (code, span)
            for code, span in enumerate(ev.gap_span)
            if span is not None and span[1] - span[0] - 1 >= self.gap_warn - 1
        ]
        if not spans:
            return None
        code, (a, b) = spans[int(self.rng.integers(len(spans)))]
        mine = [t for t, pl in ev.placed_scope.items() if ev.code_of_task[t] == code]
        if not mine:
            return None
        per_day: dict[int, int] = {}
        for t in mine:
            per_day[ev.placed_scope[t].day] = per_day.get(ev.placed_scope[t].day, 0) + 1
        if self.rng.random() < 0.6:
            mine = [t for t in mine if per_day[ev.placed_scope[t].day] > 1] or mine
        tid = mine[int(self.rng.integers(len(mine)))]
        lo, hi = a + 1, b - 1
        if lo > hi:
            return None
        third = max(1, (hi - lo + 1) // 3)
        day = int(
            self.rng.integers(
                lo + (third if hi - lo >= 2 else 0), hi - (third if hi - lo >= 2 else 0) + 1
            )
        )
        return self.relocate(tid, day)

    def score(self, c: HealthCounts) -> tuple[int, int, float]:
        """(critical, warning, the third key) of the current state, ``c`` its counts: the
        guidance slack, or in the soft phase the weighted soft terms (see :func:`search_health`)."""
        return (c.critical, c.warning, c.slack if self.soft is None else self.soft.total())

    def best_relocation(
        self, tid: int, cur: HealthCounts | tuple[int, int, float]
    ) -> tuple[list[tuple[int, Placement, Placement]] | None, int]:
        """Scan every allowed free place of ``tid`` (on at most ``cal.scan_days`` of its days); move
        it to the best one if that is not worse than ``cur`` (ties broken by slack, then at
        random). Returns the undo list (or None) and the evaluations spent."""
        ev = self.ev
        if isinstance(cur, HealthCounts):  # (the counts of the current state)
            cur = self.score(cur)
        gi = self.group_of[tid]
        g = self.problem.groups[gi]
        old = ev.remove(tid, refresh=False)
        ev.refresh((old.day,))
        best: tuple[tuple[int, int, float, float], Placement] | None = None
        evals = 0
        days = self.allowed_days[gi]
        if days.size > self.cal.scan_days:  # long windows: a random sample of the days (sorted)
            days = np.sort(self.rng.choice(days, size=self.cal.scan_days, replace=False))
        for day in days.tolist():
            for s, host in self.starts_on(g, int(day)):
                pl = Placement(tid, int(day), s, s + g.duration - 1, host)
                if pl == old:
                    continue
                ev.place(pl)
                c = ev.counts_now()
                evals += 1
                key = (*self.score(c), float(self.rng.random()))
                if best is None or key < best[0]:
                    best = (key, pl)
                ev.remove(tid)
        if best is None or best[0][:3] > cur:
            ev.place(old)
            return None, evals
        ev.place(best[1])
        return [(tid, old, best[1])], evals

    # ------------------------------------------------------------------ targeted scans
    def scan(
        self,
        candidates: list[list[tuple[int, Placement]]],
        cur: HealthCounts | tuple[int, int, float],
    ) -> tuple[list[tuple[int, Placement, Placement]] | None, int]:
        """Evaluate every candidate (a list of (task, new place) whose places are free once
        the candidate's own tasks are lifted) and make the best one if it is not worse than
        ``cur`` in (critical, warning, slack); the undo list (or None) and the evaluations."""
        ev = self.ev
        if isinstance(cur, HealthCounts):  # (the counts of the current state)
            cur = self.score(cur)
        best: tuple[tuple[int, int, float, float], int] | None = None
        for i, cand in enumerate(candidates):
            if self._clash(cand):
                continue
            changes = self._make(cand)
            c = ev.counts_now()
            key = (*self.score(c), float(self.rng.random()))
            if best is None or key < best[0]:
                best = (key, i)
            self.undo(changes)
        if best is None or best[0][:3] > (cur[0], cur[1], cur[2] + 1e-9):
            return None, len(candidates)
        return self._make(candidates[best[1]]), len(candidates)

    def _clash(self, cand: list[tuple[int, Placement]]) -> bool:
        """Two of the candidate's new places take one period, or one host block (a block holds
        one guest): each was found free on its own, so together they may not be."""
        if len(cand) < 2:
            return False
        cells: set[tuple[int, int]] = set()
        blocks: set[tuple[int, int, int]] = set()
        for _, pl in cand:
            if pl.embed_host is None:
                here = {(pl.day, q) for q in range(pl.slot_start, pl.slot_end + 1)}
                if here & cells:
                    return True
                cells |= here
                continue
            block = next(
                (
                    (pl.day, b.host, b.slot_start)
                    for b in self.hosts_by_day.get(pl.day, ())
                    if b.host == pl.embed_host and b.slot_start <= pl.slot_start <= b.slot_end
                ),
                (pl.day, pl.embed_host, pl.slot_start),
            )
            if block in blocks:
                return True
            blocks.add(block)
        return False

    def _make(self, cand: list[tuple[int, Placement]]) -> list[tuple[int, Placement, Placement]]:
        ev = self.ev
        olds = [ev.remove(tid, refresh=False) for tid, _ in cand]
        for _, new in cand:
            ev.place(new, refresh=False)
        ev.refresh([pl.day for pl in olds] + [new.day for _, new in cand])
        return [(tid, old, new) for (tid, new), old in zip(cand, olds, strict=True)]

    def _places(self, tid: int, day: int, limit: int) -> list[Placement]:
        """Up to ``limit`` free allowed places of ``tid`` on ``day`` (edge ones first)."""
        g = self.problem.groups[self.group_of[tid]]
        if not g.rule.allows_day(day, self.problem.num_days):
            return []
        here = self.ev.placed_scope[tid]
        places = [
            p
            for p in self.starts_on(g, day)
            if not (day == here.day and p[0] == here.slot_start and p[1] == here.embed_host)
        ]
        if len(places) > limit:
            edge = [p for p in places if p[1] is not None or self._touches(day, p[0], g.duration)]
            rest = [p for p in places if p not in edge]
            order = self.rng.permutation(len(edge)).tolist()
            places = [edge[i] for i in order][:limit]
            if len(places) < limit:
                order = self.rng.permutation(len(rest)).tolist()
                places += [rest[i] for i in order][: limit - len(places)]
        return [Placement(tid, day, s, s + g.duration - 1, host) for s, host in places]

    def _swaps(self, tid: int, day: int, limit: int) -> list[list[tuple[int, Placement]]]:
        """Up to ``limit`` trades of ``tid`` with a task of another subject and the same length
        standing on ``day`` (both allowed at the other's place)."""
        ev = self.ev
        pa = ev.placed_scope[tid]
        if pa.embed_host is not None:
            return []
        out: list[list[tuple[int, Placement]]] = []
        others = [u for u, pl in ev.placed_scope.items() if pl.day == day and u != tid]
        for j in self.rng.permutation(len(others)).tolist():
            u = others[j]
            pb = ev.placed_scope[u]
            if (
                pb.length != pa.length
                or pb.embed_host is not None
                or ev.code_of_task[u] == ev.code_of_task[tid]
            ):
                continue
            na = Placement(tid, pb.day, pb.slot_start, pb.slot_end)
            nb = Placement(u, pa.day, pa.slot_start, pa.slot_end)
            if self.allows(tid, na) and self.allows(u, nb):
                out.append([(tid, na), (u, nb)])
                if len(out) >= limit:
                    break
        return out

    def gap_candidates(self) -> list[list[tuple[int, Placement]]]:
        """Moves that put a block of a subject with a long gap (at the warning threshold or
        more) into the middle of that gap: from the days where removing it opens no long gap,
        to a free place on the gap's middle days, or trading places with a block there."""
        ev = self.ev
        spans = [
            (code, span)
            for code, span in enumerate(ev.gap_span)
            if span is not None and span[1] - span[0] - 1 >= self.gap_warn
        ]
        if not spans:
            return []
        code, (a, b) = spans[int(self.rng.integers(len(spans)))]
        col = ev.counts[:, code]
        present = (np.flatnonzero(col) + 1).tolist()
        mine = [t for t, pl in ev.placed_scope.items() if ev.code_of_task[t] == code]
        if not mine:
            return []
        ranked: list[tuple[int, float, int]] = []
        for t in mine:
            d = ev.placed_scope[t].day
            if col[d - 1] > 1:
                opened = 0
            else:
                i = present.index(d)
                lo = present[i - 1] if i > 0 else None
                hi = present[i + 1] if i + 1 < len(present) else None
                opened = hi - lo - 1 if lo is not None and hi is not None else 0
            ranked.append((opened, float(self.rng.random()), t))
        ranked.sort()
        sources = [t for _, _, t in ranked[: self.cal.gap_sources]]
        days = sorted(
            range(a + 1, b), key=lambda t: (max(t - a - 1, b - t - 1), float(self.rng.random()))
        )[: self.cal.gap_days]
        out: list[list[tuple[int, Placement]]] = []
        for t in sources:
            for d in days:
                places = self._places(t, d, self.cal.gap_places)
                out += [[(t, pl)] for pl in places]
                if not places:
                    out += self._swaps(t, d, 2)
        return out

    def unload_candidates(self) -> list[list[tuple[int, Placement]]]:
        """Moves of a block off a day with a day issue (utilisation, switches) or without a
        buffer, to the lightest allowed days or elsewhere on the same day."""
        ev = self.ev
        bad = np.flatnonzero(ev.day_cw.any(axis=1) | (ev.day_usable < 2)) + 1
        if bad.size == 0:
            return []
        mine_by_day: dict[int, list[int]] = {}
        for t, pl in ev.placed_scope.items():
            mine_by_day.setdefault(pl.day, []).append(t)
        bad_days = [int(d) for d in bad.tolist() if int(d) in mine_by_day]
        if not bad_days:
            return []
        day = bad_days[int(self.rng.integers(len(bad_days)))]
        tasks = sorted(mine_by_day[day])
        picks = [
            tasks[i] for i in self.rng.permutation(len(tasks))[: self.cal.unload_tasks].tolist()
        ]
        out: list[list[tuple[int, Placement]]] = []
        for t in picks:
            days = self.allowed_days[self.group_of[t]]
            if days.size == 0:
                continue
            noise = self.rng.random(days.size)
            order = np.lexsort((noise, ev.day_total[days - 1]))
            targets = [int(d) for d in days[order].tolist() if int(d) != day][
                : self.cal.unload_days
            ]
            for d in [*targets, day]:
                out += [[(t, pl)] for pl in self._places(t, d, 2)]
            for d in targets[: self.cal.unload_exchange_days]:
                out += self._exchanges(t, d)
        return out

    def _exchanges(self, tid: int, day: int) -> list[list[tuple[int, Placement]]]:
        """Trades of ``tid`` with a shorter block standing on ``day`` (another task; both in
        free periods, each where the other's leaving frees room): the busy day sheds the
        difference without the light day reaching the busy day's load."""
        ev = self.ev
        pa = ev.placed_scope[tid]
        if pa.embed_host is not None or pa.day == day:
            return []
        ga = self.problem.groups[self.group_of[tid]]
        shorter = sorted(
            u
            for u, pl in ev.placed_scope.items()
            if pl.day == day and pl.embed_host is None and pl.length < pa.length
        )
        out: list[list[tuple[int, Placement]]] = []
        for j in self.rng.permutation(len(shorter))[:2].tolist():
            u = shorter[j]
            pb = ev.placed_scope[u]
            gb = self.problem.groups[self.group_of[u]]
            if not gb.rule.allows_day(pa.day, self.problem.num_days):
                continue
            lifted = (pa, pb)
            sa = self.free_starts(ga, day, lifted)
            sb = self.free_starts(gb, pa.day, lifted)
            if sa and sb:
                out.append(
                    [
                        (tid, Placement(tid, day, sa[0], sa[0] + ga.duration - 1)),
                        (u, Placement(u, pa.day, sb[0], sb[0] + gb.duration - 1)),
                    ]
                )
        return out

    def _touches(self, day: int, s: int, n: int) -> bool:
        row = self.ev.owner[day - 1]
        left = s - 2 < 0 or row[s - 2] != 0
        right = s - 1 + n >= row.size or row[s - 1 + n] != 0
        return bool(left or right)

    def swap(self, a: int, b: int) -> list[tuple[int, Placement, Placement]] | None:
        ev = self.ev
        pa, pb = ev.placed_scope[a], ev.placed_scope[b]
        if pa.length != pb.length or pa.embed_host is not None or pb.embed_host is not None:
            return None
        if ev.code_of_task[a] == ev.code_of_task[b]:
            return None
        na = Placement(a, pb.day, pb.slot_start, pb.slot_end)
        nb = Placement(b, pa.day, pa.slot_start, pa.slot_end)
        if not (self.allows(a, na) and self.allows(b, nb)):
            return None
        ev.remove(a, refresh=False)
        ev.remove(b, refresh=False)
        ev.place(na, refresh=False)
        ev.place(nb, refresh=False)
        ev.refresh((pa.day, pb.day))
        return [(a, pa, na), (b, pb, nb)]

    def undo(self, changes: list[tuple[int, Placement, Placement]]) -> None:
        for tid, _, _ in changes:
            self.ev.remove(tid, refresh=False)
        for _, old, _ in changes:
            self.ev.place(old, refresh=False)
        self.ev.refresh([pl.day for _, old, new in changes for pl in (old, new)])


def search_health(
    state: ScheduleState,
    problem: Problem,
    placements: Sequence[Placement],
    *,
    level: Level = "normal",
    seed: int = 0,
    budget_s: float = 1.0,
    deadline: float | None = None,
    feasibility_critical: int = 0,
    max_moves: int | None = None,
    origin: Sequence[Placement] | None = None,
    floor: tuple[int, int] | HealthFloor | None = None,
    calibration: Calibration = DEFAULT_CALIBRATION,
    weights: Mapping[str, float] | None = None,
    exact_s: float = 0.0,
    num_workers: int = 1,
    exact_work_s: float | None = None,
) -> HealthSearchResult:
    """Minimise ``(critical, warning)`` of ``analyze_health`` over moves of the placed scope tasks.

    Parameters
    ----------
    state, problem
        The window and its scope (``problem.groups``' tasks may move; everything else stays).
    placements
        The start: a place for some scope tasks (the others stay unplaced).
    level
        The threshold level the counts are taken at.
    budget_s
        Estimated seconds of work (evaluations × :func:`eval_cost`); deterministic.
    calibration
        The solver's figures (:class:`.budget.Calibration`): the set-up and evaluation costs,
        the mix of moves and scans.
    deadline
        ``time.perf_counter()`` value after which the search stops regardless (safety net).
    feasibility_critical
        1 when ``analyze_health`` adds its feasibility issue to every placement of this scope.
    max_moves, origin
        At most ``max_moves`` tasks may end away from their place in ``origin`` (default: the
        start); ``None`` is no limit.
    floor
        A proven floor (critical, warning) of these placements, feasibility issue aside: the
        search stops once it is met (nothing can be better). The search also takes the floor
        of its own population (only the scope tasks move, the placed ones stay placed, see
        :func:`.health_floor.health_floor`'s ``scope``) and stops at the higher of the two.
        A :class:`.HealthFloor` may carry a lexicographic floor (``least_warning``): the search
        stops when :meth:`.HealthFloor.meets` says so.
    exact_s, num_workers
        The wall-clock limit (model building included) and the CP-SAT workers of the exact
        model of the per-day rules in the search's own floor (``health_floor``'s ``exact_s``;
        0: the relaxation alone). A model cut by its limit claims only what it proved, and the
        result then says ``floor_cut`` (more time could have stopped the search elsewhere).
    exact_work_s
        The exact model's deterministic time (``health_floor``'s ``exact_work_s``): a model
        its work budget ended is no ``floor_cut``, only one the wall clock ended.

    weights
        With weights (the soft terms' of :mod:`.objective`), the key is (critical, warning,
        weighted soft terms), scored by a :class:`.soft_eval.SoftEvaluator` beside the health
        evaluator (issue 26): the health phase (as without weights, stopping at the floor or
        after ``soft_health_part`` times the evaluations, which may exceed the budget) keeps the
        best on the whole key, then the soft phase lowers the soft terms without raising
        (critical, warning) with what is left of the budget.

    Returns
    -------
    HealthSearchResult
        Never worse counts than the start (with weights: never a worse key); among equal
        counts (keys), fewer moved tasks.

    Raises
    ------
    OutOfTime
        ``deadline`` passed before the search could count its start (its set-up: the floor, the
        evaluator of the window, the search's tables, which grow with the window; see
        :func:`setup_cost`): it claims nothing, and the caller answers without counts (issue 24
        item 6).
    """
    cal = calibration
    if too_late(deadline, setup_cost(state, cal), cal):
        raise OutOfTime("the close stage's deadline passed before its set-up")
    scope = {tid for g in problem.groups for tid in g.task_ids}
    pending_placed = sum(pl.length for pl in placements if problem.current.get(pl.task_id) is None)
    try:
        own = health_floor(
            state,
            level,
            pending_periods=pending_placed,
            scope=scope,
            deadline=deadline,
            exact_s=exact_s,
            num_workers=num_workers,
            exact_work_s=exact_work_s,
        )
        floor = _higher(floor, own)
        floor_cut = own.exact_wall_cut
    except OutOfTime:  # no time left for it: the search stops on the clock anyway
        floor_cut = True
    if too_late(deadline, setup_cost(state, cal), cal):  # (the floor may have used what was left)
        raise OutOfTime("the close stage's deadline passed before its evaluator was built")
    soft: SoftEvaluator | None = None
    ev: HealthEvaluator
    paired: _SoftHealth | None = None
    if weights is not None:
        soft = SoftEvaluator(problem, weights)
        ev = paired = _SoftHealth(state, scope, level, feasibility_critical, soft)
    else:
        ev = HealthEvaluator(state, scope, level, feasibility_critical)
    ev.set_placements(placements)

    def soft_now() -> float:
        """The soft terms of the current placement (the soft evaluator brought up to date)."""
        assert soft is not None and paired is not None
        paired.sync()
        return soft.total()

    # The health phase reads the soft terms only on plateaus and for the best: the soft
    # evaluator follows lazily (the scans' candidates never reach it).
    if paired is not None:
        paired.lazy = True
    origin_map = {pl.task_id: pl for pl in (origin if origin is not None else placements)}
    rng = np.random.default_rng(seed)
    search = _Search(ev, problem, origin_map, rng, max_moves, cal)
    start = ev.counts_now()
    start_soft = soft_now() if soft is not None else 0.0
    cur = start
    best_key = (start.critical, start.warning)
    best_soft = start_soft
    best = dict(ev.placed_scope)
    cost = eval_cost(problem.num_days, cal) * (cal.soft_eval_factor if soft is not None else 1.0)
    limit = int(budget_s / cost) if budget_s > 0 else 0
    # With weights, the health phase gets at most this share of the evaluations (it stops at
    # the floor; a share above 1 lets a search short of its floor go on past the budget); the
    # soft phase gets what is left of the budget.
    health_limit = int(limit * cal.soft_health_part) if soft is not None else limit
    evals = 0
    tids = sorted(ev.placed_scope)
    hot: list[int] = tids
    safety = deadline if deadline is not None else float("inf")

    if isinstance(floor, tuple):
        floor = HealthFloor(floor[0], floor[1])

    def at_floor(key: tuple[int, int]) -> bool:
        if floor is None:
            return key == (0, 0)
        return floor.meets(key[0] - feasibility_critical, key[1])

    def record(counts: HealthCounts) -> None:
        """Keep the current placement when it is the best so far: on (critical, warning), and
        with weights on (critical, warning, soft)."""
        nonlocal best_key, best_soft, best
        key = counts.key
        if soft is None:
            if key < best_key:
                best_key, best = key, dict(ev.placed_scope)
            return
        value = soft_now()
        if key < best_key or (key == best_key and value < best_soft - 1e-9):
            best_key, best_soft, best = key, value, dict(ev.placed_scope)

    next_refresh = 0
    # With weights: after ``soft_kick_per_task`` evaluations per placed task without a better
    # key the walk
    # restarts from the best placement kicked by ``soft_kick_moves`` random moves (iterated
    # local search: single moves and plateau walks stall in basins a few moves deep).
    kick_after = int(cal.soft_kick_per_task * len(placements)) if soft is not None else 0
    last_best = (best_key, 0)
    # Large-neighbourhood steps on plateaus: the evaluations one costs, the most they may take
    lns_cost = math.ceil((cal.health_lns_det * cal.wall_per_det + cal.health_lns_setup_s) / cost)
    lns_cap = int(health_limit * cal.health_lns_share)
    lns_stall = max(cal.health_lns_stall_min, int(cal.health_lns_stall * len(placements)))
    lns_spent = lns_steps = lns_accepted = 0
    lns_cut = False
    lns_seen = (best_key, best_soft, 0)  # the best when last seen, and the evaluations then
    while evals < health_limit and tids and not at_floor(best_key):
        if evals >= next_refresh:  # (scans spend many evaluations at once)
            next_refresh = evals + cal.refresh_every
            if time.perf_counter() > safety:
                break
            if (best_key, best_soft) != lns_seen[:2]:
                lns_seen = (best_key, best_soft, evals)
            elif (
                cal.health_lns_share > 0
                and evals - lns_seen[2] >= lns_stall
                and lns_spent + lns_cost <= lns_cap
            ):
                lns_seen = (best_key, best_soft, evals)
                step = _lns_move(
                    search,
                    cur,
                    soft_now if soft is not None else None,
                    lns_cost * cost,
                    safety,
                )
                # charged what it used: its deterministic time, or the most when none is known
                used = lns_cost
                if step is not None and step[2] is not None:
                    used = math.ceil((step[2] * cal.wall_per_det + cal.health_lns_setup_s) / cost)
                evals += used
                lns_spent += used
                lns_steps += 1
                if step is not None:
                    changes, wall_cut, _ = step
                    lns_cut = lns_cut or wall_cut
                    if changes is not None:
                        lns_accepted += 1
                        cur = ev.counts_now()
                        record(cur)
                        lns_seen = (best_key, best_soft, evals)
                continue
            if best_key != last_best[0]:
                last_best = (best_key, evals)
            elif kick_after and evals - last_best[1] >= kick_after:
                ev.set_placements(list(best.values()))
                for _ in range(cal.soft_kick_moves):
                    kicked = search.relocate(tids[int(rng.integers(len(tids)))], "any")
                    if kicked is not None and max_moves is not None and search.moved() > max_moves:
                        search.undo(kicked)
                cur = ev.counts_now()
                evals += cal.soft_kick_moves
                last_best = (best_key, evals)
            hot = _hot_tasks(ev, tids) or tids
        draw = rng.random()
        scanned = None  # a scan's (undo list or None, evaluations spent)
        if draw < cal.gap_scan_share + cal.unload_scan_share:
            cands = (
                search.gap_candidates() if draw < cal.gap_scan_share else search.unload_candidates()
            )
            if cands:
                scanned = search.scan(cands, search.score(cur))
        if scanned is None and rng.random() < cal.scan_share:
            scanned = search.best_relocation(hot[int(rng.integers(len(hot)))], search.score(cur))
        if scanned is not None:
            changes, spent = scanned
            evals += spent
            if changes is not None and (max_moves is None or search.moved() <= max_moves):
                cur = ev.counts_now()
                record(cur)
            elif changes is not None:
                search.undo(changes)
            continue
        draw = rng.random()
        if draw < cal.gap_share:
            changes = search.gap_move()
            if changes is None:
                changes = search.relocate(hot[int(rng.integers(len(hot)))], "light")
        elif draw < cal.gap_share + cal.swap_share and len(tids) > 1:
            a = hot[int(rng.integers(len(hot)))]
            b = tids[int(rng.integers(len(tids)))]
            changes = search.swap(a, b) if a != b else None
        else:
            tid = (
                hot[int(rng.integers(len(hot)))]
                if rng.random() < 0.7
                else tids[int(rng.integers(len(tids)))]
            )
            changes = search.relocate(tid, "light" if rng.random() < 0.5 else "any")
        if changes is None:
            evals += 1  # a failed draw still costs a scan
            continue
        if max_moves is not None and search.moved() > max_moves:
            search.undo(changes)
            evals += 1
            continue
        cand = ev.counts_now()
        evals += 1
        # (plateaus are crossed on the slack alone, with weights too: the soft terms only choose
        # the best among equal counts, see docs/decisions.md)
        if cand.key < cur.key or (cand.key == cur.key and cand.slack <= cur.slack + 1e-9):
            cur = cand
            record(cand)
        else:
            search.undo(changes)
    if soft is not None and tids and evals < limit:
        assert paired is not None
        paired.sync()
        paired.lazy = False
        evals = _soft_phase(search, soft, best, tids, evals, limit, safety, record)
    # Least change: send moved tasks back where that keeps the best key.
    ev.set_placements(list(best.values()))
    final = ev.counts_now()
    final_soft = soft_now() if soft is not None else 0.0
    for tid in sorted(best):
        if time.perf_counter() > safety:
            break  # (what is sent back so far keeps the best counts)
        home = origin_map.get(tid)
        here = ev.placed_scope.get(tid)
        if home is None or here is None or home == here:
            continue
        ev.remove(tid)
        ok = (
            ev.free_at(home.day, home.slot_start, home.slot_end)
            if home.embed_host is None
            else ev.host_block_free(home)
        )
        if ok:
            ev.place(home)
            after = ev.counts_now()
            evals += 1
            if soft is None and after.key <= final.key:
                final = after
                continue
            if soft is not None:
                after_soft = soft_now()
                if (after.key, after_soft) <= (final.key, final_soft + 1e-9):
                    final, final_soft = after, after_soft
                    continue
            ev.remove(tid)
        ev.place(here)
    if (final.key, final_soft) >= (start.key, start_soft - 1e-9 if soft is not None else 0.0):
        ev.set_placements(placements)  # no better key: the start, untouched
        final, final_soft = start, start_soft
    out = sorted(ev.placed_scope.values(), key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
    moved = sum(1 for pl in out if origin_map.get(pl.task_id) != pl)
    return HealthSearchResult(
        out,
        final,
        start,
        moved,
        evals,
        evals * cost,
        floor=None if floor is None else (floor.critical + feasibility_critical, floor.warning),
        floor_cut=floor_cut,
        soft=final_soft if soft is not None else None,
        start_soft=start_soft if soft is not None else None,
        floor_least_warning=None if floor is None else floor.least_warning,
        lns_steps=lns_steps,
        lns_accepted=lns_accepted,
        lns_cut=lns_cut,
    )


def _lns_move(
    search: _Search,
    cur: HealthCounts,
    soft_now: Callable[[], float] | None,
    estimate_s: float,
    safety: float,
) -> tuple[list[tuple[int, Placement, Placement]] | None, bool, float | None] | None:
    """One large-neighbourhood step from the current placement (:mod:`.health_lns`): a few
    days chosen with the search's generator, their lifted tasks re-placed by the exact model,
    kept when the evaluator's key of the whole window (critical, warning, then with weights the
    soft terms) is better than ``cur``'s and the move limit holds. Returns (the undo list or
    None, whether the wall clock stopped the model, the deterministic time the model used or
    None when it did not run to a solve), or None when nothing could be lifted.
    The model gets ``cal.health_lns_det`` deterministic time on one worker (one worker: the
    same answer for a seed), and a wall-clock limit of a few times ``estimate_s``, never past
    ``safety`` (without a deadline, a generous one: the work budget decides)."""
    ev, cal, rng = search.ev, search.cal, search.rng
    days, tasks = choose_neighbourhood(
        ev, search.problem, rng, cal.health_lns_days, cal.health_lns_tasks
    )
    if not tasks:
        return None
    if math.isinf(safety):  # no deadline: a generous safety net (the work budget decides)
        limit = max(20.0 * estimate_s, 1.0)
    else:
        limit = min(max(4.0 * estimate_s, 0.05), safety - time.perf_counter())
    if limit <= 0:
        return None, True, None
    step = lns_step(
        ev,
        search.problem,
        days,
        tasks,
        time_limit_s=limit,
        num_workers=1,
        seed=int(rng.integers(2**31 - 1)),
        deterministic_time=cal.health_lns_det,
    )
    det = None if step.wall_limited else step.det_time
    if step.placements is None:
        return None, step.wall_limited, det
    cand = [(t, pl) for t, pl in step.placements.items() if ev.placed_scope.get(t) != pl]
    if not cand:
        return None, step.wall_limited, det
    before = (cur.critical, cur.warning, soft_now() if soft_now is not None else 0.0)
    changes = search._make(cand)
    if search.max_moves is not None and search.moved() > search.max_moves:
        search.undo(changes)
        return None, step.wall_limited, det
    after = ev.counts_now()
    key = (after.critical, after.warning, soft_now() if soft_now is not None else 0.0)
    if key[:2] < before[:2] or (key[:2] == before[:2] and key[2] < before[2] - 1e-9):
        return changes, step.wall_limited, det
    search.undo(changes)
    return None, step.wall_limited, det


def _soft_phase(
    search: _Search,
    soft: SoftEvaluator,
    best: Mapping[int, Placement],
    tids: list[int],
    evals: int,
    limit: int,
    safety: float,
    record: Callable[[HealthCounts], None],
) -> int:
    """The soft phase of a search with weights: from the best placement of the health phase,
    moves (a task to another free place or host block) and swaps (two tasks of one length)
    that keep (critical, warning) or lower it, accepted on the soft terms by late acceptance (a
    move is taken when its soft total is at most the current one or the one ``soft_history``
    steps back), and scans of one task's places ranked by the soft terms. Every candidate is
    screened on the soft evaluator alone (``soft_screen_cost`` of an evaluation); only the ones
    the soft terms accept are counted by the health evaluator. ``record`` keeps the best on
    (critical, warning, soft). Returns the evaluations spent (whole ones, rounded up)."""
    ev, cal, rng = search.ev, search.cal, search.rng
    problem = search.problem
    ev.set_placements(list(best.values()))
    cur = ev.counts_now()
    cur_soft = soft.total()
    history = [cur_soft] * max(1, cal.soft_history)
    step = 0
    work = float(evals)
    next_check = work

    def screen(cand: list[tuple[int, Placement]]) -> float:
        """The soft total after ``cand``, on the soft evaluator alone (left as it was)."""
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

    def places_of(tid: int, days: Sequence[int]) -> list[Placement]:
        here = ev.placed_scope[tid]
        g = problem.groups[search.group_of[tid]]
        out = []
        for day in days:
            for s, host in search.starts_on(g, day, (here,)):
                pl = Placement(tid, day, s, s + g.duration - 1, host)
                if pl != here:
                    out.append(pl)
        return out

    def attempt(cand: list[tuple[int, Placement]]) -> bool:
        nonlocal cur, cur_soft, work
        changes = search._make(cand)
        if search.max_moves is not None and search.moved() > search.max_moves:
            search.undo(changes)
            return False
        counts = ev.counts_now()
        work += 1.0
        if counts.key <= cur.key:
            cur, cur_soft = counts, soft.total()
            record(counts)
            return True
        search.undo(changes)
        return False

    while work < limit:
        if work >= next_check:
            next_check = work + cal.refresh_every
            if time.perf_counter() > safety:
                break
        tid = tids[int(rng.integers(len(tids)))]
        gi = search.group_of[tid]
        days = search.allowed_days[gi]
        if days.size == 0:
            work += cal.soft_screen_cost
            continue
        draw = rng.random()
        if draw < cal.soft_scan_share:
            # every place of one task (on at most scan_days days), best soft first
            pick = days
            if days.size > cal.scan_days:
                pick = np.sort(rng.choice(days, size=cal.scan_days, replace=False))
            ranked = []
            for pl in places_of(tid, [int(d) for d in pick.tolist()]):
                ranked.append((screen([(tid, pl)]), float(rng.random()), pl))
                work += cal.soft_screen_cost
            ranked.sort(key=lambda e: (e[0], e[1]))
            for value, _, pl in ranked[: cal.soft_scan_tries]:
                if value >= cur_soft - 1e-9 or attempt([(tid, pl)]):
                    break
            continue
        cand: list[tuple[int, Placement]] | None = None
        here = ev.placed_scope[tid]
        if draw < cal.soft_scan_share + cal.swap_share and len(tids) > 1:
            u = tids[int(rng.integers(len(tids)))]
            there = ev.placed_scope[u]
            if (
                u != tid
                and here.length == there.length
                and here.embed_host is None
                and there.embed_host is None
                and ev.code_of_task[u] != ev.code_of_task[tid]
            ):
                na = Placement(tid, there.day, there.slot_start, there.slot_end)
                nb = Placement(u, here.day, here.slot_start, here.slot_end)
                if search.allows(tid, na) and search.allows(u, nb):
                    cand = [(tid, na), (u, nb)]
        else:
            if rng.random() < 0.5:
                a, b = (int(v) for v in rng.choice(days, size=2))
                day = a if ev.day_total[a - 1] <= ev.day_total[b - 1] else b
            else:
                day = int(rng.choice(days))
            places = places_of(tid, [day])
            if places:
                cand = [(tid, places[int(rng.integers(len(places)))])]
        work += cal.soft_screen_cost
        if cand is None:
            continue
        value = screen(cand)
        bar = max(cur_soft, history[step % len(history)])
        if value <= bar + 1e-9:
            attempt(cand)
        history[step % len(history)] = cur_soft
        step += 1
    return math.ceil(work)


class _SoftHealth(HealthEvaluator):
    """A :class:`.health_eval.HealthEvaluator` whose updates also update a
    :class:`.soft_eval.SoftEvaluator` of the same scope: every move a search makes is scored on
    both (only the public interface is overridden)."""

    def __init__(
        self,
        state: ScheduleState,
        scope: set[int],
        level: Level,
        feasibility_critical: int,
        soft: SoftEvaluator,
    ) -> None:
        self.soft_terms = soft
        self._bulk = False
        # lazy: the soft evaluator is brought up to date by :meth:`sync` only (the tasks
        # touched since are kept in ``_dirty``)
        self.lazy = False
        self._dirty: set[int] = set()
        super().__init__(state, scope, level, feasibility_critical)

    def place(self, pl: Placement, refresh: bool = True) -> None:
        super().place(pl, refresh)
        if self._bulk:
            return
        if self.lazy:
            self._dirty.add(pl.task_id)
        else:
            self.soft_terms.place(pl, refresh)

    def remove(self, task_id: int, refresh: bool = True) -> Placement:
        pl = super().remove(task_id, refresh)
        if self._bulk:
            return pl
        if self.lazy:
            self._dirty.add(task_id)
        else:
            self.soft_terms.remove(task_id, refresh)
        return pl

    def refresh(self, days: Iterable[int]) -> None:
        days = list(days)
        super().refresh(days)
        if not self._bulk and not self.lazy:
            self.soft_terms.refresh(days)

    def sync(self) -> None:
        """Bring the soft evaluator to the current placement (after lazy updates): every
        touched task's old place removed first, then its new place set."""
        if not self._dirty:
            return
        soft = self.soft_terms
        changed = [t for t in self._dirty if soft.placed_scope.get(t) != self.placed_scope.get(t)]
        self._dirty.clear()
        days = [soft.remove(t, refresh=False).day for t in changed if t in soft.placed_scope]
        for t in changed:
            pl = self.placed_scope.get(t)
            if pl is not None:
                soft.place(pl, refresh=False)
                days.append(pl.day)
        soft.refresh(days)

    def set_placements(self, placements: Sequence[Placement]) -> None:
        self._bulk = True
        try:
            super().set_placements(placements)
        finally:
            self._bulk = False
        self._dirty.clear()
        self.soft_terms.set_placements(placements)


def _higher(a: tuple[int, int] | HealthFloor | None, b: HealthFloor) -> HealthFloor:
    """The floor that both floors ``a`` and ``b`` (each bounding critical and critical + warning
    from below, and each maybe lexicographically: :attr:`.HealthFloor.least_warning`) give
    together. A lexicographic floor holds for the placements with its own least criticals: of
    the two, only the one whose criticals are the higher (both on a tie) says something of the
    placements at the combined least criticals."""
    if a is None:
        return b
    if isinstance(a, tuple):
        a = HealthFloor(a[0], a[1])
    critical = max(a.critical, b.critical)
    warning = max(a.critical + a.warning, b.critical + b.warning) - critical
    least = [
        f.least_warning for f in (a, b) if f.critical == critical and f.least_warning is not None
    ]
    lw = max(least) if least else None
    return HealthFloor(
        critical,
        warning,
        least_warning=lw if lw is not None and lw > warning else None,
        exact_complete=b.exact_complete,
    )


def _hot_tasks(ev: HealthEvaluator, tids: list[int]) -> list[int]:
    """Tasks on days with an issue or slack, or of a subject whose presence is uneven."""
    bad_days = set((np.flatnonzero(ev.day_cw.any(axis=1) | (ev.day_slack > 0)) + 1).tolist())
    return [t for t in tids if ev.placed_scope[t].day in bad_days]


def prefer_lexicographic(
    state: ScheduleState,
    problem: Problem,
    level: Level,
    feasibility_critical: int,
    weights: Mapping[str, float],
    best: tuple[list[Placement], dict[str, float], HealthCounts],
    other: Sequence[Placement],
    deadline: float | None = None,
    *,
    calibration: Calibration,
) -> tuple[list[Placement], dict[str, float], HealthCounts]:
    """``best`` or ``other`` (placing as many periods), whichever is lexicographically smaller
    in (critical, warning, weighted soft total); ``best`` as it is once ``deadline`` (a
    ``time.perf_counter()`` value) has passed on a window whose evaluator is not cheap (see
    :func:`.budget.too_late`)."""
    from .objective import evaluate

    if sum(pl.length for pl in other) != sum(pl.length for pl in best[0]):
        return best
    if too_late(deadline, setup_cost(state, calibration), calibration):
        return best
    ev = HealthEvaluator(
        state, {t for g in problem.groups for t in g.task_ids}, level, feasibility_critical
    )
    ev.set_placements(other)
    counts = ev.counts_now()
    objective = evaluate(problem, other, weights)
    if (*counts.key, objective["weighted_total"]) < (
        *best[2].key,
        best[1]["weighted_total"] - 1e-9,
    ):
        ordered = sorted(other, key=lambda pl: (pl.day, pl.slot_start, pl.task_id))
        return ordered, objective, counts
    return best


def health_of_moves(
    state: ScheduleState, moves: Sequence[tuple[Placement, Placement]], level: Level = "normal"
) -> tuple[HealthCounts, HealthCounts]:
    """analyze_health's (critical, warning) before and after ``moves`` ((before, after) places
    of placed tasks), feasibility issue aside: the re-optimising tools rank these first."""
    ev = HealthEvaluator(state, {before.task_id for before, _ in moves}, level)
    ev.set_placements([before for before, _ in moves])
    start = ev.counts_now()
    ev.set_placements([after for _, after in moves])
    return start, ev.counts_now()


def health_worse(
    state: ScheduleState, moves: Sequence[tuple[Placement, Placement]], level: Level = "normal"
) -> bool:
    """``moves`` leave analyze_health's (critical, warning) lexicographically worse: a
    re-optimising tool (spread_even, min_context_switch) then keeps the current places, since
    its own measure only ranks after (critical, warning)."""
    before, after = health_of_moves(state, moves, level)
    return after.key > before.key


def unplaced_critical(
    state: ScheduleState,
    unplaced: Sequence[int],
    time_limit_s: float,
    num_workers: int,
    deadline: float | None = None,
    placements: Sequence[Placement] = (),
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> int:
    """:func:`unplaced_check`'s count alone."""
    return unplaced_check(
        state, unplaced, time_limit_s, num_workers, deadline, placements, calibration
    )[0]


def unplaced_check(
    state: ScheduleState,
    unplaced: Sequence[int],
    time_limit_s: float,
    num_workers: int,
    deadline: float | None = None,
    placements: Sequence[Placement] = (),
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> tuple[int, bool]:
    """``(critical, cut)``: critical is 1 when ``analyze_health`` will add its feasibility issue once the proposal is applied:
    the same check it runs (suggested tasks re-planned) proves the window infeasible.

    Applying a proposal changes nothing that check sees (its scope, every pending and
    re-plannable suggested task, is lifted either way), so it runs on ``state``, except when
    ``placements`` place a pending embeddable host: placed, a host is no longer re-planned (see
    :func:`~smartflow_engine.concepts.movable_by_solver`), so the check runs on the schedule
    with ``placements`` applied. It is skipped only when nothing is left unplaced and no
    suggested task exists (the applied schedule is then its own witness); a suggested task
    standing outside its class's days may not fit inside them, so with nothing unplaced the
    window can still be infeasible.

    ``deadline`` (a ``time.perf_counter()`` value) caps the check's limit; once it has passed
    on a window whose close stage is not cheap (see :func:`.budget.too_late`),
    :class:`~._cpsat.OutOfTime` is raised instead of answering 0 unchecked (the counts a caller
    claims would then miss the feasibility issue). ``cut``: the check's time limit ended it
    unproven (0 is then what was known, not a proof, and a faster machine may count 1)."""
    if not unplaced and not any(t.status == "suggested" for t in state.tasks):
        return 0, False
    from .feasibility import check_feasibility

    if too_late(deadline, setup_cost(state, calibration), calibration):
        raise OutOfTime("no time left for the feasibility check of the unplaced tasks")
    if deadline is not None:
        time_limit_s = min(time_limit_s, deadline - time.perf_counter())
    hosts = [p for p in placements if (t := state.task(p.task_id)) is not None and t.can_embed]
    if hosts:
        applied = state.copy_state()
        result = relocate(
            applied,
            [Request(p.task_id, p.day, p.slot_start) for p in placements],
            op="apply_proposal",
        )
        if result.ok:
            state = applied
    report = check_feasibility(
        state,
        time_limit_s=max(time_limit_s, calibration.min_work_s),
        num_workers=num_workers,
        include_suggested=True,
        explain=False,
        calibration=calibration,
    )
    return (1 if report.is_feasible is False else 0), report.is_feasible is None


__all__ = [
    "HealthSearchResult",
    "eval_cost",
    "health_of_moves",
    "health_worse",
    "prefer_lexicographic",
    "search_health",
    "setup_cost",
    "unplaced_check",
    "unplaced_critical",
]
