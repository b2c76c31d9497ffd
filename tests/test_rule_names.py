"""Tests that the rule table's name types (issue 30 item 2) are exactly the names it uses: a
``Literal`` that listed a name the table lacks (or missed one) would let a typo through the
type check, or refuse a real name."""

from __future__ import annotations

from typing import get_args

from smartflow_engine.rules import (
    DIMENSIONS,
    METRICS,
    RULE_NAMES,
    RULES,
    IssueDimension,
    IssueRule,
    Severity,
)


def test_the_name_types_are_the_tables_names() -> None:
    """Tests that dimensions, rule names and metrics are each exactly the table's (no unused
    name, no missing one), rule names unique, and every band's severity a ``Severity``."""
    assert set(DIMENSIONS) == {r.dimension for r in RULES}
    assert sorted(RULE_NAMES) == sorted(r.rule for r in RULES)  # one rule per name
    assert set(METRICS) == {c.metric for r in RULES for b in r.bands for c in b.conds}
    assert {b.severity for r in RULES for b in r.bands} <= set(get_args(Severity))


def test_an_issue_names_the_table_or_the_feasibility_step() -> None:
    """Tests that the issue name types add only the feasibility step's issue to the table."""
    dimensions = {a for t in get_args(IssueDimension) for a in get_args(t) or (t,)}
    rules = {a for t in get_args(IssueRule) for a in get_args(t) or (t,)}
    assert dimensions - set(DIMENSIONS) == {"feasibility"}
    assert rules - set(RULE_NAMES) == {"capacity_gap"}
