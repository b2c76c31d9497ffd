"""The one issue rule table (p1 §4.3-§4.6), read by the analyzers and the solver alike.

It sits below both (it imports nothing of this package) so the solver's health objective and
floor read the very rules ``analyze_health`` applies. Each :class:`Rule` names its dimension,
the entity it is judged on (a day, a subject or the window: also the merge key of its issues,
see :meth:`Rule.merge_key`), and its severity bands with the metric, operator and threshold of
every condition; :func:`rules_for` gives the table at the ``strict`` / ``normal`` / ``relaxed``
level. The few metric formulas whose rounding decides a threshold (:func:`r4`,
:func:`concentration`) live here too, so a count computed by the solver equals the analyzers'.

Each rule lists its severity bands, most severe first; the first band whose conditions
all hold fires, so a rule yields at most one issue per entity (a day, a subject, or the window).
The ``normal`` values are the spec's (p1 §4.3-§4.6). ``strict`` fires about 10 % earlier and
``relaxed`` about 10 % later: a ``>=`` threshold is multiplied by 0.9 / 1.1, a ``<=`` / ``<`` one
by 1.1 / 0.9; an integer-valued metric moves by at least one step so the shift is never a no-op,
and a positive count threshold never drops below 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from .state import ScheduleState, TaskClass

Level = Literal["strict", "normal", "relaxed"]
LEVELS: tuple[Level, ...] = get_args(Level)


def level_or(value: object, default: Level = "normal") -> Level:
    """``value`` when it is a level, else ``default`` (a snapshot's or a page's level)."""
    return next((level for level in LEVELS if level == value), default)


Entity = Literal["day", "subject", "overall"]
Severity = Literal["critical", "warning", "info"]
# The table's names (issue 30 item 2): a name not in the table is a type error, not a KeyError at
# run time. Each is exactly the set the table uses (tests/test_rule_names.py).
Dimension = Literal["load", "subjects", "context", "tolerance"]
RuleName = Literal[
    "day_utilization",
    "load_imbalance",
    "subject_gap",
    "subject_concentration",
    "budget_lag",
    "context_switch",
    "heavy_adjacent",
    "buffer",
    "free_fragmentation",
]
Metric = Literal[
    "utilization",
    "load_std_dev",
    "load_range",
    "max_gap",
    "concentration",
    "budget_progress",
    "days_to_end",
    "switch_count",
    "fragmentation",
    "heavy_adjacent",
    "days_without_buffer",
    "fragmentation_rate",
]
Op = Literal[">=", ">", "<=", "<"]
# An issue's names: the table's, and the one issue ``analyze_health`` adds outside it (the
# feasibility step's proven capacity gap).
IssueDimension = Dimension | Literal["feasibility"]
IssueRule = RuleName | Literal["capacity_gap"]
DIMENSIONS: tuple[Dimension, ...] = get_args(Dimension)
RULE_NAMES: tuple[RuleName, ...] = get_args(RuleName)
METRICS: tuple[Metric, ...] = get_args(Metric)


@dataclass(frozen=True)
class Cond:
    """``metric <op> value``; ``integer`` marks a count-valued metric."""

    metric: Metric
    op: Op
    value: float
    integer: bool = False

    def holds(self, actual: float | None) -> bool:
        if actual is None:
            return False
        if self.op == ">=":
            return actual >= self.value
        if self.op == ">":
            return actual > self.value
        if self.op == "<=":
            return actual <= self.value
        return actual < self.value

    def shifted(self, level: Level) -> Cond:
        if level == "normal":
            return self
        earlier = level == "strict"
        upward = self.op in ("<=", "<")  # for "lower is worse", firing earlier = a larger value
        factor = 1.1 if earlier == upward else 0.9
        if not self.integer:
            return Cond(self.metric, self.op, round(self.value * factor, 4), False)
        v = int(self.value)
        if factor > 1:
            new = max(math.ceil(v * factor), v + 1)
        else:
            new = min(math.floor(v * factor), v - 1)
            new = max(new, 1 if v >= 1 else 0)
        return Cond(self.metric, self.op, float(new), True)


@dataclass(frozen=True)
class Band:
    severity: Severity
    conds: tuple[Cond, ...]


@dataclass(frozen=True)
class Rule:
    dimension: Dimension
    rule: RuleName
    entity: Entity
    bands: tuple[Band, ...]

    def merge_key(self, day: int | None, category: str | None) -> tuple[str, str, object]:
        """Issues with the same key are the same problem (merged by ``analyze_health``): the
        same dimension and rule about the same day, subject or (``overall``) the window."""
        return (
            self.dimension,
            self.rule,
            day if self.entity == "day" else category if self.entity == "subject" else None,
        )

    def at(self, level: Level) -> Rule:
        return Rule(
            self.dimension,
            self.rule,
            self.entity,
            tuple(Band(b.severity, tuple(c.shifted(level) for c in b.conds)) for b in self.bands),
        )


def _c(metric: Metric, op: Op, value: float, integer: bool = False) -> Cond:
    return Cond(metric, op, value, integer)


# The normal level (spec p1 §4.3-§4.6). Bands the spec leaves vague ("info: ... 轻微波动") get
# a concrete value here, one step below the warning band.
RULES: tuple[Rule, ...] = (
    Rule(
        "load",
        "day_utilization",
        "day",
        (
            Band("critical", (_c("utilization", ">=", 0.90),)),
            Band("warning", (_c("utilization", ">=", 0.80),)),
        ),
    ),
    Rule(
        "load",
        "load_imbalance",
        "overall",
        (
            Band("critical", (_c("load_std_dev", ">=", 3.0), _c("load_range", ">=", 7, True))),
            Band("warning", (_c("load_std_dev", ">=", 2.0),)),
            Band("info", (_c("load_std_dev", ">=", 1.0),)),
        ),
    ),
    Rule(
        "subjects",
        "subject_gap",
        "subject",
        (
            Band("critical", (_c("max_gap", ">=", 6, True),)),
            Band("warning", (_c("max_gap", ">=", 4, True),)),
            Band("info", (_c("max_gap", ">=", 3, True),)),
        ),
    ),
    Rule(
        "subjects",
        "subject_concentration",
        "subject",
        (
            Band("critical", (_c("concentration", ">=", 0.85),)),
            Band("warning", (_c("concentration", ">=", 0.70),)),
        ),
    ),
    Rule(
        "subjects",
        "budget_lag",
        "subject",
        (Band("critical", (_c("budget_progress", "<", 0.4), _c("days_to_end", "<=", 7, True))),),
    ),
    Rule(
        "context",
        "context_switch",
        "day",
        (
            Band("critical", (_c("switch_count", ">=", 5, True), _c("fragmentation", ">=", 0.75))),
            Band("warning", (_c("switch_count", ">=", 3, True),)),
            Band("warning", (_c("fragmentation", ">=", 0.55),)),
        ),
    ),
    # Cognitive load (issue 42 item 4): a day with a heavy pair (two hard subjects back to back,
    # :func:`.concepts.is_hard_class`) is a warning at normal and strict, two at relaxed (the
    # shift); no critical band (docs/decisions.md, issue 42: heavy adjacency).
    Rule(
        "context",
        "heavy_adjacent",
        "day",
        (Band("warning", (_c("heavy_adjacent", ">=", 1, True),)),),
    ),
    Rule(
        "tolerance",
        "buffer",
        "overall",
        (
            Band("critical", (_c("days_without_buffer", ">=", 2, True),)),
            Band("warning", (_c("days_without_buffer", ">=", 1, True),)),
        ),
    ),
    Rule(
        "tolerance",
        "free_fragmentation",
        "overall",
        (
            Band("critical", (_c("fragmentation_rate", ">=", 0.65),)),
            Band("warning", (_c("fragmentation_rate", ">=", 0.45),)),
            Band("info", (_c("fragmentation_rate", ">=", 0.30),)),
        ),
    ),
)


def rule(dimension: Dimension, name: RuleName, level: Level = "normal") -> Rule:
    """One rule at ``level``."""
    for r in rules_for(dimension, level):
        if r.rule == name:
            return r
    raise KeyError(f"no rule {dimension}.{name}")


def first_band(r: Rule, values: Mapping[str, float | None]) -> Band | None:
    """The first band of ``r`` whose conditions all hold on ``values`` (the one judgement of a
    rule: the analyzers' issues and the solver's counts both come from it)."""
    get = values.get
    for band in r.bands:
        for c in band.conds:
            if not c.holds(get(c.metric)):
                break
        else:
            return band
    return None


def severity(r: Rule, values: Mapping[str, float | None]) -> Severity | None:
    """The severity of :func:`first_band`, if any."""
    band = first_band(r, values)
    return band.severity if band is not None else None


# ------------------------------------------------------------------- metric formulas (shared)
from .concepts import UNCATEGORISED as UNCATEGORISED  # noqa: E402  (the concepts' one home)
from .concepts import is_hard_class as is_hard_class  # noqa: E402  (defined with the concepts)


def subject_class(state: ScheduleState, name: str, class_ids: list[int]) -> TaskClass | None:
    """The task class of subject ``name``: by its tasks' ``category_id`` (first found), else by
    name (budget rules, p1 §4.4)."""
    for cid in class_ids:
        tc = state.task_class(cid)
        if tc is not None:
            return tc
    return next((tc for tc in state.task_classes if tc.name == name), None)


def r4(x: float) -> float:
    """Round a ratio for the envelope (rules compare the rounded value the LLM sees)."""
    return round(float(x), 4)


def concentration(slots_per_day: list[int], blocks: int, num_days: int) -> float | None:
    """Normalised HHI of the per-day shares (present days' slot counts), against
    ``N = min(blocks, num_days)`` days (p1 §4.4)."""
    return concentration_of(sum(slots_per_day), sum(v * v for v in slots_per_day), blocks, num_days)


def concentration_of(used: int, sum_of_squares: int, blocks: int, num_days: int) -> float | None:
    """:func:`concentration` from the subject's periods and the sum of their per-day squares
    (``HHI = sum_of_squares / used**2``, one division: a running sum gives the same value)."""
    if used == 0:
        return None
    n = min(blocks, num_days)
    if n <= 1:
        return 0.0
    hhi = sum_of_squares / (used * used)
    return r4(min(1.0, max(0.0, (hhi - 1.0 / n) / (1.0 - 1.0 / n))))


def sample_std_dev(n: int, total: int, sum_of_squares: int) -> float:
    """The sample standard deviation of ``n`` integer values from their sum and sum of squares
    (exact integer arithmetic up to the square root, so a running sum gives the same value as
    the whole list: the load_imbalance metric, p1 §4.3)."""
    if n <= 1:
        return 0.0
    return math.sqrt(max(n * sum_of_squares - total * total, 0) / (n * (n - 1)))


@cache
def rules_for(dimension: Dimension, level: Level) -> tuple[Rule, ...]:
    """The dimension's rules at ``level`` (cached: the table is immutable)."""
    return tuple(r.at(level) for r in RULES if r.dimension == dimension)


@cache
def threshold(
    dimension: Dimension, rule: RuleName, severity: Severity, metric: Metric, level: Level
) -> float:
    """The value of one condition at ``level`` (the first band of ``severity`` that tests it)."""
    for r in rules_for(dimension, level):
        if r.rule != rule:
            continue
        for band in r.bands:
            if band.severity != severity:
                continue
            for c in band.conds:
                if c.metric == metric:
                    return c.value
    raise KeyError(f"no threshold {dimension}.{rule}.{severity}.{metric}")
