"""Every issue rule at its boundaries, at every threshold level: on the table and end to end."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartflow_engine.analyzers import (
    RULES,
    analyze_context,
    analyze_load,
    analyze_subjects,
    analyze_tolerance,
)
from smartflow_engine.analyzers.common import evaluate
from smartflow_engine.analyzers.result import SEVERITY_RANK
from smartflow_engine.rules import Cond, Rule, rules_for
from tests.helpers.analyzer_windows import build

LEVEL_NAMES = ("strict", "normal", "relaxed")
BANDS = [
    pytest.param(rule.dimension, rule.rule, i, level, id=f"{rule.rule}-{band.severity}{i}-{level}")
    for rule in RULES
    for i, band in enumerate(rule.bands)
    for level in LEVEL_NAMES
]


def _rule(dimension: str, name: str, level: str) -> Rule:
    return next(r for r in rules_for(dimension, level) if r.rule == name)


def _safe(rule: Rule) -> dict[str, float]:
    """Values that fire no band: far below every ``>=`` and far above every ``<``/``<=``."""
    return {
        c.metric: (-1.0 if c.op in (">=", ">") else 1e9) for band in rule.bands for c in band.conds
    }


def _first_inside(c: Cond) -> float:
    """The boundary value: the first value (in the metric's steps) that satisfies ``c``."""
    step = 1 if c.integer else 1e-4
    return {">=": c.value, "<=": c.value, ">": c.value + step, "<": c.value - step}[c.op]


def _just_outside(c: Cond) -> float:
    step = 1 if c.integer else 1e-4
    if c.op == ">=":
        return c.value - step
    if c.op == ">":
        return c.value
    if c.op == "<=":
        return c.value + step
    return c.value


@pytest.mark.parametrize(("dimension", "name", "index", "level"), BANDS)
def test_band_fires_exactly_at_its_threshold(
    dimension: str, name: str, index: int, level: str
) -> None:
    """Tests that a band fires with every condition exactly at its threshold, reporting the
    threshold and actual value, and stops firing when any one condition is just outside."""
    rule = _rule(dimension, name, level)
    band = rule.bands[index]
    values: dict[str, Any] = _safe(rule)
    for c in band.conds:
        values[c.metric] = _first_inside(c)
    issue = evaluate(rule, values, day=3)
    assert issue is not None
    if issue.severity != band.severity:  # a shifted band can coincide with a more severe one
        assert SEVERITY_RANK[issue.severity] < SEVERITY_RANK[band.severity]
        assert any(all(c.holds(values[c.metric]) for c in b.conds) for b in rule.bands[:index])
        return
    assert [t.metric for t in issue.conditions] == [c.metric for c in band.conds]
    assert issue.trigger.threshold == band.conds[0].value
    assert issue.trigger.actual == _first_inside(band.conds[0])
    assert issue.issue_id == f"issue_{dimension}_{name}_d3"
    for c in band.conds:
        outside = dict(values, **{c.metric: _just_outside(c)})
        other = evaluate(rule, outside, day=3)
        assert (
            other is None
            or [t.metric for t in other.conditions] != [x.metric for x in band.conds]
            or SEVERITY_RANK[other.severity] > SEVERITY_RANK[band.severity]
        ), (c, other)


# (dimension, rule, severity, metric, strict, normal, relaxed): the shifted thresholds.
SHIFTS = [
    ("load", "day_utilization", "critical", "utilization", 0.81, 0.90, 0.99),
    ("load", "day_utilization", "warning", "utilization", 0.72, 0.80, 0.88),
    ("load", "load_imbalance", "critical", "load_std_dev", 2.7, 3.0, 3.3),
    ("load", "load_imbalance", "critical", "load_range", 6, 7, 8),  # integer: at least one step
    ("subjects", "subject_gap", "critical", "max_gap", 5, 6, 7),
    ("subjects", "subject_gap", "warning", "max_gap", 3, 4, 5),
    ("subjects", "subject_gap", "info", "max_gap", 2, 3, 4),
    ("subjects", "budget_lag", "critical", "budget_progress", 0.44, 0.4, 0.36),  # lower is worse
    ("subjects", "budget_lag", "critical", "days_to_end", 8, 7, 6),  # "<=": earlier = larger
    ("context", "context_switch", "critical", "switch_count", 4, 5, 6),
    ("context", "context_switch", "critical", "fragmentation", 0.675, 0.75, 0.825),
    ("context", "heavy_adjacent", "warning", "heavy_adjacent", 1, 1, 2),  # never below 1
    ("tolerance", "buffer", "critical", "days_without_buffer", 1, 2, 3),
    ("tolerance", "buffer", "warning", "days_without_buffer", 1, 1, 2),
    ("tolerance", "free_fragmentation", "warning", "fragmentation_rate", 0.405, 0.45, 0.495),
]


@pytest.mark.parametrize(
    ("dimension", "name", "severity", "metric", "strict", "normal", "relaxed"), SHIFTS
)
def test_levels_shift_thresholds_by_about_ten_percent(
    dimension: str,
    name: str,
    severity: str,
    metric: str,
    strict: float,
    normal: float,
    relaxed: float,
) -> None:
    """Tests that strict fires about 10 % earlier and relaxed about 10 % later than normal."""
    from smartflow_engine.rules import threshold

    got = [threshold(dimension, name, severity, metric, lv) for lv in LEVEL_NAMES]
    assert got == pytest.approx([strict, normal, relaxed])


@given(data=st.data(), rule=st.sampled_from(RULES))
def test_stricter_levels_never_report_less(data: st.DataObject, rule: Rule) -> None:
    """Tests that on any values, strict is at least as severe as normal, and normal as relaxed."""
    metrics = {c.metric: c for band in rule.bands for c in band.conds}
    values = {
        m: (
            data.draw(st.integers(0, 12))
            if c.integer
            else data.draw(st.floats(0, 4, allow_nan=False))
        )
        for m, c in metrics.items()
    }
    ranks = []
    for level in LEVEL_NAMES:
        issue = evaluate(_rule(rule.dimension, rule.rule, level), values)
        ranks.append(SEVERITY_RANK[issue.severity] if issue else len(SEVERITY_RANK))
    assert ranks[0] <= ranks[1] <= ranks[2]


# ------------------------------------------------------------------------ end to end, per dimension
def _severity(result: Any, rule: str) -> str | None:
    found = [i.severity for i in result.issues if i.rule == rule]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize(
    ("occupied", "level", "expected"),
    [
        (9, "normal", None),  # 0.75 < 0.80
        (10, "normal", "warning"),  # 0.8333 in [0.80, 0.90)
        (11, "normal", "critical"),  # 0.9167 >= 0.90
        (9, "strict", "warning"),  # 0.75 >= 0.72
        (10, "strict", "critical"),  # 0.8333 >= 0.81
        (10, "relaxed", None),  # 0.8333 < 0.88
        (11, "relaxed", "warning"),  # 0.9167 < 0.99
        (12, "relaxed", "critical"),
    ],
)
def test_day_utilization_end_to_end(occupied: int, level: str, expected: str | None) -> None:
    """Tests the day-utilisation rule on a one-day window with ``occupied`` course periods."""
    state = build(1, [("course", "课程", 1, 1, occupied)])
    assert _severity(analyze_load(state, threshold=level), "day_utilization") == expected


@pytest.mark.parametrize(
    ("sequence", "level", "expected"),
    [
        ("ABABAB", "normal", "critical"),  # 5 switches, fragmentation 1.0
        ("AABBCCDD", "normal", "warning"),  # 3 switches, 3/7 = 0.43
        ("AABBCCDD", "relaxed", None),  # needs 4 switches or 0.605
        ("AABBCC", "normal", None),  # 2 switches, 2/5 = 0.4
        ("AABBCC", "strict", "warning"),  # strict: 2 switches ≥ 2
        ("AAABBB", "normal", None),  # 1 switch, 1/5 = 0.2
        ("AAABBB", "strict", None),  # strict needs 2 switches or 0.495
        ("A.B", "normal", None),  # a free period breaks the sequence: no switch
        ("AB", "normal", "warning"),  # 1 switch, fragmentation 1/1 ≥ 0.55
        ("ABCDE", "relaxed", "warning"),  # 4 switches ≥ 4, critical needs 6
        ("ABCDEFG", "relaxed", "critical"),  # 6 switches ≥ 6 and 1.0 ≥ 0.825
    ],
)
def test_context_switch_end_to_end(sequence: str, level: str, expected: str | None) -> None:
    """Tests the switch rule on one day whose study periods follow ``sequence`` ('.' = free)."""
    items: list[Any] = [("task", ch, 1, i + 1, i + 1) for i, ch in enumerate(sequence) if ch != "."]
    state = build(1, items)
    result = analyze_context(state, threshold=level)
    day = result.metrics["days"][0]
    expected_switches = sum(
        1 for a, b in itertools.pairwise(sequence) if "." not in (a, b) and a != b
    )
    assert day["switch_count"] == expected_switches
    assert _severity(result, "context_switch") == expected


@pytest.mark.parametrize(
    ("full_days", "level", "expected"),
    [
        (0, "normal", None),
        (1, "normal", "warning"),
        (2, "normal", "critical"),
        (1, "strict", "critical"),  # strict critical threshold 1
        (1, "relaxed", None),
        (2, "relaxed", "warning"),
        (3, "relaxed", "critical"),
    ],
)
def test_buffer_rule_end_to_end(full_days: int, level: str, expected: str | None) -> None:
    """Tests the buffer rule with ``full_days`` fully booked days in a five-day window."""
    state = build(5, [("course", "课程", d, 1, 12) for d in range(1, full_days + 1)])
    result = analyze_tolerance(state, threshold=level)
    assert result.metrics["overall"]["days_without_buffer"] == full_days
    assert _severity(result, "buffer") == expected


@pytest.mark.parametrize(
    ("gap", "level", "expected"),
    [
        (2, "normal", None),
        (3, "normal", "info"),
        (4, "normal", "warning"),
        (5, "normal", "warning"),
        (6, "normal", "critical"),
        (5, "strict", "critical"),
        (2, "strict", "info"),
        (6, "relaxed", "warning"),
        (7, "relaxed", "critical"),
        (3, "relaxed", None),
    ],
)
def test_subject_gap_end_to_end(gap: int, level: str, expected: str | None) -> None:
    """Tests the gap rule with one subject studied on day 1 and day ``gap + 2``."""
    state = build(10, [("task", "复习", 1, 1, 2), ("task", "复习", gap + 2, 1, 2)])
    result = analyze_subjects(state, threshold=level)
    assert result.metrics["subjects"][0]["max_gap"] == gap
    assert _severity(result, "subject_gap") == expected


@pytest.mark.parametrize(
    ("end_day", "used", "level", "expected"),
    [
        (8, 3, "normal", "critical"),  # progress 0.3 < 0.4, 7 days to end ≤ 7
        (9, 3, "normal", None),  # 8 days to end
        (9, 3, "strict", "critical"),  # strict: ≤ 8 days
        (8, 4, "normal", None),  # progress 0.4 is not < 0.4
        (8, 4, "strict", "critical"),  # strict: < 0.44
        (7, 3, "relaxed", "critical"),  # relaxed: ≤ 6 days, < 0.36
        (8, 3, "relaxed", None),
    ],
)
def test_budget_rule_end_to_end(end_day: int, used: int, level: str, expected: str | None) -> None:
    """Tests the budget-lag rule: a class of 10 periods with ``used`` placed, ending ``end_day``."""
    task = {
        "name": "复习1",
        "category": "复习",
        "category_id": 10,
        "source": "task_item",
        "status": "suggested",
        "slots": [{"day": 1, "slot_start": 1, "slot_end": used}],
    }
    state = build(
        10, [task], classes=[{"id": 10, "name": "复习", "total_slots": 10, "end_day": end_day}]
    )
    result = analyze_subjects(state, threshold=level)
    row = result.metrics["subjects"][0]
    assert row["budget_progress"] == used / 10 and row["days_to_end"] == end_day - 1
    assert _severity(result, "budget_lag") == expected
