"""The one threshold table of every issue rule, and its ``strict`` / ``relaxed`` shifts.

Each :class:`Rule` lists its severity bands, most severe first; the first band whose conditions
all hold fires, so a rule yields at most one issue per entity (a day, a subject, or the window).
The ``normal`` values are the spec's (p1 §4.3-§4.6). ``strict`` fires about 10 % earlier and
``relaxed`` about 10 % later: a ``>=`` threshold is multiplied by 0.9 / 1.1, a ``<=`` / ``<`` one
by 1.1 / 0.9; an integer-valued metric moves by at least one step so the shift is never a no-op,
and a positive count threshold never drops below 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Literal

Level = Literal["strict", "normal", "relaxed"]
LEVELS: tuple[str, ...] = ("strict", "normal", "relaxed")
Entity = Literal["day", "subject", "overall"]


@dataclass(frozen=True)
class Cond:
    """``metric <op> value``; ``integer`` marks a count-valued metric."""

    metric: str
    op: Literal[">=", ">", "<=", "<"]
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

    def shifted(self, level: str) -> Cond:
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
    severity: Literal["critical", "warning", "info"]
    conds: tuple[Cond, ...]


@dataclass(frozen=True)
class Rule:
    dimension: str
    rule: str
    entity: Entity
    bands: tuple[Band, ...]

    def at(self, level: str) -> Rule:
        return Rule(self.dimension, self.rule, self.entity, tuple(
            Band(b.severity, tuple(c.shifted(level) for c in b.conds)) for b in self.bands))


def _c(metric: str, op: Literal[">=", ">", "<=", "<"], value: float, integer: bool = False) -> Cond:
    return Cond(metric, op, value, integer)


# The normal level (spec p1 §4.3-§4.6). Bands the spec leaves vague ("info: ... 轻微波动") get
# a concrete value here, one step below the warning band.
RULES: tuple[Rule, ...] = (
    Rule("load", "day_utilization", "day", (
        Band("critical", (_c("utilization", ">=", 0.90),)),
        Band("warning", (_c("utilization", ">=", 0.80),)),
    )),
    Rule("load", "load_imbalance", "overall", (
        Band("critical", (_c("load_std_dev", ">=", 3.0), _c("load_range", ">=", 7, True))),
        Band("warning", (_c("load_std_dev", ">=", 2.0),)),
        Band("info", (_c("load_std_dev", ">=", 1.0),)),
    )),
    Rule("subjects", "subject_gap", "subject", (
        Band("critical", (_c("max_gap", ">=", 6, True),)),
        Band("warning", (_c("max_gap", ">=", 4, True),)),
        Band("info", (_c("max_gap", ">=", 3, True),)),
    )),
    Rule("subjects", "subject_concentration", "subject", (
        Band("critical", (_c("concentration", ">=", 0.85),)),
        Band("warning", (_c("concentration", ">=", 0.70),)),
    )),
    Rule("subjects", "budget_lag", "subject", (
        Band("critical", (_c("budget_progress", "<", 0.4), _c("days_to_end", "<=", 7, True))),
    )),
    Rule("context", "context_switch", "day", (
        Band("critical", (_c("switch_count", ">=", 5, True), _c("fragmentation", ">=", 0.75))),
        Band("warning", (_c("switch_count", ">=", 3, True),)),
        Band("warning", (_c("fragmentation", ">=", 0.55),)),
    )),
    Rule("context", "heavy_adjacent", "day", (
        Band("info", (_c("heavy_adjacent", ">=", 1, True),)),
    )),
    Rule("tolerance", "buffer", "overall", (
        Band("critical", (_c("days_without_buffer", ">=", 2, True),)),
        Band("warning", (_c("days_without_buffer", ">=", 1, True),)),
    )),
    Rule("tolerance", "free_fragmentation", "overall", (
        Band("critical", (_c("fragmentation_rate", ">=", 0.65),)),
        Band("warning", (_c("fragmentation_rate", ">=", 0.45),)),
        Band("info", (_c("fragmentation_rate", ">=", 0.30),)),
    )),
)


@cache
def rules_for(dimension: str, level: str) -> tuple[Rule, ...]:
    """The dimension's rules at ``level`` (cached: the table is immutable)."""
    return tuple(r.at(level) for r in RULES if r.dimension == dimension)


@cache
def threshold(dimension: str, rule: str, severity: str, metric: str, level: str) -> float:
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
