"""A day plan of a proposal's scope (issue 42): which free run or water-course block each task
takes, chosen by one CP-SAT model of the day-level rules together, then each run packed.

On upstream-shaped windows the one search's single and paired moves stop where an item can
only improve a day by pushing other classes' ordered items along theirs (docs/decisions.md,
ninth and tenth sessions). This model sees every day at once:

- one boolean per task and *bin* (a maximal free run, or a host block its class may use as a
  guest); a run holds at most its length, a host block one guest;
- the item order as precedence of bins in time (items of one class in one run are packed in
  order);
- per day its load (fixed periods plus the tasks in free runs) with the ``day_utilization``
  bands, a buffer when some run keeps :data:`MIN_BUFFER` periods free (packed to one side, a
  run's rest is one free run), its switches as each run's subjects less one, a heavy pair when
  a run holds two hard subjects; per subject a gap indicator over every window of the
  ``subject_gap`` bands' lengths between its present days; the loads' sample standard deviation
  (and range) with the ``load_imbalance`` bands;
- minimised: criticals first, then warnings.

Each run is then packed by enumeration (its tasks' orders, up to ``day_plan_pack_items`` tasks; each
at its earliest or latest allowed start, knowing the neighbours' subjects): fewest heavy pairs,
then switches, then the most periods left usable. A run whose tasks no order packs (half-day
bans inside it) is cut off (those tasks may not share it) and the model solved again from its
last answer, within what is left of the work. The plan is a start for the one search, never
a claim: its counts are the evaluator's, and it is returned only when it places every task
where the rules allow, the order kept.

Its work (CP-SAT deterministic time) decides what it finds; the wall clock only cuts it (then
``cut``). One worker, presolve and the LP off: with them one worker found no solution in 5
units on a 30-day window; without them it walks down from the hint.

It runs where a caller gives it work of its own (:func:`.placement.propose_placement`'s
``plan_work_s``: the tools give it on ordered windows when the call's limit leaves time beyond
the default proposal's), after the proposal, hinted with it, and replaces it only when it has
fewer issues. Measured: benchmarks/results_day_plan.md, docs/decisions.md (tenth session).
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..concepts import hard_subjects
from ..health_facts import MIN_BUFFER, MIN_USABLE
from ..rules import Level, rule, severity, threshold
from ..state import ScheduleState, order_key
from ._cpsat import SolveStatus, cp_model, make_solver, status_of
from .budget import DEFAULT_CALIBRATION, Calibration
from .health_model import rule_tables
from .order import order_kept
from .ordered import place_options
from .problem import Bin, Placement, Problem, valid_start


@dataclass(frozen=True)
class DayPlan:
    """A plan's placements (None: no plan), whether the wall clock cut it, the model's last
    objective, the solves it took and its deterministic time."""

    placements: list[Placement] | None
    cut: bool = False
    objective: float | None = None
    rounds: int = 0
    work_s: float = 0.0


@dataclass
class _Layout:
    """The bins in time order and each task's bins, places (by bin), length and subject."""

    bins: list[Bin]
    position: dict[Bin, int]
    task_bins: dict[int, list[Bin]]
    places: dict[tuple[int, Bin], list[Placement]]
    duration: dict[int, int]
    subject: dict[int, str]
    hard: frozenset[str]
    order: dict[int, tuple[int, int]]

    @classmethod
    def of(cls, state: ScheduleState, problem: Problem) -> _Layout | None:
        options = place_options(problem, every_guest_start=True)
        if options is None:
            return None
        bins = sorted([*problem.runs, *problem.hosts], key=lambda b: (b.day, b.slot_start))
        by_cell = {(b.day, b.host, q): b for b in bins for q in range(b.slot_start, b.slot_end + 1)}
        places: dict[tuple[int, Bin], list[Placement]] = defaultdict(list)
        task_bins: dict[int, list[Bin]] = {}
        position = {b: i for i, b in enumerate(bins)}
        for tid, opts in options.items():
            mine: set[Bin] = set()
            for p in opts:
                b = by_cell[p.day, p.embed_host, p.slot_start]
                places[tid, b].append(p)
                mine.add(b)
            task_bins[tid] = sorted(mine, key=position.__getitem__)
        duration = {tid: g.duration for g in problem.groups for tid in g.task_ids}
        order = {
            tid: key
            for tid in duration
            if (t := state.task(tid)) is not None and (key := order_key(t)) is not None
        }
        subject = {tid: problem.task_subjects.get(tid, "") for tid in duration}
        return cls(
            bins, position, task_bins, dict(places), duration, subject, hard_subjects(state), order
        )


class _Model:
    """The CP-SAT model of the plan (see the module docstring)."""

    def __init__(self, layout: _Layout, problem: Problem, level: Level) -> None:
        self.m = cp_model().CpModel()
        self.layout, self.problem, self.level = layout, problem, level
        self.y: dict[tuple[int, Bin], Any] = {}
        self.critical: list[Any] = []
        self.warning: list[Any] = []
        self.in_bin: dict[Bin, list[tuple[int, Any]]] = defaultdict(list)
        self.load: list[Any] = []

    def build(self) -> None:
        self._places()
        self._order()
        day_runs = self._runs()
        self._days(day_runs)
        self._gaps()
        self._imbalance()
        # (a critical outweighs every warning the model counts)
        self.m.Minimize((len(self.warning) + 1) * sum(self.critical) + sum(self.warning))

    def hint(self, placements: Sequence[Placement]) -> None:
        """Hint the bins of ``placements`` (a schedule of the scope, e.g. the search's start)."""
        at = {p.task_id: p for p in placements}
        for (tid, b), v in self.y.items():
            p = at.get(tid)
            inside = (
                p is not None
                and p.day == b.day
                and p.embed_host == b.host
                and b.slot_start <= p.slot_start <= b.slot_end
            )
            self.m.AddHint(v, inside)

    def _places(self) -> None:
        m, lay = self.m, self.layout
        for tid, bins in lay.task_bins.items():
            for b in bins:
                v = self.y[tid, b] = m.NewBoolVar("")
                self.in_bin[b].append((tid, v))
            m.AddExactlyOne(self.y[tid, b] for b in bins)

    def _order(self) -> None:
        """Items of one class keep their order: a later one's bin is not earlier in time."""
        m, lay = self.m, self.layout
        pos: dict[int, Any] = {}
        for tid in lay.order:
            pos[tid] = m.NewIntVar(0, len(lay.bins), "")
            m.Add(pos[tid] == sum(lay.position[b] * self.y[tid, b] for b in lay.task_bins[tid]))
        levels: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        for tid, (cid, rank) in lay.order.items():
            levels[cid][rank].append(tid)
        for ranks in levels.values():
            steps = [ranks[r] for r in sorted(ranks)]
            for before, after in itertools.pairwise(steps):
                for a in before:
                    for b in after:
                        m.Add(pos[a] <= pos[b])
            self._apart(steps)

    def _apart(self, steps: list[list[int]]) -> None:
        """Two items of a class, one of a lower order, share a bin only where the earlier
        can end before the later starts (the bans may leave no such pair of places)."""
        lay = self.layout
        items = [(rank, t) for rank, step in enumerate(steps) for t in step]
        for (ra, a), (rb, b) in itertools.combinations(items, 2):
            if ra == rb:
                continue
            for bin_ in set(lay.task_bins[a]) & set(lay.task_bins[b]):
                first = min(p.slot_end for p in lay.places[a, bin_])
                last = max(p.slot_start for p in lay.places[b, bin_])
                if first >= last:
                    self.m.AddBoolOr([self.y[a, bin_].Not(), self.y[b, bin_].Not()])

    def _runs(self) -> dict[int, list[tuple[Any, Any, Any, Any]]]:
        """Per day, each free run's (periods used, rest >= MIN_BUFFER, switches, heavy); each
        host block holds one guest."""
        m, lay = self.m, self.layout
        out: dict[int, list[tuple[Any, Any, Any, Any]]] = defaultdict(list)
        for b in lay.bins:
            here = self.in_bin.get(b, [])
            if b.host is not None:
                m.Add(sum(v for _, v in here) <= 1)
                continue
            used = m.NewIntVar(0, b.length, "")
            m.Add(used == sum(lay.duration[t] * v for t, v in here))
            self._confined(b, here)
            rest = m.NewBoolVar("")
            m.Add(used <= b.length - max(MIN_BUFFER, MIN_USABLE)).OnlyEnforceIf(rest)
            switches, heavy = self._run_subjects(here)
            out[b.day].append((used, rest, switches, heavy))
        return out

    def _confined(self, b: Bin, here: list[tuple[int, Any]]) -> None:
        """The tasks a run's bans confine to a part of it fit that part: for each task's
        reach in the run (the periods its places cover), the tasks whose reach lies inside
        it take at most its periods (a half-day ban leaves a class part of a free day)."""
        lay = self.layout
        reach = {
            t: frozenset(q for p in lay.places[t, b] for q in range(p.slot_start, p.slot_end + 1))
            for t, _ in here
        }
        for part in set(reach.values()):
            if len(part) >= b.length:
                continue
            inside = [(t, v) for t, v in here if reach[t] <= part]
            if sum(lay.duration[t] for t, _ in inside) > len(part):
                self.m.Add(sum(lay.duration[t] * v for t, v in inside) <= len(part))

    def _present(self, votes: list[Any]) -> Any:
        """A boolean true exactly when one of ``votes`` is."""
        m = self.m
        z = m.NewBoolVar("")
        for v in votes:
            m.AddImplication(v, z)
        m.AddBoolOr(votes).OnlyEnforceIf(z)
        return z

    def _run_subjects(self, here: list[tuple[int, Any]]) -> tuple[Any, Any]:
        """A run's switches (its subjects less one) and whether two hard subjects share it."""
        m, lay = self.m, self.layout
        by_subject: dict[str, list[Any]] = defaultdict(list)
        for t, v in here:
            by_subject[lay.subject[t]].append(v)
        present = {s: self._present(vs) for s, vs in by_subject.items()}
        switches = m.NewIntVar(0, max(len(present), 1), "")
        if present:
            m.Add(switches >= sum(present.values()) - 1)
        else:
            m.Add(switches == 0)
        heavy = m.NewBoolVar("")
        hard = [z for s, z in present.items() if s in lay.hard]
        if len(hard) >= 2:
            m.Add(sum(hard) <= 1).OnlyEnforceIf(heavy.Not())
        else:
            m.Add(heavy == 0)
        return switches, heavy

    def _days(self, day_runs: dict[int, list[tuple[Any, Any, Any, Any]]]) -> None:
        """Per day its load's utilisation band, its buffer, its switches and heavy pair; the
        window's days without buffer with the buffer rule's bands."""
        m, pb, level = self.m, self.problem, self.level
        spd = pb.slots_per_day
        util_cw, buf_cw, _ = rule_tables(level, spd, pb.num_days, True, True)
        fixed = np.count_nonzero(pb.owner, axis=1)
        sw_warn = int(threshold("context", "context_switch", "warning", "switch_count", level))
        heavy_on = rule("context", "heavy_adjacent", level).bands[0].severity == "warning"
        no_buffer = []
        for d in range(1, pb.num_days + 1):
            runs = day_runs.get(d, [])
            load = m.NewIntVar(0, spd, "")
            m.Add(load == int(fixed[d - 1]) + sum(u for u, _, _, _ in runs))
            self.load.append(load)
            self._band(load, util_cw)
            lacks = m.NewBoolVar("")
            m.AddBoolOr([r for _, r, _, _ in runs] + [lacks])
            no_buffer.append(lacks)
            switched = m.NewBoolVar("")
            m.Add(sum(s for _, _, s, _ in runs) < sw_warn).OnlyEnforceIf(switched.Not())
            self.warning.append(switched)
            if heavy_on and runs:
                self.warning.append(self._present([h for _, _, _, h in runs]))
        count = m.NewIntVar(0, pb.num_days, "")
        m.Add(count == sum(no_buffer))
        self._band(count, buf_cw)

    def _band(self, value: Any, table: list[tuple[int, int]]) -> None:
        """The (critical, critical + warning) of ``value`` by ``table``, counted."""
        m = self.m
        crit = m.NewIntVar(0, 1, "")
        cw = m.NewIntVar(0, 1, "")
        m.AddElement(value, [c for c, _ in table], crit)
        m.AddElement(value, [w for _, w in table], cw)
        self.critical.append(crit)
        warn = m.NewIntVar(0, 1, "")
        m.Add(warn == cw - crit)
        self.warning.append(warn)

    def _gaps(self) -> None:
        """Per subject, whether some gap between its present days reaches the warning and the
        critical band of ``subject_gap``: a window of that many days without it, between a
        day with it before and one after."""
        m, pb, lay = self.m, self.problem, self.layout
        r = rule("subjects", "subject_gap", self.level)
        lengths = {}
        for sev in ("critical", "warning"):
            gap = next(
                (g for g in range(1, pb.num_days) if severity(r, {"max_gap": g}) == sev), None
            )
            if gap is not None:
                lengths[sev] = gap
        subjects = sorted({s for s in lay.subject.values() if s})
        for s in subjects:
            present = self._subject_days(s)
            before = self._running_or(present)
            after = self._running_or(present[::-1])[::-1]
            found: dict[str, Any] = {}
            for sev, g in lengths.items():
                hit = found[sev] = m.NewBoolVar("")
                for d in range(1, pb.num_days - g):  # days d..d+g-1 (0-based) without it
                    if d + g >= pb.num_days:
                        break
                    window = [p for p in present[d : d + g] if not isinstance(p, int)]
                    if any(isinstance(p, int) and p for p in present[d : d + g]):
                        continue
                    m.Add(hit >= before[d - 1] + after[d + g] - 1 - sum(window))
            if "critical" in found:
                self.critical.append(found["critical"])
            if "warning" in found:
                warn = found["warning"]
                if "critical" in found:
                    m.AddImplication(found["critical"], warn)
                    only = m.NewIntVar(0, 1, "")
                    m.Add(only == warn - found["critical"])
                    warn = only
                self.warning.append(warn)

    def _subject_days(self, s: str) -> list[Any]:
        """Per day (0-based) whether subject ``s`` is there: 1 when a fixed task holds it, a
        boolean when a scope task may bring it, 0 when none can."""
        pb, lay = self.problem, self.layout
        votes: dict[int, list[Any]] = defaultdict(list)
        for (t, b), v in self.y.items():
            if lay.subject[t] == s:
                votes[b.day].append(v)
        out: list[Any] = []
        for d in range(1, pb.num_days + 1):
            if pb.fixed_counts.get((s, d), 0) > 0:
                out.append(1)
            elif votes.get(d):
                out.append(self._present(votes[d]))
            else:
                out.append(0)
        return out

    def _running_or(self, present: list[Any]) -> list[Any]:
        """Per position, whether ``present`` holds at it or before it."""
        m = self.m
        out: list[Any] = []
        for p in present:
            v = m.NewBoolVar("")
            if isinstance(p, int):
                if p:
                    m.Add(v == 1)
            else:
                m.Add(v >= p)
            if out:
                m.Add(v >= out[-1])
            out.append(v)
        return out

    def _imbalance(self) -> None:
        """The loads' sample standard deviation against the ``load_imbalance`` bands: the
        warning when it reaches its threshold, the critical when the range reaches its own
        too (n * sum of squares - total**2 >= t**2 * n * (n - 1))."""
        m, pb = self.m, self.problem
        n, spd = pb.num_days, pb.slots_per_day
        if n < 2:
            return
        lvl = self.level
        std_w = threshold("load", "load_imbalance", "warning", "load_std_dev", lvl)
        std_c = threshold("load", "load_imbalance", "critical", "load_std_dev", lvl)
        range_c = int(threshold("load", "load_imbalance", "critical", "load_range", lvl))
        squares = []
        for load in self.load:
            sq = m.NewIntVar(0, spd * spd, "")
            m.AddElement(load, [i * i for i in range(spd + 1)], sq)
            squares.append(sq)
        total = m.NewIntVar(0, n * spd, "")
        m.Add(total == sum(self.load))
        total_sq = m.NewIntVar(0, (n * spd) ** 2, "")
        m.AddMultiplicationEquality(total_sq, [total, total])
        spread = n * sum(squares) - total_sq
        warn, crit, wide = m.NewBoolVar(""), m.NewBoolVar(""), m.NewBoolVar("")
        m.Add(spread < _scaled(std_w, n)).OnlyEnforceIf(warn.Not())
        hi, lo = m.NewIntVar(0, spd, ""), m.NewIntVar(0, spd, "")
        m.AddMaxEquality(hi, self.load)
        m.AddMinEquality(lo, self.load)
        m.Add(hi - lo < range_c).OnlyEnforceIf(wide.Not())
        m.Add(spread < _scaled(std_c, n)).OnlyEnforceIf([crit.Not(), wide])
        m.AddImplication(crit, warn)
        only = m.NewIntVar(0, 1, "")
        m.Add(only == warn - crit)
        self.critical.append(crit)
        self.warning.append(only)


def _scaled(std: float, n: int) -> int:
    """The least integer ``n * sum of squares - total**2`` whose sample standard deviation
    reaches ``std`` (a ceiling, so the comparison stays exact in integers)."""
    return int(np.ceil(std * std * n * (n - 1) - 1e-9))


# ------------------------------------------------------------------------------ packing
class _Packer:
    """Each bin's tasks at places of their own, in order (see the module docstring)."""

    def __init__(self, layout: _Layout, problem: Problem, most_items: int) -> None:
        self.layout = layout
        self.most_items = most_items  # (more tasks in a run: their subjects' order alone)
        # (day, period) -> subject of the fixed study layer, then of the guests packed
        self.beside: dict[tuple[int, int], str] = {
            (int(d) + 1, int(q) + 1): str(problem.subjects[d, q])
            for d, q in zip(*np.nonzero(problem.subjects != ""), strict=True)
        }

    def pack(self, assigned: dict[Bin, list[int]]) -> tuple[list[Placement], list[Bin]]:
        """The places of every bin's tasks (guests first: the runs beside them read their
        subjects) and the bins no order packs."""
        out: list[Placement] = []
        failed: list[Bin] = []
        for b in sorted(assigned, key=lambda b: (b.host is None, b.day, b.slot_start)):
            best = self._bin(b, assigned[b])
            if best is None:
                failed.append(b)
                continue
            out += best
            if b.host is not None:
                for p in best:
                    for q in range(p.slot_start, p.slot_end + 1):
                        self.beside[p.day, q] = self.layout.subject[p.task_id]
        return out, failed

    def _bin(self, b: Bin, tids: list[int]) -> list[Placement] | None:
        lay = self.layout
        tids = sorted(tids, key=lambda t: (lay.subject[t], lay.order.get(t, (0, 0)), t))
        orders = (
            itertools.permutations(tids) if len(tids) <= self.most_items else iter([tuple(tids)])
        )
        best: tuple[tuple[int, int, int], list[Placement]] | None = None
        for seq in orders:
            if not self._in_order(seq):
                continue
            for late in (False, True):
                placed = self._lay_out(b, seq, late)
                if placed is None:
                    continue
                key = self._score(b, placed)
                if best is None or key < best[0]:
                    best = (key, placed)
            if best is not None and best[0] == (0, 0, -b.length):
                break
        return None if best is None else best[1]

    def _in_order(self, seq: tuple[int, ...]) -> bool:
        order = self.layout.order
        for i, a in enumerate(seq):
            for c in seq[i + 1 :]:
                ka, kc = order.get(a), order.get(c)
                if ka and kc and ka[0] == kc[0] and ka[1] > kc[1]:
                    return False
        return True

    def _lay_out(self, b: Bin, seq: tuple[int, ...], late: bool) -> list[Placement] | None:
        """``seq`` from the bin's start (each at its first allowed place after the one
        before), or from its end (``late``: each at its last place before the one after)."""
        lay = self.layout
        out: list[Placement] = []
        edge = b.slot_end if late else b.slot_start
        for t in reversed(seq) if late else seq:
            fits = [
                p
                for p in lay.places.get((t, b), [])
                if (p.slot_end <= edge if late else p.slot_start >= edge)
            ]
            if not fits:
                return None
            p = (
                max(fits, key=lambda p: p.slot_start)
                if late
                else min(fits, key=lambda p: p.slot_start)
            )
            out.append(p)
            edge = p.slot_start - 1 if late else p.slot_end + 1
        return sorted(out, key=lambda p: p.slot_start)

    def _score(self, b: Bin, placed: list[Placement]) -> tuple[int, int, int]:
        """(heavy pairs, switches, - usable periods left) of the bin's periods and the two
        beside it."""
        lay = self.layout
        row = {q: s for (d, q), s in self.beside.items() if d == b.day}
        for p in placed:
            for q in range(p.slot_start, p.slot_end + 1):
                row[q] = lay.subject[p.task_id]
        heavy = switches = 0
        for q in range(b.slot_start - 1, b.slot_end + 1):
            left, right = row.get(q, ""), row.get(q + 1, "")
            if left and right and left != right:
                switches += 1
                heavy += left in lay.hard and right in lay.hard
        taken = {q for p in placed for q in range(p.slot_start, p.slot_end + 1)}
        usable = run = 0
        for q in range(b.slot_start, b.slot_end + 2):
            if q <= b.slot_end and q not in taken:
                run += 1
                continue
            usable += run if run >= MIN_USABLE else 0
            run = 0
        return heavy, switches, -usable


# ------------------------------------------------------------------------------ the plan
def day_plan(
    state: ScheduleState,
    problem: Problem,
    *,
    level: Level,
    time_limit_s: float,
    work_s: float,
    num_workers: int = 1,
    seed: int = 0,
    calibration: Calibration = DEFAULT_CALIBRATION,
    hint: Sequence[Placement] = (),
) -> DayPlan:
    """The day plan of ``problem``'s scope (every task placed), or ``DayPlan(None)`` when the
    model finds none in its work, a run stays unpackable after ``calibration.day_plan_rounds`` solves, or
    the result breaks a rule (it never should: checked as the write path would). ``work_s``
    (CP-SAT deterministic time, all solves together) decides; ``time_limit_s`` bounds the
    call, the building included, and ``cut`` says when it ended it."""
    t0 = time.perf_counter()
    deadline = t0 + time_limit_s
    layout = _Layout.of(state, problem)
    if layout is None or any(not bins for bins in layout.task_bins.values()):
        return DayPlan(None)
    model = _Model(layout, problem, level)
    model.build()
    model.hint(hint)
    spent, rounds = 0.0, 0
    while rounds < calibration.day_plan_rounds:
        left_s, left_work = deadline - time.perf_counter(), work_s - spent
        if left_s <= 0 or left_work <= 0:
            return DayPlan(None, cut=left_s <= 0, rounds=rounds, work_s=spent)
        solver = make_solver(
            left_s, num_workers, seed=seed, exact=False, deterministic_time=left_work
        )
        # (measured: with presolve and the LP one worker finds no solution in 5 units on a
        # 30-day window; without them it walks down from the hint, 27 solutions in 3 units)
        solver.parameters.cp_model_presolve = False
        solver.parameters.linearization_level = 0
        status = status_of(solver.Solve(model.m))
        spent += solver.deterministic_time
        rounds += 1
        if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
            cut = time.perf_counter() >= deadline
            return DayPlan(None, cut=cut, rounds=rounds, work_s=spent)
        assigned: dict[Bin, list[int]] = defaultdict(list)
        for (tid, b), v in model.y.items():
            if solver.Value(v):
                assigned[b].append(tid)
        # (a packer of its own each round: the guests it packs become the runs' neighbours)
        packer = _Packer(layout, problem, calibration.day_plan_pack_items)
        placements, failed = packer.pack(assigned)
        if not failed:
            ok = valid_start(problem, placements, problem.required_slots) and order_kept(
                state, placements
            )
            objective = solver.ObjectiveValue()
            cut = time.perf_counter() >= deadline
            return DayPlan(placements if ok else None, cut, objective, rounds, spent)
        for b in failed:  # (these tasks may not share that run)
            model.m.Add(sum(model.y[t, b] for t in assigned[b]) <= len(assigned[b]) - 1)
        model.m.ClearHints()
        for v in model.y.values():
            model.m.AddHint(v, solver.Value(v))
    return DayPlan(None, rounds=rounds, work_s=spent)
