"""The soft terms of a proposal, their weights, and a numpy evaluation of any placement.

One table (:data:`TERMS`) names each term, its unit and its default weight. :func:`evaluate`
measures a placement on the grid with array expressions; the CP-SAT placement model encodes the
same terms, and the tests check that both agree on the solver's own answers.

Exact proofs for every weight
-----------------------------
A weight is any finite float >= 0; its *real* value is the decimal the caller wrote (the shortest
decimal that reads back as the float, ``Fraction(repr(w))``). Every term counts whole units
except the load term, which is a multiple of ``1 / D`` (``D`` days), so every objective value is a
multiple of ``1 / unit`` with ``unit = D · lcm(denominators of the weights)`` (:class:`Proof`).

- CP-SAT models need integer weights. :func:`integer_weights` scales by ``S`` (the weights'
  common denominator when it is small enough for the model's magnitude, else a cap) and rounds
  *down*: ``W_k = floor(S · w_k) <= S · w_k``. Every term is >= 0, so a model's bound ``b`` (on
  ``S · D ·`` objective with the weights ``W / S``) is a valid bound of the real objective:
  ``b / (S · D) <= optimum(W / S) <= optimum(w)``. With exact weights (``W = S · w``) it is
  the real bound itself. Weights like 0.015 are exact (``S = 200``); the old fixed scale of 100
  rounded them and claimed a bound above the optimum (issue 16).
- The column generation works in floats; its Lagrangian bounds are lowered by a margin of
  ``FLOAT_MARGIN`` times the number of summands times the magnitude of the numbers summed (a
  bound of the rounding error of a sum, four times over) before use.
- :meth:`Proof.lower` rounds a valid bound up to the next multiple of ``1 / unit`` (still valid:
  the optimum is such a multiple) and returns a float that does not exceed it;
  :meth:`Proof.meets` decides "optimal" in exact rational arithmetic on the real weights.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..health_facts import day_loads, day_switches, free_runs
from .problem import Placement, Problem, Rule


@dataclass(frozen=True)
class Term:
    name: str
    weight: float
    unit: str
    meaning: str


TERMS: tuple[Term, ...] = (
    Term(
        "load_imbalance",
        1.0,
        "periods",
        "Σ over days of |day load − mean day load| (occupied periods, guests excluded)",
    ),
    Term(
        "same_category",
        2.0,
        "tasks",
        "per subject and day, tasks beyond the first (or, for a class preferring to cluster, "
        "the number of days the subject appears on)",
    ),
    Term("isolated_free", 1.0, "periods", "free periods with no free neighbour on their day"),
    Term(
        "context_switch",
        1.0,
        "switches",
        "adjacent periods of the study layer holding different subjects (a guest's subject "
        "replaces its host's period; an event or a free period holds none), at least one of "
        "them a scope task's (switches between fixed tasks are not the proposal's doing)",
    ),
    Term("late", 4.0, "days", "days past a class's end day (only when late placement is allowed)"),
    Term("time_of_day", 0.5, "periods", "periods outside a class's preferred part of the day"),
)
MAX_SCALE = 10**6  # largest integer scale of the weights a CP-SAT model uses
MODEL_MAGNITUDE = 2**50  # largest objective a CP-SAT model may reach (its bound is a double)
# Float bounds are lowered by this, per summand, times the magnitude of their terms: four times
# the unit roundoff (a sum of n floats is off by at most (n - 1)·u·Σ|x|; see Higham, "Accuracy
# and Stability of Numerical Algorithms", §4.2), with magnitudes estimated from above.
FLOAT_MARGIN = 4 * 2.0**-53
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
        if not math.isfinite(value):
            raise ValueError(f"weight {name!r} must be finite, got {value}")
        out[name] = float(value)
    return out


def real_weight(value: float) -> Fraction:
    """The decimal a weight stands for (the shortest one that reads back as the float)."""
    return Fraction(repr(float(value)))


@dataclass(frozen=True)
class IntWeights:
    """Integer weights of a CP-SAT model: ``ints[k] = floor(scale · w_k)``.

    ``exact``: ``ints[k] == scale · w_k`` for every weight, so the model's objective is the real
    one times ``scale · D``; otherwise the model's weights are below the real ones and its
    bound is still a valid (slightly weaker) bound.
    """

    scale: int
    ints: dict[str, int]
    exact: bool


def integer_weights(
    weights: Mapping[str, float], magnitude: float = 1.0, extra: Iterable[float] = ()
) -> IntWeights:
    """Scale ``weights`` to integers exactly when the scale fits, else round them down.

    ``magnitude`` is the most the model's objective can reach per unit of scaled weight (a
    generous estimate); the scale is capped so that the objective stays below
    :data:`MODEL_MAGNITUDE`, where CP-SAT's integer objective and its double bound are exact.
    ``extra``: other coefficients of the model (a re-optimisation's own terms) that the scale
    should make integers too.
    """
    real = {k: real_weight(v) for k, v in weights.items()}
    others = [real_weight(v) for v in extra]
    total = float(sum(real.values()) + sum(others)) or 1.0
    cap = int(max(1, min(MAX_SCALE, MODEL_MAGNITUDE // max(1.0, total * magnitude))))
    scale = 1
    for f in (*real.values(), *others):
        scale = math.lcm(scale, f.denominator)
    exact = scale <= cap
    if not exact:
        scale = cap
    ints = {k: math.floor(f * scale) for k, f in real.items()}
    exact = exact or all(f * scale == ints[k] for k, f in real.items())
    return IntWeights(scale, ints, exact)


def model_magnitude(num_days: int, slots_per_day: int) -> float:
    """A generous bound on a model's objective per unit of scaled weight (the terms, times
    ``D`` for the load term's scaling, summed over a window of ``num_days``)."""
    cells = num_days * slots_per_day
    return float(num_days * (num_days * cells + cells * (num_days + slots_per_day) + cells))


def float_down(value: Fraction) -> float:
    """The largest float not above ``value``."""
    out = float(value)
    if Fraction(out) > value:
        out = math.nextafter(out, -math.inf)
    return out


class Proof:
    """Exact bookkeeping of bounds and optimality for one window and one set of weights.

    Every objective value is a multiple of ``1 / unit`` (see the module docstring).
    """

    def __init__(self, weights: Mapping[str, float], num_days: int) -> None:
        self.real = {k: real_weight(v) for k, v in resolve_weights(weights).items()}
        self.num_days = max(1, int(num_days))
        denominator = 1
        for f in self.real.values():
            denominator = math.lcm(denominator, f.denominator)
        self.unit = denominator * self.num_days

    def total(self, terms: Mapping[str, float]) -> Fraction:
        """The exact real objective of :func:`evaluate`'s ``terms``."""
        out = Fraction(0)
        for name in TERM_NAMES:
            if name == "load_imbalance":  # a multiple of 1 / D, up to float rounding
                value = Fraction(round(terms[name] * self.num_days), self.num_days)
            else:
                value = Fraction(round(terms[name]))
            out += self.real[name] * value
        return out

    def ceil(self, bound: Fraction | float) -> Fraction:
        """The least achievable objective value not below ``bound``."""
        return Fraction(math.ceil(Fraction(bound) * self.unit), self.unit)

    def lower(self, bound: Fraction | float) -> float:
        """A valid bound (exact, or a float already lowered by its margin) as a float: rounded
        up to the next achievable value, then down to a float."""
        if isinstance(bound, float) and not math.isfinite(bound):
            return bound
        return float_down(self.ceil(bound))

    def meets(self, terms: Mapping[str, float], bound: float | None) -> bool:
        """Whether the objective of ``terms`` is proven optimal by the valid bound ``bound``."""
        if bound is None or not math.isfinite(bound):
            return False
        return self.total(terms) <= self.ceil(bound)


def float_margin(magnitude: float, summands: int) -> float:
    """How much to lower a float bound: ``summands`` additions in a row (the longest chain of
    the computation) of numbers whose absolute values sum to at most ``magnitude``."""
    return FLOAT_MARGIN * (summands + 8) * abs(magnitude)


def clustered_subjects(problem: Problem) -> frozenset[str]:
    """Subjects whose task class prefers clustering to spreading."""
    out = set()
    for g in problem.groups:
        tc = problem.classes.get(g.rule.class_id) if g.rule.class_id is not None else None
        if tc is None:
            continue
        if (
            tc.strategy or ""
        ).lower() in CLUSTER_STRATEGIES or tc.same_category_aggregation_preference is True:
            out.add(problem.task_subjects[g.task_ids[0]])
    return frozenset(out)


def preferred_slots(problem: Problem, rule: Rule) -> frozenset[int] | None:
    """Periods a class prefers (``preferred_slots`` or ``time_of_day`` on the TaskClass)."""
    tc = problem.classes.get(rule.class_id) if rule.class_id is not None else None
    if tc is None:
        return None
    spd = problem.slots_per_day
    listed = tc.preferred_slots
    if listed:
        return frozenset(p for p in listed if 1 <= p <= spd)
    part = TIME_OF_DAY.get((tc.time_of_day or "").lower())
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
        # the study layer (concepts.is_switch): a guest's subject replaces its host's period
        subj[p.day - 1, p.slot_start - 1 : p.slot_end] = k
        mine[p.day - 1, p.slot_start - 1 : p.slot_end] = True
        late += lateness(g.rule, p.day)
        if g.rule not in prefs:
            prefs[g.rule] = preferred_slots(problem, g.rule)
        tod += off_preference(prefs[g.rule], p.slot_start, p.slot_end)

    loads = day_loads(owner).astype(float)
    load_imbalance = float(np.abs(loads - loads.mean()).sum())
    cluster = clustered_subjects(problem)
    same = sum(
        (1 if n > 0 else 0) if k in cluster else max(0, n - 1) for (k, _), n in counts.items()
    )
    _, _, lengths = free_runs(owner == 0)
    isolated = int(np.count_nonzero(lengths == 1))
    # the switches touching a scope task's period: all of them minus those between two other
    # periods (the layer with the scope's periods emptied has exactly those)
    study = _codes(subj)
    others = np.where(mine, 0, study)
    switches = int(day_switches(study).sum() - day_switches(others).sum())
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


def _codes(subjects: np.ndarray) -> np.ndarray:
    """The study layer ``subjects`` (subject names, ``""`` for none) as the subject codes the
    shared definitions of :mod:`..health_facts` read (0 for none)."""
    _, inverse = np.unique(np.concatenate(([""], subjects.ravel())), return_inverse=True)
    # "" sorts first: it is code 0
    out: np.ndarray = inverse[1:].reshape(subjects.shape)
    return out
