"""The moves of the one search (issue 40 item 3: they lived in the search module): where a scope
task may stand (free periods, host blocks, its class's days and banned periods), the single moves
and swaps the search draws, and the candidate lists of its targeted scans (a subject's long gap,
a day with an issue). Every move is made on the search's evaluator and returns its undo list.

The item order (issue 42): every place and trade the moves offer keeps each class's item order
(:class:`ItemOrder`: an ordered item ends strictly before a later item of its class starts, and
keeps its order window against the class's items outside the scope), and a task returns to its
origin only where that keeps the order too (:class:`OrderedOrigin`). From a start that keeps the
order, the search's placements keep it all along: no order step has to re-place its answer.
A move may still carry an item past its class's neighbours: :meth:`Neighbourhood.reorder` then
relabels the class's interchangeable items (same group: free for every count) or rotates the
class's items along their places, so an item of another rank takes the place, and the move is
offered only when that keeps every rule.
"""

from __future__ import annotations

from collections import Counter, defaultdict
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

    # Whether a move may carry an ordered item past its class's neighbours, the class then
    # relabelled or rotated to keep its order (:meth:`reorder`); False gives the moves that
    # only keep each item between its neighbours (the search before it, for comparisons).
    reorder_items = True
    # Whether such a move may also push the neighbours it passes along (:meth:`push`) when
    # neither relabelling nor rotating keeps the order; False: the moves before it.
    push_items = True

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
        # an ordered item may also take a place past its class's neighbours: the class's items
        # are then relabelled or rotated along their places (:meth:`reorder`)
        self.reorders = bool(self.order) and self.reorder_items
        self.origin: Mapping[int, Placement] = (
            OrderedOrigin(origin, self.order, ev) if self.order else origin
        )
        self.rng = rng
        self.max_moves = max_moves
        self.group_of = problem.group_of()
        # per ordered task: whether another item of its class is in its group (a twin to
        # relabel with)
        kinds: dict[tuple[int, int], int] = defaultdict(int)
        for t, (c, _) in self.order.key.items():
            kinds[(c, self.group_of[t])] += 1
        self.twinned = {
            t for t, (c, _) in self.order.key.items() if kinds[(c, self.group_of[t])] > 1
        }
        # the classes whose items are of more than one kind (the rotation's)
        per_class = Counter(c for c, _ in kinds)
        self.mixed = {c for c, n in per_class.items() if n > 1}
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
        one lifted place's), only those that keep its class's item order (``mover=-1``: every
        place)."""
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
        if mover is not None and mover in self.order.key:  # (-1: every place, no order)
            window = self.order.window(mover, ev.placed_scope)
            out = [p for p in out if ItemOrder.fits(window, day, p[0], p[0] + n - 1)]
        return out

    def allows(self, tid: int, pl: Placement) -> bool:
        """``tid`` may stand at ``pl``'s place (class days and banned periods, and its item
        order against its class's other items where they stand; no host check)."""
        if not self.rule_allows(tid, pl):
            return False
        return tid not in self.order.key or self.order.allows(
            Placement(tid, pl.day, pl.slot_start, pl.slot_end), self.ev.placed_scope
        )

    def rule_allows(self, tid: int, pl: Placement) -> bool:
        """``tid`` may stand at ``pl``'s place in a free period by its class's days and banned
        periods (its item order aside; no host check)."""
        g = self.problem.groups[self.group_of[tid]]
        if not g.rule.allows_day(pl.day, self.problem.num_days) or pl.embed_host is not None:
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
        """The days of group ``gi``'s rule task ``tid`` may take: for an ordered item whose
        moves are not :meth:`reorder`-ed, those between its class's neighbours (its order
        window's days), so the draws and scans of a move spend nothing on days it cannot
        take."""
        days = self.allowed_days[gi]
        if tid not in self.order.key or self.reorders:
            return days
        window = self.order.window(tid, self.ev.placed_scope)
        after, before = window if window is not None else (None, None)
        lo = after[0] if after is not None else 1
        hi = before[0] if before is not None else self.problem.num_days + 1
        out: np.ndarray = days[(days >= lo) & (days <= hi)]
        return out

    def moved(self) -> int:
        return sum(1 for tid, pl in self.ev.placed_scope.items() if self.origin.get(tid) != pl)

    # ------------------------------------------------------------------ the item order's moves
    def reorder(self, cand: Candidate) -> Candidate | None:
        """``cand`` (its places free once its tasks are lifted, every class rule but the order
        kept) as a move that keeps every class's item order (issue 42): ``cand`` itself when it
        does; else its classes' interchangeable items (one group: duration, rule, water-course
        permission, subject — every count and soft term reads them alike) relabelled, each
        kind's places taken in time order by its items in their order (:meth:`_reseat`); else
        the classes' items rotated along their places: in their order, each takes the next
        place in time of the class (start kept, its own length), so an item that moves past
        its neighbours pushes them one place along and the last of them takes its new place.
        None when neither keeps the order on free periods allowed by every rule."""
        if self.keeps_order(cand):
            return cand
        if not self.reorders:
            return None
        found = self._reseat(cand, by_kind=True) or self._reseat(cand, by_kind=False)
        if found is None and self.push_items:
            found = self.push(cand)
        return found

    def push(self, cand: Candidate) -> Candidate | None:
        """``cand`` with the items of its movers' classes it passes pushed along (issue 42):
        a mover's later items that now start before it ends each take the first free place
        its rules allow after the item before them ends, and its earlier items that end after
        it starts the last one before the item after them starts, until an item already
        clears (at most ``push_chain`` items each way, each within ``push_days`` of its days
        from there). Its length and rules go with each item, so the class's periods shift
        along its days, where a relabelling needs items alike. None when an item finds no
        place, a class has equal orders among the items it would push, or a rule breaks."""
        ev, order = self.ev, self.order
        movers = dict(cand)
        over = dict(cand)
        taken = {cell for _, pl in cand for cell in _cells(pl)}
        for tid, new in cand:
            key = order.key.get(tid)
            if key is None:
                continue
            rest = [u for u in order.members[key[0]] if u != tid and u in ev.placed_scope]
            if len({order.key[u][1] for u in rest} | {key[1]}) != len(rest) + 1:
                return None  # (equal orders: no one way to push them)
            for later in (True, False):
                side = sorted(
                    (u for u in rest if (order.key[u][1] > key[1]) == later),
                    key=lambda u: order.key[u][1],
                    reverse=not later,
                )
                bound = (new.day, new.slot_end) if later else (new.day, new.slot_start)
                for n, u in enumerate(side):
                    pl = over.get(u) or ev.placed_scope[u]
                    if (pl.day, pl.slot_start) > bound if later else (pl.day, pl.slot_end) < bound:
                        break  # (it clears the item before it: so do the ones after it)
                    if n >= self.cal.push_chain or u in movers:
                        return None
                    seat = self._pushed(u, bound, taken, later)
                    if seat is None:
                        return None
                    over[u] = seat
                    taken.update(_cells(seat))
                    bound = (seat.day, seat.slot_end) if later else (seat.day, seat.slot_start)
        final = [(u, pl) for u, pl in over.items() if u in movers or ev.placed_scope.get(u) != pl]
        guests = {(pl.day, pl.slot_start, pl.embed_host) for _, pl in final}
        if not self._room(final, guests) or self._clash(final) or not self.keeps_order(final):
            return None
        return final

    def _pushed(
        self, tid: int, bound: Position, taken: set[tuple[int, int]], later: bool
    ) -> Placement | None:
        """The first free place of ``tid`` (its rules, its own periods free to it, none of
        ``taken``) starting after ``bound`` (``later``), else the last one ending before it,
        on its allowed days from ``bound``'s on (at most ``push_days`` of them)."""
        gi = self.group_of[tid]
        g = self.problem.groups[gi]
        n = g.duration
        days = self.allowed_days[gi].tolist()
        days = (
            [d for d in days if d >= bound[0]]
            if later
            else [d for d in days[::-1] if d <= bound[0]]
        )
        for d in days[: self.cal.push_days]:
            places = self.starts_on(g, d, lifted=(self.ev.placed_scope[tid],), mover=-1)
            if later:
                fit = sorted(p for p in places if (d, p[0]) > bound)
            else:
                fit = sorted((p for p in places if (d, p[0] + n - 1) < bound), reverse=True)
            for s, host in fit:
                seat = Placement(tid, d, s, s + n - 1, host)
                if not (_cells(seat) & taken):
                    return seat
        return None

    def _reseat(self, cand: Candidate, *, by_kind: bool) -> Candidate | None:
        """``cand`` with the items of each class it moves re-assigned to the class's places
        (each kind's alone with ``by_kind``, else the whole class's, a place's start kept) in
        time order by their order; None when that breaks a rule or the order."""
        ev, order = self.ev, self.order
        over = dict(cand)
        classes = sorted({order.key[t][0] for t in over if t in order.key})
        if by_kind and not any(t in self.twinned for t in over):
            return None  # (no item of the move has a twin: nothing to relabel)
        if not by_kind and not any(c in self.mixed for c in classes):
            return None  # (each class of one kind: the rotation is the relabelling)
        out = dict(over)
        for c in classes:
            # the pools the move touches (the others' places do not change)
            kinds = {self.group_of[t] for t in over if t in order.key and order.key[t][0] == c}
            pools: dict[int, list[int]] = defaultdict(list)
            for u in order.members[c]:
                if u not in over and u not in ev.placed_scope:
                    continue
                if not by_kind:
                    pools[0].append(u)
                elif self.group_of[u] in kinds:
                    pools[self.group_of[u]].append(u)
            for pool in pools.values():
                if len(pool) < 2:
                    continue
                now = {u: over.get(u) or ev.placed_scope[u] for u in pool}
                # equal orders keep the time order they have
                ranked = sorted(
                    pool, key=lambda u: (order.key[u][1], _at(ev.placed_scope.get(u) or now[u]))
                )
                places = sorted(now.values(), key=_at)
                lifted = set(over) | set(pool)
                taken: set[tuple[int, int]] = set()
                for u, pl in zip(ranked, places, strict=True):
                    seat = self._seat(u, pl, lifted, taken)
                    if seat is None:
                        return None
                    out[u] = seat
                    if seat.embed_host is None:
                        taken.update(
                            (seat.day, q) for q in range(seat.slot_start, seat.slot_end + 1)
                        )
        final = [(u, pl) for u, pl in out.items() if u in over or ev.placed_scope.get(u) != pl]
        guests = {(pl.day, pl.slot_start, pl.embed_host) for _, pl in cand}
        held = (ev.placed_scope.get(u) for u, _ in final)
        guests |= {(h.day, h.slot_start, h.embed_host) for h in held if h is not None}
        if not self._room(final, guests) or self._clash(final) or not self.keeps_order(final):
            return None
        return final

    def _seat(
        self, tid: int, place: Placement, lifted: set[int], taken: set[tuple[int, int]]
    ) -> Placement | None:
        """``tid`` at ``place`` (another task's): the same place for an item of the same group;
        else ``tid``'s length from the place's start, or else ending where it ends, whichever
        first stands on periods free once the ``lifted`` tasks leave and not ``taken`` by the
        seats before it (never a host block of another length)."""
        g = self.problem.groups[self.group_of[tid]]
        if self.group_of[place.task_id] == self.group_of[tid]:
            return Placement(tid, place.day, place.slot_start, place.slot_end, place.embed_host)
        if place.embed_host is not None:
            if not g.can_guest or place.length != g.duration:
                return None
            return Placement(tid, place.day, place.slot_start, place.slot_end, place.embed_host)
        n, spd = g.duration, self.problem.slots_per_day
        row = self.ev.owner[place.day - 1]
        for s in (place.slot_start, place.slot_end - n + 1):
            if s < 1 or s + n - 1 > spd:
                continue
            if all(
                (row[q - 1] == 0 or int(row[q - 1]) in lifted) and (place.day, q) not in taken
                for q in range(s, s + n)
            ):
                return Placement(tid, place.day, s, s + n - 1)
        return None

    def _room(self, final: Candidate, guests: set[tuple[int, int, int | None]]) -> bool:
        """Every new place of ``final`` keeps its task's class rule (days, weekdays, banned
        periods, order segment) and stands on periods free once ``final``'s tasks are lifted
        (a guest place: one ``cand`` offered or a mover held, ``guests``)."""
        movers = {u for u, _ in final}
        owner = self.ev.owner
        for u, pl in final:
            rule = self.problem.groups[self.group_of[u]].rule
            if pl.day > owner.shape[0] or not rule.allows(
                pl.day, pl.slot_start, pl.slot_end, self.problem.num_days
            ):
                return False
            if pl.embed_host is not None:
                if (pl.day, pl.slot_start, pl.embed_host) not in guests:
                    return False
                continue
            cells = owner[pl.day - 1, pl.slot_start - 1 : pl.slot_end].tolist()
            if any(v != 0 and v not in movers for v in cells):
                return False
        return True

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
        # (an ordered item's places past its neighbours too, when the moves reorder its class)
        reorder = self.reorders and tid in self.order.key
        places = self.starts_on(g, day, mover=-1 if reorder else tid)
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
        if reorder and not self.order.allows(new, ev.placed_scope):
            ev.place(old, refresh=False)
            cand = self.reorder([(tid, new)])
            return self.make(cand) if cand is not None else None
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
        if not self.order or self.reorders:  # (reordered: any item may reach the gap)
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
        reorder = self.reorders and tid in self.order.key
        window = self.order.window(tid, ev.placed_scope) if reorder else None
        past: list[Placement] = []  # places past the item's neighbours (scanned reordered)
        for day in days.tolist():
            for s, host in self.starts_on(g, int(day), mover=-1 if reorder else tid):
                pl = Placement(tid, int(day), s, s + g.duration - 1, host)
                if pl == old:
                    continue
                if not ItemOrder.fits(window, pl.day, pl.slot_start, pl.slot_end):
                    past.append(pl)
                    continue
                ev.place(pl)
                c = ev.counts_now()
                evals += 1
                key = (*self.score(c), float(self.rng.random()))
                if best is None or key < best[0]:
                    best = (key, pl)
                ev.remove(tid)
        ev.place(old)
        moves: list[tuple[tuple[int, int, float, float], Candidate]] = []
        if best is not None:
            moves.append((best[0], [(tid, best[1])]))
        for pl in past:
            cand = self.reorder([(tid, pl)])
            if cand is None:
                continue
            changes = self.make(cand)
            evals += 1
            moves.append(((*self.score(ev.counts_now()), float(self.rng.random())), cand))
            self.undo(changes)
        if not moves:
            return None, evals
        key, cand = min(moves, key=lambda m: m[0])
        if not accepts(key[:3], cur, tol=0.0):
            return None, evals
        return self.make(cand), evals

    # ------------------------------------------------------------------ targeted scans
    def scan(
        self,
        candidates: list[Candidate],
        cur: HealthCounts | tuple[int, int, float],
    ) -> tuple[Changes | None, int]:
        """Evaluate every candidate (a list of (task, new place) whose places are free once
        the candidate's own tasks are lifted; one that breaks the item order is
        :meth:`reorder`-ed, or skipped) and make the best one if it is not worse than
        ``cur`` in (critical, warning, slack); the undo list (or None) and the evaluations."""
        ev = self.ev
        if isinstance(cur, HealthCounts):  # (the counts of the current state)
            cur = self.score(cur)
        best: tuple[tuple[int, int, float, float], int] | None = None
        for i, cand in enumerate(candidates):
            if self._clash(cand):
                continue
            if not self.keeps_order(cand):  # (reordered, when the moves reorder classes)
                kept = self.reorder(cand)
                if kept is None:
                    continue
                candidates[i] = cand = kept
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
        mover = -1 if self.reorders and tid in self.order.key else tid  # (reordered in scan)
        places = [
            p
            for p in self.starts_on(g, day, mover=mover)
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
            if self.rule_allows(tid, na) and self.rule_allows(u, nb):
                cand = self.reorder([(tid, na), (u, nb)])
                if cand is not None:
                    out.append(cand)
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
                kept = self.reorder(cand)
                if kept is not None:
                    out.append(kept)
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
        if not (self.rule_allows(a, na) and self.rule_allows(b, nb)):
            return None
        cand = self.reorder([(a, na), (b, nb)])
        if cand is None:
            return None
        if cand != [(a, na), (b, nb)]:  # (reordered: the classes' items moved along)
            return self.make(cand)
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


def _cells(pl: Placement) -> set[tuple[int, int]]:
    """The (day, period) cells a place takes in free periods (none for a guest's)."""
    if pl.embed_host is not None:
        return set()
    return {(pl.day, q) for q in range(pl.slot_start, pl.slot_end + 1)}


def _at(pl: Placement) -> tuple[int, int, int]:
    """Where a place stands in time."""
    return (pl.day, pl.slot_start, pl.slot_end)


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
