"""The soft terms of a proposal, their weights, and a numpy evaluation of any placement.

One table (:data:`TERMS`) names each term, its unit and its default weight. :func:`evaluate`
measures a placement on the grid with array expressions; the CP-SAT placement model encodes the
same terms, and the tests check that both agree on the solver's own answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..state import runs
from .problem import Placement, Problem, Rule


@dataclass(frozen=True)
class Term:
    name: str
    weight: float
    unit: str
    meaning: str


TERMS: tuple[Term, ...] = (
    Term("load_imbalance", 1.0, "periods",
         "Σ over days of |day load − mean day load| (occupied periods, guests excluded)"),
    Term("same_category", 2.0, "tasks",
         "per subject and day, tasks beyond the first (or, for a class preferring to cluster, "
         "the number of days the subject appears on)"),
    Term("isolated_free", 1.0, "periods", "free periods with no free neighbour on their day"),
    Term("context_switch", 1.0, "switches",
         "adjacent occupied periods holding different subjects, at least one of them a scope "
         "task's (switches between fixed tasks are not the proposal's doing)"),
    Term("late", 4.0, "days", "days past a class's end day (only when late placement is allowed)"),
    Term("time_of_day", 0.5, "periods", "periods outside a class's preferred part of the day"),
)
SCALE = 100  # CP-SAT models scale the weights to integers with this factor
TERM_NAMES: tuple[str, ...] = tuple(t.name for t in TERMS)
DEFAULT_WEIGHTS: dict[str, float] = {t.name: t.weight for t in TERMS}

# TaskClass.strategy values (and the P1.5 field same_category_aggregation_preference) under which
# a subject is better clustered on few days than spread out.
CLUSTER_STRATEGIES = frozenset({"cluster", "aggregate", "intensive", "concentrated", "rapid"})
TIME_OF_DAY = {"morning": (0.0, 1 / 3), "afternoon": (1 / 3, 2 / 3), "evening": (2 / 3, 1.0)}


def resolve_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """Defaults overridden by ``weights``; unknown names and negative values are refused.

    Raises
    ------
    ValueError
        One line naming the bad weight and the known names.
    """
    out = dict(DEFAULT_WEIGHTS)
    for name, value in (weights or {}).items():
        if name not in out:
            raise ValueError(f"unknown weight {name!r}; known: {', '.join(TERM_NAMES)}")
        if not value >= 0:  # also refuses NaN
            raise ValueError(f"weight {name!r} must be >= 0, got {value}")
        out[name] = float(value)
    return out


def clustered_subjects(problem: Problem) -> frozenset[str]:
    """Subjects whose task class prefers clustering to spreading."""
    out = set()
    for g in problem.groups:
        tc = problem.classes.get(g.rule.class_id) if g.rule.class_id is not None else None
        if tc is None:
            continue
        extra = tc.model_extra or {}
        if (tc.strategy or "").lower() in CLUSTER_STRATEGIES or extra.get(
                "same_category_aggregation_preference") is True:
            out.add(problem.task_subjects[g.task_ids[0]])
    return frozenset(out)


def preferred_slots(problem: Problem, rule: Rule) -> frozenset[int] | None:
    """Periods a class prefers (``preferred_slots`` or ``time_of_day`` on the TaskClass)."""
    tc = problem.classes.get(rule.class_id) if rule.class_id is not None else None
    if tc is None:
        return None
    extra = tc.model_extra or {}
    spd = problem.slots_per_day
    listed = extra.get("preferred_slots")
    if isinstance(listed, list) and listed:
        return frozenset(int(p) for p in listed if isinstance(p, int) and 1 <= p <= spd)
    part = TIME_OF_DAY.get(str(extra.get("time_of_day", "")).lower())
    if part is None:
        return None
    lo, hi = part
    return frozenset(p for p in range(1, spd + 1) if lo * spd < p <= hi * spd + 1e-9)


def off_preference(pref: frozenset[int] | None, start: int, end: int) -> int:
    if pref is None:
        return 0
    return sum(1 for p in range(start, end + 1) if p not in pref)


def guest_start(pref: frozenset[int] | None, starts: list[int], duration: int) -> int:
    """The start a guest takes inside a host block: fewest periods off the preference, then
    the earliest (every model places guests there, so a guest is one choice per block)."""
    return min(starts, key=lambda s: (off_preference(pref, s, s + duration - 1), s))


def lateness(rule: Rule, day: int) -> int:
    return max(0, day - rule.due_day) if rule.due_day is not None else 0


def evaluate(
    problem: Problem,
    placements: Iterable[Placement],
    weights: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Every soft term of the schedule ``placements`` would give, and the weighted total.

    Also reports ``placed_slots`` and ``unplaced_slots`` (scope periods left out).
    """
    w = resolve_weights(weights)
    groups = problem.groups
    group_of = problem.group_of()
    placements = list(placements)
    owner = problem.owner.copy()
    subj = problem.subjects.copy()
    mine = np.zeros(owner.shape, dtype=bool)
    counts: dict[tuple[str, int], int] = {}
    scope_subjects = set(problem.task_subjects.values())
    for (k, d), n in problem.fixed_counts.items():
        if k in scope_subjects:
            counts[(k, d)] = n
    late = tod = placed = 0
    prefs: dict[Rule, frozenset[int] | None] = {}
    for p in placements:
        g = groups[group_of[p.task_id]]
        k = problem.task_subjects[p.task_id]
        placed += p.length
        counts[(k, p.day)] = counts.get((k, p.day), 0) + 1
        if p.embed_host is None:
            owner[p.day - 1, p.slot_start - 1 : p.slot_end] = p.task_id
            subj[p.day - 1, p.slot_start - 1 : p.slot_end] = k
            mine[p.day - 1, p.slot_start - 1 : p.slot_end] = True
        late += lateness(g.rule, p.day)
        if g.rule not in prefs:
            prefs[g.rule] = preferred_slots(problem, g.rule)
        tod += off_preference(prefs[g.rule], p.slot_start, p.slot_end)

    loads = np.count_nonzero(owner, axis=1).astype(float)
    load_imbalance = float(np.abs(loads - loads.mean()).sum())
    cluster = clustered_subjects(problem)
    same = sum((1 if n > 0 else 0) if k in cluster else max(0, n - 1)
               for (k, _), n in counts.items())
    _, _, lengths = runs(owner == 0)
    isolated = int(np.count_nonzero(lengths == 1))
    left, right = subj[:, :-1], subj[:, 1:]
    touched = mine[:, :-1] | mine[:, 1:]
    switches = int(np.count_nonzero((left != "") & (right != "") & (left != right) & touched))
    terms = {
        "load_imbalance": load_imbalance,
        "same_category": float(same),
        "isolated_free": float(isolated),
        "context_switch": float(switches),
        "late": float(late),
        "time_of_day": float(tod),
    }
    out = dict(terms)
    out["weighted_total"] = sum(w[name] * value for name, value in terms.items())
    out["placed_slots"] = float(placed)
    out["unplaced_slots"] = float(problem.required_slots - placed)
    return out
