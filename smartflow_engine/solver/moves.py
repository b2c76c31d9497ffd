"""The moves of the one search (issue 40 item 3: they lived in the search module): where a scope
task may stand (free periods, host blocks, its class's days and banned periods), the single moves
and swaps the search draws, and the candidate lists of its targeted scans (a subject's long gap,
a day with an issue). Every move is made on the search's evaluator and returns its undo list.

The item order (issue 42): every place and trade the moves offer keeps each class's item order
(:class:`ItemOrder`: an ordered item ends strictly before a later item of its class starts, and
keeps its order window against the class's items outside the scope), and a task returns to its
origin only where that keeps the order too (:class:`OrderedOrigin`). From a start that keeps the
order, the search's placements keep it all along: no order step has to re-place its answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from ..state import ScheduleState, order_key
from .budget import Calibration
from .health_eval import HealthCounts, HealthEvaluator
from .problem import Bin, Group, Placement, Problem, allowed_starts
from .scoring import accepts

# a made move: (task, old place, new place) per task moved
Changes = list[tuple[int, Placement, Placement]]
# a candidate move: (task, new place) per task moved
Candidate = list[tuple[int, Placement]]
# (day, period): where an item ends or starts
Position = tuple[int, int]
# a search's operators: (the calibration's share of the draw, the operator's name, the fewest
# tasks it needs); the last entry takes the rest of the draw
OperatorTable = tuple[tuple[str | None, str, int], ...]


def draw_operator(table: OperatorTable, draw: float, cal: Calibration, tasks: int) -> str:
    """The operator of ``table`` a ``draw`` in [0, 1) falls on: the shares add up in order;
    an operator needing more tasks than there are passes its share on to the last entry."""
    edge = 0.0
    for share, name, fewest in table[:-1]:
        edge += float(getattr(cal, share or ""))
        if draw < edge and tasks >= fewest:
            return name
    return table[-1][1]


class ItemOrder:
    """The item order among a search's scope tasks (issue 42): for two items of one class with
    orders a < b, a ends strictly before b starts; each item also keeps its group's order window
    (:attr:`.problem.Rule.after` / ``before``: the class's items that stay where they are).
    Items of equal order do not bind each other. Tasks without an order are free."""

    def __init__(self, state: ScheduleState, problem: Problem) -> None:
        self.key: dict[int, tuple[int, int]] = {}
        self.members: dict[int, list[int]] = defaultdict(list)
        self.fixed: dict[int, tuple[Position | None, Position | None]] = {}
        for g in problem.groups:
            for tid in g.task_ids:
                task = state.task(tid)
                key = order_key(task) if task is not None else None
                if key is None:
                    continue
                self.key[tid] = key
                self.members[key[0]].append(tid)
                if g.rule.after is not None or g.rule.before is not None:
                    self.fixed[tid] = (g.rule.after, g.rule.before)

    def __bool__(self) -> bool:
        return bool(self.key)

    def window(
        self,
        tid: int,
        placed: Mapping[int, Placement],
        over: Mapping[int, Placement] | None = None,
    ) -> tuple[Position | None, Position | None] | None:
        """``(after, before)``: ``tid`` must start strictly after ``after`` and end strictly
        before ``before`` (None: no bound), the class's other items standing at ``placed``
        (``over``'s places instead, for the tasks it names); None for a task without an order."""
        key = self.key.get(tid)
        if key is None:
            return None
        after, before = self.fixed.get(tid, (None, None))
        for u in self.members[key[0]]:
            if u == tid:
                continue
            pl = over.get(u) if over is not None and u in over else placed.get(u)
            if pl is None:
                continue
            order = self.key[u][1]
            if order < key[1]:
                end = (pl.day, pl.slot_end)
                if after is None or end > after:
                    after = end
            elif order > key[1]:
                start = (pl.day, pl.slot_start)
                if before is None or start < before:
                    before = start
        return after, before

    @staticmethod
    def fits(
        window: tuple[Position | None, Position | None] | None, day: int, start: int, end: int
    ) -> bool:
        """A place (``day``, periods ``start..end``) inside ``window`` (None: anywhere)."""
        if window is None:
            return True
        after, before = window
        if after is not None and (day, start) <= after:
            return False
        return before is None or (day, end) < before

    def allows(self, pl: Placement, placed: Mapping[int, Placement]) -> bool:
        """``pl``'s task may stand at ``pl`` with the other items at ``placed``."""
        return self.fits(self.window(pl.task_id, placed), pl.day, pl.slot_start, pl.slot_end)

    def keeps(self, cand: Sequence[tuple[int, Placement]], placed: Mapping[int, Placement]) -> bool:
        """Every task of the candidate move ``cand`` keeps the order at its new place, the
        candidate's tasks at their new places and the others at ``placed``."""
        over = {tid: pl for tid, pl in cand}
        return all(
            self.fits(self.window(tid, placed, over), pl.day, pl.slot_start, pl.slot_end)
            for tid, pl in cand
        )


class OrderedOrigin(Mapping[int, Placement]):
    """A search's origins (where each task started), seen through the item order: an ordered
    task's origin is offered (``get``) only while it stands there or returning there keeps its
    class's order with the other items where they stand now (the send-back reads it)."""

    def __init__(
        self, origin: Mapping[int, Placement], order: ItemOrder, ev: HealthEvaluator
    ) -> None:
        self.origin, self.order, self.ev = dict(origin), order, ev

    def __getitem__(self, tid: int) -> Placement:
        home = self.origin[tid]
        if tid not in self.order.key or self.ev.placed_scope.get(tid) == home:
            return home
        if not self.order.allows(home, self.ev.placed_scope):
            raise KeyError(tid)
        return home

    def __iter__(self) -> Iterator[int]:
        return iter(self.origin)

    def __len__(self) -> int:
        return len(self.origin)

    def __contains__(self, tid: object) -> bool:
        try:
            self[tid]  # type: ignore[index]
        except KeyError:
            return False
        return True


class Neighbourhood:
    """The moves of the one search on its evaluator's placement: places, single moves, swaps,
    and the targeted scans (a list of candidates, the best made); each returns its undo list."""

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
        # every place and trade offered keeps the item order (issue 42), and so does a return
        self.order = ItemOrder(ev.state, problem)
        self.origin: Mapping[int, Placement] = (
            OrderedOrigin(origin, self.order, ev) if self.order else origin
        )
        self.rng = rng
        self.max_moves = max_moves
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
        self, g: Group, day: int, lifted: Sequence[Placement] = (), mover: int | None = None
    ) -> list[tuple[int, int | None]]:
        """Free (start, host) places of ``g`` on ``day`` in the current state (1-based), the
        ``lifted`` places counting as free; for the task that moves (``mover``, by default the
        one lifted place's), only those that keep its class's item order."""
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
        if mover is None and len(lifted) == 1:
            mover = lifted[0].task_id
        if mover is not None and mover in self.order.key:
            window = self.order.window(mover, ev.placed_scope)
            out = [p for p in out if ItemOrder.fits(window, day, p[0], p[0] + n - 1)]
        return out

    def allows(self, tid: int, pl: Placement) -> bool:
        """``tid`` may stand at ``pl``'s place (class days and banned periods, and its item
        order against its class's other items where they stand; no host check)."""
        g = self.problem.groups[self.group_of[tid]]
        if not g.rule.allows_day(pl.day, self.problem.num_days) or pl.embed_host is not None:
            return False
        if tid in self.order.key and not self.order.allows(
            Placement(tid, pl.day, pl.slot_start, pl.slot_end), self.ev.placed_scope
        ):
            return False
        return bool(
            allowed_starts(
                g.rule.banned, g.duration, pl.slot_start, pl.slot_end, self.problem.slots_per_day
            )
        )

    def keeps_order(self, cand: Candidate) -> bool:
        """The candidate move keeps every class's item order (its tasks at their new places)."""
        return not self.order or self.order.keeps(cand, self.ev.placed_scope)

    def days_of(self, tid: int, gi: int) -> np.ndarray:
        """The days of group ``gi``'s rule task ``tid`` may take: for an ordered item, those
        between its class's neighbours (its order window's days), so the draws and scans of a
        move spend nothing on days it cannot take."""
        days = self.allowed_days[gi]
        if tid not in self.order.key:
            return days
        window = self.order.window(tid, self.ev.placed_scope)
        after, before = window if window is not None else (None, None)
        lo = after[0] if after is not None else 1
        hi = before[0] if before is not None else self.problem.num_days + 1
        out: np.ndarray = days[(days >= lo) & (days <= hi)]
        return out

    def moved(self) -> int:
        return sum(1 for tid, pl in self.ev.placed_scope.items() if self.origin.get(tid) != pl)

    # ------------------------------------------------------------------ moves
    def relocate(self, tid: int, day_choice: str | int) -> Changes | None:
        """Move ``tid`` to a random allowed free place on a day drawn by ``day_choice``
        (``light``: the lighter of two, ``any``, or a given day); the undo list or None."""
        ev = self.ev
        gi = self.group_of[tid]
        g = self.problem.groups[gi]
        days = self.days_of(tid, gi)
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
        places = self.starts_on(g, day, mover=tid)
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

    def gap_move(self) -> Changes | None:
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
        mine = self._reaching(
            [t for t, pl in ev.placed_scope.items() if ev.code_of_task[t] == code], a + 1, b - 1
        )
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

    def _reaching(self, tids: list[int], lo: int, hi: int) -> list[int]:
        """Of ``tids``, those whose item order lets them stand on some day of ``lo..hi`` (a
        gap's days: an ordered item between the gap's ends cannot cross its class's other
        items); all of them when none does (or no task is ordered)."""
        if not self.order:
            return tids
        out = []
        for t in tids:
            window = self.order.window(t, self.ev.placed_scope)
            if window is None:
                out.append(t)
                continue
            after, before = window
            if (after is None or after[0] <= hi) and (before is None or before[0] >= lo):
                out.append(t)
        return out or tids

    def score(self, c: HealthCounts) -> tuple[int, int, float]:
        """(critical, warning, guidance slack) of the current state, ``c`` its counts: what the
        scans rank their candidates by."""
        return (c.critical, c.warning, c.slack)

    def best_relocation(
        self, tid: int, cur: HealthCounts | tuple[int, int, float]
    ) -> tuple[Changes | None, int]:
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
        days = self.days_of(tid, gi)
        if days.size > self.cal.scan_days:  # long windows: a random sample of the days (sorted)
            days = np.sort(self.rng.choice(days, size=self.cal.scan_days, replace=False))
        for day in days.tolist():
            for s, host in self.starts_on(g, int(day), mover=tid):
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
        if best is None or not accepts(best[0][:3], cur, tol=0.0):
            ev.place(old)
            return None, evals
        ev.place(best[1])
        return [(tid, old, best[1])], evals

    # ------------------------------------------------------------------ targeted scans
    def scan(
        self,
        candidates: list[Candidate],
        cur: HealthCounts | tuple[int, int, float],
    ) -> tuple[Changes | None, int]:
        """Evaluate every candidate (a list of (task, new place) whose places are free once
        the candidate's own tasks are lifted) and make the best one if it is not worse than
        ``cur`` in (critical, warning, slack); the undo list (or None) and the evaluations."""
        ev = self.ev
        if isinstance(cur, HealthCounts):  # (the counts of the current state)
            cur = self.score(cur)
        best: tuple[tuple[int, int, float, float], int] | None = None
        for i, cand in enumerate(candidates):
            if self._clash(cand) or not self.keeps_order(cand):
                continue
            changes = self.make(cand)
            c = ev.counts_now()
            key = (*self.score(c), float(self.rng.random()))
            if best is None or key < best[0]:
                best = (key, i)
            self.undo(changes)
        if best is None or not accepts(best[0][:3], cur):
            return None, len(candidates)
        return self.make(candidates[best[1]]), len(candidates)

    def _clash(self, cand: Candidate) -> bool:
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

    def make(self, cand: Candidate) -> Changes:
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
            for p in self.starts_on(g, day, mover=tid)
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

    def _swaps(self, tid: int, day: int, limit: int) -> list[Candidate]:
        """Up to ``limit`` trades of ``tid`` with a task of another subject and the same length
        standing on ``day`` (both allowed at the other's place)."""
        ev = self.ev
        pa = ev.placed_scope[tid]
        if pa.embed_host is not None:
            return []
        out: list[Candidate] = []
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
            if (
                self.allows(tid, na)
                and self.allows(u, nb)
                and self.keeps_order([(tid, na), (u, nb)])
            ):
                out.append([(tid, na), (u, nb)])
                if len(out) >= limit:
                    break
        return out

    def gap_candidates(self) -> list[Candidate]:
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
        mine = self._reaching(
            [t for t, pl in ev.placed_scope.items() if ev.code_of_task[t] == code], a + 1, b - 1
        )
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
        out: list[Candidate] = []
        for t in sources:
            for d in days:
                places = self._places(t, d, self.cal.gap_places)
                out += [[(t, pl)] for pl in places]
                if not places:
                    out += self._swaps(t, d, 2)
        return out

    def unload_candidates(self) -> list[Candidate]:
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
        out: list[Candidate] = []
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

    def _exchanges(self, tid: int, day: int) -> list[Candidate]:
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
        out: list[Candidate] = []
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
                cand = [
                    (tid, Placement(tid, day, sa[0], sa[0] + ga.duration - 1)),
                    (u, Placement(u, pa.day, sb[0], sb[0] + gb.duration - 1)),
                ]
                if self.keeps_order(cand):
                    out.append(cand)
        return out

    def _touches(self, day: int, s: int, n: int) -> bool:
        row = self.ev.owner[day - 1]
        left = s - 2 < 0 or row[s - 2] != 0
        right = s - 1 + n >= row.size or row[s - 1 + n] != 0
        return bool(left or right)

    def swap(self, a: int, b: int) -> Changes | None:
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
        if not self.keeps_order([(a, na), (b, nb)]):
            return None
        ev.remove(a, refresh=False)
        ev.remove(b, refresh=False)
        ev.place(na, refresh=False)
        ev.place(nb, refresh=False)
        ev.refresh((pa.day, pb.day))
        return [(a, pa, na), (b, pb, nb)]

    def undo(self, changes: Changes) -> None:
        for tid, _, _ in changes:
            self.ev.remove(tid, refresh=False)
        for _, old, _ in changes:
            self.ev.place(old, refresh=False)
        self.ev.refresh([pl.day for _, old, new in changes for pl in (old, new)])


def hot_tasks(ev: HealthEvaluator, tids: list[int]) -> list[int]:
    """Tasks on days with an issue or slack, or of a subject whose presence is uneven."""
    bad_days = set((np.flatnonzero(ev.day_cw.any(axis=1) | (ev.day_slack > 0)) + 1).tolist())
    return [t for t in tids if ev.placed_scope[t].day in bad_days]


__all__ = [
    "Candidate",
    "Changes",
    "ItemOrder",
    "Neighbourhood",
    "OperatorTable",
    "OrderedOrigin",
    "draw_operator",
    "hot_tasks",
]
